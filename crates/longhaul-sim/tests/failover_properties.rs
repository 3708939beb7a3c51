//! RC across WAN links unplugged and plugged back at random (proptest): whatever the schedule and
//! the subnet manager's timing, what completes was delivered exactly once and in order, no link
//! carries more than its line rate, and a link down carries nothing.

use longhaul_sim::link_events::{LinkAction, LinkEventSpec, SubnetManagerSpec};
use longhaul_sim::scenario::{OpName, PathSpec, Scenario, TransportName, VerbsSpec};
use longhaul_sim::{run_verbs, Resolved, VerbsRecord};
use proptest::prelude::*;

const LINKS: u32 = 3;
const DURATION_S: f64 = 0.4;
const INTERVAL_S: f64 = 0.02;
const SIZE: u64 = 65536;
const QPS: u32 = 6;
const TX_DEPTH: u32 = 16;

fn scenario(events: Vec<LinkEventSpec>, sm: SubnetManagerSpec, timeout_exp: u32, retry_count: u32) -> Scenario {
    let mut verbs = VerbsSpec::bw_test(TransportName::Rc, OpName::Write, SIZE);
    verbs.qps = Some(QPS);
    verbs.tx_depth = Some(TX_DEPTH);
    verbs.duration_s = Some(DURATION_S);
    verbs.interval_s = Some(INTERVAL_S);
    verbs.timeout_exp = Some(timeout_exp);
    verbs.retry_count = Some(retry_count);
    Scenario {
        seed: 5,
        testbed: "s1".into(),
        hca: None,
        path: PathSpec { wan_links: Some(LINKS), fibre_km: Some(100.0), ..Default::default() },
        verbs,
        cross: None,
        events,
        subnet_manager: sm,
    }
}

/// A valid schedule: each link alternates down and up from random times.
fn schedule() -> impl Strategy<Value = Vec<LinkEventSpec>> {
    prop::collection::vec((0..LINKS, prop::collection::vec(1u32..19, 1..4)), 1..4).prop_map(|per_link| {
        let mut events = Vec::new();
        let mut seen = Vec::new();
        for (link, mut ticks) in per_link {
            if seen.contains(&link) {
                continue;
            }
            seen.push(link);
            ticks.sort_unstable();
            ticks.dedup();
            for (i, t) in ticks.into_iter().enumerate() {
                let action = if i % 2 == 0 { LinkAction::Down } else { LinkAction::Up };
                events.push(LinkEventSpec { at_s: t as f64 * INTERVAL_S + 0.001, link, action });
            }
        }
        events
    })
}

fn run(s: &Scenario) -> (Resolved, VerbsRecord) {
    let r = s.resolve().expect("valid scenario");
    let rec = run_verbs(&r, None);
    (r, rec)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, rng_seed: proptest::test_runner::RngSeed::Fixed(2424), .. ProptestConfig::default() })]

    #[test]
    fn rc_delivers_what_completes_once_and_in_order_at_line_rate(
        events in schedule(),
        traps in any::<bool>(),
        reroute_ms in 1u32..60,
        timeout_exp in 8u32..16,
        retry_count in 0u32..8,
    ) {
        let sm = SubnetManagerSpec {
            sweep_interval_s: Some(0.1),
            traps: Some(traps),
            reroute_s: Some(reroute_ms as f64 / 1e3),
            link_training_s: Some(0.01),
        };
        let (r, rec) = run(&scenario(events.clone(), sm, timeout_exp, retry_count));
        let f = rec.failover.as_ref().expect("a failover report");
        for q in 0..f.qp_completed_bytes.len() {
            let (done, got) = (f.qp_completed_bytes[q], f.qp_delivered_bytes[q]);
            // Completed means delivered (nothing lost), and the receiver holds no more than what
            // was completed plus the window still in flight (nothing duplicated), in whole messages
            // (the receiver accepts packets in PSN order only).
            prop_assert!(done <= got, "qp {}: {} completed, {} delivered", q, done, got);
            prop_assert!(got <= done + TX_DEPTH as u64 * SIZE, "qp {}: {} delivered, {} completed", q, got, done);
            prop_assert_eq!(got % SIZE, 0);
        }
        let ext = r.extender.as_ref().expect("an extender");
        let line_mbps = ext.framing.payload_gbps(&ext.wan) * 1e3 / 8.0;
        let one_packet_mbps = (r.mtu_bytes + 128) as f64 / INTERVAL_S / 1e6;
        for (k, link) in f.series_link_MBps.iter().enumerate() {
            for (i, &mbps) in link.iter().enumerate() {
                prop_assert!(mbps <= line_mbps + one_packet_mbps, "link {} interval {}: {} MB/s", k, i, mbps);
                // An interval wholly inside a link's down time carries nothing on it.
                let (from, to) = (f.series_t_s[i] - INTERVAL_S, f.series_t_s[i]);
                let mut down_since = None;
                let mut dead = false;
                let mut sorted: Vec<_> = events.iter().filter(|e| e.link as usize == k).collect();
                sorted.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
                for e in sorted {
                    match e.action {
                        LinkAction::Down => down_since = Some(e.at_s),
                        LinkAction::Up => {
                            dead |= down_since.is_some_and(|d| d <= from && to <= e.at_s);
                            down_since = None;
                        }
                    }
                }
                dead |= down_since.is_some_and(|d| d <= from);
                if dead {
                    prop_assert_eq!(mbps, 0.0, "link {} interval {} is down", k, i);
                }
            }
        }
    }
}

/// The same run twice gives the same record; link events change nothing before the first.
#[test]
fn deterministic_and_unchanged_before_the_first_event() {
    let down = vec![LinkEventSpec { at_s: 0.2, link: 1, action: LinkAction::Down }];
    let a = run(&scenario(down.clone(), SubnetManagerSpec::default(), 14, 7)).1;
    let b = run(&scenario(down, SubnetManagerSpec::default(), 14, 7)).1;
    assert_eq!(a, b);
    let late = vec![LinkEventSpec { at_s: 0.39, link: 1, action: LinkAction::Down }];
    let c = run(&scenario(late, SubnetManagerSpec::default(), 14, 7)).1;
    let (fa, fc) = (a.failover.unwrap(), c.failover.unwrap());
    // Up to 0.2 s both runs are the same run.
    assert_eq!(fa.series_bw_MBps[..10], fc.series_bw_MBps[..10]);
    assert!(fa.series_link_MBps[1][12..].iter().all(|&m| m == 0.0));
}
