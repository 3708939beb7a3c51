//! The link layers TCP/IP runs on, and what one IP packet costs on each of them.
//!
//! Sources: RFC 4391 (IPoIB over UD: a 4-byte IPoIB header inside an IB UD packet, so the IP MTU
//! is the IB MTU minus 4, i.e. 2044 at IB MTU 2048); RFC 4755 (IPoIB connected mode: IP over an
//! RC connection, IP MTU up to 65520, each datagram one RC send message that the adapter splits
//! into IB-MTU packets); InfiniBand Architecture Specification vol. 1 ch. 9 (LRH 8, BTH 12,
//! DETH 8, ICRC 4, VCRC 2 bytes); RFC 791/9293 (IP and TCP headers, 20 bytes each) with the
//! RFC 7323 timestamp option (12 bytes with padding, on by default in Linux); IEEE 802.3
//! (1500-byte MTU, jumbo frames of 9000 by convention); Ethernet and SONET framing overheads
//! come from [`crate::net::WanFraming`].

use serde::{Deserialize, Serialize};

use crate::ib::headers::{padded, BASE as IB_BASE, DETH};

/// IPv4 + TCP headers + timestamp option: what every segment carries besides payload.
pub const TCP_IP_HEADER_BYTES: u32 = 20 + 20 + 12;
/// A UDP/IPv4 header (cross traffic).
pub const UDP_IP_HEADER_BYTES: u32 = 20 + 8;
/// The IPoIB encapsulation header (RFC 4391 section 6).
pub const IPOIB_HEADER_BYTES: u32 = 4;
/// Bytes of one SACK block (RFC 2018) and of the option's kind/length.
pub const SACK_BLOCK_BYTES: u32 = 8;
pub const SACK_OPTION_BYTES: u32 = 2;
/// A SYN or SYN-ACK: IPv4 + TCP headers and the options Linux puts on them: MSS (4), SACK
/// permitted (2), timestamps (10), window scale (3) and one NOP (RFC 9293, 2018, 7323).
pub const SYN_IP_BYTES: u32 = 20 + 20 + 20;
/// Smallest IP MTU every IPv4 host must accept (RFC 791).
pub const MIN_MTU: u32 = 576;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LinkKind {
    /// IPoIB datagram mode: one IP packet per IB UD packet.
    #[serde(rename = "ipoib-ud")]
    IpoibUd,
    /// IPoIB connected mode: one IP packet per RC message of IB-MTU fragments.
    #[serde(rename = "ipoib-cm")]
    IpoibCm,
    /// 10 Gigabit Ethernet LAN PHY end to end.
    #[serde(rename = "10gige-lan")]
    TenGigELan,
    /// 10GigE hosts, WAN PHY (10GBASE-W) on the long-haul link.
    #[serde(rename = "10gige-wan")]
    TenGigEWan,
    /// 10GigE hosts, SONET OC-192c (GFP-F) on the long-haul link.
    #[serde(rename = "oc192")]
    Oc192,
}

impl LinkKind {
    pub const NAMES: [&'static str; 5] = ["ipoib-ud", "ipoib-cm", "10gige-lan", "10gige-wan", "oc192"];

    pub fn name(self) -> &'static str {
        match self {
            LinkKind::IpoibUd => "ipoib-ud",
            LinkKind::IpoibCm => "ipoib-cm",
            LinkKind::TenGigELan => "10gige-lan",
            LinkKind::TenGigEWan => "10gige-wan",
            LinkKind::Oc192 => "oc192",
        }
    }

    pub fn is_ipoib(self) -> bool {
        matches!(self, LinkKind::IpoibUd | LinkKind::IpoibCm)
    }

    /// Valid IP MTU range on this link at IB MTU `ib_mtu` (bytes).
    pub fn mtu_range(self, ib_mtu: u32) -> (u32, u32) {
        match self {
            LinkKind::IpoibUd => (MIN_MTU, ib_mtu - IPOIB_HEADER_BYTES),
            // RFC 4755 section 3: the connected-mode MTU may be as large as 2^16 - 16.
            LinkKind::IpoibCm => (MIN_MTU, 65520),
            // Jumbo frames: 9000 bytes is the de-facto maximum shared by 10GigE gear and POS/GFP.
            _ => (MIN_MTU, 9000),
        }
    }

    /// The Linux default MTU of the interface (ipoib: 2044 in datagram mode, 65520 in connected
    /// mode as set by `ipoib_cm` when the mode is switched; Ethernet: 1500).
    pub fn default_mtu(self, ib_mtu: u32) -> u32 {
        match self {
            LinkKind::IpoibUd => ib_mtu - IPOIB_HEADER_BYTES,
            LinkKind::IpoibCm => 65520,
            _ => 1500,
        }
    }
}

/// Per-packet byte costs of one link layer at one MTU.
#[derive(Debug, Clone, Copy)]
pub struct Framing {
    pub kind: LinkKind,
    pub mtu: u32,
    /// IB MTU (fragment payload) for IPoIB connected mode.
    pub ib_mtu: u32,
}

impl Framing {
    /// Payload bytes per segment: the MTU less IP, TCP and timestamp headers.
    pub fn mss(&self) -> u32 {
        self.mtu - TCP_IP_HEADER_BYTES
    }

    /// Bytes before link framing of an IP packet of `ip_bytes` carried as one link packet.
    fn single(&self, ip_bytes: u32) -> u32 {
        match self.kind {
            LinkKind::IpoibUd => IB_BASE + DETH + padded(IPOIB_HEADER_BYTES + ip_bytes),
            LinkKind::IpoibCm => IB_BASE + padded(IPOIB_HEADER_BYTES + ip_bytes),
            _ => ip_bytes,
        }
    }

    /// Fragments (IB packets) of an IP datagram of `ip_bytes`: 1 except in connected mode.
    pub fn fragments(&self, ip_bytes: u32) -> u32 {
        match self.kind {
            LinkKind::IpoibCm => (IPOIB_HEADER_BYTES + ip_bytes).div_ceil(self.ib_mtu),
            _ => 1,
        }
    }

    /// Wire bytes of fragment `i` of a datagram of `ip_bytes` (each fragment an RC packet).
    pub fn fragment_bytes(&self, ip_bytes: u32, i: u32) -> u32 {
        if self.kind != LinkKind::IpoibCm {
            return self.single(ip_bytes);
        }
        let total = IPOIB_HEADER_BYTES + ip_bytes;
        let len = (total - i * self.ib_mtu).min(self.ib_mtu);
        IB_BASE + padded(len)
    }

    /// Wire bytes of an ACK carrying `sack_blocks` SACK blocks (always one link packet).
    pub fn ack_bytes(&self, sack_blocks: usize) -> u32 {
        let opts = if sack_blocks > 0 { SACK_OPTION_BYTES + SACK_BLOCK_BYTES * sack_blocks as u32 } else { 0 };
        self.single(TCP_IP_HEADER_BYTES + opts)
    }

    /// Wire bytes of a SYN or SYN-ACK.
    pub fn syn_bytes(&self) -> u32 {
        self.single(SYN_IP_BYTES)
    }

    /// Wire bytes of a cross-traffic UDP datagram of `ip_bytes` (fragmented like data).
    pub fn total_bytes(&self, ip_bytes: u32) -> u64 {
        (0..self.fragments(ip_bytes)).map(|i| self.fragment_bytes(ip_bytes, i) as u64).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mss_and_wire_sizes() {
        let ud = Framing { kind: LinkKind::IpoibUd, mtu: 2044, ib_mtu: 2048 };
        assert_eq!(ud.mss(), 1992);
        // 26 (LRH+BTH+ICRC+VCRC) + 8 DETH + 2048 (IPoIB header + IP packet).
        assert_eq!(ud.fragment_bytes(2044, 0), 26 + 8 + 2048);
        let cm = Framing { kind: LinkKind::IpoibCm, mtu: 65520, ib_mtu: 2048 };
        assert_eq!(cm.fragments(65520), 32);
        assert_eq!(cm.total_bytes(65520), 65524 + 32 * 26);
        let eth = Framing { kind: LinkKind::TenGigELan, mtu: 1500, ib_mtu: 2048 };
        assert_eq!(eth.mss(), 1448);
        assert_eq!(eth.ack_bytes(0), 52);
        assert_eq!(eth.ack_bytes(3), 52 + 26);
    }
}
