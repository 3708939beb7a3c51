//! Network mechanisms: link rates and encodings, ports with credit-based flow control and
//! drop-tail queues, wires with propagation delay, and the fabric that routes between hosts
//! through switches and range extenders, and constant-rate cross traffic sharing them. Protocol-agnostic: transports plug in via `Endpoints`.

pub(crate) mod cross;
pub(crate) mod devices;
pub(crate) mod fabric;
pub(crate) mod flow;
pub(crate) mod port;
pub(crate) mod rate;

pub use cross::CrossSpec;
pub(crate) use cross::{CrossHosts, CrossResolved, CrossSource, Datagram};
pub(crate) use devices::{ExtenderParams, SwitchParams};
pub(crate) use fabric::{Endpoints, Fabric, LinkChange, NetEvent, NodeId, NodeKind, Pull, Routable};
pub(crate) use port::{PortId, PortParams};
pub use rate::WanFraming;
pub(crate) use rate::{Generation, IbLink, Rate};
