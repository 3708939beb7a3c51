//! The iSER scenario: plain data naming the operation, the path and the workload. Validated
//! once, here, into an [`IserResolved`]; errors are one line naming the parameter and its valid
//! range. The path is the verbs model's, resolved by its own validation (same messages).

use serde::{Deserialize, Serialize};

use super::params::IserParams;
use super::IserRecord;
use crate::scenario::{
    err, in_range_f, in_range_u, known_testbed, ExtenderPathSpec, ModelScenario, Resolved, Scenario, ScenarioError,
};

/// The workload and the session (every field optional: [`IserParams::defaults`]).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
#[allow(non_snake_case)]
pub struct IserSpec {
    /// Bytes per I/O (default 1 MiB; cut into commands of at most `max_command_bytes`).
    pub block_bytes: Option<u64>,
    /// Bytes the run reads or writes (default 64 MiB).
    pub total_bytes: Option<u64>,
    pub queue_depth: Option<u32>,
    pub max_command_bytes: Option<u32>,
    pub max_burst_bytes: Option<u32>,
    pub first_burst_bytes: Option<u32>,
    pub immediate_data: Option<bool>,
    pub initial_r2t: Option<bool>,
    pub max_outstanding_r2t: Option<u32>,
    pub target_recv_segment_bytes: Option<u32>,
    pub backing_MBps: Option<f64>,
    pub target_cmd_ns: Option<f64>,
    pub initiator_cmd_ns: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IserScenario {
    #[serde(default = "crate::scenario::default_seed")]
    pub seed: u64,
    /// Hardware profile (default s1).
    pub testbed: Option<String>,
    /// "read" or "write".
    pub op: String,
    #[serde(default)]
    pub path: ExtenderPathSpec,
    #[serde(default)]
    pub iser: IserSpec,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum IserOp {
    Read,
    Write,
}

impl IserOp {
    pub const NAMES: [&'static str; 2] = ["read", "write"];

    pub fn name(self) -> &'static str {
        match self {
            IserOp::Read => "read",
            IserOp::Write => "write",
        }
    }
}

const DEFAULT_BLOCK_BYTES: u64 = 1 << 20;
const DEFAULT_TOTAL_BYTES: u64 = 64 << 20;
/// The send queue both ends ask for: LIO's ib_isert sizes it ISERT_QP_MAX_REQ_DTOS =
/// 128 x (1 + 8) + 4 + 6 = 1162 work requests (drivers/infiniband/ulp/isert/isert_proto.h), far
/// above what the queue depth keeps posted, so it never binds here.
const SQ_DEPTH: u32 = 1162;
/// A run of more commands than this is refused (the model keeps a record per command).
const MAX_COMMANDS: u64 = 1 << 22;

/// Every parameter the iSER model uses, in range.
#[derive(Debug, Clone, Serialize)]
pub struct IserResolved {
    pub seed: u64,
    pub testbed: String,
    pub op: IserOp,
    pub params: IserParams,
    pub block_bytes: u64,
    pub total_bytes: u64,
    pub sq_depth: u32,
    pub delay_us: f64,
    pub fibre_km: f64,
    #[serde(skip)]
    pub path: Option<Box<Resolved>>,
}

impl IserResolved {
    pub fn one_way_delay_us(&self) -> f64 {
        self.fibre_km * 5.0 + self.delay_us
    }

    /// SCSI commands of the run (each I/O cut at `max_command_bytes`).
    pub fn commands(&self) -> u64 {
        let per_io = |b: u64| b.div_ceil(self.params.max_command_bytes as u64);
        let full = self.total_bytes / self.block_bytes;
        let last = self.total_bytes % self.block_bytes;
        full * per_io(self.block_bytes) + if last > 0 { per_io(last) } else { 0 }
    }
}

impl ModelScenario for IserScenario {
    type Resolved = IserResolved;
    type Record = IserRecord;

    fn run(r: &IserResolved) -> IserRecord {
        super::run_iser(r)
    }

    fn resolve(&self) -> Result<IserResolved, ScenarioError> {
        let op = match self.op.as_str() {
            "read" => IserOp::Read,
            "write" => IserOp::Write,
            other => return err(format!("op: unknown '{other}' (valid: {})", IserOp::NAMES.join(", "))),
        };
        // Every verbs testbed carries iSER.
        let testbed = known_testbed(self.testbed.as_deref(), "s1", "iSER")?;
        let s = &self.iser;
        let mut p = IserParams::defaults();
        let u32_in = |name: &str, v: Option<u32>, default: u32, lo: u64, hi: u64| -> Result<u32, ScenarioError> {
            Ok(in_range_u(name, v.unwrap_or(default) as u64, lo, hi)? as u32)
        };
        p.queue_depth = u32_in("queue_depth", s.queue_depth, p.queue_depth, 1, 4096)?;
        p.max_command_bytes = u32_in("max_command_bytes", s.max_command_bytes, p.max_command_bytes, 512, 1 << 24)?;
        // RFC 3720 section 12.13-12.14: 512 to 2^24 - 1 bytes, FirstBurstLength <= MaxBurstLength.
        p.max_burst_bytes = u32_in("max_burst_bytes", s.max_burst_bytes, p.max_burst_bytes, 512, (1 << 24) - 1)?;
        p.first_burst_bytes =
            u32_in("first_burst_bytes", s.first_burst_bytes, p.first_burst_bytes, 512, p.max_burst_bytes as u64)?;
        p.max_outstanding_r2t = u32_in("max_outstanding_r2t", s.max_outstanding_r2t, p.max_outstanding_r2t, 1, 65535)?;
        p.target_recv_segment_bytes = u32_in(
            "target_recv_segment_bytes",
            s.target_recv_segment_bytes,
            p.target_recv_segment_bytes,
            512,
            (1 << 24) - 1,
        )?;
        p.immediate_data = s.immediate_data.unwrap_or(p.immediate_data);
        p.initial_r2t = s.initial_r2t.unwrap_or(p.initial_r2t);
        p.backing_MBps = in_range_f("backing_MBps", s.backing_MBps.unwrap_or(p.backing_MBps), 1.0, 1e6)?;
        p.target_cmd_ns = in_range_f("target_cmd_ns", s.target_cmd_ns.unwrap_or(p.target_cmd_ns), 0.0, 1e9)?;
        p.initiator_cmd_ns =
            in_range_f("initiator_cmd_ns", s.initiator_cmd_ns.unwrap_or(p.initiator_cmd_ns), 0.0, 1e9)?;
        let block_bytes = in_range_u("block_bytes", s.block_bytes.unwrap_or(DEFAULT_BLOCK_BYTES), 512, 1 << 30)?;
        let total = s.total_bytes.unwrap_or(DEFAULT_TOTAL_BYTES.max(block_bytes));
        let total_bytes = in_range_u("total_bytes", total, block_bytes, 1 << 40)?;

        let verbs = Scenario::rc_path(self.seed, &testbed, self.path.verbs(), p.max_burst_bytes as u64)?;
        let r = IserResolved {
            seed: self.seed,
            testbed,
            op,
            params: p,
            block_bytes,
            total_bytes,
            sq_depth: SQ_DEPTH,
            delay_us: verbs.delay_us,
            fibre_km: verbs.fibre_km,
            path: Some(Box::new(verbs)),
        };
        if r.commands() > MAX_COMMANDS {
            return err(format!(
                "total_bytes: {total_bytes} makes {} SCSI commands of at most {} bytes (valid: up to {MAX_COMMANDS} \
                 commands; raise block_bytes or lower total_bytes)",
                r.commands(),
                r.params.max_command_bytes
            ));
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(json: &str) -> Result<IserResolved, String> {
        crate::scenario::validate_json::<IserScenario>(json).map_err(|e| e.0)
    }

    #[test]
    fn defaults_are_the_rfc_and_linux_values() {
        let r = resolve(r#"{"op": "write"}"#).unwrap();
        let p = &r.params;
        assert_eq!(
            (p.queue_depth, p.max_burst_bytes, p.first_burst_bytes, p.max_outstanding_r2t),
            (32, 262144, 65536, 1)
        );
        assert!(p.immediate_data && p.initial_r2t);
        assert_eq!((r.block_bytes, r.total_bytes, r.commands()), (1 << 20, 64 << 20, 128));
    }

    #[test]
    fn bad_input_names_the_parameter_and_range() {
        let cases = [
            (r#"{"op": "trim"}"#, "op: unknown 'trim' (valid: read, write)"),
            (r#"{"op": "read", "iser": {"queue_depth": 0}}"#, "queue_depth: 0 is out of range [1, 4096]"),
            (r#"{"op": "read", "iser": {"first_burst_bytes": 300000}}"#, "first_burst_bytes: 300000 is out of range"),
            (
                r#"{"op": "read", "iser": {"block_bytes": 4096, "total_bytes": 100}}"#,
                "total_bytes: 100 is out of range",
            ),
            (r#"{"op": "read", "iser": {"block_bytes": 512, "total_bytes": 1099511627776}}"#, "total_bytes: "),
            (r#"{"op": "read", "path": {"delay_us": -1}}"#, "delay_us: -1 is out of range"),
            (r#"{"op": "read", "testbed": "modern"}"#, "testbed: unknown 'modern' for iSER"),
            (r#"{"op": "read", "iser": {"bogus": 1}}"#, "unknown field `bogus`"),
        ];
        for (json, want) in cases {
            let e = resolve(json).unwrap_err();
            assert!(e.contains(want), "{json}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
