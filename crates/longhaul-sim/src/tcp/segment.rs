//! The packet TCP puts on the fabric: a data segment, an acknowledgement, or a cross-traffic
//! datagram. No payload bytes are stored; `wire` says what the packet costs on the link.
//!
//! Sequence space: data is counted in whole segments of one MSS (see the module docs), so `seg`
//! is a segment number and SACK blocks are half-open segment ranges.

use super::receiver::AckContent;
use crate::net::{NodeId, Routable};

/// SACK blocks one ACK can carry: 3 when timestamps are on (40 option bytes: 10 for the
/// timestamp option, 2 + 8 per block; RFC 2018 section 3, RFC 7323).
pub const MAX_SACK_BLOCKS: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A data segment (or, over IPoIB connected mode, one IB fragment of it).
    Data,
    /// A cumulative acknowledgement with SACK blocks and the receive window.
    Ack,
    /// The connection's opening SYN, and the receiver's SYN-ACK (the third segment of the
    /// handshake travels with the first data).
    Syn,
    SynAck,
    /// A cross-traffic UDP datagram (counted at its destination, never acknowledged).
    Cross,
    /// An application's datagram (an NFS call over UDP-like RPC): `conn` carries its tag.
    Datagram,
}

#[derive(Debug, Clone, Copy)]
pub struct TcpPacket {
    pub dst: NodeId,
    /// Connection index (cross traffic: its source index); also the flow for path choice.
    pub conn: u32,
    pub kind: Kind,
    /// Data: segment number. Ack: the next segment expected (cumulative ACK).
    pub seg: u64,
    /// Ack: SACK blocks, most recent first, each as (start - `seg`, end - start) in segments
    /// (they lie above the cumulative ACK, within a window of under 2^32 segments; offsets keep
    /// the packet, copied at every hop, small); `n_sack` are valid.
    sack: [(u32, u32); MAX_SACK_BLOCKS],
    pub n_sack: u8,
    /// Ack, SYN-ACK: the receive window the receiver offers, in segments past `seg` (a window of
    /// at most 2^32 bytes).
    rwnd: u32,
    /// IPoIB connected mode: this fragment's index and the fragment count of its datagram.
    pub frag: u16,
    pub frags: u16,
    /// Bytes this packet occupies on the link (headers included, framing excluded).
    pub wire: u32,
}

impl TcpPacket {
    pub fn data(dst: NodeId, conn: u32, seg: u64, wire: u32) -> Self {
        TcpPacket {
            dst,
            conn,
            kind: Kind::Data,
            seg,
            sack: [(0, 0); MAX_SACK_BLOCKS],
            n_sack: 0,
            rwnd: 0,
            frag: 0,
            frags: 1,
            wire,
        }
    }

    /// The acknowledgement `a` of connection `conn`, to `dst`, `wire` bytes on the link.
    pub fn ack(dst: NodeId, conn: u32, a: &AckContent, wire: u32) -> Self {
        let mut sack = [(0, 0); MAX_SACK_BLOCKS];
        for (packed, &(start, end)) in sack.iter_mut().zip(&a.sack[..a.n_sack]) {
            *packed = ((start - a.ack) as u32, (end - start) as u32);
        }
        let rwnd = a.rwnd_segs.min(u32::MAX as u64) as u32;
        TcpPacket { kind: Kind::Ack, sack, n_sack: a.n_sack as u8, rwnd, ..Self::data(dst, conn, a.ack, wire) }
    }

    /// A SYN-ACK offering `rwnd_segs`.
    pub fn syn_ack(dst: NodeId, conn: u32, rwnd_segs: u64, wire: u32) -> Self {
        TcpPacket { kind: Kind::SynAck, rwnd: rwnd_segs.min(u32::MAX as u64) as u32, ..Self::data(dst, conn, 0, wire) }
    }

    /// The SACK blocks [start, end) in segments: the first `n` of the array.
    pub fn sack_blocks(&self) -> ([(u64, u64); MAX_SACK_BLOCKS], usize) {
        let mut out = [(0, 0); MAX_SACK_BLOCKS];
        for (block, &(offset, len)) in out.iter_mut().zip(&self.sack).take(self.n_sack as usize) {
            let start = self.seg + offset as u64;
            *block = (start, start + len as u64);
        }
        (out, self.n_sack as usize)
    }

    pub fn rwnd_segs(&self) -> u64 {
        self.rwnd as u64
    }
}

impl Routable for TcpPacket {
    #[inline]
    fn dst(&self) -> NodeId {
        self.dst
    }
    #[inline]
    fn wire_bytes(&self) -> u32 {
        self.wire
    }
    #[inline]
    fn flow(&self) -> u32 {
        self.conn
    }
}
