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

use std::collections::VecDeque;

use super::cc::hystart::HyStart;
use super::cc::{AckInfo, CcName, CongestionControl, RateSample, Window};
use super::params::{CwndGrowth, RtoRestart, RtoSsthresh, TcpParams};
use super::rtt::RttEstimator;
use crate::engine::time::{f64_of, S};
use crate::engine::Time;

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
    Blocked { cwnd_limited: bool, scanned: u64 },
    Retransmit(u64),
    NewData { scanned: u64 },
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
    pub fn new(p: &TcpParams, cc: CcName, mss_bytes: u32, send_limit_segs: u64, initial_rwnd_segs: u64, phase_seed: u64) -> Self {
        let iw = p.initial_cwnd_segs as f64;
        let hystart = p.hystart.map(|h| HyStart::new(h, mss_bytes));
        let cc = cc.build(iw, phase_seed, hystart);
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

    fn flags(&mut self, seg: u64) -> &mut u8 {
        let i = (seg - self.una) as usize;
        &mut self.segs[i].flags
    }

    /// The lowest segment marked lost and not yet retransmitted, and where the search for it
    /// stopped (the new `retx_scan`).
    fn find_retransmission(&self) -> (Option<u64>, u64) {
        let mut scan = self.retx_scan.max(self.una);
        let hi = self.lost_hi.min(self.nxt);
        while scan < hi {
            let f = self.segs[(scan - self.una) as usize].flags;
            if f & LOST != 0 && f & (RETRANS | SACKED) == 0 {
                return (Some(scan), scan);
            }
            scan += 1;
        }
        (None, scan)
    }

    fn stamp(&mut self, now: Time) -> SegState {
        if self.pipe() == 0 {
            // Nothing in flight: a new delivery-rate interval starts here.
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        SegState { flags: 0, sent_at: now, delivered: self.delivered, delivered_time: self.delivered_time, first_sent_time: self.first_sent_time }
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
        let due = self.una >= self.cwnd_usage_seq || cwnd_limited || (!self.is_cwnd_limited && out > self.max_packets_out);
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
            Decision::Blocked { cwnd_limited, scanned } => scanned == self.retx_scan.max(self.una) && !self.cwnd_validate_changes(cwnd_limited),
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

    /// Mark [s, e) SACKed; returns the segments newly covered, and updates the rate sample.
    fn apply_sack(&mut self, now: Time, s: u64, e: u64, sample: &mut Option<SegState>) -> u64 {
        let (s, e) = (s.max(self.una), e.min(self.nxt));
        if s >= e {
            return 0;
        }
        // Ranges overlapping or touching [s, e) merge into one; only the gaps between them are new.
        let first = self.sacked.partition_point(|r| r.1 < s);
        let mut last = first;
        let mut gaps = Vec::new();
        let mut cursor = s;
        let (mut lo, mut hi) = (s, e);
        while last < self.sacked.len() && self.sacked[last].0 <= e {
            let (rs, re) = self.sacked[last];
            if rs > cursor {
                gaps.push((cursor, rs.min(e)));
            }
            cursor = cursor.max(re);
            lo = lo.min(rs);
            hi = hi.max(re);
            last += 1;
        }
        if cursor < e {
            gaps.push((cursor, e));
        }
        self.sacked.splice(first..last, [(lo, hi)]);
        let mut newly = 0;
        for (gs, ge) in gaps {
            for seg in gs..ge {
                let i = (seg - self.una) as usize;
                let st = self.segs[i];
                if st.flags & SACKED != 0 {
                    continue;
                }
                if st.flags & LOST != 0 {
                    self.lost_out -= 1;
                }
                if st.flags & RETRANS != 0 {
                    self.retrans_out -= 1;
                }
                self.segs[i].flags = (st.flags | SACKED) & !(LOST | RETRANS);
                self.sacked_out += 1;
                newly += 1;
                self.rack_advance(now, seg, &st);
                if sample.is_none_or(|p| st.delivered >= p.delivered) {
                    *sample = Some(st);
                }
            }
        }
        self.high_sacked = self.high_sacked.max(e);
        newly
    }

    fn mark_lost(&mut self, seg: u64) {
        let f = self.flags(seg);
        if *f & (SACKED | LOST) == 0 {
            *f |= LOST;
            self.lost_out += 1;
            self.marked_lost += 1;
        }
        self.lost_hi = self.lost_hi.max(seg + 1);
    }

    /// RACK (RFC 8985 section 6.2; Linux tcp_rack_advance): a segment delivered now moves the
    /// "most recently sent and delivered" time, unless it was retransmitted and acknowledged
    /// sooner than a round trip after, when the ACK may be for the original.
    fn rack_advance(&mut self, now: Time, seg: u64, st: &SegState) {
        // (Without RACK nothing reads `rack_xmit`.)
        if !self.rack || st.flags & EVER_RETRANS != 0 && now - st.sent_at < self.rtt.min_rtt {
            return;
        }
        self.rack_xmit = self.rack_xmit.max((st.sent_at, seg));
    }

    /// RACK on retransmissions: one sent before a delivered segment is lost again.
    fn detect_lost_retransmissions(&mut self) {
        while let Some(&(seg, sent)) = self.retx_sent.front() {
            if (sent, seg) >= self.rack_xmit {
                break;
            }
            self.retx_sent.pop_front();
            if seg < self.una {
                continue;
            }
            let s = &mut self.segs[(seg - self.una) as usize];
            // Skip entries superseded by a later transmission or already delivered.
            if s.sent_at != sent || s.flags & (SACKED | RETRANS) != RETRANS {
                continue;
            }
            s.flags &= !RETRANS;
            self.retrans_out -= 1;
            self.retx_scan = self.retx_scan.min(seg);
            self.stats.lost_retransmits += 1;
        }
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

    /// Whether this ACK of new data restarts the retransmission timer ([`RtoRestart`]).
    fn ack_restarts_timer(&mut self) -> bool {
        match self.rto_restart {
            RtoRestart::EveryAck => true,
            RtoRestart::FirstPartialAck => {
                let partial = self.state == State::Recovery && self.una < self.recovery_point;
                let first = !self.partial_acked;
                self.partial_acked |= partial;
                !partial || first
            }
        }
    }

    fn detect_losses(&mut self, advanced: bool) {
        if self.sack {
            let limit = self.high_sacked.saturating_sub(self.dupthresh).min(self.nxt);
            while self.lost_scan < limit {
                let s = self.lost_scan;
                self.mark_lost(s);
                self.lost_scan += 1;
            }
        }
        if self.una == self.nxt {
            return;
        }
        let partial = advanced && self.state == State::Recovery && self.una < self.recovery_point;
        if self.dupacks as u64 >= self.dupthresh || (!self.sack && partial) {
            let una = self.una;
            self.mark_lost(una);
        }
    }

    /// One PRR step (RFC 6937 section 3.1 as Linux 6.x tcp_cwnd_reduction): `newly` segments
    /// were delivered by this ACK; `bonus` (it advanced snd_una and marked nothing lost) allows
    /// one more in the slow-start reduction bound. Sets cwnd = pipe + what may be sent now.
    fn prr_step(&mut self, newly: u64, bonus: bool) {
        self.prr.delivered += newly;
        let pipe = self.pipe();
        let ssthresh = self.win.ssthresh.floor() as u64;
        let sndcnt = if pipe > ssthresh {
            let due = (self.prr.delivered as f64 * ssthresh as f64 / self.prr.prior_cwnd).ceil() as u64;
            due.saturating_sub(self.prr.out)
        } else {
            let bound = self.prr.delivered.saturating_sub(self.prr.out).max(newly) + bonus as u64;
            bound.min(ssthresh - pipe)
        };
        // The first step always sends: the fast retransmission.
        let sndcnt = if self.prr.out == 0 { sndcnt.max(1) } else { sndcnt };
        self.win.cwnd = (pipe + sndcnt) as f64;
    }

    fn update_state(&mut self, now: Time) {
        if self.state != State::Open && self.una >= self.recovery_point {
            if self.state == State::Recovery {
                self.cc.on_recovery_exit(&mut self.win);
            }
            self.state = State::Open;
        }
        if self.state == State::Open && self.lost_out > 0 {
            self.state = State::Recovery;
            self.recovery_point = self.nxt;
            self.stats.fast_recoveries += 1;
            self.fast_retransmit = true;
            self.partial_acked = false;
            // FlightSize (RFC 5681): the data outstanding when the loss is detected.
            let flight = (self.nxt - self.una) as f64;
            self.prr = Prr { prior_cwnd: self.win.cwnd.max(1.0), delivered: 0, out: 0 };
            self.cc.on_congestion(&mut self.win, now, flight);
        }
    }

    /// The retransmission timer fired at `now` (a stale firing is ignored).
    pub fn on_rto(&mut self, now: Time) {
        if let Handshake::SynSent(..) = self.handshake {
            if now >= self.rto_at {
                // The SYN or its answer was lost: send it again, backing off (RFC 6298 5.5).
                self.stats.timeouts += 1;
                self.rtt.back_off();
                self.handshake = Handshake::SynDue;
                self.rto_at = NEVER;
            }
            return;
        }
        if self.una == self.nxt {
            self.rto_at = NEVER;
            return;
        }
        if now < self.rto_at {
            return;
        }
        self.stats.timeouts += 1;
        let flight = (self.nxt - self.una - self.sacked_out) as f64;
        let reduce = match self.rto_ssthresh {
            // Only the first reduction of a loss episode lowers ssthresh (Linux tcp_enter_loss).
            RtoSsthresh::OncePerEpisode => self.state == State::Open,
            // RFC 5681 eq. 4 on every timeout but a repeated one: in Loss the head was resent
            // by the timer (cwnd 1 sends it at once).
            RtoSsthresh::EveryTimeout => self.state != State::Loss,
        };
        self.cc.on_rto(&mut self.win, now, flight, reduce);
        self.retx_sent.clear();
        self.rtt.back_off();
        for s in self.segs.iter_mut() {
            if s.flags & SACKED == 0 {
                s.flags = (s.flags | LOST) & !RETRANS;
            }
        }
        self.lost_out = self.nxt - self.una - self.sacked_out;
        self.retrans_out = 0;
        self.lost_scan = self.lost_scan.max(self.nxt);
        self.lost_hi = self.nxt;
        self.retx_scan = self.una;
        self.state = State::Loss;
        self.recovery_point = self.nxt;
        self.dupacks = 0;
        self.next_send_at = now;
        self.rto_at = now + self.rtt.rto();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::MS;

    /// A connection already established (SYN-ACK at once).
    fn sender() -> Sender {
        sender_with(TcpParams::default())
    }

    fn sender_with(p: TcpParams) -> Sender {
        let mut s = Sender::new(&p, CcName::Reno, 1448, 1 << 20, 1 << 20, 0);
        assert_eq!(s.next(0), Next::Syn);
        s.on_syn_ack(0, 1 << 20);
        s
    }

    /// Data waits for the SYN-ACK; a lost SYN is sent again after the initial 1 s timeout,
    /// then after 2 s; the answer to a resent SYN gives no RTT sample (Karn).
    #[test]
    fn handshake_before_data_and_syn_retransmission() {
        let mut s = Sender::new(&TcpParams::default(), CcName::Reno, 1448, 1 << 20, 1 << 20, 0);
        assert_eq!(s.next(0), Next::Syn);
        assert_eq!(s.next(MS), Next::Blocked);
        assert_eq!(s.rto_at, crate::engine::time::S);
        s.on_rto(s.rto_at);
        assert_eq!(s.next(crate::engine::time::S), Next::Syn);
        assert_eq!(s.rto_at, 3 * crate::engine::time::S);
        s.on_syn_ack(crate::engine::time::S + 10 * MS, 1000);
        assert!(!s.rtt.has_sample());
        assert_eq!(s.rtt.rto(), crate::engine::time::S, "the backoff ends with the handshake");
        assert_eq!(s.next(crate::engine::time::S + 10 * MS), Next::Send(0, false));

        let mut t = Sender::new(&TcpParams::default(), CcName::Reno, 1448, 1 << 20, 1 << 20, 0);
        t.next(0);
        t.on_syn_ack(140 * MS, 1000);
        assert_eq!(t.rtt.srtt(), 140 * MS);
    }

    fn send_all(s: &mut Sender, now: Time) -> Vec<(u64, bool)> {
        let mut out = Vec::new();
        while let Next::Send(seg, r) = s.next(now) {
            out.push((seg, r));
        }
        out
    }

    #[test]
    fn initial_window_then_growth() {
        let mut s = sender();
        assert_eq!(send_all(&mut s, 0).len(), 10);
        s.on_ack(10 * MS, 2, &[], 1000);
        // Slow start: 2 acked -> cwnd 12, 8 in flight -> 4 more.
        assert_eq!(send_all(&mut s, 10 * MS).len(), 4);
    }

    #[test]
    fn sack_loss_triggers_fast_retransmit_of_the_hole_only() {
        let mut s = sender();
        send_all(&mut s, 0);
        // Segment 0 lost; 1..4 arrive: each SACK-bearing duplicate ACK grows the block.
        for k in 2..=3 {
            s.on_ack(MS, 0, &[(1, k)], 1000);
        }
        assert_eq!(s.stats.fast_recoveries, 0, "two SACKed segments are not yet a loss");
        s.on_ack(MS, 0, &[(1, 4)], 1000);
        assert_eq!(s.stats.fast_recoveries, 1);
        assert!((s.win.ssthresh - 5.0).abs() < 1e-9, "Reno halves the flight of 10: {}", s.win.ssthresh);
        // PRR: pipe 6 (10 - 3 SACKed - 1 lost) > ssthresh 5: send ceil(1 delivered x 5 / 10) = 1.
        assert_eq!(s.win.cwnd, 7.0);
        let sent = send_all(&mut s, MS);
        assert_eq!(sent, vec![(0, true)]);
        s.on_ack(2 * MS, 10, &[], 1000);
        assert_eq!(s.pipe(), s.nxt - 10);
        // Recovery ends at cwnd = ssthresh; the same ACK then grows it by congestion avoidance.
        assert!((5.0..7.0).contains(&s.win.cwnd), "{}", s.win.cwnd);
    }

    /// A retransmission that is lost again is found by RACK once a segment sent after it is
    /// SACKed, and sent a third time without waiting for the RTO.
    #[test]
    fn lost_retransmission_is_resent_without_a_timeout() {
        let mut s = sender();
        send_all(&mut s, 0);
        s.on_ack(MS, 0, &[(1, 4)], 1000);
        let mut sent = send_all(&mut s, MS);
        for k in 5..=7 {
            s.on_ack(MS + k, 0, &[(1, k)], 1000);
            sent.extend(send_all(&mut s, MS + k));
        }
        assert_eq!(&sent[..2], &[(0, true), (10, false)]);
        // The retransmission of 0 is lost; segment 10, sent after it, arrives.
        s.on_ack(11 * MS, 0, &[(1, 7), (10, 11)], 1000);
        assert_eq!(s.stats.lost_retransmits, 1);
        assert_eq!(send_all(&mut s, 11 * MS).first(), Some(&(0, true)));
        assert_eq!(s.stats.timeouts, 0);
    }

    /// A timeout inside fast recovery does not lower ssthresh a second time (Linux
    /// tcp_enter_loss); a window capped by the receiver does not grow (RFC 7661).
    #[test]
    fn timeout_in_recovery_keeps_ssthresh_and_rwnd_limited_window_stays() {
        let mut s = sender();
        send_all(&mut s, 0);
        s.on_ack(MS, 0, &[(1, 4)], 1000);
        let ssthresh = s.win.ssthresh;
        send_all(&mut s, MS);
        let at = s.rto_at;
        s.on_rto(at);
        assert_eq!((s.win.cwnd, s.win.ssthresh), (1.0, ssthresh));

        let mut r = sender();
        let mut acked = 0;
        for round in 1..=20u64 {
            while let Next::Send(..) = r.next(round * MS) {}
            acked = r.nxt;
            r.on_ack(round * MS + MS / 2, acked, &[], 4);
        }
        assert_eq!(acked, 10 + 19 * 4, "four segments per round after the initial window");
        // Linux lets slow start reach twice the most ever in flight (the initial 10), no more;
        // unchecked it would have grown by every acknowledged segment, to 96.
        assert_eq!(r.win.cwnd, 20.0, "cwnd grew while the receive window limited");
    }

    #[test]
    fn rto_marks_everything_lost_and_backs_off() {
        let mut s = sender();
        send_all(&mut s, 0);
        let at = s.rto_at;
        // The handshake's (zero) RTT sample: RTO = SRTT + max(4 RTTVAR, 200 ms).
        assert_eq!(at, 200 * MS);
        s.on_rto(at);
        assert_eq!(s.stats.timeouts, 1);
        assert_eq!(s.win.cwnd, 1.0);
        assert_eq!(send_all(&mut s, at), vec![(0, true)]);
        assert_eq!(s.rto_at, at + 400 * MS);
    }

    /// Under RFC 6582's rule only the first partial ACK of a fast recovery restarts the
    /// retransmission timer; by default (Linux) every ACK of new data does.
    #[test]
    fn only_the_first_partial_ack_restarts_the_timer_when_asked() {
        for (restart, second_restarts) in [(RtoRestart::EveryAck, true), (RtoRestart::FirstPartialAck, false)] {
            let mut s = sender_with(TcpParams { rto_restart: restart, ..TcpParams::default() });
            send_all(&mut s, 0);
            // Segments 0 and 2 lost: 1 and 3..5 SACKed mark both (forward acknowledgement).
            s.on_ack(MS, 0, &[(3, 6), (1, 2)], 1000);
            assert_eq!(s.stats.fast_recoveries, 1);
            send_all(&mut s, MS);
            s.on_ack(10 * MS, 2, &[(3, 6)], 1000);
            let first = s.rto_at;
            assert_eq!(first, 10 * MS + s.rtt.rto(), "the first partial ACK restarts the timer");
            send_all(&mut s, 10 * MS);
            s.on_ack(20 * MS, 6, &[], 1000);
            assert!(s.una < s.recovery_point, "a second partial ACK");
            let restarted = s.rto_at == 20 * MS + s.rtt.rto();
            assert_eq!((restarted, s.rto_at == first), (second_restarts, !second_restarts), "{restart:?}");
        }
    }

    /// RFC 5681's rule lowers ssthresh again on a timeout in fast recovery (Linux keeps it, see
    /// `timeout_in_recovery_keeps_ssthresh_and_rwnd_limited_window_stays`); a repeated timeout
    /// of the timer's own retransmission keeps it.
    #[test]
    fn timeout_in_recovery_lowers_ssthresh_again_when_asked() {
        let mut s = sender_with(TcpParams { rto_ssthresh: RtoSsthresh::EveryTimeout, ..TcpParams::default() });
        send_all(&mut s, 0);
        s.on_ack(MS, 0, &[(1, 4)], 1000);
        assert_eq!(s.win.ssthresh, 5.0);
        send_all(&mut s, MS);
        let at = s.rto_at;
        s.on_rto(at);
        // Reno: half of the 8 segments outstanding and not SACKed at the timeout (11 sent,
        // 3 SACKed).
        assert_eq!((s.nxt, s.win.cwnd, s.win.ssthresh), (11, 1.0, 4.0));
        assert_eq!(send_all(&mut s, at), vec![(0, true)]);
        let again = s.rto_at;
        s.on_rto(again);
        assert_eq!((s.stats.timeouts, s.win.ssthresh), (2, 4.0));
    }

    /// A cumulative ACK over segments SACKed earlier takes no RTT sample from them (Linux,
    /// ns-3): they were delivered then, and timing them now would measure the hole's repair.
    #[test]
    fn no_rtt_sample_from_segments_sacked_before() {
        let mut s = sender();
        send_all(&mut s, 0);
        s.on_ack(100 * MS, 0, &[(1, 4)], 1000);
        send_all(&mut s, 100 * MS);
        let srtt = s.rtt.srtt();
        // Covers 0 (retransmitted) and 1..3 (SACKed 200 ms before): nothing new to time.
        s.on_ack(300 * MS, 4, &[], 1000);
        assert_eq!(s.rtt.srtt(), srtt);
    }

    /// With SACK, duplicate ACKs that SACK nothing new (a spurious retransmission draws them)
    /// start no fast recovery (RFC 6675's definition); ones that SACK new data do, and without
    /// SACK every duplicate counts (RFC 5681).
    #[test]
    fn only_duplicates_with_new_sack_information_count() {
        for (sack, recoveries) in [(true, 0), (false, 1)] {
            let mut s = sender_with(TcpParams { sack, ..TcpParams::default() });
            send_all(&mut s, 0);
            s.on_ack(MS, 2, &[], 1000);
            for k in 1..=3 {
                s.on_ack(MS + k, 2, &[], 1000);
            }
            assert_eq!(s.stats.fast_recoveries, recoveries, "sack {sack}");
        }
        let mut s = sender();
        send_all(&mut s, 0);
        for k in 2..=4 {
            s.on_ack(MS, 0, &[(1, k)], 1000);
        }
        assert_eq!(s.stats.fast_recoveries, 1);
    }

    /// After a timeout, the ACK that repairs the hole before a SACKed run grows cwnd by that
    /// run too under RFC 3465 counting (ns-3), by the one segment it delivers otherwise (Linux);
    /// a SACK beyond a hole grows it under neither.
    #[test]
    fn cwnd_growth_rules() {
        let cases = [(CwndGrowth::InOrder, 2.0, 2.0), (CwndGrowth::Cumulative, 4.0, 4.0)];
        for (rule, after_repair, after_sack) in cases {
            let mut s = sender_with(TcpParams { cwnd_growth: rule, ..TcpParams::default() });
            send_all(&mut s, 0);
            s.on_ack(MS, 0, &[(1, 3)], 1000);
            let at = s.rto_at;
            s.on_rto(at);
            assert_eq!((s.win.cwnd, s.win.ssthresh), (1.0, 4.0));
            assert_eq!(send_all(&mut s, at), vec![(0, true)]);
            s.on_ack(at + MS, 3, &[], 1000);
            assert_eq!(s.win.cwnd, after_repair, "{rule:?}");
            send_all(&mut s, at + MS);
            s.on_ack(at + 2 * MS, 3, &[(4, 5)], 1000);
            assert_eq!(s.win.cwnd, after_sack, "{rule:?}");
        }
    }
}
