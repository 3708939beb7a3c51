//! One RC connection across the verbs model's path: the set-up and the run of every model that
//! runs over a single queue pair between a host on each side (iSER, NFS/RDMA).

use crate::engine::{EventQueue, Stop, Time};
use crate::ib::{IbHosts, IbPacket, Transport};
use crate::net::{Fabric, NodeId};
use crate::record::RunEnd;
use crate::scenario::Resolved;
use crate::topology;
use crate::world::{App, Ev, TimerPolicy, World};

/// Such a model has no events of its own.
pub type Never = std::convert::Infallible;

/// The path's fabric, its IB hosts and one RC queue pair from a host on side A (`qps.0`,
/// `nodes.0`) to one on side B.
pub struct RcPair {
    pub fabric: Fabric<IbPacket>,
    pub ib: IbHosts,
    pub nodes: (NodeId, NodeId),
    pub qps: (u32, u32),
}

impl RcPair {
    /// The verbs path `v` with a queue pair of `sq_depth` send work requests at both ends.
    pub fn build(seed: u64, v: &Resolved, sq_depth: u32) -> RcPair {
        let mut fabric = Fabric::new(seed);
        let pair = topology::build(v, &mut fabric, 1);
        let nodes = (pair.hosts_a[0], pair.hosts_b[0]);
        let mut ib = IbHosts::new(v.hca.clone(), fabric.nodes.len(), v.ack_timeout_exp, v.retry_count);
        let qps = ib.connect(nodes.0, nodes.1, Transport::Rc, v.mtu_bytes, 0, sq_depth);
        RcPair { fabric, ib, nodes, qps }
    }

    /// Runs `app` until it is done or simulated time passes `limit`: the world as it stopped, and
    /// how the run ended.
    pub fn run<A: App<IbHosts, Event = Never>>(self, app: A, limit: Time) -> (World<IbHosts, A>, RunEnd) {
        let mut world = World::new(self.fabric, self.ib, app, TimerPolicy::Direct);
        let mut q: EventQueue<Ev<u32, Never>> = EventQueue::new();
        let stop = world.run(&mut q, limit);
        let st = &world.net.stats;
        let end = RunEnd {
            finished: stop == Stop::Finished,
            failed: st.qp_errors > 0,
            sim_events: q.events_handled(),
            sim_time: q.now(),
            packets: st.data_packets,
            retransmitted_packets: st.retransmitted_packets,
        };
        (world, end)
    }
}
