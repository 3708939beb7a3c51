//! CUBIC (RFC 8312; Ha, Rhee, Xu, "CUBIC: a new TCP-friendly high-speed TCP variant", 2008),
//! Linux's default since 2.6.19.
//!
//! After a loss at window W_max the window follows W(t) = C (t - K)^3 + W_max with
//! K = cbrt(W_max (1 - beta) / C), C = 0.4, beta = 0.7 (section 4.1), t the time since the
//! congestion epoch began; per ACK cwnd moves (W(t + RTT) - cwnd) / cwnd toward the target
//! (section 4.3, using the minimum RTT as Linux does). In the TCP-friendly region (section 4.2)
//! it never grows slower than an AIMD flow with alpha = 3 (1 - beta) / (1 + beta). Fast
//! convergence (section 4.6): a flow that lost before reaching its previous W_max releases
//! bandwidth by remembering W_max (1 + beta) / 2. A loss sets ssthresh = cwnd * beta (4.5).
//!
//! As in Linux (net/ipv4/tcp_cubic.c):
//! - slow start ends by [`HyStart`] when it is on (Linux's default), else at ssthresh or a loss;
//! - until the first loss (W_max unknown, e.g. after a HyStart exit) the window grows at least
//!   one segment per 20 acknowledged (5% per RTT: `ca->cnt` capped at 20 while
//!   `last_max_cwnd == 0`), since the cubic around K = 0 alone would barely move;
//! - a retransmission timeout forgets W_max and re-arms HyStart (cubictcp_state on TCP_CA_Loss).

use super::hystart::HyStart;
use super::{AckInfo, CongestionControl, Window};
use crate::engine::time::to_s;
use crate::engine::Time;

const C: f64 = 0.4;
const BETA: f64 = 0.7;
/// Growth per acknowledged segment before the first loss: Linux's cnt <= 20.
const NO_LOSS_MIN_GROWTH_PER_SEG: f64 = 1.0 / 20.0;

#[derive(Default)]
pub struct Cubic {
    w_max: f64,
    /// The window at the last loss (0: no loss since the start or the last timeout).
    w_last_max: f64,
    k: f64,
    /// Start of the current congestion-avoidance epoch (None: begins at the next ACK).
    epoch: Option<Time>,
    /// The AIMD-equivalent window of the TCP-friendly region.
    w_est: f64,
    /// The RTT the last ACK used, and it in seconds (it rarely changes: a division per ACK
    /// saved).
    rtt: (Time, f64),
    hystart: Option<HyStart>,
}

impl Cubic {
    pub fn new(hystart: Option<HyStart>) -> Self {
        Cubic { hystart, ..Cubic::default() }
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn on_ack(&mut self, w: &mut Window, a: &AckInfo) {
        if a.in_recovery {
            return;
        }
        if let Some(h) = self.hystart.as_mut() {
            if h.on_ack(w, a) {
                w.ssthresh = w.cwnd;
            }
        }
        if !a.cwnd_limited {
            return;
        }
        let left = w.slow_start(a.acked_segs);
        if left <= 0.0 {
            return;
        }
        let start = *self.epoch.get_or_insert_with(|| {
            if self.w_max < w.cwnd {
                // No loss yet (or cwnd already past it): the plateau is here, K = 0.
                self.w_max = w.cwnd;
                self.k = 0.0;
            } else {
                self.k = (self.w_max * (1.0 - BETA) / C).cbrt();
            }
            self.w_est = w.cwnd;
            a.now
        });
        let rtt_ps = if a.min_rtt == Time::MAX { a.srtt } else { a.min_rtt };
        if rtt_ps != self.rtt.0 {
            self.rtt = (rtt_ps, to_s(rtt_ps));
        }
        let rtt = self.rtt.1;
        let t = to_s(a.now - start) + rtt;
        let target = C * (t - self.k).powi(3) + self.w_max;
        self.w_est += 3.0 * (1.0 - BETA) / (1.0 + BETA) * left / w.cwnd;
        let mut growth_per_seg = if target > w.cwnd {
            (target - w.cwnd) / w.cwnd
        } else {
            // At or above the target: creep (Linux: one segment per 100 cwnd of ACKs).
            0.01 / w.cwnd
        };
        if self.w_last_max == 0.0 {
            growth_per_seg = growth_per_seg.max(NO_LOSS_MIN_GROWTH_PER_SEG);
        }
        w.cwnd += growth_per_seg * left;
        if self.w_est > w.cwnd {
            w.cwnd = self.w_est;
        }
    }

    fn on_congestion(&mut self, w: &mut Window, _now: Time, _in_flight_segs: f64) {
        self.epoch = None;
        if w.cwnd < self.w_last_max {
            self.w_last_max = w.cwnd;
            self.w_max = w.cwnd * (1.0 + BETA) / 2.0;
        } else {
            self.w_last_max = w.cwnd;
            self.w_max = w.cwnd;
        }
        w.ssthresh = (w.cwnd * BETA).max(2.0);
        w.cwnd = w.ssthresh;
    }

    fn on_rto(&mut self, w: &mut Window, now: Time, in_flight_segs: f64, reduce: bool) {
        if reduce {
            self.on_congestion(w, now, in_flight_segs);
        }
        w.cwnd = 1.0;
        // Linux resets CUBIC's state on entering Loss, keeping only the ssthresh just computed.
        *self = Cubic::new(self.hystart.take().map(|mut h| {
            h.on_rto();
            h
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::{MS, S};

    /// One RTT's worth of ACKs at `now`, as one aggregate: the whole window acknowledged.
    fn rtt_of_acks(now: Time, rtt: Time, w: &Window) -> AckInfo {
        AckInfo {
            acked_segs: w.cwnd,
            rtt: Some(rtt),
            min_rtt: rtt,
            srtt: rtt,
            in_flight_segs: w.cwnd,
            ..AckInfo::empty_at(now)
        }
    }

    /// After a loss at W_max the window returns to W_max after K seconds (the cubic's plateau).
    #[test]
    fn returns_to_w_max_after_k() {
        let mut cc = Cubic::new(None);
        let mut w = Window { cwnd: 1000.0, ssthresh: 1.0 };
        cc.on_congestion(&mut w, 0, 1000.0);
        assert!((w.cwnd - 700.0).abs() < 1e-9);
        let k = (1000.0_f64 * 0.3 / 0.4).cbrt(); // 9.09 s
        let rtt = 100 * MS;
        let mut now = 0;
        while to_s(now) < k - 0.002 {
            now += rtt;
            let a = rtt_of_acks(now, rtt, &w);
            cc.on_ack(&mut w, &a);
        }
        assert!((w.cwnd - 1000.0).abs() < 15.0, "cwnd at K: {}", w.cwnd);
        assert!(now < 10 * S);
    }

    /// Slow start left without a loss (a HyStart exit): W_max is unknown and the window grows 5%
    /// per RTT (Linux's cnt <= 20), not along the flat cubic around K = 0; a timeout restores it.
    #[test]
    fn grows_five_percent_per_rtt_until_the_first_loss() {
        let rtt = 100 * MS;
        let run = |cc: &mut Cubic, w: &mut Window, rounds: u64| {
            for i in 1..=rounds {
                let a = rtt_of_acks(i * rtt, rtt, w);
                cc.on_ack(w, &a);
            }
        };
        let mut cc = Cubic::new(None);
        let mut w = Window { cwnd: 1000.0, ssthresh: 1000.0 };
        run(&mut cc, &mut w, 10);
        let expected = 1000.0 * 1.05_f64.powi(10);
        assert!((w.cwnd - expected).abs() < 0.01 * expected, "cwnd {} vs {expected}", w.cwnd);
        let flight = w.cwnd;
        cc.on_congestion(&mut w, 0, flight);
        let after_loss = w.cwnd;
        run(&mut cc, &mut w, 10);
        assert!(w.cwnd < 1.2 * after_loss, "after a loss the cubic governs: {} from {after_loss}", w.cwnd);
        let flight = w.cwnd;
        cc.on_rto(&mut w, 0, flight, true);
        assert!(cc.w_last_max == 0.0 && cc.w_max == 0.0, "a timeout forgets W_max, as Linux");
    }
}
