//! The flat (topology-unaware) collective algorithms of MPICH2 1.0, which MVAPICH2 of 2008 ran
//! above a few processes, lowered to per-rank rounds over a group of ranks.
//!
//! Sources: R. Thakur, R. Rabenseifner, W. Gropp, "Optimization of Collective Communication
//! Operations in MPICH", IJHPCA 19(1), 2005 (binomial and scatter-allgather broadcast, recursive
//! doubling and Rabenseifner allreduce, Bruck / isend-irecv / pairwise alltoall, binomial scatter,
//! dissemination barrier); the MPICH2 1.0 source (bcast.c, allreduce.c, alltoall.c).
//!
//! A group is a slice of global ranks; `root` is an index into it. Block sets are global block
//! numbers of the rank buffers (see `program`), so a group algorithm can run on a sub-group
//! (one cluster) inside a hierarchical algorithm.

use std::sync::Arc;

use super::program::{block_bytes, Action, Programs, Xfer};

/// Bytes and blocks of a message carrying `blocks` of a `total`-byte buffer of `nblocks` blocks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Data {
    pub total: u64,
    pub nblocks: u32,
}

impl Data {
    pub fn xfer(&self, peer: u32, blocks: Vec<u32>, reduce: bool) -> Xfer {
        let bytes = block_bytes(self.total, self.nblocks, blocks.iter().copied());
        Xfer::new(peer, bytes, blocks, reduce)
    }
}

/// The blocks of chunk `c` when `blocks` are split into `m` nearly equal chunks.
fn chunk(blocks: &[u32], m: usize, c: usize) -> &[u32] {
    let n = blocks.len();
    &blocks[n * c / m..n * (c + 1) / m]
}

fn chunks(blocks: &[u32], m: usize, from: usize, to: usize) -> Vec<u32> {
    (from..to.min(m)).flat_map(|c| chunk(blocks, m, c).iter().copied()).collect()
}

fn push(p: &mut Programs, rank: u32, a: Action) {
    p.push(rank, a);
}

/// Binomial-tree broadcast of `blocks` from `g[root]` (MPICH: below 12 KB or fewer than 8 ranks).
pub fn bcast_binomial(p: &mut Programs, g: &[u32], root: usize, blocks: &[u32], d: Data) {
    let m = g.len();
    for rel in 0..m {
        let me = g[(rel + root) % m];
        let mut mask = 1;
        while mask < m {
            if rel & mask != 0 {
                push(p, me, Action::recv(d.xfer(g[(rel - mask + root) % m], blocks.to_vec(), false)));
                break;
            }
            mask <<= 1;
        }
        mask >>= 1;
        while mask > 0 {
            if rel + mask < m {
                push(p, me, Action::send(d.xfer(g[(rel + mask + root) % m], blocks.to_vec(), false)));
            }
            mask >>= 1;
        }
    }
}

/// Binomial scatter of chunk `c` of `blocks` to relative rank c (the first half of the
/// scatter-allgather broadcast, and MPICH's scatter).
fn scatter_tree(p: &mut Programs, g: &[u32], root: usize, blocks: &[u32], d: Data) {
    let m = g.len();
    for rel in 0..m {
        let me = g[(rel + root) % m];
        let mut mask = 1;
        while mask < m {
            if rel & mask != 0 {
                push(
                    p,
                    me,
                    Action::recv(d.xfer(g[(rel - mask + root) % m], chunks(blocks, m, rel, rel + mask), false)),
                );
                break;
            }
            mask <<= 1;
        }
        mask >>= 1;
        while mask > 0 {
            if rel + mask < m {
                let to = g[(rel + mask + root) % m];
                push(p, me, Action::send(d.xfer(to, chunks(blocks, m, rel + mask, rel + 2 * mask), false)));
            }
            mask >>= 1;
        }
    }
}

/// Ring allgather: relative rank c starts with chunk c; m-1 steps to the right neighbour.
fn allgather_ring(p: &mut Programs, g: &[u32], root: usize, blocks: &[u32], d: Data) {
    let m = g.len();
    if m < 2 {
        return;
    }
    let (group, blocks): (Arc<[u32]>, Arc<[u32]>) = (g.into(), blocks.into());
    for rel in 0..m {
        let ring =
            Pattern::Ring { group: group.clone(), root: root as u32, rel: rel as u32, blocks: blocks.clone(), d };
        push(p, g[(rel + root) % m], Action::Rounds(ring));
    }
}

/// Recursive-doubling allgather (m a power of two): exchange aligned groups of chunks.
fn allgather_rd(p: &mut Programs, g: &[u32], root: usize, blocks: &[u32], d: Data) {
    let m = g.len();
    for rel in 0..m {
        let me = g[(rel + root) % m];
        let mut mask = 1;
        while mask < m {
            let peer = rel ^ mask;
            let mine = rel & !(mask - 1);
            let theirs = peer & !(mask - 1);
            let s = d.xfer(g[(peer + root) % m], chunks(blocks, m, mine, mine + mask), false);
            let r = d.xfer(g[(peer + root) % m], chunks(blocks, m, theirs, theirs + mask), false);
            push(p, me, Action::sendrecv(s, r));
            mask <<= 1;
        }
    }
}

/// Scatter then ring allgather (MPICH: long messages, or medium on a non-power-of-two group).
pub fn bcast_scatter_ring(p: &mut Programs, g: &[u32], root: usize, blocks: &[u32], d: Data) {
    scatter_tree(p, g, root, blocks, d);
    allgather_ring(p, g, root, blocks, d);
}

/// Scatter then recursive-doubling allgather (MPICH: medium messages, power-of-two group).
pub fn bcast_scatter_rd(p: &mut Programs, g: &[u32], root: usize, blocks: &[u32], d: Data) {
    scatter_tree(p, g, root, blocks, d);
    allgather_rd(p, g, root, blocks, d);
}

/// Binomial scatter of each member's own block (`own[i]` for g[i]) from g[root].
pub fn scatter_binomial(p: &mut Programs, g: &[u32], root: usize, own: &[Vec<u32>], d: Data) {
    let m = g.len();
    // Reorder the blocks by relative rank so the tree's contiguous ranges are subtrees.
    let by_rel: Vec<Vec<u32>> = (0..m).map(|rel| own[(rel + root) % m].clone()).collect();
    for rel in 0..m {
        let me = g[(rel + root) % m];
        let span = |a: usize, b: usize| -> Vec<u32> { by_rel[a..b.min(m)].concat() };
        let mut mask = 1;
        while mask < m {
            if rel & mask != 0 {
                push(p, me, Action::recv(d.xfer(g[(rel - mask + root) % m], span(rel, rel + mask), false)));
                break;
            }
            mask <<= 1;
        }
        mask >>= 1;
        while mask > 0 {
            if rel + mask < m {
                push(p, me, Action::send(d.xfer(g[(rel + mask + root) % m], span(rel + mask, rel + 2 * mask), false)));
            }
            mask >>= 1;
        }
    }
}

/// Linear scatter: the root posts one send per member in a single round.
pub fn scatter_linear(p: &mut Programs, g: &[u32], root: usize, own: &[Vec<u32>], d: Data) {
    let sends = (0..g.len()).filter(|&i| i != root).map(|i| d.xfer(g[i], own[i].clone(), false)).collect();
    push(p, g[root], Action::Round { sends, recvs: Vec::new() });
    for i in (0..g.len()).filter(|&i| i != root) {
        push(p, g[i], Action::recv(d.xfer(g[root], own[i].clone(), false)));
    }
}

/// Binomial reduce of `blocks` to g[root] (used by the hierarchical allreduce).
pub fn reduce_binomial(p: &mut Programs, g: &[u32], root: usize, blocks: &[u32], d: Data) {
    let m = g.len();
    for rel in 0..m {
        let me = g[(rel + root) % m];
        let mut mask = 1;
        while mask < m {
            if rel & mask != 0 {
                push(p, me, Action::send(d.xfer(g[(rel - mask + root) % m], blocks.to_vec(), false)));
                break;
            }
            if rel + mask < m {
                push(p, me, Action::recv(d.xfer(g[(rel + mask + root) % m], blocks.to_vec(), true)));
            }
            mask <<= 1;
        }
    }
}

/// Allreduce: fold the group to a power of two, run `core` on the survivors, unfold.
fn allreduce_pof2(p: &mut Programs, g: &[u32], blocks: &[u32], d: Data, core: fn(&mut Programs, &[u32], &[u32], Data)) {
    let m = g.len();
    let pof2 = 1usize << (usize::BITS - 1 - m.leading_zeros());
    let rem = m - pof2;
    for i in 0..2 * rem {
        if i % 2 == 0 {
            push(p, g[i], Action::send(d.xfer(g[i + 1], blocks.to_vec(), false)));
        } else {
            push(p, g[i], Action::recv(d.xfer(g[i - 1], blocks.to_vec(), true)));
        }
    }
    let survivors: Vec<u32> = (0..pof2).map(|nr| if nr < rem { g[2 * nr + 1] } else { g[nr + rem] }).collect();
    core(p, &survivors, blocks, d);
    for i in 0..2 * rem {
        if i % 2 == 1 {
            push(p, g[i], Action::send(d.xfer(g[i - 1], blocks.to_vec(), false)));
        } else {
            push(p, g[i], Action::recv(d.xfer(g[i + 1], blocks.to_vec(), false)));
        }
    }
}

fn rd_core(p: &mut Programs, g: &[u32], blocks: &[u32], d: Data) {
    let m = g.len();
    let mut mask = 1;
    while mask < m {
        for nr in 0..m {
            let peer = g[nr ^ mask];
            push(p, g[nr], Action::sendrecv(d.xfer(peer, blocks.to_vec(), false), d.xfer(peer, blocks.to_vec(), true)));
        }
        mask <<= 1;
    }
}

/// Reduce-scatter by recursive halving then allgather by recursive doubling (Rabenseifner).
fn rabenseifner_core(p: &mut Programs, g: &[u32], blocks: &[u32], d: Data) {
    let m = g.len();
    // Window of chunks each survivor is responsible for, per step (to replay in reverse).
    let mut win: Vec<(usize, usize)> = vec![(0, m); m];
    let mut history: Vec<Vec<(usize, usize)>> = Vec::new();
    let mut mask = 1;
    while mask < m {
        history.push(win.clone());
        let mut next = win.clone();
        for nr in 0..m {
            let peer = nr ^ mask;
            let (lo, hi) = win[nr];
            let mid = (lo + hi) / 2;
            let (keep, give) = if nr < peer { ((lo, mid), (mid, hi)) } else { ((mid, hi), (lo, mid)) };
            let s = d.xfer(g[peer], chunks(blocks, m, give.0, give.1), false);
            let r = d.xfer(g[peer], chunks(blocks, m, keep.0, keep.1), true);
            push(p, g[nr], Action::sendrecv(s, r));
            next[nr] = keep;
        }
        win = next;
        mask <<= 1;
    }
    while let Some(prev) = history.pop() {
        mask >>= 1;
        for nr in 0..m {
            let peer = nr ^ mask;
            let s = d.xfer(g[peer], chunks(blocks, m, win[nr].0, win[nr].1), false);
            let r = d.xfer(g[peer], chunks(blocks, m, win[peer].0, win[peer].1), false);
            push(p, g[nr], Action::sendrecv(s, r));
        }
        win = prev;
    }
}

/// Recursive-doubling allreduce (MPICH: up to 2 KB).
pub fn allreduce_rd(p: &mut Programs, g: &[u32], blocks: &[u32], d: Data) {
    allreduce_pof2(p, g, blocks, d, rd_core);
}

/// Rabenseifner allreduce (MPICH: above 2 KB).
pub fn allreduce_rabenseifner(p: &mut Programs, g: &[u32], blocks: &[u32], d: Data) {
    allreduce_pof2(p, g, blocks, d, rabenseifner_core);
}

/// Alltoall buffer layout (blocks of `per_peer` bytes): send blocks 0..n, receive blocks n..2n,
/// Bruck's work area 2n..3n, then the hierarchical algorithm's staging area.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct A2a {
    pub n: u32,
    pub per_peer: u64,
}

impl A2a {
    pub fn send_blk(&self, dst: u32) -> u32 {
        dst
    }
    pub fn recv_blk(&self, src: u32) -> u32 {
        self.n + src
    }
    pub fn tmp_blk(&self, i: u32) -> u32 {
        2 * self.n + i
    }
    pub fn stage_blk(&self, src: u32, dst: u32) -> u32 {
        3 * self.n + src * self.n + dst
    }
    /// Blocks an all-to-all's check buffer holds (the tests size their buffers by it).
    #[cfg(test)]
    pub fn nblocks(&self) -> u32 {
        3 * self.n + self.n * self.n
    }
    pub fn xfer(&self, peer: u32, blocks: Vec<u32>) -> Xfer {
        Xfer::new(peer, blocks.len() as u64 * self.per_peer, blocks, false)
    }
}

/// Pairwise exchange over a group (MPICH: long messages): xor partners for a power-of-two
/// group, otherwise send to +i and receive from -i.
pub fn alltoall_pairwise(p: &mut Programs, g: &[u32], a: &A2a) {
    let group: Arc<[u32]> = g.into();
    for (i, &me) in g.iter().enumerate() {
        push(p, me, Action::Local { moves: vec![(a.send_blk(me), a.recv_blk(me))], bytes: a.per_peer });
        if g.len() > 1 {
            let pairwise = Pattern::Pairwise { group: group.clone(), i: i as u32, a: *a };
            push(p, me, Action::Rounds(pairwise));
        }
    }
}

/// The rounds of one rank in a regular exchange (see `Action::Rounds`).
#[derive(Debug, Clone, PartialEq)]
pub enum Pattern {
    /// Ring allgather over `group` (global ranks) seen from the member `rel` places after
    /// `group[root]`: in round k it sends chunk rel - k of `blocks` (split in group-size chunks)
    /// to the next member and receives chunk rel - k - 1 from the previous one.
    Ring { group: Arc<[u32]>, root: u32, rel: u32, blocks: Arc<[u32]>, d: Data },
    /// Pairwise alltoall over `group` seen from member `i`: in round k it exchanges with the xor
    /// partner i ^ (k + 1) in a power-of-two group, otherwise it sends to i + k + 1 and receives
    /// from i - k - 1.
    Pairwise { group: Arc<[u32]>, i: u32, a: A2a },
    /// Scattered alltoall seen from member `i`: round k covers steps s of k * batch + 1 ..=
    /// (k + 1) * batch, sending to i + s and receiving from i - s.
    Scattered { group: Arc<[u32]>, i: u32, a: A2a, batch: u32 },
}

impl Pattern {
    pub fn rounds(&self) -> u32 {
        match self {
            Pattern::Ring { group, .. } | Pattern::Pairwise { group, .. } => group.len() as u32 - 1,
            Pattern::Scattered { group, batch, .. } => (group.len() as u32 - 1).div_ceil(*batch),
        }
    }

    /// Appends round `k`'s sends and receives, with their blocks if `with_blocks` (the checker
    /// needs them; the timing engine only the bytes, which it then gets without allocating).
    pub fn fill(&self, k: u32, with_blocks: bool, sends: &mut Vec<Xfer>, recvs: &mut Vec<Xfer>) {
        let keep = |v: &[u32]| if with_blocks { v.to_vec() } else { Vec::new() };
        match self {
            Pattern::Ring { group, root, rel, blocks, d } => {
                let (m, rel, root, s) = (group.len(), *rel as usize, *root as usize, k as usize);
                let send = chunk(blocks, m, (rel + m - s) % m);
                let recv = chunk(blocks, m, (rel + 2 * m - s - 1) % m);
                let bytes = |c: &[u32]| block_bytes(d.total, d.nblocks, c.iter().copied());
                let (right, left) = (group[(rel + 1 + root) % m], group[(rel + m - 1 + root) % m]);
                sends.push(Xfer::new(right, bytes(send), keep(send), false));
                recvs.push(Xfer::new(left, bytes(recv), keep(recv), false));
            }
            Pattern::Pairwise { group, i, a } => {
                let (m, i, s) = (group.len(), *i as usize, k as usize + 1);
                let (to, from) = if m.is_power_of_two() { (i ^ s, i ^ s) } else { ((i + s) % m, (i + m - s) % m) };
                let (to, from) = (group[to], group[from]);
                sends.push(Xfer::new(to, a.per_peer, keep(&[a.send_blk(to)]), false));
                recvs.push(Xfer::new(from, a.per_peer, keep(&[a.recv_blk(from)]), false));
            }
            Pattern::Scattered { group, i, a, batch } => {
                let (m, i, batch) = (group.len(), *i as usize, *batch as usize);
                let steps = k as usize * batch + 1..((k as usize + 1) * batch + 1).min(m);
                for s in steps.clone() {
                    let to = group[(i + s) % m];
                    sends.push(Xfer::new(to, a.per_peer, keep(&[a.send_blk(to)]), false));
                }
                for s in steps {
                    let from = group[(i + m - s) % m];
                    recvs.push(Xfer::new(from, a.per_peer, keep(&[a.recv_blk(from)]), false));
                }
            }
        }
    }
}

/// Scattered isend/irecv in batches of `batch` peers (MPICH: medium messages; batch 32 is
/// MPIR_CVAR_ALLTOALL_THROTTLE's default).
pub fn alltoall_scattered(p: &mut Programs, g: &[u32], a: &A2a, batch: usize) {
    let group: Arc<[u32]> = g.into();
    for (i, &me) in g.iter().enumerate() {
        push(p, me, Action::Local { moves: vec![(a.send_blk(me), a.recv_blk(me))], bytes: a.per_peer });
        if g.len() > 1 {
            let scattered = Pattern::Scattered { group: group.clone(), i: i as u32, a: *a, batch: batch.max(1) as u32 };
            push(p, me, Action::Rounds(scattered));
        }
    }
}

/// Bruck's algorithm (MPICH: up to 256 bytes with 8+ ranks): log2(m) steps of packed blocks.
/// Works on the whole world only (block numbers are ranks).
pub fn alltoall_bruck(p: &mut Programs, g: &[u32], a: &A2a) {
    let m = g.len() as u32;
    for (i, &me) in g.iter().enumerate() {
        let r = i as u32;
        let rot = (0..m).map(|k| (a.send_blk(g[((r + k) % m) as usize]), a.tmp_blk(k))).collect();
        push(p, me, Action::Local { moves: rot, bytes: a.per_peer * m as u64 });
        let mut k = 1;
        while k < m {
            let set: Vec<u32> = (0..m).filter(|x| x & k != 0).map(|x| a.tmp_blk(x)).collect();
            let to = g[((r + k) % m) as usize];
            let from = g[((r + m - k) % m) as usize];
            push(p, me, Action::sendrecv(a.xfer(to, set.clone()), a.xfer(from, set)));
            k <<= 1;
        }
        let back = (0..m).map(|k| (a.tmp_blk(k), a.recv_blk(g[((r + m - k) % m) as usize]))).collect();
        push(p, me, Action::Local { moves: back, bytes: a.per_peer * m as u64 });
    }
}

/// Open MPI 4.1's barrier (`ompi_coll_tuned_barrier_intra_dec_fixed`): basic_linear for 4 to 7
/// ranks (everyone reports to the first rank, which then releases everyone), recursive doubling
/// below 64 ranks (two_procs for 2 is its one exchange; ranks beyond the largest power of two
/// hand over to a partner first and are released by it at the end), and from 64 ranks bruck,
/// which is the dissemination barrier (its tree for 256-511 ranks runs as bruck here).
pub fn barrier_ompi(p: &mut Programs, g: &[u32]) {
    let n = g.len();
    let zero = |r: u32| Xfer::plain(r, 0);
    if n >= 64 {
        return barrier(p, g);
    }
    if (4..8).contains(&n) {
        for &r in &g[1..] {
            push(p, r, Action::send(zero(g[0])));
            push(p, r, Action::recv(zero(g[0])));
        }
        push(p, g[0], Action::Round { sends: Vec::new(), recvs: g[1..].iter().map(|&r| zero(r)).collect() });
        push(p, g[0], Action::Round { sends: g[1..].iter().map(|&r| zero(r)).collect(), recvs: Vec::new() });
        return;
    }
    let pof2 = if n.is_power_of_two() { n } else { n.next_power_of_two() / 2 };
    for (i, &me) in g.iter().enumerate() {
        if i >= pof2 {
            push(p, me, Action::send(zero(g[i - pof2])));
            push(p, me, Action::recv(zero(g[i - pof2])));
            continue;
        }
        if i + pof2 < n {
            push(p, me, Action::recv(zero(g[i + pof2])));
        }
        let mut mask = 1;
        while mask < pof2 {
            let peer = g[i ^ mask];
            push(p, me, Action::sendrecv(zero(peer), zero(peer)));
            mask <<= 1;
        }
        if i + pof2 < n {
            push(p, me, Action::send(zero(g[i + pof2])));
        }
    }
}

/// Dissemination barrier (MPICH): ceil(log2 m) rounds of zero-byte messages.
pub fn barrier(p: &mut Programs, g: &[u32]) {
    let m = g.len();
    for (i, &me) in g.iter().enumerate() {
        let mut k = 1;
        while k < m {
            push(p, me, Action::sendrecv(Xfer::plain(g[(i + k) % m], 0), Xfer::plain(g[(i + m - k) % m], 0)));
            k <<= 1;
        }
    }
}
