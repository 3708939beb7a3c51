//! The level MPI's network is simulated at (`mpi.network`), in the parallel file system's
//! vocabulary (`pfs.network`): every packet, or flows (see [`super::fluid`]).

use super::scenario::MpiTransport;
use crate::scenario::{err, ScenarioError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    /// Every packet through the adapters, switches, extenders and links (the default).
    Packet,
    /// Messages as flows sharing the path's resources max-min ([`super::fluid::FluidIb`]).
    Fluid,
}

impl Network {
    pub const NAMES: [&'static str; 2] = ["packet", "fluid"];

    /// The scenario's `network` (default packet), checked against its transport.
    pub fn resolve(name: Option<&str>, transport: MpiTransport) -> Result<Network, ScenarioError> {
        let network = match name.unwrap_or("packet") {
            "packet" => Network::Packet,
            "fluid" => Network::Fluid,
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
