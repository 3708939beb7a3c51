//! The invariant of a reliable file system, kept as the run goes: every block acknowledged to a
//! client is on a server, exactly once. A block is identified by its writer and its sequence
//! number in the writer's stream; it has one home (its LUN, fixed by the layout).
//!
//! What may happen to a block: the server executes it (stored); RC's retransmission after a
//! link failure never executes it again (the responder drops a duplicate PSN); the file system's
//! resend on a new connection after a QP error executes it again at the same address (an
//! idempotent rewrite, counted); the client sees its reply once (acknowledged). A violation is a
//! bug in the model and is reported, not hidden.

/// Per block: the LUN it was stored on + 1 (0: not stored), and flags.
#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    lun_plus_one: u32,
    acked: bool,
}

#[derive(Debug, Default)]
pub struct Ledger {
    /// Per writer, per sequence number.
    writers: Vec<Vec<Entry>>,
    pub stored: u64,
    pub acked: u64,
    /// Executions again at the same address by a resend after a QP error.
    pub rewrites: u64,
    /// The first violation seen, in words.
    pub violation: Option<String>,
}

/// How a block was delivered to its server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// On the original connection (or RC's retransmission on it): executed at most once.
    Rc,
    /// Resent by the file system on a new connection: may execute again.
    Resend,
}

impl Ledger {
    pub fn new(writers: usize) -> Self {
        Ledger { writers: vec![Vec::new(); writers], ..Default::default() }
    }

    fn entry(&mut self, writer: u32, seq: u64) -> &mut Entry {
        let v = &mut self.writers[writer as usize];
        if v.len() <= seq as usize {
            v.resize(seq as usize + 1, Entry::default());
        }
        &mut v[seq as usize]
    }

    fn violate(&mut self, what: String) {
        self.violation.get_or_insert(what);
    }

    /// The server executed block `seq` of `writer` on `lun`.
    pub fn store(&mut self, writer: u32, seq: u64, lun: u32, how: Delivery) {
        let e = *self.entry(writer, seq);
        if e.lun_plus_one == 0 {
            self.entry(writer, seq).lun_plus_one = lun + 1;
            self.stored += 1;
        } else if e.lun_plus_one != lun + 1 {
            self.violate(format!(
                "writer {writer} block {seq}: stored on LUN {} and again on LUN {lun}",
                e.lun_plus_one - 1
            ));
        } else if how == Delivery::Rc {
            self.violate(format!("writer {writer} block {seq}: executed twice on one RC connection"));
        } else {
            self.rewrites += 1;
        }
    }

    /// The client received the reply of block `seq` of `writer`.
    pub fn ack(&mut self, writer: u32, seq: u64) {
        let e = *self.entry(writer, seq);
        if e.lun_plus_one == 0 {
            self.violate(format!("writer {writer} block {seq}: acknowledged but on no server"));
        } else if e.acked {
            self.violate(format!("writer {writer} block {seq}: acknowledged twice"));
        } else {
            self.entry(writer, seq).acked = true;
            self.acked += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catches_an_ack_without_a_store_and_a_double_execution() {
        let mut l = Ledger::new(1);
        l.ack(0, 3);
        assert!(l.violation.as_deref().unwrap().contains("on no server"));
        let mut l = Ledger::new(1);
        l.store(0, 0, 2, Delivery::Rc);
        l.store(0, 0, 2, Delivery::Resend);
        l.ack(0, 0);
        assert!(l.violation.is_none() && l.rewrites == 1 && l.acked == 1);
        l.store(0, 0, 2, Delivery::Rc);
        assert!(l.violation.as_deref().unwrap().contains("twice"));
        let mut l = Ledger::new(1);
        l.store(0, 0, 2, Delivery::Rc);
        l.store(0, 0, 3, Delivery::Resend);
        assert!(l.violation.as_deref().unwrap().contains("again on LUN 3"));
    }
}
