//! A fluid network: resources with capacities (bytes/s), flows that use some of them, and the
//! max-min fair share of each flow, found by progressive filling (Bertsekas & Gallager, "Data
//! Networks", 2nd ed., section 6.5.2). It knows no protocol: a resource may be a link, an
//! adapter, a server's CPU or a disk.
//!
//! A flow uses each of its resources with a weight: the share of its rate that crosses the
//! resource. A writer that stripes its blocks evenly over 6 disks uses each disk with weight
//! 1/6; a flow crossing a link once uses it with weight 1. A flow may also carry a cap of its
//! own (a window over a round trip). All unfrozen flows rise together; a resource that fills
//! freezes the flows through it, a flow that reaches its cap freezes alone; repeat until every
//! flow is frozen. A flow through a resource of capacity 0 gets 0 (a link that is down).
//!
//! Used where packets need not be simulated one by one: minutes of storage traffic (the
//! parallel file system model). It leaves out everything below a round trip: queues, credits,
//! packet loss and retransmission, congestion control's ramp; rates change only when the set of
//! flows or the capacities change.

/// One flow's demand: the resources it crosses with their weights, and its own rate cap.
#[derive(Debug, Clone, PartialEq)]
pub struct Demand {
    /// (resource index, weight > 0), each resource at most once.
    pub uses: Vec<(usize, f64)>,
    /// Bytes/s the flow cannot exceed whatever the resources leave it (f64::INFINITY: none).
    pub cap: f64,
}

impl Demand {
    /// A demand from (resource, weight) pairs, merging repeats of a resource by adding weights.
    pub fn merged(pairs: impl IntoIterator<Item = (usize, f64)>, cap: f64) -> Demand {
        let mut uses: Vec<(usize, f64)> = Vec::new();
        for (r, w) in pairs {
            match uses.iter_mut().find(|(q, _)| *q == r) {
                Some(u) => u.1 += w,
                None => uses.push((r, w)),
            }
        }
        uses.sort_by_key(|&(r, _)| r);
        Demand { uses, cap }
    }
}

/// Below this a capacity or rate is taken as exhausted (bytes/s).
const EPS: f64 = 1e-9;

/// The max-min fair rate (bytes/s) of every flow over resources of `capacity` (bytes/s).
pub fn max_min(capacity: &[f64], flows: &[Demand]) -> Vec<f64> {
    let mut rate = vec![0.0; flows.len()];
    let mut frozen: Vec<bool> = flows.iter().map(|f| f.cap <= EPS).collect();
    let mut left: Vec<f64> = capacity.to_vec();
    // A flow through an exhausted resource is frozen at 0 from the start.
    for (i, f) in flows.iter().enumerate() {
        if f.uses.iter().any(|&(r, _)| left[r] <= EPS) {
            frozen[i] = true;
        }
    }
    loop {
        let mut load = vec![0.0; capacity.len()];
        for (f, _) in flows.iter().zip(&frozen).filter(|(_, &z)| !z) {
            for &(r, w) in &f.uses {
                load[r] += w;
            }
        }
        // The common increment every unfrozen flow can still take.
        let mut step = f64::INFINITY;
        for (r, &l) in load.iter().enumerate() {
            if l > 0.0 {
                step = step.min(left[r] / l);
            }
        }
        for (i, f) in flows.iter().enumerate() {
            if !frozen[i] {
                step = step.min(f.cap - rate[i]);
            }
        }
        if !step.is_finite() {
            // Unfrozen flows that use no resource and have no cap: nothing bounds them.
            break;
        }
        let step = step.max(0.0);
        for (r, &l) in load.iter().enumerate() {
            left[r] -= step * l;
        }
        let mut any = false;
        for (i, f) in flows.iter().enumerate() {
            if frozen[i] {
                continue;
            }
            any = true;
            rate[i] += step;
            let full = f.uses.iter().any(|&(r, _)| left[r] <= EPS * capacity[r].max(1.0));
            if full || (f.cap.is_finite() && f.cap - rate[i] <= EPS * f.cap.max(1.0)) {
                frozen[i] = true;
            }
        }
        if !any || frozen.iter().all(|&z| z) {
            break;
        }
    }
    rate
}

/// What flows at `rate` put on each resource (bytes/s).
pub fn loads(n_resources: usize, flows: &[Demand], rate: &[f64]) -> Vec<f64> {
    let mut load = vec![0.0; n_resources];
    for (f, &x) in flows.iter().zip(rate) {
        for &(r, w) in &f.uses {
            load[r] += w * x;
        }
    }
    load
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn d(uses: &[(usize, f64)]) -> Demand {
        Demand { uses: uses.to_vec(), cap: f64::INFINITY }
    }

    #[test]
    fn two_flows_share_a_link_and_the_spare_goes_to_the_other() {
        // Flow 0 over links 0 and 1, flow 1 over link 1 only; link 0 holds flow 0 to 3.
        let r = max_min(&[3.0, 10.0], &[d(&[(0, 1.0), (1, 1.0)]), d(&[(1, 1.0)])]);
        assert!((r[0] - 3.0).abs() < 1e-9 && (r[1] - 7.0).abs() < 1e-9, "{r:?}");
    }

    #[test]
    fn a_striped_flow_is_held_by_its_slowest_stripe_and_a_dead_resource_stops_it() {
        // Striped evenly over two disks of 4 and 10: the slow disk carries half, so 8 in all.
        let r = max_min(&[4.0, 10.0], &[d(&[(0, 0.5), (1, 0.5)])]);
        assert!((r[0] - 8.0).abs() < 1e-9, "{r:?}");
        let r = max_min(&[0.0, 10.0], &[d(&[(0, 0.5), (1, 0.5)]), d(&[(1, 1.0)])]);
        assert_eq!(r[0], 0.0);
        assert!((r[1] - 10.0).abs() < 1e-9);
    }

    #[test]
    fn a_cap_holds_a_flow_and_frees_the_rest() {
        let mut a = d(&[(0, 1.0)]);
        a.cap = 2.0;
        let r = max_min(&[10.0], &[a, d(&[(0, 1.0)])]);
        assert!((r[0] - 2.0).abs() < 1e-9 && (r[1] - 8.0).abs() < 1e-9, "{r:?}");
    }

    proptest! {
        /// Never above a capacity; and max-min: every flow is held by a full resource or its cap.
        #[test]
        fn rates_fit_the_capacities_and_every_flow_is_bottlenecked(
            caps in prop::collection::vec(0.0f64..100.0, 1..6),
            raw in prop::collection::vec((prop::collection::vec((0usize..6, 0.1f64..2.0), 1..4), 1.0f64..200.0), 1..8),
        ) {
            let n = caps.len();
            let flows: Vec<Demand> = raw.iter()
                .map(|(u, cap)| Demand::merged(u.iter().map(|&(r, w)| (r % n, w)), *cap))
                .collect();
            let rate = max_min(&caps, &flows);
            let load = loads(n, &flows, &rate);
            for r in 0..n {
                prop_assert!(load[r] <= caps[r] * (1.0 + 1e-9) + 1e-9, "resource {r}: {} > {}", load[r], caps[r]);
            }
            for (i, f) in flows.iter().enumerate() {
                let at_cap = rate[i] >= f.cap * (1.0 - 1e-6);
                let held = f.uses.iter().any(|&(r, _)| load[r] >= caps[r] * (1.0 - 1e-6) - 1e-9);
                prop_assert!(at_cap || held, "flow {i} at {} is held by nothing", rate[i]);
            }
        }
    }
}
