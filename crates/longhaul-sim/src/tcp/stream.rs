//! One direction of a TCP connection seen as a byte stream: what the application wrote, how
//! the sender cut it into segments, and which of the application's frames (an MPI protocol
//! frame, an RPC reply) the receiving application can take once the bytes before a frame's end
//! have arrived in order.
//!
//! The sender counts segments; this maps them to bytes. Segments are cut when the sender
//! transmits them (the socket has TCP_NODELAY, as MPI's TCP BTL and Linux's RPC sockets set
//! it): a segment carries up to one MSS of whatever is written and not yet sent, so data
//! written while the window is closed leaves in full segments (Linux's `tcp_sendmsg` appends to
//! the unsent tail of the queue) and a lone small message in a small one. A bulk stream (iperf)
//! always has more to send: every segment carries one MSS and nothing is recorded per segment.

use std::collections::VecDeque;

/// A unit the application wrote, told apart by its `tag` (the application's; the stream never
/// reads it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    pub tag: u64,
    pub bytes: u64,
}

#[derive(Default)]
pub struct Stream {
    /// Always more to send, in whole segments (a bulk sender): nothing below is used.
    bulk: bool,
    written: u64,
    cut: u64,
    /// First segment whose end is still kept, the byte where it starts, and the end byte of
    /// each kept segment.
    base: u64,
    base_start: u64,
    ends: VecDeque<u64>,
    /// Frames not yet taken by the receiving application, with the byte where each ends.
    frames: VecDeque<(u64, Frame)>,
    /// How many frames at the front of `frames` have been counted as completed
    /// (`frames_completed`): frames end in increasing order, so the count is a cursor.
    counted: usize,
    /// Where each frame not yet reached by a cut segment starts (`frames_started`).
    unsent_starts: VecDeque<u64>,
}

impl Stream {
    /// A stream that always has another full segment to send.
    pub fn bulk() -> Self {
        Stream { bulk: true, ..Stream::default() }
    }

    /// The application writes `f` at the end of the stream.
    pub fn write(&mut self, f: Frame) {
        debug_assert!(!self.bulk, "a bulk stream is written by nobody");
        self.unsent_starts.push_back(self.written);
        self.written += f.bytes;
        self.frames.push_back((self.written, f));
    }

    /// Segments the sender may have sent once everything written is cut (the app limit).
    pub fn segments_available(&self, mss: u64) -> u64 {
        if self.bulk {
            return u64::MAX;
        }
        self.next_segment() + (self.written - self.cut).div_ceil(mss)
    }

    fn next_segment(&self) -> u64 {
        self.base + self.ends.len() as u64
    }

    /// Cut the next new segment (number `seg`); returns its payload bytes and how many frames
    /// start in it (the frames the sending application hands over with it).
    pub fn cut(&mut self, seg: u64, mss: u64) -> (u64, u64) {
        if self.bulk {
            return (mss, 0);
        }
        debug_assert_eq!(seg, self.next_segment(), "segments are cut in order");
        let len = (self.written - self.cut).min(mss);
        debug_assert!(len > 0, "a segment past what was written");
        self.cut += len;
        self.ends.push_back(self.cut);
        let mut started = 0;
        while self.unsent_starts.front().is_some_and(|&b| b < self.cut) {
            self.unsent_starts.pop_front();
            started += 1;
        }
        (len, started)
    }

    fn end(&self, seg: u64) -> u64 {
        if seg < self.base {
            return self.base_start;
        }
        self.ends[(seg - self.base) as usize]
    }

    fn start(&self, seg: u64) -> u64 {
        if seg <= self.base {
            self.base_start
        } else {
            self.end(seg - 1)
        }
    }

    /// Payload bytes of an already cut segment (`None` if it has not been cut yet, or has been
    /// forgotten).
    pub fn payload(&self, seg: u64, mss: u64) -> Option<u64> {
        if self.bulk {
            return Some(mss);
        }
        (seg >= self.base && seg < self.next_segment()).then(|| self.end(seg) - self.start(seg))
    }

    /// Bytes delivered in order when the receiver expects segment `rcv_nxt` next.
    pub fn delivered(&self, rcv_nxt: u64, mss: u64) -> u64 {
        if self.bulk {
            rcv_nxt * mss
        } else if rcv_nxt == 0 {
            0
        } else {
            self.end(rcv_nxt - 1)
        }
    }

    /// Forget the segments below `seg` (acknowledged and delivered).
    pub fn forget_below(&mut self, seg: u64) {
        while self.base < seg && !self.ends.is_empty() {
            self.base_start = self.ends.pop_front().expect("kept segment");
            self.base += 1;
        }
    }

    /// How many frames end within the first `delivered` bytes and not within those of the
    /// previous call: the frames the receiving host has just completed.
    pub fn frames_completed(&mut self, delivered: u64) -> u64 {
        let before = self.counted;
        while self.frames.get(self.counted).is_some_and(|&(end, _)| end <= delivered) {
            self.counted += 1;
        }
        (self.counted - before) as u64
    }

    /// Move the frames whose every byte is among the first `delivered` bytes, in order, to `out`.
    pub fn take_frames(&mut self, delivered: u64, out: &mut Vec<Frame>) {
        while let Some(&(end, f)) = self.frames.front() {
            if end > delivered {
                break;
            }
            self.frames.pop_front();
            self.counted = self.counted.saturating_sub(1);
            out.push(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(bytes: u64) -> Frame {
        Frame { tag: 0, bytes }
    }

    fn take(s: &mut Stream, delivered: u64) -> usize {
        let mut out = Vec::new();
        s.take_frames(delivered, &mut out);
        out.len()
    }

    #[test]
    fn segments_carry_what_was_written_and_frames_complete_at_their_last_byte() {
        let mut s = Stream::default();
        s.write(frame(100));
        assert_eq!(s.segments_available(1000), 1);
        assert_eq!(s.cut(0, 1000), (100, 1));
        s.write(frame(2500));
        s.write(frame(10));
        assert_eq!(s.segments_available(1000), 4);
        assert_eq!((s.cut(1, 1000), s.cut(2, 1000), s.cut(3, 1000)), ((1000, 1), (1000, 0), (510, 1)));
        let (d1, d3, d4) = (s.delivered(1, 1000), s.delivered(3, 1000), s.delivered(4, 1000));
        assert_eq!((take(&mut s, d1), take(&mut s, d3), take(&mut s, d4)), (1, 0, 2));
        s.forget_below(3);
        assert_eq!((s.payload(3, 1000), s.payload(2, 1000), s.delivered(3, 1000)), (Some(510), None, 2100));
    }

    #[test]
    fn a_bulk_stream_always_has_a_full_segment() {
        let mut s = Stream::bulk();
        assert_eq!(s.segments_available(1448), u64::MAX);
        assert_eq!(s.cut(7, 1448), (1448, 0));
        assert_eq!((s.payload(3, 1448), s.delivered(5, 1448)), (Some(1448), 5 * 1448));
    }
}
