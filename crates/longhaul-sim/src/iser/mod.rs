//! iSER (iSCSI Extensions for RDMA, RFC 7145) READ and WRITE throughput across the long-haul
//! path: an initiator issuing SCSI commands to one target LUN over one RC queue pair of the
//! verbs model, with the queue depth, burst lengths and RDMA Read depth of a Linux session.
//!
//! One concern per file: [`params`] (session keys and host costs), [`initiator`] (the commands
//! and the queue depth, transport-free), [`rdma`] (PDUs as Sends, data by RDMA Write and Read),
//! [`scenario`] (plain data, validated once).

pub(crate) mod initiator;
pub(crate) mod params;
pub(crate) mod rdma;
pub(crate) mod scenario;

use serde::Serialize;

use crate::engine::time::{to_s, S};
use crate::engine::Time;
use crate::record::{PathColumns, RunColumns, RunEnd};
use crate::scenario::{run_json, validate_json, ScenarioError};
pub use params::IserParams;
pub(crate) use scenario::{IserOp, IserResolved, IserScenario};

/// What a run produced.
pub(crate) struct Outcome {
    /// Bytes of the completed commands, and the time from the first command to the last response.
    pub bytes: u64,
    pub elapsed: Time,
    pub commands: u64,
    /// Data that reached its destination: the target (WRITE) or the initiator's buffers (READ).
    pub data_bytes: u64,
    /// RDMA Writes (READ) or Reads (WRITE) the target posted.
    pub rdma_ops: u64,
    pub end: RunEnd,
}

/// One measured point. Field names carry their unit (MB = 10^6 bytes).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[allow(non_snake_case)]
pub struct IserRecord {
    /// The hardware profile (a verbs testbed).
    pub testbed: String,
    /// "read" or "write": the SCSI command the initiator issues.
    pub op: String,
    /// The path: delay, fibre, one-way delay, distance ([`PathColumns`], flattened in place).
    #[serde(flatten)]
    pub path: PathColumns,
    /// The workload's I/O size in bytes (split into commands of at most `max_command_bytes`).
    pub block_bytes: u64,
    /// Bytes the workload reads or writes in all.
    pub total_bytes: u64,
    /// SCSI commands the initiator keeps outstanding.
    pub queue_depth: u32,
    /// Largest SCSI command the initiator issues, bytes.
    pub max_command_bytes: u32,
    /// MaxBurstLength: the most solicited data in one R2T sequence, bytes.
    pub max_burst_bytes: u32,
    /// FirstBurstLength: the most unsolicited data (immediate and Data-Out) a WRITE sends, bytes.
    pub first_burst_bytes: u32,
    /// ImmediateData: a WRITE may carry data in its command PDU.
    pub immediate_data: bool,
    /// InitialR2T: no unsolicited Data-Out PDUs, only immediate data, before the first R2T.
    pub initial_r2t: bool,
    /// MaxOutstandingR2T: R2Ts a command may have in progress at once.
    pub max_outstanding_r2t: u32,
    /// RDMA Reads the target may have outstanding on the queue pair (the adapter's max_rd_atomic).
    pub rdma_read_depth: u32,
    /// The target's backing store's rate, MB/s.
    pub backing_MBps: f64,
    /// The run seed: same scenario and seed, bit-identical record.
    pub seed: u64,
    /// Throughput: the completed commands' bytes over the first command to the last response, MB/s.
    pub bw_MBps: f64,
    /// SCSI commands completed.
    pub commands: u64,
    /// Data that arrived where it was going (the target for WRITE, the initiator's buffers for
    /// READ): equal to total_bytes when every byte arrived once.
    pub data_bytes: u64,
    /// RDMA Writes (READ) or Reads (WRITE) the target posted.
    pub rdma_ops: u64,
    /// The run's columns: data packets sent and resent, simulated time and events, status.
    #[serde(flatten)]
    pub run: RunColumns,
}

/// Simulated time after which a run is abandoned.
const SIM_TIME_LIMIT: Time = 3600 * S;

/// Run one resolved scenario.
pub fn run_iser(r: &IserResolved) -> IserRecord {
    let v = r.path.as_ref().expect("a resolved path");
    let out = rdma::run_rdma(r, v, SIM_TIME_LIMIT);
    let bw = if out.elapsed > 0 { out.bytes as f64 / to_s(out.elapsed) / 1e6 } else { 0.0 };
    let p = &r.params;
    IserRecord {
        testbed: r.testbed.clone(),
        op: r.op.name().to_string(),
        path: PathColumns::new(r.delay_us, r.fibre_km, r.one_way_delay_us()),
        block_bytes: r.block_bytes,
        total_bytes: r.total_bytes,
        queue_depth: p.queue_depth,
        max_command_bytes: p.max_command_bytes,
        max_burst_bytes: p.max_burst_bytes,
        first_burst_bytes: p.first_burst_bytes,
        immediate_data: p.immediate_data,
        initial_r2t: p.initial_r2t,
        max_outstanding_r2t: p.max_outstanding_r2t,
        rdma_read_depth: v.hca.max_rd_atomic,
        backing_MBps: p.backing_MBps,
        seed: r.seed,
        bw_MBps: bw,
        commands: out.commands,
        data_bytes: out.data_bytes,
        rdma_ops: out.rdma_ops,
        run: RunColumns::from(&out.end),
    }
}

/// Validate a JSON iSER scenario (the whole check, nothing runs).
pub fn validate_iser_json(text: &str) -> Result<IserResolved, ScenarioError> {
    validate_json::<IserScenario>(text)
}

/// Validate a JSON iSER scenario and run it: the iSER model's public entry point.
pub fn run_iser_json(text: &str) -> Result<IserRecord, ScenarioError> {
    run_json::<IserScenario>(text)
}
