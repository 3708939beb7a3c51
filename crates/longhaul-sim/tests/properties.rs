//! Invariants of the verbs model, checked over random scenarios (proptest).

use longhaul_sim::scenario::{OpName, PathSpec, Scenario, TestName, TransportName, VerbsSpec};
use longhaul_sim::{run_verbs, VerbsRecord};
use proptest::prelude::*;

fn scenario(transport: TransportName, op: OpName, size: u64, iters: u64, path: PathSpec) -> Scenario {
    Scenario {
        seed: 7,
        testbed: "s1".into(),
        hca: None,
        path,
        verbs: VerbsSpec {
            transport,
            op,
            test: TestName::Bw,
            size_bytes: size,
            iterations: Some(iters),
            tx_depth: None,
            rx_depth: None,
            qps: None,
            outstanding_reads: None,
            timeout_exp: None,
            retry_count: Some(7),
            cm: None,
            duration_s: None,
            interval_s: None,
        },
        cross: None,
        events: Vec::new(),
        subnet_manager: Default::default(),
    }
}

fn run(s: &Scenario) -> VerbsRecord {
    run_verbs(&s.resolve().expect("valid scenario"), None)
}

/// 4x SDR data rate in MB/s (10^6): the S1 WAN bottleneck.
const SDR_4X_MBPS: f64 = 1000.0;

proptest! {
    // A fixed seed: CI sees the same cases every run (failures are reproducible, not flaky).
    #![proptest_config(ProptestConfig { cases: 32, rng_seed: proptest::test_runner::RngSeed::Fixed(20_261_121), .. ProptestConfig::default() })]

    /// RC delivers every byte exactly once, in order, whatever the loss rate.
    #[test]
    fn rc_delivers_every_byte_exactly_once(
        loss in 0.0f64..0.05,
        size in 1u64..200_000,
        delay in 0.0f64..200.0,
        op in prop_oneof![Just(OpName::Write), Just(OpName::Send), Just(OpName::Read)],
        seed in 0u64..1000,
    ) {
        let mut s = scenario(TransportName::Rc, op, size, 20, PathSpec { delay_us: Some(delay), loss: Some(loss), ..Default::default() });
        s.seed = seed;
        s.verbs.timeout_exp = Some(10); // 4.2 ms ACK timeout: above any round trip here, keeps lossy runs short
        let r = run(&s);
        prop_assert_eq!(&r.status, "ok");
        prop_assert_eq!(r.delivered_bytes, 20 * size);
        if loss == 0.0 {
            prop_assert_eq!(r.retransmitted_packets, 0);
        }
    }

    /// No transport moves data faster than the bottleneck's line rate.
    #[test]
    fn throughput_never_above_line_rate(
        size in 1u64..(1 << 22),
        delay in 0.0f64..2000.0,
        op in prop_oneof![Just(OpName::Write), Just(OpName::Send), Just(OpName::Read)],
    ) {
        let r = run(&scenario(TransportName::Rc, op, size, 30, PathSpec { delay_us: Some(delay), ..Default::default() }));
        let bw = r.bw_MBps.expect("bw");
        prop_assert!(bw <= SDR_4X_MBPS, "bw {} above line rate", bw);
    }

    /// UD and UC senders finish once their messages leave the adapter, faster than the WAN when
    /// the buffers on the path absorb them; what the receivers get never beats the line rate.
    #[test]
    fn unreliable_receivers_never_above_line_rate(
        iters in 1u64..400,
        delay in 0.0f64..2000.0,
        ud in any::<bool>(),
    ) {
        let (t, op, size) = if ud { (TransportName::Ud, OpName::Send, 2048) } else { (TransportName::Uc, OpName::Write, 65536) };
        let r = run(&scenario(t, op, size, iters, PathSpec { delay_us: Some(delay), ..Default::default() }));
        let rx = r.rx_bw_MBps.expect("rx bw");
        prop_assert!(rx <= SDR_4X_MBPS, "rx bw {} above line rate (sender {:?})", rx, r.bw_MBps);
        prop_assert_eq!(r.delivered_bytes, iters * size);
    }

    /// More messages in flight never lowers bandwidth.
    #[test]
    fn bandwidth_non_decreasing_in_tx_depth(size in 64u64..(1 << 18), delay in 0.0f64..2000.0, d1 in 1u32..64, extra in 1u32..64) {
        let mut a = scenario(TransportName::Rc, OpName::Write, size, 200, PathSpec { delay_us: Some(delay), ..Default::default() });
        // tx-depth is the queue pair's send queue depth, the only message window of a verbs run.
        let mut b = a.clone();
        a.verbs.tx_depth = Some(d1);
        b.verbs.tx_depth = Some(d1 + extra);
        let (ra, rb) = (run(&a).bw_MBps.unwrap(), run(&b).bw_MBps.unwrap());
        prop_assert!(rb >= ra * 0.999, "tx-depth {} -> {}: {} -> {}", d1, d1 + extra, ra, rb);
    }

    /// A plain IB link stretched over distance is credit-starved; more buffer never hurts.
    #[test]
    fn bandwidth_non_decreasing_in_buffer_credits(km in 1.0f64..200.0, kib in 4u64..256, extra in 1u64..1024) {
        let path = |buf| PathSpec { fibre_km: Some(km), extender: Some("none".into()), switch_buffer_bytes: Some(buf), ..Default::default() };
        // A credit-starved link is slow enough to trip the default 67 ms ACK timeout (the oldest
        // packet waits for credits); a 4 s timeout keeps this test about credits alone.
        let bw = |buf| {
            let mut s = scenario(TransportName::Rc, OpName::Write, 1 << 20, 8, path(buf));
            s.verbs.timeout_exp = Some(20);
            run(&s).bw_MBps.unwrap()
        };
        let (ra, rb) = (bw(kib << 10), bw((kib + extra) << 10));
        prop_assert!(rb >= ra * 0.999, "buffer {} -> {} KiB: {} -> {}", kib, kib + extra, ra, rb);
    }

    /// UC loses a whole message with any of its packets, and counts each such message once: a
    /// single-packet message, or a burst that swallowed whole messages, was not counted before.
    #[test]
    fn uc_counts_every_message_it_loses(
        loss in 0.0f64..0.05,
        size in 1u64..200_000,
        seed in 0u64..1000,
    ) {
        let mut s = scenario(TransportName::Uc, OpName::Send, size, 100, PathSpec { delay_us: Some(100.0), loss: Some(loss), ..Default::default() });
        s.seed = seed;
        let r = run(&s);
        prop_assert_eq!(r.delivered_bytes % size, 0);
        prop_assert_eq!(r.uc_messages_dropped, 100 - r.delivered_bytes / size);
    }

    /// Same scenario and seed, bit-identical record.
    #[test]
    fn identical_seed_identical_result(seed in 0u64..u64::MAX, loss in 0.0f64..0.02) {
        let mut s = scenario(TransportName::Rc, OpName::Write, 65536, 10, PathSpec { delay_us: Some(50.0), loss: Some(loss), ..Default::default() });
        s.seed = seed;
        prop_assert_eq!(run(&s), run(&s));
    }
}

#[test]
fn uc_and_ud_lose_messages_but_rc_does_not() {
    let lossy = || PathSpec { delay_us: Some(10.0), loss: Some(0.02), ..Default::default() };
    let uc = run(&scenario(TransportName::Uc, OpName::Write, 65536, 200, lossy()));
    assert!(uc.uc_messages_dropped > 0 && uc.delivered_bytes < 200 * 65536);
    let mut rc = scenario(TransportName::Rc, OpName::Write, 65536, 200, lossy());
    rc.verbs.timeout_exp = Some(10);
    let rc = run(&rc);
    assert_eq!(rc.delivered_bytes, 200 * 65536);
    assert!(rc.retransmitted_packets > 0);
}

#[test]
fn plain_long_link_starves_for_credits_but_extender_does_not() {
    let path = |ext: &str| PathSpec { fibre_km: Some(100.0), extender: Some(ext.into()), ..Default::default() };
    let plain = run(&scenario(TransportName::Rc, OpName::Write, 1 << 20, 20, path("none"))).bw_MBps.unwrap();
    let longbow = run(&scenario(TransportName::Rc, OpName::Write, 1 << 20, 20, path("longbow-xr"))).bw_MBps.unwrap();
    // 16 KiB of switch buffer over a 1 ms round trip: ~16 MB/s; the extender keeps the pipe full.
    assert!(plain < 50.0, "plain link {plain}");
    eprintln!("plain {plain} longbow {longbow}");
    assert!(longbow > 900.0, "longbow {longbow}");
}

#[test]
fn bad_scenarios_name_the_parameter() {
    let bad = [
        (r#"{"verbs":{"transport":"rc","op":"write","test":"bw","size_bytes":0}}"#, "size_bytes"),
        (r#"{"verbs":{"transport":"ud","op":"send","test":"bw","size_bytes":4096}}"#, "size_bytes"),
        (r#"{"verbs":{"transport":"rc","op":"write","test":"bw","size_bytes":8,"qps":0}}"#, "qps"),
        (r#"{"path":{"delay_us":-1},"verbs":{"transport":"rc","op":"write","test":"bw","size_bytes":8}}"#, "delay_us"),
        (
            r#"{"path":{"switch_buffer_bytes":10},"verbs":{"transport":"rc","op":"write","test":"bw","size_bytes":8}}"#,
            "switch_buffer_bytes",
        ),
        (r#"{"testbed":"nope","verbs":{"transport":"rc","op":"write","test":"bw","size_bytes":8}}"#, "testbed"),
        (r#"{"verbs":{"transport":"xx","op":"write","test":"bw","size_bytes":8}}"#, "unknown variant"),
        (r#"{"verbs":"#, "scenario"),
    ];
    for (json, needle) in bad {
        let e = longhaul_sim::run_verbs_json(json, None).expect_err(json);
        assert!(e.0.contains(needle), "{json}: {}", e.0);
        assert!(!e.0.contains('\n'), "one line: {}", e.0);
    }
}
