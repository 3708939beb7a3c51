//! The InfiniBand packet as the simulator carries it: transport header fields that matter to
//! the protocol (no payload bytes are stored: memory stays proportional to packets in flight).

use super::headers::{Kind, Op};
use crate::net::{Datagram, NodeId, Routable};

#[derive(Debug, Clone, Copy)]
pub struct IbPacket {
    pub dst: NodeId,
    /// Destination queue pair (global index in the simulation).
    pub qp: u32,
    pub kind: Kind,
    pub op: Op,
    /// 24-bit packet sequence number.
    pub psn: u32,
    /// Payload bytes carried (for a read request: bytes requested).
    pub len: u32,
    pub first: bool,
    pub last: bool,
    /// Requester asks the responder to acknowledge this packet (BTH AckReq bit).
    pub ack_req: bool,
    /// Bytes on the wire.
    pub wire: u32,
    /// What the upper layer wrote into its own header (here: the high 32 bits of the send work
    /// request's id), handed to the receiver with the receive completion. MPI over UD/UC puts
    /// its frame sequence number here, as MVAPICH2 does in its packet header.
    pub imm: u32,
}

impl Routable for IbPacket {
    #[inline]
    fn dst(&self) -> NodeId {
        self.dst
    }
    #[inline]
    fn wire_bytes(&self) -> u32 {
        self.wire
    }
    /// The connection: `IbHosts::connect` creates a connection's two queue pairs as 2k and 2k+1,
    /// so both directions hash alike and consecutive connections take consecutive links (the
    /// destination QP alone is always odd one way and even the other, which left half the links
    /// of an even count unused).
    #[inline]
    fn flow(&self) -> u32 {
        self.qp >> 1
    }
}

impl Datagram for IbPacket {
    /// Cross traffic's datagram: `qp` holds its source (and so its flow).
    fn datagram(_src: NodeId, dst: NodeId, source: u32, wire_bytes: u32) -> Self {
        IbPacket {
            dst,
            qp: source,
            kind: Kind::Datagram,
            op: Op::Send,
            psn: 0,
            len: wire_bytes,
            first: true,
            last: true,
            ack_req: false,
            wire: wire_bytes,
            imm: 0,
        }
    }

    fn source(&self) -> u32 {
        self.qp
    }
}
