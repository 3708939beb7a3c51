//! Links going down and coming up, and the routes recomputed over the links up. When each
//! happens is the caller's to say (a subnet manager's sweep, a routing protocol's convergence):
//! the fabric carries it out and knows no protocol.
//!
//! A link that goes down is cut both ways at once, as an unplugged fibre pair: the packets on its
//! wires and in its two ports' queues are lost, and the buffer space they held is given back as
//! for any drop (IB's credits are absolute counts, so the sender's are whole again once the link
//! trains). Until the routes are recomputed, packets the forwarding tables still send to it are
//! dropped at the node before it.

use super::{Fabric, InFlight, NetEvent, Queued, Routable, NO_PORT};
use crate::engine::{EventQueue, Time};
use crate::net::fabric::Endpoints;
use crate::net::PortId;

/// A change to the fabric's links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkChange {
    /// The link of this port goes down (both directions).
    Down(PortId),
    /// The link of this port comes up (both directions) and carries packets again.
    Up(PortId),
    /// The routes are recomputed over the links up (what a subnet manager uploads as the
    /// switches' forwarding tables).
    Reroute,
}

impl<P: Routable> Fabric<P> {
    /// Make `change` happen at `at`. Schedule every change before the run starts: a link that
    /// may go down is never forwarded over at send time (a cut would have to recall packets).
    pub fn schedule_link_change<E: From<NetEvent> + Copy>(
        &mut self,
        at: Time,
        change: LinkChange,
        q: &mut EventQueue<E>,
    ) {
        if let LinkChange::Down(p) | LinkChange::Up(p) = change {
            let peer = self.ports[p as usize].peer;
            self.ports[p as usize].may_fail = true;
            self.ports[peer as usize].may_fail = true;
            self.plan_forwarding();
        }
        q.schedule(at, NetEvent::Link(change).into());
    }

    /// True if the link of `port` carries packets.
    pub fn is_link_up(&self, port: PortId) -> bool {
        self.ports[port as usize].up
    }

    pub(super) fn change_link<E: From<NetEvent> + Copy>(
        &mut self,
        now: Time,
        change: LinkChange,
        q: &mut EventQueue<E>,
        eps: &mut impl Endpoints<P>,
    ) {
        match change {
            LinkChange::Down(p) => {
                let peer = self.ports[p as usize].peer;
                self.cut(now, p, q);
                self.cut(now, peer, q);
            }
            LinkChange::Up(p) => {
                let peer = self.ports[p as usize].peer;
                for x in [p, peer] {
                    self.ports[x as usize].up = true;
                }
                for x in [p, peer] {
                    self.try_send(now, x, q, eps);
                }
            }
            LinkChange::Reroute => {
                self.fill_routes();
                self.plan_forwarding();
            }
        }
    }

    /// Port `p` goes down: what is queued at it and on its wire is lost.
    fn cut<E: From<NetEvent> + Copy>(&mut self, now: Time, p: PortId, q: &mut EventQueue<E>) {
        let port = &mut self.ports[p as usize];
        if !port.up {
            return;
        }
        port.up = false;
        port.queued_bytes = 0;
        let queued: Vec<Queued<P>> = port.queue.drain(..).collect();
        let wire: Vec<InFlight<P>> = port.wire.drain(..).collect();
        port.stats.drops_down += (queued.len() + wire.len()) as u64;
        let ingress = port.peer;
        for item in queued.iter().filter(|item| item.in_port != NO_PORT) {
            self.return_credits(item.in_port, now, item.wire_bytes, false, q);
        }
        for item in &wire {
            self.return_credits(ingress, now, item.wire_bytes, false, q);
        }
    }
}
