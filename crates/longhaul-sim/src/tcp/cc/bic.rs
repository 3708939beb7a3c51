//! BIC (L. Xu, K. Harfoush, I. Rhee, "Binary increase congestion control for fast long-distance
//! networks", IEEE INFOCOM 2004), Linux's default from 2.6.8 to 2.6.18.
//!
//! After a loss the window at the loss is W_max and the reduced window W_min. Each round trip
//! the window jumps toward the midpoint of [cwnd, W_max] (binary search), but by at most
//! S_max = 32 and at least S_min = 0.01 segments (additive increase far from W_max, a slow
//! approach near it). Past W_max it probes for a new maximum with increments growing 1, 2, 4 ...
//! up to S_max ("max probing", the mirror image of the search). The multiplicative decrease keeps
//! beta = 0.8 of the window (Linux's default), with fast convergence: a flow that lost below its
//! previous maximum sets W_max = cwnd (1 + beta) / 2. Below 14 segments it is Reno (low_window).

use super::{AckInfo, CongestionControl, Window};
use crate::engine::Time;

const S_MAX: f64 = 32.0;
const S_MIN: f64 = 0.01;
const BETA: f64 = 0.8;
const LOW_WINDOW: f64 = 14.0;

#[derive(Default)]
pub struct Bic {
    w_max: f64,
}

impl Bic {
    /// Segments to add over the next round trip at window `cwnd`.
    fn increment_per_rtt(&self, cwnd: f64) -> f64 {
        if self.w_max <= 0.0 {
            return S_MAX.min(cwnd); // no loss yet: probe quickly (bounded by S_max)
        }
        if cwnd < self.w_max {
            ((self.w_max - cwnd) / 2.0).clamp(S_MIN, S_MAX)
        } else {
            (cwnd - self.w_max + 1.0).clamp(S_MIN, S_MAX)
        }
    }
}

impl CongestionControl for Bic {
    fn name(&self) -> &'static str {
        "bic"
    }

    fn on_ack(&mut self, w: &mut Window, a: &AckInfo) {
        if a.in_recovery || !a.cwnd_limited {
            return;
        }
        let left = w.slow_start(a.acked_segs);
        if left <= 0.0 {
            return;
        }
        let inc = if w.cwnd < LOW_WINDOW { 1.0 } else { self.increment_per_rtt(w.cwnd) };
        w.cwnd += inc * left / w.cwnd;
    }

    fn on_congestion(&mut self, w: &mut Window, _now: Time, _in_flight_segs: f64) {
        self.w_max = if w.cwnd < self.w_max { w.cwnd * (1.0 + BETA) / 2.0 } else { w.cwnd };
        w.ssthresh = if w.cwnd < LOW_WINDOW { (w.cwnd / 2.0).max(2.0) } else { w.cwnd * BETA };
        w.cwnd = w.ssthresh;
    }
}
