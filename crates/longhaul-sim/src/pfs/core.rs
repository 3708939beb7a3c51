//! The file system without a network: writer threads producing block RPCs through their page
//! pool, the RPCs a connection (client node to server node) has outstanding, and the server
//! executing them into the [`Ledger`]. Nothing here knows how bytes move or how long they take:
//! the fluid driver ([`super::fluid`]) moves them over max-min shares of the links, and a
//! packet-level adapter can move them as RDMA writes and sends over a `crate::transport`.
//!
//! One connection per node pair (GPFS's verbs connections are per node pair, not per thread):
//! it holds every RPC sent and not yet replied to, with what the network did to it, so that a
//! failure knows what to retransmit (RC, the same connection) or resend (a new connection).

use super::layout::Layout;
use super::ledger::{Delivery, Ledger};

/// One block RPC: a write of `bytes` of block `seq` of `writer` to `lun` on `server`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rpc {
    pub writer: u32,
    pub seq: u64,
    pub lun: u32,
    pub server: u32,
}

/// An application thread writing its files block after block (a reader reads them so).
#[derive(Debug, Clone)]
pub struct Writer {
    pub client: u32,
    /// Index over all clients' writers.
    pub index: u32,
    /// The next block to send.
    pub seq: u64,
    /// LUNs of the current file, in stripe order.
    pub targets: Vec<u32>,
}

impl Writer {
    pub fn new(client: u32, index: u32, layout: &mut Layout) -> Self {
        let targets = layout.new_file(index, 0);
        Writer { client, index, seq: 0, targets }
    }

    /// The next block's RPC; `true` when it starts a new file (a create comes first: the caller
    /// charges its metadata round trips before sending).
    pub fn next_rpc(&mut self, layout: &mut Layout) -> (Rpc, bool) {
        let new_file = self.seq > 0 && self.seq.is_multiple_of(layout.blocks_per_file);
        if new_file {
            self.targets = layout.new_file(self.index, self.seq / layout.blocks_per_file);
        }
        let lun = layout.lun_of(&self.targets, self.seq);
        let rpc = Rpc { writer: self.index, seq: self.seq, lun, server: layout.server_of(lun) };
        self.seq += 1;
        (rpc, new_file)
    }

    /// Servers the current file's blocks go to.
    pub fn servers(&self, layout: &Layout) -> Vec<u32> {
        let mut s: Vec<u32> = self.targets.iter().map(|&l| layout.server_of(l)).collect();
        s.sort_unstable();
        s.dedup();
        s
    }
}

/// What the network did to an outstanding RPC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Sent; its request is on its way.
    OnWire,
    /// The request was lost with a link: not executed.
    RequestLost,
    /// Executed by the server; its reply is on its way.
    Executed,
    /// Executed, but the reply was lost with a link.
    ReplyLost,
}

#[derive(Debug, Clone, Copy)]
pub struct Outstanding {
    pub rpc: Rpc,
    pub fate: Fate,
    /// Bumped on every retransmission or resend: a stale arrival is ignored.
    pub attempt: u32,
    pub how: Delivery,
    /// When the block started on the wire (for its latency).
    pub started_s: f64,
}

/// One client node's connection to one server node.
#[derive(Debug, Clone, Default)]
pub struct Connection {
    pub outstanding: Vec<Outstanding>,
}

impl Connection {
    pub fn send(&mut self, rpc: Rpc, started_s: f64) {
        self.outstanding.push(Outstanding { rpc, fate: Fate::OnWire, attempt: 0, how: Delivery::Rc, started_s });
    }

    pub fn find(&mut self, writer: u32, seq: u64, attempt: u32) -> Option<&mut Outstanding> {
        self.outstanding.iter_mut().find(|o| o.rpc.writer == writer && o.rpc.seq == seq && o.attempt == attempt)
    }

    /// The server executes an arrived request.
    pub fn execute(o: &mut Outstanding, ledger: &mut Ledger) {
        ledger.store(o.rpc.writer, o.rpc.seq, o.rpc.lun, o.how);
        o.fate = Fate::Executed;
    }

    /// The client takes the reply: the block is acknowledged and leaves the connection.
    pub fn complete(&mut self, writer: u32, seq: u64, ledger: &mut Ledger) -> Option<Outstanding> {
        let i = self.outstanding.iter().position(|o| o.rpc.writer == writer && o.rpc.seq == seq)?;
        ledger.ack(writer, seq);
        Some(self.outstanding.swap_remove(i))
    }

    /// RC's retransmission once the path works again: what was lost goes again on the same
    /// connection (a request executes once; a lost reply is sent again). Returns what to resend.
    pub fn retransmit(&mut self) -> Vec<Outstanding> {
        self.again(Delivery::Rc, |f| matches!(f, Fate::RequestLost | Fate::ReplyLost))
    }

    /// A new connection after a QP error: the file system cannot know which requests executed,
    /// so it resends every outstanding one (an executed one is written again at its address).
    pub fn resend_all(&mut self) -> Vec<Outstanding> {
        self.again(Delivery::Resend, |_| true)
    }

    fn again(&mut self, how: Delivery, pick: impl Fn(Fate) -> bool) -> Vec<Outstanding> {
        let mut out = Vec::new();
        for o in self.outstanding.iter_mut().filter(|o| pick(o.fate)) {
            o.attempt += 1;
            if how == Delivery::Resend {
                o.how = Delivery::Resend;
                o.fate = Fate::OnWire;
            } else if o.fate == Fate::RequestLost {
                o.fate = Fate::OnWire;
            } else {
                o.fate = Fate::Executed;
            }
            out.push(*o);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pfs::params::Variant;

    #[test]
    fn a_new_connection_resends_everything_and_rc_only_what_was_lost() {
        let mut layout = Layout::new(Variant::Gpfs, 2, 4, 1, 8);
        let mut w = Writer::new(0, 0, &mut layout);
        let mut ledger = Ledger::new(1);
        let mut conn = Connection::default();
        for _ in 0..3 {
            let (rpc, _) = w.next_rpc(&mut layout);
            conn.send(rpc, 0.0);
        }
        Connection::execute(&mut conn.outstanding[0], &mut ledger);
        conn.outstanding[0].fate = Fate::ReplyLost;
        conn.outstanding[1].fate = Fate::RequestLost;
        let again: Vec<Fate> = conn.retransmit().iter().map(|o| o.fate).collect();
        assert_eq!(again, vec![Fate::Executed, Fate::OnWire]);
        assert_eq!(conn.resend_all().len(), 3);
        Connection::execute(&mut conn.outstanding[0], &mut ledger);
        assert_eq!(ledger.rewrites, 1);
        assert!(conn.complete(0, 0, &mut ledger).is_some() && ledger.violation.is_none());
    }

    #[test]
    fn a_writer_opens_a_new_file_every_blocks_per_file() {
        let mut layout = Layout::new(Variant::Gpfs, 2, 4, 1, 2);
        let mut w = Writer::new(0, 1, &mut layout);
        let news: Vec<bool> = (0..5).map(|_| w.next_rpc(&mut layout).1).collect();
        assert_eq!(news, vec![false, false, true, false, true]);
    }
}
