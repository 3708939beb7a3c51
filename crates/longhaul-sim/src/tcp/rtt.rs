//! Round-trip time estimation and the retransmission timeout (RFC 6298).
//!
//! SRTT and RTTVAR follow section 2 with alpha = 1/8 and beta = 1/4. The timeout is Linux's by
//! default (net/ipv4/tcp_input.c tcp_rtt_estimator and tcp_set_rto): RTO = SRTT + max(4 RTTVAR,
//! min_rto), at most max_rto, because Linux keeps its variance term (`rttvar_us`) at least
//! TCP_RTO_MIN. The RFC's form ([`RtoFormula::Rfc6298`]), max(SRTT + max(G, 4 RTTVAR), min_rto),
//! which ns-3 uses, gives 200 ms at a 140 ms RTT: a timeout that can fire before a retransmission
//! is acknowledged. Karn's
//! algorithm (section 3) is the caller's job: only segments sent once give samples. Backoff
//! doubles the RTO on every expiry (section 5.5) and is cleared by the next new acknowledgement.

use super::params::{RtoFormula, RFC6298_CLOCK_GRANULARITY};
use crate::engine::time::{f64_of, time_of};
use crate::engine::Time;

#[derive(Debug, Clone)]
pub struct RttEstimator {
    srtt: Option<f64>,
    /// `srtt` as a Time, converted once per sample rather than at every read.
    srtt_ps: Time,
    rttvar: f64,
    pub min_rtt: Time,
    rto: Time,
    backoff: u32,
    min_rto: Time,
    max_rto: Time,
    formula: RtoFormula,
}

impl RttEstimator {
    pub fn new(initial_rto: Time, min_rto: Time, max_rto: Time, formula: RtoFormula) -> Self {
        RttEstimator {
            srtt: None,
            srtt_ps: 0,
            rttvar: 0.0,
            min_rtt: Time::MAX,
            rto: initial_rto,
            backoff: 0,
            min_rto,
            max_rto,
            formula,
        }
    }

    pub fn sample(&mut self, r: Time) {
        self.smooth(r);
        self.min_rtt = self.min_rtt.min(r);
    }

    /// The handshake's sample (SYN to SYN-ACK) starts SRTT, RTTVAR and the RTO (RFC 6298
    /// section 2.2) but not the minimum RTT: a 60-byte SYN crosses store-and-forward hops faster
    /// than a full segment, and the minimum stands for the data round trip (CUBIC's RTT term,
    /// HyStart's floor, BBR's RTprop, the records' `min_rtt_us`).
    pub fn sample_handshake(&mut self, r: Time) {
        self.smooth(r);
    }

    fn smooth(&mut self, r: Time) {
        let rf = f64_of(r);
        let s = match self.srtt {
            None => {
                self.rttvar = rf / 2.0;
                rf
            }
            Some(s) => {
                self.rttvar = 0.75 * self.rttvar + 0.25 * (s - rf).abs();
                0.875 * s + 0.125 * rf
            }
        };
        self.srtt = Some(s);
        self.srtt_ps = time_of(s);
        let rto = match self.formula {
            RtoFormula::Linux => time_of(s + (4.0 * self.rttvar).max(f64_of(self.min_rto))),
            RtoFormula::Rfc6298 => {
                time_of(s + (4.0 * self.rttvar).max(f64_of(RFC6298_CLOCK_GRANULARITY))).max(self.min_rto)
            }
        };
        self.rto = rto.min(self.max_rto);
    }

    /// Smoothed RTT (before any sample: the minimum seen, or 0).
    pub fn srtt(&self) -> Time {
        if self.srtt.is_some() {
            self.srtt_ps
        } else if self.min_rtt == Time::MAX {
            0
        } else {
            self.min_rtt
        }
    }

    /// Whether an RTT has been measured yet (the tests' view of a fresh estimator).
    #[cfg(test)]
    pub fn has_sample(&self) -> bool {
        self.srtt.is_some()
    }

    /// The current timeout including backoff.
    pub fn rto(&self) -> Time {
        self.rto.saturating_mul(1 << self.backoff.min(30)).min(self.max_rto)
    }

    pub fn back_off(&mut self) {
        self.backoff += 1;
    }

    pub fn clear_backoff(&mut self) {
        self.backoff = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::{MS, S};

    #[test]
    fn rfc6298_first_sample_and_backoff() {
        let mut e = RttEstimator::new(S, 200 * MS, 120 * S, RtoFormula::Linux);
        assert_eq!(e.rto(), S);
        e.sample(100 * MS);
        // SRTT = R, RTTVAR = R/2: RTO = R + 4 R/2 = 300 ms.
        assert_eq!(e.rto(), 300 * MS);
        e.back_off();
        e.back_off();
        assert_eq!(e.rto(), 1200 * MS);
        e.clear_backoff();
        // Linux: the variance term is at least the minimum RTO, so a steady 140 ms path times
        // out after 340 ms (RFC 6298's clamp would give 200 ms, less than two round trips).
        let mut f = RttEstimator::new(S, 200 * MS, 120 * S, RtoFormula::Linux);
        f.sample(MS);
        assert_eq!(f.rto(), 201 * MS);
        for _ in 0..50 {
            f.sample(140 * MS);
        }
        assert!((339 * MS..=341 * MS).contains(&f.rto()), "{}", f.rto());
    }

    /// RFC 6298's form bounds the whole timeout: 200 ms on the same steady 140 ms path, and
    /// SRTT + 4 RTTVAR where that is larger.
    #[test]
    fn rfc6298_bounds_the_whole_timeout() {
        let mut f = RttEstimator::new(S, 200 * MS, 120 * S, RtoFormula::Rfc6298);
        f.sample(MS);
        assert_eq!(f.rto(), 200 * MS);
        for _ in 0..50 {
            f.sample(140 * MS);
        }
        assert_eq!(f.rto(), 200 * MS);
        let mut g = RttEstimator::new(S, 200 * MS, 120 * S, RtoFormula::Rfc6298);
        g.sample(100 * MS);
        assert_eq!(g.rto(), 300 * MS);
    }
}
