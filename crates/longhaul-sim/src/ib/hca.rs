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
    /// PCIe generation (1 to 6) and lanes: caps DMA throughput.
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
    ///
    /// Per lane (PCI-SIG base specifications): 2.5 and 5 GT/s with 8b/10b (1.x, 2.0); 8, 16 and
    /// 32 GT/s with 128b/130b (3.0, 4.0, 5.0); 64 GT/s PAM4 in FLIT mode (6.0), where 242 of each
    /// 256-byte FLIT carry TLP and data-link bytes and the rest is CRC and FEC.
    pub fn pcie_data_gbps(&self) -> f64 {
        let lane = match self.pcie_gen {
            1 => 2.5 * 0.8,
            2 => 5.0 * 0.8,
            3 => 8.0 * 128.0 / 130.0,
            4 => 16.0 * 128.0 / 130.0,
            5 => 32.0 * 128.0 / 130.0,
            _ => 64.0 * 242.0 / 256.0,
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

    /// ConnectX-3 (MT27500, mlx4), 4x FDR, PCIe 3.0 x8 (2011-2015): the MCX353A/354A-FCBT VPI
    /// cards ("ConnectX-3 VPI Single and Dual QSFP+ Port Adapter Card User Manual", Mellanox, rev
    /// 1.7, 2013: FDR 56 Gb/s ports, PCI Express 3.0 x8). Its PCIe 3.0 x8 (~50 Gb/s of DMA)
    /// is below the FDR port's 54.5 Gb/s: PCIe caps it. Vendor latency "sub-microsecond" (Mellanox
    /// at the chip's launch, The Register, 2011-06-06); no message rate was found published for it,
    /// so its per-message adapter time is assumed between ConnectX-2's and ConnectX-4's.
    pub fn connectx3() -> Self {
        HcaProfile {
            name: "connectx3".into(),
            port: IbLink { width: 4, generation: Generation::Fdr },
            pcie_gen: 3,
            pcie_lanes: 8,
            post_ns: 120.0,
            poll_ns: 70.0,
            tx_wqe_ns: 100.0,
            tx_pkt_ns: 20.0,
            rx_pkt_ns: 120.0,
            max_qp_wr: 16351, // mlx4, as ConnectX and ConnectX-2
            max_unacked_pkts: 1 << 22,
            max_rd_atomic: 16, // mlx4's max_qp_rd_atom
            ack_req_every_pkts: 64,
            max_mtu_bytes: 4096,
            ack_timer: AckTimerRule {
                // The ~500 ms floor is documented for ConnectX-2's firmware only (RAMCloud's
                // notes); none is for ConnectX-3, so the IBA value is taken as in force.
                min_timeout_us: 0.0,
                local_ca_ack_delay: 15, // mlx4
                source: "ConnectX-3 (mlx4): the IBA timeout as set; no firmware floor documented".into(),
            },
        }
    }

    /// The mlx5 adapters' limits and timer rule on InfiniBand, shared by ConnectX-4 to -8:
    /// max_qp_wr 32768 and max_qp_rd_atom 16 as ibv_devinfo -v lists them for mlx5 devices
    /// (never binding), local_ca_ack_delay 16, 4 KB IB MTU; the firmware's minimum ACK timeout
    /// and adaptive retransmission are RoCE's (see the timer rule below).
    fn mlx5(name: &str, generation: Generation, pcie_gen: u32, costs: [f64; 5]) -> Self {
        let [post_ns, poll_ns, tx_wqe_ns, tx_pkt_ns, rx_pkt_ns] = costs;
        HcaProfile {
            name: name.into(),
            port: IbLink { width: 4, generation },
            pcie_gen,
            pcie_lanes: 16,
            post_ns,
            poll_ns,
            tx_wqe_ns,
            tx_pkt_ns,
            rx_pkt_ns,
            max_qp_wr: 32768,
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
                source: format!(
                    "{} (mlx5) on InfiniBand: the IBA timeout as set (adaptive retransmission is RoCE's)",
                    name.replace("connectx", "ConnectX-")
                ),
            },
        }
    }

    // ConnectX-4 to -8: the adapter's time per message (`tx_wqe_ns` + `tx_pkt_ns`) is scaled from
    // ConnectX-7's 45 ns by the ratio of the vendors' published message rates (an assumption: the
    // model's one send engine per adapter stands for the adapter's parallel engines, so its
    // per-message time follows the aggregate rate). The host costs (post, poll) fall with each
    // generation's lower published latency (assumed split).

    /// ConnectX-4 (MT27700), 4x EDR, PCIe 3.0 x16 (2015-): MCX455A/456A-ECAT ("NVIDIA
    /// ConnectX-4 InfiniBand/Ethernet Adapter Cards User Manual", docs.nvidia.com: EDR 100 Gb/s,
    /// PCIe Gen 3.0 x16 at 8 GT/s). Its PCIe (~100.8 Gb/s of DMA) just clears EDR's 100 Gb/s.
    /// Mellanox's ConnectX-4 VPI press release (November 2014, its second paragraph as quoted in
    /// "Three Mellanox Marketing Misrepresentations", technologyevangelist.co, 2015-02-14): 150
    /// million messages per second and 0.7 us latency, InfiniBand figures (an earlier comment had
    /// "sub-0.6 us" from memory). Simulated send latency with it on the edr profile (two Switch-IB
    /// hops, 0 km): 0.59 us, under it.
    pub fn connectx4() -> Self {
        Self::mlx5("connectx4", Generation::Edr, 3, [90.0, 50.0, 88.0, 11.0, 80.0])
    }

    /// ConnectX-5 Ex (MT28800), 4x EDR, PCIe 4.0 x16 (2017-, the PCIe 4.0 servers of the
    /// Summit/Sierra era): the user manual (docs.nvidia.com "ConnectX-5 InfiniBand/Ethernet
    /// Adapter Cards User Manual", Interfaces): PCIe Gen 3.0/4.0 x16 at up to 16 GT/s. Product
    /// brief ("ConnectX-5 EN Card", Mellanox): sub-600 ns latency; 200 million messages per
    /// second (the VPI brief's figure, as recalled, not re-read here).
    pub fn connectx5() -> Self {
        Self::mlx5("connectx5", Generation::Edr, 4, [80.0, 40.0, 66.0, 8.0, 60.0])
    }

    /// ConnectX-6 (MT28908), 4x HDR, PCIe 4.0 x16 (2019-): HDR 200 Gb/s, PCIe Gen 3.0/4.0 x16
    /// (ConnectX-6 VPI user manual, Features). Product brief ("ConnectX-6 EN Card", Mellanox,
    /// 2019): sub-0.8 us latency, 215 million messages per second. Its PCIe 4.0 x16 (~201.6 Gb/s
    /// of DMA) just clears HDR's 200 Gb/s.
    pub fn connectx6() -> Self {
        Self::mlx5("connectx6", Generation::Hdr, 4, [60.0, 35.0, 62.0, 7.0, 50.0])
    }

    /// ConnectX-7, 4x NDR, PCIe 5.0 x16 (2022-): "NVIDIA ConnectX-7 Cards for OCP Spec 3.0 User
    /// Manual" / ConnectX-7 PCIe user manual (docs.nvidia.com: a single NDR 400 Gb/s port, PCIe
    /// Gen 5.0 x16). Product brief (NVIDIA, 2021): 330-370 million messages per second (as recalled,
    /// not re-read here). Its costs
    /// were set before the newer profiles and are their reference (see above).
    pub fn connectx7() -> Self {
        // post, poll, work request, per packet sent, per packet received (ns)
        Self::mlx5("connectx7", Generation::Ndr, 5, [50.0, 30.0, 40.0, 5.0, 40.0])
    }

    /// ConnectX-8 SuperNIC, 4x XDR (800 Gb/s), PCIe 6.0 x16 (2025-): "NVIDIA ConnectX-8 SuperNIC
    /// User Manual" (docs.nvidia.com: InfiniBand and Ethernet at up to 800 Gb/s) and NVIDIA's Hot
    /// Chips 2025 talk (PCIe Gen6 host interface, 48 lanes behind an integrated PCIe switch, x16
    /// to the host). A PCIe 6.0 x16 host link (~774 Gb/s of DMA) is below the XDR port: PCIe caps
    /// one adapter's bandwidth. No message rate or latency is published: ConnectX-7's costs are
    /// assumed, except the receive time per packet, halved (assumed) so that the adapter keeps
    /// up with its port at a 2 KB MTU as ConnectX-7 does with its NDR port (2 KB / 40 ns = 51 GB/s
    /// against NDR's 50 GB/s; XDR needs 100 GB/s).
    pub fn connectx8() -> Self {
        let cx7 = Self::connectx7();
        let [post, poll, wqe, pkt, rx] = [cx7.post_ns, cx7.poll_ns, cx7.tx_wqe_ns, cx7.tx_pkt_ns, cx7.rx_pkt_ns / 2.0];
        Self::mlx5("connectx8", Generation::Xdr, 6, [post, poll, wqe, pkt, rx])
    }

    pub fn by_name(name: &str) -> Option<Self> {
        match name {
            "infinihost3" | "mt25208" => Some(Self::infinihost3()),
            "voltaire-sdr" => Some(Self::voltaire_sdr()),
            "connectx" => Some(Self::connectx()),
            "connectx2" => Some(Self::connectx2()),
            "connectx3" => Some(Self::connectx3()),
            "connectx4" => Some(Self::connectx4()),
            "connectx5" => Some(Self::connectx5()),
            "connectx6" => Some(Self::connectx6()),
            "connectx7" => Some(Self::connectx7()),
            "connectx8" => Some(Self::connectx8()),
            _ => None,
        }
    }

    pub const NAMES: [&'static str; 10] = [
        "infinihost3",
        "voltaire-sdr",
        "connectx",
        "connectx2",
        "connectx3",
        "connectx4",
        "connectx5",
        "connectx6",
        "connectx7",
        "connectx8",
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_adapter_is_named_once_and_its_ceilings_are_its_ports_and_slots() {
        for n in HcaProfile::NAMES {
            assert_eq!(HcaProfile::by_name(n).map(|h| h.name), Some(n.to_string()));
        }
        // (adapter, port data rate, PCIe DMA rate) in Gb/s: which of the two caps a transfer.
        let want = [
            ("connectx3", 54.545, 50.412),
            ("connectx4", 100.0, 100.825),
            ("connectx5", 100.0, 201.649),
            ("connectx6", 200.0, 201.649),
            ("connectx7", 400.0, 403.298),
            ("connectx8", 800.0, 774.4),
        ];
        for (n, port, pcie) in want {
            let h = HcaProfile::by_name(n).unwrap();
            assert!((h.port.data_gbps() - port).abs() < 1e-3, "{n} port {}", h.port.data_gbps());
            assert!((h.pcie_data_gbps() - pcie).abs() < 1e-3, "{n} pcie {}", h.pcie_data_gbps());
        }
    }
}
