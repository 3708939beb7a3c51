//! Collective operations on the world communicator: the algorithm choice (the library's
//! size-based defaults of [`super::coll_rules`], the WAN-aware hierarchical variants, or
//! `auto`), the hierarchical algorithms, and Open MPI's unsegmented broadcast trees.
//!
//! Hierarchical (leader-based, two-level) variants cross the long-haul link once per message:
//! the lowest rank of each cluster is its leader; data crosses only between the root (or its
//! cluster's leader) and the other cluster's leader, and each cluster then runs the flat
//! default among its own ranks. This is the design [S1] section 3.4 evaluates ("hierarchical
//! (one WAN crossing) vs default"). The root posts its WAN send without waiting for it
//! (isend, local tree, wait), so its own cluster does not wait for the long round trip.

use serde::{Deserialize, Serialize};

use super::coll_flat::{self as flat, A2a, Data};
use super::coll_rules::{self as rules, ompi_tree, CollRules, OmpiBcast};
use super::placement::Layout;
use super::program::{Action, Programs, Xfer};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Collective {
    Bcast,
    Allreduce,
    Alltoall,
    Scatter,
    Barrier,
}

/// Algorithm requested by the user; the flat names pin one algorithm (tests, what-ifs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Algo {
    Default,
    Hierarchical,
    Auto,
    Binomial,
    ScatterRing,
    ScatterRd,
    RecursiveDoubling,
    Rabenseifner,
    Pairwise,
    Scattered,
    Bruck,
    Linear,
    Chain,
    BinaryTree,
    Knomial,
}

impl Algo {
    pub fn name(self) -> &'static str {
        match self {
            Algo::Default => "default",
            Algo::Hierarchical => "hierarchical",
            Algo::Auto => "auto",
            Algo::Binomial => "binomial",
            Algo::ScatterRing => "scatter-ring",
            Algo::ScatterRd => "scatter-rd",
            Algo::RecursiveDoubling => "recursive-doubling",
            Algo::Rabenseifner => "rabenseifner",
            Algo::Pairwise => "pairwise",
            Algo::Scattered => "scattered",
            Algo::Bruck => "bruck",
            Algo::Linear => "linear",
            Algo::Chain => "chain",
            Algo::BinaryTree => "binary-tree",
            Algo::Knomial => "knomial",
        }
    }

    /// Whether `self` can run collective `c`: the policies always, a flat algorithm only for
    /// its own collective.
    pub fn fits(self, c: Collective) -> bool {
        matches!(self, Algo::Default | Algo::Hierarchical | Algo::Auto) || Algo::flat_for(c).contains(&self)
    }

    /// The flat algorithms valid for a collective.
    pub fn flat_for(c: Collective) -> &'static [Algo] {
        match c {
            Collective::Bcast => &[
                Algo::Binomial,
                Algo::ScatterRing,
                Algo::ScatterRd,
                Algo::Linear,
                Algo::Chain,
                Algo::BinaryTree,
                Algo::Knomial,
            ],
            Collective::Allreduce => &[Algo::RecursiveDoubling, Algo::Rabenseifner],
            Collective::Alltoall => &[Algo::Pairwise, Algo::Scattered, Algo::Bruck, Algo::Linear],
            Collective::Scatter => &[Algo::Binomial, Algo::Linear],
            Collective::Barrier => &[],
        }
    }
}

/// When `auto` picks the hierarchical algorithm: the communicator spans both clusters and
/// either the one-way delay or the message is large enough that extra WAN crossings cost more
/// than the leader's extra intra-cluster step. Defaults are stated in `MpiParams`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AutoRule {
    pub min_delay_us: f64,
    pub min_bytes: u64,
}

/// How each collective call of a run picks its algorithm: the run's `--algo`, the library's
/// rules for `default` (and inside the hierarchical algorithms), and for `auto` the rule and
/// the one-way delay of the path it is applied to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AlgoChoice {
    pub algo: Algo,
    pub one_way_delay_us: f64,
    pub auto: AutoRule,
    pub rules: CollRules,
    /// The hierarchical bcast sends its WAN message in pieces of at most this many bytes
    /// (None: one message).
    pub wan_chunk_bytes: Option<u64>,
}

impl AlgoChoice {
    /// The library's default whatever the run pinned (the barriers OSU puts between timed calls).
    pub fn library_default(self) -> AlgoChoice {
        AlgoChoice { algo: Algo::Default, ..self }
    }
}

/// The buffer size (in checksum blocks) a collective's data check needs for `n` ranks.
#[cfg(test)]
pub fn nblocks(c: Collective, n: u32) -> u32 {
    match c {
        Collective::Alltoall => A2a { n, per_peer: 0 }.nblocks(),
        _ => n,
    }
}

/// Append one call of collective `c` (all ranks of `layout`) to the programs. `bytes` is the
/// OSU message size: the whole buffer for bcast/allreduce, per rank for scatter and alltoall.
/// A flat algorithm of another collective (an application or trace pins one for all its
/// collectives) gives way to the default. Returns the algorithm actually used.
pub fn emit(p: &mut Programs, layout: &Layout, c: Collective, root: u32, bytes: u64, choice: AlgoChoice) -> Algo {
    let world: Vec<u32> = (0..layout.ranks()).collect();
    let n = world.len();
    let spans = layout.spans_clusters();
    let AlgoChoice { algo, one_way_delay_us, auto, rules: lib, wan_chunk_bytes } = choice;
    let default = || rules::select(lib, c, bytes, n);
    let algo = match algo {
        Algo::Auto if spans && (one_way_delay_us >= auto.min_delay_us || bytes >= auto.min_bytes) => Algo::Hierarchical,
        Algo::Auto | Algo::Default => default(),
        Algo::Hierarchical if !spans => default(),
        Algo::ScatterRd if c == Collective::Bcast && !n.is_power_of_two() => Algo::ScatterRing,
        a if a.fits(c) => a,
        _ => default(),
    };
    if c == Collective::Barrier {
        match lib {
            CollRules::Mpich2 => flat::barrier(p, &world),
            CollRules::OpenMpi41 => flat::barrier_ompi(p, &world),
        }
        return Algo::Default;
    }
    let all: Vec<u32> = (0..n as u32).collect();
    let root = root as usize;
    match c {
        Collective::Bcast => {
            let d = Data { total: bytes, nblocks: n as u32 };
            match algo {
                Algo::Hierarchical => bcast_hier(p, layout, root, &all, d, (lib, wan_chunk_bytes)),
                a => flat_bcast(p, a, &world, root, &all, d, lib),
            }
        }
        Collective::Allreduce => {
            let d = Data { total: bytes, nblocks: n as u32 };
            match algo {
                Algo::Hierarchical => allreduce_hier(p, layout, &all, d, lib),
                Algo::Rabenseifner => flat::allreduce_rabenseifner(p, &world, &all, d),
                _ => flat::allreduce_rd(p, &world, &all, d),
            }
        }
        Collective::Scatter => {
            let d = Data { total: bytes * n as u64, nblocks: n as u32 };
            let own: Vec<Vec<u32>> = world.iter().map(|&r| vec![r]).collect();
            match algo {
                Algo::Hierarchical => scatter_hier(p, layout, root, d),
                Algo::Linear => flat::scatter_linear(p, &world, root, &own, d),
                _ => flat::scatter_binomial(p, &world, root, &own, d),
            }
        }
        Collective::Alltoall => {
            let a = A2a { n: n as u32, per_peer: bytes };
            match algo {
                Algo::Hierarchical => alltoall_hier(p, layout, &a),
                Algo::Bruck => flat::alltoall_bruck(p, &world, &a),
                // Open MPI's linear alltoall: every send and receive posted at once.
                Algo::Linear => flat::alltoall_scattered(p, &world, &a, n),
                Algo::Scattered => flat::alltoall_scattered(p, &world, &a, 32),
                _ => flat::alltoall_pairwise(p, &world, &a),
            }
        }
        Collective::Barrier => unreachable!("handled above"),
    }
    algo
}

fn flat_bcast(p: &mut Programs, a: Algo, g: &[u32], root: usize, blocks: &[u32], d: Data, lib: CollRules) {
    let a = if a == Algo::Default { rules::select(lib, Collective::Bcast, d.total, g.len()) } else { a };
    match a {
        Algo::ScatterRing => flat::bcast_scatter_ring(p, g, root, blocks, d),
        Algo::ScatterRd if g.len().is_power_of_two() => flat::bcast_scatter_rd(p, g, root, blocks, d),
        Algo::ScatterRd => flat::bcast_scatter_ring(p, g, root, blocks, d),
        Algo::Linear => bcast_tree(p, OmpiBcast::BasicLinear, g, root, blocks, d),
        Algo::Chain => bcast_tree(p, OmpiBcast::Chain, g, root, blocks, d),
        Algo::BinaryTree => bcast_tree(p, OmpiBcast::BinaryTree, g, root, blocks, d),
        Algo::Knomial => bcast_tree(p, OmpiBcast::Knomial, g, root, blocks, d),
        _ => flat::bcast_binomial(p, g, root, blocks, d),
    }
}

/// Open MPI's unsegmented tree broadcast (`ompi_coll_base_bcast_intra_generic` with one
/// segment, as the fixed rules run it): a rank receives the whole message from its parent, then
/// posts a send to every child and waits for all. Tree shapes: [`ompi_tree`].
fn bcast_tree(p: &mut Programs, shape: OmpiBcast, g: &[u32], root: usize, blocks: &[u32], d: Data) {
    let n = g.len();
    let rank = |v: usize| g[(v + root) % n];
    for v in 0..n {
        let (parent, children) = ompi_tree(shape, n, v).expect("linear, chain and the trees have a shape");
        let prog = &mut p.ranks[rank(v) as usize];
        if let Some(up) = parent {
            prog.push(Action::recv(d.xfer(rank(up), blocks.to_vec(), false)));
        }
        if !children.is_empty() {
            let sends = children.iter().map(|&c| d.xfer(rank(c), blocks.to_vec(), false)).collect();
            prog.push(Action::Round { sends, recvs: Vec::new() });
        }
    }
}

/// The root's cluster, the other cluster, and the other cluster's leader.
fn sides(layout: &Layout, root: u32) -> (Vec<u32>, Vec<u32>, u32) {
    let home = layout.members(layout.cluster(root));
    let away = layout.members(1 - layout.cluster(root));
    let leader = away[0];
    (home, away, leader)
}

/// The root posts the message to the other cluster's leader (in pieces of at most `chunk`
/// bytes, all at once, when it is larger: `longhaul.mpi.HierComm`'s WAN pieces, each small
/// enough to go eagerly, so none waits for a rendezvous round trip), runs its own cluster's
/// broadcast and waits; the leader receives every piece, then broadcasts in its cluster.
fn bcast_hier(p: &mut Programs, layout: &Layout, root: usize, blocks: &[u32], d: Data, lib: (CollRules, Option<u64>)) {
    let (lib, chunk) = lib;
    let (home, away, leader) = sides(layout, root as u32);
    match chunk.filter(|&c| d.total > c) {
        None => {
            p.push(
                root as u32,
                Action::Post { sends: vec![d.xfer(leader, blocks.to_vec(), false)], recvs: Vec::new() },
            );
            p.push(leader, Action::recv(d.xfer(root as u32, blocks.to_vec(), false)));
        }
        Some(c) => {
            // The first piece carries the checked blocks; the others are bytes.
            let piece = |i: u64, peer: u32| {
                let bytes = c.min(d.total - i * c);
                if i == 0 {
                    Xfer::new(peer, bytes, blocks.to_vec(), false)
                } else {
                    Xfer::plain(peer, bytes)
                }
            };
            let n = d.total.div_ceil(c);
            p.push(root as u32, Action::Post { sends: (0..n).map(|i| piece(i, leader)).collect(), recvs: Vec::new() });
            p.push(leader, Action::Post { sends: Vec::new(), recvs: (0..n).map(|i| piece(i, root as u32)).collect() });
            p.push(leader, Action::WaitAll);
        }
    }
    let hr = home.iter().position(|&r| r as usize == root).expect("root is home");
    flat_bcast(p, Algo::Default, &home, hr, blocks, d, lib);
    flat_bcast(p, Algo::Default, &away, 0, blocks, d, lib);
    p.push(root as u32, Action::WaitAll);
}

fn allreduce_hier(p: &mut Programs, layout: &Layout, blocks: &[u32], d: Data, lib: CollRules) {
    let groups = [layout.members(0), layout.members(1)];
    for g in &groups {
        flat::reduce_binomial(p, g, 0, blocks, d);
    }
    let (la, lb) = (groups[0][0], groups[1][0]);
    for (me, peer) in [(la, lb), (lb, la)] {
        p.ranks[me as usize]
            .push(Action::sendrecv(d.xfer(peer, blocks.to_vec(), false), d.xfer(peer, blocks.to_vec(), true)));
    }
    for g in &groups {
        flat_bcast(p, Algo::Default, g, 0, blocks, d, lib);
    }
}

fn scatter_hier(p: &mut Programs, layout: &Layout, root: usize, d: Data) {
    let (home, away, leader) = sides(layout, root as u32);
    let away_blocks: Vec<u32> = away.clone();
    p.push(root as u32, Action::Post { sends: vec![d.xfer(leader, away_blocks.clone(), false)], recvs: Vec::new() });
    p.push(leader, Action::recv(d.xfer(root as u32, away_blocks, false)));
    let own = |g: &[u32]| -> Vec<Vec<u32>> { g.iter().map(|&r| vec![r]).collect() };
    let hr = home.iter().position(|&r| r as usize == root).expect("root is home");
    flat::scatter_binomial(p, &home, hr, &own(&home), d);
    flat::scatter_binomial(p, &away, 0, &own(&away), d);
    p.push(root as u32, Action::WaitAll);
}

/// Alltoall with per-cluster aggregation: pairwise inside each cluster; every rank hands its
/// blocks for the other cluster to its leader; the leaders swap one aggregated message over the
/// WAN; each leader deals the received blocks to its ranks.
fn alltoall_hier(p: &mut Programs, layout: &Layout, a: &A2a) {
    let groups = [layout.members(0), layout.members(1)];
    for c in 0..2 {
        let (mine, other) = (&groups[c], &groups[1 - c]);
        flat::alltoall_pairwise(p, mine, a);
        let leader = mine[0];
        let gathered = |src: u32| -> Vec<u32> { other.iter().map(|&dst| a.stage_blk(src, dst)).collect() };
        let direct = || -> Vec<u32> { other.iter().map(|&dst| a.send_blk(dst)).collect() };
        let mut recvs = Vec::new();
        for &r in mine {
            if r == leader {
                let moves = direct().into_iter().zip(gathered(r)).collect();
                p.push(r, Action::Local { moves, bytes: a.per_peer * other.len() as u64 });
            } else {
                p.push(r, Action::send(Xfer::new(leader, a.per_peer * other.len() as u64, direct(), false)));
                recvs.push(Xfer::new(r, a.per_peer * other.len() as u64, gathered(r), false));
            }
        }
        p.push(leader, Action::Round { sends: Vec::new(), recvs });
    }
    let (la, lb) = (groups[0][0], groups[1][0]);
    for c in 0..2 {
        let (mine, other) = (&groups[c], &groups[1 - c]);
        let (me, peer) = if c == 0 { (la, lb) } else { (lb, la) };
        let out: Vec<u32> =
            mine.iter().flat_map(|&s| other.iter().map(move |&t| (s, t))).map(|(s, t)| a.stage_blk(s, t)).collect();
        let inn: Vec<u32> =
            other.iter().flat_map(|&s| mine.iter().map(move |&t| (s, t))).map(|(s, t)| a.stage_blk(s, t)).collect();
        p.push(me, Action::sendrecv(a.xfer(peer, out), a.xfer(peer, inn)));
    }
    for c in 0..2 {
        let (mine, other) = (&groups[c], &groups[1 - c]);
        let leader = mine[0];
        let mut sends = Vec::new();
        for &t in mine {
            let staged: Vec<u32> = other.iter().map(|&s| a.stage_blk(s, t)).collect();
            let final_: Vec<u32> = other.iter().map(|&s| a.recv_blk(s)).collect();
            if t == leader {
                let moves = staged.into_iter().zip(final_).collect();
                p.push(t, Action::Local { moves, bytes: a.per_peer * other.len() as u64 });
            } else {
                sends.push(Xfer::new(t, a.per_peer * other.len() as u64, staged, false));
                p.push(t, Action::recv(Xfer::new(leader, a.per_peer * other.len() as u64, final_, false)));
            }
        }
        p.push(leader, Action::Round { sends, recvs: Vec::new() });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mpi::placement::Placement;
    use crate::mpi::program::{check, Sends};

    const NO_AUTO: AutoRule = AutoRule { min_delay_us: f64::INFINITY, min_bytes: u64::MAX };

    fn pinned(algo: Algo) -> AlgoChoice {
        AlgoChoice { algo, one_way_delay_us: 0.0, auto: NO_AUTO, rules: CollRules::Mpich2, wan_chunk_bytes: None }
    }

    fn run(layout: &Layout, c: Collective, root: u32, bytes: u64, algo: Algo) -> Vec<Vec<u64>> {
        let n = layout.ranks();
        let mut p = Programs::new(n as usize);
        emit(&mut p, layout, c, root, bytes, pinned(algo));
        let nb = nblocks(c, n) as usize;
        // Rank r's initial block b: a value unique to (r, b).
        let mut bufs: Vec<Vec<u64>> =
            (0..n as u64).map(|r| (0..nb as u64).map(|b| (r + 1) * 1_000_003 + b * 7919).collect()).collect();
        if matches!(c, Collective::Bcast | Collective::Scatter) {
            for (r, buf) in bufs.iter_mut().enumerate() {
                if r as u32 != root {
                    buf.iter_mut().for_each(|v| *v = 0);
                }
            }
        }
        // Correct whatever the eager threshold: with every send buffered, and with every send a
        // rendezvous that waits for its receive to be posted (the same data either way).
        let mut rndv_bufs = bufs.clone();
        check(&p, &mut bufs, Sends::Buffered).unwrap_or_else(|e| panic!("{c:?} {algo:?} n={n}: {}", e.0));
        let all_rndv = Sends::Rendezvous { eager_threshold_bytes: 0, is_rendezvous: &|_, _, _| true };
        check(&p, &mut rndv_bufs, all_rndv).unwrap_or_else(|e| panic!("{c:?} {algo:?} n={n}, rendezvous: {}", e.0));
        assert_eq!(bufs, rndv_bufs);
        bufs
    }

    fn init(r: u64, b: u64) -> u64 {
        (r + 1) * 1_000_003 + b * 7919
    }

    #[test]
    fn every_algorithm_computes_the_same_result() {
        for (nodes, ppn, n, place) in [
            (2, 2, 8, Placement::Block),
            (3, 2, 12, Placement::Block),
            (2, 2, 7, Placement::Cyclic),
            (4, 2, 16, Placement::Block),
            (1, 1, 2, Placement::Block),
        ] {
            let layout = Layout::new(nodes, ppn, n, &place).unwrap();
            let n = n as u64;
            for c in [Collective::Bcast, Collective::Allreduce, Collective::Scatter, Collective::Alltoall] {
                let root = if c == Collective::Alltoall || c == Collective::Allreduce {
                    0
                } else {
                    (n / 2 + 1) as u32 % n as u32
                };
                let mut algos: Vec<Algo> = Algo::flat_for(c).to_vec();
                algos.extend([Algo::Default, Algo::Hierarchical]);
                for &a in &algos {
                    let bufs = run(&layout, c, root, 1000, a);
                    for (r, buf) in bufs.iter().enumerate() {
                        let r = r as u64;
                        match c {
                            Collective::Bcast => {
                                assert!(buf.iter().enumerate().all(|(b, &v)| v == init(root as u64, b as u64)), "{a:?}")
                            }
                            Collective::Allreduce => {
                                for (b, &v) in buf.iter().enumerate() {
                                    let want = (0..n).fold(0u64, |s, q| s.wrapping_add(init(q, b as u64)));
                                    assert_eq!(v, want, "{a:?} rank {r} block {b}");
                                }
                            }
                            Collective::Scatter => assert_eq!(buf[r as usize], init(root as u64, r), "{a:?} rank {r}"),
                            Collective::Alltoall => {
                                for src in 0..n {
                                    assert_eq!(
                                        buf[(n + src) as usize],
                                        init(src, r),
                                        "{a:?} n={n} rank {r} from {src}"
                                    );
                                }
                            }
                            Collective::Barrier => {}
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn open_mpi_defaults_pick_its_algorithms_flat_and_inside_the_clusters() {
        // 16 ranks: knomial below 4 KiB, binomial below 1 MiB, scatter_allgather from 1 MiB; each
        // cluster of 8 inside the hierarchical bcast runs knomial, then basic_linear from 32 KiB.
        let layout = Layout::new(4, 2, 16, &Placement::Block).unwrap();
        let root = 3u32;
        for (bytes, want) in [(1024, Algo::Knomial), (1 << 16, Algo::Binomial), (1 << 20, Algo::ScatterRd)] {
            for algo in [Algo::Default, Algo::Hierarchical] {
                let mut p = Programs::new(16);
                let used = emit(
                    &mut p,
                    &layout,
                    Collective::Bcast,
                    root,
                    bytes,
                    AlgoChoice { rules: CollRules::OpenMpi41, ..pinned(algo) },
                );
                assert_eq!(used, if algo == Algo::Default { want } else { algo });
                let mut bufs: Vec<Vec<u64>> = (0..16u64)
                    .map(|r| (0..16).map(|b| if r == root as u64 { init(r, b) } else { 0 }).collect())
                    .collect();
                check(&p, &mut bufs, Sends::Buffered).unwrap_or_else(|e| panic!("{algo:?} {bytes}: {}", e.0));
                assert!(bufs.iter().all(|b| b.iter().enumerate().all(|(i, &v)| v == init(root as u64, i as u64))));
            }
        }
    }

    #[test]
    fn hierarchical_bcast_crosses_the_wan_once() {
        let layout = Layout::new(4, 2, 16, &Placement::Block).unwrap();
        for algo in [Algo::Hierarchical, Algo::Binomial, Algo::ScatterRing] {
            let mut p = Programs::new(16);
            emit(&mut p, &layout, Collective::Bcast, 0, 1 << 17, pinned(algo));
            let crossings: usize = p
                .ranks
                .iter()
                .enumerate()
                .flat_map(|(r, acts)| acts.iter().map(move |a| (r, a)))
                .map(|(r, a)| match a {
                    Action::Round { sends, .. } | Action::Post { sends, .. } => {
                        sends.iter().filter(|x| layout.cluster(x.peer) != layout.cluster(r as u32)).count()
                    }
                    _ => 0,
                })
                .sum();
            if algo == Algo::Hierarchical {
                assert_eq!(crossings, 1);
            } else {
                assert!(crossings >= 1);
            }
        }
    }

    #[test]
    fn hierarchical_bcast_in_wan_pieces_delivers_the_same_data() {
        let layout = Layout::new(4, 1, 8, &Placement::Block).unwrap();
        for root in [0, 2, 5] {
            let mut p = Programs::new(8);
            let choice = AlgoChoice { wan_chunk_bytes: Some(32 << 10), ..pinned(Algo::Hierarchical) };
            emit(&mut p, &layout, Collective::Bcast, root, 1 << 20, choice);
            let wan: Vec<u64> = p.ranks[root as usize]
                .iter()
                .flat_map(|a| match a {
                    Action::Post { sends, .. } => sends.iter().map(|x| x.bytes).collect(),
                    _ => Vec::new(),
                })
                .collect();
            assert_eq!((wan.len(), wan.iter().sum::<u64>()), (32, 1 << 20));
            let mut bufs: Vec<Vec<u64>> =
                (0..8u64).map(|r| (0..8).map(|b| if r == root as u64 { init(r, b) } else { 0 }).collect()).collect();
            let all_rndv = Sends::Rendezvous { eager_threshold_bytes: 0, is_rendezvous: &|_, _, _| true };
            check(&p, &mut bufs, all_rndv).unwrap_or_else(|e| panic!("root {root}: {}", e.0));
            assert!(bufs.iter().all(|b| b.iter().enumerate().all(|(i, &v)| v == init(root as u64, i as u64))));
        }
    }

    #[test]
    fn defaults_follow_mpich_thresholds_and_auto_uses_the_rule() {
        assert_eq!(rules::mpich2(Collective::Bcast, 1024, 128), Algo::Binomial);
        assert_eq!(rules::mpich2(Collective::Bcast, 1 << 17, 128), Algo::ScatterRd);
        assert_eq!(rules::mpich2(Collective::Bcast, 1 << 20, 128), Algo::ScatterRing);
        assert_eq!(rules::mpich2(Collective::Alltoall, 8, 128), Algo::Bruck);
        let layout = Layout::new(2, 1, 4, &Placement::Block).unwrap();
        let auto = AutoRule { min_delay_us: 100.0, min_bytes: 1 << 16 };
        let at = |one_way_delay_us| AlgoChoice {
            algo: Algo::Auto,
            one_way_delay_us,
            auto,
            rules: CollRules::Mpich2,
            wan_chunk_bytes: None,
        };
        let mut p = Programs::new(4);
        assert_eq!(emit(&mut p, &layout, Collective::Bcast, 0, 8, at(1000.0)), Algo::Hierarchical);
        assert_eq!(emit(&mut p, &layout, Collective::Bcast, 0, 8, at(10.0)), Algo::Binomial);
    }
}
