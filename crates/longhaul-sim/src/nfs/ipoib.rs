//! NFS over TCP over IPoIB (datagram or connected mode) on the TCP model. The replies flow on one
//! TCP connection from the server to the client; the client's READ calls go the other way as
//! small datagrams (160 bytes each, at most one slot table of them in flight, so TCP's window
//! never holds them back; on the credit flow-controlled IB path nothing is lost).
//!
//! Each reply (its READ's data plus the header) goes as a TCP_NODELAY socket (Linux's RPC sockets)
//! sends one write: ceil(reply / MSS) segments, all full but the last (`ShortSegments`). The
//! server lets TCP send a reply's segments once it has processed the call (`Sender::app_limit`); a reply is complete at the client when TCP has delivered it in order
//! and the client's core has processed it (the copy to the page cache: NFS/RDMA places the data
//! directly and saves it).

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
    nodes: (NodeId, NodeId),
    call_wire: u32,
    /// Calls in transit to the server, in order.
    calls: VecDeque<Rpc>,
    /// Replies being processed by the server, in order.
    processing: VecDeque<Rpc>,
    /// Replies TCP may send: the call and the segment just past its last one.
    written: VecDeque<(Rpc, u64)>,
    client_cpu: Time,
    server_cpu: Time,
    client_rpc: Time,
    server_rpc: Time,
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
            self.processing.push_back(rpc);
            q.schedule(self.server_cpu, NfsEv::Written);
        }
        let delivered = self.hosts.tcp.conns[self.conn as usize].rx.rcv_nxt;
        // The reply is the client's once its core has copied it out of the socket.
        let read_at = now.max(self.hosts.tcp.rx_busy_until(self.conn));
        let mut next = Vec::new();
        while self.written.front().is_some_and(|&(_, end)| end <= delivered) {
            let (rpc, _) = self.written.pop_front().expect("checked");
            next.extend(self.client.on_reply(rpc, read_at));
        }
        self.send_calls(next, read_at, now, q);
        for (t, c) in self.hosts.tcp.timers.drain(..) {
            q.schedule(t.max(now), NfsEv::Timer(c));
        }
    }

    /// The server wrote its oldest processed reply: TCP may send its segments.
    fn on_written(&mut self, now: Time, q: &mut EventQueue<NfsEv>) {
        let rpc = self.processing.pop_front().expect("a reply being processed");
        let reply = rpc.bytes + self.params.reply_header_bytes;
        let mss = self.hosts.tcp.framing.mss();
        let c = self.conn as usize;
        let tx = &mut self.hosts.tcp.conns[c].tx;
        tx.app_limit += reply.div_ceil(mss) as u64;
        let end = tx.app_limit;
        if !reply.is_multiple_of(mss) {
            self.hosts.tcp.short[c].set(end - 1, reply % mss);
        }
        self.written.push_back((rpc, end));
        self.fabric.kick(now, self.nodes.1, q, &mut self.hosts);
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
        nodes: (client_node, server_node),
        calls: VecDeque::new(),
        processing: VecDeque::new(),
        written: VecDeque::new(),
        client_cpu: 0,
        server_cpu: 0,
        client_rpc: from_ns(r.params.client_rpc_ns),
        server_rpc: from_ns(r.params.server_rpc_ns),
    };
    let mut q: EventQueue<NfsEv> = EventQueue::new();
    let first = world.client.start();
    world.send_calls(first, 0, 0, &mut q);
    world.settle(0, &mut q);
    let stop = run(&mut world, &mut q, limit);
    let tx = &world.hosts.tcp.conns[conn as usize].tx.stats;
    let (bytes, elapsed) = world.client.measured();
    Outcome {
        bytes,
        drift_pct: world.client.drift_pct(),
        rpcs: world.client.rpcs_done,
        elapsed,
        finished: stop == Stop::Finished,
        failed: false,
        sim_events: q.events_handled(),
        sim_time: q.now(),
        packets: tx.segments_sent,
        retransmitted_packets: tx.retransmits,
    }
}
