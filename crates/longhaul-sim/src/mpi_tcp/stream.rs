//! One direction of a TCP connection seen as a byte stream: what the application wrote, how
//! the sender cut it into segments, and which protocol frames the receiving application can
//! take once the bytes before a frame's end have arrived in order.
//!
//! The TCP model counts segments; this maps them to bytes. Segments are cut when the sender
//! transmits them (the socket has TCP_NODELAY, as the TCP BTL sets it): a segment carries up to
//! one MSS of whatever is written and not yet sent, so data written while the window is closed
//! leaves in full segments and a lone small message in a small one.

use std::collections::VecDeque;

use super::btl::Frame;

#[derive(Default)]
pub struct Stream {
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
    pub fn write(&mut self, f: Frame) {
        self.unsent_starts.push_back(self.written);
        self.written += f.bytes;
        self.frames.push_back((self.written, f));
    }

    /// Segments the sender may have sent once everything written is cut (the app limit).
    pub fn segments_available(&self, mss: u64) -> u64 {
        self.next_segment() + (self.written - self.cut).div_ceil(mss)
    }

    pub fn next_segment(&self) -> u64 {
        self.base + self.ends.len() as u64
    }

    /// Cut the next new segment (number `seg`); returns its payload bytes and how many frames
    /// start in it (the frames the sending application hands over with it).
    pub fn cut(&mut self, seg: u64, mss: u64) -> (u64, u64) {
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

    /// Payload bytes of an already cut segment (`None` if it has been forgotten).
    pub fn payload(&self, seg: u64) -> Option<u64> {
        (seg >= self.base && seg < self.next_segment()).then(|| self.end(seg) - self.start(seg))
    }

    /// Bytes delivered in order when the receiver expects segment `rcv_nxt` next.
    pub fn delivered(&self, rcv_nxt: u64) -> u64 {
        if rcv_nxt == 0 {
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

    /// The frames whose every byte is among the first `delivered` bytes, in order.
    pub fn take_frames(&mut self, delivered: u64) -> Vec<Frame> {
        let mut out = Vec::new();
        while let Some(&(end, f)) = self.frames.front() {
            if end > delivered {
                break;
            }
            self.frames.pop_front();
            self.counted = self.counted.saturating_sub(1);
            out.push(f);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::btl::FrameKind;
    use super::*;

    fn frame(bytes: u64) -> Frame {
        Frame { kind: FrameKind::Eager, msg: 0, bytes }
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
        assert_eq!(s.take_frames(s.delivered(1)).len(), 1);
        assert!(s.take_frames(s.delivered(3)).is_empty());
        assert_eq!(s.take_frames(s.delivered(4)).len(), 2);
        s.forget_below(3);
        assert_eq!((s.payload(3), s.payload(2), s.delivered(3)), (Some(510), None, 2100));
    }
}
