//! The iSCSI, iSER and host parameters of one iSER session: what the initiator may have
//! outstanding, how much data a command carries and how the target moves it, and what each
//! command costs the hosts. One struct, set once per profile (never per point); each field says
//! what it is and where its default is from. The session keys are RFC 3720's (iSCSI) as RFC 5046
//! / RFC 7145 (iSER) keep or change them; the host values are those of the Linux iSER initiator
//! (open-iscsi with ib_iser) and a Linux target (STGT or LIO with ib_isert).
//!
//! The session keys are negotiated at login (RFC 3720 section 12): InitialR2T by OR,
//! ImmediateData by AND, the burst lengths and MaxOutstandingR2T by minimum. open-iscsi proposes
//! InitialR2T=No, ImmediateData=Yes, FirstBurstLength 262144, MaxBurstLength 16776192
//! (iscsid.conf, usr/iscsi_settings.h); a Linux target offers the RFC defaults (LIO's
//! iscsi_target_parameters.h: Yes, Yes, 65536, 262144, MaxOutstandingR2T 1), so the session runs
//! with the RFC defaults below.

use serde::{Deserialize, Serialize};

/// The iSCSI session keys, iSER and host costs of one session: one value per profile.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
#[allow(non_snake_case)]
pub struct IserParams {
    /// SCSI commands the initiator keeps outstanding on the session. Default 32: open-iscsi's
    /// node.session.queue_depth in iscsid.conf ("a value between 1 and 128. The default is 32":
    /// the per-LUN queue; the session's node.session.cmds_max = 128 is larger, so the LUN queue
    /// rules). A workload with a shallower iodepth keeps fewer.
    pub queue_depth: u32,
    /// Largest SCSI command the initiator issues (bytes): the block layer splits a larger I/O.
    /// Default 512 KiB: ib_iser's ISER_DEF_MAX_SECTORS = 1024 sectors of 512 bytes
    /// (drivers/infiniband/ulp/iser/iscsi_iser.h).
    pub max_command_bytes: u32,
    /// MaxBurstLength: the most solicited data in one R2T sequence, i.e. one RDMA Read the
    /// target issues for a WRITE, and the Data-In sequence of a READ (one RDMA Write here).
    /// RFC 3720 section 12.13 default 262144.
    pub max_burst_bytes: u32,
    /// FirstBurstLength: unsolicited data (immediate and unsolicited Data-Out) a WRITE may carry
    /// before the target solicits the rest. RFC 3720 section 12.14 default 65536.
    pub first_burst_bytes: u32,
    /// ImmediateData: the WRITE's first data rides in the command PDU's data segment.
    /// RFC 3720 section 12.11 default Yes.
    pub immediate_data: bool,
    /// InitialR2T: when true the initiator sends no unsolicited Data-Out PDUs (only immediate
    /// data). RFC 3720 section 12.10 default Yes.
    pub initial_r2t: bool,
    /// MaxOutstandingR2T: R2T sequences (RDMA Reads under iSER) the target has outstanding per
    /// WRITE command. RFC 3720 section 12.17 default 1.
    pub max_outstanding_r2t: u32,
    /// TargetRecvDataSegmentLength: the largest data segment of a PDU the initiator Sends (the
    /// target's receive buffers): caps immediate data and each unsolicited Data-Out.
    /// RFC 5046 section 6.2 / RFC 7145 section 6.2 default 8192.
    pub target_recv_segment_bytes: u32,
    /// Every control PDU: the iSER header (flags, write and read STag and virtual address,
    /// 28 bytes, RFC 7145 section 9.2) before the 48-byte iSCSI Basic Header Segment
    /// (RFC 3720 section 10.2.1).
    pub pdu_header_bytes: u32,
    /// Target CPU per command (ns): receive and parse the PDU, look up the LUN, set up the data
    /// buffer and its RDMA work requests, build the response. Assumed 10 us, the NFS server's
    /// per-call cost on the same 2008 hosts (`NfsParams::server_rpc_ns`).
    pub target_cmd_ns: f64,
    /// Initiator CPU per command (ns): the SCSI mid-layer, iscsi_iser's task setup and memory
    /// registration of the buffer (FMR on InfiniHost III), the completion. Assumed 5 us, as
    /// the NFS client's per-call cost.
    pub initiator_cmd_ns: f64,
    /// The target's backing store rate (MB/s, 10^6 bytes): a RAM disk by default, one memory
    /// copy between the RAM disk pages and the registered I/O buffer per byte. Assumed 5000 MB/s,
    /// one memcpy stream of a 2008 Xeon 5400 front-side-bus host (STREAM Copy of that
    /// generation is about 5-6 GB/s).
    pub backing_MBps: f64,
}

impl IserParams {
    /// The defaults above: RFC 3720/7145 session keys, open-iscsi and ib_iser of the 2008
    /// Linux releases, assumed host costs of the \[S1\]-era hosts.
    pub fn defaults() -> Self {
        IserParams {
            queue_depth: 32,
            max_command_bytes: 512 * 1024,
            max_burst_bytes: 262_144,
            first_burst_bytes: 65_536,
            immediate_data: true,
            initial_r2t: true,
            max_outstanding_r2t: 1,
            target_recv_segment_bytes: 8192,
            pdu_header_bytes: 28 + 48,
            target_cmd_ns: 10_000.0,
            initiator_cmd_ns: 5_000.0,
            backing_MBps: 5000.0,
        }
    }

    /// Data a WRITE of `bytes` sends without being asked: immediate data in the command PDU,
    /// then (InitialR2T=No) unsolicited Data-Out PDUs, together at most FirstBurstLength.
    /// Returns (immediate bytes, the unsolicited Data-Out PDUs' sizes).
    pub fn unsolicited(&self, bytes: u32) -> (u32, Vec<u32>) {
        let first = bytes.min(self.first_burst_bytes);
        let seg = self.target_recv_segment_bytes;
        let immediate = if self.immediate_data { first.min(seg) } else { 0 };
        let mut data_out = Vec::new();
        if !self.initial_r2t {
            let mut left = first - immediate;
            while left > 0 {
                let n = left.min(seg);
                data_out.push(n);
                left -= n;
            }
        }
        (immediate, data_out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsolicited_data_follows_the_session_keys() {
        let mut p = IserParams::defaults();
        assert_eq!(p.unsolicited(1 << 20), (8192, vec![]));
        assert_eq!(p.unsolicited(4096), (4096, vec![]));
        p.initial_r2t = false;
        let (imm, outs) = p.unsolicited(1 << 20);
        assert_eq!((imm, outs.len(), outs.iter().sum::<u32>()), (8192, 7, 65536 - 8192));
        p.immediate_data = false;
        assert_eq!(p.unsolicited(10_000).0, 0);
        assert_eq!(p.unsolicited(10_000).1, vec![8192, 1808]);
    }
}
