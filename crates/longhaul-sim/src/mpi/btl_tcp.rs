//! Open MPI 4.1's ob1 PML over the TCP BTL: the frames one MPI message becomes on the rank
//! pair's TCP connection.
//!
//! - Eager: a message whose payload plus the ob1 match header fits in `btl_tcp_eager_limit`
//!   travels as one frame; the receive completes when the frame has arrived.
//! - Rendezvous: a larger message first sends a request-to-send (RTS) frame carrying the
//!   rendezvous header and the first `btl_tcp_rndv_eager_limit - header` payload bytes. Once
//!   the receiver has matched it to a posted receive it answers with an ACK frame; the sender
//!   then writes the rest in fragments of `btl_tcp_max_send_size` (header included). The
//!   receive completes when the last fragment has arrived.
//!
//! Simplification: for messages above `btl_tcp_min_rdma_pipeline_size` ob1 moves the part
//! beyond `btl_tcp_rdma_pipeline_send_length` with the BTL's emulated PUT instead of send
//! fragments; on TCP both are bytes on the same connection after the ACK (the PUT request
//! travels with the ACK), so only a few dozen header bytes per message differ.
//!
//! Sources: defaults from `ompi_info --param btl tcp --level 9` of Open MPI 4.1.4 (Debian
//! `openmpi-bin`): btl_tcp_eager_limit = 65536 ("including header"), btl_tcp_rndv_eager_limit =
//! 65536 ("Size (in bytes, including header) of phase 1 fragment sent for all large messages"),
//! btl_tcp_max_send_size = 131072, btl_tcp_flags = send,put,inplace,need-ack,...; header layouts
//! from ompi/mca/pml/ob1/pml_ob1_hdr.h and opal/mca/btl/tcp/btl_tcp_hdr.h (x86-64 sizes below).
//! The connections' socket buffers are the kernel's auto-tuned ones (the TCP model's default
//! window): btl_tcp_sndbuf = btl_tcp_rcvbuf = 0, "do not set", since 2017 (open-mpi/ompi pull
//! request 3421 on master, cherry-picked to the 2.x and 3.0 branches); before, 128 KiB fixed,
//! which turns Linux's auto-tuning off and holds a rank pair to 128 KiB a round trip across a
//! long link.

use serde::Serialize;

/// ob1 match header (common type/flags, context, source, tag, sequence; padded).
pub const MATCH_HDR_BYTES: u64 = 16;
/// ob1 rendezvous header: the match header, message length and the sender's request pointer.
pub const RNDV_HDR_BYTES: u64 = 32;
/// ob1 ACK header: common header, both request pointers, the offset and size to send.
pub const ACK_HDR_BYTES: u64 = 40;
/// ob1 fragment header: common header, offset into the message, both request pointers.
pub const FRAG_HDR_BYTES: u64 = 32;
/// TCP BTL header in front of every fragment (tag, type, segment count, size).
pub const BTL_HDR_BYTES: u64 = 8;
/// The TCP BTL's connect ACK, each side's first bytes on a new connection: the process name
/// (8 bytes) and the 16-byte magic string "OPAL-TCP-BTL" (`mca_btl_tcp_endpoint_hs_msg_t`,
/// opal/mca/btl/tcp/btl_tcp_endpoint.h, MCA_BTL_TCP_MAGIC_STRING_LENGTH = 16).
pub const CONNECT_ACK_BYTES: u64 = 24;

/// The protocol's parameters (Open MPI 4.1 defaults, see the module docs).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BtlParams {
    /// btl_tcp_eager_limit: the largest eager fragment, ob1 match header included (65536).
    pub eager_limit_bytes: u64,
    /// btl_tcp_rndv_eager_limit: the RTS fragment of a large message, header included (65536).
    pub rndv_eager_limit_bytes: u64,
    /// btl_tcp_max_send_size: each later fragment of a large message, header included (131072).
    pub max_send_size_bytes: u64,
    /// CPU time of the MPI library (and any language binding, and the socket system call) per
    /// protocol frame, on the host core that also runs the connection's TCP stack (a rank and
    /// its kernel share a CPU): charged when a frame is written and when one is received. No
    /// published default: a property of the host and the binding; calibrate it at 0 delay.
    pub per_msg_ns: f64,
}

impl Default for BtlParams {
    fn default() -> Self {
        BtlParams {
            eager_limit_bytes: 65_536,
            rndv_eager_limit_bytes: 65_536,
            max_send_size_bytes: 131_072,
            per_msg_ns: 0.0,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
    Eager,
    Rts,
    Ack,
    Rest,
    /// The BTL's connect ACK (no message: `msg` is 0).
    ConnectAck,
}

/// One protocol unit written to the connection: `msg` numbers the messages of its direction
/// (for Ack frames: the message of the opposite direction it answers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    pub kind: FrameKind,
    pub msg: u64,
    pub bytes: u64,
}

impl BtlParams {
    pub fn is_eager(&self, size: u64) -> bool {
        size + MATCH_HDR_BYTES <= self.eager_limit_bytes
    }

    /// Payload bytes the RTS carries.
    fn rts_payload(&self, size: u64) -> u64 {
        size.min(self.rndv_eager_limit_bytes.saturating_sub(RNDV_HDR_BYTES))
    }

    /// The first frame of a message of `size` payload bytes.
    pub fn first_frame(&self, msg: u64, size: u64) -> Frame {
        if self.is_eager(size) {
            Frame { kind: FrameKind::Eager, msg, bytes: size + MATCH_HDR_BYTES + BTL_HDR_BYTES }
        } else {
            Frame { kind: FrameKind::Rts, msg, bytes: self.rts_payload(size) + RNDV_HDR_BYTES + BTL_HDR_BYTES }
        }
    }

    /// The connect ACK each side writes first on a new connection (see [`CONNECT_ACK_BYTES`]).
    pub fn connect_ack_frame(&self) -> Frame {
        Frame { kind: FrameKind::ConnectAck, msg: 0, bytes: CONNECT_ACK_BYTES }
    }

    pub fn ack_frame(&self, msg: u64) -> Frame {
        Frame { kind: FrameKind::Ack, msg, bytes: ACK_HDR_BYTES + BTL_HDR_BYTES }
    }

    /// Everything after the ACK, as one frame: the remaining payload in fragments of
    /// `max_send_size`, each with its fragment and BTL headers (at least one fragment).
    pub fn rest_frame(&self, msg: u64, size: u64) -> Frame {
        let rest = size - self.rts_payload(size);
        let per_frag = self.max_send_size_bytes - FRAG_HDR_BYTES - BTL_HDR_BYTES;
        let frags = rest.div_ceil(per_frag).max(1);
        Frame { kind: FrameKind::Rest, msg, bytes: rest + frags * (FRAG_HDR_BYTES + BTL_HDR_BYTES) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_64_kib_message_is_rendezvous_because_the_limit_includes_the_header() {
        let p = BtlParams::default();
        assert!(p.is_eager(65_536 - MATCH_HDR_BYTES));
        assert!(!p.is_eager(65_536));
        let rts = p.first_frame(0, 65_536);
        assert_eq!((rts.kind, rts.bytes), (FrameKind::Rts, 65_536 + BTL_HDR_BYTES));
        // 32 payload bytes remain for the one fragment after the ACK.
        assert_eq!(p.rest_frame(0, 65_536).bytes, 32 + FRAG_HDR_BYTES + BTL_HDR_BYTES);
    }

    #[test]
    fn every_payload_byte_travels_once() {
        let p = BtlParams::default();
        for size in [1u64, 1000, 65_520, 65_521, 1 << 20, 4 << 20, 10_000_001] {
            let first = p.first_frame(0, size);
            let payload = if first.kind == FrameKind::Eager {
                first.bytes - MATCH_HDR_BYTES - BTL_HDR_BYTES
            } else {
                let rest = p.rest_frame(0, size);
                let per_frag = p.max_send_size_bytes - FRAG_HDR_BYTES - BTL_HDR_BYTES;
                let frags = (size - (first.bytes - RNDV_HDR_BYTES - BTL_HDR_BYTES)).div_ceil(per_frag).max(1);
                first.bytes - RNDV_HDR_BYTES - BTL_HDR_BYTES + rest.bytes - frags * (FRAG_HDR_BYTES + BTL_HDR_BYTES)
            };
            assert_eq!(payload, size, "size {size}");
        }
    }
}
