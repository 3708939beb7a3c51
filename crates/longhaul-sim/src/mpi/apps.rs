//! NAS Parallel Benchmark skeletons: each rank's per-iteration communication pattern with the
//! message sizes and counts of the MPI NPB 3.x kernels, and the compute between them.
//!
//! Patterns from the NPB 3.x MPI sources and D. Bailey et al., "The NAS Parallel Benchmarks",
//! RNR-94-007 / NAS-95-020 (problem sizes per class):
//! - IS (is.c): per iteration an allreduce of the 1024 bucket counts (4 KiB), an alltoall of
//!   one int per rank, and an alltoallv of the keys (total_keys x 4 B / P^2 per pair), posted all
//!   at once as MPICH's alltoallv does.
//! - FT (ft.f, 1-D layout): per iteration one global transpose, an alltoall of nx*ny*nz / P^2
//!   complex numbers (16 B) per pair, and a checksum reduce of one complex.
//! - CG (cg.f): P = nprows x npcols; per inner iteration (25 per outer) the matvec's
//!   recursive-halving row reduction (log2 npcols exchanges of na/nprows/2^i doubles), the
//!   exchange with the transpose processor (na/P doubles) and two row dot products (log2 npcols
//!   exchanges of 8 B).
//! - MG (mg.f): P = px x py x pz; per V-cycle, at every level, four halo exchanges (comm3) of
//!   the local faces with both neighbours in each dimension (doubles), and a norm allreduce.
//! - LU (lu.f): 2-D layout; per SSOR iteration the lower and upper triangular wavefronts send
//!   5 doubles per boundary cell plane by plane to the east/south (and back), then the halo
//!   exchange of the right-hand side (2 layers of 5 doubles).
//!
//! Compute per iteration defaults to the kernel's operation count per iteration (NPB's own
//! Mop formulas) divided by P x the node's per-core rate. Iterations are identical, so the
//! engine simulates at most `SIM_ITERATIONS` of them and scales the time to the class's count.

use serde::{Deserialize, Serialize};

use super::collectives::{self, AlgoChoice, Collective};
use super::params::NodeParams;
use super::placement::Layout;
use super::program::{Action, Programs, Xfer};
use crate::engine::time::from_us;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AppName {
    Is,
    Ft,
    Cg,
    Mg,
    Lu,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum NasClass {
    A,
    B,
    C,
}

/// Iterations simulated at most (the rest are the same; run time is scaled).
pub const SIM_ITERATIONS: u64 = 10;

/// A built skeleton.
pub struct App {
    pub programs: Programs,
    /// The class's iteration count.
    pub iterations: u64,
    pub compute_us_per_iter: f64,
    /// Share of bytes sent in messages of 64 KiB and more. [S1] quotes "large message" shares for
    /// IS and FT without saying where large starts; 64 KiB is this model's cut, not S1's, so the
    /// two are not compared.
    pub large_share: f64,
}

fn log2(n: u32) -> u32 {
    n.trailing_zeros()
}

/// The per-class problem: (iterations, operation count in Mop for the whole run).
fn size(app: AppName, class: NasClass) -> (u64, f64, [u64; 3]) {
    let c = class as usize;
    match app {
        AppName::Is => {
            let keys = [1u64 << 23, 1 << 25, 1 << 27][c];
            (10, 10.0 * keys as f64 / 1e6, [keys, 0, 0])
        }
        AppName::Ft => {
            let (d, it) = [([256, 256, 128], 6), ([512, 256, 256], 20), ([512, 512, 512], 20)][c];
            let n = (d[0] * d[1] * d[2]) as f64;
            let mop = 1e-6 * n * (14.8157 + 7.19641 * n.ln() + (5.23518 + 7.21113 * n.ln()) * it as f64);
            (it, mop, d)
        }
        AppName::Cg => {
            let (na, nonzer, it) = [(14000u64, 11u64, 15u64), (75000, 13, 75), (150000, 15, 75)][c];
            let z = (nonzer * (nonzer + 1)) as f64;
            let mop = 2.0 * it as f64 * na as f64 * (3.0 + z + 25.0 * (5.0 + z) + 3.0) / 1e6;
            (it, mop, [na, nonzer, 0])
        }
        AppName::Mg => {
            let (n, it) = [(256u64, 4u64), (256, 20), (512, 20)][c];
            (it, 58.0 * it as f64 * (n * n * n) as f64 * 1e-6, [n, n, n])
        }
        AppName::Lu => {
            let n = [64u64, 102, 162][c];
            let s = (3 * n) as f64;
            let per_it = 1984.77 * (n * n * n) as f64 - 10923.3 * s * s / 3.0 + 27770.9 * s - 144010.0;
            (250, 250.0 * per_it * 1e-6, [n, n, n])
        }
    }
}

/// Check that the skeleton can run on `ranks` ranks (NPB's own constraints).
pub fn check_ranks(app: AppName, ranks: u32) -> Result<(), String> {
    if !ranks.is_power_of_two() || ranks < 2 {
        let app = format!("{app:?}").to_uppercase();
        return Err(format!("ranks: NAS {app} needs a power-of-two number of ranks of at least 2, got {ranks} (set nodes x ppn per cluster accordingly)"));
    }
    Ok(())
}

/// Build the skeleton of `app` class `class` on `layout`.
pub fn build(
    app: AppName,
    class: NasClass,
    layout: &Layout,
    node: &NodeParams,
    compute_us: Option<f64>,
    choice: AlgoChoice,
) -> App {
    let n = layout.ranks();
    let (iterations, mop, dims) = size(app, class);
    let rate = if app == AppName::Is { node.core_mops * IS_KEY_COST } else { node.core_mops };
    let compute_us_per_iter = compute_us.unwrap_or(mop / iterations as f64 / (n as f64 * rate) * 1e6);
    let mut p = Programs::timing(n as usize);
    let coll = |p: &mut Programs, c: Collective, bytes: u64| {
        collectives::emit(p, layout, c, 0, bytes, choice);
    };
    p.compute_all(from_us(compute_us_per_iter));
    match app {
        AppName::Is => {
            coll(&mut p, Collective::Allreduce, 4096);
            coll(&mut p, Collective::Alltoall, 4);
            let per_pair = dims[0] * 4 / (n as u64 * n as u64);
            for r in 0..n {
                let others: Vec<u32> = (0..n).filter(|&x| x != r).collect();
                let x = |q: u32| Xfer::plain(q, per_pair);
                p.push(
                    r,
                    Action::Round {
                        sends: others.iter().map(|&q| x(q)).collect(),
                        recvs: others.iter().map(|&q| x(q)).collect(),
                    },
                );
            }
        }
        AppName::Ft => {
            let per_pair = dims[0] * dims[1] * dims[2] * 16 / (n as u64 * n as u64);
            coll(&mut p, Collective::Alltoall, per_pair);
            coll(&mut p, Collective::Allreduce, 16);
        }
        AppName::Cg => cg(&mut p, dims[0], n),
        AppName::Mg => mg(&mut p, dims[0], n, layout, choice),
        AppName::Lu => lu(&mut p, dims[0], n),
    }
    let large_share = large_share(&p);
    p.ranks.iter_mut().for_each(Vec::shrink_to_fit);
    p.repeat = iterations.min(SIM_ITERATIONS);
    App { programs: p, iterations, compute_us_per_iter, large_share }
}

/// IS ranks keys, not floating-point operations: a key costs about this many Mop of the
/// node's rate (assumed: a random-access histogram update and a scattered store per key).
const IS_KEY_COST: f64 = 0.05;

fn large_share(p: &Programs) -> f64 {
    let mut big = 0u64;
    let mut all = 0u64;
    for a in p.ranks.iter().flatten() {
        a.for_each_send(|bytes| {
            all += bytes;
            if bytes >= 64 << 10 {
                big += bytes;
            }
        });
    }
    if all == 0 {
        0.0
    } else {
        big as f64 / all as f64
    }
}

fn sendrecv(p: &mut Programs, me: u32, peer: u32, bytes: u64) {
    p.push(me, Action::sendrecv(Xfer::plain(peer, bytes), Xfer::plain(peer, bytes)));
}

fn cg(p: &mut Programs, na: u64, n: u32) {
    let l2 = log2(n);
    let npcols = 1u32 << l2.div_ceil(2);
    let nprows = n / npcols;
    let row_len = na / nprows as u64 * 8;
    let transpose = |me: u32| -> u32 {
        if npcols == nprows {
            (me % nprows) * nprows + me / nprows
        } else {
            2 * ((me / 2 % nprows) * nprows + me / 2 / nprows) + me % 2
        }
    };
    // A rank's 25 inner iterations are hundreds of actions: reserved at once, as doubling would
    // leave up to half of each rank's program unused (at 1,024 ranks ~8 MB of a ~60 MB run).
    let per_iteration = 3 * log2(npcols) as usize + usize::from(npcols > 1);
    for me in 0..n {
        p.ranks[me as usize].reserve_exact(25 * per_iteration);
        let row0 = me / npcols * npcols;
        let col = me - row0;
        for _ in 0..25 {
            for i in 0..log2(npcols) {
                sendrecv(p, me, row0 + (col ^ (1 << i)), row_len >> (i + 1));
            }
            if npcols > 1 {
                sendrecv(p, me, transpose(me), na * 8 / n as u64);
            }
            for _ in 0..2 {
                for i in 0..log2(npcols) {
                    sendrecv(p, me, row0 + (col ^ (1 << i)), 8);
                }
            }
        }
    }
}

/// Process grid of MG: log2(P) bits dealt to x, y, z in turn.
fn grid3(n: u32) -> [u32; 3] {
    let mut g = [1u32; 3];
    for b in 0..log2(n) {
        g[(b % 3) as usize] *= 2;
    }
    g
}

fn mg(p: &mut Programs, edge: u64, n: u32, layout: &Layout, choice: AlgoChoice) {
    let g = grid3(n);
    let levels = edge.trailing_zeros();
    for me in 0..n {
        let c = [me % g[0], me / g[0] % g[1], me / (g[0] * g[1])];
        for lev in (1..=levels).rev() {
            let e = 1u64 << lev;
            let local = [e / g[0] as u64, e / g[1] as u64, e / g[2] as u64].map(|x| x.max(1));
            for _ in 0..4 {
                for d in 0..3 {
                    if g[d] == 1 {
                        continue;
                    }
                    let face = local[(d + 1) % 3] * local[(d + 2) % 3] * 8;
                    let mut up = c;
                    up[d] = (c[d] + 1) % g[d];
                    let mut down = c;
                    down[d] = (c[d] + g[d] - 1) % g[d];
                    let rank = |v: [u32; 3]| v[0] + v[1] * g[0] + v[2] * g[0] * g[1];
                    let (u, w) = (rank(up), rank(down));
                    p.push(
                        me,
                        Action::Round {
                            sends: vec![Xfer::plain(u, face), Xfer::plain(w, face)],
                            recvs: vec![Xfer::plain(w, face), Xfer::plain(u, face)],
                        },
                    );
                }
            }
        }
    }
    collectives::emit(p, layout, Collective::Allreduce, 0, 16, choice);
}

fn lu(p: &mut Programs, edge: u64, n: u32) {
    let l2 = log2(n);
    let xdim = 1u32 << l2.div_ceil(2);
    let ydim = n / xdim;
    let (nx, ny) = (edge / xdim as u64, edge / ydim as u64);
    for me in 0..n {
        let (i, j) = (me % xdim, me / xdim);
        let east = (i + 1 < xdim).then(|| me + 1);
        let west = (i > 0).then(|| me - 1);
        let south = (j + 1 < ydim).then(|| me + xdim);
        let north = (j > 0).then(|| me - xdim);
        let prog = &mut p.ranks[me as usize];
        for (from, to) in [([west, north], [east, south]), ([east, south], [west, north])] {
            for _ in 1..edge - 1 {
                let recvs =
                    from.iter().zip([ny, nx]).filter_map(|(q, len)| q.map(|q| Xfer::plain(q, len * 40))).collect();
                prog.push(Action::Round { sends: Vec::new(), recvs });
                let sends =
                    to.iter().zip([ny, nx]).filter_map(|(q, len)| q.map(|q| Xfer::plain(q, len * 40))).collect();
                prog.push(Action::Round { sends, recvs: Vec::new() });
            }
        }
        let halo: Vec<(u32, u64)> = [(east, ny), (west, ny), (south, nx), (north, nx)]
            .iter()
            .filter_map(|&(q, len)| q.map(|q| (q, len * edge * 80)))
            .collect();
        prog.push(Action::Round {
            sends: halo.iter().map(|&(q, b)| Xfer::plain(q, b)).collect(),
            recvs: halo.iter().map(|&(q, b)| Xfer::plain(q, b)).collect(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mpi::collectives::{Algo, AutoRule};
    use crate::mpi::placement::Placement;
    use crate::mpi::program::{check, Sends};

    const DEFAULT: AlgoChoice = AlgoChoice {
        algo: Algo::Default,
        one_way_delay_us: 0.0,
        auto: AutoRule { min_delay_us: 50.0, min_bytes: 1 << 16 },
        rules: crate::mpi::coll_rules::CollRules::Mpich2,
        wan_chunk_bytes: None,
    };

    #[test]
    fn every_skeleton_completes_without_deadlock_and_ft_is_large_message() {
        let layout = Layout::new(4, 2, 16, &Placement::Block).unwrap();
        let node = NodeParams::s1_node();
        for app in [AppName::Is, AppName::Ft, AppName::Cg, AppName::Mg, AppName::Lu] {
            let a = build(app, NasClass::A, &layout, &node, None, DEFAULT);
            let mut bufs = vec![vec![0u64; 256]; 16];
            let mut one = a.programs.clone();
            one.repeat = 1;
            check(&one, &mut bufs.clone(), Sends::Buffered).unwrap_or_else(|e| panic!("{app:?}: {}", e.0));
            let all_rndv = Sends::Rendezvous { eager_threshold_bytes: 0, is_rendezvous: &|_, _, _| true };
            check(&one, &mut bufs, all_rndv).unwrap_or_else(|e| panic!("{app:?}, rendezvous: {}", e.0));
            assert!(a.compute_us_per_iter > 0.0);
        }
        let ft = build(AppName::Ft, NasClass::B, &layout, &node, None, DEFAULT);
        let cg = build(AppName::Cg, NasClass::B, &layout, &node, None, DEFAULT);
        // CG reserves each rank's program exactly (and every program is shrunk after building).
        assert!(cg.programs.ranks.iter().all(|r| r.capacity() == r.len()));
        assert!(ft.large_share > 0.8 && ft.large_share > cg.large_share, "{} {}", ft.large_share, cg.large_share);
    }
}
