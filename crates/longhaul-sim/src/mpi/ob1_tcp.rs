//! Open MPI 4.1's ob1 PML over the TCP BTL as a [`Channel`]: the frames a message becomes
//! ([`super::btl_tcp`]) on the rank pair's TCP connection of the one TCP host layer
//! ([`TcpHosts`]: sender, receiver, the host stack's costs, congestion control).
//!
//! Each pair of ranks on different hosts has one connection (as the TCP BTL opens with
//! `btl_tcp_links` = 1), opened before the programs start (the library connects during start-up;
//! the measured traffic never waits for a handshake). The connection delivers frames in order.
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
use super::placement::Layout;
use crate::engine::Time;
use crate::net::NodeId;
use crate::tcp::cc::CcName;
use crate::tcp::hosts::{TcpHosts, TcpOutput};
use crate::tcp::params::TcpParams;
use crate::tcp::stream;

/// The TCP channel's state: Open MPI's TCP BTL limits and the rank pairs' connections.
pub struct Ob1Tcp {
    pub btl: BtlParams,
    /// The direction carrying rank a's frames to rank b, by (a, b).
    dir: PairMap<u32>,
    /// (sending rank, receiving rank) of each direction.
    ends: Vec<(u32, u32)>,
    /// Frames taken off a direction (kept to reuse the buffer).
    frames: Vec<stream::Frame>,
}

/// The TCP channel's events.
#[derive(Debug, Clone, Copy)]
pub enum TcpEv {
    /// In-order bytes of a direction reached its receiving rank.
    Ready(u32, u64),
    /// A rank writes a frame to a direction (at its CPU's time, which may be ahead of the
    /// event being handled).
    Write(u32, Frame),
}

type Cx<'a> = super::engine::Cx<'a, Ob1Tcp>;

const KINDS: [FrameKind; 4] = [FrameKind::Eager, FrameKind::Rts, FrameKind::Ack, FrameKind::Rest];

/// A protocol frame as the stream carries it: its kind in the tag's top bits, its message below.
fn to_stream(f: Frame) -> stream::Frame {
    let kind = KINDS.iter().position(|&k| k == f.kind).expect("a kind") as u64;
    stream::Frame { tag: kind << 62 | f.msg, bytes: f.bytes }
}

fn from_stream(f: stream::Frame) -> Frame {
    Frame { kind: KINDS[(f.tag >> 62) as usize], msg: f.tag & ((1 << 62) - 1), bytes: f.bytes }
}

impl Ob1Tcp {
    /// Connect every pair of ranks of `layout` on different hosts (`host`: each rank's), in
    /// rank order, with TCP parameters `p` and congestion control `cc`.
    pub fn connect(
        net: &mut TcpHosts,
        host: &[NodeId],
        layout: &Layout,
        p: &TcpParams,
        cc: CcName,
        btl: BtlParams,
    ) -> Self {
        let n = layout.ranks();
        let mut dir = PairMap::default();
        let mut ends = Vec::new();
        for a in 0..n {
            for b in a + 1..n {
                if layout.same_node(a, b) {
                    continue; // shared memory
                }
                let (ab, ba) = net.connect(host[a as usize], host[b as usize], p, cc, true, false);
                dir.insert((a, b), ab);
                dir.insert((b, a), ba);
                ends.extend([(a, b), (b, a)]);
            }
        }
        Ob1Tcp { btl, dir, ends, frames: Vec::new() }
    }

    /// Rank `from` writes `f` to rank `to` at `t`.
    fn write(&self, cx: &mut Cx, (from, to): (u32, u32), f: Frame, t: Time) {
        cx.schedule(t, Ev::Channel(TcpEv::Write(self.dir[&(from, to)], f)));
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
            TcpEv::Write(d, f) => {
                cx.net.write(now, d, to_stream(f));
                let src = cx.net.dirs[d as usize].src;
                cx.kick(src);
            }
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
                    }
                }
                mpi.ch.frames = frames;
            }
        }
    }
}
