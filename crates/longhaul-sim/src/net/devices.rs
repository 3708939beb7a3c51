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
    /// Quantum-2 class 4x NDR switch: ~130 ns; buffer assumed 64 KiB per port.
    pub fn quantum2() -> Self {
        SwitchParams {
            name: "quantum2".into(),
            link: IbLink { width: 4, generation: Generation::Ndr },
            latency_ns: 130.0,
            buffer_bytes: 64 * 1024,
        }
    }
}

/// One box of a range-extender pair (Obsidian Longbow-like). It terminates IB link-level flow
/// control on its local side, and keeps the long-haul link busy with a deep buffer on the far
/// side: full rate needs a buffer of at least rate x round-trip time.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ExtenderParams {
    pub name: String,
    /// The IB port facing the local switch.
    pub local: IbLink,
    /// The WAN side: an IB rate (framing "ib") or the framing's own payload rate.
    pub wan: IbLink,
    pub framing: WanFraming,
    /// Receive buffer for traffic arriving from the WAN (bytes), per direction.
    pub buffer_bytes: u64,
    /// Store-and-forward processing latency of one box (ns).
    pub latency_ns: f64,
    /// Per-packet time of the box's forwarding engine (ns): caps the packet rate.
    pub packet_ns: f64,
}

impl ExtenderParams {
    /// Longbow XR as used in [S1]: 4x SDR on both sides. Buffer assumed 64 MiB: S1 Fig 2 shows
    /// full-rate RC at 10 ms one-way (needs > 20 MB in flight), and the vendor rated the XR for
    /// thousands of km. Store-and-forward latency assumed 1 us; packet engine as for the C103 below.
    pub fn longbow_xr() -> Self {
        ExtenderParams {
            name: "longbow-xr".into(),
            local: IbLink { width: 4, generation: Generation::Sdr },
            wan: IbLink { width: 4, generation: Generation::Sdr },
            framing: WanFraming::Ib,
            buffer_bytes: 64 << 20,
            latency_ns: 1000.0,
            packet_ns: 280.0,
        }
    }

    /// Longbow C103 as used in [S3] (SDR boxes over 10 km): the same class of box as the XR. Its
    /// packet engine time (shared with the XR above) is calibrated once from [S3] Fig 11-12
    /// (small-message rate through one box pair; "14 expected over four" links confirms a
    /// per-box packet-rate cap).
    pub fn longbow_c103() -> Self {
        ExtenderParams { name: "longbow-c103".into(), ..Self::longbow_xr() }
    }

    /// A generic extender for what-if studies: IB rate on both sides, 1 GiB buffer, no packet cap.
    pub fn generic(link: IbLink) -> Self {
        ExtenderParams {
            name: "generic".into(),
            local: link,
            wan: link,
            framing: WanFraming::Ib,
            buffer_bytes: 1 << 30,
            latency_ns: 500.0,
            packet_ns: 0.0,
        }
    }

    pub fn by_name(name: &str) -> Option<Self> {
        match name {
            "longbow-xr" => Some(Self::longbow_xr()),
            "longbow-c103" => Some(Self::longbow_c103()),
            _ => None,
        }
    }
}
