//! The subnet manager's part in a link failure: when the fabric's forwarding tables change after
//! a link is unplugged or plugged back.
//!
//! - Unplugged at t: the link is dead at once (the fibre is cut). The switch (here the range
//!   extender, whose WAN port is a switch port) sends trap 128 (port state change, IBA vol. 1
//!   14.2.5) to the SM, which answers with a heavy sweep: rediscovery, new routes from the
//!   routing engine (OpenSM's default, minhop), forwarding tables (LFTs) uploaded. With traps
//!   off, the SM sees the change at its next periodic sweep. Until the upload, the tables still
//!   send some flows to the dead port, where they are dropped.
//! - Plugged back at t2: the link trains (physical layer up, port state Init, which passes no
//!   data), then the SM, told by trap 128 or at its next sweep, brings the port to Active and
//!   uploads tables that spread the routes over every link up again.
//!
//! Parallel links of equal hop count share the routes to the hosts by flow (queue pair), as
//! OpenSM's minhop engine balances destinations over a switch's equal-cost ports; LMC > 0
//! (several LIDs per port) would add paths for APM, not modelled here.

use serde::Serialize;

use crate::engine::time::S;
use crate::engine::Time;

/// The subnet manager's timing (OpenSM).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SubnetManagerParams {
    /// Seconds between periodic light sweeps: OpenSM's `sweep_interval` (`-s`),
    /// OSM_DEFAULT_SWEEP_INTERVAL_SECS = 10 in osm_base.h, the same from OFED 1.x (2006) to
    /// opensm 3.3.x today (opensm(8)). The sweeps are taken to fall on multiples of it from the
    /// start of the run (the SM has been running for a while: the phase is unknown).
    pub sweep_interval_s: f64,
    /// Switches report port state changes with trap 128 and the SM sweeps at once (OpenSM
    /// processes traps unless told not to; opensm(8): a trap 128 forces a heavy sweep). False:
    /// the change waits for the next periodic sweep.
    pub traps: bool,
    /// From the SM learning of a change to new forwarding tables in every switch: the heavy
    /// sweep's discovery, the routing engine and the LFT upload. Assumed 0.1 s for a fabric of a
    /// few switches (each step is a few management datagrams of microseconds; OpenSM logs a
    /// heavy sweep of a small subnet completing in well under a second); a large fabric takes
    /// seconds.
    pub reroute_s: f64,
    /// From plugging a link back to its physical layer up (port state Init): link training.
    /// Assumed 1 s for a range extender's WAN link (the extender must regain its WAN framing
    /// and the far side's; IB link training alone takes milliseconds).
    pub link_training_s: f64,
}

impl Default for SubnetManagerParams {
    fn default() -> Self {
        SubnetManagerParams { sweep_interval_s: 10.0, traps: true, reroute_s: 0.1, link_training_s: 1.0 }
    }
}

/// What happens to the fabric, and when, after a link event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FabricStep {
    /// The link stops carrying packets.
    Down(usize),
    /// The link is Active again.
    Up(usize),
    /// New forwarding tables in every switch.
    Reroute,
}

impl SubnetManagerParams {
    fn time(s: f64) -> Time {
        (s * S as f64).round() as Time
    }

    /// When the SM learns of a port change at `at`: at once by trap, else at the next sweep
    /// (never, with sweeping off and no traps).
    fn learns(&self, at: Time) -> Option<Time> {
        if self.traps {
            return Some(at);
        }
        let every = Self::time(self.sweep_interval_s);
        (every > 0).then(|| at.div_ceil(every) * every)
    }

    /// The fabric's steps after the link events `events` ((time, link, true = up), in time
    /// order), in time order (a step at the same time as another keeps the events' order).
    pub fn plan(&self, events: &[(Time, usize, bool)]) -> Vec<(Time, FabricStep)> {
        let reroute = Self::time(self.reroute_s);
        let mut steps = Vec::new();
        for (i, &(at, link, up)) in events.iter().enumerate() {
            if up {
                let trained = at + Self::time(self.link_training_s);
                // Unplugged again before the SM made it Active: it never carries anything.
                let cut = events[i + 1..].iter().find(|e| e.1 == link).map(|e| e.0);
                if let Some(seen) = self.learns(trained).filter(|&t| cut.is_none_or(|c| t + reroute <= c)) {
                    steps.push((seen + reroute, FabricStep::Up(link)));
                    steps.push((seen + reroute, FabricStep::Reroute));
                }
            } else {
                steps.push((at, FabricStep::Down(link)));
                if let Some(seen) = self.learns(at) {
                    steps.push((seen + reroute, FabricStep::Reroute));
                }
            }
        }
        steps.sort_by_key(|&(t, _)| t);
        steps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::MS;

    #[test]
    fn traps_reroute_at_once_sweeps_wait() {
        let sm = SubnetManagerParams::default();
        let steps = sm.plan(&[(3 * S, 1, false), (14 * S, 1, true)]);
        assert_eq!(
            steps,
            vec![
                (3 * S, FabricStep::Down(1)),
                (3 * S + 100 * MS, FabricStep::Reroute),
                (15 * S + 100 * MS, FabricStep::Up(1)),
                (15 * S + 100 * MS, FabricStep::Reroute),
            ]
        );
        let slow = SubnetManagerParams { traps: false, ..sm };
        let steps = slow.plan(&[(3 * S, 1, false), (14 * S, 1, true)]);
        assert_eq!(steps[1], (10 * S + 100 * MS, FabricStep::Reroute));
        assert_eq!(steps[2], (20 * S + 100 * MS, FabricStep::Up(1)));
        // Unplugged again before the sweep that would have made it Active.
        let steps = slow.plan(&[(3 * S, 1, false), (14 * S, 1, true), (18 * S, 1, false)]);
        assert!(!steps.iter().any(|s| s.1 == FabricStep::Up(1)));
    }
}
