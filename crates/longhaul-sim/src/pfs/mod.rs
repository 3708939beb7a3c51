//! A parallel file system across the long-haul link (GPFS-like, with a Lustre-like variant):
//! client threads writing (or reading) blocks through their page pool to NSD servers and their
//! LUNs, over several WAN links that fail and come back.
//!
//! One concern per file: [`params`] (one struct per component, every default cited),
//! [`layout`] (blocks over LUNs over servers), [`ledger`] (the invariant: every acknowledged
//! write on a server exactly once), [`core`] (writers, connections and servers without a
//! network), [`routing`] (links plugged and active, minhop routes; when the subnet manager acts is
//! `crate::ib::subnet_manager`'s, shared with the verbs model), [`fluid`] (the
//! driver over the fluid network `crate::net::flow`, with RC retries and reconnects),
//! [`record`] (time series, phases, latency), [`scenario`] (plain data, validated once).
//!
//! Flow level: a run of minutes with failures takes seconds. What it leaves out is below a
//! round trip: packet queues and credits, congestion, RC's packet-by-packet retransmission
//! (a recovered connection resends its lost blocks at once). A packet-level adapter can drive
//! [`core`] over `crate::transport` where those matter.

pub(crate) mod core;
pub(crate) mod fluid;
pub(crate) mod layout;
pub(crate) mod ledger;
pub mod migrate;
pub(crate) mod packet;
pub(crate) mod params;
pub(crate) mod record;
pub(crate) mod routing;
pub(crate) mod scenario;

pub(crate) use params::Variant;
pub(crate) use record::PfsRecord;
pub(crate) use scenario::{PfsResolved, PfsScenario};

use crate::scenario::{run_json, validate_json, ScenarioError};

/// Validate a JSON scenario (the whole check, nothing runs).
pub fn validate_pfs_json(text: &str) -> Result<PfsResolved, ScenarioError> {
    validate_json::<PfsScenario>(text)
}

/// Validate a JSON scenario and run it: the parallel file system model's public entry point.
pub fn run_pfs_json(text: &str) -> Result<PfsRecord, ScenarioError> {
    run_json::<PfsScenario>(text)
}
