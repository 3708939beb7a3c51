//! The TCP scenario: plain data (JSON or TOML) naming the link, the path, the TCP stack and the
//! iperf-like workload. Validated once, here, into a [`TcpResolved`] whose every field is in
//! range; errors are one line naming the parameter and its valid range.
//!
//! The IPoIB path is the verbs model's two-cluster path (same testbeds, extenders, fabric), so
//! its path fields are checked by [`crate::scenario::Scenario::resolve`] with the same messages.

use serde::{Deserialize, Serialize};

use super::cc::CcName;
use super::link::{Framing, LinkKind, MIN_MTU};
use super::params::{CwndGrowth, HostStack, RtoFormula, RtoRestart, RtoSsthresh, TcpParams, WindowSpec};
use crate::engine::time::{MS, S};
use crate::engine::Time;
pub(crate) use crate::net::{CrossResolved, CrossSpec};
use crate::net::{ExtenderParams, WanFraming};
use crate::scenario::{
    bdp_queue_bytes, err, in_range_f, in_range_u, resolve_cross, ModelScenario, OpName, PathSpec, Resolved, Scenario,
    ScenarioError, TransportName, VerbsSpec, MAX_DELAY_US,
};
use crate::workload::iperf::TcpRecord;

/// The long-haul path (every field optional).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TcpPathSpec {
    /// Delay added on the long-haul link, one way (us): the extender's setting, or a WAN emulator.
    pub delay_us: Option<f64>,
    /// Fibre on the long-haul link (km, 5 us per km).
    pub fibre_km: Option<f64>,
    /// "longbow-xr", "longbow-c103", "generic" or "none". IPoIB default: the testbed's extender;
    /// Ethernet/SONET default: none (IP routers at both ends of the WAN).
    pub extender: Option<String>,
    /// IPoIB only: how the extenders frame IB on the WAN (ib, oc192, 10gige-lan, 10gige-wan).
    pub wan_framing: Option<WanFraming>,
    /// Ethernet/SONET only: WAN payload rate (Gb/s) instead of the link type's.
    pub rate_gbps: Option<f64>,
    /// Bottleneck queue (drop-tail on the WAN egress): bytes, or packets of one MTU each.
    /// IPoIB: the extender's credit buffer (bytes only).
    pub queue_bytes: Option<u64>,
    pub queue_packets: Option<u64>,
    /// Probability that a packet is corrupted on the WAN (each direction).
    pub loss: Option<f64>,
    /// IB MTU under IPoIB (2048 or 4096).
    pub ib_mtu_bytes: Option<u32>,
}

/// TCP and the iperf-like workload (every field optional: stock Linux and iperf defaults).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TcpSpec {
    /// Congestion control (default cubic, Linux's default).
    pub cc: Option<String>,
    /// IP MTU (default: the link's Linux default).
    pub mtu_bytes: Option<u32>,
    /// Parallel streams between one host pair (iperf -P; default 1).
    pub streams: Option<u32>,
    /// Socket buffer (iperf -w); unset = Linux auto-tuning.
    pub window_bytes: Option<u64>,
    /// Auto-tuning maxima (tcp_rmem[2], tcp_wmem[2]).
    pub rmem_max_bytes: Option<u64>,
    pub wmem_max_bytes: Option<u64>,
    pub initial_cwnd_segs: Option<u32>,
    pub sack: Option<bool>,
    /// false = plain slow start for CUBIC (Linux: tcp_cubic hystart=0); default on, as Linux.
    pub hystart: Option<bool>,
    /// false = no RACK detection of lost retransmissions (Linux: tcp_recovery=0); default on.
    pub rack: Option<bool>,
    /// "linux" (default) or "rfc6298": where min_rto bounds the retransmission timeout.
    pub rto_formula: Option<RtoFormula>,
    /// "every-ack" (default, Linux) or "first-partial-ack" (RFC 6582): which ACKs restart the
    /// retransmission timer in fast recovery.
    pub rto_restart: Option<RtoRestart>,
    /// "once-per-episode" (default, Linux) or "every-timeout" (RFC 5681): whether a timeout in
    /// fast recovery lowers ssthresh again.
    pub rto_ssthresh: Option<RtoSsthresh>,
    /// "in-order" (default, Linux) or "cumulative" (ns-3): which ACKs grow cwnd, and by how
    /// much.
    pub cwnd_growth: Option<CwndGrowth>,
    /// false = acknowledge every segment (Linux quickack).
    pub delayed_ack: Option<bool>,
    pub min_rto_ms: Option<f64>,
    /// Test length (iperf -t; default 10 s).
    pub duration_s: Option<f64>,
    /// Throughput time-series interval (iperf -i; default 1 s, or a tenth of a shorter test).
    pub interval_s: Option<f64>,
    /// Record each stream's cwnd at every interval.
    pub cwnd_trace: Option<bool>,
}

/// A TCP (iperf-like) scenario as the user wrote it: plain data, validated once by [`TcpScenario::resolve`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TcpScenario {
    /// Seed of every random stream in the run (default 1).
    #[serde(default = "crate::scenario::default_seed")]
    pub seed: u64,
    /// Hardware profile: a verbs testbed (IPoIB: the fabric and hosts; Ethernet: the hosts), or
    /// for Ethernet also "modern" / "ideal". Default: s1 for IPoIB, modern otherwise.
    pub testbed: Option<String>,
    /// Override the profile's host stack: a profile name (s1, s3, usn, modern, ideal) or explicit
    /// costs (a stack calibrated on a real machine, see [`StackCosts`]).
    pub stack: Option<StackSpec>,
    /// One of [`LinkKind::NAMES`].
    pub link: String,
    /// The long-haul path: delay, fibre, extender, rate, queue, loss.
    #[serde(default)]
    pub path: TcpPathSpec,
    /// The streams, the sockets and the TCP options (Linux defaults otherwise).
    #[serde(default)]
    pub tcp: TcpSpec,
    /// UDP cross traffic sharing the WAN (none if absent).
    pub cross: Option<CrossSpec>,
}

/// The host stack: a named profile or measured costs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(
    untagged,
    expecting = "expected a stack name (s1, s3, usn, modern, ideal) or costs {per_seg_us, per_byte_ns[, ack_us, cores]} \
                 (per_seg_us and per_byte_ns both required; no other keys)"
)]
pub enum StackSpec {
    Profile(String),
    Costs(StackCosts),
}

/// Host stack costs measured on a machine (e.g. fitted by `longhaul analyse calibrate --model
/// tcp-stack`): each segment costs `per_seg_us + payload bytes x per_byte_ns` of CPU at the
/// sender and again at the receiver; each ACK `ack_us` at the sender.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StackCosts {
    pub per_seg_us: f64,
    pub per_byte_ns: f64,
    pub ack_us: Option<f64>,
    pub cores: Option<u32>,
}

/// The host-stack profiles a scenario's `stack` names (any testbed's stack is accepted too).
pub const STACK_PROFILES: [&str; 5] = ["s1", "s3", "usn", "modern", "ideal"];

impl StackSpec {
    /// The costs this spec names, in range ("stack.<field>: ..." errors otherwise).
    pub fn resolve(&self) -> Result<HostStack, ScenarioError> {
        match self {
            StackSpec::Profile(name) => HostStack::for_testbed(name).ok_or_else(|| {
                ScenarioError(format!(
                    "stack: unknown '{name}' (valid: {}, or explicit costs {{per_seg_us, per_byte_ns}})",
                    STACK_PROFILES.join(", ")
                ))
            }),
            StackSpec::Costs(c) => {
                let seg_ns = in_range_f("stack.per_seg_us", c.per_seg_us, 0.0, 10_000.0)? * 1e3;
                let byte_ns = in_range_f("stack.per_byte_ns", c.per_byte_ns, 0.0, 1_000.0)?;
                let ack_ns = in_range_f("stack.ack_us", c.ack_us.unwrap_or(0.0), 0.0, 10_000.0)? * 1e3;
                let cores = in_range_u("stack.cores", c.cores.unwrap_or(1) as u64, 1, 1024)? as u32;
                Ok(HostStack {
                    name: "measured".into(),
                    tx_pkt_ns: seg_ns,
                    tx_byte_ns: byte_ns,
                    rx_pkt_ns: seg_ns,
                    rx_byte_ns: byte_ns,
                    ack_ns,
                    cores,
                })
            }
        }
    }
}

/// The Ethernet/SONET path: hosts on 10GigE, two IP boxes (routers or extenders) and the WAN.
#[derive(Debug, Clone, Serialize)]
pub struct EthPath {
    pub host_gbps: f64,
    pub host_frame_overhead_bytes: u32,
    pub wan_gbps: f64,
    pub wan_frame_overhead_bytes: u32,
    pub queue_limit_bytes: u64,
    /// Store-and-forward latency and per-packet engine time of the boxes at each end (ns).
    pub box_latency_ns: f64,
    pub box_packet_ns: f64,
    pub extender: Option<String>,
}

/// Every parameter the TCP model uses, in range.
#[derive(Debug, Clone, Serialize)]
pub struct TcpResolved {
    pub seed: u64,
    pub testbed: String,
    pub link: LinkKind,
    pub mtu_bytes: u32,
    pub mss_bytes: u32,
    pub ib_mtu_bytes: u32,
    pub stack: HostStack,
    pub params: TcpParams,
    pub cc: CcName,
    pub streams: u32,
    pub duration: Time,
    pub interval: Time,
    pub cwnd_trace: bool,
    pub delay_us: f64,
    pub fibre_km: f64,
    pub loss: f64,
    /// The WAN's payload rate (Gb/s): what cross traffic may not exceed.
    pub wan_gbps: f64,
    /// IPoIB: the verbs model's resolved path. Ethernet/SONET: `eth`.
    #[serde(skip)]
    pub ib: Option<Resolved>,
    pub eth: Option<EthPath>,
    pub cross: Option<CrossResolved>,
}

impl TcpResolved {
    pub fn framing(&self) -> Framing {
        Framing { kind: self.link, mtu: self.mtu_bytes, ib_mtu: self.ib_mtu_bytes }
    }

    /// One-way delay of the long-haul link (us): fibre plus the added delay (as in verbs).
    pub fn one_way_delay_us(&self) -> f64 {
        self.fibre_km * 5.0 + self.delay_us
    }
}

/// Router forwarding latency for the Ethernet/SONET path (assumed: a store-and-forward lookup).
const ROUTER_LATENCY_NS: f64 = 1000.0;
/// 10GBASE-R: the hosts' NIC rate on the 10 Gb/s Ethernet/SONET paths (IEEE 802.3ae); the
/// 25-400 GbE links give the hosts NICs of the link's rate.
const HOST_NIC_GBPS: f64 = 10.0;

pub const STREAMS_MAX: u64 = 1024;

impl ModelScenario for TcpScenario {
    type Resolved = TcpResolved;
    type Record = TcpRecord;

    fn run(r: &TcpResolved) -> TcpRecord {
        crate::workload::iperf::run_tcp(r)
    }

    fn resolve(&self) -> Result<TcpResolved, ScenarioError> {
        let Some(link) = LinkKind::by_name(&self.link) else {
            return err(format!("link: unknown '{}' (valid: {})", self.link, LinkKind::NAMES.join(", ")));
        };
        let testbed = self.testbed.clone().unwrap_or_else(|| if link.is_ipoib() { "s1" } else { "modern" }.into());
        // IPoIB runs over a verbs testbed's fabric; Ethernet takes any profile's hosts.
        let valid_testbeds = if link.is_ipoib() { &crate::scenario::TESTBEDS[..] } else { &HostStack::NAMES[..] };
        if !valid_testbeds.contains(&testbed.as_str()) {
            return err(format!(
                "testbed: unknown '{testbed}' for {} (valid: {})",
                link.name(),
                valid_testbeds.join(", ")
            ));
        }
        let stack = self.stack.clone().unwrap_or_else(|| StackSpec::Profile(testbed.clone())).resolve()?;
        let p = &self.path;
        let delay_us = in_range_f("delay_us", p.delay_us.unwrap_or(0.0), 0.0, MAX_DELAY_US)?;
        let fibre_km = in_range_f("fibre_km", p.fibre_km.unwrap_or(0.0), 0.0, MAX_DELAY_US / 5.0)?;
        let loss = in_range_f("loss", p.loss.unwrap_or(0.0), 0.0, 0.5)?;
        let ib_mtu = p.ib_mtu_bytes.unwrap_or(2048);
        if ![2048, 4096].contains(&ib_mtu) {
            return err(format!("ib_mtu_bytes: {ib_mtu} is not an IPoIB IB MTU (valid: 2048, 4096)"));
        }
        let t = &self.tcp;
        let (lo, hi) = link.mtu_range(ib_mtu);
        let mtu = t.mtu_bytes.unwrap_or(link.default_mtu(ib_mtu));
        if mtu < lo || mtu > hi {
            return err(format!("mtu_bytes: {mtu} is out of range for {} [{lo}, {hi}]", link.name()));
        }
        debug_assert!(mtu >= MIN_MTU);
        let era_2_6_18 = testbed == "usn";
        // Linux 2.6.18 (the UltraScience Net's stacks) loaded BIC by default; CUBIC became the
        // default in 2.6.19.
        let cc_name = t.cc.clone().unwrap_or_else(|| if era_2_6_18 { "bic" } else { "cubic" }.into());
        let cc: CcName = serde_json::from_value(serde_json::Value::String(cc_name.clone()))
            .map_err(|_| ScenarioError(format!("cc: unknown '{cc_name}' (valid: {})", CcName::NAMES.join(", "))))?;
        let streams = in_range_u("streams", t.streams.unwrap_or(1) as u64, 1, STREAMS_MAX)? as u32;
        let mss = (mtu - super::link::TCP_IP_HEADER_BYTES) as u64;
        if t.window_bytes.is_some() && (t.rmem_max_bytes.is_some() || t.wmem_max_bytes.is_some()) {
            // A fixed socket buffer turns auto-tuning off: its ceilings would be ignored silently.
            return err(
                "window_bytes: a fixed socket buffer excludes rmem_max_bytes and wmem_max_bytes (auto-tuning's \
                 ceilings): give one or the other",
            );
        }
        let window = match t.window_bytes {
            Some(w) => WindowSpec::Fixed { bytes: in_range_u("window_bytes", w, mss, 1 << 32)? },
            None => {
                let auto = if era_2_6_18 { WindowSpec::raised_to_tcp_max() } else { WindowSpec::linux_auto() };
                let WindowSpec::Auto { rmem_initial_bytes, rmem_max_bytes, wmem_max_bytes } = auto else {
                    unreachable!()
                };
                WindowSpec::Auto {
                    rmem_initial_bytes,
                    rmem_max_bytes: in_range_u(
                        "rmem_max_bytes",
                        t.rmem_max_bytes.unwrap_or(rmem_max_bytes),
                        2 * mss,
                        1 << 32,
                    )?,
                    wmem_max_bytes: in_range_u(
                        "wmem_max_bytes",
                        t.wmem_max_bytes.unwrap_or(wmem_max_bytes),
                        mss,
                        1 << 32,
                    )?,
                }
            }
        };
        let mut params = TcpParams { window, ..TcpParams::default() };
        if era_2_6_18 {
            // No HyStart (2.6.29) nor RACK (4.18) yet; the initial window of RFC 3390
            // (min(4, max(2, 4380 bytes / MSS)) segments; 10 came with 2.6.39).
            params.hystart = None;
            params.rack = false;
            params.initial_cwnd_segs = (4380 / mss).clamp(2, 4) as u32;
        }
        params.initial_cwnd_segs =
            in_range_u("initial_cwnd_segs", t.initial_cwnd_segs.unwrap_or(params.initial_cwnd_segs) as u64, 1, 1000)?
                as u32;
        params.sack = t.sack.unwrap_or(true);
        params.rack = t.rack.unwrap_or(true);
        params.rto_formula = t.rto_formula.unwrap_or(params.rto_formula);
        params.rto_restart = t.rto_restart.unwrap_or(params.rto_restart);
        params.rto_ssthresh = t.rto_ssthresh.unwrap_or(params.rto_ssthresh);
        params.cwnd_growth = t.cwnd_growth.unwrap_or(params.cwnd_growth);
        if t.hystart == Some(false) {
            params.hystart = None;
        }
        if t.delayed_ack == Some(false) {
            params.ack_every_segs = 1;
        }
        if let Some(ms) = t.min_rto_ms {
            params.min_rto = (in_range_f("min_rto_ms", ms, 1.0, 60_000.0)? * MS as f64) as Time;
        }
        let duration_s = in_range_f("duration_s", t.duration_s.unwrap_or(10.0), 1e-3, 3600.0)?;
        let interval_s = in_range_f(
            "interval_s",
            t.interval_s.unwrap_or(if duration_s >= 2.0 { 1.0 } else { duration_s / 10.0 }),
            duration_s / 10_000.0,
            duration_s,
        )?;

        let (ib, eth, wan_gbps) = if link.is_ipoib() {
            if p.rate_gbps.is_some() {
                return err("rate_gbps: only for Ethernet/SONET links (IPoIB runs at the testbed's IB rates)");
            }
            if p.queue_packets.is_some() {
                return err(
                    "queue_packets: IPoIB paths are credit flow-controlled; give the extender buffer as queue_bytes",
                );
            }
            let verbs_path = PathSpec {
                delay_us: Some(delay_us),
                fibre_km: Some(fibre_km),
                extender: p.extender.clone(),
                wan_framing: p.wan_framing,
                extender_buffer_bytes: p.queue_bytes,
                loss: Some(loss),
                mtu_bytes: Some(ib_mtu),
                ..PathSpec::default()
            };
            let verbs = VerbsSpec::bw_test(TransportName::Ud, OpName::Send, 1);
            let r = Scenario::of_path(self.seed, &testbed, None, verbs_path, verbs).resolve()?;
            let wan = match &r.extender {
                Some(e) => e.framing.payload_gbps(&e.wan),
                None => r.wan.data_gbps(),
            };
            (Some(r), None, wan)
        } else {
            if p.wan_framing.is_some() {
                return err(
                    "wan_framing: only for IPoIB over a range extender (Ethernet/SONET links are framed by their type)",
                );
            }
            let (line_gbps, wan_overhead) = link.line().expect("an Ethernet or SONET link");
            // A rate is the WAN circuit's, at most the named link's line rate: a faster one would
            // be a different link, and its records would carry the wrong name.
            let wan_gbps = match p.rate_gbps {
                Some(g) if g.is_finite() && g > line_gbps => {
                    let faster: Vec<&str> = LinkKind::ALL
                        .iter()
                        .filter(|k| k.line().is_some_and(|(l, _)| l >= g))
                        .map(|k| k.name())
                        .collect();
                    let line = format!("{}", (line_gbps * 1e4).round() / 1e4);
                    return err(format!(
                        "rate_gbps: {g} is above the {} line rate of {line} Gb/s (valid: (0, {line}]; a faster WAN is \
                         another link: {})",
                        link.name(),
                        if faster.is_empty() { "none is named".to_string() } else { faster.join(", ") }
                    ));
                }
                Some(g) => in_range_f("rate_gbps", g, 0.001, line_gbps)?,
                None => line_gbps,
            };
            let dummy = crate::net::IbLink { width: 4, generation: crate::net::Generation::Sdr };
            let ext = match p.extender.as_deref() {
                None | Some("none") => None,
                Some("generic") => Some(ExtenderParams::generic(dummy)),
                Some(n) => Some(ExtenderParams::by_name(n).ok_or_else(|| {
                    ScenarioError(format!("extender: unknown '{n}' (valid: {})", ExtenderParams::NAMES.join(", ")))
                })?),
            };
            let one_way_s = (fibre_km * 5.0 + delay_us) * 1e-6;
            let frame = (mtu + wan_overhead) as u64;
            let queue = match (p.queue_bytes, p.queue_packets) {
                (Some(_), Some(_)) => return err("queue_bytes, queue_packets: give only one"),
                (Some(b), None) => in_range_u("queue_bytes", b, mtu as u64, 1 << 40)?,
                (None, Some(n)) => in_range_u("queue_packets", n, 1, 1 << 30)? * mtu as u64,
                // Default: one bandwidth-delay product (Villamizar & Song, 1994), at least 100 packets.
                (None, None) => match &ext {
                    Some(e) => e.buffer_bytes,
                    None => bdp_queue_bytes(wan_gbps, one_way_s, frame),
                },
            };
            let eth = EthPath {
                // 10GigE NICs on the 10 Gb/s links; the link's own rate on the faster ones.
                host_gbps: HOST_NIC_GBPS.max(line_gbps),
                host_frame_overhead_bytes: WanFraming::TenGigELan.frame_overhead_bytes(),
                wan_gbps,
                wan_frame_overhead_bytes: wan_overhead,
                queue_limit_bytes: queue,
                box_latency_ns: ext.as_ref().map(|e| e.latency_ns).unwrap_or(ROUTER_LATENCY_NS),
                box_packet_ns: ext.as_ref().map(|e| e.packet_ns).unwrap_or(0.0),
                extender: ext.map(|e| e.name),
            };
            (None, Some(eth), wan_gbps)
        };

        let cross = match &self.cross {
            None => None,
            Some(c) => Some(resolve_cross(c, wan_gbps, link.name(), mtu, mtu)?),
        };

        Ok(TcpResolved {
            seed: self.seed,
            testbed,
            link,
            mtu_bytes: mtu,
            mss_bytes: mss as u32,
            ib_mtu_bytes: ib_mtu,
            stack,
            params,
            cc,
            streams,
            duration: (duration_s * S as f64) as Time,
            interval: (interval_s * S as f64) as Time,
            cwnd_trace: t.cwnd_trace.unwrap_or(false),
            delay_us,
            fibre_km,
            loss,
            wan_gbps,
            ib,
            eth,
            cross,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(json: &str) -> Result<TcpResolved, String> {
        TcpScenario::from_json(json).and_then(|s| s.resolve()).map_err(|e| e.0)
    }

    #[test]
    fn defaults_are_stock_linux() {
        let r = resolve(r#"{"link": "10gige-lan"}"#).unwrap();
        assert_eq!(r.cc, CcName::Cubic);
        assert_eq!((r.mtu_bytes, r.mss_bytes, r.streams), (1500, 1448, 1));
        assert_eq!(r.params.initial_cwnd_segs, 10);
        assert_eq!(r.params.window, WindowSpec::linux_auto());
        let ud = resolve(r#"{"link": "ipoib-ud"}"#).unwrap();
        assert_eq!((ud.mtu_bytes, ud.testbed.as_str()), (2044, "s1"));
        assert!((ud.wan_gbps - 8.0).abs() < 1e-9);
    }

    #[test]
    fn bad_input_names_the_parameter_and_range() {
        let cases = [
            (r#"{"link": "fddi"}"#, "link: unknown 'fddi'"),
            (r#"{"link": "10gige-lan", "tcp": {"cc": "westwood"}}"#, "cc: unknown 'westwood'"),
            (
                r#"{"link": "ipoib-ud", "tcp": {"mtu_bytes": 4000}}"#,
                "mtu_bytes: 4000 is out of range for ipoib-ud [576, 2044]",
            ),
            (r#"{"link": "10gige-lan", "path": {"loss": -0.1}}"#, "loss: -0.1 is out of range"),
            (r#"{"link": "10gige-lan", "cross": {"gbps": 12}}"#, "cross_gbps: 12 is out of range (0, 10.0000]"),
            (r#"{"link": "10gige-lan", "tcp": {"streams": 0}}"#, "streams: 0 is out of range [1, 1024]"),
            (r#"{"link": "10gige-lan", "tcp": {"bogus": 1}}"#, "unknown field `bogus`"),
            (
                r#"{"link": "10gige-lan", "stack": {"per_seg_us": -1, "per_byte_ns": 0}}"#,
                "stack.per_seg_us: -1 is out of range",
            ),
            (r#"{"link": "10gige-lan", "stack": "fast"}"#, "stack: unknown 'fast'"),
        ];
        for (json, want) in cases {
            let e = resolve(json).unwrap_err();
            assert!(e.contains(want), "{json}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
