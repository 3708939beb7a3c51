//! The project's own TCP load generator (no iperf3 needed): `tcp-sink` counts bytes
//! received by N streams, `tcp-source` sends on N streams for a duration with a chosen
//! congestion control and reports retransmits and RTT from TCP_INFO. Both print one JSON
//! line. `--socket-buffer-bytes N` fixes every socket's buffers as iperf -w does.
//! Throughput is measured at the sender from TCP_INFO `delivered` (segments the
//! receiver has acknowledged, cumulatively or by SACK) x MSS between the end of the warm-up
//! (`--omit-s`) and the end of the run. Counting at the sink's read() overstates the rate by
//! what sat in its socket buffer when the window opened, and `bytes_acked` by the SACKed
//! data a retransmission releases inside the window; `delivered` has neither bias.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::args::Args;
use crate::sys::mono_ns;

const CHUNK: usize = 1 << 20;

fn set_congestion(stream: &TcpStream, cc: &str) -> Result<(), String> {
    // SAFETY: TCP_CONGESTION takes the algorithm name as bytes.
    let r = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            cc.as_ptr().cast(),
            cc.len() as u32,
        )
    };
    if r < 0 {
        return Err(format!("congestion control '{cc}' refused: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Fixed send and receive buffers (as iperf -w): SO_SNDBUF/SO_RCVBUF, forced past the
/// net.core maxima when we may (root), which also turns auto-tuning off for the socket.
fn set_buffers(fd: i32, bytes: u64) -> Result<(), String> {
    let value = bytes.min(i32::MAX as u64) as libc::c_int;
    for (forced, plain) in [(libc::SO_SNDBUFFORCE, libc::SO_SNDBUF), (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF)] {
        let set = |opt| {
            // SAFETY: an int option value of the right size.
            unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, opt, (&value as *const libc::c_int).cast(), 4) }
        };
        if set(forced) < 0 && set(plain) < 0 {
            return Err(format!("socket buffer of {bytes} bytes refused: {}", std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

/// What we read of struct tcp_info (Linux include/uapi/linux/tcp.h: 8 bytes of u8 fields,
/// then u32 fields: rtt is #15, snd_cwnd #18, total_retrans #23; then u64 pacing_rate at
/// byte 104, max_pacing_rate 112, bytes_acked 120, ... u32 delivered at byte 192).
#[derive(Default, Clone, Copy)]
struct TcpInfo {
    retransmits: u64,
    rtt_us: u64,
    cwnd: u64,
    /// Segments delivered (acknowledged or SACKed) times the MSS.
    delivered_bytes: u64,
}

fn tcp_info(fd: i32) -> TcpInfo {
    let mut buf = [0u8; 256];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf is large enough; the kernel writes at most len bytes.
    let r = unsafe { libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_INFO, buf.as_mut_ptr().cast(), &mut len) };
    if r < 0 || len < 196 {
        return TcpInfo::default();
    }
    let u32_at = |i: usize| u32::from_ne_bytes(buf[8 + 4 * i..12 + 4 * i].try_into().unwrap()) as u64;
    let delivered = u32::from_ne_bytes(buf[192..196].try_into().unwrap()) as u64;
    TcpInfo { retransmits: u32_at(23), rtt_us: u32_at(15), cwnd: u32_at(18), delivered_bytes: delivered * u32_at(2) }
}

fn acked_sum(fds: &[i32]) -> (u64, u64) {
    (mono_ns(), fds.iter().map(|&fd| tcp_info(fd).delivered_bytes).sum())
}

pub fn sink(args: &Args) -> Result<(), String> {
    let bind = args.required("bind")?;
    let streams: usize = args.num("streams", 1)?;
    let omit_ns = (args.num::<f64>("omit-s", 0.0)? * 1e9) as u64;
    let timeout = Duration::from_secs_f64(args.num("timeout-s", 60.0)?);
    let listener = TcpListener::bind(bind).map_err(|e| format!("bind {bind}: {e}"))?;
    // On the listener, so accepted sockets inherit it before their window scale is chosen.
    if args.get("socket-buffer-bytes").is_some() {
        set_buffers(listener.as_raw_fd(), args.num("socket-buffer-bytes", 0)?)?;
    }
    println!("ready");
    let _ = std::io::stdout().flush();
    let start = Instant::now();
    let first_ns = Arc::new(AtomicU64::new(0));
    let last_ns = Arc::new(AtomicU64::new(0));
    let counted = Arc::new(AtomicU64::new(0));
    let total = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    while handles.len() < streams {
        if start.elapsed() > timeout {
            return Err(format!("only {} of {streams} streams connected before the time-out", handles.len()));
        }
        match listener.accept() {
            Ok((mut conn, _)) => {
                conn.set_nonblocking(false).map_err(|e| e.to_string())?;
                let remaining = timeout.saturating_sub(start.elapsed()).max(Duration::from_millis(10));
                conn.set_read_timeout(Some(remaining)).map_err(|e| e.to_string())?;
                let (first_ns, last_ns, counted, total) =
                    (first_ns.clone(), last_ns.clone(), counted.clone(), total.clone());
                handles.push(std::thread::spawn(move || {
                    let mut buf = vec![0u8; CHUNK];
                    while let Ok(n) = conn.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        let now = mono_ns();
                        let _ = first_ns.compare_exchange(0, now, Relaxed, Relaxed);
                        total.fetch_add(n as u64, Relaxed);
                        if now >= first_ns.load(Relaxed) + omit_ns {
                            counted.fetch_add(n as u64, Relaxed);
                            last_ns.fetch_max(now, Relaxed);
                        }
                    }
                }));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => return Err(format!("accept: {e}")),
        }
    }
    for h in handles {
        let _ = h.join();
    }
    let begin = first_ns.load(Relaxed) + omit_ns;
    let seconds = last_ns.load(Relaxed).saturating_sub(begin) as f64 * 1e-9;
    println!(
        "{{\"streams\": {streams}, \"bytes\": {}, \"bytes_total\": {}, \"seconds\": {seconds:.6}}}",
        counted.load(Relaxed),
        total.load(Relaxed)
    );
    Ok(())
}

pub fn source(args: &Args) -> Result<(), String> {
    let connect = args.required("connect")?.to_string();
    let streams: usize = args.num("streams", 1)?;
    let seconds: f64 = args.num("duration-s", 5.0)?;
    let omit: f64 = args.num("omit-s", 0.0)?;
    let cc = args.get("cc").map(str::to_string);
    let buffer: Option<u64> = match args.get("socket-buffer-bytes") {
        None => None,
        Some(_) => Some(args.num("socket-buffer-bytes", 0)?),
    };
    let mut conns = Vec::new();
    for _ in 0..streams {
        let c = TcpStream::connect(&connect).map_err(|e| format!("connect {connect}: {e}"))?;
        if let Some(cc) = &cc {
            set_congestion(&c, cc)?;
        }
        if let Some(bytes) = buffer {
            set_buffers(c.as_raw_fd(), bytes)?;
        }
        c.set_write_timeout(Some(Duration::from_millis(500))).map_err(|e| e.to_string())?;
        conns.push(c);
    }
    let fds: Vec<i32> = conns.iter().map(|c| c.as_raw_fd()).collect();
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(omit + seconds);
    let handles: Vec<_> = conns
        .into_iter()
        .map(|mut c| {
            std::thread::spawn(move || {
                let buf = vec![0x5au8; CHUNK];
                let mut sent = 0u64;
                while Instant::now() < deadline {
                    match c.write(&buf) {
                        Ok(n) => sent += n as u64,
                        Err(e)
                            if e.kind() == std::io::ErrorKind::WouldBlock
                                || e.kind() == std::io::ErrorKind::TimedOut => {}
                        Err(_) => break,
                    }
                }
                let info = tcp_info(c.as_raw_fd());
                let _ = c.shutdown(std::net::Shutdown::Write);
                // Wait for the sink to read everything and close (bounded).
                let _ = c.set_read_timeout(Some(Duration::from_secs(10)));
                let mut b = [0u8; 64];
                let _ = c.read(&mut b);
                (sent, info)
            })
        })
        .collect();
    // The measurement window [omit, omit + duration], sampled from this thread.
    std::thread::sleep(Duration::from_secs_f64(omit));
    let (t0, acked0) = acked_sum(&fds);
    std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
    let (t1, acked1) = acked_sum(&fds);
    let (mut sent, mut retrans, mut rtt_sum, mut cwnd_sum) = (0u64, 0u64, 0u64, 0u64);
    for h in handles {
        let (s, info) = h.join().map_err(|_| "sender thread failed".to_string())?;
        sent += s;
        retrans += info.retransmits;
        rtt_sum += info.rtt_us;
        cwnd_sum += info.cwnd;
    }
    let window_s = (t1 - t0) as f64 * 1e-9;
    let acked = acked1.saturating_sub(acked0);
    println!(
        "{{\"streams\": {streams}, \"bytes_sent\": {sent}, \"bytes_acked\": {acked}, \"seconds\": {window_s:.6}, \
         \"throughput_bps\": {:.1}, \"retransmits\": {retrans}, \"rtt_us\": {}, \"cwnd_segments\": {}}}",
        if window_s > 0.0 { acked as f64 * 8.0 / window_s } else { 0.0 },
        rtt_sum / streams.max(1) as u64,
        cwnd_sum / streams.max(1) as u64
    );
    Ok(())
}
