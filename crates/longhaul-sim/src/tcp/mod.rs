//! TCP over long-haul links: segments, the sender and receiver state machines, congestion
//! control behind one trait, the link layers TCP/IP runs on (IPoIB datagram and connected mode,
//! 10GigE LAN/WAN PHY, SONET OC-192), cross traffic, and the hosts that plug all of it into the
//! fabric through [`crate::net::Endpoints`].
//!
//! Layers, each readable alone: [`segment`] (what travels) → [`link`] (how many bytes it costs on
//! the wire) → [`rtt`], [`cc`] → [`sender`], [`receiver`] → [`flow`] (one direction and its
//! timer) → [`hosts`] (CPU costs, fragmentation,
//! cross traffic) → [`path`] (the topology) → [`scenario`] (plain data, validated once).
//!
//! Modelling choices that hold everywhere:
//! - bulk transfer in whole segments: sequence numbers count MSS-sized segments (64-bit, so no
//!   wrap-around), which is what an iperf stream sends;
//! - the kernel socket buffers are modelled by their effect (in-flight limit at the sender,
//!   advertised window at the receiver), not by skb accounting;
//! - host stack costs are one CPU timeline per core, charged per packet and per byte.

pub(crate) mod cc;
pub(crate) mod flow;
pub(crate) mod hosts;
pub(crate) mod link;
pub(crate) mod params;
pub(crate) mod path;
pub mod receiver;
pub(crate) mod rtt;
pub(crate) mod scenario;
pub(crate) mod segment;
pub(crate) mod sender;
pub(crate) mod stream;

pub use params::WindowSpec;
pub(crate) use scenario::TcpResolved;
pub use scenario::TcpScenario;
pub(crate) use segment::TcpPacket;
