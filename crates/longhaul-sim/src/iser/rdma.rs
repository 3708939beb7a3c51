//! iSER (RFC 7145) on the verbs model: one RC queue pair between the initiator and the target.
//! Every iSCSI control PDU is a Send: the SCSI Command (with a WRITE's immediate data), any
//! unsolicited Data-Out, the SCSI Response. The data moves by RDMA at the target's initiative:
//! a READ's data is RDMA-Written into the initiator's registered buffer, one Write per
//! MaxBurstLength sequence, before the Response (RC places them in order); a WRITE's solicited
//! data is pulled by RDMA Reads of at most MaxBurstLength each (the R2Ts of iSCSI become Reads,
//! never seen on the wire), at most MaxOutstandingR2T of them per command, and at most the
//! adapter's max_rd_atomic on the queue pair (the verbs model enforces it): over a long round
//! trip these, not the link, bound a WRITE.

use std::collections::VecDeque;

use super::initiator::{Command, Initiator};
use super::scenario::{IserOp, IserResolved};
use super::Outcome;
use crate::engine::time::{from_ns, S};
use crate::engine::Time;
use crate::ib::{Completion, CompletionKind, IbHosts, Op, WcStatus};
use crate::net::NodeId;
use crate::scenario::Resolved;
use crate::workload::rc_pair::{Never, RcPair};
use crate::world::App;

type Cx<'a> = crate::world::Cx<'a, IbHosts, Never>;

/// A Send from the initiator to the target, in flight (RC delivers them in order).
#[derive(Debug, Clone, Copy)]
enum ToTarget {
    /// The SCSI Command PDU with its immediate data, and how many unsolicited Data-Out follow.
    Command {
        cmd: Command,
        immediate: u32,
        data_out: u32,
    },
    DataOut {
        cmd: u32,
        bytes: u32,
    },
}

/// What the target knows of one command.
#[derive(Debug, Clone, Copy, Default)]
struct TargetCmd {
    bytes: u32,
    /// Data of a WRITE that has arrived (unsolicited and read), of a READ written.
    data: u32,
    /// Unsolicited Data-Out PDUs still to come.
    data_out_left: u32,
    /// Solicited data asked for so far (offset of the next RDMA Read) and Reads outstanding.
    requested: u32,
    reads_out: u32,
}

struct Iser {
    init: Initiator,
    op: IserOp,
    qi: u32,
    qt: u32,
    nodes: (NodeId, NodeId),
    p: super::IserParams,
    to_target: VecDeque<ToTarget>,
    responses: VecDeque<Command>,
    target: Vec<TargetCmd>,
    /// READ data placed in the initiator's buffers, per command.
    placed: Vec<u32>,
    initiator_cpu: Time,
    target_cpu: Time,
    store_free: Time,
    post: Time,
    initiator_cmd: Time,
    target_cmd: Time,
    /// Picoseconds of backing store per byte.
    store_ps_per_byte: f64,
    data_bytes: u64,
    rdma_ops: u64,
}

/// Work request ids carry the command in the high 32 bits: the verbs model hands those to the
/// receiver of a Send or Write (`Completion::id` on the receive side).
fn wr_id(cmd: u32) -> u64 {
    (cmd as u64) << 32
}

impl Iser {
    fn issue(&mut self, cx: &mut Cx, cmds: Vec<Command>, at: Time) {
        for cmd in cmds {
            self.initiator_cpu = self.initiator_cpu.max(at) + self.initiator_cmd + self.post;
            let (immediate, data_out) = match self.op {
                IserOp::Read => (0, Vec::new()),
                IserOp::Write => self.p.unsolicited(cmd.bytes),
            };
            let hdr = self.p.pdu_header_bytes;
            cx.net.post_send(self.qi, Op::Send, hdr + immediate, wr_id(cmd.id), self.initiator_cpu);
            self.to_target.push_back(ToTarget::Command { cmd, immediate, data_out: data_out.len() as u32 });
            for bytes in data_out {
                self.initiator_cpu += self.post;
                cx.net.post_send(self.qi, Op::Send, hdr + bytes, wr_id(cmd.id), self.initiator_cpu);
                self.to_target.push_back(ToTarget::DataOut { cmd: cmd.id, bytes });
            }
        }
        cx.kick(self.nodes.0);
    }

    /// The store moves `bytes` once it is free and the data (or the command) is there.
    fn store(&mut self, bytes: u32, at: Time) -> Time {
        self.store_free = self.store_free.max(at) + (bytes as f64 * self.store_ps_per_byte) as Time;
        self.store_free
    }

    fn respond(&mut self, cx: &mut Cx, cmd: u32, at: Time) {
        let t = &self.target[cmd as usize];
        assert_eq!(t.data, t.bytes, "command {cmd}: the target moved {} of {} bytes", t.data, t.bytes);
        let bytes = t.bytes;
        cx.net.post_send(self.qt, Op::Send, self.p.pdu_header_bytes, wr_id(cmd), at + self.post);
        self.responses.push_back(Command { id: cmd, bytes });
    }

    /// Every unsolicited PDU of `cmd` is in: a READ's data goes out, a WRITE's rest is asked for.
    fn start_data(&mut self, cx: &mut Cx, cmd: u32) {
        let bytes = self.target[cmd as usize].bytes;
        match self.op {
            IserOp::Read => {
                let mut t = self.store(bytes, self.target_cpu);
                let mut left = bytes;
                while left > 0 {
                    let n = left.min(self.p.max_burst_bytes);
                    left -= n;
                    t += self.post;
                    cx.net.post_send(self.qt, Op::Write, n, wr_id(cmd), t);
                    self.rdma_ops += 1;
                }
                self.target[cmd as usize].data = bytes;
                self.respond(cx, cmd, t);
            }
            IserOp::Write => {
                let tc = &mut self.target[cmd as usize];
                tc.requested = tc.data;
                self.solicit(cx, cmd, self.target_cpu);
            }
        }
        cx.kick(self.nodes.1);
    }

    /// Post the WRITE's next RDMA Reads (MaxOutstandingR2T per command); once all its data is
    /// in, it goes to the store and the Response follows.
    fn solicit(&mut self, cx: &mut Cx, cmd: u32, at: Time) {
        let tc = self.target[cmd as usize];
        if tc.data == tc.bytes {
            let t = self.store(tc.bytes, at);
            self.respond(cx, cmd, t);
            return;
        }
        let mut tc = tc;
        let mut t = at;
        while tc.reads_out < self.p.max_outstanding_r2t && tc.requested < tc.bytes {
            let n = (tc.bytes - tc.requested).min(self.p.max_burst_bytes);
            tc.requested += n;
            tc.reads_out += 1;
            t += self.post;
            cx.net.post_send(self.qt, Op::Read, n, wr_id(cmd), t);
            self.rdma_ops += 1;
        }
        self.target[cmd as usize] = tc;
    }

    fn on_target_recv(&mut self, cx: &mut Cx, at: Time) {
        match self.to_target.pop_front().expect("a PDU in transit") {
            ToTarget::Command { cmd, immediate, data_out } => {
                self.target_cpu = self.target_cpu.max(at) + self.target_cmd;
                self.target[cmd.id as usize] =
                    TargetCmd { bytes: cmd.bytes, data: immediate, data_out_left: data_out, ..TargetCmd::default() };
                self.data_bytes += immediate as u64;
                if data_out == 0 {
                    self.start_data(cx, cmd.id);
                }
            }
            ToTarget::DataOut { cmd, bytes } => {
                self.target_cpu = self.target_cpu.max(at);
                let tc = &mut self.target[cmd as usize];
                tc.data += bytes;
                tc.data_out_left -= 1;
                self.data_bytes += bytes as u64;
                if tc.data_out_left == 0 {
                    self.start_data(cx, cmd);
                }
            }
        }
    }
}

impl App<IbHosts> for Iser {
    type Event = Never;

    fn start(&mut self, cx: &mut Cx) {
        let first = self.init.release();
        self.issue(cx, first, 0);
    }

    fn on_output(&mut self, c: Completion, cx: &mut Cx) {
        // A queue pair in error moves nothing more: the run ends unfinished, its status says why.
        if c.status != WcStatus::Success {
            return;
        }
        // The requester's completion carries the work request id, the receiver's its high half.
        let cmd = if c.kind == CompletionKind::Recv { c.id as u32 } else { (c.id >> 32) as u32 };
        match (c.kind, c.op) {
            (CompletionKind::Recv, Op::Send) if c.qp == self.qt => self.on_target_recv(cx, c.at),
            (CompletionKind::Recv, Op::Send) if c.qp == self.qi => {
                let done = self.responses.pop_front().expect("a response in transit");
                if self.op == IserOp::Read {
                    let placed = self.placed[done.id as usize];
                    assert_eq!(placed, done.bytes, "READ {}: {placed} of {} bytes placed", done.id, done.bytes);
                    self.data_bytes += placed as u64;
                }
                let next = self.init.on_response(done, c.at);
                self.issue(cx, next, c.at);
            }
            (CompletionKind::Recv, Op::Write) if c.qp == self.qi => self.placed[cmd as usize] += c.bytes,
            (CompletionKind::Send, Op::Read) if c.qp == self.qt => {
                let tc = &mut self.target[cmd as usize];
                tc.data += c.bytes;
                tc.reads_out -= 1;
                self.data_bytes += c.bytes as u64;
                let at = self.target_cpu.max(c.at);
                self.solicit(cx, cmd, at);
                cx.kick(self.nodes.1);
            }
            _ => {}
        }
    }

    fn on_event(&mut self, ev: Never, _cx: &mut Cx) {
        match ev {}
    }

    fn done(&self) -> bool {
        self.init.done()
    }
}

pub fn run_rdma(r: &IserResolved, v: &Resolved, limit: Time) -> Outcome {
    let pair = RcPair::build(r.seed, v, r.sq_depth);
    let p = r.params.clone();
    let init = Initiator::new(r.total_bytes, r.block_bytes, p.max_command_bytes, p.queue_depth);
    let commands = r.commands() as usize;
    let app = Iser {
        init,
        op: r.op,
        qi: pair.qps.0,
        qt: pair.qps.1,
        nodes: pair.nodes,
        to_target: VecDeque::new(),
        responses: VecDeque::new(),
        target: vec![TargetCmd::default(); commands],
        placed: vec![0; commands],
        initiator_cpu: 0,
        target_cpu: 0,
        store_free: 0,
        post: from_ns(v.hca.post_ns),
        initiator_cmd: from_ns(p.initiator_cmd_ns),
        target_cmd: from_ns(p.target_cmd_ns),
        store_ps_per_byte: S as f64 / (p.backing_MBps * 1e6),
        data_bytes: 0,
        rdma_ops: 0,
        p,
    };
    let (world, end) = pair.run(app, limit);
    let a = &world.app;
    Outcome {
        bytes: a.init.bytes_done,
        elapsed: a.init.last,
        commands: a.init.commands_done,
        data_bytes: a.data_bytes,
        rdma_ops: a.rdma_ops,
        end,
    }
}
