//! A plain-text trace of an MPI application and its conversion to rank programs (the replayer
//! is the engine itself).
//!
//! Format: one event per line; `#` starts a comment; blank lines are ignored.
//!
//! ```text
//! ranks 4                      # first statement: how many ranks
//! 0 compute 150.5              # rank 0 computes for 150.5 us
//! 0 send 1 65536               # blocking send of 65536 bytes to rank 1 (MPI_Send)
//! 1 recv 0 65536               # blocking receive from rank 0 (MPI_Recv)
//! 2 isend 3 1024               # non-blocking (MPI_Isend / MPI_Irecv) ...
//! 3 irecv 2 1024
//! 2 waitall                    # ... completed by MPI_Waitall
//! 3 waitall
//! * bcast 0 4096               # a collective on all ranks: bcast ROOT BYTES
//! * allreduce 8                # allreduce BYTES, alltoall BYTES (per pair), scatter ROOT BYTES,
//! * barrier                    # barrier
//! ```
//!
//! Each rank's events run in file order; messages between two ranks match in order (MPI's
//! non-overtaking rule), so the n-th send from a rank to a peer is the peer's n-th receive from
//! it, with the same size (`check_pairs` names the line of the first that is not). A rank's
//! `isend`/`irecv` complete at its next `waitall`; one the trace leaves open completes at its end.

use std::collections::BTreeMap;

use super::collectives::{self, AlgoChoice, Collective};
use super::placement::Layout;
use super::program::{Action, Programs, Xfer};
use super::scenario::MAX_RANKS;
use super::MAX_COMPUTE_US;
use crate::engine::time::from_us;

#[derive(Debug)]
pub struct Parsed {
    pub ranks: u32,
    lines: Vec<(usize, Option<u32>, Event)>,
}

#[derive(Debug)]
enum Event {
    Compute(f64),
    Send(u32, u64, bool),
    Recv(u32, u64, bool),
    WaitAll,
    Coll(Collective, u32, u64),
}

/// Parse `text` (named `name` in errors: "NAME:LINE: problem").
pub fn parse(name: &str, text: &str) -> Result<Parsed, String> {
    let mut ranks: Option<u32> = None;
    let mut lines = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let ln = i + 1;
        let e = |m: String| format!("{name}:{ln}: {m}");
        let body = raw.split('#').next().unwrap_or("").trim();
        if body.is_empty() {
            continue;
        }
        let f: Vec<&str> = body.split_whitespace().collect();
        if f[0] == "ranks" {
            let n: u32 = f
                .get(1)
                .and_then(|s| s.parse().ok())
                .filter(|&n| (1..=MAX_RANKS).contains(&n))
                .ok_or_else(|| e(format!("'ranks N' needs N in 1..{MAX_RANKS}")))?;
            if ranks.is_some() || !lines.is_empty() {
                return Err(e("'ranks' must be the first statement, once".into()));
            }
            ranks = Some(n);
            continue;
        }
        let n = ranks.ok_or_else(|| e("the trace must start with 'ranks N'".into()))?;
        let who = if f[0] == "*" {
            None
        } else {
            let r: u32 = f[0].parse().map_err(|_| e(format!("'{}' is not a rank or '*'", f[0])))?;
            if r >= n {
                return Err(e(format!("rank {r} does not exist (ranks 0..{})", n - 1)));
            }
            Some(r)
        };
        let op = *f.get(1).ok_or_else(|| e("missing event after the rank".into()))?;
        let num = |k: usize, what: &str| -> Result<f64, String> {
            let s = f.get(k).ok_or_else(|| e(format!("{op}: missing {what}")))?;
            let v: f64 = s.parse().map_err(|_| e(format!("{op}: {what} '{s}' is not a number")))?;
            if !v.is_finite() || v < 0.0 {
                return Err(e(format!("{op}: {what} {s} must be >= 0")));
            }
            Ok(v)
        };
        let peer = |k: usize| -> Result<u32, String> {
            let v = num(k, "peer rank")?;
            if v.fract() != 0.0 || v >= n as f64 {
                return Err(e(format!("{op}: peer {v} is not a rank (0..{})", n - 1)));
            }
            Ok(v as u32)
        };
        let bytes = |k: usize| -> Result<u64, String> {
            let v = num(k, "byte count")?;
            if v.fract() != 0.0 || v > (1u64 << 30) as f64 {
                return Err(e(format!("{op}: {v} bytes is not a whole number in 0..1073741824")));
            }
            Ok(v as u64)
        };
        let expect = |k: usize| -> Result<(), String> {
            if f.len() != k {
                return Err(e(format!("{op}: expected {} fields, got {}", k, f.len())));
            }
            Ok(())
        };
        let needs_rank =
            |r: Option<u32>| r.ok_or_else(|| e(format!("{op}: a point-to-point event needs a rank, not '*'")));
        let ev = match op {
            "compute" => {
                expect(3)?;
                let us = num(2, "time (us)")?;
                if us > MAX_COMPUTE_US {
                    return Err(e(format!("compute: time {us} us is out of range [0, {MAX_COMPUTE_US:e}]")));
                }
                Event::Compute(us)
            }
            "send" | "isend" | "recv" | "irecv" => {
                expect(4)?;
                let me = needs_rank(who)?;
                let (p, b) = (peer(2)?, bytes(3)?);
                if p == me {
                    return Err(e(format!("{op}: rank {me} cannot message itself")));
                }
                let blocking = !op.starts_with('i');
                if op.ends_with("send") { Event::Send(p, b, blocking) } else { Event::Recv(p, b, blocking) }
            }
            "waitall" => {
                expect(2)?;
                needs_rank(who)?;
                Event::WaitAll
            }
            "bcast" | "scatter" => {
                expect(4)?;
                let c = if op == "bcast" { Collective::Bcast } else { Collective::Scatter };
                Event::Coll(c, peer(2)?, bytes(3)?)
            }
            "allreduce" | "alltoall" => {
                expect(3)?;
                let c = if op == "allreduce" { Collective::Allreduce } else { Collective::Alltoall };
                Event::Coll(c, 0, bytes(2)?)
            }
            "barrier" => {
                expect(2)?;
                Event::Coll(Collective::Barrier, 0, 0)
            }
            other => return Err(e(format!("unknown event '{other}' (valid: compute, send, recv, isend, irecv, waitall, bcast, scatter, allreduce, alltoall, barrier)"))),
        };
        if who.is_some() && matches!(ev, Event::Coll(..)) {
            return Err(e(format!("{op}: collectives involve every rank; write '* {op} ...'")));
        }
        lines.push((ln, who, ev));
    }
    let ranks = ranks.ok_or_else(|| format!("{name}:1: empty trace (it must start with 'ranks N')"))?;
    Ok(Parsed { ranks, lines })
}

/// Rank programs of a parsed trace on `layout`, for the timing engine: byte counts, not the
/// block lists the data checker reads (they grow with ranks^2: every message of a binomial
/// bcast names every rank's block). [`super::program::check`] on them checks what a trace can
/// get wrong (every receive has its send, no deadlock); the data each collective algorithm
/// moves is checked once for all by the algorithms' own tests (`collectives.rs`).
pub fn programs(t: &Parsed, layout: &Layout, choice: AlgoChoice) -> Programs {
    let mut p = Programs::timing(t.ranks as usize);
    for (_, who, ev) in &t.lines {
        match (ev, *who) {
            (Event::Coll(c, root, b), _) => {
                collectives::emit(&mut p, layout, *c, *root, *b, choice);
            }
            (Event::Compute(us), None) => p.compute_all(from_us(*us)),
            (Event::Compute(us), Some(r)) => p.ranks[r as usize].push(Action::Compute(from_us(*us))),
            (Event::Send(q, b, true), Some(r)) => p.ranks[r as usize].push(Action::send(Xfer::plain(*q, *b))),
            (Event::Recv(q, b, true), Some(r)) => p.ranks[r as usize].push(Action::recv(Xfer::plain(*q, *b))),
            (Event::Send(q, b, false), Some(r)) => {
                p.ranks[r as usize].push(Action::Post { sends: vec![Xfer::plain(*q, *b)], recvs: vec![] })
            }
            (Event::Recv(q, b, false), Some(r)) => {
                p.ranks[r as usize].push(Action::Post { sends: vec![], recvs: vec![Xfer::plain(*q, *b)] })
            }
            (Event::WaitAll, Some(r)) => p.ranks[r as usize].push(Action::WaitAll),
            _ => unreachable!("parse() rejects rank-less point-to-point events"),
        }
    }
    // A trailing wait completes any request the trace left open.
    for r in &mut p.ranks {
        if r.iter().any(|a| matches!(a, Action::Post { .. })) {
            r.push(Action::WaitAll);
        }
    }
    p
}

/// Every point-to-point message matched: rank s's n-th send to d is d's n-th receive from s, of
/// the same size. The first message that is not, by line, named as "NAME:LINE: problem".
pub fn check_pairs(t: &Parsed, name: &str) -> Result<(), String> {
    type Msgs = BTreeMap<(u32, u32), Vec<(usize, u64)>>;
    let (mut sends, mut recvs): (Msgs, Msgs) = Default::default();
    for (ln, who, ev) in &t.lines {
        match (*who, ev) {
            (Some(r), Event::Send(peer, bytes, _)) => sends.entry((r, *peer)).or_default().push((*ln, *bytes)),
            (Some(r), Event::Recv(peer, bytes, _)) => recvs.entry((*peer, r)).or_default().push((*ln, *bytes)),
            _ => {}
        }
    }
    let mut problems: Vec<(usize, String)> = Vec::new();
    for (&(s, d), sent) in &sends {
        let received = recvs.get(&(s, d)).map_or(&[][..], Vec::as_slice);
        for (k, &(ln, bytes)) in sent.iter().enumerate() {
            match received.get(k) {
                None => problems.push((
                    ln,
                    format!(
                        "rank {s}'s send of {bytes} bytes to rank {d} is never received (rank {d} posts {} receive(s) \
                         from rank {s}, this is message {})",
                        received.len(),
                        k + 1
                    ),
                )),
                Some(&(rl, rb)) if rb != bytes => problems.push((
                    rl,
                    format!(
                        "rank {d} receives {rb} bytes from rank {s}, but the send it matches (line {ln}, message {} \
                         from {s} to {d}) sends {bytes}",
                        k + 1
                    ),
                )),
                Some(_) => {}
            }
        }
    }
    for (&(s, d), received) in &recvs {
        let n_sent = sends.get(&(s, d)).map_or(0, Vec::len);
        for &(ln, _) in received.iter().skip(n_sent) {
            let why = format!("rank {s} sends it {n_sent} message(s)");
            problems.push((ln, format!("rank {d}'s receive from rank {s} is never matched ({why})")));
        }
    }
    problems.into_iter().min_by_key(|(ln, _)| *ln).map_or(Ok(()), |(ln, m)| Err(format!("{name}:{ln}: {m}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_event_and_reports_file_and_line() {
        let t = parse(
            "app.trace",
            "ranks 2\n# hi\n0 compute 10\n0 isend 1 8\n1 recv 0 8\n0 waitall\n* allreduce 8\n* barrier\n",
        )
        .unwrap();
        assert_eq!(t.ranks, 2);
        let bad = |s: &str| parse("x.trace", s).unwrap_err();
        assert_eq!(bad("ranks 2\n0 send 5 8\n"), "x.trace:2: send: peer 5 is not a rank (0..1)");
        assert!(bad("0 send 1 8\n").starts_with("x.trace:1: the trace must start"));
        assert!(bad("ranks 2\n0 jump\n").contains("unknown event 'jump'"));
        assert!(bad("ranks 2\n0 compute -1\n").contains("must be >= 0"));
        assert!(bad("ranks 2\n0 compute 1e15\n").contains("compute: time 1000000000000000 us is out of range [0, 1e8]"));
        assert!(bad("ranks 2\n0 bcast 0 8\n").contains("write '* bcast"));
    }

    #[test]
    fn unmatched_and_mismatched_messages_are_named_by_line() {
        let check = |s: &str| check_pairs(&parse("t.trace", s).unwrap(), "t.trace");
        assert_eq!(check("ranks 2\n0 isend 1 8\n1 irecv 0 8\n0 send 1 4\n1 recv 0 4\n"), Ok(()));
        assert_eq!(
            check("ranks 2\n0 send 1 8\n1 recv 0 16\n").unwrap_err(),
            "t.trace:3: rank 1 receives 16 bytes from rank 0, but the send it matches (line 2, message 1 from 0 to 1) \
             sends 8"
        );
        assert_eq!(
            check("ranks 3\n0 send 1 8\n0 send 1 8\n1 recv 0 8\n").unwrap_err(),
            "t.trace:3: rank 0's send of 8 bytes to rank 1 is never received (rank 1 posts 1 receive(s) from rank 0, \
             this is message 2)"
        );
        assert_eq!(
            check("ranks 3\n2 recv 0 8\n").unwrap_err(),
            "t.trace:2: rank 2's receive from rank 0 is never matched (rank 0 sends it 0 message(s))"
        );
    }
}
