//! The reading application and the NFS client, transport-free: IOzone's read test with T
//! threads, each reading whole records in turn; the client turns them into rsize READ calls and
//! holds each until a slot (TCP) or credit (RDMA) is free. How reads become calls is the
//! thread's [`ReadPath`]: through the page cache (IOzone's default), the client's readahead keeps
//! a window of READs of the thread's file outstanding whatever the record; with O_DIRECT
//! (IOzone -I) a record's READs go at once and the thread starts its next record once every
//! READ of the current one has been answered.
//!
//! The threads read disjoint records of the file (thread i: records i, i + T, ...), so the
//! aggregate is IOzone's throughput-mode figure. The first quarter of the bytes is a warm-up
//! that is not measured: IOzone reads over a mount whose connection its write test has already
//! used, so its windows have grown; the model's connections start cold. Whether a quarter was
//! enough shows in [`ReadClient::drift_pct`]: the rate of the measured part's second half
//! against its first (a TCP connection still in slow start at a long delay reads faster and
//! faster).

use std::collections::VecDeque;

use super::params::NfsParams;
use crate::engine::Time;

/// One READ call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rpc {
    pub id: u64,
    pub thread: u32,
    pub bytes: u32,
}

/// How a thread's reads become READ calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadPath {
    /// O_DIRECT: a record's READs of `read_bytes` (rsize, or the record if smaller) at once, the
    /// next record when all are answered.
    Direct { read_bytes: u32 },
    /// Buffered: readahead keeps up to `reads` READs of `read_bytes` each of the thread's file
    /// outstanding (a sliding window; the kernel's on-demand readahead issues it in window-sized
    /// batches).
    Readahead { reads: u32, read_bytes: u32 },
}

impl ReadPath {
    /// How a thread reading `record_bytes` at a time reads with `params`' rsize and readahead.
    pub fn of(params: &NfsParams, direct_io: bool, record_bytes: u64) -> Self {
        if direct_io {
            ReadPath::Direct { read_bytes: record_bytes.min(params.rsize_bytes as u64) as u32 }
        } else {
            let (reads, read_bytes) = params.readahead_reads(record_bytes);
            ReadPath::Readahead { reads, read_bytes }
        }
    }

    /// Bytes of each READ.
    pub fn read_bytes(&self) -> u32 {
        match *self {
            ReadPath::Direct { read_bytes } | ReadPath::Readahead { read_bytes, .. } => read_bytes,
        }
    }

    /// READs the readahead keeps outstanding (0 with O_DIRECT).
    pub fn readahead_reads(&self) -> u32 {
        match *self {
            ReadPath::Direct { .. } => 0,
            ReadPath::Readahead { reads, .. } => reads,
        }
    }

    /// Bytes a thread reading `record_bytes` at a time has outstanding at most.
    pub fn per_thread_bytes(&self, record_bytes: u64) -> u64 {
        match *self {
            ReadPath::Direct { .. } => record_bytes,
            ReadPath::Readahead { reads, read_bytes } => reads as u64 * read_bytes as u64,
        }
    }
}

pub struct ReadClient {
    path: ReadPath,
    record: u64,
    slots: u32,
    /// Bytes not yet handed to a thread as a record.
    unread: u64,
    /// READs per thread still unanswered in its current record.
    open: Vec<u32>,
    queued: VecDeque<Rpc>,
    in_flight: u32,
    next_id: u64,
    pub bytes_done: u64,
    pub rpcs_done: u64,
    warmup_bytes: u64,
    /// When the warm-up ended, and the bytes read by then.
    mark: Option<(Time, u64)>,
    /// The same halfway through the measured bytes.
    half_bytes: u64,
    half_mark: Option<(Time, u64)>,
    last_reply: Time,
}

impl ReadClient {
    /// `total_bytes`: what the run reads (whole records).
    pub fn new(threads: u32, record_bytes: u64, slots: u32, total_bytes: u64, path: ReadPath) -> Self {
        ReadClient {
            path,
            record: record_bytes,
            slots,
            unread: total_bytes,
            open: vec![0; threads as usize],
            queued: VecDeque::new(),
            in_flight: 0,
            next_id: 0,
            bytes_done: 0,
            rpcs_done: 0,
            warmup_bytes: total_bytes / 4,
            mark: None,
            half_bytes: total_bytes / 4 + (total_bytes - total_bytes / 4) / 2,
            half_mark: None,
            last_reply: 0,
        }
    }

    /// Queue `len` bytes of READs of at most `read_bytes` for `thread`.
    fn queue_reads(&mut self, thread: u32, len: u64, read_bytes: u32) {
        self.unread -= len;
        let mut left = len;
        while left > 0 {
            let bytes = left.min(read_bytes as u64) as u32;
            left -= bytes as u64;
            self.queued.push_back(Rpc { id: self.next_id, thread, bytes });
            self.next_id += 1;
            self.open[thread as usize] += 1;
        }
    }

    /// The READs `thread` issues now: its next record (O_DIRECT, once the last is answered), or
    /// as many as refill its readahead window.
    fn refill(&mut self, thread: u32) {
        let t = thread as usize;
        match self.path {
            ReadPath::Direct { read_bytes } if self.open[t] == 0 && self.unread > 0 => {
                self.queue_reads(thread, self.record.min(self.unread), read_bytes);
            }
            ReadPath::Direct { .. } => {}
            ReadPath::Readahead { reads, read_bytes } => {
                while self.open[t] < reads && self.unread > 0 {
                    self.queue_reads(thread, self.unread.min(read_bytes as u64), read_bytes);
                }
            }
        }
    }

    /// Calls that may go now (a free slot each).
    fn release(&mut self) -> Vec<Rpc> {
        let mut out = Vec::new();
        while self.in_flight < self.slots {
            let Some(rpc) = self.queued.pop_front() else { break };
            self.in_flight += 1;
            out.push(rpc);
        }
        out
    }

    /// Every thread opens its first record; returns the calls to send.
    pub fn start(&mut self) -> Vec<Rpc> {
        for t in 0..self.open.len() as u32 {
            self.refill(t);
        }
        self.release()
    }

    /// The reply to `rpc` is complete at `at`: frees its slot; returns the calls to send.
    pub fn on_reply(&mut self, rpc: Rpc, at: Time) -> Vec<Rpc> {
        if self.mark.is_none() && self.bytes_done >= self.warmup_bytes {
            self.mark = Some((self.last_reply, self.bytes_done));
        }
        if self.half_mark.is_none() && self.bytes_done >= self.half_bytes {
            self.half_mark = Some((self.last_reply, self.bytes_done));
        }
        // A reply complete at the very instant of a mark (replies TCP delivered in one segment)
        // arrived before it: it counts on the mark's side, or a short run would measure its bytes
        // over no time.
        for (t, b) in [&mut self.mark, &mut self.half_mark].into_iter().flatten() {
            if *t == at {
                *b += rpc.bytes as u64;
            }
        }
        self.in_flight -= 1;
        self.bytes_done += rpc.bytes as u64;
        self.rpcs_done += 1;
        self.last_reply = self.last_reply.max(at);
        self.open[rpc.thread as usize] -= 1;
        self.refill(rpc.thread);
        self.release()
    }

    /// Bytes read after the warm-up, and the time they took.
    pub fn measured(&self) -> (u64, Time) {
        let (t0, b0) = self.mark.unwrap_or((0, 0));
        (self.bytes_done - b0, self.last_reply - t0)
    }

    /// How much faster (percent) the second half of the measured bytes was read than the first;
    /// None when a half took no time (too few replies to tell).
    pub fn drift_pct(&self) -> Option<f64> {
        let ((t0, b0), (t1, b1)) = (self.mark?, self.half_mark?);
        let (early, late) = (t1.checked_sub(t0)?, self.last_reply.checked_sub(t1)?);
        if early == 0 || late == 0 {
            return None;
        }
        let rate = |bytes: u64, t: Time| bytes as f64 / t as f64;
        Some(100.0 * (rate(self.bytes_done - b1, late) / rate(b1 - b0, early) - 1.0))
    }

    pub fn done(&self) -> bool {
        self.unread == 0 && self.in_flight == 0 && self.queued.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_bound_the_calls_in_flight_and_every_byte_is_read_once() {
        for path in
            [ReadPath::Direct { read_bytes: 32 * 1024 }, ReadPath::Readahead { reads: 15, read_bytes: 32 * 1024 }]
        {
            let mut c = ReadClient::new(4, 256 * 1024, 16, 4 << 20, path);
            let mut pending: VecDeque<Rpc> = c.start().into();
            assert_eq!(pending.len(), 16);
            while let Some(r) = pending.pop_front() {
                pending.extend(c.on_reply(r, 1));
                assert!(pending.len() <= 16);
            }
            assert!(c.done());
            assert_eq!(c.bytes_done, 4 << 20);
            assert_eq!(c.rpcs_done, 128);
        }
    }

    #[test]
    fn one_thread_keeps_a_record_or_a_readahead_window_outstanding() {
        let outstanding = |path| {
            let mut c = ReadClient::new(1, 256 * 1024, 64, 4 << 20, path);
            let first = c.start();
            let after_one = c.on_reply(first[0], 1);
            (first.len(), after_one.len())
        };
        // O_DIRECT: a record's 8 READs, nothing more until all 8 are answered.
        assert_eq!(outstanding(ReadPath::Direct { read_bytes: 32 * 1024 }), (8, 0));
        // Readahead: 15 READs, each answer replaced at once.
        assert_eq!(outstanding(ReadPath::Readahead { reads: 15, read_bytes: 32 * 1024 }), (15, 1));
    }
}
