//! The TCP hosts: one host layer for every application over TCP (iperf streams, NFS replies,
//! MPI rank pairs). Every connection's two directions (a sender on one host and a receiver on
//! the other, carrying a byte [`Stream`]), the CPU cost of the host stack, the
//! link layer's fragmentation (IPoIB connected mode), the application's datagrams, UDP cross
//! traffic, and the [`Endpoints`] glue to the fabric. [`crate::transport::tcp`] makes it a
//! [`crate::transport::Transport`].
//!
//! A host's port takes, in order: the application's datagrams (an NFS client's calls), ACKs
//! whose receive processing has finished, the remaining fragments of a datagram being sent, the
//! segment the host's stack has processed (its connections' directions take turns), then cross
//! traffic.
//!
//! Stack costs run on one timeline per core (a connection's two directions share the core its
//! index picks at both hosts), charged per segment and per byte, and per application frame
//! (`per_frame_ns`: an MPI library's time per protocol frame, on the core its kernel uses):
//! - a segment leaves only once the sending core has processed it, as a send system call's data
//!   does: a lone small message's latency includes the send-side cost. The core works on the
//!   next segment while the port sends the last ([`TcpHosts::restage`]), so a paced sender is
//!   not slowed by the stack unless the stack is slower than the link;
//! - a receiver's ACK leaves only once its core has processed the segment, so a slow receiver
//!   adds delay and, through the window, slows the sender; the application reads data once the
//!   core has processed it ([`TcpOutput::Ready`]).
//!
//! A data segment leaving a host takes the acknowledgement the host owes the opposite direction
//! with it (a pending delayed ACK leaves at once instead of waiting for its timer).

use std::collections::VecDeque;

use super::cc::CcName;
use super::flow::Flow;
use super::link::{Framing, TCP_IP_HEADER_BYTES};
use super::params::{HostStack, TcpParams};
use super::receiver::AckNow;
use super::segment::{Kind, TcpPacket};
use super::sender::{Next, NEVER};
use super::stream::{Frame, Stream};
use crate::engine::time::from_ns;
use crate::engine::Time;
use crate::net::CrossSource;
use crate::net::{Endpoints, NodeId, Pull};
use crate::transport::ranked_two_kinds;

/// What a direction keeps besides its sender and receiver.
#[derive(Default)]
pub struct DirState {
    pub stream: Stream,
    /// IPoIB connected mode: the next fragment expected of the datagram being received, and
    /// whether one was lost.
    next_frag: u16,
    broken: bool,
}

/// One direction of a connection. Directions are opened in pairs ([`TcpHosts::connect`]): the
/// opposite of direction `d`, whose receiver lives on `d`'s sending host, is `d ^ 1`.
pub type Dir = Flow<DirState>;

/// A timer of the TCP hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpTimer {
    /// A direction's retransmission or delayed-ACK deadline ([`Flow::arm`]).
    Dir(u32),
    /// A host's stack may start on its next segment ([`TcpHosts::restage`]).
    Stage(NodeId),
}

// Timers due together fire the directions' first, by direction, then the hosts' stacks.
ranked_two_kinds!(TcpTimer, TcpTimer::Dir, TcpTimer::Stage);

/// What the TCP hosts produce for the application.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpOutput {
    /// The first `delivered` bytes of direction `dir` are the receiving application's at `at`
    /// (in order, processed by the receiving core).
    Ready { dir: u32, delivered: u64, at: Time },
    /// A datagram the application sent with `tag` reached its host at `at`.
    Datagram { tag: u32, at: Time },
}

/// Stack costs in picoseconds (per packet or frame) and picoseconds per byte.
struct Costs {
    frame: Time,
    tx_pkt: Time,
    tx_byte: Time,
    rx_pkt: Time,
    rx_byte: Time,
    ack: Time,
}

#[derive(Default)]
struct Host {
    /// The application's datagrams, each with the time it is handed to the stack.
    outbox: VecDeque<(Time, TcpPacket)>,
    /// ACKs to send, each with the time its segment's processing finishes.
    ctrl: VecDeque<(Time, TcpPacket)>,
    frags: VecDeque<TcpPacket>,
    /// A data segment (its first fragment, and its IP bytes) whose send-side processing
    /// finishes at the given time: it leaves then.
    staged: Option<(Time, TcpPacket, u32)>,
    dirs: Vec<u32>,
    rr: usize,
    cores_free: Vec<Time>,
    /// The earliest stage wake-up pending for this host (`NEVER` if none).
    wake_at: Time,
    cross: Vec<usize>,
}

pub struct TcpHosts {
    pub dirs: Vec<Dir>,
    hosts: Vec<Host>,
    pub cross: Vec<CrossSource>,
    pub framing: Framing,
    costs: Costs,
    mss: u64,
    cores: usize,
    /// Direction timers to schedule: (time, direction), then stage wake-ups: (time, host).
    timers: Vec<(Time, u32)>,
    wakes: Vec<(Time, NodeId)>,
    outputs: Vec<TcpOutput>,
}

impl TcpHosts {
    /// `per_frame_ns`: the application's CPU time per frame written or received (0 for
    /// applications that write whole streams).
    pub fn new(node_count: usize, framing: Framing, stack: &HostStack, per_frame_ns: f64) -> Self {
        let cores = stack.cores.max(1) as usize;
        TcpHosts {
            dirs: Vec::new(),
            hosts: (0..node_count)
                .map(|_| Host { cores_free: vec![0; cores], wake_at: NEVER, ..Host::default() })
                .collect(),
            cross: Vec::new(),
            framing,
            costs: Costs {
                frame: from_ns(per_frame_ns),
                tx_pkt: from_ns(stack.tx_pkt_ns),
                tx_byte: from_ns(stack.tx_byte_ns),
                rx_pkt: from_ns(stack.rx_pkt_ns),
                rx_byte: from_ns(stack.rx_byte_ns),
                ack: from_ns(stack.ack_ns),
            },
            mss: framing.mss() as u64,
            cores,
            timers: Vec::new(),
            wakes: Vec::new(),
            outputs: Vec::new(),
        }
    }

    /// Open a connection between hosts `a` and `b`; returns its directions a -> b and b -> a (an
    /// even number and the next). `established`: opened before the measured traffic (an MPI
    /// library connects during start-up), else a -> b starts with the SYN. `bulk`: a -> b always
    /// has a full segment to send (iperf); else it sends what the application writes.
    pub fn connect(
        &mut self,
        a: NodeId,
        b: NodeId,
        p: &TcpParams,
        cc: CcName,
        established: bool,
        bulk: bool,
    ) -> (u32, u32) {
        let first = self.dirs.len() as u32;
        for (src, dst) in [(a, b), (b, a)] {
            let id = self.dirs.len() as u32;
            let core = (id / 2) as usize % self.cores;
            let forward = id == first;
            let stream = if forward && bulk { Stream::bulk() } else { Stream::default() };
            let ext = DirState { stream, ..DirState::default() };
            // Only the opening side sends the SYN; the reverse direction rides on its handshake.
            let mut dir = Flow::open(src, dst, p, cc, self.mss as u32, id, core, established || !forward, ext);
            if !bulk || !forward {
                dir.tx.app_limit = 0;
            }
            self.dirs.push(dir);
            self.hosts[src as usize].dirs.push(id);
        }
        (first, first + 1)
    }

    /// Add a cross-traffic source (sent from its host when nothing else is ready).
    pub fn add_cross(&mut self, c: CrossSource) {
        let src = c.src as usize;
        self.cross.push(c);
        self.hosts[src].cross.push(self.cross.len() - 1);
    }

    /// The application writes `f` to direction `d` at `now` (its CPU time is charged with the
    /// segment it starts in); the host's stack starts on it if it is free.
    pub fn write(&mut self, now: Time, d: u32, f: Frame) {
        self.dirs[d as usize].ext.stream.write(f);
        let src = self.dirs[d as usize].src;
        self.restage(now, src);
    }

    /// Move the frames of direction `d` within its first `delivered` bytes to `out`, in order.
    pub fn take_frames(&mut self, d: u32, delivered: u64, out: &mut Vec<Frame>) {
        self.dirs[d as usize].ext.stream.take_frames(delivered, out);
    }

    /// The application on host `src` sends a datagram of `ip_bytes` (IP header included) to
    /// `dst`, handed to the stack at `ready`; it arrives as [`TcpOutput::Datagram`] with `tag`.
    /// Datagrams go ahead of everything else the host sends, and are never lost on the paths
    /// they are used on (a credit flow-controlled IPoIB path).
    pub fn send_datagram(&mut self, src: NodeId, dst: NodeId, ip_bytes: u32, tag: u32, ready: Time) {
        let mut pkt = TcpPacket::data(dst, tag, 0, self.framing.fragment_bytes(ip_bytes, 0));
        pkt.kind = Kind::Datagram;
        self.hosts[src as usize].outbox.push_back((ready, pkt));
    }

    fn arm(&mut self, d: u32) {
        self.dirs[d as usize].arm(d, &mut self.timers);
    }

    /// Direction `d`'s timer fired: RTO and/or delayed ACK.
    fn on_dir_timer(&mut self, now: Time, d: u32) {
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

    /// A whole data segment reached its receiver: charge the stack, hand in-order bytes to the
    /// application, then acknowledge.
    fn on_segment(&mut self, now: Time, d: u32, seg: u64) {
        let mss = self.mss;
        let dir = &mut self.dirs[d as usize];
        let len = dir.ext.stream.payload(seg, mss).unwrap_or(mss);
        let core = &mut self.hosts[dir.dst as usize].cores_free[dir.core];
        *core = (*core).max(now) + self.costs.rx_pkt + self.costs.rx_byte * len;
        let done = *core;
        let before = dir.rx.rcv_nxt;
        let rtt = dir.tx.rtt.srtt();
        let ack = dir.rx.on_data(now, seg, rtt);
        if dir.rx.rcv_nxt > before {
            let delivered = dir.ext.stream.delivered(dir.rx.rcv_nxt, mss);
            // The application takes each completed frame on the same core after the segment.
            *core += self.costs.frame * dir.ext.stream.frames_completed(delivered);
            self.outputs.push(TcpOutput::Ready { dir: d, delivered, at: *core });
        }
        match ack {
            AckNow::Now => self.queue_ack(d, done),
            AckNow::Delayed => self.arm(d),
        }
    }

    /// The next packet of direction `d` from `node`, if it can send, with the time the stack
    /// has processed it (it leaves then, not before) and its IP bytes (0 for a SYN).
    fn pull_dir(&mut self, now: Time, node: NodeId, d: u32) -> Result<(Time, TcpPacket, u32), Time> {
        let free = self.hosts[node as usize].cores_free[self.dirs[d as usize].core];
        if free > now {
            return Err(free);
        }
        let mss = self.mss;
        let dir = &mut self.dirs[d as usize];
        dir.tx.app_limit = dir.ext.stream.segments_available(mss);
        let seg = match dir.tx.next(now) {
            Next::Blocked => return Err(NEVER),
            Next::Later(t) => return Err(t),
            Next::Syn => {
                let mut syn = TcpPacket::data(dir.dst, d, 0, self.framing.syn_bytes());
                syn.kind = Kind::Syn;
                let done = now + self.costs.tx_pkt;
                self.hosts[node as usize].cores_free[dir.core] = done;
                self.arm(d);
                return Ok((done, syn, 0));
            }
            Next::Send(seg, _) => seg,
        };
        let (len, frames) = match dir.ext.stream.payload(seg, mss) {
            Some(len) => (len, 0),
            None => dir.ext.stream.cut(seg, mss),
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
        let mut pkt = TcpPacket::data(dst, d, seg, self.framing.fragment_bytes(ip, 0));
        pkt.frags = self.framing.fragments(ip) as u16;
        Ok((done, pkt, ip))
    }

    /// Start the host's core on its next segment now if it can, else ask to be woken when it
    /// may (the pacing time, or the core finishing an ACK). The core works while the port is
    /// busy with the previous packet: were the next segment staged only when the port asks for
    /// it, a paced sender would pay the stack cost after each packet's wire time instead of
    /// beside it, and a BBR sender pacing at the link's rate would get about half of it.
    fn restage(&mut self, now: Time, node: NodeId) {
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

    /// The staged segment leaves now: its other fragments queue behind it, and the core starts
    /// on the next segment.
    fn send_staged(&mut self, now: Time, node: NodeId, pkt: TcpPacket, ip: u32) -> TcpPacket {
        let f = self.framing;
        let h = &mut self.hosts[node as usize];
        h.staged = None;
        for i in 1..pkt.frags {
            let mut p = pkt;
            p.frag = i;
            p.wire = f.fragment_bytes(ip, i as u32);
            h.frags.push_back(p);
        }
        self.restage(now, node);
        pkt
    }

    /// The next cross-traffic datagram of `node` due by `now` (its other fragments queued), or
    /// when one is due.
    fn pull_cross(&mut self, now: Time, node: NodeId) -> Result<TcpPacket, Time> {
        let f = self.framing;
        let mut wait = NEVER;
        for k in 0..self.hosts[node as usize].cross.len() {
            let ci = self.hosts[node as usize].cross[k];
            let c = &mut self.cross[ci];
            if c.due() > now {
                wait = wait.min(c.due());
                continue;
            }
            c.take();
            let ip = c.ip_bytes;
            let frags = f.fragments(ip);
            let mut first = TcpPacket::data(c.dst, ci as u32, 0, f.fragment_bytes(ip, 0));
            first.kind = Kind::Cross;
            first.frags = frags as u16;
            let host = &mut self.hosts[node as usize];
            for i in 1..frags {
                let mut p = first;
                p.frag = i as u16;
                p.wire = f.fragment_bytes(ip, i);
                host.frags.push_back(p);
            }
            return Ok(first);
        }
        Err(wait)
    }

    /// Whether direction `d` would send nothing at `at` (its core free, everything written
    /// already counted in its sender's app limit, and the sender idle).
    fn dir_idle_at(&self, core_free: Time, d: u32, at: Time) -> bool {
        let dir = &self.dirs[d as usize];
        core_free <= at && dir.tx.app_limit >= dir.ext.stream.segments_available(self.mss) && dir.tx.idle_at(at)
    }

    /// A timer fired: a direction's deadline (its two hosts may send: an ACK, a retransmission)
    /// or a host's stage wake-up.
    pub fn on_timer(&mut self, now: Time, t: TcpTimer, kicks: &mut Vec<NodeId>) {
        match t {
            TcpTimer::Dir(d) => {
                self.on_dir_timer(now, d);
                let dir = &self.dirs[d as usize];
                kicks.extend([dir.src, dir.dst]);
            }
            TcpTimer::Stage(n) => {
                self.restage(now, n);
                kicks.push(n);
            }
        }
    }

    pub(crate) fn has_timers(&self) -> bool {
        !(self.timers.is_empty() && self.wakes.is_empty())
    }

    pub(crate) fn has_outputs(&self) -> bool {
        !self.outputs.is_empty()
    }

    /// Direction timers, then stage wake-ups, in the order they were armed.
    pub(crate) fn drain_timers(&mut self, mut arm: impl FnMut(Time, TcpTimer)) {
        for (t, d) in self.timers.drain(..) {
            arm(t, TcpTimer::Dir(d));
        }
        for (t, n) in self.wakes.drain(..) {
            arm(t, TcpTimer::Stage(n));
        }
    }

    pub(crate) fn take_outputs(&mut self, batch: &mut Vec<TcpOutput>) {
        std::mem::swap(batch, &mut self.outputs);
    }
}

impl Endpoints<TcpPacket> for TcpHosts {
    fn deliver(&mut self, now: Time, _node: NodeId, pkt: TcpPacket) {
        match pkt.kind {
            Kind::Data => {
                if pkt.frags > 1 {
                    // RC delivers fragments in order; a gap means the WAN lost one of them.
                    let ext = &mut self.dirs[pkt.conn as usize].ext;
                    if pkt.frag == 0 {
                        ext.broken = false;
                    } else if pkt.frag != ext.next_frag {
                        ext.broken = true;
                    }
                    ext.next_frag = pkt.frag + 1;
                    if pkt.frag + 1 < pkt.frags || ext.broken {
                        return;
                    }
                }
                self.on_segment(now, pkt.conn, pkt.seg);
            }
            Kind::Ack => {
                let dir = &mut self.dirs[pkt.conn as usize];
                let core = &mut self.hosts[dir.src as usize].cores_free[dir.core];
                *core = (*core).max(now) + self.costs.ack;
                let (sack, n) = pkt.sack_blocks();
                dir.tx.on_ack(now, pkt.seg, &sack[..n], pkt.rwnd_segs());
                let keep = dir.tx.acked().min(dir.rx.rcv_nxt);
                dir.ext.stream.forget_below(keep);
                let src = dir.src;
                self.arm(pkt.conn);
                self.restage(now, src);
            }
            Kind::Syn => {
                // Answer every SYN (a repeat means the SYN-ACK was lost) once it is processed.
                let dir = &mut self.dirs[pkt.conn as usize];
                let core = &mut self.hosts[dir.dst as usize].cores_free[dir.core];
                *core = (*core).max(now) + self.costs.rx_pkt;
                let ready = *core;
                let syn_ack = TcpPacket::syn_ack(dir.src, pkt.conn, dir.rx.window_segs(), self.framing.syn_bytes());
                self.hosts[dir.dst as usize].ctrl.push_back((ready, syn_ack));
            }
            Kind::SynAck => {
                let dir = &mut self.dirs[pkt.conn as usize];
                dir.tx.on_syn_ack(now, pkt.rwnd_segs());
                let src = dir.src;
                self.arm(pkt.conn);
                self.restage(now, src);
            }
            Kind::Cross => {
                if pkt.frag + 1 == pkt.frags {
                    let c = &mut self.cross[pkt.conn as usize];
                    c.received_bytes += c.ip_bytes as u64;
                }
            }
            Kind::Datagram => self.outputs.push(TcpOutput::Datagram { tag: pkt.conn, at: now }),
        }
    }

    fn pull(&mut self, now: Time, node: NodeId) -> Pull<TcpPacket> {
        let mut wait = NEVER;
        let h = &mut self.hosts[node as usize];
        for queue in [&mut h.outbox, &mut h.ctrl] {
            if let Some(&(ready, pkt)) = queue.front() {
                if ready <= now {
                    queue.pop_front();
                    return Pull::Ready(pkt);
                }
                wait = wait.min(ready);
            }
        }
        if let Some(p) = h.frags.pop_front() {
            return Pull::Ready(p);
        }
        if h.staged.is_none() {
            wait = wait.min(self.stage(now, node));
        }
        match self.hosts[node as usize].staged {
            Some((ready, pkt, ip)) if ready <= now => return Pull::Ready(self.send_staged(now, node, pkt, ip)),
            Some((ready, _, _)) => wait = wait.min(ready),
            None => {}
        }
        match self.pull_cross(now, node) {
            Ok(pkt) => Pull::Ready(pkt),
            Err(t) if wait.min(t) == NEVER => Pull::Idle,
            Err(t) => Pull::Later(wait.min(t)),
        }
    }

    fn sent(&mut self, _node: NodeId, _pkt: &TcpPacket, _done_at: Time) {}

    /// Idle: nothing queued, staged or due, and every direction's core free and sender with
    /// nothing to do (the receiver after its ACK; the sender whose window is full).
    fn idle_at(&self, node: NodeId, at: Time) -> bool {
        let h = &self.hosts[node as usize];
        h.outbox.is_empty()
            && h.ctrl.is_empty()
            && h.frags.is_empty()
            && h.staged.is_none()
            && h.cross.is_empty()
            && h.dirs.iter().all(|&d| self.dir_idle_at(h.cores_free[self.dirs[d as usize].core], d, at))
    }
}
