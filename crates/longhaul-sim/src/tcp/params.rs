//! Parameters of TCP and of the host stack, one struct per mechanism, each field with its
//! physical meaning and the source of its default.
//!
//! Stock-Linux defaults come from the kernel's documentation (Documentation/networking/
//! ip-sysctl.rst) and include/net/tcp.h of Linux 4.20 to 6.15, the kernels HPC sites run in 2026
//! (RHEL 9's 5.14, Ubuntu 24.04's 6.8, Debian 13's and RHEL 10's 6.12): tcp_rmem = 4096 131072
//! 6291456, tcp_wmem = 4096 16384 4194304, tcp_adv_win_scale = 1, TCP_RTO_MIN = 200 ms,
//! TCP_RTO_MAX = 120 s, TCP_TIMEOUT_INIT = 1 s, TCP_DELACK_MIN = 40 ms, TCP_INIT_CWND = 10, CUBIC.
//! Newer kernels differ where it matters at distance: from 6.6 the share of the receive buffer
//! advertised is the measured skb->len / truesize (starting at 50%, then what the driver's
//! buffers give; `tcp_adv_win_scale` gone, include/net/tcp.h TCP_DEFAULT_SCALING_RATIO), and 6.16
//! raised tcp_rmem[2] to 32 MiB (ip-sysctl.rst of 6.15: "between 131072 and 6MB", of 6.16:
//! "between 131072 and 32MB"); set `rmem_max_bytes` to model one.

use serde::{Deserialize, Serialize};

use super::cc::hystart::HyStartParams;
use crate::engine::time::{MS, S};
use crate::engine::Time;

/// How the socket buffers are sized.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum WindowSpec {
    /// `iperf -w BYTES`: SO_SNDBUF and SO_RCVBUF set to BYTES. Linux doubles the value it is
    /// given (socket(7): "to allow space for bookkeeping overhead") and advertises half of its
    /// buffer (tcp_adv_win_scale = 1), so the usable window is about BYTES at both ends.
    Fixed {
        /// The value given to `-w` (SO_SNDBUF = SO_RCVBUF), bytes.
        bytes: u64,
    },
    /// Linux auto-tuning: the receive buffer grows once per round trip in which the application
    /// read more than before (dynamic right-sizing, tcp_rcv_space_adjust: twice what it read plus
    /// 16 segments, tripled when the rate doubled) from `tcp_rmem[1]` up to `tcp_rmem[2]`; the
    /// advertised window is half of it. The send buffer grows with cwnd up to
    /// `tcp_wmem[2]` (tcp_sndbuf_expand), and data in flight never exceeds it.
    Auto {
        /// `tcp_rmem[1]`: the receive buffer a connection starts with, bytes.
        rmem_initial_bytes: u64,
        /// `tcp_rmem[2]`: the most the receive buffer grows to, bytes.
        rmem_max_bytes: u64,
        /// `tcp_wmem[2]`: the most the send buffer grows to, bytes.
        wmem_max_bytes: u64,
    },
}

impl WindowSpec {
    /// Stock Linux (ip-sysctl.rst: `tcp_rmem[1]` = 131072, `tcp_rmem[2]` = 6291456 from 4.20 to
    /// 6.15, 32 MiB from 6.16; `tcp_wmem[2]` = 4194304).
    pub fn linux_auto() -> Self {
        WindowSpec::Auto { rmem_initial_bytes: 131_072, rmem_max_bytes: 6_291_456, wmem_max_bytes: 4_194_304 }
    }

    /// Auto-tuning with both ceilings raised to the largest window TCP can use: 65535 << 14 bytes
    /// (RFC 1323's largest window scale, 14; Linux's tcp_select_initial_window stops rcv_wscale
    /// there), about 1 GiB. "Buffers raised to the hosts' maximum", as on the UltraScience Net
    /// (Rao et al., SC08): larger socket buffers than this cannot be advertised.
    pub fn raised_to_tcp_max() -> Self {
        let max = 65_535u64 << 14;
        WindowSpec::Auto { rmem_initial_bytes: 131_072, rmem_max_bytes: max, wmem_max_bytes: max }
    }
}

/// How the retransmission timeout is bounded below (RFC 6298 section 2 leaves the bound to the
/// implementation; stacks differ in where they apply it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RtoFormula {
    /// RTO = SRTT + max(4 RTTVAR, min_rto): Linux keeps its variance term (`mdev_us`) at least
    /// TCP_RTO_MIN (tcp_rtt_estimator, tcp_set_rto), so a steady 140 ms round trip times out
    /// after 340 ms, more than two round trips.
    Linux,
    /// RTO = max(SRTT + max(G, 4 RTTVAR), min_rto) (RFC 6298 sections 2.2-2.4, with the 1 s
    /// floor lowered to min_rto; ns-3 3.37 TcpSocketBase, whose ClockGranularity G is 1 ms): a
    /// steady path whose round trip is below min_rto times out after min_rto, possibly before a
    /// retransmission sent at the start of a round trip can be acknowledged.
    Rfc6298,
}

/// Clock granularity G of RFC 6298's timeout (section 2): ns-3's TcpSocketBase ClockGranularity
/// default, 1 ms (the timer resolution of a host with a 1 kHz tick).
pub const RFC6298_CLOCK_GRANULARITY: Time = MS;

/// Which acknowledgements restart the retransmission timer during fast recovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RtoRestart {
    /// Every ACK that acknowledges new data (RFC 6298 section 5.3; Linux re-arms the timer in
    /// tcp_ack whenever snd_una advances): a fast recovery that keeps making progress never
    /// times out.
    EveryAck,
    /// In fast recovery only the first partial ACK (RFC 6582 section 3.2 step 5, the
    /// "Impatient" variant of RFC 3782 section 4; ns-3 3.37's TcpSocketBase::ProcessAck calls
    /// NewAck(ack, m_isFirstPartialAck)): a recovery that lasts longer than one RTO after its
    /// first partial ACK ends in a timeout, even while partial ACKs keep arriving. Outside fast
    /// recovery every ACK of new data restarts the timer, as with `EveryAck`.
    FirstPartialAck,
}

/// What a retransmission timeout during fast recovery does to ssthresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RtoSsthresh {
    /// One reduction per loss episode: a timeout in fast recovery keeps the ssthresh the
    /// recovery set (Linux tcp_enter_loss recomputes it only from Open/Disorder, or after the
    /// episode is over).
    OncePerEpisode,
    /// Every timeout computes it again from the window at the time (RFC 5681 section 3.1,
    /// equation 4, for every segment not yet resent by the timer; ns-3 3.37
    /// TcpSocketBase::ReTxTimeout calls GetSsThresh unless it is already in CA_LOSS): a timeout
    /// late in a fast recovery halves the already halved window again. A repeated timeout of
    /// the timer's own retransmission keeps it (RFC 5681 section 3.1).
    EveryTimeout,
}

/// Which ACKs grow the congestion window, and by how many segments (slow start and congestion
/// avoidance alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CwndGrowth {
    /// Only an ACK that advances snd_una, by the segments it delivers, each counted once (Linux
    /// tcp_may_raise_cwnd: FLAG_DATA_ACKED, "only grow cwnd on in-order delivery (RFC 5681)";
    /// tcp_cong_avoid gets acked_sacked). SACKs of segments beyond a hole grow nothing.
    InOrder,
    /// Only an ACK that advances snd_una, by every segment its cumulative acknowledgement newly
    /// covers, SACKed before or not (RFC 3465 byte counting with no per-ACK limit; ns-3 3.37
    /// passes ProcessAck's segsAcked to IncreaseWindow, whose slow start stops at ssthresh).
    /// The ACK that repairs a hole covers the SACKed run behind it, so after a timeout the
    /// window opens to ssthresh in one step instead of doubling per round trip.
    Cumulative,
}

/// The fraction of the receive buffer Linux advertises as window: 1 - 2^-tcp_adv_win_scale
/// with the default tcp_adv_win_scale = 1 (ip-sysctl.rst).
pub const ADV_WINDOW_FRACTION: f64 = 0.5;

/// TCP protocol parameters of both ends (the same stack on every host).
#[derive(Debug, Clone, Serialize)]
pub struct TcpParams {
    /// Initial congestion window in segments (RFC 6928: 10; Linux TCP_INIT_CWND since 2.6.39).
    pub initial_cwnd_segs: u32,
    /// Retransmission timeout before the first RTT sample (RFC 6298 section 2.1: 1 s).
    pub initial_rto: Time,
    /// Lower bound of the RTO's variance term: RTO = SRTT + max(4 RTTVAR, this) (Linux
    /// TCP_RTO_MIN = 200 ms; RFC 6298 bounds the whole RTO instead, by 1 s).
    pub min_rto: Time,
    /// Upper bound of the backed-off RTO (Linux TCP_RTO_MAX = 120 s; RFC 6298 allows >= 60 s).
    pub max_rto: Time,
    /// Delayed-ACK timeout (Linux TCP_DELACK_MIN = 40 ms; RFC 1122 caps it at 500 ms).
    pub delack_timeout: Time,
    /// ACK at least every this many full-sized segments (RFC 5681 section 4.2: 2).
    pub ack_every_segs: u32,
    /// Duplicate-ACK / SACK threshold for fast retransmit (RFC 5681, RFC 6675: 3).
    pub dupthresh: u32,
    /// Selective acknowledgements (RFC 2018; Linux tcp_sack = 1). Off: NewReno (RFC 6582).
    pub sack: bool,
    /// HyStart slow-start exit for CUBIC (Linux tcp_cubic hystart = 1, on since 2.6.29; the
    /// other algorithms never use it, as in Linux). None: plain slow start.
    pub hystart: Option<HyStartParams>,
    /// RACK's detection of lost retransmissions (RFC 8985; Linux net.ipv4.tcp_recovery = 1,
    /// the default since 4.18). Off: a lost retransmission waits for the RTO, as in stacks
    /// without RACK (Linux before 4.18, ns-3 3.37).
    pub rack: bool,
    /// How the retransmission timeout is bounded below (Linux default).
    pub rto_formula: RtoFormula,
    /// Which ACKs restart the retransmission timer in fast recovery (Linux default: every ACK
    /// of new data).
    pub rto_restart: RtoRestart,
    /// Whether a timeout in fast recovery lowers ssthresh again (Linux default: no).
    pub rto_ssthresh: RtoSsthresh,
    /// Which ACKs may grow cwnd (Linux default: those that advance snd_una).
    pub cwnd_growth: CwndGrowth,
    pub window: WindowSpec,
}

impl Default for TcpParams {
    fn default() -> Self {
        TcpParams {
            initial_cwnd_segs: 10,
            initial_rto: S,
            min_rto: 200 * MS,
            max_rto: 120 * S,
            delack_timeout: 40 * MS,
            ack_every_segs: 2,
            dupthresh: 3,
            sack: true,
            hystart: Some(HyStartParams::linux()),
            rack: true,
            rto_formula: RtoFormula::Linux,
            rto_restart: RtoRestart::EveryAck,
            rto_ssthresh: RtoSsthresh::OncePerEpisode,
            cwnd_growth: CwndGrowth::InOrder,
            window: WindowSpec::linux_auto(),
        }
    }
}

/// What the host's network stack costs in CPU time: the reason TCP over IPoIB peaks below the
/// verbs rate. Charged on the core that runs the connection, per packet and per payload byte
/// (copy to/from user space, software checksum when the adapter does not offload it).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HostStack {
    pub name: String,
    /// Sender: per segment handed to the adapter (system call share, TCP/IP output, driver post).
    pub tx_pkt_ns: f64,
    /// Sender: per payload byte (copy from user space, checksum if not offloaded).
    pub tx_byte_ns: f64,
    /// Receiver: per segment (interrupt, IP/TCP input, ACK generation).
    pub rx_pkt_ns: f64,
    /// Receiver: per payload byte (checksum if not offloaded, copy to user space).
    pub rx_byte_ns: f64,
    /// Sender: per ACK processed.
    pub ack_ns: f64,
    /// Cores that run stack work in parallel; connection i runs on core i mod cores.
    pub cores: u32,
}

impl HostStack {
    /// The [S1] hosts: 2007-era Xeons (front-side bus) with InfiniHost III and OFED 1.2 IPoIB,
    /// which offloads neither checksums nor segmentation, and takes its interrupts on one core.
    /// Per-byte costs are assumed from the memory bandwidth of such hosts (one copy at ~1.5 GB/s
    /// plus a software checksum pass); the receive per-byte cost was checked once for the
    /// profile against [S1] Fig 4(a) (IPoIB connected mode, 64 KB MTU).
    pub fn s1() -> Self {
        HostStack {
            name: "s1".into(),
            tx_pkt_ns: 2000.0,
            tx_byte_ns: 0.45,
            rx_pkt_ns: 4000.0,
            rx_byte_ns: 1.0,
            ack_ns: 1000.0,
            cores: 1,
        }
    }

    /// The [S3] hosts: Westmere-class Xeons with ConnectX-2 (checksum offload, faster memory).
    /// Assumed: roughly three times the [S1] per-byte throughput, interrupts spread over cores.
    pub fn s3() -> Self {
        HostStack {
            name: "s3".into(),
            tx_pkt_ns: 1000.0,
            tx_byte_ns: 0.12,
            rx_pkt_ns: 1500.0,
            rx_byte_ns: 0.3,
            ack_ns: 400.0,
            cores: 4,
        }
    }

    /// The UltraScience Net hosts (Rao et al., SC08): dual-socket quad-core 2 GHz Opterons with
    /// Myricom Myri-10G 10GigE NICs on 8-lane PCIe (checksum offload), Linux 2.6.18-era stacks.
    /// Assumed: a copy at ~2.5 GB/s sending and ~2 GB/s receiving plus per-segment interrupt and
    /// protocol work, enough for one stream to fill 10GigE with 9000-byte frames; streams spread
    /// over the eight cores.
    pub fn usn() -> Self {
        HostStack {
            name: "usn".into(),
            tx_pkt_ns: 1000.0,
            tx_byte_ns: 0.4,
            rx_pkt_ns: 2000.0,
            rx_byte_ns: 0.5,
            ack_ns: 500.0,
            cores: 8,
        }
    }

    /// A current server with segmentation and receive offloads (TSO/GRO) amortising per-packet
    /// work, checksum offload and multi-queue NICs: assumed ~100 Gb/s of copy bandwidth per core.
    pub fn modern() -> Self {
        HostStack {
            name: "modern".into(),
            tx_pkt_ns: 100.0,
            tx_byte_ns: 0.02,
            rx_pkt_ns: 150.0,
            rx_byte_ns: 0.06,
            ack_ns: 50.0,
            cores: 8,
        }
    }

    /// No stack cost at all: the network alone limits TCP (analytic checks, ns-3 comparisons).
    pub fn ideal() -> Self {
        HostStack {
            name: "ideal".into(),
            tx_pkt_ns: 0.0,
            tx_byte_ns: 0.0,
            rx_pkt_ns: 0.0,
            rx_byte_ns: 0.0,
            ack_ns: 0.0,
            cores: 1,
        }
    }

    /// The stack of a testbed profile (the same names as the verbs model's testbeds).
    pub fn for_testbed(testbed: &str) -> Option<Self> {
        match testbed {
            "s1" | "s1-connectx" => Some(Self::s1()),
            "s3" => Some(Self::s3()),
            "fdr" | "edr" | "hdr" | "ndr" | "xdr" | "modern" => Some(Self::modern()),
            "usn" => Some(Self::usn()),
            "ideal" => Some(Self::ideal()),
            _ => None,
        }
    }

    /// The verbs model's testbeds first (IPoIB runs over them), then the Ethernet-only stacks.
    pub const NAMES: [&'static str; 11] =
        ["s1", "s1-connectx", "s3", "usn", "fdr", "edr", "hdr", "ndr", "xdr", "modern", "ideal"];
}
