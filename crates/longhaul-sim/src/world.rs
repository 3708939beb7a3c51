//! The one world every application runs in: the fabric, a host [`Transport`] and an [`App`],
//! with one event enum ([`Ev`]) and one settle loop.
//!
//! An event moves a packet a hop, fires a transport timer or is the application's own (a rank
//! resuming after a wait, a server finishing a call). What the transport produced meanwhile
//! (timers to arm, outputs for the application) and the hosts the application gave new work to
//! are settled after it, until nothing is left: outputs may lead the application to post more,
//! kicks may lead the transport to arm timers.
//!
//! Invariant: every timer the transport arms and every event the application asks for is in
//! the queue (or, for [`TimerPolicy::Coalesced`], behind the one live [`Ev::TimersDue`]) before
//! the next event is handled, so nothing is missed; the order of scheduling is fixed by the
//! order of the calls, so a run is a pure function of the scenario and seed.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::engine::{run, EventQueue, Model, Place, Stop, Time};
use crate::net::{Fabric, NetEvent, NodeId};
use crate::transport::{Ranked, Transport};

/// The events of a world: the network's, a transport timer, the coalesced transport timers'
/// earliest deadline, and the application's own.
#[derive(Debug, Clone, Copy)]
pub enum Ev<TT, X> {
    /// A packet moves a hop, or a port may send.
    Net(NetEvent),
    /// A transport timer ([`TimerPolicy::Direct`]).
    Timer(TT),
    /// The earliest coalesced transport timer is due ([`TimerPolicy::Coalesced`]).
    TimersDue,
    /// The application's own event.
    App(X),
}

impl<TT, X> From<NetEvent> for Ev<TT, X> {
    fn from(e: NetEvent) -> Self {
        Ev::Net(e)
    }
}

/// How transport timers reach the event queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimerPolicy {
    /// One event per armed timer: for applications with a few connections.
    Direct,
    /// Kept in a heap beside the event queue, only the earliest as an event: an MPI job's
    /// thousands of queue pairs each arm an ACK timer about a second ahead and almost none
    /// fires; in the event queue they would deepen every push and pop.
    Coalesced,
}

/// Transport timers of a world.
struct Timers {
    policy: TimerPolicy,
    /// Coalesced: pending timers, each as its deadline (high 64 bits) and rank.
    due: BinaryHeap<Reverse<u128>>,
    /// Coalesced: when the live `Ev::TimersDue` fires (events superseded by an earlier one are
    /// ignored when they come up).
    event_at: Option<Time>,
    /// Coalesced: the latest `Ev::TimersDue`, kept out of the queue at its place
    /// ([`Model::held`]); one it supersedes goes into the queue, to be ignored there.
    held: Option<Place>,
}

impl Timers {
    fn arm<TT: Ranked, X: Copy>(&mut self, at: Time, t: TT, q: &mut EventQueue<Ev<TT, X>>) {
        match self.policy {
            TimerPolicy::Direct => q.schedule(at, Ev::Timer(t)),
            TimerPolicy::Coalesced => {
                self.due.push(Reverse((at as u128) << 64 | t.rank() as u128));
                self.reschedule(q);
            }
        }
    }

    /// The earliest coalesced deadline.
    fn next_due(&self) -> Option<Time> {
        self.due.peek().map(|&Reverse(key)| (key >> 64) as Time)
    }

    /// The earliest coalesced timer if it is due by `now`, taken off.
    fn pop_due<TT: Ranked>(&mut self, now: Time) -> Option<TT> {
        self.next_due().filter(|&at| at <= now)?;
        let Reverse(key) = self.due.pop()?;
        Some(TT::from_rank(key as u64))
    }

    fn reschedule<TT: Copy, X: Copy>(&mut self, q: &mut EventQueue<Ev<TT, X>>) {
        if let Some(at) = self.next_due() {
            if self.event_at.is_none_or(|e| at < e) {
                self.event_at = Some(at);
                if let Some(superseded) = self.held.replace(q.reserve(at)) {
                    q.schedule_reserved(superseded, Ev::TimersDue);
                }
            }
        }
    }
}

/// What an application may do while it handles an output or one of its events.
pub struct Cx<'a, T: Transport, X> {
    /// The time of the event being handled.
    pub now: Time,
    /// The hosts' transport: post work, read connection state.
    pub net: &'a mut T,
    kicks: &'a mut Vec<NodeId>,
    q: &'a mut EventQueue<Ev<T::Timer, X>>,
    later: &'a mut Vec<(Time, X)>,
}

impl<T: Transport, X: Copy> Cx<'_, T, X> {
    /// Host `node` has new work: its port is tried once the batch is handled.
    #[inline]
    pub fn kick(&mut self, node: NodeId) {
        if T::MOVES_PACKETS {
            self.kicks.push(node);
        }
    }

    /// Schedule the application's event `ev` at `at` (not before now).
    #[inline]
    pub fn schedule(&mut self, at: Time, ev: X) {
        self.q.schedule(at.max(self.now), Ev::App(ev));
    }

    /// Schedule `ev` at `at` once the current batch of outputs is handled and the transport's
    /// timers armed (a timer the application keeps, whose place among same-time events then
    /// follows the transport's).
    #[inline]
    pub fn schedule_after_batch(&mut self, at: Time, ev: X) {
        self.later.push((at, ev));
    }
}

/// An application: written once against a [`Transport`], run by a [`World`].
pub trait App<T: Transport> {
    /// The application's own events (small and `Copy`: indices, not payloads).
    type Event: Copy;
    /// Post the first work at time 0.
    fn start(&mut self, cx: &mut Cx<'_, T, Self::Event>);
    /// The transport produced `out` (a completion, bytes to read).
    fn on_output(&mut self, out: T::Output, cx: &mut Cx<'_, T, Self::Event>);
    /// One of the application's events is due.
    fn on_event(&mut self, ev: Self::Event, cx: &mut Cx<'_, T, Self::Event>);
    /// Nothing more to do: the run can stop.
    fn done(&self) -> bool;
    /// Called before every event is handled, with its time (a sampler closing intervals).
    #[inline(always)]
    fn before_event(&mut self, _now: Time, _net: &mut T) {}
    /// How much of its work is done, from 0 to 1, if it can tell ([`Model::progress`]).
    fn progress(&self) -> Option<f64> {
        None
    }
}

/// The fabric, the transport and the application, and what settles between them.
pub struct World<T: Transport, A: App<T>> {
    /// Links, switches and range extenders: carries the transport's packets between hosts.
    pub fabric: Fabric<T::Packet>,
    /// The hosts' transport (adapters or kernels); drivers read its statistics after a run.
    pub net: T,
    /// The workload; drivers read its results after a run.
    pub app: A,
    /// Hosts given new work since the last settling (each is kicked once, in order).
    kicks: Vec<NodeId>,
    /// The outputs being handed to the application (kept to reuse its buffer).
    batch: Vec<T::Output>,
    timers: Timers,
    later: Vec<(Time, A::Event)>,
    /// The application is done but the run goes on until the packets in flight have landed.
    pub draining: bool,
}

impl<T: Transport, A: App<T>> World<T, A> {
    /// A world at rest: nothing runs until [`World::run`] starts the application.
    pub fn new(fabric: Fabric<T::Packet>, net: T, app: A, policy: TimerPolicy) -> Self {
        World {
            fabric,
            net,
            app,
            kicks: Vec::new(),
            batch: Vec::new(),
            timers: Timers { policy, due: BinaryHeap::new(), event_at: None, held: None },
            later: Vec::new(),
            draining: false,
        }
    }

    /// Start the application at time 0 and run until it is done, nothing is pending, or
    /// simulated time passes `limit`.
    pub fn run(&mut self, q: &mut EventQueue<Ev<T::Timer, A::Event>>, limit: Time) -> Stop {
        let mut cx = Cx { now: 0, net: &mut self.net, kicks: &mut self.kicks, q, later: &mut self.later };
        self.app.start(&mut cx);
        self.settle(0, q);
        self.resume(q, limit)
    }

    /// Go on running (after `run` stopped) until `limit`.
    pub fn resume(&mut self, q: &mut EventQueue<Ev<T::Timer, A::Event>>, limit: Time) -> Stop {
        run(self, q, limit)
    }

    /// Hand what the last event left behind to the queue and the application.
    #[inline]
    fn settle(&mut self, now: Time, q: &mut EventQueue<Ev<T::Timer, A::Event>>) {
        // Most events (a packet moving one hop) leave nothing to settle: skip the call.
        if self.net.unsettled() || !self.kicks.is_empty() || !self.later.is_empty() {
            self.settle_pending(now, q);
        }
    }

    #[inline(never)]
    fn settle_pending(&mut self, now: Time, q: &mut EventQueue<Ev<T::Timer, A::Event>>) {
        loop {
            let timers = &mut self.timers;
            self.net.drain_timers(|t, id| timers.arm(t.max(now), id, q));
            for (t, ev) in self.later.drain(..) {
                q.schedule(t.max(now), Ev::App(ev));
            }
            self.net.take_outputs(&mut self.batch);
            if self.batch.is_empty() && self.kicks.is_empty() {
                return;
            }
            let mut cx = Cx { now, net: &mut self.net, kicks: &mut self.kicks, q, later: &mut self.later };
            for &out in &self.batch {
                self.app.on_output(out, &mut cx);
            }
            self.batch.clear();
            self.fabric.kick_each(now, &self.kicks, q, &mut self.net);
            self.kicks.clear();
        }
    }

    /// Try the ports of the hosts on `kicks` now, in order (a timer's hosts).
    fn kick_now(&mut self, now: Time, q: &mut EventQueue<Ev<T::Timer, A::Event>>) {
        for i in 0..self.kicks.len() {
            let n = self.kicks[i];
            self.fabric.kick(now, n, q, &mut self.net);
        }
        self.kicks.clear();
    }
}

impl<T: Transport, A: App<T>> Model for World<T, A> {
    type Event = Ev<T::Timer, A::Event>;

    fn handle(&mut self, now: Time, ev: Self::Event, q: &mut EventQueue<Self::Event>) {
        self.app.before_event(now, &mut self.net);
        match ev {
            Ev::Net(e) => self.fabric.handle(now, e, q, &mut self.net),
            Ev::Timer(t) => {
                self.net.on_timer(now, t, &mut self.kicks);
                self.kick_now(now, q);
            }
            Ev::TimersDue => {
                if self.timers.event_at != Some(now) {
                    return self.settle(now, q); // superseded by an earlier timer event
                }
                self.timers.event_at = None;
                while let Some(t) = self.timers.pop_due(now) {
                    self.net.on_timer(now, t, &mut self.kicks);
                    self.kick_now(now, q);
                }
                self.timers.reschedule(q);
            }
            Ev::App(x) => {
                let mut cx = Cx { now, net: &mut self.net, kicks: &mut self.kicks, q, later: &mut self.later };
                self.app.on_event(x, &mut cx);
            }
        }
        self.settle(now, q);
    }

    fn finished(&self) -> bool {
        self.app.done() && !self.draining
    }

    fn progress(&self) -> Option<f64> {
        self.app.progress()
    }

    #[inline(always)]
    fn held(&self) -> Option<(Place, Self::Event)> {
        self.timers.held.map(|place| (place, Ev::TimersDue))
    }

    #[inline(always)]
    fn take_held(&mut self) {
        self.timers.held = None;
    }
}
