//! Network mechanisms: link rates and encodings, ports with credit-based flow control and
//! drop-tail queues, wires with propagation delay, and the fabric that routes between hosts
//! through switches and range extenders, and constant-rate cross traffic sharing them. Protocol-agnostic: transports plug in via `Endpoints`.

pub mod cross;
pub mod devices;
pub mod fabric;
pub mod flow;
pub mod port;
pub mod rate;

pub use cross::{CrossHosts, CrossResolved, CrossSource, CrossSpec, Datagram};
pub use devices::{ExtenderParams, SwitchParams};
pub use fabric::{Endpoints, Fabric, LinkChange, NetEvent, NodeId, NodeKind, Pull, Routable};
pub use port::{PortId, PortParams, PortStats};
pub use rate::{Generation, IbLink, Rate, WanFraming};
