//! The file system's RPCs on the verbs model: one RC queue pair per client-server node pair
//! (GPFS opens its verbs connections per node pair). A request and a reply are Sends of a small
//! header; the NSD server moves the data with RDMA, so the client's CPU never copies it: for a
//! write the server RDMA-Reads the block from the client's page pool once the request has
//! arrived, for a read it RDMA-Writes the block into the client's buffer and then Sends the reply
//! (RC delivers the Write before the Send). This is the server-initiated placement of storage RPC
//! over RDMA (NFS: RFC 5667 section 2, "server-initiated RDMA operations into client-supplied
//! buffers"; GPFS's verbsRdma moves NSD data the same way, as IBM describes it; the header sizes
//! is [`super::NSD_HEADER_BYTES`]).

use super::{Arrival, Channel, Cx, NSD_HEADER_BYTES};
use crate::engine::time::from_ns;
use crate::engine::Time;
use crate::ib::hosts::WcStatus;
use crate::ib::{Completion, CompletionKind, IbHosts, IbPacket, Op, Transport};
use crate::net::{Fabric, NodeId};
use crate::pfs::record::PfsRecord;
use crate::pfs::scenario::PfsResolved;
use crate::topology;

pub struct Verbs {
    /// The first connection's client queue pair (conn k: client qp first + 2k, server qp + 1).
    first_qp: u32,
    nodes: Vec<(NodeId, NodeId)>,
    post: Time,
    /// Per call tag: the data its request announces in its header (what the server reads).
    announced: Vec<u32>,
    /// Queue pairs that ran out of retries.
    failed: u64,
}

impl Verbs {
    fn qps(&self, conn: u32) -> (u32, u32) {
        let qc = self.first_qp + 2 * conn;
        (qc, qc + 1)
    }

    /// The connection of queue pair `qp`, and whether it is the server's end.
    fn conn_of(&self, qp: u32) -> (u32, bool) {
        ((qp - self.first_qp) / 2, !(qp - self.first_qp).is_multiple_of(2))
    }
}

/// The work request id carrying a call's tag: the high 32 bits travel in the Send's header
/// (`IbPacket::imm`) to the receiver's completion.
fn wr_id(tag: u32) -> u64 {
    (tag as u64) << 32
}

impl Channel for Verbs {
    type Net = IbHosts;

    fn request(&mut self, cx: &mut Cx<'_, IbHosts>, conn: u32, tag: u32, data: u32) {
        // A write's data stays in the client's buffer until the server reads it; the header
        // says where and how much.
        if self.announced.len() <= tag as usize {
            self.announced.resize(tag as usize + 1, 0);
        }
        self.announced[tag as usize] = data;
        let (qc, _) = self.qps(conn);
        cx.net.post_send(qc, Op::Send, NSD_HEADER_BYTES, wr_id(tag), cx.now + self.post);
        cx.kick(self.nodes[conn as usize].0);
    }

    fn reply(&mut self, cx: &mut Cx<'_, IbHosts>, conn: u32, tag: u32, data: u32) {
        let (_, qs) = self.qps(conn);
        let mut at = cx.now;
        if data > 0 {
            at += self.post;
            cx.net.post_send(qs, Op::Write, data, wr_id(tag), at);
        }
        cx.net.post_send(qs, Op::Send, NSD_HEADER_BYTES, wr_id(tag), at + self.post);
        cx.kick(self.nodes[conn as usize].1);
    }

    fn failed(&self) -> u64 {
        self.failed
    }

    fn on_output(&mut self, c: Completion, cx: &mut Cx<'_, IbHosts>, arrived: &mut Vec<Arrival>) {
        // A queue pair out of retries completes its work requests in error: nothing it carried
        // arrives any more.
        if c.status != WcStatus::Success {
            self.failed += u64::from(c.status == WcStatus::RetryExceeded);
            return;
        }
        let (conn, at_server) = self.conn_of(c.qp);
        // A receive completion carries the sender's header field, a send completion its own id.
        let tag = if c.kind == CompletionKind::Recv { c.id as u32 } else { (c.id >> 32) as u32 };
        match (c.kind, c.op, at_server) {
            // A request at the server: a write's block is read from the client first.
            (CompletionKind::Recv, Op::Send, true) => {
                let data = self.announced[tag as usize];
                if data > 0 {
                    cx.net.post_send(c.qp, Op::Read, data, wr_id(tag), c.at + self.post);
                    cx.kick(self.nodes[conn as usize].1);
                } else {
                    arrived.push(Arrival::Request { conn, tag, at: c.at });
                }
            }
            // The server's read of the block completed: the request is whole.
            (CompletionKind::Send, Op::Read, true) => arrived.push(Arrival::Request { conn, tag, at: c.at }),
            (CompletionKind::Recv, Op::Send, false) => arrived.push(Arrival::Reply { conn, tag, at: c.at }),
            _ => {}
        }
    }
}

pub fn run(r: &PfsResolved) -> PfsRecord {
    let v = &r.verbs;
    let mut fabric: Fabric<IbPacket> = Fabric::new(r.seed);
    let hosts = (r.clients.max(r.servers)) as usize;
    let pair = topology::build(v, &mut fabric, hosts);
    let f = &r.params.failover;
    let mut ib = IbHosts::new(v.hca.clone(), fabric.nodes.len(), f.ack_timeout_exp, f.retry_count);
    let mut nodes = Vec::new();
    let mut first_qp = None;
    for c in 0..r.clients as usize {
        for s in 0..r.servers as usize {
            let (client, server) = (pair.hosts_a[c], pair.hosts_b[s]);
            // The deepest send queue the adapter allows: the file system posts as many
            // requests as its windows let it.
            let (qc, _) = ib.connect(client, server, Transport::Rc, v.mtu_bytes, 0, u32::MAX);
            first_qp.get_or_insert(qc);
            nodes.push((client, server));
        }
    }
    let channel = Verbs {
        first_qp: first_qp.unwrap_or(0),
        nodes,
        post: from_ns(v.hca.post_ns),
        announced: Vec::new(),
        failed: 0,
    };
    super::drive(r, super::world(r, fabric, ib, channel), &pair.wan)
}
