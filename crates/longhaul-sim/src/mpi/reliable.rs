//! MPI over UD and UC: the library's own reliability, since neither transport acknowledges or
//! resends. The design is MVAPICH2-UD's (its gen2 UD reliability code: `post_ud_send`,
//! `mv2_ud_place_recvwin`, `mv2_send_explicit_ack`, `mv2_check_resend`), with its `MV2_UD_*`
//! defaults in `MpiParams`.
//!
//! - Sender, per direction of a connection: every frame that takes a window slot (eager data,
//!   RTS, CTS, FIN, R3 data, UC RDMA writes) gets the next sequence number, carried in its
//!   header (`IbPacket::imm`), and stays in `unacked` until a cumulative acknowledgement covers
//!   it. At most `ud_window` frames are unacknowledged; later ones wait in the backlog.
//! - Receiver: frames reach MPI in sequence order. One that arrives ahead of a missing frame is
//!   kept (up to `ud_recv_window` ahead) and handed on once the gap is filled; a copy of one
//!   already handed on is dropped.
//! - Acknowledgements are cumulative (the next sequence number expected). Every frame going
//!   back carries one; an explicit one (no sequence number, so a lost one is never resent: a
//!   later one repairs it) goes after `ud_ack_every` frames, after a rendezvous FIN (whose
//!   sender keeps its buffer until then), or once `ud_progress_timeout_us` passes with
//!   acknowledgements owed.
//! - Retransmission: a frame still unacknowledged `ud_retry_timeout_us` x max(1, log2 retries)
//!   after it was last sent (at most `ud_max_retry_timeout_us`) goes again, unless a copy is
//!   still waiting in the adapter's send queue. Frames are resent one by one (selective, not
//!   go-back-N). More than `ud_max_retries` resends of one frame end the run, as MVAPICH2
//!   aborts the job.
//!
//! Invariant (tested under loss): every message is delivered exactly once, in order per pair.

use std::collections::{BTreeSet, VecDeque};

use super::engine::{Ev, Mpi};
use super::protocol::{Cx, Kind, Verbs, VerbsEv, VerbsNet};
use crate::engine::time::from_ns;
use crate::engine::Time;

/// Header tag of an explicit acknowledgement; the other bits are the acknowledged number.
/// Sequence numbers stay below it: 2^31 frames in one direction is far beyond any run.
pub const ACK_TAG: u32 = 1 << 31;
/// `Wire::seq` of a frame without a sequence number (an explicit acknowledgement, or RC).
pub const NO_SEQ: u32 = u32::MAX;

/// A sent frame the receiver has not acknowledged yet.
pub struct Unacked {
    pub seq: u32,
    pub wire: u32,
    pub bytes: u32,
    /// When it was last posted.
    pub sent_at: Time,
    pub retries: u32,
    /// Copies posted and not yet out of the adapter (one is never resent over another).
    pub sending: u32,
}

/// Reliability state of one direction of a connection: the sender's half and the receiver's.
#[derive(Default)]
pub struct Reliable {
    pub next_seq: u32,
    /// In sequence order, without gaps.
    pub unacked: VecDeque<Unacked>,
    /// When this direction's live retransmission check fires.
    pub timer_at: Option<Time>,
    /// Every frame before this one has been handed to MPI.
    pub expect: u32,
    /// Frames that arrived ahead of a missing one.
    pub early: BTreeSet<u32>,
    /// Frames handed on since an acknowledgement last went back.
    pub ack_pending: u32,
    pub ack_timer: bool,
}

/// A direction's `Reliable`, allocated when first changed: an RC connection (the common case,
/// and an alltoall has ranks^2 / 2 of them) never uses it, and 88 bytes per direction add up.
#[derive(Default)]
pub struct LazyReliable(Option<Box<Reliable>>);

impl LazyReliable {
    /// Never sent or received a sequenced frame.
    pub fn is_unused(&self) -> bool {
        self.0.is_none()
    }
}

/// What a direction that has never sent or received a sequenced frame reads.
static UNUSED: Reliable = Reliable {
    next_seq: 0,
    unacked: VecDeque::new(),
    timer_at: None,
    expect: 0,
    early: BTreeSet::new(),
    ack_pending: 0,
    ack_timer: false,
};

impl std::ops::Deref for LazyReliable {
    type Target = Reliable;
    fn deref(&self) -> &Reliable {
        self.0.as_deref().unwrap_or(&UNUSED)
    }
}

impl std::ops::DerefMut for LazyReliable {
    fn deref_mut(&mut self) -> &mut Reliable {
        self.0.get_or_insert_with(Box::default)
    }
}

impl<N: VerbsNet> Mpi<Verbs<N>> {
    fn retry_after(&self, retries: u32) -> Time {
        let factor = if retries > 1 { retries.ilog2() } else { 1 } as f64;
        from_ns((self.ch.params.ud_retry_timeout_us * factor).min(self.ch.params.ud_max_retry_timeout_us) * 1e3)
    }

    /// Post wire `w` in direction `d` of connection `c` with the next sequence number (it holds
    /// a window slot until acknowledged).
    pub(super) fn post_sequenced(&mut self, cx: &mut Cx<N>, c: u32, d: usize, w: u32, bytes: u32, ready: Time) {
        let rel = &mut self.ch.conns[c as usize].dirs[d].rel;
        let seq = rel.next_seq;
        rel.next_seq += 1;
        rel.unacked.push_back(Unacked { seq, wire: w, bytes, sent_at: ready, retries: 0, sending: 1 });
        let wire = &mut self.ch.wires[w as usize];
        wire.seq = seq;
        wire.uses += 1; // the unacked list's hold, released by the acknowledgement
        let due = ready + self.retry_after(0);
        self.arm_retry(cx, c, d, due);
        self.post_now(cx, c, d, w, bytes, ready);
    }

    fn arm_retry(&mut self, cx: &mut Cx<N>, c: u32, d: usize, at: Time) {
        let rel = &mut self.ch.conns[c as usize].dirs[d].rel;
        if rel.timer_at.is_none_or(|t| at < t) {
            rel.timer_at = Some(at);
            cx.schedule_after_batch(at, Ev::Channel(VerbsEv::UdRetry(c, d as u8)));
        }
    }

    fn unacked_mut(&mut self, c: u32, d: usize, seq: u32) -> Option<&mut Unacked> {
        let q = &mut self.ch.conns[c as usize].dirs[d].rel.unacked;
        let first = q.front()?.seq;
        seq.checked_sub(first).and_then(|i| q.get_mut(i as usize))
    }

    /// The wire of direction `d` numbered `seq`: still unacknowledged, since only the receiver's
    /// acknowledgement of it (sent after it was handed on) removes it.
    fn seq_wire(&mut self, c: u32, d: usize, seq: u32) -> u32 {
        self.unacked_mut(c, d, seq).expect("a frame is unacknowledged until handed on").wire
    }

    /// A copy of sequenced wire `w` left the adapter of direction `d`.
    pub(super) fn frame_sent(&mut self, c: u32, d: usize, w: u32) {
        let seq = self.ch.wires[w as usize].seq;
        if let Some(u) = self.unacked_mut(c, d, seq).filter(|u| u.wire == w) {
            u.sending -= 1;
        }
    }

    /// A frame with header tag `tag` arrived in direction `d` of connection `c` at `at`.
    pub(super) fn on_frame(&mut self, cx: &mut Cx<N>, c: u32, d: usize, tag: u32, at: Time) {
        let me = self.ch.conns[c as usize].ranks[1 - d];
        if tag & ACK_TAG != 0 {
            let t = self.cpu(me, at, 0);
            return self.acked(cx, c, 1 - d, tag & !ACK_TAG, t);
        }
        let seq = tag;
        let rel = &mut self.ch.conns[c as usize].dirs[d].rel;
        if seq < rel.expect || rel.early.contains(&seq) {
            // A copy of a frame already here: the acknowledgement was lost or is still on its way.
            self.stats.duplicate_frames += 1;
            return self.owe_ack(cx, c, d, at);
        }
        if seq - rel.expect >= self.ch.params.ud_recv_window {
            return; // too far ahead to keep: it will come again
        }
        // The acknowledgement it carries counts at once, in whatever order frames arrive.
        let w = self.seq_wire(c, d, seq);
        let ack = self.ch.wires[w as usize].credits;
        let t = self.cpu(me, at, 0);
        self.acked(cx, c, 1 - d, ack, t);
        let rel = &mut self.ch.conns[c as usize].dirs[d].rel;
        if seq != rel.expect {
            rel.early.insert(seq);
            return;
        }
        let mut seq = seq;
        loop {
            let w = self.seq_wire(c, d, seq);
            let kind = self.ch.wires[w as usize].kind;
            self.ch.conns[c as usize].dirs[d].rel.expect = seq + 1;
            self.on_arrival(cx, c, d, w, at);
            self.release_wire(w);
            let rel = &mut self.ch.conns[c as usize].dirs[d].rel;
            rel.ack_pending += 1;
            let t = self.ranks[me as usize].cpu_free;
            if rel.ack_pending >= self.ch.params.ud_ack_every || kind == Kind::Fin {
                self.send_ack(cx, c, d, t);
            } else {
                self.owe_ack(cx, c, d, t);
            }
            seq += 1;
            if !self.ch.conns[c as usize].dirs[d].rel.early.remove(&seq) {
                break;
            }
        }
    }

    /// The receiver of direction `d` owes an acknowledgement: send it at the progress timeout
    /// unless a frame going back carries it first.
    fn owe_ack(&mut self, cx: &mut Cx<N>, c: u32, d: usize, t: Time) {
        let rel = &mut self.ch.conns[c as usize].dirs[d].rel;
        rel.ack_pending = rel.ack_pending.max(1);
        if !rel.ack_timer {
            rel.ack_timer = true;
            let at = t + from_ns(self.ch.params.ud_progress_timeout_us * 1e3);
            cx.schedule_after_batch(at, Ev::Channel(VerbsEv::UdAck(c, d as u8)));
        }
    }

    /// Explicit acknowledgement of direction `d`, from its receiver.
    fn send_ack(&mut self, cx: &mut Cx<N>, c: u32, d: usize, t: Time) {
        self.stats.credit_updates += 1;
        let [a, b] = self.ch.conns[c as usize].ranks;
        let (from, to) = if d == 0 { (b, a) } else { (a, b) };
        let hdr = self.ch.params.header_bytes;
        self.send_wire(cx, (from, to), Kind::Credit, u32::MAX, hdr, t);
    }

    pub fn on_ack_timer(&mut self, cx: &mut Cx<N>, c: u32, d: usize, now: Time) {
        let rel = &mut self.ch.conns[c as usize].dirs[d].rel;
        rel.ack_timer = false;
        if rel.ack_pending > 0 {
            self.send_ack(cx, c, d, now);
        }
    }

    /// Everything direction `d` sent before `ack` has arrived (seen by its sender at `t`).
    fn acked(&mut self, cx: &mut Cx<N>, c: u32, d: usize, ack: u32, t: Time) {
        let mut freed = 0;
        while let Some(u) = self.ch.conns[c as usize].dirs[d].rel.unacked.front() {
            if u.seq >= ack {
                break;
            }
            let w = u.wire;
            self.ch.conns[c as usize].dirs[d].rel.unacked.pop_front();
            freed += 1;
            let wire = self.ch.wires[w as usize];
            if wire.kind == (Kind::Write { last: true }) {
                // RPUT over UC: the send buffer is free once the receiver has all of it.
                self.complete_send(cx, wire.msg, t);
            }
            self.release_wire(w);
        }
        self.add_credits(cx, c, d, freed, t);
    }

    /// Direction `d`'s retransmission check is due at `now`: resend what timed out.
    pub fn on_retry_timer(&mut self, cx: &mut Cx<N>, c: u32, d: usize, now: Time) {
        let rel = &mut self.ch.conns[c as usize].dirs[d].rel;
        if rel.timer_at != Some(now) {
            return; // superseded by an earlier check
        }
        rel.timer_at = None;
        let recheck = from_ns(self.ch.params.ud_progress_timeout_us * 1e3);
        let from = self.ch.conns[c as usize].ranks[d];
        let mut next: Option<Time> = None;
        for i in 0..self.ch.conns[c as usize].dirs[d].rel.unacked.len() {
            let (sent_at, retries, sending) = {
                let u = &self.ch.conns[c as usize].dirs[d].rel.unacked[i];
                (u.sent_at, u.retries, u.sending)
            };
            let due = sent_at + self.retry_after(retries);
            let at = if due > now {
                due
            } else if sending > 0 {
                now + recheck // a copy is still queued in the adapter: look again later
            } else {
                if retries >= self.ch.params.ud_max_retries {
                    self.failure = Some(format!(
                        "ud reliability error: a frame was resent {} times without an acknowledgement (ud_max_retries)",
                        self.ch.params.ud_max_retries
                    ));
                    return;
                }
                let ready = self.cpu(from, now, self.ch.post_cost);
                let u = &mut self.ch.conns[c as usize].dirs[d].rel.unacked[i];
                u.retries += 1;
                u.sent_at = ready;
                u.sending += 1;
                let (w, bytes) = (u.wire, u.bytes);
                self.ch.wires[w as usize].uses += 1; // one more send completion to come
                self.stats.resent_frames += 1;
                self.post_now(cx, c, d, w, bytes, ready);
                ready + self.retry_after(retries + 1)
            };
            next = Some(next.map_or(at, |n| n.min(at)));
        }
        if let Some(at) = next {
            self.arm_retry(cx, c, d, at);
        }
    }
}
