//! Messages of one packet on the flow level's shared resources (send engines, ports, receive
//! engines): each resource serves them first come first served, one at a time, for the
//! packet's time there; and the time it gives them is taken from the flows through it.
//!
//! A resource's clock says until when it is busy with one-packet messages: the next one starts
//! at its arrival or then, whichever is later (they go ahead of the flows: a fluid flow has no
//! packets queued to wait behind). The flows through the resource (their max-min load over its
//! capacity, `l`, from the last solve) use `l` of its time and leave `1 - l` spare, which covers
//! the one-packet messages' service as time goes by. The service the spare time has not
//! covered by the time the next one-packet message starts there, less what is still queued
//! (and less the last message's own, which the spare time may yet cover), is time the flows
//! could not have had: each flow through the resource is held that long divided by `l`, so
//! that together they lose exactly that much of the resource's time, and falls behind by its
//! rate times its hold when the flows are next brought up to date. A burst of one-packet
//! messages at a resource the flows do not fill is so paid for only by what the spare time has
//! not made up; at a resource the flows fill (`l = 1`, their bottleneck) every one-packet
//! message's service is taken from them (the last one's when the next comes).
//!
//! A flow is one rate along its whole path, so a hold anywhere frees its share everywhere:
//! between two updates it is held for the longest of the holds on its path, not their sum,
//! which is just enough for every resource to stay within its capacity (one packet crossing a
//! chain of ports holds the flows once). Approximations: the spare time since a resource's last
//! one-packet message is counted at the flows' load of now; a flow held at a resource that is
//! not its bottleneck leaves its share of the bottleneck unused until the next solve (max-min
//! would hand it to the others).

use crate::engine::time::S;
use crate::engine::Time;

/// Not a class.
const NONE: u32 = u32::MAX;

/// The one-packet clock and the flows' share of every resource.
pub struct Occupancy {
    /// When the resource is done with the one-packet messages it has taken, and the service
    /// of the last one.
    busy_until: Vec<Time>,
    last_service: Vec<Time>,
    /// One-packet service (ps) the flows' spare time has not covered, as of `settled_at`.
    uncovered: Vec<f64>,
    settled_at: Vec<Time>,
    /// The flows' load over the capacity (0 to 1) since the last solve, where no flow's own.
    flow_load: Vec<f64>,
    /// Where one flow's own (see `flows`), its class (else `NONE`) and the capacity's inverse:
    /// the load is its class's rate over the capacity, following every change of that rate.
    own_class: Vec<u32>,
    inverse_capacity: Vec<f64>,
    /// Each class's rate (bytes/s) from the last solve that reached it.
    class_rate: Vec<f64>,
    /// Time (s) the flows through each resource are held for one-packet messages since the
    /// flows were last brought up to date, and the resources with such a hold.
    held_s: Vec<f64>,
    holding: Vec<u32>,
}

impl Occupancy {
    pub fn new(resources: usize) -> Self {
        Occupancy {
            busy_until: vec![0; resources],
            last_service: vec![0; resources],
            uncovered: vec![0.0; resources],
            settled_at: vec![0; resources],
            flow_load: vec![0.0; resources],
            own_class: vec![NONE; resources],
            inverse_capacity: vec![0.0; resources],
            class_rate: Vec::new(),
            held_s: vec![0.0; resources],
            holding: Vec::new(),
        }
    }

    /// When resource `r` is free of one-packet messages.
    pub fn busy_until(&self, r: u32) -> Time {
        self.busy_until[r as usize]
    }

    /// A one-packet message ready at resource `r` at `ready` takes it for `service`: when it
    /// starts there. What the flows owe the ones before is settled first.
    pub fn take(&mut self, r: u32, ready: Time, service: Time) -> Time {
        let i = r as usize;
        let start = ready.max(self.busy_until[i]);
        self.settle(i, start);
        self.busy_until[i] = start + service;
        self.last_service[i] = service;
        self.uncovered[i] += service as f64;
        start
    }

    /// An ACK ready at resource `r` at `ready` takes it for `service` ahead of the one-packet
    /// messages waiting there (an adapter sends ACKs first; those already given a start keep
    /// it, the ACK's time pushes back the next): when it starts, `ready`.
    pub fn take_ahead(&mut self, r: u32, ready: Time, service: Time) -> Time {
        let i = r as usize;
        self.settle(i, ready);
        self.busy_until[i] = self.busy_until[i].max(ready) + service;
        self.last_service[i] = service;
        self.uncovered[i] += service as f64;
        ready
    }

    /// The flows' load on resource `r` (over its capacity) from the solve at `now`. A resource
    /// they did not load until now had all its time spare: nothing of before is theirs to pay.
    pub fn set_load(&mut self, now: Time, r: u32, load: f64) {
        let i = r as usize;
        debug_assert_eq!(self.own_class[i], NONE, "a flow's own resource takes its class's load");
        if self.flow_load[i] == 0.0 && load > 0.0 {
            self.settle(i, now);
        }
        self.flow_load[i] = load;
    }

    /// The flows' load on resource `i` (over its capacity).
    fn load(&self, i: usize) -> f64 {
        match self.own_class[i] {
            NONE => self.flow_load[i],
            c => self.class_rate[c as usize] * self.inverse_capacity[i],
        }
    }

    /// From `now` resource `r` (of this capacity) is one flow's own, of class `c`: its load is
    /// that class's rate over the capacity (settled first if it had none, as `set_load`).
    pub fn link(&mut self, now: Time, r: u32, c: u32, capacity: f64) {
        let i = r as usize;
        if self.load(i) == 0.0 && self.class_rate[c as usize] > 0.0 {
            self.settle(i, now);
        }
        (self.own_class[i], self.inverse_capacity[i]) = (c, 1.0 / capacity);
    }

    /// Resource `r`'s flow moved to class `c`: its load follows that class's rate (from the
    /// next solve, as any rate change).
    pub fn relink(&mut self, r: u32, c: u32) {
        debug_assert_ne!(self.own_class[r as usize], NONE);
        self.own_class[r as usize] = c;
    }

    /// Resource `r` is no flow's own from now: its load stays as it is until set.
    pub fn unlink(&mut self, r: u32) {
        let i = r as usize;
        self.flow_load[i] = self.load(i);
        self.own_class[i] = NONE;
    }

    /// Resource `r` is a flow's own.
    pub fn linked(&self, r: u32) -> bool {
        self.own_class[r as usize] != NONE
    }

    /// Class `c`'s flows move at `rate` (bytes/s) each from now.
    pub fn set_class_rate(&mut self, c: u32, rate: f64) {
        let c = c as usize;
        if c >= self.class_rate.len() {
            self.class_rate.resize(c + 1, 0.0);
        }
        self.class_rate[c] = rate;
    }

    /// Bring the uncovered service at `i` up to `t`, the spare time since the last settlement
    /// counted at the flows' present load: what of it is more than the one-packet messages
    /// still to be served there, or than the last one's service, is past, and held from the
    /// flows there.
    fn settle(&mut self, i: usize, t: Time) {
        if t > self.settled_at[i] {
            let spare = 1.0 - self.load(i).min(1.0);
            let drained = spare * (t - self.settled_at[i]) as f64;
            self.uncovered[i] = (self.uncovered[i] - drained).max(0.0);
            self.settled_at[i] = t;
        }
        let pending = self.busy_until[i].saturating_sub(t).max(self.last_service[i]);
        let past = self.uncovered[i] - pending as f64;
        if past > 0.0 {
            self.hold(i, past);
            self.uncovered[i] -= past;
        }
    }

    /// The flows at `i` give up `uncovered` (ps) of its time.
    fn hold(&mut self, i: usize, uncovered: f64) {
        let load = self.load(i);
        if uncovered > 0.0 && load > 0.0 {
            if self.held_s[i] == 0.0 {
                self.holding.push(i as u32);
            }
            self.held_s[i] += uncovered / load / S as f64;
        }
    }

    /// How long (s) the flows through resource `r` are held there since they were last brought
    /// up to date (a flow is held for the longest hold on its path).
    pub fn held_at_s(&self, r: u32) -> f64 {
        self.held_s[r as usize]
    }

    /// Some flows are held since they were last brought up to date.
    pub fn holding(&self) -> bool {
        !self.holding.is_empty()
    }

    /// The resources with a hold since the flows were last brought up to date.
    pub fn holding_resources(&self) -> &[u32] {
        &self.holding
    }

    /// The flows are up to date: the holds so far are counted.
    pub fn clear_held(&mut self) {
        for &r in &self.holding {
            self.held_s[r as usize] = 0.0;
        }
        self.holding.clear();
    }
}
