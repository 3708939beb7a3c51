//! The level MPI's network is simulated at (`mpi.network`), in the parallel file system's
//! vocabulary (`pfs.network`): every packet, or flows (see [`super::fluid`]), or `auto`: the
//! packet level for a job of up to [`AUTO_PACKET_MAX_RANKS`] ranks, flows above.

use super::scenario::MpiTransport;
use crate::scenario::{err, ScenarioError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    /// Every packet through the adapters, switches, extenders and links (the default).
    Packet,
    /// Messages as flows sharing the path's resources max-min ([`super::fluid::FluidIb`]).
    Fluid,
}

/// The largest job `network = "auto"` simulates packet by packet. Measured on the S1 profile
/// (bench/results/mpi_bench.md, 2 vCPUs): the packet level runs osu_alltoall 64 KiB at 256 ranks in
/// ~4 s of CPU, at 1,024 ranks in over 60 s and ~0.5 GB, at 4,096 in ~4 GB; osu_bcast 1 MiB takes
/// 0.5 s at 128 ranks and over 60 s at 2,048. The flow level runs those in seconds
/// (docs/models/mpi.md, "Flow-level mode", has its agreement with the packet level).
pub const AUTO_PACKET_MAX_RANKS: u32 = 256;

impl Network {
    pub const NAMES: [&'static str; 3] = ["packet", "fluid", "auto"];

    /// The scenario's `network` (default packet) for a job of `ranks` ranks, checked against its
    /// transport. `auto` is the flow level over rc above [`AUTO_PACKET_MAX_RANKS`] ranks, the packet
    /// level otherwise (and always over uc, ud and tcp, which have no flow level).
    pub fn resolve(name: Option<&str>, transport: MpiTransport, ranks: u32) -> Result<Network, ScenarioError> {
        let network = match name.unwrap_or("packet") {
            "packet" => Network::Packet,
            "fluid" => Network::Fluid,
            "auto" if transport == MpiTransport::Rc && ranks > AUTO_PACKET_MAX_RANKS => Network::Fluid,
            "auto" => Network::Packet,
            other => return err(format!("network: unknown '{other}' (valid: {})", Self::NAMES.join(", "))),
        };
        if network == Network::Fluid && transport != MpiTransport::Rc {
            let name = serde_json::to_value(transport).ok().and_then(|v| v.as_str().map(str::to_string));
            return err(format!(
                "network: fluid runs MPI over transport rc only, not {} (valid: network packet with rc, uc, ud or tcp; \
                 network fluid with rc)",
                name.unwrap_or_default()
            ));
        }
        Ok(network)
    }

    pub fn name(self) -> &'static str {
        match self {
            Network::Packet => "packet",
            Network::Fluid => "fluid",
        }
    }
}
