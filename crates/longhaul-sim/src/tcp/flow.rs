//! One direction of a TCP connection as the host worlds keep it ([`super::hosts`] for iperf and
//! NFS streams, [`crate::mpi::ob1_tcp`] for MPI rank pairs): the sender on `src`, the receiver on
//! `dst`, the core that runs their stack work, and the one timer event kept scheduled for both.
//!
//! Invariant: `timer_at` is the time of the earliest timer event in the world's queue for this
//! flow (NEVER: none). A deadline that moves later needs no new event (the early one finds
//! nothing due and re-arms); one that moves earlier gets its own, so no deadline is ever missed
//! and stale events cost one look each.

use super::cc::CcName;
use super::link::Framing;
use super::params::{TcpParams, WindowSpec};
use super::receiver::Receiver;
use super::segment::TcpPacket;
use super::sender::{Sender, NEVER};
use crate::engine::Time;
use crate::net::NodeId;

/// A flow and what its world keeps with it (`ext`: IPoIB reassembly state, an MPI frame stream).
pub struct Flow<X> {
    pub src: NodeId,
    pub dst: NodeId,
    pub tx: Sender,
    pub rx: Receiver,
    pub core: usize,
    timer_at: Time,
    pub ext: X,
}

impl<X> Flow<X> {
    /// Sender and receiver with the parameters' window: the receiver's initial offer, and a send
    /// buffer of the fixed window or of the auto-tuning maximum (tcp_wmem). `established`: the
    /// connection exists before the measured traffic (no handshake).
    #[allow(clippy::too_many_arguments)]
    pub fn open(
        src: NodeId,
        dst: NodeId,
        p: &TcpParams,
        cc: CcName,
        mss: u32,
        id: u32,
        core: usize,
        established: bool,
        ext: X,
    ) -> Self {
        let rx = Receiver::new(mss, p.window, p.ack_every_segs, p.delack_timeout);
        let send_limit_bytes = match p.window {
            WindowSpec::Fixed { bytes } => bytes,
            WindowSpec::Auto { wmem_max_bytes, .. } => wmem_max_bytes,
        };
        let tx = Sender::new(p, cc, mss, send_limit_bytes / mss as u64, rx.window_segs(), id as u64);
        let tx = if established { tx.established() } else { tx };
        Flow { src, dst, tx, rx, core, timer_at: NEVER, ext }
    }

    /// Push a timer event for flow `id` onto `timers` if its earliest deadline (the sender's
    /// retransmission timeout, the receiver's delayed ACK) moved earlier than the one scheduled.
    pub fn arm(&mut self, id: u32, timers: &mut Vec<(Time, u32)>) {
        let due = self.tx.rto_at.min(self.rx.delack_at);
        if due < self.timer_at {
            self.timer_at = due;
            timers.push((due, id));
        }
    }

    /// A timer event of this flow fired at `now`: the retransmission timeout expires if due.
    /// Returns whether the receiver's delayed ACK is due (the world sends it, then re-arms).
    pub fn fire(&mut self, now: Time) -> bool {
        if self.timer_at <= now {
            self.timer_at = NEVER;
        }
        if self.tx.rto_at <= now {
            self.tx.on_rto(now);
        }
        self.rx.delack_at <= now
    }

    /// The receiver's acknowledgement for flow `id`, addressed to the sender's host.
    pub fn ack(&mut self, id: u32, framing: &Framing) -> TcpPacket {
        let a = self.rx.make_ack();
        TcpPacket::ack(self.src, id, &a, framing.ack_bytes(a.n_sack))
    }
}
