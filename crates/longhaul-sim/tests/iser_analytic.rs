//! iSER over a long round trip against the window that limits it. A WRITE's data crosses only
//! as RDMA Reads the target issues: at most max_rd_atomic (4 on the S1 InfiniHost III) of
//! MaxBurstLength (256 KiB) each per round trip. A READ's data is pushed by the target: the
//! queue depth's commands (32 x 512 KiB) per round trip, or the link if that is less.

use longhaul_sim::iser::{run_iser_json, IserParams};

fn bw(op: &str, delay_us: f64, extra: &str) -> f64 {
    let json = format!(
        r#"{{"op": "{op}", "path": {{"delay_us": {delay_us}}}, "iser": {{"total_bytes": 268435456, "block_bytes": 524288{extra}}}}}"#
    );
    let r = run_iser_json(&json).unwrap();
    assert_eq!((r.run.status.as_str(), r.data_bytes), ("ok", 268435456));
    r.bw_MBps
}

fn near(model: f64, expect: f64, what: &str) {
    let err = (model - expect) / expect;
    assert!(err.abs() < 0.12, "{what}: model {model:.1} MB/s, bound {expect:.1} ({:+.1}%)", 100.0 * err);
}

#[test]
fn a_distant_write_moves_the_rdma_read_depth_of_bursts_per_round_trip() {
    let p = IserParams::defaults();
    for delay_us in [2000.0, 5000.0] {
        let rtt_us = 2.0 * delay_us;
        near(bw("write", delay_us, ""), 4.0 * p.max_burst_bytes as f64 / rtt_us, &format!("write at {delay_us} us"));
    }
}

#[test]
fn a_distant_read_moves_the_queue_depth_of_commands_per_round_trip() {
    let p = IserParams::defaults();
    let delay_us = 10_000.0;
    let window = p.queue_depth as f64 * p.max_command_bytes as f64;
    // Each command also spends its own transfer time on the 1000 MB/s link in its round trip.
    let cycle_us = 2.0 * delay_us + p.max_command_bytes as f64 / 1000.0;
    near(bw("read", delay_us, ""), window / cycle_us, "read at 10 ms");
    // Half the queue, half the rate.
    near(bw("read", delay_us, r#", "queue_depth": 16"#), window / 2.0 / cycle_us, "read at 10 ms, depth 16");
}
