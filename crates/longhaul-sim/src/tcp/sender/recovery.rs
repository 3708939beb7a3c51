//! The window and the timer once a loss is known: Proportional Rate Reduction, entering and
//! leaving fast recovery, and the retransmission timeout. See [`super`] for the rules and
//! their sources.

use super::{Handshake, Prr, Sender, State, LOST, NEVER, RETRANS, SACKED};
use crate::engine::Time;
use crate::tcp::params::{RtoRestart, RtoSsthresh};

impl Sender {
    /// Whether this ACK of new data restarts the retransmission timer ([`RtoRestart`]).
    pub(super) fn ack_restarts_timer(&mut self) -> bool {
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

    /// One PRR step (RFC 6937 section 3.1 as Linux 6.x tcp_cwnd_reduction): `newly` segments
    /// were delivered by this ACK; `bonus` (it advanced snd_una and marked nothing lost) allows
    /// one more in the slow-start reduction bound. Sets cwnd = pipe + what may be sent now.
    pub(super) fn prr_step(&mut self, newly: u64, bonus: bool) {
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

    pub(super) fn update_state(&mut self, now: Time) {
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
