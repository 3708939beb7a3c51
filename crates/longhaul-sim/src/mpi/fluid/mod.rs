//! The flow-level verbs: InfiniBand RC queue pairs whose messages are flows, not packets
//! (`network = fluid`). The MPI channel above ([`super::protocol::Verbs`]: eager with credits,
//! RTS/CTS/FIN, RPUT/RGET, coalescing) is the packet level's, unchanged; only the adapters and
//! the fabric below it are replaced.
//!
//! Mechanisms, each from the same profile and fabric as the packet level ([`paths`]):
//! - A queue pair sends its work requests one after another, as the adapter's send queue does:
//!   the next starts when the previous one's last byte has left; at most its send queue depth
//!   is posted and not acknowledged, and at most `max_rd_atomic` RDMA reads are outstanding.
//! - The host's send engine fetches each work request (`tx_wqe`) in series with the others.
//! - A message of one packet or less (eager data, RTS, CTS, FIN, credit updates, a read
//!   request) takes the resources of its path one after another, each for its packet's time
//!   there, first come first served (`occupancy`): the send engine, each port (its wire
//!   bytes with headers and framing, the feeding engine's gap, its share of the credits), the
//!   far receive engine; between them the propagation and the switches' and extenders'
//!   latencies, then the completion poll. Where paths join (a switch's port) it takes its turn
//!   at the time it gets there (an event), so that a port serves in the order of arrival. The
//!   time it takes of a resource comes out of the flows' there when their spare time does not
//!   cover it.
//! - A longer message (RDMA write, read response, long send) is a flow through the send engine,
//!   every port on its path and the receive engine, sharing each max-min with the other flows
//!   ([`flows`]); the rates of the flows connected through shared resources to one that starts
//!   or ends are solved again (once per instant however many do), found through each
//!   resource's lists of its flows and of their classes (flows that share the same resources
//!   have one rate and one clock: a rate change is one update, however many flows). Port
//!   capacities count the packets' headers and any WAN framing, the engine feeding the port,
//!   and the link-level credits: a port moves at most the far buffer per credit loop (out and
//!   back), which is what holds a long-haul link when the extender's buffer is short of its
//!   bandwidth-delay product.
//! - RC completes a send when its ACK is back: a one-packet message from the responder, which
//!   its send engine takes ahead of the data it has yet to send (as the adapter sends ACKs
//!   first), once the last packet is through the receive engine; at that instant, as an event
//!   for a flow, so that the responder's own work posted before then goes first.
//!
//! Left out (see docs/models/mpi.md, "Flow-level mode"): packet loss and retransmission, the
//! ports' queues and the per-packet interleaving of queue pairs (flows share rates instead, and
//! a one-packet message never waits behind a flow's packets), the ACKs a flow asks for before
//! its last packet, ACK coalescing.

mod flows;
mod occupancy;
pub mod paths;

use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasherDefault;

use self::flows::Flows;
use self::occupancy::Occupancy;
use self::paths::{OnPath, Path, Paths};
use super::engine::PairHasher;
use super::keyed_queues::KeyedQueues;
use super::protocol::VerbsNet;
use crate::engine::Time;
use crate::ib::headers::{ack_bytes, data_packet_bytes, read_request_bytes};
use crate::ib::{Completion, CompletionKind, IbPacket, Op, Transport, WcStatus};
use crate::net::{Endpoints, NodeId, Pull};
use crate::transport::ranked_two_kinds;

/// A queue pair: small, since an MPI job may connect millions of pairs.
#[derive(Debug, Clone, Copy)]
struct FluidQp {
    node: NodeId,
    peer: u32,
    depth: u16,
    /// Work requests started and not completed (send queue occupancy).
    outstanding: u16,
    reads_out: u16,
    /// When the send engine may fetch its next work request: once the last packet of the one
    /// before is handed to the port (the engine works a packet ahead of the wire).
    free_at: Time,
    /// When its last packet has left the host's port (the next one follows it on the wire).
    wire_free: Time,
    /// A flow of this queue pair's sends is on the wire.
    streaming: bool,
    /// As responder: a read response flow is on the wire.
    responding: bool,
}

// Two per pair of ranks that talked: 16 M of them in an alltoall at 4,096 ranks.
const _: () = assert!(std::mem::size_of::<FluidQp>() == 32);

impl FluidQp {
    /// It may start work request `w`: nothing of its own streaming, its send queue not full,
    /// and for a read, fewer than `max_reads` outstanding.
    fn can_start(&self, w: &Wqe, max_reads: u32) -> bool {
        !self.streaming && self.outstanding < self.depth && (w.op != Op::Read || u32::from(self.reads_out) < max_reads)
    }
}

#[derive(Debug, Clone, Copy)]
struct Wqe {
    op: Op,
    len: u32,
    id: u64,
    ready: Time,
}

/// A message streaming as a flow.
#[derive(Debug, Clone, Copy)]
struct Flow {
    /// The queue pair whose work request it is (the requester, also for a read's response).
    qp: u32,
    wqe: Wqe,
    path: Path,
}

/// What a one-packet message is, for what follows its arrival.
#[derive(Debug, Clone, Copy)]
enum Carried {
    /// A send or write of this queue pair.
    Send(u32, Wqe),
    /// A read request of this queue pair, to its responder.
    ReadRequest(u32, Wqe),
    /// The only packet of the response to this queue pair's read.
    ReadResponse(u32, Wqe),
    /// The ACK of this queue pair's send or write.
    Ack(u32, Wqe),
}

/// A one-packet message on its way.
#[derive(Debug, Clone, Copy)]
struct Hopping {
    what: Carried,
    path: Path,
    /// Its bytes on the wire (headers included, before any framing).
    wire: u32,
    at: OnPath,
}

/// What a timer releases.
#[derive(Debug, Clone, Copy)]
enum Pending {
    Deliver(Completion),
    /// A flow begins (its work request fetched).
    Start(Flow),
    /// A read request reached the responder: (requester qp, the request).
    Serve(u32, Wqe),
    /// A work request of this queue pair is posted now.
    Kick(u32),
    /// A one-packet message is at a port where paths join.
    Hop(Hopping),
    /// The last packet of this queue pair's send or write (a flow) is through the far receive
    /// engine now.
    Arrive(u32, Wqe),
}

/// The flow level's timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FluidTimer {
    /// The pending item of this slot is due.
    Pending(u32),
    /// The flows are due for their next solve (stale unless the generation is current).
    FlowsDue(u32),
}

// Timers due together release their pending items first, by slot, then solve the flows.
ranked_two_kinds!(FluidTimer, FluidTimer::Pending, FluidTimer::FlowsDue);

/// What the flow level counted: its invariants, checked when a run ends.
#[derive(Debug, Clone, Default)]
pub struct FluidStats {
    /// Payload bytes posted (sends, writes, reads) and delivered to their receiver.
    pub bytes_posted: u64,
    pub bytes_delivered: u64,
    /// The highest load / capacity any resource had at any solve (at most 1 by max-min).
    pub max_load_ratio: f64,
}

type QpMap<V> = HashMap<u32, V, BuildHasherDefault<PairHasher>>;

/// The hosts' adapters and the fabric at flow level.
pub struct FluidIb {
    pub paths: Paths,
    qps: Vec<FluidQp>,
    /// Work requests waiting for their queue pair, by queue pair.
    waiting: KeyedQueues<u32, Wqe>,
    /// Read requests waiting for the responder's previous response, by responder queue pair.
    serving: QpMap<VecDeque<(u32, Wqe)>>,
    /// The one-packet messages' clock of every resource (the send engines' for every work
    /// request fetched), and the flows' share of each.
    occupancy: Occupancy,
    flows: Flows,
    /// The resources of the flows started or ended since the last solve.
    touched: Vec<u32>,
    /// The flows done at the instant being handled.
    done: Vec<Flow>,
    generation: u32,
    /// A solve is armed for this instant.
    solve_at: Option<Time>,
    pending: Vec<Pending>,
    free_pending: Vec<u32>,
    completions: Vec<Completion>,
    timers: Vec<(Time, FluidTimer)>,
    pub stats: FluidStats,
}

impl FluidIb {
    pub fn new(paths: Paths) -> Self {
        let (n_resources, flows) = (paths.capacity.len(), Flows::new(paths.capacity.clone()));
        FluidIb {
            paths,
            qps: Vec::new(),
            waiting: KeyedQueues::default(),
            serving: QpMap::default(),
            occupancy: Occupancy::new(n_resources),
            flows,
            touched: Vec::new(),
            done: Vec::new(),
            generation: 0,
            solve_at: None,
            pending: Vec::new(),
            free_pending: Vec::new(),
            completions: Vec::new(),
            timers: Vec::new(),
            stats: FluidStats::default(),
        }
    }

    fn later(&mut self, at: Time, p: Pending) {
        let slot = match self.free_pending.pop() {
            Some(i) => {
                self.pending[i as usize] = p;
                i
            }
            None => {
                self.pending.push(p);
                (self.pending.len() - 1) as u32
            }
        };
        self.timers.push((at, FluidTimer::Pending(slot)));
    }

    /// At `now`, start the work requests of `qp` that are posted by then and can start, in
    /// order, none before `floor` (when the engine could first take the one that waited).
    fn try_start(&mut self, qp: u32, now: Time, floor: Time) {
        let max_reads = self.paths.params.max_rd_atomic.max(1);
        loop {
            let q = &self.qps[qp as usize];
            let startable = |w: &Wqe| w.ready <= now && q.can_start(w, max_reads);
            let Some(w) = self.waiting.pop_front_if(qp, startable) else { return };
            self.start(qp, Wqe { ready: w.ready.max(floor), ..w });
        }
    }

    /// The adapter takes work request `w` of `qp`.
    fn start(&mut self, qp: u32, w: Wqe) {
        let p = self.paths.params.clone();
        let q = self.qps[qp as usize];
        let (a, b) = (q.node, self.qps[q.peer as usize].node);
        let path = self.paths.path(a, b);
        let engine = self.paths.engines(a).0;
        let ready = w.ready.max(q.free_at);
        self.qps[qp as usize].outstanding += 1;
        match w.op {
            Op::Read => {
                // The request: one packet to the responder, which serves it when it arrives.
                let s = self.occupancy.take(engine, ready, p.tx_wqe + p.tx_pkt) + p.tx_wqe + p.tx_pkt;
                self.qps[qp as usize].free_at = s;
                self.qps[qp as usize].reads_out += 1;
                let at = OnPath { hop: 0, head: s, tail: s };
                self.walk(Hopping { what: Carried::ReadRequest(qp, w), path, wire: read_request_bytes(), at }, true);
            }
            _ if w.len <= p.mtu_bytes => {
                let busy = p.tx_wqe + p.tx_packet(w.len);
                let s = self.occupancy.take(engine, ready, busy) + busy;
                let depart = s.max(q.wire_free);
                let wire = data_packet_bytes(false, w.op, true, w.len);
                let at = OnPath { hop: 0, head: depart, tail: depart };
                let on_port = self.walk(Hopping { what: Carried::Send(qp, w), path, wire, at }, true);
                let on_port = on_port.expect("a host's own port is where no paths join");
                let on_wire = self.paths.first_hop_time(&path, wire);
                let qm = &mut self.qps[qp as usize];
                (qm.free_at, qm.wire_free) = (s, on_port + on_wire);
            }
            _ => {
                let s = self.occupancy.take(engine, ready, p.tx_wqe) + p.tx_wqe;
                let s = s.max(q.wire_free);
                self.qps[qp as usize].streaming = true;
                let flow = Flow { qp, wqe: w, path };
                self.later(s, Pending::Start(flow));
            }
        }
    }

    /// Take the resources of `m`'s path from where it is: each port up to the next one where
    /// paths join, which it takes at its turn, as a later event (unless it is `there` now), so
    /// that a port serves one-packet messages in the order they come; after the last port, the
    /// far host's receive engine. Returns when it started on the first port it took.
    fn walk(&mut self, mut m: Hopping, mut there: bool) -> Option<Time> {
        let mut first = None;
        while m.at.hop < m.path.hop_count() {
            let turn = self.paths.next_port(&m.path, &m.at, m.wire);
            if turn.joins && !there {
                self.later(turn.ready, Pending::Hop(m));
                return first;
            }
            there = false;
            let start = if m.at.hop == 0 && matches!(m.what, Carried::Ack(..)) {
                // Out of the engine ahead of the data, onto the wire after the packet on it.
                self.occupancy.take_ahead(turn.port, turn.ready, turn.service)
            } else {
                self.occupancy.take(turn.port, turn.ready, turn.service)
            };
            first = first.or(Some(start));
            m.at = self.paths.leave(&m.path, &m.at, start, m.wire);
        }
        let rx_engine = *m.path.resources().last().expect("a path ends at a receive engine");
        let rx = self.paths.params.rx_pkt;
        let received = self.occupancy.take(rx_engine, m.at.tail, rx) + rx;
        match m.what {
            // Its last port is a leaf switch's (every host hangs off one: `topology::build`,
            // asserted in `Paths::new`), taken at its turn, so the far host's ACK takes its
            // engine within a hop's latency of the events handled; a flow's far end needs an
            // event (`flow_ended`).
            Carried::Send(qp, w) => self.arrived(qp, w, received),
            Carried::ReadRequest(qp, w) => self.later(received, Pending::Serve(qp, w)),
            Carried::ReadResponse(qp, w) => self.read_done(qp, w, received),
            Carried::Ack(qp, w) => self.acked(qp, w, received),
        }
        first
    }

    /// The receive engine is done at `received` with the last packet of `qp`'s send or write
    /// `w`: its receive completion there, and the send's completion once the ACK is back.
    fn arrived(&mut self, qp: u32, w: Wqe, received: Time) {
        let (poll, tx_pkt) = (self.paths.params.poll, self.paths.params.tx_pkt);
        let q = self.qps[qp as usize];
        let seen = received + poll;
        let recv = Completion {
            qp: q.peer,
            kind: CompletionKind::Recv,
            status: WcStatus::Success,
            op: w.op,
            id: w.id >> 32,
            bytes: w.len,
            at: seen,
        };
        self.later(seen, Pending::Deliver(recv));
        // The ACK: the responder's engine sends it ahead of its data, then it crosses the
        // path back as any one-packet message.
        let responder = self.qps[q.peer as usize].node;
        let back = self.paths.path(responder, q.node);
        let s = self.occupancy.take_ahead(self.paths.engines(responder).0, received, tx_pkt) + tx_pkt;
        let at = OnPath { hop: 0, head: s, tail: s };
        self.walk(Hopping { what: Carried::Ack(qp, w), path: back, wire: ack_bytes(), at }, true);
    }

    /// The ACK of `qp`'s send or write `w` is through the requester's receive engine at
    /// `received`: the send's completion.
    fn acked(&mut self, qp: u32, w: Wqe, received: Time) {
        let at = received + self.paths.params.poll;
        let sent = Completion {
            qp,
            kind: CompletionKind::Send,
            status: WcStatus::Success,
            op: w.op,
            id: w.id,
            bytes: w.len,
            at,
        };
        self.later(at, Pending::Deliver(sent));
    }

    /// The responder of `qp`'s read `w` streams the data back, after its earlier responses.
    fn serve(&mut self, qp: u32, w: Wqe, now: Time) {
        let responder = self.qps[qp as usize].peer;
        if self.qps[responder as usize].responding {
            self.serving.entry(responder).or_default().push_back((qp, w));
            return;
        }
        let p = self.paths.params.clone();
        let (a, b) = (self.qps[qp as usize].node, self.qps[responder as usize].node);
        let path = self.paths.path(b, a);
        let engine = self.paths.engines(b).0;
        if w.len <= p.mtu_bytes {
            let s = self.occupancy.take(engine, now, p.tx_packet(w.len)) + p.tx_packet(w.len);
            let wire = data_packet_bytes(false, Op::Read, true, w.len);
            let at = OnPath { hop: 0, head: s, tail: s };
            self.walk(Hopping { what: Carried::ReadResponse(qp, w), path, wire, at }, true);
        } else {
            self.qps[responder as usize].responding = true;
            let s0 = now.max(self.occupancy.busy_until(engine));
            let flow = Flow { qp, wqe: w, path };
            self.later(s0, Pending::Start(flow));
        }
    }

    /// The requester's receive engine is done at `received` with the last response of `qp`'s
    /// read `w`.
    fn read_done(&mut self, qp: u32, w: Wqe, received: Time) {
        let at = received + self.paths.params.poll;
        let c = Completion {
            qp,
            kind: CompletionKind::Send,
            status: WcStatus::Success,
            op: Op::Read,
            id: w.id,
            bytes: w.len,
            at,
        };
        self.later(at, Pending::Deliver(c));
    }

    /// Solve the rates at `now` once this instant's starts and ends are in.
    fn solve_soon(&mut self, now: Time) {
        if self.solve_at != Some(now) {
            self.solve_at = Some(now);
            self.generation = self.generation.wrapping_add(1);
            self.timers.push((now, FluidTimer::FlowsDue(self.generation)));
        }
    }

    /// Flows due at `now`: end those done, solve the rates of the rest, arm the next due time.
    fn flows_due(&mut self, now: Time) {
        self.flows.hold(now, &mut self.occupancy);
        self.solve_at = None;
        let mut done = std::mem::take(&mut self.done);
        self.flows.take_done(now, &mut done, &mut self.occupancy);
        for f in done.drain(..) {
            self.touched.extend_from_slice(f.path.resources());
            self.flow_ended(f, now);
        }
        self.done = done;
        // Due and not done (held for one-packet messages): the same flows, the same rates.
        if !self.touched.is_empty() {
            let highest = self.flows.solve(now, &self.touched, &mut self.occupancy);
            self.stats.max_load_ratio = self.stats.max_load_ratio.max(highest);
            self.touched.clear();
        }
        if let Some(next) = self.flows.next_due() {
            self.generation = self.generation.wrapping_add(1);
            self.timers.push((next.max(now + 1), FluidTimer::FlowsDue(self.generation)));
        }
    }

    fn flow_ended(&mut self, f: Flow, now: Time) {
        let received = now + self.paths.packet_latency(&f.path) + self.paths.params.rx_pkt;
        if f.wqe.op == Op::Read {
            let responder = self.qps[f.qp as usize].peer;
            self.qps[responder as usize].responding = false;
            self.read_done(f.qp, f.wqe, received);
            if let Some(q) = self.serving.get_mut(&responder) {
                let (qp, w) = q.pop_front().expect("non-empty");
                if q.is_empty() {
                    self.serving.remove(&responder);
                }
                self.serve(qp, w, now);
            }
        } else {
            let handed = now.saturating_sub(self.paths.first_packet_time(&f.path));
            let q = &mut self.qps[f.qp as usize];
            q.streaming = false;
            (q.free_at, q.wire_free) = (handed, now);
            // Its far end at its time: the far host's ACK would otherwise take its send engine
            // up to the path's latency (1 ms over the long-haul link) ahead of the events
            // handled, and the work that host posts meanwhile would wait behind it.
            self.later(received, Pending::Arrive(f.qp, f.wqe));
            self.try_start(f.qp, now, handed);
        }
    }

    fn deliver(&mut self, c: Completion, now: Time) {
        if c.kind == CompletionKind::Send {
            let q = &mut self.qps[c.qp as usize];
            q.outstanding -= 1;
            if c.op == Op::Read {
                q.reads_out -= 1;
                self.stats.bytes_delivered += c.bytes as u64;
            }
            self.completions.push(c);
            self.try_start(c.qp, now, now);
        } else {
            self.stats.bytes_delivered += c.bytes as u64;
            self.completions.push(c);
        }
    }

    /// An invariant the run broke, if any: every byte posted delivered, no resource above its
    /// capacity (max-min never loads one beyond it).
    pub fn broken_invariant(&self) -> Option<&'static str> {
        if self.stats.bytes_posted != self.stats.bytes_delivered {
            Some("fluid: bytes posted and delivered differ")
        } else if self.stats.max_load_ratio > 1.0 + 1e-9 {
            Some("fluid: a resource above its capacity")
        } else {
            None
        }
    }
}

impl VerbsNet for FluidIb {
    fn connect(&mut self, a: NodeId, b: NodeId, transport: Transport, _mtu: u32, sq_depth: u32) -> (u32, u32) {
        assert_eq!(transport, Transport::Rc, "the flow level runs RC queue pairs only (checked by the scenario)");
        let qa = self.qps.len() as u32;
        let depth = sq_depth.clamp(1, self.paths.params.max_qp_wr);
        let depth = u16::try_from(depth).expect("a send queue of at most 16,384 (the scenario's send_wqes range)");
        let qp = |node, peer| FluidQp {
            node,
            peer,
            depth,
            outstanding: 0,
            reads_out: 0,
            free_at: 0,
            wire_free: 0,
            streaming: false,
            responding: false,
        };
        self.qps.push(qp(a, qa + 1));
        self.qps.push(qp(b, qa));
        (qa, qa + 1)
    }

    /// The work request joins its queue pair's queue; the adapter takes it when it is posted
    /// (`ready_at`, the rank's CPU time, which may be ahead of the events handled so far), so
    /// that two ranks of a host reach its send engine in the order of time, not of the calls.
    fn post_send(&mut self, qp: u32, op: Op, len: u32, id: u64, ready_at: Time) {
        self.stats.bytes_posted += len as u64;
        self.waiting.push_back(qp, Wqe { op, len, id, ready: ready_at });
        self.later(ready_at, Pending::Kick(qp));
    }

    /// RC receives come from MVAPICH2's shared receive queue, never short here.
    fn post_recv(&mut self, _qp: u32, _count: u32) {}

    fn node_of(&self, qp: u32) -> NodeId {
        self.qps[qp as usize].node
    }

    /// A flow-level queue pair is its few counters whether busy or idle: nothing to park; an
    /// idle one counts as parked.
    fn park(&mut self, qp: u32) -> bool {
        let q = &self.qps[qp as usize];
        q.outstanding == 0 && !q.streaming && !q.responding && !self.waiting.contains(&qp)
    }
}

impl crate::transport::Transport for FluidIb {
    type Packet = IbPacket;
    type Timer = FluidTimer;
    type Output = Completion;
    const MOVES_PACKETS: bool = false;

    #[inline]
    fn unsettled(&self) -> bool {
        !(self.timers.is_empty() && self.completions.is_empty())
    }

    fn drain_timers(&mut self, mut arm: impl FnMut(Time, FluidTimer)) {
        for (t, x) in self.timers.drain(..) {
            arm(t, x);
        }
    }

    fn take_outputs(&mut self, batch: &mut Vec<Completion>) {
        std::mem::swap(batch, &mut self.completions);
    }

    fn on_timer(&mut self, now: Time, timer: FluidTimer, _kicks: &mut Vec<NodeId>) {
        match timer {
            FluidTimer::FlowsDue(g) => {
                if g == self.generation {
                    self.flows_due(now);
                }
            }
            FluidTimer::Pending(slot) => {
                let p = self.pending[slot as usize];
                self.free_pending.push(slot);
                match p {
                    Pending::Deliver(c) => self.deliver(c, now),
                    Pending::Serve(qp, w) => self.serve(qp, w, now),
                    Pending::Kick(qp) => self.try_start(qp, now, now),
                    Pending::Start(f) => {
                        // The holds so far are not its own.
                        self.flows.hold(now, &mut self.occupancy);
                        self.touched.extend_from_slice(f.path.resources());
                        self.flows.insert(f, now, &mut self.occupancy);
                        self.solve_soon(now);
                    }
                    Pending::Hop(m) => {
                        self.walk(m, true);
                    }
                    Pending::Arrive(qp, w) => self.arrived(qp, w, now),
                }
            }
        }
    }
}

/// Nothing travels the fabric as packets at flow level: the hosts never have one to send.
impl Endpoints<IbPacket> for FluidIb {
    fn deliver(&mut self, _now: Time, _node: NodeId, _pkt: IbPacket) {
        debug_assert!(false, "no packet travels at flow level");
    }

    fn pull(&mut self, _now: Time, _node: NodeId) -> Pull<IbPacket> {
        Pull::Idle
    }

    fn sent(&mut self, _node: NodeId, _pkt: &IbPacket, _done_at: Time) {}

    fn idle_at(&self, _node: NodeId, _at: Time) -> bool {
        true
    }
}
