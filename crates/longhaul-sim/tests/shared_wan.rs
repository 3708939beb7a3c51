//! The verbs model on a shared WAN: UDP cross traffic from a second host pair on the WAN
//! switches where the extenders frame IB in SONET or Ethernet. What the WAN switch drops, RC
//! resends (no byte lost) and UD/UC lose (counted); a run is a function of its seed.

use longhaul_sim::net::CrossSpec;
use longhaul_sim::scenario::{OpName, PathSpec, Scenario, TransportName, VerbsSpec};
use longhaul_sim::{run_verbs, VerbsRecord};
use proptest::prelude::*;

/// OC-192's payload rate (Gb/s, ITU-T G.707): the `usn` profile's WAN.
const OC192_GBPS: f64 = 9.584_64;

fn scenario(transport: TransportName, size: u64, iters: u64, km: f64, cross_gbps: f64) -> Scenario {
    let op = if transport == TransportName::Ud { OpName::Send } else { OpName::Write };
    let mut verbs = VerbsSpec::bw_test(transport, op, size);
    verbs.iterations = Some(iters);
    Scenario {
        seed: 5,
        testbed: "usn".into(),
        hca: None,
        path: PathSpec { fibre_km: Some(km), ..Default::default() },
        verbs,
        cross: Some(CrossSpec { gbps: cross_gbps, start_s: None, on_ms: None, off_ms: None, packet_bytes: None }),
        events: Vec::new(),
        subnet_manager: Default::default(),
    }
}

fn run(s: &Scenario) -> VerbsRecord {
    run_verbs(&s.resolve().expect("valid scenario"), None)
}

fn error(s: &Scenario) -> String {
    s.resolve().expect_err("refused").0
}

#[test]
fn rc_resends_what_the_switch_drops_and_stays_under_what_cross_traffic_leaves() {
    let rec = run(&scenario(TransportName::Rc, 1 << 20, 30, 500.0, 4.0));
    assert_eq!(rec.status, "ok");
    assert!(rec.wan_drops_queue > 0, "the WAN switch dropped nothing: {rec:?}");
    assert!(rec.retransmitted_packets > 0);
    assert_eq!(rec.delivered_bytes, 30 << 20);
    let left_mbps = (OC192_GBPS - 4.0) * 1e3 / 8.0;
    assert!(rec.bw_MBps.unwrap() <= left_mbps, "{:?} above the {left_mbps} MB/s cross traffic leaves", rec.bw_MBps);
    // The cross traffic gets through at its rate less what the switch turned away.
    assert!(rec.cross_bw_MBps > 400.0 && rec.cross_bw_MBps <= 500.0, "{}", rec.cross_bw_MBps);
}

#[test]
fn ud_and_uc_lose_what_the_switch_drops_and_count_it() {
    let ud = run(&scenario(TransportName::Ud, 2048, 20_000, 500.0, 4.0));
    assert!(ud.wan_drops_queue > 0);
    let lost_bytes = 20_000 * 2048 - ud.delivered_bytes;
    // Every UD message is one packet: each drop loses one message (the ACK direction carries none).
    assert_eq!(lost_bytes, ud.wan_drops_queue * 2048, "{ud:?}");
    let uc = run(&scenario(TransportName::Uc, 65536, 300, 500.0, 4.0));
    assert!(uc.wan_drops_queue > 0 && uc.uc_messages_dropped > 0, "{uc:?}");
    assert!(uc.delivered_bytes < 300 * 65536);
    assert_eq!(uc.status, "ok");
}

#[test]
fn without_congestion_nothing_is_dropped() {
    // 8 Gb/s of IB and 1 Gb/s of cross traffic fit OC-192's 9.58 Gb/s.
    let rec = run(&scenario(TransportName::Rc, 1 << 20, 20, 500.0, 1.0));
    assert_eq!((rec.wan_drops_queue, rec.cross_packets_dropped, rec.retransmitted_packets), (0, 0, 0));
    assert_eq!(rec.delivered_bytes, 20 << 20);
}

#[test]
fn same_seed_same_record() {
    let s = scenario(TransportName::Uc, 65536, 200, 300.0, 5.0);
    assert_eq!(run(&s), run(&s));
}

#[test]
fn cross_traffic_needs_a_shared_switch_and_fits_the_wan() {
    let mut s = scenario(TransportName::Rc, 65536, 10, 100.0, 12.0);
    assert!(error(&s).starts_with("cross_gbps: 12 is out of range (0, 9.5846] (the WAN line rate of oc192)"));
    s.cross.as_mut().unwrap().gbps = 2.0;
    s.path.wan_framing = Some(longhaul_sim::net::WanFraming::Ib);
    let e = error(&s);
    assert!(e.starts_with("cross_gbps: cross traffic shares a WAN switch") && e.contains("natively"), "{e}");
    s.path.wan_framing = None;
    s.path.extender = Some("none".into());
    assert!(error(&s).contains("a plain IB link (extender none)"));
    s.cross = None;
    s.path.extender = None;
    s.path.queue_bytes = Some(1 << 20);
    let e = error(&s);
    assert!(e.starts_with("queue_bytes: the WAN switches' queue exists only with cross traffic") && !e.contains('\n'));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, rng_seed: proptest::test_runner::RngSeed::Fixed(5_005), .. ProptestConfig::default() })]

    /// Whatever the cross traffic and the distance, RC delivers every byte it was given.
    #[test]
    fn rc_loses_no_byte_under_cross_traffic(
        km in 0.0f64..2_000.0,
        gbps in 0.5f64..9.5,
        size in 4096u64..(1 << 20),
        seed in 0u64..1000,
    ) {
        let mut s = scenario(TransportName::Rc, size, 8, km, gbps);
        s.seed = seed;
        let rec = run(&s);
        prop_assert_eq!(&rec.status, "ok");
        prop_assert_eq!(rec.delivered_bytes, 8 * size);
    }
}
