//! NFS/RDMA (RPC-over-RDMA, RFC 5666 / RFC 8166) on the verbs model: one RC queue pair between
//! the client and the server. A READ call is a Send carrying the RPC-over-RDMA header, whose
//! write chunk lists the client's buffer page by page; the server RDMA-Writes the data into it,
//! one Write per 4 KiB segment, then Sends the reply. The server's send queue holds credits x 8
//! work requests (svcrdma's sc_sq_depth), each completing one round trip after it is sent, so
//! page-sized Writes cap the data in flight at about that many pages: over a long round trip
//! this, not the link, sets the throughput.

use std::collections::VecDeque;

use super::client::{ReadClient, Rpc};
use super::params::NfsParams;
use super::scenario::NfsResolved;
use super::Outcome;
use crate::engine::time::from_ns;
use crate::engine::Time;
use crate::ib::{Completion, CompletionKind, IbHosts, Op};
use crate::net::NodeId;
use crate::scenario::Resolved;
use crate::workload::rc_pair::{Never, RcPair};
use crate::world::App;

type Cx<'a> = crate::world::Cx<'a, IbHosts, Never>;

struct Rdma {
    client: ReadClient,
    qc: u32,
    qs: u32,
    nodes: (NodeId, NodeId),
    /// Calls sent and not yet received by the server, and replies sent and not yet received by
    /// the client, in order (RC delivers in order, so a receive completion matches the front).
    calls: VecDeque<Rpc>,
    replies: VecDeque<Rpc>,
    client_cpu: Time,
    server_cpu: Time,
    post: Time,
    client_rpc: Time,
    server_rpc: Time,
    params: NfsParams,
}

impl Rdma {
    fn send_calls(&mut self, cx: &mut Cx, rpcs: Vec<Rpc>, at: Time) {
        for rpc in rpcs {
            self.client_cpu = self.client_cpu.max(at) + self.client_rpc + self.post;
            cx.net.post_send(self.qc, Op::Send, self.params.rdma_call_bytes(rpc.bytes), rpc.id, self.client_cpu);
            self.calls.push_back(rpc);
            cx.kick(self.nodes.0);
        }
    }

    /// The server has a call: page-sized RDMA Writes of the data, then the reply.
    fn serve(&mut self, cx: &mut Cx, at: Time) {
        let rpc = self.calls.pop_front().expect("a call in transit");
        self.server_cpu = self.server_cpu.max(at) + self.server_rpc;
        let mut left = rpc.bytes;
        while left > 0 {
            let len = left.min(self.params.chunk_bytes);
            left -= len;
            self.server_cpu += self.post;
            cx.net.post_send(self.qs, Op::Write, len, rpc.id, self.server_cpu);
        }
        self.server_cpu += self.post;
        cx.net.post_send(self.qs, Op::Send, self.params.reply_header_bytes, rpc.id, self.server_cpu);
        self.replies.push_back(rpc);
        cx.kick(self.nodes.1);
    }
}

impl App<IbHosts> for Rdma {
    type Event = Never;

    fn start(&mut self, cx: &mut Cx) {
        let first = self.client.start();
        self.send_calls(cx, first, 0);
    }

    fn on_output(&mut self, c: Completion, cx: &mut Cx) {
        // Only Sends (calls and replies) matter: Write completions and the Writes' data
        // need no action, and RC orders the data before the reply.
        if c.kind != CompletionKind::Recv || c.op != Op::Send {
            return;
        }
        if c.qp == self.qs {
            self.serve(cx, c.at);
        } else if c.qp == self.qc {
            let rpc = self.replies.pop_front().expect("a reply in transit");
            let next = self.client.on_reply(rpc, c.at);
            self.send_calls(cx, next, c.at);
        }
    }

    fn on_event(&mut self, ev: Never, _cx: &mut Cx) {
        match ev {}
    }

    fn done(&self) -> bool {
        self.client.done()
    }
}

pub fn run_rdma(r: &NfsResolved, v: &Resolved, limit: Time) -> Outcome {
    let pair = RcPair::build(r.seed, v, r.slots.saturating_mul(r.params.sq_depth_per_credit));
    let p = r.params.clone();
    let client = ReadClient::new(r.threads, r.record_bytes, r.slots, r.simulated_bytes, r.read_path());
    let app = Rdma {
        client,
        qc: pair.qps.0,
        qs: pair.qps.1,
        nodes: pair.nodes,
        calls: VecDeque::new(),
        replies: VecDeque::new(),
        client_cpu: 0,
        server_cpu: 0,
        post: from_ns(v.hca.post_ns),
        client_rpc: from_ns(p.client_rpc_ns),
        server_rpc: from_ns(p.server_rpc_ns),
        params: p,
    };
    let (world, end) = pair.run(app, limit);
    let (bytes, elapsed) = world.app.client.measured();
    Outcome { bytes, drift_pct: world.app.client.drift_pct(), rpcs: world.app.client.rpcs_done, elapsed, end }
}
