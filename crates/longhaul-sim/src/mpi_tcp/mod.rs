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

pub mod btl;
pub mod coll;
pub mod ranks;
pub mod scenario;

use crate::engine::time::{to_s, to_us, S};
use crate::engine::{EventQueue, Stop, Time};
use crate::mpi::coll_rules::CollRules;
use crate::mpi::collectives::{Algo, AlgoChoice, AutoRule};
use crate::mpi::osu;
use crate::mpi::placement::{Layout, Placement};
use crate::mpi::MpiRecord;
use crate::net::Fabric;
use crate::scenario::ScenarioError;
use crate::tcp::hosts::{TcpHosts, TcpOutput};
use crate::tcp::path;
use crate::tcp::stream;
use crate::tcp::TcpPacket;
use crate::world::{App, TimerPolicy, World};
use btl::{Frame, FrameKind};
use ranks::Ranks;
use scenario::{MpiTcpResolved, MpiTcpScenario};

/// Simulated time after which a run is abandoned.
const SIM_TIME_LIMIT: Time = 3600 * S;

#[derive(Debug, Clone, Copy)]
enum Ev {
    /// In-order bytes of a direction reached its receiving application.
    Ready(u32, u64),
    /// A rank writes a frame to a direction.
    Write(u32, Frame),
    Resume(u32),
}

type Cx<'a> = crate::world::Cx<'a, TcpHosts, Ev>;

const KINDS: [FrameKind; 4] = [FrameKind::Eager, FrameKind::Rts, FrameKind::Ack, FrameKind::Rest];

/// A protocol frame as the stream carries it: its kind in the tag's top bits, its message below.
fn to_stream(f: Frame) -> stream::Frame {
    let kind = KINDS.iter().position(|&k| k == f.kind).expect("a kind") as u64;
    stream::Frame { tag: kind << 62 | f.msg, bytes: f.bytes }
}

fn from_stream(f: stream::Frame) -> Frame {
    Frame { kind: KINDS[(f.tag >> 62) as usize], msg: f.tag & ((1 << 62) - 1), bytes: f.bytes }
}

struct MpiTcp {
    ranks: Ranks,
    /// The direction carrying rank a's frames to rank b.
    dir: Vec<Vec<u32>>,
    /// (sending rank, receiving rank) of each direction.
    ends: Vec<(u32, u32)>,
    frames: Vec<stream::Frame>,
}

impl MpiTcp {
    /// Schedule what the ranks asked for while handling an event.
    fn flush(&mut self, cx: &mut Cx) {
        for (t, a, b, f) in self.ranks.writes.drain(..) {
            cx.schedule(t, Ev::Write(self.dir[a as usize][b as usize], f));
        }
        for (t, r) in self.ranks.resumes.drain(..) {
            cx.schedule(t, Ev::Resume(r));
        }
    }
}

impl App<TcpHosts> for MpiTcp {
    type Event = Ev;

    fn start(&mut self, cx: &mut Cx) {
        for rank in 0..self.ranks.size() {
            self.ranks.advance(rank, 0);
        }
        self.flush(cx);
    }

    fn on_output(&mut self, out: TcpOutput, cx: &mut Cx) {
        if let TcpOutput::Ready { dir, delivered, at } = out {
            cx.schedule(at, Ev::Ready(dir, delivered));
        }
    }

    fn on_event(&mut self, ev: Ev, cx: &mut Cx) {
        let now = cx.now;
        match ev {
            Ev::Ready(d, bytes) => {
                cx.net.take_frames(d, bytes, &mut self.frames);
                let frames: Vec<Frame> = self.frames.drain(..).map(from_stream).collect();
                let (a, b) = self.ends[d as usize];
                self.ranks.on_frames(b, a, &frames, now);
            }
            Ev::Write(d, f) => {
                cx.net.write(now, d, to_stream(f));
                let src = cx.net.dirs[d as usize].src;
                cx.kick(src);
            }
            Ev::Resume(r) => self.ranks.advance(r, now),
        }
        self.flush(cx);
    }

    fn done(&self) -> bool {
        self.ranks.finished()
    }
}

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
    let host: Vec<_> = p.hosts_a.iter().chain(&p.hosts_b).copied().collect();
    let ranks = Ranks::new(progs, r.btl.clone());
    let n = ranks.size() as usize;
    let mut dir = vec![vec![u32::MAX; n]; n];
    let mut ends = Vec::new();
    for a in 0..n {
        for b in a + 1..n {
            let (ab, ba) = net.connect(host[a], host[b], &t.params, t.cc, true, false);
            dir[a][b] = ab;
            dir[b][a] = ba;
            ends.extend([(a as u32, b as u32), (b as u32, a as u32)]);
        }
    }
    let app = MpiTcp { ranks, dir, ends, frames: Vec::new() };
    let mut world = World::new(fabric, net, app, TimerPolicy::Direct);
    let mut q = EventQueue::new();
    let stop = world.run(&mut q, SIM_TIME_LIMIT);
    record(r, &world, &q, stop)
}

fn record<Q: Copy>(r: &MpiTcpResolved, w: &World<TcpHosts, MpiTcp>, q: &EventQueue<Q>, stop: Stop) -> MpiRecord {
    let t = &r.tcp;
    let (lat, lat_min, lat_max, bw, rate) = osu::measure(&r.osu, &w.app.ranks.marks);
    let status = if stop == Stop::Finished {
        "ok".to_string()
    } else {
        format!("incomplete: stopped ({stop:?}) after {:.3} s simulated", to_s(q.now()))
    };
    let one_way = t.one_way_delay_us();
    let s = &w.app.ranks.stats;
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
        ranks: w.app.ranks.size(),
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
