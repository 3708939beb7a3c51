#![allow(non_snake_case)]
//! The estimate: the migration's block moves as flows over a fluid network
//! ([`crate::net::flow`]) of the resources every moved block uses, solved for its max-min
//! rates; the time is the bytes to move over the rate, the bottleneck the resource the
//! solution fills (or the nodes' own latency bound when none is full).
//!
//! Every moved block is read from its old NSD (the source LUN, through its NSD server's
//! storage path, CPU and adapter), carried by the node moving it (in and out of its adapter),
//! written to a new NSD (the target server's adapter, CPU, storage path and LUN), and crosses
//! one WAN link: the route of the target server's LID when the nodes are on the source site,
//! of the node's when they are on the target site (minhop with LMC, [`crate::pfs::routing`]).
//! GPFS stripes every file's blocks evenly over all NSDs and the restripe hands files to the
//! nodes' threads ([RESTRIPE]), so each node's flow spreads over the moved LUNs, their servers,
//! the new LUNs and theirs in proportion to the blocks they hold.
//!
//! Why flow level: a 2 TB move is 8 million 256 KiB blocks over hours; no queue, credit or
//! timer of the packet level lasts more than milliseconds of it, and the rate is set by which
//! resource fills. What is left out: the file system's other users, disk seeks beyond the
//! profile's per-I/O time, and the transient at start and end.

use super::scenario::{Method, MigrateResolved, NodesAt};
use crate::net::flow::{loads, max_min, Demand};
use crate::pfs::routing::Routes;

/// The machines a case runs on: the resolved scenario's, or a what-if's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Setup {
    pub wan_links: u32,
    pub source_servers: u32,
    pub target_servers: u32,
    /// A source (target) server that has failed: its NSDs are served by its backup, the next
    /// server of its NSD server list (server lists given round-robin, as mmcrnsd stanzas are).
    pub lost_source_server: Option<u32>,
    pub lost_target_server: Option<u32>,
}

/// A kind of resource: the estimate's names for what can bound a migration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    SourceLuns,
    TargetLuns,
    SourceServerStorage,
    TargetServerStorage,
    SourceServerCpu,
    TargetServerCpu,
    SourceServerAdapters,
    TargetServerAdapters,
    WanLinks,
    NodeAdapters,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::SourceLuns => "source_luns",
            Kind::TargetLuns => "target_luns",
            Kind::SourceServerStorage => "source_server_storage_path",
            Kind::TargetServerStorage => "target_server_storage_path",
            Kind::SourceServerCpu => "source_server_cpu",
            Kind::TargetServerCpu => "target_server_cpu",
            Kind::SourceServerAdapters => "source_server_adapters",
            Kind::TargetServerAdapters => "target_server_adapters",
            Kind::WanLinks => "wan_links",
            Kind::NodeAdapters => "node_adapters",
        }
    }
}

/// The nodes' own bound when no resource fills: per-file metadata round trips, or the data in
/// flight per thread (restripe: one block) or per stream (copy: its window) over a block's
/// round trip.
pub const PER_FILE_ROUND_TRIPS: &str = "per_file_round_trips";
pub const BLOCK_LATENCY: &str = "block_latency";
pub const STREAM_WINDOW: &str = "stream_window";

/// One kind of resource in a solved case: how many, each one's capacity, the busiest one's
/// load and utilisation.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[allow(non_snake_case)]
pub struct ResourceUse {
    pub resource: &'static str,
    pub count: u32,
    pub capacity_MBps: f64,
    pub busiest_MBps: f64,
    pub util: f64,
}

/// One case solved.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    pub moved_bytes: f64,
    /// Aggregate rate (bytes/s); 0 when no path is left.
    pub rate_Bps: f64,
    pub time_s: f64,
    pub bottleneck: &'static str,
    /// Every resource kind filled to within 0.1 %.
    pub saturated: Vec<&'static str>,
    pub resources: Vec<ResourceUse>,
    /// A thread's (stream's) time per file in metadata round trips and in data (s).
    pub file_metadata_s: f64,
    pub file_data_s: f64,
}

/// Filled to within this share of its capacity, a resource is a bottleneck.
const FULL: f64 = 0.999;

struct Net {
    capacity: Vec<f64>,
    kind: Vec<Kind>,
}

impl Net {
    fn add(&mut self, kind: Kind, capacity_Bps: f64, n: u32) -> usize {
        let first = self.capacity.len();
        self.capacity.extend(std::iter::repeat_n(capacity_Bps, n as usize));
        self.kind.extend(std::iter::repeat_n(kind, n as usize));
        first
    }
}

/// The server of each of `luns` LUNs over `servers`, with a lost one's LUNs on its backup.
fn server_of(luns: u32, servers: u32, lost: Option<u32>) -> Vec<u32> {
    (0..luns)
        .map(|n| {
            let s = n % servers;
            match lost {
                Some(l) if l == s => (s + 1) % servers,
                _ => s,
            }
        })
        .collect()
}

/// A worker's (restripe thread's, copy stream's) time per file (s): in metadata round trips, and
/// moving its data with one block (restripe) or a window (copy) in flight.
fn per_file(r: &MigrateResolved, moved_share: f64) -> (f64, f64) {
    let p = &r.pfs;
    let m = &r.params;
    let block = p.fs.block_bytes as f64;
    let wan_rtt_s = 2.0 * r.one_way_s;
    // A block from its read request to its write's acknowledgement: the WAN round trip, both
    // LUNs' service, both servers' and the node's CPU for the two RPCs, both adapter hops.
    let lun_service_s = block / (p.disk.lun_MBps(p.fs.block_bytes) * 1e6);
    let block_s = wan_rtt_s
        + 2.0 * lun_service_s
        + 2.0 * (p.server.request_cpu_us + p.client.rpc_cpu_us) * 1e-6
        + 2.0 * block / (r.host_MBps * 1e6);
    let file_bytes = r.data_bytes as f64 / r.files as f64 * moved_share;
    match r.method {
        Method::Restripe => {
            let meta = m.restripe_file_round_trips as f64 * wan_rtt_s;
            (meta, file_bytes / block * block_s)
        }
        Method::Copy => {
            let meta = (p.fs.create_round_trips + m.copy_extra_round_trips) as f64 * wan_rtt_s;
            let window = (m.stream_window_bytes as f64).max(block);
            (meta, file_bytes * block_s / window)
        }
    }
}

/// Solve one case.
#[allow(non_snake_case)]
pub fn estimate(r: &MigrateResolved, s: &Setup) -> Estimate {
    let p = &r.pfs;
    let (read_luns, moved_share) = match r.method {
        Method::Restripe => (r.move_nsds, r.move_nsds as f64 / r.source_nsds as f64),
        Method::Copy => (r.source_nsds, 1.0),
    };
    let moved_bytes = r.data_bytes as f64 * moved_share;
    let block = p.fs.block_bytes as f64;
    let lun_Bps = p.disk.lun_MBps(p.fs.block_bytes) * 1e6;
    let cpu_Bps = p.server.cores as f64 * block / (p.server.request_cpu_us * 1e-6);
    let storage_Bps = p.server.storage_path_MBps * 1e6;
    let host_Bps = r.host_MBps * 1e6;

    let mut net = Net { capacity: Vec::new(), kind: Vec::new() };
    let src_lun = net.add(Kind::SourceLuns, lun_Bps, read_luns);
    let dst_lun = net.add(Kind::TargetLuns, lun_Bps, r.target_nsds);
    let src_sto = net.add(Kind::SourceServerStorage, storage_Bps, s.source_servers);
    let dst_sto = net.add(Kind::TargetServerStorage, storage_Bps, s.target_servers);
    let src_cpu = net.add(Kind::SourceServerCpu, cpu_Bps, s.source_servers);
    let dst_cpu = net.add(Kind::TargetServerCpu, cpu_Bps, s.target_servers);
    let src_nic = net.add(Kind::SourceServerAdapters, host_Bps, s.source_servers);
    let dst_nic = net.add(Kind::TargetServerAdapters, host_Bps, s.target_servers);
    let wan = net.add(Kind::WanLinks, r.link_MBps * 1e6, s.wan_links);
    // Each node's adapter: in and out are separate directions of a full-duplex port.
    let node_in = net.add(Kind::NodeAdapters, host_Bps, r.nodes);
    let node_out = net.add(Kind::NodeAdapters, host_Bps, r.nodes);

    let src_server = server_of(read_luns, s.source_servers, s.lost_source_server);
    let dst_server = server_of(r.target_nsds, s.target_servers, s.lost_target_server);
    let lmc = p.failover.lmc;
    let (meta_s, data_s) = per_file(r, moved_share);
    let workers = match r.method {
        Method::Restripe => r.params.pit_threads_per_node as f64,
        Method::Copy => r.streams as f64 / r.nodes as f64,
    };
    let file_bytes = moved_bytes / r.files as f64;
    let cap = workers * file_bytes / (meta_s + data_s);

    let flows: Vec<Demand> = (0..r.nodes as usize)
        .map(|h| {
            let mut uses: Vec<(usize, f64)> = Vec::new();
            let wr = 1.0 / read_luns as f64;
            for (i, &sv) in src_server.iter().enumerate() {
                let sv = sv as usize;
                uses.extend([(src_lun + i, wr), (src_sto + sv, wr), (src_cpu + sv, wr), (src_nic + sv, wr)]);
            }
            let ww = 1.0 / r.target_nsds as f64;
            for (j, &tv) in dst_server.iter().enumerate() {
                let tv = tv as usize;
                uses.extend([(dst_lun + j, ww), (dst_sto + tv, ww), (dst_cpu + tv, ww), (dst_nic + tv, ww)]);
            }
            match r.nodes_at {
                NodesAt::Source => {
                    let routes = Routes::new(s.wan_links as usize, lmc, r.nodes as usize, s.target_servers as usize);
                    for &tv in &dst_server {
                        if let Some(k) = routes.to_server[tv as usize] {
                            uses.push((wan + k, ww));
                        }
                    }
                }
                NodesAt::Target => {
                    let routes = Routes::new(s.wan_links as usize, lmc, s.source_servers as usize, r.nodes as usize);
                    if let Some(k) = routes.to_server[h] {
                        uses.push((wan + k, 1.0));
                    }
                }
            }
            uses.extend([(node_in + h, 1.0), (node_out + h, 1.0)]);
            Demand::merged(uses, cap)
        })
        .collect();

    let (rate, load) = if s.wan_links == 0 {
        (vec![0.0; flows.len()], vec![0.0; net.capacity.len()])
    } else {
        let rate = max_min(&net.capacity, &flows);
        let load = loads(net.capacity.len(), &flows, &rate);
        (rate, load)
    };
    let total: f64 = rate.iter().sum();

    let mut resources: Vec<(Kind, ResourceUse)> = Vec::new();
    for (i, &k) in net.kind.iter().enumerate() {
        let u = load[i] / net.capacity[i];
        match resources.iter_mut().find(|(q, _)| *q == k) {
            Some((_, ru)) => {
                ru.count += 1;
                if u > ru.util {
                    ru.util = u;
                    ru.busiest_MBps = load[i] / 1e6;
                }
            }
            None => resources.push((
                k,
                ResourceUse {
                    resource: k.name(),
                    count: 1,
                    capacity_MBps: net.capacity[i] / 1e6,
                    busiest_MBps: load[i] / 1e6,
                    util: u,
                },
            )),
        }
    }
    for (k, ru) in resources.iter_mut() {
        if *k == Kind::NodeAdapters {
            ru.count /= 2;
        }
    }
    let mut ranked: Vec<&(Kind, ResourceUse)> = resources.iter().filter(|(_, ru)| ru.util >= FULL).collect();
    ranked.sort_by(|a, b| b.1.util.total_cmp(&a.1.util).then(a.0.cmp(&b.0)));
    let saturated: Vec<&'static str> = ranked.iter().map(|(k, _)| k.name()).collect();
    let bottleneck = if total <= 0.0 {
        Kind::WanLinks.name()
    } else if let Some(first) = saturated.first() {
        first
    } else if meta_s >= data_s {
        PER_FILE_ROUND_TRIPS
    } else if r.method == Method::Restripe {
        BLOCK_LATENCY
    } else {
        STREAM_WINDOW
    };
    Estimate {
        moved_bytes,
        rate_Bps: total,
        time_s: if total > 0.0 { moved_bytes / total } else { f64::INFINITY },
        bottleneck,
        saturated,
        resources: resources.into_iter().map(|(_, ru)| ru).collect(),
        file_metadata_s: meta_s,
        file_data_s: data_s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pfs::migrate::scenario::MigrateScenario;
    use crate::scenario::validate_json;

    fn resolve(json: &str) -> MigrateResolved {
        validate_json::<MigrateScenario>(json).unwrap()
    }

    fn setup(r: &MigrateResolved) -> Setup {
        Setup {
            wan_links: r.wan_links,
            source_servers: r.source_servers,
            target_servers: r.target_servers,
            lost_source_server: None,
            lost_target_server: None,
        }
    }

    const S3: &str = r#"{"path": {"wan_links": 4, "fibre_km": 10}}"#;

    #[test]
    fn moving_two_of_six_nsds_takes_as_long_as_six_when_the_luns_bound_it() {
        let all = resolve(S3);
        let two = resolve(r#"{"path": {"wan_links": 4, "fibre_km": 10}, "migrate": {"move_nsds": 2}}"#);
        let (a, b) = (estimate(&all, &setup(&all)), estimate(&two, &setup(&two)));
        assert_eq!(a.bottleneck, "source_luns");
        assert_eq!(b.bottleneck, "source_luns");
        assert!((b.moved_bytes * 3.0 - a.moved_bytes).abs() < 1.0);
        assert!((b.time_s / a.time_s - 1.0).abs() < 0.01, "{} vs {}", b.time_s, a.time_s);
        // Over a slow link the shared WAN bounds it instead, and moving a third takes a third.
        let (mut one, mut one_two) = (all.clone(), two.clone());
        one.link_MBps = 100.0;
        one_two.link_MBps = 100.0;
        let (c, d) = (estimate(&one, &setup(&one)), estimate(&one_two, &setup(&one_two)));
        assert_eq!((c.bottleneck, d.bottleneck), ("wan_links", "wan_links"));
        assert!((d.time_s * 3.0 / c.time_s - 1.0).abs() < 0.01, "{} vs {}", d.time_s, c.time_s);
    }

    #[test]
    fn more_links_never_slower_and_more_data_never_faster() {
        for method in ["restripe", "copy"] {
            for servers in [1, 2, 3, 5] {
                for disks in [1, 8, 64] {
                    let json = |links: u32, tb: u64| {
                        format!(
                            r#"{{"path": {{"wan_links": {links}, "fibre_km": 10}}, "migrate": {{"method": "{method}",
                            "target_servers": {servers}, "data_disks": {disks}, "data_bytes": {}}}}}"#,
                            tb * 1_000_000_000_000
                        )
                    };
                    let mut last = f64::INFINITY;
                    for links in 1..=8 {
                        let r = resolve(&json(links, 2));
                        let t = estimate(&r, &setup(&r)).time_s;
                        assert!(t <= last * (1.0 + 1e-12), "{method} {servers} {disks}: {links} links {t} > {last}");
                        last = t;
                    }
                    let mut last = 0.0;
                    for tb in [1, 2, 5, 20] {
                        let r = resolve(&json(4, tb));
                        let t = estimate(&r, &setup(&r)).time_s;
                        assert!(t >= last, "{method}: {tb} TB took {t} < {last}");
                        last = t;
                    }
                }
            }
        }
    }

    #[test]
    fn the_bottleneck_is_the_resource_made_tiny() {
        let base = resolve(S3);
        let name = |f: &dyn Fn(&mut MigrateResolved)| {
            let mut r = base.clone();
            f(&mut r);
            estimate(&r, &setup(&r)).bottleneck
        };
        assert_eq!(name(&|r| r.link_MBps = 10.0), "wan_links");
        assert_eq!(name(&|r| r.pfs.server.storage_path_MBps = 10.0), "source_server_storage_path");
        assert_eq!(name(&|r| r.pfs.server.cores = 1), "source_luns");
        assert_eq!(
            name(&|r| {
                r.pfs.server.cores = 1;
                r.pfs.server.request_cpu_us = 1e4;
            }),
            "source_server_cpu"
        );
        assert_eq!(name(&|r| r.host_MBps = 10.0), "source_server_adapters");
        assert_eq!(name(&|r| r.target_nsds = 1), "target_luns");
        assert_eq!(name(&|r| r.params.pit_threads_per_node = 1), BLOCK_LATENCY);
        assert_eq!(
            name(&|r| {
                r.files = r.data_bytes / 10_000;
                r.one_way_s = 5e-3;
            }),
            PER_FILE_ROUND_TRIPS
        );
        let mut copy =
            resolve(r#"{"path": {"wan_links": 4, "fibre_km": 10}, "migrate": {"method": "copy", "streams": 2}}"#);
        copy.one_way_s = 10e-3;
        assert_eq!(estimate(&copy, &setup(&copy)).bottleneck, STREAM_WINDOW);
        copy.files = copy.data_bytes / 1_000_000;
        assert_eq!(estimate(&copy, &setup(&copy)).bottleneck, PER_FILE_ROUND_TRIPS);
    }

    #[test]
    fn no_resource_is_loaded_above_its_capacity_and_a_lost_server_loads_its_backup() {
        let r = resolve(S3);
        let mut s = setup(&r);
        s.lost_source_server = Some(0);
        let e = estimate(&r, &s);
        for ru in &e.resources {
            assert!(ru.util <= 1.0 + 1e-9, "{ru:?}");
        }
        let storage = e.resources.iter().find(|ru| ru.resource == "source_server_storage_path").unwrap();
        assert!((storage.busiest_MBps - e.rate_Bps / 1e6).abs() < 1e-6, "{storage:?}");
    }
}
