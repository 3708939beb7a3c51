//! Builds the two-cluster path of a resolved scenario:
//!
//! ```text
//! host A -- switch A -- extender A ==== WAN ==== extender B -- switch B -- host B
//! ```
//! (without an extender, switch A and switch B are joined directly by a long IB link). Parallel
//! WAN links (`wan_links`) beyond one box's long-haul ports take more extender pairs, each on its
//! own switch port, and the switches spread routes over them. With cross
//! traffic the extenders' WAN ports meet the long-haul link at a WAN switch on each side
//! (Ethernet or SONET, where IB is framed so), which a second host pair shares:
//!
//! ```text
//! extender A -- WAN switch A ==== WAN ==== WAN switch B -- extender B
//!                    |                          |
//!               cross host A               cross host B
//! ```
//! The WAN switches drop from the tail of their queue toward the long-haul link; the extenders'
//! credits span the whole WAN, switches included ([`Fabric::extend_credits`]).

use crate::engine::time::{from_ns, from_us};
use crate::engine::Time;
use crate::net::{ExtenderParams, Fabric, IbLink, NodeId, NodeKind, PortId, PortParams, Rate, Routable, WanFraming};
use crate::scenario::Resolved;

/// Propagation on an in-room cable (about 1 m of copper).
const CABLE_NS: f64 = 5.0;
/// Adapter receive buffer (bytes) advertised to the switch; assumed (adapters drain at link rate).
const HCA_BUFFER_BYTES: u64 = 64 * 1024;
/// Store-and-forward latency of a WAN switch (assumed, as the TCP model's IP routers).
const WAN_SWITCH_LATENCY_NS: f64 = 1000.0;
/// The cross-traffic hosts' NICs: 10GBASE-R (IEEE 802.3ae), or the WAN's rate if faster.
const CROSS_NIC_GBPS: f64 = 10.0;

pub struct TwoClusters {
    pub hosts_a: Vec<NodeId>,
    pub hosts_b: Vec<NodeId>,
    /// The cross-traffic host on each side, when the scenario has cross traffic.
    pub cross: Option<(NodeId, NodeId)>,
    /// The long-haul links, 0 to `wan_links - 1`: each one's port on side A (toward B).
    pub wan: Vec<PortId>,
}

fn local(link: IbLink, peer_buffer: u64) -> PortParams {
    PortParams {
        rate: Rate::from_gbps(link.data_gbps()),
        frame_overhead_bytes: 0,
        min_packet_gap: 0,
        propagation: from_ns(CABLE_NS),
        peer_buffer_bytes: Some(peer_buffer),
        queue_limit_bytes: None,
        loss: 0.0,
    }
}

fn slower(a: IbLink, b: IbLink) -> IbLink {
    if a.data_gbps() <= b.data_gbps() {
        a
    } else {
        b
    }
}

/// Build `hosts_per_side` hosts on each side of the long-haul path.
pub fn build<P: Routable>(r: &Resolved, fabric: &mut Fabric<P>, hosts_per_side: usize) -> TwoClusters {
    let sw_lat = from_ns(r.switch.latency_ns);
    let sw_a = fabric.add_node(NodeKind::Switch, sw_lat, true);
    let sw_b = fabric.add_node(NodeKind::Switch, sw_lat, true);
    let mut hosts_a = Vec::new();
    let mut hosts_b = Vec::new();
    for (sw, hosts) in [(sw_a, &mut hosts_a), (sw_b, &mut hosts_b)] {
        for _ in 0..hosts_per_side {
            let h = fabric.add_node(NodeKind::Host, 0, false);
            let link = slower(r.hca.port, r.switch.link);
            fabric.connect(h, sw, local(link, r.switch.buffer_bytes), local(link, HCA_BUFFER_BYTES));
            hosts.push(h);
        }
    }
    let one_way = from_us(r.one_way_delay_us());
    let mut cross = None;
    let mut wan_ports = Vec::new();
    match &r.extender {
        Some(ext) => {
            let lat = from_ns(ext.latency_ns);
            // A box has `wan_ports` long-haul ports: more parallel links than that take more
            // pairs of boxes (S3's four links are four Longbow C103 pairs, one port each), each
            // with its own local port, packet engine and credits.
            let pairs = r.wan_links.div_ceil(ext.wan_ports.max(1));
            let mut boxes = Vec::new();
            for _ in 0..pairs {
                let ex_a = fabric.add_node(NodeKind::Extender, lat, false);
                let ex_b = fabric.add_node(NodeKind::Extender, lat, false);
                for (sw, ex) in [(sw_a, ex_a), (sw_b, ex_b)] {
                    let link = slower(ext.local, r.switch.link);
                    // The extender's local-side receive buffer feeds its WAN port: as deep as the WAN one.
                    fabric.connect(sw, ex, local(link, ext.buffer_bytes), local(link, r.switch.buffer_bytes));
                }
                boxes.push((ex_a, ex_b));
            }
            let wan = PortParams {
                rate: Rate::from_gbps(ext.framing.payload_gbps(&ext.wan)),
                frame_overhead_bytes: ext.framing.frame_overhead_bytes(),
                min_packet_gap: from_ns(ext.packet_ns),
                propagation: one_way,
                peer_buffer_bytes: Some(ext.buffer_bytes),
                queue_limit_bytes: None,
                loss: r.loss,
            };
            if r.cross.is_some() {
                let (hosts, long) = shared_wan(r, ext, fabric, boxes[0], wan, one_way);
                cross = Some(hosts);
                wan_ports.push(long);
            } else {
                // Link k on pair k / wan_ports: a box's ports are filled before the next box's.
                for k in 0..r.wan_links {
                    let (ex_a, ex_b) = boxes[(k / ext.wan_ports.max(1)) as usize];
                    wan_ports.push(fabric.connect(ex_a, ex_b, wan.clone(), wan.clone()).0);
                }
            }
        }
        None => {
            let mut long = local(r.wan, r.switch.buffer_bytes);
            long.propagation = one_way;
            long.loss = r.loss;
            wan_ports.push(fabric.connect(sw_a, sw_b, long.clone(), long).0);
        }
    }
    fabric.compute_routes();
    TwoClusters { hosts_a, hosts_b, cross, wan: wan_ports }
}

/// The extenders' WAN through a WAN switch on each side, with a cross-traffic host on each:
/// returns the two hosts and the long-haul link's port on side A. `wan`: the extenders' WAN port as it would be without the switches.
fn shared_wan<P: Routable>(
    r: &Resolved,
    ext: &ExtenderParams,
    fabric: &mut Fabric<P>,
    (ex_a, ex_b): (NodeId, NodeId),
    wan: PortParams,
    one_way: Time,
) -> ((NodeId, NodeId), PortId) {
    let lat = from_ns(WAN_SWITCH_LATENCY_NS);
    let ws_a = fabric.add_node(NodeKind::Switch, lat, false);
    let ws_b = fabric.add_node(NodeKind::Switch, lat, false);
    let cable = from_ns(CABLE_NS);
    // Extender to switch: the extender's WAN port, its credits for the far extender's buffer.
    let to_switch = PortParams { propagation: cable, loss: 0.0, ..wan.clone() };
    // Switch to extender: no flow control of its own (the far extender's credits cover it).
    let to_extender = PortParams { peer_buffer_bytes: None, min_packet_gap: 0, ..to_switch.clone() };
    let long = PortParams { min_packet_gap: 0, peer_buffer_bytes: None, queue_limit_bytes: Some(r.queue_bytes), ..wan };
    let (ea, _) = fabric.connect(ex_a, ws_a, to_switch.clone(), to_extender.clone());
    let (ab, ba) = fabric.connect(ws_a, ws_b, long.clone(), long);
    let (_, eb) = fabric.connect(ws_b, ex_b, to_extender, to_switch);
    let back = 2 * cable + one_way;
    let into_b = fabric.ports[eb as usize].peer;
    let into_a = fabric.ports[ea as usize].peer;
    fabric.extend_credits(&[ea, ab, into_b], back);
    fabric.extend_credits(&[eb, ba, into_a], back);
    let nic_gbps = CROSS_NIC_GBPS.max(ext.framing.payload_gbps(&ext.wan));
    let access = PortParams {
        rate: Rate::from_gbps(nic_gbps),
        frame_overhead_bytes: WanFraming::TenGigELan.frame_overhead_bytes(),
        min_packet_gap: 0,
        propagation: cable,
        peer_buffer_bytes: None,
        queue_limit_bytes: None,
        loss: 0.0,
    };
    let ca = fabric.add_node(NodeKind::Host, 0, false);
    let cb = fabric.add_node(NodeKind::Host, 0, false);
    fabric.connect(ca, ws_a, access.clone(), access.clone());
    fabric.connect(cb, ws_b, access.clone(), access);
    ((ca, cb), ab)
}
