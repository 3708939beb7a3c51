//! An egress port and the wire behind it: a FIFO queue, a serialiser, credit-based link-level
//! flow control toward the receiver's ingress buffer, and the packets in flight on the wire.
//!
//! Invariants (checked by tests):
//! - with flow control on, the bytes this port has sent and not yet seen credited back never
//!   exceed the receiver's ingress buffer, so a credit-controlled link never drops a packet;
//! - packets leave in FIFO order and arrive in the same order (one wire, constant delay);
//! - the port is busy at most one packet at a time: throughput never exceeds its rate.

use std::collections::VecDeque;

use super::rate::Rate;
use crate::engine::{RngStream, Time};

/// Index of a port in the fabric.
pub type PortId = u32;
pub const NO_PORT: PortId = u32::MAX;
pub const NEVER: Time = Time::MAX;

/// IBTA link-level flow control counts buffer space in 64-byte blocks (IBA vol. 1, 7.9.4).
pub const CREDIT_BLOCK_BYTES: u64 = 64;

pub fn credit_blocks(bytes: u32) -> u64 {
    (bytes as u64).div_ceil(CREDIT_BLOCK_BYTES)
}

/// Physical parameters of one direction of a link, as seen from its sending port.
#[derive(Debug, Clone)]
pub struct PortParams {
    /// Data rate after line encoding.
    pub rate: Rate,
    /// Bytes added to every packet on this link by its framing (0 on native IB).
    pub frame_overhead_bytes: u32,
    /// Shortest time between two packet starts: the per-packet cost of the engine that feeds
    /// this port (e.g. an extender's forwarding engine). 0 = only the wire limits.
    pub min_packet_gap: Time,
    /// One-way propagation (and any added delay) to the receiving end.
    pub propagation: Time,
    /// Ingress buffer at the receiving end, in bytes; `None` = no link-level flow control
    /// (Ethernet/IP paths: the queue below drops instead).
    pub peer_buffer_bytes: Option<u64>,
    /// Drop-tail limit of this port's own queue in bytes (`None` = unbounded, used when flow
    /// control back-pressures the sender instead).
    pub queue_limit_bytes: Option<u64>,
    /// Probability that a packet is corrupted on the wire and discarded by the receiver.
    pub loss: f64,
}

/// A packet waiting in a port's queue.
pub(crate) struct Queued<P> {
    pub pkt: P,
    pub wire_bytes: u32,
    /// The ingress port at this node that holds its buffer space (NO_PORT for host-originated).
    pub in_port: PortId,
    /// Earliest start of transmission (cut-through cannot start before enough bits are in).
    pub ready_at: Time,
}

/// A packet on the wire.
pub(crate) struct InFlight<P> {
    pub deliver_at: Time,
    pub tail_at: Time,
    pub wire_bytes: u32,
    pub pkt: P,
}

/// Facts about the two ends of a port's link, fixed when the link is made (so that no packet
/// has to look them up in the node table).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ends {
    /// The port belongs to a host (it pulls packets from the host's transport).
    pub from_host: bool,
    /// The node at the far end of the link.
    pub to_node: u32,
    pub to_host: bool,
    /// The far node starts forwarding once a packet's header is in (else at its tail).
    pub to_cut_through: bool,
    /// The far node's forwarding latency.
    pub to_latency: Time,
}

/// Where the buffer space a packet holds at a port's node (having arrived through it) is given
/// back: the sending port at the other end of its link by default, or the first port of a
/// credit domain (`Fabric::extend_credits`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct CreditReturn {
    pub to: PortId,
    /// From the packet leaving (or being dropped) to the credits reaching `to`.
    pub delay: Time,
    /// Given back when the packet is forwarded from here (false inside a domain: the space is
    /// further on, and only a drop here gives it back).
    pub on_forward: bool,
}

/// Per-port counters.
#[derive(Debug, Clone, Default)]
pub struct PortStats {
    pub tx_packets: u64,
    /// Bytes put on the wire (wire bytes before WAN framing), for per-link time series.
    pub tx_bytes: u64,
    pub drops_loss: u64,
    pub drops_queue: u64,
    /// As an ingress port: packets that came in through it and were dropped from a full queue
    /// at its node (whose traffic a drop-tail queue turned away).
    pub ingress_drops: u64,
    /// Packets lost because the link was down: on its wire or in its queue when it was cut, or
    /// routed to it while the forwarding tables still pointed there.
    pub drops_down: u64,
}

pub struct Port<P> {
    pub node: u32,
    /// The port at the other end of the link (where this port's packets arrive).
    pub peer: PortId,
    pub params: PortParams,
    pub(crate) ends: Ends,
    /// Link-level flow control is on (`params.peer_buffer_bytes` is set).
    pub(crate) credit_controlled: bool,
    pub stats: PortStats,
    pub(crate) queue: VecDeque<Queued<P>>,
    pub(crate) queued_bytes: u64,
    /// Drop-tail ports: the packets already given a start of transmission, (start, bytes) in
    /// order, until they start; with `committed_bytes`, their sum, this is the queue a drop-tail
    /// decision sees.
    pub(crate) committed: VecDeque<(Time, u32)>,
    pub(crate) committed_bytes: u64,
    /// The far node forwards what this port sends the moment it is sent (see
    /// `Fabric::plan_forwarding`), and the times of the queue drops decided that way ahead of
    /// the packets' arrival, until the clock passes them.
    pub(crate) forward_at_send: bool,
    pub(crate) early_drops: VecDeque<Time>,
    pub(crate) busy_until: Time,
    /// Credits (bytes, in whole blocks) we may still send into the peer's buffer.
    pub(crate) credits: u64,
    /// Credits on their way back: (time they arrive here, bytes), kept in time order.
    pub(crate) credit_returns: VecDeque<(Time, u64)>,
    /// Credits for packets dropped inside a credit domain, on their way back (time order): kept
    /// apart because they overtake the returns of the packets queued ahead of the drop, which
    /// would make every one an insertion deep into `credit_returns`.
    pub(crate) drop_returns: VecDeque<(Time, u64)>,
    pub(crate) credit_starved: bool,
    /// As an ingress port: where the space of the packets that came in through it goes back.
    pub(crate) credit: CreditReturn,
    pub(crate) wire: VecDeque<InFlight<P>>,
    pub(crate) wake_at: Time,
    pub(crate) rng: RngStream,
    /// The link carries packets (false: unplugged, or trained but not yet made active).
    pub(crate) up: bool,
    /// The link may go down during the run (see `Fabric::schedule_link_change`): the far node
    /// never forwards its packets at send time, as a cut would have to recall them.
    pub(crate) may_fail: bool,
}

impl<P> Port<P> {
    pub(crate) fn new(node: u32, params: PortParams, ends: Ends, rng: RngStream) -> Self {
        let credits = params.peer_buffer_bytes.map(|b| b / CREDIT_BLOCK_BYTES * CREDIT_BLOCK_BYTES).unwrap_or(u64::MAX);
        Port {
            node,
            peer: NO_PORT,
            credit_controlled: params.peer_buffer_bytes.is_some(),
            ends,
            params,
            stats: PortStats::default(),
            queue: VecDeque::new(),
            queued_bytes: 0,
            committed: VecDeque::new(),
            committed_bytes: 0,
            forward_at_send: false,
            early_drops: VecDeque::new(),
            busy_until: 0,
            credits,
            credit_returns: VecDeque::new(),
            drop_returns: VecDeque::new(),
            credit_starved: false,
            credit: CreditReturn { to: NO_PORT, delay: 0, on_forward: true },
            wire: VecDeque::new(),
            wake_at: NEVER,
            rng,
            up: true,
            may_fail: false,
        }
    }

    /// Take in the credits that have arrived by `now`.
    #[inline]
    pub(crate) fn absorb_credits(&mut self, now: Time) {
        while let Some(&(t, bytes)) = self.credit_returns.front() {
            if t > now {
                break;
            }
            self.credits += bytes;
            self.credit_returns.pop_front();
        }
        while let Some(&(t, bytes)) = self.drop_returns.front() {
            if t > now {
                break;
            }
            self.credits += bytes;
            self.drop_returns.pop_front();
        }
    }

    /// When the next credits on their way arrive.
    pub(crate) fn next_credit_return(&self) -> Option<Time> {
        let a = self.credit_returns.front().map(|&(t, _)| t);
        let b = self.drop_returns.front().map(|&(t, _)| t);
        a.into_iter().chain(b).min()
    }

    /// Take the credits a packet of `wire_bytes` needs if they have arrived by `now`; false
    /// (and nothing taken) if not.
    #[inline]
    pub(crate) fn take_credits(&mut self, now: Time, wire_bytes: u32) -> bool {
        if !self.credit_controlled {
            return true;
        }
        self.absorb_credits(now);
        let need = credit_blocks(wire_bytes) * CREDIT_BLOCK_BYTES;
        if self.credits < need {
            return false;
        }
        self.credits -= need;
        true
    }

    /// Bytes waiting at `at` (queued, or committed to a start after `at`), at clock time
    /// `now` <= `at`: the committed packets that have started by `now` are forgotten.
    #[inline]
    pub(crate) fn waiting_bytes(&mut self, now: Time, at: Time) -> u64 {
        while let Some(&(start, bytes)) = self.committed.front() {
            if start > now {
                break;
            }
            self.committed_bytes -= bytes as u64;
            self.committed.pop_front();
        }
        while let Some(&t) = self.early_drops.front() {
            if t > now {
                break;
            }
            self.early_drops.pop_front();
        }
        // Forwarded ahead of time: the few packets starting between the clock and `at` (usually
        // none: the head alone tells).
        let started = match self.committed.front() {
            Some(&(start, _)) if start <= at => {
                self.committed.iter().take_while(|&&(start, _)| start <= at).map(|&(_, b)| b as u64).sum()
            }
            _ => 0,
        };
        self.queued_bytes + self.committed_bytes - started
    }

    /// Record credits that will arrive at `at` (kept sorted; almost always appended).
    #[inline]
    pub(crate) fn push_credit_return(&mut self, at: Time, bytes: u64) {
        if !self.credit_controlled {
            return;
        }
        if !matches!(self.credit_returns.back(), Some(&(t, _)) if t > at) {
            self.credit_returns.push_back((at, bytes));
            return;
        }
        let pos = self.credit_returns.iter().rposition(|&(t, _)| t <= at).map_or(0, |i| i + 1);
        self.credit_returns.insert(pos, (at, bytes));
    }

    /// Record the credits of a packet dropped inside a credit domain, arriving at `at`.
    pub(crate) fn push_drop_return(&mut self, at: Time, bytes: u64) {
        if !matches!(self.drop_returns.back(), Some(&(t, _)) if t > at) {
            self.drop_returns.push_back((at, bytes));
            return;
        }
        let pos = self.drop_returns.iter().rposition(|&(t, _)| t <= at).map_or(0, |i| i + 1);
        self.drop_returns.insert(pos, (at, bytes));
    }

    /// Packets this port had started sending by `t`: on a drop-tail port, `stats.tx_packets`
    /// also counts the packets committed to a later start.
    pub fn tx_packets_by(&self, t: Time) -> u64 {
        self.stats.tx_packets - self.committed.iter().filter(|&&(start, _)| start > t).count() as u64
    }

    /// Bytes this port had started sending by `t`: `stats.tx_bytes` also counts the packets a
    /// forwarding port has committed to a later start (on its wire already, in start order).
    pub fn tx_bytes_by(&self, t: Time) -> u64 {
        let p = &self.params;
        let start = |f: &InFlight<P>| {
            f.tail_at - p.propagation - p.rate.serialise((f.wire_bytes + p.frame_overhead_bytes) as u64)
        };
        let later: u64 = self.wire.iter().rev().map_while(|f| (start(f) > t).then_some(f.wire_bytes as u64)).sum();
        self.stats.tx_bytes - later
    }

    /// Queue drops of packets that had arrived by `t`: `stats.drops_queue` also counts the ones
    /// decided ahead of their arrival.
    pub fn drops_queue_by(&self, t: Time) -> u64 {
        self.stats.drops_queue - self.early_drops.iter().filter(|&&at| at > t).count() as u64
    }
}
