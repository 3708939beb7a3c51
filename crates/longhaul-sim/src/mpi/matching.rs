//! The PML's matching queues: receives posted before their message, and messages arrived before
//! their receive, per (src, dst).
//!
//! Only the pairs with something waiting keep queues (most pairs, most of the time, have
//! neither: an alltoall's N^2 pairs would otherwise each keep two). A pair's queues come and go
//! with nearly every message of a collective, so emptied ones are kept for the next pair
//! instead of being freed: a message then costs no allocation here.

use std::collections::hash_map::Entry;
use std::collections::VecDeque;

use super::engine::PairMap;
use crate::engine::Time;

/// A receive posted and not yet matched: its size, whether `Post` posted it (nonblocking), and
/// when.
pub type PostedRecv = (u64, bool, Time);

/// The queues of one (src, dst) that has a receive or a message waiting.
#[derive(Default)]
struct Queues {
    posted: VecDeque<PostedRecv>,
    unexpected: VecDeque<u32>,
}

/// Every pair's queues, and emptied ones kept for reuse.
#[derive(Default)]
pub struct Matching {
    waiting: PairMap<Queues>,
    spare: Vec<Queues>,
}

impl Matching {
    /// The oldest message of `pair` that arrived without a receive, taken off its queue.
    pub fn take_unexpected(&mut self, pair: (u32, u32)) -> Option<u32> {
        self.take(pair, |q| q.unexpected.pop_front())
    }

    /// The oldest receive `pair`'s receiver posted without a message, taken off its queue.
    pub fn take_posted(&mut self, pair: (u32, u32)) -> Option<PostedRecv> {
        self.take(pair, |q| q.posted.pop_front())
    }

    /// A receive of `pair` waits for its message.
    pub fn push_posted(&mut self, pair: (u32, u32), recv: PostedRecv) {
        self.queues(pair).posted.push_back(recv);
    }

    /// Message `m` of `pair` waits for its receive.
    pub fn push_unexpected(&mut self, pair: (u32, u32), m: u32) {
        self.queues(pair).unexpected.push_back(m);
    }

    /// Take from `pair`'s queues with `pop`; queues left empty are put aside.
    fn take<T>(&mut self, pair: (u32, u32), pop: impl FnOnce(&mut Queues) -> Option<T>) -> Option<T> {
        let Entry::Occupied(mut e) = self.waiting.entry(pair) else { return None };
        let got = pop(e.get_mut());
        if e.get().posted.is_empty() && e.get().unexpected.is_empty() {
            self.spare.push(e.remove());
        }
        got
    }

    fn queues(&mut self, pair: (u32, u32)) -> &mut Queues {
        self.waiting.entry(pair).or_insert_with(|| self.spare.pop().unwrap_or_default())
    }
}
