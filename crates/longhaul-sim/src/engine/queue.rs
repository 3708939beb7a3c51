//! The future-event list: a binary min-heap ordered by (time, scheduling sequence).
//!
//! The sequence number breaks ties in scheduling order, so two events at the same picosecond
//! always run in the same order: this is what makes a run deterministic.
//!
//! Hand-written rather than `std::collections::BinaryHeap` because the queue is a fifth of the
//! engine's time and typically holds under ten events: the key (time, sequence) is one u128,
//! compared without branching on its halves; sifting moves a hole instead of swapping, which
//! needs events to be `Copy` (they are small: indices, never packets).

use super::time::Time;

#[derive(Clone, Copy)]
struct Entry<E> {
    /// Time in the high 64 bits, scheduling sequence in the low 64 bits.
    key: u128,
    ev: E,
}

/// Pending events of type `E` and the current simulated time.
pub struct EventQueue<E> {
    heap: Vec<Entry<E>>,
    /// `heap[0]` is the event `pop` returned last, not yet removed: a model handling an event
    /// usually schedules a follow-up, which then takes the root's place (one pass down the
    /// heap instead of a removal and an insertion).
    handled_root: bool,
    seq: u64,
    now: Time,
    popped: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { heap: Vec::with_capacity(1024), handled_root: false, seq: 0, now: 0, popped: 0 }
    }

    /// The time of the event being handled (or of the last one handled).
    #[inline]
    pub fn now(&self) -> Time {
        self.now
    }

    /// Schedule `ev` at absolute time `at`. Scheduling in the past is a model bug.
    #[inline]
    pub fn schedule(&mut self, at: Time, ev: E) {
        debug_assert!(at >= self.now, "event scheduled in the past: {at} < {}", self.now);
        self.seq += 1;
        let entry = Entry { key: (at as u128) << 64 | self.seq as u128, ev };
        if self.handled_root {
            self.handled_root = false;
            let hole = self.hole_to_leaf();
            self.sift_up(hole, entry);
        } else {
            self.heap.push(entry);
            self.sift_up(self.heap.len() - 1, entry);
        }
    }

    /// Put `moving` at the hole `pos` or above it, moving down every parent with a later key.
    /// The entry is passed in, not read back from the hole: a read of what was just written
    /// in pieces stalls the CPU's store forwarding (a tenth of the engine's time).
    #[inline]
    fn sift_up(&mut self, mut pos: usize, moving: Entry<E>) {
        while pos > 0 {
            let parent = (pos - 1) / 2;
            if self.heap[parent].key <= moving.key {
                break;
            }
            self.heap[pos] = self.heap[parent];
            pos = parent;
        }
        self.heap[pos] = moving;
    }

    /// Move the hole at the root down to a leaf along the earlier children (as in std's heap: a
    /// loop whose length depends only on the size, so it is predicted); returns the leaf. The
    /// caller fills it with `sift_up`, usually in place (late events sit at the bottom).
    #[inline]
    fn hole_to_leaf(&mut self) -> usize {
        let n = self.heap.len();
        let mut hole = 0;
        let mut child = 1;
        while child + 1 < n {
            child += usize::from(self.heap[child + 1].key < self.heap[child].key);
            self.heap[hole] = self.heap[child];
            hole = child;
            child = 2 * hole + 1;
        }
        if child + 1 == n {
            self.heap[hole] = self.heap[child];
            hole = child;
        }
        hole
    }

    /// Remove the earliest event and advance the clock to it. It stays in the heap, marked
    /// handled, until the next `schedule` overwrites it or the next `pop` removes it.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        if self.handled_root {
            self.handled_root = false;
            let last = self.heap.pop().expect("the handled root");
            if !self.heap.is_empty() {
                let hole = self.hole_to_leaf();
                self.sift_up(hole, last);
            }
        }
        let top = *self.heap.first()?;
        self.handled_root = true;
        let at = (top.key >> 64) as Time;
        self.now = at;
        self.popped += 1;
        Some((at, top.ev))
    }

    /// The time of the earliest pending event, if any.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        let key = if self.handled_root {
            // The earliest of the root's children.
            match (self.heap.get(1), self.heap.get(2)) {
                (Some(a), Some(b)) => a.key.min(b.key),
                (Some(a), None) => a.key,
                _ => return None,
            }
        } else {
            self.heap.first()?.key
        };
        Some((key >> 64) as Time)
    }

    pub fn len(&self) -> usize {
        self.heap.len() - usize::from(self.handled_root)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Events handled so far (the engine's unit of work, reported by benchmarks).
    pub fn events_handled(&self) -> u64 {
        self.popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn pops_in_time_then_insertion_order() {
        let mut q = EventQueue::new();
        q.schedule(30, 'c');
        q.schedule(10, 'a');
        q.schedule(30, 'd');
        q.schedule(10, 'b');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['a', 'b', 'c', 'd']);
        assert_eq!(q.now(), 30);
        assert_eq!(q.events_handled(), 4);
    }

    proptest! {
        /// Against the obvious reference (a stable sort by time), with events scheduled while
        /// others are handled, as a model does: never earlier than the event being handled.
        #[test]
        fn same_order_as_a_stable_sort(steps in proptest::collection::vec((0u64..4, 0u64..1 << 40, 0u8..3), 1..300)) {
            let mut q = EventQueue::new();
            let mut reference: Vec<(Time, usize)> = Vec::new();
            for (id, &(pops, delay, scale)) in steps.iter().enumerate() {
                // Delays of every magnitude, a third of them zero (same-time events).
                let delay = if id % 3 == 0 { 0 } else { delay >> (scale * 18) };
                let at = q.now() + delay;
                q.schedule(at, id);
                reference.push((at, id));
                reference.sort_by_key(|&(t, _)| t);
                for _ in 0..pops {
                    let want = if reference.is_empty() { None } else { Some(reference.remove(0)) };
                    prop_assert_eq!(q.peek_time(), want.map(|(t, _)| t));
                    prop_assert_eq!(q.pop(), want);
                    prop_assert_eq!(q.len(), reference.len());
                }
            }
        }
    }
}
