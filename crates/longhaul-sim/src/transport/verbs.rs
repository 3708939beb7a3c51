//! InfiniBand verbs as a [`Transport`]: the adapters' queue pairs ([`IbHosts`]: RC, UC and UD,
//! send/receive and the RDMA write and read extension). Outputs are work completions; timers
//! are the RC queue pairs' local ACK timeouts. Applications post work requests on [`IbHosts`].

use super::Transport;
use crate::engine::Time;
use crate::ib::{Completion, IbHosts, IbPacket};
use crate::net::NodeId;

impl Transport for IbHosts {
    type Packet = IbPacket;
    /// A queue pair's ACK timer.
    type Timer = u32;
    type Output = Completion;

    #[inline]
    fn unsettled(&self) -> bool {
        !(self.timers.is_empty() && self.completions.is_empty())
    }

    fn drain_timers(&mut self, mut arm: impl FnMut(Time, u32)) {
        for (t, qp) in self.timers.drain(..) {
            arm(t, qp);
        }
    }

    fn take_outputs(&mut self, batch: &mut Vec<Completion>) {
        std::mem::swap(batch, &mut self.completions);
    }

    fn on_timer(&mut self, now: Time, qp: u32, kicks: &mut Vec<NodeId>) {
        self.on_timer(now, qp);
        kicks.push(self.node_of(qp));
    }
}
