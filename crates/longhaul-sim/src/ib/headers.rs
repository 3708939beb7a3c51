//! InfiniBand packet headers and their sizes on the wire, so verbs see less than line rate.
//!
//! Source: InfiniBand Architecture Specification vol. 1, chapter 9 (transport headers):
//! LRH 8 B, BTH 12 B, RETH 16 B, AETH 4 B, DETH 8 B, ICRC 4 B, VCRC 2 B; payloads are padded to
//! a multiple of 4 bytes (BTH pad count). A GRH (40 B) is only present on routed packets.

pub const LRH: u32 = 8;
pub const BTH: u32 = 12;
pub const RETH: u32 = 16;
pub const AETH: u32 = 4;
pub const DETH: u32 = 8;
pub const ICRC: u32 = 4;
pub const VCRC: u32 = 2;

/// Bytes every IB packet carries besides its transport extension headers and payload.
pub const BASE: u32 = LRH + BTH + ICRC + VCRC;

pub fn padded(payload: u32) -> u32 {
    payload.div_ceil(4) * 4
}

/// The packet kinds the transports exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Send or RDMA-write data (UD, UC, RC).
    Data,
    /// RC acknowledgement (cumulative up to `psn`).
    Ack,
    /// RC negative acknowledgement: PSN sequence error, resend from `psn`.
    Nak,
    /// RDMA read request for `len` bytes starting at response PSN `psn`.
    ReadReq,
    /// RDMA read response data.
    ReadResp,
    /// Not IB: another network's datagram sharing the fabric (cross traffic on a WAN switch),
    /// never handed to an adapter.
    Datagram,
}

/// Verbs operation of a work request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Send,
    Write,
    Read,
}

/// Wire size of a data packet of `payload` bytes.
pub fn data_packet_bytes(ud: bool, op: Op, first: bool, payload: u32) -> u32 {
    let ext = if ud {
        DETH
    } else if op == Op::Write && first {
        RETH
    } else {
        0
    };
    BASE + ext + padded(payload)
}

pub fn read_request_bytes() -> u32 {
    BASE + RETH
}

/// Read responses carry an AETH on the first and last packet (and on a single-packet response).
pub fn read_response_bytes(first: bool, last: bool, payload: u32) -> u32 {
    BASE + if first || last { AETH } else { 0 } + padded(payload)
}

pub fn ack_bytes() -> u32 {
    BASE + AETH
}

/// 24-bit packet sequence numbers.
pub const PSN_MASK: u32 = 0x00FF_FFFF;

/// Signed distance a - b between two 24-bit PSNs (valid when |a - b| < 2^23).
pub fn psn_diff(a: u32, b: u32) -> i32 {
    ((a.wrapping_sub(b) << 8) as i32) >> 8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psn_arithmetic_wraps_at_24_bits() {
        assert_eq!(psn_diff(5, 3), 2);
        assert_eq!(psn_diff(1, PSN_MASK), 2);
        assert_eq!(psn_diff(PSN_MASK, 1), -2);
    }

    #[test]
    fn header_sizes() {
        assert_eq!(data_packet_bytes(false, Op::Send, true, 2048), 26 + 2048);
        assert_eq!(data_packet_bytes(false, Op::Write, true, 2048), 42 + 2048);
        assert_eq!(data_packet_bytes(true, Op::Send, true, 1), 34 + 4);
        assert_eq!(ack_bytes(), 30);
    }
}
