//! Thin wrappers over the Linux calls the data plane needs (clock, real-time scheduling,
//! timer slack, signals). Each returns io::Result; nothing here panics.

use std::io;

pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer to a timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Make the calling thread SCHED_FIFO at `priority` (1..99). Without it the release of a
/// packet can slip by milliseconds behind ordinary threads; with it, by tens of us.
pub fn set_realtime(priority: i32) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: priority };
    // SAFETY: pid 0 = calling thread; param is a valid struct.
    check(unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) }).map(|_| ())
}

/// Keep the calling thread on one CPU. A thread woken by a program on its own CPU runs at
/// once; woken from another CPU it waits for an inter-processor interrupt, which on a VM
/// (the target vCPU halted, or busy in another guest task) costs 15-70 us.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes within it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 = calling thread; set is a valid cpu_set_t of the size given.
    check(unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) }).map(|_| ())
}

/// Timer slack of the calling thread: the kernel may fire our timers this late to batch
/// wake-ups (50 us by default for normal threads). We want 1 ns.
pub fn set_timer_slack_ns(ns: u64) {
    // SAFETY: PR_SET_TIMERSLACK takes an unsigned long.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
}

/// Ask the kernel to send us `signal` when the process that started us dies (so a killed
/// controller never leaves the data plane running).
pub fn die_with_parent(signal: i32) {
    // SAFETY: plain prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong, 0, 0, 0) };
}

pub fn signal_set(signals: &[i32]) -> libc::sigset_t {
    // SAFETY: sigset_t is plain data initialised by sigemptyset.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in signals {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Block `set` in the calling thread (threads spawned later inherit the mask), so only
/// the main thread's `wait_signal` sees them.
pub fn block_signals(set: &libc::sigset_t) {
    // SAFETY: valid set pointer, null old-set.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, set, std::ptr::null_mut()) };
}

/// Wait up to `timeout_ms` for one of the blocked signals; None on time-out.
pub fn wait_signal(set: &libc::sigset_t, timeout_ms: u64) -> Option<i32> {
    let ts = libc::timespec { tv_sec: (timeout_ms / 1000) as i64, tv_nsec: ((timeout_ms % 1000) * 1_000_000) as i64 };
    // SAFETY: valid pointers; a null siginfo is allowed.
    let r = unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &ts) };
    if r > 0 {
        Some(r)
    } else {
        None
    }
}

/// CPU time (user + system) used by this process so far, in seconds.
pub fn process_cpu_s() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid timespec pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}
