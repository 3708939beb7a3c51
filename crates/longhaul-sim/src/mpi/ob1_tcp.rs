//! Open MPI 4.1's ob1 PML over the TCP BTL as a [`Channel`]: the frames a message becomes
//! ([`super::btl_tcp`]) on the rank pair's TCP connection of the one TCP host layer
//! ([`TcpHosts`]: sender, receiver, the host stack's costs, congestion control).
//!
//! Each pair of ranks on different hosts that talks has one connection (as the TCP BTL opens
//! with `btl_tcp_links` = 1), opened on the pair's first frame, as the BTL does: a send on an
//! endpoint in state CLOSED queues the fragment and starts the connection
//! (`mca_btl_tcp_endpoint_send` -> `mca_btl_tcp_endpoint_start_connect`,
//! opal/mca/btl/tcp/btl_tcp_endpoint.c, Open MPI 4.1 and main). Opening costs:
//! - TCP's three-way handshake (the SYN and SYN-ACK of the TCP model, with their loss and
//!   retransmission): the connecting side's first bytes follow the SYN-ACK;
//! - the BTL's connect ACK exchange: the connecting side writes its connect ACK
//!   (`mca_btl_tcp_endpoint_send_connect_ack`: process name and magic string); the accepting
//!   side, on reading it, writes its own and is connected (`mca_btl_tcp_endpoint_accept`); the
//!   connecting side is connected once it has read the answer (`recv_connect_ack` in state
//!   CONNECT_ACK). Frames either side writes before it is connected wait in order
//!   (`endpoint_frags`) and follow its connect ACK.
//!
//! So a pair's first message pays about two round trips more; OSU's warm-up iterations take
//! that before the timed ones. Pairs that never talk keep nothing, so the state grows with the
//! pairs that talk, not with the square of the ranks. Simplification: both ranks of a pair
//! starting to connect at the same instant (which Open MPI resolves by comparing process names
//! and closing one socket) is one connection, opened by whichever frame comes first.
//!
//! - Eager: the payload is copied into the BTL's fragment, so the send completes when the frame
//!   is written; the receive completes when it has arrived and met its receive.
//! - Rendezvous: the RTS (with the first payload bytes) goes first; the receiver answers with an
//!   ACK once the receive is posted and matched; the sender then writes the rest and its send
//!   completes; the receive completes when the rest has arrived.
//!
//! The library's CPU time per frame is charged by the host layer (`per_msg_ns`, on the core
//! the rank shares with its kernel's TCP stack), so the PML's per-call cost is 0 here.

use super::btl_tcp::{BtlParams, Frame, FrameKind};
use super::engine::{Channel, Ev, Mpi, PairMap, Proto};
use crate::engine::Time;
use crate::tcp::cc::CcName;
use crate::tcp::hosts::{TcpHosts, TcpOutput};
use crate::tcp::params::TcpParams;
use crate::tcp::stream;

/// The TCP channel's state: Open MPI's TCP BTL limits and the connections of the rank pairs
/// that have talked.
pub struct Ob1Tcp {
    pub btl: BtlParams,
    tcp: TcpParams,
    cc: CcName,
    /// The connection of each pair of ranks that has written a frame, by (lower, higher rank).
    conns: PairMap<Conn>,
    /// (sending rank, receiving rank) of each direction.
    ends: Vec<(u32, u32)>,
    /// Frames taken off a direction (kept to reuse the buffer).
    frames: Vec<stream::Frame>,
}

/// One pair's connection: its direction from the rank that opened it (the next is the
/// reverse), and the frames each side wrote before it was connected.
struct Conn {
    opener: u32,
    forward: u32,
    /// Connected: the opener (it read the accepting side's connect ACK), the acceptor (it read
    /// the opener's).
    ready: [bool; 2],
    /// Frames written while their side was not connected: (writing rank, frame), in order.
    waiting: Vec<(u32, Frame)>,
}

impl Conn {
    /// The direction rank `from` writes to, and whether `from` is connected.
    fn side(&self, from: u32) -> (u32, bool) {
        if from == self.opener {
            (self.forward, self.ready[0])
        } else {
            (self.forward + 1, self.ready[1])
        }
    }
}

/// The TCP channel's events.
#[derive(Debug, Clone, Copy)]
pub enum TcpEv {
    /// In-order bytes of a direction reached its receiving rank.
    Ready(u32, u64),
    /// Rank `from` writes a frame to rank `to` (at its CPU's time, which may be ahead of the
    /// event being handled).
    Write { from: u32, to: u32, frame: Frame },
}

type Cx<'a> = super::engine::Cx<'a, Ob1Tcp>;

const KINDS: [FrameKind; 5] =
    [FrameKind::Eager, FrameKind::Rts, FrameKind::Ack, FrameKind::Rest, FrameKind::ConnectAck];

/// Bits of a stream frame's tag below its kind (the message number).
const MSG_BITS: u32 = 61;

/// A protocol frame as the stream carries it: its kind in the tag's top bits, its message below.
fn to_stream(f: Frame) -> stream::Frame {
    let kind = KINDS.iter().position(|&k| k == f.kind).expect("a kind") as u64;
    stream::Frame { tag: kind << MSG_BITS | f.msg, bytes: f.bytes }
}

fn from_stream(f: stream::Frame) -> Frame {
    Frame { kind: KINDS[(f.tag >> MSG_BITS) as usize], msg: f.tag & ((1 << MSG_BITS) - 1), bytes: f.bytes }
}

fn pair_key(a: u32, b: u32) -> (u32, u32) {
    (a.min(b), a.max(b))
}

impl Ob1Tcp {
    /// No connection yet: each opens on its pair's first frame, with TCP parameters `tcp` and
    /// congestion control `cc`.
    pub fn new(tcp: TcpParams, cc: CcName, btl: BtlParams) -> Self {
        Ob1Tcp { btl, tcp, cc, conns: PairMap::default(), ends: Vec::new(), frames: Vec::new() }
    }

    /// Rank `from` writes `f` to rank `to` at `t`.
    fn write(&self, cx: &mut Cx, (from, to): (u32, u32), f: Frame, t: Time) {
        cx.schedule(t, Ev::Channel(TcpEv::Write { from, to, frame: f }));
    }
}

/// Rank `from`'s frame `f` to `to` reaches its socket at `now`: written to the connection if
/// `from` is connected; else it waits, and the pair's first frame opens the connection.
fn write_now(mpi: &mut Mpi<Ob1Tcp>, cx: &mut Cx, (from, to): (u32, u32), f: Frame, now: Time) {
    let ch = &mut mpi.ch;
    let conn = match ch.conns.get_mut(&pair_key(from, to)) {
        Some(c) => c,
        None => {
            let (a, b) = (mpi.host[from as usize], mpi.host[to as usize]);
            let (forward, reverse) = cx.net.connect(a, b, &ch.tcp, ch.cc, false, false);
            debug_assert_eq!(forward as usize, ch.ends.len());
            ch.ends.extend([(from, to), (to, from)]);
            mpi.stats.connections += 1;
            debug_assert_eq!(reverse, forward + 1);
            // The connect ACK waits in the socket behind the handshake.
            cx.net.write(now, forward, to_stream(ch.btl.connect_ack_frame()));
            cx.kick(a);
            let c = Conn { opener: from, forward, ready: [false; 2], waiting: Vec::new() };
            ch.conns.entry(pair_key(from, to)).or_insert(c)
        }
    };
    match conn.side(from) {
        (d, true) => {
            cx.net.write(now, d, to_stream(f));
            cx.kick(mpi.host[from as usize]);
        }
        (_, false) => conn.waiting.push((from, f)),
    }
}

/// Rank `r` has read its peer's connect ACK on the connection of pair `key` at `now`: it is
/// connected; once its CPU is free the acceptor answers with its own connect ACK, and `r`
/// writes what waited, in order.
fn connected(mpi: &mut Mpi<Ob1Tcp>, cx: &mut Cx, r: u32, key: (u32, u32), now: Time) {
    let at = when(mpi, r, now);
    let peer = if r == key.0 { key.1 } else { key.0 };
    let conn = mpi.ch.conns.get_mut(&key).expect("a connection that carried a connect ACK");
    let accepts = r != conn.opener;
    conn.ready[usize::from(accepts)] = true;
    let (mine, others): (Vec<_>, Vec<_>) = std::mem::take(&mut conn.waiting).into_iter().partition(|w| w.0 == r);
    conn.waiting = others;
    if accepts {
        mpi.ch.write(cx, (r, peer), mpi.ch.btl.connect_ack_frame(), at);
    }
    for (_, f) in mine {
        mpi.ch.write(cx, (r, peer), f, at);
    }
}

/// Rank `r`'s CPU time: no earlier than `t`, nor than the end of what it is computing.
fn when(mpi: &Mpi<Ob1Tcp>, r: u32, t: Time) -> Time {
    t.max(mpi.ranks[r as usize].cpu_free)
}

impl Channel for Ob1Tcp {
    type Net = TcpHosts;
    type Event = TcpEv;

    /// Eager, or ob1's rendezvous (on TCP the BTL's emulated PUT: the data pushed by the sender).
    fn proto(&self, bytes: u64) -> Proto {
        if self.btl.is_eager(bytes) {
            Proto::Eager
        } else {
            Proto::Rput
        }
    }

    fn send(mpi: &mut Mpi<Ob1Tcp>, cx: &mut Cx, m: u32, t: Time) {
        let msg = &mpi.msgs[m as usize];
        let (src, dst, proto) = (msg.src, msg.dst, msg.proto);
        let frame = mpi.ch.btl.first_frame(m as u64, msg.bytes);
        mpi.ch.write(cx, (src, dst), frame, t);
        if proto == Proto::Eager {
            mpi.stats.eager += 1;
            mpi.complete_send(cx, m, t);
        } else {
            mpi.stats.rendezvous += 1;
        }
    }

    fn matched(mpi: &mut Mpi<Ob1Tcp>, cx: &mut Cx, m: u32, t: Time) {
        let msg = &mpi.msgs[m as usize];
        let (src, dst, proto) = (msg.src, msg.dst, msg.proto);
        let at = when(mpi, dst, t);
        if proto == Proto::Eager {
            mpi.complete_recv(cx, m, at);
        } else {
            let ack = mpi.ch.btl.ack_frame(m as u64);
            mpi.ch.write(cx, (dst, src), ack, at);
        }
    }

    fn on_output(_: &mut Mpi<Ob1Tcp>, cx: &mut Cx, out: TcpOutput) {
        if let TcpOutput::Ready { dir, delivered, at } = out {
            cx.schedule(at, Ev::Channel(TcpEv::Ready(dir, delivered)));
        }
    }

    fn on_event(mpi: &mut Mpi<Ob1Tcp>, cx: &mut Cx, ev: TcpEv, now: Time) {
        match ev {
            TcpEv::Write { from, to, frame } => write_now(mpi, cx, (from, to), frame, now),
            TcpEv::Ready(d, bytes) => {
                let mut frames = std::mem::take(&mut mpi.ch.frames);
                cx.net.take_frames(d, bytes, &mut frames);
                // Frames of a -> b: envelopes and the rest of a's messages, ACKs of b's.
                let (a, b) = mpi.ch.ends[d as usize];
                for f in frames.drain(..).map(from_stream) {
                    let m = f.msg as u32;
                    match f.kind {
                        FrameKind::Eager | FrameKind::Rts => mpi.arrived(cx, m, now),
                        FrameKind::Ack => {
                            let at = when(mpi, b, now);
                            let rest = mpi.ch.btl.rest_frame(f.msg, mpi.msgs[m as usize].bytes);
                            mpi.ch.write(cx, (b, a), rest, at);
                            mpi.complete_send(cx, m, at);
                        }
                        FrameKind::Rest => {
                            let at = when(mpi, b, now);
                            mpi.complete_recv(cx, m, at);
                        }
                        FrameKind::ConnectAck => connected(mpi, cx, b, pair_key(a, b), now),
                    }
                }
                mpi.ch.frames = frames;
            }
        }
    }
}
