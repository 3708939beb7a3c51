//! An iperf-like TCP benchmark over the simulated long-haul path: 1..N parallel streams between
//! one host pair for a fixed time, optionally with UDP cross traffic from a second host pair.
//!
//! Like iperf, throughput is what the receiving application got in order, divided by the test
//! length (slow start included); `bw_MBps` uses MB = 10^6 bytes. The time series holds the
//! aggregate throughput of each interval (iperf -i), the optional cwnd trace each stream's
//! congestion window at the same instants.

use serde::Serialize;

use std::collections::VecDeque;

use crate::engine::time::{to_s, to_us};
use crate::engine::{EventQueue, Time};
use crate::net::CrossSource;
use crate::net::{Fabric, NodeId};
use crate::record::PathColumns;
use crate::tcp::hosts::{TcpHosts, TcpOutput, TcpTimer};
use crate::tcp::path::{self, TcpPath};
use crate::tcp::scenario::TcpResolved;
use crate::tcp::TcpPacket;
use crate::world::{App, Ev, TimerPolicy, World};

/// One measured point. Field names carry their unit (MB = 10^6 bytes).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[allow(non_snake_case)]
pub struct TcpRecord {
    /// The testbed (published study) the scenario reproduces; a label only.
    pub testbed: String,
    /// The host stack profile's name (kernel era, NIC, offloads).
    pub stack: String,
    /// The long-haul link kind (e.g. 10GbE, OC-192 SONET).
    pub link: String,
    /// The congestion control algorithm the streams ran (Linux name: "cubic", "reno", "bbr", ...).
    pub cc: String,
    /// IP MTU of the path in bytes.
    pub mtu_bytes: u32,
    /// TCP maximum segment size in bytes (MTU less IP and TCP headers and options).
    pub mss_bytes: u32,
    /// Parallel TCP connections (iperf `-P`).
    pub streams: u32,
    /// The fixed socket buffer (iperf -w); None when Linux auto-tunes it.
    pub window_bytes: Option<u64>,
    /// Auto-tuning's receive-buffer ceiling (`tcp_rmem[2]`); None with a fixed buffer.
    pub rmem_max_bytes: Option<u64>,
    /// The path: delay, fibre, one-way delay, distance ([`PathColumns`], flattened in place).
    #[serde(flatten)]
    pub path: PathColumns,
    /// Random packet loss probability on the long-haul link, per packet and direction, in [0, 1).
    pub loss: f64,
    /// UDP cross traffic offered on the WAN (IP-level Gb/s while on; 0: none).
    pub cross_gbps: f64,
    /// Simulated length of the test, seconds (iperf `-t`).
    pub duration_s: f64,
    /// The run seed: same scenario and seed, bit-identical record.
    pub seed: u64,
    /// The long-haul link's data rate, Gb/s (10^9 bit/s).
    pub wan_gbps: f64,
    /// Aggregate goodput of the TCP streams.
    pub bw_MBps: f64,
    /// Each stream's goodput, MB/s, in stream order.
    pub stream_bw_MBps: Vec<f64>,
    /// Segments retransmitted, all streams.
    pub retransmits: u64,
    /// Each stream's retransmitted segments.
    pub stream_retransmits: Vec<u64>,
    /// Retransmission timeouts (RTO) that fired, all streams.
    pub timeouts: u64,
    /// Fast recoveries entered (loss detected by duplicate ACKs or SACK), all streams.
    pub fast_recoveries: u64,
    /// Smallest RTT any stream measured (None before the first sample).
    pub min_rtt_us: Option<f64>,
    /// Cross traffic delivered: IP bytes over the run, MB/s.
    pub cross_bw_MBps: f64,
    /// Packets the WAN switches dropped from a full queue, both directions.
    pub wan_drops_queue: u64,
    /// Packets the long-haul link lost at random (`loss`), both directions.
    pub wan_drops_loss: u64,
    /// Packets sent on the long-haul link, both directions (the benchmarks' unit of work).
    pub link_packets: u64,
    /// Events the engine handled (the cost of the run).
    pub sim_events: u64,
    /// Sample instants of the goodput time series, seconds from the start.
    pub series_t_s: Vec<f64>,
    /// Aggregate goodput over each sample interval ending at `series_t_s`, MB/s.
    pub series_bw_MBps: Vec<f64>,
    /// Per sample instant, each stream's cwnd in segments (empty unless asked for).
    pub cwnd_trace_segs: Vec<Vec<f64>>,
    /// "ok" (a TCP run always completes its fixed duration).
    pub status: String,
}

/// What the receiving application of a stream can have read: bytes become readable once the
/// receiving core has processed them (a core works in arrival order), so a receiver whose core is
/// the bottleneck does not count its backlog, up to a window of data, as delivered.
#[derive(Default)]
struct Readable {
    /// (processed at, in-order bytes readable from then), in time order.
    pending: VecDeque<(Time, u64)>,
    bytes: u64,
}

impl Readable {
    /// In-order bytes the application can have read by `t` (`t` never goes back).
    fn bytes_by(&mut self, t: Time) -> u64 {
        while let Some(&(done, bytes)) = self.pending.front() {
            if done > t {
                break;
            }
            self.bytes = bytes;
            self.pending.pop_front();
        }
        self.bytes
    }
}

/// iperf: bulk streams from host A0 to B0 (and cross traffic from A1 to B1), read as they arrive.
struct Iperf {
    /// Each stream's direction.
    streams: Vec<u32>,
    readable: Vec<Readable>,
    /// Hosts that send at the start.
    senders: Vec<NodeId>,
    interval: Time,
    next_sample: Time,
    last_bytes: u64,
    series: Vec<(f64, f64)>,
    trace: Option<Vec<Vec<f64>>>,
}

/// iperf has no events of its own.
type Never = std::convert::Infallible;
type Cx<'a> = crate::world::Cx<'a, TcpHosts, Never>;

impl Iperf {
    /// Bytes each stream's receiving application can have read by `t`.
    fn read_bytes(&mut self, t: Time) -> Vec<u64> {
        self.readable.iter_mut().map(|r| r.bytes_by(t)).collect()
    }

    /// Close every interval that ended by `now` (checked before each event, so nothing read
    /// after the interval's end is in it).
    fn sample(&mut self, now: Time, net: &TcpHosts) {
        while now >= self.next_sample {
            let bytes: u64 = self.read_bytes(self.next_sample).iter().sum();
            let mbps = (bytes - self.last_bytes) as f64 / to_s(self.interval) / 1e6;
            self.series.push((to_s(self.next_sample), mbps));
            self.last_bytes = bytes;
            if let Some(t) = self.trace.as_mut() {
                t.push(self.streams.iter().map(|&d| net.dirs[d as usize].tx.win.cwnd).collect());
            }
            self.next_sample += self.interval;
        }
    }
}

impl App<TcpHosts> for Iperf {
    type Event = Never;

    fn start(&mut self, cx: &mut Cx) {
        for &h in &self.senders {
            cx.kick(h);
        }
    }

    fn on_output(&mut self, out: TcpOutput, cx: &mut Cx) {
        if let TcpOutput::Ready { dir, delivered, at } = out {
            let r = &mut self.readable[(dir / 2) as usize];
            r.bytes_by(cx.now); // keeps only the backlog
            r.pending.push_back((at, delivered));
        }
    }

    fn on_event(&mut self, ev: Never, _cx: &mut Cx) {
        match ev {}
    }

    fn done(&self) -> bool {
        false
    }

    #[inline]
    fn before_event(&mut self, now: Time, net: &mut TcpHosts) {
        if now >= self.next_sample {
            self.sample(now, net);
        }
    }
}

type IperfWorld = World<TcpHosts, Iperf>;

fn start(r: &TcpResolved) -> (IperfWorld, TcpPath) {
    let mut fabric: Fabric<TcpPacket> = Fabric::new(r.seed);
    let hosts_per_side = if r.cross.is_some() { 2 } else { 1 };
    let p = path::build(r, &mut fabric, hosts_per_side);
    let mut tcp = TcpHosts::new(fabric.nodes.len(), r.framing(), &r.stack, 0.0);
    let streams = (0..r.streams).map(|_| tcp.connect(p.hosts_a[0], p.hosts_b[0], &r.params, r.cc, false, true).0);
    let streams: Vec<u32> = streams.collect();
    if let Some(c) = &r.cross {
        tcp.add_cross(CrossSource::new(p.hosts_a[1], p.hosts_b[1], c.ip_bytes, c.gbps, c.start, c.on, c.off));
    }
    let app = Iperf {
        readable: streams.iter().map(|_| Readable::default()).collect(),
        streams,
        senders: [p.hosts_a.clone(), p.hosts_b.clone()].concat(),
        interval: r.interval,
        next_sample: r.interval,
        last_bytes: 0,
        series: Vec::new(),
        trace: r.cwnd_trace.then(Vec::new),
    };
    (World::new(fabric, tcp, app, TimerPolicy::Direct), p)
}

/// Run one iperf-like test for the scenario's duration.
pub fn run_tcp(r: &TcpResolved) -> TcpRecord {
    let (world, p) = start(r);
    run_world(r, world, p)
}

fn run_world(r: &TcpResolved, mut world: IperfWorld, p: TcpPath) -> TcpRecord {
    let mut q = EventQueue::new();
    world.run(&mut q, r.duration);
    world.app.sample(r.duration, &world.net);
    let read = world.app.read_bytes(r.duration);
    record(r, &world, &p, &q, &read)
}

fn record(
    r: &TcpResolved,
    w: &IperfWorld,
    p: &TcpPath,
    q: &EventQueue<Ev<TcpTimer, Never>>,
    read_bytes: &[u64],
) -> TcpRecord {
    let secs = to_s(r.duration);
    let conns: Vec<_> = w.app.streams.iter().map(|&d| &w.net.dirs[d as usize]).collect();
    let stream_bw: Vec<f64> = read_bytes.iter().map(|&b| b as f64 / secs / 1e6).collect();
    let stream_retx: Vec<u64> = conns.iter().map(|c| c.tx.stats.retransmits).collect();
    let min_rtt = conns.iter().map(|c| c.tx.rtt.min_rtt).min().unwrap_or(Time::MAX);
    let (wan_ab, wan_ba) = (&w.fabric.ports[p.wan_ab as usize], &w.fabric.ports[p.wan_ba as usize]);
    let (ab, ba) = (&wan_ab.stats, &wan_ba.stats);
    let (window_bytes, rmem_max_bytes) = match r.params.window {
        crate::tcp::WindowSpec::Fixed { bytes } => (Some(bytes), None),
        crate::tcp::WindowSpec::Auto { rmem_max_bytes, .. } => (None, Some(rmem_max_bytes)),
    };
    TcpRecord {
        testbed: r.testbed.clone(),
        stack: r.stack.name.clone(),
        link: r.link.name().to_string(),
        cc: conns.first().map(|c| c.tx.cc_name()).unwrap_or_default().to_string(),
        mtu_bytes: r.mtu_bytes,
        mss_bytes: r.mss_bytes,
        streams: r.streams,
        window_bytes,
        rmem_max_bytes,
        path: PathColumns::new(r.delay_us, r.fibre_km, r.one_way_delay_us()),
        loss: r.loss,
        cross_gbps: r.cross.as_ref().map(|c| c.gbps).unwrap_or(0.0),
        duration_s: secs,
        seed: r.seed,
        wan_gbps: r.wan_gbps,
        bw_MBps: stream_bw.iter().sum(),
        stream_bw_MBps: stream_bw,
        retransmits: stream_retx.iter().sum(),
        stream_retransmits: stream_retx,
        timeouts: conns.iter().map(|c| c.tx.stats.timeouts).sum(),
        fast_recoveries: conns.iter().map(|c| c.tx.stats.fast_recoveries).sum(),
        min_rtt_us: (min_rtt != Time::MAX).then(|| to_us(min_rtt)),
        cross_bw_MBps: w.net.cross.iter().map(|c| c.received_bytes).sum::<u64>() as f64 / secs / 1e6,
        wan_drops_queue: wan_ab.drops_queue_by(r.duration) + wan_ba.drops_queue_by(r.duration),
        wan_drops_loss: ab.drops_loss + ba.drops_loss,
        link_packets: wan_ab.tx_packets_by(r.duration) + wan_ba.tx_packets_by(r.duration),
        sim_events: q.events_handled(),
        series_t_s: w.app.series.iter().map(|s| s.0).collect(),
        series_bw_MBps: w.app.series.iter().map(|s| s.1).collect(),
        cwnd_trace_segs: w.app.trace.clone().unwrap_or_default(),
        status: "ok".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::ModelScenario;
    use crate::tcp::TcpScenario;

    /// Forwarding at send time (`Fabric::plan_forwarding`) saves events and changes nothing
    /// else: every field of the record is the same with each link forwarding on arrival.
    #[test]
    fn forwarding_at_send_time_changes_no_result() {
        let cases = [
            // Drop-tail losses on the WAN, several streams, a slow WAN box.
            r#"{"link": "10gige-lan", "stack": "ideal", "path": {"delay_us": 1000, "rate_gbps": 1, "queue_packets": 50}, "tcp": {"streams": 3, "duration_s": 0.5, "delayed_ack": false, "cwnd_trace": true}}"#,
            r#"{"link": "10gige-wan", "path": {"delay_us": 5000, "extender": "longbow-xr"}, "tcp": {"cc": "bbr", "duration_s": 0.5}}"#,
            r#"{"link": "oc192", "path": {"delay_us": 200, "queue_bytes": 20000}, "tcp": {"streams": 8, "cc": "reno", "sack": false, "duration_s": 0.3}}"#,
        ];
        for json in cases {
            let r = TcpScenario::from_json(json).unwrap().resolve().unwrap();
            let (world, p) = start(&r);
            assert!(
                world.fabric.ports.iter().any(|port| port.forward_at_send),
                "{json}: nothing forwarded at send time"
            );
            let fast = run_world(&r, world, p);
            let (mut world, p) = start(&r);
            for port in world.fabric.ports.iter_mut() {
                port.forward_at_send = false;
            }
            let slow = run_world(&r, world, p);
            assert!(fast.sim_events < slow.sim_events);
            assert!(fast.wan_drops_queue > 0 || !json.contains("queue"), "{json}: no drop-tail losses to compare");
            assert_eq!(TcpRecord { sim_events: 0, ..fast }, TcpRecord { sim_events: 0, ..slow }, "{json}");
        }
    }
}
