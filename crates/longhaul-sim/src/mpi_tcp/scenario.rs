//! The MPI-over-TCP scenario: plain data (JSON) naming the path (a plain WAN link of a given
//! rate and delay, like the link emulator's), TCP, the host stack (a profile or measured
//! costs), Open MPI's TCP BTL limits and the OSU benchmark. Validated once, here; errors are
//! one line naming the parameter and its valid range.

use serde::{Deserialize, Serialize};

use super::coll;
use crate::mpi::btl_tcp::{BtlParams, BTL_HDR_BYTES, FRAG_HDR_BYTES, RNDV_HDR_BYTES};
use crate::mpi::osu::OsuBench;
use crate::mpi::program::Programs;
use crate::mpi::scenario::OsuSpec;
use crate::scenario::{err, in_range_f, in_range_u, ScenarioError};
use crate::tcp::link::LinkKind;
use crate::tcp::scenario::{StackSpec, TcpPathSpec, TcpResolved, TcpScenario, TcpSpec};

/// Open MPI's TCP BTL limits and the library's per-message CPU time (every field optional).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BtlSpec {
    pub eager_limit_bytes: Option<u64>,
    /// Default: the eager limit (Open MPI's compare tooling sets both together).
    pub rndv_eager_limit_bytes: Option<u64>,
    pub max_send_size_bytes: Option<u64>,
    pub per_msg_us: Option<f64>,
}

/// Collectives (osu bcast): ranks per cluster (one per host), Open MPI's own broadcast or the
/// two-level one of `longhaul.mpi.HierComm`, and the size of that one's WAN pieces.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CollSpec {
    pub ranks_per_cluster: Option<u32>,
    /// "default" (Open MPI 4.1's coll/tuned choice) or "hierarchical".
    pub algo: Option<String>,
    /// HierComm's wan_chunk_bytes / $LONGHAUL_WAN_CHUNK_BYTES (default 32 KiB).
    pub wan_chunk_bytes: Option<u64>,
}

/// The collective part, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct CollParams {
    pub ranks_per_cluster: u32,
    pub hierarchical: bool,
    pub wan_chunk_bytes: u64,
}

/// HierComm.WAN_CHUNK_BYTES and liblonghaul_coll's default piece size.
pub const WAN_CHUNK_BYTES: u64 = 32 * 1024;
/// The emulator's limit on hosts per cluster (one rank per host).
pub const MAX_RANKS_PER_CLUSTER: u64 = 16;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MpiTcpScenario {
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// The WAN link: delay_us, rate_gbps, queue_bytes | queue_packets, loss, fibre_km.
    #[serde(default)]
    pub path: TcpPathSpec,
    /// TCP: cc, mtu_bytes, window_bytes | rmem_max_bytes / wmem_max_bytes, sack, ...
    #[serde(default)]
    pub tcp: TcpSpec,
    /// The hosts' stack: a profile name (default "modern") or {per_seg_us, per_byte_ns, ...}.
    pub stack: Option<StackSpec>,
    #[serde(default)]
    pub mpi: BtlSpec,
    #[serde(default)]
    pub coll: CollSpec,
    pub osu: OsuSpec,
}

fn default_seed() -> u64 {
    1
}

pub struct MpiTcpResolved {
    pub tcp: TcpResolved,
    pub btl: BtlParams,
    pub coll: CollParams,
    pub osu: OsuSpec,
    /// bcast: every rank's program and the algorithm(s) used (built here, so that a case the
    /// model does not run is refused like any bad input).
    pub bcast: Option<(Programs, String)>,
}

/// Benchmarks this transport runs (one rank pair, or every rank for bcast).
pub const BENCHES: [OsuBench; 4] = [OsuBench::Latency, OsuBench::Bw, OsuBench::Bibw, OsuBench::Bcast];

impl MpiTcpScenario {
    pub fn from_json(text: &str) -> Result<Self, ScenarioError> {
        crate::scenario::parse_json(text)
    }

    pub fn resolve(&self) -> Result<MpiTcpResolved, ScenarioError> {
        let t = &self.tcp;
        for (name, set) in [
            ("streams", t.streams.is_some()),
            ("duration_s", t.duration_s.is_some()),
            ("interval_s", t.interval_s.is_some()),
            ("cwnd_trace", t.cwnd_trace.is_some()),
        ] {
            if set {
                return err(format!("tcp.{name}: not used by MPI over TCP (one connection per rank pair; the benchmark sets the length)"));
            }
        }
        let tcp = TcpScenario {
            seed: self.seed,
            testbed: None,
            stack: self.stack.clone(),
            // The WAN's rate picks the Ethernet the hosts and routers run (10GigE up to 10 Gb/s,
            // the slowest named link that carries it above); the rate itself stays the WAN's.
            link: LinkKind::ethernet_for(self.path.rate_gbps.unwrap_or(10.0))
                .unwrap_or(LinkKind::GigE400)
                .name()
                .into(),
            path: self.path.clone(),
            tcp: t.clone(),
            cross: None,
        }
        .resolve()?;
        let m = &self.mpi;
        let d = BtlParams::default();
        let eager = in_range_u("eager_limit_bytes", m.eager_limit_bytes.unwrap_or(d.eager_limit_bytes), 1024, 1 << 30)?;
        // The RTS holds at least its header; Open MPI requires rndv_eager_limit <= eager_limit.
        let rndv =
            in_range_u("rndv_eager_limit_bytes", m.rndv_eager_limit_bytes.unwrap_or(eager), RNDV_HDR_BYTES, eager)?;
        let max_send = in_range_u(
            "max_send_size_bytes",
            m.max_send_size_bytes.unwrap_or(d.max_send_size_bytes),
            2 * (FRAG_HDR_BYTES + BTL_HDR_BYTES),
            1 << 30,
        )?;
        let per_msg_us = in_range_f("per_msg_us", m.per_msg_us.unwrap_or(0.0), 0.0, 10_000.0)?;
        let btl = BtlParams {
            eager_limit_bytes: eager,
            rndv_eager_limit_bytes: rndv,
            max_send_size_bytes: max_send,
            per_msg_ns: per_msg_us * 1e3,
        };
        if !BENCHES.contains(&self.osu.bench) {
            return err(format!(
                "osu.bench: '{}' does not run over the TCP transport (valid: latency, bw, bibw, bcast)",
                self.osu.bench.name()
            ));
        }
        let c = &self.coll;
        let coll = CollParams {
            ranks_per_cluster: in_range_u(
                "coll.ranks_per_cluster",
                c.ranks_per_cluster.unwrap_or(1) as u64,
                1,
                MAX_RANKS_PER_CLUSTER,
            )? as u32,
            hierarchical: match c.algo.as_deref().unwrap_or("default") {
                "default" => false,
                "hierarchical" => true,
                other => return err(format!("coll.algo: '{other}' is not one of default, hierarchical")),
            },
            wan_chunk_bytes: in_range_u(
                "coll.wan_chunk_bytes",
                c.wan_chunk_bytes.unwrap_or(WAN_CHUNK_BYTES),
                1,
                1 << 30,
            )?,
        };
        self.osu.validate()?;
        if self.osu.bench == OsuBench::Bcast {
            self.osu.check_root(2 * coll.ranks_per_cluster)?;
            if self.osu.pairs.is_some() {
                return err("osu.pairs: not used by bcast");
            }
        } else {
            if self.osu.pairs.is_some() || self.osu.root.is_some() {
                return err("osu.pairs, osu.root: not used by latency, bw and bibw (one rank pair)");
            }
            if *c != CollSpec::default() {
                return err("coll: only for bcast (latency, bw and bibw run one rank pair)");
            }
        }
        let bcast = if self.osu.bench == OsuBench::Bcast {
            Some(coll::osu_bcast(&self.osu, &coll).map_err(|e| ScenarioError(format!("osu.size_bytes: {e}")))?)
        } else {
            None
        };
        Ok(MpiTcpResolved { tcp, btl, coll, osu: self.osu.clone(), bcast })
    }
}
