//! The migration scenario: plain data naming the testbed, the path with its parallel WAN links,
//! the data to move and the machines on each side. Validated once, here, into a
//! [`MigrateResolved`]; the path's rates come from the parallel file system's own resolution
//! ([`crate::pfs::scenario`]: the same testbeds, extenders and messages), not set anew.

use serde::{Deserialize, Serialize};

use super::params::MigrateParams;
use super::MigrateRecord;
use crate::pfs::params::PfsParams;
use crate::pfs::scenario::{PfsPathSpec, PfsScenario, PfsSpec};
use crate::scenario::{err, in_range_u, ModelScenario, ScenarioError};

/// How the data moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// GPFS: the new NSDs added (mmadddisk), the old ones suspended and emptied block by block
    /// by mmrestripefs / mmdeldisk on the -N nodes; one file system throughout.
    Restripe,
    /// A parallel copy (cp or rsync streams) from the old file system to a new one.
    Copy,
}

impl Method {
    pub const NAMES: [&'static str; 2] = ["restripe", "copy"];

    pub fn name(self) -> &'static str {
        match self {
            Method::Restripe => "restripe",
            Method::Copy => "copy",
        }
    }
}

/// Which site's nodes do the moving (run mmrestripefs -N, or the copy streams).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodesAt {
    Source,
    Target,
}

impl NodesAt {
    pub const NAMES: [&'static str; 2] = ["source", "target"];
}

/// The migration (every field optional: the defaults are the [S3] move).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
#[allow(non_snake_case)]
pub struct MigrateSpec {
    pub method: Option<Method>,
    /// Data in the file system (restripe: spread evenly over the source NSDs) or to copy.
    pub data_bytes: Option<u64>,
    pub files: Option<u64>,
    /// NSDs of the file system on the source site.
    pub source_nsds: Option<u32>,
    /// Restripe: how many of the source NSDs are emptied (default all).
    pub move_nsds: Option<u32>,
    /// New NSDs on the target site (default as many as are moved).
    pub target_nsds: Option<u32>,
    pub source_servers: Option<u32>,
    pub target_servers: Option<u32>,
    /// Nodes doing the work (mmrestripefs -N, or running the copy streams).
    pub nodes: Option<u32>,
    pub nodes_at: Option<NodesAt>,
    /// Restripe: PIT threads per node.
    pub threads: Option<u32>,
    /// Copy: streams in all (spread over the nodes).
    pub streams: Option<u32>,
    pub data_disks: Option<u32>,
    pub disk_MBps: Option<f64>,
    pub block_bytes: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MigrateScenario {
    #[serde(default = "crate::scenario::default_seed")]
    pub seed: u64,
    /// Hardware profile (a verbs testbed; default s3, the CSCS testbed of the move).
    pub testbed: Option<String>,
    #[serde(default)]
    pub path: PfsPathSpec,
    #[serde(default)]
    pub migrate: MigrateSpec,
}

/// Every parameter the estimate uses, in range.
#[derive(Debug, Clone, Serialize)]
#[allow(non_snake_case)]
pub struct MigrateResolved {
    pub seed: u64,
    pub testbed: String,
    pub extender: String,
    pub pfs: PfsParams,
    pub params: MigrateParams,
    pub method: Method,
    pub data_bytes: u64,
    pub files: u64,
    pub source_nsds: u32,
    pub move_nsds: u32,
    pub target_nsds: u32,
    pub source_servers: u32,
    pub target_servers: u32,
    pub nodes: u32,
    pub nodes_at: NodesAt,
    pub streams: u32,
    pub wan_links: u32,
    pub fibre_km: f64,
    /// One way between the sites' hosts (s), and what one WAN link and one host adapter carry
    /// (MB/s): as the parallel file system model derives them.
    pub one_way_s: f64,
    pub link_MBps: f64,
    pub host_MBps: f64,
}

/// The [S3] move: 2 TB in 5,050 files on 6 NSDs (issue 24, citing S3).
pub const DEFAULT_DATA_BYTES: u64 = 2_000_000_000_000;
pub const DEFAULT_FILES: u64 = 5_050;
pub const DEFAULT_NSDS: u32 = 6;

impl ModelScenario for MigrateScenario {
    type Resolved = MigrateResolved;
    type Record = MigrateRecord;

    fn run(r: &MigrateResolved) -> MigrateRecord {
        super::run(r)
    }

    fn resolve(&self) -> Result<MigrateResolved, ScenarioError> {
        let m = &self.migrate;
        let method = m.method.unwrap_or(Method::Restripe);
        let data_bytes = in_range_u("data_bytes", m.data_bytes.unwrap_or(DEFAULT_DATA_BYTES), 1, 1 << 60)?;
        let files = in_range_u("files", m.files.unwrap_or(DEFAULT_FILES), 1, 1 << 40)?;
        if files > data_bytes {
            return err(format!("files: {files} is more than data_bytes = {data_bytes} (valid: 1..data_bytes; a file holds at least a byte)"));
        }
        let source_nsds = in_range_u("source_nsds", m.source_nsds.unwrap_or(DEFAULT_NSDS) as u64, 1, 4096)? as u32;
        let move_nsds = match (method, m.move_nsds) {
            (Method::Copy, Some(_)) => {
                return err(
                    "move_nsds: a copy moves whole files, so all source NSDs (move_nsds is for method restripe)",
                )
            }
            (_, given) => in_range_u("move_nsds", given.unwrap_or(source_nsds) as u64, 1, source_nsds as u64)? as u32,
        };
        let target_nsds = in_range_u("target_nsds", m.target_nsds.unwrap_or(move_nsds) as u64, 1, 4096)? as u32;
        let source_servers = in_range_u("source_servers", m.source_servers.unwrap_or(2) as u64, 1, 1024)? as u32;
        let target_servers = in_range_u("target_servers", m.target_servers.unwrap_or(2) as u64, 1, 1024)? as u32;
        let nodes = in_range_u("nodes", m.nodes.unwrap_or(2) as u64, 1, 1024)? as u32;
        let mut params = MigrateParams::gpfs_2010();
        if method == Method::Copy && m.threads.is_some() {
            return err("threads: the PIT threads of a restripe (a copy has streams)");
        }
        if method == Method::Restripe && m.streams.is_some() {
            return err("streams: the copy streams (a restripe has threads per node)");
        }
        params.pit_threads_per_node =
            in_range_u("threads", m.threads.unwrap_or(params.pit_threads_per_node) as u64, 1, 1024)? as u32;
        let streams = in_range_u("streams", m.streams.unwrap_or(8 * nodes) as u64, 1, 1 << 20)? as u32;
        // The path, the LUNs and the block size as the parallel file system resolves them.
        // Built as plain data, as a user's file would be: new fields of the parallel file system's
        // scenario keep their defaults.
        let spec = serde_json::json!({
            "seed": self.seed,
            "testbed": self.testbed,
            "path": self.path,
            "pfs": PfsSpec {
                servers: Some(target_servers),
                clients: Some(nodes),
                data_disks: m.data_disks,
                disk_MBps: m.disk_MBps,
                block_bytes: m.block_bytes,
                ..PfsSpec::default()
            },
        });
        let pfs = PfsScenario::from_json(&spec.to_string())?.resolve()?;
        Ok(MigrateResolved {
            seed: self.seed,
            testbed: pfs.testbed,
            extender: pfs.extender,
            pfs: pfs.params,
            params,
            method,
            data_bytes,
            files,
            source_nsds,
            move_nsds,
            target_nsds,
            source_servers,
            target_servers,
            nodes,
            nodes_at: m.nodes_at.unwrap_or(NodesAt::Source),
            streams,
            wan_links: pfs.wan_links,
            fibre_km: pfs.fibre_km,
            one_way_s: pfs.one_way_s,
            link_MBps: pfs.link_MBps,
            host_MBps: pfs.host_MBps,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(json: &str) -> Result<MigrateResolved, String> {
        crate::scenario::validate_json::<MigrateScenario>(json).map_err(|e| e.0)
    }

    #[test]
    fn the_defaults_are_the_s3_move_and_bad_input_names_the_parameter_and_range() {
        let r = resolve(r#"{"path": {"wan_links": 4, "fibre_km": 10}}"#).unwrap();
        assert_eq!(
            (r.data_bytes, r.files, r.source_nsds, r.move_nsds, r.target_nsds),
            (2_000_000_000_000, 5050, 6, 6, 6)
        );
        assert_eq!((r.method, r.wan_links), (Method::Restripe, 4));
        let cases = [
            (r#"{"migrate": {"move_nsds": 7}}"#, "move_nsds: 7 is out of range [1, 6]"),
            (r#"{"migrate": {"data_bytes": 0}}"#, "data_bytes: 0 is out of range"),
            (r#"{"migrate": {"data_bytes": 10, "files": 11}}"#, "files: 11 is more than data_bytes = 10"),
            (r#"{"migrate": {"method": "copy", "move_nsds": 2}}"#, "move_nsds: a copy moves whole files"),
            (r#"{"migrate": {"streams": 4}}"#, "streams: the copy streams"),
            (r#"{"migrate": {"method": "copy", "threads": 4}}"#, "threads: the PIT threads of a restripe"),
            (r#"{"migrate": {"data_disks": 0}}"#, "data_disks: 0 is out of range [1, 64]"),
            (r#"{"migrate": {"target_servers": 0}}"#, "target_servers: 0 is out of range [1, 1024]"),
            (r#"{"migrate": {"method": "rsync"}}"#, "unknown variant `rsync`"),
            (r#"{"path": {"wan_links": 99}}"#, "wan_links: 99 is out of range"),
        ];
        for (json, want) in cases {
            let e = resolve(json).unwrap_err();
            assert!(e.contains(want), "{json}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
