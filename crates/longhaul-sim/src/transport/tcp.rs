//! TCP as a [`Transport`]: the one TCP host layer ([`TcpHosts`]) for iperf, NFS, MPI and every
//! later application. Outputs are bytes becoming readable on a direction and the application's
//! datagrams arriving; timers are the directions' retransmission and delayed-ACK deadlines and
//! the hosts' stacks becoming free for their next segment. Applications open connections, write
//! frames and send datagrams on [`TcpHosts`] directly.

use super::Transport;
use crate::engine::Time;
use crate::net::NodeId;
use crate::tcp::hosts::{TcpHosts, TcpOutput, TcpTimer};
use crate::tcp::TcpPacket;

impl Transport for TcpHosts {
    type Packet = TcpPacket;
    type Timer = TcpTimer;
    type Output = TcpOutput;

    #[inline]
    fn unsettled(&self) -> bool {
        self.has_timers() || self.has_outputs()
    }

    fn drain_timers(&mut self, arm: impl FnMut(Time, TcpTimer)) {
        TcpHosts::drain_timers(self, arm);
    }

    fn take_outputs(&mut self, batch: &mut Vec<TcpOutput>) {
        TcpHosts::take_outputs(self, batch);
    }

    fn on_timer(&mut self, now: Time, t: TcpTimer, kicks: &mut Vec<NodeId>) {
        TcpHosts::on_timer(self, now, t, kicks);
    }
}
