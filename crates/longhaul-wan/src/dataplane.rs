//! One direction of the emulated links as a single thread: read packets from the sending
//! cluster's TUN devices, decide their fate with the `LinkModel` of the link (lane) whose
//! device they came from, hold them in that lane's FIFO delay line and write each into the
//! receiving host's TUN device of the same link at its release time. With several links
//! (`--links N`) the hosts' routes spread flows over the devices; a lane that is down drops
//! what it is given and what was on its fibre (`LinkStates`, set by the control thread).
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

/// Counters of one link in one direction (the direction's totals are in `Counters`).
#[derive(Default)]
pub struct LaneCounters {
    pub packets_in: AtomicU64,
    pub bytes_in: AtomicU64,
    pub packets_out: AtomicU64,
    pub bytes_out: AtomicU64,
    pub drops_queue: AtomicU64,
    pub drops_loss: AtomicU64,
    pub drops_down: AtomicU64,
    pub queue_bytes: AtomicU64,
    pub queue_packets: AtomicU64,
}

/// Which links are up: written by the control thread, read by the direction threads.
pub struct LinkStates {
    up: Vec<AtomicBool>,
}

impl LinkStates {
    pub fn all_up(links: usize) -> LinkStates {
        LinkStates { up: (0..links).map(|_| AtomicBool::new(true)).collect() }
    }

    pub fn is_up(&self, link: usize) -> bool {
        self.up[link].load(Relaxed)
    }

    pub fn set(&self, link: usize, up: bool) {
        self.up[link].store(up, Relaxed);
    }

    pub fn len(&self) -> usize {
        self.up.len()
    }
}

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
    /// Wire packets lost because their link was down (given to it, or on its fibre when cut).
    pub drops_down: AtomicU64,
    pub queue_bytes: AtomicU64,
    pub queue_packets: AtomicU64,
    pub queue_bytes_max: AtomicU64,
    pub line_packets: AtomicU64,
    pub line_bytes: AtomicU64,
    pub realtime: AtomicBool,
    pub lateness: LatenessHistogram,
}

/// A receiving host: its TUN fd (of one link) and the addresses it owns.
pub struct Output {
    pub fd: RawFd,
    pub addresses: Vec<Dest>,
}

/// A sending host's TUN fd and the link (lane) it belongs to.
pub struct Input {
    pub fd: RawFd,
    pub lane: usize,
}

/// One link of the direction: its model and its receiving hosts' devices.
pub struct Lane {
    pub model: LinkModel,
    pub outputs: Vec<Output>,
    pub counters: Arc<LaneCounters>,
}

/// The delay line of a lane and whether the thread has seen the lane up.
#[derive(Default)]
struct Line {
    held: VecDeque<Held>,
    bytes: u64,
    cut: bool,
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
    segments: u64,
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

impl Line {
    fn hold(&mut self, packet: Held) {
        self.bytes += packet.wire_bytes;
        self.held.push_back(packet);
    }
}

/// The lane whose head is due first, if any.
fn next_due(lines: &[Line]) -> Option<(usize, u64)> {
    lines.iter().enumerate().filter_map(|(k, l)| l.held.front().map(|h| (k, h.release_ns))).min_by_key(|&(_, t)| t)
}

fn add_both(total: &AtomicU64, lane: &AtomicU64, n: u64) {
    total.fetch_add(n, Relaxed);
    lane.fetch_add(n, Relaxed);
}

pub fn run(
    inputs: Vec<Input>,
    mut lanes: Vec<Lane>,
    links: Arc<LinkStates>,
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
    for (i, input) in inputs.iter().enumerate() {
        add(input.fd, i as u64)?;
    }
    add(timer.fd.as_raw_fd(), timer_token)?;

    let mut lines: Vec<Line> = lanes.iter().map(|_| Line::default()).collect();
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; inputs.len() + 1];
    let mut readable: Vec<bool> = vec![true; inputs.len()];

    while !stop.load(Relaxed) {
        // 0. A link just cut loses what was on its fibre and in its queue.
        for (k, (lane, line)) in lanes.iter_mut().zip(lines.iter_mut()).enumerate() {
            let down = !links.is_up(k);
            if down && !line.cut {
                let lost: u64 = line.held.drain(..).map(|h| h.segments).sum();
                add_both(&counters.drops_down, &lane.counters.drops_down, lost);
                line.bytes = 0;
                lane.model.cut();
                lane.counters.queue_bytes.store(0, Relaxed);
                lane.counters.queue_packets.store(0, Relaxed);
            }
            line.cut = down;
        }
        // 1. Release everything that is due, earliest first across the lanes.
        while let Some((k, due)) = next_due(&lines) {
            let now = mono_ns();
            if due > now {
                break;
            }
            let line = &mut lines[k];
            let held = line.held.pop_front().unwrap();
            counters.lateness.record(now - held.release_ns);
            let lane = &lanes[k];
            let fd = lane.outputs[held.output].fd;
            // SAFETY: writing our own buffer to a TUN fd.
            let n = unsafe { libc::write(fd, held.data.as_ptr().cast(), held.len) };
            if n == held.len as isize {
                add_both(&counters.packets_out, &lane.counters.packets_out, 1);
                add_both(&counters.bytes_out, &lane.counters.bytes_out, held.wire_bytes);
            } else {
                counters.drops_write.fetch_add(1, Relaxed);
            }
            line.bytes -= held.wire_bytes;
            if held.data.len() == FRAME_MAX && pool.len() < POOL_MAX {
                pool.push(held.data);
            }
        }
        // 2. Take in what the sending side has queued (a bounded batch).
        let mut took = 0;
        for (i, input) in inputs.iter().enumerate() {
            let k = input.lane;
            while readable[i] && took < READ_BATCH {
                let mut buf = pool.pop().unwrap_or_else(|| vec![0u8; FRAME_MAX]);
                // SAFETY: buf has FRAME_MAX bytes of room.
                let n = unsafe { libc::read(input.fd, buf.as_mut_ptr().cast(), FRAME_MAX) };
                if n <= 0 {
                    readable[i] = false;
                    pool.push(buf);
                    break;
                }
                took += 1;
                let now = mono_ns();
                let len = n as usize;
                let (size, dest) = inspect(&buf[..len]);
                let (lane, line) = (&mut lanes[k], &mut lines[k]);
                let lc = &lane.counters;
                counters.packets_in.fetch_add(1, Relaxed);
                counters.segments_in.fetch_add(size.segments, Relaxed);
                add_both(&counters.bytes_in, &lc.bytes_in, size.wire_bytes);
                lc.packets_in.fetch_add(1, Relaxed);
                if line.cut {
                    add_both(&counters.drops_down, &lc.drops_down, size.segments);
                    pool.push(buf);
                    continue;
                }
                let Some(output) = route(&lane.outputs, dest) else {
                    counters.drops_no_route.fetch_add(1, Relaxed);
                    pool.push(buf);
                    continue;
                };
                match lane.model.admit(now, size) {
                    Verdict::Drop(cause) => {
                        match cause {
                            DropCause::Queue => add_both(&counters.drops_queue, &lc.drops_queue, size.segments),
                            DropCause::Loss => add_both(&counters.drops_loss, &lc.drops_loss, size.segments),
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
                        line.hold(Held {
                            release_ns: at_ns,
                            output,
                            wire_bytes: size.wire_bytes,
                            segments: size.segments,
                            len,
                            data,
                        });
                    }
                    Verdict::Release { at_ns, lost } => {
                        // Deliver the wire packets the fibre did not lose (a non-TCP super-packet,
                        // which the TUN offloads never produce, is lost whole).
                        let mut delivered = 0;
                        for data in surviving_runs(&buf[..len], &lost).unwrap_or_default() {
                            let run = inspect(&data).0;
                            delivered += run.segments;
                            let len = data.len();
                            line.hold(Held {
                                release_ns: at_ns,
                                output,
                                wire_bytes: run.wire_bytes,
                                segments: run.segments,
                                len,
                                data,
                            });
                        }
                        add_both(&counters.drops_loss, &lc.drops_loss, size.segments.saturating_sub(delivered));
                        pool.push(buf);
                    }
                }
                let (qb, qp) = lane.model.backlog(now);
                lc.queue_bytes.store(qb, Relaxed);
                lc.queue_packets.store(qp, Relaxed);
                let total_qb = lanes.iter().map(|l| l.counters.queue_bytes.load(Relaxed)).sum();
                counters.queue_bytes.store(total_qb, Relaxed);
                counters
                    .queue_packets
                    .store(lanes.iter().map(|l| l.counters.queue_packets.load(Relaxed)).sum(), Relaxed);
                counters.queue_bytes_max.fetch_max(total_qb, Relaxed);
            }
        }
        counters.line_packets.store(lines.iter().map(|l| l.held.len() as u64).sum(), Relaxed);
        counters.line_bytes.store(lines.iter().map(|l| l.bytes).sum(), Relaxed);
        if took > 0 {
            continue;
        }
        // 3. Nothing to read: wait for input, for the next release or for a link to change.
        let now = mono_ns();
        let release_wake = match next_due(&lines) {
            Some((_, due)) if due <= now + opts.spin_ns => {
                // Busy-poll the last stretch; still look at the inputs each turn.
                readable.iter_mut().for_each(|r| *r = true);
                std::hint::spin_loop();
                continue;
            }
            Some((_, due)) => due - opts.spin_ns,
            None => u64::MAX,
        };
        let wake = if opts.idle_wake_ns > 0 { release_wake.min(now + opts.idle_wake_ns) } else { release_wake };
        if wake != u64::MAX {
            timer.arm_at(wake);
        }
        // A link cut while we sleep is seen within this bound (its fibre's packets are dropped then).
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
