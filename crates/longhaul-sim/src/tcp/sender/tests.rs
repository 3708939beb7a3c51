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
