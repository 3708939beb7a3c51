//! TCP Vegas (L. Brakmo and L. Peterson, "TCP Vegas: end to end congestion avoidance on a global
//! Internet", IEEE JSAC 13(8), 1995), as Linux 2.6's tcp_vegas.c (the loadable module of the
//! UltraScience Net's 2.6.18-era hosts) runs it.
//!
//! Once per round trip (when the ACKs pass the sequence number sent at the round's start) Vegas
//! compares the window of that round with the one the least RTT seen in it can carry at the base
//! (smallest ever) RTT: diff = cwnd - cwnd x base_rtt / rtt segments queued in the network. In
//! congestion avoidance cwnd grows by one segment a round while diff < alpha and shrinks by one
//! while diff > beta; slow start ends when diff > gamma, cwnd set to what the round's rate fills
//! (plus one). With two RTT samples or fewer in a round it grows as Reno. A loss halves the
//! window as Reno does (tcp_reno_ssthresh). Linux's defaults: alpha 2, beta 4, gamma 1.

use super::{AckInfo, CongestionControl, Window};
use crate::engine::Time;

const ALPHA: f64 = 2.0;
const BETA: f64 = 4.0;
const GAMMA: f64 = 1.0;

pub struct Vegas {
    /// The smallest RTT ever sampled.
    base_rtt: Time,
    /// The smallest RTT sampled in the current round, and how many were.
    round_min_rtt: Time,
    round_samples: u32,
    /// The round ends when the acknowledgements reach this sequence number.
    round_end: u64,
}

impl Default for Vegas {
    fn default() -> Self {
        Vegas { base_rtt: Time::MAX, round_min_rtt: Time::MAX, round_samples: 0, round_end: 0 }
    }
}

impl Vegas {
    fn reno(w: &mut Window, acked: f64) {
        let left = w.slow_start(acked);
        if left > 0.0 {
            w.cwnd += left / w.cwnd;
        }
    }
}

impl CongestionControl for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }

    fn on_ack(&mut self, w: &mut Window, a: &AckInfo) {
        if let Some(rtt) = a.rtt {
            self.base_rtt = self.base_rtt.min(rtt);
            self.round_min_rtt = self.round_min_rtt.min(rtt);
            self.round_samples += 1;
        }
        if a.in_recovery || !a.cwnd_limited {
            return;
        }
        if a.snd_una < self.round_end {
            if w.in_slow_start() {
                w.slow_start(a.acked_segs);
            }
            return;
        }
        self.round_end = a.snd_nxt;
        if self.round_samples <= 2 {
            Self::reno(w, a.acked_segs);
        } else {
            let rtt = self.round_min_rtt.max(1) as f64;
            let target = w.cwnd * self.base_rtt as f64 / rtt;
            let diff = w.cwnd - target;
            if w.in_slow_start() {
                if diff > GAMMA {
                    w.ssthresh = 2.0;
                    w.cwnd = w.cwnd.min(target.floor() + 1.0);
                }
                w.slow_start(a.acked_segs);
            } else if diff > BETA {
                w.cwnd -= 1.0;
            } else if diff < ALPHA {
                w.cwnd += 1.0;
            }
            w.cwnd = w.cwnd.max(2.0);
        }
        self.round_samples = 0;
        self.round_min_rtt = Time::MAX;
    }

    fn on_congestion(&mut self, w: &mut Window, _now: Time, in_flight_segs: f64) {
        let cw = w.cwnd.max(in_flight_segs.min(w.cwnd));
        w.ssthresh = (cw / 2.0).max(2.0);
        w.cwnd = w.ssthresh;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::MS;

    fn ack(now: Time, rtt: Time, una: u64, nxt: u64) -> AckInfo {
        AckInfo { acked_segs: 1.0, rtt: Some(rtt), snd_una: una, snd_nxt: nxt, ..AckInfo::empty_at(now) }
    }

    /// At the base RTT the window grows a segment a round; once the RTT carries more than beta
    /// segments of queue it shrinks a segment a round.
    #[test]
    fn grows_without_queue_and_backs_off_with_one() {
        let mut v = Vegas::default();
        let mut w = Window { cwnd: 100.0, ssthresh: 50.0 };
        for round in 0..10u64 {
            for i in 0..4u64 {
                v.on_ack(&mut w, &ack(round * 10 * MS, 10 * MS, round * 100 + i, round * 100 + 100));
            }
        }
        // The first round has no samples before it, so it grows as Reno (1/cwnd); then +1 a round.
        assert!((w.cwnd - 109.01).abs() < 1e-9, "{}", w.cwnd);
        // ~110 segments at 11 ms against a 10 ms base: 10 queued, above beta (the first of these
        // rounds still sees the last 10 ms samples).
        for round in 10..15u64 {
            for i in 0..4u64 {
                v.on_ack(&mut w, &ack(round * 11 * MS, 11 * MS, round * 100 + i, round * 100 + 100));
            }
        }
        assert!((w.cwnd - 106.01).abs() < 1e-9, "{}", w.cwnd);
    }
}
