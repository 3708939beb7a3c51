//! The sending side of one connection: what to send next, what an ACK means, and what to do
//! when the retransmission timer expires.
//!
//! Loss detection and recovery (the congestion window itself moves in [`super::cc`]):
//! - SACK scoreboard (RFC 2018, RFC 6675): every outstanding segment has flags SACKED, LOST,
//!   RETRANS; a segment counts as lost once a segment at least `dupthresh` above it has been
//!   SACKed (the forward-acknowledgement rule, Mathis & Mahdavi SIGCOMM 1996, Linux's default
//!   until 4.15), so the test is one pointer that only moves forward;
//! - without SACK, NewReno (RFC 6582): the third duplicate ACK marks the first unacknowledged
//!   segment lost, and each partial ACK in recovery marks the next one; with SACK the third
//!   duplicate ACK that SACKs new data does too (RFC 6675's definition of a duplicate: the ones
//!   a spurious retransmission draws count for nothing, as in Linux, which counts SACKed
//!   segments);
//! - the pipe is Linux's packets-in-flight: outstanding - SACKed - lost + retransmitted, and the
//!   sender transmits while pipe < cwnd, retransmissions first (RFC 6675 section 5);
//! - in fast recovery the window follows Proportional Rate Reduction (RFC 6937, Linux
//!   tcp_cwnd_reduction, the 6.x form): while the pipe exceeds ssthresh, send ssthresh /
//!   prior cwnd of what is delivered; below it, grow back towards ssthresh by at most what was
//!   delivered plus one (slow-start reduction bound). It replaces both the burst that cwnd =
//!   ssthresh allows once many losses empty the pipe and the silence when few do;
//! - fast recovery ends when everything outstanding at its start is acknowledged (cwnd =
//!   ssthresh);
//! - a lost retransmission is found by RACK's rule (RFC 8985, Linux's default since 4.18):
//!   once a segment sent after the retransmission is delivered, the retransmission is lost (no
//!   reordering window: the model's paths are FIFO, and Linux uses none in recovery before it
//!   has seen reordering). First transmissions keep the forward-acknowledgement rule above;
//! - RTO (RFC 6298, [`super::rtt`]): restarted by every ACK of new data (or, as an option, in
//!   fast recovery only by its first partial ACK: [`RtoRestart`]); on expiry every un-SACKed
//!   segment is marked lost, cwnd falls to one segment and the timer backs off; ssthresh is
//!   reduced only if this loss episode has not already reduced it (Linux tcp_enter_loss; as an
//!   option, on every timeout outside Loss: [`RtoSsthresh`]);
//! - window growth only when the window limits sending (RFC 7661, [`AckInfo::cwnd_limited`])
//!   and only on ACKs that advance snd_una, by what they deliver (Linux) or, as an option, by
//!   all their cumulative acknowledgement covers ([`CwndGrowth`]).
//!
//! RTT samples (Karn's rule: never from a retransmitted segment) come from the newest segment a
//! cumulative ACK newly delivers: one SACKed earlier was delivered then (Linux
//! tcp_clean_rtx_queue skips SACKed segments; sampling it would measure a hole's repair, up to
//! two round trips, and inflate SRTT and the RTO during a recovery).
//!
//! Delivery-rate samples for BBR follow draft-cheng-iccrg-delivery-rate-estimation: each
//! segment remembers the delivered count and time when it was sent.

//!
//! Files: this one keeps the sender's state, what to send next and what an ACK means;
//! [`scoreboard`] the SACK scoreboard and loss marking (forward acknowledgement, NewReno, RACK);
//! [`recovery`] the window and timer in recovery (PRR, entering and leaving recovery, RTO).

use std::collections::VecDeque;

use super::cc::hystart::HyStart;
use super::cc::{AckInfo, CcName, CongestionControl, RateSample, Window};
use super::params::{CwndGrowth, RtoRestart, RtoSsthresh, TcpParams};
use super::rtt::RttEstimator;
use crate::engine::time::{f64_of, S};
use crate::engine::Time;

mod recovery;
mod scoreboard;
#[cfg(test)]
mod tests;

const SACKED: u8 = 1;
const LOST: u8 = 2;
const RETRANS: u8 = 4;
/// Sent more than once (Karn: no RTT sample from its ACK).
const EVER_RETRANS: u8 = 8;

pub const NEVER: Time = Time::MAX;

#[derive(Debug, Clone, Copy)]
struct SegState {
    flags: u8,
    sent_at: Time,
    delivered: u64,
    delivered_time: Time,
    first_sent_time: Time,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Open,
    /// Fast recovery after a loss detected by SACK / duplicate ACKs.
    Recovery,
    /// Recovery after a retransmission timeout.
    Loss,
}

/// The three-way handshake (RFC 9293 section 3.5) as the sender sees it: data waits for the
/// SYN-ACK, whose round trip is the first RTT sample (Linux tcp_synack_rtt_meas); a SYN without
/// answer is sent again when the retransmission timer (initially 1 s, RFC 6298) expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handshake {
    SynDue,
    /// SYN sent at this time (and whether it is a retransmission, Karn).
    SynSent(Time, bool),
    Established,
}

/// What `Sender::next` does, decided before anything changes (`scanned`: where the search for
/// a segment to retransmit stopped).
#[derive(Debug, Clone, Copy)]
enum Decision {
    Syn,
    /// The SYN is out: nothing else before its answer.
    AwaitSynAck,
    Later(Time),
    /// The window (`cwnd_limited`), or else the receive window, send buffer or application,
    /// allows nothing.
    Blocked {
        cwnd_limited: bool,
        scanned: u64,
    },
    Retransmit(u64),
    NewData {
        scanned: u64,
    },
}

/// What the sender can do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Send the SYN.
    Syn,
    /// Send this segment (true: a retransmission).
    Send(u64, bool),
    /// Pacing: nothing before this time.
    Later(Time),
    /// Window-limited (cwnd, receive window or send buffer): wait for an ACK or a timer.
    Blocked,
}

#[derive(Debug, Clone, Default)]
pub struct SenderStats {
    pub segments_sent: u64,
    pub retransmits: u64,
    pub fast_recoveries: u64,
    pub timeouts: u64,
    /// Retransmissions found lost by RACK (each is sent again).
    pub lost_retransmits: u64,
}

/// Proportional Rate Reduction state of one recovery episode (RFC 6937 section 3).
#[derive(Debug, Clone, Copy, Default)]
struct Prr {
    /// cwnd when the episode began (RecoverFS's role in Linux: tp->prior_cwnd).
    prior_cwnd: f64,
    /// Segments delivered to the receiver since, and segments sent since.
    delivered: u64,
    out: u64,
}

pub struct Sender {
    handshake: Handshake,
    una: u64,
    nxt: u64,
    segs: VecDeque<SegState>,
    /// SACKed ranges [start, end) inside [una, nxt), sorted and disjoint.
    sacked: Vec<(u64, u64)>,
    sacked_out: u64,
    lost_out: u64,
    retrans_out: u64,
    high_sacked: u64,
    /// Segments below this have been examined by the loss rule.
    lost_scan: u64,
    /// One past the highest segment ever marked lost (bounds the retransmission search).
    lost_hi: u64,
    retx_scan: u64,
    state: State,
    recovery_point: u64,
    dupacks: u32,
    /// Entering recovery allows one retransmission whatever the window (RFC 6675 section 5,
    /// step 4.3: the first lost segment is retransmitted at once).
    fast_retransmit: bool,
    /// PRR runs in fast recovery unless the algorithm sets the window itself (BBR).
    prr_on: bool,
    prr: Prr,
    /// Segments ever marked lost (the PRR step needs to know whether this ACK marked any).
    marked_lost: u64,
    /// RACK: (send time, segment) of the most recently sent segment known delivered (the
    /// segment breaks ties, as Linux's tcp_rack_sent_after), and the outstanding
    /// retransmissions in sending order (segment, send time).
    rack_xmit: (Time, u64),
    retx_sent: VecDeque<(u64, Time)>,
    /// Linux tcp_cwnd_validate: sending stopped on cwnd in the current window, the most
    /// segments outstanding in it, and the sequence that ends it.
    is_cwnd_limited: bool,
    max_packets_out: u64,
    cwnd_usage_seq: u64,
    pub win: Window,
    cc: Box<dyn CongestionControl>,
    pub rtt: RttEstimator,
    /// Receive window offered by the peer, in segments past `una`.
    peer_rwnd: u64,
    /// Send-buffer limit on data in flight, in segments.
    send_limit: u64,
    /// Segments the application has written so far (a bulk sender: unlimited); a request /
    /// response workload (NFS replies) raises it as it writes.
    pub app_limit: u64,
    sack: bool,
    /// RACK detection of lost retransmissions ([`TcpParams::rack`]).
    rack: bool,
    rto_restart: RtoRestart,
    rto_ssthresh: RtoSsthresh,
    cwnd_growth: CwndGrowth,
    /// A partial ACK of the current fast recovery has restarted the timer
    /// ([`RtoRestart::FirstPartialAck`]).
    partial_acked: bool,
    dupthresh: u64,
    delivered: u64,
    delivered_time: Time,
    first_sent_time: Time,
    next_send_at: Time,
    /// When the retransmission timer expires (NEVER: not armed).
    pub rto_at: Time,
    pub stats: SenderStats,
}

impl Sender {
    /// `send_limit_segs`: the send buffer in segments; `initial_rwnd_segs`: the window the peer
    /// offers in its SYN-ACK.
    pub fn new(
        p: &TcpParams,
        cc: CcName,
        mss_bytes: u32,
        send_limit_segs: u64,
        initial_rwnd_segs: u64,
        phase_seed: u64,
    ) -> Self {
        let iw = p.initial_cwnd_segs as f64;
        let hystart = p.hystart.map(|h| HyStart::new(h, mss_bytes));
        let cc = cc.build(iw, phase_seed, hystart, mss_bytes);
        Sender {
            handshake: Handshake::SynDue,
            una: 0,
            nxt: 0,
            segs: VecDeque::new(),
            sacked: Vec::new(),
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            high_sacked: 0,
            lost_scan: 0,
            lost_hi: 0,
            retx_scan: 0,
            state: State::Open,
            recovery_point: 0,
            dupacks: 0,
            fast_retransmit: false,
            prr_on: !cc.owns_recovery_window(),
            prr: Prr::default(),
            marked_lost: 0,
            rack_xmit: (0, 0),
            retx_sent: VecDeque::new(),
            is_cwnd_limited: false,
            max_packets_out: 0,
            cwnd_usage_seq: 0,
            win: Window { cwnd: iw, ssthresh: f64::INFINITY },
            cc,
            rtt: RttEstimator::new(p.initial_rto, p.min_rto, p.max_rto, p.rto_formula),
            peer_rwnd: initial_rwnd_segs,
            send_limit: send_limit_segs.max(1),
            app_limit: u64::MAX,
            sack: p.sack,
            rack: p.rack,
            rto_restart: p.rto_restart,
            rto_ssthresh: p.rto_ssthresh,
            cwnd_growth: p.cwnd_growth,
            partial_acked: false,
            dupthresh: p.dupthresh as u64,
            delivered: 0,
            delivered_time: 0,
            first_sent_time: 0,
            next_send_at: 0,
            rto_at: NEVER,
            stats: SenderStats::default(),
        }
    }

    /// Segments in flight (Linux's tcp_packets_in_flight).
    pub fn pipe(&self) -> u64 {
        (self.nxt - self.una) - self.sacked_out - self.lost_out + self.retrans_out
    }

    pub fn acked(&self) -> u64 {
        self.una
    }

    pub fn cc_name(&self) -> &'static str {
        self.cc.name()
    }

    fn stamp(&mut self, now: Time) -> SegState {
        if self.pipe() == 0 {
            // Nothing in flight: a new delivery-rate interval starts here.
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        SegState {
            flags: 0,
            sent_at: now,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
        }
    }

    /// Linux tcp_cwnd_validate: remember whether cwnd stopped sending in this window of data,
    /// else the most segments it had outstanding.
    fn cwnd_validate(&mut self, cwnd_limited: bool) {
        if self.cwnd_validate_changes(cwnd_limited) {
            self.is_cwnd_limited = cwnd_limited;
            self.max_packets_out = self.nxt - self.una;
            self.cwnd_usage_seq = self.nxt;
        }
    }

    fn cwnd_validate_changes(&self, cwnd_limited: bool) -> bool {
        let out = self.nxt - self.una;
        let due =
            self.una >= self.cwnd_usage_seq || cwnd_limited || (!self.is_cwnd_limited && out > self.max_packets_out);
        due && (self.is_cwnd_limited, self.max_packets_out, self.cwnd_usage_seq) != (cwnd_limited, out, self.nxt)
    }

    /// The congestion window allows another segment in flight: pipe < max(floor(cwnd), 1),
    /// written without `floor` (a library call on the baseline x86-64 target).
    fn window_open(&self) -> bool {
        let pipe = self.pipe();
        pipe == 0 || f64_of(pipe + 1) <= self.win.cwnd
    }

    /// Linux tcp_is_cwnd_limited.
    fn cwnd_limited(&self) -> bool {
        self.is_cwnd_limited || (self.win.in_slow_start() && self.win.cwnd < 2.0 * f64_of(self.max_packets_out))
    }

    /// What `next` does at `now`, worked out without changing anything. (Inlined: `idle_at`
    /// then only works out what it needs.)
    #[inline(always)]
    fn decide(&self, now: Time) -> Decision {
        match self.handshake {
            Handshake::Established => {}
            Handshake::SynDue => return Decision::Syn,
            Handshake::SynSent(..) => return Decision::AwaitSynAck,
        }
        if self.next_send_at > now {
            return Decision::Later(self.next_send_at);
        }
        let window_open = self.window_open();
        if !window_open && !self.fast_retransmit {
            return Decision::Blocked { cwnd_limited: true, scanned: self.retx_scan };
        }
        let (retx, scanned) = self.find_retransmission();
        if let Some(seg) = retx {
            return Decision::Retransmit(seg);
        }
        if !window_open {
            return Decision::Blocked { cwnd_limited: true, scanned };
        }
        let edge = (self.una + self.peer_rwnd.min(self.send_limit)).min(self.app_limit);
        if self.nxt >= edge {
            return Decision::Blocked { cwnd_limited: false, scanned };
        }
        Decision::NewData { scanned }
    }

    /// True if `next(at)` would send nothing and change nothing (as long as no ACK or timer
    /// comes first): the host need not ask then.
    pub fn idle_at(&self, at: Time) -> bool {
        match self.decide(at) {
            Decision::AwaitSynAck => true,
            // `retx_scan` below `una` counts as `una` (every use raises it to `una` first).
            Decision::Blocked { cwnd_limited, scanned } => {
                scanned == self.retx_scan.max(self.una) && !self.cwnd_validate_changes(cwnd_limited)
            }
            _ => false,
        }
    }

    /// Decide the next transmission at `now`; the caller sends it at once.
    pub fn next(&mut self, now: Time) -> Next {
        let out = match self.decide(now) {
            Decision::Syn => {
                let resent = self.stats.timeouts > 0;
                self.handshake = Handshake::SynSent(now, resent);
                self.rto_at = now + self.rtt.rto();
                return Next::Syn;
            }
            Decision::AwaitSynAck => return Next::Blocked,
            Decision::Later(t) => return Next::Later(t),
            Decision::Blocked { cwnd_limited, scanned } => {
                self.retx_scan = scanned;
                self.cwnd_validate(cwnd_limited);
                return Next::Blocked;
            }
            Decision::Retransmit(seg) => {
                let st = self.stamp(now);
                let i = (seg - self.una) as usize;
                let s = &mut self.segs[i];
                *s = SegState { flags: s.flags | RETRANS | EVER_RETRANS, ..st };
                self.retrans_out += 1;
                self.stats.retransmits += 1;
                self.retx_scan = seg + 1;
                if self.sack && self.rack {
                    self.retx_sent.push_back((seg, now));
                }
                Next::Send(seg, true)
            }
            Decision::NewData { scanned } => {
                self.retx_scan = scanned;
                let st = self.stamp(now);
                self.segs.push_back(st);
                self.nxt += 1;
                Next::Send(self.nxt - 1, false)
            }
        };
        self.fast_retransmit = false;
        self.stats.segments_sent += 1;
        if self.state == State::Recovery {
            self.prr.out += 1;
        }
        // Linux tcp_write_xmit: sending that fills the window counts as limited by it.
        let cwnd_limited = !self.window_open();
        self.cwnd_validate(cwnd_limited);
        if let Some(rate) = self.cc.pacing_rate() {
            self.next_send_at = now + (S as f64 / rate) as Time;
        }
        if self.rto_at == NEVER {
            self.rto_at = now + self.rtt.rto();
        }
        out
    }

    /// A connection opened before the measured traffic starts (an MPI library connects its
    /// peers during start-up or warm-up): no handshake, no RTT sample from it.
    pub fn established(mut self) -> Self {
        self.handshake = Handshake::Established;
        self
    }

    /// The SYN-ACK arrived (a duplicate is ignored): established, with a first RTT sample.
    pub fn on_syn_ack(&mut self, now: Time, rwnd_segs: u64) {
        if let Handshake::SynSent(sent, resent) = self.handshake {
            if !resent {
                self.rtt.sample_handshake(now - sent);
            }
            self.rtt.clear_backoff();
            self.handshake = Handshake::Established;
            self.peer_rwnd = rwnd_segs;
            self.rto_at = NEVER;
        }
    }

    /// Process an acknowledgement: cumulative `ack`, SACK blocks, and the peer's window.
    pub fn on_ack(&mut self, now: Time, ack: u64, sack: &[(u64, u64)], rwnd_segs: u64) {
        self.peer_rwnd = rwnd_segs;
        let ack = ack.min(self.nxt);
        let mut newly = 0u64;
        let mut rtt = None;
        let mut sample: Option<SegState> = None;
        let advanced = ack > self.una;
        let una_before = self.una;
        if advanced {
            for seg in self.una..ack {
                let st = self.segs.pop_front().expect("outstanding segment");
                if st.flags & SACKED != 0 {
                    self.sacked_out -= 1;
                } else {
                    if st.flags & LOST != 0 {
                        self.lost_out -= 1;
                    }
                    if st.flags & RETRANS != 0 {
                        self.retrans_out -= 1;
                    }
                    newly += 1;
                    if sample.is_none_or(|p| st.delivered >= p.delivered) {
                        sample = Some(st);
                    }
                    self.rack_advance(now, seg, &st);
                }
                if st.flags & (EVER_RETRANS | SACKED) == 0 {
                    rtt = Some(now - st.sent_at);
                }
            }
            self.una = ack;
            let keep = self.sacked.partition_point(|r| r.1 <= ack);
            self.sacked.drain(..keep);
            if let Some(r) = self.sacked.first_mut() {
                r.0 = r.0.max(ack);
            }
            self.lost_scan = self.lost_scan.max(ack);
            self.rtt.clear_backoff();
            self.dupacks = 0;
        } else if ack == self.una && self.nxt > self.una && !self.sack {
            self.dupacks += 1;
        }
        if self.sack {
            let sacked_before = self.sacked_out;
            for &(s, e) in sack {
                newly += self.apply_sack(now, s, e, &mut sample);
            }
            if !advanced && ack == self.una && self.sacked_out > sacked_before {
                self.dupacks += 1;
            }
            if self.rack {
                self.detect_lost_retransmissions();
            }
        }
        if let Some(r) = rtt {
            self.rtt.sample(r);
        }
        let lost_before = self.marked_lost;
        self.detect_losses(advanced);
        self.update_state(now);
        if self.state == State::Recovery && self.prr_on && newly > 0 {
            self.prr_step(newly, advanced && self.marked_lost == lost_before);
        }
        let mut rate = None;
        if newly > 0 {
            self.delivered += newly;
            self.delivered_time = now;
            if let Some(p) = sample {
                let interval = (now - p.delivered_time).max(p.sent_at - p.first_sent_time);
                if interval > 0 {
                    rate = Some(RateSample { delivered_segs: self.delivered - p.delivered, interval });
                }
                self.first_sent_time = p.sent_at;
            }
            let (grows, growth_segs) = match self.cwnd_growth {
                CwndGrowth::InOrder => (advanced, newly),
                CwndGrowth::Cumulative => (advanced, self.una - una_before),
            };
            let info = AckInfo {
                now,
                acked_segs: f64_of(growth_segs),
                rtt,
                min_rtt: self.rtt.min_rtt,
                srtt: self.rtt.srtt(),
                in_flight_segs: f64_of(self.pipe()),
                rate_sample: rate,
                delivered: self.delivered,
                sample_prior_delivered: sample.map(|p| p.delivered).unwrap_or(0),
                in_recovery: self.state == State::Recovery,
                snd_una: self.una,
                snd_nxt: self.nxt,
                cwnd_limited: self.cwnd_limited() && grows,
            };
            self.cc.on_ack(&mut self.win, &info);
        }
        if self.una == self.nxt {
            self.rto_at = NEVER;
        } else if advanced && self.ack_restarts_timer() {
            self.rto_at = now + self.rtt.rto();
        }
    }
}
