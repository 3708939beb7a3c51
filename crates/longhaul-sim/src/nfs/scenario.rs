//! The NFS scenario: plain data naming the transport, the path and the IOzone read test.
//! Validated once, here, into an [`NfsResolved`]; errors are one line naming the parameter and
//! its valid range. The path is the verbs model's (RPC over RDMA) or the TCP model's (RPC over
//! IPoIB), resolved by their own validation so the messages are the same.

use serde::{Deserialize, Serialize};

use super::client::ReadPath;
use super::params::{NfsParams, Readahead};
use super::NfsRecord;
use crate::scenario::{
    err, in_range_f, in_range_u, known_testbed, ExtenderPathSpec, ModelScenario, Resolved, Scenario, ScenarioError,
};
use crate::tcp::scenario::{TcpPathSpec, TcpSpec};
use crate::tcp::{TcpResolved, TcpScenario};

/// The IOzone read test and the NFS mount (every field optional).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NfsSpec {
    /// IOzone threads reading at once (default 8; [S1] says "multiple threads").
    pub threads: Option<u32>,
    /// IOzone record size (bytes, default 256 KiB as in [S1]).
    pub record_bytes: Option<u64>,
    /// IOzone file size (bytes, default 512 MiB as in [S1]).
    pub file_bytes: Option<u64>,
    /// Bytes actually simulated: the throughput is steady long before 512 MiB (default 32 MiB,
    /// or the file if smaller).
    pub simulated_bytes: Option<u64>,
    pub rsize_bytes: Option<u32>,
    /// IOzone -I: O_DIRECT reads, a record's READs at once and no readahead (default false:
    /// IOzone reads through the page cache).
    pub direct_io: Option<bool>,
    /// Override the credit grant (RDMA) or slot table (TCP).
    pub slots: Option<u32>,
    /// Override the mount's readahead (bytes, the bdi's read_ahead_kb x 1024; default the
    /// profile's: 15 x rsize in 2008, 128 KiB today).
    pub readahead_bytes: Option<u64>,
    pub server_rpc_ns: Option<f64>,
    pub client_rpc_ns: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NfsScenario {
    #[serde(default = "crate::scenario::default_seed")]
    pub seed: u64,
    /// Hardware profile: s1 (default) or s1-connectx.
    pub testbed: Option<String>,
    /// rdma (NFS/RDMA), ipoib-rc (NFS over TCP over IPoIB connected mode), ipoib-ud.
    pub transport: String,
    #[serde(default)]
    pub path: ExtenderPathSpec,
    #[serde(default)]
    pub nfs: NfsSpec,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NfsTransport {
    Rdma,
    IpoibRc,
    IpoibUd,
}

impl NfsTransport {
    pub const NAMES: [&'static str; 3] = ["rdma", "ipoib-rc", "ipoib-ud"];

    pub fn name(self) -> &'static str {
        match self {
            NfsTransport::Rdma => "rdma",
            NfsTransport::IpoibRc => "ipoib-rc",
            NfsTransport::IpoibUd => "ipoib-ud",
        }
    }
}

/// The path a transport runs on, resolved by its own model.
#[derive(Debug, Clone)]
pub enum NfsPath {
    Rdma(Box<Resolved>),
    Tcp(Box<TcpResolved>),
}

/// Every parameter the NFS model uses, in range.
#[derive(Debug, Clone, Serialize)]
pub struct NfsResolved {
    pub seed: u64,
    pub testbed: String,
    pub transport: NfsTransport,
    pub params: NfsParams,
    /// Calls outstanding on the connection: the credit grant (RDMA) or the slot table (TCP).
    pub slots: u32,
    pub threads: u32,
    pub direct_io: bool,
    pub record_bytes: u64,
    pub file_bytes: u64,
    pub simulated_bytes: u64,
    pub delay_us: f64,
    pub fibre_km: f64,
    #[serde(skip)]
    pub path: Option<NfsPath>,
}

impl NfsResolved {
    pub fn one_way_delay_us(&self) -> f64 {
        self.fibre_km * 5.0 + self.delay_us
    }

    /// How the threads' reads become READ calls.
    pub fn read_path(&self) -> ReadPath {
        ReadPath::of(&self.params, self.direct_io, self.record_bytes)
    }
}

const DEFAULT_THREADS: u32 = 8;
const DEFAULT_SIMULATED_BYTES: u64 = 32 << 20;
/// The default simulated bytes are at least this many times the bytes the connection carries at
/// once, over RDMA and over TCP (32 MiB is 64 times [S1]'s 16 slots x 32 KiB).
const SIMULATED_WINDOWS_RDMA: u64 = 8;
const SIMULATED_WINDOWS_TCP: u64 = 64;

impl ModelScenario for NfsScenario {
    type Resolved = NfsResolved;
    type Record = NfsRecord;

    fn run(r: &NfsResolved) -> NfsRecord {
        super::run_nfs(r)
    }

    fn resolve(&self) -> Result<NfsResolved, ScenarioError> {
        let transport = match self.transport.as_str() {
            "rdma" => NfsTransport::Rdma,
            "ipoib-rc" => NfsTransport::IpoibRc,
            "ipoib-ud" => NfsTransport::IpoibUd,
            other => return err(format!("transport: unknown '{other}' (valid: {})", NfsTransport::NAMES.join(", "))),
        };
        // Every verbs testbed: NFS runs over RDMA or IPoIB on any of them, with the Linux NFS and
        // RPC parameters of its era (`NfsParams::of_testbed`).
        let testbed = known_testbed(self.testbed.as_deref(), "s1", "NFS")?;
        let mut params = NfsParams::of_testbed(&testbed);
        let n = &self.nfs;
        params.rsize_bytes =
            in_range_u("rsize_bytes", n.rsize_bytes.unwrap_or(params.rsize_bytes) as u64, 4096, 1 << 20)? as u32;
        if let Some(ns) = n.server_rpc_ns {
            params.server_rpc_ns = in_range_f("server_rpc_ns", ns, 0.0, 1e9)?;
        }
        if let Some(ns) = n.client_rpc_ns {
            params.client_rpc_ns = in_range_f("client_rpc_ns", ns, 0.0, 1e9)?;
        }
        if let Some(bytes) = n.readahead_bytes {
            let bytes = in_range_u("readahead_bytes", bytes, 4096, 1 << 30)? as u32;
            params.readahead = match params.readahead {
                Readahead::RsizeReads(_) => Readahead::RsizeReads(bytes.div_ceil(params.rsize_bytes)),
                Readahead::Window { .. } => Readahead::Window { ra_bytes: bytes },
            };
        }
        let default_slots = if transport == NfsTransport::Rdma { params.rdma_credits } else { params.tcp_slots };
        let slots = in_range_u("slots", n.slots.unwrap_or(default_slots) as u64, 1, 65536)? as u32;
        let threads = in_range_u("threads", n.threads.unwrap_or(DEFAULT_THREADS) as u64, 1, 1024)? as u32;
        let record_bytes = in_range_u("record_bytes", n.record_bytes.unwrap_or(256 * 1024), 4096, 1 << 30)?;
        let file_bytes = in_range_u("file_bytes", n.file_bytes.unwrap_or(512 << 20), record_bytes, 1 << 40)?;
        let direct_io = n.direct_io.unwrap_or(false);
        // What the connection carries at once (the slots' READs or the threads' readahead, the
        // smaller): the measured part should span many of them, or its first and last replies'
        // edges weigh (a 1 MiB window over 8 threads read 49% fast from 32 MiB), and over TCP
        // the window must have opened (ndr over IPoIB-UD at 1 ms: +19% drift from 32 of them,
        // +2.5% from 64).
        let reading = ReadPath::of(&params, direct_io, record_bytes);
        let in_flight =
            (threads as u64 * reading.per_thread_bytes(record_bytes)).min(slots as u64 * reading.read_bytes() as u64);
        let windows = if transport == NfsTransport::Rdma { SIMULATED_WINDOWS_RDMA } else { SIMULATED_WINDOWS_TCP };
        let default_simulated = DEFAULT_SIMULATED_BYTES.max(windows * in_flight);
        let simulated = n.simulated_bytes.unwrap_or(default_simulated.min(file_bytes));
        let simulated_bytes = in_range_u("simulated_bytes", simulated, record_bytes, file_bytes)?;

        let p = &self.path;
        let path = match transport {
            NfsTransport::Rdma => {
                NfsPath::Rdma(Box::new(Scenario::rc_path(self.seed, &testbed, p.verbs(), params.chunk_bytes as u64)?))
            }
            NfsTransport::IpoibRc | NfsTransport::IpoibUd => {
                let link = if transport == NfsTransport::IpoibRc { "ipoib-cm" } else { "ipoib-ud" };
                let tcp = TcpScenario {
                    seed: self.seed,
                    testbed: Some(testbed.clone()),
                    stack: None,
                    link: link.into(),
                    path: TcpPathSpec {
                        delay_us: p.delay_us,
                        fibre_km: p.fibre_km,
                        extender: p.extender.clone(),
                        ..TcpPathSpec::default()
                    },
                    tcp: TcpSpec::default(),
                    cross: None,
                };
                NfsPath::Tcp(Box::new(tcp.resolve()?))
            }
        };
        // The path as the verbs or TCP scenario resolved it (checked, -0 as 0), not as given.
        let (delay_us, fibre_km) = match &path {
            NfsPath::Rdma(r) => (r.delay_us, r.fibre_km),
            NfsPath::Tcp(t) => (t.delay_us, t.fibre_km),
        };
        Ok(NfsResolved {
            seed: self.seed,
            testbed,
            transport,
            params,
            slots,
            threads,
            direct_io,
            record_bytes,
            file_bytes,
            simulated_bytes,
            delay_us,
            fibre_km,
            path: Some(path),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(json: &str) -> Result<NfsResolved, String> {
        crate::scenario::validate_json::<NfsScenario>(json).map_err(|e| e.0)
    }

    #[test]
    fn defaults_are_the_s1_testbed() {
        let r = resolve(r#"{"transport": "rdma"}"#).unwrap();
        assert_eq!((r.slots, r.threads, r.params.rsize_bytes, r.params.chunk_bytes), (16, 8, 32768, 4096));
        assert_eq!(r.simulated_bytes, 32 << 20);
        assert!(matches!(r.path, Some(NfsPath::Rdma(_))));
        let t = resolve(r#"{"transport": "ipoib-ud", "path": {"delay_us": 1000}}"#).unwrap();
        assert!(matches!(t.path, Some(NfsPath::Tcp(_))));
    }

    #[test]
    fn bad_input_names_the_parameter_and_range() {
        let cases = [
            (r#"{"transport": "smb"}"#, "transport: unknown 'smb'"),
            (r#"{"transport": "rdma", "nfs": {"threads": 0}}"#, "threads: 0 is out of range [1, 1024]"),
            (r#"{"transport": "rdma", "nfs": {"rsize_bytes": 100}}"#, "rsize_bytes: 100 is out of range"),
            (r#"{"transport": "rdma", "path": {"delay_us": -1}}"#, "delay_us: -1 is out of range"),
            (r#"{"transport": "ipoib-rc", "path": {"delay_us": -1}}"#, "delay_us: -1 is out of range"),
            (r#"{"transport": "rdma", "testbed": "modern"}"#, "testbed: unknown 'modern' for NFS (valid: s1, "),
            (r#"{"transport": "rdma", "nfs": {"bogus": 1}}"#, "unknown field `bogus`"),
        ];
        for (json, want) in cases {
            let e = resolve(json).unwrap_err();
            assert!(e.contains(want), "{json}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
