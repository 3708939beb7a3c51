//! HyStart, the slow-start exit of Linux CUBIC (Ha & Rhee, "Taming the elephants: New TCP slow
//! start", Computer Networks 55(9), 2011; Linux net/ipv4/tcp_cubic.c, on by default since 2.6.29).
//!
//! Slow start doubles the window every round trip, so by the time a drop-tail queue overflows
//! the window is up to twice what the path holds and a whole window of segments is lost. HyStart
//! ends slow start (ssthresh = cwnd) before that, on the first of two signals, both measured
//! per round (a round ends when the segment that was snd_nxt at its start is acknowledged):
//! - ACK train: the ACKs of one round arrive closely spaced (gaps <= `ack_delta`, i.e. clocked
//!   by the bottleneck) for longer than half the minimum RTT: the window then fills about half
//!   the path, and the next doubling fills the rest. Linux adds a cushion for TSO/GRO batching
//!   (`hystart_ack_delay`: four GSO-sized packets at the pacing rate, at most 1 ms) and halves
//!   the threshold only for unpaced senders, which this model's CUBIC is (no fq qdisc);
//! - delay increase: the smallest RTT among the round's samples (at least `min_samples` of them)
//!   exceeds the connection's minimum RTT by clamp(min_rtt / 8, 4 ms, 16 ms): a queue is
//!   building (the same rule as RFC 9406 HyStart++ section 4.2, which compares against the
//!   previous round's minimum instead; Linux compares against the connection's).
//!
//! Linux arms HyStart once per connection, and again after a retransmission timeout
//! (cubictcp_state on TCP_CA_Loss, which also forgets the minimum delay); it acts only once cwnd
//! reaches `low_window_segs`.

use serde::Serialize;

use super::{AckInfo, Window};
use crate::engine::time::{MS, S, US};
use crate::engine::Time;

/// HyStart's parameters; defaults are Linux 6.x tcp_cubic.c (module parameters hystart = 1,
/// hystart_detect = 3, hystart_low_window = 16, hystart_ack_delta_us = 2000; constants
/// HYSTART_MIN_SAMPLES = 8, HYSTART_DELAY_MIN = 4 ms, HYSTART_DELAY_MAX = 16 ms, threshold
/// delay_min >> 3; hystart_ack_delay: 4 x sk_gso_max_size at sk_pacing_rate, capped at 1 ms).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HyStartParams {
    /// The ACK-train detector (hystart_detect bit 0x1).
    pub ack_train: bool,
    /// The delay-increase detector (hystart_detect bit 0x2).
    pub delay_increase: bool,
    /// HyStart acts only once cwnd is at least this (segments; hystart_low_window).
    pub low_window_segs: f64,
    /// ACKs at most this far apart belong to one train (hystart_ack_delta_us).
    pub ack_delta: Time,
    /// RTT samples per round before the delay detector may fire (HYSTART_MIN_SAMPLES).
    pub min_samples: u32,
    /// Delay threshold = min_rtt / divisor, clamped to [min, max] (delay_min >> 3,
    /// HYSTART_DELAY_MIN, HYSTART_DELAY_MAX; RFC 9406's MIN_RTT_DIVISOR, MIN/MAX_RTT_THRESH).
    pub delay_thresh_divisor: u32,
    pub delay_thresh_min: Time,
    pub delay_thresh_max: Time,
    /// TSO/GRO cushion added to the ACK-train threshold: `gso_max_bytes` x 4 at the pacing rate,
    /// at most `train_cushion_max` (Linux hystart_ack_delay; GSO_LEGACY_MAX_SIZE = 65536).
    pub gso_max_bytes: u32,
    pub train_cushion_max: Time,
    /// Linux's pacing rate in slow start: this times cwnd per smoothed RTT
    /// (tcp_pacing_ss_ratio = 200 %); it only sizes the cushion (the model does not pace CUBIC).
    pub pacing_ss_ratio: f64,
}

impl HyStartParams {
    pub fn linux() -> Self {
        HyStartParams {
            ack_train: true,
            delay_increase: true,
            low_window_segs: 16.0,
            ack_delta: 2 * MS,
            min_samples: 8,
            delay_thresh_divisor: 8,
            delay_thresh_min: 4 * MS,
            delay_thresh_max: 16 * MS,
            gso_max_bytes: 65_536,
            train_cushion_max: MS,
            pacing_ss_ratio: 2.0,
        }
    }
}

/// One connection's HyStart state.
#[derive(Debug, Clone)]
pub struct HyStart {
    p: HyStartParams,
    mss_bytes: f64,
    /// Slow start has been ended (Linux's `found`); cleared only by a retransmission timeout.
    found: bool,
    /// Smallest RTT sample since the connection started or the last timeout (Time::MAX: none).
    delay_min: Time,
    /// The round ends once `snd_una` passes this sequence number (snd_nxt at its start).
    round_end_seq: u64,
    round_start: Time,
    last_ack: Time,
    /// Smallest RTT sample of this round, and how many samples it has seen.
    round_min_rtt: Time,
    round_samples: u32,
}

impl HyStart {
    pub fn new(p: HyStartParams, mss_bytes: u32) -> Self {
        HyStart {
            p,
            mss_bytes: mss_bytes as f64,
            found: false,
            delay_min: Time::MAX,
            // Sequence 0: the first ACK HyStart looks at starts a round.
            round_end_seq: 0,
            round_start: 0,
            last_ack: 0,
            round_min_rtt: Time::MAX,
            round_samples: 0,
        }
    }

    /// A retransmission timeout: arm again and forget the minimum delay, as Linux does.
    pub fn on_rto(&mut self) {
        *self = HyStart::new(self.p, self.mss_bytes as u32);
    }

    fn start_round(&mut self, a: &AckInfo) {
        self.round_start = a.now;
        self.last_ack = a.now;
        self.round_end_seq = a.snd_nxt;
        self.round_min_rtt = Time::MAX;
        self.round_samples = 0;
    }

    /// The ACK-train threshold: half of (min RTT + cushion), the unpaced case of Linux.
    fn train_threshold(&self, w: &Window, a: &AckInfo) -> Time {
        let pacing_bytes_per_s = self.p.pacing_ss_ratio * w.cwnd * self.mss_bytes * S as f64 / a.srtt.max(1) as f64;
        let cushion = (4.0 * self.p.gso_max_bytes as f64 / pacing_bytes_per_s * S as f64) as Time;
        (self.delay_min + cushion.min(self.p.train_cushion_max)) / 2
    }

    /// Look at one ACK (before the window grows on it); returns true when slow start must end
    /// here (the caller sets ssthresh = cwnd).
    pub fn on_ack(&mut self, w: &Window, a: &AckInfo) -> bool {
        // Linux takes no HyStart decision on an ACK without an RTT sample (Karn).
        let Some(rtt) = a.rtt else { return false };
        let rtt = rtt.max(US);
        self.delay_min = self.delay_min.min(rtt);
        if self.found || !w.in_slow_start() || w.cwnd < self.p.low_window_segs {
            return false;
        }
        if a.snd_una > self.round_end_seq {
            self.start_round(a);
        }
        if self.p.ack_train && a.now - self.last_ack <= self.p.ack_delta {
            self.last_ack = a.now;
            if a.now - self.round_start > self.train_threshold(w, a) {
                self.found = true;
            }
        }
        if self.p.delay_increase {
            self.round_min_rtt = self.round_min_rtt.min(rtt);
            if self.round_samples < self.p.min_samples {
                self.round_samples += 1;
            } else {
                let thresh = (self.delay_min / self.p.delay_thresh_divisor as Time)
                    .clamp(self.p.delay_thresh_min, self.p.delay_thresh_max);
                if self.round_min_rtt > self.delay_min + thresh {
                    self.found = true;
                }
            }
        }
        self.found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(now: Time, rtt: Time, snd_una: u64, snd_nxt: u64) -> AckInfo {
        AckInfo {
            acked_segs: 1.0,
            rtt: Some(rtt),
            min_rtt: rtt,
            srtt: rtt,
            delivered: snd_una,
            snd_una,
            snd_nxt,
            ..AckInfo::empty_at(now)
        }
    }

    fn slow_start(cwnd: f64) -> Window {
        Window { cwnd, ssthresh: f64::INFINITY }
    }

    fn delay_only() -> HyStartParams {
        HyStartParams { ack_train: false, ..HyStartParams::linux() }
    }

    /// 100 ms path: a round whose every RTT is 12.5 ms above the minimum (the clamp(100/8)
    /// threshold) does not end slow start; one 13 ms above does, after 8 samples.
    #[test]
    fn delay_increase_uses_the_clamped_eighth_of_min_rtt() {
        for (extra, fires) in [(12_500 * US, false), (13 * MS, true)] {
            let mut h = HyStart::new(delay_only(), 1448);
            let w = slow_start(100.0);
            assert!(!h.on_ack(&w, &ack(100 * MS, 100 * MS, 1, 200)));
            let mut fired_at = None;
            for i in 0..20u64 {
                // A new round (snd_una past 200), ACKs 1 ms apart.
                if h.on_ack(&w, &ack(300 * MS + i * MS, 100 * MS + extra, 201 + i, 400)) {
                    fired_at.get_or_insert(i);
                }
            }
            assert_eq!(fired_at.is_some(), fires, "extra {extra} ps");
            if fires {
                assert_eq!(fired_at, Some(8), "needs {} samples first", delay_only().min_samples);
            }
        }
    }

    /// The threshold is at least 4 ms on short paths and at most 16 ms on long ones.
    #[test]
    fn delay_threshold_is_clamped() {
        for (min_rtt, below, above) in [(2 * MS, 5_900 * US, 6_100 * US), (400 * MS, 415 * MS, 417 * MS)] {
            for (rtt, fires) in [(below, false), (above, true)] {
                let mut h = HyStart::new(delay_only(), 1448);
                let w = slow_start(100.0);
                h.on_ack(&w, &ack(MS, min_rtt, 1, 200));
                let fired = (0..10u64).any(|i| h.on_ack(&w, &ack(500 * MS + i * US, rtt, 201 + i, 400)));
                assert_eq!(fired, fires, "min {min_rtt} rtt {rtt}");
            }
        }
    }

    /// A train of ACKs 12 us apart (1 Gb/s, 1500-byte packets) on a 100 ms path ends slow start
    /// once it spans half of (min RTT + 1 ms cushion) = 50.5 ms; gaps over 2 ms break the train.
    #[test]
    fn ack_train_ends_slow_start_at_half_the_min_rtt() {
        let p = HyStartParams { delay_increase: false, ..HyStartParams::linux() };
        let mut h = HyStart::new(p, 1448);
        let w = slow_start(5000.0);
        h.on_ack(&w, &ack(0, 100 * MS, 1, 10));
        let start = 200 * MS;
        let mut fired_at = None;
        for i in 0..5000u64 {
            let now = start + i * 12 * US;
            if h.on_ack(&w, &ack(now, 100 * MS, 11 + i, 20_000)) {
                fired_at = Some(now - start);
                break;
            }
        }
        let t = fired_at.expect("the train ends slow start");
        assert!(t > 50_500 * US && t <= 50_500 * US + 12 * US, "fired after {t} ns");

        let mut h = HyStart::new(p, 1448);
        h.on_ack(&w, &ack(0, 100 * MS, 1, 10));
        let fired = (0..100u64).any(|i| h.on_ack(&w, &ack(start + i * 3 * MS, 100 * MS, 11 + i, 20_000)));
        assert!(!fired, "ACKs 3 ms apart are no train");
    }

    /// Below the low window, outside slow start, and after it fired once, HyStart stays quiet;
    /// a timeout arms it again.
    #[test]
    fn acts_once_per_slow_start() {
        let mut h = HyStart::new(delay_only(), 1448);
        let late = |i: u64| ack(300 * MS + i * MS, 200 * MS, 201 + i, 400);
        h.on_ack(&slow_start(100.0), &ack(MS, 100 * MS, 1, 200));
        assert!(!(0..20).any(|i| h.on_ack(&slow_start(10.0), &late(i))), "below hystart_low_window");
        assert!(!(0..20).any(|i| h.on_ack(&Window { cwnd: 100.0, ssthresh: 50.0 }, &late(i))), "not in slow start");
        assert!((0..20).any(|i| h.on_ack(&slow_start(100.0), &late(i))));
        assert!(!(20..40).any(|i| h.on_ack(&slow_start(100.0), &late(i))), "fires once");
        h.on_rto();
        h.on_ack(&slow_start(100.0), &ack(800 * MS, 100 * MS, 401, 450));
        assert!((0..20).any(|i| h.on_ack(&slow_start(100.0), &ack(900 * MS + i * MS, 200 * MS, 451 + i, 600))));
    }
}
