//! The topology TCP runs over, with `hosts_per_side` hosts in each cluster:
//!
//! ```text
//! IPoIB:          host -- IB switch -- extender ==== WAN ==== extender -- IB switch -- host
//!                 (the verbs model's path: credit flow control everywhere, no drops)
//! Ethernet/SONET: host -- box ==== WAN ==== box -- host
//!                 (box = IP router, or a store-and-forward extender; drop-tail on the WAN)
//! ```
//! Host 0 of each side carries the TCP streams, host 1 the cross traffic.

use super::scenario::TcpResolved;
use super::segment::TcpPacket;
use crate::engine::time::{from_ns, from_us};
use crate::net::{Fabric, NodeId, NodeKind, PortId, PortParams, Rate};
use crate::topology;

/// Propagation on a machine-room cable (about 1 m).
const CABLE_NS: f64 = 5.0;

pub struct TcpPath {
    pub hosts_a: Vec<NodeId>,
    pub hosts_b: Vec<NodeId>,
    /// The long-haul link's two egress ports: A -> B (the data direction) and B -> A.
    pub wan_ab: PortId,
    pub wan_ba: PortId,
}

/// The ports of the link joining two nodes of `kind` (the WAN between the two boxes).
fn wan_ports(fabric: &Fabric<TcpPacket>, kind: NodeKind) -> (PortId, PortId) {
    let is_wan = |p: &PortId| {
        let port = &fabric.ports[*p as usize];
        let peer = &fabric.ports[port.peer as usize];
        fabric.nodes[port.node as usize].kind == kind && fabric.nodes[peer.node as usize].kind == kind
    };
    let side_a = fabric.nodes.iter().position(|n| n.kind == kind).expect("a box on side A");
    let ab = *fabric.nodes[side_a].ports.iter().find(|p| is_wan(p)).expect("a WAN link");
    (ab, fabric.ports[ab as usize].peer)
}

pub fn build(r: &TcpResolved, fabric: &mut Fabric<TcpPacket>, hosts_per_side: usize) -> TcpPath {
    if let Some(ib) = &r.ib {
        let t = topology::build(ib, fabric, hosts_per_side);
        let kind = if ib.extender.is_some() { NodeKind::Extender } else { NodeKind::Switch };
        let (wan_ab, wan_ba) = wan_ports(fabric, kind);
        return TcpPath { hosts_a: t.hosts_a, hosts_b: t.hosts_b, wan_ab, wan_ba };
    }
    let e = r.eth.as_ref().expect("an Ethernet/SONET path when not IPoIB");
    let lat = from_ns(e.box_latency_ns);
    let box_a = fabric.add_node(NodeKind::Switch, lat, false);
    let box_b = fabric.add_node(NodeKind::Switch, lat, false);
    let access = PortParams {
        rate: Rate::from_gbps(e.host_gbps),
        frame_overhead_bytes: e.host_frame_overhead_bytes,
        min_packet_gap: 0,
        propagation: from_ns(CABLE_NS),
        peer_buffer_bytes: None,
        queue_limit_bytes: None,
        loss: 0.0,
    };
    let mut hosts_a = Vec::new();
    let mut hosts_b = Vec::new();
    for (bx, hosts) in [(box_a, &mut hosts_a), (box_b, &mut hosts_b)] {
        for _ in 0..hosts_per_side {
            let h = fabric.add_node(NodeKind::Host, 0, false);
            fabric.connect(h, bx, access.clone(), access.clone());
            hosts.push(h);
        }
    }
    let wan = PortParams {
        rate: Rate::from_gbps(e.wan_gbps),
        frame_overhead_bytes: e.wan_frame_overhead_bytes,
        min_packet_gap: from_ns(e.box_packet_ns),
        propagation: from_us(r.one_way_delay_us()),
        peer_buffer_bytes: None,
        queue_limit_bytes: Some(e.queue_limit_bytes),
        loss: r.loss,
    };
    let (wan_ab, wan_ba) = fabric.connect(box_a, box_b, wan.clone(), wan);
    fabric.compute_routes();
    TcpPath { hosts_a, hosts_b, wan_ab, wan_ba }
}
