//! Congestion control: one trait, one file per algorithm.
//!
//! The sender owns loss detection and recovery (SACK scoreboard, fast retransmit, RTO) and asks
//! its algorithm only how the window moves: on each acknowledgement that delivers data, when a
//! loss starts a recovery episode, when the retransmission timer expires, and (BBR) how fast to
//! pace. Windows are in segments (fractional, like Linux's snd_cwnd plus its fractional counter).

pub(crate) mod bbr;
pub(crate) mod bic;
pub(crate) mod cubic;
pub(crate) mod highspeed;
pub(crate) mod htcp;
pub(crate) mod hystart;
pub(crate) mod reno;
pub(crate) mod scalable;
pub(crate) mod vegas;

use serde::{Deserialize, Serialize};

use crate::engine::time::S;
use crate::engine::Time;

/// The congestion window and slow-start threshold the sender enforces (segments).
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub cwnd: f64,
    pub ssthresh: f64,
}

impl Window {
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Standard slow start (RFC 5681 section 3.1, growing by the segments acknowledged as Linux
    /// does): returns the acknowledged segments left over once cwnd reaches ssthresh.
    pub fn slow_start(&mut self, acked: f64) -> f64 {
        let room = (self.ssthresh - self.cwnd).max(0.0);
        let used = acked.min(room);
        self.cwnd += used;
        acked - used
    }
}

/// What one acknowledgement tells the algorithm.
#[derive(Debug, Clone, Copy)]
pub struct AckInfo {
    pub now: Time,
    /// Segments the window may grow by: those this ACK newly delivers (cumulatively
    /// acknowledged or SACKed), or as [`super::params::CwndGrowth`] chooses.
    pub acked_segs: f64,
    /// RTT sample from this ACK (Karn's rule applied), if any.
    pub rtt: Option<Time>,
    pub min_rtt: Time,
    pub srtt: Time,
    /// Segments in flight after processing this ACK.
    pub in_flight_segs: f64,
    /// Delivery-rate sample (RFC-draft "delivery rate estimation"), if any: see `delivery_rate`.
    pub rate_sample: Option<RateSample>,
    /// Total segments delivered so far, and the total when the sampled segment was sent
    /// (BBR's round counting).
    pub delivered: u64,
    pub sample_prior_delivered: u64,
    /// True while the sender is in fast recovery or RTO recovery.
    pub in_recovery: bool,
    /// Oldest unacknowledged and next new segment after this ACK (HyStart's rounds).
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// The window is what limits sending (RFC 7661; Linux tcp_is_cwnd_limited): sending stopped
    /// on cwnd in the last window of data, or, in slow start, cwnd is below twice the most data
    /// that was in flight. Loss-based algorithms grow cwnd only then, so a window capped by the
    /// receiver or the send buffer does not inflate without bound.
    pub cwnd_limited: bool,
}

/// Segments delivered over an interval (> 0): the inputs of a delivery-rate sample, whose
/// division only the algorithms that use it (BBR) pay for.
#[derive(Debug, Clone, Copy)]
pub struct RateSample {
    pub delivered_segs: u64,
    pub interval: Time,
}

#[cfg(test)]
impl AckInfo {
    /// An ACK at `now` that carries nothing, for tests to fill in what they need.
    pub fn empty_at(now: Time) -> Self {
        AckInfo {
            now,
            acked_segs: 0.0,
            rtt: None,
            min_rtt: 0,
            srtt: 0,
            in_flight_segs: 0.0,
            rate_sample: None,
            delivered: 0,
            sample_prior_delivered: 0,
            in_recovery: false,
            snd_una: 0,
            snd_nxt: 0,
            cwnd_limited: true,
        }
    }
}

impl AckInfo {
    /// The delivery rate in segments per second, if this ACK gives a sample.
    pub fn delivery_rate(&self) -> Option<f64> {
        self.rate_sample.map(|r| r.delivered_segs as f64 * S as f64 / r.interval as f64)
    }
}

pub trait CongestionControl: Send {
    fn name(&self) -> &'static str;
    /// Grow (or shape) the window after an ACK that delivered data.
    fn on_ack(&mut self, w: &mut Window, a: &AckInfo);
    /// A loss was detected by duplicate ACKs / SACK: set ssthresh and the recovery cwnd.
    fn on_congestion(&mut self, w: &mut Window, now: Time, in_flight_segs: f64);
    /// The retransmission timer expired: cwnd = 1 segment (RFC 5681 section 3.1, "loss window")
    /// and, when `reduce`, a congestion event. `reduce` is false when this loss episode already
    /// reduced ssthresh (a timeout during fast recovery, or a backed-off repeat): Linux's
    /// tcp_enter_loss keeps ssthresh then, RFC 5681 too for a repeated timeout.
    fn on_rto(&mut self, w: &mut Window, now: Time, in_flight_segs: f64, reduce: bool) {
        if reduce {
            self.on_congestion(w, now, in_flight_segs);
        }
        w.cwnd = 1.0;
    }
    /// Fast recovery ended (everything outstanding at its start is acknowledged): cwnd =
    /// ssthresh (RFC 6937 section 3; Linux tcp_end_cwnd_reduction).
    fn on_recovery_exit(&mut self, w: &mut Window) {
        w.cwnd = w.ssthresh.max(2.0);
    }
    /// True when the algorithm sets cwnd itself during fast recovery (BBR, a Linux
    /// `cong_control` module); otherwise the sender runs Proportional Rate Reduction.
    fn owns_recovery_window(&self) -> bool {
        false
    }
    /// Pacing rate in segments per second (None: send as the window allows).
    fn pacing_rate(&self) -> Option<f64> {
        None
    }
}

/// The algorithms by name (Linux's tcp_congestion_control names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CcName {
    Reno,
    Cubic,
    Bic,
    Htcp,
    Scalable,
    Highspeed,
    Bbr,
    Vegas,
}

impl CcName {
    pub const NAMES: [&'static str; 8] = ["reno", "cubic", "bic", "htcp", "scalable", "highspeed", "bbr", "vegas"];

    /// `hystart`: the slow-start exit CUBIC uses (None: plain slow start). Linux uses HyStart
    /// only in tcp_cubic.c, so the other algorithms ignore it.
    pub fn build(
        self,
        initial_cwnd: f64,
        phase_seed: u64,
        hystart: Option<hystart::HyStart>,
        mss_bytes: u32,
    ) -> Box<dyn CongestionControl> {
        match self {
            CcName::Reno => Box::new(reno::Reno),
            CcName::Cubic => Box::new(cubic::Cubic::new(hystart)),
            CcName::Bic => Box::new(bic::Bic::default()),
            CcName::Htcp => Box::new(htcp::Htcp::default()),
            CcName::Scalable => Box::new(scalable::Scalable),
            CcName::Highspeed => Box::new(highspeed::HighSpeed),
            CcName::Bbr => Box::new(bbr::Bbr::new(initial_cwnd, phase_seed, mss_bytes)),
            CcName::Vegas => Box::new(vegas::Vegas::default()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::MS;

    fn ack(now: Time) -> AckInfo {
        AckInfo {
            acked_segs: 1.0,
            rtt: Some(10 * MS),
            min_rtt: 10 * MS,
            srtt: 10 * MS,
            in_flight_segs: 100.0,
            // 10,000 segments per second.
            rate_sample: Some(RateSample { delivered_segs: 1000, interval: 100 * MS }),
            delivered: now / MS,
            sample_prior_delivered: (now / MS).saturating_sub(100),
            snd_una: now / MS,
            snd_nxt: now / MS + 100,
            ..AckInfo::empty_at(now)
        }
    }

    /// Every algorithm grows the window without loss and shrinks it on a loss; none returns a
    /// window below one segment or a non-finite value.
    #[test]
    fn every_variant_grows_then_backs_off() {
        for name in [
            CcName::Reno,
            CcName::Cubic,
            CcName::Bic,
            CcName::Htcp,
            CcName::Scalable,
            CcName::Highspeed,
            CcName::Bbr,
            CcName::Vegas,
        ] {
            let mut cc = name.build(10.0, 1, None, 1448);
            let mut w = Window { cwnd: 100.0, ssthresh: 50.0 };
            for i in 0..2000u64 {
                cc.on_ack(&mut w, &ack(i * MS / 10 + MS));
                assert!(w.cwnd.is_finite() && w.cwnd >= 1.0, "{name:?}: {}", w.cwnd);
            }
            assert!(w.cwnd > 100.0 || name == CcName::Bbr, "{name:?} did not grow: {}", w.cwnd);
            let before = w.cwnd;
            cc.on_congestion(&mut w, 300 * MS, before);
            if name != CcName::Bbr {
                assert!(w.ssthresh < before && w.ssthresh >= 2.0, "{name:?}: {} -> {}", before, w.ssthresh);
            }
            cc.on_rto(&mut w, 400 * MS, before, true);
            assert!(w.cwnd >= 1.0 && w.cwnd <= 4.0, "{name:?} after RTO: {}", w.cwnd);
        }
    }
}
