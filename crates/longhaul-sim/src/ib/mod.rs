//! InfiniBand: packet headers, adapter profiles, queue pairs and the RC / UC / UD transports
//! with send/recv, RDMA write and RDMA read.

mod active;
pub mod hca;
pub mod headers;
pub mod hosts;
pub mod packet;
pub mod qp;
pub mod subnet_manager;
pub mod timer;

pub use hca::HcaProfile;
pub use headers::Op;
pub use hosts::{Completion, CompletionKind, IbHosts, IbStats, WcStatus};
pub use packet::IbPacket;
pub use qp::Transport;
pub use timer::AckTimerRule;
