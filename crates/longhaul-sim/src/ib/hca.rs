//! Host channel adapter profiles: the per-message and per-packet costs of the adapter and host,
//! the PCIe cap, and the adapter's physical limits on outstanding work.
//!
//! Where a number is not in a datasheet it is marked "assumed", once per profile (never per
//! point). How many messages a queue pair keeps in flight is not an adapter property: it is the
//! depth its consumer gives the send queue (perftest's tx-depth, MVAPICH2's max_send_wqe,
//! svcrdma's sc_sq_depth), at most `max_qp_wr`; see `IbHosts::connect`.

use serde::{Deserialize, Serialize};

use super::timer::AckTimerRule;
use crate::net::{Generation, IbLink};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HcaProfile {
    pub name: String,
    /// The adapter's port.
    pub port: IbLink,
    /// PCIe generation (1, 2, 3, 4, 5) and lanes: caps DMA throughput.
    pub pcie_gen: u32,
    pub pcie_lanes: u32,
    /// CPU time to build a work request and ring the doorbell (ns).
    pub post_ns: f64,
    /// CPU time to notice a completion when polling (ns).
    pub poll_ns: f64,
    /// Adapter time to fetch and start one work request (ns). The send engine spends it before
    /// the message's first packet, in series with the packets' DMA: the fetch of the next work
    /// request does not overlap the previous message's transfer (a simplification that caps
    /// mid-size messages on fast adapters; see the README's known gaps).
    pub tx_wqe_ns: f64,
    /// Adapter time per packet sent (ns): with `tx_wqe_ns` this sets the small-message rate.
    pub tx_pkt_ns: f64,
    /// Adapter time per packet received, before an ACK or a completion can follow (ns).
    pub rx_pkt_ns: f64,
    /// Largest send queue a queue pair can be created with (`ibv_query_device`'s max_qp_wr):
    /// the most work requests one queue pair can have posted and not completed.
    pub max_qp_wr: u32,
    /// Unacknowledged packets one RC queue pair may have outstanding.
    pub max_unacked_pkts: u32,
    /// Outstanding RDMA reads per queue pair (initiator depth).
    pub max_rd_atomic: u32,
    /// The requester asks for an ACK at least every this many packets of a long message.
    pub ack_req_every_pkts: u32,
    /// Largest IB MTU the adapter's port supports (bytes): `ibv_query_port`'s max_mtu.
    pub max_mtu_bytes: u32,
    /// What the firmware does with a queue pair's local ACK timeout (see [`super::timer`]).
    pub ack_timer: AckTimerRule,
}

impl HcaProfile {
    /// Usable PCIe DMA bandwidth (Gb/s): lanes x per-lane rate x encoding x ~0.8 TLP efficiency
    /// (128-byte max payload behind 20-26 bytes of TLP/DLLP overhead).
    pub fn pcie_data_gbps(&self) -> f64 {
        let lane = match self.pcie_gen {
            1 => 2.5 * 0.8,
            2 => 5.0 * 0.8,
            3 => 8.0 * 128.0 / 130.0,
            4 => 16.0 * 128.0 / 130.0,
            _ => 32.0 * 128.0 / 130.0,
        };
        lane * self.pcie_lanes as f64 * 0.8
    }

    /// InfiniHost III Ex (MT25208, "memfree"), 4x DDR, PCIe 1.1 x8: the adapters of [S1].
    pub fn infinihost3() -> Self {
        HcaProfile {
            name: "infinihost3".into(),
            port: IbLink { width: 4, generation: Generation::Ddr },
            pcie_gen: 1,
            pcie_lanes: 8,
            // Assumed host/adapter costs giving ~3 us small-message RC latency, typical of
            // InfiniHost III DDR systems of 2007-2008.
            post_ns: 250.0,
            poll_ns: 100.0,
            tx_wqe_ns: 400.0,
            tx_pkt_ns: 150.0,
            rx_pkt_ns: 350.0,
            // mthca's device limit for a mem-free InfiniHost III Ex, max_qp_wr 16384 as ibv_devinfo -v
            // lists it for MT25208 (from such listings, not re-checked against a driver source
            // here); never the binding limit: consumers ask for far fewer.
            max_qp_wr: 16384,
            max_unacked_pkts: 1 << 22,
            // mthca's max_qp_rd_atom for Arbel/Tavor (ibv_devinfo -v: 4); perftest's MAX_OUT_READ
            // for these adapters is the same.
            max_rd_atomic: 4,
            ack_req_every_pkts: 64,
            // 2 KB: the InfiniHost III generation's port limit (ibv_devinfo's max_mtu for
            // mthca devices, and why IPoIB datagram mode of that era ran at 2044 bytes; from such
            // listings, not re-checked against a datasheet here). 4 KB came with ConnectX.
            max_mtu_bytes: 2048,
            ack_timer: AckTimerRule {
                // No firmware floor is documented for InfiniHost III: the IBA value is in force.
                min_timeout_us: 0.0,
                // local_ca_ack_delay 15 in ibv_devinfo -v listings of mthca devices.
                local_ca_ack_delay: 15,
                source: "InfiniHost III (mthca): the IBA timeout 4.096 us x 2^exp as set; no firmware floor documented"
                    .into(),
            },
        }
    }

    /// Voltaire's dual-port 4x SDR HCA of the UltraScience Net hosts (Rao et al., SC08): the
    /// InfiniHost III Ex silicon (mthca) behind 4x SDR ports on 8-lane PCIe, so InfiniHost III's
    /// costs, limits and timer rule on an SDR port.
    pub fn voltaire_sdr() -> Self {
        HcaProfile {
            name: "voltaire-sdr".into(),
            port: IbLink { width: 4, generation: Generation::Sdr },
            ..Self::infinihost3()
        }
    }

    /// ConnectX (MT25418), 4x DDR, PCIe 2.0 x8: the newer adapter compared in [S1] Fig 10.
    pub fn connectx() -> Self {
        HcaProfile {
            name: "connectx".into(),
            port: IbLink { width: 4, generation: Generation::Ddr },
            pcie_gen: 2,
            pcie_lanes: 8,
            post_ns: 150.0,
            poll_ns: 80.0,
            tx_wqe_ns: 200.0,
            tx_pkt_ns: 60.0,
            rx_pkt_ns: 200.0,
            // mlx4's limit: 16384 WQEs less mlx4's spare headroom (MLX4_IB_SQ_MAX_SPARE), 16351 in
            // ibv_devinfo -v listings; never binding.
            max_qp_wr: 16351,
            max_unacked_pkts: 1 << 22,
            // mlx4's max_qp_rd_atom (ibv_devinfo -v: 16), perftest's MAX_OUT_READ_HERMON.
            max_rd_atomic: 16,
            ack_req_every_pkts: 64,
            max_mtu_bytes: 4096,
            ack_timer: AckTimerRule {
                // The ~500 ms floor is documented for ConnectX-2 firmware (below); none is for
                // the first ConnectX, so the IBA value is taken as in force.
                min_timeout_us: 0.0,
                // mlx4: local_ca_ack_delay 15 in ibv_devinfo -v listings.
                local_ca_ack_delay: 15,
                source: "ConnectX (mlx4, 2007-2008 firmware): the IBA timeout as set; no firmware floor documented"
                    .into(),
            },
        }
    }

    /// ConnectX-2 (MT26428), 4x QDR, PCIe 2.0 x8: the adapters of [S3].
    pub fn connectx2() -> Self {
        HcaProfile {
            name: "connectx2".into(),
            port: IbLink { width: 4, generation: Generation::Qdr },
            pcie_gen: 2,
            pcie_lanes: 8,
            post_ns: 100.0,
            poll_ns: 60.0,
            tx_wqe_ns: 150.0,
            tx_pkt_ns: 40.0,
            rx_pkt_ns: 150.0,
            max_qp_wr: 16351, // mlx4, as ConnectX
            max_unacked_pkts: 1 << 22,
            max_rd_atomic: 16,
            ack_req_every_pkts: 64,
            max_mtu_bytes: 4096,
            ack_timer: AckTimerRule {
                // RAMCloud's wiki ("ConnectX-2 firmware", on changing it): in their default
                // configuration ConnectX-2 adapters do not let IBV_QP_TIMEOUT go below about
                // 500 ms, so with 7 retries a dead peer takes about 4 s to report.
                min_timeout_us: 500_000.0,
                local_ca_ack_delay: 15,
                source: "ConnectX-2 (mlx4 firmware, default configuration): at least ~500 ms whatever the exponent (RAMCloud's notes on its ConnectX-2 firmware)".into(),
            },
        }
    }

    /// ConnectX-7, 4x NDR, PCIe 5.0 x16 (for what-if studies at today's rates).
    pub fn connectx7() -> Self {
        HcaProfile {
            name: "connectx7".into(),
            port: IbLink { width: 4, generation: Generation::Ndr },
            pcie_gen: 5,
            pcie_lanes: 16,
            post_ns: 50.0,
            poll_ns: 30.0,
            tx_wqe_ns: 40.0,
            tx_pkt_ns: 5.0,
            rx_pkt_ns: 40.0,
            max_qp_wr: 32768, // mlx5, as ibv_devinfo -v lists it for ConnectX-6/7; never binding
            max_unacked_pkts: 1 << 22,
            max_rd_atomic: 16,
            ack_req_every_pkts: 64,
            max_mtu_bytes: 4096,
            ack_timer: AckTimerRule {
                // On an InfiniBand port the IBA value is in force. The firmware's minimum ACK
                // timeout (exponent 16 unless the adaptive timer is on) and its adaptive
                // retransmission (first resends after a few ms, doubling up to the QP's timeout;
                // linux-rdma/perftest#251) belong to RoCE: NVIDIA's ROCE_ACCL register
                // (roce_adp_retrans_en, min_ack_timeout_limit_disabled) and ConnectX-5 firmware
                // 16.35.1012's "RoCE: Adaptive Timer" note.
                min_timeout_us: 0.0,
                // mlx5 reports 16 (the ack delay spdk/spdk#1124 works with).
                local_ca_ack_delay: 16,
                source: "ConnectX-7 (mlx5) on InfiniBand: the IBA timeout as set (adaptive retransmission is RoCE's)"
                    .into(),
            },
        }
    }

    pub fn by_name(name: &str) -> Option<Self> {
        match name {
            "infinihost3" | "mt25208" => Some(Self::infinihost3()),
            "voltaire-sdr" => Some(Self::voltaire_sdr()),
            "connectx" => Some(Self::connectx()),
            "connectx2" => Some(Self::connectx2()),
            "connectx7" => Some(Self::connectx7()),
            _ => None,
        }
    }

    pub const NAMES: [&'static str; 5] = ["infinihost3", "voltaire-sdr", "connectx", "connectx2", "connectx7"];
}
