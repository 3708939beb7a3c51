//! Link failure events of a verbs scenario: the `[[events]]` list the emulator's drill reads too
//! (python/longhaul/failover.py: `at_s`, `link`, `action` = "down" | "up"; the same checks and
//! words), and the subnet manager's timing. Validated once, here.

use serde::{Deserialize, Serialize};

use crate::engine::time::S;
use crate::engine::Time;
use crate::ib::subnet_manager::SubnetManagerParams;
use crate::scenario::{err, in_range_f, ScenarioError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
/// What happens to the link (`action` = "down" | "up").
pub enum LinkAction {
    /// Unplugged: the link stops carrying packets at once.
    Down,
    /// Plugged back: the link trains, then the subnet manager brings it to Active.
    Up,
}

/// One `[[events]]` table: link `link` is unplugged (down) or plugged back (up) `at_s` seconds
/// into the run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LinkEventSpec {
    /// Seconds from the start of the run, in [0, the run's duration].
    pub at_s: f64,
    /// Which WAN link, 0 .. the scenario's link count.
    pub link: u32,
    /// Unplugged or plugged back.
    pub action: LinkAction,
}

/// The `[subnet_manager]` table: any of [`SubnetManagerParams`] (OpenSM's defaults otherwise).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SubnetManagerSpec {
    /// Seconds between the SM's periodic sweeps (OpenSM's default 10 s).
    pub sweep_interval_s: Option<f64>,
    /// Whether a port state change reaches the SM at once by trap 128 (default true).
    pub traps: Option<bool>,
    /// Seconds from the SM learning of a change to new forwarding tables everywhere (default 0.1 s).
    pub reroute_s: Option<f64>,
    /// Seconds a plugged-back link trains before its physical layer is up (default 1 s).
    pub link_training_s: Option<f64>,
}

/// Link events in range, in time order, with what the run records them by.
#[derive(Debug, Clone, Serialize)]
pub struct LinkEvents {
    /// (time, link, true = up), in time order (ties in the file's order).
    pub events: Vec<(Time, usize, bool)>,
    /// The subnet manager's timing: when the forwarding tables follow an event.
    pub subnet_manager: SubnetManagerParams,
    /// The time series' interval.
    pub interval: Time,
}

/// Most events in one scenario (failover.py's MAX_EVENTS).
const MAX_EVENTS: usize = 1000;
/// The series' interval when unset, and its least.
const DEFAULT_INTERVAL_S: f64 = 0.1;
const MIN_INTERVAL_S: f64 = 1e-4;

fn to_time(s: f64) -> Time {
    (s * S as f64).round() as Time
}

/// Check `events` against `links` WAN links and a run of `duration_s` seconds (None: the run has
/// no fixed length), and `sm` in range.
pub(crate) fn resolve(
    events: &[LinkEventSpec],
    sm: &SubnetManagerSpec,
    links: u32,
    duration_s: Option<f64>,
    interval_s: Option<f64>,
) -> Result<Option<LinkEvents>, ScenarioError> {
    if events.is_empty() {
        return Ok(None);
    }
    let Some(duration) = duration_s else {
        return err("events: link events need a run of fixed length: set verbs.duration_s (--duration-s)");
    };
    if events.len() > MAX_EVENTS {
        return err(format!("events: {} events; at most {MAX_EVENTS}", events.len()));
    }
    let mut ordered = Vec::with_capacity(events.len());
    for (i, e) in events.iter().enumerate() {
        if !e.at_s.is_finite() || e.at_s <= 0.0 || e.at_s >= duration {
            return err(format!(
                "events[{i}].at_s: {} is outside the run (valid: 0 < at_s < duration_s = {duration} s)",
                e.at_s
            ));
        }
        if e.link >= links {
            return err(format!(
                "events[{i}].link: {} does not exist (valid: 0..{} for wan_links = {links})",
                e.link,
                links - 1
            ));
        }
        ordered.push((to_time(e.at_s), e.link as usize, e.action == LinkAction::Up, e.at_s));
    }
    ordered.sort_by_key(|e| e.0);
    let mut up = vec![true; links as usize];
    for &(_, link, to_up, at_s) in &ordered {
        if up[link] == to_up {
            let down: Vec<String> = (0..links as usize).filter(|&k| !up[k]).map(|k| k.to_string()).collect();
            let down = if down.is_empty() { "none".to_string() } else { down.join(", ") };
            let state = if to_up { "up" } else { "down" };
            return err(format!("events: at {at_s} s link {link} is already {state} (links down then: {down})"));
        }
        up[link] = to_up;
    }
    let d = SubnetManagerParams::default();
    let subnet_manager = SubnetManagerParams {
        sweep_interval_s: in_range_f(
            "subnet_manager.sweep_interval_s",
            sm.sweep_interval_s.unwrap_or(d.sweep_interval_s),
            0.0,
            3600.0,
        )?,
        traps: sm.traps.unwrap_or(d.traps),
        reroute_s: in_range_f("subnet_manager.reroute_s", sm.reroute_s.unwrap_or(d.reroute_s), 0.0, 600.0)?,
        link_training_s: in_range_f(
            "subnet_manager.link_training_s",
            sm.link_training_s.unwrap_or(d.link_training_s),
            0.0,
            600.0,
        )?,
    };
    let interval = in_range_f("interval_s", interval_s.unwrap_or(DEFAULT_INTERVAL_S), MIN_INTERVAL_S, duration)?;
    Ok(Some(LinkEvents {
        events: ordered.into_iter().map(|(t, link, to_up, _)| (t, link, to_up)).collect(),
        subnet_manager,
        interval: to_time(interval),
    }))
}
