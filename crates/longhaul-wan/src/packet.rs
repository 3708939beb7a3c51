//! What the data plane reads of a packet: the virtio-net header the TUN device prepends
//! when opened with IFF_VNET_HDR (Linux include/uapi/linux/virtio_net.h: flags u8,
//! gso_type u8, hdr_len u16, gso_size u16, csum_start u16, csum_offset u16; little endian
//! on TUN), and from the IP header the destination and the header lengths, to count the
//! wire segments of a GSO super-packet. Packets are forwarded unmodified.

use crate::model::PacketSize;

pub const VNET_HDR_LEN: usize = 10;
const GSO_NONE: u8 = 0;
const GSO_ECN: u8 = 0x80;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dest {
    V4([u8; 4]),
    V6([u8; 16]),
    Unknown,
}

/// Wire size and destination of one TUN frame (`frame` = vnet header + IP packet).
pub fn inspect(frame: &[u8]) -> (PacketSize, Dest) {
    let ip = &frame[VNET_HDR_LEN.min(frame.len())..];
    let len = ip.len() as u64;
    let single = PacketSize { wire_bytes: len, segments: 1 };
    if frame.len() < VNET_HDR_LEN || ip.is_empty() {
        return (single, Dest::Unknown);
    }
    let gso_type = frame[1] & !GSO_ECN;
    let gso_size = u16::from_le_bytes([frame[4], frame[5]]) as u64;
    let (dest, l3_len, l4_proto) = match ip[0] >> 4 {
        4 if ip.len() >= 20 => {
            (Dest::V4([ip[16], ip[17], ip[18], ip[19]]), ((ip[0] & 0x0f) as usize) * 4, ip[9])
        }
        6 if ip.len() >= 40 => {
            let mut d = [0u8; 16];
            d.copy_from_slice(&ip[24..40]);
            (Dest::V6(d), 40, ip[6])
        }
        _ => return (single, Dest::Unknown),
    };
    if gso_type == GSO_NONE || gso_size == 0 {
        return (single, dest);
    }
    // Per-segment headers: IP + TCP (data offset) or IP + UDP (8 bytes).
    let l4_len = match l4_proto {
        6 if ip.len() >= l3_len + 13 => ((ip[l3_len + 12] >> 4) as usize) * 4,
        17 => 8,
        _ => return (single, dest),
    };
    let headers = (l3_len + l4_len) as u64;
    if len <= headers {
        return (single, dest);
    }
    let payload = len - headers;
    let segments = payload.div_ceil(gso_size).max(1);
    (PacketSize { wire_bytes: payload + segments * headers, segments }, dest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipv4_tcp(total: usize, dst: [u8; 4]) -> Vec<u8> {
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[9] = 6;
        p[16..20].copy_from_slice(&dst);
        p[20 + 12] = 8 << 4; // 32-byte TCP header (timestamps)
        p
    }

    #[test]
    fn plain_packet_is_one_segment() {
        let mut frame = vec![0u8; VNET_HDR_LEN];
        frame.extend(ipv4_tcp(1500, [10, 77, 2, 1]));
        let (size, dest) = inspect(&frame);
        assert_eq!((size.wire_bytes, size.segments), (1500, 1));
        assert_eq!(dest, Dest::V4([10, 77, 2, 1]));
    }

    #[test]
    fn gso_super_packet_counts_segments_and_their_headers() {
        // 52 bytes of headers + 10 * 1448 payload - 100 -> 10 segments of MSS 1448.
        let payload = 10 * 1448 - 100;
        let mut frame = vec![0u8; VNET_HDR_LEN];
        frame[1] = 1; // TCPV4
        frame[4..6].copy_from_slice(&1448u16.to_le_bytes());
        frame.extend(ipv4_tcp(52 + payload, [10, 77, 2, 3]));
        let (size, _) = inspect(&frame);
        assert_eq!(size.segments, 10);
        assert_eq!(size.wire_bytes, payload as u64 + 10 * 52);
    }

    #[test]
    fn garbage_does_not_panic() {
        for n in 0..64 {
            let frame = vec![0x4fu8; n];
            let _ = inspect(&frame);
        }
        let mut frame = vec![0u8; VNET_HDR_LEN];
        frame[1] = 1;
        frame[4] = 1;
        frame.extend([0x45u8; 21]);
        let _ = inspect(&frame);
    }
}
