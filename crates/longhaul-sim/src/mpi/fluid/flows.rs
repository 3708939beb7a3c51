//! The flows on the wire at flow level, and their max-min rates.
//!
//! Every resource keeps the list of the flows through it, so that what a start or an end can
//! change is found by walking those lists (the flows connected to it through shared resources),
//! not by scanning every flow; and a flow's bytes left are brought up to date only when its
//! rate changes or a one-packet message holds it, not at every update. A run with thousands of
//! flows that share nothing (the first half of a pairwise alltoall, every pair within its
//! cluster) then costs per start or end what one flow costs.
//!
//! The rates are max-min fair, found by progressive filling (Bertsekas & Gallager, "Data
//! Networks", 2nd ed., section 6.5.2), as [`crate::net::flow::max_min`] finds them, for what a
//! flow is here: it crosses each resource of its path once (weight 1) and has no cap of its own.
//! So every flow not yet frozen is at the same level, a resource's load is its count of unfrozen
//! flows, and a round needs only the resources that still carry some and the flows of those
//! that fill. Rates depend only on the set of flows and the capacities, not on the order.
//!
//! Invariants (this module's tests check them, with [`crate::net::flow::max_min`] over all the
//! flows as the oracle of the rates; `tests/mpi_fluid.rs` checks whole runs): a flow is in the
//! list of every resource of its path and of no other, at the position it records; a free
//! slot is in no list and never due; no resource carries more than its capacity after a solve.

use super::occupancy::Occupancy;
use super::paths::MAX_HOPS;
use super::Flow;
use crate::engine::time::{ceil_time, f64_of, round_time, S};
use crate::engine::Time;

/// Below this a capacity left is taken as exhausted, relative to the capacity (bytes/s), as in
/// [`crate::net::flow::max_min`].
const EPS: f64 = 1e-9;

/// A flow's bytes left below which it is done (float rounding of rate x time).
const DONE_BYTES: f64 = 1e-3;

/// A resource that only one flow crosses, with a capacity above the least on that flow's path
/// by more than this factor, never fills while the flow rises (the least one fills first and
/// freezes it), and never fills first: the solve leaves it out of the filling and gives it its
/// load from the flow's rate. The margin is far above the filling's rounding (about 1e-16
/// relative per step), so the rates are bit for bit those of a filling over every resource.
/// Most resources of a component are such (a host's engines and port, crossed by its own flow
/// only and looser than the long-haul link the flows share), so a solve looks at a few shared
/// resources instead of hundreds.
const LOOSER: f64 = 1.0 + 1e-6;

/// Not a position, not a local index.
const NONE: u32 = u32::MAX;

/// What a solve or a hold reads and writes of a flow, in two adjacent cache lines (one place
/// to fetch per flow instead of one per array).
#[derive(Debug, Clone, Copy, Default)]
#[repr(align(64))]
struct Hot {
    /// Bytes left, as of `since`.
    remaining: f64,
    rate: f64,
    /// When `remaining` was brought up to date.
    since: Time,
    /// A hold's work space: how long it is held.
    held_s: f64,
    /// The solve's and the hold's marks: in this solve's component (or visited by this hold);
    /// frozen by this solve's filling.
    mark: u32,
    frozen: u32,
    /// Its resources (the path's), `n` of them.
    res: [u32; MAX_HOPS + 2],
    /// Which of them are its own and [`LOOSER`] (a bit per place on the path), as of the last
    /// solve that visited it.
    own: u16,
    n: u8,
}

impl Hot {
    fn res(&self) -> &[u32] {
        &self.res[..self.n as usize]
    }
}

/// The flows, by slot, and for each resource the slots through it.
#[derive(Default)]
pub struct Flows {
    slots: Vec<Flow>,
    hot: Vec<Hot>,
    /// When each is done at its rate (Time::MAX: no rate, or a free slot), kept apart so that
    /// finding the next one reads a dense array.
    due: Vec<Time>,
    /// Where each sits in the list of each resource of its path.
    pos: Vec<[u32; MAX_HOPS + 2]>,
    free: Vec<u32>,
    /// The flows on the wire in the order they end when due at the same instant (started
    /// last, first to fill the place of one that ends: a vector's swap-remove), and each
    /// one's place in it.
    order: Vec<u32>,
    place: Vec<u32>,
    through: Vec<Vec<u32>>,
    /// The solve's work space, kept from solve to solve (with the marks in [`Hot`]): the flows of
    /// the component (or those a hold visits), the resources the filling looks at and each one's
    /// index among them, its capacity left, unfrozen flows and load.
    epoch: u32,
    part: Vec<u32>,
    marked: Vec<u32>,
    local: Vec<u32>,
    left: Vec<f64>,
    count: Vec<u32>,
    load: Vec<f64>,
}

impl Flows {
    pub fn new(resources: usize) -> Self {
        Flows { through: vec![Vec::new(); resources], local: vec![NONE; resources], ..Flows::default() }
    }

    /// Flow `f` is on the wire from `now`, with no rate until the next solve.
    pub fn insert(&mut self, f: Flow, now: Time) {
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(f);
                self.hot.push(Hot::default());
                self.due.push(Time::MAX);
                self.pos.push([NONE; MAX_HOPS + 2]);
                self.place.push(NONE);
                (self.slots.len() - 1) as u32
            }
        };
        let s = slot as usize;
        let path = f.path;
        let (mut res, n) = ([0; MAX_HOPS + 2], path.resources().len());
        res[..n].copy_from_slice(path.resources());
        self.hot[s] = Hot { remaining: f.wqe.len as f64, since: now, res, n: n as u8, ..Hot::default() };
        (self.slots[s], self.due[s]) = (f, Time::MAX);
        self.place[s] = self.order.len() as u32;
        self.order.push(slot);
        for (k, &r) in path.resources().iter().enumerate() {
            let list = &mut self.through[r as usize];
            self.pos[s][k] = list.len() as u32;
            list.push(slot);
        }
    }

    /// Take the flow of `slot` off the wire.
    fn remove(&mut self, slot: u32) -> Flow {
        let s = slot as usize;
        let h = self.hot[s];
        for (k, &r) in h.res().iter().enumerate() {
            let list = &mut self.through[r as usize];
            let at = self.pos[s][k];
            list.swap_remove(at as usize);
            if let Some(&moved) = list.get(at as usize) {
                let m = moved as usize;
                let j = self.hot[m].res().iter().position(|&q| q == r).expect("on its path");
                self.pos[m][j] = at;
            }
        }
        let at = self.place[s] as usize;
        self.order.swap_remove(at);
        if let Some(&moved) = self.order.get(at) {
            self.place[moved as usize] = at as u32;
        }
        self.due[s] = Time::MAX;
        self.free.push(slot);
        self.slots[s]
    }

    /// Take off the wire the flows done by `now` (due, or with less than [`DONE_BYTES`] left),
    /// in `order`, into `done`.
    pub fn take_done(&mut self, now: Time, done: &mut Vec<Flow>) {
        let mut i = 0;
        while i < self.order.len() {
            let slot = self.order[i];
            let s = slot as usize;
            let f = &self.hot[s];
            let left = f.remaining - f.rate * (f64_of(now - f.since) / S as f64);
            if self.due[s] <= now || left <= DONE_BYTES {
                let f = self.remove(slot);
                done.push(f);
            } else {
                i += 1;
            }
        }
    }

    /// A mark no slot carries yet (the marks start again from 1 when the count wraps).
    fn next_epoch(&mut self) -> u32 {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            for h in &mut self.hot {
                (h.mark, h.frozen) = (0, 0);
            }
            self.epoch = 1;
        }
        self.epoch
    }

    /// When the next flow is done at its rate.
    pub fn next_due(&self) -> Option<Time> {
        self.due.iter().copied().min().filter(|&t| t != Time::MAX)
    }

    /// Count, for every flow through a resource with a hold since the last call, the longest
    /// hold on its path (once: a hold anywhere frees its share everywhere), at `now`: it falls
    /// behind by its rate times the hold and is done that much later.
    pub fn hold(&mut self, now: Time, occupancy: &mut Occupancy) {
        if !occupancy.holding() {
            return;
        }
        let epoch = self.next_epoch();
        // Each flow's longest hold, from the holding resources' lists (the others hold for 0).
        self.part.clear();
        for &r in occupancy.holding_resources() {
            let held = occupancy.held_at_s(r);
            for &slot in &self.through[r as usize] {
                let s = slot as usize;
                let f = &mut self.hot[s];
                if f.mark != epoch {
                    (f.mark, f.held_s) = (epoch, held);
                    self.part.push(slot);
                } else {
                    f.held_s = f.held_s.max(held);
                }
            }
        }
        for &slot in &self.part {
            let s = slot as usize;
            let f = &mut self.hot[s];
            let held = f.held_s;
            f.remaining -= f.rate * (f64_of(now - f.since) / S as f64 - held);
            f.since = now;
            if held > 0.0 && self.due[s] != Time::MAX {
                self.due[s] += round_time(held * S as f64);
            }
        }
        occupancy.clear_held();
    }

    /// Solve again, at `now`, the rates of the flows connected through shared resources to the
    /// `touched` ones (the resources of flows started or ended since the last solve; max-min
    /// shares of flows that share nothing with them do not change), and give `occupancy` every
    /// such resource's load. Returns the highest load over capacity among them.
    pub fn solve(&mut self, now: Time, touched: &[u32], capacity: &[f64], occupancy: &mut Occupancy) -> f64 {
        let epoch = self.next_epoch();
        // The component: the touched resources, the flows through them, their resources in turn.
        self.marked.clear();
        self.part.clear();
        for &r in touched {
            if self.local[r as usize] == NONE {
                self.local[r as usize] = self.marked.len() as u32;
                self.marked.push(r);
            }
        }
        let mut k = 0;
        while k < self.marked.len() {
            let r = self.marked[k] as usize;
            k += 1;
            for &slot in &self.through[r] {
                let f = &mut self.hot[slot as usize];
                if f.mark == epoch {
                    continue;
                }
                f.mark = epoch;
                self.part.push(slot);
                // Its bytes left up to now, at the rate it had.
                f.remaining -= f.rate * (f64_of(now - f.since) / S as f64);
                f.since = now;
                let least = f.res().iter().map(|&q| capacity[q as usize]).fold(f64::INFINITY, f64::min);
                let mut own = 0;
                for (k, &q) in f.res().iter().enumerate() {
                    if self.local[q as usize] != NONE {
                        continue;
                    }
                    if self.through[q as usize].len() == 1 && capacity[q as usize] > least * LOOSER {
                        own |= 1 << k;
                    } else {
                        self.local[q as usize] = self.marked.len() as u32;
                        self.marked.push(q);
                    }
                }
                f.own = own;
            }
        }
        self.fill(capacity);
        // Each flow's due time, and the loads its rate puts on its resources.
        self.load.clear();
        self.load.resize(self.marked.len(), 0.0);
        let mut highest: f64 = 0.0;
        for &slot in &self.part {
            let s = slot as usize;
            let f = &self.hot[s];
            // Done when its bytes left go at its rate; never, without a rate (or beyond 40 days).
            let ps = (f.remaining / f.rate * S as f64).max(0.0);
            self.due[s] = if f.rate > 0.0 && ps < 3.5e18 { now + ceil_time(ps) } else { Time::MAX };
            for (k, &q) in f.res().iter().enumerate() {
                if f.own & 1 << k == 0 {
                    self.load[self.local[q as usize] as usize] += f.rate;
                } else {
                    // Its own: its load is the flow's alone (capacity above 0, being looser).
                    let share = f.rate / capacity[q as usize];
                    highest = highest.max(share);
                    occupancy.set_load(now, q, share);
                }
            }
        }
        for (i, &r) in self.marked.iter().enumerate() {
            let c = capacity[r as usize];
            let share = if c > 0.0 { self.load[i] / c } else { 0.0 };
            highest = highest.max(share);
            occupancy.set_load(now, r, share);
            self.local[r as usize] = NONE;
        }
        highest
    }

    /// Progressive filling over the component (`part`, `marked`): all unfrozen flows rise
    /// together; a resource that fills freezes the flows through it; a flow through a resource
    /// of capacity 0 (a link that is down) stays at 0. A flow's own [`LOOSER`] resources are
    /// not marked: they would never fill first.
    fn fill(&mut self, capacity: &[f64]) {
        let epoch = self.epoch;
        self.left.clear();
        self.count.clear();
        for &r in &self.marked {
            self.left.push(capacity[r as usize]);
            self.count.push(self.through[r as usize].len() as u32);
        }
        let mut unfrozen = self.part.len();
        let mut level = 0.0;
        let mut first = true;
        while unfrozen > 0 {
            // The resource that fills first, which freezes its flows even if rounding leaves it
            // a hair above empty.
            let mut tightest = NONE as usize;
            if !first {
                // The common increment every unfrozen flow can still take.
                let mut step = f64::INFINITY;
                for (i, (&l, &n)) in self.left.iter().zip(&self.count).enumerate() {
                    if n > 0 && l / (n as f64) < step {
                        (step, tightest) = (l / n as f64, i);
                    }
                }
                let step = step.max(0.0);
                level += step;
                for (l, &n) in self.left.iter_mut().zip(&self.count) {
                    if n > 0 {
                        *l -= step * n as f64;
                    }
                }
            }
            for i in 0..self.marked.len() {
                let r = self.marked[i] as usize;
                let full = if first { self.left[i] <= EPS } else { self.left[i] <= EPS * capacity[r].max(1.0) };
                if self.count[i] == 0 || !(full || i == tightest) {
                    continue;
                }
                for j in 0..self.through[r].len() {
                    let s = self.through[r][j] as usize;
                    if self.hot[s].frozen == epoch {
                        continue;
                    }
                    (self.hot[s].frozen, self.hot[s].rate) = (epoch, level);
                    unfrozen -= 1;
                    let f = &self.hot[s];
                    for (k, &q) in f.res().iter().enumerate() {
                        if f.own & 1 << k == 0 {
                            self.count[self.local[q as usize] as usize] -= 1;
                        }
                    }
                }
            }
            first = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::paths::Path;
    use super::super::{Flow, Wqe};
    use super::*;
    use crate::ib::Op;
    use crate::net::flow::{max_min, Demand};
    use proptest::prelude::*;

    fn flow(resources: &[u32], len: u32) -> Flow {
        let wqe = Wqe { op: Op::Write, len, id: 0, ready: 0 };
        Flow { qp: 0, wqe, path: Path::over(resources) }
    }

    /// The rates of the flows on the wire, by slot, as max-min over every flow finds them.
    fn oracle(flows: &Flows, capacity: &[f64]) -> Vec<(usize, f64)> {
        let live: Vec<usize> = flows.order.iter().map(|&s| s as usize).collect();
        let demands: Vec<Demand> = live
            .iter()
            .map(|&s| Demand::merged(flows.hot[s].res().iter().map(|&r| (r as usize, 1.0)), f64::INFINITY))
            .collect();
        live.into_iter().zip(max_min(capacity, &demands)).collect()
    }

    /// Every flow is in the list of each of its resources at the place it records, and the
    /// lists hold nothing else.
    fn lists_agree(flows: &Flows) -> bool {
        let on_lists: usize = flows.through.iter().map(Vec::len).sum();
        let on_paths: usize = flows.order.iter().map(|&s| flows.hot[s as usize].n as usize).sum();
        on_lists == on_paths
            && flows.order.iter().all(|&slot| {
                let s = slot as usize;
                let h = &flows.hot[s];
                h.res().iter().enumerate().all(|(k, &r)| flows.through[r as usize][flows.pos[s][k] as usize] == slot)
            })
    }

    proptest! {
        /// Flows started and ended in any order, each solve re-rating only the flows connected
        /// to them: every flow's rate is what max-min over all the flows gives it, and the
        /// resource lists stay consistent.
        #[test]
        fn incremental_solves_give_the_max_min_rates(
            capacity in prop::collection::vec(prop_oneof![Just(0.0), 1.0f64..1e10], 12),
            paths in prop::collection::vec(prop::collection::btree_set(0u32..12, 1..=MAX_HOPS + 2), 1..40),
            ends in prop::collection::vec(any::<prop::sample::Index>(), 0..30),
        ) {
            let mut flows = Flows::new(capacity.len());
            let mut occupancy = Occupancy::new(capacity.len());
            let mut now: Time = 0;
            let mut ends = ends.into_iter();
            for p in &paths {
                let resources: Vec<u32> = p.iter().copied().collect();
                flows.insert(flow(&resources, 1 << 20), now);
                let mut touched = resources.clone();
                // Now and then one of those on the wire ends.
                if let Some(i) = ends.next().filter(|_| flows.order.len() > 1) {
                    let slot = flows.order[i.index(flows.order.len())];
                    touched.extend_from_slice(flows.hot[slot as usize].res());
                    flows.remove(slot);
                }
                now += 1000;
                let highest = flows.solve(now, &touched, &capacity, &mut occupancy);
                prop_assert!(highest <= 1.0 + 1e-9, "a resource above its capacity: {}", highest);
                prop_assert!(lists_agree(&flows));
                for (s, want) in oracle(&flows, &capacity) {
                    let got = flows.hot[s].rate;
                    prop_assert!((got - want).abs() <= 1e-9 * want.max(1.0), "slot {}: {} against {}", s, got, want);
                }
            }
        }
    }

    /// Marks left from before the count wrapped are not taken for this solve's.
    #[test]
    fn the_marks_survive_their_count_wrapping() {
        let capacity = [1e9, 1e9, 1e9];
        let mut flows = Flows::new(3);
        let mut occupancy = Occupancy::new(3);
        flows.insert(flow(&[0, 1], 1 << 20), 0);
        flows.insert(flow(&[1, 2], 1 << 20), 0);
        // Fresh slots carry mark 0, which the count reaches next.
        flows.epoch = u32::MAX;
        for t in 0..3 {
            flows.solve(t, &[0, 1, 2], &capacity, &mut occupancy);
            assert_eq!(flows.order.iter().map(|&s| flows.hot[s as usize].rate).collect::<Vec<_>>(), [5e8, 5e8]);
        }
    }

    #[test]
    fn a_flow_is_due_when_its_bytes_go_at_its_rate_and_ends_then() {
        let capacity = [1e9, 2e9];
        let mut flows = Flows::new(2);
        let mut occupancy = Occupancy::new(2);
        flows.insert(flow(&[0, 1], 1_000_000), 0);
        flows.insert(flow(&[0], 1_000_000), 0);
        flows.solve(0, &[0, 1], &capacity, &mut occupancy);
        // Two flows share 1 GB/s: 1 MB each takes 2 ms (to the picosecond the rounding leaves).
        let due = flows.next_due().expect("both have a rate");
        assert!(due.abs_diff(2 * crate::engine::time::MS) <= 1, "{due}");
        let mut done = Vec::new();
        flows.take_done(due - 1000, &mut done);
        assert!(done.is_empty());
        flows.take_done(due, &mut done);
        assert_eq!(done.len(), 2);
        assert!(flows.next_due().is_none() && flows.through.iter().all(Vec::is_empty));
    }
}
