//! The file system at packet level: the same writers, connections, servers and ledger as the
//! fluid driver ([`super::core`]), with every RPC carried packet by packet by the verbs model
//! (RC queue pairs, RDMA for the data) or the TCP model (over IPoIB), through the transport seam
//! ([`crate::world::World`]). Written once over a small [`Channel`] trait: [`verbs`] and [`tcp`]
//! say how a request and a reply, each with or without a block of data, travel on their
//! transport; everything else (page-pool windows, file creates as metadata round trips, NSD
//! workers, server cores, LUNs, the storage path) is here and transport-free.
//!
//! What it adds to the fluid level: packet queues and link-level credits, RC's and TCP's own
//! windows and ACKs, header overheads, the latency of each RPC as it really queues. What it
//! costs: every packet is an event (0.6-1 s of wall time per simulated second at 1 GB/s,
//! optimised build), so it suits runs of seconds; minutes-long drills stay with the fluid driver. Link
//! events run here through the verbs model's link failure (the subnet manager's plan of
//! `PfsResolved::fabric_steps` on the fabric's WAN links): RC or TCP recover what a cut lost,
//! packet by packet; a queue pair out of retries leaves its connection failed (the file system's
//! reconnect and resend are the fluid driver's).
//!
//! Per-link traffic comes from the fabric's counters on the WAN ports, sampled every interval.
//!
//! The packet level's topology is `crate::topology::build`'s: the `wan_links` parallel links
//! take as many extender pairs as the product's long-haul ports require (S3's Longbow C103 has
//! one: four links, four pairs, as the fluid level's links), and the fabric spreads
//! connections over the links by connection number (a connection's packets keep to one link),
//! not by destination LID as the subnet manager's minhop tables do ([`super::routing`]).

pub(crate) mod tcp;
pub(crate) mod verbs;

use std::collections::VecDeque;

use serde::Serialize;

use super::core::{Connection, Rpc, Writer};
use super::layout::Layout;
use super::ledger::Ledger;
use super::record::{Outcome, PfsRecord, Recovery, Series};
use super::scenario::{PfsOp, PfsResolved};
use crate::engine::time::{from_ns, to_s, S};
use crate::engine::{EventQueue, Stop, Time};
use crate::ib::subnet_manager::FabricStep;
use crate::net::{Fabric, LinkChange, PortId};
use crate::scenario::{err, Resolved, ScenarioError};
use crate::tcp::TcpResolved;
use crate::transport::Transport;
use crate::world::{App, Ev, TimerPolicy, World};

/// The host transport of the packet level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PacketTransport {
    /// Verbs: requests and replies as Sends on one RC queue pair per client-server pair, data by
    /// RDMA (GPFS's verbsRdma).
    Rc,
    /// TCP over IPoIB (connected mode): data on the socket with the request or the reply.
    Tcp,
}

/// Which driver runs a scenario.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    Fluid,
    Packet {
        transport: PacketTransport,
        /// TCP: the path as the TCP model resolved it (IPoIB on the verbs path).
        #[serde(skip)]
        tcp: Option<Box<TcpResolved>>,
    },
}

impl Network {
    pub const NAMES: [&'static str; 2] = ["fluid", "packet"];
    pub const TRANSPORTS: [&'static str; 2] = ["rc", "tcp"];

    /// The scenario's `network` and `transport`, checked against each other and its events.
    pub fn resolve(network: Option<&str>, transport: Option<&str>, verbs: &Resolved) -> Result<Network, ScenarioError> {
        let packet = match network.unwrap_or("fluid") {
            "fluid" => false,
            "packet" => true,
            other => return err(format!("network: unknown '{other}' (valid: fluid, packet)")),
        };
        let transport = match transport.unwrap_or("rc") {
            "rc" => PacketTransport::Rc,
            "tcp" => PacketTransport::Tcp,
            other => return err(format!("transport: unknown '{other}' (valid: rc, tcp)")),
        };
        if !packet {
            if transport == PacketTransport::Tcp {
                return err("transport: tcp runs at the packet level only (valid with network = fluid: rc)");
            }
            return Ok(Network::Fluid);
        }
        let tcp = match transport {
            PacketTransport::Rc => None,
            PacketTransport::Tcp => Some(Box::new(tcp::resolve(verbs)?)),
        };
        Ok(Network::Packet { transport, tcp })
    }

    /// The record's words for the driver and its transport ("fluid" models RC).
    pub fn names(&self) -> (&'static str, &'static str) {
        match self {
            Network::Fluid => ("fluid", "rc"),
            Network::Packet { transport: PacketTransport::Rc, .. } => ("packet", "rc"),
            Network::Packet { transport: PacketTransport::Tcp, .. } => ("packet", "tcp"),
        }
    }
}

/// Bytes of an NSD request or reply message without its data (the block's address and length,
/// the client buffer's remote key, the status). GPFS does not publish its wire format; assumed
/// 256 bytes, a few cache lines, as RPC headers with a chunk list are (RPC-over-RDMA, RFC 8166:
/// a fixed part of 28 bytes plus 16 per chunk segment, behind the RPC header of about 100).
pub const NSD_HEADER_BYTES: u32 = 256;

/// What arrived at the far end of a connection: a request (and its data) at the server, or a
/// reply (and its data) at the client, seen by the application at `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    Request { conn: u32, tag: u32, at: Time },
    Reply { conn: u32, tag: u32, at: Time },
}

/// How requests and replies travel on one transport: one connection per client-server node
/// pair, numbered `client x servers + server`. Each message has a small header and may carry
/// `data` bytes (a block); the channel says when it is whole at the far end.
pub trait Channel {
    type Net: Transport;
    /// The client of `conn` sends a request carrying `data` bytes, now.
    fn request(&mut self, cx: &mut Cx<'_, Self::Net>, conn: u32, tag: u32, data: u32);
    /// The server of `conn` replies, carrying `data` bytes, now.
    fn reply(&mut self, cx: &mut Cx<'_, Self::Net>, conn: u32, tag: u32, data: u32);
    /// Connections the transport gave up on (an RC queue pair out of retries): their
    /// outstanding calls stay unanswered (the file system's reconnect and resend run at flow
    /// level only).
    fn failed(&self) -> u64 {
        0
    }
    /// A transport output: what it completed, if anything, onto `arrived`.
    fn on_output(
        &mut self,
        out: <Self::Net as Transport>::Output,
        cx: &mut Cx<'_, Self::Net>,
        arrived: &mut Vec<Arrival>,
    );
}

pub type Cx<'a, T> = crate::world::Cx<'a, T, Step>;

/// The application's own events: a client's CPU has built a call, a server has done one.
#[derive(Debug, Clone, Copy)]
pub enum Step {
    Post { tag: u32 },
    Served { tag: u32 },
}

/// A call in flight: a block RPC or one round trip of a file create.
#[derive(Debug, Clone, Copy)]
enum Call {
    Block { rpc: Rpc, conn: u32, started: Time },
    Meta { writer: u32, conn: u32, left: u32 },
}

struct WriterState {
    w: Writer,
    outstanding: u32,
    /// Creating a file: this block waits for the create's round trips.
    held: Option<Rpc>,
}

struct Server {
    cores_free: Vec<Time>,
    busy_workers: u32,
    waiting: VecDeque<u32>,
    storage_free: Time,
}

/// The transport-free application: writers, page-pool windows, servers, the ledger.
pub struct PfsApp<C: Channel> {
    channel: C,
    op: PfsOp,
    servers_n: u32,
    block: u32,
    /// Blocks a writer may have outstanding: its share of the page pool's dirty data.
    window: u32,
    create_round_trips: u32,
    costs: Costs,
    layout: Layout,
    ledger: Ledger,
    conns: Vec<Connection>,
    writers: Vec<WriterState>,
    calls: Vec<Option<Call>>,
    free: Vec<u32>,
    client_cpu: Vec<Time>,
    servers: Vec<Server>,
    lun_free: Vec<Time>,
    nsd_workers: u32,
    arrived: Vec<Arrival>,
    /// Acknowledged bytes per client since the last sample.
    client_bytes: Vec<u64>,
    latency_us: Vec<f32>,
}

/// Per-call costs (ps).
struct Costs {
    client_rpc: Time,
    server_cpu: Time,
    lun: Time,
    storage: Time,
}

impl<C: Channel> PfsApp<C> {
    fn new(r: &PfsResolved, channel: C) -> Self {
        let p = &r.params;
        let (c, s) = (r.clients as usize, r.servers as usize);
        let luns = r.servers * r.luns_per_server;
        let mut layout =
            Layout::new(p.fs.variant, r.servers, luns, p.fs.stripe_count, p.fs.file_bytes / p.fs.block_bytes);
        let threads = p.client.threads as usize;
        let writers: Vec<WriterState> = (0..c * threads)
            .map(|i| WriterState {
                w: Writer::new((i / threads) as u32, i as u32, &mut layout),
                outstanding: 0,
                held: None,
            })
            .collect();
        let block = p.fs.block_bytes as f64;
        let window_bytes = p.client.pagepool_bytes as f64 * p.client.dirty_fraction / threads as f64;
        let secs = |s: f64| (s * S as f64).round() as Time;
        PfsApp {
            channel,
            op: r.op,
            servers_n: r.servers,
            block: p.fs.block_bytes as u32,
            window: ((window_bytes / block) as u32).max(1),
            create_round_trips: p.fs.create_round_trips,
            costs: Costs {
                client_rpc: from_ns(p.client.rpc_cpu_us * 1e3),
                server_cpu: from_ns(p.server.request_cpu_us * 1e3),
                lun: secs(block / (p.disk.lun_MBps(p.fs.block_bytes) * 1e6)),
                storage: secs(block / (p.server.storage_path_MBps * 1e6)),
            },
            layout,
            ledger: Ledger::new(writers.len()),
            conns: vec![Connection::default(); c * s],
            writers,
            calls: Vec::new(),
            free: Vec::new(),
            client_cpu: vec![0; c],
            servers: (0..s)
                .map(|_| Server {
                    cores_free: vec![0; p.server.cores as usize],
                    busy_workers: 0,
                    waiting: VecDeque::new(),
                    storage_free: 0,
                })
                .collect(),
            lun_free: vec![0; luns as usize],
            nsd_workers: p.server.nsd_workers(r.luns_per_server),
            arrived: Vec::new(),
            client_bytes: vec![0; c],
            latency_us: Vec::new(),
        }
    }

    fn conn_of(&self, client: u32, server: u32) -> u32 {
        client * self.servers_n + server
    }

    fn new_call(&mut self, call: Call) -> u32 {
        match self.free.pop() {
            Some(tag) => {
                self.calls[tag as usize] = Some(call);
                tag
            }
            None => {
                self.calls.push(Some(call));
                (self.calls.len() - 1) as u32
            }
        }
    }

    /// The client's CPU builds the call; it goes when done (charged in order per client).
    fn post(&mut self, cx: &mut Cx<'_, C::Net>, client: u32, call: Call) {
        let tag = self.new_call(call);
        let cpu = &mut self.client_cpu[client as usize];
        *cpu = (*cpu).max(cx.now) + self.costs.client_rpc;
        cx.schedule(*cpu, Step::Post { tag });
    }

    /// A file create: round trips to the file system manager (server 0's node) before the file's
    /// first block goes.
    fn create(&mut self, cx: &mut Cx<'_, C::Net>, w: u32) {
        let client = self.writers[w as usize].w.client;
        let conn = self.conn_of(client, 0);
        self.post(cx, client, Call::Meta { writer: w, conn, left: self.create_round_trips });
    }

    /// Send blocks while the writer's window has room.
    fn fill(&mut self, cx: &mut Cx<'_, C::Net>, w: u32) {
        loop {
            let ws = &mut self.writers[w as usize];
            if ws.held.is_some() || ws.outstanding >= self.window {
                return;
            }
            let (rpc, new_file) = ws.w.next_rpc(&mut self.layout);
            if new_file {
                ws.held = Some(rpc);
                return self.create(cx, w);
            }
            self.send_block(cx, w, rpc);
        }
    }

    fn send_block(&mut self, cx: &mut Cx<'_, C::Net>, w: u32, rpc: Rpc) {
        let ws = &mut self.writers[w as usize];
        ws.outstanding += 1;
        let client = ws.w.client;
        let conn = self.conn_of(client, rpc.server);
        self.conns[conn as usize].send(rpc, to_s(cx.now));
        self.post(cx, client, Call::Block { rpc, conn, started: cx.now });
    }

    /// The block of `tag` reached its server at `at`: an NSD worker takes it when one is free.
    fn admit(&mut self, cx: &mut Cx<'_, C::Net>, tag: u32, at: Time) {
        let Some(Call::Block { rpc, .. }) = self.calls[tag as usize] else { unreachable!("a block call") };
        let s = &mut self.servers[rpc.server as usize];
        if s.busy_workers >= self.nsd_workers {
            s.waiting.push_back(tag);
            return;
        }
        s.busy_workers += 1;
        self.serve(cx, tag, at);
    }

    /// A worker runs the block: a core's CPU, then the LUN and the storage path (in parallel:
    /// the controller streams while the path feeds it).
    fn serve(&mut self, cx: &mut Cx<'_, C::Net>, tag: u32, at: Time) {
        let Some(Call::Block { rpc, .. }) = self.calls[tag as usize] else { unreachable!("a block call") };
        let h = &self.costs;
        let s = &mut self.servers[rpc.server as usize];
        let core = (0..s.cores_free.len()).min_by_key(|&i| s.cores_free[i]).expect("a core");
        let cpu_done = s.cores_free[core].max(at) + h.server_cpu;
        s.cores_free[core] = cpu_done;
        let lun = &mut self.lun_free[rpc.lun as usize];
        *lun = (*lun).max(cpu_done) + h.lun;
        s.storage_free = s.storage_free.max(cpu_done) + h.storage;
        cx.schedule((*lun).max(s.storage_free), Step::Served { tag });
    }

    /// A metadata round trip reached the server: its CPU only, then the reply.
    fn serve_meta(&mut self, cx: &mut Cx<'_, C::Net>, conn: u32, tag: u32, at: Time) {
        let s = &mut self.servers[(conn % self.servers_n) as usize];
        let core = (0..s.cores_free.len()).min_by_key(|&i| s.cores_free[i]).expect("a core");
        s.cores_free[core] = s.cores_free[core].max(at) + self.costs.server_cpu;
        cx.schedule(s.cores_free[core], Step::Served { tag });
    }

    fn on_arrival(&mut self, cx: &mut Cx<'_, C::Net>, a: Arrival) {
        match a {
            Arrival::Request { conn, tag, at } => match self.calls[tag as usize] {
                Some(Call::Block { .. }) => self.admit(cx, tag, at),
                Some(Call::Meta { .. }) => self.serve_meta(cx, conn, tag, at),
                None => unreachable!("a request of a live call"),
            },
            Arrival::Reply { tag, at, .. } => self.on_reply(cx, tag, at),
        }
    }

    fn on_reply(&mut self, cx: &mut Cx<'_, C::Net>, tag: u32, at: Time) {
        let call = self.calls[tag as usize].take().expect("a reply of a live call");
        self.free.push(tag);
        match call {
            Call::Meta { writer, conn, left } if left > 1 => {
                let client = self.writers[writer as usize].w.client;
                self.post(cx, client, Call::Meta { writer, conn, left: left - 1 });
            }
            Call::Meta { writer, .. } => {
                if let Some(rpc) = self.writers[writer as usize].held.take() {
                    self.send_block(cx, writer, rpc);
                }
                self.fill(cx, writer);
            }
            Call::Block { rpc, conn, started } => {
                let c = &mut self.conns[conn as usize];
                if c.complete(rpc.writer, rpc.seq, &mut self.ledger).is_some() {
                    self.latency_us.push((to_s(at.saturating_sub(started)) * 1e6) as f32);
                    self.client_bytes[(conn / self.servers_n) as usize] += self.block as u64;
                }
                self.writers[rpc.writer as usize].outstanding -= 1;
                self.fill(cx, rpc.writer);
            }
        }
    }

    /// Data a request carries (a write's block) and a reply carries (a read's block).
    fn data(&self, call: &Call) -> (u32, u32) {
        match (call, self.op) {
            (Call::Meta { .. }, _) => (0, 0),
            (Call::Block { .. }, PfsOp::Write) => (self.block, 0),
            (Call::Block { .. }, PfsOp::Read) => (0, self.block),
        }
    }
}

impl<C: Channel> App<C::Net> for PfsApp<C> {
    type Event = Step;

    fn start(&mut self, cx: &mut Cx<'_, C::Net>) {
        // Every writer opens its first file: a create, as the fluid driver charges at time 0.
        for w in 0..self.writers.len() as u32 {
            let (rpc, _) = self.writers[w as usize].w.next_rpc(&mut self.layout);
            self.writers[w as usize].held = Some(rpc);
            self.create(cx, w);
        }
    }

    fn on_output(&mut self, out: <C::Net as Transport>::Output, cx: &mut Cx<'_, C::Net>) {
        let mut arrived = std::mem::take(&mut self.arrived);
        self.channel.on_output(out, cx, &mut arrived);
        for a in arrived.drain(..) {
            self.on_arrival(cx, a);
        }
        self.arrived = arrived;
    }

    fn on_event(&mut self, ev: Step, cx: &mut Cx<'_, C::Net>) {
        match ev {
            Step::Post { tag } => {
                let call = self.calls[tag as usize].expect("a live call");
                let conn = match call {
                    Call::Block { conn, .. } | Call::Meta { conn, .. } => conn,
                };
                let (data, _) = self.data(&call);
                self.channel.request(cx, conn, tag, data);
            }
            Step::Served { tag } => {
                let call = self.calls[tag as usize].expect("a live call");
                let conn = match call {
                    Call::Block { rpc, conn, .. } => {
                        let c = &mut self.conns[conn as usize];
                        let o = c.find(rpc.writer, rpc.seq, 0).expect("an outstanding block");
                        Connection::execute(o, &mut self.ledger);
                        let s = &mut self.servers[rpc.server as usize];
                        match s.waiting.pop_front() {
                            Some(next) => self.serve(cx, next, cx.now),
                            None => s.busy_workers -= 1,
                        }
                        conn
                    }
                    Call::Meta { conn, .. } => conn,
                };
                let (_, data) = self.data(&call);
                self.channel.reply(cx, conn, tag, data);
            }
        }
    }

    /// The run ends at its duration, not when the writers are done (they never are).
    fn done(&self) -> bool {
        false
    }
}

/// Run a resolved packet-level scenario over its transport.
pub fn run(r: &PfsResolved) -> PfsRecord {
    match &r.network {
        Network::Packet { transport: PacketTransport::Tcp, tcp: Some(t) } => tcp::run(r, t),
        _ => verbs::run(r),
    }
}

/// Drive a built world interval by interval, sampling the clients' and links' traffic, and
/// make the record. `wan`: the long-haul links' ports on side A (`crate::topology::TwoClusters`).
/// A link's traffic is the bytes its port in the data's direction sent (IB headers included,
/// WAN framing not), its utilisation those bytes against the port's rate.
pub(crate) fn drive<C: Channel>(r: &PfsResolved, mut world: World<C::Net, PfsApp<C>>, wan: &[PortId]) -> PfsRecord {
    let mut q: EventQueue<Ev<<C::Net as Transport>::Timer, Step>> = EventQueue::new();
    let (toward, back): (Vec<PortId>, Vec<PortId>) =
        wan.iter().map(|&p| (p, world.fabric.ports[p as usize].peer)).unzip();
    let data_ports = if r.op == PfsOp::Write { toward } else { back };
    let mut series = Series {
        client_bw_MBps: vec![Vec::new(); r.clients as usize],
        link_MBps: vec![Vec::new(); data_ports.len()],
        link_util: vec![Vec::new(); data_ports.len()],
        ..Series::default()
    };
    let mut last = vec![0u64; data_ports.len()];
    // The subnet manager's plan of the link events, on the fabric (before the run, as it asks).
    for &(at, step) in &r.fabric_steps {
        let change = match step {
            FabricStep::Down(k) => LinkChange::Down(wan[k]),
            FabricStep::Up(k) => LinkChange::Up(wan[k]),
            FabricStep::Reroute => LinkChange::Reroute,
        };
        world.fabric.schedule_link_change(at, change, &mut q);
    }
    let steps = (r.duration_s / r.interval_s).round().max(1.0) as u64;
    let mut cancelled = false;
    for k in 1..=steps {
        let until = (k as f64 * r.interval_s * S as f64).round() as Time;
        let stop = if k == 1 { world.run(&mut q, until) } else { world.resume(&mut q, until) };
        if stop == Stop::Cancelled {
            cancelled = true;
            break;
        }
        let dt = r.interval_s;
        series.t_s.push(k as f64 * dt);
        let app = &mut world.app;
        series.bw_MBps.push(app.client_bytes.iter().sum::<u64>() as f64 / dt / 1e6);
        for (c, b) in app.client_bytes.iter_mut().enumerate() {
            series.client_bw_MBps[c].push(*b as f64 / dt / 1e6);
            *b = 0;
        }
        for (i, &p) in data_ports.iter().enumerate() {
            let port = &world.fabric.ports[p as usize];
            let sent = port.tx_bytes_by(until);
            let bytes = (sent - last[i]) as f64;
            last[i] = sent;
            series.link_MBps[i].push(bytes / dt / 1e6);
            series.link_util[i].push(bytes * 8.0 / (port.params.rate.gbps() * 1e9 * dt));
        }
        series.links_up.push(wan.iter().filter(|&&p| world.fabric.is_link_up(p)).count() as u32);
    }
    record(r, world.app, series, q.events_handled(), cancelled)
}

fn record<C: Channel>(r: &PfsResolved, app: PfsApp<C>, series: Series, events: u64, cancelled: bool) -> PfsRecord {
    let failed = app.channel.failed();
    let outcome = Outcome {
        outstanding_blocks: app.conns.iter().map(|c| c.outstanding.len() as u64).sum(),
        recovery: Recovery { qp_errors: failed, ..Recovery::default() },
        sim_events: events,
        status: match (cancelled, failed) {
            (true, _) => "cancelled".into(),
            (false, 0) => "ok".into(),
            (false, n) => format!("ok: {n} connections failed (reconnects run at network = fluid only)"),
        },
        series,
        latency_us: app.latency_us,
        ledger: app.ledger,
    };
    PfsRecord::new(r, outcome)
}

/// Build the world of a channel: the app over `net` on `fabric`.
pub(crate) fn world<C: Channel>(
    r: &PfsResolved,
    fabric: Fabric<<C::Net as Transport>::Packet>,
    net: C::Net,
    channel: C,
) -> World<C::Net, PfsApp<C>> {
    World::new(fabric, net, PfsApp::new(r, channel), TimerPolicy::Direct)
}

#[cfg(test)]
mod tests;
