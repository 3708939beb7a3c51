//! What the flow level knows of the hosts and the fabric: every parameter derived once from
//! the same hardware profile and the same built fabric as the packet level, never set apart.
//!
//! Resources (shared max-min, capacities in payload bytes/s): each port (one direction of a
//! link), each host adapter's send engine and its receive engine. A message from host a to
//! host b crosses a's send engine, a's port, the ports between the two leaf switches (the
//! long-haul link among them), the leaf's port to b, and b's receive engine. A message of one
//! packet takes each of them in turn for its packet's time ([`Paths::next_port`]), counted as
//! the capacities count a full packet's.

use crate::engine::time::{ceil_time, from_ns, S};
use crate::engine::Time;
use crate::ib::headers::{data_packet_bytes, Op};
use crate::ib::HcaProfile;
use crate::net::port::credit_blocks;
use crate::net::{Fabric, NodeId, NodeKind, PortId, Rate, Routable};

/// The adapter's costs as the flow level uses them (the packet level's
/// [`HcaProfile`] values, read once).
#[derive(Debug, Clone)]
pub struct FluidParams {
    /// Payload bytes per packet (the path MTU): per-packet costs and headers are counted per
    /// this many bytes of a long message.
    pub mtu_bytes: u32,
    /// Adapter time to fetch and start one work request (`HcaProfile::tx_wqe_ns`), once per
    /// message, in series on the host's send engine.
    pub tx_wqe: Time,
    /// Adapter time per packet sent (`HcaProfile::tx_pkt_ns`); the engine also waits for the
    /// packet's DMA over PCIe (`HcaProfile::pcie_data_gbps`), whichever is longer.
    pub tx_pkt: Time,
    /// Adapter time per packet received before a completion or ACK can follow
    /// (`HcaProfile::rx_pkt_ns`).
    pub rx_pkt: Time,
    /// CPU time to notice a completion (`HcaProfile::poll_ns`).
    pub poll: Time,
    /// The adapter's DMA rate over PCIe.
    pub pcie: Rate,
    /// Outstanding RDMA reads a queue pair may have (`HcaProfile::max_rd_atomic`, as the
    /// library caps it).
    pub max_rd_atomic: u32,
    /// Largest send queue a queue pair can be created with (`HcaProfile::max_qp_wr`).
    pub max_qp_wr: u32,
}

impl FluidParams {
    pub fn new(hca: &HcaProfile, mtu_bytes: u32) -> Self {
        FluidParams {
            mtu_bytes,
            tx_wqe: from_ns(hca.tx_wqe_ns),
            tx_pkt: from_ns(hca.tx_pkt_ns),
            rx_pkt: from_ns(hca.rx_pkt_ns),
            poll: from_ns(hca.poll_ns),
            pcie: Rate::from_gbps(hca.pcie_data_gbps()),
            max_rd_atomic: hca.max_rd_atomic,
            max_qp_wr: hca.max_qp_wr,
        }
    }

    /// The send engine's time for one packet of `payload` bytes.
    pub fn tx_packet(&self, payload: u32) -> Time {
        self.tx_pkt.max(self.pcie.serialise(payload as u64))
    }
}

/// One port as a flow sees it.
#[derive(Debug, Clone, Copy)]
struct Hop {
    rate: Rate,
    frame_overhead_bytes: u32,
    propagation: Time,
    /// Latency of the node the port leads to (0 for a host).
    node_latency: Time,
    /// The node sending on this port stores a whole packet before sending it on (a host, an
    /// extender); a cut-through switch starts as soon as the header is in.
    store_and_forward: bool,
    /// Shortest time between two packet starts: the feeding engine's (an extender's).
    min_packet_gap: Time,
    /// Link-level credits: the far ingress buffer (bytes) and the credit loop less the packet's
    /// own time on the port (out and back, and the far node's latency).
    credit: Option<(u64, Time)>,
    /// Packets from more than one port may leave by this one (the node sending on it is a
    /// switch): where one-packet messages of different paths meet.
    joins: bool,
}

impl Hop {
    /// The port's time per packet of `wire` bytes (headers included): its serialisation with
    /// the link's framing, at least the feeding engine's gap, and at least its share of the
    /// credit loop (as many packets of its size in flight per loop as the far buffer holds).
    fn per_packet_ps(&self, wire: u32) -> f64 {
        let own = self.rate.serialise((wire + self.frame_overhead_bytes) as u64).max(self.min_packet_gap).max(1);
        match self.credit {
            Some((buffer, loop_rest)) => {
                let pkts = (buffer / (credit_blocks(wire) * 64)).max(1);
                (own as f64).max((loop_rest + own) as f64 / pkts as f64)
            }
            None => own as f64,
        }
    }
}

/// Where a packet is on its way: the hop it takes next, and when its head and its last bit
/// reach the node that sends on that hop.
#[derive(Debug, Clone, Copy)]
pub struct OnPath {
    pub hop: u8,
    pub head: Time,
    pub tail: Time,
}

/// A packet's turn at a port: the port, whether other paths join there, when the packet could
/// start on it, and how long it holds it.
#[derive(Debug, Clone, Copy)]
pub struct Turn {
    pub port: PortId,
    pub joins: bool,
    pub ready: Time,
    pub service: Time,
}

/// The longest path the flow level handles: host, leaf switch, extenders, remote leaf, host.
pub const MAX_HOPS: usize = 8;

/// A flow's path: its resources (send engine, ports, receive engine) and the hops.
#[derive(Debug, Clone, Copy)]
pub struct Path {
    pub resources: [u32; MAX_HOPS + 2],
    pub len: u8,
    hops: [u16; MAX_HOPS],
    n_hops: u8,
}

impl Path {
    pub fn resources(&self) -> &[u32] {
        &self.resources[..self.len as usize]
    }

    /// A path over `resources` alone (no hops), for tests of what is done with resources.
    #[cfg(test)]
    pub fn over(resources: &[u32]) -> Path {
        let mut p = Path { resources: [0; MAX_HOPS + 2], len: resources.len() as u8, hops: [0; MAX_HOPS], n_hops: 0 };
        p.resources[..resources.len()].copy_from_slice(resources);
        p
    }

    /// Its ports.
    pub fn hop_count(&self) -> u8 {
        self.n_hops
    }
}

/// The fabric as flows cross it: hops, capacities, and the route between any two hosts.
pub struct Paths {
    hops: Vec<Hop>,
    /// Hop index of each port (u16::MAX: never on a path).
    hop_of: Vec<u16>,
    /// Each host's port and the leaf switch it hangs off, and its leaf's port to it, by node.
    up: Vec<(PortId, NodeId)>,
    down: Vec<PortId>,
    /// Ports from one leaf switch to another (by (from leaf, to leaf), a few pairs).
    middles: Vec<((NodeId, NodeId), Vec<PortId>)>,
    /// Capacity of every resource (payload bytes/s): the ports first, then two per node (the
    /// send and receive engines of a host).
    pub capacity: Vec<f64>,
    n_ports: u32,
    pub params: FluidParams,
    /// Wire bytes of a full packet and of an ACK.
    full_wire: u32,
}

impl Paths {
    /// Read the built `fabric` (routes computed) and the adapter's costs.
    pub fn new<P: Routable>(fabric: &Fabric<P>, params: FluidParams) -> Self {
        let mtu = params.mtu_bytes;
        let full_wire = data_packet_bytes(false, Op::Send, false, mtu);
        let n_ports = fabric.ports.len() as u32;
        let mut capacity = vec![0.0; n_ports as usize + 2 * fabric.nodes.len()];
        let mut hops = Vec::new();
        let mut hop_of = vec![u16::MAX; n_ports as usize];
        for (p, port) in fabric.ports.iter().enumerate() {
            let far = fabric.ports[port.peer as usize].node as usize;
            let from = port.node as usize;
            let pp = &port.params;
            let hop = Hop {
                rate: pp.rate,
                frame_overhead_bytes: pp.frame_overhead_bytes,
                propagation: pp.propagation,
                node_latency: if fabric.nodes[far].kind == NodeKind::Host { 0 } else { fabric.nodes[far].latency },
                store_and_forward: !fabric.nodes[from].cut_through,
                min_packet_gap: pp.min_packet_gap,
                // A packet out, its credit back after the far node forwards it.
                credit: pp.peer_buffer_bytes.map(|b| (b, 2 * pp.propagation + fabric.nodes[far].latency)),
                joins: fabric.nodes[from].kind == NodeKind::Switch,
            };
            // A full packet per the port's time for one: the wire with the headers and any WAN
            // framing, the feeding engine's gap, and the bytes-in-flight limit of the credits.
            capacity[p] = if port.up { mtu as f64 * S as f64 / hop.per_packet_ps(full_wire) } else { 0.0 };
            hop_of[p] = hops.len() as u16;
            hops.push(hop);
        }
        let mut up = vec![(PortId::MAX, NodeId::MAX); fabric.nodes.len()];
        let mut down = vec![PortId::MAX; fabric.nodes.len()];
        let hosts: Vec<NodeId> = (0..fabric.nodes.len() as NodeId)
            .filter(|&n| fabric.nodes[n as usize].kind == NodeKind::Host && !fabric.nodes[n as usize].ports.is_empty())
            .collect();
        for &h in &hosts {
            let port = fabric.host_port(h);
            up[h as usize] = (port, fabric.ports[fabric.ports[port as usize].peer as usize].node);
            // `FluidIb::walk` takes a one-packet message's last port at its turn (paths join
            // there), so the far host's ACK never takes its engine ahead of the events handled.
            assert!(
                fabric.nodes[up[h as usize].1 as usize].kind == NodeKind::Switch,
                "the flow level needs every host on a switch port (`topology::build`)"
            );
            down[h as usize] = fabric.ports[port as usize].peer;
            let base = n_ports as usize + 2 * h as usize;
            capacity[base] = mtu as f64 * S as f64 / params.tx_packet(mtu).max(1) as f64;
            capacity[base + 1] = mtu as f64 * S as f64 / params.rx_pkt.max(1) as f64;
        }
        // The ports between every two leaf switches, walked once along the fabric's routes
        // toward a host of the far leaf.
        let mut leaves: Vec<(NodeId, NodeId)> = Vec::new();
        for &h in &hosts {
            if !leaves.iter().any(|&(l, _)| l == up[h as usize].1) {
                leaves.push((up[h as usize].1, h));
            }
        }
        let mut middles: Vec<((NodeId, NodeId), Vec<PortId>)> = Vec::new();
        for &(from, _) in &leaves {
            for &(to, host) in leaves.iter().filter(|&&(to, _)| to != from) {
                let mut node = from;
                let mut ports = Vec::new();
                while node != to && ports.len() < MAX_HOPS - 2 {
                    let Some(&p) = fabric.route(node, host).first() else { break };
                    ports.push(p);
                    node = fabric.ports[fabric.ports[p as usize].peer as usize].node;
                }
                middles.push(((from, to), ports));
            }
        }
        Paths { hops, hop_of, up, down, middles, capacity, n_ports, params, full_wire }
    }

    /// The send and the receive engine of host `node`.
    pub fn engines(&self, node: NodeId) -> (u32, u32) {
        let base = self.n_ports + 2 * node;
        (base, base + 1)
    }

    /// The path of a message from host `a` to host `b`.
    pub fn path(&self, a: NodeId, b: NodeId) -> Path {
        let mut p = Path { resources: [0; MAX_HOPS + 2], len: 0, hops: [0; MAX_HOPS], n_hops: 0 };
        let push_port = |p: &mut Path, port: PortId| {
            p.resources[p.len as usize] = port;
            p.len += 1;
            p.hops[p.n_hops as usize] = self.hop_of[port as usize];
            p.n_hops += 1;
        };
        p.resources[0] = self.engines(a).0;
        p.len = 1;
        let (port_a, leaf_a) = self.up[a as usize];
        let leaf_b = self.up[b as usize].1;
        push_port(&mut p, port_a);
        if leaf_a != leaf_b {
            let mid = self.middles.iter().find(|(k, _)| *k == (leaf_a, leaf_b)).map_or(&[][..], |(_, v)| v);
            for &port in mid.iter().take(MAX_HOPS - 2) {
                push_port(&mut p, port);
            }
        }
        push_port(&mut p, self.down[b as usize]);
        p.resources[p.len as usize] = self.engines(b).1;
        p.len += 1;
        p
    }

    /// Time from the start of a packet of `wire` bytes (headers included) at the first hop of
    /// `path` until its last bit is at the far host: each hop's propagation and the latency of
    /// the node it leads to, and the packet's serialisation once per stretch that starts at a
    /// store-and-forward node (a cut-through switch relays it while it is still arriving; the
    /// slowest link of the stretch sets its pace).
    fn latency(&self, path: &Path, wire: u32) -> Time {
        let mut total: Time = 0;
        let mut stretch: Time = 0;
        for &h in &path.hops[..path.n_hops as usize] {
            let hop = &self.hops[h as usize];
            let ser = hop.rate.serialise((wire + hop.frame_overhead_bytes) as u64);
            if hop.store_and_forward {
                total += stretch;
                stretch = ser;
            } else {
                stretch = stretch.max(ser);
            }
            total += hop.propagation + hop.node_latency;
        }
        total + stretch
    }

    /// Latency of a full packet (the last one of a long message) along `path`.
    pub fn packet_latency(&self, path: &Path) -> Time {
        self.latency(path, self.full_wire)
    }

    /// A full packet's time on the path's first port (the host's).
    pub fn first_packet_time(&self, path: &Path) -> Time {
        self.first_hop_time(path, self.full_wire)
    }

    /// A packet of `wire` bytes' time on the path's first port.
    pub fn first_hop_time(&self, path: &Path, wire: u32) -> Time {
        let hop = &self.hops[path.hops[0] as usize];
        hop.rate.serialise((wire + hop.frame_overhead_bytes) as u64)
    }

    /// The next port of a packet of `wire` bytes at `at` on `path`: it can start there when
    /// its last bit is in at a store-and-forward node, when its head is in at a cut-through
    /// one; it holds the port for its time per packet ([`Hop::per_packet_ps`]).
    pub fn next_port(&self, path: &Path, at: &OnPath, wire: u32) -> Turn {
        let i = at.hop as usize;
        let hop = &self.hops[path.hops[i] as usize];
        Turn {
            port: path.resources[1 + i],
            joins: hop.joins,
            ready: if hop.store_and_forward { at.tail } else { at.head },
            service: ceil_time(hop.per_packet_ps(wire)),
        }
    }

    /// Where the packet of `wire` bytes that started on its next port at `start` is next: its
    /// head and tail at the node that port leads to (the far host after the last hop). The
    /// tail leaves no sooner than it came in (a cut-through switch relaying onto a faster link);
    /// without waits this adds up to the path's latency.
    pub fn leave(&self, path: &Path, at: &OnPath, start: Time, wire: u32) -> OnPath {
        let hop = &self.hops[path.hops[at.hop as usize] as usize];
        let out = (start + hop.rate.serialise((wire + hop.frame_overhead_bytes) as u64)).max(at.tail);
        let on = hop.propagation + hop.node_latency;
        OnPath { hop: at.hop + 1, head: start + on, tail: out + on }
    }
}
