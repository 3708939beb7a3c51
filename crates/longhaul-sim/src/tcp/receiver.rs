//! The receiving side of one connection: in-order delivery, out-of-order ranges, SACK blocks,
//! delayed acknowledgements and the advertised window.
//!
//! - ACK policy (RFC 5681 section 4.2, RFC 1122): at least every second full-sized segment, or
//!   when the delayed-ACK timer expires; at once for an out-of-order segment, a duplicate, or a
//!   segment that fills (part of) a hole.
//! - SACK blocks (RFC 2018 section 4): the first block holds the segment that triggered the
//!   ACK, the others the most recently changed ranges, up to [`MAX_SACK_BLOCKS`].
//! - Window: fixed, or Linux's receive-buffer auto-tuning (see [`WindowSpec::Auto`]). The
//!   round-trip time the auto-tuning needs is the sender's smoothed RTT, which Linux's receiver
//!   estimates from TCP timestamps.

use super::params::{WindowSpec, ADV_WINDOW_FRACTION};
use super::segment::MAX_SACK_BLOCKS;
use crate::engine::Time;

/// `delack_at` when no delayed ACK is pending.
pub const NEVER: Time = Time::MAX;

/// Whether a segment just received is acknowledged at once or later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckNow {
    /// Acknowledge at once.
    Now,
    /// Wait for another segment or the delayed-ACK timer (`delack_at`).
    Delayed,
}

/// An acknowledgement's content.
#[derive(Debug, Clone, Copy)]
pub struct AckContent {
    /// Cumulative ACK: the next segment number expected.
    pub ack: u64,
    /// SACK blocks [start, end) in segment numbers, the latest-changed first; `n_sack` of them are valid.
    pub sack: [(u64, u64); MAX_SACK_BLOCKS],
    /// How many of `sack` are in use (at most MAX_SACK_BLOCKS).
    pub n_sack: usize,
    /// The advertised receive window, whole segments.
    pub rwnd_segs: u64,
}

/// One connection's receiving side: in-order delivery, SACK, delayed ACKs and (Linux auto-tuning) the receive window.
pub struct Receiver {
    /// Next segment expected: everything below has been delivered in order, exactly once.
    pub rcv_nxt: u64,
    /// Out-of-order ranges [start, end) above rcv_nxt, sorted, with the time each last changed.
    ooo: Vec<(u64, u64, u64)>,
    change: u64,
    /// The range the last segment landed in (reported first).
    latest: Option<u64>,
    unacked: u32,
    ack_every: u32,
    delack: Time,
    /// When the delayed-ACK timer fires ([`NEVER`]: not armed).
    pub delack_at: Time,
    mss: u64,
    window_bytes: u64,
    /// `window_bytes` in whole segments (at least one), kept with it: every ACK carries it.
    window_segs: u64,
    max_window_bytes: u64,
    /// Right edge of the window the last ACK offered (segment number).
    offered_edge: u64,
    autotune: bool,
    mark_time: Time,
    mark_seg: u64,
    /// Bytes the application read in the last round trip that grew the window (Linux
    /// rcvq_space.space). It starts at ten segments, or the whole segments the initial window
    /// holds if fewer, less one byte: the model sends whole segments only, so a round that fills
    /// the offered window must count as growth (Linux's sender fills it to the byte).
    space: u64,
    /// Segments received that were already delivered or held (spurious retransmissions).
    pub duplicates: u64,
}

/// Linux tcp_rcv_space_adjust's cushion for losses: 16 segments.
const RCV_SPACE_CUSHION_SEGS: u64 = 16;
/// Linux tcp_init_buffer_space: the first measure is TCP_INIT_CWND segments.
const RCV_SPACE_INITIAL_SEGS: u64 = 10;

impl Receiver {
    /// A receiver expecting segment 0, with segments of `mss` bytes, sized by `window`, that
    /// acknowledges every `ack_every` segments or `delack` after the first unacknowledged one.
    pub fn new(mss: u32, window: WindowSpec, ack_every: u32, delack: Time) -> Self {
        let (window_bytes, max_window_bytes, autotune) = match window {
            WindowSpec::Fixed { bytes } => (bytes, bytes, false),
            WindowSpec::Auto { rmem_initial_bytes, rmem_max_bytes, .. } => (
                (rmem_initial_bytes as f64 * ADV_WINDOW_FRACTION) as u64,
                (rmem_max_bytes as f64 * ADV_WINDOW_FRACTION) as u64,
                true,
            ),
        };
        Receiver {
            rcv_nxt: 0,
            ooo: Vec::new(),
            change: 0,
            latest: None,
            unacked: 0,
            ack_every: ack_every.max(1),
            delack,
            delack_at: NEVER,
            mss: mss as u64,
            window_bytes,
            window_segs: (window_bytes / mss as u64).max(1),
            max_window_bytes,
            offered_edge: (window_bytes / mss as u64).max(1),
            autotune,
            mark_time: 0,
            mark_seg: 0,
            space: RCV_SPACE_INITIAL_SEGS.min((window_bytes / mss as u64).max(1)) * mss as u64 - 1,
            duplicates: 0,
        }
    }

    /// The window offered now, in whole segments (at least one).
    pub fn window_segs(&self) -> u64 {
        self.window_segs
    }

    /// Dynamic right-sizing as Linux 6.x tcp_rcv_space_adjust: once per round trip, if the
    /// application read more than in the last growing round (`space`), offer twice what it read
    /// plus 16 segments, plus twice that again scaled by the growth of the reading rate, so that
    /// a sender doubling in slow start is never receive-window-limited (the window is
    /// 6 x copied + 48 segments when the rate doubles; 2 x copied + 16 segments when steady).
    fn autotune(&mut self, now: Time, rtt: Time) {
        if !self.autotune || rtt == 0 || now < self.mark_time + rtt {
            return;
        }
        let copied = (self.rcv_nxt - self.mark_seg) * self.mss;
        if copied > self.space {
            let base = 2 * copied + RCV_SPACE_CUSHION_SEGS * self.mss;
            let grow = (base as u128 * (copied - self.space) as u128 / self.space.max(1) as u128) as u64;
            let wanted = base.saturating_add(2 * grow).min(self.max_window_bytes);
            self.window_bytes = self.window_bytes.max(wanted);
            self.window_segs = (self.window_bytes / self.mss).max(1);
            self.space = copied;
        }
        self.mark_time = now;
        self.mark_seg = self.rcv_nxt;
    }

    /// The out-of-order range holding `seg`, if any (they are sorted and disjoint: a binary
    /// search, as a sender in recovery leaves up to hundreds of them).
    fn ooo_range(&self, seg: u64) -> Option<&(u64, u64, u64)> {
        self.ooo.get(self.ooo.partition_point(|r| r.1 <= seg)).filter(|r| r.0 <= seg)
    }

    /// Segment `seg` arrived at `now`; `rtt` is the connection's smoothed RTT (auto-tuning).
    pub fn on_data(&mut self, now: Time, seg: u64, rtt: Time) -> AckNow {
        if seg < self.rcv_nxt || self.ooo_range(seg).is_some() {
            self.duplicates += 1;
            return AckNow::Now;
        }
        self.change += 1;
        if seg == self.rcv_nxt {
            let had_holes = !self.ooo.is_empty();
            self.rcv_nxt += 1;
            if self.ooo.first().is_some_and(|r| r.0 == self.rcv_nxt) {
                self.rcv_nxt = self.ooo.remove(0).1;
            }
            self.latest = None;
            self.autotune(now, rtt);
            if had_holes {
                return AckNow::Now;
            }
            self.unacked += 1;
            if self.unacked >= self.ack_every || self.window_mostly_used() {
                return AckNow::Now;
            }
            if self.delack_at == NEVER {
                self.delack_at = now + self.delack;
            }
            return AckNow::Delayed;
        }
        // Out of order: extend a neighbouring range or start a new one, merging if they touch.
        let i = self.ooo.partition_point(|r| r.1 < seg);
        if i < self.ooo.len() && self.ooo[i].1 == seg {
            self.ooo[i].1 = seg + 1;
            if i + 1 < self.ooo.len() && self.ooo[i + 1].0 == seg + 1 {
                self.ooo[i].1 = self.ooo.remove(i + 1).1;
            }
            self.ooo[i].2 = self.change;
        } else if i < self.ooo.len() && self.ooo[i].0 == seg + 1 {
            self.ooo[i].0 = seg;
            self.ooo[i].2 = self.change;
        } else {
            self.ooo.insert(i, (seg, seg + 1, self.change));
        }
        self.latest = Some(seg);
        AckNow::Now
    }

    /// The sender has used at least half the window the last ACK offered: once the application
    /// reads (at once, here), the window it can offer is at least twice what is left, and Linux
    /// sends that window update without waiting for the delayed-ACK timer (tcp_cleanup_rbuf,
    /// "this read freed lots of space"). Binds only windows of a few segments, which otherwise
    /// stall on the timer: one 64 KiB segment per 40 ms over IPoIB-CM with a 64 KiB buffer.
    fn window_mostly_used(&self) -> bool {
        2 * self.offered_edge.saturating_sub(self.rcv_nxt) <= self.window_segs
    }

    /// Build the ACK to send now (clears the delayed-ACK state).
    pub fn make_ack(&mut self) -> AckContent {
        self.unacked = 0;
        self.delack_at = NEVER;
        let mut sack = [(0, 0); MAX_SACK_BLOCKS];
        let mut n = 0;
        if let Some(seg) = self.latest {
            if let Some(r) = self.ooo_range(seg) {
                sack[0] = (r.0, r.1);
                n = 1;
            }
        }
        if !self.ooo.is_empty() {
            // The most recently changed other ranges, latest first: the top few by change
            // stamp (each stamp marks one range), picked in one pass without allocating (in
            // recovery every ACK carries SACK blocks). From the highest range down: new data
            // extends the highest ranges, so the others are mostly passed over at once.
            let want = MAX_SACK_BLOCKS - n;
            let mut top = [(0, 0, 0); MAX_SACK_BLOCKS];
            let mut m = 0;
            for &r in self.ooo.iter().rev().filter(|r| n == 0 || (r.0, r.1) != sack[0]) {
                if m == want && top[want - 1].2 > r.2 {
                    continue;
                }
                let mut i = m.min(want - 1);
                m = (m + 1).min(want);
                while i > 0 && top[i - 1].2 < r.2 {
                    top[i] = top[i - 1];
                    i -= 1;
                }
                top[i] = r;
            }
            for r in &top[..m] {
                sack[n] = (r.0, r.1);
                n += 1;
            }
        }
        self.offered_edge = self.rcv_nxt + self.window_segs;
        AckContent { ack: self.rcv_nxt, sack, n_sack: n, rwnd_segs: self.window_segs() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::MS;

    fn rx() -> Receiver {
        Receiver::new(1000, WindowSpec::Fixed { bytes: 100_000 }, 2, 40 * MS)
    }

    #[test]
    fn delayed_ack_every_second_segment() {
        let mut r = rx();
        assert_eq!(r.on_data(0, 0, MS), AckNow::Delayed);
        assert_eq!(r.delack_at, 40 * MS);
        assert_eq!(r.on_data(1, 1, MS), AckNow::Now);
        let a = r.make_ack();
        assert_eq!((a.ack, a.n_sack, a.rwnd_segs), (2, 0, 100));
        assert_eq!(r.delack_at, NEVER);
    }

    #[test]
    fn holes_produce_sack_blocks_latest_first() {
        let mut r = rx();
        r.on_data(0, 0, MS);
        assert_eq!(r.on_data(0, 2, MS), AckNow::Now);
        r.on_data(0, 5, MS);
        r.on_data(0, 3, MS);
        let a = r.make_ack();
        assert_eq!(a.ack, 1);
        assert_eq!(&a.sack[..a.n_sack], &[(2, 4), (5, 6)]);
        // Filling the first hole delivers through 4 and acknowledges at once.
        assert_eq!(r.on_data(0, 1, MS), AckNow::Now);
        assert_eq!(r.rcv_nxt, 4);
        assert_eq!(r.on_data(0, 4, MS), AckNow::Now);
        assert_eq!(r.rcv_nxt, 6);
        assert_eq!(r.on_data(0, 2, MS), AckNow::Now);
        assert_eq!(r.duplicates, 1);
    }

    /// The SACK blocks are the latest segment's range, then the most recently changed others,
    /// as sorting every range by its change would give, whatever the arrival order.
    #[test]
    fn sack_blocks_are_the_most_recently_changed_ranges() {
        let mut r = Receiver::new(1000, WindowSpec::Fixed { bytes: 1 << 30 }, 1, 40 * MS);
        let mut x: u64 = 12345;
        for _ in 0..3000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            r.on_data(0, r.rcv_nxt + (x >> 33) % 60, MS);
            let mut want: Vec<(u64, u64, u64)> = r.ooo.clone();
            want.sort_by_key(|o| std::cmp::Reverse(o.2));
            let first = r.latest.and_then(|seg| r.ooo.iter().find(|o| o.0 <= seg && seg < o.1)).map(|o| (o.0, o.1));
            let want: Vec<(u64, u64)> = first
                .into_iter()
                .chain(want.iter().map(|o| (o.0, o.1)).filter(|&o| Some(o) != first))
                .take(MAX_SACK_BLOCKS)
                .collect();
            let a = r.make_ack();
            assert_eq!(&a.sack[..a.n_sack], &want[..]);
        }
    }

    /// Linux's rule: a round that reads 20 segments after 11 (the measure closes on the segment
    /// that opens the next round) offers (2 x 20 + 16) x (1 + 2 x 9/11) = 147 segments, about
    /// three times 2 x 20 + 16; a steady rate does not grow the window; the maximum caps it.
    #[test]
    fn autotuning_provisions_for_a_doubling_sender_and_stops_at_the_max() {
        let auto = WindowSpec::Auto { rmem_initial_bytes: 131_072, rmem_max_bytes: 1_000_000, wmem_max_bytes: 0 };
        let mut r = Receiver::new(1000, auto, 2, 40 * MS);
        assert_eq!(r.window_segs(), 65);
        let mut seg = 0;
        let mut round = |r: &mut Receiver, k: u64, n: u64| {
            for i in 0..n {
                r.on_data(k * MS + i * MS / n, seg, MS);
                seg += 1;
            }
        };
        round(&mut r, 0, 10);
        round(&mut r, 1, 20);
        round(&mut r, 2, 1);
        assert_eq!(r.window_segs(), 147);
        for k in 3..6 {
            round(&mut r, k, 20);
        }
        assert_eq!(r.window_segs(), 147, "a steady rate keeps the window");
        for k in 6..9 {
            round(&mut r, k, 400);
        }
        assert_eq!(r.window_segs(), 500, "half of rmem_max");
    }
}
