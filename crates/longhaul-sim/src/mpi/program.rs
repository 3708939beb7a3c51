//! What each rank does: a program of actions that the timing engine plays and that the data
//! checker executes on checksums.
//!
//! Every workload (OSU benchmarks, collectives, application skeletons, replayed traces) is
//! lowered to this one form: compute, rounds of non-blocking sends and receives completed by a
//! wait-all, local block copies, and time marks. Messages between a pair of ranks match in
//! posting order (MPI's non-overtaking rule with one tag), so no wildcard matching is needed.
//!
//! Data model (for the checker only; the engine uses `bytes`): a rank's buffer is a vector of
//! 64-bit block checksums. A transfer names the sender's source blocks and the receiver's
//! destination blocks; `reduce` adds (wrapping) instead of copying. Running a collective's
//! program through [`check`] must leave every rank with the expected checksums whatever the
//! algorithm, which is how the algorithms are proved equivalent.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};

pub(crate) use super::coll_flat::Pattern;
use crate::engine::Time;

/// One message of a round, seen from the rank that posts it.
#[derive(Debug, Clone, PartialEq)]
pub struct Xfer {
    pub peer: u32,
    pub bytes: u64,
    /// Sender: blocks read; receiver: blocks written (same length on both sides).
    pub blocks: Vec<u32>,
    /// Receiver adds into its blocks instead of overwriting them.
    pub reduce: bool,
}

impl Xfer {
    pub fn new(peer: u32, bytes: u64, blocks: Vec<u32>, reduce: bool) -> Self {
        Xfer { peer, bytes, blocks, reduce }
    }
    /// A message that carries no checked data (benchmark payloads, acks, barrier tokens).
    pub fn plain(peer: u32, bytes: u64) -> Self {
        Xfer { peer, bytes, blocks: Vec::new(), reduce: false }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// The CPU computes for this long; no MPI progress happens meanwhile.
    Compute(Time),
    /// Post every receive, then every send, then wait for all of them.
    Round { sends: Vec<Xfer>, recvs: Vec<Xfer> },
    /// A `Round` of one plain message each way with `peer`, `bytes` long (MPI_Sendrecv), held
    /// in place: what timing programs keep of such a round (`Programs::push`), a NAS skeleton's
    /// hundreds per rank and iteration costing no allocation (two `Vec`s of one `Xfer` took
    /// ~130 B more).
    Exchange { peer: u32, bytes: u64 },
    /// Post receives and sends without waiting (MPI_Irecv / MPI_Isend); a later `WaitAll`
    /// completes them, so communication overlaps whatever comes in between.
    Post { sends: Vec<Xfer>, recvs: Vec<Xfer> },
    /// Wait for every request posted by `Post` so far.
    WaitAll,
    /// Copy blocks within the rank's own buffer (src, dst) and charge a memory copy of `bytes`.
    Local { moves: Vec<(u32, u32)>, bytes: u64 },
    /// Record the current time under `label` (measurement points).
    Mark(u32),
    /// `Pattern::rounds()` rounds, played as `Round`s would be, whose peers and blocks follow
    /// from the round number: generated as they are played instead of stored (a ring allgather
    /// or a pairwise or scattered alltoall has ranks - 1 messages on every rank, ranks^2 in
    /// all, over 100 bytes each when stored). Held in place, not boxed: a rank reads it at
    /// every round, and a box would cost another cache miss each time.
    Rounds(Pattern),
}

impl Action {
    pub fn send(x: Xfer) -> Action {
        Action::Round { sends: vec![x], recvs: Vec::new() }
    }
    pub fn recv(x: Xfer) -> Action {
        Action::Round { sends: Vec::new(), recvs: vec![x] }
    }
    pub fn sendrecv(s: Xfer, r: Xfer) -> Action {
        Action::Round { sends: vec![s], recvs: vec![r] }
    }
    /// This action as an `Exchange`, if it is a `Round` that is one: a message each way with
    /// one peer, of the same length, neither adding into its blocks.
    fn exchange(&self) -> Option<Action> {
        match self {
            Action::Round { sends, recvs } => match (&sends[..], &recvs[..]) {
                ([s], [r]) if s.peer == r.peer && s.bytes == r.bytes && !s.reduce && !r.reduce => {
                    Some(Action::Exchange { peer: s.peer, bytes: s.bytes })
                }
                _ => None,
            },
            _ => None,
        }
    }
    /// Calls `f` with the bytes of every message the action sends.
    pub fn for_each_send(&self, mut f: impl FnMut(u64)) {
        match self {
            Action::Round { sends, .. } | Action::Post { sends, .. } => sends.iter().for_each(|x| f(x.bytes)),
            &Action::Exchange { bytes, .. } => f(bytes),
            Action::Rounds(p) => {
                let (mut sends, mut recvs) = (Vec::new(), Vec::new());
                for k in 0..p.rounds() {
                    p.fill(k, false, &mut sends, &mut recvs);
                }
                sends.iter().for_each(|x| f(x.bytes));
            }
            _ => {}
        }
    }
}

/// The label a mark of a warm-up play of the programs is recorded under (see `Programs::warmup`).
pub const WARMUP_MARK: u32 = u32::MAX;

/// Every rank's actions; the whole list is played `repeat` times (iterations of an application,
/// calls of an OSU collective).
#[derive(Debug, Clone, Default)]
pub struct Programs {
    pub ranks: Vec<Vec<Action>>,
    pub repeat: u64,
    /// The first `warmup` plays (of `repeat`) are warm-up: their marks are recorded under
    /// [`WARMUP_MARK`] whatever their label, so a measurement reads only the later plays.
    pub warmup: u64,
    /// Transfers and local copies keep their blocks (what the data checker reads). Without them
    /// (`timing`) only bytes are kept, all the timing engine reads: a collective's block lists
    /// grow with ranks^2 (every message of a binomial broadcast names every block).
    pub blocks: bool,
}

impl Programs {
    pub fn new(ranks: usize) -> Self {
        Programs { ranks: vec![Vec::new(); ranks], repeat: 1, warmup: 0, blocks: true }
    }
    /// Programs for the timing engine only: `push` drops the blocks of what it appends.
    pub fn timing(ranks: usize) -> Self {
        Programs { blocks: false, ..Programs::new(ranks) }
    }
    /// Append `a` to rank `r`'s program (without its blocks unless `self.blocks`; a round of
    /// one message each way with one peer as an `Exchange`).
    pub fn push(&mut self, r: u32, mut a: Action) {
        if !self.blocks {
            if let Some(x) = a.exchange() {
                a = x;
            }
            match &mut a {
                Action::Round { sends, recvs } | Action::Post { sends, recvs } => {
                    sends.iter_mut().chain(recvs.iter_mut()).for_each(|x| x.blocks = Vec::new())
                }
                Action::Local { moves, .. } => *moves = Vec::new(),
                _ => {}
            }
        }
        self.ranks[r as usize].push(a);
    }
    pub fn size(&self) -> usize {
        self.ranks.len()
    }
    pub fn mark_all(&mut self, label: u32) {
        for p in &mut self.ranks {
            p.push(Action::Mark(label));
        }
    }
    pub fn compute_all(&mut self, t: Time) {
        if t > 0 {
            for p in &mut self.ranks {
                p.push(Action::Compute(t));
            }
        }
    }
    /// The same programs with every `Rounds` written out as its `Round`s, blocks included, and
    /// every `Exchange` as its `Round` (what the data checker plays; the timing engine
    /// generates them as it goes).
    pub fn expanded(&self) -> Cow<'_, Programs> {
        if !self.ranks.iter().flatten().any(|a| matches!(a, Action::Rounds(_) | Action::Exchange { .. })) {
            return Cow::Borrowed(self);
        }
        let expand = |a: &Action| match a {
            &Action::Exchange { peer, bytes } => {
                vec![Action::sendrecv(Xfer::plain(peer, bytes), Xfer::plain(peer, bytes))]
            }
            Action::Rounds(p) => (0..p.rounds())
                .map(|k| {
                    let (mut sends, mut recvs) = (Vec::new(), Vec::new());
                    p.fill(k, true, &mut sends, &mut recvs);
                    Action::Round { sends, recvs }
                })
                .collect(),
            a => vec![a.clone()],
        };
        let ranks = self.ranks.iter().map(|p| p.iter().flat_map(expand).collect()).collect();
        Cow::Owned(Programs { ranks, ..*self })
    }
}

impl Programs {
    /// Checksum buffers large enough for every block the programs touch (all zero).
    pub fn zero_buffers(&self) -> Vec<Vec<u64>> {
        let mut top = 0u32;
        for a in self.expanded().ranks.iter().flatten() {
            match a {
                Action::Round { sends, recvs } | Action::Post { sends, recvs } => {
                    for x in sends.iter().chain(recvs) {
                        top = top.max(x.blocks.iter().copied().max().map_or(0, |b| b + 1));
                    }
                }
                Action::Local { moves, .. } => {
                    top = top.max(moves.iter().map(|&(s, d)| s.max(d) + 1).max().unwrap_or(0))
                }
                _ => {}
            }
        }
        vec![vec![0; top as usize]; self.ranks.len()]
    }
}

/// The bytes of blocks `blocks` when `total` bytes are split into `nblocks` nearly equal blocks.
pub fn block_bytes(total: u64, nblocks: u32, blocks: impl IntoIterator<Item = u32>) -> u64 {
    let n = nblocks.max(1) as u64;
    blocks.into_iter().map(|b| (total * (b as u64 + 1)) / n - (total * b as u64) / n).sum()
}

/// Why a program set cannot complete.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckError(pub String);

/// Deliver message `m` into receive `x` of rank `r`.
fn apply(r: usize, x: &Xfer, m: (u64, Vec<u64>), buf: &mut [u64]) -> Result<(), CheckError> {
    let (bytes, vals) = m;
    if bytes != x.bytes || vals.len() != x.blocks.len() {
        return Err(CheckError(format!(
            "rank {r} receives {} bytes / {} blocks from {} but {} bytes / {} blocks were sent",
            x.bytes,
            x.blocks.len(),
            x.peer,
            bytes,
            vals.len()
        )));
    }
    for (&b, v) in x.blocks.iter().zip(vals) {
        let slot = &mut buf[b as usize];
        *slot = if x.reduce { slot.wrapping_add(v) } else { v };
    }
    Ok(())
}

type Wires = HashMap<(u32, u32), VecDeque<(u64, Vec<u64>)>>;

/// Match the detached receives of rank `r` that can be matched, in posting order per peer.
fn match_detached(r: usize, pending: &mut Vec<Xfer>, wires: &mut Wires, buf: &mut [u64]) -> Result<bool, CheckError> {
    let mut blocked: Vec<u32> = Vec::new();
    let mut keep = Vec::new();
    let mut any = false;
    for x in pending.drain(..) {
        let avail = !blocked.contains(&x.peer) && wires.get(&(x.peer, r as u32)).is_some_and(|q| !q.is_empty());
        if avail {
            let m = wires.get_mut(&(x.peer, r as u32)).and_then(|q| q.pop_front()).expect("available");
            apply(r, &x, m, buf)?;
            any = true;
        } else {
            blocked.push(x.peer);
            keep.push(x);
        }
    }
    *pending = keep;
    Ok(any)
}

/// What has been posted, per (src, dst): the messages in flight (`wires`) and the count of sends
/// and of receives, which pair the n-th send with the n-th receive for the rendezvous rule.
#[derive(Default)]
struct Posted {
    wires: Wires,
    sends: HashMap<(u32, u32), u64>,
    recvs: HashMap<(u32, u32), u64>,
}

impl Posted {
    /// Rank `r` posts `recvs`, then `sends` (their blocks read now); each rendezvous send goes to
    /// `rndv` as (peer, its number on the pair).
    fn post(
        &mut self,
        r: usize,
        sends: &[Xfer],
        recvs: &[Xfer],
        buf: &[u64],
        is_rndv: impl Fn(&Xfer) -> bool,
        rndv: &mut Vec<(u32, u64)>,
    ) {
        for x in recvs {
            *self.recvs.entry((x.peer, r as u32)).or_default() += 1;
        }
        for s in sends {
            let seq = self.sends.entry((r as u32, s.peer)).or_default();
            if is_rndv(s) {
                rndv.push((s.peer, *seq));
            }
            *seq += 1;
            let vals = s.blocks.iter().map(|&b| buf[b as usize]).collect();
            self.wires.entry((r as u32, s.peer)).or_default().push_back((s.bytes, vals));
        }
    }

    /// Each of rank `r`'s rendezvous sends `pending` has had its receive posted.
    fn matched(&self, r: usize, pending: &[(u32, u64)]) -> bool {
        pending.iter().all(|&(peer, seq)| self.recvs.get(&(r as u32, peer)).is_some_and(|&k| k > seq))
    }
}

/// When a blocking send completes, as [`check`] plays it.
pub enum Sends<'a> {
    /// On posting: the library buffers every send (eager), so a send never waits for its peer
    /// (the tests' check of the data a schedule moves, whatever the protocol).
    #[cfg(test)]
    Buffered,
    /// Where `is_rendezvous(src, dst, bytes)` holds, only once the receiver has posted the
    /// matching receive (the rendezvous handshake waits for it); buffered otherwise.
    Rendezvous { eager_threshold_bytes: u32, is_rendezvous: &'a dyn Fn(u32, u32, u64) -> bool },
}

/// Execute the programs on checksum buffers (`buffers[rank]`), ignoring time. Sends read the
/// sender's blocks when its round starts; receives apply in posting order when matched. A
/// rendezvous send (see [`Sends`]) holds its round, or the `WaitAll` after its `Post`, until
/// the receiver has posted the receive it matches: the n-th send from a rank to a peer matches
/// the peer's n-th receive from it.
/// Returns an error if the programs deadlock or a pair's message sizes disagree.
pub fn check(progs: &Programs, buffers: &mut [Vec<u64>], sends: Sends) -> Result<(), CheckError> {
    let progs = &*progs.expanded();
    let n = progs.size();
    let mut pc = vec![0usize; n];
    let mut posted_msgs = Posted::default();
    let mut posted = vec![false; n];
    // Receives posted by `Post` and not yet matched, per rank, in posting order.
    let mut detached: Vec<Vec<Xfer>> = vec![Vec::new(); n];
    // Per rank, its rendezvous sends not yet known to be matched: (peer, sequence number on the
    // pair); those of the current round, and those of `Post`s since the last `WaitAll`.
    let mut round_rndv: Vec<Vec<(u32, u64)>> = vec![Vec::new(); n];
    let mut posted_rndv: Vec<Vec<(u32, u64)>> = vec![Vec::new(); n];
    let is_rndv = |src: usize, x: &Xfer| match &sends {
        #[cfg(test)]
        Sends::Buffered => false,
        Sends::Rendezvous { is_rendezvous, .. } => is_rendezvous(src as u32, x.peer, x.bytes),
    };
    let total: usize = progs.ranks.iter().map(|p| p.len()).sum::<usize>() * progs.repeat as usize;
    let mut done = 0usize;
    let len = |r: usize| progs.ranks[r].len() * progs.repeat as usize;
    while done < total {
        let mut progress = false;
        for r in 0..n {
            while pc[r] < len(r) {
                progress |= match_detached(r, &mut detached[r], &mut posted_msgs.wires, &mut buffers[r])?;
                let a = &progs.ranks[r][pc[r] % progs.ranks[r].len()];
                match a {
                    Action::Compute(_) | Action::Mark(_) => {}
                    Action::Rounds(_) | Action::Exchange { .. } => unreachable!("expanded above"),
                    Action::Post { sends, recvs } => {
                        posted_msgs.post(r, sends, recvs, &buffers[r], |x| is_rndv(r, x), &mut posted_rndv[r]);
                        detached[r].extend(recvs.iter().cloned());
                    }
                    Action::WaitAll => {
                        if !detached[r].is_empty() || !posted_msgs.matched(r, &posted_rndv[r]) {
                            break;
                        }
                        posted_rndv[r].clear();
                    }
                    Action::Local { moves, .. } => {
                        let snap: Vec<u64> = moves.iter().map(|&(s, _)| buffers[r][s as usize]).collect();
                        for (&(_, d), v) in moves.iter().zip(snap) {
                            buffers[r][d as usize] = v;
                        }
                    }
                    Action::Round { sends, recvs } => {
                        if !posted[r] {
                            posted_msgs.post(r, sends, recvs, &buffers[r], |x| is_rndv(r, x), &mut round_rndv[r]);
                            posted[r] = true;
                            progress = true;
                        }
                        let ready = recvs.iter().all(|x| {
                            let need = recvs.iter().chain(&detached[r]).filter(|y| y.peer == x.peer).count();
                            posted_msgs.wires.get(&(x.peer, r as u32)).is_some_and(|q| q.len() >= need)
                        });
                        if !ready || !posted_msgs.matched(r, &round_rndv[r]) {
                            break;
                        }
                        for x in recvs {
                            let m = posted_msgs
                                .wires
                                .get_mut(&(x.peer, r as u32))
                                .and_then(|q| q.pop_front())
                                .expect("ready");
                            apply(r, x, m, &mut buffers[r])?;
                        }
                        round_rndv[r].clear();
                        posted[r] = false;
                    }
                }
                pc[r] += 1;
                done += 1;
                progress = true;
            }
        }
        if !progress {
            let stuck: Vec<usize> = (0..n).filter(|&r| pc[r] < len(r)).take(4).collect();
            let in_rndv = (0..n).any(|r| pc[r] < len(r) && !(round_rndv[r].is_empty() && posted_rndv[r].is_empty()));
            return Err(CheckError(match (&sends, in_rndv) {
                (Sends::Rendezvous { eager_threshold_bytes, .. }, true) => format!(
                    "deadlock: ranks {stuck:?} wait forever; a blocking send above the eager threshold \
                     ({eager_threshold_bytes} bytes) waits for its receive to be posted (post the receive first, or \
                     use isend and waitall)"
                ),
                _ => format!("deadlock: ranks {stuck:?} wait for messages that are never sent"),
            }));
        }
    }
    // The lowest (sender, receiver) pair: the wires are a hash map, whose order changes from run to run.
    if let Some(((s, d), q)) = posted_msgs.wires.iter().filter(|(_, q)| !q.is_empty()).min_by_key(|(k, _)| **k) {
        return Err(CheckError(format!("{} message(s) from {s} to {d} are never received", q.len())));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_partition_the_bytes_exactly() {
        for total in [0u64, 1, 7, 1000, 1 << 20] {
            for n in [1u32, 3, 64, 128] {
                assert_eq!(block_bytes(total, n, 0..n), total);
            }
        }
    }

    #[test]
    fn checker_moves_and_reduces_blocks_and_finds_deadlocks() {
        let mut p = Programs::new(2);
        p.ranks[0].push(Action::send(Xfer::new(1, 8, vec![0], false)));
        p.ranks[1].push(Action::recv(Xfer::new(0, 8, vec![1], true)));
        let mut bufs = vec![vec![5, 0], vec![0, 2]];
        check(&p, &mut bufs, Sends::Buffered).unwrap();
        assert_eq!(bufs[1][1], 7);
        let mut dead = Programs::new(2);
        dead.ranks[0].push(Action::recv(Xfer::plain(1, 1)));
        dead.ranks[1].push(Action::recv(Xfer::plain(0, 1)));
        assert!(check(&dead, &mut [vec![], vec![]], Sends::Buffered).unwrap_err().0.contains("deadlock"));
    }

    const ALL_RNDV: Sends = Sends::Rendezvous { eager_threshold_bytes: 0, is_rendezvous: &|_, _, _| true };

    /// Two ranks that each send before they receive: fine when sends are buffered, a deadlock
    /// when they are rendezvous; posting the receive first (a round, or irecv) resolves it.
    #[test]
    fn rendezvous_sends_wait_for_their_receive_to_be_posted() {
        let send_first =
            |r: usize| vec![Action::send(Xfer::plain(1 - r as u32, 9)), Action::recv(Xfer::plain(1 - r as u32, 9))];
        let p = Programs { ranks: vec![send_first(0), send_first(1)], repeat: 1, warmup: 0, blocks: true };
        check(&p, &mut [vec![], vec![]], Sends::Buffered).unwrap();
        let e = check(&p, &mut [vec![], vec![]], ALL_RNDV).unwrap_err().0;
        assert!(e.contains("ranks [0, 1] wait forever") && e.contains("eager threshold (0 bytes)"), "{e}");
        // Rank 1 receives first: rank 0's send is matched, then rank 1's.
        let p = Programs {
            ranks: vec![send_first(0), send_first(1).into_iter().rev().collect()],
            repeat: 1,
            warmup: 0,
            blocks: true,
        };
        check(&p, &mut [vec![], vec![]], ALL_RNDV).unwrap();
        // Both as one round each (sendrecv), and both as isend + irecv + waitall.
        let round = |r: u32| vec![Action::sendrecv(Xfer::plain(1 - r, 9), Xfer::plain(1 - r, 9))];
        check(
            &Programs { ranks: vec![round(0), round(1)], repeat: 3, warmup: 0, blocks: true },
            &mut [vec![], vec![]],
            ALL_RNDV,
        )
        .unwrap();
        let posted = |r: u32| {
            vec![
                Action::Post { sends: vec![Xfer::plain(1 - r, 9)], recvs: vec![Xfer::plain(1 - r, 9)] },
                Action::WaitAll,
            ]
        };
        check(
            &Programs { ranks: vec![posted(0), posted(1)], repeat: 3, warmup: 0, blocks: true },
            &mut [vec![], vec![]],
            ALL_RNDV,
        )
        .unwrap();
        // An isend waited for before the peer posts its receive: the peer first waits for its own isend.
        let isend_first = |r: u32| {
            vec![
                Action::Post { sends: vec![Xfer::plain(1 - r, 9)], recvs: vec![] },
                Action::WaitAll,
                Action::recv(Xfer::plain(1 - r, 9)),
            ]
        };
        let p = Programs { ranks: vec![isend_first(0), isend_first(1)], repeat: 1, warmup: 0, blocks: true };
        assert!(check(&p, &mut [vec![], vec![]], ALL_RNDV).unwrap_err().0.contains("wait forever"));
    }
}
