//! MPI across two clusters joined by a long-haul link.
//!
//! Layers, each in its own file: `placement` (ranks on N nodes x P processes per cluster),
//! `program` (what ranks do, and the checksum checker), `coll_flat` / `collectives` (flat and
//! hierarchical algorithms), `engine` + `keyed_queues` + `protocol` + `reliable` + `shm` (the
//! timing model: eager, rendezvous, credits over IB verbs; the library's own reliability over
//! UD/UC; shared memory within a node), workloads `osu`, `apps` (NAS), `trace` (replay), and
//! `scenario` (plain data, validated once).

pub(crate) mod apps;
pub(crate) mod btl_tcp;
pub(crate) mod coll_flat;
pub(crate) mod coll_rules;
pub(crate) mod collectives;
pub(crate) mod engine;
pub(crate) mod fluid;
pub(crate) mod keyed_queues;
pub(crate) mod network;
pub(crate) mod ob1_tcp;
pub(crate) mod osu;
pub(crate) mod params;
pub(crate) mod placement;
pub(crate) mod program;
pub(crate) mod protocol;
pub(crate) mod reliable;
pub(crate) mod scenario;
pub(crate) mod scenario_tcp;
pub(crate) mod shm;
pub(crate) mod trace;

/// Longest compute step an application iteration or a trace event may take (us): 100 s, well
/// inside the simulation's hour of simulated time.
pub const MAX_COMPUTE_US: f64 = 1e8;

use serde::Serialize;

use crate::engine::time::{to_s, to_us, S};
use crate::engine::{EventQueue, Stop, Time};
use crate::ib::{IbHosts, IbPacket, Transport};
use crate::net::{Fabric, NodeId};
use crate::record::PathColumns;
use crate::scenario::{in_range_f, Resolved, ScenarioError, TransportName};
use crate::tcp::hosts::TcpHosts;
use crate::tcp::TcpPacket;
use crate::world::{App, TimerPolicy, World};
use crate::{tcp, topology};
use collectives::AlgoChoice;
use engine::{Channel, Mpi, MpiStats};
use fluid::paths::{FluidParams, Paths};
use fluid::FluidIb;
use network::Network;
use ob1_tcp::Ob1Tcp;
use params::MpiParams;
use placement::{Layout, Placement};
use program::{Programs, Sends};
use protocol::Verbs;
use scenario::{MpiNet, MpiResolved, MpiScenario, TraceSpec, Workload};
use scenario_tcp::TcpNet;

/// One MPI run. Field names carry their unit (MB = 10^6 bytes, Mps = 10^6 messages/s).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[allow(non_snake_case)]
pub struct MpiRecord {
    /// The hardware profile (a verbs testbed), or for MPI over TCP the WAN rate and host stack.
    pub testbed: String,
    /// The adapter profile's name ("none (tcp)" over TCP).
    pub hca: String,
    /// The node profile (cores, memory, shared-memory costs).
    pub node: String,
    /// "rc", "uc", "ud" (MPI over verbs) or "tcp" (Open MPI's ob1 over TCP).
    pub transport: String,
    /// "packet" or "fluid": the level the network was simulated at (`mpi.network`).
    pub network: String,
    /// "osu", "app" (a NAS kernel) or "trace" (a replayed trace).
    pub workload: String,
    /// OSU: the benchmark (e.g. "latency", "bw", "bcast").
    pub bench: Option<String>,
    /// Applications: the NAS kernel (e.g. "is", "ft").
    pub app: Option<String>,
    /// Applications: the NAS problem class (e.g. "a", "b").
    pub class: Option<String>,
    /// The collective algorithm used (the library's rules, or one pinned by the scenario).
    pub algo: String,
    /// OSU: the message size, bytes.
    pub size_bytes: Option<u64>,
    /// MPI ranks in the job.
    pub ranks: u32,
    /// Nodes per cluster.
    pub nodes: u32,
    /// Ranks (processes) per node.
    pub ppn: u32,
    /// The long-haul link is on the measured path: every point-to-point pair has a rank in each
    /// cluster (collectives, applications, traces: ranks run in both). Block placement puts an
    /// osu_latency pair on two nodes of cluster A once there are two nodes per cluster.
    pub crosses_wan: bool,
    /// osu_mbw_mr: communicating pairs (senders in cluster A, receivers in B).
    pub pairs: Option<u32>,
    /// bw, bibw, mbw_mr: messages in flight per window (OSU's window size).
    pub window_msgs: Option<u32>,
    /// The path: delay, fibre, one-way delay, distance ([`PathColumns`], flattened in place).
    #[serde(flatten)]
    pub path: PathColumns,
    /// Largest message sent eagerly; larger ones take the rendezvous protocol.
    pub eager_threshold_bytes: u32,
    /// The rendezvous protocol: "rput", "rget" or "r3" over verbs, "ob1-tcp" over TCP.
    pub rndv_protocol: String,
    /// The run seed: same scenario and seed, bit-identical record.
    pub seed: u64,
    /// OSU: osu_latency's half round trip, or a collective's call time averaged per rank and then over the ranks,
    /// microseconds.
    pub lat_us: Option<f64>,
    /// OSU collectives: the least rank's average call time, microseconds (osu_latency: `lat_us`).
    pub lat_min_us: Option<f64>,
    /// OSU collectives: the greatest rank's average call time, microseconds (osu_latency: `lat_us`).
    pub lat_max_us: Option<f64>,
    /// OSU bandwidth benchmarks: MB/s (10^6 B).
    pub bw_MBps: Option<f64>,
    /// OSU bandwidth benchmarks: messages per second, in millions (osu_mbw_mr's figure).
    pub msg_rate_Mps: Option<f64>,
    /// Applications and traces: predicted run time (scaled to the class's iterations).
    pub run_time_s: Option<f64>,
    /// Applications: the compute part of `run_time_s`, seconds.
    pub compute_s: Option<f64>,
    /// Iterations the record stands for (OSU's, or the NAS class's).
    pub iterations: u64,
    /// Iterations actually simulated (an application scales its run time up from them).
    pub iterations_simulated: u64,
    /// Applications: share of bytes sent in messages of 64 KiB and more, in [0, 1].
    pub large_msg_share: Option<f64>,
    /// MPI messages sent, every rank.
    pub messages: u64,
    /// Messages sent eagerly.
    pub eager_messages: u64,
    /// Messages sent by rendezvous.
    pub rendezvous_messages: u64,
    /// Messages between ranks of one node (shared memory).
    pub shm_messages: u64,
    /// Library sends (packets: eager, RTS, CTS, FIN, R3 chunks; UD/UC also every data frame) that
    /// found no credit: RC takes the send/receive channel instead of the ring, UD/UC waits for
    /// the window. Not MPI messages: a UD rendezvous of 1 MiB can stall hundreds of frames.
    pub credit_stalls: u64,
    /// Messages delivered to their receivers.
    pub delivered_messages: u64,
    /// Messages delivered out of order on a pair (0 unless the transport reorders).
    pub order_violations: u64,
    /// Packets the transport sent again (RC, TCP).
    pub retransmitted_packets: u64,
    /// MPI over UD/UC: frames the library resent after its retry timeout.
    pub resent_frames: u64,
    /// Simulated time when the run stopped, microseconds.
    pub sim_time_us: f64,
    /// Events the engine handled (the cost of the run).
    pub sim_events: u64,
    /// "ok", or why the run did not complete.
    pub status: String,
}

/// Simulated time after which a run is abandoned.
const SIM_TIME_LIMIT: u64 = 3600 * S;
/// How long the flow level runs on after the job to land what was still on the wire: a control
/// message's latency even over 20,000 km of fibre (~100 ms one way) many times over.
const DRAIN_LIMIT: u64 = S;

fn lower<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v).ok().and_then(|j| j.as_str().map(str::to_string)).unwrap_or_default()
}

/// Validate a JSON MPI scenario and run it.
pub fn run_mpi_json(text: &str) -> Result<MpiRecord, ScenarioError> {
    run_mpi(&MpiScenario::from_json(text)?.resolve()?)
}

/// Validate a JSON MPI scenario without running it (the checks `run_mpi` makes before running).
/// Returns the library's parameters as the scenario resolves them: its defaults where it is
/// silent, before the eager limits that follow from the job's size (`MpiParams::for_job_size`).
pub fn validate_mpi_json(text: &str) -> Result<MpiParams, ScenarioError> {
    let r = MpiScenario::from_json(text)?.resolve()?;
    let slots = 2 * r.nodes * r.ppn;
    match &r.workload {
        Workload::Osu(_) => Ok(()),
        Workload::App(a) => apps::check_ranks(a.name, slots).map_err(ScenarioError),
        Workload::Trace(t) => trace_programs(&r, t).map(|_| ()),
    }?;
    Ok(r.params)
}

/// A trace's programs and placement, checked to complete: every receive has its send, and no
/// blocking send above the eager threshold waits for a receive its peer posts only later.
fn trace_programs(r: &MpiResolved, t: &TraceSpec) -> Result<(Programs, Layout), ScenarioError> {
    let in_file = |e: String| ScenarioError(format!("{}: {e}", t.name));
    let parsed = trace::parse(&t.name, &t.text).map_err(ScenarioError)?;
    trace::check_pairs(&parsed, &t.name).map_err(ScenarioError)?;
    let layout = Layout::new(r.nodes, r.ppn, parsed.ranks, &r.placement).map_err(in_file)?;
    let p = trace::programs(&parsed, &layout, algo_choice(r));
    let params = job_params(r, layout.ranks());
    let is_eager = |bytes: u64| match &r.net {
        MpiNet::Tcp(t) => t.btl.is_eager(bytes),
        MpiNet::Verbs { .. } => params.is_eager(bytes),
    };
    let is_rendezvous = |s: u32, d: u32, bytes: u64| !layout.same_node(s, d) && !is_eager(bytes);
    let sends = Sends::Rendezvous { eager_threshold_bytes: eager_threshold(r, &params), is_rendezvous: &is_rendezvous };
    program::check(&p, &mut p.zero_buffers(), sends).map_err(|e| in_file(e.0))?;
    Ok((p, layout))
}

/// The collective algorithm the scenario asks for, and what `auto` decides it by.
fn algo_choice(r: &MpiResolved) -> AlgoChoice {
    AlgoChoice {
        algo: r.algo,
        one_way_delay_us: r.net.one_way_delay_us(),
        auto: r.params.auto,
        rules: r.params.coll,
        wan_chunk_bytes: r.wan_chunk_bytes,
    }
}

/// The largest message that goes eagerly (over TCP: Open MPI's limit, header included).
fn eager_threshold(r: &MpiResolved, params: &MpiParams) -> u32 {
    match &r.net {
        MpiNet::Tcp(t) => t.btl.eager_limit_bytes.min(u32::MAX as u64) as u32,
        MpiNet::Verbs { .. } => params.eager_threshold_bytes,
    }
}

/// The library's parameters for a job of `ranks` processes (the eager limits follow its size).
fn job_params(r: &MpiResolved, ranks: u32) -> MpiParams {
    r.params.clone().for_job_size(ranks, r.fixed_threshold, r.fixed_credits)
}

/// What a run left behind, whatever its channel.
struct Outcome {
    marks: Vec<Vec<(u32, u64, Time)>>,
    stats: MpiStats,
    /// When the last rank's CPU is free, or the simulation stopped if later.
    end: Time,
    now: Time,
    events: u64,
    status: String,
    retransmitted_packets: u64,
}

impl Outcome {
    /// `(now, events)`: the simulated time the run stopped at and the events it handled;
    /// `trouble`: the transport's own reason the run failed, if any.
    fn new<C: Channel>(
        mpi: Mpi<C>,
        (now, events): (Time, u64),
        stop: Stop,
        trouble: Option<&str>,
        retransmitted: u64,
    ) -> Self {
        let status = if let Some(f) = &mpi.failure {
            f.clone()
        } else if let Some(t) = trouble {
            t.to_string()
        } else if stop == Stop::Finished && mpi.progress() != Some(1.0) {
            // Every rank played its program to the end: each step was counted (progress).
            "invariant broken: the programs ended with steps not counted".to_string()
        } else if stop == Stop::Finished {
            "ok".to_string()
        } else {
            format!("incomplete: stopped ({stop:?}) after {:.3} s simulated", to_s(now))
        };
        let end = mpi.ranks.iter().map(|x| x.cpu_free).max().unwrap_or(0).max(now);
        Outcome { marks: mpi.marks, stats: mpi.stats, end, now, events, status, retransmitted_packets: retransmitted }
    }
}

/// Fabric host of every rank of `layout`: node n of cluster A is `a[n]`, of cluster B `b[n]`.
fn hosts(layout: &Layout, nodes: u32, a: &[NodeId], b: &[NodeId]) -> Vec<NodeId> {
    layout.node.iter().map(|&n| if n < nodes { a[n as usize] } else { b[(n - nodes) as usize] }).collect()
}

/// Play `progs` (ranks placed by `layout`) over the scenario's two clusters joined by verbs.
fn simulate_verbs(
    r: &MpiResolved,
    base: &Resolved,
    transport: TransportName,
    layout: &Layout,
    progs: Programs,
) -> Outcome {
    let mut fabric: Fabric<IbPacket> = Fabric::new(base.seed);
    let clusters = topology::build(base, &mut fabric, r.nodes as usize);
    let host = hosts(layout, r.nodes, &clusters.hosts_a, &clusters.hosts_b);
    let mut hca = base.hca.clone();
    // The RDMA reads the library lets a queue pair have outstanding (at most the adapter's).
    if let Some(reads) = r.params.outstanding_reads {
        hca.max_rd_atomic = hca.max_rd_atomic.min(reads);
    }
    let post_ns = hca.post_ns;
    let transport = match transport {
        TransportName::Rc => Transport::Rc,
        TransportName::Uc => Transport::Uc,
        TransportName::Ud => Transport::Ud,
    };
    let mut params = job_params(r, layout.ranks());
    if hca.name.starts_with("connectx") {
        params.coalesce_after = 0; // as MVAPICH2 does for MLX_CX_* adapters (ibv_param.c)
    }
    let costs = (params.call_ns, params.smp_chunk_bytes);
    if r.network == Network::Fluid {
        let mut q = EventQueue::new();
        let paths = Paths::new(&fabric, FluidParams::new(&hca, base.mtu_bytes));
        let net = FluidIb::new(paths);
        let verbs: Verbs<FluidIb> = Verbs::new(params, transport, base.mtu_bytes, post_ns);
        let mpi = Mpi::new(layout.clone(), r.node.clone(), host, progs, costs, verbs);
        let mut world = World::new(fabric, net, mpi, TimerPolicy::Coalesced);
        let stop = world.run(&mut q, SIM_TIME_LIMIT);
        let (now, events) = (q.now(), q.events_handled());
        let broken = if stop == Stop::Finished {
            // The job ends with its last rank; what the channel still had on the wire then (a
            // credit update, an ACK) lands afterwards, and only then must every byte be delivered.
            world.draining = true;
            world.resume(&mut q, now + DRAIN_LIMIT);
            world.net.broken_invariant()
        } else {
            None
        };
        return Outcome::new(world.app, (now, events), stop, broken, 0);
    }
    // MVAPICH2's QP timeout exponent 20 and retry count 7 (ibv_param.h defaults).
    let ib = IbHosts::new(hca, fabric.nodes.len(), 20, 7);
    let verbs: Verbs = Verbs::new(params, transport, base.mtu_bytes, post_ns);
    let mpi = Mpi::new(layout.clone(), r.node.clone(), host, progs, costs, verbs);
    let mut world = World::new(fabric, ib, mpi, TimerPolicy::Coalesced);
    let mut q = EventQueue::new();
    let stop = world.run(&mut q, SIM_TIME_LIMIT);
    let trouble = (world.net.stats.qp_errors > 0).then_some("qp error: retry count exceeded");
    let retransmitted = world.net.stats.retransmitted_packets;
    Outcome::new(world.app, (q.now(), q.events_handled()), stop, trouble, retransmitted)
}

/// Play `progs` over the scenario's two clusters joined by TCP: Open MPI's ob1 on the TCP BTL,
/// one connection per pair of ranks on different hosts that talks, opened on its first frame. The library's CPU time per frame is
/// the host layer's (`per_msg_ns`); a call costs nothing more.
fn simulate_tcp(r: &MpiResolved, t: &TcpNet, layout: &Layout, progs: Programs) -> Outcome {
    let tcp = &t.tcp;
    let mut fabric: Fabric<TcpPacket> = Fabric::new(tcp.seed);
    let p = tcp::path::build(tcp, &mut fabric, r.nodes as usize);
    let net = TcpHosts::new(fabric.nodes.len(), tcp.framing(), &tcp.stack, t.btl.per_msg_ns);
    let host = hosts(layout, r.nodes, &p.hosts_a, &p.hosts_b);
    let ch = Ob1Tcp::new(tcp.params.clone(), tcp.cc, t.btl.clone());
    let mpi = Mpi::new(layout.clone(), r.node.clone(), host, progs, (0.0, r.params.smp_chunk_bytes), ch);
    let mut world = World::new(fabric, net, mpi, TimerPolicy::Direct);
    let mut q = EventQueue::new();
    let stop = world.run(&mut q, SIM_TIME_LIMIT);
    let retransmitted = world.net.dirs.iter().map(|d| d.tx.stats.retransmits).sum();
    Outcome::new(world.app, (q.now(), q.events_handled()), stop, None, retransmitted)
}

/// Run one resolved MPI scenario.
pub fn run_mpi(r: &MpiResolved) -> Result<MpiRecord, ScenarioError> {
    let choice = algo_choice(r);
    let slots = 2 * r.nodes * r.ppn;
    // Workload -> (programs, ranks' placement, algorithm name, iterations, extra facts).
    let (progs, layout, algo_used, full_iters, compute_us, large) = match &r.workload {
        Workload::Osu(o) => {
            let ranks = o.bench.ranks(o.pairs.unwrap_or(1), slots);
            let placement = match (&r.placement, o.bench) {
                // osu_mbw_mr pairs rank i with rank i + pairs: senders in A, receivers in B.
                (Placement::Block, osu::OsuBench::MbwMr) => {
                    let k = ranks / 2;
                    Placement::Map(
                        (0..ranks).map(|x| if x < k { x / r.ppn } else { r.nodes + (x - k) / r.ppn }).collect(),
                    )
                }
                (p, _) => p.clone(),
            };
            let layout = Layout::new(r.nodes, r.ppn, ranks, &placement).map_err(ScenarioError)?;
            let (p, used) = osu::programs(o, &layout, choice);
            let iterations = o.iterations.unwrap_or(osu::ITERATIONS);
            (p, layout, used.to_string(), iterations, None, None)
        }
        Workload::App(a) => {
            let layout = Layout::new(r.nodes, r.ppn, slots, &r.placement).map_err(ScenarioError)?;
            apps::check_ranks(a.name, slots).map_err(ScenarioError)?;
            if let Some(us) = a.compute_us_per_iter {
                in_range_f("compute_us_per_iter", us, 0.0, MAX_COMPUTE_US)?;
            }
            let mut app = apps::build(a.name, a.class, &layout, &r.node, a.compute_us_per_iter, choice);
            if let Some(it) = a.iterations {
                if !(1..=100_000).contains(&it) {
                    return Err(ScenarioError(format!("iterations: {it} is out of range [1, 100000]")));
                }
                app.programs.repeat = it;
                app.iterations = it;
            }
            (
                app.programs,
                layout,
                r.algo.name().to_string(),
                app.iterations,
                Some(app.compute_us_per_iter),
                Some(app.large_share),
            )
        }
        Workload::Trace(t) => {
            let (p, layout) = trace_programs(r, t)?;
            (p, layout, r.algo.name().to_string(), 1, None, None)
        }
    };
    let simulated = if matches!(r.workload, Workload::Osu(_)) { full_iters } else { progs.repeat };
    let crosses_wan = match &r.workload {
        Workload::Osu(o) => o.bench.crosses_wan(&layout),
        _ => layout.spans_clusters(),
    };
    let eager_threshold_bytes = eager_threshold(r, &job_params(r, layout.ranks()));
    let m = match &r.net {
        MpiNet::Verbs { base, transport } => simulate_verbs(r, base, *transport, &layout, progs),
        MpiNet::Tcp(t) => simulate_tcp(r, t, &layout, progs),
    };
    let (mut lat, mut lat_min, mut lat_max, mut bw, mut rate) = (None, None, None, None, None);
    let mut run_time = None;
    let (mut bench, mut app, mut class, mut size, mut pairs, mut window) = (None, None, None, None, None, None);
    let end = m.end;
    match &r.workload {
        Workload::Osu(o) => {
            (lat, lat_min, lat_max, bw, rate) = osu::measure(o, &m.marks);
            bench = Some(o.bench.name().to_string());
            size = Some(o.size_bytes);
            pairs = (o.bench == osu::OsuBench::MbwMr).then(|| o.pairs.unwrap_or(1));
            window = o.bench.has_window().then(|| o.window.unwrap_or(osu::WINDOW));
        }
        Workload::App(a) => {
            run_time = Some(to_s(end) * full_iters as f64 / simulated as f64);
            app = Some(lower(&a.name));
            class = Some(lower(&a.class));
        }
        Workload::Trace(_) => run_time = Some(to_s(end)),
    }
    let workload = match &r.workload {
        Workload::Osu(_) => "osu",
        Workload::App(_) => "app",
        Workload::Trace(_) => "trace",
    };
    let (testbed, hca, transport, rndv_protocol, delay_us, fibre_km) = match &r.net {
        MpiNet::Verbs { base, transport } => (
            base.testbed.clone(),
            base.hca.name.clone(),
            lower(transport),
            lower(&r.params.rndv),
            base.delay_us,
            base.fibre_km,
        ),
        MpiNet::Tcp(t) => (
            format!("tcp {} Gb/s, {} stack", t.tcp.wan_gbps, t.tcp.stack.name),
            "none (tcp)".into(),
            "tcp".into(),
            "ob1-tcp".into(),
            t.tcp.delay_us,
            t.tcp.fibre_km,
        ),
    };
    Ok(MpiRecord {
        testbed,
        hca,
        node: r.node.name.clone(),
        transport,
        network: r.network.name().into(),
        workload: workload.into(),
        bench,
        app,
        class,
        algo: algo_used,
        size_bytes: size,
        ranks: layout.ranks(),
        nodes: r.nodes,
        ppn: r.ppn,
        crosses_wan,
        pairs,
        window_msgs: window,
        path: PathColumns::new(delay_us, fibre_km, choice.one_way_delay_us),
        eager_threshold_bytes,
        rndv_protocol,
        seed: r.net.seed(),
        lat_us: lat,
        lat_min_us: lat_min,
        lat_max_us: lat_max,
        bw_MBps: bw,
        msg_rate_Mps: rate,
        run_time_s: run_time,
        compute_s: compute_us.map(|c| c * full_iters as f64 * 1e-6),
        iterations: full_iters,
        iterations_simulated: simulated,
        large_msg_share: large,
        messages: m.stats.messages,
        eager_messages: m.stats.eager,
        rendezvous_messages: m.stats.rendezvous,
        shm_messages: m.stats.shm,
        credit_stalls: m.stats.credit_stalls,
        delivered_messages: m.stats.delivered,
        order_violations: m.stats.order_violations,
        retransmitted_packets: m.retransmitted_packets,
        resent_frames: m.stats.resent_frames,
        sim_time_us: to_us(m.now),
        sim_events: m.events,
        status: m.status,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `progs` and the same programs written out (`Programs::expanded`: rounds stored one by
    /// one, no `Rounds` or `Exchange` left) time exactly alike: every mark, counter and event.
    fn plays_as_written_out(r: &MpiResolved, layout: &Layout, progs: Programs, what: &str) {
        let stored = progs.expanded().into_owned();
        let kept = |a: &program::Action| matches!(a, program::Action::Rounds(_) | program::Action::Exchange { .. });
        assert!(!stored.ranks.iter().flatten().any(kept), "{what}");
        let played = |p: Programs| {
            let MpiNet::Verbs { base, transport } = &r.net else { unreachable!("verbs") };
            let o = simulate_verbs(r, base, *transport, layout, p);
            let s = &o.stats;
            (o.marks.clone(), (s.messages, s.delivered, s.credit_stalls, s.resent_frames), o.events, o.status)
        };
        let (a, b) = (played(progs), played(stored));
        assert_eq!(a, b, "{what}");
        assert_eq!(a.3, "ok", "{what}");
    }

    /// Rounds generated as they are played (`Action::Rounds`) time exactly as the same rounds
    /// stored one by one: every mark, counter and event is the same.
    #[test]
    fn patterned_rounds_play_as_the_rounds_they_stand_for() {
        for (bench, size, algo, transport, nodes) in [
            ("bcast", 1 << 20, "scatter-ring", "rc", 5),
            ("alltoall", 65536, "pairwise", "rc", 4),
            ("alltoall", 65536, "pairwise", "ud", 3),
            ("alltoall", 2048, "scattered", "rc", 20),
        ] {
            let json = format!(
                r#"{{"seed": 3, "path": {{"delay_us": 10, "loss": 0.0005}}, "cluster": {{"nodes": {nodes}, "ppn": 2}},
                "mpi": {{"transport": "{transport}", "algo": "{algo}"}},
                "osu": {{"bench": "{bench}", "size_bytes": {size}, "iterations": 2, "warmup": 1}}}}"#
            );
            let r = MpiScenario::from_json(&json).unwrap().resolve().unwrap();
            let Workload::Osu(o) = &r.workload else { unreachable!() };
            let layout = Layout::new(r.nodes, r.ppn, 4 * nodes, &r.placement).unwrap();
            let (progs, _) = osu::programs(o, &layout, algo_choice(&r));
            assert!(progs.ranks.iter().flatten().any(|a| matches!(a, program::Action::Rounds(_))), "{bench} {algo}");
            plays_as_written_out(&r, &layout, progs, &format!("{bench} {algo} over {transport}"));
        }
    }

    /// A timing program's sendrecvs, kept as `Action::Exchange`, time exactly as the rounds
    /// they stand for (NAS CG's skeleton is made of them): every mark, counter and event is the same.
    #[test]
    fn exchanges_play_as_the_rounds_they_stand_for() {
        for transport in ["rc", "ud"] {
            let json = format!(
                r#"{{"seed": 3, "path": {{"delay_us": 10, "loss": 0.0005}}, "cluster": {{"nodes": 4, "ppn": 2}},
                "mpi": {{"transport": "{transport}"}}, "app": {{"name": "cg", "class": "A", "iterations": 2}}}}"#
            );
            let r = MpiScenario::from_json(&json).unwrap().resolve().unwrap();
            let Workload::App(a) = &r.workload else { unreachable!() };
            let layout = Layout::new(r.nodes, r.ppn, 16, &r.placement).unwrap();
            let mut progs = apps::build(a.name, a.class, &layout, &r.node, None, algo_choice(&r)).programs;
            progs.repeat = 2;
            assert!(progs.ranks.iter().flatten().any(|a| matches!(a, program::Action::Exchange { .. })));
            plays_as_written_out(&r, &layout, progs, transport);
        }
    }

    /// The distinct pairs of ranks on different nodes whose programs send to each other.
    fn talking_pairs(progs: &Programs, layout: &Layout) -> std::collections::BTreeSet<(u32, u32)> {
        let mut pairs = std::collections::BTreeSet::new();
        for (r, actions) in progs.expanded().ranks.iter().enumerate() {
            for a in actions {
                if let program::Action::Round { sends, .. } | program::Action::Post { sends, .. } = a {
                    for x in sends.iter().filter(|x| !layout.same_node(r as u32, x.peer)) {
                        pairs.insert((x.peer.min(r as u32), x.peer.max(r as u32)));
                    }
                }
            }
        }
        pairs
    }

    /// The scenario `json` resolved, with its OSU programs and placement.
    fn osu_job(json: &str) -> (MpiResolved, Programs, Layout) {
        let r = MpiScenario::from_json(json).unwrap().resolve().unwrap();
        let Workload::Osu(o) = &r.workload else { unreachable!("an OSU scenario") };
        let ranks = o.bench.ranks(1, 2 * r.nodes * r.ppn);
        let layout = Layout::new(r.nodes, r.ppn, ranks, &r.placement).unwrap();
        let (progs, _) = osu::programs(o, &layout, algo_choice(&r));
        (r, progs, layout)
    }

    /// Over TCP a 512-rank job runs, and only the pairs that talk get a connection (a binary
    /// tree bcast and the barrier: O(ranks log ranks), not the 130,816 pairs of all ranks).
    #[test]
    fn tcp_connections_open_only_for_the_pairs_that_talk() {
        let json = r#"{"seed": 1, "path": {"delay_us": 100}, "cluster": {"nodes": 256},
            "mpi": {"transport": "tcp"}, "osu": {"bench": "bcast", "size_bytes": 1024, "iterations": 1}}"#;
        let (r, progs, layout) = osu_job(json);
        let MpiNet::Tcp(t) = &r.net else { unreachable!("tcp") };
        let pairs = talking_pairs(&progs, &layout);
        let o = simulate_tcp(&r, t, &layout, progs);
        assert_eq!(o.status, "ok");
        assert_eq!(o.stats.delivered, o.stats.messages);
        assert_eq!(o.stats.connections, pairs.len() as u64);
        assert!(pairs.len() < 512 * 10, "{} pairs talk", pairs.len());
    }

    /// Over verbs, connections open only between the ranks that talk (a 256-rank bcast: its
    /// tree's edges and the barrier's peers, under 2,304, not 32,640), one per pair of ranks
    /// also over UD and UC with loss (whose acknowledgements and credit updates, wires of no
    /// message, find the connection their messages' pairs remember), and a drained RC connection
    /// parks its state: every connection of an alltoall, which talks to each peer once per
    /// call, is parked at least once (the goldens show that parking changes no record; UD and
    /// UC keep their sequence state).
    #[test]
    fn verbs_connections_follow_the_pairs_that_talk_and_drained_ones_park() {
        let bcast = r#"{"seed": 1, "path": {"delay_us": 10}, "cluster": {"nodes": 128},
            "osu": {"bench": "bcast", "size_bytes": 1024, "iterations": 1}}"#;
        let alltoall = r#"{"seed": 1, "path": {"delay_us": 10}, "cluster": {"nodes": 32},
            "osu": {"bench": "alltoall", "size_bytes": 1024, "iterations": 1}}"#;
        let lossy = |transport| {
            format!(
                r#"{{"seed": 1, "path": {{"delay_us": 10, "loss": 0.001}}, "cluster": {{"nodes": 32}},
                "mpi": {{"transport": "{transport}"}}, "osu": {{"bench": "alltoall", "size_bytes": 4096, "iterations": 2}}}}"#
            )
        };
        let (ud, uc) = (lossy("ud"), lossy("uc"));
        for (json, ranks, parks) in [(bcast, 256u64, true), (alltoall, 64, true), (&ud, 64, false), (&uc, 64, false)] {
            let (r, progs, layout) = osu_job(json);
            let MpiNet::Verbs { base, transport } = &r.net else { unreachable!("verbs") };
            let pairs = talking_pairs(&progs, &layout).len() as u64;
            let o = simulate_verbs(&r, base, *transport, &layout, progs);
            assert_eq!((o.status.as_str(), o.stats.delivered), ("ok", o.stats.messages));
            assert_eq!(o.stats.connections, pairs);
            assert!(!parks || o.stats.parked >= o.stats.connections, "{} of {} parked", o.stats.parked, pairs);
            if ranks == 256 {
                // The tree's edges and Bruck's barrier (log2 ranks peers a rank): ranks log ranks.
                assert!(pairs <= ranks * (u64::from(ranks.ilog2()) + 1), "{pairs} pairs talk");
            } else {
                assert_eq!(pairs, ranks * (ranks - 1) / 2);
            }
        }
    }
}
