//! The file system over a fluid network ([`crate::net::flow`]): minutes of traffic with link
//! failures in seconds of wall time.
//!
//! Each writer thread is one flow. Its blocks are striped over its file's LUNs, so it uses each
//! LUN, and the server and WAN link in front of it, with weight 1/(LUNs of the file): a
//! thread progresses at the rate its slowest stripe allows (its page pool fills behind the
//! slow one within milliseconds). Resources: each host adapter, each WAN link per direction,
//! each server's CPU, NSD workers (Little's law over a request's service time) and storage
//! path, each LUN. A writer's own cap is its share of the page pool's dirty data over the
//! round trip (write-behind is a window). Rates are re-solved whenever a writer starts or
//! stops or a capacity changes; between, blocks leave at the fluid rate, one event each, so
//! the [`Ledger`] sees every block.
//!
//! Failover: a block crossing a link that is down is lost and its connection stalls; RC
//! retries every ACK timeout; the subnet manager's steps (`SubnetManagerParams::plan`: down,
//! reroute after a trap or a sweep, a replugged link Active after training) change the routes;
//! the first retry after the reroute recovers the connection if retries remain,
//! else the QP fails and the file system reconnects and resends; a client with no path for
//! its lease time is expelled.

use super::core::{Connection, Fate, Writer};
use super::layout::Layout;
use super::ledger::Ledger;
use super::record::{phases, Latency, PfsRecord, Series};
use super::routing::Routes;
use super::scenario::{PfsOp, PfsResolved};
use crate::engine::time::{to_s, S};
use crate::engine::{EventQueue, Time};
use crate::ib::subnet_manager::FabricStep;
use crate::net::flow::{max_min, Demand};

#[derive(Debug, Clone, Copy)]
enum Ev {
    /// Writer `w` finished putting its current block on the wire (stale unless `gen` matches).
    Sent {
        w: u32,
        gen: u32,
    },
    Arrive {
        conn: u32,
        writer: u32,
        seq: u64,
        attempt: u32,
        link: u32,
    },
    Reply {
        conn: u32,
        writer: u32,
        seq: u64,
        attempt: u32,
        link: u32,
    },
    /// The subnet manager's plan after the link events: step `i` of `PfsResolved::fabric_steps`.
    Fabric {
        i: u32,
    },
    QpRetry {
        qp: u32,
        gen: u32,
    },
    QpError {
        qp: u32,
        gen: u32,
    },
    Reconnect {
        qp: u32,
        gen: u32,
    },
    Created {
        w: u32,
    },
    Sample,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Qp {
    Up,
    /// Lost packets since `since_s`, retrying.
    Stalled {
        since_s: f64,
    },
    /// Retries exhausted; the file system reconnects.
    Failed {
        since_s: f64,
    },
}

struct Thread {
    w: Writer,
    /// The block on the wire and the bytes of it sent.
    block: super::core::Rpc,
    sent_bytes: f64,
    /// When the block on the wire became the writer's next (its RPC was issued): a block held
    /// up by a failure counts the stall in its latency.
    issued_s: f64,
    at_s: f64,
    rate: f64,
    gen: u32,
    creating: bool,
}

/// Resource indices in the fluid network.
struct Resources {
    capacity: Vec<f64>,
    client_nic: usize,
    wan_fwd: usize,
    wan_rev: usize,
    server: usize,
    lun: usize,
}

const PER_SERVER: usize = 4;

struct Model<'a> {
    r: &'a PfsResolved,
    q: EventQueue<Ev>,
    layout: Layout,
    routes: Routes,
    ledger: Ledger,
    threads: Vec<Thread>,
    conns: Vec<Connection>,
    qps: Vec<Qp>,
    /// Bumped at every change of a connection's state: its pending timers are then stale.
    qp_gen: Vec<u32>,
    res: Resources,
    block: f64,
    server_s: f64,
    window_bytes: f64,
    link_load: Vec<f64>,
    link_bytes: Vec<f64>,
    client_bytes: Vec<f64>,
    last_account_s: f64,
    expelled: Vec<bool>,
    latency_us: Vec<f32>,
    series: Series,
    counts: [u64; 3],
}

fn at(t_s: f64) -> Time {
    (t_s * S as f64).round() as Time
}

impl<'a> Model<'a> {
    fn new(r: &'a PfsResolved) -> Self {
        let p = &r.params;
        let (c, s, links) = (r.clients as usize, r.servers as usize, r.wan_links as usize);
        let luns = s * r.luns_per_server as usize;
        let block = p.fs.block_bytes as f64;
        let mut layout =
            Layout::new(p.fs.variant, r.servers, luns as u32, p.fs.stripe_count, p.fs.file_bytes / p.fs.block_bytes);
        let lun_bytes_s = p.disk.lun_MBps(p.fs.block_bytes) * 1e6;
        let server_s = p.server.request_cpu_us * 1e-6 + block / lun_bytes_s;
        let host = r.host_MBps * 1e6;
        let link = r.link_MBps * 1e6;
        let mut capacity = vec![host; c];
        let wan_fwd = capacity.len();
        capacity.extend(vec![link; 2 * links]);
        let server = capacity.len();
        for _ in 0..s {
            capacity.push(host);
            capacity.push(p.server.cores as f64 * block / (p.server.request_cpu_us * 1e-6));
            capacity.push(p.server.nsd_workers as f64 * block / server_s);
            capacity.push(p.server.storage_path_MBps * 1e6);
        }
        let lun = capacity.len();
        capacity.extend(vec![lun_bytes_s; luns]);
        let res = Resources { capacity, client_nic: 0, wan_fwd, wan_rev: wan_fwd + links, server, lun };
        let threads_per_client = p.client.threads as usize;
        let mut threads = Vec::new();
        for i in 0..c * threads_per_client {
            let mut w = Writer::new((i / threads_per_client) as u32, i as u32, &mut layout);
            let (block_rpc, _) = w.next_rpc(&mut layout);
            threads.push(Thread {
                w,
                block: block_rpc,
                sent_bytes: 0.0,
                issued_s: 0.0,
                at_s: 0.0,
                rate: 0.0,
                gen: 0,
                creating: true,
            });
        }
        let window_bytes = p.client.pagepool_bytes as f64 * p.client.dirty_fraction / threads_per_client as f64;
        Model {
            r,
            q: EventQueue::new(),
            layout,
            routes: Routes::new(links, p.failover.lmc, c, s),
            ledger: Ledger::new(threads.len()),
            conns: vec![Connection::default(); c * s],
            qps: vec![Qp::Up; c * s],
            qp_gen: vec![0; c * s],
            threads,
            res,
            block,
            server_s,
            window_bytes,
            link_load: vec![0.0; links],
            link_bytes: vec![0.0; links],
            client_bytes: vec![0.0; c],
            last_account_s: 0.0,
            expelled: vec![false; c],
            latency_us: Vec::new(),
            series: Series {
                client_bw_MBps: vec![Vec::new(); c],
                link_MBps: vec![Vec::new(); links],
                link_util: vec![Vec::new(); links],
                ..Series::default()
            },
            counts: [0; 3],
        }
    }

    fn now_s(&self) -> f64 {
        to_s(self.q.now())
    }

    fn round_trip_s(&self) -> f64 {
        2.0 * self.r.one_way_s
    }

    fn create_s(&self) -> f64 {
        self.r.params.fs.create_round_trips as f64 * self.round_trip_s()
    }

    /// Bring fluid progress and link traffic up to now.
    fn account(&mut self) {
        let t = self.now_s();
        let dt = t - self.last_account_s;
        for (k, load) in self.link_load.iter().enumerate() {
            self.link_bytes[k] += load * dt;
        }
        for th in &mut self.threads {
            th.sent_bytes = (th.sent_bytes + th.rate * (t - th.at_s)).min(self.block);
            th.at_s = t;
        }
        self.last_account_s = t;
    }

    /// The writer's demand, or None if it cannot send now.
    fn demand(&self, th: &Thread) -> Option<Demand> {
        let c = th.w.client as usize;
        if th.creating || self.expelled[c] {
            return None;
        }
        let servers = th.w.servers(&self.layout);
        if servers.iter().any(|&s| self.qps[c * self.r.servers as usize + s as usize] != Qp::Up) {
            return None;
        }
        let weight = 1.0 / th.w.targets.len() as f64;
        let mut uses = vec![(self.res.client_nic + c, 1.0)];
        for &lun in &th.w.targets {
            let s = self.layout.server_of(lun) as usize;
            let link = match self.r.op {
                PfsOp::Write => self.routes.to_server[s].map(|k| self.res.wan_fwd + k),
                PfsOp::Read => self.routes.to_client[c].map(|k| self.res.wan_rev + k),
            }?;
            uses.push((link, weight));
            for part in 0..PER_SERVER {
                uses.push((self.res.server + s * PER_SERVER + part, weight));
            }
            uses.push((self.res.lun + lun as usize, weight));
        }
        let cap = self.window_bytes / (self.round_trip_s() + self.server_s);
        Some(Demand::merged(uses, cap))
    }

    /// Re-solve every writer's rate and reschedule its next block.
    fn solve(&mut self) {
        self.account();
        self.stall_dead_paths();
        let links = self.r.wan_links as usize;
        let mut capacity = self.res.capacity.clone();
        for k in 0..links {
            if !self.routes.active[k] {
                capacity[self.res.wan_fwd + k] = 0.0;
                capacity[self.res.wan_rev + k] = 0.0;
            }
        }
        let demands: Vec<Option<Demand>> = self.threads.iter().map(|th| self.demand(th)).collect();
        let (idx, flows): (Vec<usize>, Vec<Demand>) =
            demands.into_iter().enumerate().filter_map(|(i, d)| d.map(|d| (i, d))).unzip();
        let rates = max_min(&capacity, &flows);
        self.link_load = vec![0.0; links];
        let data_links = match self.r.op {
            PfsOp::Write => self.res.wan_fwd,
            PfsOp::Read => self.res.wan_rev,
        };
        for (f, &x) in flows.iter().zip(&rates) {
            for &(res, w) in &f.uses {
                if (data_links..data_links + links).contains(&res) {
                    self.link_load[res - data_links] += w * x;
                }
            }
        }
        for th in &mut self.threads {
            th.rate = 0.0;
        }
        for (&i, &x) in idx.iter().zip(&rates) {
            self.threads[i].rate = x;
        }
        let now = self.now_s();
        for (i, th) in self.threads.iter_mut().enumerate() {
            th.gen = th.gen.wrapping_add(1);
            if th.rate > 0.0 {
                let left = (self.block - th.sent_bytes).max(0.0);
                self.q.schedule(at(now + left / th.rate), Ev::Sent { w: i as u32, gen: th.gen });
            }
        }
    }

    fn conn_of(&self, client: u32, server: u32) -> usize {
        (client * self.r.servers + server) as usize
    }

    fn on_sent(&mut self, w: usize) {
        self.account();
        let now = self.now_s();
        let th = &mut self.threads[w];
        let rpc = th.block;
        let stripes = th.w.targets.len() as f64;
        // In the fluid view the writer's k stripes move at once, each at rate / k: a block took k
        // blocks' time at the writer's rate, unless it waited longer since it was issued.
        let started = (now - stripes * self.block / th.rate.max(1.0)).min(th.issued_s);
        th.issued_s = now;
        th.sent_bytes = 0.0;
        let (next, new_file) = th.w.next_rpc(&mut self.layout);
        th.block = next;
        let client = th.w.client;
        let conn = self.conn_of(client, rpc.server);
        self.conns[conn].send(rpc, started);
        self.arrive_later(conn, rpc.writer, rpc.seq, 0);
        let th = &mut self.threads[w];
        if new_file {
            th.creating = true;
            self.q.schedule(at(now + self.create_s()), Ev::Created { w: w as u32 });
            self.solve();
        } else if th.rate > 0.0 {
            self.q.schedule(at(now + self.block / th.rate), Ev::Sent { w: w as u32, gen: th.gen });
        }
    }

    fn arrive_later(&mut self, conn: usize, writer: u32, seq: u64, attempt: u32) {
        let s = conn % self.r.servers as usize;
        let link = self.routes.to_server[s].map_or(u32::MAX, |k| k as u32);
        let t = self.q.now() + at(self.r.one_way_s);
        self.q.schedule(t, Ev::Arrive { conn: conn as u32, writer, seq, attempt, link });
    }

    fn reply_later(&mut self, conn: usize, writer: u32, seq: u64, attempt: u32, after_s: f64) {
        let c = conn / self.r.servers as usize;
        let link = self.routes.to_client[c].map_or(u32::MAX, |k| k as u32);
        let t = self.q.now() + at(after_s + self.r.one_way_s);
        self.q.schedule(t, Ev::Reply { conn: conn as u32, writer, seq, attempt, link });
    }

    fn link_carries(&self, link: u32) -> bool {
        (link as usize) < self.routes.active.len() && self.routes.active[link as usize]
    }

    fn on_arrive(&mut self, conn: usize, writer: u32, seq: u64, attempt: u32, link: u32) {
        let carried = self.link_carries(link);
        let Some(o) = self.conns[conn].find(writer, seq, attempt) else { return };
        if !carried {
            o.fate = Fate::RequestLost;
            self.stall(conn);
            return;
        }
        Connection::execute(o, &mut self.ledger);
        self.reply_later(conn, writer, seq, attempt, self.server_s);
    }

    fn on_reply(&mut self, conn: usize, writer: u32, seq: u64, attempt: u32, link: u32) {
        let carried = self.link_carries(link);
        let Some(o) = self.conns[conn].find(writer, seq, attempt) else { return };
        if !carried {
            o.fate = Fate::ReplyLost;
            self.stall(conn);
            return;
        }
        if let Some(done) = self.conns[conn].complete(writer, seq, &mut self.ledger) {
            let us = (self.now_s() - done.started_s) * 1e6;
            self.latency_us.push(us as f32);
            self.client_bytes[conn / self.r.servers as usize] += self.block;
        }
    }

    /// A connection lost a packet: RC starts retrying.
    fn stall(&mut self, conn: usize) {
        if self.qps[conn] == Qp::Up {
            self.start_retrying(conn);
            self.solve();
        }
    }

    fn start_retrying(&mut self, conn: usize) {
        let now = self.now_s();
        let gen = self.set_qp(conn, Qp::Stalled { since_s: now });
        let error_at = now + self.r.params.failover.retries_exhausted_s();
        self.q.schedule(at(error_at), Ev::QpError { qp: conn as u32, gen });
    }

    /// A writer with data for a server whose path is dead sends its next block into it: the
    /// connection loses it and starts retrying (even when nothing happened to be in flight when
    /// the link went).
    fn stall_dead_paths(&mut self) {
        let servers = self.r.servers as usize;
        for i in 0..self.threads.len() {
            let th = &self.threads[i];
            let c = th.w.client as usize;
            if th.creating || self.expelled[c] {
                continue;
            }
            for s in th.w.servers(&self.layout) {
                let conn = c * servers + s as usize;
                if self.qps[conn] == Qp::Up && !self.routes.alive(c, s as usize) {
                    self.start_retrying(conn);
                }
            }
        }
    }

    /// A connection's new state; returns its generation (for its timers).
    fn set_qp(&mut self, qp: usize, state: Qp) -> u32 {
        self.qps[qp] = state;
        self.qp_gen[qp] = self.qp_gen[qp].wrapping_add(1);
        self.qp_gen[qp]
    }

    fn alive(&self, conn: usize) -> bool {
        let s = self.r.servers as usize;
        self.routes.alive(conn / s, conn % s)
    }

    fn on_sm_done(&mut self) {
        self.routes.reroute();
        let f = &self.r.params.failover;
        let timeout = f.ack_timeout_s();
        let now = self.now_s();
        for qp in 0..self.qps.len() {
            if let Qp::Stalled { since_s } = self.qps[qp] {
                let gen = self.qp_gen[qp];
                // RC retries at since + j x timeout; the first after the new routes gets through.
                let j = ((now - since_s) / timeout).ceil().max(1.0);
                if j <= f.retry_count as f64 && self.alive(qp) {
                    self.q.schedule(at(since_s + j * timeout), Ev::QpRetry { qp: qp as u32, gen });
                }
            }
        }
        self.solve();
    }

    fn on_retry(&mut self, qp: usize, gen: u32) {
        if self.qp_gen[qp] != gen || !matches!(self.qps[qp], Qp::Stalled { .. }) || !self.alive(qp) {
            return;
        }
        self.set_qp(qp, Qp::Up);
        self.counts[0] += 1;
        for o in self.conns[qp].retransmit() {
            if o.fate == Fate::OnWire {
                self.arrive_later(qp, o.rpc.writer, o.rpc.seq, o.attempt);
            } else {
                self.reply_later(qp, o.rpc.writer, o.rpc.seq, o.attempt, 0.0);
            }
        }
        self.solve();
    }

    fn on_error(&mut self, qp: usize, gen: u32) {
        let Qp::Stalled { since_s } = self.qps[qp] else { return };
        if self.qp_gen[qp] != gen {
            return;
        }
        self.counts[1] += 1;
        let gen = self.set_qp(qp, Qp::Failed { since_s });
        let t = self.now_s() + self.r.params.failover.reconnect_s;
        self.q.schedule(at(t), Ev::Reconnect { qp: qp as u32, gen });
    }

    fn on_reconnect(&mut self, qp: usize, gen: u32) {
        let Qp::Failed { since_s } = self.qps[qp] else { return };
        if self.qp_gen[qp] != gen {
            return;
        }
        let now = self.now_s();
        let f = &self.r.params.failover;
        if self.alive(qp) {
            self.set_qp(qp, Qp::Up);
            self.counts[2] += 1;
            for o in self.conns[qp].resend_all() {
                self.arrive_later(qp, o.rpc.writer, o.rpc.seq, o.attempt);
            }
            self.solve();
        } else if now - since_s >= f.failure_detection_s {
            self.expelled[qp / self.r.servers as usize] = true;
            self.solve();
        } else {
            self.q.schedule(at(now + f.reconnect_s), Ev::Reconnect { qp: qp as u32, gen });
        }
    }

    fn on_fabric(&mut self, i: usize) {
        match self.r.fabric_steps[i].1 {
            FabricStep::Down(k) => {
                self.routes.unplug(k);
                self.solve();
            }
            // Active again; the reroute that spreads routes over it comes with it.
            FabricStep::Up(k) => self.routes.plug(k),
            FabricStep::Reroute => self.on_sm_done(),
        }
    }

    fn on_sample(&mut self) {
        self.account();
        let dt = self.r.interval_s;
        let now = self.now_s();
        let s = &mut self.series;
        s.t_s.push(now);
        s.bw_MBps.push(self.client_bytes.iter().sum::<f64>() / dt / 1e6);
        for (c, b) in self.client_bytes.iter_mut().enumerate() {
            s.client_bw_MBps[c].push(*b / dt / 1e6);
            *b = 0.0;
        }
        for (k, b) in self.link_bytes.iter_mut().enumerate() {
            s.link_MBps[k].push(*b / dt / 1e6);
            s.link_util[k].push(*b / dt / (self.r.link_MBps * 1e6));
            *b = 0.0;
        }
        s.links_up.push(self.routes.links_up());
        let next = now + dt;
        if next <= self.r.duration_s * (1.0 + 1e-12) {
            self.q.schedule(at(next), Ev::Sample);
        }
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::Sent { w, gen } if self.threads[w as usize].gen == gen => self.on_sent(w as usize),
            Ev::Sent { .. } => {}
            Ev::Arrive { conn, writer, seq, attempt, link } => {
                self.on_arrive(conn as usize, writer, seq, attempt, link)
            }
            Ev::Reply { conn, writer, seq, attempt, link } => self.on_reply(conn as usize, writer, seq, attempt, link),
            Ev::Fabric { i } => self.on_fabric(i as usize),
            Ev::QpRetry { qp, gen } => self.on_retry(qp as usize, gen),
            Ev::QpError { qp, gen } => self.on_error(qp as usize, gen),
            Ev::Reconnect { qp, gen } => self.on_reconnect(qp as usize, gen),
            Ev::Created { w } => {
                self.threads[w as usize].creating = false;
                self.threads[w as usize].issued_s = self.now_s();
                self.solve();
            }
            Ev::Sample => self.on_sample(),
        }
    }
}

/// Run one resolved scenario.
pub fn run(r: &PfsResolved) -> PfsRecord {
    let mut m = Model::new(r);
    let end = at(r.duration_s);
    for (i, &(t, _)) in r.fabric_steps.iter().enumerate() {
        m.q.schedule(t, Ev::Fabric { i: i as u32 });
    }
    m.q.schedule(at(r.interval_s), Ev::Sample);
    let create = at(m.create_s());
    for w in 0..m.threads.len() {
        m.q.schedule(create, Ev::Created { w: w as u32 });
    }
    let mut cancelled = false;
    while let Some(t) = m.q.peek_time() {
        if t > end {
            break;
        }
        if m.q.events_handled().is_multiple_of(crate::engine::CANCEL_CHECK_EVENTS) && crate::engine::runs_cancelled() {
            cancelled = true;
            break;
        }
        let (_, ev) = m.q.pop().expect("an event");
        m.handle(ev);
    }
    record(m, cancelled)
}

fn record(m: Model, cancelled: bool) -> PfsRecord {
    let r = m.r;
    let p = &r.params;
    let outstanding: u64 = m.conns.iter().map(|c| c.outstanding.len() as u64).sum();
    let total: f64 = m.series.bw_MBps.iter().sum::<f64>() * r.interval_s;
    let status = if cancelled {
        "cancelled".to_string()
    } else if m.expelled.iter().any(|&e| e) {
        "ok: clients expelled (no path for failure_detection_s)".to_string()
    } else {
        "ok".to_string()
    };
    PfsRecord {
        testbed: r.testbed.clone(),
        variant: p.fs.variant.name().to_string(),
        op: match r.op {
            PfsOp::Write => "write".into(),
            PfsOp::Read => "read".into(),
        },
        extender: r.extender.clone(),
        clients: r.clients,
        threads: p.client.threads,
        servers: r.servers,
        luns: r.servers * r.luns_per_server,
        wan_links: r.wan_links,
        block_bytes: p.fs.block_bytes,
        delay_us: r.delay_us,
        fibre_km: r.fibre_km,
        one_way_delay_us: r.one_way_s * 1e6,
        duration_s: r.duration_s,
        interval_s: r.interval_s,
        seed: r.seed,
        link_MBps: r.link_MBps,
        host_MBps: r.host_MBps,
        lun_MBps: p.disk.lun_MBps(p.fs.block_bytes),
        bw_MBps: total / r.duration_s,
        phases: phases(&m.series, &r.events, r.wan_links, r.duration_s),
        series: m.series,
        rpc_latency: Latency::of(m.latency_us),
        acked_blocks: m.ledger.acked,
        stored_blocks: m.ledger.stored,
        rewritten_blocks: m.ledger.rewrites,
        outstanding_blocks: outstanding,
        ledger_ok: m.ledger.violation.is_none(),
        ledger_violation: m.ledger.violation,
        rc_recoveries: m.counts[0],
        qp_errors: m.counts[1],
        reconnects: m.counts[2],
        expelled_clients: m.expelled.iter().filter(|&&e| e).count() as u32,
        sim_events: m.q.events_handled(),
        status,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pfs::scenario::PfsScenario;
    use proptest::prelude::*;

    fn run_json(json: &str) -> PfsRecord {
        run(&PfsScenario::from_json(json).unwrap().resolve().unwrap())
    }

    /// The [S3] drill: four links, three unplugged one by one, the last plugged back.
    const DRILL: &str = r#"{"path": {"wan_links": 4, "fibre_km": 10}, "pfs": {"duration_s": 240},
        "events": [{"at_s": 40, "link": 0, "action": "down"}, {"at_s": 80, "link": 1, "action": "down"},
                   {"at_s": 120, "link": 2, "action": "down"}, {"at_s": 160, "link": 2, "action": "up"}]}"#;

    #[test]
    fn the_drill_keeps_every_write_and_recovers() {
        let r = run_json(DRILL);
        assert!(r.ledger_ok, "{:?}", r.ledger_violation);
        let bw: Vec<f64> = r.phases.iter().map(|p| p.bw_MBps).collect();
        // Two links carry what four did; one carries less; plugging one back restores it.
        assert!((bw[2] - bw[0]).abs() < 0.01 * bw[0] && bw[3] < 0.95 * bw[0] && bw[4] > 0.99 * bw[0], "{bw:?}");
        assert!(bw[3] <= r.link_MBps * (1.0 + 1e-9), "{bw:?}");
        let recovery = r.phases[4].recovery_s.expect("recovered");
        assert!(recovery <= 10.0 + 1.0 + 1.0, "{recovery}");
        // The failover shows: a dip while RC retries until the SM's reroute (trap at once, 0.1 s:
        // the second retry gets through, nothing fails), and a long latency tail.
        assert!(r.phases[1].min_MBps < 0.95 * bw[0], "{:?}", r.phases);
        assert!(r.rc_recoveries > 0 && r.qp_errors == 0, "{} {}", r.rc_recoveries, r.qp_errors);
        assert!(r.rpc_latency.max_us > 1e5 && r.rpc_latency.p50_us < 1e5);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Any failure schedule: every acknowledged write on a server exactly once, no link
        /// above its capacity.
        #[test]
        fn any_failure_schedule_loses_and_duplicates_nothing(
            links in 1u32..5,
            raw in prop::collection::vec((0.1f64..19.9, 0u32..4), 0..8),
            timeout_exp in 8u32..20,
            retries in 0u32..8,
            variant in prop::sample::select(vec!["gpfs", "lustre"]),
            op in prop::sample::select(vec!["write", "read"]),
        ) {
            // Alternate down/up per link in time order, so every schedule is valid.
            let mut raw = raw;
            raw.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut up = vec![true; links as usize];
            let mut events = Vec::new();
            for (t, l) in raw {
                let l = l % links;
                let action = if up[l as usize] { "down" } else { "up" };
                up[l as usize] = !up[l as usize];
                events.push(format!(r#"{{"at_s": {t}, "link": {l}, "action": "{action}"}}"#));
            }
            let json = format!(
                r#"{{"path": {{"wan_links": {links}, "fibre_km": 10}},
                    "pfs": {{"duration_s": 20, "variant": "{variant}", "op": "{op}", "ack_timeout_exp": {timeout_exp},
                             "retry_count": {retries}, "file_bytes": 67108864}},
                    "events": [{}]}}"#,
                events.join(",")
            );
            let r = run_json(&json);
            prop_assert!(r.ledger_ok, "{:?}", r.ledger_violation);
            // Stored and not acknowledged: only blocks still outstanding (a reply on its way or lost).
            prop_assert!(r.acked_blocks <= r.stored_blocks && r.stored_blocks - r.acked_blocks <= r.outstanding_blocks);
            for k in 0..links as usize {
                prop_assert!(r.series.link_util[k].iter().all(|&u| u <= 1.0 + 1e-9), "link {} {:?}", k, r.series.link_util[k]);
            }
            prop_assert!(r.acked_blocks > 0);
        }
    }

    #[test]
    fn events_at_one_time_make_one_cut_and_an_outage_expels_after_the_lease() {
        let r = run_json(
            r#"{"path": {"wan_links": 2}, "pfs": {"duration_s": 60},
                "events": [{"at_s": 5, "link": 0, "action": "down"}, {"at_s": 5, "link": 1, "action": "down"}]}"#,
        );
        assert_eq!(r.phases.len(), 2);
        assert_eq!((r.phases[1].event.as_str(), r.phases[1].links_plugged), ("link 1 down", 0));
        assert_eq!(r.phases[1].bw_MBps, 0.0);
        // No path for GPFS's 35 s lease: both clients are expelled (even if nothing happened to
        // be in flight when the links went: the writers' next blocks were lost); nothing
        // acknowledged is lost.
        assert_eq!(r.expelled_clients, 2);
        assert!(r.ledger_ok && r.acked_blocks > 0 && r.qp_errors >= 2);
    }

    #[test]
    fn same_seed_same_record() {
        let a = run_json(DRILL);
        assert_eq!(a, run_json(DRILL));
    }
}
