//! The future-event list, ordered by (time, scheduling sequence).
//!
//! The sequence number breaks ties in scheduling order, so two events at the same picosecond
//! always run in the same order: this is what makes a run deterministic.
//!
//! A model usually has a handful of pending events (a TCP run 3-5: an arrival per host and the
//! retransmission timers; the verbs model 5-7), and schedules mostly near-term ones. While
//! there are at most `SORTED_MAX` events they are kept sorted, latest first: the next event
//! is popped off the end, and a new one moves only the events due before it (one or two) up
//! by a slot. Beyond that they form a 4-ary min-heap (a list sorted earliest first is one),
//! sorted again once they are down to `SORTED_MIN`: both forms pop the same order. An MPI
//! collective over 64 hosts keeps 30-120 events pending: a 4-ary heap is half as deep as a
//! binary one, and with the earliest child picked by selects rather than branches it took 3%
//! less time there (but 1% more instructions). In the heap, the popped root stays in place
//! until the next `schedule` overwrites it: a model handling an event usually schedules a
//! follow-up, which then costs one pass down the heap instead of a removal and an insertion.
//! A model may keep one event out of the queue at a place reserved in its order (`reserve`,
//! `Model::held`): a world's next transport timer, rescheduled at nearly every event, then
//! costs no pass through the heap; the run loop handles it when nothing queued comes first.
//! The key (time, sequence) is one u128, compared without branching on its halves; moving
//! entries instead of swapping them needs events to be `Copy` (they are small: indices, never
//! packets).

use super::time::Time;

/// Most events kept as a sorted list (an insertion moves up to this many); beyond, a heap.
const SORTED_MAX: usize = 16;
/// A heap down to this many events becomes a sorted list again (below `SORTED_MAX`, so that a
/// queue near the limit does not switch at every event).
const SORTED_MIN: usize = 8;
/// Children per node of the heap.
const ARITY: usize = 4;

/// An event's place in the order: its time and its scheduling sequence ([`EventQueue::reserve`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Place(u128);

impl Place {
    /// The event's time.
    #[inline(always)]
    pub fn at(self) -> Time {
        (self.0 >> 64) as Time
    }
}

#[derive(Clone, Copy)]
struct Entry<E> {
    /// Time in the high 64 bits, scheduling sequence in the low 64 bits.
    key: u128,
    ev: E,
}

/// Pending events of type `E` and the current simulated time.
pub struct EventQueue<E> {
    /// Sorted latest first while `sorted`, else a 4-ary min-heap.
    events: Vec<Entry<E>>,
    sorted: bool,
    /// Heap: `events[0]` is the event `pop` returned last, not yet removed.
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
    /// An empty queue at time 0, with room for 1024 events before it grows.
    pub fn new() -> Self {
        EventQueue { events: Vec::with_capacity(1024), sorted: true, handled_root: false, seq: 0, now: 0, popped: 0 }
    }

    /// The time of the event being handled (or of the last one handled).
    #[inline]
    pub fn now(&self) -> Time {
        self.now
    }

    /// Schedule `ev` at absolute time `at`. Scheduling in the past is a model bug.
    #[inline(always)]
    pub fn schedule(&mut self, at: Time, ev: E) {
        let place = self.reserve(at);
        self.schedule_reserved(place, ev);
    }

    /// The place in the order of an event at `at` scheduled now, without scheduling it: the
    /// model keeps the event itself ([`crate::engine::Model::held`]) and may hand it over later
    /// ([`EventQueue::schedule_reserved`]); either way it comes up where `schedule` would have
    /// put it.
    #[inline(always)]
    pub fn reserve(&mut self, at: Time) -> Place {
        debug_assert!(at >= self.now, "event scheduled in the past: {at} < {}", self.now);
        self.seq += 1;
        Place((at as u128) << 64 | self.seq as u128)
    }

    /// Schedule `ev` at the place `reserve` gave it.
    #[inline(always)]
    pub fn schedule_reserved(&mut self, place: Place, ev: E) {
        let entry = Entry { key: place.0, ev };
        if self.sorted && self.events.len() < SORTED_MAX {
            self.events.push(entry);
            self.insert_sorted(self.events.len() - 1, entry);
        } else {
            self.schedule_in_heap(entry);
        }
    }

    /// `schedule` into a heap, or into a full sorted list made a heap (earliest first is one).
    #[inline(never)]
    fn schedule_in_heap(&mut self, entry: Entry<E>) {
        if self.handled_root {
            self.handled_root = false;
            let hole = self.hole_to_leaf();
            return self.sift_up(hole, entry);
        }
        if self.sorted {
            self.events.reverse();
            self.sorted = false;
        }
        self.events.push(entry);
        self.sift_up(self.events.len() - 1, entry);
    }

    /// Put `moving` at the free slot `pos` of the sorted list or below it, moving up by one
    /// every event due before it. The entry is passed in, not read back from the slot: a read
    /// of what was just written in pieces stalls the CPU's store forwarding.
    #[inline]
    fn insert_sorted(&mut self, mut pos: usize, moving: Entry<E>) {
        while pos > 0 && self.events[pos - 1].key < moving.key {
            self.events[pos] = self.events[pos - 1];
            pos -= 1;
        }
        self.events[pos] = moving;
    }

    /// Heap: put `moving` at the hole `pos` or above it, moving down every parent with a later
    /// key.
    #[inline]
    fn sift_up(&mut self, mut pos: usize, moving: Entry<E>) {
        while pos > 0 {
            let parent = (pos - 1) / ARITY;
            if self.events[parent].key <= moving.key {
                break;
            }
            self.events[pos] = self.events[parent];
            pos = parent;
        }
        self.events[pos] = moving;
    }

    /// Remove the earliest event and advance the clock to it.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        let top = if self.sorted { self.events.pop()? } else { self.pop_heap() };
        let at = (top.key >> 64) as Time;
        self.now = at;
        self.popped += 1;
        Some((at, top.ev))
    }

    /// Heap: the earliest event, left in place (marked handled) after the last handled one is
    /// removed; a heap this small again becomes a sorted list, and the event is popped from it.
    #[inline(never)]
    fn pop_heap(&mut self) -> Entry<E> {
        if self.handled_root {
            self.handled_root = false;
            // A heap holds more than SORTED_MIN events besides the handled one.
            let last = self.events.pop().expect("more events");
            if self.events.len() <= SORTED_MIN {
                self.events[0] = last;
                self.events.sort_unstable_by_key(|e| std::cmp::Reverse(e.key));
                self.sorted = true;
                return self.events.pop().expect("more events");
            }
            let hole = self.hole_to_leaf();
            self.sift_up(hole, last);
        }
        self.handled_root = true;
        self.events[0]
    }

    /// Heap: move the hole at the root down to a leaf along the earliest children (as in std's
    /// heap: a loop whose length depends only on the size, so it is predicted); returns the
    /// leaf. The caller fills it with `sift_up`, usually in place (late events sit at the
    /// bottom).
    #[inline]
    fn hole_to_leaf(&mut self) -> usize {
        let events = &mut self.events[..];
        let n = events.len();
        let mut hole = 0;
        loop {
            let first = ARITY * hole + 1;
            if first + ARITY <= n {
                // A tournament of selects rather than a chain of branches: which child is
                // earliest is unpredictable, and the two pairs are compared independently.
                let kids = &events[first..first + ARITY];
                let (a, ka) = if kids[1].key < kids[0].key { (1, kids[1].key) } else { (0, kids[0].key) };
                let (b, kb) = if kids[3].key < kids[2].key { (3, kids[3].key) } else { (2, kids[2].key) };
                let best = first + if kb < ka { b } else { a };
                events[hole] = events[best];
                hole = best;
            } else {
                // The last parent, with fewer children: they are leaves.
                if first < n {
                    let mut best = first;
                    for k in first + 1..n {
                        if events[k].key < events[best].key {
                            best = k;
                        }
                    }
                    events[hole] = events[best];
                    hole = best;
                }
                return hole;
            }
        }
    }

    /// The time of the earliest pending event, if any.
    #[inline(always)]
    pub fn peek_time(&self) -> Option<Time> {
        self.peek().map(Place::at)
    }

    /// The place of the earliest pending event, if any.
    #[inline(always)]
    pub fn peek(&self) -> Option<Place> {
        let key = if self.sorted {
            self.events.last()?.key
        } else if self.handled_root {
            // The earliest of the root's children (a heap holds more than SORTED_MIN events).
            self.events[1..=ARITY].iter().map(|e| e.key).min().expect("children")
        } else {
            self.events.first()?.key
        };
        Some(Place(key))
    }

    /// A reserved event the model kept is handled now, as if popped: the clock moves to it and
    /// it counts as handled. No queued event may come before it (the run loop checks).
    #[inline(always)]
    pub fn advance(&mut self, place: Place) {
        debug_assert!(self.peek().is_none_or(|p| place < p), "a queued event comes first");
        self.now = place.at();
        self.popped += 1;
    }

    /// Events pending (the one being handled no longer counts).
    pub fn len(&self) -> usize {
        self.events.len() - usize::from(self.handled_root)
    }

    /// No event pending: the run loop stops as [`crate::engine::Stop::Idle`].
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
        /// Up to 3 pops per scheduled event (1.5 on average) keep the queue short (a sorted
        /// list); 0.5 or 0.75 on average let it grow into a heap, crossing the limits back and
        /// forth; the final drain makes it a list again.
        #[test]
        fn same_order_as_a_stable_sort(steps in proptest::collection::vec((0u64..4, 0u64..1 << 40, 0u8..3), 1..300), mode in 0u64..3) {
            let mut q = EventQueue::new();
            let mut reference: Vec<(Time, usize)> = Vec::new();
            let check = |q: &mut EventQueue<usize>, reference: &mut Vec<(Time, usize)>| {
                let want = if reference.is_empty() { None } else { Some(reference.remove(0)) };
                prop_assert_eq!(q.peek_time(), want.map(|(t, _)| t));
                prop_assert_eq!(q.pop(), want);
                prop_assert_eq!(q.len(), reference.len());
                Ok(())
            };
            for (id, &(pops, delay, scale)) in steps.iter().enumerate() {
                // Delays of every magnitude, a third of them zero (same-time events).
                let delay = if id % 3 == 0 { 0 } else { delay >> (scale * 18) };
                let at = q.now() + delay;
                q.schedule(at, id);
                reference.push((at, id));
                reference.sort_by_key(|&(t, _)| t);
                for _ in 0..[pops, pops % 2, pops % 3][mode as usize] {
                    check(&mut q, &mut reference)?;
                }
            }
            while !reference.is_empty() {
                check(&mut q, &mut reference)?;
            }
            prop_assert_eq!(q.pop(), None);
        }

        /// An event held out of the queue at its reserved place (as a world holds its next
        /// timer) comes up where `schedule` would have put it: the next event is the earlier of
        /// the queue's and the held one; a held event superseded by a newer one is handed to
        /// the queue at its place. Same order as a stable sort by time, same count handled.
        #[test]
        fn a_held_event_comes_up_in_its_place(steps in proptest::collection::vec((0u64..3, 0u64..1 << 20, any::<bool>()), 1..300)) {
            let mut q = EventQueue::new();
            let mut held: Option<(Place, usize)> = None;
            let mut reference: Vec<(Time, usize)> = Vec::new();
            let next = |q: &mut EventQueue<usize>, held: &mut Option<(Place, usize)>| match *held {
                Some((place, id)) if q.peek().is_none_or(|p| place < p) => {
                    q.advance(place);
                    *held = None;
                    Some((place.at(), id))
                }
                _ => q.pop(),
            };
            for (id, &(pops, delay, hold)) in steps.iter().enumerate() {
                let at = q.now() + if id % 3 == 0 { 0 } else { delay };
                if hold {
                    if let Some((place, old)) = held.replace((q.reserve(at), id)) {
                        q.schedule_reserved(place, old);
                    }
                } else {
                    q.schedule(at, id);
                }
                reference.push((at, id));
                reference.sort_by_key(|&(t, _)| t);
                for _ in 0..pops.min(reference.len() as u64) {
                    prop_assert_eq!(next(&mut q, &mut held), Some(reference.remove(0)));
                }
            }
            while !reference.is_empty() {
                prop_assert_eq!(next(&mut q, &mut held), Some(reference.remove(0)));
            }
            prop_assert_eq!(next(&mut q, &mut held), None);
            prop_assert_eq!(q.events_handled(), steps.len() as u64);
        }
    }
}
