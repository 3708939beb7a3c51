//! Migration planning: how long moving a file system's data from one site's NSD servers to the
//! other's takes, what bounds it, and how that changes with links and servers added or lost.
//!
//! Two methods ([`scenario::Method`]): `restripe`, GPFS's own (new NSDs added on the target
//! site, the old ones suspended and emptied by mmrestripefs / mmdeldisk on the -N nodes, one
//! file system and its files throughout), and `copy`, a parallel copy (cp or rsync streams) into
//! a new file system. One concern per file: [`params`] (the migration's own costs, cited),
//! [`scenario`] (plain data, validated once), [`model`] (the fluid network of one case and its
//! bottleneck). This file runs the case asked and its what-ifs into a [`MigrateRecord`].

pub(crate) mod model;
pub(crate) mod params;
pub(crate) mod scenario;

use serde::Serialize;

use crate::scenario::{run_json, validate_json, ScenarioError};
use model::{estimate, Estimate, ResourceUse, Setup};
pub(crate) use scenario::{Method, MigrateResolved, MigrateScenario};

/// One what-if: the case changed by one link or server, solved again.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[allow(non_snake_case)]
pub struct WhatIf {
    /// What changed, e.g. "wan_links +1", "a source server lost" ("as given": the case asked).
    pub case: String,
    /// WAN links in this case.
    pub wan_links: u32,
    /// NSD servers on the source site in this case.
    pub source_servers: u32,
    /// NSD servers on the target site in this case.
    pub target_servers: u32,
    /// None when the case leaves no path (no link, no server).
    pub time_s: Option<f64>,
    /// Aggregate migration rate, MB/s (0 when no path is left).
    pub rate_MBps: f64,
    /// The resource that limits the rate, or why nothing moves.
    pub bottleneck: String,
    /// Change of time against the case asked (%; + is slower).
    pub time_change_pct: Option<f64>,
}

/// A migration's estimate: the case asked, its time, rate and bottleneck, each resource's load and the what-if table.
#[derive(Debug, Clone, Serialize)]
#[allow(non_snake_case)]
pub struct MigrateRecord {
    /// Always "pfs_migrate" (the record kind in the results store).
    pub kind: &'static str,
    /// The hardware profile (a verbs testbed).
    pub testbed: String,
    /// The range extender's name on the WAN links.
    pub extender: String,
    /// "restripe" (mmrestripefs onto NSDs on the target site) or "copy" (streams between two file systems).
    pub method: &'static str,
    /// The run seed (the estimate draws nothing; recorded for the store).
    pub seed: u64,
    /// Data in the file system (restripe) or to copy, bytes.
    pub data_bytes: u64,
    /// Files holding `data_bytes`.
    pub files: u64,
    /// NSDs of the file system on the source site.
    pub source_nsds: u32,
    /// Restripe: source NSDs emptied.
    pub move_nsds: u32,
    /// New NSDs on the target site.
    pub target_nsds: u32,
    /// NSD servers on the source site.
    pub source_servers: u32,
    /// NSD servers on the target site.
    pub target_servers: u32,
    /// Nodes doing the work (mmrestripefs -N, or running the copy streams).
    pub nodes: u32,
    /// "source" or "target": the site the working nodes are on.
    pub nodes_at: &'static str,
    /// Restripe: PIT threads per node (None for a copy).
    pub threads_per_node: Option<u32>,
    /// Copy: streams in all (None for a restripe).
    pub streams: Option<u32>,
    /// Parallel WAN links between the sites.
    pub wan_links: u32,
    /// Fibre length of the WAN links, km.
    pub fibre_km: f64,
    /// One-way delay between the sites' hosts, microseconds.
    pub one_way_delay_us: f64,
    /// The file system's block size, bytes (the I/O size).
    pub block_bytes: u64,
    /// Capacities derived: one WAN link, one host adapter, one LUN at block-sized I/O (MB/s).
    pub link_MBps: f64,
    /// What one host adapter carries, MB/s.
    pub host_MBps: f64,
    /// What one LUN delivers at block-sized I/O, MB/s.
    pub lun_MBps: f64,
    /// Bytes that cross the WAN (restripe: the share on the NSDs emptied).
    pub moved_bytes: f64,
    /// Estimated migration time, seconds.
    pub time_s: f64,
    /// `time_s` in minutes.
    pub time_min: f64,
    /// Aggregate migration rate, MB/s.
    pub rate_MBps: f64,
    /// The resource (or per-file round trips, block latency, stream window) that limits the rate.
    pub bottleneck: &'static str,
    /// Every resource kind filled to within 0.1 %, most loaded first.
    pub saturated: Vec<&'static str>,
    /// Each resource kind's count, capacity, busiest member's load and utilisation.
    pub resources: Vec<ResourceUse>,
    /// A worker's time per file: metadata round trips and data (s).
    pub file_metadata_s: f64,
    /// A worker's time per file moving its data, seconds (with `file_metadata_s`).
    pub file_data_s: f64,
    /// The case solved again with one link or server more, fewer or lost.
    pub what_if: Vec<WhatIf>,
    /// What the estimate is: the flow-level model it comes from.
    pub model: &'static str,
}

fn setup_of(r: &MigrateResolved) -> Setup {
    Setup {
        wan_links: r.wan_links,
        source_servers: r.source_servers,
        target_servers: r.target_servers,
        lost_source_server: None,
        lost_target_server: None,
    }
}

/// The what-if cases: links +1 and -1 (one lost, the SM rerouted), servers +1 and -1 on each
/// side, and one server lost on each side (its NSDs served by its backup).
fn what_if_cases(r: &MigrateResolved) -> Vec<(String, Setup)> {
    let base = setup_of(r);
    let mut cases = vec![("as given".to_string(), base)];
    cases.push(("wan_links +1".into(), Setup { wan_links: base.wan_links + 1, ..base }));
    cases.push(("wan_links -1 (one lost)".into(), Setup { wan_links: base.wan_links - 1, ..base }));
    cases.push(("source_servers +1".into(), Setup { source_servers: base.source_servers + 1, ..base }));
    cases.push(("source_servers -1".into(), Setup { source_servers: base.source_servers - 1, ..base }));
    cases.push(("a source server lost".into(), Setup { lost_source_server: Some(0), ..base }));
    cases.push(("target_servers +1".into(), Setup { target_servers: base.target_servers + 1, ..base }));
    cases.push(("target_servers -1".into(), Setup { target_servers: base.target_servers - 1, ..base }));
    cases.push(("a target server lost".into(), Setup { lost_target_server: Some(0), ..base }));
    cases
}

fn what_if_row(r: &MigrateResolved, case: String, s: &Setup, base_s: f64) -> WhatIf {
    let no_server = s.source_servers == 0
        || s.target_servers == 0
        || (s.lost_source_server.is_some() && s.source_servers < 2)
        || (s.lost_target_server.is_some() && s.target_servers < 2);
    let (time_s, rate, bottleneck) = if no_server {
        (None, 0.0, "no NSD server left (the NSDs are unreachable)".to_string())
    } else if s.wan_links == 0 {
        (None, 0.0, "no WAN link left".to_string())
    } else {
        let e = estimate(r, s);
        (Some(e.time_s), e.rate_Bps / 1e6, e.bottleneck.to_string())
    };
    WhatIf {
        case,
        wan_links: s.wan_links,
        source_servers: s.source_servers,
        target_servers: s.target_servers,
        time_s,
        rate_MBps: rate,
        bottleneck,
        time_change_pct: time_s.map(|t| (t / base_s - 1.0) * 100.0),
    }
}

/// The estimate of a resolved scenario with its what-if table.
pub fn run(r: &MigrateResolved) -> MigrateRecord {
    let e: Estimate = estimate(r, &setup_of(r));
    let what_if = what_if_cases(r).into_iter().map(|(c, s)| what_if_row(r, c, &s, e.time_s)).collect();
    let p = &r.pfs;
    MigrateRecord {
        kind: "pfs_migrate",
        testbed: r.testbed.clone(),
        extender: r.extender.clone(),
        method: r.method.name(),
        seed: r.seed,
        data_bytes: r.data_bytes,
        files: r.files,
        source_nsds: r.source_nsds,
        move_nsds: r.move_nsds,
        target_nsds: r.target_nsds,
        source_servers: r.source_servers,
        target_servers: r.target_servers,
        nodes: r.nodes,
        nodes_at: match r.nodes_at {
            scenario::NodesAt::Source => "source",
            scenario::NodesAt::Target => "target",
        },
        threads_per_node: (r.method == Method::Restripe).then_some(r.params.pit_threads_per_node),
        streams: (r.method == Method::Copy).then_some(r.streams),
        wan_links: r.wan_links,
        fibre_km: r.fibre_km,
        one_way_delay_us: r.one_way_s * 1e6,
        block_bytes: p.fs.block_bytes,
        link_MBps: r.link_MBps,
        host_MBps: r.host_MBps,
        lun_MBps: p.disk.lun_MBps(p.fs.block_bytes),
        moved_bytes: e.moved_bytes,
        time_s: e.time_s,
        time_min: e.time_s / 60.0,
        rate_MBps: e.rate_Bps / 1e6,
        bottleneck: e.bottleneck,
        saturated: e.saturated,
        resources: e.resources,
        file_metadata_s: e.file_metadata_s,
        file_data_s: e.file_data_s,
        what_if,
        model: "flow-level: max-min fair rates over disks, servers, adapters and WAN links (crate::net::flow)",
    }
}

/// Validate a JSON scenario (the whole check, nothing runs).
pub fn validate_migrate_json(text: &str) -> Result<MigrateResolved, ScenarioError> {
    validate_json::<MigrateScenario>(text)
}

/// Validate a JSON scenario and estimate it: the migration planner's public entry point.
pub fn run_migrate_json(text: &str) -> Result<MigrateRecord, ScenarioError> {
    run_json::<MigrateScenario>(text)
}
