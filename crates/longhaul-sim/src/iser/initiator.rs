//! The initiator's side, transport-free: the workload cut into SCSI commands (each I/O of
//! `block_bytes` split at the largest command the initiator issues), at most `queue_depth` of
//! them outstanding, the next one issued when a response frees a slot (an asynchronous I/O
//! stream such as fio with a deep iodepth). Throughput is every byte over the time from the
//! first command to the last response, as fio reports a job's bandwidth: when the queue, not
//! the link, is the limit, the responses come in rounds one round trip apart and this is exact
//! (a warm-up cut inside a round would count part of it over no time); when the link is, it
//! is low by one round trip in the whole run (raise `total_bytes` at long delays).

use std::collections::VecDeque;

use crate::engine::Time;

/// One SCSI command: READ or WRITE of `bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Command {
    pub id: u32,
    pub bytes: u32,
}

pub struct Initiator {
    queued: VecDeque<Command>,
    queue_depth: u32,
    outstanding: u32,
    pub bytes_done: u64,
    pub commands_done: u64,
    /// When the last response arrived.
    pub last: Time,
}

impl Initiator {
    /// Commands for `total_bytes` in I/Os of `block_bytes` (the last may be short), each I/O cut
    /// into commands of at most `max_command_bytes`.
    pub fn new(total_bytes: u64, block_bytes: u64, max_command_bytes: u32, queue_depth: u32) -> Self {
        let mut queued = VecDeque::new();
        let mut left = total_bytes;
        while left > 0 {
            let mut io = left.min(block_bytes);
            left -= io;
            while io > 0 {
                let bytes = io.min(max_command_bytes as u64) as u32;
                io -= bytes as u64;
                queued.push_back(Command { id: queued.len() as u32, bytes });
            }
        }
        Initiator { queued, queue_depth, outstanding: 0, bytes_done: 0, commands_done: 0, last: 0 }
    }

    /// Commands that may be issued now (a free queue slot each).
    pub fn release(&mut self) -> Vec<Command> {
        let mut out = Vec::new();
        while self.outstanding < self.queue_depth {
            let Some(c) = self.queued.pop_front() else { break };
            self.outstanding += 1;
            out.push(c);
        }
        out
    }

    /// The response to `cmd` arrived at `at`: frees its slot; returns the commands to issue.
    pub fn on_response(&mut self, cmd: Command, at: Time) -> Vec<Command> {
        self.outstanding -= 1;
        self.bytes_done += cmd.bytes as u64;
        self.commands_done += 1;
        self.last = self.last.max(at);
        self.release()
    }

    pub fn done(&self) -> bool {
        self.queued.is_empty() && self.outstanding == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_depth_bounds_the_commands_and_every_byte_is_done_once() {
        let mut i = Initiator::new(3 << 20, 768 * 1024, 512 * 1024, 3);
        let mut pending: VecDeque<Command> = i.release().into();
        assert_eq!(pending.len(), 3);
        let mut sizes = Vec::new();
        while let Some(c) = pending.pop_front() {
            sizes.push(c.bytes);
            pending.extend(i.on_response(c, 1));
            assert!(pending.len() <= 3);
        }
        assert!(i.done());
        assert_eq!(i.bytes_done, 3 << 20);
        // 768 KiB I/Os: a 512 KiB command and a 256 KiB one each.
        assert_eq!(sizes[..2], [512 * 1024, 256 * 1024]);
        assert_eq!(i.commands_done, 8);
    }
}
