//! What the data plane reads of a packet: the virtio-net header the TUN device prepends
//! when opened with IFF_VNET_HDR (Linux include/uapi/linux/virtio_net.h: flags u8,
//! gso_type u8, hdr_len u16, gso_size u16, csum_start u16, csum_offset u16; little endian
//! on TUN), and from the IP header the destination and the header lengths, to count the
//! wire segments of a GSO super-packet. Packets are forwarded unmodified, except that a TCP
//! super-packet losing some of its wire packets is cut into the runs that survive
//! (`surviving_runs`), as a NIC's segmentation offload would have cut it on the wire.

use crate::model::PacketSize;

pub const VNET_HDR_LEN: usize = 10;
const GSO_NONE: u8 = 0;
const GSO_ECN: u8 = 0x80;
/// virtio_net_hdr flag: the checksum at csum_start + csum_offset is still to be completed.
const NEEDS_CSUM: u8 = 1;
const TCP_FIN: u8 = 0x01;
const TCP_PSH: u8 = 0x08;
const TCP_CWR: u8 = 0x80;

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
        4 if ip.len() >= 20 => (Dest::V4([ip[16], ip[17], ip[18], ip[19]]), ((ip[0] & 0x0f) as usize) * 4, ip[9]),
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

/// One's-complement sum of big-endian 16-bit words (an odd last byte is padded with zero).
fn sum16(data: &[u8], mut acc: u64) -> u64 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc += u16::from_be_bytes([c[0], c[1]]) as u64;
    }
    if let [last] = chunks.remainder() {
        acc += (*last as u64) << 8;
    }
    acc
}

fn fold(mut acc: u64) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// The surviving wire packets of a TCP GSO super-packet (`frame` = vnet header + IP packet)
/// when those at the sorted indices `lost` are lost: one frame per run of consecutive
/// survivors, itself a GSO frame when the run holds more than one segment. Each frame gets
/// its own IP length (IPv4: ID advanced by its first segment, header checksum), TCP sequence
/// number, flags (FIN/PSH only on the run ending the super-packet, CWR only on the run
/// starting it) and pseudo-header checksum with NEEDS_CSUM, which the kernel completes as it
/// does for the super-packet. None if the frame is not a TCP super-packet.
pub fn surviving_runs(frame: &[u8], lost: &[u32]) -> Option<Vec<Vec<u8>>> {
    if frame.len() < VNET_HDR_LEN + 40 {
        return None;
    }
    let (vnet, ip) = frame.split_at(VNET_HDR_LEN);
    let gso_type = vnet[1];
    let gso_size = u16::from_le_bytes([vnet[4], vnet[5]]) as usize;
    let v4 = ip[0] >> 4 == 4;
    let (l3_len, proto) = match ip[0] >> 4 {
        4 => (((ip[0] & 0x0f) as usize) * 4, ip[9]),
        6 => (40, ip[6]),
        _ => return None,
    };
    if gso_type & !GSO_ECN == GSO_NONE || gso_size == 0 || proto != 6 || ip.len() < l3_len + 20 {
        return None;
    }
    let headers = l3_len + ((ip[l3_len + 12] >> 4) as usize) * 4;
    if ip.len() <= headers {
        return None;
    }
    let payload = ip.len() - headers;
    let segments = payload.div_ceil(gso_size);
    let mut runs = Vec::new();
    let mut first = 0;
    for cut in lost.iter().map(|&x| x as usize).filter(|&x| x < segments).chain([segments]) {
        if cut > first {
            runs.push((first, cut - first));
        }
        first = cut + 1;
    }
    let seq0 = u32::from_be_bytes(ip[l3_len + 4..l3_len + 8].try_into().ok()?);
    let out = runs
        .into_iter()
        .map(|(first, count)| {
            let (start, end) = (first * gso_size, ((first + count) * gso_size).min(payload));
            let mut f = Vec::with_capacity(VNET_HDR_LEN + headers + end - start);
            f.extend_from_slice(vnet);
            f.extend_from_slice(&ip[..headers]);
            f.extend_from_slice(&ip[headers + start..headers + end]);
            f[0] = NEEDS_CSUM;
            if count == 1 {
                f[1] = GSO_NONE;
                f[4..6].copy_from_slice(&0u16.to_le_bytes());
            }
            f[6..8].copy_from_slice(&(l3_len as u16).to_le_bytes());
            f[8..10].copy_from_slice(&16u16.to_le_bytes());
            let p = &mut f[VNET_HDR_LEN..];
            let ip_len = p.len();
            let tcp_len = ip_len - l3_len;
            let pseudo = if v4 {
                p[2..4].copy_from_slice(&(ip_len as u16).to_be_bytes());
                let id = u16::from_be_bytes([p[4], p[5]]).wrapping_add(first as u16);
                p[4..6].copy_from_slice(&id.to_be_bytes());
                p[10..12].copy_from_slice(&[0, 0]);
                let check = !fold(sum16(&p[..l3_len], 0));
                p[10..12].copy_from_slice(&check.to_be_bytes());
                sum16(&p[12..20], 6 + tcp_len as u64)
            } else {
                p[4..6].copy_from_slice(&(tcp_len as u16).to_be_bytes());
                sum16(&p[8..40], 6 + tcp_len as u64)
            };
            let t = &mut p[l3_len..];
            t[4..8].copy_from_slice(&seq0.wrapping_add(start as u32).to_be_bytes());
            if first > 0 {
                t[13] &= !TCP_CWR;
            }
            if first + count < segments {
                t[13] &= !(TCP_FIN | TCP_PSH);
            }
            t[16..18].copy_from_slice(&fold(pseudo).to_be_bytes());
            f
        })
        .collect();
    Some(out)
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

    /// A TCP/IPv4 GSO frame: 5 segments of MSS 1000 (the last 500 bytes), payload byte i = i % 251.
    fn gso_frame() -> Vec<u8> {
        let payload = 4 * 1000 + 500;
        let mut ip = ipv4_tcp(52 + payload, [10, 77, 2, 1]);
        ip[2..4].copy_from_slice(&((52 + payload) as u16).to_be_bytes());
        ip[4..6].copy_from_slice(&100u16.to_be_bytes());
        ip[12..16].copy_from_slice(&[10, 77, 1, 1]);
        ip[24..28].copy_from_slice(&7000u32.to_be_bytes()); // sequence number
        ip[33] = TCP_PSH | TCP_FIN | TCP_CWR | 0x10;
        for (i, b) in ip[52..].iter_mut().enumerate() {
            *b = (i % 251) as u8;
        }
        let mut frame = vec![NEEDS_CSUM, 1, 52, 0, 0, 0, 20, 0, 16, 0];
        frame[4..6].copy_from_slice(&1000u16.to_le_bytes());
        frame.extend(ip);
        frame
    }

    /// What the kernel does with NEEDS_CSUM, then the receiver's check: the TCP checksum over
    /// pseudo-header + segment must come out right.
    fn tcp_checksum_ok(frame: &[u8]) -> bool {
        let ip = &frame[VNET_HDR_LEN..];
        let mut seg = ip[20..].to_vec();
        let completed = !fold(sum16(&seg, 0));
        seg[16..18].copy_from_slice(&completed.to_be_bytes());
        fold(sum16(&seg, sum16(&ip[12..20], 6 + seg.len() as u64))) == 0xffff
    }

    #[test]
    fn lost_middle_segment_leaves_two_runs_with_their_own_headers() {
        let frame = gso_frame();
        let runs = surviving_runs(&frame, &[2]).unwrap();
        assert_eq!(runs.len(), 2);
        let (a, b) = (&runs[0][VNET_HDR_LEN..], &runs[1][VNET_HDR_LEN..]);
        assert_eq!((a.len(), b.len()), (52 + 2000, 52 + 1500));
        assert_eq!(u16::from_be_bytes([a[2], a[3]]) as usize, a.len());
        assert_eq!(u16::from_be_bytes([b[4], b[5]]), 103); // IP ID of segment 3
        assert_eq!(u32::from_be_bytes(a[24..28].try_into().unwrap()), 7000);
        assert_eq!(u32::from_be_bytes(b[24..28].try_into().unwrap()), 10_000);
        assert_eq!(a[33] & (TCP_FIN | TCP_PSH | TCP_CWR), TCP_CWR);
        assert_eq!(b[33] & (TCP_FIN | TCP_PSH | TCP_CWR), TCP_FIN | TCP_PSH);
        assert_eq!(&b[52..], &frame[VNET_HDR_LEN + 52 + 3000..]); // the payload of segments 3 and 4
        for r in &runs {
            assert_eq!(fold(sum16(&r[VNET_HDR_LEN..VNET_HDR_LEN + 20], 0)), 0xffff, "IP header checksum");
            assert!(tcp_checksum_ok(r));
            assert_eq!(inspect(r).0.segments, 2);
        }
    }

    #[test]
    fn a_single_survivor_is_a_plain_packet() {
        let runs = surviving_runs(&gso_frame(), &[0, 1, 2, 4]).unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!((runs[0][1], runs[0].len()), (GSO_NONE, VNET_HDR_LEN + 52 + 1000));
        assert_eq!(inspect(&runs[0]).0, PacketSize { wire_bytes: 1052, segments: 1 });
        assert!(tcp_checksum_ok(&runs[0]));
        assert!(surviving_runs(&gso_frame(), &[0, 1, 2, 3, 4]).unwrap().is_empty());
    }

    #[test]
    fn non_tcp_or_plain_frames_are_not_cut() {
        let mut plain = vec![0u8; VNET_HDR_LEN];
        plain.extend(ipv4_tcp(1500, [10, 77, 2, 1]));
        assert!(surviving_runs(&plain, &[0]).is_none());
        let mut udp = gso_frame();
        udp[VNET_HDR_LEN + 9] = 17;
        assert!(surviving_runs(&udp, &[1]).is_none());
    }
}
