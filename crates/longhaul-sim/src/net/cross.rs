//! Cross traffic: constant-bit-rate UDP flows from a second host pair sharing the long-haul
//! link, optionally switched on and off in a fixed cycle (bursts). They ignore loss and
//! congestion, as iperf -u does. Protocol-free: [`CrossSpec`] (what a scenario's `[cross]` table
//! says, validated the same way for every model), [`CrossSource`] (a source's schedule) and
//! [`CrossHosts`] (the hosts that send and sink it, for any packet type that can carry a foreign
//! [`Datagram`]). The TCP model sends its sources from its own hosts (through their IP stack);
//! the verbs model puts them on hosts of their own beside the adapters.

use serde::{Deserialize, Serialize};

use super::fabric::{NodeId, Pull, Routable};
use crate::engine::Time;

/// Constant-bit-rate UDP cross traffic on the WAN, from a second host pair (a scenario's
/// `[cross]` table, the same keys for every model).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CrossSpec {
    /// IP-level rate while on (Gb/s).
    pub gbps: f64,
    /// When the sources start, seconds into the run (default 0).
    pub start_s: Option<f64>,
    /// On/off bursts: on for on_ms, off for off_ms (unset: always on).
    pub on_ms: Option<f64>,
    /// Off time of each on/off cycle, milliseconds (with `on_ms`).
    pub off_ms: Option<f64>,
    /// Datagram size (IP bytes; default the MTU).
    pub packet_bytes: Option<u32>,
}

/// A validated [`CrossSpec`] (see `crate::scenario::resolve_cross`).
#[derive(Debug, Clone, Serialize)]
pub struct CrossResolved {
    pub gbps: f64,
    pub start: Time,
    pub on: Time,
    pub off: Time,
    pub ip_bytes: u32,
}

#[derive(Debug, Clone)]
pub struct CrossSource {
    pub src: NodeId,
    pub dst: NodeId,
    /// IP bytes of each datagram.
    pub ip_bytes: u32,
    /// Time between datagram starts at the configured IP-level rate.
    interval: Time,
    pub start: Time,
    /// On/off cycle (off = 0: always on once started).
    on: Time,
    off: Time,
    next_at: Time,
    pub sent_packets: u64,
    /// IP bytes that reached the destination.
    pub received_bytes: u64,
}

impl CrossSource {
    pub fn new(src: NodeId, dst: NodeId, ip_bytes: u32, gbps: f64, start: Time, on: Time, off: Time) -> Self {
        let interval = ((ip_bytes as f64 * 8.0 / gbps) * 1000.0).round().max(1.0) as Time; // ns -> ps
        CrossSource { src, dst, ip_bytes, interval, start, on, off, next_at: start, sent_packets: 0, received_bytes: 0 }
    }

    /// When the next datagram is due.
    pub fn due(&self) -> Time {
        self.next_at
    }

    /// Take the datagram due now and schedule the next one (skipping off periods).
    pub fn take(&mut self) {
        self.sent_packets += 1;
        self.next_at += self.interval;
        if self.off > 0 {
            let cycle = self.on + self.off;
            let phase = (self.next_at - self.start) % cycle;
            if phase >= self.on {
                self.next_at += cycle - phase;
            }
        }
    }

    /// The average IP-level rate this source offers (Gb/s): what the tests check the schedule by.
    #[cfg(test)]
    pub fn offered_gbps(&self) -> f64 {
        let duty = if self.off > 0 { self.on as f64 / (self.on + self.off) as f64 } else { 1.0 };
        self.ip_bytes as f64 * 8.0 / (self.interval as f64 / crate::engine::time::S as f64) / 1e9 * duty
    }
}

/// A packet type that can carry another network's datagram across the same fabric (cross
/// traffic's: it is never handed to the transport).
pub trait Datagram: Routable {
    /// A datagram of `wire_bytes` from `src` to `dst`, sent by cross source `source`.
    fn datagram(src: NodeId, dst: NodeId, source: u32, wire_bytes: u32) -> Self;
    /// The cross source of a datagram made by [`Datagram::datagram`].
    fn source(&self) -> u32;
}

/// The hosts that send and sink cross traffic on their own (not through a transport's stack):
/// each source sends from its host when due, and its destination counts what arrives.
#[derive(Debug, Clone, Default)]
pub struct CrossHosts {
    pub sources: Vec<CrossSource>,
    /// `is_host[node]`: node sends or sinks cross traffic.
    is_host: Vec<bool>,
}

impl CrossHosts {
    /// Add a source (its hosts become cross-traffic hosts).
    pub fn add(&mut self, c: CrossSource) {
        let hi = c.src.max(c.dst) as usize;
        if self.is_host.len() <= hi {
            self.is_host.resize(hi + 1, false);
        }
        self.is_host[c.src as usize] = true;
        self.is_host[c.dst as usize] = true;
        self.sources.push(c);
    }

    /// True if `node` is one of the cross-traffic hosts.
    #[inline]
    pub fn owns(&self, node: NodeId) -> bool {
        self.is_host.get(node as usize).copied().unwrap_or(false)
    }

    /// `node`'s port is free at `now`: its next datagram if one is due.
    pub fn pull<P: Datagram>(&mut self, now: Time, node: NodeId) -> Pull<P> {
        let mut wait = Time::MAX;
        for (i, c) in self.sources.iter_mut().enumerate() {
            if c.src != node {
                continue;
            }
            if c.due() <= now {
                c.take();
                return Pull::Ready(P::datagram(c.src, c.dst, i as u32, c.ip_bytes));
            }
            wait = wait.min(c.due());
        }
        if wait == Time::MAX {
            Pull::Idle
        } else {
            Pull::Later(wait)
        }
    }

    /// A datagram reached its destination.
    pub fn deliver<P: Datagram>(&mut self, pkt: &P) {
        let c = &mut self.sources[pkt.source() as usize];
        c.received_bytes += c.ip_bytes as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::MS;

    #[test]
    fn cbr_spacing_and_on_off_duty_cycle() {
        let mut c = CrossSource::new(0, 1, 1500, 1.0, 0, 0, 0);
        assert_eq!(c.due(), 0);
        c.take();
        assert_eq!(c.due(), 12_000_000); // 1500 B at 1 Gb/s = 12 us
        let mut b = CrossSource::new(0, 1, 1500, 1.0, 0, MS, MS);
        let mut n = 0;
        while b.due() < 10 * MS {
            b.take();
            n += 1;
        }
        // 84 datagrams start in each 1 ms on-period (ceil of 83.3), five on-periods.
        assert_eq!(n, 420);
        assert!((b.offered_gbps() - 0.5).abs() < 1e-3);
    }
}
