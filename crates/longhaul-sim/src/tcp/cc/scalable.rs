//! Scalable TCP (T. Kelly, "Scalable TCP: improving performance in highspeed wide area
//! networks", ACM CCR 33(2), 2003): in congestion avoidance cwnd grows by a = 0.01 segment per
//! segment acknowledged, and a loss cuts it by b = 0.125 (cwnd <- 0.875 cwnd), so the recovery
//! time after a loss is a constant number of round trips whatever the window. Below the legacy
//! window of 16 segments it behaves as Reno (Kelly's lwnd).

use super::{AckInfo, CongestionControl, Window};
use crate::engine::Time;

const A: f64 = 0.01;
const B: f64 = 0.125;
const LEGACY_WINDOW: f64 = 16.0;

pub struct Scalable;

impl CongestionControl for Scalable {
    fn name(&self) -> &'static str {
        "scalable"
    }

    fn on_ack(&mut self, w: &mut Window, a: &AckInfo) {
        if a.in_recovery || !a.cwnd_limited {
            return;
        }
        let left = w.slow_start(a.acked_segs);
        if left > 0.0 {
            w.cwnd += if w.cwnd < LEGACY_WINDOW { left / w.cwnd } else { A * left };
        }
    }

    fn on_congestion(&mut self, w: &mut Window, _now: Time, in_flight_segs: f64) {
        let cw = w.cwnd.max(in_flight_segs.min(w.cwnd));
        w.ssthresh = if cw < LEGACY_WINDOW { (cw / 2.0).max(2.0) } else { (cw * (1.0 - B)).max(2.0) };
        w.cwnd = w.ssthresh;
    }
}
