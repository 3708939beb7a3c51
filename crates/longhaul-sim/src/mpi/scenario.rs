//! The MPI scenario: plain data (JSON/TOML), validated once into [`MpiResolved`].
//!
//! `mpi.transport` picks the channel: `rc`, `uc` or `ud` run MVAPICH2 over InfiniBand verbs,
//! whose long-haul path reuses the verbs scenario's `testbed`/`hca`/`path` (same names, same
//! checks); `tcp` runs Open MPI's ob1 over TCP on the TCP model's path (`path.rate_gbps`, ...),
//! with its `tcp` and `stack` tables ([`super::scenario_tcp`]). `cluster` places the ranks;
//! `mpi` sets the library; exactly one of `osu`, `app` or `trace` says what runs. [S2]'s
//! platforms are extra testbeds (`s2-ct-ddr`, `s2-ht-ddr`, `s2-nh-ddr`, `s2-nh-qdr`): two
//! nodes of one fabric, no long-haul link unless asked for.

use serde::{Deserialize, Serialize};

use super::apps::{AppName, NasClass};
use super::collectives::Algo;
use super::network::Network;
use super::osu::OsuBench;
use super::params::{MpiParams, NodeParams, Rndv, LIBRARIES};
use super::placement::{Layout, Placement};
use super::scenario_tcp::{self, TcpNet};
use super::trace;
use crate::ib::HcaProfile;
use crate::net::{Generation, IbLink};
use crate::scenario::{
    err, in_range_f, in_range_u, parse_json, OpName, PathSpec, Resolved, Scenario, ScenarioError, TransportName,
    VerbsSpec,
};
use crate::tcp::scenario::{StackSpec, TcpSpec};

/// Ranks a job may have. Collectives keep, per message, the ids of the blocks it carries, so a
/// job's memory grows with the square of its ranks (measured: 0.24 GB at 2048 ranks, 0.8 GB at
/// 4096, 2.9 GB at 8192; 2 M ranks was killed for memory), and its run time with it.
pub const MAX_RANKS: u32 = 4096;

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClusterSpec {
    /// Nodes per cluster (default: as many as the workload needs with `ppn`).
    pub nodes: Option<u32>,
    /// Processes per node (default 1).
    pub ppn: Option<u32>,
    /// "block" (default) or "cyclic"; `rank_map` gives the node of every rank instead.
    pub placement: Option<String>,
    pub rank_map: Option<Vec<u32>>,
    /// Intra-cluster fabric: the switches' IB generation (4x links; a host's link runs at the
    /// slower of its adapter and the switch) and a switch's port-to-port latency (ns). Default:
    /// the testbed's switch.
    pub fabric: Option<Generation>,
    pub switch_latency_ns: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MpiSpec {
    /// The MPI library whose defaults apply (one of [`LIBRARIES`]); default: MVAPICH2 1.0 on the
    /// published testbeds, MVAPICH2 2.3 on today's (fdr to xdr).
    pub library: Option<String>,
    pub transport: Option<MpiTransport>,
    /// Signed so that a negative value is reported, not misparsed.
    pub eager_threshold_bytes: Option<i64>,
    pub rndv_protocol: Option<Rndv>,
    pub eager_credits: Option<u32>,
    /// Send work requests per connection (`MpiParams::max_send_wqe`).
    pub send_wqes: Option<u32>,
    pub algo: Option<Algo>,
    pub ud_window: Option<u32>,
    /// MPI over UD/UC: `MpiParams::ud_recv_window` (MV2_UD_RECVWINDOW_SIZE).
    pub ud_recv_window: Option<u32>,
    /// MPI over UD/UC: `MpiParams::ud_max_retries` (MV2_UD_RETRY_COUNT).
    pub ud_max_retries: Option<u32>,
    /// MPI over UD/UC: `MpiParams::ud_retry_timeout_us`; the progress timeout follows at a
    /// tenth of it (the MVAPICH2 user guide's advice) unless given too.
    pub ud_retry_timeout_us: Option<f64>,
    pub ud_progress_timeout_us: Option<f64>,
    /// MPI over TCP: Open MPI's TCP BTL limits and per-message CPU time
    /// ([`super::btl_tcp::BtlParams`]).
    pub eager_limit_bytes: Option<u64>,
    /// Default: the eager limit (Open MPI's compare tooling sets both together).
    pub rndv_eager_limit_bytes: Option<u64>,
    pub max_send_size_bytes: Option<u64>,
    pub per_msg_us: Option<f64>,
    /// The hierarchical bcast's WAN message in pieces of at most this many bytes, all in flight
    /// at once (`longhaul.mpi.HierComm`'s `wan_chunk_bytes`). Default: one message over verbs,
    /// HierComm's 32 KiB over TCP.
    pub wan_chunk_bytes: Option<u64>,
    /// "packet" (default: every packet) or "fluid" (messages as flows sharing the path max-min,
    /// [`super::fluid`]; transport rc only) or "auto" (fluid over rc above
    /// [`super::network::AUTO_PACKET_MAX_RANKS`] ranks, packet otherwise), as the parallel file
    /// system's `network`.
    pub network: Option<String>,
}

/// The channel MPI runs on: MVAPICH2 over an InfiniBand transport, or Open MPI over TCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MpiTransport {
    Rc,
    Uc,
    Ud,
    Tcp,
}

impl MpiTransport {
    /// The verbs transport, or None for TCP.
    pub fn verbs(self) -> Option<TransportName> {
        match self {
            MpiTransport::Rc => Some(TransportName::Rc),
            MpiTransport::Uc => Some(TransportName::Uc),
            MpiTransport::Ud => Some(TransportName::Ud),
            MpiTransport::Tcp => None,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OsuSpec {
    pub bench: OsuBench,
    pub size_bytes: u64,
    pub iterations: Option<u64>,
    pub warmup: Option<u64>,
    /// Messages in flight per window (bw, bibw, mbw_mr; OSU's 64).
    pub window: Option<u32>,
    /// Sender/receiver pairs (mbw_mr).
    pub pairs: Option<u32>,
    pub root: Option<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AppSpec {
    pub name: AppName,
    pub class: NasClass,
    /// Compute time per iteration (us); default from the NAS operation count and the node.
    pub compute_us_per_iter: Option<f64>,
    /// Iterations to simulate (default: the class's); time is scaled to the full count.
    pub iterations: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// Where the trace came from (named in error messages).
    pub name: String,
    pub text: String,
}

/// Single node parameters over the profile's (`NodeParams`; unset: the profile's).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
#[allow(non_snake_case)]
pub struct NodeSpec {
    pub copy_MBps: Option<f64>,
    pub mem_MBps: Option<f64>,
    pub shm_latency_ns: Option<f64>,
    pub core_mops: Option<f64>,
}

impl NodeSpec {
    fn apply(&self, node: &mut NodeParams) -> Result<(), ScenarioError> {
        let fields = [
            ("copy_MBps", self.copy_MBps, 1.0, 1e6, &mut node.copy_MBps),
            ("mem_MBps", self.mem_MBps, 1.0, 1e7, &mut node.mem_MBps),
            ("shm_latency_ns", self.shm_latency_ns, 0.0, 1e6, &mut node.shm_latency_ns),
            ("core_mops", self.core_mops, 0.001, 1e7, &mut node.core_mops),
        ];
        let mut custom = false;
        for (name, value, lo, hi, field) in fields {
            if let Some(v) = value {
                *field = in_range_f(name, v, lo, hi)?;
                custom = true;
            }
        }
        if custom {
            node.name = format!("{}-custom", node.name);
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MpiScenario {
    #[serde(default = "crate::scenario::default_seed")]
    pub seed: u64,
    /// Verbs: the hardware profile (default s1).
    pub testbed: Option<String>,
    pub hca: Option<String>,
    /// Override the node profile: one of [`NODES`].
    pub node: Option<String>,
    #[serde(default)]
    pub node_params: NodeSpec,
    /// The path: the verbs scenario's [`PathSpec`], or over TCP the TCP scenario's
    /// [`crate::tcp::scenario::TcpPathSpec`] (rate_gbps, queue_bytes | queue_packets, ...).
    pub path: Option<serde_json::Value>,
    /// MPI over TCP: TCP (cc, mtu_bytes, window_bytes | rmem_max_bytes / wmem_max_bytes, ...).
    pub tcp: Option<TcpSpec>,
    /// MPI over TCP: the hosts' stack, a profile name (default "modern") or measured costs.
    pub stack: Option<StackSpec>,
    #[serde(default)]
    pub cluster: ClusterSpec,
    #[serde(default)]
    pub mpi: MpiSpec,
    pub osu: Option<OsuSpec>,
    pub app: Option<AppSpec>,
    pub trace: Option<TraceSpec>,
}

/// The scenario's `path` table as the transport's path spec `P` (errors name `path.<key>`).
pub(super) fn typed_path<P: serde::de::DeserializeOwned + Default>(
    path: &Option<serde_json::Value>,
) -> Result<P, ScenarioError> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Path<P> {
        path: P,
    }
    match path {
        None => Ok(P::default()),
        Some(v) => Ok(parse_json::<Path<P>>(&serde_json::json!({ "path": v }).to_string())?.path),
    }
}

/// The verbs model's testbeds, then [S2]'s platforms. `usn` runs MPI over the UltraScience Net's path and
/// adapters with the default node's copy and memory rates (no Opteron node profile: a known gap,
/// docs/models/long-haul.md).
pub const TESTBEDS: [&str; 13] = [
    "s1",
    "s1-connectx",
    "s3",
    "usn",
    "fdr",
    "edr",
    "hdr",
    "ndr",
    "xdr",
    "s2-ct-ddr",
    "s2-ht-ddr",
    "s2-nh-ddr",
    "s2-nh-qdr",
];
/// The profiles of today's fabrics: a 2023 node and MVAPICH2 2.3 by default.
const TODAYS_TESTBEDS: [&str; 5] = ["fdr", "edr", "hdr", "ndr", "xdr"];
/// The rank placements a scenario names (a `rank_map` gives any other).
pub const PLACEMENTS: [&str; 2] = ["block", "cyclic"];
pub const NODES: [&str; 6] = ["xeon-2007", "clovertown", "harpertown", "nehalem", "sapphire-rapids", "genoa"];

#[derive(Debug, Clone)]
pub enum Workload {
    Osu(OsuSpec),
    App(AppSpec),
    Trace(TraceSpec),
}

/// The network under MPI, resolved.
#[derive(Debug, Clone)]
pub enum MpiNet {
    /// The path (and adapter) as the verbs model resolves it, and the queue pairs' transport.
    Verbs {
        base: Box<Resolved>,
        transport: TransportName,
    },
    Tcp(Box<TcpNet>),
}

impl MpiNet {
    pub fn seed(&self) -> u64 {
        match self {
            MpiNet::Verbs { base, .. } => base.seed,
            MpiNet::Tcp(t) => t.tcp.seed,
        }
    }

    pub fn one_way_delay_us(&self) -> f64 {
        match self {
            MpiNet::Verbs { base, .. } => base.one_way_delay_us(),
            MpiNet::Tcp(t) => t.tcp.one_way_delay_us(),
        }
    }
}

/// Every parameter of an MPI run, in range.
#[derive(Debug, Clone)]
pub struct MpiResolved {
    pub net: MpiNet,
    pub node: NodeParams,
    /// The library's parameters (over TCP: Open MPI's collective rules and `auto`; its
    /// point-to-point protocol is the TCP BTL's, in [`MpiNet::Tcp`]).
    pub params: MpiParams,
    pub algo: Algo,
    pub nodes: u32,
    pub ppn: u32,
    pub placement: Placement,
    pub workload: Workload,
    /// The user set the eager threshold / the eager credits (job-size defaults leave them).
    pub fixed_threshold: bool,
    pub fixed_credits: bool,
    /// The hierarchical bcast's WAN pieces (None: one message).
    pub wan_chunk_bytes: Option<u64>,
    /// Packet or flow level.
    pub network: Network,
}

/// An [S2] platform: the adapter on its PCIe generation, and the fabric generation.
fn s2_platform(name: &str) -> Option<(HcaProfile, Generation, NodeParams)> {
    let ddr =
        |pcie_gen: u32| HcaProfile { name: format!("connectx-ddr-pcie{pcie_gen}"), pcie_gen, ..HcaProfile::connectx() };
    let qdr = HcaProfile { name: "connectx-qdr-pcie2".into(), ..HcaProfile::connectx2() };
    match name {
        "s2-ct-ddr" => Some((ddr(1), Generation::Ddr, NodeParams::clovertown())),
        "s2-ht-ddr" => Some((ddr(2), Generation::Ddr, NodeParams::harpertown())),
        "s2-nh-ddr" => Some((ddr(2), Generation::Ddr, NodeParams::nehalem())),
        "s2-nh-qdr" => Some((qdr, Generation::Qdr, NodeParams::nehalem())),
        _ => None,
    }
}

fn node_by_name(n: &str) -> Option<NodeParams> {
    match n {
        "xeon-2007" => Some(NodeParams::s1_node()),
        "clovertown" => Some(NodeParams::clovertown()),
        "harpertown" => Some(NodeParams::harpertown()),
        "nehalem" => Some(NodeParams::nehalem()),
        "sapphire-rapids" => Some(NodeParams::sapphire_rapids()),
        "genoa" => Some(NodeParams::genoa()),
        _ => None,
    }
}

impl MpiScenario {
    pub fn from_json(text: &str) -> Result<MpiScenario, ScenarioError> {
        crate::scenario::parse_json(text)
    }

    /// Ranks the workload needs with `nodes` x `ppn` slots per cluster.
    fn ranks_needed(&self, slots_per_cluster: u32) -> u32 {
        match (&self.osu, &self.app) {
            (Some(o), _) => o.bench.ranks(o.pairs.unwrap_or(1), 2 * slots_per_cluster),
            _ => 2 * slots_per_cluster,
        }
    }

    pub fn resolve(&self) -> Result<MpiResolved, ScenarioError> {
        let workload = match (&self.osu, &self.app, &self.trace) {
            (Some(o), None, None) => Workload::Osu(o.clone()),
            (None, Some(a), None) => Workload::App(a.clone()),
            (None, None, Some(t)) => Workload::Trace(t.clone()),
            _ => return err("workload: give exactly one of osu, app, trace"),
        };
        let transport = self.mpi.transport.unwrap_or(MpiTransport::Rc);
        let (net, mut node, params) = match transport.verbs() {
            Some(t) => {
                let (base, node, params) = self.resolve_verbs(t)?;
                (MpiNet::Verbs { base: Box::new(base), transport: t }, node, params)
            }
            None => {
                let tcp = scenario_tcp::resolve(self)?;
                // A 2023 server (the `modern` stack's era); Open MPI's collective rules.
                let params = MpiParams::library("openmpi-ucx").expect("a library");
                (MpiNet::Tcp(Box::new(tcp)), NodeParams::sapphire_rapids(), params)
            }
        };
        if let Some(n) = &self.node {
            node = node_by_name(n)
                .ok_or_else(|| ScenarioError(format!("node: unknown '{n}' (valid: {})", NODES.join(", "))))?;
        }
        self.node_params.apply(&mut node)?;
        let c = &self.cluster;
        let m = &self.mpi;
        if let Workload::Osu(o) = &workload {
            o.validate()?;
        }
        let ppn = c.ppn.unwrap_or(1);
        if !(1..=256).contains(&ppn) {
            return err(format!("ppn: {ppn} is out of range [1, 256]"));
        }
        let nodes = match c.nodes {
            Some(n) => n,
            None => match &workload {
                // Collectives: four nodes per cluster, as `longhaul emu mpi osu` runs them.
                Workload::Osu(o) if o.bench.collective().is_some() => 4,
                Workload::Osu(o) => o.bench.ranks(o.pairs.unwrap_or(1), u32::MAX).div_ceil(2).div_ceil(ppn).max(1),
                // A trace: enough nodes for its ranks (a malformed trace is reported when it runs).
                Workload::Trace(t) => {
                    trace::parse(&t.name, &t.text).map_or(1, |p| p.ranks.div_ceil(2).div_ceil(ppn).max(1))
                }
                _ => 1,
            },
        };
        if !(1..=4096).contains(&nodes) {
            return err(format!("nodes: {nodes} is out of range [1, 4096] (per cluster)"));
        }
        let placement = match (&c.rank_map, c.placement.as_deref()) {
            (Some(map), None | Some("map")) => Placement::Map(map.clone()),
            (Some(_), Some(p)) => {
                return err(format!("placement: '{p}' conflicts with rank_map (omit placement or set it to map)"))
            }
            (None, None | Some("block")) => Placement::Block,
            (None, Some("cyclic")) => Placement::Cyclic,
            (None, Some(p)) => {
                return err(format!("placement: unknown '{p}' (valid: {}, or a rank_map)", PLACEMENTS.join(", ")))
            }
        };
        let ranks = self.ranks_needed(nodes * ppn);
        // A trace's own `ranks N` is held to MAX_RANKS where it is parsed; its layout has no more.
        if ranks > MAX_RANKS && !matches!(workload, Workload::Trace(_)) {
            let what = match &workload {
                Workload::Osu(o) if o.bench == OsuBench::MbwMr => format!("{} pairs", o.pairs.unwrap_or(1)),
                _ => format!("{nodes} nodes x {ppn} per node in each of 2 clusters"),
            };
            return err(format!(
                "ranks: {ranks} ({what}) is out of range [2, {MAX_RANKS}]: the simulator's state for a job grows with \
                 the square of its ranks (~0.8 GB at {MAX_RANKS})"
            ));
        }
        Layout::new(nodes, ppn, ranks, &placement).map_err(ScenarioError)?;
        let network = Network::resolve(m.network.as_deref(), transport, ranks)?;
        let wan_chunk_bytes = match &net {
            MpiNet::Tcp(t) => Some(t.wan_chunk_bytes),
            MpiNet::Verbs { .. } => {
                m.wan_chunk_bytes.map(|b| in_range_u("wan_chunk_bytes", b, 1, 1 << 30)).transpose()?
            }
        };
        let algo = m.algo.unwrap_or(Algo::Default);
        if let Workload::Osu(o) = &workload {
            o.check_root(ranks)?;
            if let Some(c) = o.bench.collective().filter(|&c| !algo.fits(c)) {
                let valid: Vec<&str> = ["default", "hierarchical", "auto"]
                    .into_iter()
                    .chain(Algo::flat_for(c).iter().map(|a| a.name()))
                    .collect();
                return err(format!(
                    "algo: '{}' is not a {} algorithm (valid: {})",
                    algo.name(),
                    o.bench.name(),
                    valid.join(", ")
                ));
            }
        }
        let (fixed_threshold, fixed_credits) = (m.eager_threshold_bytes.is_some(), m.eager_credits.is_some());
        Ok(MpiResolved {
            net,
            node,
            params,
            algo,
            nodes,
            ppn,
            placement,
            workload,
            fixed_threshold,
            fixed_credits,
            wan_chunk_bytes,
            network,
        })
    }

    /// The verbs part: the path and adapter, the profile's node, the library's parameters.
    fn resolve_verbs(&self, transport: TransportName) -> Result<(Resolved, NodeParams, MpiParams), ScenarioError> {
        let testbed = self.testbed.as_deref().unwrap_or("s1");
        let s2 = s2_platform(testbed);
        if s2.is_none() && !TESTBEDS.contains(&testbed) {
            return err(format!("testbed: unknown '{testbed}' (valid: {})", TESTBEDS.join(", ")));
        }
        for (name, set) in [
            ("tcp", self.tcp.is_some()),
            ("stack", self.stack.is_some()),
            ("mpi.eager_limit_bytes", self.mpi.eager_limit_bytes.is_some()),
            ("mpi.rndv_eager_limit_bytes", self.mpi.rndv_eager_limit_bytes.is_some()),
            ("mpi.max_send_size_bytes", self.mpi.max_send_size_bytes.is_some()),
            ("mpi.per_msg_us", self.mpi.per_msg_us.is_some()),
        ] {
            if set {
                return err(format!("{name}: only with transport tcp (Open MPI's TCP BTL)"));
            }
        }
        let mut path: PathSpec = typed_path(&self.path)?;
        let base_testbed = match &s2 {
            Some((_, g, _)) => {
                // One fabric: a plain IB link between the two switches unless a path is given.
                path.extender = path.extender.or(Some("none".into()));
                path.wan_generation = path.wan_generation.or(Some(*g));
                if *g == Generation::Qdr {
                    "s3"
                } else {
                    "s1-connectx"
                }
            }
            None => testbed,
        };
        let verbs = VerbsSpec::bw_test(TransportName::Rc, OpName::Send, 1);
        let mut base = Scenario::of_path(self.seed, base_testbed, self.hca.clone(), path, verbs).resolve()?;
        base.testbed = testbed.into();
        // The 2007 node of [S1]'s era for the published testbeds; a 2023 server for the profiles
        // of today's fabrics (none of the FDR/EDR era, 2012-2017, is in the table: --node sets one).
        let today = TODAYS_TESTBEDS.contains(&base_testbed);
        let mut node = if today { NodeParams::sapphire_rapids() } else { NodeParams::s1_node() };
        if let Some((hca, g, n)) = s2 {
            if self.hca.is_none() {
                base.hca = hca;
            }
            base.switch.link = IbLink { width: 4, generation: g };
            node = n;
        }
        let m = &self.mpi;
        let library = m.library.as_deref().unwrap_or(if today { "mvapich2-2.3" } else { "mvapich2-1.0" });
        let mut params = MpiParams::library(library)
            .ok_or_else(|| ScenarioError(format!("library: unknown '{library}' (valid: {})", LIBRARIES.join(", "))))?;
        if library == "openmpi-ucx" && transport != TransportName::Rc {
            return err(format!(
                "transport: MPI over {} is modelled with MVAPICH2's reliability layer (valid with openmpi-ucx: rc)",
                if transport == TransportName::Ud { "UD" } else { "UC" }
            ));
        }
        if let Some(t) = m.eager_threshold_bytes {
            if !(0..=(1 << 30)).contains(&t) {
                return err(format!("eager_threshold_bytes: {t} is out of range [0, 1073741824]"));
            }
            params.eager_threshold_bytes = t as u32;
        }
        if let Some(r) = m.rndv_protocol {
            params.rndv = r;
        }
        if let Some(c) = m.eager_credits {
            params.eager_credits = in_range_u("eager_credits", c.into(), 1, 4096)? as u32;
            params.credit_update_after = params.eager_credits / 2 + 1; // more than half the ring, as the default
        }
        if let Some(n) = m.send_wqes {
            params.max_send_wqe = in_range_u("send_wqes", n.into(), 1, 16384)? as u32;
        }
        if let Some(w) = m.ud_window {
            params.ud_window = in_range_u("ud_window", w.into(), 1, 65536)? as u32;
            params.ud_ack_every = params.ud_ack_every.min(params.ud_window.div_ceil(2));
        }
        if let Some(w) = m.ud_recv_window {
            params.ud_recv_window = in_range_u("ud_recv_window", w.into(), 1, 65536)? as u32;
        }
        if let Some(n) = m.ud_max_retries {
            params.ud_max_retries = in_range_u("ud_max_retries", n.into(), 1, 65535)? as u32;
        }
        if let Some(us) = m.ud_retry_timeout_us {
            params.ud_retry_timeout_us = in_range_f("ud_retry_timeout_us", us, 1.0, 1e8)?;
            params.ud_max_retry_timeout_us = params.ud_max_retry_timeout_us.max(us);
            params.ud_progress_timeout_us = us / 10.0;
        }
        if let Some(us) = m.ud_progress_timeout_us {
            params.ud_progress_timeout_us = in_range_f("ud_progress_timeout_us", us, 1.0, 1e8)?;
        }
        if transport == TransportName::Ud && base.mtu_bytes <= params.header_bytes {
            return err("mtu_bytes: too small for MPI over UD (the MPI header must fit in one packet)");
        }
        let c = &self.cluster;
        if let Some(g) = c.fabric {
            base.switch.link = IbLink { width: 4, generation: g };
        }
        if let Some(ns) = c.switch_latency_ns {
            base.switch.latency_ns = in_range_f("switch_latency_ns", ns, 0.0, 100_000.0)?;
        }
        Ok((base, node, params))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn osu(extra: &str) -> String {
        format!(r#"{{"osu": {{"bench": "bw", "size_bytes": 8192}} {extra}}}"#)
    }

    #[test]
    fn defaults_resolve_and_bad_input_names_the_parameter() {
        let r = MpiScenario::from_json(&osu("")).unwrap().resolve().unwrap();
        assert_eq!((r.nodes, r.ppn, r.params.eager_threshold_bytes), (1, 1, 8192));
        let bad = |extra: &str| MpiScenario::from_json(&osu(extra)).and_then(|s| s.resolve()).unwrap_err().0;
        assert!(bad(r#", "mpi": {"eager_threshold_bytes": -1}"#).starts_with("eager_threshold_bytes"));
        assert!(bad(r#", "testbed": "moon""#).starts_with("testbed"));
        assert!(bad(r#", "cluster": {"placement": "spiral"}"#).starts_with("placement"));
        assert!(bad(r#", "app": {"name": "cg", "class": "B"}"#).starts_with("workload"));
        assert!(bad(r#", "mpi": {"algo": "fastest"}"#).starts_with("scenario"));
    }

    #[test]
    fn a_job_of_more_ranks_than_memory_allows_is_refused_before_it_runs() {
        let app = |nodes: u32, ppn: u32| {
            let text =
                format!(r#"{{"app": {{"name": "lu", "class": "C"}}, "cluster": {{"nodes": {nodes}, "ppn": {ppn}}}}}"#);
            MpiScenario::from_json(&text).and_then(|s| s.resolve())
        };
        assert!(app(2048, 1).is_ok());
        let e = app(4096, 256).expect_err("2 M ranks").0;
        assert!(
            e.starts_with("ranks: 2097152 (4096 nodes x 256 per node in each of 2 clusters) is out of range [2, 4096]"),
            "{e}"
        );
        // A point-to-point benchmark uses two ranks, however many slots the clusters have.
        let bw = r#", "cluster": {"nodes": 4096, "ppn": 256}"#;
        assert!(MpiScenario::from_json(&osu(bw)).unwrap().resolve().is_ok());
        // A trace uses the ranks it names, however many slots the clusters have.
        let trace = r#"{"trace": {"name": "t", "text": "ranks 4\n* barrier\n"}, "cluster": {"nodes": 4096}}"#;
        assert!(MpiScenario::from_json(trace).unwrap().resolve().is_ok());
    }

    #[test]
    fn s2_testbeds_pick_their_adapter_and_node() {
        let r = MpiScenario::from_json(&osu(r#", "testbed": "s2-ct-ddr""#)).unwrap().resolve().unwrap();
        let MpiNet::Verbs { base, .. } = &r.net else { panic!("verbs") };
        assert_eq!(base.hca.pcie_gen, 1);
        assert_eq!(r.node.name, "clovertown");
        assert!(base.extender.is_none());
    }
}
