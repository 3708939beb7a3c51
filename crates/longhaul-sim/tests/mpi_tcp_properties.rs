//! MPI over TCP (`mpi.transport = "tcp"`: Open MPI's ob1 channel under the one PML): every
//! message delivered once and in order, bandwidth never above the link, the latency the stack
//! and library costs add, identical scenarios give identical records, and bad input is one line
//! naming the parameter.

use longhaul_sim::mpi::{run_mpi_json, validate_mpi_json, MpiRecord};
use proptest::prelude::*;

fn scenario(bench: &str, size: u64, delay_us: f64, rate_gbps: f64, eager: u64, loss: f64, cc: &str) -> String {
    format!(
        r#"{{"seed": 5, "path": {{"delay_us": {delay_us}, "rate_gbps": {rate_gbps}, "loss": {loss}}},
            "tcp": {{"cc": "{cc}"}}, "stack": {{"per_seg_us": 1.5, "per_byte_ns": 0.2}},
            "mpi": {{"transport": "tcp", "eager_limit_bytes": {eager}, "per_msg_us": 2}},
            "osu": {{"bench": "{bench}", "size_bytes": {size}, "iterations": 2, "warmup": 1, "window": 8}}}}"#
    )
}

fn run(json: &str) -> MpiRecord {
    run_mpi_json(json).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 20, rng_seed: proptest::test_runner::RngSeed::Fixed(20_261_122), ..ProptestConfig::default() })]
    #[test]
    fn every_message_once_in_order_and_never_faster_than_the_link(
        bench in prop::sample::select(vec!["bw", "bibw", "latency"]),
        size in prop::sample::select(vec![1u64, 1000, 65520, 65536, 300_000]),
        delay in prop::sample::select(vec![0.0, 500.0, 5000.0]),
        rate in prop::sample::select(vec![0.1, 1.0, 8.0]),
        eager in prop::sample::select(vec![4096u64, 65536, 1 << 20]),
        lossy in any::<bool>(),
        cc in prop::sample::select(vec!["cubic", "bbr", "reno"]),
    ) {
        let loss = if lossy { 0.002 } else { 0.0 };
        let r = run(&scenario(bench, size, delay, rate, eager, loss, cc));
        prop_assert_eq!(&r.status, "ok");
        prop_assert_eq!(r.order_violations, 0);
        prop_assert_eq!(r.delivered_messages, r.messages);
        if let Some(bw) = r.bw_MBps {
            // bibw counts both directions, each of which has the link's rate to itself.
            let dirs = if bench == "bibw" { 2.0 } else { 1.0 };
            prop_assert!(bw <= dirs * rate * 1e3 / 8.0, "{} MB/s on a {} Gb/s link", bw, rate);
        }
    }
}

fn bcast(per_cluster: u32, algo: &str, size: u64, root: u32, delay_us: f64, chunk: u64) -> String {
    format!(
        r#"{{"seed": 3, "path": {{"delay_us": {delay_us}, "rate_gbps": 8}}, "stack": {{"per_seg_us": 1.5, "per_byte_ns": 0.2}},
            "mpi": {{"transport": "tcp", "per_msg_us": 5, "algo": "{algo}", "wan_chunk_bytes": {chunk}}},
            "cluster": {{"nodes": {per_cluster}}},
            "osu": {{"bench": "bcast", "size_bytes": {size}, "root": {root}, "iterations": 2, "warmup": 1}}}}"#
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, rng_seed: proptest::test_runner::RngSeed::Fixed(20_261_122), ..ProptestConfig::default() })]
    #[test]
    fn every_bcast_message_arrives_once_in_order_for_both_algorithms(
        per_cluster in 1u32..6,
        hier in any::<bool>(),
        size in prop::sample::select(vec![0u64, 100, 5000, 40_000, 65_536, 300_000, 1 << 20]),
        root_pick in 0u32..100,
        delay in prop::sample::select(vec![0.0, 1000.0, 10_000.0]),
        chunk in prop::sample::select(vec![1000u64, 32_768, 1 << 20]),
    ) {
        let r = run(&bcast(per_cluster, if hier { "hierarchical" } else { "default" }, size, root_pick % (2 * per_cluster), delay, chunk));
        prop_assert_eq!(&r.status, "ok");
        prop_assert_eq!(r.order_violations, 0);
        prop_assert_eq!(r.delivered_messages, r.messages);
        prop_assert_eq!(r.ranks, 2 * per_cluster);
        // Every rank waits at least for the data when it is not the root: some rank's call
        // spans the one-way delay. A 0-byte bcast moves nothing (Open MPI returns at once).
        if size > 0 {
            prop_assert!(r.lat_max_us.unwrap() >= delay, "{:?} < {}", r.lat_max_us, delay);
        }
    }
}

#[test]
fn at_10_ms_the_hierarchical_bcast_of_1_mib_beats_open_mpis_basic_linear() {
    let lat = |algo: &str| run(&bcast(4, algo, 1 << 20, 0, 10_000.0, 32_768));
    let (flat, hier) = (lat("default"), lat("hierarchical"));
    assert_eq!(flat.algo, "linear");
    assert_eq!(hier.algo, "hierarchical");
    // Basic linear: four 1 MiB rendezvous sends across the WAN (RTS, ACK, rest: three one-way
    // trips); hierarchical: one message as eager pieces (one trip).
    assert!(flat.lat_us.unwrap() > 1.3 * hier.lat_us.unwrap(), "{:?} vs {:?}", flat.lat_us, hier.lat_us);
    assert_eq!(run(&bcast(4, "hierarchical", 1 << 20, 0, 10_000.0, 32_768)), hier);
}

#[test]
fn identical_scenarios_give_identical_records() {
    let s = scenario("bw", 300_000, 1000.0, 1.0, 65536, 0.001, "cubic");
    assert_eq!(run(&s), run(&s));
}

#[test]
fn small_message_latency_is_the_path_plus_the_stack_and_library_costs() {
    let lat = |stack: &str, per_msg: f64| {
        let s = format!(
            r#"{{"path": {{"delay_us": 100, "rate_gbps": 8}}, "stack": {stack},
                "mpi": {{"transport": "tcp", "per_msg_us": {per_msg}}},
                            "osu": {{"bench": "latency", "size_bytes": 8, "iterations": 5, "warmup": 1}}}}"#
        );
        run(&s).lat_us.unwrap()
    };
    let ideal = lat(r#""ideal""#, 0.0);
    assert!((100.0..110.0).contains(&ideal), "{ideal}");
    // One way: a message's library time at each end and a segment's stack time at each end.
    let costly = lat(r#"{"per_seg_us": 5, "per_byte_ns": 0}"#, 10.0);
    assert!((costly - ideal - 30.0).abs() < 0.5, "{costly} vs {ideal}");
}

#[test]
fn a_64_kib_message_pays_a_rendezvous_round_trip_that_a_larger_eager_limit_saves() {
    // Enough windows for the congestion window to open: then eager takes one round trip per
    // window and rendezvous two (RTS, ACK, then the rest).
    let steady = |eager: u64| {
        scenario("bw", 65536, 5000.0, 8.0, eager, 0.0, "cubic")
            .replace(r#""iterations": 2, "warmup": 1"#, r#""iterations": 10, "warmup": 10"#)
    };
    let bw = |eager: u64| run(&steady(eager)).bw_MBps.unwrap();
    let (rndv, eager) = (bw(65536), bw(1 << 20));
    assert!(eager > 1.3 * rndv, "eager {eager} vs rendezvous {rndv} MB/s");
}

/// Everything the verbs channel runs runs over TCP too: NAS skeletons, traces, every OSU
/// benchmark and `auto` (the hierarchical algorithm at distance), each message once and in order.
#[test]
fn apps_traces_and_every_benchmark_run_over_tcp() {
    let tcp = r#""mpi": {"transport": "tcp", "algo": "auto"}, "path": {"delay_us": 1000, "rate_gbps": 8}"#;
    let app =
        format!(r#"{{"app": {{"name": "cg", "class": "A", "iterations": 2}}, "cluster": {{"nodes": 2}}, {tcp}}}"#);
    let trace = format!(
        r#"{{"trace": {{"name": "t", "text": "ranks 4\n0 send 2 100000\n2 recv 0 100000\n* compute 100\n* allreduce 8\n* bcast 1 300000\n"}}, {tcp}}}"#
    );
    let mut runs = vec![run(&app), run(&trace)];
    for bench in ["mbw_mr", "scatter", "alltoall", "allreduce", "bcast"] {
        let osu = format!(
            r#"{{"osu": {{"bench": "{bench}", "size_bytes": 70000, "iterations": 2, "warmup": 1}}, "cluster": {{"nodes": 2}}, {tcp}}}"#
        );
        let r = run(&osu);
        if bench != "mbw_mr" {
            assert_eq!(r.algo, "hierarchical", "{bench}: auto at 1 ms one way");
        }
        runs.push(r);
    }
    for r in &runs {
        assert_eq!((r.status.as_str(), r.transport.as_str()), ("ok", "tcp"), "{r:?}");
        assert_eq!(r.order_violations, 0);
        assert_eq!(r.delivered_messages, r.messages);
        assert!(r.messages > 0, "{r:?}");
    }
    assert!(runs[1].rendezvous_messages > 0, "the trace's 100 kB send is a rendezvous");
    assert!(runs[0].run_time_s.unwrap() > 0.0 && runs[1].run_time_s.unwrap() > 0.002);
}

#[test]
fn bad_input_names_the_parameter_and_range() {
    let base = |patch: &str| {
        format!(r#"{{"osu": {{"bench": "bw", "size_bytes": 1000}}, "mpi": {{"transport": "tcp"{patch}}}}}"#)
    };
    let top = |patch: &str| {
        format!(r#"{{"osu": {{"bench": "bw", "size_bytes": 1000}}, "mpi": {{"transport": "tcp"}}, {patch}}}"#)
    };
    let cases = [
        (base(r#", "eager_limit_bytes": 10"#), "eager_limit_bytes: 10 is out of range [1024, 1073741824]"),
        (
            base(r#", "eager_limit_bytes": 4096, "rndv_eager_limit_bytes": 8192"#),
            "rndv_eager_limit_bytes: 8192 is out of range [32, 4096]",
        ),
        (top(r#""stack": {"per_seg_us": 1, "per_byte_ns": -2}"#), "stack.per_byte_ns: -2 is out of range"),
        (top(r#""path": {"rate_gbps": 0}"#), "rate_gbps: 0 is out of range"),
        (top(r#""path": {"wan_links": 2}"#), "scenario: path.wan_links: unknown field `wan_links`"),
        (top(r#""tcp": {"duration_s": 3}"#), "tcp.duration_s: not used by MPI over TCP"),
        (top(r#""testbed": "s1""#), "testbed: not used with transport tcp"),
        (base(r#", "eager_credits": 4"#), "mpi.eager_credits: not used with transport tcp"),
        (base(r#", "wan_chunk_bytes": 0"#), "wan_chunk_bytes: 0 is out of range [1, 1073741824]"),
        (
            top(r#""cluster": {"nodes": 2100}"#).replace(r#""bw""#, r#""bcast""#),
            "ranks: 4200 (2100 nodes x 1 per node in each of 2 clusters) is out of range [2, 4096]",
        ),
        (
            r#"{"osu": {"bench": "bw", "size_bytes": 8}, "mpi": {"per_msg_us": 3}}"#.to_string(),
            "mpi.per_msg_us: only with transport tcp",
        ),
        (
            r#"{"osu": {"bench": "bw", "size_bytes": 8}, "path": {"rate_gbps": 3}}"#.to_string(),
            "scenario: path.rate_gbps: unknown field `rate_gbps`",
        ),
        (
            r#"{"osu": {"bench": "bcast", "size_bytes": 8, "root": 4}, "cluster": {"nodes": 2}, "mpi": {"transport": "tcp"}}"#
                .to_string(),
            "root: 4 is not a rank (valid 0..3)",
        ),
    ];
    for (json, want) in cases {
        let e = validate_mpi_json(&json).unwrap_err().0;
        assert!(e.contains(want), "{json}: {e}");
        assert!(!e.contains('\n'), "{e}");
    }
}
