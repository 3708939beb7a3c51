//! HighSpeed TCP (RFC 3649). Up to Low_Window = 38 segments it is Reno. Above, the response
//! function is tuned to reach High_Window = 83000 segments at a loss rate of High_P = 1e-7:
//!   b(w) = (High_Decrease - 0.5) (log w - log Low_Window) / (log High_Window - log Low_Window) + 0.5
//!   p(w) = 0.078 / w^1.2                                   (section 5's approximation)
//!   a(w) = w^2 p(w) 2 b(w) / (2 - b(w))
//! with High_Decrease = 0.1. Each ACK adds a(w)/w; a loss sets w <- (1 - b(w)) w.

use super::{AckInfo, CongestionControl, Window};
use crate::engine::Time;

const LOW_WINDOW: f64 = 38.0;
const HIGH_WINDOW: f64 = 83_000.0;
const HIGH_DECREASE: f64 = 0.1;

pub struct HighSpeed;

fn b(w: f64) -> f64 {
    if w <= LOW_WINDOW {
        return 0.5;
    }
    (HIGH_DECREASE - 0.5) * (w.ln() - LOW_WINDOW.ln()) / (HIGH_WINDOW.ln() - LOW_WINDOW.ln()) + 0.5
}

fn a(w: f64) -> f64 {
    if w <= LOW_WINDOW {
        return 1.0;
    }
    let p = 0.078 / w.powf(1.2);
    let bw = b(w);
    (w * w * p * 2.0 * bw / (2.0 - bw)).max(1.0)
}

impl CongestionControl for HighSpeed {
    fn name(&self) -> &'static str {
        "highspeed"
    }

    fn on_ack(&mut self, w: &mut Window, ai: &AckInfo) {
        if ai.in_recovery || !ai.cwnd_limited {
            return;
        }
        let left = w.slow_start(ai.acked_segs);
        if left > 0.0 {
            w.cwnd += a(w.cwnd) * left / w.cwnd;
        }
    }

    fn on_congestion(&mut self, w: &mut Window, _now: Time, _in_flight_segs: f64) {
        w.ssthresh = ((1.0 - b(w.cwnd)) * w.cwnd).max(2.0);
        w.cwnd = w.ssthresh;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_function_matches_rfc3649_table() {
        // RFC 3649 section 5 table: w = 38 -> a = 1, b = 0.5; w = 83000 -> b = 0.1, a ~ 72.
        assert!((b(38.0) - 0.5).abs() < 1e-9 && (b(83_000.0) - 0.1).abs() < 1e-9);
        assert!((a(83_000.0) - 72.0).abs() < 3.0, "{}", a(83_000.0));
    }
}
