//! The fluid driver end to end: the [S3] drill, outages, determinism, and random failure schedules.

use super::run;
use crate::pfs::record::PfsRecord;
use crate::pfs::scenario::PfsScenario;
use crate::scenario::ModelScenario;
use proptest::prelude::*;

fn run_json(json: &str) -> PfsRecord {
    run(&PfsScenario::from_json(json).unwrap().resolve().unwrap())
}

/// The [S3] drill: four links, three unplugged one by one, the last plugged back.
const DRILL: &str = r#"{"path": {"wan_links": 4, "fibre_km": 10}, "pfs": {"duration_s": 240},
    "events": [{"at_s": 40, "link": 0, "action": "down"}, {"at_s": 80, "link": 1, "action": "down"},
               {"at_s": 120, "link": 2, "action": "down"}, {"at_s": 160, "link": 2, "action": "up"}]}"#;

#[test]
fn the_drill_keeps_every_write_and_recovers() {
    let r = run_json(DRILL);
    assert!(r.ledger_ok, "{:?}", r.ledger_violation);
    let bw: Vec<f64> = r.phases.iter().map(|p| p.bw_MBps).collect();
    // Two links carry what four did; one carries less; plugging one back restores it.
    assert!((bw[2] - bw[0]).abs() < 0.01 * bw[0] && bw[3] < 0.95 * bw[0] && bw[4] > 0.99 * bw[0], "{bw:?}");
    assert!(bw[3] <= r.link_MBps * (1.0 + 1e-9), "{bw:?}");
    let recovery = r.phases[4].recovery_s.expect("recovered");
    assert!(recovery <= 10.0 + 1.0 + 1.0, "{recovery}");
    // The failover shows: a dip while RC retries until the SM's reroute (trap at once, 0.1 s:
    // the second retry gets through, nothing fails), and a long latency tail.
    assert!(r.phases[1].min_MBps < 0.95 * bw[0], "{:?}", r.phases);
    assert!(
        r.recovery.rc_recoveries > 0 && r.recovery.qp_errors == 0,
        "{} {}",
        r.recovery.rc_recoveries,
        r.recovery.qp_errors
    );
    assert!(r.rpc_latency.max_us > 1e5 && r.rpc_latency.p50_us < 1e5);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Any failure schedule: every acknowledged write on a server exactly once, no link
    /// above its capacity.
    #[test]
    fn any_failure_schedule_loses_and_duplicates_nothing(
        links in 1u32..5,
        raw in prop::collection::vec((0.1f64..19.9, 0u32..4), 0..8),
        timeout_exp in 8u32..20,
        retries in 0u32..8,
        variant in prop::sample::select(vec!["gpfs", "lustre"]),
        op in prop::sample::select(vec!["write", "read"]),
        lmc in 0u32..3,
        apm in any::<bool>(),
    ) {
        let apm = apm && lmc > 0;
        // Alternate down/up per link in time order, so every schedule is valid.
        let mut raw = raw;
        raw.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut up = vec![true; links as usize];
        let mut events = Vec::new();
        for (t, l) in raw {
            let l = l % links;
            let action = if up[l as usize] { "down" } else { "up" };
            up[l as usize] = !up[l as usize];
            events.push(format!(r#"{{"at_s": {t}, "link": {l}, "action": "{action}"}}"#));
        }
        let json = format!(
            r#"{{"path": {{"wan_links": {links}, "fibre_km": 10}},
                "pfs": {{"duration_s": 20, "variant": "{variant}", "op": "{op}", "ack_timeout_exp": {timeout_exp},
                         "retry_count": {retries}, "file_bytes": 67108864, "lmc": {lmc}, "apm": {apm}}},
                "events": [{}]}}"#,
            events.join(",")
        );
        let r = run_json(&json);
        prop_assert!(r.ledger_ok, "{:?}", r.ledger_violation);
        // Stored and not acknowledged: only blocks still outstanding (a reply on its way or lost).
        prop_assert!(r.acked_blocks <= r.stored_blocks && r.stored_blocks - r.acked_blocks <= r.outstanding_blocks);
        for k in 0..links as usize {
            prop_assert!(r.series.link_util[k].iter().all(|&u| u <= 1.0 + 1e-9), "link {} {:?}", k, r.series.link_util[k]);
        }
        prop_assert!(r.acked_blocks > 0);
    }
}

#[test]
fn events_at_one_time_make_one_cut_and_an_outage_expels_after_the_lease() {
    let r = run_json(
        r#"{"path": {"wan_links": 2}, "pfs": {"duration_s": 60},
            "events": [{"at_s": 5, "link": 0, "action": "down"}, {"at_s": 5, "link": 1, "action": "down"}]}"#,
    );
    assert_eq!(r.phases.len(), 2);
    assert_eq!((r.phases[1].event.as_str(), r.phases[1].links_plugged), ("link 1 down", 0));
    assert_eq!(r.phases[1].bw_MBps, 0.0);
    // No path for GPFS's 35 s lease: both clients are expelled (even if nothing happened to
    // be in flight when the links went: the writers' next blocks were lost); nothing
    // acknowledged is lost.
    assert_eq!(r.recovery.expelled_clients, 2);
    assert!(r.ledger_ok && r.acked_blocks > 0 && r.recovery.qp_errors >= 2);
}

#[test]
fn same_seed_same_record() {
    let a = run_json(DRILL);
    assert_eq!(a, run_json(DRILL));
}

/// One of two links unplugged with no traps: the reroute waits for the 10 s sweep, long after
/// RC's 8 x 67 ms retries. LMC 1 gives each port a second LID on the other link.
fn no_trap_cut(apm: bool) -> PfsRecord {
    run_json(&format!(
        r#"{{"path": {{"wan_links": 2, "fibre_km": 10}}, "pfs": {{"duration_s": 20, "lmc": 1, "apm": {apm}}},
            "subnet_manager": {{"traps": false}}, "events": [{{"at_s": 4, "link": 0, "action": "down"}}]}}"#
    ))
}

#[test]
fn with_apm_armed_the_connections_migrate_instead_of_failing_and_reconnecting() {
    let (plain, apm) = (no_trap_cut(false), no_trap_cut(true));
    assert!(
        plain.recovery.qp_errors > 0 && plain.recovery.reconnects > 0,
        "{} {}",
        plain.recovery.qp_errors,
        plain.recovery.reconnects
    );
    assert!(
        apm.recovery.qp_errors == 0 && apm.recovery.reconnects == 0 && apm.recovery.rc_recoveries > 0,
        "{} {}",
        apm.recovery.qp_errors,
        apm.recovery.rc_recoveries
    );
    assert!(plain.ledger_ok && apm.ledger_ok, "{:?} {:?}", plain.ledger_violation, apm.ledger_violation);
    // Time below half the rate before the cut: the retries' 0.54 s, not the wait for a path.
    let dip_s = |r: &PfsRecord| {
        r.series.bw_MBps.iter().filter(|&&b| b < 0.5 * r.phases[0].bw_MBps).count() as f64 * r.interval_s
    };
    assert!(dip_s(&apm) < dip_s(&plain) && dip_s(&apm) <= 1.0, "{} {}", dip_s(&apm), dip_s(&plain));
    assert!(apm.rpc_latency.max_us < plain.rpc_latency.max_us);
}

#[test]
fn apm_without_a_second_lid_is_refused() {
    let e = PfsScenario::from_json(r#"{"pfs": {"apm": true}}"#).unwrap().resolve().unwrap_err();
    assert!(e.to_string().contains("lmc 1..7"), "{e}");
}
