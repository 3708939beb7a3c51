//! Parameters of the boxes between hosts: switches and range extenders.

use serde::{Deserialize, Serialize};

use super::rate::{Generation, IbLink, WanFraming};

/// An InfiniBand switch (one per cluster in the two-cluster topologies).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SwitchParams {
    pub name: String,
    pub link: IbLink,
    /// Cut-through forwarding latency (ns).
    pub latency_ns: f64,
    /// Receive buffer per port and direction (bytes), advertised as link-level credits.
    pub buffer_bytes: u64,
}

impl SwitchParams {
    /// Mellanox InfiniScale III class 4x DDR switch: ~200 ns port-to-port (vendor briefs of the
    /// time); per-port buffer assumed 16 KiB (enough for metres of cable, not for kilometres).
    pub fn infiniscale3() -> Self {
        SwitchParams {
            name: "infiniscale3".into(),
            link: IbLink { width: 4, generation: Generation::Ddr },
            latency_ns: 200.0,
            buffer_bytes: 16 * 1024,
        }
    }
    /// InfiniScale IV class 4x QDR switch: ~100 ns port-to-port; buffer assumed 32 KiB.
    pub fn infiniscale4() -> Self {
        SwitchParams {
            name: "infiniscale4".into(),
            link: IbLink { width: 4, generation: Generation::Qdr },
            latency_ns: 100.0,
            buffer_bytes: 32 * 1024,
        }
    }
    /// SwitchX-2 class 4x FDR switch (SX6036, 2012-): 170 ns port-to-port (Mellanox's SX6036
    /// product brief, as recalled, not re-read here); buffer assumed 32 KiB per port, as InfiniScale IV.
    pub fn switchx2() -> Self {
        SwitchParams {
            name: "switchx2".into(),
            link: IbLink { width: 4, generation: Generation::Fdr },
            latency_ns: 170.0,
            buffer_bytes: 32 * 1024,
        }
    }
    /// Switch-IB class 4x EDR switch (SB7700/SB7800, 2015-): 130 ns port-to-port (Mellanox's
    /// Switch-IB product brief, as recalled, not re-read here; Switch-IB 2 claims 90 ns); buffer assumed 64 KiB per port.
    pub fn switch_ib() -> Self {
        SwitchParams {
            name: "switch-ib".into(),
            link: IbLink { width: 4, generation: Generation::Edr },
            latency_ns: 130.0,
            buffer_bytes: 64 * 1024,
        }
    }
    /// Quantum class 4x HDR switch (QM8700, 2019-): 130 ns port-to-port (Mellanox's QM8700
    /// product brief, as recalled, not re-read here); buffer assumed 64 KiB per port.
    pub fn quantum() -> Self {
        SwitchParams {
            name: "quantum".into(),
            link: IbLink { width: 4, generation: Generation::Hdr },
            latency_ns: 130.0,
            buffer_bytes: 64 * 1024,
        }
    }
    /// Quantum-2 class 4x NDR switch (QM9700, 2022-): ~130 ns (third-party summaries give
    /// "under 150 ns" port to port); buffer assumed 64 KiB per port.
    pub fn quantum2() -> Self {
        SwitchParams {
            name: "quantum2".into(),
            link: IbLink { width: 4, generation: Generation::Ndr },
            latency_ns: 130.0,
            buffer_bytes: 64 * 1024,
        }
    }
    /// Quantum-X800 class 4x XDR switch (Q3400, 2025-): 800 Gb/s ports; no port-to-port latency
    /// is published, so Quantum-2's is assumed, and its buffer.
    pub fn quantum_x800() -> Self {
        SwitchParams {
            name: "quantum-x800".into(),
            link: IbLink { width: 4, generation: Generation::Xdr },
            ..Self::quantum2()
        }
    }
}

/// One box of a range-extender pair. It terminates IB link-level flow control on its local side
/// and extends it across the WAN with credits of its own (Obsidian's design: the long link becomes
/// three links in series, each with its own flow control; "InfiniBand Range Limitation" white
/// paper, patent CA2552414): full rate needs credits (a receive buffer) of at least the WAN rate
/// x the round trip. A product is rated for a distance; its credits are taken to span that
/// distance at its WAN rate (what the rating means), unless the vendor states the buffer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ExtenderParams {
    pub name: String,
    /// The IB port facing the local switch.
    pub local: IbLink,
    /// The WAN side: an IB rate (framing "ib") or the framing's own payload rate.
    pub wan: IbLink,
    pub framing: WanFraming,
    /// The framings the product can carry IB in.
    pub framings: Vec<WanFraming>,
    /// Long-haul ports of one box (parallel WAN links, flows spread by queue pair).
    pub wan_ports: u32,
    /// Receive buffer for traffic arriving from the WAN (bytes), per direction: the credits.
    pub buffer_bytes: u64,
    /// Store-and-forward processing latency of one box (ns).
    pub latency_ns: f64,
    /// Per-packet time of the box's forwarding engine (ns): caps the packet rate.
    pub packet_ns: f64,
    /// The distance the vendor rates the pair for (km, one way).
    pub rated_km: f64,
    /// Where the facts come from.
    pub source: String,
}

/// Receive buffer that keeps a WAN of `gbps` full over `km` of fibre: rate x round trip (5 us
/// per km each way).
pub fn credits_spanning(gbps: f64, km: f64) -> u64 {
    (gbps * 1e9 / 8.0 * 2.0 * km * 5e-6).ceil() as u64
}

/// 4x SDR: what the SDR boxes carry whatever the WAN framing (8 Gb/s of data).
const SDR_4X: IbLink = IbLink { width: 4, generation: Generation::Sdr };

/// The Longbows' per-packet engine time, calibrated once from [S3] Fig 11-12 (small-message rate
/// through one box pair; "14 expected over four" links confirms a per-box packet-rate cap).
const LONGBOW_PACKET_NS: f64 = 280.0;

impl ExtenderParams {
    /// The WAN data rate the pair can carry (Gb/s): its local IB port or its WAN, the slower.
    pub fn data_gbps(&self) -> f64 {
        self.local.data_gbps().min(self.framing.payload_gbps(&self.wan))
    }

    /// A product rated for `rated_km` whose credits span that at the rate it carries; its first
    /// framing is its default. Store-and-forward latency assumed 1 us a box (no product states it).
    fn rated(
        name: &str,
        ports: (IbLink, u32),
        framings: &[WanFraming],
        rated_km: f64,
        packet_ns: f64,
        source: &str,
    ) -> Self {
        let (local, wan_ports) = ports;
        let mut e = ExtenderParams {
            name: name.into(),
            local,
            wan: local,
            framing: framings[0],
            framings: framings.to_vec(),
            wan_ports,
            buffer_bytes: 0,
            latency_ns: 1000.0,
            packet_ns,
            rated_km,
            source: source.into(),
        };
        e.buffer_bytes = credits_spanning(e.data_gbps(), rated_km);
        e
    }

    /// Obsidian Longbow XR, as used in [S1] and on the UltraScience Net: 4x SDR IB on both
    /// sides, carried natively on dark fibre ([S1]'s WAN "at 4x SDR"), in SONET OC-192c or in
    /// 10GigE WAN-PHY (SONET-framed). The vendor describes its link-level credit extension as
    /// spanning WAN distances up to 150,000 km (as quoted in issue 22): credits for 4x SDR over
    /// that, 1.5 GB. The previous assumed 64 MiB covered only ~6,700 km, so UC at 8,600 miles was
    /// credit-bound at ~475 MB/s. Packet engine as for the C103 below.
    pub fn longbow_xr() -> Self {
        Self::rated(
            "longbow-xr",
            (SDR_4X, 1),
            &[WanFraming::Ib, WanFraming::Oc192, WanFraming::TenGigEWan],
            150_000.0,
            LONGBOW_PACKET_NS,
            "Obsidian Longbow XR: 4x SDR; dark fibre, OC-192c, 10GigE WAN-PHY; credits for 150,000 km",
        )
    }

    /// Longbow C103 as used in [S3] (SDR boxes over a 10 km spool): the campus Longbow, IB on
    /// dark fibre only. Rated for 100 km: the reach of Obsidian's campus extender in the
    /// ADVA/HLRS demonstrator (TNC 2008: 4x SDR over 0.5 to 100 km of fibre; Obsidian's own
    /// datasheet figure not re-checked here), so credits for 100 km at 4x SDR, 1 MB.
    pub fn longbow_c103() -> Self {
        Self::rated(
            "longbow-c103",
            (SDR_4X, 1),
            &[WanFraming::Ib],
            100.0,
            LONGBOW_PACKET_NS,
            "Obsidian Longbow C103 (campus): 4x SDR on dark fibre; rated 100 km (ADVA/HLRS demonstrator)",
        )
    }

    /// Bay Microsystems ABEx 2020, the UltraScience Net's other extender: 4x SDR IB carried in
    /// SONET OC-192, 10GigE LAN-PHY or WAN-PHY (and L2TP over IP, not modelled). No rated distance
    /// or buffer is available here: the reach it was run at, the 8,600-mile USN loop (Rao et al.,
    /// SC08), is taken as its rating and its credits as spanning it (138 MB; assumed). No
    /// packet-rate cap documented.
    pub fn abex_2020() -> Self {
        Self::rated(
            "abex-2020",
            (SDR_4X, 1),
            &[WanFraming::Oc192, WanFraming::TenGigELan, WanFraming::TenGigEWan],
            8600.0 * 1.609_344,
            0.0,
            "Bay Microsystems ABEx 2020: 4x SDR over OC-192, 10GigE LAN/WAN-PHY; rated here for the 8,600-mile USN loop it ran on (assumed)",
        )
    }

    /// NVIDIA MetroX-2 (TQ8x00): HDR InfiniBand long-haul switch, two long-haul HDR ports on
    /// long-reach optics; rated 40 km (TQ8200; the TQ8100 10 km), from NVIDIA's TQ8x00 product
    /// material (not re-checked here). Credits for 40 km at HDR, 10 MB per port.
    pub fn metrox_2() -> Self {
        Self::rated(
            "metrox-2",
            (IbLink { width: 4, generation: Generation::Hdr }, 2),
            &[WanFraming::Ib],
            40.0,
            0.0,
            "NVIDIA MetroX-2 TQ8x00: HDR, 2 long-haul IB ports; rated 40 km (TQ8200)",
        )
    }

    /// NVIDIA MetroX-3 XC: InfiniBand ports up to EDR (its NVDA-OS XC manual: supported speeds
    /// sdr/fdr/edr, MTU 4096) carried in RoCE sessions over two 100GbE long-haul ports; rated
    /// 40 km (NVIDIA's MetroX-3 announcement, November 2022: 25 miles). Credits for 40 km at
    /// 100 Gb/s per port, 5 MB.
    pub fn metrox_3_xc() -> Self {
        Self::rated(
            "metrox-3-xc",
            (IbLink { width: 4, generation: Generation::Edr }, 2),
            &[WanFraming::HundredGigERoce],
            40.0,
            0.0,
            "NVIDIA MetroX-3 XC: EDR IB in RoCE over 2 x 100GbE long-haul ports; rated 40 km",
        )
    }

    /// A generic extender for what-if studies: IB rate on both sides, any framing, 1 GiB buffer,
    /// no packet cap, no rated limit.
    pub fn generic(link: IbLink) -> Self {
        ExtenderParams {
            name: "generic".into(),
            local: link,
            wan: link,
            framing: WanFraming::Ib,
            framings: WanFraming::ALL.to_vec(),
            wan_ports: 1,
            buffer_bytes: 1 << 30,
            latency_ns: 500.0,
            packet_ns: 0.0,
            rated_km: f64::INFINITY,
            source: "what-if: the IB rate on both sides, 1 GiB of credits".into(),
        }
    }

    /// A named product (not `generic`, which takes the link it extends).
    pub fn by_name(name: &str) -> Option<Self> {
        match name {
            "longbow-xr" => Some(Self::longbow_xr()),
            "longbow-c103" => Some(Self::longbow_c103()),
            "abex-2020" => Some(Self::abex_2020()),
            "metrox-2" => Some(Self::metrox_2()),
            "metrox-3-xc" => Some(Self::metrox_3_xc()),
            _ => None,
        }
    }

    /// Every name an extender option takes.
    pub const NAMES: [&'static str; 7] =
        ["longbow-xr", "longbow-c103", "abex-2020", "metrox-2", "metrox-3-xc", "generic", "none"];

    /// A warning if the pair carries less than adapters whose ports carry `host_gbps`, over
    /// `wan_links` parallel links.
    pub fn rate_warning(&self, host_gbps: f64, wan_links: u32) -> Option<String> {
        let gbps = self.data_gbps() * wan_links as f64;
        let part = if self.local.data_gbps() <= self.framing.payload_gbps(&self.wan) { "IB ports" } else { "WAN" };
        (gbps < host_gbps * 0.999).then(|| {
            format!(
                "extender {}: its {part} carry {gbps:.1} Gb/s of data, below the adapters' {host_gbps:.1} Gb/s: it caps \
                 bandwidth near {:.0} MB/s",
                self.name,
                gbps * 1e3 / 8.0
            )
        })
    }

    /// A warning if `km` (one way) is beyond the pair's rating: what its credits still carry.
    pub fn reach_warning(&self, km: f64) -> Option<String> {
        (km > self.rated_km * 1.000_001).then(|| {
            let need = credits_spanning(self.data_gbps(), km);
            format!(
                "extender {}: {km:.0} km is beyond its rated {:.0} km: its credits ({:.1} MB) cover {:.0}% of the round \
                 trip, so one WAN link carries at most ~{:.0} MB/s",
                self.name,
                self.rated_km,
                self.buffer_bytes as f64 / 1e6,
                100.0 * self.buffer_bytes as f64 / need as f64,
                self.buffer_bytes as f64 / (2.0 * km * 5e-6) / 1e6
            )
        })
    }
}
