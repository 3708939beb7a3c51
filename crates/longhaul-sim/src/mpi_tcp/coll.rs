//! Broadcast over TCP as the real libraries run it: Open MPI 4.1's own `MPI_Bcast` (the
//! `coll/tuned` component's fixed decision rules and its unsegmented tree algorithms), the
//! two-level broadcast of `longhaul.mpi.HierComm.Bcast` / `LH_Bcast`, and Open MPI's barrier
//! between the calls of osu_bcast. Lowered to rank programs ([`Programs`]) that [`super::ranks`]
//! plays over the ranks' TCP connections.
//!
//! Sources (Open MPI 4.1.x, `ompi/mca/coll/tuned/coll_tuned_decision_fixed.c`):
//! `ompi_coll_tuned_bcast_intra_dec_fixed` picks an algorithm from the communicator size and
//! the message size and calls `ompi_coll_tuned_bcast_intra_do_this(..., alg, 0, 0)`: fan-out and
//! segment size 0, i.e. one segment (no pipelining) for every tree algorithm; a chain with
//! fan-out 0 is built with fan-out 1 (`coll_base_topo.c`, build_chain). The algorithm numbers
//! match `ompi_info --param coll tuned --level 9` of Open MPI 4.1.4 (1 basic_linear, 2 chain,
//! 3 pipeline, 4 split_binary_tree, 5 binary_tree, 6 binomial, 7 knomial, 8 scatter_allgather,
//! 9 scatter_allgather_ring). Tree shapes from `ompi/mca/coll/base/coll_base_topo.c`
//! (build_tree: children `r + fanout^level x (i + 1)`; build_bmtree; build_kmtree with
//! `coll_tuned_bcast_algorithm_knomial_radix` = 4). With one segment,
//! `ompi_coll_base_bcast_intra_generic` receives the whole message from the parent, then posts a
//! send to every child and waits for all; basic_linear is the root sending to every rank.
//! `ompi_coll_tuned_barrier_intra_dec_fixed`: 2 ranks two_procs, fewer than 4 recursive
//! doubling, fewer than 8 linear, fewer than 64 recursive doubling.

use super::scenario::CollParams;
use crate::mpi::coll_rules::{ompi_bcast_choice, ompi_tree as tree, OmpiBcast};
use crate::mpi::osu::{END, START};
use crate::mpi::program::{Action, Programs, Xfer};
use crate::mpi::scenario::OsuSpec;

/// One `MPI_Bcast` of `bytes` among the global ranks `g` (root at index `root`), with the
/// algorithm Open MPI 4.1 picks; an error names an algorithm not modelled.
pub fn ompi_bcast(p: &mut Programs, g: &[u32], root: usize, bytes: u64) -> Result<OmpiBcast, String> {
    let n = g.len();
    if n < 2 {
        return Ok(OmpiBcast::BasicLinear);
    }
    let alg = ompi_bcast_choice(n, bytes);
    for (i, &me) in g.iter().enumerate() {
        let v = (i + n - root) % n;
        let (parent, children) = tree(alg, n, v).ok_or_else(|| {
            format!(
                "Open MPI 4.1 broadcasts {bytes} bytes among {n} ranks with {}, which the TCP model does not run",
                alg.name()
            )
        })?;
        let rank = |w: usize| g[(w + root) % n];
        let prog = &mut p.ranks[me as usize];
        if let Some(up) = parent {
            prog.push(Action::recv(Xfer::plain(rank(up), bytes)));
        }
        if !children.is_empty() {
            prog.push(Action::Round {
                sends: children.iter().map(|&c| Xfer::plain(rank(c), bytes)).collect(),
                recvs: Vec::new(),
            });
        }
    }
    Ok(alg)
}

/// Open MPI 4.1's barrier among the global ranks `g` (zero-byte messages).
pub fn ompi_barrier(p: &mut Programs, g: &[u32]) {
    let n = g.len();
    let zero = |r: u32| Xfer::plain(r, 0);
    if (4..8).contains(&n) {
        // basic_linear: everyone reports to rank 0, which then releases everyone.
        for &r in &g[1..] {
            p.ranks[r as usize].push(Action::send(zero(g[0])));
            p.ranks[r as usize].push(Action::recv(zero(g[0])));
        }
        p.ranks[g[0] as usize]
            .push(Action::Round { sends: Vec::new(), recvs: g[1..].iter().map(|&r| zero(r)).collect() });
        p.ranks[g[0] as usize]
            .push(Action::Round { sends: g[1..].iter().map(|&r| zero(r)).collect(), recvs: Vec::new() });
        return;
    }
    // Recursive doubling (two_procs for 2 ranks is the same single exchange): ranks beyond the
    // largest power of two first hand over to a partner and are released by it at the end.
    let pof2 = if n.is_power_of_two() { n } else { n.next_power_of_two() / 2 };
    for (i, &me) in g.iter().enumerate() {
        let prog = &mut p.ranks[me as usize];
        if i >= pof2 {
            prog.push(Action::send(zero(g[i - pof2])));
            prog.push(Action::recv(zero(g[i - pof2])));
            continue;
        }
        if i + pof2 < n {
            prog.push(Action::recv(zero(g[i + pof2])));
        }
        let mut mask = 1;
        while mask < pof2 {
            let peer = g[i ^ mask];
            prog.push(Action::sendrecv(zero(peer), zero(peer)));
            mask <<= 1;
        }
        if i + pof2 < n {
            prog.push(Action::send(zero(g[i + pof2])));
        }
    }
}

/// `HierComm.Bcast` / `LH_Bcast` with the root in `clusters[rc][ri]`: the root hands the buffer
/// to its cluster's leader (the cluster's first rank); that leader posts the message to every
/// other leader without waiting, as pieces of at most `chunk` bytes when it is larger than one
/// (all in flight at once: each piece below the eager limit, so none waits for a rendezvous
/// round trip), else as one message (an `MPI_Ibcast` among the leaders); it then runs its own
/// cluster's `MPI_Bcast` and waits for the pieces. Another leader waits for all pieces, then
/// runs its cluster's `MPI_Bcast`. Returns the algorithm Open MPI uses inside the clusters.
pub fn hier_bcast(
    p: &mut Programs,
    clusters: &[Vec<u32>],
    rc: usize,
    ri: usize,
    bytes: u64,
    chunk: u64,
) -> Result<Vec<OmpiBcast>, String> {
    let leader = clusters[rc][0];
    let root = clusters[rc][ri];
    if root != leader {
        p.ranks[root as usize].push(Action::send(Xfer::plain(leader, bytes)));
        p.ranks[leader as usize].push(Action::recv(Xfer::plain(root, bytes)));
    }
    let pieces: Vec<u64> = if bytes > chunk {
        (0..bytes.div_ceil(chunk)).map(|i| chunk.min(bytes - i * chunk)).collect()
    } else {
        vec![bytes]
    };
    let others: Vec<u32> = clusters.iter().enumerate().filter(|&(c, _)| c != rc).map(|(_, m)| m[0]).collect();
    let sends = others.iter().flat_map(|&o| pieces.iter().map(move |&b| Xfer::plain(o, b))).collect();
    p.ranks[leader as usize].push(Action::Post { sends, recvs: Vec::new() });
    let mut used = Vec::new();
    used.push(ompi_bcast(p, &clusters[rc], 0, bytes)?);
    p.ranks[leader as usize].push(Action::WaitAll);
    for members in clusters.iter().enumerate().filter(|&(c, _)| c != rc).map(|(_, m)| m) {
        let recvs = pieces.iter().map(|&b| Xfer::plain(leader, b)).collect();
        p.ranks[members[0] as usize].push(Action::Post { sends: Vec::new(), recvs });
        p.ranks[members[0] as usize].push(Action::WaitAll);
        used.push(ompi_bcast(p, members, 0, bytes)?);
    }
    Ok(used)
}

/// osu_bcast as `longhaul emu mpi osu` runs it (`osu_mpi.py`): every iteration is a barrier,
/// then each rank times its own broadcast call; warm-up calls are not timed. Block placement:
/// ranks 0..N-1 in cluster A. Returns the programs and the algorithm(s) used.
pub fn osu_bcast(spec: &OsuSpec, c: &CollParams) -> Result<(Programs, String), String> {
    let rpc = c.ranks_per_cluster;
    let n = 2 * rpc;
    let world: Vec<u32> = (0..n).collect();
    let clusters: Vec<Vec<u32>> = vec![(0..rpc).collect(), (rpc..n).collect()];
    let root = spec.root.unwrap_or(0);
    let mut p = Programs::new(n as usize);
    let mut used = String::new();
    let (warm, iters) =
        (spec.warmup.unwrap_or(crate::mpi::osu::WARMUP), spec.iterations.unwrap_or(crate::mpi::osu::ITERATIONS));
    for i in 0..warm + iters {
        ompi_barrier(&mut p, &world);
        p.mark_all(if i < warm { u32::MAX } else { START });
        used = if c.hierarchical {
            let inside = hier_bcast(
                &mut p,
                &clusters,
                (root / rpc) as usize,
                (root % rpc) as usize,
                spec.size_bytes,
                c.wan_chunk_bytes,
            )?;
            format!("hierarchical ({} inside the clusters)", inside[0].name())
        } else {
            ompi_bcast(&mut p, &world, root as usize, spec.size_bytes)?.name().to_string()
        };
        p.mark_all(if i < warm { u32::MAX } else { END });
    }
    Ok((p, used))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mpi::program::{check, Sends};

    /// Every send a rendezvous (Open MPI's ob1 above its eager limit): the programs must not
    /// rely on sends being buffered.
    const ALL_RNDV: Sends = Sends::Rendezvous { eager_threshold_bytes: 0, is_rendezvous: &|_, _, _| true };

    fn parents(alg: OmpiBcast, n: usize) -> Vec<Option<usize>> {
        (0..n).map(|v| tree(alg, n, v).unwrap().0).collect()
    }

    #[test]
    fn trees_are_open_mpis_shapes() {
        // build_tree(2) is strided: 0 -> 1, 2; 1 -> 3, 5; 2 -> 4, 6; 3 -> 7.
        assert_eq!(
            parents(OmpiBcast::BinaryTree, 8),
            vec![None, Some(0), Some(0), Some(1), Some(2), Some(1), Some(2), Some(3)]
        );
        assert_eq!(tree(OmpiBcast::BinaryTree, 8, 1).unwrap().1, vec![3, 5]);
        assert_eq!(
            parents(OmpiBcast::Binomial, 8),
            vec![None, Some(0), Some(0), Some(2), Some(0), Some(4), Some(4), Some(6)]
        );
        assert_eq!(tree(OmpiBcast::Binomial, 8, 0).unwrap().1, vec![1, 2, 4]);
        assert_eq!(tree(OmpiBcast::Knomial, 8, 0).unwrap().1, vec![1, 2, 3, 4]);
        assert_eq!(parents(OmpiBcast::Knomial, 8)[5..], [Some(4), Some(4), Some(4)]);
        assert_eq!(parents(OmpiBcast::Chain, 4), vec![None, Some(0), Some(1), Some(2)]);
    }

    #[test]
    fn every_rank_gets_the_message_once_for_every_modelled_choice() {
        for n in 2..=63 {
            for bytes in [1u64, 100, 1000, 5000, 20_000, 40_000, 200_000, 1 << 20, 4 << 20] {
                for root in [0, n / 2, n - 1] {
                    let mut p = Programs::new(n);
                    let g: Vec<u32> = (0..n as u32).collect();
                    if ompi_bcast(&mut p, &g, root, bytes).is_err() {
                        continue;
                    }
                    let recvs: usize = p
                        .ranks
                        .iter()
                        .flatten()
                        .map(|a| if let Action::Round { recvs, .. } = a { recvs.len() } else { 0 })
                        .sum();
                    assert_eq!(recvs, n - 1, "n {n} bytes {bytes} root {root}");
                    ompi_barrier(&mut p, &g);
                    check(&p, &mut p.zero_buffers(), Sends::Buffered).unwrap();
                    check(&p, &mut p.zero_buffers(), ALL_RNDV).unwrap();
                }
            }
        }
    }

    #[test]
    fn hierarchical_bcast_crosses_once_in_eager_pieces() {
        let clusters = vec![vec![0u32, 1, 2, 3], vec![4, 5, 6, 7]];
        let mut p = Programs::new(8);
        hier_bcast(&mut p, &clusters, 0, 1, 1 << 20, 32 << 10).unwrap();
        check(&p, &mut p.zero_buffers(), ALL_RNDV).unwrap();
        let wan: Vec<u64> = p.ranks[0]
            .iter()
            .flat_map(|a| {
                if let Action::Post { sends, .. } = a {
                    sends.iter().filter(|x| x.peer >= 4).map(|x| x.bytes).collect()
                } else {
                    Vec::new()
                }
            })
            .collect();
        assert_eq!((wan.len(), wan.iter().sum::<u64>()), (32, 1 << 20));
    }
}
