//! Cross traffic: a constant-bit-rate UDP flow sharing the long-haul link, optionally switched
//! on and off in a fixed cycle (bursts). It ignores loss and congestion, as iperf -u does.

use crate::engine::time::S;
use crate::engine::Time;
use crate::net::NodeId;

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

    /// The average IP-level rate this source offers (Gb/s).
    pub fn offered_gbps(&self) -> f64 {
        let duty = if self.off > 0 { self.on as f64 / (self.on + self.off) as f64 } else { 1.0 };
        self.ip_bytes as f64 * 8.0 / (self.interval as f64 / S as f64) / 1e9 * duty
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
