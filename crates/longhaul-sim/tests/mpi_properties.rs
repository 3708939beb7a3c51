//! MPI engine properties: every message delivered exactly once and in order per pair, under any
//! protocol, transport and loss; identical scenarios give identical records.

use longhaul_sim::mpi::{run_mpi_json, MpiRecord};
use proptest::prelude::*;

/// One OSU run; fields left out take `Case::default()`'s values.
#[derive(Clone, Copy)]
struct Case {
    bench: &'static str,
    size: u64,
    transport: &'static str,
    rndv: &'static str,
    /// Eager/rendezvous threshold (bytes).
    thr: u64,
    loss: f64,
    delay_us: f64,
    nodes: u32,
    ppn: u32,
    /// The UD/UC library's retransmission timeout.
    retry_us: f64,
}

impl Default for Case {
    fn default() -> Self {
        Case {
            bench: "bw",
            size: 8192,
            transport: "rc",
            rndv: "rput",
            thr: 8192,
            loss: 0.0,
            delay_us: 0.0,
            nodes: 1,
            ppn: 1,
            retry_us: 500_000.0,
        }
    }
}

impl Case {
    fn json(&self) -> String {
        let Case { bench, size, transport, rndv, thr, loss, delay_us, nodes, ppn, retry_us } = *self;
        format!(
            r#"{{"seed": 3, "path": {{"delay_us": {delay_us}, "loss": {loss}}}, "cluster": {{"nodes": {nodes}, "ppn": {ppn}}},
            "mpi": {{"transport": "{transport}", "rndv_protocol": "{rndv}", "eager_threshold_bytes": {thr},
                     "ud_retry_timeout_us": {retry_us}}},
            "osu": {{"bench": "{bench}", "size_bytes": {size}, "iterations": 3, "warmup": 1}}}}"#
        )
    }

    fn run(&self) -> MpiRecord {
        run_mpi_json(&self.json()).unwrap()
    }
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
        let r = Case { bench, size, transport, rndv, thr, loss, delay_us: 10.0, nodes: 2, ppn, retry_us: 200.0 }.run();
        prop_assert_eq!(&r.status, "ok");
        prop_assert_eq!(r.order_violations, 0);
        prop_assert_eq!(r.delivered_messages, r.messages);
    }
}

#[test]
fn identical_scenarios_give_identical_records() {
    let s = Case { bench: "bcast", size: 65536, loss: 0.001, delay_us: 100.0, nodes: 4, ppn: 2, ..Case::default() };
    assert_eq!(s.run(), s.run());
}

#[test]
fn rendezvous_round_trips_cost_medium_messages_at_distance() {
    let bw = |thr: u64, delay: f64| Case { thr, delay_us: delay, ..Case::default() }.run().bw_MBps.unwrap();
    assert!(bw(65536, 1000.0) > bw(8192, 1000.0));
    assert!(bw(8192, 0.0) > 5.0 * bw(8192, 1000.0));
}

#[test]
fn rdma_reads_both_ways_on_one_connection_need_no_retransmission() {
    // RGET in osu_bibw: each side's QP both reads and serves reads, with sends in between;
    // the responder must answer in PSN order (no ACK coalesced past a read) for this to flow.
    for delay in [0.0, 1000.0] {
        let r = Case { bench: "bibw", size: 65536, rndv: "rget", delay_us: delay, ..Case::default() }.run();
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
        let case = Case { size, transport, delay_us: 100.0, retry_us: 20_000.0, ..Case::default() };
        let lossy = Case { loss: 0.01, ..case }.run();
        assert_eq!(lossy.status, "ok", "{transport} {size}");
        assert!(lossy.resent_frames > 0, "{transport} {size}: nothing resent at 1% loss");
        assert_eq!(lossy.delivered_messages, lossy.messages);
        assert_eq!(lossy.order_violations, 0);
        let clean = case.run();
        assert_eq!(clean.resent_frames, 0, "{transport} {size}: resent without loss");
        assert!(clean.bw_MBps > lossy.bw_MBps);
    }
}

#[test]
fn the_ud_retry_timeout_is_what_a_lost_frame_costs() {
    // MVAPICH2's 0.5 s default is tuned for a LAN; a few round trips recovers most of the rate.
    let bw = |retry_us: f64| {
        let case = Case { size: 65536, transport: "ud", loss: 0.001, delay_us: 100.0, retry_us, ..Case::default() };
        case.run().bw_MBps.unwrap()
    };
    let (lan_default, tuned) = (bw(500_000.0), bw(2000.0));
    assert!(tuned > 10.0 * lan_default, "tuned {tuned} vs default {lan_default} MB/s");
}

#[test]
fn a_retry_timeout_below_the_round_trip_resends_needlessly_but_delivers_once() {
    // 1 ms each way, frames resent after 0.5 ms: every copy arrives, the receiver drops the
    // duplicates.
    let r = Case { size: 4096, transport: "ud", delay_us: 1000.0, retry_us: 500.0, ..Case::default() }.run();
    assert_eq!(r.status, "ok");
    assert!(r.resent_frames > 0);
    assert_eq!(r.delivered_messages, r.messages);
    assert_eq!(r.order_violations, 0);
}

#[test]
fn the_library_gives_up_on_a_frame_the_wan_never_delivers() {
    // UC loses a whole message with any of its packets: 1 MiB in 1 KiB packets at 50% loss never
    // gets through, and after ud_max_retries resends the run ends as MVAPICH2 aborts the job.
    let case = Case {
        bench: "latency",
        size: 1 << 20,
        transport: "uc",
        loss: 0.5,
        delay_us: 10.0,
        retry_us: 100.0,
        ..Case::default()
    };
    let r = case.run();
    assert!(r.status.starts_with("ud reliability error"), "{}", r.status);
}
