//! The connections' side of a link failure: RC retries on a stalled connection, the subnet
//! manager's steps changing the routes, automatic path migration (APM) or the QP error after
//! the last retry, GPFS's reconnect and resend, and the lease that expels a client with no path.
//!
//! APM (IBA vol. 1 17.2.8; the Linux soft-RC drivers' `restart_rc`, qib/hfi1/rdmavt): a QP
//! loaded with an alternate path and armed does not fail when its retries run out on the
//! primary path: it migrates (IBV_EVENT_PATH_MIG to software), resends on the alternate path
//! with its retry count reloaded, and fails only if those run out too. Migrated, it stays on
//! the alternate path, not re-armed: the model assumes no software reloads another alternate
//! path (re-arming needs Modify QP to REARM). A reconnect's new QP is armed afresh.

use super::{at, Ev, Model, Qp};
use crate::ib::subnet_manager::FabricStep;
use crate::pfs::core::Fate;

impl Model<'_> {
    /// A connection lost a packet: RC starts retrying.
    pub(super) fn stall(&mut self, conn: usize) {
        if self.qps[conn] == Qp::Up {
            self.start_retrying(conn);
            self.solve();
        }
    }

    fn start_retrying(&mut self, conn: usize) {
        let now = self.now_s();
        let gen = self.set_qp(conn, Qp::Stalled { since_s: now });
        let error_at = now + self.r.params.failover.retries_exhausted_s();
        self.q.schedule(at(error_at), Ev::QpError { qp: conn as u32, gen });
    }

    /// A writer with data for a server whose path is dead sends its next block into it: the
    /// connection loses it and starts retrying (even when nothing happened to be in flight when
    /// the link went).
    pub(super) fn stall_dead_paths(&mut self) {
        let servers = self.r.servers as usize;
        for i in 0..self.threads.len() {
            let th = &self.threads[i];
            let c = th.w.client as usize;
            if th.creating || self.expelled[c] {
                continue;
            }
            for s in th.w.servers(&self.layout) {
                let conn = c * servers + s as usize;
                if self.qps[conn] == Qp::Up && !self.alive(conn) {
                    self.start_retrying(conn);
                }
            }
        }
    }

    /// A connection's new state; returns its generation (for its timers).
    fn set_qp(&mut self, qp: usize, state: Qp) -> u32 {
        self.qps[qp] = state;
        self.qp_gen[qp] = self.qp_gen[qp].wrapping_add(1);
        self.qp_gen[qp]
    }

    /// Do both links of the connection's path (primary, or alternate once migrated) carry packets?
    fn alive(&self, conn: usize) -> bool {
        let (to_server, to_client) = self.path(conn);
        let ok = |l: Option<usize>| l.is_some_and(|k| self.routes.active[k]);
        ok(to_server) && ok(to_client)
    }

    /// APM armed: configured, an alternate path loaded (a second LID: LMC >= 1), not yet used.
    fn armed(&self, conn: usize) -> bool {
        let f = &self.r.params.failover;
        f.apm && f.lmc > 0 && !self.migrated[conn]
    }

    fn on_sm_done(&mut self) {
        self.routes.reroute();
        let f = &self.r.params.failover;
        let timeout = f.ack_timeout_s();
        let now = self.now_s();
        for qp in 0..self.qps.len() {
            if let Qp::Stalled { since_s } = self.qps[qp] {
                let gen = self.qp_gen[qp];
                // RC retries at since + j x timeout; the first after the new routes gets through.
                let j = ((now - since_s) / timeout).ceil().max(1.0);
                if j <= f.retry_count as f64 && self.alive(qp) {
                    self.q.schedule(at(since_s + j * timeout), Ev::QpRetry { qp: qp as u32, gen });
                }
            }
        }
        self.solve();
    }

    pub(super) fn on_retry(&mut self, qp: usize, gen: u32) {
        if self.qp_gen[qp] != gen || !matches!(self.qps[qp], Qp::Stalled { .. }) || !self.alive(qp) {
            return;
        }
        self.recover(qp);
    }

    /// A retry got through: the connection is up and resends what it lost.
    fn recover(&mut self, qp: usize) {
        self.set_qp(qp, Qp::Up);
        self.counts[0] += 1;
        for o in self.conns[qp].retransmit() {
            if o.fate == Fate::OnWire {
                self.arrive_later(qp, o.rpc.writer, o.rpc.seq, o.attempt);
            } else {
                self.reply_later(qp, o.rpc.writer, o.rpc.seq, o.attempt, 0.0);
            }
        }
        self.solve();
    }

    pub(super) fn on_error(&mut self, qp: usize, gen: u32) {
        let Qp::Stalled { since_s } = self.qps[qp] else { return };
        if self.qp_gen[qp] != gen {
            return;
        }
        if self.armed(qp) {
            self.migrated[qp] = true;
            if self.alive(qp) {
                self.recover(qp);
            } else {
                self.start_retrying(qp);
            }
            return;
        }
        self.counts[1] += 1;
        let gen = self.set_qp(qp, Qp::Failed { since_s });
        let t = self.now_s() + self.r.params.failover.reconnect_s;
        self.q.schedule(at(t), Ev::Reconnect { qp: qp as u32, gen });
    }

    pub(super) fn on_reconnect(&mut self, qp: usize, gen: u32) {
        let Qp::Failed { since_s } = self.qps[qp] else { return };
        if self.qp_gen[qp] != gen {
            return;
        }
        let now = self.now_s();
        let f = &self.r.params.failover;
        self.migrated[qp] = false;
        if self.alive(qp) {
            self.set_qp(qp, Qp::Up);
            self.counts[2] += 1;
            for o in self.conns[qp].resend_all() {
                self.arrive_later(qp, o.rpc.writer, o.rpc.seq, o.attempt);
            }
            self.solve();
        } else if now - since_s >= f.failure_detection_s {
            self.expelled[qp / self.r.servers as usize] = true;
            self.solve();
        } else {
            self.q.schedule(at(now + f.reconnect_s), Ev::Reconnect { qp: qp as u32, gen });
        }
    }

    pub(super) fn on_fabric(&mut self, i: usize) {
        match self.r.fabric_steps[i].1 {
            FabricStep::Down(k) => {
                self.routes.unplug(k);
                self.solve();
            }
            // Active again; the reroute that spreads routes over it comes with it.
            FabricStep::Up(k) => self.routes.plug(k),
            FabricStep::Reroute => self.on_sm_done(),
        }
    }
}
