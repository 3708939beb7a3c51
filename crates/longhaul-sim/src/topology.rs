//! Builds the two-cluster path of a resolved scenario:
//!
//! ```text
//! host A -- switch A -- extender A ==== WAN ==== extender B -- switch B -- host B
//! ```
//! (without an extender, switch A and switch B are joined directly by a long IB link).

use crate::engine::time::{from_ns, from_us};
use crate::net::{Fabric, IbLink, NodeId, NodeKind, PortParams, Rate, Routable};
use crate::scenario::Resolved;

/// Propagation on an in-room cable (about 1 m of copper).
const CABLE_NS: f64 = 5.0;
/// Adapter receive buffer (bytes) advertised to the switch; assumed (adapters drain at link rate).
const HCA_BUFFER_BYTES: u64 = 64 * 1024;

pub struct TwoClusters {
    pub hosts_a: Vec<NodeId>,
    pub hosts_b: Vec<NodeId>,
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
    let sw_a = fabric.add_node(NodeKind::Switch, "switch-a", sw_lat, true);
    let sw_b = fabric.add_node(NodeKind::Switch, "switch-b", sw_lat, true);
    let mut hosts_a = Vec::new();
    let mut hosts_b = Vec::new();
    for (side, sw, hosts) in [("a", sw_a, &mut hosts_a), ("b", sw_b, &mut hosts_b)] {
        for i in 0..hosts_per_side {
            let h = fabric.add_node(NodeKind::Host, &format!("host-{side}{i}"), 0, false);
            let link = slower(r.hca.port, r.switch.link);
            fabric.connect(h, sw, local(link, r.switch.buffer_bytes), local(link, HCA_BUFFER_BYTES));
            hosts.push(h);
        }
    }
    let one_way = from_us(r.one_way_delay_us());
    match &r.extender {
        Some(ext) => {
            let lat = from_ns(ext.latency_ns);
            let ex_a = fabric.add_node(NodeKind::Extender, "extender-a", lat, false);
            let ex_b = fabric.add_node(NodeKind::Extender, "extender-b", lat, false);
            for (sw, ex) in [(sw_a, ex_a), (sw_b, ex_b)] {
                let link = slower(ext.local, r.switch.link);
                // The extender's local-side receive buffer feeds its WAN port: as deep as the WAN one.
                fabric.connect(sw, ex, local(link, ext.buffer_bytes), local(link, r.switch.buffer_bytes));
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
            for _ in 0..r.wan_links {
                fabric.connect(ex_a, ex_b, wan.clone(), wan.clone());
            }
        }
        None => {
            let mut long = local(r.wan, r.switch.buffer_bytes);
            long.propagation = one_way;
            long.loss = r.loss;
            fabric.connect(sw_a, sw_b, long.clone(), long);
        }
    }
    fabric.compute_routes();
    TwoClusters { hosts_a, hosts_b }
}
