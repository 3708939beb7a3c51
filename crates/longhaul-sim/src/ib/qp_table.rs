//! The adapters' queue pairs by number, each either live or parked.
//!
//! A live queue pair is the whole [`Qp`] (about 250 bytes: work queues, requester and responder
//! state). A consumer with many connections of which few are busy at a time (an MPI library
//! with a connection to every peer, as MVAPICH2's on-demand connection management leaves an
//! alltoall) may park one whose queues have drained: what it needs to resume (its nodes and
//! peer, sequence numbers, posted receives, counters and pending timer) is kept in a few dozen
//! bytes, and the queue pair is rebuilt exactly as it was when next used. Numbers are never
//! reused, so parking changes no packet, timer or order: a parked queue pair behaves as the
//! idle live one would.

use std::ops::{Index, IndexMut};

use super::qp::{Qp, Transport};
use crate::engine::Time;
use crate::net::NodeId;

/// What an idle queue pair keeps (every other field is at its idle value, [`idle`]).
#[derive(Clone, Copy)]
struct Parked {
    node: NodeId,
    peer_qp: u32,
    peer_node: NodeId,
    mtu: u32,
    sq_depth: u32,
    /// Next PSN to post, oldest unacknowledged and one past the highest sent: equal when idle.
    psn: u32,
    epsn: u32,
    rq_posted: u32,
    transport: Transport,
    last_progress: Time,
    timer_at: Time,
    rx_bytes: u64,
    rx_last_at: Time,
}

enum Slot {
    Live(Box<Qp>),
    Parked(Parked),
}

/// Whether `q` has nothing queued, in flight or owed: no work request, read or response, no
/// ACK or NAK to send, no retry or discard under way, and its PSNs agree (everything sent is
/// acknowledged). `ack_ready` is not kept: it is set whenever an ACK is queued, before use.
fn idle(q: &Qp) -> bool {
    q.sq.is_empty()
        && q.cur == 0
        && q.cur_pkt == 0
        && q.reads_outstanding == 0
        && q.reads.is_empty()
        && q.ack_psn.is_none()
        && q.nak_psn.is_none()
        && q.ack_after_reads.is_none()
        && !q.nak_sent
        && !q.failed
        && !q.read_retry_started
        && q.retries == 0
        && !q.uc_discard
        && q.rx_msg_bytes == 0
        && q.una_psn == q.next_post_psn
        && q.sent_through == q.next_post_psn
}

impl Parked {
    fn of(q: &Qp) -> Self {
        Parked {
            node: q.node,
            peer_qp: q.peer_qp,
            peer_node: q.peer_node,
            mtu: q.mtu,
            sq_depth: q.sq_depth,
            psn: q.next_post_psn,
            epsn: q.epsn,
            rq_posted: q.rq_posted,
            transport: q.transport,
            last_progress: q.last_progress,
            timer_at: q.timer_at,
            rx_bytes: q.rx_bytes,
            rx_last_at: q.rx_last_at,
        }
    }

    fn restore(&self) -> Qp {
        let mut q = Qp::new(self.node, self.peer_qp, self.peer_node, self.transport, self.mtu, self.psn, self.sq_depth);
        q.epsn = self.epsn;
        q.rq_posted = self.rq_posted;
        q.last_progress = self.last_progress;
        q.timer_at = self.timer_at;
        q.rx_bytes = self.rx_bytes;
        q.rx_last_at = self.rx_last_at;
        q
    }
}

/// Queue pairs by number. Indexing reaches a live one; [`QpTable::wake`] makes a parked one
/// live first (indexing a parked one is a bug and panics).
#[derive(Default)]
pub struct QpTable {
    slots: Vec<Slot>,
    parked: usize,
}

impl QpTable {
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn push(&mut self, q: Qp) {
        self.slots.push(Slot::Live(Box::new(q)));
    }

    /// Every queue pair, in number order (all live: only a consumer that parks has parked ones).
    pub fn iter(&self) -> impl Iterator<Item = &Qp> {
        (0..self.slots.len()).map(|i| &self[i])
    }

    /// Queue pairs parked now.
    #[cfg(test)]
    pub fn parked(&self) -> usize {
        self.parked
    }

    /// The node queue pair `i` is on, live or parked.
    pub fn node(&self, i: u32) -> NodeId {
        match &self.slots[i as usize] {
            Slot::Live(q) => q.node,
            Slot::Parked(p) => p.node,
        }
    }

    /// The peer of queue pair `i`, live or parked.
    pub fn peer_qp(&self, i: u32) -> u32 {
        match &self.slots[i as usize] {
            Slot::Live(q) => q.peer_qp,
            Slot::Parked(p) => p.peer_qp,
        }
    }

    /// Make queue pair `i` live again if it is parked.
    #[inline]
    pub fn wake(&mut self, i: u32) {
        if let Slot::Parked(p) = &self.slots[i as usize] {
            self.slots[i as usize] = Slot::Live(Box::new(p.restore()));
            self.parked -= 1;
        }
    }

    /// Park queue pair `i` if it is live and idle; true if it is parked now.
    pub fn park(&mut self, i: u32) -> bool {
        match &self.slots[i as usize] {
            Slot::Parked(_) => true,
            Slot::Live(q) if idle(q) => {
                self.slots[i as usize] = Slot::Parked(Parked::of(q));
                self.parked += 1;
                true
            }
            Slot::Live(_) => false,
        }
    }

    /// A parked queue pair's timer fired: as for an idle live one, the timer is cleared and
    /// nothing else happens. False if `i` is live.
    pub fn parked_timer_fired(&mut self, i: u32) -> bool {
        match &mut self.slots[i as usize] {
            Slot::Parked(p) => {
                p.timer_at = Time::MAX;
                true
            }
            Slot::Live(_) => false,
        }
    }
}

impl Index<usize> for QpTable {
    type Output = Qp;
    #[inline]
    fn index(&self, i: usize) -> &Qp {
        match &self.slots[i] {
            Slot::Live(q) => q,
            Slot::Parked(_) => panic!("queue pair {i} is parked: wake it first"),
        }
    }
}

impl IndexMut<usize> for QpTable {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut Qp {
        match &mut self.slots[i] {
            Slot::Live(q) => q,
            Slot::Parked(_) => panic!("queue pair {i} is parked: wake it first"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::headers::Op;

    #[test]
    fn a_parked_queue_pair_wakes_as_it_was_and_a_busy_one_is_not_parked() {
        let mut t = QpTable::default();
        t.push(Qp::new(3, 1, 4, Transport::Rc, 2048, 7, 64));
        t[0].post(Op::Send, 4096, 1, 0);
        assert!(!t.park(0), "work queued");
        let q = &mut t[0];
        q.sq.clear();
        (q.una_psn, q.sent_through, q.epsn, q.rx_bytes, q.timer_at) = (9, 9, 12, 100, 55);
        assert!(t.park(0));
        assert_eq!((t.parked(), t.node(0), t.peer_qp(0)), (1, 3, 1));
        assert!(t.parked_timer_fired(0));
        t.wake(0);
        let q = &t[0];
        assert_eq!((q.next_post_psn, q.una_psn, q.epsn, q.rx_bytes, q.timer_at), (9, 9, 12, 100, Time::MAX));
        assert_eq!((q.node, q.peer_node, q.mtu, q.sq_depth, t.parked()), (3, 4, 2048, 64, 0));
    }
}
