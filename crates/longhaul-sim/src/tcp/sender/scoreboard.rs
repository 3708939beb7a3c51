//! The SACK scoreboard: which outstanding segments are SACKed, lost or retransmitted, and the
//! rules that mark them (forward acknowledgement, NewReno's duplicate and partial ACKs, RACK for
//! retransmissions). See [`super`] for the rules and their sources.

use super::{SegState, Sender, State, EVER_RETRANS, LOST, RETRANS, SACKED};
use crate::engine::Time;

impl Sender {
    pub(super) fn flags(&mut self, seg: u64) -> &mut u8 {
        let i = (seg - self.una) as usize;
        &mut self.segs[i].flags
    }

    /// The lowest segment marked lost and not yet retransmitted, and where the search for it
    /// stopped (the new `retx_scan`).
    pub(super) fn find_retransmission(&self) -> (Option<u64>, u64) {
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

    /// Mark [s, e) SACKed; returns the segments newly covered, and updates the rate sample.
    pub(super) fn apply_sack(&mut self, now: Time, s: u64, e: u64, sample: &mut Option<SegState>) -> u64 {
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

    pub(super) fn mark_lost(&mut self, seg: u64) {
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
    pub(super) fn rack_advance(&mut self, now: Time, seg: u64, st: &SegState) {
        // (Without RACK nothing reads `rack_xmit`.)
        if !self.rack || st.flags & EVER_RETRANS != 0 && now - st.sent_at < self.rtt.min_rtt {
            return;
        }
        self.rack_xmit = self.rack_xmit.max((st.sent_at, seg));
    }

    /// RACK on retransmissions: one sent before a delivered segment is lost again.
    pub(super) fn detect_lost_retransmissions(&mut self) {
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

    pub(super) fn detect_losses(&mut self, advanced: bool) {
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
}
