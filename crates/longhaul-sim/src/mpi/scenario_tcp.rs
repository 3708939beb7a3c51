//! The MPI scenario's TCP part (`mpi.transport = "tcp"`): the path (a plain WAN link of a given
//! rate and delay, like the link emulator's), TCP, the hosts' stack (a profile or measured
//! costs) and Open MPI's TCP BTL limits, resolved through the TCP model's own scenario so that
//! every TCP parameter has its one set of names and checks.

use super::btl_tcp::{BtlParams, BTL_HDR_BYTES, FRAG_HDR_BYTES, RNDV_HDR_BYTES};
use super::scenario::{typed_path, MpiScenario};
use crate::scenario::{err, in_range_f, in_range_u, ModelScenario, ScenarioError};
use crate::tcp::link::LinkKind;
use crate::tcp::scenario::{TcpPathSpec, TcpResolved, TcpScenario};

/// HierComm.WAN_CHUNK_BYTES and liblonghaul_coll's default piece size.
pub const WAN_CHUNK_BYTES: u64 = 32 * 1024;

/// The TCP network under MPI, resolved.
#[derive(Debug, Clone)]
pub struct TcpNet {
    pub tcp: TcpResolved,
    pub btl: BtlParams,
    pub wan_chunk_bytes: u64,
}

pub fn resolve(sc: &MpiScenario) -> Result<TcpNet, ScenarioError> {
    let m = &sc.mpi;
    for (name, set) in [
        ("testbed", sc.testbed.is_some()),
        ("hca", sc.hca.is_some()),
        ("cluster.fabric", sc.cluster.fabric.is_some()),
        ("cluster.switch_latency_ns", sc.cluster.switch_latency_ns.is_some()),
        ("mpi.library", m.library.is_some()),
        ("mpi.eager_threshold_bytes", m.eager_threshold_bytes.is_some()),
        ("mpi.rndv_protocol", m.rndv_protocol.is_some()),
        ("mpi.eager_credits", m.eager_credits.is_some()),
        ("mpi.send_wqes", m.send_wqes.is_some()),
        ("mpi.ud_window", m.ud_window.is_some()),
        ("mpi.ud_recv_window", m.ud_recv_window.is_some()),
        ("mpi.ud_max_retries", m.ud_max_retries.is_some()),
        ("mpi.ud_retry_timeout_us", m.ud_retry_timeout_us.is_some()),
        ("mpi.ud_progress_timeout_us", m.ud_progress_timeout_us.is_some()),
    ] {
        if set {
            return err(format!(
                "{name}: not used with transport tcp (Open MPI's TCP BTL on the TCP model: path.rate_gbps, tcp, \
                 stack, mpi.eager_limit_bytes, ...)"
            ));
        }
    }
    let t = sc.tcp.clone().unwrap_or_default();
    for (name, set) in [
        ("streams", t.streams.is_some()),
        ("duration_s", t.duration_s.is_some()),
        ("interval_s", t.interval_s.is_some()),
        ("cwnd_trace", t.cwnd_trace.is_some()),
    ] {
        if set {
            return err(format!(
                "tcp.{name}: not used by MPI over TCP (one connection per rank pair; the workload sets the length)"
            ));
        }
    }
    let path: TcpPathSpec = typed_path(&sc.path)?;
    let tcp = TcpScenario {
        seed: sc.seed,
        testbed: None,
        stack: sc.stack.clone(),
        // The WAN's rate picks the Ethernet the hosts and routers run (10GigE up to 10 Gb/s,
        // the slowest named link that carries it above); the rate itself stays the WAN's.
        link: LinkKind::ethernet_for(path.rate_gbps.unwrap_or(10.0)).unwrap_or(LinkKind::GigE400).name().into(),
        path,
        tcp: t,
        cross: None,
    }
    .resolve()?;
    let d = BtlParams::default();
    let eager = in_range_u("eager_limit_bytes", m.eager_limit_bytes.unwrap_or(d.eager_limit_bytes), 1024, 1 << 30)?;
    // The RTS holds at least its header; Open MPI requires rndv_eager_limit <= eager_limit.
    let rndv = in_range_u("rndv_eager_limit_bytes", m.rndv_eager_limit_bytes.unwrap_or(eager), RNDV_HDR_BYTES, eager)?;
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
    let wan_chunk_bytes = in_range_u("wan_chunk_bytes", m.wan_chunk_bytes.unwrap_or(WAN_CHUNK_BYTES), 1, 1 << 30)?;
    Ok(TcpNet { tcp, btl, wan_chunk_bytes })
}
