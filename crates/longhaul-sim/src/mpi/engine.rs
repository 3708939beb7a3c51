//! The MPI timing engine: ranks play their programs over the simulated two-cluster fabric.
//!
//! This is the PML (point-to-point management layer): program playback (repeat, warm-up, local
//! work, patterned rounds), matching, requests and completion. Inter-node messages go through a
//! [`Channel`], the library's protocol over one transport, packet by packet: MVAPICH2's over
//! InfiniBand verbs ([`super::protocol::Verbs`]: eager with credits, RPUT/RGET/R3, its own
//! reliability over UD/UC) or Open MPI ob1's over TCP ([`super::ob1_tcp::Ob1Tcp`]), so link
//! rates, credits, windows and the hosts' stacks all act on MPI traffic. Intra-node messages
//! take the shared-memory path (`shm.rs`), modelled per message: two memory copies through a
//! shared buffer, bounded by a core's copy rate and the node's memory bandwidth.
//!
//! A rank's CPU is one timeline (`cpu_free`): MPI calls, copies and compute queue on it, and a
//! message that arrives while its rank computes is handled when the computation ends (no
//! asynchronous progress, as in MVAPICH2's default polling mode). A rank may run ahead of
//! simulated time through computation; everything it then does is stamped with its CPU time,
//! never earlier.
//!
//! Invariants (checked by tests): every message is delivered exactly once and, per pair of
//! ranks, in the order it was sent; the run is a pure function of the scenario and seed.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;

use super::keyed_queues::KeyedQueues;
use super::params::NodeParams;
use super::placement::Layout;
use super::program::{Action, Programs, Xfer, WARMUP_MARK};
use crate::engine::time::from_ns;
use crate::engine::Time;
use crate::net::NodeId;
use crate::transport::Transport;
use crate::world::App;

/// The library's own events (the network's and the transport's timers are the world's).
#[derive(Debug, Clone, Copy)]
pub enum Ev<X> {
    /// A rank's blocking wait is over: continue its program.
    Resume(u32),
    /// An intra-node message's data is in the shared buffer.
    Shm(u32),
    /// The channel's own event (a UD/UC retransmission check, a TCP frame to write).
    Channel(X),
}

/// What the library may do while it handles a transport output or one of its events.
pub type Cx<'a, C> = crate::world::Cx<'a, <C as Channel>::Net, Ev<<C as Channel>::Event>>;

/// A library's point-to-point protocol over one transport: how an inter-node message travels
/// once the PML has posted it, and what the transport's outputs mean to it. The PML keeps the
/// channel's state in [`Mpi::ch`]; a channel completes requests through
/// [`Mpi::complete_send`], [`Mpi::complete_recv`] and tells of an arrived envelope (eager data,
/// rendezvous request) through [`Mpi::arrived`].
pub trait Channel: Sized {
    /// The host transport it runs on.
    type Net: Transport;
    /// Its own events.
    type Event: Copy;
    /// The protocol a message of `bytes` between two nodes takes.
    fn proto(&self, bytes: u64) -> Proto;
    /// Start sending message `m` (its protocol set by [`Channel::proto`]) at `t`.
    fn send(mpi: &mut Mpi<Self>, cx: &mut Cx<Self>, m: u32, t: Time);
    /// Message `m`'s envelope and its receive have met at `t`.
    fn matched(mpi: &mut Mpi<Self>, cx: &mut Cx<Self>, m: u32, t: Time);
    /// The transport produced `out`.
    fn on_output(mpi: &mut Mpi<Self>, cx: &mut Cx<Self>, out: <Self::Net as Transport>::Output);
    /// One of the channel's events is due at `now`.
    fn on_event(mpi: &mut Mpi<Self>, cx: &mut Cx<Self>, ev: Self::Event, now: Time);
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    Eager,
    Rput,
    Rget,
    R3,
    Shm,
}

/// One MPI message from `src` to `dst`.
#[derive(Debug, Clone)]
pub struct Msg {
    pub src: u32,
    pub dst: u32,
    pub bytes: u64,
    /// Position in the pair's send order (checked at delivery; counted modulo 2^32, which the
    /// check, an equality, does not mind).
    pub seq: u32,
    /// The pair's index in [`Mpi::pair_state`].
    pub pair: u32,
    pub proto: Proto,
    pub send_detached: bool,
    /// Set once matched with a receive: whether that receive was posted by `Post`.
    pub recv_detached: Option<bool>,
    /// When the receiver posted the matching receive (for the shared-memory pipeline).
    pub recv_posted_at: Time,
    /// Eager data / RTS / shared-memory data has arrived (time it was handled).
    pub arrived_at: Option<Time>,
    /// RDMA reads (RGET chunks) still outstanding at the receiver.
    pub pending_parts: u32,
    /// Shared memory: when the sender's last chunk is in the buffer.
    pub data_at: Time,
    pub done: u8,
}

#[derive(Default)]
pub struct RankState {
    pub pc: u64,
    /// Within a `Rounds` action: the next of its rounds to play.
    pub sub: u32,
    pub cpu_free: Time,
    /// Requests of the current round not yet complete, and when the last one completed.
    pub pending: u32,
    pub round_done: Time,
    /// Requests posted by `Post` and not yet complete.
    pub detached: u32,
    pub detached_done: Time,
    /// Waiting for the round (`Round`) or for the detached requests (`WaitAll`).
    pub blocked: bool,
    pub finished: bool,
}

/// Hashes a pair of ranks with one multiply per word (the Fx scheme): the engine looks pairs
/// up for every message and connection, and SipHash's flooding resistance buys nothing here.
/// No map keyed by it is ever iterated, so the hash cannot change a run.
#[derive(Default)]
pub struct PairHasher(u64);

impl Hasher for PairHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u32(b as u32);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0.rotate_left(5) ^ n as u64).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

pub type PairMap<V> = HashMap<(u32, u32), V, BuildHasherDefault<PairHasher>>;

/// What the PML keeps of one (src, dst) that has sent.
pub struct PairState {
    /// The next send and the next receive sequence number (the order check), modulo 2^32: 12
    /// bytes a pair, for the millions of pairs of an alltoall at thousands of ranks.
    pub send: u32,
    pub recv: u32,
    /// The channel's connection between the two ranks, once it has looked it up (its own
    /// number; [`NO_CONN`] before): the pair's later messages find it without a lookup.
    pub conn: u32,
}

pub const NO_CONN: u32 = u32::MAX;

const _: () = assert!(std::mem::size_of::<PairState>() == 12);

#[derive(Debug, Clone, Default)]
pub struct MpiStats {
    pub messages: u64,
    pub eager: u64,
    pub rendezvous: u64,
    pub shm: u64,
    pub credit_stalls: u64,
    pub credit_updates: u64,
    pub delivered: u64,
    pub order_violations: u64,
    /// UD/UC: frames the library sent again, and copies the receiver dropped as duplicates.
    pub resent_frames: u64,
    pub duplicate_frames: u64,
    /// Connections the channel opened (pairs of ranks on different nodes that talked).
    pub connections: u64,
    /// Times a drained connection parked its queue pairs (verbs RC, `protocol.rs`).
    pub parked: u64,
}

pub struct Mpi<C> {
    pub layout: Layout,
    pub node: NodeParams,
    /// Fabric host of every rank.
    pub host: Vec<NodeId>,
    /// Shared so that a rank can play its actions by reference while the engine mutates.
    pub progs: Rc<Programs>,
    pub ranks: Vec<RankState>,
    /// Every (src, dst) that has sent, numbered in the order of its first send: a few dozen
    /// bytes per pair that talks. A message keeps its pair's number, so that its delivery
    /// and its channel find the pair's state without a lookup of their own.
    pub pairs: PairMap<u32>,
    /// The state of each pair in `pairs`, by its number.
    pub pair_state: Vec<PairState>,
    /// Receives posted before their message, by (src, dst): their size, whether `Post` posted
    /// them (nonblocking), and when.
    pub posted: KeyedQueues<(u32, u32), (u64, bool, Time)>,
    /// Messages arrived before their receive, by (src, dst).
    pub unexpected: KeyedQueues<(u32, u32), u32>,
    pub msgs: Vec<Msg>,
    pub free_msgs: Vec<u32>,
    /// The sends and receives of the `Rounds` round being posted (reused).
    round_bufs: (Vec<Xfer>, Vec<Xfer>),
    /// Ranks placed on each node (they share its memory bandwidth).
    pub local_ranks: Vec<u32>,
    /// (label, iteration, time) marks per rank.
    pub marks: Vec<Vec<(u32, u64, Time)>>,
    pub stats: MpiStats,
    /// CPU time of one MPI call (posting a send or a receive: matching, request handling).
    pub call_cost: Time,
    /// Shared memory: the chunk the two copies pipeline in (`MpiParams::smp_chunk_bytes`).
    pub smp_chunk_bytes: u64,
    /// The channel's state.
    pub ch: C,
    /// Why the run was aborted (the library gave up), if it was.
    pub failure: Option<String>,
    unfinished: usize,
    /// The steps of every rank's program played so far and in all (an action is one, a
    /// `Rounds` one more per round): how far the job is, for the caller's progress bar.
    steps_done: u64,
    steps_total: u64,
}

impl<C: Channel> Mpi<C> {
    /// The ranks of `layout` on fabric hosts `host`, playing `progs` over channel `ch`; one MPI
    /// call costs `call_ns` of CPU.
    pub fn new(
        layout: Layout,
        node: NodeParams,
        host: Vec<NodeId>,
        progs: Programs,
        (call_ns, smp_chunk_bytes): (f64, u32),
        ch: C,
    ) -> Self {
        let n = layout.ranks() as usize;
        let call_cost = from_ns(call_ns);
        let steps = |a: &Action| 1 + if let Action::Rounds(p) = a { p.rounds() as u64 } else { 0 };
        let steps_total = progs.repeat * progs.ranks.iter().flatten().map(steps).sum::<u64>();
        let mut local_ranks = vec![0u32; 2 * layout.nodes_per_cluster as usize];
        for &nd in &layout.node {
            local_ranks[nd as usize] += 1;
        }
        Mpi {
            layout,
            node,
            host,
            progs: Rc::new(progs),
            ranks: (0..n).map(|_| RankState::default()).collect(),
            pairs: PairMap::default(),
            pair_state: Vec::new(),
            posted: KeyedQueues::default(),
            unexpected: KeyedQueues::default(),
            msgs: Vec::new(),
            free_msgs: Vec::new(),
            round_bufs: Default::default(),
            local_ranks,
            marks: vec![Vec::new(); n],
            stats: MpiStats::default(),
            call_cost,
            smp_chunk_bytes: smp_chunk_bytes as u64,
            ch,
            failure: None,
            unfinished: n,
            steps_done: 0,
            steps_total,
        }
    }

    /// Rank `r` has played one more step of its program: an action, or a round of `Rounds`.
    #[inline(always)]
    fn step(&mut self, r: usize) -> &mut RankState {
        self.steps_done += 1;
        &mut self.ranks[r]
    }

    /// Occupy rank `r`'s CPU for `cost` from `t` (or when it is free); returns the end.
    pub fn cpu(&mut self, r: u32, t: Time, cost: Time) -> Time {
        let st = &mut self.ranks[r as usize];
        st.cpu_free = st.cpu_free.max(t) + cost;
        st.cpu_free
    }

    /// Rank `r` copies `bytes` in memory from `t` at a core's copy rate, or at its share of the
    /// node's memory bandwidth (a read and a write per byte; every rank of the node is assumed
    /// to copy at once, the case of bandwidth tests) if that is lower.
    pub fn copy(&mut self, r: u32, t: Time, bytes: u64) -> Time {
        let start = self.ranks[r as usize].cpu_free.max(t);
        let sharers = self.local_ranks[self.layout.node[r as usize] as usize].max(1) as f64;
        let rate = self.node.copy_MBps.min(self.node.mem_MBps / (2.0 * sharers)) * 1e6;
        let end = start + (bytes as f64 / rate * 1e12) as Time;
        self.ranks[r as usize].cpu_free = end;
        end
    }

    pub fn new_msg(&mut self, m: Msg) -> u32 {
        match self.free_msgs.pop() {
            Some(i) => {
                self.msgs[i as usize] = m;
                i
            }
            None => {
                self.msgs.push(m);
                (self.msgs.len() - 1) as u32
            }
        }
    }

    /// Start rank `r`'s program at `t`, or continue it after a wait.
    pub fn advance(&mut self, cx: &mut Cx<C>, r: u32, t: Time) {
        let ri = r as usize;
        let progs = Rc::clone(&self.progs);
        let len = progs.ranks[ri].len() as u64;
        let total = len * progs.repeat;
        self.ranks[ri].blocked = false;
        let mut t = t.max(self.ranks[ri].cpu_free);
        while self.ranks[ri].pc < total {
            let pc = self.ranks[ri].pc;
            let (iter, idx) = (pc / len, (pc % len) as usize);
            match &progs.ranks[ri][idx] {
                &Action::Compute(d) => t = self.cpu(r, t, d),
                &Action::Mark(label) => {
                    let at = t.max(self.ranks[ri].cpu_free);
                    let label = if iter < progs.warmup { WARMUP_MARK } else { label };
                    self.marks[ri].push((label, iter, at));
                }
                &Action::Local { bytes, .. } => t = self.copy(r, t, bytes),
                a @ (Action::Round { .. } | Action::Exchange { .. }) => {
                    let one;
                    let (sends, recvs) = match a {
                        Action::Round { sends, recvs } => (&sends[..], &recvs[..]),
                        &Action::Exchange { peer, bytes } => {
                            one = Xfer::plain(peer, bytes);
                            (std::slice::from_ref(&one), std::slice::from_ref(&one))
                        }
                        _ => unreachable!("a round or an exchange"),
                    };
                    self.ranks[ri].pending = (sends.len() + recvs.len()) as u32;
                    self.ranks[ri].round_done = t;
                    self.post_all(cx, r, t, (sends, recvs), false);
                    if self.ranks[ri].pending > 0 {
                        self.step(ri).pc += 1;
                        self.ranks[ri].blocked = true;
                        return;
                    }
                    t = t.max(self.ranks[ri].round_done);
                }
                Action::Rounds(pattern) => {
                    while self.ranks[ri].sub < pattern.rounds() {
                        // The round goes into buffers kept from round to round (no allocation).
                        let (mut sends, mut recvs) = std::mem::take(&mut self.round_bufs);
                        sends.clear();
                        recvs.clear();
                        pattern.fill(self.ranks[ri].sub, false, &mut sends, &mut recvs);
                        self.step(ri).sub += 1;
                        self.ranks[ri].pending = (sends.len() + recvs.len()) as u32;
                        self.ranks[ri].round_done = t;
                        self.post_all(cx, r, t, (&sends, &recvs), false);
                        self.round_bufs = (sends, recvs);
                        if self.ranks[ri].pending > 0 {
                            // As after a `Round`: resume with the next round, or the next action.
                            if self.ranks[ri].sub == pattern.rounds() {
                                self.ranks[ri].sub = 0;
                                self.step(ri).pc += 1;
                            }
                            self.ranks[ri].blocked = true;
                            return;
                        }
                        t = t.max(self.ranks[ri].round_done);
                    }
                    self.ranks[ri].sub = 0;
                }
                Action::Post { sends, recvs } => {
                    self.ranks[ri].detached += (sends.len() + recvs.len()) as u32;
                    self.post_all(cx, r, t, (sends, recvs), true);
                }
                Action::WaitAll => {
                    if self.ranks[ri].detached > 0 {
                        self.step(ri).pc += 1;
                        self.ranks[ri].blocked = true;
                        return;
                    }
                    t = t.max(self.ranks[ri].detached_done);
                }
            }
            self.step(ri).pc += 1;
        }
        if !self.ranks[ri].finished {
            self.ranks[ri].finished = true;
            self.unfinished -= 1;
        }
    }

    /// Rank `r` posts a round's receives, then its sends, from `t` (`detached`: nonblocking,
    /// waited for later by `WaitAll`).
    fn post_all(&mut self, cx: &mut Cx<C>, r: u32, t: Time, (sends, recvs): (&[Xfer], &[Xfer]), detached: bool) {
        for x in recvs {
            let at = self.cpu(r, t, self.call_cost);
            self.post_recv(cx, (x.peer, r), x.bytes, detached, at);
        }
        for x in sends {
            let at = self.cpu(r, t, self.call_cost);
            self.post_send(cx, (r, x.peer), x.bytes, detached, at);
        }
    }

    /// Rank `src` sends `bytes` to `dst`.
    fn post_send(&mut self, cx: &mut Cx<C>, (src, dst): (u32, u32), bytes: u64, detached: bool, t: Time) {
        let next = self.pair_state.len() as u32;
        let pair = *self.pairs.entry((src, dst)).or_insert(next);
        if pair == next {
            self.pair_state.push(PairState { send: 0, recv: 0, conn: NO_CONN });
        }
        let seq = self.pair_state[pair as usize].send;
        self.pair_state[pair as usize].send = seq.wrapping_add(1);
        self.stats.messages += 1;
        let proto = if self.layout.same_node(src, dst) { Proto::Shm } else { self.ch.proto(bytes) };
        let m = self.new_msg(Msg {
            src,
            dst,
            bytes,
            seq,
            pair,
            proto,
            send_detached: detached,
            recv_detached: None,
            recv_posted_at: 0,
            arrived_at: None,
            pending_parts: 0,
            data_at: 0,
            done: 0,
        });
        match proto {
            Proto::Shm => self.shm_send(cx, m, t),
            _ => C::send(self, cx, m, t),
        }
    }

    /// Rank `dst` posts a receive of `bytes` from `src`.
    fn post_recv(&mut self, cx: &mut Cx<C>, (src, dst): (u32, u32), bytes: u64, detached: bool, t: Time) {
        match self.unexpected.pop_front((src, dst)) {
            Some(m) => {
                let _ = bytes; // the sender's size rules (MPI allows a larger receive buffer)
                self.msgs[m as usize].recv_detached = Some(detached);
                self.msgs[m as usize].recv_posted_at = t;
                self.matched(cx, m, t);
            }
            None => self.posted.push_back((src, dst), (bytes, detached, t)),
        }
    }

    /// Message `m`'s envelope (eager data, RTS or shared-memory data) reached its receiver at `t`.
    pub fn arrived(&mut self, cx: &mut Cx<C>, m: u32, t: Time) {
        let (src, dst) = (self.msgs[m as usize].src, self.msgs[m as usize].dst);
        self.msgs[m as usize].arrived_at = Some(t);
        match self.posted.pop_front((src, dst)) {
            Some((_, detached, posted_at)) => {
                self.msgs[m as usize].recv_detached = Some(detached);
                self.msgs[m as usize].recv_posted_at = posted_at;
                self.matched(cx, m, t);
            }
            None => self.unexpected.push_back((src, dst), m),
        }
    }

    /// The receive and the message have met at `t`.
    fn matched(&mut self, cx: &mut Cx<C>, m: u32, t: Time) {
        match self.msgs[m as usize].proto {
            Proto::Shm => self.shm_matched(cx, m, t),
            _ => C::matched(self, cx, m, t),
        }
    }

    /// The send side of `m` is complete at `t`.
    pub fn complete_send(&mut self, cx: &mut Cx<C>, m: u32, t: Time) {
        let (src, det) = (self.msgs[m as usize].src, self.msgs[m as usize].send_detached);
        self.request_done(cx, src, det, t);
        self.finish_side(m);
    }

    /// The receive side of `m` is complete at `t`: the data is in the user's buffer.
    pub fn complete_recv(&mut self, cx: &mut Cx<C>, m: u32, t: Time) {
        let msg = &self.msgs[m as usize];
        let (dst, seq, det) = (msg.dst, msg.seq, msg.recv_detached.unwrap_or(false));
        let pair = &mut self.pair_state[msg.pair as usize];
        if seq != pair.recv {
            self.stats.order_violations += 1;
        }
        pair.recv = seq.wrapping_add(1);
        self.stats.delivered += 1;
        self.request_done(cx, dst, det, t);
        self.finish_side(m);
    }

    fn finish_side(&mut self, m: u32) {
        self.msgs[m as usize].done += 1;
        if self.msgs[m as usize].done == 2 {
            self.free_msgs.push(m);
        }
    }

    fn request_done(&mut self, cx: &mut Cx<C>, r: u32, detached: bool, t: Time) {
        let st = &mut self.ranks[r as usize];
        if detached {
            st.detached -= 1;
            st.detached_done = st.detached_done.max(t);
            let pc = st.pc.saturating_sub(1) as usize % self.progs.ranks[r as usize].len().max(1);
            let waiting_all = st.blocked && st.sub == 0 && matches!(self.progs.ranks[r as usize][pc], Action::WaitAll);
            if st.detached == 0 && waiting_all {
                cx.schedule(st.detached_done, Ev::Resume(r));
            }
        } else {
            st.pending -= 1;
            st.round_done = st.round_done.max(t);
            if st.pending == 0 && st.blocked {
                cx.schedule(st.round_done, Ev::Resume(r));
            }
        }
    }

    pub fn finished(&self) -> bool {
        self.unfinished == 0 || self.failure.is_some()
    }
}

impl<C: Channel> App<C::Net> for Mpi<C> {
    type Event = Ev<C::Event>;

    /// Every rank starts its program at time 0.
    fn start(&mut self, cx: &mut Cx<C>) {
        for r in 0..self.ranks.len() as u32 {
            self.advance(cx, r, 0);
        }
    }

    fn on_output(&mut self, out: <C::Net as Transport>::Output, cx: &mut Cx<C>) {
        C::on_output(self, cx, out);
    }

    fn on_event(&mut self, ev: Ev<C::Event>, cx: &mut Cx<C>) {
        let now = cx.now;
        match ev {
            Ev::Resume(r) => self.advance(cx, r, now),
            Ev::Shm(m) => self.shm_arrived(cx, m, now),
            Ev::Channel(x) => C::on_event(self, cx, x, now),
        }
    }

    fn done(&self) -> bool {
        self.finished()
    }

    fn progress(&self) -> Option<f64> {
        Some(if self.steps_total == 0 { 1.0 } else { self.steps_done as f64 / self.steps_total as f64 })
    }
}
