//! The inter-node point-to-point protocol over the verbs layer, MVAPICH2-like.
//!
//! - One connection (a queue pair on each node) per pair of ranks, set up on first use
//!   (MVAPICH2's on-demand connection management).
//! - Eager: the sender copies the message behind an MPI header into a pre-registered buffer
//!   and sends it; the receiver copies it out. Over RC each direction has `eager_credits`
//!   per-peer buffers at the receiver (MVAPICH2's RDMA fast-path ring); freed buffers go back
//!   as credits piggybacked on reverse traffic (messages with an MPI header only) or in an
//!   explicit update after `credit_update_after`. A message that finds the ring full does not
//!   wait: it takes the send/receive channel, whose shared receive queue has no per-peer limit
//!   (MVAPICH2's default MV2_USE_SRQ=1), and may be coalesced there.
//! - Rendezvous: RTS; RPUT: CTS, RDMA write(s), FIN; RGET: RDMA read(s) by the receiver, FIN
//!   back; R3: CTS, then the data copied through eager buffers. Control messages travel like
//!   eager ones, as in MVAPICH2.
//! - Coalescing (RC send/receive channel, `MpiParams::coalesce_after`), as MVAPICH2's gen2
//!   `ibv_send.c` does it: once a few sends to a peer are outstanding, messages leave the RDMA
//!   fast path and are packed into one held buffer, posted as one work request when the
//!   outstanding sends drop below the threshold again (or when the next message does not fit,
//!   or a rendezvous FIN, always a work request of its own, is posted); the receiver handles
//!   its messages in order. The messages of a buffer are chained through `Wire::next`.
//! - Over UD and UC the library provides reliability itself (`reliable.rs`): the credits become
//!   a send window of `ud_window` sequenced frames, acknowledged cumulatively and resent after a
//!   timeout when lost. UD frames are one MTU, so UD messages are fragmented and rendezvous falls
//!   back to R3 (no RDMA); UC has RDMA write but no read, so RGET falls back to RPUT, and the
//!   RPUT sender's buffer is free once the receiver acknowledges the data.

use std::collections::VecDeque;
use std::marker::PhantomData;

use super::engine::{Channel, Mpi, Proto, NO_CONN};
use super::params::{MpiParams, Rndv};
use super::reliable::{LazyReliable, ACK_TAG, NO_SEQ};
use crate::engine::time::from_ns;
use crate::engine::Time;
use crate::ib::{Completion, CompletionKind, IbHosts, Op, Transport, WcStatus};
use crate::net::NodeId;

/// MVAPICH2's channel over InfiniBand verbs: the library's parameters, the transport its queue
/// pairs use, and its connections and work requests.
pub struct Verbs<N = IbHosts> {
    pub params: MpiParams,
    pub transport: Transport,
    pub mtu: u32,
    pub wires: Vec<Wire>,
    pub free_wires: Vec<u32>,
    /// Every connection, in the order of its first use; each pair of ranks that has sent
    /// remembers its own (`PairState::conn`), which is how a connection is found again.
    pub conns: Vec<Conn>,
    /// Directions of parked connections, for the next connection to wake.
    pub spare_dirs: SpareDirs,
    /// (connection, side) of every queue pair.
    pub qp_conn: Vec<(u32, u8)>,
    /// The adapter's cost to post a work request.
    pub post_cost: Time,
    net: PhantomData<fn() -> N>,
}

/// What the channel needs of the hosts' verbs: queue pairs to connect, work requests to post,
/// receives to provide, and the host of a queue pair. The packet-level adapters ([`IbHosts`])
/// and the flow-level ones ([`super::fluid::FluidIb`]) both offer it, so the protocol above is
/// written once.
pub trait VerbsNet: crate::transport::Transport<Output = Completion> {
    /// A connected pair of queue pairs on hosts `a` and `b`: (the one on a, the one on b).
    fn connect(&mut self, a: NodeId, b: NodeId, transport: Transport, mtu: u32, sq_depth: u32) -> (u32, u32);
    /// Post a work request of `op` moving `len` bytes on `qp`, ready at `ready_at`.
    fn post_send(&mut self, qp: u32, op: Op, len: u32, id: u64, ready_at: Time);
    /// Give `qp` `count` more posted receives.
    fn post_recv(&mut self, qp: u32, count: u32);
    fn node_of(&self, qp: u32) -> NodeId;
    /// Let idle queue pair `qp` keep only what it needs to be woken (true if it did).
    fn park(&mut self, qp: u32) -> bool;
}

impl VerbsNet for IbHosts {
    fn connect(&mut self, a: NodeId, b: NodeId, transport: Transport, mtu: u32, sq_depth: u32) -> (u32, u32) {
        IbHosts::connect(self, a, b, transport, mtu, 0, sq_depth)
    }
    fn post_send(&mut self, qp: u32, op: Op, len: u32, id: u64, ready_at: Time) {
        IbHosts::post_send(self, qp, op, len, id, ready_at)
    }
    fn post_recv(&mut self, qp: u32, count: u32) {
        IbHosts::post_recv(self, qp, count)
    }
    fn node_of(&self, qp: u32) -> NodeId {
        IbHosts::node_of(self, qp)
    }
    fn park(&mut self, qp: u32) -> bool {
        IbHosts::park(self, qp)
    }
}

impl<N> Verbs<N> {
    /// The channel with `params` over `transport` queue pairs of `mtu`; `post_ns`: the
    /// adapter's cost to post a work request.
    pub fn new(params: MpiParams, transport: Transport, mtu: u32, post_ns: f64) -> Self {
        Verbs {
            params,
            transport,
            mtu,
            wires: Vec::new(),
            free_wires: Vec::new(),
            conns: Vec::new(),
            spare_dirs: SpareDirs::default(),
            qp_conn: Vec::new(),
            post_cost: from_ns(post_ns),
            net: PhantomData,
        }
    }

    fn rndv_proto(&self) -> Proto {
        match (self.transport, self.params.rndv) {
            (Transport::Ud, _) | (_, Rndv::R3) => Proto::R3,
            (Transport::Uc, Rndv::Rget) | (_, Rndv::Rput) => Proto::Rput,
            (_, Rndv::Rget) => Proto::Rget,
        }
    }
}

/// The verbs channel's events.
#[derive(Debug, Clone, Copy)]
pub enum VerbsEv {
    /// UD/UC: a direction's (connection, direction) retransmission check is due.
    UdRetry(u32, u8),
    /// UD/UC: a direction's receiver sends the acknowledgements it still owes.
    UdAck(u32, u8),
}

/// What the verbs channel may do while it handles a completion or one of its events.
pub type Cx<'a, N> = super::engine::Cx<'a, Verbs<N>>;

impl<N: VerbsNet> Channel for Verbs<N> {
    type Net = N;
    type Event = VerbsEv;

    fn proto(&self, bytes: u64) -> Proto {
        if self.params.is_eager(bytes) {
            Proto::Eager
        } else {
            self.rndv_proto()
        }
    }

    fn send(mpi: &mut Mpi<Verbs<N>>, cx: &mut Cx<N>, m: u32, t: Time) {
        match mpi.msgs[m as usize].proto {
            Proto::Eager => mpi.eager_send(cx, m, t),
            _ => mpi.rndv_send(cx, m, t),
        }
    }

    fn matched(mpi: &mut Mpi<Verbs<N>>, cx: &mut Cx<N>, m: u32, t: Time) {
        match mpi.msgs[m as usize].proto {
            Proto::Eager => {
                // The data is already here: copy it out of the eager (or unexpected) buffer.
                let (dst, bytes) = (mpi.msgs[m as usize].dst, mpi.msgs[m as usize].bytes);
                let done = mpi.copy(dst, t, bytes);
                mpi.complete_recv(cx, m, done);
            }
            _ => mpi.rndv_matched(cx, m, t),
        }
    }

    fn on_output(mpi: &mut Mpi<Verbs<N>>, cx: &mut Cx<N>, c: Completion) {
        // A queue pair in error ends the job: the run reports it (`stats.qp_errors`).
        if c.status != WcStatus::Success {
            return;
        }
        mpi.on_completion(cx, c);
    }

    fn on_event(mpi: &mut Mpi<Verbs<N>>, cx: &mut Cx<N>, ev: VerbsEv, now: Time) {
        match ev {
            VerbsEv::UdRetry(c, d) => mpi.on_retry_timer(cx, c, d as usize, now),
            VerbsEv::UdAck(c, d) => mpi.on_ack_timer(cx, c, d as usize, now),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Eager data (possibly one UD fragment: `last` marks the final one).
    Eager {
        last: bool,
    },
    Rts,
    Cts,
    Fin,
    /// R3 rendezvous data through eager buffers.
    R3 {
        last: bool,
    },
    /// Explicit credit (or UD/UC acknowledgement) update.
    Credit,
    /// RPUT data by RDMA write.
    Write {
        last: bool,
    },
    /// RGET data by RDMA read (posted by the receiver).
    Read,
}

impl Kind {
    /// The verb that carries it: RPUT data is an RDMA write, RGET data an RDMA read, every other
    /// wire a send into one of the receiver's buffers.
    pub fn op(self) -> Op {
        match self {
            Kind::Write { .. } => Op::Write,
            Kind::Read => Op::Read,
            _ => Op::Send,
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Wire {
    pub kind: Kind,
    pub msg: u32,
    /// RC: credits for the reverse direction carried by this message. UD/UC: the reverse
    /// direction's cumulative acknowledgement (the next sequence number its receiver expects).
    pub credits: u32,
    /// Completions still expected for this work request (send side and/or receive side).
    pub uses: u8,
    /// The next message coalesced into the same buffer (`NO_WIRE`: none).
    pub next: u32,
    /// It took one of the receiver's per-peer eager buffers (a credit), freed on arrival.
    pub ring: bool,
    /// UD/UC: its sequence number in its direction (`NO_SEQ`: none).
    pub seq: u32,
}

pub const NO_WIRE: u32 = u32::MAX;
/// A wire that carries no message (a credit update).
pub const NO_MSG: u32 = u32::MAX;

/// A coalescing buffer held back until a send completes: its first and last message.
#[derive(Clone, Copy)]
pub struct Held {
    head: u32,
    tail: u32,
    bytes: u32,
    ready: Time,
}

/// One direction of a connection.
#[derive(Default)]
pub struct Dir {
    pub credits: u32,
    /// Credits the receiver of this direction has freed and not yet returned.
    pub owed: u32,
    /// Work waiting for credits, in order: (wire, bytes).
    pub backlog: VecDeque<(u32, u32)>,
    /// Wires posted as sends/writes in this direction, in order: the receiver's completions.
    pub inbox: VecDeque<u32>,
    /// Send work requests posted in this direction and not completed (coalescing's trigger).
    pub sends_out: u32,
    pub held: Option<Held>,
    /// UD/UC: sequence numbers, acknowledgements and retransmission.
    pub rel: LazyReliable,
}

/// Two ranks on different nodes: `ranks[0]` < `ranks[1]`, `qps[i]` on `ranks[i]`'s node;
/// `dirs[i]` carries traffic from `ranks[i]` to the other.
pub struct Conn {
    pub ranks: [u32; 2],
    pub qps: [u32; 2],
    pub dirs: Dirs,
}

/// A connection's two directions: live, or parked once drained as what resuming needs (each
/// direction's credits and the credits it owes back: 16 bytes instead of about 240).
/// Indexing reaches live directions; [`Dirs::wake`] first (indexing parked ones panics).
pub enum Dirs {
    Live(Box<[Dir; 2]>),
    Parked([(u32, u32); 2]),
}

/// The drained directions of parked connections. The boxes themselves are kept, since a box
/// is what a live connection holds: waking one then allocates nothing.
#[derive(Default)]
#[allow(clippy::vec_box)]
pub struct SpareDirs(Vec<Box<[Dir; 2]>>);

impl Dirs {
    fn drained(d: &Dir) -> bool {
        d.backlog.is_empty() && d.inbox.is_empty() && d.sends_out == 0 && d.held.is_none() && d.rel.is_unused()
    }

    /// Park both directions if neither has anything queued, posted, held or sequenced (their
    /// buffers kept in `spare` for the next connection to wake); true if they are parked now.
    pub fn park(&mut self, spare: &mut SpareDirs) -> bool {
        if let Dirs::Live(d) = self {
            if !d.iter().all(Dirs::drained) {
                return false;
            }
            let parked = Dirs::Parked([(d[0].credits, d[0].owed), (d[1].credits, d[1].owed)]);
            if let Dirs::Live(d) = std::mem::replace(self, parked) {
                spare.0.push(d);
            }
        }
        true
    }

    /// Make parked directions live again, as they were, in drained ones from `spare` if it has
    /// any: connections park and wake with nearly every message of a collective.
    #[inline]
    pub fn wake(&mut self, spare: &mut SpareDirs) {
        if let Dirs::Parked(p) = *self {
            let mut live = spare.0.pop().unwrap_or_default();
            for (dir, (credits, owed)) in live.iter_mut().zip(p) {
                (dir.credits, dir.owed) = (credits, owed);
            }
            *self = Dirs::Live(live);
        }
    }
}

impl std::ops::Index<usize> for Dirs {
    type Output = Dir;
    #[inline]
    fn index(&self, d: usize) -> &Dir {
        match self {
            Dirs::Live(dirs) => &dirs[d],
            Dirs::Parked(_) => panic!("a parked connection is used: wake it first"),
        }
    }
}

impl std::ops::IndexMut<usize> for Dirs {
    #[inline]
    fn index_mut(&mut self, d: usize) -> &mut Dir {
        match self {
            Dirs::Live(dirs) => &mut dirs[d],
            Dirs::Parked(_) => panic!("a parked connection is used: wake it first"),
        }
    }
}

impl<N: VerbsNet> Mpi<Verbs<N>> {
    /// Payload bytes one eager/control frame can carry.
    fn frame_payload(&self) -> u64 {
        match self.ch.transport {
            Transport::Ud => (self.ch.mtu - self.ch.params.header_bytes) as u64,
            _ => u64::MAX,
        }
    }

    fn initial_credits(&self) -> u32 {
        match self.ch.transport {
            Transport::Rc => self.ch.params.eager_credits,
            _ => self.ch.params.ud_window,
        }
    }

    /// Kinds that occupy an eager buffer (RC) or a window slot (UD/UC) at the receiver.
    fn needs_credit(&self, k: Kind) -> bool {
        match k {
            Kind::Credit | Kind::Read => false,
            Kind::Write { .. } => self.ch.transport != Transport::Rc,
            _ => true,
        }
    }

    /// The connection between `a` and `b` for a wire of message `m` (or [`NO_MSG`]) and the
    /// direction a -> b: the one the message's pair remembers, or else looked up (created on
    /// first use) and remembered.
    fn conn(&mut self, cx: &mut Cx<N>, a: u32, b: u32, m: u32) -> (u32, usize) {
        let pair = (m != NO_MSG).then(|| self.msgs[m as usize].pair as usize);
        let c = match pair.map(|p| self.pair_state[p].conn) {
            Some(c) if c != NO_CONN => c,
            _ => {
                let c = self.conn_between(cx, a, b);
                if let Some(p) = pair {
                    self.pair_state[p].conn = c;
                }
                c
            }
        };
        self.ch.conns[c as usize].dirs.wake(&mut self.ch.spare_dirs);
        (c, usize::from(a > b))
    }

    /// The connection between `a` and `b`, created on first use: the one either pair of the two
    /// remembers. A wire without a message (a credit update, an acknowledgement) answers
    /// messages, whose pair remembers their connection, so no connection is first used by one.
    fn conn_between(&mut self, cx: &mut Cx<N>, a: u32, b: u32) -> u32 {
        let key = (a.min(b), a.max(b));
        let remembered = [(a, b), (b, a)]
            .iter()
            .filter_map(|p| self.pairs.get(p))
            .map(|&p| self.pair_state[p as usize].conn)
            .find(|&c| c != NO_CONN);
        match remembered {
            Some(c) => c,
            None => {
                let (na, nb) = (self.host[key.0 as usize], self.host[key.1 as usize]);
                let (qa, qb) = cx.net.connect(na, nb, self.ch.transport, self.ch.mtu, self.ch.params.max_send_wqe);
                if self.ch.transport == Transport::Ud {
                    // MVAPICH2-UD keeps a deep pool of posted receives; they never run out here.
                    cx.net.post_recv(qa, u32::MAX / 2);
                    cx.net.post_recv(qb, u32::MAX / 2);
                }
                let c = self.ch.conns.len() as u32;
                self.stats.connections += 1;
                // Born parked, with its full credits: woken when used, as every connection is.
                let credits = self.initial_credits();
                self.ch.conns.push(Conn {
                    ranks: [key.0, key.1],
                    qps: [qa, qb],
                    dirs: Dirs::Parked([(credits, 0); 2]),
                });
                let need = qb as usize + 1;
                if self.ch.qp_conn.len() < need {
                    self.ch.qp_conn.resize(need, (u32::MAX, 0));
                }
                self.ch.qp_conn[qa as usize] = (c, 0);
                self.ch.qp_conn[qb as usize] = (c, 1);
                c
            }
        }
    }

    fn new_wire(&mut self, w: Wire) -> u32 {
        match self.ch.free_wires.pop() {
            Some(i) => {
                self.ch.wires[i as usize] = w;
                i
            }
            None => {
                self.ch.wires.push(w);
                (self.ch.wires.len() - 1) as u32
            }
        }
    }

    /// One completion of the work request headed by `w`: every message chained to it is done
    /// on that side.
    pub(super) fn release_wire(&mut self, w: u32) {
        let mut w = w;
        while w != NO_WIRE {
            let wire = &mut self.ch.wires[w as usize];
            let next = wire.next;
            wire.uses -= 1;
            if wire.uses == 0 {
                self.ch.free_wires.push(w);
            }
            w = next;
        }
    }

    /// Send a wire of `kind` for message `m` from rank `from` to rank `to`, ready at `t`.
    pub(super) fn send_wire(
        &mut self,
        cx: &mut Cx<N>,
        (from, to): (u32, u32),
        kind: Kind,
        m: u32,
        bytes: u32,
        t: Time,
    ) {
        let op = kind.op();
        let (c, d) = self.conn(cx, from, to, m);
        let rc = self.ch.transport == Transport::Rc;
        // Completions that will release it: the send and the arrival; a read completes at the
        // requester only, and the receiver of a UD/UC acknowledgement reads only its header.
        let uses = if kind == Kind::Read || (!rc && kind == Kind::Credit) { 1 } else { 2 };
        let w = self.new_wire(Wire { kind, msg: m, credits: 0, uses, next: NO_WIRE, ring: false, seq: NO_SEQ });
        let ready = self.cpu(from, t, self.ch.post_cost);
        let needs = self.needs_credit(kind);
        if rc && kind == Kind::Fin {
            // MVAPICH2 sends the rendezvous finish in a buffer of its own on the send/receive
            // channel (MPIDI_CH3I_MRAILI_rput_complete / rget_finish call post_send, which
            // flushes the held buffer first): never packed, never on the fast path.
            self.flush_held(cx, c, d);
            return self.post_now(cx, c, d, w, bytes, ready);
        }
        let coalescing = self.coalescing(c, d);
        let dir = &mut self.ch.conns[c as usize].dirs[d];
        if needs && dir.credits > 0 && dir.backlog.is_empty() && dir.held.is_none() && !coalescing {
            // A free eager buffer at the receiver (RC: the RDMA fast path's ring), nothing held
            // that it would overtake, and not in a burst: MVAPICH2 leaves the fast path once
            // coalescing applies, since only send/receive messages can be packed
            // (MPIDI_CH3I_MRAILI_Fast_rdma_ok refuses when MRAILI_Coalesce_ok holds).
            dir.credits -= 1;
            self.ch.wires[w as usize].ring = true;
            return self.post_slot(cx, c, d, w, bytes, ready);
        }
        if needs {
            self.stats.credit_stalls += 1;
        }
        if needs && !rc {
            // UD/UC: the window is full; wait for acknowledgements.
            dir.backlog.push_back((w, bytes));
            return;
        }
        // RC without a free ring buffer, or a message that needs none: the send/receive channel
        // (MVAPICH2's shared receive queue has no per-peer limit), coalesced when it can be.
        if op == Op::Send && self.try_append(c, d, w, bytes, ready) {
            return;
        }
        self.post_wire(cx, c, d, w, bytes, ready);
    }

    /// Pack wire `w` into the held buffer of direction `d` if there is one with room.
    fn try_append(&mut self, c: u32, d: usize, w: u32, bytes: u32, ready: Time) -> bool {
        let Some(h) = self.ch.conns[c as usize].dirs[d].held else { return false };
        if h.bytes + bytes > self.ch.params.vbuf_bytes {
            return false;
        }
        self.ch.wires[h.tail as usize].next = w;
        self.ch.conns[c as usize].dirs[d].held =
            Some(Held { tail: w, bytes: h.bytes + bytes, ready: h.ready.max(ready), ..h });
        true
    }

    /// Coalescing applies to direction `d` of `c`: RC, switched on, and at least
    /// `coalesce_after` sends outstanding (MVAPICH2's MRAILI_Coalesce_ok with an SRQ).
    fn coalescing(&self, c: u32, d: usize) -> bool {
        let after = self.ch.params.coalesce_after;
        after > 0 && self.ch.transport == Transport::Rc && self.ch.conns[c as usize].dirs[d].sends_out >= after
    }

    /// Post wire `w` (with what is chained to it) as one work request, or hold it to coalesce.
    fn post_wire(&mut self, cx: &mut Cx<N>, c: u32, d: usize, w: u32, bytes: u32, ready: Time) {
        if self.ch.wires[w as usize].kind.op() == Op::Send
            && self.ch.params.coalesce_after > 0
            && self.ch.transport == Transport::Rc
        {
            if self.ch.conns[c as usize].dirs[d].held.is_some() {
                self.flush_held(cx, c, d); // did not fit: it goes first
            }
            if self.coalescing(c, d) {
                self.ch.conns[c as usize].dirs[d].held = Some(Held { head: w, tail: w, bytes, ready });
                return;
            }
        }
        self.post_now(cx, c, d, w, bytes, ready);
    }

    fn flush_held(&mut self, cx: &mut Cx<N>, c: u32, d: usize) {
        if let Some(h) = self.ch.conns[c as usize].dirs[d].held.take() {
            self.post_now(cx, c, d, h.head, h.bytes, h.ready);
        }
    }

    /// Post a wire that holds a receiver buffer (RC) or a window slot (UD/UC).
    fn post_slot(&mut self, cx: &mut Cx<N>, c: u32, d: usize, w: u32, bytes: u32, ready: Time) {
        if self.ch.transport == Transport::Rc {
            self.post_now(cx, c, d, w, bytes, ready);
        } else {
            self.post_sequenced(cx, c, d, w, bytes, ready);
        }
    }

    /// Hand wire `w` (`bytes` on the wire, with what is chained to it) to the adapter at `ready`.
    pub(super) fn post_now(&mut self, cx: &mut Cx<N>, c: u32, d: usize, w: u32, bytes: u32, ready: Time) {
        let op = self.ch.wires[w as usize].kind.op();
        let rc = self.ch.transport == Transport::Rc;
        let conn = &mut self.ch.conns[c as usize];
        if op == Op::Send {
            conn.dirs[d].sends_out += 1;
        }
        let mut tag = 0;
        if !rc {
            // UD/UC: every frame carries the cumulative acknowledgement of the other direction
            // and its own sequence number (an explicit acknowledgement: the acknowledged number).
            let back = &mut conn.dirs[1 - d].rel;
            back.ack_pending = 0;
            let wire = &mut self.ch.wires[w as usize];
            wire.credits = back.expect;
            tag = if wire.seq == NO_SEQ { ACK_TAG | back.expect } else { wire.seq };
        } else if op == Op::Send {
            // Piggyback what this side owes the other direction, on messages that carry an MPI
            // header: an RDMA write or read moves user data only and its peer sees no message,
            // so credits put on it would be lost.
            let back = &mut conn.dirs[1 - d];
            self.ch.wires[w as usize].credits = std::mem::take(&mut back.owed);
        }
        let qp = conn.qps[d];
        if rc && op != Op::Read {
            conn.dirs[d].inbox.push_back(w);
        }
        cx.net.post_send(qp, op, bytes, (tag as u64) << 32 | w as u64, ready);
        let node = cx.net.node_of(qp);
        cx.kick(node);
    }

    /// Credits came back to direction `d` of connection `c` at `t`: release work waiting for
    /// window slots (UD/UC; RC never waits, see `send_wire`).
    pub(super) fn add_credits(&mut self, cx: &mut Cx<N>, c: u32, d: usize, n: u32, t: Time) {
        if n == 0 {
            return;
        }
        self.ch.conns[c as usize].dirs[d].credits += n;
        loop {
            let dir = &mut self.ch.conns[c as usize].dirs[d];
            let Some(&(w, bytes)) = dir.backlog.front() else { break };
            let needs = self.needs_credit(self.ch.wires[w as usize].kind);
            let dir = &mut self.ch.conns[c as usize].dirs[d];
            if needs && dir.credits == 0 {
                break;
            }
            dir.backlog.pop_front();
            if needs {
                dir.credits -= 1;
                self.ch.wires[w as usize].ring = true;
            }
            let from = self.ch.conns[c as usize].ranks[d];
            let ready = self.cpu(from, t, self.ch.post_cost);
            if needs {
                self.post_slot(cx, c, d, w, bytes, ready);
            } else {
                self.post_now(cx, c, d, w, bytes, ready);
            }
        }
    }

    /// RC: the receiver of direction `d` freed a buffer at `t`; return credits when enough are
    /// owed.
    fn free_buffer(&mut self, cx: &mut Cx<N>, c: u32, d: usize, t: Time) {
        let after = self.ch.params.credit_update_after;
        let dir = &mut self.ch.conns[c as usize].dirs[d];
        dir.owed += 1;
        if dir.owed >= after {
            self.stats.credit_updates += 1;
            let [a, b] = self.ch.conns[c as usize].ranks;
            let (from, to) = if d == 0 { (b, a) } else { (a, b) };
            let hdr = self.ch.params.header_bytes;
            self.send_wire(cx, (from, to), Kind::Credit, NO_MSG, hdr, t);
        }
    }

    pub fn eager_send(&mut self, cx: &mut Cx<N>, m: u32, t: Time) {
        self.stats.eager += 1;
        let (src, dst, bytes) = (self.msgs[m as usize].src, self.msgs[m as usize].dst, self.msgs[m as usize].bytes);
        let done = self.copy(src, t, bytes);
        self.send_frames(cx, (src, dst), m, bytes, done, |last| Kind::Eager { last });
        // Buffered: the send request is complete once the data is copied.
        self.complete_send(cx, m, done);
    }

    /// Send `bytes` of message `m` as eager-buffer frames (one unless UD fragments it).
    fn send_frames(&mut self, cx: &mut Cx<N>, route: (u32, u32), m: u32, bytes: u64, t: Time, kind: fn(bool) -> Kind) {
        let per = self.frame_payload();
        let hdr = self.ch.params.header_bytes as u64;
        let mut left = bytes;
        loop {
            let n = left.min(per);
            left -= n;
            self.send_wire(cx, route, kind(left == 0), m, (n + hdr) as u32, t);
            if left == 0 {
                break;
            }
        }
    }

    pub fn rndv_send(&mut self, cx: &mut Cx<N>, m: u32, t: Time) {
        self.stats.rendezvous += 1;
        let (src, dst) = (self.msgs[m as usize].src, self.msgs[m as usize].dst);
        let hdr = self.ch.params.header_bytes;
        self.send_wire(cx, (src, dst), Kind::Rts, m, hdr, t);
    }

    /// The receive for rendezvous message `m` is posted and its RTS has arrived (at `t`).
    pub fn rndv_matched(&mut self, cx: &mut Cx<N>, m: u32, t: Time) {
        let msg = &self.msgs[m as usize];
        let (src, dst, bytes, proto) = (msg.src, msg.dst, msg.bytes, msg.proto);
        let hdr = self.ch.params.header_bytes;
        match proto {
            Proto::Rget => {
                let chunks = self.rdma_chunks(bytes);
                self.msgs[m as usize].pending_parts = chunks.len() as u32;
                for len in chunks {
                    self.send_wire(cx, (dst, src), Kind::Read, m, len, t);
                }
            }
            _ => self.send_wire(cx, (dst, src), Kind::Cts, m, hdr, t),
        }
    }

    /// The lengths of the RDMA operations that move `bytes` (at least one), computed as they are
    /// posted rather than collected (a rendezvous would allocate for them).
    fn rdma_chunks(&self, bytes: u64) -> impl ExactSizeIterator<Item = u32> {
        let max = self.ch.params.max_rdma_bytes as u64;
        let n = bytes.div_ceil(max).max(1) as usize;
        (0..n).map(move |i| (bytes.min((i as u64 + 1) * max) - i as u64 * max) as u32)
    }

    /// A verbs completion for one of the MPI queue pairs.
    pub fn on_completion(&mut self, cx: &mut Cx<N>, c: Completion) {
        let (conn, side) = self.ch.qp_conn[c.qp as usize];
        self.ch.conns[conn as usize].dirs.wake(&mut self.ch.spare_dirs);
        self.on_work_done(cx, conn, side as usize, c);
        self.park_if_idle(cx, conn);
    }

    /// An RC connection whose queues have drained (nothing waiting for credits, posted and not
    /// completed, or held for coalescing) parks its directions ([`Dirs`]) and its two queue
    /// pairs ([`IbHosts::park`]): an
    /// alltoall talks to every peer once per phase, a few at a time, and an idle queue pair
    /// then keeps a few dozen bytes instead of its whole state. UD/UC connections keep theirs
    /// (the library's own reliability runs timers on them).
    fn park_if_idle(&mut self, cx: &mut Cx<N>, conn: u32) {
        let c = &mut self.ch.conns[conn as usize];
        if self.ch.transport != Transport::Rc || !c.dirs.park(&mut self.ch.spare_dirs) {
            return;
        }
        let [qa, qb] = c.qps;
        if cx.net.park(qa) & cx.net.park(qb) {
            self.stats.parked += 1;
        }
    }

    fn on_work_done(&mut self, cx: &mut Cx<N>, conn: u32, side: usize, c: Completion) {
        match c.kind {
            CompletionKind::Recv => {
                // Arrived on side's QP: it travelled in the other side's direction.
                let d = 1 - side;
                if self.ch.transport != Transport::Rc {
                    return self.on_frame(cx, conn, d, c.id as u32, c.at);
                }
                let inbox = &mut self.ch.conns[conn as usize].dirs[d].inbox;
                let head = inbox.pop_front().expect("a posted wire for every arrival");
                let mut w = head;
                while w != NO_WIRE {
                    self.on_arrival(cx, conn, d, w, c.at);
                    w = self.ch.wires[w as usize].next;
                }
                self.release_wire(head);
            }
            CompletionKind::Send => {
                let w = c.id as u32;
                let wire = self.ch.wires[w as usize];
                let rc = self.ch.transport == Transport::Rc;
                if wire.seq != NO_SEQ {
                    self.frame_sent(conn, side, w);
                }
                match wire.kind {
                    // RPUT: the sender's buffer is free once the last write is acknowledged (RC;
                    // UC: by the library, see `reliable.rs`).
                    Kind::Write { last: true } if rc => self.complete_send(cx, wire.msg, c.at),
                    Kind::Read => self.read_done(cx, wire.msg, c.at),
                    _ => {}
                }
                if c.op == Op::Send {
                    // The held buffer goes once the burst has drained below the coalescing
                    // threshold (MRAILI_Process_send flushes when outstanding_eager_vbufs <
                    // rdma_coalesce_threshold), not at every completion.
                    let d = side;
                    self.ch.conns[conn as usize].dirs[d].sends_out -= 1;
                    let drained = !self.coalescing(conn, d);
                    if let Some(h) = self.ch.conns[conn as usize].dirs[d].held.as_mut().filter(|_| drained) {
                        h.ready = h.ready.max(c.at);
                        self.flush_held(cx, conn, d);
                    }
                }
                self.release_wire(w);
            }
        }
    }

    fn read_done(&mut self, cx: &mut Cx<N>, m: u32, t: Time) {
        self.msgs[m as usize].pending_parts -= 1;
        if self.msgs[m as usize].pending_parts > 0 {
            return;
        }
        let (src, dst) = (self.msgs[m as usize].src, self.msgs[m as usize].dst);
        let hdr = self.ch.params.header_bytes;
        let done = self.cpu(dst, t, self.call_cost);
        self.send_wire(cx, (dst, src), Kind::Fin, m, hdr, done);
        self.complete_recv(cx, m, done);
    }

    /// Wire `w` travelling in direction `d` of `conn` reached its receiver at `at` (UD/UC: in
    /// sequence, its acknowledgement already counted).
    pub(super) fn on_arrival(&mut self, cx: &mut Cx<N>, conn: u32, d: usize, w: u32, at: Time) {
        let wire = self.ch.wires[w as usize];
        let me = self.ch.conns[conn as usize].ranks[1 - d];
        let t = self.cpu(me, at, 0);
        let rc = self.ch.transport == Transport::Rc;
        if rc {
            self.add_credits(cx, conn, 1 - d, wire.credits, t);
        }
        let m = wire.msg;
        match wire.kind {
            Kind::Credit | Kind::Write { .. } => {}
            Kind::Eager { last } => {
                if last {
                    let t = self.cpu(me, t, self.call_cost);
                    self.arrived(cx, m, t);
                }
            }
            Kind::Rts => {
                let t = self.cpu(me, t, self.call_cost);
                self.arrived(cx, m, t);
            }
            Kind::Cts => self.on_cts(cx, m, t),
            Kind::Fin => {
                let t = self.cpu(me, t, self.call_cost);
                match self.msgs[m as usize].proto {
                    Proto::Rget => self.complete_send(cx, m, t),
                    _ => self.complete_recv(cx, m, t),
                }
            }
            Kind::R3 { last } => {
                let bytes =
                    (self.ch.params.r3_chunk_bytes as u64).min(self.frame_payload()).min(self.msgs[m as usize].bytes);
                let t = self.copy(me, t, bytes);
                if last {
                    self.complete_recv(cx, m, t);
                }
            }
            Kind::Read => unreachable!("reads complete at the requester"),
        }
        if wire.ring && rc {
            let t = self.ranks[me as usize].cpu_free;
            self.free_buffer(cx, conn, d, t);
        }
    }

    /// Clear to send: push the data.
    fn on_cts(&mut self, cx: &mut Cx<N>, m: u32, t: Time) {
        let (src, dst, bytes, proto) = {
            let x = &self.msgs[m as usize];
            (x.src, x.dst, x.bytes, x.proto)
        };
        let t = self.cpu(src, t, self.call_cost);
        match proto {
            Proto::R3 => {
                let chunk = (self.ch.params.r3_chunk_bytes as u64).min(self.frame_payload());
                let hdr = self.ch.params.header_bytes as u64;
                let mut left = bytes;
                let mut at = t;
                // At least one chunk, so that an empty message still tells the receiver it is done.
                loop {
                    let n = left.min(chunk);
                    left -= n;
                    at = self.copy(src, at, n);
                    self.send_wire(cx, (src, dst), Kind::R3 { last: left == 0 }, m, (n + hdr) as u32, at);
                    if left == 0 {
                        break;
                    }
                }
                self.complete_send(cx, m, at);
            }
            _ => {
                let chunks = self.rdma_chunks(bytes);
                let n = chunks.len();
                for (i, len) in chunks.enumerate() {
                    self.send_wire(cx, (src, dst), Kind::Write { last: i + 1 == n }, m, len, t);
                }
                let hdr = self.ch.params.header_bytes;
                self.send_wire(cx, (src, dst), Kind::Fin, m, hdr, t);
            }
        }
    }
}
