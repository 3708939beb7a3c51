//! The packet-level driver against its invariants and against the fluid driver.

use crate::pfs::record::PfsRecord;
use crate::pfs::PfsScenario;
use crate::scenario::{run_json, validate_json};

fn run(json: &str) -> PfsRecord {
    run_json::<PfsScenario>(json).unwrap_or_else(|e| panic!("{json}: {}", e.0))
}

fn scenario(network: &str, transport: &str, variant: &str, op: &str, links: u32, duration_s: f64) -> String {
    format!(
        r#"{{"path": {{"wan_links": {links}, "fibre_km": 10}},
            "pfs": {{"network": "{network}", "transport": "{transport}", "variant": "{variant}", "op": "{op}",
                     "duration_s": {duration_s}}}}}"#
    )
}

#[test]
fn every_acknowledged_block_is_on_a_server_once_and_no_link_exceeds_its_rate() {
    for transport in ["rc", "tcp"] {
        for (variant, op) in [("gpfs", "write"), ("gpfs", "read"), ("lustre", "write")] {
            let r = run(&scenario("packet", transport, variant, op, 2, 0.2));
            let what = format!("{transport} {variant} {op}");
            assert!(r.ledger_ok, "{what}: {:?}", r.ledger_violation);
            assert!(r.acked_blocks > 100, "{what}: {}", r.acked_blocks);
            // Stored and not acknowledged: only blocks still outstanding (their reply on its way).
            assert!(r.acked_blocks <= r.stored_blocks && r.stored_blocks - r.acked_blocks <= r.outstanding_blocks);
            // A packet started before an interval's end counts whole in it: one packet (at most
            // 4 KiB + headers, 2e-4 of what an SDR link sends in a 20 ms interval) of slack.
            for util in &r.series.link_util {
                assert!(util.iter().all(|&u| u <= 1.0 + 2.5e-4), "{what}: {util:?}");
            }
            // Every acknowledged block crossed a WAN link in the data's direction, headers on top.
            let wan_bytes: f64 = r.series.link_MBps.iter().flatten().sum::<f64>() * r.interval_s * 1e6;
            assert!(wan_bytes >= (r.acked_blocks * r.block_bytes) as f64, "{what}: {wan_bytes}");
            assert_eq!((r.network.as_str(), r.transport.as_str()), ("packet", transport));
        }
    }
}

/// A steady write and read bound by one SDR link: the packet level within 5% of the fluid
/// level. The fluid level gives the link its data rate less the MTU packets' IB headers; the
/// packet level also carries the NSD headers, RDMA Read requests and RC ACKs (or TCP's ACKs and
/// IPoIB's headers) on the same links, and its RPCs queue packet by packet.
#[test]
fn agrees_with_the_fluid_driver_on_a_link_bound_run() {
    for op in ["write", "read"] {
        let fluid = run(&scenario("fluid", "rc", "gpfs", op, 1, 0.4)).phases[0].bw_MBps;
        for transport in ["rc", "tcp"] {
            let packet = run(&scenario("packet", transport, "gpfs", op, 1, 0.4)).phases[0].bw_MBps;
            let off = (packet - fluid).abs() / fluid;
            assert!(off < 0.05, "{op} {transport}: packet {packet:.1} vs fluid {fluid:.1} MB/s");
        }
    }
}

#[test]
fn same_seed_same_record() {
    let json = scenario("packet", "rc", "gpfs", "write", 2, 0.05);
    assert_eq!(run(&json), run(&json));
}

#[test]
fn tcp_at_fluid_level_and_unknown_names_are_refused_in_one_line() {
    let cases = [
        (r#"{"pfs": {"transport": "tcp"}}"#, "transport: tcp runs at the packet level only"),
        (r#"{"pfs": {"network": "flow"}}"#, "network: unknown 'flow' (valid: fluid, packet)"),
        (r#"{"pfs": {"network": "packet", "transport": "ud"}}"#, "transport: unknown 'ud' (valid: rc, tcp)"),
    ];
    for (json, want) in cases {
        let e = validate_json::<PfsScenario>(json).err().unwrap_or_else(|| panic!("{json} accepted")).0;
        assert!(e.contains(want) && !e.contains('\n'), "{json}: {e}");
    }
}

/// A link unplugged under load: the fabric drops what was on it, the subnet manager's trap
/// reroutes (0.1 s) long before RC runs out of retries (8 timeouts of ConnectX-2's ACK timer, at
/// least ~500 ms each) and within TCP's retransmission timeouts, so the connections recover
/// packet by packet at their next retry, without a QP error; meanwhile the writers' page pools
/// fill behind the stalled connections (every file is striped over every server), so the
/// aggregate stalls until they do. The link carries nothing while down; nothing acknowledged is
/// lost.
#[test]
fn a_link_unplugged_under_load_loses_nothing_and_carries_nothing_while_down() {
    for transport in ["rc", "tcp"] {
        let json = format!(
            r#"{{"path": {{"wan_links": 2, "fibre_km": 10}},
                "pfs": {{"network": "packet", "transport": "{transport}", "duration_s": 1.2, "interval_s": 0.05}},
                "events": [{{"at_s": 0.2, "link": 0, "action": "down"}}]}}"#
        );
        let r = run(&json);
        assert!(r.ledger_ok, "{transport}: {:?}", r.ledger_violation);
        assert_eq!(r.recovery.qp_errors, 0, "{transport}: {}", r.status);
        let s = &r.series;
        let down: Vec<usize> = (0..s.t_s.len()).filter(|&i| s.t_s[i] > 0.2 + 0.05 + 1e-9).collect();
        assert!(down.iter().all(|&i| s.link_MBps[0][i] == 0.0 && s.links_up[i] == 1), "{transport}: {s:?}");
        // The file system goes on over the other link once its connections have recovered.
        let late: Vec<usize> = (0..s.t_s.len()).filter(|&i| s.t_s[i] > 0.8 + 1e-9).collect();
        assert!(late.iter().all(|&i| s.bw_MBps[i] > 0.0), "{transport}: {:?}", s.bw_MBps);
        assert!(r.rpc_latency.max_us > 1e5, "{transport}: {:?}", r.rpc_latency);
        assert!(r.phases[1].bw_MBps > 0.5 * r.phases[0].bw_MBps, "{transport}: {:?}", r.phases);
    }
}

/// Without traps the subnet manager reroutes only at its next sweep (10 s): the queue pairs on
/// the dead link run out of retries (ConnectX-2's ACK timer is at least ~500 ms whatever the
/// exponent, so 8 timeouts take about 4 s), fail, and their calls stay unanswered (reconnecting
/// is the fluid level's); the ledger still holds and the record says so.
#[test]
fn queue_pairs_out_of_retries_fail_without_losing_an_acknowledged_block() {
    let json = r#"{"path": {"wan_links": 2, "fibre_km": 10}, "subnet_manager": {"traps": false},
        "pfs": {"network": "packet", "duration_s": 5.0, "interval_s": 0.5},
        "events": [{"at_s": 0.1, "link": 0, "action": "down"}]}"#;
    let r = run(json);
    assert!(
        r.ledger_ok && r.recovery.qp_errors > 0 && r.status.contains("connections failed"),
        "{} {}",
        r.recovery.qp_errors,
        r.status
    );
    assert!(r.outstanding_blocks > 0 && r.acked_blocks > 0);
}
