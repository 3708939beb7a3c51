//! OSU micro-benchmarks (OMB) as rank programs, measured the way OMB measures them.
//!
//! - `latency`: ping-pong between rank 0 and rank 1; half the round trip (osu_latency).
//! - `bw`: rank 0 posts a window of 64 non-blocking sends, rank 1 the matching receives; after
//!   each window rank 1 replies with a 4-byte message (osu_bw). MB/s = bytes / time.
//! - `bibw`: both ranks post a window of receives and sends (osu_bibw); both directions counted.
//! - `mbw_mr`: `pairs` pairs (rank i in cluster A with rank i+pairs in cluster B) each run the
//!   bw loop at once; aggregate bandwidth and message rate (osu_mbw_mr).
//! - collectives: every rank times each call; a barrier separates calls; the reported latency
//!   is the average over ranks (osu_bcast etc.), with the fastest and slowest rank's average.
//!
//! OMB repeats 100-10000 times to average out noise; the simulator is deterministic, so a few
//! iterations after a warm-up give the steady state (defaults: 2 warm-up, 10 measured; eager
//! credits and connections are set up during the warm-up as in a real run).

use serde::{Deserialize, Serialize};

use super::collectives::{self, AlgoChoice, Collective};
use super::placement::Layout;
use super::program::{Action, Programs, Xfer};
use crate::engine::time::to_us;
use crate::engine::Time;
use crate::scenario::ScenarioError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OsuBench {
    Latency,
    Bw,
    Bibw,
    MbwMr,
    Bcast,
    Scatter,
    Alltoall,
    Allreduce,
}

/// osu_bw's WINDOW_SIZE and the 4-byte reply after each window.
pub const WINDOW: u32 = 64;
const ACK_BYTES: u64 = 4;
pub const WARMUP: u64 = 2;
pub const ITERATIONS: u64 = 10;

/// Mark labels: the start and end of the timed part (warm-up marks use `program::WARMUP_MARK`).
pub const START: u32 = 0;
pub const END: u32 = 1;

impl OsuBench {
    pub fn collective(self) -> Option<Collective> {
        match self {
            OsuBench::Bcast => Some(Collective::Bcast),
            OsuBench::Scatter => Some(Collective::Scatter),
            OsuBench::Alltoall => Some(Collective::Alltoall),
            OsuBench::Allreduce => Some(Collective::Allreduce),
            _ => None,
        }
    }

    /// Ranks the benchmark runs on, given `pairs` and the slots available.
    pub fn ranks(self, pairs: u32, slots: u32) -> u32 {
        match self {
            OsuBench::MbwMr => 2 * pairs,
            OsuBench::Latency | OsuBench::Bw | OsuBench::Bibw => 2,
            _ => slots.max(2),
        }
    }

    /// The benchmark keeps a window of messages in flight (osu_bw, osu_bibw, osu_mbw_mr).
    pub fn has_window(self) -> bool {
        matches!(self, OsuBench::Bw | OsuBench::Bibw | OsuBench::MbwMr)
    }

    /// The long-haul link is on the measured path: each point-to-point pair (rank i with rank
    /// i + ranks/2, as OSU pairs them) has a rank in each cluster; a collective's ranks run in both.
    pub fn crosses_wan(self, layout: &Layout) -> bool {
        match self {
            OsuBench::Latency | OsuBench::Bw | OsuBench::Bibw | OsuBench::MbwMr => {
                let k = layout.ranks() / 2;
                (0..k).all(|i| layout.cluster(i) != layout.cluster(i + k))
            }
            _ => layout.spans_clusters(),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            OsuBench::Latency => "latency",
            OsuBench::Bw => "bw",
            OsuBench::Bibw => "bibw",
            OsuBench::MbwMr => "mbw_mr",
            OsuBench::Bcast => "bcast",
            OsuBench::Scatter => "scatter",
            OsuBench::Alltoall => "alltoall",
            OsuBench::Allreduce => "allreduce",
        }
    }
}

impl super::scenario::OsuSpec {
    /// Checks what does not depend on the job's size (run before the node count is derived
    /// from `pairs`, so an out-of-range `pairs` is named as such).
    pub fn validate(&self) -> Result<(), ScenarioError> {
        let e = |m: String| Err(ScenarioError(m));
        if self.size_bytes > 1 << 30 {
            return e(format!("size_bytes: {} is out of range [0, 1073741824]", self.size_bytes));
        }
        if self.bench.collective().is_none() && self.size_bytes == 0 && self.bench != OsuBench::Latency {
            return e("size_bytes: bandwidth benchmarks need at least 1 byte".into());
        }
        if !(1..=1_000_000).contains(&self.iterations.unwrap_or(ITERATIONS)) {
            return e(format!("iterations: {} is out of range [1, 1000000]", self.iterations.unwrap_or(0)));
        }
        if !(1..=65536).contains(&self.window.unwrap_or(WINDOW)) {
            return e(format!("window: {} is out of range [1, 65536]", self.window.unwrap_or(0)));
        }
        if !(1..=65536).contains(&self.pairs.unwrap_or(1)) {
            return e(format!("pairs: {} is out of range [1, 65536]", self.pairs.unwrap_or(0)));
        }
        Ok(())
    }

    /// The collective's root must be one of the job's `ranks`.
    pub fn check_root(&self, ranks: u32) -> Result<(), ScenarioError> {
        match self.root.unwrap_or(0) {
            root if root >= ranks => Err(ScenarioError(format!("root: {root} is not a rank (valid 0..{})", ranks - 1))),
            _ => Ok(()),
        }
    }
}

/// The benchmark's programs; returns the collective algorithm used (or "p2p").
pub fn programs(spec: &super::scenario::OsuSpec, layout: &Layout, choice: AlgoChoice) -> (Programs, &'static str) {
    let n = layout.ranks();
    let mut p = Programs::timing(n as usize);
    let iters = spec.iterations.unwrap_or(ITERATIONS);
    let warm = spec.warmup.unwrap_or(WARMUP);
    let s = spec.size_bytes;
    let window = spec.window.unwrap_or(WINDOW) as usize;
    let mut used = "p2p";
    match spec.bench {
        OsuBench::Latency => {
            for i in 0..warm + iters {
                if i == warm {
                    p.ranks[0].push(Action::Mark(START));
                }
                p.ranks[0].push(Action::send(Xfer::plain(1, s)));
                p.ranks[0].push(Action::recv(Xfer::plain(1, s)));
                p.ranks[1].push(Action::recv(Xfer::plain(0, s)));
                p.ranks[1].push(Action::send(Xfer::plain(0, s)));
            }
            p.ranks[0].push(Action::Mark(END));
        }
        OsuBench::Bw | OsuBench::MbwMr => {
            let pairs = n / 2;
            collectives::emit(&mut p, layout, Collective::Barrier, 0, 0, choice.library_default());
            for k in 0..pairs {
                let (a, b) = (k, k + pairs);
                for i in 0..warm + iters {
                    if i == warm {
                        p.ranks[a as usize].push(Action::Mark(START));
                    }
                    p.ranks[a as usize]
                        .push(Action::Round { sends: vec![Xfer::plain(b, s); window], recvs: Vec::new() });
                    p.ranks[a as usize].push(Action::recv(Xfer::plain(b, ACK_BYTES)));
                    p.ranks[b as usize]
                        .push(Action::Round { sends: Vec::new(), recvs: vec![Xfer::plain(a, s); window] });
                    p.ranks[b as usize].push(Action::send(Xfer::plain(a, ACK_BYTES)));
                }
                p.ranks[a as usize].push(Action::Mark(END));
            }
        }
        OsuBench::Bibw => {
            for i in 0..warm + iters {
                for (me, peer) in [(0usize, 1u32), (1, 0)] {
                    if i == warm && me == 0 {
                        p.ranks[0].push(Action::Mark(START));
                    }
                    p.ranks[me].push(Action::Round {
                        sends: vec![Xfer::plain(peer, s); window],
                        recvs: vec![Xfer::plain(peer, s); window],
                    });
                }
            }
            p.ranks[0].push(Action::Mark(END));
        }
        _ => {
            // Every call is the same: the programs hold one (between marks, then a barrier),
            // played once per warm-up and timed iteration. Built once rather than per call, a
            // 128-rank ring allgather's 16 K rounds are allocated once, not 12 times.
            let c = spec.bench.collective().expect("collective bench");
            let root = spec.root.unwrap_or(0);
            p.mark_all(START);
            used = collectives::emit(&mut p, layout, c, root, s, choice).name();
            p.mark_all(END);
            collectives::emit(&mut p, layout, Collective::Barrier, 0, 0, choice.library_default());
            p.repeat = warm + iters;
            p.warmup = warm;
        }
    }
    (p, used)
}

/// What the benchmark measured: (lat_us, lat_min_us, lat_max_us, bw_MBps, msg_rate_Mps).
pub type Measured = (Option<f64>, Option<f64>, Option<f64>, Option<f64>, Option<f64>);

fn mark(marks: &[(u32, u64, Time)], label: u32) -> Vec<Time> {
    marks.iter().filter(|m| m.0 == label).map(|m| m.2).collect()
}

pub fn measure(spec: &super::scenario::OsuSpec, marks: &[Vec<(u32, u64, Time)>]) -> Measured {
    let iters = spec.iterations.unwrap_or(ITERATIONS) as f64;
    let window = spec.window.unwrap_or(WINDOW) as f64;
    let s = spec.size_bytes as f64;
    let span = |r: usize| -> Option<f64> {
        let (a, b) = (mark(&marks[r], START), mark(&marks[r], END));
        Some(to_us(*b.first()? - *a.first()?))
    };
    match spec.bench {
        OsuBench::Latency => {
            let l = span(0).map(|t| t / (2.0 * iters));
            (l, l, l, None, None)
        }
        OsuBench::Bw | OsuBench::Bibw | OsuBench::MbwMr => {
            let pairs = if spec.bench == OsuBench::MbwMr { marks.len() / 2 } else { 1 };
            let starts: Vec<Time> = (0..pairs).filter_map(|r| mark(&marks[r], START).first().copied()).collect();
            let ends: Vec<Time> = (0..pairs).filter_map(|r| mark(&marks[r], END).first().copied()).collect();
            if starts.len() < pairs || ends.len() < pairs {
                return (None, None, None, None, None);
            }
            let t = to_us(*ends.iter().max().expect("pairs") - *starts.iter().min().expect("pairs")) * 1e-6;
            let dirs = if spec.bench == OsuBench::Bibw { 2.0 } else { 1.0 };
            let msgs = pairs as f64 * dirs * window * iters;
            (None, None, None, Some(msgs * s / t / 1e6), Some(msgs / t / 1e6))
        }
        _ => {
            // Average call time per rank, then over ranks (osu_* prints the average).
            let per_rank: Vec<f64> = marks
                .iter()
                .filter_map(|m| {
                    let (a, b) = (mark(m, START), mark(m, END));
                    (a.len() == b.len() && !a.is_empty())
                        .then(|| a.iter().zip(&b).map(|(x, y)| to_us(y - x)).sum::<f64>() / a.len() as f64)
                })
                .collect();
            if per_rank.len() != marks.len() {
                return (None, None, None, None, None);
            }
            let avg = per_rank.iter().sum::<f64>() / per_rank.len() as f64;
            let min = per_rank.iter().copied().fold(f64::INFINITY, f64::min);
            let max = per_rank.iter().copied().fold(0.0, f64::max);
            (Some(avg), Some(min), Some(max), None, None)
        }
    }
}
