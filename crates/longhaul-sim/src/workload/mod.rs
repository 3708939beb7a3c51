//! Benchmark drivers that run a scenario and produce records.

pub mod failover;
pub mod iperf;
pub mod perftest;

pub use perftest::{run_verbs, VerbsRecord};
