// Every public item documented (issue 27); clippy's `-D warnings` in scripts/test.sh makes a
// missing doc an error.
#![warn(missing_docs)]
// Module docs link to the crate-internal parts they are made of: such links resolve in the
// crate's own docs (`cargo doc --document-private-items`), not in the public ones.
#![allow(rustdoc::private_intra_doc_links)]
//! longhaul-sim: a mechanistic discrete-event model of clusters joined by long-haul links.
//!
//! Layers: [`engine`] (time, events; knows no protocol) → [`net`] (links,
//! credits, switches, range extenders) → [`ib`] (adapters, RC/UC/UD) → [`workload`] (perftest-like
//! drivers). A [`scenario::Scenario`] is plain data, validated once into [`scenario::Resolved`].
//!
//! Public outside the crate: each model's entry points (`run_*_json`, `validate_*_json`, called
//! by the Python binding, crates/longhaul-py), the scenario and record types the integration
//! tests build and read, and the engine. The rest (the fabric, the transports and the protocols'
//! machinery, the world, the topology) is crate-internal.

pub mod engine;
pub mod ib;
pub mod iser;
pub mod link_events;
pub mod mpi;
pub mod names;
pub mod net;
pub mod nfs;
pub mod pfs;
pub mod record;
pub mod scenario;
pub mod tcp;
pub(crate) mod topology;
pub(crate) mod transport;
pub mod workload;
pub(crate) mod world;

pub use scenario::{Resolved, Scenario, ScenarioError};
pub use workload::{run_verbs, VerbsRecord};

/// Validate a JSON scenario and run it: the whole public entry point of the verbs model.
/// With `seconds`, the run stops after that much simulated time (a fixed-duration stream).
pub fn run_verbs_json(text: &str, seconds: Option<f64>) -> Result<VerbsRecord, ScenarioError> {
    let resolved = Scenario::from_json(text)?.resolve()?;
    let until = match seconds {
        None => None,
        Some(s) if s.is_finite() && s > 0.0 && s <= 3600.0 => Some((s * engine::time::S as f64) as engine::Time),
        Some(s) => return Err(ScenarioError(format!("duration_s: {s} is out of range (0, 3600]"))),
    };
    Ok(run_verbs(&resolved, until))
}

/// Validate a JSON TCP scenario (the whole check, nothing runs).
pub fn validate_tcp_json(text: &str) -> Result<tcp::TcpResolved, ScenarioError> {
    scenario::validate_json::<tcp::TcpScenario>(text)
}

/// Validate a JSON TCP scenario and run the iperf-like test: the TCP model's public entry point.
pub fn run_tcp_json(text: &str) -> Result<workload::iperf::TcpRecord, ScenarioError> {
    scenario::run_json::<tcp::TcpScenario>(text)
}
