//! The adapters of all hosts: queue pairs, the send engine that feeds each host's port (ACKs/NAKs
//! first, then read responses and new data in turn, new data round-robin over queue pairs), the
//! receive engine, completions for the application and retransmission timers.

use std::collections::VecDeque;

use super::active::ActiveQps;
use super::hca::HcaProfile;
use super::headers::{self, psn_diff, Kind, Op, PSN_MASK};
use super::packet::IbPacket;
use super::qp::{Qp, ReadJob, Transport};
use super::qp_table::QpTable;
use crate::engine::time::from_ns;
use crate::engine::Time;
use crate::net::{Endpoints, NodeId, Pull, Rate};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompletionKind {
    /// A send/write/read work request finished at the requester.
    Send,
    /// A message (send or RDMA write) arrived whole at the responder.
    Recv,
}

/// A work completion's status (the verbs' `ibv_wc_status`, the few the model produces).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WcStatus {
    Success,
    /// IBV_WC_RETRY_EXC_ERR: the oldest work request of an RC queue pair that ran out of
    /// retries (IBA vol. 1 9.7.6.1.3); the queue pair is in the error state.
    RetryExceeded,
    /// IBV_WC_WR_FLUSH_ERR: a later work request of a queue pair in the error state (IBA vol. 1
    /// 10.3.1: its outstanding work requests complete in error).
    Flushed,
}

#[derive(Debug, Clone, Copy)]
pub struct Completion {
    pub qp: u32,
    pub kind: CompletionKind,
    pub status: WcStatus,
    pub op: Op,
    /// Send side: the work request's id. Receive side: the 32-bit header field the sender's
    /// upper layer set (`IbPacket::imm`).
    pub id: u64,
    pub bytes: u32,
    /// When the application sees it (after adapter and polling costs).
    pub at: Time,
}

#[derive(Debug, Clone, Default)]
pub struct IbStats {
    pub data_packets: u64,
    pub retransmitted_packets: u64,
    pub acks: u64,
    pub naks: u64,
    pub timeouts: u64,
    /// Reads requested again because a later read's responses overtook their lost ones.
    pub read_retries: u64,
    pub ud_drops_no_recv: u64,
    /// UC messages whose last packet left the requester (UC never resends, so each once) and
    /// those the responder delivered whole: the difference, once the path has drained, is what
    /// UC lost (a message is lost with any of its packets, however many whole messages a loss
    /// burst swallowed, which the responder alone cannot count from the PSN gap).
    pub uc_messages_sent: u64,
    pub uc_messages_delivered: u64,
    pub qp_errors: u64,
    /// The most retries one queue pair made in a row without progress (at most its retry count;
    /// one more fails it).
    pub retries_max: u32,
}

impl IbStats {
    /// UC messages sent and not delivered (those still on the path count too, until it drains).
    pub fn uc_messages_dropped(&self) -> u64 {
        self.uc_messages_sent.saturating_sub(self.uc_messages_delivered)
    }
}

/// Adapter costs in picoseconds, derived once from the profile.
struct HostCosts {
    tx_wqe: Time,
    tx_pkt: Time,
    rx_pkt: Time,
    poll: Time,
    pcie: Rate,
}

struct HostState {
    costs: HostCosts,
    /// Queue pairs of this host that may have work requests left to transmit, by id (ids grow
    /// in creation order, so this is the host's round-robin order). Only these are scanned for
    /// the next packet, so a host with hundreds of idle connections (MPI) costs no more per
    /// packet than one with a few; an entry found idle is dropped, and posting or rewinding
    /// (go-back-N) puts it back.
    active: ActiveQps,
    /// The round-robin resumes at the first active queue pair with an id at least this.
    rr_next: u32,
    /// When the send engine (DMA over PCIe, packet build) finishes its last packet. Never left
    /// behind the time a packet is taken: an engine idle or held back by the port (credits, a
    /// slower link) works at most one packet ahead of the port, so it does not bank the idle
    /// time and later send above its own rate (seen after a link failover: PCIe 2.0 x8's
    /// 3.2 GB/s exceeded for seconds).
    engine_free: Time,
    rx_free: Time,
    /// QPs with an ACK/NAK to send, in the order they became pending.
    ctrl: VecDeque<u32>,
    /// QPs with read responses to stream.
    resp: VecDeque<u32>,
    /// The requester's work requests go before the responder's read responses for the next
    /// packet (they alternate; see `next_packet`).
    requests_first: bool,
}

pub struct IbHosts {
    pub qps: QpTable,
    hosts: Vec<Option<HostState>>,
    pub hca: HcaProfile,
    pub completions: Vec<Completion>,
    /// Retransmission timers to arm: (time, qp).
    pub timers: Vec<(Time, u32)>,
    pub stats: IbStats,
    /// The local ACK timeout in force (None: no timer), from the exponent and the adapter's rule.
    ack_timeout: Option<Time>,
    retry_count: u32,
}

impl IbHosts {
    /// `timeout_exp`: the exponent the queue pairs are given (perftest's default 14: 67 ms);
    /// the adapter's firmware rule decides the timer in force (see [`super::timer`]).
    pub fn new(hca: HcaProfile, node_count: usize, timeout_exp: u32, retry_count: u32) -> Self {
        let ack_timeout = hca.ack_timer.in_force(timeout_exp);
        IbHosts {
            qps: QpTable::default(),
            hosts: (0..node_count).map(|_| None).collect(),
            hca,
            completions: Vec::new(),
            timers: Vec::new(),
            stats: IbStats::default(),
            ack_timeout,
            retry_count,
        }
    }

    fn host(&mut self, node: NodeId) -> &mut HostState {
        let hca = &self.hca;
        self.hosts[node as usize].get_or_insert_with(|| HostState {
            costs: HostCosts {
                tx_wqe: from_ns(hca.tx_wqe_ns),
                tx_pkt: from_ns(hca.tx_pkt_ns),
                rx_pkt: from_ns(hca.rx_pkt_ns),
                poll: from_ns(hca.poll_ns),
                pcie: Rate::from_gbps(hca.pcie_data_gbps()),
            },
            active: ActiveQps::default(),
            rr_next: 0,
            engine_free: 0,
            rx_free: 0,
            ctrl: VecDeque::new(),
            resp: VecDeque::new(),
            requests_first: false,
        })
    }

    /// Create a connected pair of QPs (one on each host); returns (qp on a, qp on b).
    /// `sq_depth`: the send queue depth the consumer asks for (both ends), capped at the
    /// adapter's `max_qp_wr` as MVAPICH2 and the kernel's RDMA consumers cap it.
    pub fn connect(
        &mut self,
        a: NodeId,
        b: NodeId,
        transport: Transport,
        mtu: u32,
        initial_psn: u32,
        sq_depth: u32,
    ) -> (u32, u32) {
        let qa = self.qps.len() as u32;
        let qb = qa + 1;
        let depth = sq_depth.clamp(1, self.hca.max_qp_wr);
        self.qps.push(Qp::new(a, qb, b, transport, mtu, initial_psn, depth));
        self.qps.push(Qp::new(b, qa, a, transport, mtu, initial_psn, depth));
        self.host(a);
        self.host(b);
        (qa, qb)
    }

    pub fn post_send(&mut self, qp: u32, op: Op, len: u32, id: u64, ready_at: Time) {
        self.qps.wake(qp);
        self.qps[qp as usize].post(op, len, id, ready_at);
        self.activate(qp);
    }

    /// `qp` has work requests to (re)transmit.
    fn activate(&mut self, qp: u32) {
        let node = self.qps[qp as usize].node;
        self.host(node).active.insert(qp);
    }

    pub fn post_recv(&mut self, qp: u32, count: u32) {
        self.qps.wake(qp);
        self.qps[qp as usize].rq_posted += count;
    }

    pub fn node_of(&self, qp: u32) -> NodeId {
        self.qps.node(qp)
    }

    /// Park queue pair `qp` if it is idle (nothing queued, in flight or owed, and not waiting
    /// for its port): its state shrinks to what resuming needs ([`QpTable`]); any later use
    /// restores it. True if it is parked now.
    pub fn park(&mut self, qp: u32) -> bool {
        let node = self.qps.node(qp);
        if self.hosts[node as usize].as_ref().is_some_and(|h| h.active.contains(qp)) {
            return false;
        }
        self.qps.park(qp)
    }

    fn arm_timer(&mut self, qp: u32, now: Time) {
        let Some(timeout) = self.ack_timeout else { return };
        let q = &mut self.qps[qp as usize];
        if q.timer_at == Time::MAX {
            q.timer_at = now + timeout;
            self.timers.push((q.timer_at, qp));
        }
    }

    /// The local ACK timeout in force (None: the queue pairs have no timer).
    pub fn ack_timeout(&self) -> Option<Time> {
        self.ack_timeout
    }

    /// The RC local ACK timer of `qp` fired.
    pub fn on_timer(&mut self, now: Time, qp: u32) {
        let Some(timeout) = self.ack_timeout else { return };
        if self.qps.parked_timer_fired(qp) {
            return;
        }
        let q = &mut self.qps[qp as usize];
        q.timer_at = Time::MAX;
        if !q.has_outstanding() || q.failed {
            return;
        }
        let due = q.last_progress + timeout;
        if now >= due {
            q.retries += 1;
            self.stats.timeouts += 1;
            if q.retries > self.retry_count {
                q.failed = true;
                self.stats.qp_errors += 1;
                return self.flush(qp, now);
            }
            self.stats.retries_max = self.stats.retries_max.max(q.retries);
            let una = q.una_psn;
            q.rewind_to(una);
            q.last_progress = now;
            self.activate(qp);
            self.arm_timer(qp, now);
        } else {
            q.timer_at = due;
            self.timers.push((due, qp));
        }
    }

    /// `qp` has gone to the error state at `now`: its work requests complete in error, the
    /// oldest with the retry count exceeded, the others flushed.
    fn flush(&mut self, qp: u32, now: Time) {
        let poll = self.hosts[self.qps[qp as usize].node as usize].as_ref().map_or(0, |h| h.costs.poll);
        let q = &mut self.qps[qp as usize];
        for (i, w) in q.sq.drain(..).enumerate() {
            let status = if i == 0 { WcStatus::RetryExceeded } else { WcStatus::Flushed };
            let kind = CompletionKind::Send;
            self.completions.push(Completion { qp, kind, status, op: w.op, id: w.id, bytes: w.len, at: now + poll });
        }
        q.cur = 0;
        q.cur_pkt = 0;
    }

    fn complete(&mut self, qp: u32, kind: CompletionKind, op: Op, id: u64, bytes: u32, at: Time) {
        self.completions.push(Completion { qp, kind, status: WcStatus::Success, op, id, bytes, at });
    }

    /// Requester side: cumulative acknowledgement of everything before `psn_excl`.
    fn requester_ack(&mut self, qp: u32, psn_excl: u32, now: Time, at: Time, by_response: bool) {
        let completions = &mut self.completions;
        self.qps[qp as usize].ack_through(psn_excl, now, by_response, |w| {
            let kind = CompletionKind::Send;
            completions.push(Completion { qp, kind, status: WcStatus::Success, op: w.op, id: w.id, bytes: w.len, at });
        });
    }

    fn queue_ack(&mut self, qp: u32, psn: u32, ready: Time) {
        let q = &mut self.qps[qp as usize];
        if !q.reads.is_empty() {
            // Coalescing this ACK with one sent ahead of the read responses would acknowledge
            // past the read and leave the requester waiting for a timeout.
            q.ack_after_reads = Some(psn);
            return;
        }
        let fresh = q.ack_psn.is_none() && q.nak_psn.is_none();
        q.ack_psn = Some(psn);
        self.ctrl_pending(qp, fresh, ready);
    }

    fn queue_nak(&mut self, qp: u32, psn: u32, ready: Time) {
        let q = &mut self.qps[qp as usize];
        let fresh = q.ack_psn.is_none() && q.nak_psn.is_none();
        q.nak_psn = Some(psn);
        self.ctrl_pending(qp, fresh, ready);
    }

    /// An ACK or NAK of `qp` is ready at `ready`; a QP with none pending joins its host's queue
    /// (one entry per QP: later ones coalesce into it).
    fn ctrl_pending(&mut self, qp: u32, fresh: bool, ready: Time) {
        let q = &mut self.qps[qp as usize];
        q.ack_ready = ready;
        let node = q.node;
        if fresh {
            self.host(node).ctrl.push_back(qp);
        }
    }

    /// A packet beyond the expected PSN: one NAK per gap (sequence error); the packet is discarded.
    fn out_of_sequence(&mut self, qp: u32, ready: Time) {
        let q = &mut self.qps[qp as usize];
        if !q.nak_sent {
            q.nak_sent = true;
            let e = q.epsn;
            self.stats.naks += 1;
            self.queue_nak(qp, e, ready);
        }
    }

    /// Responder side of an incoming data packet.
    fn on_data(&mut self, p: &IbPacket, ready: Time, seen: Time) {
        let qi = p.qp as usize;
        let transport = self.qps[qi].transport;
        match transport {
            Transport::Ud => {
                let q = &mut self.qps[qi];
                if q.rq_posted == 0 {
                    self.stats.ud_drops_no_recv += 1;
                    return;
                }
                q.rq_posted -= 1;
                q.deliver(p.len as u64, seen);
                self.complete(p.qp, CompletionKind::Recv, p.op, p.imm as u64, p.len, seen);
            }
            Transport::Uc => {
                let q = &mut self.qps[qi];
                if p.psn != q.epsn {
                    // A packet went missing: the message in progress is lost.
                    q.uc_discard = !p.first;
                    q.rx_msg_bytes = 0;
                }
                q.epsn = (p.psn + 1) & PSN_MASK;
                if p.first {
                    q.uc_discard = false;
                    q.rx_msg_bytes = 0;
                }
                if q.uc_discard {
                    return;
                }
                q.rx_msg_bytes += p.len as u64;
                if p.last {
                    let bytes = q.rx_msg_bytes as u32;
                    q.deliver(q.rx_msg_bytes, seen);
                    q.rx_msg_bytes = 0;
                    self.stats.uc_messages_delivered += 1;
                    self.complete(p.qp, CompletionKind::Recv, p.op, p.imm as u64, bytes, seen);
                }
            }
            Transport::Rc => {
                let d = psn_diff(p.psn, self.qps[qi].epsn);
                if d > 0 {
                    return self.out_of_sequence(p.qp, ready);
                }
                let q = &mut self.qps[qi];
                if d < 0 {
                    // Duplicate of something already received: acknowledge again.
                    let last = (q.epsn + PSN_MASK) & PSN_MASK;
                    self.queue_ack(p.qp, last, ready);
                    return;
                }
                q.epsn = (q.epsn + 1) & PSN_MASK;
                q.nak_sent = false;
                q.rx_msg_bytes += p.len as u64;
                if p.last {
                    let bytes = q.rx_msg_bytes as u32;
                    q.deliver(q.rx_msg_bytes, seen);
                    q.rx_msg_bytes = 0;
                    self.complete(p.qp, CompletionKind::Recv, p.op, p.imm as u64, bytes, seen);
                }
                if p.ack_req || p.last {
                    self.queue_ack(p.qp, p.psn, ready);
                }
            }
        }
    }

    fn on_read_request(&mut self, p: &IbPacket, ready: Time) {
        let qi = p.qp as usize;
        let npkts = self.qps[qi].packets_for(p.len);
        let d = psn_diff(p.psn, self.qps[qi].epsn);
        if d > 0 {
            return self.out_of_sequence(p.qp, ready);
        }
        let q = &mut self.qps[qi];
        if d < 0 {
            // A re-issued read (the requester timed out): serve it again from this PSN.
            q.reads.retain(|j| psn_diff(j.next_psn, p.psn) < 0);
        } else {
            q.epsn = (q.epsn + npkts) & PSN_MASK;
            q.nak_sent = false;
        }
        let fresh = q.reads.is_empty();
        q.reads.push_back(ReadJob { next_psn: p.psn, remaining: p.len, first: true, ready_at: ready });
        let node = q.node;
        if fresh {
            self.host(node).resp.push_back(p.qp);
        }
    }

    /// Requester side of a read response packet: it is the acknowledgement of its PSN.
    fn on_read_response(&mut self, p: &IbPacket, now: Time, seen: Time) {
        if psn_diff(p.psn, self.qps[p.qp as usize].una_psn) > 0 {
            // A response implicitly acknowledges the requests before its read (IBA vol. 1
            // 9.7.5.1.2): sends whose ACK the responder put after its read responses.
            self.requester_ack(p.qp, p.psn, now, seen, false);
        }
        let q = &mut self.qps[p.qp as usize];
        if p.psn != q.una_psn {
            // A gap (a response of a later read retries at once; one inside the awaited read
            // waits for the ACK timer) or a duplicate.
            return self.retry_overtaken_read(p.qp, p.psn, now);
        }
        q.read_retry_started = false;
        q.deliver(p.len as u64, seen);
        self.requester_ack(p.qp, (p.psn + 1) & PSN_MASK, now, seen, true);
    }

    /// The requester of `qp` heard of PSN `psn` (a response or an ACK) while still awaiting a
    /// read that ends before it: the read's missing responses were lost, so request them again
    /// now instead of at the ACK timeout, once until the responses make progress (Linux rxe,
    /// rxe_comp.c check_psn: COMPST_ERROR_RETRY, guarded by comp.started_retry).
    fn retry_overtaken_read(&mut self, qp: u32, psn: u32, now: Time) {
        let q = &mut self.qps[qp as usize];
        let overtaken = q.read_end_at_una().is_some_and(|end| psn_diff(psn, end) >= 0);
        if overtaken && !q.read_retry_started {
            q.read_retry_started = true;
            q.retries += 1;
            self.stats.read_retries += 1;
            let una = q.una_psn;
            q.rewind_to(una);
            q.last_progress = now;
            self.activate(qp);
        }
    }

    /// The next packet the host at `node` can send at `now`, or when it can send one.
    fn next_packet(&mut self, now: Time, node: NodeId) -> Pull<IbPacket> {
        let Some(h) = self.hosts[node as usize].as_mut() else { return Pull::Idle };
        let tx_pkt = h.costs.tx_pkt;
        // 1. ACK / NAK
        if let Some(&qp) = h.ctrl.front() {
            let q = &mut self.qps[qp as usize];
            let ready = (h.engine_free.max(q.ack_ready) + tx_pkt).max(now);
            if ready > now {
                return Pull::Later(ready);
            }
            h.ctrl.pop_front();
            let (kind, psn) = match q.nak_psn.take() {
                Some(psn) => (Kind::Nak, psn),
                None => (Kind::Ack, q.ack_psn.expect("queued ack")),
            };
            q.ack_psn = None;
            h.engine_free = ready;
            self.stats.acks += 1;
            let pkt = IbPacket {
                dst: q.peer_node,
                qp: q.peer_qp,
                kind,
                op: Op::Send,
                psn,
                len: 0,
                first: true,
                last: true,
                ack_req: false,
                wire: headers::ack_bytes(),
                imm: 0,
            };
            return Pull::Ready(pkt);
        }
        // 2. the responder's read responses and the requester's work requests, in turn packet by
        // packet: a host answering a peer's reads keeps posting its own (ib_read_bw -b moves about
        // twice ib_read_bw; with responses first, a 1 MiB read request waited behind up to
        // max_rd_atomic MiB of responses, and read bibw at 1000 us was 1590 MB/s, not ~1950).
        if h.resp.is_empty() {
            // No responses to stream (the common case): the requests alone, as the turn below
            // would have it (`next_response` is idle and changes nothing).
            let pull = self.next_request(now, node);
            if matches!(pull, Pull::Ready(_)) {
                self.hosts[node as usize].as_mut().expect("this host").requests_first = false;
            }
            return pull;
        }
        let classes = if h.requests_first {
            [Self::next_request, Self::next_response]
        } else {
            [Self::next_response, Self::next_request]
        };
        let mut wait: Option<Time> = None;
        for next in classes {
            match next(self, now, node) {
                Pull::Ready(pkt) => {
                    let h = self.hosts[node as usize].as_mut().expect("this host");
                    h.requests_first = pkt.kind == Kind::ReadResp;
                    return Pull::Ready(pkt);
                }
                Pull::Later(t) => wait = Some(wait.map_or(t, |w| w.min(t))),
                Pull::Idle => {}
            }
        }
        wait.map_or(Pull::Idle, Pull::Later)
    }

    /// The responder's next read response packet of the host at `node`.
    fn next_response(&mut self, now: Time, node: NodeId) -> Pull<IbPacket> {
        let h = self.hosts[node as usize].as_mut().expect("this host");
        let tx_pkt = h.costs.tx_pkt;
        while let Some(&qp) = h.resp.front() {
            let q = &mut self.qps[qp as usize];
            let Some(job) = q.reads.front_mut() else {
                h.resp.pop_front();
                continue;
            };
            let len = job.remaining.min(q.mtu);
            let ready = (h.engine_free.max(job.ready_at) + tx_pkt.max(h.costs.pcie.serialise(len as u64))).max(now);
            if ready > now {
                return Pull::Later(ready);
            }
            let first = job.first;
            let last = job.remaining == len;
            let pkt = IbPacket {
                dst: q.peer_node,
                qp: q.peer_qp,
                kind: Kind::ReadResp,
                op: Op::Read,
                psn: job.next_psn,
                len,
                first,
                last,
                ack_req: false,
                wire: headers::read_response_bytes(first, last, len),
                imm: 0,
            };
            job.first = false;
            job.remaining -= len;
            job.next_psn = (job.next_psn + 1) & PSN_MASK;
            if last {
                q.reads.pop_front();
                if q.reads.is_empty() {
                    h.resp.pop_front();
                    if let Some(psn) = q.ack_after_reads.take() {
                        if q.ack_psn.is_none() && q.nak_psn.is_none() {
                            h.ctrl.push_back(qp);
                        }
                        q.ack_psn = Some(psn);
                        q.ack_ready = ready;
                    }
                }
            }
            h.engine_free = ready;
            return Pull::Ready(pkt);
        }
        Pull::Idle
    }

    /// The requester's next packet of the host at `node`: new data, round-robin over its queue pairs.
    fn next_request(&mut self, now: Time, node: NodeId) -> Pull<IbPacket> {
        let hca_unacked = self.hca.max_unacked_pkts;
        let hca_reads = self.hca.max_rd_atomic;
        let ack_every = self.hca.ack_req_every_pkts.max(1);
        let h = self.hosts[node as usize].as_mut().expect("this host");
        let tx_pkt = h.costs.tx_pkt;
        let mut earliest: Option<Time> = None;
        // Every active queue pair once, in round-robin order: ids from `rr_next` up, then the
        // rest from the lowest (walked by position: the list only shrinks meanwhile).
        let mut pos = h.active.position_from(h.rr_next);
        for _ in 0..h.active.len() {
            if pos == h.active.len() {
                pos = 0;
            }
            let qp = h.active.at(pos);
            let q = &mut self.qps[qp as usize];
            if q.failed || q.cur >= q.sq.len() {
                h.active.remove_at(pos);
                continue;
            }
            pos += 1;
            if q.cur_pkt == 0 && q.transport != Transport::Ud && q.inflight_wqes() >= q.sq_depth as usize {
                continue;
            }
            if q.transport == Transport::Rc && q.unacked() >= hca_unacked {
                continue;
            }
            let w = &q.sq[q.cur];
            if w.op == Op::Read && q.reads_outstanding >= hca_reads {
                continue;
            }
            let is_read = w.op == Op::Read;
            let read_pkts = w.npkts - q.cur_pkt;
            let offset = q.cur_pkt * q.mtu;
            let len = if is_read { 0 } else { (w.len - offset.min(w.len)).min(q.mtu) };
            let first = q.cur_pkt == 0;
            let cost = tx_pkt.max(h.costs.pcie.serialise(len as u64)) + if first { h.costs.tx_wqe } else { 0 };
            let ready = (h.engine_free.max(w.ready_at) + cost).max(now);
            if ready > now {
                earliest = Some(earliest.map_or(ready, |e: Time| e.min(ready)));
                continue;
            }
            let psn = (w.first_psn + q.cur_pkt) & PSN_MASK;
            let ud = q.transport == Transport::Ud;
            let (pkt, advance_wqe) = if is_read {
                let req_len = w.len - offset.min(w.len);
                q.reads_outstanding += 1;
                let p = IbPacket {
                    dst: q.peer_node,
                    qp: q.peer_qp,
                    kind: Kind::ReadReq,
                    op: Op::Read,
                    psn,
                    len: req_len,
                    first: true,
                    last: true,
                    ack_req: false,
                    wire: headers::read_request_bytes(),
                    imm: 0,
                };
                (p, true)
            } else {
                let last = q.cur_pkt + 1 == w.npkts;
                let ack_req = last || (q.cur_pkt + 1).is_multiple_of(ack_every);
                let p = IbPacket {
                    dst: q.peer_node,
                    qp: q.peer_qp,
                    kind: Kind::Data,
                    op: w.op,
                    psn,
                    len,
                    first,
                    last,
                    ack_req,
                    wire: headers::data_packet_bytes(ud, w.op, first, len),
                    imm: (w.id >> 32) as u32,
                };
                (p, last)
            };
            if psn_diff(psn, q.sent_through) < 0 {
                self.stats.retransmitted_packets += 1;
            } else {
                q.sent_through = (psn + if is_read { read_pkts } else { 1 }) & PSN_MASK;
            }
            if advance_wqe {
                if q.transport == Transport::Uc {
                    self.stats.uc_messages_sent += 1;
                }
                q.cur += 1;
                q.cur_pkt = 0;
            } else {
                q.cur_pkt += 1;
            }
            self.stats.data_packets += 1;
            h.engine_free = ready;
            h.rr_next = qp + 1;
            if q.transport == Transport::Rc {
                // The ACK timer runs from the oldest unacknowledged packet: a packet sent with
                // nothing outstanding before it starts the wait now, not at the last ACK of an
                // earlier burst (a QP that waited its turn behind 1023 others timed out at once).
                if psn == q.una_psn {
                    q.last_progress = now;
                }
                self.arm_timer(qp, now);
            }
            return Pull::Ready(pkt);
        }
        earliest.map_or(Pull::Idle, Pull::Later)
    }
}

impl Endpoints<IbPacket> for IbHosts {
    fn deliver(&mut self, now: Time, node: NodeId, pkt: IbPacket) {
        let h = self.host(node);
        h.rx_free = h.rx_free.max(now) + h.costs.rx_pkt;
        let ready = h.rx_free;
        let seen = ready + h.costs.poll;
        self.qps.wake(pkt.qp);
        if self.qps[pkt.qp as usize].failed {
            return;
        }
        match pkt.kind {
            Kind::Data => self.on_data(&pkt, ready, seen),
            Kind::ReadReq => self.on_read_request(&pkt, ready),
            Kind::ReadResp => self.on_read_response(&pkt, now, seen),
            Kind::Ack => {
                self.requester_ack(pkt.qp, (pkt.psn + 1) & PSN_MASK, now, seen, false);
                self.retry_overtaken_read(pkt.qp, pkt.psn, now);
            }
            Kind::Nak => {
                self.requester_ack(pkt.qp, pkt.psn, now, seen, false);
                let q = &mut self.qps[pkt.qp as usize];
                if psn_diff(pkt.psn, q.una_psn) == 0 {
                    q.rewind_to(pkt.psn);
                    q.last_progress = now;
                    self.activate(pkt.qp);
                }
            }
            Kind::Datagram => debug_assert!(false, "cross traffic reached an adapter"),
        }
    }

    fn pull(&mut self, now: Time, node: NodeId) -> Pull<IbPacket> {
        self.next_packet(now, node)
    }

    fn sent(&mut self, _node: NodeId, pkt: &IbPacket, done_at: Time) {
        // UD and UC complete locally once the last packet has left the adapter.
        if pkt.kind != Kind::Data || !pkt.last {
            return;
        }
        let qp = pkt.qp as usize;
        let local = self.qps.peer_qp(qp as u32);
        let q = &mut self.qps[local as usize];
        if q.transport == Transport::Rc {
            return;
        }
        if let Some(w) = q.sq.pop_front() {
            if q.sq.is_empty() {
                q.sq.shrink_to_fit(); // see `Qp::ack_through`
            }
            q.cur -= 1;
            q.una_psn = (w.first_psn + w.npkts) & PSN_MASK;
            let poll = self.hosts[q.node as usize].as_ref().map_or(0, |h| h.costs.poll);
            self.complete(local, CompletionKind::Send, w.op, w.id, w.len, done_at + poll);
        }
    }
}
