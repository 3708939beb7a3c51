//! The migration's own mechanisms, one struct: how many block moves a node keeps in flight,
//! what a file costs in round trips, and a copy stream's window. The disks, servers, links and
//! the file system's block size are the parallel file system's ([`crate::pfs::params`]).
//!
//! Sources: [RESTRIPE] IBM Storage Scale "Determining how long mmrestripefs takes to complete"
//! (5.0.x administration guide): the restripe runs as threads on each node given by -N, each on
//! a subset of files (a large file by several nodes in parallel), bounded by the data to move,
//! the nodes doing it, the NSD servers' bandwidth and the per-node PIT threads; [MMDELDISK] the
//! mmdeldisk page (5.0.x): the disks' data is copied off onto the remaining disks (deldisk step),
//! then optionally rebalanced (restripe step); [MMRESTRIPEFS] the mmrestripefs page: -m/-r move
//! the data of suspended disks, -N names the nodes that do the work.

use serde::{Deserialize, Serialize};

/// The migration's per-node and per-file costs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MigrateParams {
    /// Restripe worker (PIT) threads per node, each moving one block at a time (read it from
    /// the old NSD's server, write it to the new NSD's). [RESTRIPE] names the per-node PIT
    /// thread count as a bound without giving the 3.x value; 16 assumed (a 2010 node of two
    /// quad-core Xeons, two threads a core).
    pub pit_threads_per_node: u32,
    /// Round trips per file the restripe spends on metadata: the file's inode and its token from
    /// the file system manager, the indirect blocks listing its disk addresses, the updated
    /// addresses logged and written back. Assumed 4 (GPFS does not document the count). Paid for
    /// every file with a block on a moved NSD: every file, since GPFS stripes each file over all
    /// NSDs (crate::pfs::layout).
    pub restripe_file_round_trips: u32,
    /// Round trips per file a copy stream spends besides the data: lookup and create on the
    /// target (the file system's create_round_trips), then setting the attributes (cp -p, rsync's
    /// times and modes) and the close that flushes. Assumed 2 beyond the create.
    pub copy_extra_round_trips: u32,
    /// A copy stream's data in flight (bytes): a cp/rsync process writing into the target's page
    /// pool keeps at most its share of the dirty pages in flight (write-behind); assumed the
    /// client's pagepool x dirty_fraction shared by 8 streams: 4 MiB of the GPFS 3.x 64 MiB.
    pub stream_window_bytes: u64,
}

impl MigrateParams {
    pub fn gpfs_2010() -> Self {
        MigrateParams {
            pit_threads_per_node: 16,
            restripe_file_round_trips: 4,
            copy_extra_round_trips: 2,
            stream_window_bytes: 4 << 20,
        }
    }
}
