//! InfiniBand: packet headers, adapter profiles, queue pairs and the RC / UC / UD transports
//! with send/recv, RDMA write and RDMA read.

mod active;
pub(crate) mod hca;
pub(crate) mod headers;
pub(crate) mod hosts;
pub(crate) mod packet;
pub(crate) mod qp;
pub(crate) mod qp_table;
pub(crate) mod subnet_manager;
pub mod timer;

pub(crate) use hca::HcaProfile;
pub(crate) use headers::Op;
pub(crate) use hosts::{Completion, CompletionKind, IbHosts, WcStatus};
pub(crate) use packet::IbPacket;
pub(crate) use qp::Transport;
