//! The verbs model from 0 to 20,000 km on clean paths with every setting at its default: what the
//! hardware guarantees there, checked over random distances and sizes (proptest).

use longhaul_sim::ib::timer::iba_timeout;
use longhaul_sim::scenario::{OpName, PathSpec, Scenario, TransportName, VerbsSpec};
use longhaul_sim::{run_verbs, Resolved, VerbsRecord};
use proptest::prelude::*;

/// The profiles whose defaults are checked: S1's testbed and the UltraScience Net's.
const PROFILES: [&str; 2] = ["s1", "usn"];

fn scenario(testbed: &str, transport: TransportName, size: u64, iters: u64, km: f64) -> Scenario {
    let op = if transport == TransportName::Ud { OpName::Send } else { OpName::Write };
    let mut verbs = VerbsSpec::bw_test(transport, op, size);
    verbs.iterations = Some(iters);
    Scenario {
        seed: 3,
        testbed: testbed.into(),
        hca: None,
        path: PathSpec { fibre_km: Some(km), ..Default::default() },
        verbs,
        cross: None,
        events: Vec::new(),
        subnet_manager: Default::default(),
    }
}

fn run(s: &Scenario) -> (Resolved, VerbsRecord) {
    let r = s.resolve().expect("valid scenario");
    let rec = run_verbs(&r, None);
    (r, rec)
}

/// The round trip's propagation alone (ps): no acknowledgement can come back sooner.
fn round_trip(r: &Resolved) -> u64 {
    (2.0 * r.one_way_delay_us() * 1e6) as u64
}

/// 4x SDR's 8 Gb/s of data: the WAN of both profiles (MB/s, 10^6 bytes).
const SDR_4X_MBPS: f64 = 1000.0;

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, rng_seed: proptest::test_runner::RngSeed::Fixed(22_000), .. ProptestConfig::default() })]

    /// No transport error where the adapter's real timer would not fire: RC completes at every
    /// distance with the default timer, and where that timer (as the adapter applies it) outlasts
    /// the round trip, nothing is resent.
    #[test]
    fn rc_needs_no_resend_where_the_real_timer_outlasts_the_round_trip(
        profile in 0usize..2,
        km in 0.0f64..20_000.0,
        size in 1u64..(1 << 20),
    ) {
        let (r, rec) = run(&scenario(PROFILES[profile], TransportName::Rc, size, 6, km));
        prop_assert_eq!(&rec.status, "ok");
        prop_assert_eq!(rec.delivered_bytes, 6 * size);
        let timer = r.hca.ack_timer.in_force(r.ack_timeout_exp).expect("a timer");
        // Twice the propagation leaves room for the messages' own serialisation and queueing.
        if timer > 2 * round_trip(&r) {
            prop_assert_eq!(rec.timeouts, 0, "timer {} ps, round trip {} ps", timer, round_trip(&r));
            prop_assert_eq!(rec.retransmitted_packets, 0);
        }
    }

    /// Bandwidth is never above the line rate, nor above what the benchmark's window can keep in
    /// flight per round trip.
    #[test]
    fn rc_bandwidth_within_the_line_rate_and_the_window(
        profile in 0usize..2,
        km in 0.0f64..20_000.0,
        size in 1u64..(1 << 22),
    ) {
        let (r, rec) = run(&scenario(PROFILES[profile], TransportName::Rc, size, 40, km));
        let bw = rec.bw_MBps.expect("bw");
        let rtt_s = round_trip(&r) as f64 * 1e-12;
        let window = r.tx_depth as f64 * size as f64 / rtt_s / 1e6;
        prop_assert!(bw <= SDR_4X_MBPS, "bw {} above the line rate", bw);
        prop_assert!(bw <= window * 1.000_001, "bw {} above the window's {} MB/s", bw, window);
    }

    /// Farther never goes faster.
    #[test]
    fn rc_bandwidth_non_increasing_with_distance(
        profile in 0usize..2,
        km in 0.0f64..19_000.0,
        more in 1.0f64..5_000.0,
        size in 1024u64..(1 << 22),
    ) {
        let near = run(&scenario(PROFILES[profile], TransportName::Rc, size, 40, km)).1;
        let far = run(&scenario(PROFILES[profile], TransportName::Rc, size, 40, (km + more).min(20_000.0))).1;
        let (a, b) = (near.bw_MBps.expect("bw"), far.bw_MBps.expect("bw"));
        prop_assert!(b <= a * 1.000_001, "{} km: {} MB/s, {} km: {} MB/s", km, a, km + more, b);
    }

    /// UC and UD senders wait for no acknowledgement: while the extender's credits span the
    /// path, what they send leaves at the same rate at any distance.
    #[test]
    fn unreliable_senders_do_not_see_the_distance(
        profile in 0usize..2,
        km in 0.0f64..20_000.0,
        ud in any::<bool>(),
    ) {
        let (t, size) = if ud { (TransportName::Ud, 2048) } else { (TransportName::Uc, 1 << 20) };
        let (r, far) = run(&scenario(PROFILES[profile], t, size, 200, km));
        let ext = r.extender.as_ref().expect("an extender");
        prop_assume!(ext.rated_km >= km);
        let near = run(&scenario(PROFILES[profile], t, size, 200, 0.0)).1;
        let (a, b) = (near.bw_MBps.expect("bw"), far.bw_MBps.expect("bw"));
        prop_assert!((a - b).abs() <= a * 0.01, "{}: {} MB/s at 0 km, {} MB/s at {} km", ext.name, a, b, km);
        prop_assert_eq!(far.delivered_bytes, 200 * size);
    }
}

/// The adapters' timer rules at the UltraScience Net's longest loop (138 ms round trip).
#[test]
fn the_cm_timer_covers_the_longest_loop_and_perftests_default_does_not() {
    let km = 8600.0 * 1.609_344;
    let (r, rec) = run(&scenario("usn", TransportName::Rc, 1 << 20, 20, km));
    assert!(r.cm && r.ack_timeout_exp == 19, "usn runs ib_rdma_bw -c: the CM's 2.1 s");
    assert_eq!((rec.timeouts, rec.status.as_str()), (0, "ok"));
    let (r, rec) = run(&scenario("s1", TransportName::Rc, 1 << 20, 20, km));
    assert!(iba_timeout(r.ack_timeout_exp).unwrap() < round_trip(&r));
    assert!(rec.timeouts > 0 && rec.status == "ok" && !rec.advice.is_empty(), "{rec:?}");
}
