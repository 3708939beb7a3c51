//! The packet-level driver against its invariants and against the fluid driver.

use crate::pfs::record::PfsRecord;
use crate::pfs::run_pfs_json;

fn run(json: &str) -> PfsRecord {
    run_pfs_json(json).unwrap_or_else(|e| panic!("{json}: {}", e.0))
}

fn scenario(network: &str, transport: &str, op: &str, links: u32, duration_s: f64) -> String {
    format!(
        r#"{{"path": {{"wan_links": {links}, "fibre_km": 10}},
            "pfs": {{"network": "{network}", "transport": "{transport}", "op": "{op}", "duration_s": {duration_s}}}}}"#
    )
}

#[test]
fn explore() {
    for (net, tr, op, links) in [
        ("fluid", "rc", "write", 4),
        ("packet", "rc", "write", 4),
        ("packet", "tcp", "write", 4),
        ("packet", "rc", "read", 4),
        ("fluid", "rc", "write", 1),
        ("packet", "rc", "write", 1),
    ] {
        let t = std::time::Instant::now();
        let r = run(&scenario(net, tr, op, links, 0.5));
        eprintln!(
            "{net} {tr} {op} {links}: bw {:.1} steady {:.1} links {:?} lat {:?} acked {} ok {:?} ev {} wall {:?}",
            r.bw_MBps,
            r.phases[0].bw_MBps,
            r.series.link_util.iter().map(|u| u.last().copied().unwrap_or(0.0)).collect::<Vec<_>>(),
            r.rpc_latency,
            r.acked_blocks,
            r.ledger_violation,
            r.sim_events,
            t.elapsed()
        );
    }
}

#[test]
fn explore2() {
    for workers in [32u32, 1000] {
        for (net, tr, op, links) in [
            ("packet", "rc", "write", 4),
            ("fluid", "rc", "write", 4),
            ("packet", "tcp", "write", 1),
            ("packet", "rc", "read", 1),
            ("fluid", "rc", "read", 1),
        ] {
            let mut r = crate::pfs::validate_pfs_json(&scenario(net, tr, op, links, 0.5)).unwrap();
            r.params.server.nsd_workers = workers;
            let rec = if net == "fluid" { crate::pfs::fluid::run(&r) } else { super::run(&r) };
            eprintln!(
                "w{workers} {net} {tr} {op} {links}: bw {:.1} steady {:.1} links {:?}",
                rec.bw_MBps,
                rec.phases[0].bw_MBps,
                rec.series.link_util.iter().map(|u| u.last().copied().unwrap_or(0.0)).collect::<Vec<_>>()
            );
        }
    }
}
