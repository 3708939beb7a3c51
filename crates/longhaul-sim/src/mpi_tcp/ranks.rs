//! The ranks: their programs (the OSU benchmarks lowered to [`Action`]s) and ob1's matching
//! and rendezvous state. Knows nothing of TCP: it writes [`Frame`]s to a peer and is told when
//! frames from a peer have arrived. The library's CPU time per frame is charged by
//! [`super::net`] on the host's core, which the rank shares with its kernel's TCP stack.
//!
//! Matching: messages between a pair of ranks match in posting order (MPI's non-overtaking
//! rule with one tag), and the connection delivers frames in order, so the k-th message from a
//! peer matches the k-th receive posted for it. A frame that arrives before its receive is
//! posted waits in the unexpected queue; an unexpected RTS is answered when the receive is
//! posted.

use std::collections::VecDeque;

use super::btl::{BtlParams, Frame, FrameKind};
use crate::engine::Time;
use crate::mpi::program::{Action, Programs};

#[derive(Default)]
struct Peer {
    /// Receives posted and not yet matched (sizes, bytes).
    posted: VecDeque<u64>,
    /// First frames (Eager/RTS) that arrived before their receive was posted.
    unexpected: VecDeque<Frame>,
    /// Matched rendezvous receives waiting for the rest, by message number.
    awaiting_rest: VecDeque<u64>,
    /// Our rendezvous sends waiting for the peer's ACK: (message, size).
    awaiting_ack: VecDeque<(u64, u64)>,
    /// Number of the next message we send to this peer, and the next we expect from it.
    next_send: u64,
    next_recv: u64,
}

struct Rank {
    pc: usize,
    cpu_free: Time,
    /// Requests of the current round (or posted and not waited for) not yet complete.
    outstanding: u64,
    blocked: bool,
    done: bool,
    peers: Vec<Peer>,
}

#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub messages: u64,
    pub eager: u64,
    pub rendezvous: u64,
    pub delivered: u64,
    /// Frames that arrived with another message number than the next expected one.
    pub order_violations: u64,
}

pub struct Ranks {
    progs: Programs,
    ranks: Vec<Rank>,
    btl: BtlParams,
    /// (label, iteration, time) marks per rank, as [`crate::mpi::osu::measure`] reads them.
    pub marks: Vec<Vec<(u32, u64, Time)>>,
    /// Frames to write: (time, from rank, to rank, frame).
    pub writes: Vec<(Time, u32, u32, Frame)>,
    /// Ranks to resume at a time (after a compute phase).
    pub resumes: Vec<(Time, u32)>,
    pub stats: Stats,
}

impl Ranks {
    pub fn new(progs: Programs, btl: BtlParams) -> Self {
        let n = progs.size();
        let ranks = (0..n)
            .map(|_| Rank {
                pc: 0,
                cpu_free: 0,
                outstanding: 0,
                blocked: false,
                done: false,
                peers: (0..n).map(|_| Peer::default()).collect(),
            })
            .collect();
        Ranks {
            progs,
            ranks,
            btl,
            marks: vec![Vec::new(); n],
            writes: Vec::new(),
            resumes: Vec::new(),
            stats: Stats::default(),
        }
    }

    pub fn size(&self) -> u32 {
        self.ranks.len() as u32
    }

    pub fn finished(&self) -> bool {
        self.ranks.iter().all(|r| r.done)
    }

    fn complete(&mut self, r: u32, at: Time) {
        let rk = &mut self.ranks[r as usize];
        rk.outstanding -= 1;
        if rk.outstanding == 0 && rk.blocked {
            rk.blocked = false;
            self.resumes.push((at.max(rk.cpu_free), r));
        }
    }

    /// Play rank `r`'s program from `now` until it must wait.
    pub fn advance(&mut self, r: u32, now: Time) {
        let ri = r as usize;
        let now = now.max(self.ranks[ri].cpu_free);
        while !self.ranks[ri].blocked {
            let pc = self.ranks[ri].pc;
            let Some(action) = self.progs.ranks[ri].get(pc).cloned() else {
                self.ranks[ri].done = true;
                return;
            };
            self.ranks[ri].pc += 1;
            let wait = matches!(action, Action::Round { .. });
            match action {
                Action::Mark(label) => self.marks[ri].push((label, 0, now.max(self.ranks[ri].cpu_free))),
                Action::Compute(t) => {
                    let rk = &mut self.ranks[ri];
                    rk.cpu_free = rk.cpu_free.max(now) + t;
                    self.resumes.push((rk.cpu_free, r));
                    return;
                }
                Action::Round { sends, recvs } | Action::Post { sends, recvs } => {
                    self.ranks[ri].outstanding += (sends.len() + recvs.len()) as u64;
                    for x in &recvs {
                        self.post_recv(r, x.peer, x.bytes, now);
                    }
                    for x in &sends {
                        self.post_send(r, x.peer, x.bytes, now);
                    }
                    if wait && self.ranks[ri].outstanding > 0 {
                        self.ranks[ri].blocked = true;
                    }
                }
                Action::WaitAll => self.ranks[ri].blocked = self.ranks[ri].outstanding > 0,
                // Local copies and patterned rounds only occur in the verbs channel's
                // collectives, which this transport does not run.
                Action::Local { .. } | Action::Rounds(_) => {}
            }
        }
    }

    fn post_send(&mut self, r: u32, peer: u32, size: u64, now: Time) {
        let at = now.max(self.ranks[r as usize].cpu_free);
        let p = &mut self.ranks[r as usize].peers[peer as usize];
        let msg = p.next_send;
        p.next_send += 1;
        let frame = self.btl.first_frame(msg, size);
        self.stats.messages += 1;
        self.writes.push((at, r, peer, frame));
        if frame.kind == FrameKind::Eager {
            // The payload is copied into the BTL's fragment: the send buffer is free at once.
            self.stats.eager += 1;
            self.complete(r, at);
        } else {
            self.stats.rendezvous += 1;
            self.ranks[r as usize].peers[peer as usize].awaiting_ack.push_back((msg, size));
        }
    }

    fn post_recv(&mut self, r: u32, peer: u32, size: u64, now: Time) {
        let p = &mut self.ranks[r as usize].peers[peer as usize];
        match p.unexpected.pop_front() {
            Some(f) => self.matched(r, peer, f, now),
            None => p.posted.push_back(size),
        }
    }

    /// A first frame met its receive at `now`.
    fn matched(&mut self, r: u32, peer: u32, f: Frame, now: Time) {
        if f.kind == FrameKind::Eager {
            let at = now.max(self.ranks[r as usize].cpu_free);
            self.stats.delivered += 1;
            self.complete(r, at);
        } else {
            let at = now.max(self.ranks[r as usize].cpu_free);
            self.ranks[r as usize].peers[peer as usize].awaiting_rest.push_back(f.msg);
            self.writes.push((at, r, peer, self.btl.ack_frame(f.msg)));
        }
    }

    /// Frames from `peer` reached rank `r`'s application at `now`, in order.
    pub fn on_frames(&mut self, r: u32, peer: u32, frames: &[Frame], now: Time) {
        for &f in frames {
            match f.kind {
                FrameKind::Eager | FrameKind::Rts => {
                    let p = &mut self.ranks[r as usize].peers[peer as usize];
                    if f.msg != p.next_recv {
                        self.stats.order_violations += 1;
                    }
                    p.next_recv = f.msg + 1;
                    if p.posted.pop_front().is_some() {
                        self.matched(r, peer, f, now);
                    } else {
                        p.unexpected.push_back(f);
                    }
                }
                FrameKind::Ack => {
                    let p = &mut self.ranks[r as usize].peers[peer as usize];
                    let (msg, size) = p.awaiting_ack.pop_front().expect("an ACK answers a rendezvous send");
                    debug_assert_eq!(msg, f.msg);
                    let at = now.max(self.ranks[r as usize].cpu_free);
                    self.writes.push((at, r, peer, self.btl.rest_frame(msg, size)));
                    self.complete(r, at);
                }
                FrameKind::Rest => {
                    let p = &mut self.ranks[r as usize].peers[peer as usize];
                    let msg = p.awaiting_rest.pop_front().expect("the rest follows a matched RTS");
                    if msg != f.msg {
                        self.stats.order_violations += 1;
                    }
                    let at = now.max(self.ranks[r as usize].cpu_free);
                    self.stats.delivered += 1;
                    self.complete(r, at);
                }
            }
        }
    }
}
