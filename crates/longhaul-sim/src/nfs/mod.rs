//! NFSv3 READ throughput across the long-haul path: IOzone's read test from T client threads to
//! one server, over NFS/RDMA (RPC-over-RDMA on the verbs model's RC queue pairs) or over TCP on
//! IPoIB (the TCP model's connected or datagram mode).
//!
//! One concern per file: [`params`] (rsize, chunk size, credits / slot table, per-call costs),
//! [`client`] (the threads and the slot table, transport-free), [`rdma`] (calls as Sends, data as
//! page-sized RDMA Writes, the reply as a Send), [`ipoib`] (replies on a TCP byte stream, calls as
//! small datagrams), [`scenario`] (plain data, validated once).
//!
//! Throughput is the READ data the client received after a warm-up (the first quarter of the
//! bytes) divided by the time from the end of the warm-up to the last reply. Only
//! `simulated_bytes` of the file are read (32 MiB by default): the rate is steady once the
//! connection has warmed up, so simulating all 512 MiB would only cost time. The record's
//! `bw_drift_pct` says whether it was steady (a short run over TCP at a long delay is not).

pub(crate) mod client;
pub(crate) mod ipoib;
pub(crate) mod params;
pub(crate) mod rdma;
pub(crate) mod scenario;

use serde::Serialize;

use crate::engine::time::{to_s, S};
use crate::engine::Time;
use crate::record::{PathColumns, RunColumns, RunEnd};
use crate::scenario::{run_json, validate_json, ScenarioError};
pub use params::NfsParams;
pub(crate) use scenario::{NfsPath, NfsResolved, NfsScenario, NfsTransport};

/// What a transport's run produced.
pub(crate) struct Outcome {
    /// READ data received after the warm-up, and the time it took.
    pub bytes: u64,
    pub elapsed: Time,
    /// `ReadClient::drift_pct`.
    pub drift_pct: Option<f64>,
    pub rpcs: u64,
    pub end: RunEnd,
}

/// One measured point. Field names carry their unit (MB = 10^6 bytes).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[allow(non_snake_case)]
pub struct NfsRecord {
    /// The hardware profile (a verbs testbed).
    pub testbed: String,
    /// "rdma" (NFS/RDMA) or "tcp" (NFS over IPoIB).
    pub transport: String,
    /// The path: delay, fibre, one-way delay, distance ([`PathColumns`], flattened in place).
    #[serde(flatten)]
    pub path: PathColumns,
    /// IOzone threads reading at once.
    pub threads: u32,
    /// O_DIRECT reads (IOzone -I): a record at a time per thread, no readahead.
    pub direct_io: bool,
    /// READs the readahead keeps outstanding per thread (0 with direct_io).
    pub readahead_reads: u32,
    /// Bytes one NFSv3 READ asks for at most (the mount's rsize).
    pub rsize_bytes: u32,
    /// Bytes of each READ the threads send: rsize, or the readahead window where that is
    /// smaller (Linux 5.4 on), or the record with direct_io where that is smaller.
    pub read_bytes: u32,
    /// IOzone record size, bytes.
    pub record_bytes: u64,
    /// IOzone file size, bytes.
    pub file_bytes: u64,
    /// Bytes actually simulated (the steady part of reading `file_bytes`).
    pub simulated_bytes: u64,
    /// RPC-over-RDMA credits or the TCP slot table: READs outstanding on the connection.
    pub slots: u32,
    /// NFS/RDMA: bytes per RDMA Write (0 over TCP).
    pub chunk_bytes: u32,
    /// The run seed: same scenario and seed, bit-identical record.
    pub seed: u64,
    /// Read throughput after the warm-up, MB/s.
    pub bw_MBps: f64,
    /// How much faster the second half of the measured bytes went than the first, percent: near
    /// 0 when the warm-up sufficed; large when the connection was still opening its window
    /// (raise `simulated_bytes`). None when too few replies to tell.
    pub bw_drift_pct: Option<f64>,
    /// NFS READ calls completed.
    pub rpcs: u64,
    /// The run's columns: data packets sent and resent, simulated time and events, status.
    #[serde(flatten)]
    pub run: RunColumns,
}

/// Simulated time after which a run is abandoned.
const SIM_TIME_LIMIT: Time = 3600 * S;

/// Run one resolved scenario.
pub fn run_nfs(r: &NfsResolved) -> NfsRecord {
    let out = match r.path.as_ref().expect("a resolved path") {
        NfsPath::Rdma(v) => rdma::run_rdma(r, v, SIM_TIME_LIMIT),
        NfsPath::Tcp(t) => ipoib::run_tcp(r, t, SIM_TIME_LIMIT),
    };
    let bw = if out.elapsed > 0 { out.bytes as f64 / to_s(out.elapsed) / 1e6 } else { 0.0 };
    NfsRecord {
        testbed: r.testbed.clone(),
        transport: r.transport.name().to_string(),
        path: PathColumns::new(r.delay_us, r.fibre_km, r.one_way_delay_us()),
        threads: r.threads,
        direct_io: r.direct_io,
        readahead_reads: r.read_path().readahead_reads(),
        rsize_bytes: r.params.rsize_bytes,
        read_bytes: r.read_path().read_bytes(),
        record_bytes: r.record_bytes,
        file_bytes: r.file_bytes,
        simulated_bytes: r.simulated_bytes,
        slots: r.slots,
        chunk_bytes: if r.transport == NfsTransport::Rdma { r.params.chunk_bytes } else { 0 },
        seed: r.seed,
        bw_MBps: bw,
        bw_drift_pct: out.drift_pct,
        rpcs: out.rpcs,
        run: RunColumns::from(&out.end),
    }
}

/// Validate a JSON NFS scenario (the whole check, nothing runs).
pub fn validate_nfs_json(text: &str) -> Result<NfsResolved, ScenarioError> {
    validate_json::<NfsScenario>(text)
}

/// Validate a JSON NFS scenario and run it: the NFS model's public entry point.
pub fn run_nfs_json(text: &str) -> Result<NfsRecord, ScenarioError> {
    run_json::<NfsScenario>(text)
}
