//! First-in first-out queues by key, kept only for the keys whose queue is not empty (an MPI job
//! has millions of pairs or queue pairs, and only a few have anything waiting at a time).
//!
//! A key's queue comes and goes with nearly every message of a collective, and most hold one
//! item: the oldest item is kept in the map's entry itself, and only later ones in a buffer
//! behind it, which is kept for the next key once emptied. A message then costs no allocation
//! here, and the one lookup finds the item.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hash};

use super::engine::PairHasher;

/// A key's oldest item and the later ones.
struct Queue<T> {
    head: T,
    rest: VecDeque<T>,
}

pub struct KeyedQueues<K, T> {
    queues: HashMap<K, Queue<T>, BuildHasherDefault<PairHasher>>,
    /// Emptied buffers of later items, for the next key that has more than one.
    spare: Vec<VecDeque<T>>,
}

impl<K, T> Default for KeyedQueues<K, T> {
    fn default() -> Self {
        KeyedQueues { queues: HashMap::default(), spare: Vec::new() }
    }
}

impl<K: Hash + Eq, T> KeyedQueues<K, T> {
    /// Append `item` to `key`'s queue.
    pub fn push_back(&mut self, key: K, item: T) {
        match self.queues.entry(key) {
            Entry::Vacant(e) => {
                e.insert(Queue { head: item, rest: VecDeque::new() });
            }
            Entry::Occupied(mut e) => {
                let rest = &mut e.get_mut().rest;
                if rest.capacity() == 0 {
                    *rest = self.spare.pop().unwrap_or_default();
                }
                rest.push_back(item);
            }
        }
    }

    /// The oldest item of `key`'s queue, taken off it.
    pub fn pop_front(&mut self, key: K) -> Option<T> {
        self.pop_front_if(key, |_| true)
    }

    /// The oldest item of `key`'s queue, taken off it if `take` says so.
    pub fn pop_front_if(&mut self, key: K, take: impl FnOnce(&T) -> bool) -> Option<T> {
        let Entry::Occupied(mut e) = self.queues.entry(key) else { return None };
        if !take(&e.get().head) {
            return None;
        }
        if let Some(next) = e.get_mut().rest.pop_front() {
            return Some(std::mem::replace(&mut e.get_mut().head, next));
        }
        let Queue { head, rest } = e.remove();
        if rest.capacity() > 0 {
            self.spare.push(rest);
        }
        Some(head)
    }

    /// `key` has something waiting.
    pub fn contains(&self, key: &K) -> bool {
        self.queues.contains_key(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each key's items come back in the order they went in, only when asked for if so, and an
    /// emptied key is gone.
    #[test]
    fn queues_by_key_in_order() {
        let mut q = KeyedQueues::default();
        for (k, v) in [(1u32, 'a'), (2, 'x'), (1, 'b'), (2, 'y'), (1, 'c')] {
            q.push_back(k, v);
        }
        assert_eq!(q.pop_front_if(1, |&v| v == 'b'), None);
        assert_eq!([q.pop_front(1), q.pop_front(2), q.pop_front(1)], [Some('a'), Some('x'), Some('b')]);
        assert_eq!([q.pop_front(2), q.pop_front(2)], [Some('y'), None]);
        assert!(!q.contains(&2) && q.contains(&1));
        q.push_back(2, 'z');
        assert_eq!([q.pop_front_if(1, |&v| v == 'c'), q.pop_front(2), q.pop_front(1)], [Some('c'), Some('z'), None]);
        assert_eq!(q.spare.len(), 2);
    }
}
