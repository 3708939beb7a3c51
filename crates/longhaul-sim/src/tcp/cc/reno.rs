//! Reno / NewReno window rules (RFC 5681): slow start adds one segment per segment acknowledged;
//! congestion avoidance adds one segment per round trip (1/cwnd per segment acknowledged); a
//! loss halves the window: ssthresh = max(FlightSize / 2, 2) (equation 4) and fast recovery runs
//! at cwnd = ssthresh. NewReno's partial-ACK handling (RFC 6582) lives in the sender.

use super::{AckInfo, CongestionControl, Window};
use crate::engine::Time;

pub struct Reno;

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    fn on_ack(&mut self, w: &mut Window, a: &AckInfo) {
        if a.in_recovery || !a.cwnd_limited {
            return;
        }
        let left = w.slow_start(a.acked_segs);
        if left > 0.0 {
            w.cwnd += left / w.cwnd;
        }
    }

    fn on_congestion(&mut self, w: &mut Window, _now: Time, in_flight_segs: f64) {
        w.ssthresh = (in_flight_segs / 2.0).max(2.0);
        w.cwnd = w.ssthresh;
    }
}
