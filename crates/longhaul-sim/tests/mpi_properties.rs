//! MPI engine properties: every message delivered exactly once and in order per pair, under any
//! protocol, transport and loss; identical scenarios give identical records.

use longhaul_sim::mpi::run_mpi_json;
use proptest::prelude::*;

fn scenario(bench: &str, size: u64, transport: &str, rndv: &str, thr: u64, loss: f64, delay: f64, nodes: u32, ppn: u32) -> String {
    format!(
        r#"{{"seed": 3, "path": {{"delay_us": {delay}, "loss": {loss}}}, "cluster": {{"nodes": {nodes}, "ppn": {ppn}}},
            "mpi": {{"transport": "{transport}", "rndv_protocol": "{rndv}", "eager_threshold_bytes": {thr}}},
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
        let loss = if lossy && transport == "rc" { 0.01 } else { 0.0 };
        let r = run_mpi_json(&scenario(bench, size, transport, rndv, thr, loss, 10.0, 2, ppn)).unwrap();
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
    let bw = |thr: u64, delay: f64| run_mpi_json(&scenario("bw", 8192, "rc", "rput", thr, 0.0, delay, 1, 1)).unwrap().bw_MBps.unwrap();
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
