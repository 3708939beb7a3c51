//! The TCP connections between ranks and their hosts' stacks, plugged into the fabric through
//! [`Endpoints`]: the message-driven counterpart of [`crate::tcp::hosts`].
//!
//! Each rank pair has one TCP connection: two directions, each a [`Sender`] on one host and a
//! [`Receiver`] on the other, carrying a [`Stream`] of protocol frames. What differs from a
//! bulk iperf stream: the sender only sends what the application wrote (`Sender::app_limit`),
//! segments carry the bytes actually written (a small message makes a small segment), and a
//! data segment leaving a host carries the acknowledgement the host owes for the opposite
//! direction (a pending delayed ACK leaves at once instead of waiting for its timer).
//! Stack costs as in [`crate::tcp::hosts`] (one CPU timeline per core, per segment and per
//! byte), except that a segment leaves only once the sending core has processed it: a lone
//! small message's latency includes the send-side cost, as a real send system call's does.

use std::collections::VecDeque;

use super::stream::Stream;
use crate::engine::time::from_ns;
use crate::engine::Time;
use crate::net::{Endpoints, NodeId, Pull};
use crate::tcp::cc::CcName;
use crate::tcp::flow::Flow;
use crate::tcp::link::{Framing, TCP_IP_HEADER_BYTES};
use crate::tcp::params::{HostStack, TcpParams};
use crate::tcp::receiver::AckNow;
use crate::tcp::segment::{Kind, TcpPacket};
use crate::tcp::sender::{Next, NEVER};

/// One direction of a rank pair's connection, with the stream of protocol frames written to it.
/// Directions are opened in pairs (`connect`): the opposite of direction `d`, whose receiver
/// lives on `d`'s sending host, is `d ^ 1`.
pub type Dir = Flow<Stream>;

struct Costs {
    /// The MPI library's time per protocol frame written or received (see `BtlParams`).
    frame: Time,
    tx_pkt: Time,
    tx_byte: Time,
    rx_pkt: Time,
    rx_byte: Time,
    ack: Time,
}

#[derive(Default)]
struct Host {
    /// ACKs to send, each with the time its segment's processing finishes.
    ctrl: VecDeque<(Time, TcpPacket)>,
    /// A data segment whose send-side processing finishes at the given time (it leaves then).
    staged: Option<(Time, TcpPacket)>,
    dirs: Vec<u32>,
    rr: usize,
    cores_free: Vec<Time>,
    /// The earliest stage wake-up pending for this host (`NEVER` if none).
    wake_at: Time,
}

pub struct TcpNet {
    pub dirs: Vec<Dir>,
    hosts: Vec<Host>,
    costs: Costs,
    framing: Framing,
    mss: u64,
    cores: usize,
    /// Timer events to schedule: (time, direction).
    pub timers: Vec<(Time, u32)>,
    /// In-order bytes handed to the receiving application: (time, direction, bytes so far).
    pub ready: Vec<(Time, u32, u64)>,
    /// Stage wake-ups to schedule: (time, host). See [`TcpNet::restage`].
    pub wakes: Vec<(Time, NodeId)>,
}

impl TcpNet {
    pub fn new(node_count: usize, framing: Framing, stack: &HostStack, per_frame_ns: f64) -> Self {
        let cores = stack.cores.max(1) as usize;
        TcpNet {
            dirs: Vec::new(),
            hosts: (0..node_count)
                .map(|_| Host { cores_free: vec![0; cores], wake_at: NEVER, ..Host::default() })
                .collect(),
            costs: Costs {
                frame: from_ns(per_frame_ns),
                tx_pkt: from_ns(stack.tx_pkt_ns),
                tx_byte: from_ns(stack.tx_byte_ns),
                rx_pkt: from_ns(stack.rx_pkt_ns),
                rx_byte: from_ns(stack.rx_byte_ns),
                ack: from_ns(stack.ack_ns),
            },
            framing,
            mss: framing.mss() as u64,
            cores,
            timers: Vec::new(),
            ready: Vec::new(),
            wakes: Vec::new(),
        }
    }

    /// Open the connection between hosts `a` and `b` (already established); returns the
    /// directions a -> b and b -> a (an even number and the next: each the other's `d ^ 1`).
    pub fn connect(&mut self, a: NodeId, b: NodeId, p: &TcpParams, cc: CcName) -> (u32, u32) {
        let first = self.dirs.len() as u32;
        for (src, dst) in [(a, b), (b, a)] {
            let id = self.dirs.len() as u32;
            let core = (id / 2) as usize % self.cores;
            let mut dir = Flow::open(src, dst, p, cc, self.mss as u32, id, core, true, Stream::default());
            dir.tx.app_limit = 0;
            self.dirs.push(dir);
            self.hosts[src as usize].dirs.push(id);
        }
        (first, first + 1)
    }

    fn arm(&mut self, d: u32) {
        self.dirs[d as usize].arm(d, &mut self.timers);
    }

    /// A timer event of direction `d` fired: RTO and/or delayed ACK.
    pub fn on_timer(&mut self, now: Time, d: u32) {
        if self.dirs[d as usize].fire(now) {
            self.queue_ack(d, now);
        }
        self.arm(d);
    }

    fn queue_ack(&mut self, d: u32, ready: Time) {
        let dir = &mut self.dirs[d as usize];
        let pkt = dir.ack(d, &self.framing);
        self.hosts[dir.dst as usize].ctrl.push_back((ready, pkt));
    }

    /// The application writes a frame to direction `d` (the library's time for it is charged
    /// with the segment it starts in).
    pub fn write(&mut self, d: u32, f: super::btl::Frame) {
        self.dirs[d as usize].ext.write(f);
    }

    fn on_segment(&mut self, now: Time, d: u32, seg: u64) {
        let dir = &mut self.dirs[d as usize];
        let len = dir.ext.payload(seg).unwrap_or(self.mss);
        let core = &mut self.hosts[dir.dst as usize].cores_free[dir.core];
        *core = (*core).max(now) + self.costs.rx_pkt + self.costs.rx_byte * len;
        let done = *core;
        let before = dir.rx.rcv_nxt;
        let rtt = dir.tx.rtt.srtt();
        let ack = dir.rx.on_data(now, seg, rtt);
        if dir.rx.rcv_nxt > before {
            let delivered = dir.ext.delivered(dir.rx.rcv_nxt);
            // The library takes each completed frame on the same core after the segment.
            *core += self.costs.frame * dir.ext.frames_completed(delivered);
            self.ready.push((*core, d, delivered));
        }
        match ack {
            AckNow::Now => self.queue_ack(d, done),
            AckNow::Delayed => self.arm(d),
        }
    }

    /// The next segment of direction `d` from `node`, if it can send, with the time the
    /// stack has processed it (the segment leaves then, not before).
    fn pull_dir(&mut self, now: Time, node: NodeId, d: u32) -> Result<(Time, TcpPacket), Time> {
        let free = self.hosts[node as usize].cores_free[self.dirs[d as usize].core];
        if free > now {
            return Err(free);
        }
        let mss = self.mss;
        let dir = &mut self.dirs[d as usize];
        dir.tx.app_limit = dir.ext.segments_available(mss);
        let seg = match dir.tx.next(now) {
            Next::Blocked => return Err(NEVER),
            Next::Later(t) => return Err(t),
            Next::Send(seg, _) => seg,
            // Never asked: every connection starts established (`Sender::established`).
            Next::Syn => return Err(NEVER),
        };
        let (len, frames) = match dir.ext.payload(seg) {
            Some(len) => (len, 0),
            None => dir.ext.cut(seg, mss),
        };
        let (dst, core, reverse) = (dir.dst, dir.core, d ^ 1);
        let done = now + self.costs.frame * frames + self.costs.tx_pkt + self.costs.tx_byte * len;
        self.hosts[node as usize].cores_free[core] = done;
        // The segment carries the acknowledgement this host owes the opposite direction.
        if self.dirs[reverse as usize].rx.delack_at != NEVER {
            self.queue_ack(reverse, now);
        }
        self.arm(d);
        let ip = len as u32 + TCP_IP_HEADER_BYTES;
        Ok((done, TcpPacket::data(dst, d, seg, self.framing.fragment_bytes(ip, 0))))
    }

    /// Start the host's core on its next segment now if it can, else ask to be woken when it
    /// may (the pacing time, or the core finishing an ACK). The core works while the port is
    /// busy with the previous packet: were the next segment staged only when the port asks for
    /// it, a paced sender would pay the stack cost after each packet's wire time instead of
    /// beside it, and a BBR sender pacing at the link's rate would get about half of it.
    pub fn restage(&mut self, now: Time, node: NodeId) {
        let h = &mut self.hosts[node as usize];
        if h.wake_at <= now {
            h.wake_at = NEVER;
        }
        if h.staged.is_some() {
            return;
        }
        let t = self.stage(now, node);
        let h = &mut self.hosts[node as usize];
        if t != NEVER && t < h.wake_at {
            h.wake_at = t;
            self.wakes.push((t, node));
        }
    }

    /// Process the next segment of `node`'s directions (round robin) on its core and hold it
    /// until done; returns when to try again if none can be sent now.
    fn stage(&mut self, now: Time, node: NodeId) -> Time {
        let mut wait = NEVER;
        let n = self.hosts[node as usize].dirs.len();
        for k in 0..n {
            let h = &self.hosts[node as usize];
            let i = (h.rr + k) % n;
            let d = h.dirs[i];
            match self.pull_dir(now, node, d) {
                Ok(staged) => {
                    let h = &mut self.hosts[node as usize];
                    h.rr = (i + 1) % n;
                    h.staged = Some(staged);
                    return NEVER;
                }
                Err(t) => wait = wait.min(t),
            }
        }
        wait
    }
}

impl Endpoints<TcpPacket> for TcpNet {
    fn deliver(&mut self, now: Time, _node: NodeId, pkt: TcpPacket) {
        match pkt.kind {
            Kind::Data => self.on_segment(now, pkt.conn, pkt.seg),
            Kind::Ack => {
                let dir = &mut self.dirs[pkt.conn as usize];
                let core = &mut self.hosts[dir.src as usize].cores_free[dir.core];
                *core = (*core).max(now) + self.costs.ack;
                let (sack, n) = pkt.sack_blocks();
                dir.tx.on_ack(now, pkt.seg, &sack[..n], pkt.rwnd_segs());
                let keep = dir.tx.acked().min(dir.rx.rcv_nxt);
                dir.ext.forget_below(keep);
                let src = dir.src;
                self.arm(pkt.conn);
                self.restage(now, src);
            }
            Kind::Cross | Kind::Syn | Kind::SynAck => {}
        }
    }

    fn pull(&mut self, now: Time, node: NodeId) -> Pull<TcpPacket> {
        let mut wait = NEVER;
        let h = &mut self.hosts[node as usize];
        if let Some(&(ready, pkt)) = h.ctrl.front() {
            if ready <= now {
                h.ctrl.pop_front();
                return Pull::Ready(pkt);
            }
            wait = ready;
        }
        if self.hosts[node as usize].staged.is_none() {
            wait = wait.min(self.stage(now, node));
        }
        match self.hosts[node as usize].staged {
            Some((ready, pkt)) if ready <= now => {
                // The core starts on the next segment while this one is on the wire.
                self.hosts[node as usize].staged = None;
                self.restage(now, node);
                Pull::Ready(pkt)
            }
            Some((ready, _)) => Pull::Later(wait.min(ready)),
            None if wait == NEVER => Pull::Idle,
            None => Pull::Later(wait),
        }
    }

    fn sent(&mut self, _node: NodeId, _pkt: &TcpPacket, _done_at: Time) {}
}
