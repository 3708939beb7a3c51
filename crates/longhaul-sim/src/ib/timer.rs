//! The RC local ACK timer a queue pair really gets: the exponent its consumer or the connection
//! manager sets, and what the adapter's firmware makes of it.
//!
//! IBA vol. 1 9.7.6.1.3: a requester that has heard no acknowledgement for 4.096 us x 2^timeout
//! since it sent (or last made progress) resends from the oldest unacknowledged packet; timeout
//! 0 means no timer (the kernel's `rdma_set_ack_timeout` documents the same: "zero disables the
//! timer"). After `retry_count` such retries without progress the queue pair fails with
//! IBV_WC_RETRY_EXC_ERR ("retry count exceeded").
//!
//! Who sets the exponent:
//! - perftest without `-c` (and MPI libraries) set it themselves: perftest's `-u` (DEF_QP_TIME 14
//!   since the first ib_write_bw/ib_rdma_bw, 2006-2008, and today), MVAPICH2's
//!   MV2_DEFAULT_TIME_OUT (RDMA_DEFAULT_TIME_OUT 20), NCCL_IB_TIMEOUT (14 before NCCL 2.14, 18
//!   up to 2.22, 20 since 2.23: NCCL's env.rst).
//! - A queue pair connected through the RDMA CM (perftest `-c`/`-R`) gets the CM's value: the
//!   kernel CM (drivers/infiniband/core/cm.c: cm_init_av_by_path, cm_rep_handler) sets it to
//!   `cm_ack_timeout(target ack delay, path packet life time)` below, the packet life time
//!   coming from the subnet administrator's path record (OpenSM osm_sa_path_record.c: the
//!   subnet_timeout option, OSM_DEFAULT_SUBNET_TIMEOUT 0x12 = 18) and the ack delay from the
//!   remote adapter's local_ca_ack_delay; spdk/spdk#1124 works the same derivation through. Only
//!   since the kernel's RDMA_OPTION_ID_ACK_TIMEOUT (commit 2c1619edef61) and perftest commit
//!   ccae524 (August 2024) does a CM-connected perftest queue pair get `-u` instead.

use serde::{Deserialize, Serialize};

use crate::engine::time::NS;
use crate::engine::Time;

/// The largest timeout exponent (a 5-bit field).
pub const MAX_TIMEOUT_EXP: u32 = 31;
/// The largest retry count (a 3-bit field).
pub const MAX_RETRY_COUNT: u32 = 7;

/// What an adapter's firmware does with a queue pair's ACK timeout exponent.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AckTimerRule {
    /// The shortest timeout the firmware lets a queue pair have (us): a shorter one set by the
    /// consumer is raised to it. 0 = none documented: the IBA value is in force.
    pub min_timeout_us: f64,
    /// The adapter's local CA ACK delay (an exponent, as `ibv_query_device` reports
    /// local_ca_ack_delay): the CM folds the peer's into the timeout it sets.
    pub local_ca_ack_delay: u32,
    /// Where the rule comes from (adapter generation, firmware, source).
    pub source: String,
}

impl AckTimerRule {
    /// The timer in force for exponent `exp` (None: no timer).
    pub fn in_force(&self, exp: u32) -> Option<Time> {
        let floor = (self.min_timeout_us * 1e6).round() as Time;
        iba_timeout(exp).map(|t| t.max(floor))
    }

    /// True if the firmware raises exponent `exp` to its floor.
    pub fn raises(&self, exp: u32) -> bool {
        iba_timeout(exp).is_some_and(|t| t < (self.min_timeout_us * 1e6).round() as Time)
    }
}

/// The IBA local ACK timeout for exponent `exp`: 4.096 us x 2^exp, None for 0 (no timer).
pub fn iba_timeout(exp: u32) -> Option<Time> {
    (exp > 0).then(|| (4_096 * NS) << exp.min(MAX_TIMEOUT_EXP))
}

/// The exponent the kernel CM gives a connected queue pair (cm.c cm_ack_timeout): the sum
/// 4.096 x 2^ack_delay + 2 x 4.096 x 2^life_time rounded to a power of two, taking the larger
/// term and adding one only if the other is within a factor of two of it.
pub fn cm_ack_timeout(ca_ack_delay: u32, packet_life_time: u32) -> u32 {
    let mut t = packet_life_time + 1;
    if t >= ca_ack_delay {
        t += u32::from(ca_ack_delay + 1 >= t);
    } else {
        t = ca_ack_delay + u32::from(t + 1 >= ca_ack_delay);
    }
    t.min(MAX_TIMEOUT_EXP)
}

/// The smallest exponent whose IBA timeout is at least `wait` (at most 31).
pub fn exp_covering(wait: Time) -> u32 {
    (1..=MAX_TIMEOUT_EXP).find(|&e| iba_timeout(e).is_some_and(|t| t >= wait)).unwrap_or(MAX_TIMEOUT_EXP)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::{MS, US};

    #[test]
    fn cm_timeout_matches_the_kernel_table() {
        // spdk/spdk#1124's table (ack delay 16, life time = exponent - 1): 0..13 -> 16, 14..15
        // -> 17, 16..17 -> 18.
        for (life, want) in [(0, 16), (13, 16), (14, 17), (15, 17), (16, 18), (17, 18)] {
            assert_eq!(cm_ack_timeout(16, life), want, "life {life}");
        }
        // OpenSM's default packet life time (18) with mthca/mlx4's ack delay 15: 2.1 s.
        assert_eq!(cm_ack_timeout(15, 18), 19);
        assert_eq!(cm_ack_timeout(31, 31), 31);
    }

    #[test]
    fn floor_and_zero() {
        let r = AckTimerRule { min_timeout_us: 500_000.0, local_ca_ack_delay: 15, source: String::new() };
        assert_eq!(r.in_force(0), None);
        assert_eq!(r.in_force(14), Some(500 * MS));
        assert!(r.raises(14) && !r.raises(17));
        assert_eq!(r.in_force(17), iba_timeout(17));
        assert_eq!(iba_timeout(14), Some(67_108_864 * US / 1000));
        assert_eq!(exp_covering(138 * MS), 16);
    }
}
