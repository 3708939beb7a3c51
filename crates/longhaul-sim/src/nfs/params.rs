//! The NFS and RPC parameters of one hardware profile: what the client asks for, how many calls
//! may be outstanding on the one connection, and what each call costs the hosts. One struct,
//! set once per testbed (never per point); each field says what it is and where its default is
//! from.

use serde::{Deserialize, Serialize};

/// The NFS and RPC parameters of one hardware profile (the module doc says how they are set).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NfsParams {
    /// Bytes one NFSv3 READ asks for (the mount's rsize). Default 32 KiB: the early Linux
    /// NFS/RDMA client (xprtrdma, 2.6.24-25, the OFED 1.2/1.3 era of \[S1\]) carries at most
    /// RPCRDMA_MAX_DATA_SEGS = 8 page segments per call, 8 x 4 KiB. The same rsize is used over
    /// TCP so that the transports are compared like for like (assumed; \[S1\] does not state it).
    pub rsize_bytes: u32,
    /// Bytes the server moves per RDMA Write: the client registers its read buffer page by page
    /// and lists each 4 KiB page as one segment of the write chunk (RFC 5666 section 3.4, RFC 8166
    /// section 3.4.4), and the server writes segment by segment. \[S1\] section 3.6: "4 KB chunks".
    /// This is the 2.6.2x client's persistent "all-physical" registration
    /// (RPCRDMA_PERSISTENT_REGISTRATION = 1 in xprt_rdma.h; RPCRDMA_ALLPHYSICAL maps one page per
    /// segment, `nsegs = 1`, in rpcrdma_register_external of verbs.c; it is also where
    /// RPCRDMA_MTHCAFMR falls back when the adapter has no FMRs): nothing is registered or
    /// deregistered per call, so no per-call registration cost is charged. FMR would have
    /// coalesced a READ's 8 pages into one 32 KiB segment, FRMR (the default from 2.6.28) too;
    /// \[S1\]'s 4 KB chunks say S1 ran the page-per-segment mode.
    pub chunk_bytes: u32,
    /// RPC-over-RDMA credits: READs the client may have outstanding on the connection. Linux's
    /// server grants svcrdma_max_requests = RPCRDMA_MAX_REQUESTS = 16 (svc_rdma.h of 2.6.25);
    /// the client's slot table (RPCRDMA_DEF_SLOT_TABLE = 32, xprt_rdma_slot_table_entries) is
    /// larger, so the grant rules: xprtrdma sets the RPC congestion window to the credits of the
    /// last reply (xprt_rdma_reserve_xprt), one round trip after the first call, which the
    /// warm-up hides. The server's nfsd threads (8 by default, RPCNFSDCOUNT of the 2008 init
    /// scripts) never bind below it: a thread holds a call only until its Writes and reply are
    /// posted, and svc_send serialises posting on the transport (xpt_mutex), as the one server
    /// timeline here does; a thread waits only while the send queue below is full, and then
    /// 8 waiting threads plus the ~14 calls the queue holds exceed the 16 credits.
    pub rdma_credits: u32,
    /// The server's send queue depth per credit: svcrdma sizes its send queue at sc_sq_depth =
    /// svcrdma_max_requests x RPCRDMA_SQ_DEPTH_MULT, 16 x 8 = 128 work requests (page Writes and
    /// reply Sends) posted and not completed, and waits for completions once it is full
    /// (sc_send_wait) (svc_rdma_transport.c and svc_rdma.h of 2.6.25). The client's queue pair
    /// gets the same depth; its calls never fill it (at most one per credit outstanding).
    pub sq_depth_per_credit: u32,
    /// How the client's readahead keeps a file read through the page cache ahead of the reader.
    pub readahead: Readahead,
    /// RPC slot table over TCP: calls outstanding on the one socket. Linux's
    /// sunrpc.tcp_slot_table_entries default RPC_DEF_SLOT_TABLE = 16 (include/linux/sunrpc/xprt.h).
    pub tcp_slots: u32,
    /// An NFSv3 READ call on the wire (it and the reply header go inline: both are under the
    /// 1024-byte RPCRDMA_DEF_INLINE; the data, larger, goes by the write chunk): RPC call header with AUTH_UNIX credentials (~ 96 bytes),
    /// file handle (up to 64), offset and count (RFC 1813 section 3.3.6, RFC 5531). Assumed 160.
    pub call_bytes: u32,
    /// RPC-over-RDMA header of a call: xid, version, credits, type (16 bytes) plus the chunk lists;
    /// each write-chunk segment adds handle, length and offset (16 bytes) (RFC 8166 section 4.2).
    pub rdma_header_bytes: u32,
    /// Bytes each write-chunk segment adds to that header (handle, length, offset: 16, RFC 8166
    /// section 4.2).
    pub rdma_segment_bytes: u32,
    /// A READ reply without its data: RPC reply header, status, post-op attributes, count, eof,
    /// opaque length (RFC 1813 section 3.3.6): about 120 bytes.
    pub reply_header_bytes: u32,
    /// Server CPU per READ (ns): nfsd wakes, decodes, looks the pages up in the page cache,
    /// encodes the reply. Assumed 10 us for the 2008 Xeon servers of \[S1\] (the file is cached:
    /// IOzone re-reads a 512 MB file).
    pub server_rpc_ns: f64,
    /// Client CPU per READ (ns): marshal and send the call, match and complete the reply; charged
    /// on one timeline before each call leaves. Assumed 5 us.
    pub client_rpc_ns: f64,
}

/// The NFS client's readahead for a file read sequentially through the page cache.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum Readahead {
    /// This many rsize READs: before Linux 5.4 the NFS client set the backing device's readahead
    /// to rpages x NFS_MAX_READAHEAD, with NFS_MAX_READAHEAD = RPC_DEF_SLOT_TABLE - 1 = 15
    /// (fs/nfs/client.c, internal.h), 15 rsize READs (480 KiB at rsize 32 KiB); a 256 KiB read()
    /// opens the whole window at once (get_init_ra_size in mm/readahead.c gives the maximum for a
    /// request of 64 pages out of 120).
    RsizeReads(u32),
    /// The page cache's window: from Linux 5.4 (commit c128e575514c, "NFS: Optimise the default
    /// readahead size") the NFS mount's readahead is the VM default, `ra_bytes` = VM_READAHEAD_PAGES
    /// = 128 KiB, and its io_pages is rsize, which mm/readahead.c lets a read() larger than the
    /// readahead use instead ("allow the read to be up to the optimal hardware IO size"): the
    /// window is max(ra_bytes, min(read() size, rsize)), each window one READ up to rsize. On a
    /// sequential stream the reader hitting the async mark starts the next window while the one
    /// before is still in flight: two windows outstanding (6.12's fix that keeps a window from
    /// shrinking, Cc stable; before it a 256 KiB reader alternated 256 and 128 KiB windows).
    Window { ra_bytes: u32 },
}

impl NfsParams {
    /// The \[S1\] testbed: Linux NFS/RDMA of 2008 on InfiniHost III hosts.
    pub fn s1() -> Self {
        NfsParams {
            rsize_bytes: 32 * 1024,
            chunk_bytes: 4096,
            rdma_credits: 16,
            sq_depth_per_credit: 8,
            readahead: Readahead::RsizeReads(15),
            tcp_slots: 16,
            call_bytes: 160,
            rdma_header_bytes: 16,
            rdma_segment_bytes: 16,
            reply_header_bytes: 120,
            server_rpc_ns: 10_000.0,
            client_rpc_ns: 5_000.0,
        }
    }

    /// Linux NFS of today (5.4 to 6.12, its defaults; the `fdr` to `xdr` profiles), where it
    /// differs from [`NfsParams::s1`]:
    /// - rsize 1 MiB: the client takes the server's preferred size, knfsd's svc_max_payload() =
    ///   RPCSVC_MAXPAYLOAD = 1 MiB (include/linux/sunrpc/svc.h, also for RDMA), within the
    ///   client's NFS_MAX_FILE_IO_SIZE = 1 MiB (nfs_xdr.h) and xprtrdma's RPCRDMA_MAX_DATA_SEGS =
    ///   257 pages (xprt_rdma.h). A 2025 patch raises knfsd's to 4 MiB, after 6.12.
    /// - one write-chunk segment per READ: the client registers the READ's buffer as one FRWR
    ///   region of up to the adapter's max_fast_reg_page_list_len pages (frwr_ops.c `frwr_map`,
    ///   which refuses to connect unless 1 MiB fits in its segments); the server posts the chunk
    ///   as one chain of RDMA Writes with one completion (svc_rdma_rw.c, the rdma_rw API since
    ///   4.12). It splits the chain into Writes of the queue pair's max_write_sge pages each; the
    ///   model posts it as one Write (the per-Write costs of a 1 MiB READ are about a
    ///   microsecond, against its 20 us on a 400 Gb/s link).
    /// - credits 64: svcrdma_max_requests = RPCRDMA_MAX_REQUESTS = 64 (svc_rdma.h; 32 in 4.x, 16
    ///   in 2.6.2x; a 2025 patch raises it to 128, after 6.12); the client's slot table is 128
    ///   (RPCRDMA_DEF_SLOT_TABLE, xprtrdma.h) and its window follows the reply's credits
    ///   (rpc_rdma.c `__rpcrdma_update_cwnd_locked`), so 64 calls outstanding.
    /// - the server's send queue sized for every credit's Write chain and reply (sc_sq_depth =
    ///   rq_depth + rdma_rw_mr_factor x sc_max_requests, svc_rdma_transport.c): 2 work requests
    ///   per credit here (the chain as one Write, the reply), never binding before the credits.
    /// - readahead of the page cache's window ([`Readahead::Window`], 128 KiB).
    /// - TCP slots 65536: sunrpc allocates TCP slots as needed, from RPC_MIN_SLOT_TABLE = 2 up to
    ///   tcp_max_slot_table_entries = RPC_MAX_SLOT_TABLE = 65536 (xprtsock.c, since about 3.1).
    ///
    /// The per-call sizes and CPU costs are [`NfsParams::s1`]'s (assumed there too).
    pub fn linux_today() -> Self {
        NfsParams {
            rsize_bytes: 1 << 20,
            chunk_bytes: 1 << 20,
            rdma_credits: 64,
            sq_depth_per_credit: 2,
            readahead: Readahead::Window { ra_bytes: 128 * 1024 },
            tcp_slots: 65536,
            ..NfsParams::s1()
        }
    }

    /// The parameters of a verbs testbed: \[S1\]'s 2008 Linux on the 2008-2010 testbeds (`s1`,
    /// `s1-connectx`, `s3`, `usn`), today's Linux on the generations since 2011 (`fdr` to `xdr`,
    /// whose perftest is today's too).
    pub fn of_testbed(testbed: &str) -> Self {
        match testbed {
            "fdr" | "edr" | "hdr" | "ndr" | "xdr" => NfsParams::linux_today(),
            _ => NfsParams::s1(),
        }
    }

    /// How a thread reading `record_bytes` at a time through the page cache reads: READs
    /// outstanding and the bytes of each.
    pub fn readahead_reads(&self, record_bytes: u64) -> (u32, u32) {
        match self.readahead {
            Readahead::RsizeReads(n) => (n, self.rsize_bytes),
            Readahead::Window { ra_bytes } => {
                let window = (record_bytes.min(self.rsize_bytes as u64) as u32).max(ra_bytes);
                let read = window.min(self.rsize_bytes);
                (2 * window.div_ceil(read), read)
            }
        }
    }

    /// Pages (write-chunk segments) of a READ of `bytes`.
    pub fn chunks(&self, bytes: u32) -> u32 {
        bytes.div_ceil(self.chunk_bytes).max(1)
    }

    /// An RPC-over-RDMA READ call of `bytes`: the RDMA header with its write chunk, then the call.
    pub fn rdma_call_bytes(&self, bytes: u32) -> u32 {
        self.rdma_header_bytes + self.chunks(bytes) * self.rdma_segment_bytes + self.call_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readahead_is_15_rsize_reads_in_2008_and_two_page_cache_windows_today() {
        let (old, today) = (NfsParams::s1(), NfsParams::linux_today());
        assert_eq!(old.readahead_reads(256 << 10), (15, 32 << 10));
        // A read() above the 128 KiB readahead reads up to rsize a window; below it, 128 KiB.
        assert_eq!(today.readahead_reads(256 << 10), (2, 256 << 10));
        assert_eq!(today.readahead_reads(4 << 10), (2, 128 << 10));
        assert_eq!(today.readahead_reads(4 << 20), (2, 1 << 20));
        // An rsize below the window: the window in rsize READs.
        let small = NfsParams { rsize_bytes: 32 << 10, ..NfsParams::linux_today() };
        assert_eq!(small.readahead_reads(256 << 10), (8, 32 << 10));
    }

    #[test]
    fn the_profiles_of_2011_on_run_todays_linux() {
        for (testbed, credits) in [("s1", 16), ("s1-connectx", 16), ("s3", 16), ("usn", 16), ("fdr", 64), ("xdr", 64)] {
            assert_eq!(NfsParams::of_testbed(testbed).rdma_credits, credits, "{testbed}");
        }
        assert_eq!(NfsParams::linux_today().chunks(1 << 20), 1);
    }
}
