//! Benchmark drivers that run a scenario and produce records.

pub(crate) mod failover;
pub mod iperf;
pub(crate) mod perftest;
pub(crate) mod rc_pair;

pub use perftest::{run_verbs, VerbsRecord};
