//! Which algorithm each MPI library's default (`--algo default`) runs for a collective, by
//! communicator size and message size: MPICH2 1.0's rules (what MVAPICH2 1.0 ran, and what the
//! model keeps for MVAPICH2 2.3) and Open MPI 4.1's `coll/tuned` fixed decision rules, each
//! mapped onto the nearest algorithm the model has; [`super::collectives`] builds them over any
//! channel.

use serde::{Deserialize, Serialize};

use super::collectives::{Algo, Collective};

/// Whose selection rules `--algo default` follows (part of an MPI library's profile).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CollRules {
    /// MPICH2 1.0 (Thakur et al. 2005; bcast.c, allreduce.c, alltoall.c of MPICH2 1.0), which
    /// MVAPICH2 1.0 ran above a few processes.
    #[default]
    Mpich2,
    /// Open MPI 4.1's `coll/tuned` fixed decision rules (also Open MPI 5.0's: the file is
    /// unchanged in the rules the model uses).
    OpenMpi41,
}

/// The algorithm `rules` picks for collective `c` of `bytes` (the OSU message size: whole
/// buffer for bcast/allreduce, per rank for scatter and alltoall) among `m` ranks.
pub fn select(rules: CollRules, c: Collective, bytes: u64, m: usize) -> Algo {
    match rules {
        CollRules::Mpich2 => mpich2(c, bytes, m),
        CollRules::OpenMpi41 => open_mpi(c, bytes, m),
    }
}

/// MPICH2 1.0's default choice (Thakur et al. 2005; bcast.c, allreduce.c, alltoall.c).
pub fn mpich2(c: Collective, bytes: u64, m: usize) -> Algo {
    match c {
        Collective::Bcast if bytes < 12288 || m < 8 => Algo::Binomial,
        Collective::Bcast if bytes < 524_288 && m.is_power_of_two() => Algo::ScatterRd,
        Collective::Bcast => Algo::ScatterRing,
        Collective::Allreduce if bytes <= 2048 => Algo::RecursiveDoubling,
        Collective::Allreduce => Algo::Rabenseifner,
        Collective::Alltoall if bytes <= 256 && m >= 8 => Algo::Bruck,
        Collective::Alltoall if bytes <= 32768 => Algo::Scattered,
        Collective::Alltoall => Algo::Pairwise,
        Collective::Scatter => Algo::Binomial,
        Collective::Barrier => Algo::Default,
    }
}

/// Open MPI 4.1's choice mapped onto the model's algorithms. Where the model lacks Open MPI's
/// algorithm it runs the nearest one (docs/models/mpi.md, "Collective selection per library"):
/// - bcast split_binary_tree (4) runs as the binary tree (the two halves of the message going
///   down the two subtrees and swapped at the end are not modelled); scatter_allgather (8) as
///   scatter + recursive doubling (scatter + ring on a non-power-of-two communicator);
///   segment size 0 (the fixed rules' choice) makes every tree unsegmented, so pipeline (3) is
///   the chain;
/// - allreduce ring (4) and segmented_ring (5) run as Rabenseifner's (reduce-scatter then
///   allgather: the same bytes per rank, 2 log2 p steps instead of 2 (p - 1)); nonoverlapping
///   (2: a reduce then a broadcast, chosen from 128 ranks up for small messages) and
///   basic_linear (Rabenseifner's fallback for tiny messages) as recursive doubling;
/// - barrier: `coll_flat::barrier_ompi` (recursive doubling, linear for 4-7 ranks, bruck =
///   dissemination from 64 ranks; its tree for 256-511 ranks runs as bruck).
fn open_mpi(c: Collective, bytes: u64, m: usize) -> Algo {
    match c {
        Collective::Bcast => match ompi_bcast_choice(m, bytes) {
            OmpiBcast::BasicLinear => Algo::Linear,
            OmpiBcast::Chain | OmpiBcast::Pipeline => Algo::Chain,
            OmpiBcast::SplitBinaryTree | OmpiBcast::BinaryTree => Algo::BinaryTree,
            OmpiBcast::Binomial => Algo::Binomial,
            OmpiBcast::Knomial => Algo::Knomial,
            OmpiBcast::ScatterAllgather if m.is_power_of_two() => Algo::ScatterRd,
            OmpiBcast::ScatterAllgather => Algo::ScatterRing,
        },
        Collective::Allreduce => {
            // osu_allreduce reduces MPI_FLOATs: count = bytes / 4. The ring (4) falls back to
            // recursive doubling below one element per rank, and so does the segmented ring
            // (5), which with segment size 0 is the ring; Rabenseifner's (6) falls back to
            // basic_linear (a reduce then a broadcast) below one element per power-of-two rank
            // (ompi_coll_base_allreduce_intra_ring / _ring_segmented / _redscat_allgather,
            // coll_base_allreduce.c, v4.1.8).
            let count = bytes / 4;
            let pof2 = if m.is_power_of_two() { m } else { m.next_power_of_two() / 2 } as u64;
            match ompi_allreduce_choice(m, bytes) {
                4 | 5 if count >= m as u64 => Algo::Rabenseifner,
                6 if count >= pof2 => Algo::Rabenseifner,
                _ => Algo::RecursiveDoubling,
            }
        }
        Collective::Alltoall => match ompi_alltoall_choice(m, bytes) {
            // linear (1) and linear_sync (4) with coll_tuned_alltoall_algorithm_max_requests = 0
            // (its default, coll_tuned_alltoall_decision.c) both post every send and receive at
            // once (ompi_coll_base_alltoall_intra_linear_sync: 0 means size - 1 requests).
            1 | 4 => Algo::Linear,
            3 => Algo::Bruck,
            // pairwise (2); two_proc (5) is the single exchange pairwise makes on 2 ranks.
            _ => Algo::Pairwise,
        },
        // basic_linear (1) and linear_nb (3) both hand every rank its block directly.
        Collective::Scatter if ompi_scatter_choice(m, bytes) == 2 => Algo::Binomial,
        Collective::Scatter => Algo::Linear,
        Collective::Barrier => Algo::Default,
    }
}

/// Open MPI 4.1's broadcast algorithms (numbered as `coll_tuned_bcast_algorithm`, as
/// `ompi_info --param coll tuned --level 9` of Open MPI 4.1.4 lists them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OmpiBcast {
    BasicLinear = 1,
    Chain = 2,
    Pipeline = 3,
    SplitBinaryTree = 4,
    BinaryTree = 5,
    Binomial = 6,
    Knomial = 7,
    ScatterAllgather = 8,
}

/// Pick the entry of `band` (upper bound of bytes, exclusive; the last entry holds for every
/// larger message) that `bytes` falls in.
fn in_band<T: Copy>(band: &[(u64, T)], bytes: u64) -> T {
    band.iter().find(|&&(below, _)| bytes < below).map_or(band[band.len() - 1].1, |&(_, a)| a)
}

const MAX: u64 = u64::MAX;

/// `ompi_coll_tuned_bcast_intra_dec_fixed` (Open MPI v4.1.8, commit ea8f4d0,
/// `ompi/mca/coll/tuned/coll_tuned_decision_fixed.c`): by communicator size, then by total
/// bytes; it runs the choice with fan-out and segment size 0 (one segment).
pub fn ompi_bcast_choice(ranks: usize, bytes: u64) -> OmpiBcast {
    use OmpiBcast::*;
    let band: &[(u64, OmpiBcast)] = match ranks {
        0..=3 => &[
            (32, Pipeline),
            (256, BinaryTree),
            (512, Pipeline),
            (1024, Knomial),
            (32768, BasicLinear),
            (131_072, BinaryTree),
            (262_144, Chain),
            (524_288, BasicLinear),
            (1_048_576, Binomial),
            (MAX, BinaryTree),
        ],
        4..=7 => &[
            (64, BinaryTree),
            (128, Binomial),
            (2048, BinaryTree),
            (8192, Binomial),
            (1_048_576, BasicLinear),
            (MAX, Chain),
        ],
        8..=15 => &[
            (8, Knomial),
            (64, BinaryTree),
            (4096, Knomial),
            (16384, BinaryTree),
            (32768, Binomial),
            (MAX, BasicLinear),
        ],
        16..=31 => &[(4096, Knomial), (1_048_576, Binomial), (MAX, ScatterAllgather)],
        32..=63 => &[(2048, Binomial), (MAX, Knomial)],
        64..=127 => &[(MAX, Knomial)],
        128..=255 => &[(2, Binomial), (16384, BinaryTree), (32768, BasicLinear), (65536, BinaryTree), (MAX, Knomial)],
        256..=1023 => &[(16384, Knomial), (32768, SplitBinaryTree), (MAX, Knomial)],
        1024..=2047 => &[(524_288, Knomial), (MAX, ScatterAllgather)],
        2048..=4095 => &[(262_144, Knomial), (MAX, ScatterAllgather)],
        _ => &[(8192, Knomial), (16384, BinaryTree), (262_144, Knomial), (MAX, ScatterAllgather)],
    };
    in_band(band, bytes)
}

/// `ompi_coll_tuned_allreduce_intra_dec_fixed` (v4.1.8, same file), commutative operations
/// (the model's reduction is a sum): 2 nonoverlapping, 3 recursive_doubling, 4 ring,
/// 5 segmented_ring, 6 rabenseifner.
fn ompi_allreduce_choice(ranks: usize, bytes: u64) -> u8 {
    let band: &[(u64, u8)] = match ranks {
        0..=3 => &[(8, 4), (4096, 3), (8192, 4), (16384, 3), (65536, 4), (262_144, 5), (MAX, 6)],
        4..=7 => &[(16, 4), (8192, 3), (MAX, 6)],
        8..=15 => &[(8192, 3), (MAX, 6)],
        16..=31 => &[(64, 5), (4096, 3), (MAX, 6)],
        32..=63 => &[(128, 5), (MAX, 6)],
        64..=127 => &[(262_144, 3), (MAX, 6)],
        128..=255 => &[(131_072, 2), (262_144, 3), (MAX, 6)],
        256..=511 => &[(4096, 2), (MAX, 6)],
        512..=2047 => &[(2048, 2), (16384, 3), (MAX, 6)],
        2048..=4095 => &[(2048, 2), (4096, 5), (16384, 3), (MAX, 6)],
        _ => &[(2048, 2), (16384, 5), (32768, 3), (MAX, 6)],
    };
    in_band(band, bytes)
}

/// `ompi_coll_tuned_alltoall_intra_dec_fixed` (v4.1.8, same file), bytes per peer: 1 linear,
/// 2 pairwise, 3 modified_bruck, 4 linear_sync, 5 two_proc.
fn ompi_alltoall_choice(ranks: usize, bytes: u64) -> u8 {
    let band: &[(u64, u8)] = match ranks {
        0..=2 => {
            &[(2, 2), (4, 5), (16, 2), (64, 5), (256, 2), (4096, 5), (32768, 2), (262_144, 4), (1_048_576, 5), (MAX, 2)]
        }
        3..=7 => &[(8192, 4), (16384, 1), (65536, 4), (524_288, 1), (1_048_576, 2), (MAX, 1)],
        8..=15 => &[(262_144, 4), (MAX, 1)],
        16..=31 => &[(4, 4), (512, 3), (8192, 4), (32768, 1), (262_144, 4), (524_288, 1), (MAX, 4)],
        32..=63 => &[(512, 3), (524_288, 1), (MAX, 4)],
        64..=127 => &[(1024, 3), (2048, 1), (4096, 4), (262_144, 1), (MAX, 2)],
        128..=255 => &[(1024, 3), (2048, 4), (262_144, 1), (MAX, 2)],
        256..=511 => &[(1024, 3), (8192, 4), (32768, 1), (MAX, 2)],
        512..=1023 => &[(512, 3), (8192, 4), (16384, 1), (131_072, 4), (262_144, 1), (MAX, 2)],
        1024..=2047 => &[(512, 3), (1024, 4), (2048, 1), (16384, 4), (262_144, 1), (MAX, 4)],
        2048..=4095 => &[(1024, 3), (4096, 4), (8192, 1), (131_072, 4), (MAX, 1)],
        _ => &[(2048, 3), (8192, 4), (16384, 1), (32768, 4), (65536, 1), (MAX, 4)],
    };
    in_band(band, bytes)
}

/// `ompi_coll_tuned_scatter_intra_dec_fixed` (v4.1.8, same file), bytes per rank:
/// 1 basic_linear, 2 binomial, 3 linear_nb.
fn ompi_scatter_choice(ranks: usize, bytes: u64) -> u8 {
    let band: &[(u64, u8)] = match ranks {
        0..=3 => &[(2, 3), (131_072, 1), (262_144, 3), (MAX, 1)],
        4..=7 => &[(2048, 2), (4096, 1), (8192, 2), (32768, 1), (1_048_576, 3), (MAX, 1)],
        8..=15 => &[(16384, 2), (1_048_576, 3), (MAX, 1)],
        16..=31 => &[(16384, 2), (32768, 1), (MAX, 3)],
        32..=63 => &[(512, 2), (8192, 3), (16384, 2), (MAX, 3)],
        _ => &[(512, 2), (MAX, 3)],
    };
    in_band(band, bytes)
}

/// Parent and children (in the order the sends are posted) of position `v` (relative to the
/// root) in Open MPI's unsegmented broadcast tree `alg` of `n` ranks (`coll_base_topo.c`:
/// build_tree, build_chain with fan-out 1, build_bmtree, build_kmtree with radix 4); `None` for
/// split_binary_tree and scatter_allgather, which are no tree.
pub fn ompi_tree(alg: OmpiBcast, n: usize, v: usize) -> Option<(Option<usize>, Vec<usize>)> {
    let parent_children = match alg {
        OmpiBcast::BasicLinear => {
            if v == 0 {
                (None, (1..n).collect())
            } else {
                (Some(0), Vec::new())
            }
        }
        // Fan-out 1: a pipeline 0 -> 1 -> ... -> n-1 (one segment).
        OmpiBcast::Chain | OmpiBcast::Pipeline => {
            ((v > 0).then(|| v - 1), if v + 1 < n { vec![v + 1] } else { Vec::new() })
        }
        OmpiBcast::BinaryTree => {
            // build_tree(fanout 2): level L holds 2^L ranks; children r + 2^L x (i + 1).
            let (mut level, mut first) = (0u32, 0usize);
            while first + (1 << level) <= v {
                first += 1 << level;
                level += 1;
            }
            let delta = 1usize << level;
            let children = (1..=2).map(|i| v + delta * i).filter(|&c| c < n).collect();
            // The parent steps back by 2^(L-1) until it lies in the level above.
            let parent = (v > 0).then(|| {
                let mut p = v;
                while p >= first {
                    p -= delta / 2;
                }
                p
            });
            (parent, children)
        }
        OmpiBcast::Binomial => kary(n, v, 2),
        OmpiBcast::Knomial => kary(n, v, 4),
        OmpiBcast::SplitBinaryTree | OmpiBcast::ScatterAllgather => return None,
    };
    Some(parent_children)
}

/// k-nomial tree (k = 2: binomial): the parent clears the lowest nonzero base-k digit; the
/// children add j x k^d (j = 1..k-1) for every digit d below it, smallest distance first.
fn kary(n: usize, v: usize, k: usize) -> (Option<usize>, Vec<usize>) {
    let mut step = 1;
    while step < n && v.is_multiple_of(step * k) {
        step *= k;
    }
    let parent = (v > 0).then(|| v - v % (step * k));
    let mut children = Vec::new();
    let mut s = 1;
    while s < step.min(n) {
        for j in 1..k {
            if v + j * s < n {
                children.push(v + j * s);
            }
        }
        s *= k;
    }
    (parent, children)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_mpi_bands_follow_the_fixed_rules() {
        assert_eq!(ompi_bcast_choice(8, 1 << 20), OmpiBcast::BasicLinear);
        assert_eq!(ompi_bcast_choice(4, 1 << 20), OmpiBcast::Chain);
        assert_eq!(ompi_bcast_choice(4, (1 << 20) - 1), OmpiBcast::BasicLinear);
        assert_eq!(ompi_bcast_choice(2, 32 << 10), OmpiBcast::BinaryTree);
        assert_eq!(ompi_bcast_choice(300, 20000), OmpiBcast::SplitBinaryTree);
        assert_eq!(ompi_bcast_choice(5000, 1 << 20), OmpiBcast::ScatterAllgather);
        assert_eq!(select(CollRules::OpenMpi41, Collective::Bcast, 1024, 16), Algo::Knomial);
        assert_eq!(select(CollRules::OpenMpi41, Collective::Bcast, 1 << 20, 16), Algo::ScatterRd);
        assert_eq!(select(CollRules::OpenMpi41, Collective::Allreduce, 1 << 20, 16), Algo::Rabenseifner);
        assert_eq!(select(CollRules::OpenMpi41, Collective::Allreduce, 1024, 16), Algo::RecursiveDoubling);
        assert_eq!(select(CollRules::OpenMpi41, Collective::Alltoall, 2, 16), Algo::Linear);
        assert_eq!(select(CollRules::OpenMpi41, Collective::Alltoall, 100, 16), Algo::Bruck);
        assert_eq!(select(CollRules::OpenMpi41, Collective::Alltoall, 1 << 20, 128), Algo::Pairwise);
        assert_eq!(select(CollRules::OpenMpi41, Collective::Scatter, 100, 16), Algo::Binomial);
        assert_eq!(select(CollRules::OpenMpi41, Collective::Scatter, 1 << 20, 16), Algo::Linear);
    }

    fn parents(alg: OmpiBcast, n: usize) -> Vec<Option<usize>> {
        (0..n).map(|v| ompi_tree(alg, n, v).unwrap().0).collect()
    }

    #[test]
    fn trees_are_open_mpis_shapes() {
        // build_tree(2) is strided: 0 -> 1, 2; 1 -> 3, 5; 2 -> 4, 6; 3 -> 7.
        assert_eq!(
            parents(OmpiBcast::BinaryTree, 8),
            vec![None, Some(0), Some(0), Some(1), Some(2), Some(1), Some(2), Some(3)]
        );
        assert_eq!(ompi_tree(OmpiBcast::BinaryTree, 8, 1).unwrap().1, vec![3, 5]);
        assert_eq!(
            parents(OmpiBcast::Binomial, 8),
            vec![None, Some(0), Some(0), Some(2), Some(0), Some(4), Some(4), Some(6)]
        );
        assert_eq!(ompi_tree(OmpiBcast::Binomial, 8, 0).unwrap().1, vec![1, 2, 4]);
        assert_eq!(ompi_tree(OmpiBcast::Knomial, 8, 0).unwrap().1, vec![1, 2, 3, 4]);
        assert_eq!(parents(OmpiBcast::Knomial, 8)[5..], [Some(4), Some(4), Some(4)]);
        assert_eq!(parents(OmpiBcast::Chain, 4), vec![None, Some(0), Some(1), Some(2)]);
    }

    #[test]
    fn every_pick_is_an_algorithm_of_its_collective() {
        for rules in [CollRules::Mpich2, CollRules::OpenMpi41] {
            for c in [Collective::Bcast, Collective::Allreduce, Collective::Alltoall, Collective::Scatter] {
                for m in (2..70).chain([100, 200, 300, 600, 1500, 3000, 5000]) {
                    for b in (0..24).map(|k| 1u64 << k) {
                        let a = select(rules, c, b, m);
                        assert!(Algo::flat_for(c).contains(&a), "{rules:?} {c:?} m={m} {b} B: {a:?}");
                    }
                }
            }
        }
    }
}
