//! The TCP hosts: every connection's sender and receiver, the CPU cost of the host stack, the
//! link layer's fragmentation, cross-traffic sources, and the [`Endpoints`] glue to the fabric.
//!
//! A host's port takes, in order: ACKs whose receive processing has finished, the remaining
//! fragments of a datagram being sent (IPoIB connected mode), then data from its connections
//! round-robin, then cross traffic. Stack costs run on one timeline per core: a sender cannot hand
//! a segment over before its core is free; a receiver's ACK leaves only once its core has processed
//! the segment, so a slow receiver adds delay and, through the window, slows the sender.

use std::collections::{BTreeMap, VecDeque};

use super::cc::CcName;
use super::cross::CrossSource;
use super::flow::Flow;
use super::link::{Framing, TCP_IP_HEADER_BYTES};
use super::params::{HostStack, TcpParams};
use super::receiver::AckNow;
use super::segment::{Kind, TcpPacket};
use super::sender::{Next, NEVER};
use crate::engine::time::from_ns;
use crate::engine::Time;
use crate::net::{Endpoints, NodeId, Pull};

/// One TCP connection (an iperf stream): sender on `src`, receiver on `dst`.
pub type Conn = Flow<Reassembly>;

/// Reassembly of connected-mode datagrams: next fragment expected, and whether one was lost.
#[derive(Default)]
pub struct Reassembly {
    next: u16,
    broken: bool,
}

/// Stack costs in picoseconds (per packet) and picoseconds per byte.
struct Costs {
    tx_pkt: Time,
    tx_byte: Time,
    rx_pkt: Time,
    rx_byte: Time,
    ack: Time,
}

/// What the receiving application of a connection can have read: a segment becomes readable once
/// the receiving core has processed it (a core works in arrival order), so a receiver whose core is
/// the bottleneck does not count its backlog, up to a window of data, as delivered.
#[derive(Default)]
pub struct Readable {
    /// (processed at, in-order segments readable from then), in time order.
    pending: VecDeque<(Time, u64)>,
    segs: u64,
}

impl Readable {
    fn push(&mut self, done: Time, in_order_segs: u64) {
        if in_order_segs > self.pending.back().map_or(self.segs, |p| p.1) {
            self.pending.push_back((done, in_order_segs));
        }
    }

    /// In-order segments the application can have read by `t` (`t` never goes back).
    pub fn segs_by(&mut self, t: Time) -> u64 {
        while let Some(&(done, segs)) = self.pending.front() {
            if done > t {
                break;
            }
            self.segs = segs;
            self.pending.pop_front();
        }
        self.segs
    }
}

/// The segments of a connection that carry less than one MSS, by sequence number: the last
/// segment of an application write that a TCP_NODELAY socket sends at once (an RPC reply). Every
/// other segment carries one MSS (a bulk sender's). Forgotten once acknowledged.
#[derive(Default)]
pub struct ShortSegments(BTreeMap<u64, u32>);

impl ShortSegments {
    /// Segment `seg` carries `payload` bytes (less than the MSS).
    pub fn set(&mut self, seg: u64, payload: u32) {
        self.0.insert(seg, payload);
    }

    fn payload(&self, seg: u64, mss: u32) -> u32 {
        self.0.get(&seg).copied().unwrap_or(mss)
    }

    fn forget_below(&mut self, seg: u64) {
        while self.0.first_key_value().is_some_and(|(&s, _)| s < seg) {
            self.0.pop_first();
        }
    }
}

#[derive(Default)]
struct Host {
    /// ACKs to send, each with the time its segment's processing finishes.
    ctrl: VecDeque<(Time, TcpPacket)>,
    frags: VecDeque<TcpPacket>,
    conns: Vec<u32>,
    rr: usize,
    cores_free: Vec<Time>,
    cross: Vec<usize>,
}

pub struct TcpHosts {
    pub conns: Vec<Conn>,
    /// Per connection, what its receiving application can have read.
    pub readable: Vec<Readable>,
    /// Per connection, its segments shorter than one MSS.
    pub short: Vec<ShortSegments>,
    hosts: Vec<Host>,
    pub cross: Vec<CrossSource>,
    pub framing: Framing,
    costs: Costs,
    cores: usize,
    /// Timer events to schedule: (time, connection).
    pub timers: Vec<(Time, u32)>,
}

impl TcpHosts {
    pub fn new(node_count: usize, framing: Framing, stack: &HostStack) -> Self {
        let cores = stack.cores.max(1) as usize;
        TcpHosts {
            conns: Vec::new(),
            readable: Vec::new(),
            short: Vec::new(),
            hosts: (0..node_count).map(|_| Host { cores_free: vec![0; cores], ..Host::default() }).collect(),
            cross: Vec::new(),
            framing,
            costs: Costs {
                tx_pkt: from_ns(stack.tx_pkt_ns),
                tx_byte: from_ns(stack.tx_byte_ns),
                rx_pkt: from_ns(stack.rx_pkt_ns),
                rx_byte: from_ns(stack.rx_byte_ns),
                ack: from_ns(stack.ack_ns),
            },
            cores,
            timers: Vec::new(),
        }
    }

    /// Open a connection from `src` to `dst`: its sender starts with the SYN.
    pub fn connect(&mut self, src: NodeId, dst: NodeId, p: &TcpParams, cc: CcName) -> u32 {
        let id = self.conns.len() as u32;
        let core = id as usize % self.cores;
        self.conns.push(Flow::open(src, dst, p, cc, self.framing.mss(), id, core, false, Reassembly::default()));
        self.readable.push(Readable::default());
        self.short.push(ShortSegments::default());
        self.hosts[src as usize].conns.push(id);
        id
    }

    /// When the receiving core of connection `c` has processed every segment delivered so far
    /// (what an application reading the socket waits for).
    pub fn rx_busy_until(&self, c: u32) -> Time {
        let conn = &self.conns[c as usize];
        self.hosts[conn.dst as usize].cores_free[conn.core]
    }

    pub fn add_cross(&mut self, c: CrossSource) {
        let src = c.src as usize;
        self.cross.push(c);
        self.hosts[src].cross.push(self.cross.len() - 1);
    }

    fn arm(&mut self, c: u32) {
        self.conns[c as usize].arm(c, &mut self.timers);
    }

    /// A timer event of connection `c` fired: RTO and/or delayed ACK.
    pub fn on_timer(&mut self, now: Time, c: u32) {
        if self.conns[c as usize].fire(now) {
            self.queue_ack(c, now);
        }
        self.arm(c);
    }

    fn queue_ack(&mut self, c: u32, ready: Time) {
        let conn = &mut self.conns[c as usize];
        let pkt = conn.ack(c, &self.framing);
        self.hosts[conn.dst as usize].ctrl.push_back((ready, pkt));
    }

    /// A whole data segment reached its receiver: charge the stack, then acknowledge.
    fn on_segment(&mut self, now: Time, c: u32, seg: u64) {
        let costs = &self.costs;
        let payload = self.short[c as usize].payload(seg, self.framing.mss()) as u64;
        let conn = &mut self.conns[c as usize];
        let core = &mut self.hosts[conn.dst as usize].cores_free[conn.core];
        *core = (*core).max(now) + costs.rx_pkt + costs.rx_byte * payload;
        let done = *core;
        let rtt = conn.tx.rtt.srtt();
        let ack = conn.rx.on_data(now, seg, rtt);
        let reads = &mut self.readable[c as usize];
        reads.segs_by(now); // keeps only the backlog
        reads.push(done, conn.rx.rcv_nxt);
        match ack {
            AckNow::Now => self.queue_ack(c, done),
            AckNow::Delayed => self.arm(c),
        }
    }

    /// The port of `node` is free: the next packet from `conn`'s sender, if it can send.
    fn pull_conn(&mut self, now: Time, node: NodeId, c: u32) -> Result<TcpPacket, Time> {
        let h = &self.hosts[node as usize];
        let conn = &self.conns[c as usize];
        let free = h.cores_free[conn.core];
        if free > now {
            return Err(free);
        }
        match self.conns[c as usize].tx.next(now) {
            Next::Blocked => Err(NEVER),
            Next::Later(t) => Err(t),
            Next::Syn => {
                let conn = &self.conns[c as usize];
                let mut syn = TcpPacket::data(conn.dst, c, 0, self.framing.syn_bytes());
                syn.kind = Kind::Syn;
                self.hosts[node as usize].cores_free[conn.core] = now + self.costs.tx_pkt;
                self.arm(c);
                Ok(syn)
            }
            Next::Send(seg, _) => {
                let f = self.framing;
                let conn = &self.conns[c as usize];
                let (dst, core) = (conn.dst, conn.core);
                let payload = self.short[c as usize].payload(seg, f.mss());
                let ip = payload + TCP_IP_HEADER_BYTES;
                let frags = f.fragments(ip);
                let host = &mut self.hosts[node as usize];
                host.cores_free[core] = now + self.costs.tx_pkt + self.costs.tx_byte * payload as u64;
                let mut first = TcpPacket::data(dst, c, seg, f.fragment_bytes(ip, 0));
                first.frags = frags as u16;
                for i in 1..frags {
                    let mut p = first;
                    p.frag = i as u16;
                    p.wire = f.fragment_bytes(ip, i);
                    host.frags.push_back(p);
                }
                self.arm(c);
                Ok(first)
            }
        }
    }
}

impl Endpoints<TcpPacket> for TcpHosts {
    fn deliver(&mut self, now: Time, _node: NodeId, pkt: TcpPacket) {
        match pkt.kind {
            Kind::Data => {
                let conn = &mut self.conns[pkt.conn as usize];
                if pkt.frags > 1 {
                    // RC delivers fragments in order; a gap means the WAN lost one of them.
                    if pkt.frag == 0 {
                        conn.ext.broken = false;
                    } else if pkt.frag != conn.ext.next {
                        conn.ext.broken = true;
                    }
                    conn.ext.next = pkt.frag + 1;
                    if pkt.frag + 1 < pkt.frags {
                        return;
                    }
                    if conn.ext.broken {
                        return;
                    }
                }
                self.on_segment(now, pkt.conn, pkt.seg);
            }
            Kind::Syn => {
                // Answer every SYN (a repeat means the SYN-ACK was lost) once it is processed.
                let conn = &mut self.conns[pkt.conn as usize];
                let core = &mut self.hosts[conn.dst as usize].cores_free[conn.core];
                *core = (*core).max(now) + self.costs.rx_pkt;
                let ready = *core;
                let syn_ack = TcpPacket::syn_ack(conn.src, pkt.conn, conn.rx.window_segs(), self.framing.syn_bytes());
                self.hosts[conn.dst as usize].ctrl.push_back((ready, syn_ack));
            }
            Kind::SynAck => {
                let conn = &mut self.conns[pkt.conn as usize];
                conn.tx.on_syn_ack(now, pkt.rwnd_segs());
                self.arm(pkt.conn);
            }
            Kind::Ack => {
                let ack_cost = self.costs.ack;
                let conn = &mut self.conns[pkt.conn as usize];
                let core = &mut self.hosts[conn.src as usize].cores_free[conn.core];
                *core = (*core).max(now) + ack_cost;
                let (sack, n) = pkt.sack_blocks();
                conn.tx.on_ack(now, pkt.seg, &sack[..n], pkt.rwnd_segs());
                let acked = conn.tx.acked();
                self.short[pkt.conn as usize].forget_below(acked);
                self.arm(pkt.conn);
            }
            Kind::Cross => {
                if pkt.frag + 1 == pkt.frags {
                    let c = &mut self.cross[pkt.conn as usize];
                    c.received_bytes += c.ip_bytes as u64;
                }
            }
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
        if let Some(p) = h.frags.pop_front() {
            return Pull::Ready(p);
        }
        let n = h.conns.len();
        let mut i = h.rr;
        for _ in 0..n {
            let c = self.hosts[node as usize].conns[i];
            // Round robin without a division per pull.
            i = if i + 1 == n { 0 } else { i + 1 };
            match self.pull_conn(now, node, c) {
                Ok(pkt) => {
                    self.hosts[node as usize].rr = i;
                    return Pull::Ready(pkt);
                }
                Err(t) => wait = wait.min(t),
            }
        }
        let f = self.framing;
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
            return Pull::Ready(first);
        }
        if wait == NEVER {
            Pull::Idle
        } else {
            Pull::Later(wait)
        }
    }

    fn sent(&mut self, _node: NodeId, _pkt: &TcpPacket, _done_at: Time) {}

    /// Idle: no ACK, fragment or cross traffic waiting, and every connection's core free and
    /// sender with nothing to do (the receiver after its ACK; the sender whose window is full).
    fn idle_at(&self, node: NodeId, at: Time) -> bool {
        let h = &self.hosts[node as usize];
        h.ctrl.is_empty()
            && h.frags.is_empty()
            && h.cross.is_empty()
            && h.conns.iter().all(|&c| {
                let conn = &self.conns[c as usize];
                h.cores_free[conn.core] <= at && conn.tx.idle_at(at)
            })
    }
}
