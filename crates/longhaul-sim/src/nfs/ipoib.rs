//! NFS over TCP over IPoIB (datagram or connected mode) on the TCP model. The replies flow on one
//! TCP connection from the server to the client; the client's READ calls go the other way as
//! small datagrams (160 bytes each, at most one slot table of them in flight, so TCP's window
//! never holds them back; on the credit flow-controlled IB path nothing is lost).
//!
//! Each reply (its READ's data plus the header) is one write to the TCP_NODELAY socket (Linux's
//! RPC sockets), made once the server has processed the call; TCP cuts what is written into
//! segments as it sends ([`crate::tcp::stream`]). A reply is complete at the client when TCP has
//! delivered it in order and the client's core has processed it (the copy to the page cache:
//! NFS/RDMA places the data directly and saves it).

use std::collections::VecDeque;

use super::client::{ReadClient, Rpc};
use super::params::NfsParams;
use super::scenario::NfsResolved;
use super::Outcome;
use crate::engine::time::from_ns;
use crate::engine::{EventQueue, Stop, Time};
use crate::net::{Fabric, NodeId};
use crate::record::RunEnd;
use crate::tcp::hosts::{TcpHosts, TcpOutput};
use crate::tcp::link::TCP_IP_HEADER_BYTES;
use crate::tcp::stream::Frame;
use crate::tcp::{path, TcpPacket, TcpResolved};
use crate::world::{App, TimerPolicy, World};

/// The server has written its oldest processed reply into the socket.
#[derive(Debug, Clone, Copy)]
struct Written;

type Cx<'a> = crate::world::Cx<'a, TcpHosts, Written>;

struct NfsTcp {
    client: ReadClient,
    params: NfsParams,
    /// The direction carrying the replies (server to client).
    dir: u32,
    nodes: (NodeId, NodeId),
    call_ip_bytes: u32,
    /// Calls in transit to the server, in order.
    calls: VecDeque<Rpc>,
    /// Replies being processed by the server, in order.
    processing: VecDeque<Rpc>,
    /// Replies written to the socket, in order.
    written: VecDeque<Rpc>,
    frames: Vec<Frame>,
    client_cpu: Time,
    server_cpu: Time,
    client_rpc: Time,
    server_rpc: Time,
}

impl NfsTcp {
    fn send_calls(&mut self, cx: &mut Cx, rpcs: Vec<Rpc>, at: Time) {
        if rpcs.is_empty() {
            return;
        }
        for rpc in rpcs {
            self.client_cpu = self.client_cpu.max(at) + self.client_rpc;
            cx.net.send_datagram(self.nodes.0, self.nodes.1, self.call_ip_bytes, 0, self.client_cpu);
            self.calls.push_back(rpc);
        }
        cx.kick(self.nodes.0);
    }
}

impl App<TcpHosts> for NfsTcp {
    type Event = Written;

    fn start(&mut self, cx: &mut Cx) {
        let first = self.client.start();
        self.send_calls(cx, first, 0);
    }

    fn on_output(&mut self, out: TcpOutput, cx: &mut Cx) {
        match out {
            // A call reached the server: it processes it, then writes the reply.
            TcpOutput::Datagram { at, .. } => {
                let rpc = self.calls.pop_front().expect("a call in transit");
                self.server_cpu = self.server_cpu.max(at) + self.server_rpc;
                self.processing.push_back(rpc);
                cx.schedule(self.server_cpu, Written);
            }
            // Replies the client's core has copied out of the socket by `at`.
            TcpOutput::Ready { dir, delivered, at } => {
                cx.net.take_frames(dir, delivered, &mut self.frames);
                let mut next = Vec::new();
                for f in self.frames.drain(..) {
                    let rpc = self.written.pop_front().expect("a reply written");
                    debug_assert_eq!(f.tag, rpc.id);
                    next.extend(self.client.on_reply(rpc, at));
                }
                self.send_calls(cx, next, at);
            }
        }
    }

    fn on_event(&mut self, _: Written, cx: &mut Cx) {
        let rpc = self.processing.pop_front().expect("a reply being processed");
        let reply = (rpc.bytes + self.params.reply_header_bytes) as u64;
        self.written.push_back(rpc);
        cx.net.write(cx.now, self.dir, Frame { tag: rpc.id, bytes: reply });
        cx.kick(self.nodes.1);
    }

    fn done(&self) -> bool {
        self.client.done()
    }
}

pub fn run_tcp(r: &NfsResolved, t: &TcpResolved, limit: Time) -> Outcome {
    let mut fabric: Fabric<TcpPacket> = Fabric::new(r.seed);
    let p = path::build(t, &mut fabric, 1);
    let (client_node, server_node) = (p.hosts_a[0], p.hosts_b[0]);
    let mut tcp = TcpHosts::new(fabric.nodes.len(), t.framing(), &t.stack, 0.0);
    let (dir, _) = tcp.connect(server_node, client_node, &t.params, t.cc, false, false);
    let params = r.params.clone();
    let app = NfsTcp {
        client: ReadClient::new(r.threads, r.record_bytes, r.slots, r.simulated_bytes, r.read_path()),
        call_ip_bytes: params.call_bytes + TCP_IP_HEADER_BYTES,
        params,
        dir,
        nodes: (client_node, server_node),
        calls: VecDeque::new(),
        processing: VecDeque::new(),
        written: VecDeque::new(),
        frames: Vec::new(),
        client_cpu: 0,
        server_cpu: 0,
        client_rpc: from_ns(r.params.client_rpc_ns),
        server_rpc: from_ns(r.params.server_rpc_ns),
    };
    let mut world = World::new(fabric, tcp, app, TimerPolicy::Direct);
    let mut q = EventQueue::new();
    let stop = world.run(&mut q, limit);
    let tx = &world.net.dirs[dir as usize].tx.stats;
    let (bytes, elapsed) = world.app.client.measured();
    Outcome {
        bytes,
        drift_pct: world.app.client.drift_pct(),
        rpcs: world.app.client.rpcs_done,
        elapsed,
        end: RunEnd {
            finished: stop == Stop::Finished,
            failed: false,
            sim_events: q.events_handled(),
            sim_time: q.now(),
            packets: tx.segments_sent,
            retransmitted_packets: tx.retransmits,
        },
    }
}
