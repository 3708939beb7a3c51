//! The fabric: nodes (hosts, switches, range extenders) joined by links, shortest-path routing,
//! and the handling of the two network events. Transports plug in through [`Endpoints`]: the
//! fabric asks a host for its next packet when the host's port is free, and hands it the packets
//! that reach it. The fabric knows nothing about what the packets mean. Links can go down and
//! come up, and the routes be recomputed over the links up, at given times ([`links`]).

mod links;

use super::port::{
    credit_blocks, CreditReturn, Ends, InFlight, Port, PortId, PortParams, Queued, CREDIT_BLOCK_BYTES, NEVER, NO_PORT,
};
use crate::engine::{EventQueue, RngStream, Time};
pub(crate) use links::LinkChange;

pub type NodeId = u32;

/// What the fabric needs to know about a packet (small and `Copy`: a packet forwarded at send
/// time is copied only onto the wire where it waits for its arrival event).
pub trait Routable: Copy {
    /// Destination host.
    fn dst(&self) -> NodeId;
    /// Bytes on an InfiniBand-style link (headers + payload + CRCs), before WAN framing.
    fn wire_bytes(&self) -> u32;
    /// Flow identifier: packets of one flow take the same one of several parallel links
    /// (so a flow is never reordered).
    fn flow(&self) -> u32;
}

/// A host's answer when its port is free.
pub enum Pull<P> {
    Ready(P),
    /// Nothing can leave before this time (e.g. the adapter is still fetching a work request).
    Later(Time),
    Idle,
}

/// The transports running on the hosts.
pub trait Endpoints<P> {
    /// The whole packet `pkt` has reached host `node` at `now`.
    fn deliver(&mut self, now: Time, node: NodeId, pkt: P);
    /// Host `node`'s port is free at `now`.
    fn pull(&mut self, now: Time, node: NodeId) -> Pull<P>;
    /// The packet just pulled from `node` will have left the host at `done_at`.
    fn sent(&mut self, node: NodeId, pkt: &P, done_at: Time);
    /// True if a `pull` at `at` would return `Idle` and change nothing, provided nothing is
    /// delivered to `node` and none of its timers fires before then. The fabric then does not
    /// wake the busy port at `at` (each of those events tries the port again). The default,
    /// false, always wakes it.
    fn idle_at(&self, _node: NodeId, _at: Time) -> bool {
        false
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    Host,
    Switch,
    Extender,
}

pub struct Node {
    pub kind: NodeKind,
    /// Forwarding latency (switch cut-through latency, extender processing).
    pub latency: Time,
    /// Cut-through nodes start forwarding when the header arrives; others store and forward.
    pub cut_through: bool,
    pub ports: Vec<PortId>,
}

/// The facts a port of a link from node `a` to node `b` looks up for every packet.
fn ends(a: &Node, b: NodeId, bn: &Node) -> Ends {
    Ends {
        from_host: a.kind == NodeKind::Host,
        to_node: b,
        to_host: bn.kind == NodeKind::Host,
        to_cut_through: bn.cut_through,
        to_latency: bn.latency,
    }
}

/// The events of the network layer.
#[derive(Debug, Clone, Copy)]
pub enum NetEvent {
    /// The head packet on port's wire is due at the far end.
    Arrive(PortId),
    /// The port may be able to send (serialiser free, credits back, packet ready).
    Wake(PortId),
    /// A link goes down or up, or the routes are recomputed ([`Fabric::schedule_link_change`]).
    Link(LinkChange),
}

/// The ports from one node toward one host: `route_ports[start..start + count]`, the first
/// of them kept here too (most routes have one port: it is read with the entry).
#[derive(Clone, Copy, Default)]
struct Route {
    first: PortId,
    start: u32,
    count: u32,
}

/// A node with no row of its own in the routing table, or a node that is no destination.
const NO_ROW: u32 = u32::MAX;

pub struct Fabric<P> {
    pub nodes: Vec<Node>,
    pub ports: Vec<Port<P>>,
    /// Routing, flattened (one lookup per hop): `routes[route_row[node] * route_cols +
    /// route_col[dst]]` holds the ports on a shortest path from `node` toward host `dst`
    /// (several = parallel links; none = no route). Rows only for the nodes that forward and
    /// the hosts with several ports: a host with one port reaches every host it reaches through
    /// that port ([`Fabric::host_route`]), so the table grows with switches x hosts, not hosts^2.
    routes: Vec<Route>,
    route_ports: Vec<PortId>,
    route_row: Vec<u32>,
    route_col: Vec<u32>,
    route_cols: usize,
    seed: u64,
    /// The routes have been computed once (later recomputations follow link changes).
    routed: bool,
    /// [`Fabric::kick_each`]'s mark of the hosts it kicked, by node: a batch of completions
    /// may name thousands of hosts, each several times.
    kicked: Vec<u32>,
    kick_batch: u32,
}

impl<P: Routable> Fabric<P> {
    pub fn new(seed: u64) -> Self {
        Fabric {
            nodes: Vec::new(),
            ports: Vec::new(),
            routes: Vec::new(),
            route_ports: Vec::new(),
            route_row: Vec::new(),
            route_col: Vec::new(),
            route_cols: 0,
            seed,
            routed: false,
            kicked: Vec::new(),
            kick_batch: 0,
        }
    }

    pub fn add_node(&mut self, kind: NodeKind, latency: Time, cut_through: bool) -> NodeId {
        self.nodes.push(Node { kind, latency, cut_through, ports: Vec::new() });
        (self.nodes.len() - 1) as NodeId
    }

    /// Join `a` and `b` with a link; `ab` describes the direction a -> b, `ba` the reverse.
    pub fn connect(&mut self, a: NodeId, b: NodeId, ab: PortParams, ba: PortParams) -> (PortId, PortId) {
        let pa = self.ports.len() as PortId;
        let pb = pa + 1;
        let (na, nb) = (&self.nodes[a as usize], &self.nodes[b as usize]);
        self.ports.push(Port::new(a, ab, ends(na, b, nb), RngStream::new(self.seed, 1000 + pa as u64)));
        self.ports.push(Port::new(b, ba, ends(nb, a, na), RngStream::new(self.seed, 1000 + pb as u64)));
        self.ports[pa as usize].peer = pb;
        self.ports[pb as usize].peer = pa;
        // Space a packet takes at a's ingress goes back to b's port, and the other way round.
        self.ports[pa as usize].credit =
            CreditReturn { to: pb, delay: self.ports[pb as usize].params.propagation, on_forward: true };
        self.ports[pb as usize].credit =
            CreditReturn { to: pa, delay: self.ports[pa as usize].params.propagation, on_forward: true };
        self.nodes[a as usize].ports.push(pa);
        self.nodes[b as usize].ports.push(pb);
        (pa, pb)
    }

    /// Fill the routing tables (hop-count shortest paths to every host; ties kept as parallel
    /// choices). Call once after the topology is built.
    pub fn compute_routes(&mut self) {
        self.fill_routes();
        self.plan_forwarding();
    }

    /// The routing tables over the links up.
    fn fill_routes(&mut self) {
        let n = self.nodes.len();
        let is_host = |i: usize| self.nodes[i].kind == NodeKind::Host;
        let (mut rows, mut cols) = (0u32, 0u32);
        let count = |c: &mut u32| {
            *c += 1;
            *c - 1
        };
        self.route_row = (0..n)
            .map(|i| if is_host(i) && self.nodes[i].ports.len() == 1 { NO_ROW } else { count(&mut rows) })
            .collect();
        self.route_col = (0..n).map(|i| if is_host(i) { count(&mut cols) } else { NO_ROW }).collect();
        self.route_cols = cols as usize;
        self.routes = vec![Route::default(); rows as usize * cols as usize];
        self.route_ports.clear();
        for dst in 0..n {
            if self.nodes[dst].kind != NodeKind::Host {
                continue;
            }
            let mut dist = vec![usize::MAX; n];
            dist[dst] = 0;
            let mut frontier = std::collections::VecDeque::from([dst]);
            while let Some(u) = frontier.pop_front() {
                for &p in self.nodes[u].ports.iter().filter(|&&p| self.ports[p as usize].up) {
                    let v = self.ports[self.ports[p as usize].peer as usize].node as usize;
                    // Packets only transit switches and extenders, never other hosts.
                    if dist[v] == usize::MAX {
                        dist[v] = dist[u] + 1;
                        if self.nodes[v].kind != NodeKind::Host {
                            frontier.push_back(v);
                        }
                    }
                }
            }
            for u in 0..n {
                if u == dst || dist[u] == usize::MAX || self.route_row[u] == NO_ROW {
                    continue;
                }
                let start = self.route_ports.len() as u32;
                for &p in self.nodes[u].ports.iter().filter(|&&p| self.ports[p as usize].up) {
                    let v = self.ports[self.ports[p as usize].peer as usize].node as usize;
                    if dist[v] + 1 == dist[u] && (v == dst || self.nodes[v].kind != NodeKind::Host) {
                        self.route_ports.push(p);
                    }
                }
                let count = self.route_ports.len() as u32 - start;
                let first = self.route_ports.get(start as usize).copied().unwrap_or(NO_PORT);
                let cell = self.route_row[u] as usize * self.route_cols + self.route_col[dst] as usize;
                self.routes[cell] = Route { first, start, count };
            }
        }
    }

    /// The routing entry of `node` toward `dst`.
    #[inline(always)]
    fn route_entry(&self, node: NodeId, dst: NodeId) -> Route {
        let (row, col) = (self.route_row[node as usize], self.route_col[dst as usize]);
        if col == NO_ROW {
            return Route::default();
        }
        if row == NO_ROW {
            return if self.host_route(node, dst) {
                Route { first: self.nodes[node as usize].ports[0], start: 0, count: 1 }
            } else {
                Route::default()
            };
        }
        self.routes[row as usize * self.route_cols + col as usize]
    }

    /// Whether host `host` (one port) reaches host `dst`: its port is up and leads to `dst`, or
    /// to a node that forwards and has a route to it (a shortest path then starts with that
    /// port, the host's only one).
    fn host_route(&self, host: NodeId, dst: NodeId) -> bool {
        let port = &self.ports[self.nodes[host as usize].ports[0] as usize];
        let next = port.ends.to_node;
        host != dst
            && port.up
            && (next == dst
                || self.nodes[next as usize].kind != NodeKind::Host && self.route_entry(next, dst).count > 0)
    }

    /// The ports on a shortest path from `node` toward host `dst`.
    #[inline]
    pub(crate) fn route(&self, node: NodeId, dst: NodeId) -> &[PortId] {
        if self.route_row[node as usize] == NO_ROW {
            let one = std::slice::from_ref(&self.nodes[node as usize].ports[0]);
            return if self.host_route(node, dst) { one } else { &[] };
        }
        let r = self.route_entry(node, dst);
        &self.route_ports[r.start as usize..(r.start + r.count) as usize]
    }

    /// The egress port of a host (hosts have one port).
    pub fn host_port(&self, host: NodeId) -> PortId {
        self.nodes[host as usize].ports[0]
    }

    /// A host has new work: try its port now.
    pub fn kick<E: From<NetEvent> + Copy>(
        &mut self,
        now: Time,
        host: NodeId,
        q: &mut EventQueue<E>,
        eps: &mut impl Endpoints<P>,
    ) {
        let p = self.host_port(host);
        self.try_send(now, p, q, eps);
    }

    /// Kick each host of `hosts` once (in order of first appearance): the hosts a batch of
    /// completions gave new work to.
    pub fn kick_each<E: From<NetEvent> + Copy>(
        &mut self,
        now: Time,
        hosts: &[NodeId],
        q: &mut EventQueue<E>,
        eps: &mut impl Endpoints<P>,
    ) {
        self.kick_batch = self.kick_batch.wrapping_add(1);
        if self.kick_batch == 0 || self.kicked.len() < self.nodes.len() {
            self.kicked.clear();
            self.kicked.resize(self.nodes.len(), 0);
            self.kick_batch = 1;
        }
        for &n in hosts {
            if self.kicked[n as usize] != self.kick_batch {
                self.kicked[n as usize] = self.kick_batch;
                self.kick(now, n, q, eps);
            }
        }
    }

    pub fn handle<E: From<NetEvent> + Copy>(
        &mut self,
        now: Time,
        ev: NetEvent,
        q: &mut EventQueue<E>,
        eps: &mut impl Endpoints<P>,
    ) {
        match ev {
            NetEvent::Arrive(p) => loop {
                let wire = &mut self.ports[p as usize].wire;
                match wire.front() {
                    Some(f) if f.deliver_at <= now => {
                        let item = wire.pop_front().expect("front checked");
                        self.arrive(now, p, item, q, eps);
                    }
                    Some(f) => break q.schedule(f.deliver_at, NetEvent::Arrive(p).into()),
                    None => break,
                }
            },
            NetEvent::Wake(p) => {
                if self.ports[p as usize].wake_at <= now {
                    self.ports[p as usize].wake_at = NEVER;
                }
                self.try_send(now, p, q, eps);
            }
            NetEvent::Link(change) => self.change_link(now, change, q, eps),
        }
    }

    fn wake<E: From<NetEvent> + Copy>(&mut self, p: PortId, at: Time, q: &mut EventQueue<E>) {
        let port = &mut self.ports[p as usize];
        if at < port.wake_at {
            port.wake_at = at;
            q.schedule(at, NetEvent::Wake(p).into());
        }
    }

    /// Give back the ingress-buffer space a packet held at the node of `in_port`, effective at
    /// the sender after the flow-control update crosses the link. `onward`: the packet left
    /// for the next hop (false: it was dropped here). Inside a credit domain (see
    /// [`Fabric::extend_credits`]) the space is the far end's, given back when the packet leaves
    /// the domain or is dropped in it.
    #[inline(always)]
    fn return_credits<E: From<NetEvent> + Copy>(
        &mut self,
        in_port: PortId,
        left_at: Time,
        wire_bytes: u32,
        onward: bool,
        q: &mut EventQueue<E>,
    ) {
        let ingress = &self.ports[in_port as usize];
        if onward && !ingress.credit.on_forward {
            return;
        }
        let (up, delay, ingress_on_forward) = (ingress.credit.to, ingress.credit.delay, ingress.credit.on_forward);
        let sender = &mut self.ports[up as usize];
        if !sender.credit_controlled {
            return;
        }
        let at = left_at + delay;
        let bytes = credit_blocks(wire_bytes) * CREDIT_BLOCK_BYTES;
        if ingress_on_forward {
            sender.push_credit_return(at, bytes);
        } else {
            sender.push_drop_return(at, bytes);
        }
        if sender.credit_starved {
            sender.credit_starved = false;
            self.wake(up, at, q);
        }
    }

    /// Make the link-level credits of `chain[0]` (a port with flow control) stand for the
    /// ingress buffer at the far end of the last port of `chain`, a path of links without flow
    /// control of their own (an extender pair's credits across the WAN switches between them):
    /// the buffer space a packet takes there is given back when it leaves that node, or when it
    /// is dropped on the way (a drop-tail queue, corruption), a round trip of the domain later
    /// (the receiver learns of the loss from the sender's next flow-control packet: IB's credits
    /// are absolute counts, IBA vol. 1 7.9.4, so a lost packet's space is not lost). `back`: the
    /// propagation of the credit updates from the far end to `chain[0]`.
    pub fn extend_credits(&mut self, chain: &[PortId], back: Time) {
        let owner = chain[0];
        let ahead: Time = chain.iter().map(|&p| self.ports[p as usize].params.propagation).sum();
        let mut travelled = 0;
        for (i, &p) in chain.iter().enumerate() {
            travelled += self.ports[p as usize].params.propagation;
            let last = i + 1 == chain.len();
            let ingress = self.ports[p as usize].peer as usize;
            self.ports[ingress].credit =
                CreditReturn { to: owner, delay: if last { back } else { ahead - travelled + back }, on_forward: last };
        }
    }

    /// A packet sent on `from` has arrived at the far node (through the peer port) at `now`.
    fn arrive<E: From<NetEvent> + Copy>(
        &mut self,
        now: Time,
        from: PortId,
        item: InFlight<P>,
        q: &mut EventQueue<E>,
        eps: &mut impl Endpoints<P>,
    ) {
        let sender = &mut self.ports[from as usize];
        let in_port = sender.peer;
        let node = sender.ends.to_node;
        if sender.rng.chance(sender.params.loss) {
            // Corrupted on the wire: the receiver's CRC check discards it and frees its buffer.
            sender.stats.drops_loss += 1;
            self.return_credits(in_port, item.tail_at, item.wire_bytes, false, q);
            return;
        }
        if sender.ends.to_host {
            // The adapter drains its receive buffer into host memory as packets arrive.
            self.return_credits(in_port, item.tail_at, item.wire_bytes, true, q);
            eps.deliver(now, node, item.pkt);
            // The host's one port is this link's far end.
            debug_assert_eq!(in_port, self.host_port(node));
            self.try_send(now, in_port, q, eps);
            return;
        }
        let Some((out, ready_at)) = self.admit(now, now, from, &item, q) else { return };
        let port = &mut self.ports[out as usize];
        if port.queue.is_empty() {
            // What `try_send` would do with this packet alone in the queue of this forwarding
            // port (a node's, not a host's), without queueing it.
            let start = now.max(port.busy_until).max(ready_at);
            if port.take_credits(now, item.wire_bytes) {
                return self.transmit(now, out, start, item.pkt, item.wire_bytes, in_port, q, eps);
            }
        }
        port.queued_bytes += item.wire_bytes as u64;
        port.queue.push_back(Queued { pkt: item.pkt, wire_bytes: item.wire_bytes, in_port, ready_at });
        self.try_send(now, out, q, eps);
    }

    /// The egress port a packet sent on `from` takes at the far node, where it arrives at `now`
    /// (the clock is at `clock`, earlier when `from` forwards at send time), and the earliest
    /// start of its transmission there; None if the node drops it (its buffer space is freed).
    #[inline(always)]
    fn admit<E: From<NetEvent> + Copy>(
        &mut self,
        clock: Time,
        now: Time,
        from: PortId,
        item: &InFlight<P>,
        q: &mut EventQueue<E>,
    ) -> Option<(PortId, Time)> {
        let sender = &self.ports[from as usize];
        let (in_port, node) = (sender.peer, sender.ends.to_node);
        let route = self.route_entry(node, item.pkt.dst());
        let out = match route.count {
            1 => route.first,
            0 => {
                // Unroutable: impossible in a validated topology; count it as a queue drop.
                self.ports[from as usize].stats.drops_queue += 1;
                self.return_credits(in_port, now, item.wire_bytes, false, q);
                return None;
            }
            n => self.route_ports[(route.start + item.pkt.flow() % n) as usize],
        };
        if !self.ports[out as usize].up {
            // The forwarding table still points at a link that is down.
            self.ports[out as usize].stats.drops_down += 1;
            self.return_credits(in_port, now, item.wire_bytes, false, q);
            return None;
        }
        let port = &mut self.ports[out as usize];
        // The last bit cannot leave before it has arrived (only a cut-through node gets a packet
        // before its tail).
        let ready_at = if item.tail_at <= now {
            now
        } else {
            let ser_out = port.params.rate.serialise((item.wire_bytes + port.params.frame_overhead_bytes) as u64);
            now.max(item.tail_at.saturating_sub(ser_out))
        };
        if let Some(limit) = port.params.queue_limit_bytes {
            if port.waiting_bytes(clock, now) + item.wire_bytes as u64 > limit {
                port.stats.drops_queue += 1;
                self.ports[in_port as usize].stats.ingress_drops += 1;
                let port = &mut self.ports[out as usize];
                if now > clock {
                    port.early_drops.push_back(now);
                }
                self.return_credits(in_port, now, item.wire_bytes, false, q);
                return None;
            }
        }
        Some((out, ready_at))
    }

    /// `item`, just sent on `from` at clock time `clock`, is handed to the far node now (see
    /// `plan_forwarding`), and from there on down the path while each link forwards at send
    /// time: a loop rather than recursion through `transmit`. Such a node's egress port is fed
    /// by this link alone and has no flow control, so the packet never queues there; and the
    /// link into it has none either, so no hop has credits to give back.
    fn forward<E: From<NetEvent> + Copy>(
        &mut self,
        clock: Time,
        mut from: PortId,
        mut item: InFlight<P>,
        q: &mut EventQueue<E>,
        eps: &mut impl Endpoints<P>,
    ) {
        loop {
            let now = item.deliver_at;
            let Some((out, ready_at)) = self.admit(clock, now, from, &item, q) else { return };
            let port = &self.ports[out as usize];
            debug_assert!(
                port.queue.is_empty() && !port.credit_controlled,
                "a port forwarded to at send time never queues"
            );
            let start = now.max(port.busy_until).max(ready_at);
            match self.put_on_wire(out, start, &item.pkt, item.wire_bytes, q, eps).1 {
                Some((deliver_at, tail_at)) => (from, item.deliver_at, item.tail_at) = (out, deliver_at, tail_at),
                None => return,
            }
        }
    }

    /// Start as many transmissions on port `p` as its state allows at `now`.
    ///
    /// Forwarding ports commit packets ahead: a packet whose credits are available now is given
    /// its (possibly future) start time at once, and put on the wire. This is exact for a FIFO
    /// port, because credits only grow with time except through the port's own sends, and a
    /// drop-tail limit is checked against the packets whose start is still to come (virtual
    /// finish times); it saves one event per packet on every backlogged port. Host ports pull
    /// one packet at a time so that ACKs generated meanwhile still go first; a busy host port
    /// is woken when it is free only if the host may have something for it then.
    fn try_send<E: From<NetEvent> + Copy>(
        &mut self,
        now: Time,
        p: PortId,
        q: &mut EventQueue<E>,
        eps: &mut impl Endpoints<P>,
    ) {
        if !self.ports[p as usize].up {
            return;
        }
        if self.ports[p as usize].ends.from_host {
            self.try_send_host(now, p, q, eps);
        } else {
            self.try_send_forwarding(now, p, q, eps);
        }
    }

    /// `try_send` on a host's port (a packet waits in its queue only for credits).
    fn try_send_host<E: From<NetEvent> + Copy>(
        &mut self,
        now: Time,
        p: PortId,
        q: &mut EventQueue<E>,
        eps: &mut impl Endpoints<P>,
    ) {
        let pi = p as usize;
        loop {
            let port = &mut self.ports[pi];
            if port.busy_until > now {
                let t = port.busy_until;
                if !port.queue.is_empty() || !eps.idle_at(port.node, t) {
                    self.wake(p, t, q);
                }
                return;
            }
            if let Some(head) = port.queue.front() {
                if head.ready_at > now {
                    let t = head.ready_at;
                    self.wake(p, t, q);
                    return;
                }
                if !port.take_credits(now, head.wire_bytes) {
                    return self.wait_for_credits(p, q);
                }
                let Queued { pkt, wire_bytes, in_port, .. } = port.queue.pop_front().expect("non-empty");
                port.queued_bytes -= wire_bytes as u64;
                self.transmit(now, p, now, pkt, wire_bytes, in_port, q, eps);
                continue;
            }
            match eps.pull(now, port.node) {
                Pull::Ready(pkt) => {
                    let wire_bytes = pkt.wire_bytes();
                    let port = &mut self.ports[pi];
                    // A pulled packet starts now if it has the credits (the port is free).
                    if port.take_credits(now, wire_bytes) {
                        self.transmit(now, p, now, pkt, wire_bytes, NO_PORT, q, eps);
                    } else {
                        port.queued_bytes += wire_bytes as u64;
                        port.queue.push_back(Queued { pkt, wire_bytes, in_port: NO_PORT, ready_at: now });
                    }
                }
                Pull::Later(t) => {
                    self.wake(p, t.max(now), q);
                    return;
                }
                Pull::Idle => return,
            }
        }
    }

    /// `try_send` on a forwarding port: every queued packet whose credits are here is committed.
    fn try_send_forwarding<E: From<NetEvent> + Copy>(
        &mut self,
        now: Time,
        p: PortId,
        q: &mut EventQueue<E>,
        eps: &mut impl Endpoints<P>,
    ) {
        loop {
            let port = &mut self.ports[p as usize];
            let Some(head) = port.queue.front() else { return };
            let start = now.max(port.busy_until).max(head.ready_at);
            if !port.take_credits(now, head.wire_bytes) {
                return self.wait_for_credits(p, q);
            }
            let Queued { pkt, wire_bytes, in_port, .. } = port.queue.pop_front().expect("non-empty");
            port.queued_bytes -= wire_bytes as u64;
            self.transmit(now, p, start, pkt, wire_bytes, in_port, q, eps);
        }
    }

    /// Port `p` lacks credits for its head packet: wake it when the next return arrives, or
    /// when one is sent back (nothing in flight toward it yet).
    fn wait_for_credits<E: From<NetEvent> + Copy>(&mut self, p: PortId, q: &mut EventQueue<E>) {
        let port = &mut self.ports[p as usize];
        match port.next_credit_return() {
            Some(t) => self.wake(p, t, q),
            None => port.credit_starved = true,
        }
    }

    /// Put a packet that has its credits on port `p`'s wire at `start` (the clock is at `now`);
    /// `in_port` (or NO_PORT) is where it held buffer space at this node, freed once its tail
    /// has left (after the packet has been forwarded as far as it goes at send time, as the
    /// order in which events are scheduled decides same-time ties).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn transmit<E: From<NetEvent> + Copy>(
        &mut self,
        now: Time,
        p: PortId,
        start: Time,
        pkt: P,
        wire_bytes: u32,
        in_port: PortId,
        q: &mut EventQueue<E>,
        eps: &mut impl Endpoints<P>,
    ) {
        let (ser, forwarded) = self.put_on_wire(p, start, &pkt, wire_bytes, q, eps);
        if let Some((deliver_at, tail_at)) = forwarded {
            self.forward(now, p, InFlight { deliver_at, tail_at, wire_bytes, pkt }, q, eps);
        }
        if in_port != NO_PORT {
            self.return_credits(in_port, start + ser, wire_bytes, true, q);
        }
    }

    /// Start sending `pkt` on port `p` at `start`: onto the wire, with an arrival event if it is
    /// the wire's only packet; or, if the far node forwards at send time, not: its arrival
    /// (deliver_at, tail_at) is returned for the caller to hand it on. Also returns the
    /// serialisation time.
    #[inline(always)]
    fn put_on_wire<E: From<NetEvent> + Copy>(
        &mut self,
        p: PortId,
        start: Time,
        pkt: &P,
        wire_bytes: u32,
        q: &mut EventQueue<E>,
        eps: &mut impl Endpoints<P>,
    ) -> (Time, Option<(Time, Time)>) {
        let port = &mut self.ports[p as usize];
        let ser = port.params.rate.serialise((wire_bytes + port.params.frame_overhead_bytes) as u64);
        port.busy_until = start + ser.max(port.params.min_packet_gap);
        port.stats.tx_packets += 1;
        port.stats.tx_bytes += wire_bytes as u64;
        let tail_at = start + ser + port.params.propagation;
        let deliver_at = self.delivery_time(p as usize, pkt, wire_bytes, start, tail_at);
        let port = &mut self.ports[p as usize];
        if port.ends.from_host {
            eps.sent(port.node, pkt, start + ser);
        }
        if port.params.queue_limit_bytes.is_some() {
            port.committed.push_back((start, wire_bytes));
            port.committed_bytes += wire_bytes as u64;
        }
        if port.forward_at_send {
            return (ser, Some((deliver_at, tail_at)));
        }
        let was_empty = port.wire.is_empty();
        port.wire.push_back(InFlight { deliver_at, tail_at, wire_bytes, pkt: *pkt });
        if was_empty {
            q.schedule(deliver_at, NetEvent::Arrive(p).into());
        }
        (ser, None)
    }

    /// Mark the links whose far node can forward a packet the moment it is sent rather than
    /// when it arrives: what the node does with it then depends only on the packets before it
    /// on the same link. That holds when the link has no flow control and no random loss, the
    /// far node is not a host, and every egress port it forwards this link's packets to is fed
    /// by this link alone, without flow control (a drop-tail queue is fine: its occupancy at the
    /// arrival is known from the packets committed before). It saves the event of the arrival at
    /// every such hop; the packet's timing, and every decision, are the same.
    fn plan_forwarding(&mut self) {
        let n = self.nodes.len();
        let hosts: Vec<NodeId> = (0..n as NodeId).filter(|&h| self.nodes[h as usize].kind == NodeKind::Host).collect();
        // For each link, the egress ports at its far node its packets may take.
        let mut outs: Vec<Option<Vec<PortId>>> = Vec::with_capacity(self.ports.len());
        let mut feeders = vec![0u32; self.ports.len()];
        for x in 0..self.ports.len() as PortId {
            let port = &self.ports[x as usize];
            let (from, to) = (port.node, port.ends.to_node);
            let mut taken: Vec<PortId> = Vec::new();
            let mut routable = true;
            for &d in &hosts {
                let carries =
                    d != from && (self.nodes[from as usize].kind == NodeKind::Host || self.route(from, d).contains(&x));
                if !carries || d == to {
                    continue;
                }
                let r = self.route(to, d);
                routable &= !r.is_empty();
                for &y in r {
                    if !taken.contains(&y) {
                        taken.push(y);
                    }
                }
            }
            for &y in &taken {
                feeders[y as usize] += 1;
            }
            outs.push(routable.then_some(taken));
        }
        for (x, out) in outs.iter().enumerate() {
            let port = &self.ports[x];
            let eligible = !port.ends.to_host && !port.credit_controlled && port.params.loss == 0.0 && !port.may_fail;
            let ok = eligible
                && out.as_ref().is_some_and(|ys| {
                    ys.iter().all(|&y| {
                        let py = &self.ports[y as usize];
                        feeders[y as usize] == 1 && !py.credit_controlled && !py.may_fail
                    })
                });
            // Once packets may be on its wire, a link may stop forwarding at send time but never
            // start (a packet forwarded at once would overtake those on the wire).
            self.ports[x].forward_at_send = ok && (self.ports[x].forward_at_send || !self.routed);
        }
        self.routed = true;
    }

    /// When a packet sent on port `pi` at `start` should be handed to the far node: at its tail
    /// (+ processing) for store-and-forward nodes; for cut-through nodes after the forwarding
    /// latency, but not so early that its tail would have to leave before it arrives.
    #[inline(always)]
    fn delivery_time(&self, pi: usize, pkt: &P, wire_bytes: u32, start: Time, tail_at: Time) -> Time {
        let port = &self.ports[pi];
        if !port.ends.to_cut_through {
            return tail_at + port.ends.to_latency;
        }
        let head_ready = start + port.params.propagation + port.ends.to_latency;
        match self.route(port.ends.to_node, pkt.dst()).first() {
            Some(&out) => {
                let o = &self.ports[out as usize].params;
                head_ready.max(tail_at.saturating_sub(o.rate.serialise((wire_bytes + o.frame_overhead_bytes) as u64)))
            }
            None => head_ready,
        }
    }
}
