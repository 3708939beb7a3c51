//! Properties of the TCP model: the receiver delivers every segment exactly once and in order
//! whatever the arrival order; no configuration moves data faster than the bottleneck; the same
//! scenario and seed give bit-identical records; every variant recovers from loss.

use longhaul_sim::run_tcp_json;
use longhaul_sim::tcp::receiver::Receiver;
use longhaul_sim::tcp::WindowSpec;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, rng_seed: proptest::test_runner::RngSeed::Fixed(20_261_122), ..ProptestConfig::default() })]

    /// Arrivals in any order with duplicates: rcv_nxt is the length of the delivered prefix and
    /// every repeat is counted as a duplicate, never delivered twice.
    #[test]
    fn receiver_delivers_each_segment_once_in_order(arrivals in proptest::collection::vec(0u64..64, 1..400)) {
        let mut r = Receiver::new(1000, WindowSpec::Fixed { bytes: 1 << 20 }, 2, 40_000_000_000);
        let mut seen = std::collections::BTreeSet::new();
        let mut dups = 0;
        for (i, &s) in arrivals.iter().enumerate() {
            if !seen.insert(s) {
                dups += 1;
            }
            r.on_data(i as u64, s, 1);
            let ack = r.make_ack();
            // Cumulative ACK = first segment not yet received; SACK blocks lie above it.
            let prefix = (0..).find(|k| !seen.contains(k)).unwrap();
            prop_assert_eq!(ack.ack, prefix);
            for b in &ack.sack[..ack.n_sack] {
                prop_assert!(b.0 > ack.ack && b.0 < b.1);
                prop_assert!((b.0..b.1).all(|k| seen.contains(&k)));
            }
        }
        prop_assert_eq!(r.duplicates, dups);
    }
}

#[test]
fn no_throughput_above_the_bottleneck() {
    for (link, extra) in [
        ("10gige-lan", r#""streams": 4"#),
        ("10gige-wan", r#""streams": 2, "cc": "bbr""#),
        ("oc192", r#""streams": 8, "cc": "scalable""#),
        ("ipoib-cm", r#""streams": 2"#),
        ("ipoib-ud", r#""streams": 4"#),
    ] {
        let rec = run_tcp_json(&format!(r#"{{"link": "{link}", "stack": "ideal", "path": {{"delay_us": 100}}, "tcp": {{{extra}, "duration_s": 0.3}}}}"#)).unwrap();
        let line_mbps = rec.wan_gbps * 1e3 / 8.0;
        assert!(rec.bw_MBps <= line_mbps, "{link}: {} > {line_mbps}", rec.bw_MBps);
        assert!(rec.bw_MBps > 0.5 * line_mbps, "{link}: only {} of {line_mbps} MB/s", rec.bw_MBps);
    }
}

/// The S1 host stack receives 4 us + 1.0 ns per byte per segment on one core: no run, however
/// large its window, gets more than that core processes, in any interval. (Counting bytes as they
/// arrived counted the core's backlog too: 986 MB/s in the first second of a 64 MiB window over
/// IPoIB-CM, where the core does 942.)
#[test]
fn no_throughput_above_the_receiving_core() {
    for (link, window, streams) in [("ipoib-cm", 64u64 << 20, 1), ("ipoib-cm", 16 << 20, 4), ("ipoib-ud", 4 << 20, 1)] {
        let rec = run_tcp_json(&format!(
            r#"{{"link": "{link}", "stack": "s1", "path": {{"delay_us": 0}}, "tcp": {{"streams": {streams}, "window_bytes": {window}, "duration_s": 0.5, "interval_s": 0.1}}}}"#
        ))
        .unwrap();
        let core_mbps = rec.mss_bytes as f64 / (4.0e-6 + rec.mss_bytes as f64 * 1.0e-9) / 1e6;
        // Whole segments are read: one more in an interval than its exact share is 0.07% here.
        let one_segment_per_interval = rec.mss_bytes as f64 / 0.1 / 1e6;
        for bw in rec.series_bw_MBps.iter().chain([&rec.bw_MBps]) {
            assert!(
                *bw <= core_mbps + one_segment_per_interval,
                "{link} x{streams}: {bw} > {core_mbps} ({:?})",
                rec.series_bw_MBps
            );
        }
        assert!(rec.bw_MBps > 0.95 * core_mbps, "{link}: only {} of {core_mbps}", rec.bw_MBps);
    }
}

#[test]
fn same_seed_same_record_and_seed_matters_under_loss() {
    let sc = |seed: u64| {
        format!(
            r#"{{"seed": {seed}, "link": "10gige-lan", "path": {{"delay_us": 500, "loss": 0.001}}, "tcp": {{"streams": 3, "duration_s": 0.5, "cwnd_trace": true}}, "cross": {{"gbps": 2, "on_ms": 5, "off_ms": 5}}}}"#
        )
    };
    let a = run_tcp_json(&sc(1)).unwrap();
    let b = run_tcp_json(&sc(1)).unwrap();
    assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
    let c = run_tcp_json(&sc(2)).unwrap();
    assert_ne!(a.retransmits, c.retransmits);
}

#[test]
fn every_congestion_control_recovers_from_loss() {
    for cc in ["reno", "cubic", "bic", "htcp", "scalable", "highspeed", "bbr"] {
        let rec = run_tcp_json(&format!(r#"{{"link": "10gige-lan", "stack": "ideal", "path": {{"delay_us": 1000, "loss": 0.0001}}, "tcp": {{"cc": "{cc}", "duration_s": 1, "window_bytes": 67108864}}}}"#)).unwrap();
        assert!(rec.retransmits > 0, "{cc}: no loss seen");
        assert!(rec.bw_MBps > 20.0, "{cc}: {} MB/s", rec.bw_MBps);
        let last = *rec.series_bw_MBps.last().unwrap();
        assert!(last > 10.0, "{cc} stalled: {:?}", rec.series_bw_MBps);
    }
}

/// HyStart (on by default for CUBIC, as in Linux) ends slow start before a one-BDP drop-tail
/// queue overflows on a 100 ms, 1 Gb/s path: no drop in 2 s and line rate by the end; plain slow
/// start overshoots and loses thousands of segments. Reno never uses HyStart.
#[test]
fn hystart_ends_cubic_slow_start_before_the_queue_overflows() {
    let sc = |cc: &str, hystart: bool| {
        run_tcp_json(&format!(
            r#"{{"link": "10gige-lan", "stack": "ideal", "path": {{"delay_us": 50000, "rate_gbps": 1, "queue_bytes": 12500000}},
                "tcp": {{"cc": "{cc}", "hystart": {hystart}, "window_bytes": 50000000, "duration_s": 2, "interval_s": 0.25}}}}"#
        ))
        .unwrap()
    };
    let on = sc("cubic", true);
    assert_eq!(on.wan_drops_queue, 0, "HyStart exit still overflowed the queue");
    assert!(*on.series_bw_MBps.last().unwrap() > 110.0, "not at line rate: {:?}", on.series_bw_MBps);
    let off = sc("cubic", false);
    assert!(off.wan_drops_queue > 10_000, "plain slow start should overshoot: {} drops", off.wan_drops_queue);
    assert_eq!(sc("reno", true).retransmits, sc("reno", false).retransmits, "Reno must ignore hystart");
}

#[test]
fn cross_traffic_takes_its_share_of_the_wan() {
    let base = r#""link": "10gige-lan", "stack": "ideal", "path": {"delay_us": 1000}, "tcp": {"duration_s": 2, "window_bytes": 67108864}"#;
    let alone = run_tcp_json(&format!("{{{base}}}")).unwrap();
    let shared = run_tcp_json(&format!(r#"{{{base}, "cross": {{"gbps": 6}}}}"#)).unwrap();
    assert!((shared.cross_bw_MBps - 750.0).abs() < 40.0, "CBR gets its rate: {}", shared.cross_bw_MBps);
    assert!(shared.bw_MBps < alone.bw_MBps * 0.6, "TCP yields: {} vs {}", shared.bw_MBps, alone.bw_MBps);
}
