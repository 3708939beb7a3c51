//! The parallel file system scenario: plain data naming the testbed, the path with its parallel
//! WAN links, the file system and its workload, and the link events. Validated once, here, into
//! a [`PfsResolved`]; errors are one line naming the parameter and its valid range. The path is
//! resolved by the verbs model's own validation (the same testbeds, extenders and messages), and
//! the link and host rates are derived from it, not set anew.

use serde::{Deserialize, Serialize};

use super::packet::Network;
use super::params::{PfsParams, Variant};
use super::PfsRecord;
use crate::engine::time::to_s;
use crate::ib::headers;
use crate::ib::subnet_manager::{FabricStep, SubnetManagerParams};
use crate::link_events::{self, LinkAction, LinkEventSpec, SubnetManagerSpec};
use crate::scenario::{err, in_range_f, in_range_u, ModelScenario, PathSpec, Resolved, Scenario, ScenarioError};

/// The long-haul path (every field optional: the testbed decides).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PfsPathSpec {
    pub delay_us: Option<f64>,
    pub fibre_km: Option<f64>,
    pub extender: Option<String>,
    /// Parallel WAN links (extender pairs) between the sites.
    pub wan_links: Option<u32>,
}

/// The file system and its workload (every field optional: the profile decides).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
#[allow(non_snake_case)]
pub struct PfsSpec {
    pub variant: Option<Variant>,
    /// "write" (default) or "read".
    pub op: Option<String>,
    /// Client nodes on side A.
    pub clients: Option<u32>,
    pub threads: Option<u32>,
    /// NSD servers (OSSs) on side B.
    pub servers: Option<u32>,
    /// LUNs (NSDs, OSTs) per server.
    pub luns_per_server: Option<u32>,
    pub data_disks: Option<u32>,
    pub disk_MBps: Option<f64>,
    pub block_bytes: Option<u64>,
    pub stripe_count: Option<u32>,
    pub pagepool_bytes: Option<u64>,
    pub file_bytes: Option<u64>,
    pub duration_s: Option<f64>,
    /// Time-series interval (default 1 s, or a tenth of a shorter run).
    pub interval_s: Option<f64>,
    pub lmc: Option<u32>,
    pub ack_timeout_exp: Option<u32>,
    pub retry_count: Option<u32>,
    /// Automatic path migration (needs lmc >= 1; default false).
    pub apm: Option<bool>,
    /// "fluid" (default: flows over max-min shares, minutes in seconds) or "packet" (every
    /// packet over the verbs or TCP model, [`super::packet`]).
    pub network: Option<String>,
    /// Packet level: "rc" (verbs, RDMA for data; default) or "tcp" (over IPoIB).
    pub transport: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PfsScenario {
    #[serde(default = "crate::scenario::default_seed")]
    pub seed: u64,
    /// Hardware profile (a verbs testbed; default s3, the CSCS testbed of the GPFS drill).
    pub testbed: Option<String>,
    #[serde(default)]
    pub path: PfsPathSpec,
    #[serde(default)]
    pub pfs: PfsSpec,
    /// WAN links unplugged and plugged back during the run (`[[events]]`, the schema of
    /// python/longhaul/failover.py and `sim verbs`).
    #[serde(default)]
    pub events: Vec<LinkEventSpec>,
    /// The subnet manager's timing (`[subnet_manager]`, as for `sim verbs`).
    #[serde(default)]
    pub subnet_manager: SubnetManagerSpec,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PfsOp {
    Write,
    Read,
}

/// Every parameter the model uses, in range.
#[derive(Debug, Clone, Serialize)]
#[allow(non_snake_case)]
pub struct PfsResolved {
    pub seed: u64,
    pub testbed: String,
    pub extender: String,
    pub params: PfsParams,
    pub op: PfsOp,
    pub clients: u32,
    pub servers: u32,
    pub luns_per_server: u32,
    pub wan_links: u32,
    pub duration_s: f64,
    pub interval_s: f64,
    /// The link events in time order, and what the fabric does after them, when.
    pub events: Vec<LinkEventSpec>,
    pub subnet_manager: SubnetManagerParams,
    #[serde(skip)]
    pub fabric_steps: Vec<(crate::engine::Time, FabricStep)>,
    pub delay_us: f64,
    pub fibre_km: f64,
    /// One way between a client and a server: fibre, extender setting, the extender boxes and
    /// the two switches.
    pub one_way_s: f64,
    /// Data one WAN link carries (MB/s): the extender's rate (or its packet engine's), less the
    /// IB headers of MTU-sized RDMA packets, at most its credits per WAN round trip.
    pub link_MBps: f64,
    /// Data one host adapter moves (MB/s): port, PCIe and switch port, the slowest, less headers.
    pub host_MBps: f64,
    /// Which driver runs it, and over which transport ([`super::packet`]).
    pub network: Network,
    /// The path as the verbs model resolved it (the packet level builds its fabric from it).
    #[serde(skip)]
    pub verbs: Box<Resolved>,
}

pub const MAX_DURATION_S: f64 = 86_400.0;

impl ModelScenario for PfsScenario {
    type Resolved = PfsResolved;
    type Record = PfsRecord;

    fn run(r: &PfsResolved) -> PfsRecord {
        match r.network {
            Network::Fluid => super::fluid::run(r),
            Network::Packet { .. } => super::packet::run(r),
        }
    }

    fn resolve(&self) -> Result<PfsResolved, ScenarioError> {
        let testbed = self.testbed.clone().unwrap_or_else(|| "s3".into());
        let n = &self.pfs;
        let variant = n.variant.unwrap_or(Variant::Gpfs);
        let mut p = PfsParams::of(variant);
        let op = match n.op.as_deref().unwrap_or("write") {
            "write" => PfsOp::Write,
            "read" => PfsOp::Read,
            other => return err(format!("op: unknown '{other}' (valid: write, read)")),
        };
        p.client.threads = in_range_u("threads", n.threads.unwrap_or(p.client.threads) as u64, 1, 256)? as u32;
        let clients = in_range_u("clients", n.clients.unwrap_or(2) as u64, 1, 1024)? as u32;
        let servers = in_range_u("servers", n.servers.unwrap_or(2) as u64, 1, 1024)? as u32;
        let luns_per_server = in_range_u("luns_per_server", n.luns_per_server.unwrap_or(3) as u64, 1, 64)? as u32;
        p.disk.data_disks = in_range_u("data_disks", n.data_disks.unwrap_or(p.disk.data_disks) as u64, 1, 64)? as u32;
        p.disk.disk_MBps = in_range_f("disk_MBps", n.disk_MBps.unwrap_or(p.disk.disk_MBps), 1.0, 1e5)?;
        p.fs.block_bytes = in_range_u("block_bytes", n.block_bytes.unwrap_or(p.fs.block_bytes), 4096, 64 << 20)?;
        let luns = servers * luns_per_server;
        if let Some(c) = n.stripe_count {
            if variant == Variant::Gpfs {
                return err("stripe_count: GPFS stripes every file over all NSDs (stripe_count is for variant lustre)");
            }
            p.fs.stripe_count = in_range_u("stripe_count", c as u64, 1, luns as u64).map_err(|_| {
                ScenarioError(format!(
                    "stripe_count: {c} is more than the file system's OSTs (valid: 1..{luns} = servers x luns_per_server)"
                ))
            })? as u32;
        }
        p.client.pagepool_bytes =
            in_range_u("pagepool_bytes", n.pagepool_bytes.unwrap_or(p.client.pagepool_bytes), 1 << 20, 1 << 40)?;
        p.fs.file_bytes = in_range_u("file_bytes", n.file_bytes.unwrap_or(p.fs.file_bytes), p.fs.block_bytes, 1 << 50)?;
        let f = &mut p.failover;
        f.lmc = in_range_u("lmc", n.lmc.unwrap_or(f.lmc) as u64, 0, 7)? as u32;
        f.ack_timeout_exp =
            in_range_u("ack_timeout_exp", n.ack_timeout_exp.unwrap_or(f.ack_timeout_exp) as u64, 0, 31)? as u32;
        f.retry_count = in_range_u("retry_count", n.retry_count.unwrap_or(f.retry_count) as u64, 0, 7)? as u32;
        f.apm = n.apm.unwrap_or(f.apm);
        if f.apm && f.lmc == 0 {
            return Err(ScenarioError(
                "apm: automatic path migration needs an alternate path, a second LID per port (valid: lmc 1..7 with apm = true)"
                    .into(),
            ));
        }
        let duration_s = in_range_f("duration_s", n.duration_s.unwrap_or(60.0), 0.001, MAX_DURATION_S)?;
        let interval_default = (duration_s / 10.0).min(1.0);
        let interval_s =
            in_range_f("interval_s", n.interval_s.unwrap_or(interval_default), duration_s / 1e5, duration_s)?;

        let path = &self.path;
        let verbs_path = PathSpec {
            delay_us: path.delay_us,
            fibre_km: path.fibre_km,
            extender: path.extender.clone(),
            wan_links: path.wan_links,
            ..PathSpec::default()
        };
        let verbs = Scenario::rc_path(self.seed, &testbed, verbs_path, p.fs.block_bytes.min(1 << 30))?;
        let link_events = link_events::resolve(
            &self.events,
            &self.subnet_manager,
            verbs.wan_links,
            Some(duration_s),
            Some(interval_s),
        )?;
        let (events, subnet_manager, fabric_steps) = match link_events {
            None => (Vec::new(), SubnetManagerParams::default(), Vec::new()),
            Some(l) => {
                let events = l.events.iter().map(|&(t, link, up)| LinkEventSpec {
                    at_s: to_s(t),
                    link: link as u32,
                    action: if up { LinkAction::Up } else { LinkAction::Down },
                });
                let steps = l.subnet_manager.plan(&l.events);
                (events.collect(), l.subnet_manager, steps)
            }
        };
        let network = Network::resolve(n.network.as_deref(), n.transport.as_deref(), &verbs)?;
        // RDMA write packets: MTU payload plus LRH, BTH, ICRC and VCRC (the RETH of a message's
        // first packet is left out: a block is tens of packets).
        let mtu = verbs.mtu_bytes as f64;
        let payload = mtu / (mtu + headers::BASE as f64);
        let ext = verbs.extender.as_ref();
        let wan_gbps = ext.map_or(verbs.wan.data_gbps(), |e| e.data_gbps());
        let engine_mbps = ext.filter(|e| e.packet_ns > 0.0).map_or(f64::INFINITY, |e| mtu / e.packet_ns * 1e3);
        // The pair's credits (its receive buffer) cover one round trip of the WAN at most: beyond
        // its rated reach a link carries buffer / round trip (crate::net::devices).
        let wan_round_trip_s = 2.0 * verbs.one_way_delay_us() * 1e-6;
        let credit_mbps = ext
            .filter(|_| wan_round_trip_s > 0.0)
            .map_or(f64::INFINITY, |e| e.buffer_bytes as f64 / wan_round_trip_s / 1e6);
        let link_mbps = (wan_gbps * 1e3 / 8.0 * payload).min(engine_mbps).min(credit_mbps);
        let host_gbps = verbs.hca.port.data_gbps().min(verbs.hca.pcie_data_gbps()).min(verbs.switch.link.data_gbps());
        let boxes_us = ext.map_or(0.0, |e| 2.0 * e.latency_ns / 1e3) + 2.0 * verbs.switch.latency_ns / 1e3;
        Ok(PfsResolved {
            seed: self.seed,
            testbed,
            extender: ext.map_or("none".into(), |e| e.name.clone()),
            params: p,
            op,
            clients,
            servers,
            luns_per_server,
            wan_links: verbs.wan_links,
            duration_s,
            interval_s,
            events,
            subnet_manager,
            fabric_steps,
            delay_us: verbs.delay_us,
            fibre_km: verbs.fibre_km,
            one_way_s: (verbs.one_way_delay_us() + boxes_us) * 1e-6,
            link_MBps: link_mbps,
            host_MBps: host_gbps * 1e3 / 8.0 * payload,
            network,
            verbs: Box::new(verbs),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(json: &str) -> Result<PfsResolved, String> {
        crate::scenario::validate_json::<PfsScenario>(json).map_err(|e| e.0)
    }

    #[test]
    fn the_s3_profile_has_four_sdr_links_by_default_when_asked() {
        let r = resolve(r#"{"path": {"wan_links": 4, "fibre_km": 10}}"#).unwrap();
        assert_eq!((r.wan_links, r.clients, r.servers, r.params.client.threads), (4, 2, 2, 6));
        assert!(r.link_MBps > 900.0 && r.link_MBps < 1000.0, "{}", r.link_MBps);
        assert!(r.host_MBps > 3000.0, "{}", r.host_MBps);
        assert!((r.one_way_s - 52.2e-6).abs() < 1e-9, "{}", r.one_way_s);
    }

    #[test]
    fn bad_input_names_the_parameter_and_range() {
        let cases = [
            (
                r#"{"path": {"wan_links": 2}, "events": [{"at_s": 1, "link": 2, "action": "down"}]}"#,
                "events[0].link: 2 does not exist (valid: 0..1",
            ),
            (r#"{"events": [{"at_s": 70, "link": 0, "action": "down"}]}"#, "events[0].at_s: 70 is outside the run"),
            (
                r#"{"path": {"wan_links": 2}, "events": [{"at_s": 1, "link": 0, "action": "down"}, {"at_s": 2, "link": 0, "action": "down"}]}"#,
                "at 2 s link 0 is already down",
            ),
            (r#"{"events": [{"at_s": 1, "link": 0, "action": "up"}]}"#, "link 0 is already up"),
            (
                r#"{"pfs": {"variant": "lustre", "stripe_count": 7}}"#,
                "stripe_count: 7 is more than the file system's OSTs (valid: 1..6",
            ),
            (r#"{"pfs": {"data_disks": 0}}"#, "data_disks: 0 is out of range [1, 64]"),
            (r#"{"pfs": {"op": "append"}}"#, "op: unknown 'append'"),
            (r#"{"pfs": {"bogus": 1}}"#, "unknown field `bogus`"),
        ];
        for (json, want) in cases {
            let e = resolve(json).unwrap_err();
            assert!(e.contains(want), "{json}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
