//! The flow-level MPI network (`mpi.network = "fluid"`) against the packet level on the S1
//! points' scenarios (python/longhaul/validation/mpi.py builds the same ones): every measured
//! quantity within 5%, the criterion of issue 27 (fewer iterations than the study runs: the
//! comparison is of the two levels, and the suite must stay fast). And the flow level's own
//! invariants.

use longhaul_sim::mpi::{run_mpi_json, MpiRecord};

fn run(json: &str, network: &str) -> MpiRecord {
    let mut v: serde_json::Value = serde_json::from_str(json).unwrap();
    v["mpi"]["network"] = network.into();
    let r = run_mpi_json(&v.to_string()).unwrap_or_else(|e| panic!("{json}: {}", e.0));
    assert_eq!(r.status, "ok", "{json} over {network}");
    assert_eq!(r.network, network);
    r
}

/// An OSU scenario: `extra_mpi` and `cluster` are the inside of their tables; iterations
/// timed (None: OSU's default).
fn osu(bench: &str, size: u64, delay_us: f64, extra_mpi: &str, cluster: &str, iterations: Option<u64>) -> String {
    let iterations = iterations.map_or(String::new(), |n| format!(r#", "iterations": {n}"#));
    format!(
        r#"{{"path": {{"delay_us": {delay_us}}}, "cluster": {{{cluster}}}, "mpi": {{{extra_mpi}}},
            "osu": {{"bench": "{bench}", "size_bytes": {size}{iterations}}}}}"#
    )
}

/// What a record's measured quantity is read by.
type Measure = fn(&MpiRecord) -> f64;

/// (what, scenario, the quantity it measures)
fn s1_cases() -> Vec<(String, String, Measure)> {
    let bw: Measure = |r| r.bw_MBps.unwrap();
    let rate: Measure = |r| r.msg_rate_Mps.unwrap();
    let lat: Measure = |r| r.lat_us.unwrap();
    let run_time: Measure = |r| r.run_time_s.unwrap();
    let mut cases = Vec::new();
    for size in [1u64 << 20, 4 << 20] {
        cases.push((format!("S1-mpi-bw-peak osu_bw {size} B"), osu("bw", size, 0.0, "", "", None), bw));
    }
    for thr in [8192, 65536] {
        let mpi = format!(r#""eager_threshold_bytes": {thr}"#);
        cases.push((
            format!("S1-mpi-rndv-threshold-tuning threshold {thr}"),
            osu("bw", 8192, 1000.0, &mpi, "", None),
            bw,
        ));
    }
    for pairs in [1, 4] {
        let json = format!(
            r#"{{"path": {{"delay_us": 1000}}, "osu": {{"bench": "mbw_mr", "size_bytes": 8, "pairs": {pairs}}}}}"#
        );
        cases.push((format!("S1-mpi-multipair {pairs} pairs"), json, rate));
    }
    for delay in [10.0, 100.0, 1000.0] {
        for algo in ["default", "hierarchical"] {
            let mpi = format!(r#""algo": "{algo}""#);
            let cluster = r#""nodes": 32, "ppn": 2, "placement": "block""#;
            cases.push((
                format!("S1-mpi-bcast-hierarchical {algo} at {delay} us"),
                osu("bcast", 131072, delay, &mpi, cluster, Some(4)),
                lat,
            ));
        }
    }
    for app in ["is", "ft", "cg"] {
        for delay in [0.0, 1000.0] {
            let json = format!(
                r#"{{"path": {{"delay_us": {delay}}}, "cluster": {{"nodes": 16, "ppn": 2}}, "mpi": {{}},
                    "app": {{"name": "{app}", "class": "B", "iterations": 3}}}}"#
            );
            cases.push((format!("S1-nas-tolerance {app} at {delay} us"), json, run_time));
        }
    }
    cases
}

/// The scenarios the flow level does not bring within 5% (docs/models/mpi.md, "Flow-level
/// mode", has the analysis), each held to the difference it has plus the 2-3 points by which the
/// order of events at one instant moves a collective at flow level (rounding alone did, "Ties"
/// in the same page): a change that widens one by more fails. The rendezvous case is one flow at
/// a time and does not move.
const KNOWN_GAPS: [(&str, f64); 4] = [
    ("S1-mpi-rndv-threshold-tuning threshold 8192", 0.24),
    ("S1-mpi-bcast-hierarchical default at 10 us", 0.12),
    ("S1-mpi-bcast-hierarchical hierarchical at 10 us", 0.14),
    ("S1-mpi-bcast-hierarchical hierarchical at 100 us", 0.10),
];

/// Issue 27's criterion: the flow level within 5% of the packet level on every S1 scenario
/// (less the known gaps above).
#[test]
fn fluid_agrees_with_packet_level_on_the_s1_points() {
    let mut failed = Vec::new();
    for (what, json, measure) in s1_cases() {
        let (p, f) = (measure(&run(&json, "packet")), measure(&run(&json, "fluid")));
        let err = f / p - 1.0;
        println!("{what}: packet {p:.4}, fluid {f:.4}, {:+.1}%", 100.0 * err);
        let bound = KNOWN_GAPS.iter().find(|(w, _)| *w == what).map_or(0.05, |&(_, b)| b);
        if err.abs() > bound {
            failed.push(format!("{what}: packet {p:.4} fluid {f:.4} ({:+.1}%, bound {bound})", 100.0 * err));
        }
    }
    assert!(failed.is_empty(), "beyond the bound: {failed:#?}");
}

/// Both directions at once, medium messages (each a rendezvous whose RTS, CTS and ACKs share
/// the hosts' engines with the other direction's data): within 5% of the packet level. While a
/// flow's far end took the far host's send engine for its ACK as soon as the flow ended, up to
/// the path's latency ahead of the events handled, the host's own work posted in between waited
/// behind it and 8 KiB went at 250 MB/s against 902 (-72%).
#[test]
fn fluid_agrees_with_packet_level_both_ways() {
    for size in [4096u64, 8192, 65536] {
        let json = osu("bibw", size, 100.0, "", "", Some(20));
        let (p, f) = (run(&json, "packet").bw_MBps.unwrap(), run(&json, "fluid").bw_MBps.unwrap());
        assert!((f / p - 1.0).abs() <= 0.05, "osu_bibw {size} B at 100 us: packet {p:.1} fluid {f:.1} MB/s");
    }
}

mod invariants {
    use super::*;
    use proptest::prelude::*;

    fn fluid(bench: &str, size: u64, delay_us: f64, window: u32, nodes: u32) -> MpiRecord {
        let json = format!(
            r#"{{"path": {{"delay_us": {delay_us}}}, "cluster": {{"nodes": {nodes}}}, "mpi": {{"network": "fluid"}},
                "osu": {{"bench": "{bench}", "size_bytes": {size}, "window": {window}, "iterations": 4, "warmup": 1}}}}"#
        );
        run_mpi_json(&json).unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

        /// Never above the bottleneck: s1's 4x SDR long-haul link carries 8 Gb/s of data, 1000
        /// MB/s before headers; every message is delivered once, in order; the same scenario
        /// gives the same record.
        #[test]
        fn never_above_line_rate_every_message_once_and_repeatable(
            size in 1u64..(4 << 20), delay_us in 0.0f64..2000.0, window in 1u32..128,
        ) {
            let r = fluid("bw", size, delay_us, window, 1);
            prop_assert_eq!(&r.status, "ok");
            prop_assert!(r.bw_MBps.unwrap() <= 1000.0, "{} MB/s", r.bw_MBps.unwrap());
            prop_assert_eq!(r.delivered_messages, r.messages);
            prop_assert_eq!(r.order_violations, 0);
            prop_assert_eq!(r, fluid("bw", size, delay_us, window, 1));
        }

        /// Never above the bottleneck with many pairs either, whether their messages are one
        /// packet each (which take each port in turn) or flows, or both (eager messages
        /// coalesced into one send): osu_mbw_mr from `pairs` pairs across s1's long-haul link
        /// (while one-packet messages took no port, 196 pairs of 897-byte ones gave 9,900 MB/s).
        #[test]
        fn many_pairs_never_above_line_rate(
            size in 1u64..4096, pairs in 1u32..=256, delay_us in 0.0f64..200.0, window in 1u32..=64,
        ) {
            let json = format!(
                r#"{{"path": {{"delay_us": {delay_us}}}, "cluster": {{"nodes": {pairs}}}, "mpi": {{"network": "fluid"}},
                    "osu": {{"bench": "mbw_mr", "size_bytes": {size}, "pairs": {pairs}, "window": {window},
                    "iterations": 2, "warmup": 1}}}}"#
            );
            let r = run_mpi_json(&json).unwrap();
            prop_assert_eq!(&r.status, "ok");
            prop_assert!(r.bw_MBps.unwrap() <= 1000.0, "{} MB/s", r.bw_MBps.unwrap());
            prop_assert_eq!(r.delivered_messages, r.messages);
        }

        /// Farther is never faster: latency grows and bandwidth falls with the distance, and an
        /// all-to-all among 8 ranks takes no less time. Known gap: the flow level's bandwidth
        /// rises by up to ~1% where a message's time on the link passes the one-way delay
        /// (`sim mpi osu --bench bw --window 64 --iterations 4 --network fluid`, one-way delay 0 to
        /// 5,000 us by 50: 1,048,575 B 919.9 MB/s at 1,000 us, 929.6 at 1,050 us; 881,895 B +0.97%
        /// from 850 to 900 us; the packet level falls; docs/models/mpi.md, "Flow-level mode"),
        /// hence 1.5%.
        #[test]
        fn time_is_monotone_in_distance(size in 1u64..(1 << 20), d1 in 0.0f64..5000.0, extra in 0.0f64..5000.0) {
            let d2 = d1 + extra;
            let (a, b) = (fluid("latency", size, d1, 64, 1), fluid("latency", size, d2, 64, 1));
            prop_assert!(b.lat_us.unwrap() >= a.lat_us.unwrap() - 1e-9, "{} -> {}", a.lat_us.unwrap(), b.lat_us.unwrap());
            let (a, b) = (fluid("bw", size, d1, 64, 1), fluid("bw", size, d2, 64, 1));
            let (x, y) = (a.bw_MBps.unwrap(), b.bw_MBps.unwrap());
            prop_assert!(y <= x * 1.015, "{} MB/s at {} us, {} MB/s at {} us", x, d1, y, d2);
            // The 8-rank alltoall of large messages is a known gap that is not monotone below
            // ~600 us (the next test; drops of up to 8.3% seen over 0 to 1,000 us by 10 us,
            // docs/models/mpi.md), hence 12% there and 5% beyond.
            let (a, b) = (fluid("alltoall", size, d1, 64, 4), fluid("alltoall", size, d2, 64, 4));
            let (x, y) = (a.lat_us.unwrap(), b.lat_us.unwrap());
            let floor = if d1 < 600.0 { 0.88 } else { 0.95 };
            prop_assert!(y >= x * floor, "{} us at {} us, {} us at {} us", x, d1, y, d2);
        }
    }

    /// Known gap, held to the difference it has (docs/models/mpi.md, "Flow-level mode"): an
    /// alltoall of 881,895 B among 8 ranks takes 7-21% longer at flow level than at the packet
    /// level up to 500 us one way (+15.4% at 400 us) and agrees within 1% from 550 us, so its
    /// time drops by ~6% from 500 to 550 us. The same before the listed solve; not traced.
    #[test]
    fn known_gap_large_alltoall_among_few_ranks_at_short_delay() {
        let gap = |delay_us: f64| {
            let json = osu("alltoall", 881_895, delay_us, "", r#""nodes": 4"#, Some(4));
            let (p, f) = (run(&json, "packet").lat_us.unwrap(), run(&json, "fluid").lat_us.unwrap());
            f / p - 1.0
        };
        let (near, far) = (gap(400.0), gap(600.0));
        assert!((0.10..0.20).contains(&near), "at 400 us: {:+.1}%", 100.0 * near);
        assert!(far.abs() < 0.02, "at 600 us: {:+.1}%", 100.0 * far);
    }

    /// The flow level runs verbs RC only: anything else is refused with one line naming the
    /// valid combinations.
    #[test]
    fn other_transports_and_unknown_networks_are_refused() {
        for (transport, network) in [("ud", "fluid"), ("uc", "fluid"), ("tcp", "fluid"), ("rc", "bogus")] {
            let json = format!(
                r#"{{"mpi": {{"transport": "{transport}", "network": "{network}"}}, "osu": {{"bench": "latency", "size_bytes": 8}}}}"#
            );
            let e = run_mpi_json(&json).unwrap_err().0;
            assert!(e.starts_with("network: ") && !e.contains('\n'), "{e}");
            assert!(e.contains("valid"), "{e}");
        }
    }
}
