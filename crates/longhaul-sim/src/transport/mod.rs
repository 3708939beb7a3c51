//! The seam between the network and the applications: a [`Transport`] is what runs on the
//! hosts' adapters or kernels (InfiniBand queue pairs, a TCP/IP stack). It plugs into the
//! fabric as its [`Endpoints`] (packets in, packets out), keeps its own timers, and hands the
//! application what a step produced (a work completion, bytes readable on a connection).
//! Applications ([`crate::world::App`]) are written against it once and run over any transport
//! through the one generic [`crate::world::World`].
//!
//! Implementations, one file each: [`verbs`] (RC/UC/UD with send/receive and the RDMA write and
//! read extension, on [`crate::ib::IbHosts`]) and [`tcp`] (one TCP host layer for iperf, NFS,
//! MPI and every later application, [`crate::tcp::hosts::TcpHosts`]); [`cross`] puts cross
//! traffic's hosts beside any of them.
//!
//! Adding a transport: implement [`Transport`] (and [`Endpoints`] for its packet type) in a new
//! file here; every application whose needs it meets runs over it unchanged.

pub(crate) mod cross;
pub(crate) mod tcp;
pub(crate) mod verbs;

use crate::engine::Time;
use crate::net::{Endpoints, NodeId, Routable};

/// A transport's timer as one number, which orders the timers due at the same instant (they
/// fire in increasing rank) and gives the timer back: a world that coalesces timers keeps each
/// as one (deadline, rank) key, compared without branching on its parts.
pub trait Ranked: Copy {
    fn rank(self) -> u64;
    fn from_rank(rank: u64) -> Self;
}

/// A queue pair's timer (its number).
impl Ranked for u32 {
    #[inline(always)]
    fn rank(self) -> u64 {
        self as u64
    }
    #[inline(always)]
    fn from_rank(rank: u64) -> Self {
        rank as u32
    }
}

/// [`Ranked`] for a timer of two kinds, each numbered by a `u32` (`$first(n)`, `$second(n)`):
/// every timer of the first kind due at an instant fires before any of the second.
macro_rules! ranked_two_kinds {
    ($timer:ty, $first:path, $second:path) => {
        impl $crate::transport::Ranked for $timer {
            #[inline(always)]
            fn rank(self) -> u64 {
                match self {
                    $first(n) => n as u64,
                    $second(n) => 1 << 32 | n as u64,
                }
            }
            #[inline(always)]
            fn from_rank(rank: u64) -> Self {
                if rank >> 32 == 0 {
                    $first(rank as u32)
                } else {
                    $second(rank as u32)
                }
            }
        }
    };
}
pub(crate) use ranked_two_kinds;

/// What the applications see of a host transport.
///
/// A step of the simulation (a packet reaching a host, a host's port asking for its next packet,
/// a timer firing) may arm timers and produce outputs; the world drains both after every event
/// ("settling") and hands the outputs to the application, which may post more work.
pub trait Transport: Endpoints<Self::Packet> {
    /// What travels on the fabric.
    type Packet: Routable;
    /// A timer of this transport (a queue pair's ACK timeout; a TCP connection's retransmission
    /// or delayed-ACK deadline, a host's stack becoming free): small and `Copy`, ranked so that
    /// a world may keep many in a heap.
    type Timer: Ranked;
    /// What a step produced for the application.
    type Output: Copy;
    /// Packets travel the fabric (not at flow level, where no host ever has one to send: the
    /// world then never tries a host's port when the application gives the host work).
    const MOVES_PACKETS: bool = true;

    /// True if timers or outputs are waiting to be settled (checked after every event: most
    /// leave nothing).
    fn unsettled(&self) -> bool;
    /// Hand every timer armed since the last call to `arm` (time, timer), in arming order.
    fn drain_timers(&mut self, arm: impl FnMut(Time, Self::Timer));
    /// Move the outputs produced since the last call into `batch` (empty on entry), in order.
    fn take_outputs(&mut self, batch: &mut Vec<Self::Output>);
    /// Timer `timer` fired at `now`; push the hosts that may have something to send now onto
    /// `kicks`, in the order their ports should be tried.
    fn on_timer(&mut self, now: Time, timer: Self::Timer, kicks: &mut Vec<NodeId>);
}

#[cfg(test)]
mod tests {
    use super::Ranked;
    use crate::mpi::fluid::FluidTimer;
    use crate::tcp::hosts::TcpTimer;

    /// Every timer comes back from its rank, and ranks order each transport's timers by kind,
    /// then by number.
    #[test]
    fn ranks_give_timers_back_in_order() {
        fn check<T: Ranked + PartialEq + std::fmt::Debug>(in_order: &[T]) {
            for w in in_order.windows(2) {
                assert!(w[0].rank() < w[1].rank(), "{:?} ranks after {:?}", w[0], w[1]);
            }
            for &t in in_order {
                assert_eq!(T::from_rank(t.rank()), t);
            }
        }
        check(&[0u32, 7, u32::MAX]);
        check(&[
            FluidTimer::Pending(0),
            FluidTimer::Pending(u32::MAX),
            FluidTimer::FlowsDue(0),
            FluidTimer::FlowsDue(9),
        ]);
        check(&[TcpTimer::Dir(0), TcpTimer::Dir(u32::MAX), TcpTimer::Stage(0), TcpTimer::Stage(3)]);
    }
}
