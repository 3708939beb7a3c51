//! The scenario: plain data naming a testbed and overriding any of its parameters, plus the
//! workload (the Python layer reads the user's TOML and hands it here as JSON). Validated once, here, into a [`Resolved`] scenario whose
//! every field is in range; the models never see unvalidated input.

use serde::{Deserialize, Serialize};

use crate::engine::time::{MS, S};
use crate::engine::Time;
use crate::ib::timer::{self, MAX_RETRY_COUNT, MAX_TIMEOUT_EXP};
use crate::ib::HcaProfile;
use crate::link_events::{self, LinkEventSpec, LinkEvents, SubnetManagerSpec};
use crate::net::{CrossResolved, CrossSpec, ExtenderParams, Generation, IbLink, SwitchParams, WanFraming};

/// A problem with a scenario, worded for the user: the parameter, what was given, the valid range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ScenarioError(pub String);

/// A one-line scenario error (shared by every model's scenario validation).
pub(crate) fn err<T>(msg: impl Into<String>) -> Result<T, ScenarioError> {
    Err(ScenarioError(msg.into()))
}

/// Parses a scenario from JSON. The error names the key path (`path.wan_framing: unknown
/// variant ...`) so the user can find the field in their file; serde_json's line and column are
/// dropped because they point into the JSON the Python layer built, not into the user's file.
pub fn parse_json<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, ScenarioError> {
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let inner = e.inner();
        let mut msg = inner.to_string();
        let position = format!(" at line {} column {}", inner.line(), inner.column());
        if let Some(stripped) = msg.strip_suffix(&position) {
            msg = stripped.to_string();
        }
        let msg = plain_types(&msg);
        match e.path().to_string().as_str() {
            "." => ScenarioError(format!("scenario: {msg}")),
            path => ScenarioError(format!("scenario: {path}: {msg}")),
        }
    })
}

/// A model's scenario: plain data read from JSON and validated once into what the model runs,
/// and the run itself. Every model's entry points ([`validate_json`], [`run_json`]) are these.
pub(crate) trait ModelScenario: serde::de::DeserializeOwned {
    /// Every parameter the model uses, in range.
    type Resolved: Serialize;
    /// One measured point.
    type Record: Serialize;

    /// The whole check: every key in range, or one line naming the key and its valid range.
    fn resolve(&self) -> Result<Self::Resolved, ScenarioError>;

    /// Runs a resolved scenario.
    fn run(resolved: &Self::Resolved) -> Self::Record;

    /// Reads the scenario; a key of the wrong kind or unknown is one line naming its path.
    fn from_json(text: &str) -> Result<Self, ScenarioError> {
        parse_json(text)
    }
}

/// Validates a model's JSON scenario (the whole check, nothing runs).
pub(crate) fn validate_json<S: ModelScenario>(text: &str) -> Result<S::Resolved, ScenarioError> {
    S::from_json(text)?.resolve()
}

/// Validates a model's JSON scenario and runs it: every model's public entry point.
pub(crate) fn run_json<S: ModelScenario>(text: &str) -> Result<S::Record, ScenarioError> {
    Ok(S::run(&validate_json::<S>(text)?))
}

/// The testbed a model's scenario names (`default` when it names none), if it is one of
/// [`TESTBEDS`]; the error says which model asked.
pub(crate) fn known_testbed(name: Option<&str>, default: &str, model: &str) -> Result<String, ScenarioError> {
    let testbed = name.unwrap_or(default);
    if !TESTBEDS.contains(&testbed) {
        return err(format!("testbed: unknown '{testbed}' for {model} (valid: {})", TESTBEDS.join(", ")));
    }
    Ok(testbed.to_string())
}

/// The IB path MTUs (IBA vol. 1: 256 to 4096 bytes).
pub(crate) const IB_MTUS: [u32; 5] = [256, 512, 1024, 2048, 4096];

/// The IB MTUs up to `max`, for an error message (built only when one is printed).
fn mtu_list(max: u32) -> String {
    IB_MTUS.iter().filter(|&&m| m <= max).map(|m| m.to_string()).collect::<Vec<_>>().join(", ")
}

/// serde names the Rust type a value must have ("expected u32"); a scenario's author needs the
/// kind of value and the range that type holds (the key's own, narrower, range is checked, and
/// named, once the value parses; a whole number beyond the type's range never gets that far).
fn plain_types(msg: &str) -> String {
    const TYPES: [(&str, &str); 8] = [
        ("expected u8", "expected a whole number in [0, 255]"),
        ("expected u16", "expected a whole number in [0, 65535]"),
        ("expected u32", "expected a whole number in [0, 4294967295]"),
        ("expected u64", "expected a whole number in [0, 18446744073709551615]"),
        ("expected usize", "expected a whole number in [0, 18446744073709551615]"),
        ("expected i32", "expected a whole number in [-2147483648, 2147483647]"),
        ("expected i64", "expected a whole number in [-9223372036854775808, 9223372036854775807]"),
        ("expected f64", "expected a number"),
    ];
    if msg == "expected value" {
        // serde_json's words for a number or boolean where a name goes (an enum such as a transport)
        return "expected a name in quotes (see --help for the valid ones)".to_string();
    }
    TYPES.iter().fold(msg.to_string(), |out, (rust, words)| out.replace(rust, words))
}

/// The IB transport service a verbs benchmark runs over (`verbs.transport`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TransportName {
    /// Reliable Connected: acknowledged, retransmitted, in order.
    Rc,
    /// Unreliable Connected: no acknowledgements; a lost packet drops its whole message.
    Uc,
    /// Unreliable Datagram: one-MTU messages, no acknowledgements.
    Ud,
}

/// The verb a benchmark posts (`verbs.op`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpName {
    /// Send/receive: the responder consumes a posted receive per message.
    Send,
    /// RDMA Write: the data lands in the responder's memory without a receive.
    Write,
    /// RDMA Read: the requester fetches from the responder's memory (outstanding reads limited).
    Read,
}

/// The perftest measurement (`verbs.test`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TestName {
    /// Bandwidth: stream messages one way with up to tx-depth outstanding (ib_*_bw).
    Bw,
    /// Latency: ping-pong one message at a time (ib_*_lat).
    Lat,
    /// Bidirectional bandwidth: both sides stream at once (ib_*_bw -b).
    Bibw,
    /// Message rate: streams as `Bw` does; its figure is the record's `msg_rate_Mps`.
    Rate,
}

/// The long-haul path between the two clusters (every field optional: the testbed decides).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PathSpec {
    /// Delay added by the range extenders, one way (us). See `Resolved::one_way_delay_us`.
    pub delay_us: Option<f64>,
    /// Fibre between the extenders (km); light in fibre takes 5 us per km.
    pub fibre_km: Option<f64>,
    /// "longbow-xr", "longbow-c103", "generic" or "none" (a plain IB link between the switches).
    pub extender: Option<String>,
    /// Parallel WAN links between the extender pair (flows are spread by queue pair).
    pub wan_links: Option<u32>,
    /// How the extenders frame IB on the WAN (default: the extender's own).
    pub wan_framing: Option<WanFraming>,
    /// IB link width of the WAN in lanes (1, 4 or 12): the plain link's, or the extender's WAN
    /// port's; default the testbed's.
    pub wan_width: Option<u32>,
    /// IB generation of the WAN (SDR to XDR), as `wan_width`; default the testbed's.
    pub wan_generation: Option<Generation>,
    /// The extender's receive buffer for traffic from the WAN, bytes per direction: the credits that bound the data in
    /// flight.
    pub extender_buffer_bytes: Option<u64>,
    /// Per-packet time of the extender's forwarding engine, ns (caps its packet rate).
    pub extender_packet_ns: Option<f64>,
    /// The switches' receive buffer per port and direction, bytes (advertised as link credits).
    pub switch_buffer_bytes: Option<u64>,
    /// Probability that a packet is corrupted on the WAN (each direction).
    pub loss: Option<f64>,
    /// IB path MTU (256, 512, 1024, 2048 or 4096 bytes).
    pub mtu_bytes: Option<u32>,
    /// With cross traffic: the WAN switches' drop-tail queue toward the long-haul link (bytes).
    pub queue_bytes: Option<u64>,
}

/// The long-haul path of a model that names only its length and its extenders and runs over
/// the verbs or TCP model's path (iSER, NFS): every field optional, the testbed decides.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ExtenderPathSpec {
    /// Delay added by the range extenders, one way (us).
    pub delay_us: Option<f64>,
    /// Fibre between the extenders (km, 5 us per km).
    pub fibre_km: Option<f64>,
    /// "longbow-xr", "longbow-c103", "generic" or "none".
    pub extender: Option<String>,
}

impl ExtenderPathSpec {
    /// The verbs model's path with these keys set (its checks, its messages).
    pub fn verbs(&self) -> PathSpec {
        PathSpec {
            delay_us: self.delay_us,
            fibre_km: self.fibre_km,
            extender: self.extender.clone(),
            ..PathSpec::default()
        }
    }
}

/// A perftest-like verbs benchmark. Unset fields take perftest's defaults
/// (perftest_parameters.h: 1000 iterations, tx-depth 128, rx-depth 512, QP timeout 14, retry
/// count 7), except tx-depth on the S1 testbeds: see `Testbed::of`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct VerbsSpec {
    /// RC, UC or UD.
    pub transport: TransportName,
    /// Send, RDMA Write or RDMA Read.
    pub op: OpName,
    /// Bandwidth, latency, bidirectional bandwidth or message rate.
    pub test: TestName,
    /// Message size, bytes (1 to MAX_SIZE_BYTES).
    pub size_bytes: u64,
    /// Messages per queue pair (perftest `-n`; default 1000).
    pub iterations: Option<u64>,
    /// Send work requests outstanding per queue pair (perftest `-t`; default the testbed's, else 128).
    pub tx_depth: Option<u32>,
    /// Receive work requests posted (perftest `-r`; default 512); recorded, never run short of.
    pub rx_depth: Option<u32>,
    /// Queue pairs driven in parallel (perftest `-q`; default 1).
    pub qps: Option<u32>,
    /// RDMA Reads in flight per queue pair (perftest `-o`; default the adapter's limit).
    pub outstanding_reads: Option<u32>,
    /// The local ACK timeout exponent the benchmark asks for (perftest's `-u`/--qp-timeout).
    pub timeout_exp: Option<u32>,
    /// Retries of a timed-out request before the queue pair fails (0 to 7; default 7).
    pub retry_count: Option<u32>,
    /// Connect the queue pairs through the RDMA CM (perftest's `-c`/`-R`), which sets their
    /// timeout (see [`crate::ib::timer`]).
    pub cm: Option<bool>,
    /// Run for this long (perftest's `-D`), posting without an iteration count; needed with
    /// link events.
    pub duration_s: Option<f64>,
    /// With link events: the time series' interval (default 0.1 s).
    pub interval_s: Option<f64>,
}

impl VerbsSpec {
    /// A bandwidth test with every perftest option at its default: how the MPI, TCP and NFS
    /// models resolve the verbs path they run over.
    pub fn bw_test(transport: TransportName, op: OpName, size_bytes: u64) -> VerbsSpec {
        VerbsSpec {
            transport,
            op,
            test: TestName::Bw,
            size_bytes,
            iterations: None,
            tx_depth: None,
            rx_depth: None,
            qps: None,
            outstanding_reads: None,
            timeout_exp: None,
            retry_count: None,
            cm: None,
            duration_s: None,
            interval_s: None,
        }
    }
}

/// A verbs scenario as the user wrote it: plain data, validated once by [`Scenario::resolve`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Seed of every random stream in the run (default 1).
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Hardware profile: one of [`TESTBEDS`].
    #[serde(default = "default_testbed")]
    pub testbed: String,
    /// Override the testbed's adapter by name.
    pub hca: Option<String>,
    /// The long-haul path (the testbed decides what is unset).
    #[serde(default)]
    pub path: PathSpec,
    /// The perftest-like benchmark to run.
    pub verbs: VerbsSpec,
    /// UDP cross traffic from a second host pair on the WAN switches (framed WANs only).
    #[serde(default)]
    pub cross: Option<CrossSpec>,
    /// WAN links unplugged and plugged back during the run (`[[events]]`).
    #[serde(default)]
    pub events: Vec<LinkEventSpec>,
    /// The subnet manager's timing when links change (OpenSM's defaults unless set).
    #[serde(default)]
    pub subnet_manager: SubnetManagerSpec,
}

/// The seed of a scenario that names none: every model's scenario defaults to it.
pub(crate) fn default_seed() -> u64 {
    1
}
fn default_testbed() -> String {
    "s1".into()
}

/// The published testbeds, then one of today's clusters per IB generation (FDR to XDR).
pub const TESTBEDS: [&str; 9] = ["s1", "s1-connectx", "s3", "usn", "fdr", "edr", "hdr", "ndr", "xdr"];

/// perftest's default tx-depth (perftest_parameters.h, DEF_TX_BW).
pub const PERFTEST_TX_DEPTH: u32 = 128;

/// perftest's defaults for the ACK timer (perftest_parameters.h DEF_QP_TIME and DEF_RETRY_COUNT;
/// the same 14 and 7 in 2008's ib_rdma_bw/ib_write_bw).
pub const PERFTEST_QP_TIMEOUT: u32 = 14;
/// perftest's default retry count (DEF_RETRY_COUNT), the IBA's largest.
pub const PERFTEST_RETRY_COUNT: u32 = 7;

/// The packet life time the subnet administrator gives path records (an exponent): OpenSM's
/// subnet_timeout, OSM_DEFAULT_SUBNET_TIMEOUT 0x12, the same from OFED 1.x to today.
pub const SA_PACKET_LIFE_TIME: u32 = 18;

/// A hardware profile: the adapters, switches and extender pair of a testbed, and how the runs
/// published on it used the benchmark. Parameters are set here once per profile, never per
/// point.
#[derive(Debug, Clone)]
pub(crate) struct Testbed {
    pub hca: HcaProfile,
    pub switch: SwitchParams,
    pub extender: Option<ExtenderParams>,
    /// The long link's IB rate when no extender carries it.
    pub wan: IbLink,
    /// How the testbed's long link carries IB when an extender can frame it so (None: each
    /// extender's own).
    pub framing: Option<WanFraming>,
    /// The benchmark window of the testbed's runs (its tx-depth); see [`Testbed::of`].
    pub tx_depth: u32,
    /// Its runs connected the queue pairs through the RDMA CM.
    pub cm: bool,
    /// A CM-connected queue pair of its software gets the benchmark's exponent (perftest since
    /// commit ccae524, August 2024, over a kernel with RDMA_OPTION_ID_ACK_TIMEOUT) rather than
    /// the CM's own derivation (every stack of the 2008-2011 testbeds).
    pub cm_sets_ack_timeout: bool,
}

impl Testbed {
    /// The named testbed. Its `tx_depth` is the bandwidth benchmark's window (messages posted and
    /// not completed per queue pair) with which its published verbs figures were measured, where
    /// they differ from perftest's default; neither S1 value is stated in [S1]:
    /// - `s1` (InfiniHost III, [S1] Fig 2): 16, calibrated once on Fig 2(b): 64 KB messages fall
    ///   below the RC peak at 1000 us but not at 100 us, while 8 MB messages fill the pipe at
    ///   10000 us. A byte limit cannot do both (64 KB at 1000 us needs < 2 MB in flight, 8 MB at
    ///   10000 us > 20 MB), so it is a message window; it is taken as the benchmark's rather than
    ///   the adapter's because, as an adapter limit, it also held MPI and NFS/RDMA over the same
    ///   adapter, doubling MPI's rendezvous-threshold gain against [S1] Fig 5(b).
    /// - `s1-connectx` ([S1] Fig 10): 64, assumed. Fig 10 shows ConnectX ahead of InfiniHost III
    ///   for small and medium messages at 1 ms, which a window-bound run can only show with a
    ///   deeper window than Fig 2's; per-message costs cannot (they are microseconds against a
    ///   2 ms round trip).
    /// - `usn` (ORNL's UltraScience Net, Rao et al. SC08): 100, the ib_rdma_bw of the time
    ///   (perftest's rdma_bw.c, OFED 1.2/1.3, 2007-2008: `.tx_depth = 100`; ib_write_bw's window
    ///   was 100 too, ib_send_bw's 300). 16 is not perftest's default of [S1]'s era either: see
    ///   docs/models/long-haul.md for why it stays a property of [S1]'s runs, not of the adapter.
    pub fn of(name: &str) -> Option<Testbed> {
        let sdr = IbLink { width: 4, generation: Generation::Sdr };
        let s1 = |hca, tx_depth| Testbed {
            hca,
            switch: SwitchParams::infiniscale3(),
            extender: Some(ExtenderParams::longbow_xr()),
            wan: sdr,
            framing: None,
            tx_depth,
            cm: false,
            cm_sets_ack_timeout: false,
        };
        let today = |hca: HcaProfile, switch: SwitchParams| {
            let l = switch.link;
            Testbed {
                hca,
                switch,
                extender: Some(ExtenderParams::generic(l)),
                wan: l,
                framing: None,
                tx_depth: PERFTEST_TX_DEPTH,
                cm: false,
                cm_sets_ack_timeout: true,
            }
        };
        Some(match name {
            "s1" => s1(HcaProfile::infinihost3(), 16),
            "s1-connectx" => s1(HcaProfile::connectx(), 64),
            "s3" => Testbed {
                switch: SwitchParams::infiniscale4(),
                extender: Some(ExtenderParams::longbow_c103()),
                ..s1(HcaProfile::connectx2(), PERFTEST_TX_DEPTH)
            },
            // One cluster of each IB generation since 2011: its adapter and switch, a generic
            // extender pair (credits for its rated reach, no packet cap) at the port rate, and
            // perftest of today (its defaults; the CM gives a QP the benchmark's timeout).
            "fdr" => today(HcaProfile::connectx3(), SwitchParams::switchx2()),
            "edr" => today(HcaProfile::connectx5(), SwitchParams::switch_ib()),
            "hdr" => today(HcaProfile::connectx6(), SwitchParams::quantum()),
            "ndr" => today(HcaProfile::connectx7(), SwitchParams::quantum2()),
            "xdr" => today(HcaProfile::connectx8(), SwitchParams::quantum_x800()),
            // Dual-socket quad-core 2 GHz Opteron hosts with Voltaire 4x SDR adapters on 8-lane
            // PCIe, both extenders at ORNL so the data crosses the whole loop one way, the loop
            // carried as OC-192 through Ciena CDCI switches (or 10GigE WAN-PHY through Force10
            // E300s), measured with `ib_rdma_bw -c` (Rao et al., SC08; issue 22). The InfiniBand
            // switch between host and extender is not described: an InfiniScale III class one is
            // assumed.
            "usn" => Testbed { framing: Some(WanFraming::Oc192), cm: true, ..s1(HcaProfile::voltaire_sdr(), 100) },
            _ => return None,
        })
    }
}

/// Largest message a verbs scenario may send, bytes (1 GiB).
pub const MAX_SIZE_BYTES: u64 = 1 << 30;
/// Largest added one-way delay, microseconds (200 ms: beyond any terrestrial path).
pub const MAX_DELAY_US: f64 = 200_000.0;
/// The longest fixed-length run (s).
pub const MAX_DURATION_S: f64 = 3600.0;

/// Every parameter the models use, in range.
#[derive(Debug, Clone, Serialize)]
pub struct Resolved {
    /// Seed of every random stream in the run.
    pub seed: u64,
    /// The hardware profile's name.
    pub testbed: String,
    /// The adapters (both ends alike).
    pub hca: HcaProfile,
    /// The switches between the hosts and the extenders.
    pub switch: SwitchParams,
    /// None: the switches are joined by a plain IB link (`wan` rate) over the distance.
    pub extender: Option<ExtenderParams>,
    /// The long link's IB rate (width and generation) when no extender frames it.
    pub wan: IbLink,
    /// Parallel WAN links between the extender pair.
    pub wan_links: u32,
    /// Delay added on the long-haul link, one way, microseconds.
    pub delay_us: f64,
    /// Fibre of the long-haul link, km (5 us per km).
    pub fibre_km: f64,
    /// Probability that a packet is corrupted on the WAN, each direction, in [0, 1).
    pub loss: f64,
    /// IB path MTU, bytes.
    pub mtu_bytes: u32,
    /// RC, UC or UD.
    pub transport: TransportName,
    /// Send, RDMA Write or RDMA Read.
    pub op: OpName,
    /// Bandwidth, latency, bidirectional bandwidth or message rate.
    pub test: TestName,
    /// Message size, bytes.
    pub size_bytes: u32,
    /// Messages per queue pair.
    pub iterations: u64,
    /// Send work requests outstanding per queue pair.
    pub tx_depth: u32,
    /// Receive work requests posted (recorded; never run short of).
    pub rx_depth: u32,
    /// Queue pairs driven in parallel.
    pub qps: u32,
    /// RDMA Reads in flight per queue pair.
    pub outstanding_reads: u32,
    /// The ACK timeout exponent the benchmark asked for (perftest's `-u`).
    pub timeout_exp: u32,
    /// Connected through the RDMA CM.
    pub cm: bool,
    /// The exponent the queue pairs get: `timeout_exp`, or the CM's (see [`crate::ib::timer`]);
    /// the adapter's firmware may still raise the timer (`HcaProfile::ack_timer`).
    pub ack_timeout_exp: u32,
    /// Retries of a timed-out request before the queue pair fails.
    pub retry_count: u32,
    /// What the user should know about the hardware combination and distance (an extender
    /// beyond its rated reach, or slower than the adapters), one line each.
    pub warnings: Vec<String>,
    /// Cross traffic on the WAN switches, and their drop-tail queue toward the long-haul link
    /// (bytes; 0 without cross traffic: no WAN switch is built).
    pub cross: Option<CrossResolved>,
    /// The WAN switches' drop-tail queue toward the long-haul link, bytes (0: no WAN switch).
    pub queue_bytes: u64,
    /// A run of fixed length (s), posting without an iteration count (None: `iterations`).
    pub duration_s: Option<f64>,
    /// WAN links going down and up during the run, and the subnet manager's timing.
    pub link_events: Option<LinkEvents>,
}

impl Resolved {
    /// One-way delay of the long-haul link (us): fibre plus the extenders' delay setting.
    ///
    /// \[S1\] says its Longbows delay packets "before and after traversing the WAN link". We read
    /// the setting as the total added one-way delay (half applied on each side of the WAN), so
    /// a round trip gains twice the setting. This matches S1's own equivalence of 1000 us with
    /// about 200 km (5 us/km one way) and is used for every S1 point.
    pub fn one_way_delay_us(&self) -> f64 {
        self.fibre_km * 5.0 + self.delay_us
    }
}

pub(crate) fn in_range_f(name: &str, v: f64, lo: f64, hi: f64) -> Result<f64, ScenarioError> {
    if !v.is_finite() || v < lo || v > hi {
        return err(format!("{name}: {v} is out of range [{lo}, {hi}]"));
    }
    // -0.0 is 0: a scenario file's `delay_us = -0.0` would be echoed into the records as -0.
    Ok(v + 0.0)
}

pub(crate) fn in_range_u(name: &str, v: u64, lo: u64, hi: u64) -> Result<u64, ScenarioError> {
    if v < lo || v > hi {
        return err(format!("{name}: {v} is out of range [{lo}, {hi}]"));
    }
    Ok(v)
}

/// A `[cross]` table in range, or a one-line error naming the key: the rate in (0, `wan_gbps`]
/// (the WAN line rate of `wan`), datagrams of 64 bytes up to `mtu` (`default_bytes` unset). The
/// same check for every model with cross traffic.
pub(crate) fn resolve_cross(
    c: &CrossSpec,
    wan_gbps: f64,
    wan: &str,
    default_bytes: u32,
    mtu: u32,
) -> Result<CrossResolved, ScenarioError> {
    if !c.gbps.is_finite() || c.gbps <= 0.0 || c.gbps > wan_gbps {
        return err(format!("cross_gbps: {} is out of range (0, {wan_gbps:.4}] (the WAN line rate of {wan})", c.gbps));
    }
    let start = in_range_f("cross.start_s", c.start_s.unwrap_or(0.0), 0.0, 3600.0)?;
    let on = in_range_f("cross.on_ms", c.on_ms.unwrap_or(0.0), 0.0, 3.6e6)?;
    let off = in_range_f("cross.off_ms", c.off_ms.unwrap_or(0.0), 0.0, 3.6e6)?;
    if (on > 0.0) != (off > 0.0) {
        return err("cross.on_ms, cross.off_ms: give both (bursts) or neither (constant rate)");
    }
    let ip = in_range_u("cross.packet_bytes", c.packet_bytes.unwrap_or(default_bytes) as u64, 64, mtu as u64)? as u32;
    Ok(CrossResolved {
        gbps: c.gbps,
        start: (start * S as f64) as Time,
        on: (on * MS as f64) as Time,
        off: (off * MS as f64) as Time,
        ip_bytes: ip,
    })
}

/// A drop-tail queue floor when it is sized by the bandwidth-delay product: ns-3's default
/// drop-tail queue (100 packets), so short paths still absorb a burst.
const MIN_QUEUE_PACKETS: u64 = 100;

/// The default bottleneck queue of a WAN router or switch: one bandwidth-delay product at
/// `wan_gbps` over a round trip of twice `one_way_s` (Villamizar & Song, 1994), at least 100
/// frames of `frame_bytes`. The same for TCP's routers and the verbs model's WAN switches.
pub(crate) fn bdp_queue_bytes(wan_gbps: f64, one_way_s: f64, frame_bytes: u64) -> u64 {
    ((wan_gbps * 1e9 / 8.0 * 2.0 * one_way_s) as u64).max(MIN_QUEUE_PACKETS * frame_bytes)
}

/// Cross traffic's datagrams on an Ethernet/SONET WAN: Ethernet's MTU by default (iperf -u's
/// datagrams fill it), jumbo frames at most.
const CROSS_DEFAULT_BYTES: u32 = 1500;
const CROSS_MAX_BYTES: u32 = 9000;

impl Scenario {
    /// Parse a scenario from JSON; an unknown key or a value of the wrong type is an error.
    pub fn from_json(text: &str) -> Result<Scenario, ScenarioError> {
        parse_json(text)
    }

    /// The verbs path a model over RDMA runs on (iSER, NFS/RDMA, the parallel file system): one
    /// RC queue pair of the testbed's adapter writing `size_bytes` messages, perftest's defaults
    /// otherwise, resolved by the verbs model's own validation (the same testbeds and messages).
    pub fn rc_path(seed: u64, testbed: &str, path: PathSpec, size_bytes: u64) -> Result<Resolved, ScenarioError> {
        let verbs = VerbsSpec::bw_test(TransportName::Rc, OpName::Write, size_bytes);
        Scenario::of_path(seed, testbed, None, path, verbs).resolve()
    }

    /// The verbs scenario of the path another model runs over (iSER, NFS, TCP over IPoIB, MPI,
    /// the parallel file system): no cross traffic and no link events of its own.
    pub fn of_path(seed: u64, testbed: &str, hca: Option<String>, path: PathSpec, verbs: VerbsSpec) -> Scenario {
        Scenario {
            seed,
            testbed: testbed.into(),
            hca,
            path,
            verbs,
            cross: None,
            events: Vec::new(),
            subnet_manager: SubnetManagerSpec::default(),
        }
    }

    /// Check every value against its valid range and fill in the testbed's defaults.
    pub fn resolve(&self) -> Result<Resolved, ScenarioError> {
        let Some(testbed) = Testbed::of(&self.testbed) else {
            return err(format!("testbed: unknown '{}' (valid: {})", self.testbed, TESTBEDS.join(", ")));
        };
        let hca = match &self.hca {
            None => testbed.hca.clone(),
            Some(n) => HcaProfile::by_name(n).ok_or_else(|| {
                ScenarioError(format!("hca: unknown '{n}' (valid: {})", HcaProfile::NAMES.join(", ")))
            })?,
        };
        let p = &self.path;
        let mut switch = testbed.switch.clone();
        let mut wan = testbed.wan;
        if let Some(w) = p.wan_width {
            if !IbLink::VALID_WIDTHS.contains(&w) {
                return err(format!("wan_width: {w} is not a link width (valid: 1, 4, 12)"));
            }
            wan.width = w;
        }
        if let Some(g) = p.wan_generation {
            wan.generation = g;
        }
        let mut extender = match p.extender.as_deref() {
            None => testbed.extender.clone(),
            Some("none") => None,
            Some("generic") => Some(ExtenderParams::generic(wan)),
            Some(n) => Some(ExtenderParams::by_name(n).ok_or_else(|| {
                ScenarioError(format!("extender: unknown '{n}' (valid: {})", ExtenderParams::NAMES.join(", ")))
            })?),
        };
        let mtu = p.mtu_bytes.unwrap_or(2048);
        if !IB_MTUS.contains(&mtu) {
            return err(format!("mtu_bytes: {mtu} is not an IB MTU (valid: {})", mtu_list(u32::MAX)));
        }
        if mtu > hca.max_mtu_bytes {
            return err(format!(
                "mtu_bytes: {mtu} is above the {} adapter's largest MTU (valid: {})",
                hca.name,
                mtu_list(hca.max_mtu_bytes)
            ));
        }
        let max_packet = (mtu + 64) as u64;
        if let Some(ext) = extender.as_mut() {
            if p.wan_width.is_some() || p.wan_generation.is_some() {
                ext.wan = wan;
            }
            match p.wan_framing {
                Some(f) if !ext.framings.contains(&f) => {
                    let valid: Vec<&str> = ext.framings.iter().map(|f| f.name()).collect();
                    return err(format!(
                        "wan_framing: the {} cannot carry IB over {} (valid for it: {})",
                        ext.name,
                        f.name(),
                        valid.join(", ")
                    ));
                }
                Some(f) => ext.framing = f,
                None => {
                    if let Some(f) = testbed.framing.filter(|f| ext.framings.contains(f)) {
                        ext.framing = f;
                    }
                }
            }
            if let Some(b) = p.extender_buffer_bytes {
                ext.buffer_bytes = in_range_u("extender_buffer_bytes", b, max_packet, 1 << 40)
                    .map_err(|_| ScenarioError(format!("extender_buffer_bytes: {b} is smaller than one packet ({max_packet} bytes at MTU {mtu}) or above 1 TiB")))?;
            }
            if let Some(ns) = p.extender_packet_ns {
                ext.packet_ns = in_range_f("extender_packet_ns", ns, 0.0, 1e6)?;
            }
        } else if p.wan_framing.is_some_and(|f| f != WanFraming::Ib) {
            return err("wan_framing: only a range extender can carry IB over SONET/Ethernet (set extender)");
        }
        if let Some(b) = p.switch_buffer_bytes {
            switch.buffer_bytes = in_range_u("switch_buffer_bytes", b, max_packet, 1 << 40)
                .map_err(|_| ScenarioError(format!("switch_buffer_bytes: {b} is smaller than one packet ({max_packet} bytes at MTU {mtu}) or above 1 TiB")))?;
        }
        let ports = extender.as_ref().map_or(1, |e| e.wan_ports);
        let wan_links = in_range_u("wan_links", p.wan_links.unwrap_or(ports) as u64, 1, 16)? as u32;
        if wan_links > 1 && extender.is_none() {
            return err("wan_links: parallel WAN links need a range extender pair (extender = none)");
        }
        let delay_us = in_range_f("delay_us", p.delay_us.unwrap_or(0.0), 0.0, MAX_DELAY_US)?;
        let fibre_km = in_range_f("fibre_km", p.fibre_km.unwrap_or(0.0), 0.0, MAX_DELAY_US / 5.0)?;
        let loss = in_range_f("loss", p.loss.unwrap_or(0.0), 0.0, 0.5)?;

        let (cross, queue_bytes) =
            self.resolve_cross(extender.as_ref(), wan_links, (fibre_km * 5.0 + delay_us) * 1e-6)?;

        let v = &self.verbs;
        let size = in_range_u("size_bytes", v.size_bytes, 1, MAX_SIZE_BYTES)? as u32;
        if v.transport == TransportName::Ud && size > mtu {
            return err(format!(
                "size_bytes: {size} is above the MTU; UD messages are one packet (valid 1..{mtu} at mtu_bytes {mtu})"
            ));
        }
        if v.transport == TransportName::Ud && v.op != OpName::Send {
            return err("op: UD supports only send (valid for ud: send)");
        }
        if v.transport == TransportName::Uc && v.op == OpName::Read {
            return err("op: UC has no RDMA read (valid for uc: send, write)");
        }
        let lat = v.test == TestName::Lat;
        let mut warnings = Vec::new();
        if let Some(ext) = &extender {
            let host_gbps = hca.port.data_gbps().min(switch.link.data_gbps());
            // The testbed's own pairing is its design ([S1]'s DDR adapters behind an SDR WAN): said
            // only when the user put the two together.
            let own_pairing = p.extender.is_none() && self.hca.is_none();
            warnings.extend(ext.rate_warning(host_gbps, wan_links).filter(|_| !own_pairing));
            warnings.extend(ext.reach_warning(fibre_km + delay_us / 5.0));
        }
        let timeout_exp =
            in_range_u("timeout_exp", v.timeout_exp.unwrap_or(PERFTEST_QP_TIMEOUT) as u64, 0, MAX_TIMEOUT_EXP as u64)?
                as u32;
        let cm = v.cm.unwrap_or(testbed.cm);
        let ack_timeout_exp = if cm && !testbed.cm_sets_ack_timeout {
            timer::cm_ack_timeout(hca.ack_timer.local_ca_ack_delay, SA_PACKET_LIFE_TIME)
        } else {
            timeout_exp
        };
        let duration_s = match v.duration_s {
            Some(d) if !(d.is_finite() && d > 0.0 && d <= MAX_DURATION_S) => {
                return err(format!("duration_s: {d} is out of range (0, {MAX_DURATION_S}]"))
            }
            d => d,
        };
        if !self.events.is_empty() && cross.is_some() {
            return err("events: link failure is modelled without cross traffic (leave cross_gbps unset)");
        }
        let link_events =
            link_events::resolve(&self.events, &self.subnet_manager, wan_links, duration_s, v.interval_s)?;
        Ok(Resolved {
            seed: self.seed,
            testbed: self.testbed.clone(),
            hca: hca.clone(),
            switch,
            extender,
            wan,
            wan_links,
            delay_us,
            fibre_km,
            loss,
            mtu_bytes: mtu,
            transport: v.transport,
            op: v.op,
            test: v.test,
            size_bytes: size,
            iterations: in_range_u("iterations", v.iterations.unwrap_or(1000), 1, 100_000_000)?,
            tx_depth: in_range_u(
                "tx_depth",
                v.tx_depth.unwrap_or(if lat { 1 } else { testbed.tx_depth }) as u64,
                1,
                16384,
            )? as u32,
            rx_depth: in_range_u("rx_depth", v.rx_depth.unwrap_or(512) as u64, 1, 16384)? as u32,
            qps: in_range_u("qps", v.qps.unwrap_or(1) as u64, 1, 1024)? as u32,
            // Above the adapter's max_qp_rd_atom the queue pair could not be set up (the run used the
            // adapter's limit while the record carried the value asked for).
            outstanding_reads: {
                let n = v.outstanding_reads.unwrap_or(hca.max_rd_atomic);
                let n = in_range_u("outstanding_reads", n as u64, 1, 256)? as u32;
                if n > hca.max_rd_atomic {
                    return err(format!(
                        "outstanding_reads: {n} is above the {} adapter's limit (valid: 1..{})",
                        hca.name, hca.max_rd_atomic
                    ));
                }
                n
            },
            timeout_exp,
            cm,
            ack_timeout_exp,
            retry_count: in_range_u(
                "retry_count",
                v.retry_count.unwrap_or(PERFTEST_RETRY_COUNT) as u64,
                0,
                MAX_RETRY_COUNT as u64,
            )? as u32,
            warnings,
            cross,
            queue_bytes,
            duration_s,
            link_events,
        })
    }

    /// Cross traffic and the WAN switches' queue: only where the extenders frame IB in
    /// Ethernet or SONET, whose switches other traffic shares (native IB on dark fibre, or a
    /// plain IB link, has no shared switch).
    fn resolve_cross(
        &self,
        ext: Option<&ExtenderParams>,
        wan_links: u32,
        one_way_s: f64,
    ) -> Result<(Option<CrossResolved>, u64), ScenarioError> {
        let Some(c) = &self.cross else {
            if self.path.queue_bytes.is_some() {
                return err("queue_bytes: the WAN switches' queue exists only with cross traffic (set cross_gbps)");
            }
            return Ok((None, 0));
        };
        let framed = ext.filter(|e| e.framing != WanFraming::Ib);
        let Some(e) = framed else {
            let what = if ext.is_some() {
                "this path's extenders carry IB natively (wan_framing ib)"
            } else {
                "this path is a plain IB link (extender none)"
            };
            return err(format!(
                "cross_gbps: cross traffic shares a WAN switch, found only where the extenders frame IB in \
                 Ethernet or SONET (wan_framing oc192, 10gige-lan, 10gige-wan or 100gige-roce); {what}"
            ));
        };
        if wan_links != 1 {
            return err(format!(
                "cross_gbps: cross traffic is modelled on one WAN link (set wan_links = 1, not {wan_links})"
            ));
        }
        let wan_gbps = e.framing.payload_gbps(&e.wan);
        let cross = resolve_cross(c, wan_gbps, e.framing.name(), CROSS_DEFAULT_BYTES, CROSS_MAX_BYTES)?;
        let frame = (CROSS_DEFAULT_BYTES + e.framing.frame_overhead_bytes()) as u64;
        let queue = match self.path.queue_bytes {
            Some(b) => in_range_u("queue_bytes", b, frame, 1 << 40)?,
            None => bdp_queue_bytes(wan_gbps, one_way_s, frame),
        };
        Ok((Some(cross), queue))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_errors_name_the_key_path_and_no_json_position() {
        let e = Scenario::from_json(r#"{"path": {"wan_framing": "atm"}}"#).unwrap_err().0;
        assert!(e.starts_with("scenario: path.wan_framing: unknown variant `atm`"), "{e}");
        assert!(!e.contains("column"), "{e}");
        let e = Scenario::from_json("{").unwrap_err().0;
        assert!(e.starts_with("scenario: ") && !e.contains("column"), "{e}");
    }

    #[test]
    fn type_errors_say_what_kind_of_value_goes_there() {
        let e = Scenario::from_json(r#"{"verbs": {"size_bytes": -1}}"#).unwrap_err().0;
        assert_eq!(e, "scenario: verbs.size_bytes: invalid value: integer `-1`, expected a whole number in [0, 18446744073709551615]");
        let e = Scenario::from_json(r#"{"path": {"delay_us": "x"}}"#).unwrap_err().0;
        assert_eq!(e, "scenario: path.delay_us: invalid type: string \"x\", expected a number");
        // A number where a name goes.
        let e = Scenario::from_json(r#"{"verbs": {"transport": 5}}"#).unwrap_err().0;
        assert_eq!(e, "scenario: verbs.transport: expected a name in quotes (see --help for the valid ones)");
        // A whole number its type cannot hold is not called negative.
        let e = Scenario::from_json(r#"{"verbs": {"qps": 1099511627776}}"#).unwrap_err().0;
        assert_eq!(
            e,
            "scenario: verbs.qps: invalid value: integer `1099511627776`, expected a whole number in [0, 4294967295]"
        );
    }
}
