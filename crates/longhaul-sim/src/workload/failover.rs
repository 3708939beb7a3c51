//! WAN links unplugged and plugged back during a perftest run: the subnet manager's timing
//! ([`crate::ib::subnet_manager`]) turned into changes of the fabric, and the run cut into
//! intervals to record what each one carried, per link and in total.

use serde::Serialize;

use crate::engine::time::to_s;
use crate::engine::{EventQueue, Stop, Time};
use crate::ib::subnet_manager::FabricStep;
use crate::ib::IbHosts;
use crate::link_events::LinkEvents;
use crate::net::{LinkChange, PortId};
use crate::transport::cross::WithCross;
use crate::world::{App, World};

type Hosts = WithCross<IbHosts>;

/// What the links did and what the run got through them. Time series: one value per interval,
/// `series_t_s` its end; MB = 10^6 bytes.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[allow(non_snake_case)]
pub struct FailoverReport {
    pub interval_s: f64,
    pub series_t_s: Vec<f64>,
    /// Payload the receivers accepted in order, all queue pairs.
    pub series_bw_MBps: Vec<f64>,
    /// Per WAN link (outer index), bytes sent from side A toward B (IB packets, headers
    /// included, before WAN framing): the data direction of a bw test.
    pub series_link_MBps: Vec<Vec<f64>>,
    /// When new forwarding tables reached the switches (the subnet manager's reroutes), and when
    /// replugged links became Active.
    pub reroute_s: Vec<f64>,
    pub link_active_s: Vec<f64>,
    /// Packets lost to links down: on a cut wire or queue, or sent to a dead port by a stale table.
    pub drops_link_down: u64,
    /// Per queue pair the benchmark drives: payload the requester saw completed successfully,
    /// payload its receiver accepted in order, and when it went to the error state (None: never).
    pub qp_completed_bytes: Vec<u64>,
    pub qp_delivered_bytes: Vec<u64>,
    pub qp_error_s: Vec<Option<f64>>,
}

/// The fabric changes of `ev` on `wan` (the WAN links' ports), scheduled on `q`; returns the
/// times of the reroutes and of the links made Active again.
pub(super) fn schedule<A: App<Hosts>>(
    ev: &LinkEvents,
    wan: &[PortId],
    world: &mut World<Hosts, A>,
    q: &mut EventQueue<crate::world::Ev<u32, A::Event>>,
) -> (Vec<Time>, Vec<Time>) {
    let (mut reroutes, mut actives) = (Vec::new(), Vec::new());
    for (at, step) in ev.subnet_manager.plan(&ev.events) {
        let change = match step {
            FabricStep::Down(k) => LinkChange::Down(wan[k]),
            FabricStep::Up(k) => {
                actives.push(at);
                LinkChange::Up(wan[k])
            }
            FabricStep::Reroute => {
                reroutes.push(at);
                LinkChange::Reroute
            }
        };
        world.fabric.schedule_link_change(at, change, q);
    }
    (reroutes, actives)
}

/// The series of a run: interval ends, delivered payload and per-link bytes.
pub(super) struct Series {
    pub t: Vec<Time>,
    pub delivered: Vec<u64>,
    pub link_bytes: Vec<Vec<u64>>,
}

/// Run `world` until `limit` (or its end), one interval at a time (stopping and resuming keeps
/// the order of events: the run is the one it would be in one go).
pub(super) fn run_sampled<A: App<Hosts>>(
    world: &mut World<Hosts, A>,
    q: &mut EventQueue<crate::world::Ev<u32, A::Event>>,
    wan: &[PortId],
    interval: Time,
    limit: Time,
) -> (Stop, Series) {
    let mut series = Series { t: Vec::new(), delivered: Vec::new(), link_bytes: vec![Vec::new(); wan.len()] };
    let mut until = interval.min(limit);
    let mut stop = world.run(q, until);
    loop {
        series.t.push(until);
        series.delivered.push(world.net.qps.iter().map(|qp| qp.rx_bytes).sum());
        for (k, &p) in wan.iter().enumerate() {
            series.link_bytes[k].push(world.fabric.ports[p as usize].tx_bytes_by(until));
        }
        if until >= limit || matches!(stop, Stop::Finished | Stop::Cancelled) {
            return (stop, series);
        }
        until = (until + interval).min(limit);
        stop = world.resume(q, until);
    }
}

/// MB/s of each interval from cumulative bytes at the interval ends `t`.
fn rates(t: &[Time], cumulative: &[u64]) -> Vec<f64> {
    let mut prev = (0, 0);
    t.iter()
        .zip(cumulative)
        .map(|(&t, &b)| {
            let r = (b - prev.1) as f64 / to_s(t - prev.0) / 1e6;
            prev = (t, b);
            r
        })
        .collect()
}

impl FailoverReport {
    pub(super) fn new(
        ev: &LinkEvents,
        series: &Series,
        (reroutes, actives): (Vec<Time>, Vec<Time>),
        drops_link_down: u64,
        qps: Vec<(u64, u64, Option<Time>)>,
    ) -> Self {
        // Changes planned after the run's end (a sweep still to come) did not happen in it.
        let end = series.t.last().copied().unwrap_or(0);
        FailoverReport {
            interval_s: to_s(ev.interval),
            series_t_s: series.t.iter().map(|&t| to_s(t)).collect(),
            series_bw_MBps: rates(&series.t, &series.delivered),
            series_link_MBps: series.link_bytes.iter().map(|b| rates(&series.t, b)).collect(),
            reroute_s: reroutes.into_iter().filter(|&t| t <= end).map(to_s).collect(),
            link_active_s: actives.into_iter().filter(|&t| t <= end).map(to_s).collect(),
            drops_link_down,
            qp_completed_bytes: qps.iter().map(|q| q.0).collect(),
            qp_delivered_bytes: qps.iter().map(|q| q.1).collect(),
            qp_error_s: qps.iter().map(|q| q.2.map(to_s)).collect(),
        }
    }
}
