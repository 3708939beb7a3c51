//! Benchmark drivers that run a scenario and produce records.

pub mod iperf;
pub mod perftest;

use crate::net::NetEvent;

/// The events of a benchmark world: the network's, and a transport timer (a queue pair's ACK
/// timeout, a TCP connection's retransmission timer) named by its index.
#[derive(Debug, Clone, Copy)]
pub enum Ev {
    Net(NetEvent),
    Timer(u32),
}

impl From<NetEvent> for Ev {
    fn from(e: NetEvent) -> Self {
        Ev::Net(e)
    }
}

pub use perftest::{run_verbs, VerbsRecord};
