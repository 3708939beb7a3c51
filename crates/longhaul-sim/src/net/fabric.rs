//! The fabric: nodes (hosts, switches, range extenders) joined by links, shortest-path routing,
//! and the handling of the two network events. Transports plug in through [`Endpoints`]: the
//! fabric asks a host for its next packet when the host's port is free, and hands it the packets
//! that reach it. The fabric knows nothing about what the packets mean.

use super::port::{credit_blocks, InFlight, Port, PortId, PortParams, Queued, CREDIT_BLOCK_BYTES, NEVER, NO_PORT};
use crate::engine::{EventQueue, RngStream, Time};

pub type NodeId = u32;

/// What the fabric needs to know about a packet.
pub trait Routable {
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    Host,
    Switch,
    Extender,
}

pub struct Node {
    pub kind: NodeKind,
    pub name: String,
    /// Forwarding latency (switch cut-through latency, extender processing).
    pub latency: Time,
    /// Cut-through nodes start forwarding when the header arrives; others store and forward.
    pub cut_through: bool,
    pub ports: Vec<PortId>,
    /// route[dst] = ports on a shortest path toward host `dst` (several = parallel links).
    route: Vec<Vec<PortId>>,
}

/// The two events of the network layer.
#[derive(Debug, Clone, Copy)]
pub enum NetEvent {
    /// The head packet on port's wire is due at the far end.
    Arrive(PortId),
    /// The port may be able to send (serialiser free, credits back, packet ready).
    Wake(PortId),
}

pub struct Fabric<P> {
    pub nodes: Vec<Node>,
    pub ports: Vec<Port<P>>,
    seed: u64,
}

impl<P: Routable> Fabric<P> {
    pub fn new(seed: u64) -> Self {
        Fabric { nodes: Vec::new(), ports: Vec::new(), seed }
    }

    pub fn add_node(&mut self, kind: NodeKind, name: &str, latency: Time, cut_through: bool) -> NodeId {
        self.nodes.push(Node { kind, name: name.to_string(), latency, cut_through, ports: Vec::new(), route: Vec::new() });
        (self.nodes.len() - 1) as NodeId
    }

    /// Join `a` and `b` with a link; `ab` describes the direction a -> b, `ba` the reverse.
    pub fn connect(&mut self, a: NodeId, b: NodeId, ab: PortParams, ba: PortParams) -> (PortId, PortId) {
        let pa = self.ports.len() as PortId;
        let pb = pa + 1;
        self.ports.push(Port::new(a, ab, RngStream::new(self.seed, 1000 + pa as u64)));
        self.ports.push(Port::new(b, ba, RngStream::new(self.seed, 1000 + pb as u64)));
        self.ports[pa as usize].peer = pb;
        self.ports[pb as usize].peer = pa;
        self.nodes[a as usize].ports.push(pa);
        self.nodes[b as usize].ports.push(pb);
        (pa, pb)
    }

    /// Fill the routing tables (hop-count shortest paths to every host; ties kept as parallel
    /// choices). Call once after the topology is built.
    pub fn compute_routes(&mut self) {
        let n = self.nodes.len();
        for node in &mut self.nodes {
            node.route = vec![Vec::new(); n];
        }
        for dst in 0..n {
            if self.nodes[dst].kind != NodeKind::Host {
                continue;
            }
            let mut dist = vec![usize::MAX; n];
            dist[dst] = 0;
            let mut frontier = std::collections::VecDeque::from([dst]);
            while let Some(u) = frontier.pop_front() {
                for &p in &self.nodes[u].ports {
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
                if u == dst || dist[u] == usize::MAX {
                    continue;
                }
                let choices: Vec<PortId> = self.nodes[u]
                    .ports
                    .iter()
                    .copied()
                    .filter(|&p| {
                        let v = self.ports[self.ports[p as usize].peer as usize].node as usize;
                        dist[v] + 1 == dist[u] && (v == dst || self.nodes[v].kind != NodeKind::Host)
                    })
                    .collect();
                self.nodes[u].route[dst] = choices;
            }
        }
    }

    /// True if every host can reach every other host.
    pub fn fully_connected(&self) -> bool {
        let hosts: Vec<usize> = (0..self.nodes.len()).filter(|&i| self.nodes[i].kind == NodeKind::Host).collect();
        hosts.iter().all(|&a| hosts.iter().all(|&b| a == b || !self.nodes[a].route[b].is_empty()))
    }

    /// The egress port of a host (hosts have one port).
    pub fn host_port(&self, host: NodeId) -> PortId {
        self.nodes[host as usize].ports[0]
    }

    /// A host has new work: try its port now.
    pub fn kick<E: From<NetEvent>>(&mut self, now: Time, host: NodeId, q: &mut EventQueue<E>, eps: &mut impl Endpoints<P>) {
        let p = self.host_port(host);
        self.try_send(now, p, q, eps);
    }

    pub fn handle<E: From<NetEvent>>(&mut self, now: Time, ev: NetEvent, q: &mut EventQueue<E>, eps: &mut impl Endpoints<P>) {
        match ev {
            NetEvent::Arrive(p) => {
                let pi = p as usize;
                while self.ports[pi].wire.front().is_some_and(|f| f.deliver_at <= now) {
                    let item = self.ports[pi].wire.pop_front().expect("front checked");
                    self.arrive(now, p, item, q, eps);
                }
                if let Some(f) = self.ports[pi].wire.front() {
                    q.schedule(f.deliver_at, NetEvent::Arrive(p).into());
                }
            }
            NetEvent::Wake(p) => {
                if self.ports[p as usize].wake_at <= now {
                    self.ports[p as usize].wake_at = NEVER;
                }
                self.try_send(now, p, q, eps);
            }
        }
    }

    fn wake<E: From<NetEvent>>(&mut self, p: PortId, at: Time, q: &mut EventQueue<E>) {
        let port = &mut self.ports[p as usize];
        if at < port.wake_at {
            port.wake_at = at;
            q.schedule(at, NetEvent::Wake(p).into());
        }
    }

    /// Give back the ingress-buffer space a packet held at the node of `in_port`, effective at
    /// the sender after the flow-control update crosses the link.
    fn return_credits<E: From<NetEvent>>(&mut self, in_port: PortId, left_at: Time, wire_bytes: u32, q: &mut EventQueue<E>) {
        let up = self.ports[in_port as usize].peer;
        let sender = &mut self.ports[up as usize];
        if sender.params.peer_buffer_bytes.is_none() {
            return;
        }
        let at = left_at + sender.params.propagation;
        sender.push_credit_return(at, credit_blocks(wire_bytes) * CREDIT_BLOCK_BYTES);
        if sender.credit_starved {
            sender.credit_starved = false;
            self.wake(up, at, q);
        }
    }

    /// A packet sent on `from` has arrived at the far node (through the peer port).
    fn arrive<E: From<NetEvent>>(&mut self, now: Time, from: PortId, item: InFlight<P>, q: &mut EventQueue<E>, eps: &mut impl Endpoints<P>) {
        let in_port = self.ports[from as usize].peer;
        let node = self.ports[in_port as usize].node;
        let loss = self.ports[from as usize].params.loss;
        if self.ports[from as usize].rng.chance(loss) {
            // Corrupted on the wire: the receiver's CRC check discards it and frees its buffer.
            self.ports[from as usize].stats.drops_loss += 1;
            self.return_credits(in_port, item.tail_at, item.wire_bytes, q);
            return;
        }
        if self.nodes[node as usize].kind == NodeKind::Host {
            // The adapter drains its receive buffer into host memory as packets arrive.
            self.return_credits(in_port, item.tail_at, item.wire_bytes, q);
            eps.deliver(now, node, item.pkt);
            let hp = self.host_port(node);
            self.try_send(now, hp, q, eps);
            return;
        }
        let choices = &self.nodes[node as usize].route[item.pkt.dst() as usize];
        if choices.is_empty() {
            // Unroutable: impossible in a validated topology; count it as a queue drop.
            self.ports[from as usize].stats.drops_queue += 1;
            self.return_credits(in_port, now, item.wire_bytes, q);
            return;
        }
        let out = choices[item.pkt.flow() as usize % choices.len()];
        let port = &mut self.ports[out as usize];
        let ser_out = port.params.rate.serialise((item.wire_bytes + port.params.frame_overhead_bytes) as u64);
        // The last bit cannot leave before it has arrived.
        let ready_at = now.max(item.tail_at.saturating_sub(ser_out));
        if let Some(limit) = port.params.queue_limit_bytes {
            if port.queued_bytes + item.wire_bytes as u64 > limit {
                port.stats.drops_queue += 1;
                self.return_credits(in_port, now, item.wire_bytes, q);
                return;
            }
        }
        port.queued_bytes += item.wire_bytes as u64;
        port.stats.max_queue_bytes = port.stats.max_queue_bytes.max(port.queued_bytes);
        port.queue.push_back(Queued { pkt: item.pkt, wire_bytes: item.wire_bytes, in_port, ready_at });
        self.try_send(now, out, q, eps);
    }

    /// Start as many transmissions on port `p` as its state allows at `now`.
    ///
    /// Forwarding ports without a drop-tail limit commit queued packets ahead: a packet whose
    /// credits are available now is given its (possibly future) start time at once. This is
    /// exact for a FIFO port, because credits only grow with time except through the port's
    /// own sends, and it saves one event per packet on every backlogged port. Host ports pull
    /// one packet at a time so that ACKs generated meanwhile still go first.
    fn try_send<E: From<NetEvent>>(&mut self, now: Time, p: PortId, q: &mut EventQueue<E>, eps: &mut impl Endpoints<P>) {
        let pi = p as usize;
        let node = self.ports[pi].node;
        let is_host = self.nodes[node as usize].kind == NodeKind::Host;
        let commit_ahead = !is_host && self.ports[pi].params.queue_limit_bytes.is_none();
        loop {
            let port = &mut self.ports[pi];
            if port.busy_until > now && !commit_ahead {
                if is_host || !port.queue.is_empty() {
                    let t = port.busy_until;
                    self.wake(p, t, q);
                }
                return;
            }
            if port.queue.is_empty() {
                if !is_host {
                    return;
                }
                match eps.pull(now, node) {
                    Pull::Ready(pkt) => {
                        let wire_bytes = pkt.wire_bytes();
                        let port = &mut self.ports[pi];
                        port.queued_bytes += wire_bytes as u64;
                        port.queue.push_back(Queued { pkt, wire_bytes, in_port: NO_PORT, ready_at: now });
                    }
                    Pull::Later(t) => {
                        self.wake(p, t.max(now), q);
                        return;
                    }
                    Pull::Idle => return,
                }
            }
            let port = &mut self.ports[pi];
            let head = port.queue.front().expect("non-empty");
            if head.ready_at > now && !commit_ahead {
                let t = head.ready_at;
                self.wake(p, t, q);
                return;
            }
            let start = now.max(port.busy_until).max(head.ready_at);
            let need = credit_blocks(head.wire_bytes) * CREDIT_BLOCK_BYTES;
            if port.params.peer_buffer_bytes.is_some() {
                port.absorb_credits(now);
                if port.credits < need {
                    match port.credit_returns.front() {
                        Some(&(t, _)) => self.wake(p, t, q),
                        None => port.credit_starved = true,
                    }
                    return;
                }
                port.credits -= need;
            }
            let Queued { pkt, wire_bytes, in_port, .. } = port.queue.pop_front().expect("non-empty");
            port.queued_bytes -= wire_bytes as u64;
            let ser = port.params.rate.serialise((wire_bytes + port.params.frame_overhead_bytes) as u64);
            port.busy_until = start + ser.max(port.params.min_packet_gap);
            port.stats.tx_packets += 1;
            port.stats.tx_bytes += wire_bytes as u64;
            let prop = port.params.propagation;
            let tail_at = start + ser + prop;
            let deliver_at = self.delivery_time(pi, &pkt, wire_bytes, start, tail_at);
            if is_host {
                eps.sent(node, &pkt, start + ser);
            }
            let port = &mut self.ports[pi];
            let was_empty = port.wire.is_empty();
            port.wire.push_back(InFlight { deliver_at, tail_at, wire_bytes, pkt });
            if was_empty {
                q.schedule(deliver_at, NetEvent::Arrive(p).into());
            }
            if in_port != NO_PORT {
                self.return_credits(in_port, start + ser, wire_bytes, q);
            }
        }
    }

    /// When a packet sent on port `pi` at `start` should be handed to the far node: at its tail
    /// (+ processing) for store-and-forward nodes; for cut-through nodes after the forwarding
    /// latency, but not so early that its tail would have to leave before it arrives.
    fn delivery_time(&self, pi: usize, pkt: &P, wire_bytes: u32, start: Time, tail_at: Time) -> Time {
        let peer = &self.nodes[self.ports[self.ports[pi].peer as usize].node as usize];
        if !peer.cut_through {
            return tail_at + peer.latency;
        }
        let head_ready = start + self.ports[pi].params.propagation + peer.latency;
        match peer.route[pkt.dst() as usize].first() {
            Some(&out) => {
                let o = &self.ports[out as usize].params;
                head_ready.max(tail_at.saturating_sub(o.rate.serialise((wire_bytes + o.frame_overhead_bytes) as u64)))
            }
            None => head_ready,
        }
    }

    /// Packets queued or on a wire anywhere (what memory use is proportional to).
    pub fn packets_in_flight(&self) -> usize {
        self.ports.iter().map(|p| p.in_flight_packets()).sum()
    }
}
