//! Queue pairs: the send queue of work requests, packet sequence numbers, and the per-QP state
//! of the three transports.
//!
//! - RC: every packet acknowledged (ACKs coalesced: requested on the last packet of a message
//!   and every `ack_req_every_pkts`), go-back-N on a NAK (sequence error) or on the local ACK
//!   timeout (4.096 us x 2^timeout_exp, IBA vol. 1 9.7.6.1.3), retried `retry_count` times.
//!   Invariant: the receiver accepts packets only in PSN order, so every byte is delivered
//!   exactly once and in order whatever is lost.
//! - UC: sequence numbers but no ACK and no retransmission; a message with a missing packet is
//!   dropped whole at the receiver.
//! - UD: one packet per message (at most one MTU), no ACK; dropped when no receive is posted.

use std::collections::VecDeque;

use super::headers::{psn_diff, Op, PSN_MASK};
use crate::engine::Time;
use crate::net::NodeId;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Rc,
    Uc,
    Ud,
}

/// A posted send-queue work request.
#[derive(Debug, Clone)]
pub struct Wqe {
    pub op: Op,
    pub len: u32,
    pub id: u64,
    /// The CPU has posted it (doorbell rung) by this time.
    pub ready_at: Time,
    pub first_psn: u32,
    pub npkts: u32,
}

/// A read the responder is streaming back.
#[derive(Debug, Clone)]
pub struct ReadJob {
    pub next_psn: u32,
    pub remaining: u32,
    pub first: bool,
    pub ready_at: Time,
}

pub struct Qp {
    pub node: NodeId,
    pub peer_qp: u32,
    pub peer_node: NodeId,
    pub transport: Transport,
    pub mtu: u32,
    /// Send queue depth the consumer created the queue pair with: at most this many work
    /// requests are in progress (started, not completed); later ones wait, as in the
    /// consumer's own backlog (MVAPICH2's ext_sendq, svcrdma's sc_send_wait).
    pub sq_depth: u32,

    // ---- requester
    /// Posted and not completed, oldest first.
    pub sq: VecDeque<Wqe>,
    /// Send position: work request `cur` of `sq`, packet `cur_pkt` within it.
    pub cur: usize,
    pub cur_pkt: u32,
    /// PSN the next posted work request will start at.
    pub next_post_psn: u32,
    /// Oldest PSN not yet acknowledged (RC).
    pub una_psn: u32,
    pub reads_outstanding: u32,
    pub last_progress: Time,
    pub timer_at: Time,
    pub retries: u32,
    /// A read was re-requested because a later response overtook its lost ones; no other until
    /// the responses make progress (rxe's `comp.started_retry`).
    pub read_retry_started: bool,
    pub failed: bool,
    /// One past the highest PSN ever transmitted (to tell retransmissions apart).
    pub sent_through: u32,

    // ---- responder
    pub epsn: u32,
    pub nak_sent: bool,
    pub ack_psn: Option<u32>,
    pub ack_ready: Time,
    /// An ACK for packets that came after a read request whose responses are still going out:
    /// the responder answers in PSN order (IBA vol. 1 9.7.5.1), so it is sent after them.
    pub ack_after_reads: Option<u32>,
    pub nak_psn: Option<u32>,
    pub reads: VecDeque<ReadJob>,
    /// Receive work requests posted (consumed by incoming sends).
    pub rq_posted: u32,
    /// UC: discarding the rest of a message that lost a packet.
    pub uc_discard: bool,
    /// Bytes of the incoming message delivered so far (in order).
    pub rx_msg_bytes: u64,
    /// Total payload bytes delivered in order to this QP's receiver.
    pub rx_bytes: u64,
    /// When the last of `rx_bytes` was delivered (0 before any).
    pub rx_last_at: Time,
}

impl Qp {
    pub fn new(
        node: NodeId,
        peer_qp: u32,
        peer_node: NodeId,
        transport: Transport,
        mtu: u32,
        initial_psn: u32,
        sq_depth: u32,
    ) -> Self {
        Qp {
            node,
            peer_qp,
            peer_node,
            transport,
            mtu,
            sq_depth,
            sq: VecDeque::new(),
            cur: 0,
            cur_pkt: 0,
            next_post_psn: initial_psn & PSN_MASK,
            una_psn: initial_psn & PSN_MASK,
            reads_outstanding: 0,
            last_progress: 0,
            timer_at: Time::MAX,
            retries: 0,
            read_retry_started: false,
            failed: false,
            sent_through: initial_psn & PSN_MASK,
            epsn: initial_psn & PSN_MASK,
            nak_sent: false,
            ack_psn: None,
            ack_ready: 0,
            ack_after_reads: None,
            nak_psn: None,
            reads: VecDeque::new(),
            rq_posted: 0,
            uc_discard: false,
            rx_msg_bytes: 0,
            rx_bytes: 0,
            rx_last_at: 0,
        }
    }

    /// `bytes` more payload delivered in order to this QP's receiver at `at`.
    pub fn deliver(&mut self, bytes: u64, at: Time) {
        self.rx_bytes += bytes;
        self.rx_last_at = at;
    }

    pub fn packets_for(&self, len: u32) -> u32 {
        len.div_ceil(self.mtu).max(1)
    }

    /// Queue a work request; PSNs are assigned in posting order.
    pub fn post(&mut self, op: Op, len: u32, id: u64, ready_at: Time) {
        let npkts = self.packets_for(len);
        let first_psn = self.next_post_psn;
        self.next_post_psn = (self.next_post_psn + npkts) & PSN_MASK;
        self.sq.push_back(Wqe { op, len, id, ready_at, first_psn, npkts });
    }

    /// Work requests started and not completed (the queue pair's in-flight message count).
    pub fn inflight_wqes(&self) -> usize {
        self.cur + usize::from(self.cur_pkt > 0)
    }

    /// PSN of the next packet to transmit.
    pub fn send_psn(&self) -> u32 {
        match self.sq.get(self.cur) {
            Some(w) => (w.first_psn + self.cur_pkt) & PSN_MASK,
            None => self.next_post_psn,
        }
    }

    /// Packets sent and not yet acknowledged (RC).
    pub fn unacked(&self) -> u32 {
        psn_diff(self.send_psn(), self.una_psn).max(0) as u32
    }

    pub fn has_outstanding(&self) -> bool {
        self.transport == Transport::Rc && psn_diff(self.send_psn(), self.una_psn) > 0
    }

    /// The PSN after the last response of the read that `una_psn` waits in, if it waits in a
    /// read that has been requested. `ack_through` pops every completed work request, so the
    /// one `una_psn` is in is the oldest: no scan (this runs for every ACK).
    pub fn read_end_at_una(&self) -> Option<u32> {
        let w = self.sq.front().filter(|w| w.op == Op::Read && self.cur > 0)?;
        Some((w.first_psn + w.npkts) & PSN_MASK)
    }

    /// Go back to PSN `psn` (go-back-N): the next packet sent will be `psn` again.
    pub fn rewind_to(&mut self, psn: u32) {
        for (i, w) in self.sq.iter().enumerate() {
            let off = psn_diff(psn, w.first_psn);
            if off >= 0 && (off as u32) < w.npkts {
                if w.op == Op::Read && i < self.cur {
                    self.reads_outstanding = self.reads_outstanding.saturating_sub(1);
                }
                // Reads still outstanding after this one will be re-requested too.
                let later_reads = self
                    .sq
                    .iter()
                    .skip(i + 1)
                    .take(self.cur.saturating_sub(i + 1))
                    .filter(|w| w.op == Op::Read)
                    .count() as u32;
                self.reads_outstanding = self.reads_outstanding.saturating_sub(later_reads);
                self.cur = i;
                self.cur_pkt = off as u32;
                return;
            }
        }
    }

    /// Move the send position forward to PSN `psn`, which the responder has acknowledged.
    fn skip_to(&mut self, psn: u32) {
        let within = |w: &Wqe| {
            let off = psn_diff(psn, w.first_psn);
            off >= 0 && (off as u32) < w.npkts
        };
        match self.sq.iter().position(within) {
            Some(i) => {
                self.cur = i;
                self.cur_pkt = psn_diff(psn, self.sq[i].first_psn) as u32;
            }
            None => {
                self.cur = self.sq.len();
                self.cur_pkt = 0;
            }
        }
    }

    /// Acknowledge every PSN before `psn` (exclusive); the work requests that completed are
    /// popped from the send queue and handed to `done`, oldest first (a callback rather than a
    /// returned list: this runs for every ACK).
    ///
    /// An ACK or NAK never acknowledges read responses: only their arrival does (`by_response`).
    ///
    /// An acknowledgement is valid up to the highest PSN ever sent, not only up to the send
    /// position: after a go-back-N rewind (a timeout that came before the round trip was over)
    /// the acknowledgements of the first transmission still arrive, and acknowledge packets the
    /// requester has not resent yet. It then skips them instead of sending them again (IBA vol. 1
    /// 9.7.5.1.2: an ACK is valid for any outstanding PSN). Ignoring them, as before, made every
    /// later ACK look invalid, so the timer fired until the retry count ran out.
    pub fn ack_through(&mut self, psn_exclusive: u32, now: Time, by_response: bool, mut done: impl FnMut(Wqe)) {
        let mut psn_exclusive = psn_exclusive;
        if !by_response {
            let sent_through = self.sent_through;
            let sent = |w: &&Wqe| psn_diff(w.first_psn, sent_through) < 0;
            if let Some(r) = self.sq.iter().take_while(sent).find(|w| w.op == Op::Read) {
                let cap = if psn_diff(r.first_psn, self.una_psn) > 0 { r.first_psn } else { self.una_psn };
                if psn_diff(psn_exclusive, cap) > 0 {
                    psn_exclusive = cap;
                }
            }
        }
        if psn_diff(psn_exclusive, self.una_psn) <= 0 || psn_diff(psn_exclusive, self.sent_through) > 0 {
            return;
        }
        if psn_diff(psn_exclusive, self.send_psn()) > 0 {
            self.skip_to(psn_exclusive);
        }
        self.una_psn = psn_exclusive;
        self.last_progress = now;
        self.retries = 0;
        while let Some(w) = self.sq.front() {
            let end = (w.first_psn + w.npkts) & PSN_MASK;
            if psn_diff(self.una_psn, end) < 0 || self.cur == 0 {
                break;
            }
            if w.op == Op::Read {
                self.reads_outstanding = self.reads_outstanding.saturating_sub(1);
            }
            done(self.sq.pop_front().expect("front"));
            self.cur -= 1;
        }
        if self.sq.is_empty() {
            // An idle queue pair keeps no buffer: an MPI alltoall leaves ranks^2 of them idle.
            self.sq.shrink_to_fit();
        }
    }
}
