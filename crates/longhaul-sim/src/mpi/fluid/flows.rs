//! The flows on the wire at flow level, and their max-min rates, kept in classes that share one
//! rate and one clock.
//!
//! The rates are max-min fair, found by progressive filling (Bertsekas & Gallager, "Data
//! Networks", 2nd ed., section 6.5.2), as [`crate::net::flow::max_min`] finds them, for what a
//! flow is here: it crosses each resource of its path once (weight 1) and has no cap of its own.
//! So every flow not yet frozen is at the same level, and two flows that cross the same shared
//! resources get the same rate from any filling. A resource only one flow crosses, with a
//! capacity above the least on that flow's path by more than [`LOOSER`], never fills while the
//! flow rises and never fills first: it is the flow's *own*, left out of the filling, its load
//! read from the flow's rate. The rest of a flow's path are its *marked* resources, and flows
//! with the same marked resources form a class: one count, one rate, one clock (the bytes each
//! of its flows has moved since the class began, less its holds) and a heap of its flows'
//! finishes on that clock (bytes left plus the clock when they were counted), which a rate
//! change does not reorder. The filling runs over classes weighted by their counts, and a rate
//! change is one clock update, not one per flow: the ~2,000 flows an alltoall at 4,096 ranks
//! puts across the long-haul link are one class each way. A flow changes class when a second
//! flow comes through one of its own resources (which is then shared) or the other one leaves.
//!
//! Every resource keeps the list of the flows through it and of the classes that mark it, so
//! what a start or an end can change is found by walking those lists (the classes connected to
//! it through shared resources), not by scanning every flow; the next class due and the next
//! flow due in a class come from heaps (entries made stale by a change are skipped when met).
//!
//! Invariants (this module's tests check them, with [`crate::net::flow::max_min`] over all the
//! flows as the oracle of the rates; `tests/mpi_fluid.rs` checks whole runs): a flow is in the
//! list of every resource of its path and of no other, at the position it records; its class's
//! key is its path less its own resources; a class counts its flows and is in the list of every
//! resource of its key and of no other; no resource carries more than its capacity after a solve.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use super::occupancy::Occupancy;
use super::paths::MAX_HOPS;
use super::Flow;
use crate::engine::time::{ceil_time, f64_of, S};
use crate::engine::Time;

/// Below this a capacity left is taken as exhausted, relative to the capacity (bytes/s), as in
/// [`crate::net::flow::max_min`].
const EPS: f64 = 1e-9;

/// A flow's bytes left below which it is done (float rounding of rate x time).
const DONE_BYTES: f64 = 1e-3;

/// How much looser than the least on its path a resource only one flow crosses must be to be
/// left out of the filling as the flow's own. The margin is far above the filling's rounding
/// (about 1e-16 relative per step), so the rates are those of a filling over every resource.
/// Most resources are such (a host's engines and port, crossed by its own flow only and looser
/// than the long-haul link the flows share).
const LOOSER: f64 = 1.0 + 1e-6;

/// Not a position, not a local index, not a class.
const NONE: u32 = u32::MAX;

/// A path's resources at most.
const PATH: usize = MAX_HOPS + 2;

/// A class's marked resources, sorted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
struct Key {
    res: [u32; PATH],
    n: u8,
}

impl Key {
    fn res(&self) -> &[u32] {
        &self.res[..self.n as usize]
    }

    fn of(resources: impl Iterator<Item = u32>) -> Key {
        let mut k = Key::default();
        for r in resources {
            k.res[k.n as usize] = r;
            k.n += 1;
        }
        k.res[..k.n as usize].sort_unstable();
        k
    }
}

/// A flow on the wire (`class` NONE: a free slot).
#[derive(Debug, Clone, Copy)]
struct Slot {
    flow: Flow,
    class: u32,
    /// Its class's clock when it is done.
    finish: f64,
    /// Changed with `finish` and `class`: the heap entries of before are stale.
    stamp: u32,
    /// Where it sits in the list of each resource of its path.
    pos: [u32; PATH],
    /// Which resources of its path are its own (a bit per place on the path).
    own: u16,
    /// A hold's marks and work space: visited by this hold, how long it is held.
    mark: u32,
    held_s: f64,
}

impl Slot {
    fn res(&self) -> &[u32] {
        self.flow.path.resources()
    }
}

/// A heap entry: (finish or due time as ordered bits, slot or class, stamp or generation).
type Entry = Reverse<(u64, u32, u32)>;

/// Flows with the same marked resources (`count` 0: a free class).
#[derive(Debug, Default)]
struct Class {
    key: Key,
    count: u32,
    /// Each flow's rate (bytes/s), as of the last solve that reached the class.
    rate: f64,
    /// Bytes each of its flows has moved since the class began, less its holds, as of `since`.
    clock: f64,
    since: Time,
    /// When its first flow is done at its rate (Time::MAX: none, or no rate).
    due: Time,
    /// Its flows by finish.
    finishes: BinaryHeap<Entry>,
    /// Where it sits in the class list of each resource of its key.
    pos: [u32; PATH],
    /// Changed when the class is freed: the due times of before are stale.
    generation: u32,
    /// The solve's and the hold's marks, and the hold's work space.
    mark: u32,
    frozen: u32,
    held_s: f64,
}

impl Class {
    /// The clock brought up to `now` at the class's rate.
    fn advance(&mut self, now: Time) {
        self.clock += self.rate * (f64_of(now - self.since) / S as f64);
        self.since = now;
    }
}

/// The flows, by slot, their classes, and for each resource the slots and classes through it.
#[derive(Default)]
pub struct Flows {
    capacity: Vec<f64>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    through: Vec<Vec<u32>>,
    classes: Vec<Class>,
    free_classes: Vec<u32>,
    class_of: HashMap<Key, u32>,
    /// For each resource the classes whose key holds it.
    marking: Vec<Vec<u32>>,
    /// The classes by due time.
    dues: BinaryHeap<Entry>,
    /// Classes a flow left or joined other than by starting or ending (it moved): solved next
    /// with the touched resources.
    moved: Vec<u32>,
    /// Resources that became a flow's own since the last solve.
    to_link: Vec<u32>,
    /// The solve's and the hold's work space, kept from solve to solve (with the marks in the
    /// slots and classes): the classes of the component (or the classes and flows a hold
    /// visits), the resources the filling looks at and each one's index among them, its
    /// capacity left, unfrozen flows and load.
    epoch: u32,
    part: Vec<u32>,
    held: Vec<u32>,
    marked: Vec<u32>,
    local: Vec<u32>,
    left: Vec<f64>,
    count: Vec<u64>,
    load: Vec<f64>,
}

impl Flows {
    /// No flows, over resources of these capacities (bytes/s).
    pub fn new(capacity: Vec<f64>) -> Self {
        let n = capacity.len();
        Flows {
            capacity,
            through: vec![Vec::new(); n],
            marking: vec![Vec::new(); n],
            local: vec![NONE; n],
            ..Flows::default()
        }
    }

    /// Flow `f` is on the wire from `now`, its rate that of its class until the next solve.
    pub fn insert(&mut self, f: Flow, now: Time, occupancy: &mut Occupancy) {
        let slot = self.free.pop().unwrap_or_else(|| {
            let blank =
                Slot { flow: f, class: NONE, finish: 0.0, stamp: 0, pos: [NONE; PATH], own: 0, mark: 0, held_s: 0.0 };
            self.slots.push(blank);
            (self.slots.len() - 1) as u32
        });
        let s = slot as usize;
        (self.slots[s].flow, self.slots[s].own) = (f, 0);
        for (k, &r) in f.path.resources().iter().enumerate() {
            let list = &mut self.through[r as usize];
            self.slots[s].pos[k] = list.len() as u32;
            list.push(slot);
            if list.len() == 2 {
                // The flow there alone until now shares it from now.
                let other = list[0];
                self.share(other, r, now, occupancy);
            }
        }
        let least = self.least(&f);
        let mut own = 0;
        for (k, &r) in f.path.resources().iter().enumerate() {
            if self.through[r as usize].len() == 1 && self.capacity[r as usize] > least * LOOSER {
                own |= 1 << k;
            }
        }
        self.slots[s].own = own;
        let key = Key::of(f.path.resources().iter().enumerate().filter(|(k, _)| own & 1 << k == 0).map(|(_, &r)| r));
        let c = self.class_for(key, now, occupancy);
        self.join(slot, c, f.wqe.len as f64, now);
        for (k, &r) in f.path.resources().iter().enumerate() {
            if own & 1 << k != 0 {
                self.to_link.push(r);
            }
        }
    }

    /// Flow `slot`'s resource `r` is its own.
    fn owns(&self, slot: u32, r: u32) -> bool {
        let f = &self.slots[slot as usize];
        f.res().iter().position(|&q| q == r).is_some_and(|k| f.own & 1 << k != 0)
    }

    /// The least capacity on `f`'s path.
    fn least(&self, f: &Flow) -> f64 {
        f.path.resources().iter().map(|&q| self.capacity[q as usize]).fold(f64::INFINITY, f64::min)
    }

    /// The class of `key`, a new one (no rate yet) if none has it.
    fn class_for(&mut self, key: Key, now: Time, occupancy: &mut Occupancy) -> u32 {
        if let Some(&c) = self.class_of.get(&key) {
            return c;
        }
        let c = self.free_classes.pop().unwrap_or_else(|| {
            self.classes.push(Class::default());
            (self.classes.len() - 1) as u32
        });
        let class = &mut self.classes[c as usize];
        (class.key, class.rate, class.clock, class.since, class.due) = (key, 0.0, 0.0, now, Time::MAX);
        for (k, &r) in key.res().iter().enumerate() {
            let list = &mut self.marking[r as usize];
            class.pos[k] = list.len() as u32;
            list.push(c);
        }
        self.class_of.insert(key, c);
        occupancy.set_class_rate(c, 0.0);
        c
    }

    /// Class `c` has no flow left: off the resources' lists, its id free.
    fn free_class(&mut self, c: u32) {
        let class = &mut self.classes[c as usize];
        let key = class.key;
        class.finishes.clear();
        (class.generation, class.due) = (class.generation.wrapping_add(1), Time::MAX);
        for (k, &r) in key.res().iter().enumerate() {
            let at = self.classes[c as usize].pos[k];
            let list = &mut self.marking[r as usize];
            list.swap_remove(at as usize);
            if let Some(&moved) = list.get(at as usize) {
                let m = &mut self.classes[moved as usize];
                let j = m.key.res().iter().position(|&q| q == r).expect("in its key");
                m.pos[j] = at;
            }
        }
        self.class_of.remove(&key);
        self.free_classes.push(c);
    }

    /// Flow `slot` joins class `c` at `now` with `remaining` bytes to go.
    fn join(&mut self, slot: u32, c: u32, remaining: f64, now: Time) {
        let class = &mut self.classes[c as usize];
        class.advance(now);
        class.count += 1;
        let f = &mut self.slots[slot as usize];
        (f.class, f.finish, f.stamp) = (c, class.clock + remaining, f.stamp.wrapping_add(1));
        class.finishes.push(Reverse((f.finish.to_bits(), slot, f.stamp)));
    }

    /// Flow `slot` leaves its class at `now`: its bytes left.
    fn leave(&mut self, slot: u32, now: Time) -> f64 {
        let f = &mut self.slots[slot as usize];
        let c = f.class;
        let class = &mut self.classes[c as usize];
        class.advance(now);
        let remaining = f.finish - class.clock;
        (f.class, f.stamp) = (NONE, f.stamp.wrapping_add(1));
        class.count -= 1;
        if class.count == 0 {
            self.free_class(c);
        } else {
            self.moved.push(c);
        }
        remaining
    }

    /// Flow `slot`'s own resource `r` is shared from `now` (a second flow came through it).
    fn share(&mut self, slot: u32, r: u32, now: Time, occupancy: &mut Occupancy) {
        let f = self.slots[slot as usize];
        let k = f.res().iter().position(|&q| q == r).expect("on its path");
        if f.own & 1 << k == 0 {
            return;
        }
        occupancy.unlink(r);
        let key = self.classes[f.class as usize].key;
        self.slots[slot as usize].own &= !(1 << k);
        self.move_to(slot, Key::of(key.res().iter().copied().chain([r])), now, occupancy);
    }

    /// Resource `r` of flow `slot`'s path is crossed by it alone from `now`: its own if looser.
    fn release(&mut self, slot: u32, r: u32, now: Time, occupancy: &mut Occupancy) {
        let f = self.slots[slot as usize];
        if self.capacity[r as usize] <= self.least(&f.flow) * LOOSER {
            return;
        }
        let k = f.res().iter().position(|&q| q == r).expect("on its path");
        let key = self.classes[f.class as usize].key;
        self.slots[slot as usize].own |= 1 << k;
        self.move_to(slot, Key::of(key.res().iter().copied().filter(|&q| q != r)), now, occupancy);
        self.to_link.push(r);
    }

    /// Flow `slot` moves to the class of `key` at `now`, with the bytes it has left; its own
    /// resources' loads follow its new class.
    fn move_to(&mut self, slot: u32, key: Key, now: Time, occupancy: &mut Occupancy) {
        let remaining = self.leave(slot, now);
        let c = self.class_for(key, now, occupancy);
        self.join(slot, c, remaining, now);
        self.moved.push(c);
        let f = self.slots[slot as usize];
        for (k, &r) in f.res().iter().enumerate() {
            if f.own & 1 << k != 0 && occupancy.linked(r) {
                occupancy.relink(r, c);
            }
        }
    }

    /// Take the flow of `slot` off the wire at `now`.
    fn remove(&mut self, slot: u32, now: Time, occupancy: &mut Occupancy) -> Flow {
        self.leave(slot, now);
        let f = self.slots[slot as usize];
        for (k, &r) in f.res().iter().enumerate() {
            let list = &mut self.through[r as usize];
            let at = f.pos[k];
            list.swap_remove(at as usize);
            if let Some(&moved) = list.get(at as usize) {
                let m = &mut self.slots[moved as usize];
                let j = m.res().iter().position(|&q| q == r).expect("on its path");
                m.pos[j] = at;
            }
            if f.own & 1 << k != 0 {
                // Its load stays until the solve of this instant (the resource is touched).
                occupancy.unlink(r);
            }
            if let [alone] = self.through[r as usize][..] {
                self.release(alone, r, now, occupancy);
            }
        }
        self.free.push(slot);
        f.flow
    }

    /// Class `c`'s first valid finish, the stale ones above it dropped.
    fn first_finish(&mut self, c: u32) -> Option<(f64, u32)> {
        let class = &mut self.classes[c as usize];
        while let Some(&Reverse((bits, slot, stamp))) = class.finishes.peek() {
            let f = &self.slots[slot as usize];
            if f.stamp == stamp && f.class == c {
                return Some((f64::from_bits(bits), slot));
            }
            class.finishes.pop();
        }
        None
    }

    /// Class `c`'s due time from its first finish, its clock being as of `since`.
    fn set_due(&mut self, c: u32) {
        let due = match self.first_finish(c) {
            Some((finish, _)) => {
                let class = &self.classes[c as usize];
                // Done when its bytes left go at its rate; never, without a rate (or beyond 40 days).
                let ps = ((finish - class.clock) / class.rate * S as f64).max(0.0);
                if class.rate > 0.0 && ps < 3.5e18 {
                    class.since + ceil_time(ps)
                } else {
                    Time::MAX
                }
            }
            None => Time::MAX,
        };
        let class = &mut self.classes[c as usize];
        if due != class.due {
            class.due = due;
            if due != Time::MAX {
                self.dues.push(Reverse((due, c, class.generation)));
            }
        }
    }

    /// Whether a due-time entry still stands (a class with no flow is freed, its generation moved on).
    fn stands(&self, due: Time, c: u32, generation: u32) -> bool {
        let class = &self.classes[c as usize];
        class.generation == generation && class.due == due
    }

    /// Take off the wire the flows done by `now` (those of the classes due, with less than
    /// [`DONE_BYTES`] left), by class due time, then finish, into `done`.
    pub fn take_done(&mut self, now: Time, done: &mut Vec<Flow>, occupancy: &mut Occupancy) {
        while let Some(&Reverse((due, c, generation))) = self.dues.peek() {
            if due > now {
                break;
            }
            self.dues.pop();
            if !self.stands(due, c, generation) {
                continue;
            }
            self.classes[c as usize].advance(now);
            while let Some((finish, slot)) = self.first_finish(c) {
                if finish - self.classes[c as usize].clock > DONE_BYTES {
                    break;
                }
                done.push(self.remove(slot, now, occupancy));
                if self.classes[c as usize].generation != generation {
                    break;
                }
            }
            if self.classes[c as usize].generation == generation {
                self.set_due(c);
            }
        }
    }

    /// A mark no slot or class carries yet (the marks start again from 1 when the count wraps).
    fn next_epoch(&mut self) -> u32 {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            for f in &mut self.slots {
                f.mark = 0;
            }
            for c in &mut self.classes {
                (c.mark, c.frozen) = (0, 0);
            }
            self.epoch = 1;
        }
        self.epoch
    }

    /// When the next flow is done at its rate.
    pub fn next_due(&mut self) -> Option<Time> {
        while let Some(&Reverse((due, c, generation))) = self.dues.peek() {
            if self.stands(due, c, generation) {
                return Some(due);
            }
            self.dues.pop();
        }
        None
    }

    /// Count, for every flow through a resource with a hold since the last call, the longest
    /// hold on its path (once: a hold anywhere frees its share everywhere), at `now`: it falls
    /// behind by its rate times the hold and is done that much later. A hold on a shared
    /// resource holds the classes that mark it (their clocks fall behind); one on a flow's own
    /// resource holds that flow alone, for what its class's hold does not cover.
    pub fn hold(&mut self, now: Time, occupancy: &mut Occupancy) {
        if !occupancy.holding() {
            return;
        }
        let epoch = self.next_epoch();
        self.part.clear();
        self.held.clear();
        for &r in occupancy.holding_resources() {
            let held = occupancy.held_at_s(r);
            let alone = match self.through[r as usize][..] {
                [slot] if self.owns(slot, r) => Some(slot),
                _ => None,
            };
            if let Some(slot) = alone {
                let f = &mut self.slots[slot as usize];
                if longest_hold(&mut f.mark, &mut f.held_s, epoch, held) {
                    self.held.push(slot);
                }
                continue;
            }
            for &c in &self.marking[r as usize] {
                let class = &mut self.classes[c as usize];
                if longest_hold(&mut class.mark, &mut class.held_s, epoch, held) {
                    self.part.push(c);
                }
            }
        }
        for i in 0..self.part.len() {
            let c = self.part[i];
            let class = &mut self.classes[c as usize];
            class.clock += class.rate * (f64_of(now - class.since) / S as f64 - class.held_s);
            class.since = now;
            if class.held_s > 0.0 {
                self.set_due(c);
            }
        }
        for i in 0..self.held.len() {
            let slot = self.held[i];
            let f = self.slots[slot as usize];
            let class = &mut self.classes[f.class as usize];
            let by_class = if class.mark == epoch { class.held_s } else { 0.0 };
            if f.held_s > by_class && class.rate > 0.0 {
                class.advance(now);
                let f = &mut self.slots[slot as usize];
                (f.finish, f.stamp) = (f.finish + class.rate * (f.held_s - by_class), f.stamp.wrapping_add(1));
                class.finishes.push(Reverse((f.finish.to_bits(), slot, f.stamp)));
                let c = f.class;
                self.set_due(c);
            }
        }
        occupancy.clear_held();
    }

    /// Solve again, at `now`, the rates of the classes connected through shared resources to the
    /// `touched` resources (those of flows started or ended since the last solve) and to the
    /// classes flows moved to or from (max-min shares of flows that share nothing with them do
    /// not change), and give `occupancy` every such resource's load. Returns the highest load
    /// over capacity among them.
    pub fn solve(&mut self, now: Time, touched: &[u32], occupancy: &mut Occupancy) -> f64 {
        let epoch = self.next_epoch();
        // The component: the touched resources and moved classes, the classes marking them,
        // their keys' resources in turn.
        self.marked.clear();
        self.part.clear();
        for &r in touched {
            self.mark_resource(r);
        }
        let mut moved = std::mem::take(&mut self.moved);
        for c in moved.drain(..) {
            self.mark_class(c, epoch);
        }
        self.moved = moved;
        let mut k = 0;
        while k < self.marked.len() {
            let r = self.marked[k] as usize;
            k += 1;
            for i in 0..self.marking[r].len() {
                let c = self.marking[r][i];
                self.mark_class(c, epoch);
            }
        }
        for &c in &self.part {
            self.classes[c as usize].advance(now);
        }
        self.fill();
        // Each class's due time, and the loads its rate puts on its resources.
        self.load.clear();
        self.load.resize(self.marked.len(), 0.0);
        for i in 0..self.part.len() {
            let c = self.part[i];
            self.set_due(c);
            let class = &self.classes[c as usize];
            occupancy.set_class_rate(c, class.rate);
            for &q in class.key.res() {
                self.load[self.local[q as usize] as usize] += class.count as f64 * class.rate;
            }
        }
        // Resources that became a flow's own since the last solve follow its class from now
        // (until then their load stayed as the last solve left it).
        for i in 0..self.to_link.len() {
            let r = self.to_link[i];
            if let [slot] = self.through[r as usize][..] {
                if self.owns(slot, r) {
                    let c = self.slots[slot as usize].class;
                    occupancy.link(now, r, c, self.capacity[r as usize]);
                }
            }
        }
        self.to_link.clear();
        let mut highest: f64 = 0.0;
        for (i, &r) in self.marked.iter().enumerate() {
            self.local[r as usize] = NONE;
            if occupancy.linked(r) {
                // Some flow's own: its load follows that flow's class.
                continue;
            }
            let c = self.capacity[r as usize];
            let share = if c > 0.0 { self.load[i] / c } else { 0.0 };
            highest = highest.max(share);
            occupancy.set_load(now, r, share);
        }
        highest
    }

    fn mark_resource(&mut self, r: u32) {
        if self.local[r as usize] == NONE {
            self.local[r as usize] = self.marked.len() as u32;
            self.marked.push(r);
        }
    }

    /// Class `c` (if it still has flows) joins the solve's component, with its key.
    fn mark_class(&mut self, c: u32, epoch: u32) {
        let class = &mut self.classes[c as usize];
        if class.mark == epoch || class.count == 0 {
            return;
        }
        class.mark = epoch;
        self.part.push(c);
        let key = class.key;
        for &q in key.res() {
            self.mark_resource(q);
        }
    }

    /// Progressive filling over the component (`part`, `marked`), class by class weighted by
    /// its flows: all unfrozen flows rise together; a resource that fills freezes the classes
    /// marking it; a class marking a resource of capacity 0 (a link that is down) stays at 0.
    fn fill(&mut self) {
        let epoch = self.epoch;
        self.left.clear();
        self.count.clear();
        for &r in &self.marked {
            self.left.push(self.capacity[r as usize]);
            let flows: u64 = self.marking[r as usize].iter().map(|&c| u64::from(self.classes[c as usize].count)).sum();
            self.count.push(flows);
        }
        let mut unfrozen = self.part.len();
        let mut level = 0.0;
        let mut first = true;
        while unfrozen > 0 {
            // The resource that fills first, which freezes its classes even if rounding leaves
            // it a hair above empty.
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
                let full = if first { self.left[i] <= EPS } else { self.left[i] <= EPS * self.capacity[r].max(1.0) };
                if self.count[i] == 0 || !(full || i == tightest) {
                    continue;
                }
                for j in 0..self.marking[r].len() {
                    let class = &mut self.classes[self.marking[r][j] as usize];
                    if class.frozen == epoch {
                        continue;
                    }
                    (class.frozen, class.rate) = (epoch, level);
                    unfrozen -= 1;
                    for &q in class.key.res() {
                        self.count[self.local[q as usize] as usize] -= u64::from(class.count);
                    }
                }
            }
            first = false;
        }
    }
}

/// Keep the longer of `held_s` and `held` (`held` alone if `mark` is not this `epoch`'s): true
/// the first time in the epoch.
fn longest_hold(mark: &mut u32, held_s: &mut f64, epoch: u32, held: f64) -> bool {
    let first = *mark != epoch;
    *held_s = if first { held } else { held_s.max(held) };
    *mark = epoch;
    first
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

    fn live(flows: &Flows) -> Vec<u32> {
        (0..flows.slots.len() as u32).filter(|&s| flows.slots[s as usize].class != NONE).collect()
    }

    fn rate(flows: &Flows, slot: u32) -> f64 {
        flows.classes[flows.slots[slot as usize].class as usize].rate
    }

    /// The rates of the flows on the wire, by slot, as max-min over every flow finds them.
    fn oracle(flows: &Flows) -> Vec<(u32, f64)> {
        let live = live(flows);
        let demands: Vec<Demand> = live
            .iter()
            .map(|&s| Demand::merged(flows.slots[s as usize].res().iter().map(|&r| (r as usize, 1.0)), f64::INFINITY))
            .collect();
        live.into_iter().zip(max_min(&flows.capacity, &demands)).collect()
    }

    /// Every flow is in the list of each of its resources at the place it records, and the
    /// lists hold nothing else; its class's key is its path less its own resources, which are
    /// those it crosses alone and that are looser than its least; every class counts its flows
    /// and is in the list of each resource of its key and of no other.
    fn lists_agree(flows: &Flows) -> Result<(), String> {
        let live = live(flows);
        let on_lists: usize = flows.through.iter().map(Vec::len).sum();
        let on_paths: usize = live.iter().map(|&s| flows.slots[s as usize].res().len()).sum();
        if on_lists != on_paths {
            return Err(format!("{on_lists} on the lists, {on_paths} on the paths"));
        }
        let mut counts = vec![0; flows.classes.len()];
        for &slot in &live {
            let f = &flows.slots[slot as usize];
            let least = flows.least(&f.flow);
            for (k, &r) in f.res().iter().enumerate() {
                if flows.through[r as usize][f.pos[k] as usize] != slot {
                    return Err(format!("slot {slot} not at its place on {r}"));
                }
                let own = flows.through[r as usize].len() == 1 && flows.capacity[r as usize] > least * LOOSER;
                if own != (f.own & 1 << k != 0) {
                    return Err(format!("slot {slot}: resource {r} own {own} but marked {}", f.own));
                }
            }
            let key = Key::of(f.res().iter().enumerate().filter(|(k, _)| f.own & 1 << k == 0).map(|(_, &r)| r));
            if flows.classes[f.class as usize].key != key || flows.class_of[&key] != f.class {
                return Err(format!("slot {slot} in the wrong class"));
            }
            counts[f.class as usize] += 1;
        }
        for (c, class) in flows.classes.iter().enumerate() {
            if class.count != counts[c] {
                return Err(format!("class {c} counts {} of {}", class.count, counts[c]));
            }
            if class.count > 0 {
                for (k, &r) in class.key.res().iter().enumerate() {
                    if flows.marking[r as usize][class.pos[k] as usize] != c as u32 {
                        return Err(format!("class {c} not at its place on {r}"));
                    }
                }
            }
        }
        let on_marking: usize = flows.marking.iter().map(Vec::len).sum();
        let on_keys: usize = flows.classes.iter().filter(|c| c.count > 0).map(|c| c.key.res().len()).sum();
        if on_marking != on_keys {
            return Err(format!("{on_marking} classes on the lists, {on_keys} in the keys"));
        }
        Ok(())
    }

    proptest! {
        /// Flows started and ended in any order, each solve re-rating only the classes connected
        /// to them: every flow's rate is what max-min over all the flows gives it, and the
        /// resource and class lists stay consistent.
        #[test]
        fn incremental_solves_give_the_max_min_rates(
            capacity in prop::collection::vec(prop_oneof![Just(0.0), 1.0f64..1e10, Just(5e9)], 12),
            paths in prop::collection::vec(prop::collection::btree_set(0u32..12, 1..=MAX_HOPS + 2), 1..40),
            ends in prop::collection::vec(any::<prop::sample::Index>(), 0..30),
        ) {
            let mut flows = Flows::new(capacity.clone());
            let mut occupancy = Occupancy::new(capacity.len());
            let mut now: Time = 0;
            let mut ends = ends.into_iter();
            for p in &paths {
                let resources: Vec<u32> = p.iter().copied().collect();
                flows.insert(flow(&resources, 1 << 20), now, &mut occupancy);
                let mut touched = resources.clone();
                // Now and then one of those on the wire ends.
                let on = live(&flows);
                if let Some(i) = ends.next().filter(|_| on.len() > 1) {
                    let slot = on[i.index(on.len())];
                    touched.extend_from_slice(flows.slots[slot as usize].res());
                    flows.remove(slot, now, &mut occupancy);
                }
                now += 1000;
                let highest = flows.solve(now, &touched, &mut occupancy);
                prop_assert!(highest <= 1.0 + 1e-9, "a resource above its capacity: {}", highest);
                if let Err(e) = lists_agree(&flows) {
                    prop_assert!(false, "{}", e);
                }
                for (s, want) in oracle(&flows) {
                    let got = rate(&flows, s);
                    prop_assert!((got - want).abs() <= 1e-9 * want.max(1.0), "slot {}: {} against {}", s, got, want);
                }
            }
        }
    }

    /// Marks left from before the count wrapped are not taken for this solve's.
    #[test]
    fn the_marks_survive_their_count_wrapping() {
        let mut flows = Flows::new(vec![1e9, 1e9, 1e9]);
        let mut occupancy = Occupancy::new(3);
        flows.insert(flow(&[0, 1], 1 << 20), 0, &mut occupancy);
        flows.insert(flow(&[1, 2], 1 << 20), 0, &mut occupancy);
        // Fresh slots and classes carry mark 0, which the count reaches next.
        flows.epoch = u32::MAX;
        for t in 0..3 {
            flows.solve(t, &[0, 1, 2], &mut occupancy);
            assert_eq!(live(&flows).iter().map(|&s| rate(&flows, s)).collect::<Vec<_>>(), [5e8, 5e8]);
        }
    }

    #[test]
    fn a_flow_is_due_when_its_bytes_go_at_its_rate_and_ends_then() {
        let mut flows = Flows::new(vec![1e9, 2e9]);
        let mut occupancy = Occupancy::new(2);
        flows.insert(flow(&[0, 1], 1_000_000), 0, &mut occupancy);
        flows.insert(flow(&[0], 1_000_000), 0, &mut occupancy);
        flows.solve(0, &[0, 1], &mut occupancy);
        // Two flows share 1 GB/s: 1 MB each takes 2 ms (to the picosecond the rounding leaves).
        let due = flows.next_due().expect("both have a rate");
        assert!(due.abs_diff(2 * crate::engine::time::MS) <= 1, "{due}");
        let mut done = Vec::new();
        flows.take_done(due - 1000, &mut done, &mut occupancy);
        assert!(done.is_empty());
        flows.take_done(due, &mut done, &mut occupancy);
        assert_eq!(done.len(), 2);
        assert!(flows.next_due().is_none() && flows.through.iter().all(Vec::is_empty));
        assert!(flows.marking.iter().all(Vec::is_empty) && flows.class_of.is_empty());
    }

    /// Many flows through one shared resource are one class: a start re-rates them with one
    /// clock update, and each still ends when its own bytes are through.
    #[test]
    fn flows_of_one_bottleneck_share_a_class_and_end_in_turn() {
        // Resource 0 is the shared link; each flow has its own looser port (1..=4).
        let mut flows = Flows::new(vec![1e9, 4e9, 4e9, 4e9, 4e9]);
        let mut occupancy = Occupancy::new(5);
        for (i, len) in [1_000_000u32, 2_000_000, 3_000_000, 4_000_000].into_iter().enumerate() {
            flows.insert(flow(&[i as u32 + 1, 0], len), 0, &mut occupancy);
        }
        flows.solve(0, &[0, 1, 2, 3, 4], &mut occupancy);
        assert_eq!(flows.class_of.len(), 1);
        // 4 x 250 MB/s: the first ends at 4 ms, then 3 x 333 MB/s.
        let mut now = 0;
        let mut ends = Vec::new();
        while let Some(due) = flows.next_due() {
            now = due;
            let mut done = Vec::new();
            flows.take_done(now, &mut done, &mut occupancy);
            let touched: Vec<u32> = done.iter().flat_map(|f| f.path.resources().to_vec()).collect();
            ends.extend(done.iter().map(|f| (f.wqe.len, now)));
            flows.solve(now, &touched, &mut occupancy);
        }
        let ms = |t: Time| t as f64 / crate::engine::time::MS as f64;
        let got: Vec<(u32, f64)> = ends.into_iter().map(|(len, t)| (len, ms(t))).collect();
        for ((len, t), want) in got.iter().zip([4.0, 7.0, 9.0, 10.0]) {
            assert!((t - want).abs() < 1e-6, "{len} B ended at {t} ms, not {want}");
        }
        assert_eq!(now, crate::engine::time::MS * 10);
    }

    /// A hold on the shared link holds both flows; one on a flow's own port holds that flow
    /// alone, for what the link's hold does not cover (the longest hold on its path, once).
    #[test]
    fn holds_delay_the_flows_they_hold_by_the_longest_on_each_path() {
        use crate::engine::time::{MS, US};
        // Resource 0: the link both cross (1 GB/s); 1 and 2: each flow's own port, looser.
        let mut flows = Flows::new(vec![1e9, 1.1e9, 1.1e9]);
        let mut occupancy = Occupancy::new(3);
        flows.insert(flow(&[1, 0], 1_000_000), 0, &mut occupancy);
        flows.insert(flow(&[2, 0], 1_000_000), 0, &mut occupancy);
        flows.solve(0, &[0, 1, 2], &mut occupancy);
        // One-packet messages of 1 us at 100 us: 3 on the link (full: each is the flows' time),
        // 8 on the first flow's port (45% loaded: their time beyond its spare).
        for _ in 0..3 {
            occupancy.take(0, 100 * US, US);
        }
        for _ in 0..8 {
            occupancy.take(1, 100 * US, US);
        }
        let (link, port) = (occupancy.held_at_s(0), occupancy.held_at_s(1));
        assert!(link > 0.0 && port > link, "holds: link {link} s, port {port} s");
        flows.hold(100 * US, &mut occupancy);
        let mut ends = Vec::new();
        while let Some(now) = flows.next_due() {
            let mut done = Vec::new();
            flows.take_done(now, &mut done, &mut occupancy);
            let touched: Vec<u32> = done.iter().flat_map(|f| f.path.resources().to_vec()).collect();
            ends.extend(done.iter().map(|f| (f.path.resources()[0], now as f64 / S as f64)));
            flows.solve(now, &touched, &mut occupancy);
        }
        // Each 1 MB at 500 MB/s (2 ms), the second held for the link's hold; the first for its
        // port's, then alone at 1 GB/s for what it is behind then.
        let two_ms = 2.0 * MS as f64 / S as f64;
        let want = [(2, two_ms + link), (1, two_ms + link + (port - link) / 2.0)];
        assert_eq!(ends.len(), 2);
        for ((r, got), (wr, t)) in ends.into_iter().zip(want) {
            assert_eq!(r, wr);
            assert!((got - t).abs() < 2e-12, "the flow of port {r} ended at {got} s, not {t} s");
        }
    }
}
