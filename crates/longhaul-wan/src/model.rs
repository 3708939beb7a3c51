//! The link model of one direction: drop-tail bottleneck queue, pacing to the link rate,
//! random loss, propagation delay and jitter. Pure logic on integer nanoseconds so it is
//! tested deterministically without TUN devices or root (see the tests at the bottom).
//!
//! A packet arriving at `now` waits behind the bytes still being serialized, is serialized
//! at `rate_bps`, then flies for `delay_ns` (+ jitter): its release time is
//! `finish_of_serialization + delay + jitter`. Release times never decrease (a fibre does
//! not reorder), so jitter only ever stretches gaps between packets.
//!
//! Random loss is decided per wire packet: a GSO super-packet of n segments learns which of
//! its n wire packets the fibre loses, and the data plane delivers the others.

use std::collections::VecDeque;

use crate::rng::Rng;

/// Capacity of the bottleneck queue (drop-tail). A packet that finds the link idle is
/// always accepted, so a GSO super-packet larger than the limit is not dropped forever.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum QueueLimit {
    /// Bytes at the IP layer (headers of every wire segment included).
    Bytes(u64),
    /// Wire packets (a GSO super-packet counts as its number of segments).
    Packets(u64),
}

/// Parameters of one direction of the long-haul link.
#[derive(Clone, Debug, PartialEq)]
pub struct DirectionConfig {
    /// One-way propagation delay, nanoseconds.
    pub delay_ns: u64,
    /// Jitter amplitude, nanoseconds: each packet gets an extra delay uniform in [-j, +j]
    /// (never below zero total delay, never reordering).
    pub jitter_ns: u64,
    /// Link rate in bits per second at the IP layer; 0 = unlimited (no pacing, no queue).
    pub rate_bps: u64,
    /// Bottleneck queue capacity.
    pub queue: QueueLimit,
    /// Probability that one wire packet is lost (0 <= loss < 1).
    pub loss: f64,
    /// Framing bytes each wire packet costs on the link beyond its IP bytes (e.g. 38 for
    /// Ethernet: preamble, header, FCS, inter-frame gap); they take link time, not queue room.
    pub frame_bytes: u64,
    /// Seed of the loss/jitter random stream (a run is reproducible given the arrivals).
    pub seed: u64,
}

impl Default for DirectionConfig {
    fn default() -> Self {
        DirectionConfig {
            delay_ns: 0,
            jitter_ns: 0,
            rate_bps: 0,
            queue: QueueLimit::Bytes(4 << 20),
            loss: 0.0,
            frame_bytes: 0,
            seed: 1,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropCause {
    /// The bottleneck queue was full (drop-tail).
    Queue,
    /// Random loss on the link.
    Loss,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Deliver to the far side at this monotonic time (ns), except the wire packets at the
    /// indices in `lost` (sorted; empty for nearly every packet, so no allocation).
    Release { at_ns: u64, lost: Vec<u32> },
    /// Nothing of the packet arrives (for `Loss`: every one of its wire packets was lost).
    Drop(DropCause),
}

/// What the model needs to know of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketSize {
    /// Bytes on the wire at the IP layer (for a GSO super-packet: all its segments).
    pub wire_bytes: u64,
    /// Number of wire packets (1, or the segment count of a GSO super-packet).
    pub segments: u64,
}

/// One entry of the bottleneck: a packet not yet fully serialized.
struct InService {
    finish_ns: u64,
    bytes: u64,
    segments: u64,
}

pub struct LinkModel {
    cfg: DirectionConfig,
    rng: Rng,
    /// Time at which the link finishes serializing everything accepted so far.
    link_free_ns: u64,
    /// Remainder of bits*1e9 not yet turned into whole nanoseconds (keeps the rate exact).
    carry: u128,
    in_service: VecDeque<InService>,
    backlog_bytes: u64,
    backlog_segments: u64,
    last_release_ns: u64,
    /// log(1 - loss), precomputed to draw the gaps between lost wire packets.
    log_keep: f64,
    /// Wire packets that pass before the next lost one (a geometric draw).
    until_loss: u64,
}

impl LinkModel {
    pub fn new(cfg: DirectionConfig) -> Self {
        let log_keep = if cfg.loss > 0.0 { (1.0 - cfg.loss).ln() } else { 0.0 };
        let mut m = LinkModel {
            rng: Rng::new(cfg.seed),
            cfg,
            link_free_ns: 0,
            carry: 0,
            in_service: VecDeque::new(),
            backlog_bytes: 0,
            backlog_segments: 0,
            last_release_ns: 0,
            log_keep,
            until_loss: u64::MAX,
        };
        m.until_loss = m.loss_gap();
        m
    }

    /// Wire packets before the next loss: geometric with success probability `loss`
    /// (inverse transform of a uniform draw in (0, 1]); never when loss is 0.
    fn loss_gap(&mut self) -> u64 {
        if self.cfg.loss <= 0.0 {
            return u64::MAX;
        }
        let u = 1.0 - self.rng.next_f64();
        let gap = (u.ln() / self.log_keep).floor();
        if gap >= u64::MAX as f64 {
            u64::MAX
        } else {
            gap as u64
        }
    }

    /// Indices of the wire packets lost among the next `segments` ones.
    fn lost_segments(&mut self, segments: u64) -> Vec<u32> {
        let mut lost = Vec::new();
        let mut i = 0;
        while self.until_loss < segments - i {
            i += self.until_loss;
            lost.push(i as u32);
            i += 1;
            self.until_loss = self.loss_gap();
        }
        self.until_loss -= segments - i;
        lost
    }

    /// The link was cut: what waited in its bottleneck queue is lost with it (the caller drops
    /// what was on the fibre), and a link that comes back starts idle. The random stream goes on.
    pub fn cut(&mut self) {
        self.in_service.clear();
        self.last_release_ns = 0;
        self.backlog_bytes = 0;
        self.backlog_segments = 0;
        self.link_free_ns = 0;
        self.carry = 0;
    }

    /// Bytes and wire packets waiting in (or being serialized by) the bottleneck at `now`.
    pub fn backlog(&mut self, now_ns: u64) -> (u64, u64) {
        self.drain(now_ns);
        (self.backlog_bytes, self.backlog_segments)
    }

    fn drain(&mut self, now_ns: u64) {
        while let Some(head) = self.in_service.front() {
            if head.finish_ns > now_ns {
                break;
            }
            self.backlog_bytes -= head.bytes;
            self.backlog_segments -= head.segments;
            self.in_service.pop_front();
        }
    }

    fn fits(&self, size: PacketSize) -> bool {
        match self.cfg.queue {
            QueueLimit::Bytes(q) => self.backlog_bytes == 0 || self.backlog_bytes + size.wire_bytes <= q,
            QueueLimit::Packets(q) => self.backlog_segments == 0 || self.backlog_segments + size.segments <= q,
        }
    }

    /// Serialization time of `bytes` at the link rate, carrying the sub-ns remainder.
    fn serialize_ns(&mut self, bytes: u64) -> u64 {
        let num = bytes as u128 * 8 * 1_000_000_000 + self.carry;
        let rate = self.cfg.rate_bps as u128;
        self.carry = num % rate;
        (num / rate) as u64
    }

    /// Decide the fate of a packet that arrived at `now_ns`.
    pub fn admit(&mut self, now_ns: u64, size: PacketSize) -> Verdict {
        let mut finish = now_ns;
        if self.cfg.rate_bps > 0 {
            self.drain(now_ns);
            if !self.fits(size) {
                return Verdict::Drop(DropCause::Queue);
            }
            let start = self.link_free_ns.max(now_ns);
            if start > self.link_free_ns {
                self.carry = 0; // the link went idle: no fraction of a bit is owed
            }
            finish = start + self.serialize_ns(size.wire_bytes + size.segments * self.cfg.frame_bytes);
            self.link_free_ns = finish;
            self.backlog_bytes += size.wire_bytes;
            self.backlog_segments += size.segments;
            self.in_service.push_back(InService { finish_ns: finish, bytes: size.wire_bytes, segments: size.segments });
        }
        // Lost on the fibre after using the link, each wire packet on its own.
        let lost = self.lost_segments(size.segments.max(1));
        if lost.len() as u64 >= size.segments.max(1) {
            return Verdict::Drop(DropCause::Loss);
        }
        let mut release = finish + self.cfg.delay_ns;
        if self.cfg.jitter_ns > 0 {
            let j = self.cfg.jitter_ns as f64;
            let offset = (self.rng.next_f64() * 2.0 - 1.0) * j;
            release = (release as f64 + offset).max(finish as f64) as u64;
        }
        release = release.max(self.last_release_ns);
        self.last_release_ns = release;
        Verdict::Release { at_ns: release, lost }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const US: u64 = 1_000;

    fn one(bytes: u64) -> PacketSize {
        PacketSize { wire_bytes: bytes, segments: 1 }
    }

    fn release(v: Verdict) -> u64 {
        match v {
            Verdict::Release { at_ns, .. } => at_ns,
            other => panic!("expected release, got {other:?}"),
        }
    }

    #[test]
    fn a_cut_link_forgets_its_queue_and_restarts_idle() {
        let cfg = DirectionConfig { rate_bps: 1_000_000_000, queue: QueueLimit::Bytes(10_000), ..Default::default() };
        let mut m = LinkModel::new(cfg);
        for _ in 0..10 {
            m.admit(0, one(1000));
        }
        assert_eq!(m.backlog(0), (10_000, 10));
        m.cut();
        assert_eq!(m.backlog(0), (0, 0));
        // Idle again: a packet at t = 1 us is serialized from then (8 us for 1000 bytes).
        assert_eq!(release(m.admit(US, one(1000))), 9 * US);
    }

    #[test]
    fn unlimited_rate_adds_only_delay() {
        let mut m = LinkModel::new(DirectionConfig { delay_ns: 10 * MS, ..Default::default() });
        assert_eq!(release(m.admit(5 * MS, one(1500))), 15 * MS);
        assert_eq!(release(m.admit(5 * MS + 1, one(64000))), 15 * MS + 1);
    }

    #[test]
    fn pacing_spaces_packets_by_serialization_time() {
        // 1 Gb/s: 1250 bytes take exactly 10 us.
        let cfg = DirectionConfig { delay_ns: MS, rate_bps: 1_000_000_000, ..Default::default() };
        let mut m = LinkModel::new(cfg);
        let r: Vec<u64> = (0..4).map(|_| release(m.admit(0, one(1250)))).collect();
        assert_eq!(r, vec![MS + 10 * US, MS + 20 * US, MS + 30 * US, MS + 40 * US]);
    }

    #[test]
    fn long_run_rate_is_exact_despite_fractional_nanoseconds() {
        // 3 Gb/s and 1499-byte packets: 3997.33.. ns each; 300k packets must take 1.2 s within 1 ns.
        let cfg =
            DirectionConfig { rate_bps: 3_000_000_000, queue: QueueLimit::Packets(u64::MAX), ..Default::default() };
        let mut m = LinkModel::new(cfg);
        let mut last = 0;
        for _ in 0..300_000 {
            last = release(m.admit(0, one(1499)));
        }
        let exact = 300_000u128 * 1499 * 8 * 1_000_000_000 / 3_000_000_000;
        assert!((last as i128 - exact as i128).abs() <= 1, "{last} vs {exact}");
    }

    #[test]
    fn byte_queue_is_drop_tail() {
        // 10 kB queue, 1000-byte packets arriving at once: 10 accepted, the rest dropped.
        let cfg = DirectionConfig { rate_bps: 1_000_000_000, queue: QueueLimit::Bytes(10_000), ..Default::default() };
        let mut m = LinkModel::new(cfg);
        let verdicts: Vec<Verdict> = (0..15).map(|_| m.admit(0, one(1000))).collect();
        let accepted = verdicts.iter().filter(|v| matches!(v, Verdict::Release { .. })).count();
        assert_eq!(accepted, 10);
        assert!(verdicts[10..].iter().all(|v| *v == Verdict::Drop(DropCause::Queue)));
        assert_eq!(m.backlog(0), (10_000, 10));
        // After 8 us (one 1000-byte packet at 1 Gb/s) one slot is free again.
        assert_eq!(m.backlog(8 * US), (9_000, 9));
        assert!(matches!(m.admit(8 * US, one(1000)), Verdict::Release { .. }));
        assert_eq!(m.admit(8 * US, one(1000)), Verdict::Drop(DropCause::Queue));
    }

    #[test]
    fn packet_queue_counts_gso_segments() {
        let cfg = DirectionConfig { rate_bps: 1_000_000_000, queue: QueueLimit::Packets(50), ..Default::default() };
        let mut m = LinkModel::new(cfg);
        let big = PacketSize { wire_bytes: 45 * 1500, segments: 45 };
        assert!(matches!(m.admit(0, big), Verdict::Release { .. }));
        assert_eq!(m.admit(0, big), Verdict::Drop(DropCause::Queue));
        assert!(matches!(m.admit(0, PacketSize { wire_bytes: 7500, segments: 5 }), Verdict::Release { .. }));
    }

    #[test]
    fn idle_link_accepts_a_packet_larger_than_the_queue() {
        let cfg = DirectionConfig { rate_bps: 1_000_000_000, queue: QueueLimit::Bytes(1000), ..Default::default() };
        let mut m = LinkModel::new(cfg);
        assert!(matches!(m.admit(0, one(65_000)), Verdict::Release { .. }));
        assert_eq!(m.admit(1, one(100)), Verdict::Drop(DropCause::Queue));
    }

    #[test]
    fn loss_rate_is_within_binomial_bounds() {
        let p = 1e-2;
        let n = 200_000u64;
        let mut m = LinkModel::new(DirectionConfig { loss: p, seed: 7, ..Default::default() });
        let lost = (0..n).filter(|&i| m.admit(i, one(100)) == Verdict::Drop(DropCause::Loss)).count() as f64;
        let mean = n as f64 * p;
        let sigma = (n as f64 * p * (1.0 - p)).sqrt();
        assert!((lost - mean).abs() < 5.0 * sigma, "lost {lost}, expected {mean} +- {sigma}");
    }

    #[test]
    fn loss_is_per_wire_packet_inside_super_packets() {
        // 44-segment super-packets at p = 1e-2: lost wire packets ~ binomial(n * 44, p), and a
        // super-packet loses only the segments drawn, at indices inside it.
        let p = 1e-2;
        let mut m = LinkModel::new(DirectionConfig { loss: p, seed: 3, ..Default::default() });
        let size = PacketSize { wire_bytes: 44 * 1500, segments: 44 };
        let n = 20_000u64;
        let mut lost = 0u64;
        let mut partly = 0u64;
        for i in 0..n {
            match m.admit(i, size) {
                Verdict::Release { lost: l, .. } => {
                    assert!(l.windows(2).all(|w| w[0] < w[1]) && l.iter().all(|&x| x < 44), "{l:?}");
                    partly += (!l.is_empty()) as u64;
                    lost += l.len() as u64;
                }
                Verdict::Drop(cause) => panic!("whole super-packet dropped ({cause:?})"),
            }
        }
        let wire = (n * 44) as f64;
        let sigma = (wire * p * (1.0 - p)).sqrt();
        assert!((lost as f64 - wire * p).abs() < 5.0 * sigma, "lost {lost}, expected {}", wire * p);
        // P(at least one of 44 lost) = 1 - 0.99^44 = 0.357.
        assert!((partly as f64 / n as f64 - 0.357).abs() < 0.02, "{partly}");
    }

    #[test]
    fn frame_bytes_take_link_time_per_wire_packet() {
        // 1 Gb/s, 38 framing bytes per wire packet: a 10-segment super-packet of 12120 IP bytes
        // takes (12120 + 380) * 8 ns = 100 us.
        let cfg = DirectionConfig { rate_bps: 1_000_000_000, frame_bytes: 38, ..Default::default() };
        let mut m = LinkModel::new(cfg);
        assert_eq!(release(m.admit(0, PacketSize { wire_bytes: 12_120, segments: 10 })), 100 * US);
    }

    #[test]
    fn jitter_stays_in_bounds_and_never_reorders() {
        let cfg = DirectionConfig { delay_ns: MS, jitter_ns: 200 * US, seed: 11, ..Default::default() };
        let mut m = LinkModel::new(cfg);
        let mut prev = 0;
        let mut spread = (u64::MAX, 0u64);
        for i in 0..10_000u64 {
            let now = i * 50 * US;
            let r = release(m.admit(now, one(100)));
            assert!(r >= prev, "reordered");
            assert!(r >= now + 800 * US && r <= now + 1200 * US, "out of bounds: {}", r - now);
            spread = (spread.0.min(r - now), spread.1.max(r - now));
            prev = r;
        }
        assert!(spread.0 < 820 * US && spread.1 > 1180 * US, "jitter not used: {spread:?}");
    }

    #[test]
    fn same_seed_same_fate() {
        let cfg = DirectionConfig { loss: 0.1, jitter_ns: 10 * US, delay_ns: 100 * US, seed: 42, ..Default::default() };
        let run = |cfg: DirectionConfig| {
            let mut m = LinkModel::new(cfg);
            (0..1000u64).map(|i| m.admit(i * US, one(200))).collect::<Vec<_>>()
        };
        assert_eq!(run(cfg.clone()), run(cfg));
    }
}
