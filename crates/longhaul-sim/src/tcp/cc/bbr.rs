//! BBR v1 (N. Cardwell, Y. Cheng, C. S. Gunn, S. H. Yeganeh, V. Jacobson, "BBR: congestion-based
//! congestion control", ACM Queue 14(5), 2016; draft-cardwell-iccrg-bbr-congestion-control-00).
//!
//! BBR models the path by two numbers: the bottleneck bandwidth BtlBw (the maximum delivery rate
//! seen over the last 10 round trips) and the round-trip propagation time RTprop (the minimum RTT
//! over the last 10 s). It paces at pacing_gain x BtlBw and caps data in flight at
//! cwnd_gain x BtlBw x RTprop (+ 3 segments for delayed/stretched ACKs; Linux: see below). States:
//! - Startup: both gains 2/ln 2 = 2.885 (doubles the rate each round) until BtlBw stops growing
//!   by 25% for 3 rounds ("full pipe");
//! - Drain: pacing gain ln 2 / 2 to empty the queue Startup built, until in flight <= BDP;
//! - ProbeBW: pacing gain cycles 1.25, 0.75, 1, 1, 1, 1, 1, 1 (one phase per RTprop), cwnd gain 2;
//! - ProbeRTT: when RTprop is 10 s old, cwnd = 4 segments for 200 ms to re-measure it.
//!
//! Loss does not set the rate; during recovery the window follows packet conservation
//! (in flight + newly delivered), restored on exit.
//!
//! Two additions of Linux's tcp_bbr.c to the paper's cwnd target, which set how far a flow
//! overfills a bottleneck queue of about one BDP (`LinuxBudget`):
//! - the quantization budget (`bbr_quantization_budget`): 3 TSO bursts of about 1 ms of data
//!   each (`bbr_tso_segs_goal`: pacing rate >> sk_pacing_shift 10, 2 to one 64 KiB GSO packet),
//!   rounded up to even, + 2 segments in the 1.25 phase; the paper's 3 segments at low rates;
//! - the ACK-aggregation allowance (`bbr_update_ack_aggregation`, Linux 5.1): the most data
//!   ACKed beyond BtlBw x the time since an ACK epoch began, max over two windows of 5 rounds,
//!   at most cwnd and 100 ms at BtlBw; added once the pipe is full.

use std::collections::VecDeque;

use super::{AckInfo, CongestionControl, Window};
use crate::engine::time::{to_s, MS, S};
use crate::engine::Time;

const HIGH_GAIN: f64 = 2.885;
const DRAIN_GAIN: f64 = 1.0 / HIGH_GAIN;
const CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
const BW_WINDOW_ROUNDS: u64 = 10;
const RTPROP_WINDOW: Time = 10 * S;
const PROBE_RTT_TIME: Time = 200 * MS;
const MIN_CWND: f64 = 4.0;
/// Linux's TCP_INIT_CWND: Startup grows cwnd regardless of the target until this much is delivered.
const INIT_CWND_DELIVERED: u64 = 10;

/// Linux tcp_bbr.c constants of its additions to the cwnd target (see the module doc).
mod linux {
    use crate::engine::time::MS;
    use crate::engine::Time;
    /// sk_pacing_shift: a TSO burst holds about 2^-10 s (~1 ms) of data at the pacing rate.
    pub const PACING_SHIFT_DIVISOR: f64 = 1024.0;
    /// GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER (320 bytes on x86-64): one GSO packet's payload.
    pub const GSO_MAX_BYTES: f64 = 65_536.0 - 1.0 - 320.0;
    /// bbr_tso_segs_goal's bounds (bbr_min_tso_segs: 2 above 1.2 Mb/s; a 7-bit field).
    pub const MIN_TSO_SEGS: f64 = 2.0;
    pub const MAX_TSO_SEGS: f64 = 127.0;
    /// bbr_extra_acked_win_rtts, bbr_extra_acked_max_us, bbr_ack_epoch_acked_reset_thresh.
    pub const EXTRA_ACKED_WIN_ROUNDS: u32 = 5;
    pub const EXTRA_ACKED_MAX: Time = 100 * MS;
    pub const ACK_EPOCH_RESET_SEGS: f64 = (1u64 << 20) as f64;
    /// The 20-bit field ack_epoch_acked is kept in.
    pub const ACK_EPOCH_MAX_SEGS: f64 = 0xF_FFFF as f64;
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// The maximum of the samples of the last `BW_WINDOW_ROUNDS` rounds, exactly (Linux keeps an
/// approximation in three samples, lib/win_minmax.c). Kept as a monotone queue, rates strictly
/// falling from the front: a sample is dropped once a later one is at least as high, as it can
/// never be the maximum again, so the front is the maximum in O(1) amortised per ACK (a list
/// of every sample cost O(segments per round) per ACK: ~14 k at 8 Gb/s over 10 ms).
#[derive(Debug, Default)]
struct WindowedMax {
    samples: VecDeque<(u64, f64)>,
}

impl WindowedMax {
    /// Add the sample of `round`, first forgetting those older than the window.
    fn add(&mut self, round: u64, value: f64) {
        while self.samples.front().is_some_and(|s| s.0 + BW_WINDOW_ROUNDS <= round) {
            self.samples.pop_front();
        }
        while self.samples.back().is_some_and(|s| s.1 <= value) {
            self.samples.pop_back();
        }
        self.samples.push_back((round, value));
    }

    /// The maximum sample in the window as of the last `add` (0 before any).
    fn max(&self) -> f64 {
        self.samples.front().map_or(0.0, |s| s.1.max(0.0))
    }
}

pub struct Bbr {
    mode: Mode,
    /// Delivery rates (segments/s) of the last `BW_WINDOW_ROUNDS` rounds.
    bw_samples: WindowedMax,
    rt_prop: Time,
    rt_prop_stamp: Time,
    round: u64,
    next_round_delivered: u64,
    full_bw: f64,
    full_bw_rounds: u32,
    cycle_index: usize,
    cycle_stamp: Time,
    probe_rtt_done: Option<Time>,
    prior_cwnd: f64,
    initial_cwnd: f64,
    pacing_gain: f64,
    cwnd_gain: f64,
    pacing: f64,
    mss_bytes: f64,
    /// ACK aggregation: the largest excess seen in each of two windows of rounds, the window
    /// being filled and its age in rounds, and the current ACK epoch (start, segments ACKed).
    extra_acked: [f64; 2],
    extra_acked_idx: usize,
    extra_acked_rounds: u32,
    ack_epoch_start: Time,
    ack_epoch_acked: f64,
}

impl Bbr {
    /// `phase_seed` picks the ProbeBW phase a flow starts in (BBR randomises it so that flows
    /// do not probe in lock-step); never the 0.75 phase.
    pub fn new(initial_cwnd: f64, phase_seed: u64, mss_bytes: u32) -> Self {
        let idx = [0usize, 2, 3, 4, 5, 6, 7][(phase_seed % 7) as usize];
        Bbr {
            mode: Mode::Startup,
            bw_samples: WindowedMax::default(),
            rt_prop: Time::MAX,
            rt_prop_stamp: 0,
            round: 0,
            next_round_delivered: 0,
            full_bw: 0.0,
            full_bw_rounds: 0,
            cycle_index: idx,
            cycle_stamp: 0,
            probe_rtt_done: None,
            prior_cwnd: initial_cwnd,
            initial_cwnd,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            pacing: 0.0,
            mss_bytes: mss_bytes.max(1) as f64,
            extra_acked: [0.0; 2],
            extra_acked_idx: 0,
            extra_acked_rounds: 0,
            ack_epoch_start: 0,
            ack_epoch_acked: 0.0,
        }
    }

    fn full_bw_reached(&self) -> bool {
        self.full_bw_rounds >= 3
    }

    /// Segments per TSO burst Linux aims for at the current pacing rate (bbr_tso_segs_goal).
    fn tso_segs_goal(&self) -> f64 {
        let bytes = (self.pacing * self.mss_bytes / linux::PACING_SHIFT_DIVISOR).min(linux::GSO_MAX_BYTES);
        (bytes / self.mss_bytes).floor().clamp(linux::MIN_TSO_SEGS, linux::MAX_TSO_SEGS)
    }

    /// Linux's cwnd for `segs` in flight (bbr_quantization_budget): room for three TSO bursts,
    /// even (fewer delayed-ACK stalls), and 2 more in the 1.25 phase so that probing gets above
    /// the BDP even when it is small.
    fn quantization_budget(&self, segs: f64) -> f64 {
        let mut cwnd = segs.ceil() + 3.0 * self.tso_segs_goal();
        cwnd += cwnd % 2.0;
        if self.mode == Mode::ProbeBw && self.cycle_index == 0 {
            cwnd += 2.0;
        }
        cwnd
    }

    /// In flight that a phase of `gain` aims at (bbr_inflight).
    fn inflight_target(&self, gain: f64) -> f64 {
        self.quantization_budget(gain * self.bdp().unwrap_or(0.0))
    }

    /// Track how much more is ACKed than BtlBw predicts (bbr_update_ack_aggregation).
    fn update_ack_aggregation(&mut self, a: &AckInfo, round_start: bool, cwnd: f64) {
        if a.acked_segs <= 0.0 || a.rate_sample.is_none() {
            return;
        }
        if round_start {
            self.extra_acked_rounds = (self.extra_acked_rounds + 1).min(0x1F);
            if self.extra_acked_rounds >= linux::EXTRA_ACKED_WIN_ROUNDS {
                self.extra_acked_rounds = 0;
                self.extra_acked_idx ^= 1;
                self.extra_acked[self.extra_acked_idx] = 0.0;
            }
        }
        let mut expected = self.btl_bw() * to_s(a.now.saturating_sub(self.ack_epoch_start));
        if self.ack_epoch_acked <= expected || self.ack_epoch_acked + a.acked_segs >= linux::ACK_EPOCH_RESET_SEGS {
            self.ack_epoch_acked = 0.0;
            self.ack_epoch_start = a.now;
            expected = 0.0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + a.acked_segs).min(linux::ACK_EPOCH_MAX_SEGS);
        let extra = (self.ack_epoch_acked - expected).min(cwnd);
        let slot = &mut self.extra_acked[self.extra_acked_idx];
        *slot = slot.max(extra);
    }

    /// The cwnd allowance for ACK aggregation (bbr_ack_aggregation_cwnd, gain 1).
    fn ack_aggregation_cwnd(&self) -> f64 {
        if !self.full_bw_reached() {
            return 0.0;
        }
        let cap = self.btl_bw() * to_s(linux::EXTRA_ACKED_MAX);
        self.extra_acked[0].max(self.extra_acked[1]).min(cap)
    }

    fn btl_bw(&self) -> f64 {
        self.bw_samples.max()
    }

    /// Bandwidth-delay product in segments (None before any RTT sample).
    fn bdp(&self) -> Option<f64> {
        (self.rt_prop != Time::MAX && self.btl_bw() > 0.0).then(|| self.btl_bw() * to_s(self.rt_prop))
    }

    fn update_round(&mut self, a: &AckInfo) -> bool {
        if a.sample_prior_delivered >= self.next_round_delivered {
            self.next_round_delivered = a.delivered;
            self.round += 1;
            return true;
        }
        false
    }

    fn update_bw(&mut self, a: &AckInfo) {
        let Some(rate) = a.delivery_rate() else { return };
        self.bw_samples.add(self.round, rate);
    }

    fn check_full_pipe(&mut self, round_start: bool) {
        if self.mode != Mode::Startup || !round_start {
            return;
        }
        let bw = self.btl_bw();
        if bw >= self.full_bw * 1.25 {
            self.full_bw = bw;
            self.full_bw_rounds = 0;
            return;
        }
        self.full_bw_rounds += 1;
        if self.full_bw_rounds >= 3 {
            self.mode = Mode::Drain;
            self.pacing_gain = DRAIN_GAIN;
            self.cwnd_gain = HIGH_GAIN;
        }
    }

    fn enter_probe_bw(&mut self, now: Time) {
        self.mode = Mode::ProbeBw;
        self.cwnd_gain = 2.0;
        self.cycle_stamp = now;
        self.pacing_gain = CYCLE[self.cycle_index];
    }

    fn advance_cycle(&mut self, a: &AckInfo) {
        let elapsed = a.now.saturating_sub(self.cycle_stamp) > self.rt_prop;
        let gain = CYCLE[self.cycle_index];
        let next = if gain > 1.0 {
            elapsed && a.in_flight_segs >= self.inflight_target(gain)
        } else if gain < 1.0 {
            elapsed || a.in_flight_segs <= self.inflight_target(1.0)
        } else {
            elapsed
        };
        if next {
            self.cycle_index = (self.cycle_index + 1) % CYCLE.len();
            self.cycle_stamp = a.now;
            self.pacing_gain = CYCLE[self.cycle_index];
        }
    }

    fn update_rt_prop(&mut self, a: &AckInfo, w: &Window) {
        let expired = a.now.saturating_sub(self.rt_prop_stamp) > RTPROP_WINDOW;
        if let Some(r) = a.rtt {
            if r <= self.rt_prop || expired {
                self.rt_prop = r;
                self.rt_prop_stamp = a.now;
            }
        }
        if expired && self.mode != Mode::ProbeRtt && self.mode != Mode::Startup {
            self.mode = Mode::ProbeRtt;
            self.pacing_gain = 1.0;
            self.prior_cwnd = w.cwnd;
            self.probe_rtt_done = None;
        }
        if self.mode == Mode::ProbeRtt {
            if self.probe_rtt_done.is_none() && a.in_flight_segs <= MIN_CWND {
                self.probe_rtt_done = Some(a.now + PROBE_RTT_TIME);
            }
            if self.probe_rtt_done.is_some_and(|t| a.now >= t) {
                self.rt_prop_stamp = a.now;
                self.enter_probe_bw(a.now);
            }
        }
    }
}

impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    fn on_ack(&mut self, w: &mut Window, a: &AckInfo) {
        let round_start = self.update_round(a);
        self.update_bw(a);
        self.update_ack_aggregation(a, round_start, w.cwnd);
        self.check_full_pipe(round_start);
        if self.mode == Mode::Drain && self.bdp().is_some_and(|b| a.in_flight_segs <= b) {
            self.enter_probe_bw(a.now);
        }
        if self.mode == Mode::ProbeBw {
            self.advance_cycle(a);
        }
        self.update_rt_prop(a, w);
        let bw = self.btl_bw();
        if bw > 0.0 {
            self.pacing = self.pacing_gain * bw;
        } else if a.srtt > 0 {
            self.pacing = HIGH_GAIN * self.initial_cwnd / to_s(a.srtt);
        }
        let target = match self.bdp() {
            Some(b) => self.quantization_budget(self.cwnd_gain * b + self.ack_aggregation_cwnd()),
            None => HIGH_GAIN * self.initial_cwnd,
        };
        if a.in_recovery {
            // Packet conservation: never send more than what left the network.
            w.cwnd = w.cwnd.max(a.in_flight_segs + a.acked_segs).max(MIN_CWND);
        } else if self.full_bw_reached() || self.mode != Mode::Startup {
            w.cwnd = (w.cwnd + a.acked_segs).min(target);
        } else if w.cwnd < target || a.delivered < INIT_CWND_DELIVERED {
            w.cwnd += a.acked_segs;
        }
        if self.mode == Mode::ProbeRtt {
            w.cwnd = w.cwnd.min(MIN_CWND);
        }
        w.cwnd = w.cwnd.max(MIN_CWND);
    }

    fn on_congestion(&mut self, w: &mut Window, _now: Time, in_flight_segs: f64) {
        self.prior_cwnd = w.cwnd;
        w.cwnd = in_flight_segs.max(MIN_CWND);
    }

    fn on_rto(&mut self, w: &mut Window, _now: Time, _in_flight_segs: f64, _reduce: bool) {
        self.prior_cwnd = w.cwnd;
        w.cwnd = 1.0;
    }

    fn on_recovery_exit(&mut self, w: &mut Window) {
        w.cwnd = w.cwnd.max(self.prior_cwnd);
    }

    fn owns_recovery_window(&self) -> bool {
        true
    }

    fn pacing_rate(&self) -> Option<f64> {
        (self.pacing > 0.0).then_some(self.pacing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::US;
    use proptest::prelude::*;

    /// Linux's TSO goal is about 1 ms of data at the pacing rate, 2 segments at least and one
    /// 64 KiB GSO packet at most; the quantization budget is three of them, rounded up to even.
    #[test]
    fn quantization_budget_is_three_tso_bursts_as_linux() {
        let mut b = Bbr::new(10.0, 0, 1448);
        b.pacing = 1e9 / 1448.0; // 1 GB/s: 976 KB per ms, capped at one GSO packet of 45 segments
        assert_eq!(b.tso_segs_goal(), 45.0);
        assert_eq!(b.quantization_budget(100.0), 236.0);
        b.pacing = 1.25e6 / 1448.0; // 10 Mb/s: 1.2 KB per ms, under a segment
        assert_eq!(b.tso_segs_goal(), 2.0);
        assert_eq!(b.quantization_budget(100.5), 108.0);
        (b.mode, b.cycle_index) = (Mode::ProbeBw, 0); // the 1.25 phase gets 2 more
        assert_eq!(b.quantization_budget(100.5), 110.0);
    }

    /// ACKs arriving in bursts (here 40 segments at once every 100 us, where BtlBw predicts 10)
    /// raise the cwnd target by the excess once the pipe is full, and only then.
    #[test]
    fn ack_aggregation_adds_the_excess_acked_once_the_pipe_is_full() {
        let mut b = Bbr::new(10.0, 0, 1448);
        b.bw_samples.add(0, 1e5); // 10 segments per 100 us
        b.rt_prop = 1000 * US;
        let burst = |now: Time| AckInfo {
            acked_segs: 40.0,
            rate_sample: Some(super::super::RateSample { delivered_segs: 40, interval: 100 * US }),
            ..AckInfo::empty_at(now)
        };
        for k in 1..=5 {
            b.update_ack_aggregation(&burst(k * 100 * US), false, 1000.0);
        }
        assert_eq!(b.ack_aggregation_cwnd(), 0.0, "not before the pipe is full");
        b.full_bw_rounds = 3;
        // The epoch keeps running while ACKs outpace BtlBw: 200 ACKed against 40 expected.
        assert!((b.ack_aggregation_cwnd() - 160.0).abs() < 1e-9, "{}", b.ack_aggregation_cwnd());
    }

    proptest! {
        /// The filter's maximum is the maximum of every sample within the window.
        #[test]
        fn windowed_max_is_the_max_of_the_window(steps in prop::collection::vec((0u64..4, 0.0f64..1e6), 1..300)) {
            let (mut f, mut all, mut round) = (WindowedMax::default(), Vec::new(), 0u64);
            for (advance, v) in steps {
                round += advance;
                f.add(round, v);
                all.push((round, v));
                let want = all.iter().filter(|s| s.0 + BW_WINDOW_ROUNDS > round).map(|s| s.1).fold(0.0, f64::max);
                prop_assert_eq!(f.max(), want);
            }
        }
    }
}
