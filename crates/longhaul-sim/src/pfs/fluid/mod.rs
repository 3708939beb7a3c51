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
//! the first retry after the reroute recovers the connection if retries remain; else, with
//! automatic path migration armed, the QP moves to its alternate path and retries there, or
//! the QP fails and the file system reconnects and resends; a client with no path for its
//! lease time is expelled.

mod failover;
#[cfg(test)]
mod tests;

use super::core::{Connection, Fate, Writer};
use super::layout::Layout;
use super::ledger::Ledger;
use super::record::{Outcome, PfsRecord, Recovery, Series};
use super::routing::Routes;
use super::scenario::{PfsOp, PfsResolved};
use crate::engine::time::{to_s, S};
use crate::engine::{EventQueue, Time};
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
    /// The connection's QP has migrated to its alternate path (APM; until it is replaced).
    migrated: Vec<bool>,
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
            capacity.push(p.server.nsd_workers(r.luns_per_server) as f64 * block / server_s);
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
            migrated: vec![false; c * s],
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
            let (to_server, to_client) = self.path(self.conn_of(c as u32, s as u32));
            let link = match self.r.op {
                PfsOp::Write => to_server.map(|k| self.res.wan_fwd + k),
                PfsOp::Read => to_client.map(|k| self.res.wan_rev + k),
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

    /// The links a connection's packets take toward its server and back to its client: its
    /// primary path's, or its alternate's once it has migrated.
    fn path(&self, conn: usize) -> (Option<usize>, Option<usize>) {
        let s = self.r.servers as usize;
        let (c, s) = (conn / s, conn % s);
        let rt = &self.routes;
        if self.migrated[conn] {
            (rt.alt_to_server[s], rt.alt_to_client[c])
        } else {
            (rt.to_server[s], rt.to_client[c])
        }
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
        let link = self.path(conn).0.map_or(u32::MAX, |k| k as u32);
        let t = self.q.now() + at(self.r.one_way_s);
        self.q.schedule(t, Ev::Arrive { conn: conn as u32, writer, seq, attempt, link });
    }

    fn reply_later(&mut self, conn: usize, writer: u32, seq: u64, attempt: u32, after_s: f64) {
        let link = self.path(conn).1.map_or(u32::MAX, |k| k as u32);
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
    let status = if cancelled {
        "cancelled".to_string()
    } else if m.expelled.iter().any(|&e| e) {
        "ok: clients expelled (no path for failure_detection_s)".to_string()
    } else {
        "ok".to_string()
    };
    let outcome = Outcome {
        outstanding_blocks: m.conns.iter().map(|c| c.outstanding.len() as u64).sum(),
        recovery: Recovery {
            rc_recoveries: m.counts[0],
            qp_errors: m.counts[1],
            reconnects: m.counts[2],
            expelled_clients: m.expelled.iter().filter(|&&e| e).count() as u32,
        },
        sim_events: m.q.events_handled(),
        series: m.series,
        latency_us: m.latency_us,
        ledger: m.ledger,
        status,
    };
    PfsRecord::new(m.r, outcome)
}
