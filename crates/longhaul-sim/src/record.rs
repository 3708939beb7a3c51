//! The columns every model's record shares, defined once so that the same thing has the same
//! name, unit and order in every record: the path's (flattened where they stand, so a record's
//! columns keep their order), and how a run ended.

use serde::Serialize;

use crate::engine::time::{to_s, to_us};
use crate::engine::Time;

/// The path's columns: the extenders' delay and the fibre as resolved, the one-way delay they
/// make, and the distance that delay stands for in fibre (5 us per km).
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct PathColumns {
    /// The one-way delay added on the long-haul link (the range extenders' setting), microseconds.
    pub delay_us: f64,
    /// Fibre length of the long-haul link in km (5 us per km, one way).
    pub fibre_km: f64,
    /// Fibre plus added delay, one way, microseconds.
    pub one_way_delay_us: f64,
    /// The fibre length the whole one-way delay equals (one_way_delay_us / 5 us per km).
    pub distance_km: f64,
}

impl PathColumns {
    /// The columns of a path of this delay, fibre and one-way delay.
    pub fn new(delay_us: f64, fibre_km: f64, one_way_delay_us: f64) -> PathColumns {
        PathColumns { delay_us, fibre_km, one_way_delay_us, distance_km: one_way_delay_us / 5.0 }
    }
}

/// How a packet-level run ended.
pub(crate) struct RunEnd {
    /// The workload finished (not stopped at the simulated-time limit).
    pub finished: bool,
    /// A queue pair went to the error state (its retry count was exceeded).
    pub failed: bool,
    /// Events the engine handled, and the simulated time when the run stopped.
    pub sim_events: u64,
    pub sim_time: Time,
    /// Data packets (verbs) or TCP data segments sent, and how many were resent.
    pub packets: u64,
    pub retransmitted_packets: u64,
}

impl RunEnd {
    /// A record's `status`: a queue pair in error, done, or stopped at the time limit.
    pub fn status(&self) -> String {
        if self.failed {
            "qp error: retry count exceeded".to_string()
        } else if self.finished {
            "ok".to_string()
        } else {
            format!("incomplete: stopped after {:.3} s simulated", to_s(self.sim_time))
        }
    }
}

/// The last columns of a record of a run over one connection (iSER, NFS), in this order.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RunColumns {
    /// Data packets (verbs) or TCP data segments sent, retransmissions included.
    pub data_packets: u64,
    /// Those sent again (RC after a NAK or a timeout; TCP retransmissions).
    pub retransmitted_packets: u64,
    /// Simulated time when the run stopped, microseconds.
    pub sim_time_us: f64,
    /// Events the engine handled (the cost of the run).
    pub sim_events: u64,
    /// "ok", or why the run did not complete.
    pub status: String,
}

impl From<&RunEnd> for RunColumns {
    fn from(end: &RunEnd) -> RunColumns {
        RunColumns {
            data_packets: end.packets,
            retransmitted_packets: end.retransmitted_packets,
            sim_time_us: to_us(end.sim_time),
            sim_events: end.sim_events,
            status: end.status(),
        }
    }
}
