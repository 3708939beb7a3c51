//! The parameters of a parallel file system across the long-haul link, one struct per
//! component: the client node ([`ClientParams`]), the NSD/OSS server ([`ServerParams`]), the LUN
//! and its disks ([`DiskParams`]), the file system's layout ([`FileSystemParams`]) and the
//! connections' failover ([`FailoverParams`]: RC retries, the file system's own timeouts; the
//! subnet manager's timing is the verbs model's, `crate::ib::subnet_manager`). Set once per hardware profile, never per point; each default says
//! what it is, where it is from and which era it belongs to. The WAN links themselves are not
//! here: their rate comes from the testbed's extender (`crate::scenario::Resolved`).
//!
//! Sources: [GPFS3] IBM GPFS 3.x "Administration and Programming Reference" / "Concepts,
//! Planning and Installation Guide" (mmchconfig, mmcrfs), 2008-2012; [SCALE] the IBM Storage Scale
//! tuning pages of today where they repeat a 3.x default; [OSM] OpenSM's man page and
//! usage text (opensm 3.3.x, OFED 1.5, the S3 era); [IBA] InfiniBand Architecture Specification
//! vol. 1 rel. 1.2.1 (C9-140/141: local ACK timeout 4.096 us x 2^n; retry count 3 bits, at most 7;
//! 17.2.8 automatic path migration);
//! [LUSTRE] the Lustre Operations Manual (lfs setstripe defaults); [GPFSUG] gpfsug-discuss,
//! 2013-06-14, "NSD threads" (a GPFS 3.4 site's default thread parameters and the active-thread
//! formula of IBM's "GPFS R3.5 nsdMultipleQ and other enhancements" slides, slide 4).
//!
//! Rates are in MB/s with MB = 10^6 bytes, named `_MBps` as in the records.
#![allow(non_snake_case)]

use serde::{Deserialize, Serialize};

/// GPFS (every file striped over every NSD) or Lustre (each file over `stripe_count` OSTs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    Gpfs,
    Lustre,
}

impl Variant {
    pub const NAMES: [&'static str; 2] = ["gpfs", "lustre"];

    pub fn name(self) -> &'static str {
        match self {
            Variant::Gpfs => "gpfs",
            Variant::Lustre => "lustre",
        }
    }
}

/// One client node: the application's writer threads and the file system's cache.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClientParams {
    /// Application threads writing (or reading) at once, each its own file. The [S3] drill ran
    /// 6 per client (issue 24).
    pub threads: u32,
    /// The page pool (bytes): GPFS's cache of data and metadata on the client; writes are copied
    /// into it and flushed behind the application (write-behind). GPFS 3.x default 64 MiB
    /// ([GPFS3] mmchconfig pagepool; today's default is 1 GiB, [SCALE]).
    pub pagepool_bytes: u64,
    /// Share of the page pool dirty data may fill before a writer blocks (write-behind depth).
    /// GPFS does not document the split; assumed one half (the rest holds metadata and
    /// prefetch buffers).
    pub dirty_fraction: f64,
    /// Client CPU per block RPC (us): build the NSD request, post the RDMA, complete the reply.
    /// Assumed 20 us for a 2010 Xeon (no published figure).
    pub rpc_cpu_us: f64,
}

/// One NSD server (GPFS) or OSS (Lustre).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerParams {
    /// Server CPU per block request (us): receive, checksum-free copy into the NSD buffer,
    /// queue the disk I/O, send the reply. Assumed 50 us on one core (no published figure).
    pub request_cpu_us: f64,
    /// Cores serving requests at once: GPFS runs NSD I/O on its worker threads (below), but the
    /// CPU work runs on the node's cores: assumed 8 (two quad-core Xeons of 2010).
    pub cores: u32,
    /// NSD worker threads per LUN the server serves. With the two bounds below, GPFS 3.4's
    /// defaults (nsdThreadsPerDisk 3, nsdMinWorkerThreads 16, nsdMaxWorkerThreads 64, as a
    /// GPFS 3.4 site lists them, [GPFSUG]); the threads active on a server are
    /// max(min(nsdThreadsPerDisk x its NSDs, nsdMaxWorkerThreads), nsdMinWorkerThreads), the
    /// formula of IBM's GPFS R3.5 nsdMultiQueue slides that the same post quotes (R3.5's
    /// nsdThreadsPerQueue x nsdMultiQueue replaced them). Lustre's profile keeps them: its OSS
    /// threads (ost_io) are not modelled apart.
    pub nsd_threads_per_disk: u32,
    /// Fewest NSD worker threads a server runs (nsdMinWorkerThreads, 16 in GPFS 3.4, [GPFSUG]).
    pub nsd_min_worker_threads: u32,
    /// Most NSD worker threads a server runs (nsdMaxWorkerThreads, 64 in GPFS 3.4, [GPFSUG]).
    pub nsd_max_worker_threads: u32,
    /// What the server moves between its memory and its LUNs (MB/s): the storage path, e.g.
    /// two 8 Gb/s Fibre Channel ports (800 MB/s each, FC-PI-4) = 1600 MB/s. Assumed.
    pub storage_path_MBps: f64,
}

impl ServerParams {
    /// Requests a server with `luns` LUNs serves at once (each on an NSD worker thread); the
    /// others wait for a thread. 16 for the default 3 LUNs per server.
    pub fn nsd_workers(&self, luns: u32) -> u32 {
        (self.nsd_threads_per_disk * luns).min(self.nsd_max_worker_threads).max(self.nsd_min_worker_threads)
    }
}

/// One LUN (an NSD or OST): a RAID group of disks behind a controller.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DiskParams {
    /// Data disks of the RAID group: 8+2 RAID 6, the usual GPFS/Lustre LUN of DDN and IBM DS
    /// controllers of the era (8 data disks so a full stripe is a power of two).
    pub data_disks: u32,
    /// Parity disks of the RAID group (2: RAID 6).
    pub parity_disks: u32,
    /// Streaming rate of one disk (MB/s): a 7,200 rpm 1-2 TB SATA/NL-SAS disk of 2010 sustains
    /// about 100 MB/s averaged over its platters (vendor datasheets give 120-140 outer tracks).
    pub disk_MBps: f64,
    /// Time per I/O before data moves (ms): positioning, mostly hidden by the controller's
    /// write-back cache for full-stripe writes. Assumed 1 ms (a bare 7,200 rpm disk takes
    /// ~8.5 ms seek + 4.2 ms rotation; a cached full-stripe write far less).
    pub per_io_ms: f64,
}

/// The file system: blocks, how they are spread over LUNs and servers, metadata costs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FileSystemParams {
    pub variant: Variant,
    /// The file system block size (bytes): one NSD RPC moves one block. GPFS 3.x mmcrfs -B
    /// default 256 KiB ([GPFS3]); Lustre's RPC is 1 MiB (its stripe size default, [LUSTRE]).
    pub block_bytes: u64,
    /// Lustre only: OSTs a file is striped over (lfs setstripe -c; default 1, [LUSTRE]). GPFS
    /// stripes every file's blocks round-robin over all NSDs of the file system.
    pub stripe_count: u32,
    /// Bytes each application file grows to before the thread opens the next (each open is a
    /// create on the metadata server).
    pub file_bytes: u64,
    /// Round trips per file create (GPFS: token request and inode allocation by the file system
    /// manager; Lustre: the MDS open/create RPC). Assumed 2.
    pub create_round_trips: u32,
}

/// How the file system's connections ride out a link failure: RC retries and the file
/// system's own timeouts. The subnet manager's part (traps, sweeps, reroute time, link training)
/// is `crate::ib::subnet_manager::SubnetManagerParams`, shared with the verbs model.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FailoverParams {
    /// LMC: 2^lmc LIDs per port. OpenSM's default 0 ([OSM]): one path between two ports, so
    /// all of a QP's packets take one link.
    pub lmc: u32,
    /// The local ACK timeout exponent of the file system's queue pairs: 4.096 us x 2^n ([IBA]
    /// C9-141). GPFS does not document its value; 14 (67 ms), libibverbs users' usual, assumed.
    pub ack_timeout_exp: u32,
    /// RC retries before the QP fails ([IBA]: 3 bits, 7 at most; 7 assumed for GPFS).
    pub retry_count: u32,
    /// Automatic path migration ([IBA] 17.2.8): each QP is loaded with an alternate path over
    /// the ports' second LIDs (needs `lmc` >= 1) and armed; when its retries run out on the
    /// primary path it migrates to the alternate one and retries there instead of failing.
    /// Off: GPFS 3.x documents no APM (its verbs options, verbsRdma and verbsPorts, pick ports,
    /// not alternate paths), and OFED only migrates QPs whose software loads an alternate path
    /// (HP-MPI 2.2.7 release note: APM with OFED >= 1.2 only when enabled, MPI_HA_NW_PORT_FAILOVER).
    pub apm: bool,
    /// From a QP error to a new connection carrying the RPCs again (s): GPFS closes the verbs
    /// connection, reconnects (over TCP first, then the RDMA handshake) and resends. Assumed 1 s.
    pub reconnect_s: f64,
    /// Without any path to a server for this long a client is expelled (s): GPFS
    /// failureDetectionTime default 35 s (lease; [SCALE] "lease config: failureDetectionTime
    /// 35.0", the same since 3.x).
    pub failure_detection_s: f64,
}

/// Every component's parameters: what a profile sets once.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PfsParams {
    pub client: ClientParams,
    pub server: ServerParams,
    pub disk: DiskParams,
    pub fs: FileSystemParams,
    pub failover: FailoverParams,
}

impl PfsParams {
    /// GPFS 3.x of 2010-2011 on the hardware class of [S3] (CSCS: QDR fabrics, ConnectX-2,
    /// Longbow C103). [S3] gives neither servers nor disks: those are the era's typical ones.
    pub fn gpfs_2010() -> Self {
        PfsParams {
            client: ClientParams { threads: 6, pagepool_bytes: 64 << 20, dirty_fraction: 0.5, rpc_cpu_us: 20.0 },
            server: ServerParams {
                request_cpu_us: 50.0,
                cores: 8,
                nsd_threads_per_disk: 3,
                nsd_min_worker_threads: 16,
                nsd_max_worker_threads: 64,
                storage_path_MBps: 1600.0,
            },
            disk: DiskParams { data_disks: 8, parity_disks: 2, disk_MBps: 100.0, per_io_ms: 1.0 },
            fs: FileSystemParams {
                variant: Variant::Gpfs,
                block_bytes: 256 << 10,
                stripe_count: 1,
                file_bytes: 1 << 30,
                create_round_trips: 2,
            },
            failover: FailoverParams {
                lmc: 0,
                ack_timeout_exp: 14,
                retry_count: 7,
                apm: false,
                reconnect_s: 1.0,
                failure_detection_s: 35.0,
            },
        }
    }

    /// The Lustre-like variant: 1 MiB RPCs, each file on one OST (its defaults, [LUSTRE]).
    pub fn lustre_2010() -> Self {
        let mut p = Self::gpfs_2010();
        p.fs.variant = Variant::Lustre;
        p.fs.block_bytes = 1 << 20;
        p.fs.stripe_count = 1;
        p
    }

    /// The profile of a variant.
    pub fn of(variant: Variant) -> Self {
        match variant {
            Variant::Gpfs => Self::gpfs_2010(),
            Variant::Lustre => Self::lustre_2010(),
        }
    }
}

impl DiskParams {
    /// A LUN's write rate for I/Os of `bytes` (MB/s): the stripe streams at the data disks'
    /// rate after one positioning time per I/O (full-stripe writes: parity costs no extra I/O).
    pub fn lun_MBps(&self, bytes: u64) -> f64 {
        let stream_s = bytes as f64 / (self.data_disks as f64 * self.disk_MBps * 1e6);
        bytes as f64 / (stream_s + self.per_io_ms * 1e-3) / 1e6
    }
}

impl FailoverParams {
    /// The local ACK timeout (s): 4.096 us x 2^exp ([IBA] C9-141).
    pub fn ack_timeout_s(&self) -> f64 {
        4.096e-6 * f64::powi(2.0, self.ack_timeout_exp as i32)
    }

    /// From a lost packet to the QP's error: the first timeout and `retry_count` retries.
    pub fn retries_exhausted_s(&self) -> f64 {
        self.ack_timeout_s() * (self.retry_count + 1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lun_streams_below_its_disks_and_gains_with_larger_ios() {
        let d = PfsParams::gpfs_2010().disk;
        let small = d.lun_MBps(256 << 10);
        let large = d.lun_MBps(4 << 20);
        assert!(small < large && large < 800.0, "{small} {large}");
    }

    #[test]
    fn rc_retries_run_out_after_eight_timeouts() {
        let f = PfsParams::gpfs_2010().failover;
        assert!((f.ack_timeout_s() - 0.067_108_864).abs() < 1e-9);
        assert!((f.retries_exhausted_s() - 8.0 * 0.067_108_864).abs() < 1e-9);
    }

    #[test]
    fn nsd_worker_threads_follow_the_luns_between_gpfs_34s_bounds() {
        let s = PfsParams::gpfs_2010().server;
        let workers: Vec<u32> = [1, 3, 5, 6, 10, 21, 22, 64].iter().map(|&luns| s.nsd_workers(luns)).collect();
        assert_eq!(workers, [16, 16, 16, 18, 30, 63, 64, 64]);
    }
}
