//! Parameters of the MPI library and of the compute nodes, each with its physical meaning and
//! the source of its default.
//!
//! Protocol defaults are MVAPICH2's of 2008 (the library [S1] measured), from its gen2 channel
//! source `ibv_param.c` / `ibv_param.h` (MVAPICH2 1.0-1.2) for an InfiniHost III Ex DDR
//! ("MLX_PCI_EX_DDR") small cluster, and from the MVAPICH2 user guide's parameter list.

use serde::{Deserialize, Serialize};

use super::coll_rules::CollRules;
use super::collectives::AutoRule;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rndv {
    /// RTS, CTS with the receive buffer's key, RDMA write from the sender, FIN.
    Rput,
    /// RTS with the send buffer's key, RDMA read by the receiver, FIN back to the sender.
    Rget,
    /// RTS, CTS, then the data copied through eager buffers (no zero copy).
    R3,
}

/// The MPI library's point-to-point protocol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MpiParams {
    /// Messages up to this many payload bytes go eagerly; the MPI header rides along, so an
    /// 8 KiB message at an 8 KiB threshold already needs rendezvous (as in MVAPICH2, whose
    /// test is payload + header <= threshold). Default 8 KiB: "rendezvous protocol above 8 KB
    /// (MVAPICH2 default)" [S1 3.4]; ibv_param.c sizes the eager buffer (vbuf) at 9 KiB with
    /// the threshold just below it for this adapter.
    pub eager_threshold_bytes: u32,
    pub rndv: Rndv,
    /// Eager buffers the receiver pre-registers per peer = credits the sender holds per peer
    /// (the RDMA fast path's ring, num_rdma_buffer = 16 for MLX_PCI_EX_DDR in ibv_param.c).
    /// Over RC a message that finds none free goes through the send/receive channel instead
    /// (shared receive queue, MV2_USE_SRQ=1 by default); over UD/UC this is the send window.
    pub eager_credits: u32,
    /// The receiver sends an explicit credit update once this many buffers are freed and no
    /// message to the sender has carried them back (piggybacking otherwise): more than half
    /// the ring, MVAPICH2's `rfp.rdma_credit > num_rdma_buffer / 2` (MRAILI_Send_noop_if_needed,
    /// gen2 ibv_send.c), so 9 of 16.
    pub credit_update_after: u32,
    /// MPI packet header on every eager and control message (MPIDI_CH3_Pkt_t plus the vbuf
    /// trailer; assumed 64 bytes).
    pub header_bytes: u32,
    /// Largest RDMA operation the library posts; longer rendezvous data is split
    /// (RDMA_MAX_RDMA_SIZE = 4 MiB in ibv_param.h).
    pub max_rdma_bytes: u32,
    /// RDMA reads the library lets one queue pair have outstanding (RGET rendezvous); None: the
    /// adapter's maximum. MVAPICH2 1.0 asks for 4 (rdma_default_qp_ous_rd_atom, ibv_param.c);
    /// MVAPICH2 2.3.7 sets 4 and then raises it to the device's max_qp_rd_atom unless
    /// MV2_DEFAULT_QP_OUS_RD_ATOM is set (rdma_iba_priv.c); UCX asks for the hardware's maximum
    /// (UCX_RC_MAX_RD_ATOMIC = auto, rc_iface.c).
    pub outstanding_reads: Option<u32>,
    /// Chunk of R3 (copy-based rendezvous) data: one eager buffer.
    pub r3_chunk_bytes: u32,
    /// Message coalescing over RC (MVAPICH2 since 1.0, gen2 `ibv_send.c`, `rdma_use_coalesce`
    /// = 1, `rdma_coalesce_threshold` = 6 in ibv_param.c): once this many sends to a peer are
    /// outstanding (posted, not completed), the next messages skip the RDMA fast path and are
    /// packed into one buffer, posted as a single work request once fewer than this many are
    /// outstanding (MRAILI_Process_send), so a burst of control messages (RTS, CTS, credit
    /// updates) costs the adapter one message in flight. 0 = off; MVAPICH2 turns it off on
    /// ConnectX adapters (MLX_CX_*), and so does the engine for those profiles.
    pub coalesce_after: u32,
    /// Send work requests a connection may have posted and not completed: MVAPICH2 1.0 creates
    /// each queue pair with RDMA_DEFAULT_MAX_WQE = 200 (gen2 `ibv_param.h`, MV2_DEFAULT_MAX_WQE)
    /// and hands out 20 fewer (`send_wqes_avail = rdma_default_max_wqe - 20`, MRAILI_Init_vc in
    /// `rdma_iba_priv.c`), so 180. Beyond that a message waits on the connection's extended
    /// send queue (ext_sendq) and is posted as completions return. (Later MVAPICH2 releases,
    /// 1.4 on, use MV2_DEFAULT_MAX_SEND_WQE = 64.)
    pub max_send_wqe: u32,
    /// Payload of one eager buffer (vbuf), what a coalesced work request can hold: 9 KiB for
    /// an InfiniHost III Ex DDR (the size the 8 KiB threshold sits just below).
    pub vbuf_bytes: u32,
    /// Software cost of one MPI call on the CPU (matching, request handling), ns (assumed).
    pub call_ns: f64,
    /// MPI over UD/UC: frames one sender may have unacknowledged per peer (MVAPICH2-UD's
    /// MV2_UD_SENDWINDOW_SIZE, 400 in the MVAPICH2 1.7+ user guide).
    pub ud_window: u32,
    /// The receiver acknowledges every this many frames explicitly (else piggybacked).
    pub ud_ack_every: u32,
    /// MPI over UD/UC: a frame not acknowledged this long after it was (re)sent goes again
    /// (MV2_UD_RETRY_TIMEOUT, default 500000 us in MVAPICH2's parameter list). The wait is
    /// multiplied by log2 of the retries so far and capped at `ud_max_retry_timeout_us`
    /// (MV2_UD_MAX_RETRY_TIMEOUT, 20 s), as MVAPICH2's resend check (`mv2_check_resend`) does.
    /// Tuned for a LAN: one lost frame costs half a second whatever the distance.
    pub ud_retry_timeout_us: f64,
    pub ud_max_retry_timeout_us: f64,
    /// A frame resent more than this many times ends the job with a reliability error
    /// (MVAPICH2's rdma_ud_max_retry_count = 1000, set by MV2_UD_RETRY_COUNT: ibv_param.c of
    /// MVAPICH2 2.x; the user guide calls its default "system size dependent").
    pub ud_max_retries: u32,
    /// The receiver sends the acknowledgements it owes once this long has passed without a
    /// frame to carry them (MV2_UD_PROGRESS_TIMEOUT; its default depends on job size, and the
    /// user guide recommends a tenth of the retry timeout, so 50000 us).
    pub ud_progress_timeout_us: f64,
    /// Frames the receiver keeps when they arrive ahead of a missing one
    /// (MV2_UD_RECVWINDOW_SIZE = 2501); frames beyond it are dropped and sent again later.
    pub ud_recv_window: u32,
    /// Shared-memory eager limit within a node (MV2_SMP_EAGERSIZE; MVAPICH2 1.x default 8 KiB
    /// on x86_64); larger intra-node messages pipeline through the shared buffer in chunks
    /// of this size.
    pub smp_chunk_bytes: u32,
    /// The library follows MVAPICH2 1.0's job-size rule for its eager path
    /// ([`MpiParams::for_job_size`]); later libraries keep their eager sizes whatever the job.
    pub scales_with_job_size: bool,
    /// When `auto` picks the hierarchical collective (see `collectives::AutoRule`): one-way
    /// delay of 50 us (10 km: a binomial tree's extra WAN crossings then cost more than a
    /// leader's extra intra-cluster step of a few us) or messages of 64 KiB and more (the flat
    /// algorithms move several times the message over the WAN).
    pub auto: AutoRule,
    /// Whose rules `--algo default` follows to pick each collective's algorithm by
    /// communicator and message size (`coll_rules`): MPICH2 1.0's for MVAPICH2 1.0.
    #[serde(default)]
    pub coll: CollRules,
}

impl Default for MpiParams {
    fn default() -> Self {
        MpiParams {
            eager_threshold_bytes: 8192,
            rndv: Rndv::Rput,
            eager_credits: 16,
            credit_update_after: 9,
            header_bytes: 64,
            max_rdma_bytes: 4 << 20,
            outstanding_reads: Some(4),
            r3_chunk_bytes: 8192,
            coalesce_after: 6,
            max_send_wqe: 180,
            vbuf_bytes: 9216,
            call_ns: 200.0,
            ud_window: 400,
            ud_ack_every: 32,
            ud_retry_timeout_us: 500_000.0,
            ud_max_retry_timeout_us: 20_000_000.0,
            ud_max_retries: 1000,
            ud_progress_timeout_us: 50_000.0,
            ud_recv_window: 2501,
            smp_chunk_bytes: 8192,
            scales_with_job_size: true,
            auto: AutoRule { min_delay_us: 50.0, min_bytes: 64 << 10 },
            coll: CollRules::Mpich2,
        }
    }
}

/// The MPI libraries whose defaults are modelled: [S1]'s MVAPICH2 1.0 (2008), MVAPICH2 2.3
/// (2.3.7, 2022, its last CH3/gen2 release) and Open MPI 4.x/5.x over UCX (pml ucx, the default
/// on InfiniBand since Open MPI 4.0: the point-to-point protocol is UCX's).
pub const LIBRARIES: [&str; 3] = ["mvapich2-1.0", "mvapich2-2.3", "openmpi-ucx"];

impl MpiParams {
    /// The named library's defaults (see [`LIBRARIES`]).
    pub fn library(name: &str) -> Option<Self> {
        match name {
            "mvapich2-1.0" => Some(Self::default()),
            "mvapich2-2.3" => Some(Self::mvapich2_2_3()),
            "openmpi-ucx" => Some(Self::openmpi_ucx()),
            _ => None,
        }
    }

    /// MVAPICH2 2.3.7's gen2 channel on a ConnectX adapter of FDR to HDR, single rail, from its
    /// `ibv_param.c` / `ibv_param.h` (github.com/kumattau/mvapich2, the 2.3.7 release):
    /// - eager threshold = the vbuf size (`rdma_iba_eager_threshold = VBUF_BUFFER_SIZE`): 16 KiB
    ///   (`rdma_set_default_parameters_numrail_1`: 16 KiB for MV2_HCA_MLX_CX_FDR on any CPU, and
    ///   for EDR/HDR on the Xeon E5 v2-v4 entries; 17 KiB on a Platinum 8280, 12-32 KiB on the
    ///   EPYC entries; the fallback for an unlisted CPU, as a 2023 Xeon is, is 16 KiB and 16
    ///   fast-path buffers at every cluster size), so no job-size rule;
    /// - rendezvous by RDMA read: `rdma_rndv_protocol = MV2_RNDV_PROTOCOL_RGET` (RPUT only on
    ///   the listed EPYC + HDR hosts, where, its comment says, 16 outstanding reads cannot fill
    ///   HDR), with as many reads outstanding as the adapter allows (rdma_iba_priv.c);
    /// - 16 RDMA fast-path buffers per peer (num_rdma_buffer) and the same credit rule;
    /// - RDMA_DEFAULT_MAX_SEND_WQE = 64 send work requests per connection;
    /// - coalescing (DEFAULT_USE_COALESCE 1, threshold 6) and RDMA_MAX_RDMA_SIZE 4 MiB as 1.0.
    ///
    /// MV2_SMP_EAGERSIZE depends on the CPU in 2.3.7 (8-64 KiB); 8 KiB is kept.
    ///
    /// Collectives keep MPICH2 1.0's selection (a known gap): 2.3.7 picks from per-CPU and
    /// per-adapter tuning tables (`src/mpi/coll/bcast_tuning.c`, `allreduce_tuning.c`,
    /// `alltoall_tuning.c` with their `*_tuning.h` tables; an unlisted CPU, as a 2023 Xeon is,
    /// falls back to the table tuned on TACC Stampede's Xeon E5-2680 + ConnectX FDR, e.g. the
    /// last `else` of MV2_set_bcast_tuning_table) and runs node-aware two-level
    /// algorithms through shared memory by default (MV2_USE_SHMEM_COLL = 1,
    /// `ch3_shmem_coll.c`), which the flat rules of the model do not represent.
    pub fn mvapich2_2_3() -> Self {
        MpiParams {
            eager_threshold_bytes: 16 * 1024,
            rndv: Rndv::Rget,
            outstanding_reads: None,
            max_send_wqe: 64,
            vbuf_bytes: 16 * 1024,
            r3_chunk_bytes: 16 * 1024,
            scales_with_job_size: false,
            ..Self::default()
        }
    }

    /// Open MPI 4.x/5.x with pml ucx over UCX's rc_mlx5 transport (UCX source, github.com/
    /// openucx/ucx, 2026; the same defaults since UCX 1.10):
    /// - eager through 8 KiB bounce buffers: UCX_IB_SEG_SIZE = 8192 (ib_iface.c), one
    ///   receive buffer per eager fragment. UCX_RNDV_THRESH is "auto" (ucp_context.c): UCX
    ///   computes it from its performance estimates and may send larger messages eagerly by
    ///   zero copy, which the model does not have; rendezvous from one segment on is assumed;
    /// - rendezvous by RDMA read: UCX_RNDV_SCHEME = auto picks get_zcopy for host memory over RC;
    /// - flow control: UCX_RC_FC_WND_SIZE = 512 active messages per endpoint without an
    ///   acknowledgement, credits asked back at half the window (UCX_RC_FC_SOFT_THRESH 0.5);
    /// - UCX_IB_TX_QUEUE_LEN = 256 send work requests per queue pair;
    /// - no coalescing (UCX batches doorbells, UCX_IB_TX_MAX_BATCH 16, not messages);
    /// - a rendezvous message is one RDMA read up to the port's largest message: UCX_RC_MAX_GET_ZCOPY
    ///   is "auto", which takes the port's max_msg_sz (rc_iface.c, uct_rc_iface_adjust_max_get_zcopy),
    ///   and the rendezvous get protocol fragments at the interface's get.max_zcopy (ucp/rndv/
    ///   rndv_get.c, max_frag_offs; one rail: one fragment); mlx5 reports 1 << log_max_msg, 1 GiB
    ///   (max_msg_sz 0x40000000 in the `ibv_devinfo -vv` of a ConnectX-6 HDR port, firmware 20.37,
    ///   posted in openucx/ucx issue #9908, 2024). So unlike MVAPICH2's 4 MiB pieces, a long
    ///   message's read is not held to max_rd_atomic x 4 MiB in flight across a long link;
    /// - collectives by the coll/tuned component's fixed decision rules (Open MPI 4.1.8's
    ///   `coll_tuned_decision_fixed.c`; `coll_rules::CollRules::OpenMpi41`).
    pub fn openmpi_ucx() -> Self {
        MpiParams {
            eager_threshold_bytes: 8192,
            rndv: Rndv::Rget,
            outstanding_reads: None,
            eager_credits: 512,
            credit_update_after: 257,
            max_send_wqe: 256,
            vbuf_bytes: 8192,
            r3_chunk_bytes: 8192,
            coalesce_after: 0,
            max_rdma_bytes: 1 << 30,
            scales_with_job_size: false,
            coll: CollRules::OpenMpi41,
            ..Self::default()
        }
    }
}

/// A compute node: what bounds intra-node (shared-memory) messages and compute.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(non_snake_case)]
pub struct NodeParams {
    pub name: String,
    /// One core's memory copy rate for large buffers (MB/s, 10^6): what a shared-memory copy
    /// in or out runs at.
    pub copy_MBps: f64,
    /// The node's sustained memory bandwidth (MB/s): shared by all copies on the node; each
    /// copied byte costs a read and a write.
    pub mem_MBps: f64,
    /// One-way latency of the shared-memory channel (flag write seen by the polling peer), ns.
    pub shm_latency_ns: f64,
    /// Sustained compute rate of one core on the NAS kernels (Mop/s as NPB counts them).
    pub core_mops: f64,
}

impl NodeParams {
    /// Dual-socket Xeon of 2007 (the [S1] clusters' era; S1 does not name its CPUs):
    /// assumed like the Clovertown below.
    pub fn s1_node() -> Self {
        NodeParams { name: "xeon-2007".into(), ..Self::clovertown() }
    }
    /// Intel Clovertown (Xeon 5300, 1333 MT/s FSB, DDR2-667 FB-DIMM): ~6 GB/s sustained
    /// (STREAM-class figures of the platform), ~1.7 GB/s single-core copy (assumed).
    pub fn clovertown() -> Self {
        NodeParams {
            name: "clovertown".into(),
            copy_MBps: 1700.0,
            mem_MBps: 6000.0,
            shm_latency_ns: 500.0,
            core_mops: 400.0,
        }
    }
    /// Intel Harpertown (Xeon 5400, 1600 MT/s FSB, 12 MB L2): ~8 GB/s sustained, ~2.3 GB/s
    /// single-core copy (assumed).
    pub fn harpertown() -> Self {
        NodeParams {
            name: "harpertown".into(),
            copy_MBps: 2300.0,
            mem_MBps: 8000.0,
            shm_latency_ns: 400.0,
            core_mops: 500.0,
        }
    }
    /// Intel Nehalem-EP (Xeon 5500, 3 DDR3-1066 channels per socket, QPI): ~35 GB/s sustained,
    /// ~3.5 GB/s single-core copy (assumed).
    pub fn nehalem() -> Self {
        NodeParams {
            name: "nehalem".into(),
            copy_MBps: 3500.0,
            mem_MBps: 35000.0,
            shm_latency_ns: 250.0,
            core_mops: 700.0,
        }
    }
    /// A 2023 dual-socket server: two Intel Xeon Platinum 8480+ (Sapphire Rapids, 56 cores each,
    /// 8 DDR5-4800 channels per socket; Intel ARK), 2 x 307 GB/s of theoretical memory
    /// bandwidth, ~460 GB/s sustained (assumed: 75% of it, the share STREAM-class runs reach);
    /// one core copies at ~12 GB/s (assumed: a core's outstanding misses, not the channels,
    /// bound it); a cache line crosses between cores of a socket in ~150 ns (assumed); ~2000
    /// NAS Mop/s per core (assumed: about three Nehalem cores, from wider vectors and clocks).
    pub fn sapphire_rapids() -> Self {
        NodeParams {
            name: "sapphire-rapids".into(),
            copy_MBps: 12_000.0,
            mem_MBps: 460_000.0,
            shm_latency_ns: 150.0,
            core_mops: 2000.0,
        }
    }
    /// A 2023 dual-socket AMD server: two EPYC 9654 (Genoa, 96 cores each, 12 DDR5-4800
    /// channels per socket; AMD's product page), 2 x 461 GB/s theoretical, ~690 GB/s sustained
    /// (assumed: 75%); per-core copy, cache-line hand-off and compute assumed as Sapphire
    /// Rapids' (cross-CCD hand-offs are slower: ~200 ns assumed).
    pub fn genoa() -> Self {
        NodeParams { name: "genoa".into(), mem_MBps: 690_000.0, shm_latency_ns: 200.0, ..Self::sapphire_rapids() }
    }
}

impl MpiParams {
    /// A message goes eagerly when it and its header fit the eager threshold; an empty message
    /// is all header, with nothing to move by rendezvous (between nodes: within a node every
    /// message goes through shared memory).
    pub fn is_eager(&self, bytes: u64) -> bool {
        bytes == 0 || bytes + self.header_bytes as u64 <= self.eager_threshold_bytes as u64
    }

    /// MVAPICH2 1.0 sizes its eager path by job size (gen2 `ibv_param.c`,
    /// rdma_set_default_parameters, for Mellanox PCI-Express SDR/DDR and ConnectX DDR adapters):
    /// up to 64 processes 9 KiB eager buffers and 16 fast-path buffers per peer (the defaults
    /// above), below 256 processes 4 KiB and 8, from 256 on 2 KiB and 4; the eager threshold
    /// is the buffer size. What the user set (`fixed_threshold`, `fixed_credits`) stays.
    pub fn for_job_size(mut self, processes: u32, fixed_threshold: bool, fixed_credits: bool) -> Self {
        if !self.scales_with_job_size {
            return self;
        }
        let (vbuf, credits) = match processes {
            0..=64 => return self,
            65..=255 => (4096, 8),
            _ => (2048, 4),
        };
        self.vbuf_bytes = vbuf;
        if !fixed_threshold {
            self.eager_threshold_bytes = vbuf;
        }
        if !fixed_credits {
            self.eager_credits = credits;
            self.credit_update_after = credits / 2 + 1;
        }
        self
    }
}
