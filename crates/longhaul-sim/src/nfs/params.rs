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
    /// READs the client's readahead keeps outstanding per file read through the page cache: the
    /// 2.6.2x NFS client sets the backing device's readahead to rpages x NFS_MAX_READAHEAD, with
    /// NFS_MAX_READAHEAD = RPC_DEF_SLOT_TABLE - 1 = 15 (fs/nfs/client.c, internal.h), i.e. 15
    /// rsize READs (480 KiB at rsize 32 KiB); a 256 KiB read() opens the whole window at once
    /// (get_init_ra_size in mm/readahead.c gives the maximum for a request of 64 pages out of 120).
    pub readahead_reads: u32,
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

impl NfsParams {
    /// The \[S1\] testbed: Linux NFS/RDMA of 2008 on InfiniHost III hosts.
    pub fn s1() -> Self {
        NfsParams {
            rsize_bytes: 32 * 1024,
            chunk_bytes: 4096,
            rdma_credits: 16,
            sq_depth_per_credit: 8,
            readahead_reads: 15,
            tcp_slots: 16,
            call_bytes: 160,
            rdma_header_bytes: 16,
            rdma_segment_bytes: 16,
            reply_header_bytes: 120,
            server_rpc_ns: 10_000.0,
            client_rpc_ns: 5_000.0,
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
