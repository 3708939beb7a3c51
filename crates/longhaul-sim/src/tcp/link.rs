//! The link layers TCP/IP runs on, and what one IP packet costs on each of them.
//!
//! Sources: RFC 4391 (IPoIB over UD: a 4-byte IPoIB header inside an IB UD packet, so the IP MTU
//! is the IB MTU minus 4, i.e. 2044 at IB MTU 2048); RFC 4755 (IPoIB connected mode: IP over an
//! RC connection, IP MTU up to 65520, each datagram one RC send message that the adapter splits
//! into IB-MTU packets); InfiniBand Architecture Specification vol. 1 ch. 9 (LRH 8, BTH 12,
//! DETH 8, ICRC 4, VCRC 2 bytes); RFC 791/9293 (IP and TCP headers, 20 bytes each) with the
//! RFC 7323 timestamp option (12 bytes with padding, on by default in Linux); IEEE 802.3
//! (1500-byte MTU, jumbo frames of 9000 by convention); Ethernet and SONET framing overheads
//! come from [`crate::net::WanFraming`]. The MAC data rates of today's Ethernet: 25GBASE-R
//! (IEEE 802.3by, 25.78125 Gbaud 64b/66b), 40GBASE-R (802.3ba, 4 lanes of 10GBASE-R), 100GBASE-R
//! (802.3ba/bj/bm), 200GBASE-R and 400GBASE-R (802.3bs/cd, 256b/257b with RS(544,514) FEC below
//! the MAC): each carries its nominal rate at the MAC, and every frame the same 38 bytes of
//! preamble, inter-frame gap, header and FCS as 10GigE.

use serde::{Deserialize, Serialize};

use crate::ib::headers::{padded, BASE as IB_BASE, DETH};
use crate::net::WanFraming;

/// IPv4 + TCP headers + timestamp option: what every segment carries besides payload.
pub const TCP_IP_HEADER_BYTES: u32 = 20 + 20 + 12;
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
    /// 25/40/100/200/400 Gigabit Ethernet end to end: hosts, routers and WAN at that rate.
    #[serde(rename = "25gige")]
    GigE25,
    #[serde(rename = "40gige")]
    GigE40,
    #[serde(rename = "100gige")]
    GigE100,
    #[serde(rename = "200gige")]
    GigE200,
    #[serde(rename = "400gige")]
    GigE400,
}

impl LinkKind {
    pub const NAMES: [&'static str; 10] = [
        "ipoib-ud",
        "ipoib-cm",
        "10gige-lan",
        "10gige-wan",
        "oc192",
        "25gige",
        "40gige",
        "100gige",
        "200gige",
        "400gige",
    ];
    pub const ALL: [LinkKind; 10] = [
        LinkKind::IpoibUd,
        LinkKind::IpoibCm,
        LinkKind::TenGigELan,
        LinkKind::TenGigEWan,
        LinkKind::Oc192,
        LinkKind::GigE25,
        LinkKind::GigE40,
        LinkKind::GigE100,
        LinkKind::GigE200,
        LinkKind::GigE400,
    ];

    pub fn by_name(name: &str) -> Option<LinkKind> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            LinkKind::IpoibUd => "ipoib-ud",
            LinkKind::IpoibCm => "ipoib-cm",
            LinkKind::TenGigELan => "10gige-lan",
            LinkKind::TenGigEWan => "10gige-wan",
            LinkKind::Oc192 => "oc192",
            LinkKind::GigE25 => "25gige",
            LinkKind::GigE40 => "40gige",
            LinkKind::GigE100 => "100gige",
            LinkKind::GigE200 => "200gige",
            LinkKind::GigE400 => "400gige",
        }
    }

    /// The line's data rate (Gb/s at the MAC or the SONET payload) and the bytes each frame adds
    /// on it; None for IPoIB (the IB path decides).
    pub fn line(self) -> Option<(f64, u32)> {
        let ib = crate::net::IbLink { width: 4, generation: crate::net::Generation::Sdr }; // unused by these framings
        let framed = |f: WanFraming| (f.payload_gbps(&ib), f.frame_overhead_bytes());
        let eth = |gbps: f64| (gbps, WanFraming::TenGigELan.frame_overhead_bytes());
        match self {
            LinkKind::IpoibUd | LinkKind::IpoibCm => None,
            LinkKind::TenGigELan => Some(framed(WanFraming::TenGigELan)),
            LinkKind::TenGigEWan => Some(framed(WanFraming::TenGigEWan)),
            LinkKind::Oc192 => Some(framed(WanFraming::Oc192)),
            LinkKind::GigE25 => Some(eth(25.0)),
            LinkKind::GigE40 => Some(eth(40.0)),
            LinkKind::GigE100 => Some(eth(100.0)),
            LinkKind::GigE200 => Some(eth(200.0)),
            LinkKind::GigE400 => Some(eth(400.0)),
        }
    }

    /// The slowest named Ethernet link that carries `gbps` (hosts and WAN at its rate), for
    /// models that take a rate rather than a link (MPI over TCP); None above 400 GbE.
    pub fn ethernet_for(gbps: f64) -> Option<LinkKind> {
        [
            LinkKind::TenGigELan,
            LinkKind::GigE25,
            LinkKind::GigE40,
            LinkKind::GigE100,
            LinkKind::GigE200,
            LinkKind::GigE400,
        ]
        .into_iter()
        .find(|k| k.line().is_some_and(|(g, _)| gbps <= g))
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

    #[test]
    fn every_link_is_named_once_and_ethernet_rates_are_the_macs() {
        for (k, n) in LinkKind::ALL.iter().zip(LinkKind::NAMES) {
            assert_eq!(k.name(), n);
            assert_eq!(LinkKind::by_name(n), Some(*k));
        }
        assert_eq!(LinkKind::GigE100.line(), Some((100.0, 38)));
        assert_eq!(LinkKind::ethernet_for(8.0), Some(LinkKind::TenGigELan));
        assert_eq!(LinkKind::ethernet_for(100.0), Some(LinkKind::GigE100));
        assert_eq!(LinkKind::ethernet_for(100.5), Some(LinkKind::GigE200));
        assert_eq!(LinkKind::ethernet_for(401.0), None);
    }
}
