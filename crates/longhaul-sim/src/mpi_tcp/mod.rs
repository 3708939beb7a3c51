//! MPI over TCP: Open MPI's ob1 PML on the TCP BTL across the simulated long-haul path, for
//! the OSU latency, bw and bibw benchmarks (one rank pair) and osu_bcast (N ranks per cluster,
//! Open MPI's own broadcast or the two-level one, [`coll`]).
//!
//! The counterpart of [`crate::mpi`] (MPI over InfiniBand verbs) for clusters joined by an IP
//! path, and for comparing the model with real Open MPI run through the link emulator
//! (`longhaul compare mpi`). Layers: [`btl`] (the frames a message becomes: eager, or RTS +
//! ACK + the rest) → [`stream`] (frames as bytes, bytes as segments) → [`net`] (the rank
//! pairs' TCP connections on the TCP model's sender, receiver, stack costs and path) and
//! [`ranks`] (the OSU programs, matching, per-message CPU time) → [`scenario`].
//!
//! Each rank pair has one TCP connection (as the TCP BTL opens with `btl_tcp_links` = 1). One
//! rank per host, block placement: ranks 0..N-1 on hosts A0..A(N-1), the others on B0.. .
//! Traffic inside a cluster goes host -> the cluster's box -> host on the path's host links
//! (the emulator's veth + bridge), never over the WAN.

pub mod coll;
pub mod scenario;

use crate::engine::time::{to_s, to_us, S};
use crate::engine::{EventQueue, Stop, Time};
use crate::mpi::coll_rules::CollRules;
use crate::mpi::collectives::{Algo, AlgoChoice, AutoRule};
use crate::mpi::engine::Mpi;
use crate::mpi::ob1_tcp::Ob1Tcp;
use crate::mpi::osu;
use crate::mpi::params::{MpiParams, NodeParams};
use crate::mpi::placement::{Layout, Placement};
use crate::mpi::MpiRecord;
use crate::net::Fabric;
use crate::scenario::ScenarioError;
use crate::tcp::hosts::TcpHosts;
use crate::tcp::path;
use crate::tcp::TcpPacket;
use crate::world::{TimerPolicy, World};
use scenario::{MpiTcpResolved, MpiTcpScenario};

/// Simulated time after which a run is abandoned.
const SIM_TIME_LIMIT: Time = 3600 * S;

/// Validate a JSON MPI-over-TCP scenario and run it.
pub fn run_mpi_tcp_json(text: &str) -> Result<MpiRecord, ScenarioError> {
    Ok(run_mpi_tcp(&MpiTcpScenario::from_json(text)?.resolve()?))
}

/// Validate without running.
pub fn validate_mpi_tcp_json(text: &str) -> Result<(), ScenarioError> {
    MpiTcpScenario::from_json(text)?.resolve().map(|_| ())
}

pub fn run_mpi_tcp(r: &MpiTcpResolved) -> MpiRecord {
    let t = &r.tcp;
    let (progs, per_cluster) = match &r.bcast {
        Some((progs, _)) => (progs.clone(), r.coll.ranks_per_cluster as usize),
        None => {
            let layout = Layout::new(1, 1, 2, &Placement::Block).expect("two ranks fit two nodes");
            // Point-to-point benchmarks: no collective algorithm is ever chosen.
            let never = AutoRule { min_delay_us: f64::INFINITY, min_bytes: u64::MAX };
            let choice = AlgoChoice {
                algo: Algo::Default,
                one_way_delay_us: t.one_way_delay_us(),
                auto: never,
                rules: CollRules::OpenMpi41,
            };
            (osu::programs(&r.osu, &layout, choice).0, 1)
        }
    };
    let mut fabric: Fabric<TcpPacket> = Fabric::new(t.seed);
    let p = path::build(t, &mut fabric, per_cluster);
    let mut net = TcpHosts::new(fabric.nodes.len(), t.framing(), &t.stack, r.btl.per_msg_ns);
    let nodes = per_cluster as u32;
    let layout = Layout::new(nodes, 1, 2 * nodes, &Placement::Block).expect("a rank per host");
    let host: Vec<_> = layout
        .node
        .iter()
        .map(|&n| if n < nodes { p.hosts_a[n as usize] } else { p.hosts_b[(n - nodes) as usize] })
        .collect();
    let ch = Ob1Tcp::connect(&mut net, &host, &layout, &t.params, t.cc, r.btl.clone());
    let costs = (0.0, MpiParams::default().smp_chunk_bytes);
    let app = Mpi::new(layout, NodeParams::s1_node(), host, progs, costs, ch);
    let mut world = World::new(fabric, net, app, TimerPolicy::Direct);
    let mut q = EventQueue::new();
    let stop = world.run(&mut q, SIM_TIME_LIMIT);
    record(r, &world, &q, stop)
}

fn record<Q: Copy>(r: &MpiTcpResolved, w: &World<TcpHosts, Mpi<Ob1Tcp>>, q: &EventQueue<Q>, stop: Stop) -> MpiRecord {
    let t = &r.tcp;
    let (lat, lat_min, lat_max, bw, rate) = osu::measure(&r.osu, &w.app.marks);
    let status = if stop == Stop::Finished {
        "ok".to_string()
    } else {
        format!("incomplete: stopped ({stop:?}) after {:.3} s simulated", to_s(q.now()))
    };
    let one_way = t.one_way_delay_us();
    let s = &w.app.stats;
    MpiRecord {
        testbed: format!("tcp {} Gb/s", t.wan_gbps),
        hca: "none (tcp)".into(),
        node: t.stack.name.clone(),
        transport: "tcp".into(),
        workload: "osu".into(),
        bench: Some(r.osu.bench.name().to_string()),
        app: None,
        class: None,
        algo: r.bcast.as_ref().map_or("p2p".into(), |(_, a)| a.clone()),
        size_bytes: Some(r.osu.size_bytes),
        ranks: w.app.ranks.len() as u32,
        nodes: r.coll.ranks_per_cluster,
        ppn: 1,
        crosses_wan: true, // one rank (or ranks_per_cluster) on each side of the TCP path
        pairs: None,
        window_msgs: r.osu.bench.has_window().then(|| r.osu.window.unwrap_or(osu::WINDOW)),
        delay_us: t.delay_us,
        fibre_km: t.fibre_km,
        one_way_delay_us: one_way,
        distance_km: one_way / 5.0,
        eager_threshold_bytes: r.btl.eager_limit_bytes.min(u32::MAX as u64) as u32,
        rndv_protocol: "ob1-tcp".into(),
        seed: t.seed,
        lat_us: lat,
        lat_min_us: lat_min,
        lat_max_us: lat_max,
        bw_MBps: bw,
        msg_rate_Mps: rate,
        run_time_s: None,
        compute_s: None,
        iterations: r.osu.iterations.unwrap_or(osu::ITERATIONS),
        iterations_simulated: r.osu.iterations.unwrap_or(osu::ITERATIONS),
        large_msg_share: None,
        messages: s.messages,
        eager_messages: s.eager,
        rendezvous_messages: s.rendezvous,
        shm_messages: 0,
        credit_stalls: 0,
        delivered_messages: s.delivered,
        order_violations: s.order_violations,
        retransmitted_packets: w.net.dirs.iter().map(|d| d.tx.stats.retransmits).sum(),
        resent_frames: 0,
        sim_time_us: to_us(q.now()),
        sim_events: q.events_handled(),
        status,
    }
}
