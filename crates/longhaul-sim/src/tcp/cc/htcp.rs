//! H-TCP (D. Leith, R. Shorten, "H-TCP: TCP for high-speed and long-distance networks",
//! PFLDnet 2004; draft-leith-tcp-htcp-06).
//!
//! The increase depends on the time D since the last congestion event: alpha = 1 for D <= 1 s,
//! else alpha(D) = 1 + 10 (D - 1) + ((D - 1) / 2)^2, scaled by 2 (1 - beta) so that flows with
//! different backoff share fairly; each ACK adds alpha / cwnd. The backoff is adaptive:
//! beta = RTT_min / RTT_max, kept within [0.5, 0.8], so a flow whose queue drains keeps more
//! of its window.

use super::{AckInfo, CongestionControl, Window};
use crate::engine::time::to_s;
use crate::engine::Time;

const DELTA_L_S: f64 = 1.0;
const BETA_MIN: f64 = 0.5;
const BETA_MAX: f64 = 0.8;

#[derive(Default)]
pub struct Htcp {
    last_congestion: Time,
    rtt_min: Time,
    rtt_max: Time,
    beta: f64,
}

impl Htcp {
    fn alpha(&self, now: Time) -> f64 {
        let d = to_s(now.saturating_sub(self.last_congestion));
        let raw = if d <= DELTA_L_S { 1.0 } else { 1.0 + 10.0 * (d - DELTA_L_S) + ((d - DELTA_L_S) / 2.0).powi(2) };
        let beta = if self.beta == 0.0 { BETA_MIN } else { self.beta };
        (2.0 * (1.0 - beta) * raw).max(1.0 - beta)
    }
}

impl CongestionControl for Htcp {
    fn name(&self) -> &'static str {
        "htcp"
    }

    fn on_ack(&mut self, w: &mut Window, a: &AckInfo) {
        if let Some(r) = a.rtt {
            self.rtt_min = if self.rtt_min == 0 { r } else { self.rtt_min.min(r) };
            self.rtt_max = self.rtt_max.max(r);
        }
        if a.in_recovery || !a.cwnd_limited {
            return;
        }
        let left = w.slow_start(a.acked_segs);
        if left > 0.0 {
            w.cwnd += self.alpha(a.now) * left / w.cwnd;
        }
    }

    fn on_congestion(&mut self, w: &mut Window, now: Time, _in_flight_segs: f64) {
        self.beta = if self.rtt_max > 0 {
            (self.rtt_min as f64 / self.rtt_max as f64).clamp(BETA_MIN, BETA_MAX)
        } else {
            BETA_MIN
        };
        // The queue drains after the backoff: start the next epoch's RTT range afresh.
        self.rtt_max = self.rtt_min;
        self.last_congestion = now;
        w.ssthresh = (w.cwnd * self.beta).max(2.0);
        w.cwnd = w.ssthresh;
    }
}
