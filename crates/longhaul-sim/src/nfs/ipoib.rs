//! NFS over TCP over IPoIB (datagram or connected mode) on the TCP model. The replies flow on one
//! TCP connection from the server to the client; the client's READ calls go the other way as
//! small datagrams (160 bytes each, at most one slot table of them in flight, so TCP's window
//! never holds them back; on the credit flow-controlled IB path nothing is lost).
//!
//! The reply connection is a byte stream the server writes into: a reply of rsize data plus its
//! header is appended when the server has processed the call, and TCP may send only the segments
//! written so far (`Sender::app_limit`). The model's sequence space counts whole MSS segments, so
//! a partly written last segment waits only while the server is still processing further calls
//! (whose replies will fill it, as Linux's TCP autocorking coalesces back-to-back writes), and
//! goes alone, padded to a full segment, when the server has nothing more to write (Linux's RPC
//! sockets set TCP_NODELAY, so a reply never waits for an acknowledgement). With a 64 KiB
//! connected-mode MSS and 32 KiB replies a busy server thus sends half as many, twice as large
//! segments. A reply is complete at the client when TCP has delivered in order up to its last
//! byte.

use std::collections::VecDeque;

use super::client::{ReadClient, Rpc};
use super::params::NfsParams;
use super::scenario::NfsResolved;
use super::Outcome;
use crate::engine::time::from_ns;
use crate::engine::{run, EventQueue, Model, Stop, Time};
use crate::net::{Endpoints, Fabric, NetEvent, NodeId, Pull};
use crate::tcp::hosts::TcpHosts;
use crate::tcp::link::TCP_IP_HEADER_BYTES;
use crate::tcp::{path, Kind, TcpPacket, TcpResolved};

/// Connection index that marks a packet as an RPC call datagram (never a TCP connection).
const CALL: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
enum NfsEv {
    Net(NetEvent),
    Timer(u32),
    /// The server has written its oldest processed reply into the socket.
    Written,
}

impl From<NetEvent> for NfsEv {
    fn from(e: NetEvent) -> Self {
        NfsEv::Net(e)
    }
}

/// The TCP hosts plus the calls: call datagrams go first, then TCP's packets.
struct RpcHosts {
    tcp: TcpHosts,
    /// Call datagrams waiting at each host, with the time each is ready.
    outbox: Vec<VecDeque<(Time, TcpPacket)>>,
    /// Calls that reached the server (arrival times), for the world to serve.
    arrived: Vec<Time>,
}

impl Endpoints<TcpPacket> for RpcHosts {
    fn deliver(&mut self, now: Time, node: NodeId, pkt: TcpPacket) {
        if pkt.kind == Kind::Cross && pkt.conn == CALL {
            self.arrived.push(now);
        } else {
            self.tcp.deliver(now, node, pkt);
        }
    }

    fn pull(&mut self, now: Time, node: NodeId) -> Pull<TcpPacket> {
        let mut wait = None;
        if let Some(&(ready, pkt)) = self.outbox[node as usize].front() {
            if ready <= now {
                self.outbox[node as usize].pop_front();
                return Pull::Ready(pkt);
            }
            wait = Some(ready);
        }
        match (self.tcp.pull(now, node), wait) {
            (Pull::Ready(p), _) => Pull::Ready(p),
            (Pull::Later(t), Some(w)) => Pull::Later(t.min(w)),
            (Pull::Later(t), None) => Pull::Later(t),
            (Pull::Idle, Some(w)) => Pull::Later(w),
            (Pull::Idle, None) => Pull::Idle,
        }
    }

    fn sent(&mut self, node: NodeId, pkt: &TcpPacket, done_at: Time) {
        self.tcp.sent(node, pkt, done_at);
    }
}

struct World {
    fabric: Fabric<TcpPacket>,
    hosts: RpcHosts,
    client: ReadClient,
    params: NfsParams,
    conn: u32,
    mss: u64,
    nodes: (NodeId, NodeId),
    call_wire: u32,
    /// Calls in transit to the server, in order.
    calls: VecDeque<Rpc>,
    /// Replies being processed by the server (the call and the reply's bytes), in order.
    processing: VecDeque<(Rpc, u64)>,
    /// Replies written into the stream: the call and the stream offset just past its last byte.
    written: VecDeque<(Rpc, u64)>,
    stream_bytes: u64,
    client_cpu: Time,
    server_cpu: Time,
    client_rpc: Time,
    server_rpc: Time,
    last_reply: Time,
}

impl World {
    fn send_calls(&mut self, rpcs: Vec<Rpc>, at: Time, now: Time, q: &mut EventQueue<NfsEv>) {
        if rpcs.is_empty() {
            return;
        }
        for rpc in rpcs {
            self.client_cpu = self.client_cpu.max(at) + self.client_rpc;
            let mut pkt = TcpPacket::data(self.nodes.1, CALL, 0, self.call_wire);
            pkt.kind = Kind::Cross;
            self.hosts.outbox[self.nodes.0 as usize].push_back((self.client_cpu, pkt));
            self.calls.push_back(rpc);
        }
        self.fabric.kick(now, self.nodes.0, q, &mut self.hosts);
    }

    /// Serve the calls that arrived; complete the replies TCP has delivered.
    fn settle(&mut self, now: Time, q: &mut EventQueue<NfsEv>) {
        for at in std::mem::take(&mut self.hosts.arrived) {
            let rpc = self.calls.pop_front().expect("a call in transit");
            self.server_cpu = self.server_cpu.max(at) + self.server_rpc;
            self.processing.push_back((rpc, (rpc.bytes + self.params.reply_header_bytes) as u64));
            q.schedule(self.server_cpu, NfsEv::Written);
        }
        let delivered = self.hosts.tcp.conns[self.conn as usize].rx.rcv_nxt * self.mss;
        let mut next = Vec::new();
        while self.written.front().is_some_and(|&(_, end)| end <= delivered) {
            let (rpc, _) = self.written.pop_front().expect("checked");
            self.last_reply = self.last_reply.max(now + self.client_rpc);
            next.extend(self.client.on_reply(rpc));
        }
        self.send_calls(next, now + self.client_rpc, now, q);
        self.flush_if_idle(now, q);
        for (t, c) in self.hosts.tcp.timers.drain(..) {
            q.schedule(t.max(now), NfsEv::Timer(c));
        }
    }

    /// The server wrote its oldest processed reply: extend the stream TCP may send.
    fn on_written(&mut self, now: Time, q: &mut EventQueue<NfsEv>) {
        let (rpc, bytes) = self.processing.pop_front().expect("a reply being processed");
        self.stream_bytes += bytes;
        self.written.push_back((rpc, self.stream_bytes));
        self.hosts.tcp.conns[self.conn as usize].tx.app_limit = self.stream_bytes / self.mss;
        self.fabric.kick(now, self.nodes.1, q, &mut self.hosts);
    }

    /// TCP_NODELAY: with no further reply being written, a partly written segment goes (padded).
    fn flush_if_idle(&mut self, now: Time, q: &mut EventQueue<NfsEv>) {
        let tx = &mut self.hosts.tcp.conns[self.conn as usize].tx;
        if self.processing.is_empty() && self.stream_bytes > tx.app_limit * self.mss {
            tx.app_limit += 1;
            self.stream_bytes = tx.app_limit * self.mss;
            self.fabric.kick(now, self.nodes.1, q, &mut self.hosts);
        }
    }
}

impl Model for World {
    type Event = NfsEv;
    fn handle(&mut self, now: Time, ev: NfsEv, q: &mut EventQueue<NfsEv>) {
        match ev {
            NfsEv::Net(e) => self.fabric.handle(now, e, q, &mut self.hosts),
            NfsEv::Timer(c) => {
                self.hosts.tcp.on_timer(now, c);
                self.fabric.kick(now, self.nodes.0, q, &mut self.hosts);
                self.fabric.kick(now, self.nodes.1, q, &mut self.hosts);
            }
            NfsEv::Written => self.on_written(now, q),
        }
        self.settle(now, q);
    }
    fn finished(&self) -> bool {
        self.client.done()
    }
}

pub fn run_tcp(r: &NfsResolved, t: &TcpResolved, limit: Time) -> Outcome {
    let mut fabric: Fabric<TcpPacket> = Fabric::new(r.seed);
    let p = path::build(t, &mut fabric, 1);
    let (client_node, server_node) = (p.hosts_a[0], p.hosts_b[0]);
    let framing = t.framing();
    let mut tcp = TcpHosts::new(fabric.nodes.len(), framing, &t.stack);
    let conn = tcp.connect(server_node, client_node, &t.params, t.cc);
    tcp.conns[conn as usize].tx.app_limit = 0;
    let n = fabric.nodes.len();
    let params = r.params.clone();
    let mut world = World {
        fabric,
        hosts: RpcHosts { tcp, outbox: vec![VecDeque::new(); n], arrived: Vec::new() },
        client: ReadClient::new(r.threads, r.record_bytes, params.rsize_bytes, r.slots, r.simulated_bytes),
        call_wire: framing.fragment_bytes(params.call_bytes + TCP_IP_HEADER_BYTES, 0),
        params,
        conn,
        mss: framing.mss() as u64,
        nodes: (client_node, server_node),
        calls: VecDeque::new(),
        processing: VecDeque::new(),
        written: VecDeque::new(),
        stream_bytes: 0,
        client_cpu: 0,
        server_cpu: 0,
        client_rpc: from_ns(r.params.client_rpc_ns),
        server_rpc: from_ns(r.params.server_rpc_ns),
        last_reply: 0,
    };
    let mut q: EventQueue<NfsEv> = EventQueue::new();
    let first = world.client.start();
    world.send_calls(first, 0, 0, &mut q);
    world.settle(0, &mut q);
    let stop = run(&mut world, &mut q, limit);
    let tx = &world.hosts.tcp.conns[conn as usize].tx.stats;
    Outcome {
        bytes: world.client.bytes_done,
        rpcs: world.client.rpcs_done,
        elapsed: world.last_reply,
        finished: stop == Stop::Finished,
        failed: false,
        sim_events: q.events_handled(),
        sim_time: q.now(),
        packets: tx.segments_sent,
        retransmitted_packets: tx.retransmits,
    }
}
