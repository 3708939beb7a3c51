//! Link rates: lane width x generation, signalling rate and line encoding, and the WAN framings
//! a range extender or a TCP path can use. Everything downstream sees one number: the data rate
//! (bits of packet per second) and a per-frame overhead in bytes.
//!
//! Sources: InfiniBand Architecture Specification vol. 2 (physical layer: SDR/DDR/QDR at 2.5/5/10
//! Gbaud per lane with 8b/10b; FDR 14.0625 and EDR 25.78125 Gbaud with 64b/66b; HDR 53.125 and
//! NDR 106.25 Gb/s per lane PAM4 with RS-FEC, 50 and 100 Gb/s of data); ITU-T G.707 (SONET/SDH:
//! OC-192 line 9.95328 Gb/s, STS-192c payload 9.58464 Gb/s); ITU-T G.7041 (GFP-F: 4-byte core
//! header + 4-byte payload header per frame); IEEE 802.3ae (10GBASE-R 10.3125 Gbaud 64b/66b =
//! 10 Gb/s MAC; 10GBASE-W carries 64b/66b inside the STS-192c payload; per frame 8 B preamble+SFD,
//! 12 B inter-frame gap, 14 B header, 4 B FCS).

use serde::{Deserialize, Serialize};

use crate::engine::Time;

/// InfiniBand link generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Generation {
    Sdr,
    Ddr,
    Qdr,
    Fdr,
    Edr,
    Hdr,
    Ndr,
    Xdr,
}

impl Generation {
    pub const ALL: [Generation; 8] = [
        Generation::Sdr,
        Generation::Ddr,
        Generation::Qdr,
        Generation::Fdr,
        Generation::Edr,
        Generation::Hdr,
        Generation::Ndr,
        Generation::Xdr,
    ];

    /// Per-lane signalling rate (Gbaud for NRZ; Gb/s of raw line bits for PAM4).
    pub fn lane_signal_gbps(self) -> f64 {
        match self {
            Generation::Sdr => 2.5,
            Generation::Ddr => 5.0,
            Generation::Qdr => 10.0,
            Generation::Fdr => 14.0625,
            Generation::Edr => 25.78125,
            Generation::Hdr => 53.125,
            Generation::Ndr => 106.25,
            Generation::Xdr => 212.5,
        }
    }

    /// Fraction of line bits that carry data after encoding / FEC.
    pub fn encoding_efficiency(self) -> f64 {
        match self {
            Generation::Sdr | Generation::Ddr | Generation::Qdr => 8.0 / 10.0,
            Generation::Fdr | Generation::Edr => 64.0 / 66.0,
            // PAM4 + RS(544,514) FEC + 256b/257b transcoding: 50 of 53.125, 100 of 106.25 and
            // 200 of 212.5.
            Generation::Hdr | Generation::Ndr | Generation::Xdr => 100.0 / 106.25,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Generation::Sdr => "sdr",
            Generation::Ddr => "ddr",
            Generation::Qdr => "qdr",
            Generation::Fdr => "fdr",
            Generation::Edr => "edr",
            Generation::Hdr => "hdr",
            Generation::Ndr => "ndr",
            Generation::Xdr => "xdr",
        }
    }
}

/// An InfiniBand link: lanes x generation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IbLink {
    pub width: u32,
    pub generation: Generation,
}

impl IbLink {
    pub const VALID_WIDTHS: [u32; 3] = [1, 4, 12];
    pub fn data_gbps(&self) -> f64 {
        self.width as f64 * self.generation.lane_signal_gbps() * self.generation.encoding_efficiency()
    }
}

/// How a range extender (or a WAN path) frames packets on the long-haul link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WanFraming {
    /// Native InfiniBand on the WAN (the extender's WAN port runs at an IB rate).
    Ib,
    /// SONET OC-192c with GFP-F encapsulation.
    Oc192,
    /// 10 Gigabit Ethernet LAN PHY (10GBASE-R).
    #[serde(rename = "10gige-lan")]
    TenGigELan,
    /// 10 Gigabit Ethernet WAN PHY (10GBASE-W, SONET-framed).
    #[serde(rename = "10gige-wan")]
    TenGigEWan,
    /// 100 Gigabit Ethernet carrying each IB packet in a RoCEv2 packet (NVIDIA MetroX-3's
    /// long-haul ports: "RoCE sessions").
    #[serde(rename = "100gige-roce")]
    HundredGigERoce,
}

impl WanFraming {
    /// Every framing, in the order the CLI lists them.
    pub const ALL: [WanFraming; 5] = [
        WanFraming::Ib,
        WanFraming::Oc192,
        WanFraming::TenGigELan,
        WanFraming::TenGigEWan,
        WanFraming::HundredGigERoce,
    ];

    /// The name scenarios and the CLI use.
    pub fn name(self) -> &'static str {
        match self {
            WanFraming::Ib => "ib",
            WanFraming::Oc192 => "oc192",
            WanFraming::TenGigELan => "10gige-lan",
            WanFraming::TenGigEWan => "10gige-wan",
            WanFraming::HundredGigERoce => "100gige-roce",
        }
    }

    /// Data rate available to frames (Gb/s); `ib` is the IB link's data rate.
    pub fn payload_gbps(self, ib: &IbLink) -> f64 {
        match self {
            WanFraming::Ib => ib.data_gbps(),
            WanFraming::Oc192 => 9.584_64,
            WanFraming::TenGigELan => 10.0,
            WanFraming::TenGigEWan => 9.584_64 * 64.0 / 66.0,
            // 100GBASE-R: 100 Gb/s at the MAC (IEEE 802.3ba).
            WanFraming::HundredGigERoce => 100.0,
        }
    }

    /// Bytes added to every packet on the WAN by the framing.
    pub fn frame_overhead_bytes(self) -> u32 {
        match self {
            WanFraming::Ib => 0,
            WanFraming::Oc192 => 8,
            WanFraming::TenGigELan | WanFraming::TenGigEWan => ETHERNET_FRAME_BYTES,
            // The Ethernet frame plus IPv4 (20), UDP (8), the RoCE BTH (12) and ICRC (4) around
            // the whole IB packet (assumed: one RoCEv2 packet per IB packet).
            WanFraming::HundredGigERoce => ETHERNET_FRAME_BYTES + 20 + 8 + 12 + 4,
        }
    }
}

/// Per Ethernet frame: preamble + SFD (8), inter-frame gap (12), MAC header (14), FCS (4).
const ETHERNET_FRAME_BYTES: u32 = 8 + 12 + 14 + 4;

/// A serialisation rate in fixed point: picoseconds per byte, scaled by 2^16, so serialisation
/// times are exact integers and identical on every machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    ps_per_byte_x65536: u64,
}

impl Rate {
    pub fn from_gbps(gbps: f64) -> Rate {
        assert!(gbps > 0.0 && gbps.is_finite(), "rate must be positive");
        let ps_per_byte = 8_000.0 / gbps;
        Rate { ps_per_byte_x65536: (ps_per_byte * 65536.0).round().max(1.0) as u64 }
    }

    /// Time to put `bytes` on the wire.
    #[inline]
    pub fn serialise(&self, bytes: u64) -> Time {
        (bytes * self.ps_per_byte_x65536 + 32768) >> 16
    }

    pub fn gbps(&self) -> f64 {
        8_000.0 * 65536.0 / self.ps_per_byte_x65536 as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_rates_match_the_spec_tables() {
        let l = |w, g| IbLink { width: w, generation: g }.data_gbps();
        assert!((l(4, Generation::Sdr) - 8.0).abs() < 1e-9);
        assert!((l(4, Generation::Ddr) - 16.0).abs() < 1e-9);
        assert!((l(4, Generation::Qdr) - 32.0).abs() < 1e-9);
        assert!((l(4, Generation::Fdr) - 54.545).abs() < 1e-3);
        assert!((l(4, Generation::Edr) - 100.0).abs() < 1e-9);
        assert!((l(4, Generation::Hdr) - 200.0).abs() < 1e-9);
        assert!((l(4, Generation::Ndr) - 400.0).abs() < 1e-9);
        assert!((l(4, Generation::Xdr) - 800.0).abs() < 1e-9);
    }

    #[test]
    fn serialisation_is_exact_for_round_rates() {
        let r = Rate::from_gbps(8.0); // 1 byte per ns
        assert_eq!(r.serialise(2048), 2_048_000);
        assert!((r.gbps() - 8.0).abs() < 1e-9);
    }
}
