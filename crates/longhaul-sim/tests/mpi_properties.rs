//! MPI engine properties: every message delivered exactly once and in order per pair, under any
//! protocol, transport and loss; identical scenarios give identical records.

use longhaul_sim::mpi::run_mpi_json;
use proptest::prelude::*;

fn scenario(
    bench: &str,
    size: u64,
    transport: &str,
    rndv: &str,
    thr: u64,
    loss: f64,
    delay: f64,
    nodes: u32,
    ppn: u32,
) -> String {
    with_retry(bench, size, transport, rndv, thr, loss, delay, nodes, ppn, 500_000.0)
}

/// `retry_us`: the UD/UC library's retransmission timeout.
fn with_retry(
    bench: &str,
    size: u64,
    transport: &str,
    rndv: &str,
    thr: u64,
    loss: f64,
    delay: f64,
    nodes: u32,
    ppn: u32,
    retry_us: f64,
) -> String {
    format!(
        r#"{{"seed": 3, "path": {{"delay_us": {delay}, "loss": {loss}}}, "cluster": {{"nodes": {nodes}, "ppn": {ppn}}},
            "mpi": {{"transport": "{transport}", "rndv_protocol": "{rndv}", "eager_threshold_bytes": {thr},
                     "ud_retry_timeout_us": {retry_us}}},
            "osu": {{"bench": "{bench}", "size_bytes": {size}, "iterations": 3, "warmup": 1}}}}"#
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, rng_seed: proptest::test_runner::RngSeed::Fixed(20_261_122), ..ProptestConfig::default() })]
    #[test]
    fn every_message_once_and_in_order(
        bench in prop::sample::select(vec!["bw", "bibw", "latency", "alltoall", "bcast", "allreduce", "scatter"]),
        size in prop::sample::select(vec![1u64, 100, 8192, 70000, 300000]),
        transport in prop::sample::select(vec!["rc", "ud", "uc"]),
        rndv in prop::sample::select(vec!["rput", "rget", "r3"]),
        thr in prop::sample::select(vec![0u64, 8192, 65536]),
        lossy in any::<bool>(),
        ppn in 1u32..3,
    ) {
        let loss = if lossy { 0.01 } else { 0.0 };
        let r = run_mpi_json(&with_retry(bench, size, transport, rndv, thr, loss, 10.0, 2, ppn, 200.0)).unwrap();
        prop_assert_eq!(&r.status, "ok");
        prop_assert_eq!(r.order_violations, 0);
        prop_assert_eq!(r.delivered_messages, r.messages);
    }
}

#[test]
fn identical_scenarios_give_identical_records() {
    let s = scenario("bcast", 65536, "rc", "rput", 8192, 0.001, 100.0, 4, 2);
    assert_eq!(run_mpi_json(&s).unwrap(), run_mpi_json(&s).unwrap());
}

#[test]
fn rendezvous_round_trips_cost_medium_messages_at_distance() {
    let bw = |thr: u64, delay: f64| {
        run_mpi_json(&scenario("bw", 8192, "rc", "rput", thr, 0.0, delay, 1, 1)).unwrap().bw_MBps.unwrap()
    };
    assert!(bw(65536, 1000.0) > bw(8192, 1000.0));
    assert!(bw(8192, 0.0) > 5.0 * bw(8192, 1000.0));
}

#[test]
fn rdma_reads_both_ways_on_one_connection_need_no_retransmission() {
    // RGET in osu_bibw: each side's QP both reads and serves reads, with sends in between;
    // the responder must answer in PSN order (no ACK coalesced past a read) for this to flow.
    for delay in [0.0, 1000.0] {
        let r = run_mpi_json(&scenario("bibw", 65536, "rc", "rget", 8192, 0.0, delay, 1, 1)).unwrap();
        assert_eq!(r.status, "ok");
        assert_eq!(r.retransmitted_packets, 0, "delay {delay} us");
        assert_eq!(r.delivered_messages, r.messages);
    }
}

#[test]
fn ud_and_uc_resend_what_the_wan_loses() {
    for (transport, size) in [("ud", 65536), ("uc", 65536), ("ud", 100), ("uc", 300000)] {
        // A retry timeout well above the round trip plus the receiver's copying backlog, so
        // that only lost frames are resent.
        let lossy =
            run_mpi_json(&with_retry("bw", size, transport, "rput", 8192, 0.01, 100.0, 1, 1, 20_000.0)).unwrap();
        assert_eq!(lossy.status, "ok", "{transport} {size}");
        assert!(lossy.resent_frames > 0, "{transport} {size}: nothing resent at 1% loss");
        assert_eq!(lossy.delivered_messages, lossy.messages);
        assert_eq!(lossy.order_violations, 0);
        let clean = run_mpi_json(&with_retry("bw", size, transport, "rput", 8192, 0.0, 100.0, 1, 1, 20_000.0)).unwrap();
        assert_eq!(clean.resent_frames, 0, "{transport} {size}: resent without loss");
        assert!(clean.bw_MBps > lossy.bw_MBps);
    }
}

#[test]
fn the_ud_retry_timeout_is_what_a_lost_frame_costs() {
    // MVAPICH2's 0.5 s default is tuned for a LAN; a few round trips recovers most of the rate.
    let bw = |retry_us: f64| {
        run_mpi_json(&with_retry("bw", 65536, "ud", "rput", 8192, 0.001, 100.0, 1, 1, retry_us))
            .unwrap()
            .bw_MBps
            .unwrap()
    };
    let (lan_default, tuned) = (bw(500_000.0), bw(2000.0));
    assert!(tuned > 10.0 * lan_default, "tuned {tuned} vs default {lan_default} MB/s");
}

#[test]
fn a_retry_timeout_below_the_round_trip_resends_needlessly_but_delivers_once() {
    // 1 ms each way, frames resent after 0.5 ms: every copy arrives, the receiver drops the
    // duplicates.
    let r = run_mpi_json(&with_retry("bw", 4096, "ud", "rput", 8192, 0.0, 1000.0, 1, 1, 500.0)).unwrap();
    assert_eq!(r.status, "ok");
    assert!(r.resent_frames > 0);
    assert_eq!(r.delivered_messages, r.messages);
    assert_eq!(r.order_violations, 0);
}

#[test]
fn the_library_gives_up_on_a_frame_the_wan_never_delivers() {
    // UC loses a whole message with any of its packets: 1 MiB in 1 KiB packets at 50% loss never
    // gets through, and after ud_max_retries resends the run ends as MVAPICH2 aborts the job.
    let r = run_mpi_json(&with_retry("latency", 1 << 20, "uc", "rput", 8192, 0.5, 10.0, 1, 1, 100.0)).unwrap();
    assert!(r.status.starts_with("ud reliability error"), "{}", r.status);
}
