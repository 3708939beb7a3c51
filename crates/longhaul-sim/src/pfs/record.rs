//! What a run reports: the time series (aggregate and per-client bandwidth, per-link traffic
//! and utilisation), the run cut into phases at its link events with the steady bandwidth of
//! each and the recovery after a replug, the RPC latency distribution, and the ledger.

use serde::Serialize;

use super::ledger::Ledger;
use super::scenario::{PfsOp, PfsResolved};
use crate::link_events::{LinkAction, LinkEventSpec};

/// Interval samples, one entry per interval (ending at `t_s`).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[allow(non_snake_case)]
pub struct Series {
    pub t_s: Vec<f64>,
    /// Blocks acknowledged to the clients (writes) or delivered to them (reads), MB/s.
    pub bw_MBps: Vec<f64>,
    /// Per client, per interval.
    pub client_bw_MBps: Vec<Vec<f64>>,
    /// Per link, per interval: data carried (MB/s) and its share of the link's capacity.
    pub link_MBps: Vec<Vec<f64>>,
    pub link_util: Vec<Vec<f64>>,
    /// Links the subnet manager had active at the end of the interval.
    pub links_up: Vec<u32>,
}

/// The run between two link events.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[allow(non_snake_case)]
pub struct Phase {
    pub from_s: f64,
    pub to_s: f64,
    /// The event that began it ("link 2 down"), empty for the first; of several at one time,
    /// the last.
    pub event: String,
    /// Links plugged during the phase.
    pub links_plugged: u32,
    /// Mean of the samples in the phase's second half: its steady rate.
    pub bw_MBps: f64,
    /// The lowest sample in the phase: the dip of a failover.
    pub min_MBps: f64,
    /// A phase begun by a replug: from the replug to the end of the first interval whose
    /// aggregate is back to 95% of the rate before the first failure with the link carrying
    /// data again. None otherwise, or when that never happened.
    pub recovery_s: Option<f64>,
}

/// Fraction of the pre-failure rate that counts as recovered.
const RECOVERED: f64 = 0.95;

/// The phases of a run of `duration_s` with `events`, from its series.
pub fn phases(series: &Series, events: &[LinkEventSpec], links: u32, duration_s: f64) -> Vec<Phase> {
    // Each phase begins at the run's start or at an event.
    let starts: Vec<Option<&LinkEventSpec>> = std::iter::once(None).chain(events.iter().map(Some)).collect();
    let baseline = events.first().map_or(f64::NAN, |e| mean(series, 0.0, e.at_s, 0.5));
    let mut plugged = links;
    let mut out = Vec::new();
    for (i, began) in starts.iter().enumerate() {
        let from = began.map_or(0.0, |e| e.at_s);
        let to = starts.get(i + 1).and_then(|e| e.map(|e| e.at_s)).unwrap_or(duration_s);
        let mut event = String::new();
        let mut recovery_s = None;
        if let Some(e) = began {
            let up = e.action == LinkAction::Up;
            plugged = if up { plugged + 1 } else { plugged - 1 };
            event = format!("link {} {}", e.link, if up { "up" } else { "down" });
            if up {
                recovery_s = recovery(series, from, e.link as usize, baseline * RECOVERED);
            }
        }
        if to <= from && i + 1 < starts.len() {
            // Several events at one time make one cut: the phase begins with the last of them.
            continue;
        }
        let inside = samples(series, from, to);
        out.push(Phase {
            from_s: from,
            to_s: to,
            event,
            links_plugged: plugged,
            bw_MBps: mean(series, from, to, 0.5),
            min_MBps: inside.iter().map(|&i| series.bw_MBps[i]).fold(f64::NAN, f64::min),
            recovery_s,
        });
    }
    out
}

/// Samples whose interval lies inside [from, to].
fn samples(series: &Series, from: f64, to: f64) -> Vec<usize> {
    let step = series.t_s.first().copied().unwrap_or(0.0);
    (0..series.t_s.len()).filter(|&i| series.t_s[i] - step >= from - 1e-9 && series.t_s[i] <= to + 1e-9).collect()
}

/// Mean aggregate over the last `tail` fraction of [from, to] (NaN without samples).
fn mean(series: &Series, from: f64, to: f64, tail: f64) -> f64 {
    let start = to - (to - from) * tail;
    let s = samples(series, start, to);
    if s.is_empty() {
        return f64::NAN;
    }
    s.iter().map(|&i| series.bw_MBps[i]).sum::<f64>() / s.len() as f64
}

fn recovery(series: &Series, from: f64, link: usize, want_mbps: f64) -> Option<f64> {
    (0..series.t_s.len())
        .find(|&i| series.t_s[i] > from && series.bw_MBps[i] >= want_mbps && series.link_MBps[link][i] > 0.0)
        .map(|i| series.t_s[i] - from)
}

/// Percentiles of RPC latency (us): p50, p90, p99, p99.9 and the largest.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Latency {
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

impl Latency {
    pub fn of(mut us: Vec<f32>) -> Latency {
        if us.is_empty() {
            return Latency::default();
        }
        us.sort_by(f32::total_cmp);
        let at = |q: f64| us[((us.len() - 1) as f64 * q).round() as usize] as f64;
        Latency { p50_us: at(0.5), p90_us: at(0.9), p99_us: at(0.99), p999_us: at(0.999), max_us: at(1.0) }
    }
}

/// One run. Field names carry their unit (MB = 10^6 bytes).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[allow(non_snake_case)]
pub struct PfsRecord {
    pub testbed: String,
    /// The driver ("fluid" or "packet") and the transport ("rc", or "tcp" at packet level).
    pub network: String,
    pub transport: String,
    pub variant: String,
    pub op: String,
    pub extender: String,
    pub clients: u32,
    pub threads: u32,
    pub servers: u32,
    pub luns: u32,
    pub wan_links: u32,
    pub block_bytes: u64,
    pub delay_us: f64,
    pub fibre_km: f64,
    pub one_way_delay_us: f64,
    pub duration_s: f64,
    pub interval_s: f64,
    pub seed: u64,
    /// Capacities the run derived: one WAN link, one host adapter, one LUN (MB/s).
    pub link_MBps: f64,
    pub host_MBps: f64,
    pub lun_MBps: f64,
    /// Mean aggregate over the whole run.
    pub bw_MBps: f64,
    pub series: Series,
    pub phases: Vec<Phase>,
    pub rpc_latency: Latency,
    pub acked_blocks: u64,
    pub stored_blocks: u64,
    /// Blocks written again at their address by a resend after a QP error (idempotent).
    pub rewritten_blocks: u64,
    /// Sent and not yet acknowledged when the run ended (none lost: still in flight).
    pub outstanding_blocks: u64,
    /// Every acknowledged block on a server exactly once.
    pub ledger_ok: bool,
    pub ledger_violation: Option<String>,
    /// How the connections fared (four columns, in `Recovery`'s order).
    #[serde(flatten)]
    pub recovery: Recovery,
    pub sim_events: u64,
    pub status: String,
}

/// How the clients' connections fared over a run, as a driver counts them and the record
/// shows them.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Recovery {
    /// Connections that recovered by RC retransmission.
    pub rc_recoveries: u64,
    /// Connections that failed: retries exhausted, the queue pair in error.
    pub qp_errors: u64,
    /// Connections that reconnected after failing (GPFS reconnects; the fluid level only).
    pub reconnects: u64,
    /// Clients expelled for having no path for failure_detection_s.
    pub expelled_clients: u32,
}

/// What a driver's run left behind, for its record.
pub struct Outcome {
    pub series: Series,
    pub latency_us: Vec<f32>,
    pub ledger: Ledger,
    /// Blocks sent and not yet acknowledged at the end.
    pub outstanding_blocks: u64,
    pub recovery: Recovery,
    pub sim_events: u64,
    pub status: String,
}

impl PfsRecord {
    /// The record of a run of `r` (either driver).
    pub fn new(r: &PfsResolved, o: Outcome) -> PfsRecord {
        let p = &r.params;
        let (network, transport) = r.network.names();
        let total: f64 = o.series.bw_MBps.iter().sum::<f64>() * r.interval_s;
        PfsRecord {
            testbed: r.testbed.clone(),
            network: network.into(),
            transport: transport.into(),
            variant: p.fs.variant.name().to_string(),
            op: match r.op {
                PfsOp::Write => "write".into(),
                PfsOp::Read => "read".into(),
            },
            extender: r.extender.clone(),
            clients: r.clients,
            threads: p.client.threads,
            servers: r.servers,
            luns: r.servers * r.luns_per_server,
            wan_links: r.wan_links,
            block_bytes: p.fs.block_bytes,
            delay_us: r.delay_us,
            fibre_km: r.fibre_km,
            one_way_delay_us: r.one_way_s * 1e6,
            duration_s: r.duration_s,
            interval_s: r.interval_s,
            seed: r.seed,
            link_MBps: r.link_MBps,
            host_MBps: r.host_MBps,
            lun_MBps: p.disk.lun_MBps(p.fs.block_bytes),
            bw_MBps: total / r.duration_s,
            phases: phases(&o.series, &r.events, r.wan_links, r.duration_s),
            series: o.series,
            rpc_latency: Latency::of(o.latency_us),
            acked_blocks: o.ledger.acked,
            stored_blocks: o.ledger.stored,
            rewritten_blocks: o.ledger.rewrites,
            outstanding_blocks: o.outstanding_blocks,
            ledger_ok: o.ledger.violation.is_none(),
            ledger_violation: o.ledger.violation,
            recovery: o.recovery,
            sim_events: o.sim_events,
            status: o.status,
        }
    }
}
