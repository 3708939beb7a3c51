//! First-in first-out queues by key, kept only for the keys whose queue is not empty (an MPI job
//! has millions of pairs or queue pairs, and only a few have anything waiting at a time).
//!
//! A key's queue comes and goes with nearly every message of a collective, so an emptied queue
//! is kept for the next key instead of being freed: a message then costs no allocation here.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hash};

use super::engine::PairHasher;

pub struct KeyedQueues<K, T> {
    queues: HashMap<K, VecDeque<T>, BuildHasherDefault<PairHasher>>,
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
        self.queues.entry(key).or_insert_with(|| self.spare.pop().unwrap_or_default()).push_back(item);
    }

    /// The oldest item of `key`'s queue, left in it.
    pub fn front(&self, key: &K) -> Option<&T> {
        self.queues.get(key).and_then(VecDeque::front)
    }

    /// The oldest item of `key`'s queue, taken off it.
    pub fn pop_front(&mut self, key: K) -> Option<T> {
        let Entry::Occupied(mut e) = self.queues.entry(key) else { return None };
        let item = e.get_mut().pop_front();
        if e.get().is_empty() {
            self.spare.push(e.remove());
        }
        item
    }

    /// `key` has something waiting.
    pub fn contains(&self, key: &K) -> bool {
        self.queues.contains_key(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each key's items come back in the order they went in, and an emptied key is gone.
    #[test]
    fn queues_by_key_in_order() {
        let mut q = KeyedQueues::default();
        for (k, v) in [(1u32, 'a'), (2, 'x'), (1, 'b'), (2, 'y'), (1, 'c')] {
            q.push_back(k, v);
        }
        assert_eq!(q.front(&1), Some(&'a'));
        assert_eq!([q.pop_front(1), q.pop_front(2), q.pop_front(1)], [Some('a'), Some('x'), Some('b')]);
        assert_eq!([q.pop_front(2), q.pop_front(2)], [Some('y'), None]);
        assert!(!q.contains(&2) && q.contains(&1));
        q.push_back(2, 'z');
        assert_eq!([q.pop_front(1), q.pop_front(2), q.pop_front(1)], [Some('c'), Some('z'), None]);
        assert_eq!(q.spare.len(), 2);
    }
}
