//! The intra-node path: two ranks on one node exchange messages through a shared-memory buffer
//! (MVAPICH2's SMP channel): the sender copies in, the receiver copies out, in chunks of
//! `smp_chunk_bytes` so that the two copies overlap for long messages. Each copy runs at one
//! core's copy rate and loads the node's memory bus (a read and a write per byte), which is what
//! makes intra-node bandwidth depend on the memory system ([S2]'s balance ratio).
//!
//! Modelled per message, not per chunk: the receiver's copy cannot finish before the sender's
//! last chunk is in the buffer plus the time to copy that chunk out.

use super::engine::{Channel, Cx, Ev, Mpi};
use crate::engine::time::from_ns;
use crate::engine::Time;

impl<C: Channel> Mpi<C> {
    fn copy_time(&self, bytes: u64) -> Time {
        (bytes as f64 / (self.node.copy_MBps.min(self.node.mem_MBps / 4.0) * 1e6) * 1e12) as Time
    }

    /// The sender copies message `m` into the shared buffer from `t`.
    pub fn shm_send(&mut self, cx: &mut Cx<C>, m: u32, t: Time) {
        self.stats.shm += 1;
        let (src, bytes) = (self.msgs[m as usize].src, self.msgs[m as usize].bytes);
        let start = self.ranks[src as usize].cpu_free.max(t);
        let end = self.copy(src, t, bytes);
        let lat = from_ns(self.node.shm_latency_ns);
        let first = self.copy_time(bytes.min(self.smp_chunk_bytes));
        // The last chunk is in the buffer at `end`; the receiver may start after the first.
        self.msgs[m as usize].data_at = end + lat;
        cx.schedule(start + first + lat, Ev::Shm(m));
        self.complete_send(cx, m, end);
    }

    /// The first chunk of `m` is visible to the receiver.
    pub fn shm_arrived(&mut self, cx: &mut Cx<C>, m: u32, now: Time) {
        let dst = self.msgs[m as usize].dst;
        let t = self.cpu(dst, now, 0);
        self.arrived(cx, m, t);
    }

    /// The receive is posted and the data is (being) written: copy it out.
    pub fn shm_matched(&mut self, cx: &mut Cx<C>, m: u32, t: Time) {
        let (dst, bytes, data_at) = {
            let x = &self.msgs[m as usize];
            (x.dst, x.bytes, x.data_at)
        };
        let last_chunk = self.copy_time(bytes.min(self.smp_chunk_bytes));
        let end = self.copy(dst, t, bytes).max(data_at + last_chunk);
        self.ranks[dst as usize].cpu_free = end;
        self.complete_recv(cx, m, end);
    }
}
