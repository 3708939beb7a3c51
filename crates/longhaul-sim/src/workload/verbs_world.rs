//! The world a verbs application runs in: the fabric, the hosts' transports (queue pairs)
//! and the application, which sees only work completions. One event moves a packet a hop or
//! fires a queue pair's timer; what the transports produced meanwhile (timers to arm,
//! completions, hosts with work to send) is settled after it, until nothing is left.

use crate::engine::{EventQueue, Model, Time};
use crate::ib::{Completion, IbHosts, IbPacket};
use crate::net::{Fabric, NodeId};
use crate::workload::Ev;

/// An application on the verbs: it reacts to work completions by posting work requests and
/// naming the hosts that have something new to send.
pub trait VerbsApp {
    fn on_completion(&mut self, c: Completion, ib: &mut IbHosts, kicks: &mut Vec<NodeId>);
    /// Nothing more to do: the run can stop.
    fn done(&self) -> bool;
}

pub struct VerbsWorld<A> {
    pub fabric: Fabric<IbPacket>,
    pub ib: IbHosts,
    pub app: A,
    /// Hosts that got new work since the last settling (each is kicked once).
    pub kicks: Vec<NodeId>,
    /// The application is done but the run goes on until the packets in flight have landed.
    pub draining: bool,
}

impl<A: VerbsApp> VerbsWorld<A> {
    pub fn new(fabric: Fabric<IbPacket>, ib: IbHosts, app: A) -> Self {
        VerbsWorld { fabric, ib, app, kicks: Vec::new(), draining: false }
    }

    /// Hand the transports' side effects of an event to the application and the queue.
    #[inline]
    pub fn settle(&mut self, now: Time, q: &mut EventQueue<Ev>) {
        // Most events (a packet moving one hop) leave nothing to settle: skip the call.
        if !(self.ib.timers.is_empty() && self.ib.completions.is_empty() && self.kicks.is_empty()) {
            self.settle_pending(now, q);
        }
    }

    #[inline(never)]
    fn settle_pending(&mut self, now: Time, q: &mut EventQueue<Ev>) {
        loop {
            for (t, qp) in self.ib.timers.drain(..) {
                q.schedule(t.max(now), Ev::Timer(qp));
            }
            if self.ib.completions.is_empty() && self.kicks.is_empty() {
                return;
            }
            for c in std::mem::take(&mut self.ib.completions) {
                self.app.on_completion(c, &mut self.ib, &mut self.kicks);
            }
            let kicks = std::mem::take(&mut self.kicks);
            self.fabric.kick_each(now, &kicks, q, &mut self.ib);
        }
    }
}

impl<A: VerbsApp> Model for VerbsWorld<A> {
    type Event = Ev;
    fn handle(&mut self, now: Time, ev: Ev, q: &mut EventQueue<Ev>) {
        match ev {
            Ev::Net(e) => self.fabric.handle(now, e, q, &mut self.ib),
            Ev::Timer(qp) => {
                self.ib.on_timer(now, qp);
                let n = self.ib.node_of(qp);
                self.fabric.kick(now, n, q, &mut self.ib);
            }
        }
        self.settle(now, q);
    }
    fn finished(&self) -> bool {
        self.app.done() && !self.draining
    }
}
