//! A perftest-like driver (ib_{send,write,read}_{bw,lat}, bidirectional and message-rate
//! variants) over the simulated two-cluster path, producing one record per run with the figures
//! perftest reports. perftest prints MiB/s; we report `bw_MBps` with MB = 10^6 bytes, the unit
//! of the published studies.
//!
//! Measurement as in perftest: bandwidth tests time the client from its first post to its last
//! completion with up to tx-depth work requests outstanding; latency tests ping-pong one message
//! and report half the round trip for send and write, the full round trip for read.

use serde::Serialize;

use super::failover::{self, FailoverReport};
use crate::engine::time::{from_ns, from_us, to_s, to_us, S};
use crate::engine::{EventQueue, Stop, Time};
use crate::ib::{timer, Completion, CompletionKind, IbHosts, IbPacket, Op, Transport, WcStatus};
use crate::net::{CrossHosts, CrossSource, Fabric, NodeId};
use crate::record::PathColumns;
use crate::scenario::{OpName, Resolved, TestName, TransportName};
use crate::topology;
use crate::transport::cross::WithCross;
use crate::world::{App, Ev, TimerPolicy, World};

/// The adapters, and the cross traffic's hosts when the WAN is shared.
type Hosts = WithCross<IbHosts>;
/// perftest has no events of its own.
type Cx<'a> = crate::world::Cx<'a, Hosts, Never>;
type Never = std::convert::Infallible;

/// One measured point. Field names carry their unit (MB = 10^6 bytes, Mps = 10^6 per second).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[allow(non_snake_case)]
pub struct VerbsRecord {
    /// The testbed (published study) the scenario reproduces, e.g. "s1"; a label only.
    pub testbed: String,
    /// The adapter profile's name (e.g. ConnectX-2 QDR).
    pub hca: String,
    /// "rc", "uc" or "ud".
    pub transport: String,
    /// "send", "write" or "read".
    pub op: String,
    /// "bw" or "lat": bandwidth (streaming) or ping-pong latency.
    pub test: String,
    /// Message size in bytes.
    pub size_bytes: u32,
    /// Messages per queue pair (perftest `-n`).
    pub iterations: u64,
    /// Queue pairs driven in parallel (perftest `-q`).
    pub qps: u32,
    /// Send work requests outstanding per queue pair (perftest `-t`).
    pub tx_depth: u32,
    /// Receive work requests posted: recorded as given, the model never runs out of them.
    pub rx_depth: u32,
    /// RDMA reads in flight per QP (the adapter's limit unless set).
    pub outstanding_reads: u32,
    /// IB path MTU in bytes (256 to 4096).
    pub mtu_bytes: u32,
    /// The path: delay, fibre, one-way delay, distance ([`PathColumns`], flattened in place).
    #[serde(flatten)]
    pub path: PathColumns,
    /// The run seed: same scenario and seed, bit-identical record.
    pub seed: u64,
    /// Bandwidth tests: the sender's bytes over its first post to last completion, MB/s (10^6 B); None for latency
    /// tests.
    pub bw_MBps: Option<f64>,
    /// Receiver-side bandwidth: `delivered_bytes` over the time the last of them landed (from the
    /// start, so the first one-way trip is in it). For UD and UC, whose `bw_MBps` is the sender's,
    /// this is what got through; for RC it is a little above `bw_MBps`, which waits for the last ACK.
    pub rx_bw_MBps: Option<f64>,
    /// Bandwidth tests: messages completed per second, in millions.
    pub msg_rate_Mps: Option<f64>,
    /// Latency tests: the median, microseconds (half the round trip for send and write, the whole for read).
    pub lat_us: Option<f64>,
    /// Latency tests: the least sample, as `lat_us`.
    pub lat_min_us: Option<f64>,
    /// Latency tests: the greatest sample, as `lat_us`.
    pub lat_max_us: Option<f64>,
    /// Latency tests: the mean, as `lat_us`.
    pub lat_avg_us: Option<f64>,
    /// Simulated time when the run stopped, microseconds.
    pub sim_time_us: f64,
    /// Events the engine handled (the cost of the run).
    pub sim_events: u64,
    /// Data packets the requesters sent, retransmissions included.
    pub data_packets: u64,
    /// Data packets sent again (RC after a NAK or a timeout).
    pub retransmitted_packets: u64,
    /// Local ACK timeouts that fired (RC).
    pub timeouts: u64,
    /// NAKs received (PSN sequence errors, receiver not ready).
    pub naks: u64,
    /// RDMA reads requested again before the timeout (a later read's responses overtook lost ones).
    pub read_retries: u64,
    /// The ACK timeout exponent asked for (perftest's `-u`), whether the queue pairs were
    /// connected through the RDMA CM, the exponent they got (the CM's, when it sets it) and the
    /// timer in force once the adapter's firmware has applied its rule (None: no timer).
    pub timeout_exp: u32,
    /// The queue pairs were connected through the RDMA CM (perftest `-R`), which sets the timeout exponent itself.
    pub cm: bool,
    /// The ACK timeout exponent the queue pairs got (4.096 us x 2^exp).
    pub ack_timeout_exp: u32,
    /// The local ACK timeout in force after the adapter's firmware rule, microseconds (None: no timer).
    pub ack_timeout_us: Option<f64>,
    /// Retries of a timed-out request before the queue pair fails (IBA: at most 7).
    pub retry_count: u32,
    /// The most local-ACK-timeout retries a queue pair made in a row without progress.
    pub retries_max: u32,
    /// UD messages dropped at the receiver for want of a posted receive.
    pub ud_drops: u64,
    /// UC messages sent and never delivered (a lost packet drops the whole message).
    pub uc_messages_dropped: u64,
    /// Packets the long-haul link lost at random (`loss`), both directions: what UD and UC lose
    /// without a trace of their own.
    pub wan_drops_loss: u64,
    /// Payload bytes the receivers accepted in order (each byte counted once).
    pub delivered_bytes: u64,
    /// "ok", or why the run did not complete (e.g. "qp error: retry count exceeded: ...").
    pub status: String,
    /// What to set when the transport did not get on with the path (a timer shorter than the
    /// round trip), else empty.
    pub advice: String,
    /// What the hardware and distance imply (an extender beyond its rated reach or slower than
    /// the adapters), "; "-separated, else empty.
    pub warnings: String,
    /// UDP cross traffic on the WAN switches (IP-level Gb/s while on; 0: none), what of it
    /// arrived (IP bytes over the run), and the datagrams the WAN switch dropped.
    pub cross_gbps: f64,
    /// Cross traffic delivered: IP bytes over the run, MB/s.
    pub cross_bw_MBps: f64,
    /// Cross-traffic datagrams the WAN switch's full queue dropped.
    pub cross_packets_dropped: u64,
    /// IB packets the WAN switches dropped from a full queue, both directions (RC resends them;
    /// UD and UC lose them).
    pub wan_drops_queue: u64,
    /// With link events: the time series and what the failures did (absent without).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failover: Option<FailoverReport>,
}

/// One requester queue pair driven by the benchmark.
struct Flow {
    qp: u32,
    posted: u64,
    completed: u64,
    /// When its queue pair went to the error state (its work requests completed in error).
    errored_at: Option<Time>,
}

struct Perftest {
    op: Op,
    test: TestName,
    size: u32,
    iters: u64,
    post: Time,
    flows: Vec<Flow>,
    flow_of_qp: Vec<Option<usize>>,
    cpu_free: Vec<Time>,
    last_done: Time,
    bytes_done: u64,
    // latency ping-pong
    ping_start: Time,
    samples: Vec<Time>,
    done: bool,
    ud_responders: Vec<u32>,
    tx_depth: u64,
    /// Cross traffic's source host (started with the benchmark).
    cross_src: Option<NodeId>,
    /// With cross traffic the fabric is never idle: the run stops when a queue pair has failed,
    /// or after `stall_limit` without a completion (a lost UD/UC message a side waits for), and
    /// says so (`stalled`).
    stall_limit: Time,
    last_progress: Time,
    stalled: bool,
}

impl Perftest {
    fn post(&mut self, ib: &mut Hosts, f: usize, at: Time) -> NodeId {
        let qp = self.flows[f].qp;
        let node = ib.node_of(qp);
        let cpu = &mut self.cpu_free[node as usize];
        *cpu = (*cpu).max(at) + self.post;
        let id = self.flows[f].posted;
        ib.post_send(qp, self.op, self.size, id, *cpu);
        self.flows[f].posted += 1;
        node
    }

    fn post_first(&mut self, cx: &mut Cx) {
        for &qp in &self.ud_responders {
            cx.net.post_recv(qp, u32::MAX / 2);
        }
        let first = match self.test {
            TestName::Lat => 1,
            _ => self.flows.len(),
        };
        for f in 0..first {
            let depth = if self.test == TestName::Lat { 1 } else { self.iters.min(self.tx_depth) };
            for _ in 0..depth {
                let n = self.post(cx.net, f, 0);
                cx.kick(n);
            }
        }
    }

    fn on_latency_completion(&mut self, c: Completion, cx: &mut Cx) {
        // flows[0] is the client's QP, flows[1] the server's.
        let client = self.flows[0].qp;
        let finished_rtt = match (self.op, c.kind) {
            (Op::Read, CompletionKind::Send) if c.qp == client => true,
            (Op::Send | Op::Write, CompletionKind::Recv) if c.qp == client => true,
            (Op::Send | Op::Write, CompletionKind::Recv) => {
                let n = self.post(cx.net, 1, c.at); // the server answers
                cx.kick(n);
                false
            }
            _ => false,
        };
        if !finished_rtt {
            return;
        }
        self.samples.push(c.at - self.ping_start);
        self.last_done = c.at;
        self.bytes_done += c.bytes as u64;
        if (self.samples.len() as u64) < self.iters {
            self.ping_start = c.at;
            let n = self.post(cx.net, 0, c.at);
            cx.kick(n);
        } else {
            self.done = true;
        }
    }
}

impl App<Hosts> for Perftest {
    type Event = Never;

    fn start(&mut self, cx: &mut Cx) {
        self.post_first(cx);
        if let Some(n) = self.cross_src {
            cx.kick(n);
        }
    }

    fn on_output(&mut self, c: Completion, cx: &mut Cx) {
        self.last_progress = cx.now;
        if c.status != WcStatus::Success {
            // The queue pair is in error: perftest itself stops at the first such completion;
            // the other queue pairs go on here, to show what the fabric does.
            if let Some(f) = self.flow_of_qp.get(c.qp as usize).copied().flatten() {
                self.flows[f].errored_at.get_or_insert(c.at);
            }
            self.done |= self.test == TestName::Lat;
            return;
        }
        if self.test == TestName::Lat {
            return self.on_latency_completion(c, cx);
        }
        if c.kind != CompletionKind::Send {
            return;
        }
        let Some(f) = self.flow_of_qp.get(c.qp as usize).copied().flatten() else { return };
        self.flows[f].completed += 1;
        self.bytes_done += c.bytes as u64;
        self.last_done = self.last_done.max(c.at);
        if self.flows[f].posted < self.iters {
            let n = self.post(cx.net, f, c.at);
            cx.kick(n);
        }
        self.done = self.flows.iter().all(|fl| fl.completed >= self.iters);
    }

    fn on_event(&mut self, ev: Never, _cx: &mut Cx) {
        match ev {}
    }

    fn done(&self) -> bool {
        self.done
    }

    #[inline(always)]
    fn before_event(&mut self, now: Time, net: &mut Hosts) {
        if self.cross_src.is_some() && !self.done {
            if net.stats.qp_errors > 0 {
                self.done = true;
            } else if now > self.last_progress + self.stall_limit {
                self.done = true;
                self.stalled = true;
            }
        }
    }
}

fn transport_of(t: TransportName) -> Transport {
    match t {
        TransportName::Rc => Transport::Rc,
        TransportName::Uc => Transport::Uc,
        TransportName::Ud => Transport::Ud,
    }
}

fn op_of(o: OpName) -> Op {
    match o {
        OpName::Send => Op::Send,
        OpName::Write => Op::Write,
        OpName::Read => Op::Read,
    }
}

fn lower<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v).ok().and_then(|j| j.as_str().map(str::to_string)).unwrap_or_default()
}

/// Simulated time after which a run is abandoned (a stalled or failed queue pair).
const SIM_TIME_LIMIT: Time = 3600 * S;
/// How long a UD/UC run may go on after the sender is done, for packets still on the path.
const DRAIN_LIMIT: Time = 10 * S;

/// Run one perftest point. `until` caps simulated time (for fixed-duration runs).
pub fn run_verbs(r: &Resolved, until: Option<Time>) -> VerbsRecord {
    let until = until.or(r.duration_s.map(|s| (s * S as f64).round() as Time));
    let mut fabric: Fabric<IbPacket> = Fabric::new(r.seed);
    let pairs = topology::build(r, &mut fabric, 1);
    let (a, b) = (pairs.hosts_a[0], pairs.hosts_b[0]);
    let mut hca = r.hca.clone();
    hca.max_rd_atomic = hca.max_rd_atomic.min(r.outstanding_reads);
    let mut ib = IbHosts::new(hca, fabric.nodes.len(), r.ack_timeout_exp, r.retry_count);
    let ib_timeout = ib.ack_timeout();
    let transport = transport_of(r.transport);
    // Initial PSN near the top of the 24-bit space, so long runs exercise the wrap.
    let initial_psn = 0x00FF_FF00;
    let mut flows = Vec::new();
    let mut ud_responders = Vec::new();
    let nqp = if r.test == TestName::Lat { 1 } else { r.qps };
    for _ in 0..nqp {
        // perftest creates its queue pairs with max_send_wr = tx-depth, and keeps that many posted.
        let (qa, qb) = ib.connect(a, b, transport, r.mtu_bytes, initial_psn, r.tx_depth);
        flows.push(Flow { qp: qa, posted: 0, completed: 0, errored_at: None });
        if r.test == TestName::Bibw || r.test == TestName::Lat {
            flows.push(Flow { qp: qb, posted: 0, completed: 0, errored_at: None });
        }
        ud_responders.extend([qa, qb]);
    }
    if transport != Transport::Ud {
        ud_responders.clear();
    }
    let mut flow_of_qp = vec![None; ib.qps.len()];
    for (i, f) in flows.iter().enumerate() {
        flow_of_qp[f.qp as usize] = Some(i);
    }
    let post = from_ns(r.hca.post_ns);
    let app = Perftest {
        op: op_of(r.op),
        test: r.test,
        size: r.size_bytes,
        // A run of fixed length posts until it ends (perftest -D).
        iters: if r.duration_s.is_some() { u64::MAX } else { r.iterations },
        post,
        flows,
        flow_of_qp,
        cpu_free: vec![0; fabric.nodes.len()],
        last_done: 0,
        bytes_done: 0,
        ping_start: 0,
        samples: Vec::new(),
        done: false,
        ud_responders,
        tx_depth: r.tx_depth as u64,
        cross_src: pairs.cross.map(|(src, _)| src),
        stall_limit: stall_limit(r, ib_timeout),
        last_progress: 0,
        stalled: false,
    };
    let mut cross = CrossHosts::default();
    if let (Some(c), Some((src, dst))) = (&r.cross, pairs.cross) {
        cross.add(CrossSource::new(src, dst, c.ip_bytes, c.gbps, c.start, c.on, c.off));
    }
    let mut world = World::new(fabric, WithCross::new(ib, cross), app, TimerPolicy::Direct);
    let mut q: EventQueue<Ev<u32, Never>> = EventQueue::new();
    let limit = until.unwrap_or(SIM_TIME_LIMIT);
    if let Some(ev) = &r.link_events {
        let changes = failover::schedule(ev, &pairs.wan, &mut world, &mut q);
        let (stop, series) = failover::run_sampled(&mut world, &mut q, &pairs.wan, ev.interval, limit);
        let drops = world.fabric.ports.iter().map(|p| p.stats.drops_down).sum();
        let qps = world
            .app
            .flows
            .iter()
            .map(|f| {
                let peer = world.net.qps[f.qp as usize].peer_qp;
                (f.completed * r.size_bytes as u64, world.net.qps[peer as usize].rx_bytes, f.errored_at)
            })
            .collect();
        let report = FailoverReport::new(ev, &series, changes, drops, qps);
        return VerbsRecord { failover: Some(report), ..record(r, &world, &q, stop, until) };
    }
    let stop = world.run(&mut q, limit);
    if stop == Stop::Finished && r.transport != TransportName::Rc && until.is_none() {
        // UD and UC complete at the sender once a message has left it, as perftest measures them;
        // the run goes on until what is still on the path has landed, so `delivered_bytes` counts
        // what the receiver got (at most a few round trips more: nothing is resent).
        world.draining = true;
        let drain_until = q.now() + drain_limit(r);
        world.resume(&mut q, drain_until);
    }
    record(r, &world, &q, stop, until)
}

/// How long a UD/UC run goes on after the sender is done. With cross traffic the fabric never
/// falls idle: long enough for a packet just sent to cross a full WAN switch queue and the path.
fn drain_limit(r: &Resolved) -> Time {
    match (&r.cross, &r.extender) {
        (Some(_), Some(e)) => {
            let queue_s = r.queue_bytes as f64 * 8.0 / (e.framing.payload_gbps(&e.wan) * 1e9);
            (2 * from_us(r.one_way_delay_us()) + (queue_s * S as f64) as Time + S / 1000).min(DRAIN_LIMIT)
        }
        _ => DRAIN_LIMIT,
    }
}

/// With cross traffic: how long without a completion before the run is called stalled. RC: the
/// drain limit, or longer if the ACK timer may still recover a queue pair ((retry count + 1)
/// timeouts and a round trip). UD and UC, which resend nothing: a few times what a message and
/// its answer take across full queues.
fn stall_limit(r: &Resolved, timeout: Option<Time>) -> Time {
    if r.transport != TransportName::Rc {
        return 4 * drain_limit(r);
    }
    let retries = timeout.map_or(0, |t| t * (r.retry_count as Time + 1));
    DRAIN_LIMIT.max(retries + 2 * from_us(r.one_way_delay_us()))
}

fn record(
    r: &Resolved,
    w: &World<Hosts, Perftest>,
    q: &EventQueue<Ev<u32, Never>>,
    stop: Stop,
    until: Option<Time>,
) -> VerbsRecord {
    let app = &w.app;
    let st = &w.net.stats;
    let timer = AckTimer::of(r, w.net.ack_timeout());
    let fabric = &w.fabric;
    // What the WAN switch turned away from the cross host (the ingress its datagrams come in by).
    let cross_dropped: u64 = w
        .net
        .cross
        .sources
        .iter()
        .map(|c| fabric.ports[fabric.ports[fabric.host_port(c.src) as usize].peer as usize].stats.ingress_drops)
        .sum();
    let queue_drops: u64 = fabric.ports.iter().map(|p| p.stats.drops_queue).sum();
    let status = if st.qp_errors > 0 && r.link_events.is_some() {
        format!(
            "qp error: retry count exceeded on {} of {} queue pairs: their path stayed dead through {} local ACK \
             timeouts ({}); perftest stops at the first error completion, the others ran on here",
            st.qp_errors,
            app.flows.len(),
            r.retry_count + 1,
            timer.how
        )
    } else if st.qp_errors > 0 {
        format!("qp error: retry count exceeded: {}", timer.why_exceeded(r))
    } else if app.stalled {
        format!(
            "incomplete: no completion for {:.3} s while cross traffic ran{} (stopped after {:.3} s simulated)",
            to_s(app.stall_limit),
            if r.transport == TransportName::Rc { "" } else { ": a lost message is never resent over UD or UC" },
            to_s(q.now())
        )
    } else if stop == Stop::Finished {
        "ok".to_string()
    } else if until.is_some() {
        "ok (time limit)".to_string()
    } else if stop == Stop::Idle && r.transport != TransportName::Rc {
        // Nothing left to happen: a lost message that UD/UC never resends left a side waiting.
        format!(
            "incomplete: a lost message is never resent over {} (stopped after {:.3} us simulated)",
            lower(&r.transport).to_uppercase(),
            to_us(q.now())
        )
    } else {
        format!("incomplete: stopped ({stop:?}) after {:.6} s simulated", to_s(q.now()))
    };
    let (mut bw, mut rate, mut lat, mut lat_min, mut lat_max, mut lat_avg) = (None, None, None, None, None, None);
    let delivered: u64 = w.net.qps.iter().map(|qp| qp.rx_bytes).sum();
    let mut rx_bw = None;
    if app.test == TestName::Lat {
        let mut s: Vec<Time> = app.samples.clone();
        s.sort_unstable();
        if !s.is_empty() {
            let halve = if app.op == Op::Read { 1.0 } else { 0.5 };
            let us = |t: Time| to_us(t) * halve;
            lat = Some(us(s[s.len() / 2]));
            lat_min = Some(us(s[0]));
            lat_max = Some(us(s[s.len() - 1]));
            lat_avg = Some(s.iter().map(|&t| us(t)).sum::<f64>() / s.len() as f64);
        }
    } else {
        let (bytes, msgs, t) = match until {
            // Fixed-duration runs count what the receivers got in order by the end.
            Some(_) => (delivered, delivered as f64 / r.size_bytes as f64, q.now()),
            None => (app.bytes_done, app.flows.iter().map(|f| f.completed).sum::<u64>() as f64, app.last_done),
        };
        if t > 0 {
            bw = Some(bytes as f64 / to_s(t) / 1e6);
            rate = Some(msgs / to_s(t) / 1e6);
        }
        let last_rx = w.net.qps.iter().map(|qp| qp.rx_last_at).max().unwrap_or(0);
        if last_rx > 0 {
            rx_bw = Some(delivered as f64 / to_s(last_rx) / 1e6);
        }
    }
    VerbsRecord {
        testbed: r.testbed.clone(),
        hca: r.hca.name.clone(),
        transport: lower(&r.transport),
        op: lower(&r.op),
        test: lower(&r.test),
        size_bytes: r.size_bytes,
        iterations: r.iterations,
        qps: r.qps,
        tx_depth: r.tx_depth,
        rx_depth: r.rx_depth,
        outstanding_reads: r.outstanding_reads,
        mtu_bytes: r.mtu_bytes,
        path: PathColumns::new(r.delay_us, r.fibre_km, r.one_way_delay_us()),
        seed: r.seed,
        bw_MBps: bw,
        rx_bw_MBps: rx_bw,
        msg_rate_Mps: rate,
        lat_us: lat,
        lat_min_us: lat_min,
        lat_max_us: lat_max,
        lat_avg_us: lat_avg,
        sim_time_us: to_us(q.now()),
        sim_events: q.events_handled(),
        data_packets: st.data_packets,
        retransmitted_packets: st.retransmitted_packets,
        timeouts: st.timeouts,
        naks: st.naks,
        read_retries: st.read_retries,
        timeout_exp: r.timeout_exp,
        cm: r.cm,
        ack_timeout_exp: r.ack_timeout_exp,
        ack_timeout_us: timer.timeout.map(to_us),
        retry_count: r.retry_count,
        retries_max: st.retries_max,
        ud_drops: st.ud_drops_no_recv,
        uc_messages_dropped: st.uc_messages_dropped(),
        wan_drops_loss: w.fabric.ports.iter().map(|p| p.stats.drops_loss).sum(),
        delivered_bytes: delivered,
        status,
        advice: timer.advice(st.timeouts, st.qp_errors > 0),
        warnings: r.warnings.join("; "),
        cross_gbps: r.cross.as_ref().map_or(0.0, |c| c.gbps),
        cross_bw_MBps: if q.now() > 0 {
            w.net.cross.sources.iter().map(|c| c.received_bytes).sum::<u64>() as f64 / to_s(q.now()) / 1e6
        } else {
            0.0
        },
        cross_packets_dropped: cross_dropped,
        wan_drops_queue: queue_drops - cross_dropped,
        failover: None,
    }
}

/// The ACK timer a run's queue pairs had, against the path's round trip: why a queue pair ran out
/// of retries, and what exponent covers the round trip.
struct AckTimer {
    timeout: Option<Time>,
    /// Twice the one-way propagation: the least time an acknowledgement takes.
    round_trip: Time,
    /// The exponent the advice names: the first whose timeout is twice the round trip (room for
    /// the message, queueing and the responder's ACK coalescing).
    covering_exp: u32,
    how: String,
}

impl AckTimer {
    fn of(r: &Resolved, timeout: Option<Time>) -> Self {
        let round_trip = 2 * from_us(r.one_way_delay_us());
        let how = if r.cm && r.ack_timeout_exp != r.timeout_exp {
            format!("exponent {} set by the RDMA CM", r.ack_timeout_exp)
        } else {
            format!("exponent {}", r.ack_timeout_exp)
        };
        let how = if r.hca.ack_timer.raises(r.ack_timeout_exp) {
            format!("{how}, raised to the {} firmware's floor", r.hca.name)
        } else {
            how
        };
        AckTimer { timeout, round_trip, covering_exp: timer::exp_covering(2 * round_trip), how }
    }

    fn ms(t: Time) -> String {
        format!("{:.1} ms", to_us(t) / 1e3)
    }

    /// True if the timer fires before any acknowledgement can be back.
    fn shorter_than_round_trip(&self) -> bool {
        self.timeout.is_some_and(|t| t < self.round_trip)
    }

    fn why_exceeded(&self, r: &Resolved) -> String {
        let t = self.timeout.unwrap_or(0);
        let tries = r.retry_count + 1;
        if t * tries as Time <= self.round_trip {
            format!(
                "the local ACK timeout ({}, {}) ran out {tries} times before the first acknowledgement could \
                 come back ({} round trip)",
                Self::ms(t),
                self.how,
                Self::ms(self.round_trip)
            )
        } else {
            format!(
                "no acknowledgement within the local ACK timeout ({}, {}) {tries} times in a row (packets lost or held \
                 up on the path; {} round trip)",
                Self::ms(t),
                self.how,
                Self::ms(self.round_trip)
            )
        }
    }

    fn advice(&self, timeouts: u64, failed: bool) -> String {
        if !(failed || timeouts > 0 && self.shorter_than_round_trip()) {
            return String::new();
        }
        let e = self.covering_exp;
        let t = timer::iba_timeout(e).unwrap_or(0);
        format!(
            "set the ACK timeout above the {} round trip: --qp-timeout {e} ({}; MVAPICH2's MV2_DEFAULT_TIME_OUT, \
             Open MPI's btl_openib_ib_timeout and NCCL_IB_TIMEOUT take the same exponent, UCX_RC_TIMEOUT a duration), \
             or connect through the RDMA CM (--cm)",
            Self::ms(self.round_trip),
            Self::ms(t)
        )
    }
}
