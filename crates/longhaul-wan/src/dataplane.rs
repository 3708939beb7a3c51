//! One direction of the emulated link as a single thread: read packets from the sending
//! cluster's TUN devices, decide their fate with the `LinkModel`, hold them in a FIFO delay
//! line and write each into the receiving host's TUN device at its release time.
//!
//! Waiting is a timerfd/busy-poll hybrid: the thread sleeps in epoll (TUN fds + a timerfd
//! armed with an absolute CLOCK_MONOTONIC deadline `spin_ns` before the next release) and
//! spins only for the last `spin_ns`. Spinning is kept short because on a 2-core machine a
//! SCHED_FIFO thread that spins steals the core from the programs under test.

use std::collections::VecDeque;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use crate::histogram::LatenessHistogram;
use crate::model::{DropCause, LinkModel, Verdict};
use crate::packet::{inspect, surviving_runs, Dest, VNET_HDR_LEN};
use crate::sys::{check, mono_ns};

/// Largest frame a TUN read can return: 64 KB GSO packet + virtio-net header.
pub const FRAME_MAX: usize = 65_536 + VNET_HDR_LEN + 64;
/// Frames shorter than this are copied out so the 64 KB buffer is reused at once
/// (ACKs would otherwise pin 64 KB each for a whole delay).
const SMALL_FRAME: usize = 2048;
/// Packets read per loop round before releasing again (bounds release lateness).
const READ_BATCH: usize = 32;
/// Spare big buffers kept for reuse (~64 MB).
const POOL_MAX: usize = 1024;

/// Counters of one direction, read by the stats writer while the thread runs.
#[derive(Default)]
pub struct Counters {
    pub packets_in: AtomicU64,
    pub segments_in: AtomicU64,
    pub bytes_in: AtomicU64,
    pub packets_out: AtomicU64,
    pub bytes_out: AtomicU64,
    pub drops_queue: AtomicU64,
    pub drops_loss: AtomicU64,
    pub drops_no_route: AtomicU64,
    pub drops_write: AtomicU64,
    pub queue_bytes: AtomicU64,
    pub queue_packets: AtomicU64,
    pub queue_bytes_max: AtomicU64,
    pub line_packets: AtomicU64,
    pub line_bytes: AtomicU64,
    pub realtime: AtomicBool,
    pub lateness: LatenessHistogram,
}

/// A receiving host: its TUN fd and the addresses it owns.
pub struct Output {
    pub fd: RawFd,
    pub addresses: Vec<Dest>,
}

pub struct LoopOptions {
    /// Busy-poll this long before a release instead of trusting the timer wake-up.
    pub spin_ns: u64,
    /// SCHED_FIFO priority of the thread, 0 = leave the scheduler alone.
    pub rt_priority: i32,
    /// Never sleep longer than this (0 = as long as there is nothing to do).
    pub idle_wake_ns: u64,
    /// Run on this CPU only (None: wherever the scheduler puts it).
    pub cpu: Option<usize>,
}

struct Held {
    release_ns: u64,
    output: usize,
    wire_bytes: u64,
    len: usize,
    data: Vec<u8>,
}

fn route(outputs: &[Output], dest: Dest) -> Option<usize> {
    if outputs.len() == 1 {
        return Some(0);
    }
    outputs.iter().position(|o| o.addresses.contains(&dest))
}

struct Timer {
    fd: OwnedFd,
    armed_at: u64,
}

impl Timer {
    fn new() -> std::io::Result<Timer> {
        // SAFETY: plain syscall; we take ownership of the returned fd.
        let raw =
            check(unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) })?;
        Ok(Timer { fd: unsafe { OwnedFd::from_raw_fd(raw) }, armed_at: 0 })
    }

    fn arm_at(&mut self, deadline_ns: u64) {
        if self.armed_at == deadline_ns {
            return;
        }
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec {
                tv_sec: (deadline_ns / 1_000_000_000) as i64,
                tv_nsec: (deadline_ns % 1_000_000_000) as i64,
            },
        };
        // SAFETY: valid itimerspec; absolute time on CLOCK_MONOTONIC.
        unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) };
        self.armed_at = deadline_ns;
    }

    fn acknowledge(&mut self) {
        let mut buf = [0u8; 8];
        // SAFETY: reading the 8-byte expiration count into a local buffer.
        unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
        self.armed_at = 0;
    }
}

pub fn run(
    inputs: Vec<RawFd>,
    outputs: Vec<Output>,
    mut model: LinkModel,
    counters: Arc<Counters>,
    stop: Arc<AtomicBool>,
    opts: LoopOptions,
) -> std::io::Result<()> {
    crate::sys::set_timer_slack_ns(1);
    if let Some(cpu) = opts.cpu {
        crate::sys::pin_to_cpu(cpu)?;
    }
    if opts.rt_priority > 0 && crate::sys::set_realtime(opts.rt_priority).is_ok() {
        counters.realtime.store(true, Relaxed);
    }
    // SAFETY: plain syscall; fd owned below.
    let epfd = unsafe { OwnedFd::from_raw_fd(check(libc::epoll_create1(libc::EPOLL_CLOEXEC))?) };
    let mut timer = Timer::new()?;
    let timer_token = u64::MAX;
    let add = |fd: RawFd, token: u64| -> std::io::Result<()> {
        let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: token };
        // SAFETY: valid epoll fd and event.
        check(unsafe { libc::epoll_ctl(epfd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) }).map(|_| ())
    };
    for (i, &fd) in inputs.iter().enumerate() {
        add(fd, i as u64)?;
    }
    add(timer.fd.as_raw_fd(), timer_token)?;

    let mut line: VecDeque<Held> = VecDeque::new();
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let mut line_bytes: u64 = 0;
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; inputs.len() + 1];
    let mut readable: Vec<bool> = vec![true; inputs.len()];

    while !stop.load(Relaxed) {
        // 1. Release everything that is due.
        loop {
            let now = mono_ns();
            let Some(head) = line.front() else { break };
            if head.release_ns > now {
                break;
            }
            let held = line.pop_front().unwrap();
            counters.lateness.record(now - held.release_ns);
            let fd = outputs[held.output].fd;
            // SAFETY: writing our own buffer to a TUN fd.
            let n = unsafe { libc::write(fd, held.data.as_ptr().cast(), held.len) };
            if n == held.len as isize {
                counters.packets_out.fetch_add(1, Relaxed);
                counters.bytes_out.fetch_add(held.wire_bytes, Relaxed);
            } else {
                counters.drops_write.fetch_add(1, Relaxed);
            }
            line_bytes -= held.wire_bytes;
            if held.data.len() == FRAME_MAX && pool.len() < POOL_MAX {
                pool.push(held.data);
            }
        }
        // 2. Take in what the sending side has queued (a bounded batch).
        let mut took = 0;
        for (i, &fd) in inputs.iter().enumerate() {
            while readable[i] && took < READ_BATCH {
                let mut buf = pool.pop().unwrap_or_else(|| vec![0u8; FRAME_MAX]);
                // SAFETY: buf has FRAME_MAX bytes of room.
                let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), FRAME_MAX) };
                if n <= 0 {
                    readable[i] = false;
                    pool.push(buf);
                    break;
                }
                took += 1;
                let now = mono_ns();
                let len = n as usize;
                let (size, dest) = inspect(&buf[..len]);
                counters.packets_in.fetch_add(1, Relaxed);
                counters.segments_in.fetch_add(size.segments, Relaxed);
                counters.bytes_in.fetch_add(size.wire_bytes, Relaxed);
                let Some(output) = route(&outputs, dest) else {
                    counters.drops_no_route.fetch_add(1, Relaxed);
                    pool.push(buf);
                    continue;
                };
                match model.admit(now, size) {
                    Verdict::Drop(cause) => {
                        match cause {
                            DropCause::Queue => counters.drops_queue.fetch_add(size.segments, Relaxed),
                            DropCause::Loss => counters.drops_loss.fetch_add(size.segments, Relaxed),
                        };
                        pool.push(buf);
                    }
                    Verdict::Release { at_ns, lost } if lost.is_empty() => {
                        let data = if len < SMALL_FRAME {
                            let small = buf[..len].to_vec();
                            pool.push(buf);
                            small
                        } else {
                            buf
                        };
                        line_bytes += size.wire_bytes;
                        line.push_back(Held { release_ns: at_ns, output, wire_bytes: size.wire_bytes, len, data });
                    }
                    Verdict::Release { at_ns, lost } => {
                        // Deliver the wire packets the fibre did not lose (a non-TCP super-packet,
                        // which the TUN offloads never produce, is lost whole).
                        let mut delivered = 0;
                        for data in surviving_runs(&buf[..len], &lost).unwrap_or_default() {
                            let run = inspect(&data).0;
                            delivered += run.segments;
                            line_bytes += run.wire_bytes;
                            line.push_back(Held {
                                release_ns: at_ns,
                                output,
                                wire_bytes: run.wire_bytes,
                                len: data.len(),
                                data,
                            });
                        }
                        counters.drops_loss.fetch_add(size.segments.saturating_sub(delivered), Relaxed);
                        pool.push(buf);
                    }
                }
                let (qb, qp) = model.backlog(now);
                counters.queue_bytes.store(qb, Relaxed);
                counters.queue_packets.store(qp, Relaxed);
                counters.queue_bytes_max.fetch_max(qb, Relaxed);
            }
        }
        counters.line_packets.store(line.len() as u64, Relaxed);
        counters.line_bytes.store(line_bytes, Relaxed);
        if took > 0 {
            continue;
        }
        // 3. Nothing to read: wait for input or for the next release.
        let now = mono_ns();
        let release_wake = match line.front() {
            Some(head) if head.release_ns <= now + opts.spin_ns => {
                // Busy-poll the last stretch; still look at the inputs each turn.
                readable.iter_mut().for_each(|r| *r = true);
                std::hint::spin_loop();
                continue;
            }
            Some(head) => head.release_ns - opts.spin_ns,
            None => u64::MAX,
        };
        let wake = if opts.idle_wake_ns > 0 { release_wake.min(now + opts.idle_wake_ns) } else { release_wake };
        if wake != u64::MAX {
            timer.arm_at(wake);
        }
        let timeout_ms = 100;
        // SAFETY: events has room for inputs.len() + 1 entries.
        let n = unsafe { libc::epoll_wait(epfd.as_raw_fd(), events.as_mut_ptr(), events.len() as i32, timeout_ms) };
        for ev in events.iter().take(n.max(0) as usize) {
            if ev.u64 == timer_token {
                timer.acknowledge();
            } else {
                readable[ev.u64 as usize] = true;
            }
        }
    }
    Ok(())
}
