//! The file system's RPCs on the TCP model, over IPoIB connected mode on the same IB path as
//! the verbs model: one TCP connection per client-server node pair (GPFS's daemon-to-daemon
//! socket when verbsRdma is off). The data travels on the socket with its message: a write's
//! block behind the request header, a read's behind the reply header; a message is whole at the
//! far end when TCP has delivered it in order and the receiving core has copied it out.

use super::{Arrival, Channel, Cx, NSD_HEADER_BYTES};
use crate::net::{Fabric, NodeId};
use crate::pfs::record::PfsRecord;
use crate::pfs::scenario::PfsResolved;
use crate::scenario::{ModelScenario, Resolved, ScenarioError};
use crate::tcp::hosts::{TcpHosts, TcpOutput};
use crate::tcp::scenario::{TcpPathSpec, TcpSpec};
use crate::tcp::stream::Frame;
use crate::tcp::{TcpPacket, TcpResolved, TcpScenario};
use crate::topology;

/// TCP over IPoIB connected mode on the verbs model's path (its testbed, distance, extenders
/// and parallel links), with the TCP model's defaults for the stack and congestion control.
pub fn resolve(verbs: &Resolved) -> Result<TcpResolved, ScenarioError> {
    let mut t = TcpScenario {
        seed: verbs.seed,
        testbed: Some(verbs.testbed.clone()),
        stack: None,
        link: "ipoib-cm".into(),
        path: TcpPathSpec { delay_us: Some(verbs.delay_us), fibre_km: Some(verbs.fibre_km), ..TcpPathSpec::default() },
        tcp: TcpSpec::default(),
        cross: None,
    }
    .resolve()?;
    t.ib = Some(verbs.clone());
    Ok(t)
}

pub struct Tcp {
    /// The first connection's client-to-server direction (conn k: first + 2k, and + 1 back).
    first_dir: u32,
    nodes: Vec<(NodeId, NodeId)>,
    frames: Vec<Frame>,
}

impl Channel for Tcp {
    type Net = TcpHosts;

    fn request(&mut self, cx: &mut Cx<'_, TcpHosts>, conn: u32, tag: u32, data: u32) {
        let bytes = (NSD_HEADER_BYTES + data) as u64;
        cx.net.write(cx.now, self.first_dir + 2 * conn, Frame { tag: tag as u64, bytes });
        cx.kick(self.nodes[conn as usize].0);
    }

    fn reply(&mut self, cx: &mut Cx<'_, TcpHosts>, conn: u32, tag: u32, data: u32) {
        let bytes = (NSD_HEADER_BYTES + data) as u64;
        cx.net.write(cx.now, self.first_dir + 2 * conn + 1, Frame { tag: tag as u64, bytes });
        cx.kick(self.nodes[conn as usize].1);
    }

    fn on_output(&mut self, out: TcpOutput, cx: &mut Cx<'_, TcpHosts>, arrived: &mut Vec<Arrival>) {
        let TcpOutput::Ready { dir, delivered, at } = out else { return };
        let k = dir - self.first_dir;
        let conn = k / 2;
        cx.net.take_frames(dir, delivered, &mut self.frames);
        for f in self.frames.drain(..) {
            let tag = f.tag as u32;
            arrived.push(if k.is_multiple_of(2) {
                Arrival::Request { conn, tag, at }
            } else {
                Arrival::Reply { conn, tag, at }
            });
        }
    }
}

pub fn run(r: &PfsResolved, t: &TcpResolved) -> PfsRecord {
    let ib = t.ib.as_ref().expect("IPoIB runs on the verbs path");
    let mut fabric: Fabric<TcpPacket> = Fabric::new(r.seed);
    let pair = topology::build(ib, &mut fabric, r.clients.max(r.servers) as usize);
    let mut tcp = TcpHosts::new(fabric.nodes.len(), t.framing(), &t.stack, 0.0);
    let mut nodes = Vec::new();
    let mut first_dir = None;
    for c in 0..r.clients as usize {
        for s in 0..r.servers as usize {
            let (client, server) = (pair.hosts_a[c], pair.hosts_b[s]);
            // Opened at mount time, before the measured traffic.
            let (d, _) = tcp.connect(client, server, &t.params, t.cc, true, false);
            first_dir.get_or_insert(d);
            nodes.push((client, server));
        }
    }
    let channel = Tcp { first_dir: first_dir.unwrap_or(0), nodes, frames: Vec::new() };
    super::drive(r, super::world(r, fabric, tcp, channel), &pair.wan)
}
