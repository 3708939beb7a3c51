//! UDP tools: `ping-server`/`ping-client` (stop-and-wait ping-pong; RTT percentiles in us)
//! and `cbr-source`/`cbr-sink` (constant-bit-rate cross traffic; counts what arrives, so
//! loss = sent - received). Each client prints one JSON line.
//!
//! What the ping measures (`rtt_*_us`): the round trip of the network path, device to device:
//! from the kernel's transmit stamp of the probe at the client (its TUN driver took it) to the
//! kernel's receive stamp of the reply at the client, less the server's residence (its
//! receive stamp to the transmit stamp of its reply). The server cannot know its reply's
//! transmit stamp before sending it, so it sends the residence in a follow-up datagram right
//! behind the reply, as a two-step PTP clock does (IEEE 1588); the reply itself carries the
//! residence to just before the send (as a TWAMP reflector, RFC 5357), used when a stamp or
//! the follow-up is missing. That keeps out the time the two programs take to be scheduled,
//! read a packet and get a send through the kernel, which on a 2-vCPU VM loaded by the traffic
//! under test varies from microseconds to milliseconds (a send after 20 ms asleep took ~40 us
//! longer than one after 2 ms here). The application's own view, send to read, is reported too
//! (`app_rtt_p50_us`, `app_rtt_p99_us`). The client busy-polls its socket (`--busy-poll 1`,
//! the default) so its own reads are prompt as well.

use std::io::Write;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use crate::args::Args;
use crate::rxstamp::{self, realtime_ns};
use crate::sys::mono_ns;

/// Probe layout: sequence number, client send time, server turnaround (ns), all u64 LE.
const PROBE_HEADER: usize = 24;
/// A follow-up has the probe's sequence number, this marker where the send time was, and the
/// server's residence, receive stamp to transmit stamp (ns).
const FOLLOW_UP: u64 = u64::MAX;
/// How long the client waits for a follow-up once the reply is in (it travels right behind).
const FOLLOW_UP_WAIT: Duration = Duration::from_millis(5);

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// `--cpu N`: run on that CPU only (-1, the default: anywhere). The ping pins each end next to
/// the data-plane thread that reads what it sends, so that wake-up is on the same CPU.
fn pin_from_args(args: &Args) -> Result<(), String> {
    match args.num::<i64>("cpu", -1)? {
        -1 => Ok(()),
        n if n >= 0 => crate::sys::pin_to_cpu(n as usize).map_err(|e| format!("--cpu {n}: {e}")),
        n => Err(format!("--cpu: {n} is not a CPU number (or -1 for any)")),
    }
}

pub fn ping_server(args: &Args) -> Result<(), String> {
    pin_from_args(args)?;
    let bind = args.required("bind")?;
    let sock = UdpSocket::bind(bind).map_err(|e| format!("bind {bind}: {e}"))?;
    let fd = sock.as_raw_fd();
    rxstamp::enable(fd).map_err(|e| format!("SO_TIMESTAMPNS: {e}"))?;
    rxstamp::enable_tx(fd).map_err(|e| format!("SO_TIMESTAMPING: {e}"))?;
    let until = Instant::now() + Duration::from_secs_f64(args.num("timeout-s", 60.0)?);
    let busy = args.num::<u32>("busy-poll", 0)? == 1;
    if busy {
        sock.set_nonblocking(true).map_err(|e| e.to_string())?;
    } else {
        sock.set_read_timeout(Some(Duration::from_millis(200))).map_err(|e| e.to_string())?;
    }
    println!("ready");
    let _ = std::io::stdout().flush();
    let mut buf = vec![0u8; 65536];
    while Instant::now() < until {
        match rxstamp::recv(fd, &mut buf) {
            Ok(r) => {
                let probe = r.len >= PROBE_HEADER && buf[8..16] != FOLLOW_UP.to_le_bytes();
                if probe {
                    let turnaround = r.stamp_ns.map_or(0, |s| realtime_ns().saturating_sub(s));
                    buf[16..24].copy_from_slice(&turnaround.to_le_bytes());
                }
                if rxstamp::send_to(fd, &buf[..r.len], &r.from, r.from_len).is_err() || !probe {
                    continue;
                }
                if let (Some(rx), Some(tx)) = (r.stamp_ns, rxstamp::tx_stamp(fd, 200_000)) {
                    let mut follow = [0u8; PROBE_HEADER];
                    follow[..8].copy_from_slice(&buf[..8]);
                    follow[8..16].copy_from_slice(&FOLLOW_UP.to_le_bytes());
                    follow[16..24].copy_from_slice(&tx.saturating_sub(rx).to_le_bytes());
                    let _ = rxstamp::send_to(fd, &follow, &r.from, r.from_len);
                    let _ = rxstamp::tx_stamp(fd, 0); // the follow-up's own stamp: not needed
                }
            }
            Err(_) if busy => std::hint::spin_loop(),
            Err(_) => {}
        }
    }
    Ok(())
}

/// The server's residence for probe `seq` from its follow-up (None if it does not come).
fn follow_up(fd: std::os::fd::RawFd, seq: u64, buf: &mut [u8]) -> Option<u64> {
    let deadline = Instant::now() + FOLLOW_UP_WAIT;
    while Instant::now() < deadline {
        match rxstamp::recv(fd, buf) {
            Ok(r)
                if r.len == PROBE_HEADER && buf[..8] == seq.to_le_bytes() && buf[8..16] == FOLLOW_UP.to_le_bytes() =>
            {
                return Some(u64::from_le_bytes(buf[16..24].try_into().unwrap()));
            }
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::hint::spin_loop(),
            Err(_) => return None,
        }
    }
    None
}

fn summary(rtts: &mut [f64]) -> (f64, f64, f64, f64, f64, f64) {
    let mean = if rtts.is_empty() { 0.0 } else { rtts.iter().sum::<f64>() / rtts.len() as f64 };
    rtts.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let (min, max) = (rtts.first().copied().unwrap_or(0.0), rtts.last().copied().unwrap_or(0.0));
    (min, percentile(rtts, 0.5), percentile(rtts, 0.9), percentile(rtts, 0.99), max, mean)
}

pub fn ping_client(args: &Args) -> Result<(), String> {
    pin_from_args(args)?;
    let connect = args.required("connect")?;
    let count: usize = args.num("count", 100)?;
    let interval = Duration::from_micros(args.num("interval-us", 1000)?);
    let size: usize = args.num::<usize>("size", 64)?.clamp(PROBE_HEADER, 65000);
    let bind = args.get("bind").unwrap_or("0.0.0.0:0");
    let sock = UdpSocket::bind(bind).map_err(|e| format!("bind {bind}: {e}"))?;
    sock.connect(connect).map_err(|e| format!("connect {connect}: {e}"))?;
    let fd = sock.as_raw_fd();
    rxstamp::enable(fd).map_err(|e| format!("SO_TIMESTAMPNS: {e}"))?;
    rxstamp::enable_tx(fd).map_err(|e| format!("SO_TIMESTAMPING: {e}"))?;
    let wait = Duration::from_secs_f64(args.num("reply-timeout-s", 1.0)?);
    let busy = args.num::<u32>("busy-poll", 1)? == 1;
    if busy {
        sock.set_nonblocking(true).map_err(|e| e.to_string())?;
    } else {
        sock.set_read_timeout(Some(wait)).map_err(|e| e.to_string())?;
    }
    let mut out = vec![0u8; size];
    let mut back = vec![0u8; 65536];
    let mut rtts: Vec<f64> = Vec::with_capacity(count);
    let mut app_rtts: Vec<f64> = Vec::with_capacity(count);
    let (mut stamped, mut tx_stamped) = (0u64, 0u64);
    let mut next = Instant::now();
    for seq in 0..count as u64 {
        out[..8].copy_from_slice(&seq.to_le_bytes());
        let sent_ns = mono_ns();
        out[8..16].copy_from_slice(&sent_ns.to_le_bytes());
        let sent_real_ns = realtime_ns();
        if sock.send(&out).is_err() {
            continue;
        }
        let sent_tx_ns = rxstamp::tx_stamp(fd, 200_000);
        // Replies of earlier, timed-out probes are skipped by sequence number.
        let deadline = Instant::now() + wait;
        while Instant::now() < deadline {
            match rxstamp::recv(fd, &mut back) {
                Ok(r)
                    if r.len >= PROBE_HEADER
                        && back[..8] == seq.to_le_bytes()
                        && back[8..16] != FOLLOW_UP.to_le_bytes() =>
                {
                    let app_ns = mono_ns() - sent_ns;
                    let turnaround = u64::from_le_bytes(back[16..24].try_into().unwrap());
                    let residence = follow_up(fd, seq, &mut back);
                    let path_ns = match (r.stamp_ns, sent_tx_ns, residence) {
                        (Some(at), Some(tx), Some(res)) if at > tx + res => {
                            stamped += 1;
                            tx_stamped += 1;
                            at - tx - res
                        }
                        (Some(at), _, _) if turnaround > 0 && at > sent_real_ns + turnaround => {
                            stamped += 1;
                            at - sent_real_ns - turnaround
                        }
                        _ => app_ns,
                    };
                    rtts.push(path_ns as f64 / 1000.0);
                    app_rtts.push(app_ns as f64 / 1000.0);
                    break;
                }
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::hint::spin_loop(),
                Err(_) => break,
            }
        }
        next += interval;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            next = now;
        }
    }
    let received = rtts.len();
    let (min, p50, p90, p99, max, mean) = summary(&mut rtts);
    let (_, app_p50, _, app_p99, _, _) = summary(&mut app_rtts);
    println!(
        "{{\"count\": {count}, \"received\": {received}, \"kernel_stamped\": {stamped}, \"tx_stamped\": {tx_stamped}, \"rtt_min_us\": {min:.3}, \
         \"rtt_p50_us\": {p50:.3}, \"rtt_p90_us\": {p90:.3}, \"rtt_p99_us\": {p99:.3}, \"rtt_max_us\": {max:.3}, \
         \"rtt_mean_us\": {mean:.3}, \"app_rtt_p50_us\": {app_p50:.3}, \"app_rtt_p99_us\": {app_p99:.3}}}"
    );
    Ok(())
}

/// Constant bit rate: packets of `--size` bytes at `--rate-bps`, sent in bursts every
/// 200 us (the schedule is exact on average; a burst is what is due since the last one).
pub fn cbr_source(args: &Args) -> Result<(), String> {
    let connect = args.required("connect")?;
    let size: usize = args.num::<usize>("size", 1200)?.clamp(16, 65000);
    let rate_bps: f64 = args.num("rate-bps", 1e8)?;
    let seconds: f64 = args.num("duration-s", 5.0)?;
    if rate_bps <= 0.0 {
        return Err("--rate-bps must be positive".into());
    }
    let sock = UdpSocket::bind("0.0.0.0:0").map_err(|e| e.to_string())?;
    sock.connect(connect).map_err(|e| format!("connect {connect}: {e}"))?;
    let mut pkt = vec![0u8; size];
    let per_s = rate_bps / (size as f64 * 8.0);
    let start = Instant::now();
    let (mut sent, mut errors) = (0u64, 0u64);
    loop {
        let t = start.elapsed().as_secs_f64();
        if t >= seconds {
            break;
        }
        let due = (t * per_s) as u64;
        while sent + errors < due {
            pkt[..8].copy_from_slice(&(sent + errors).to_le_bytes());
            match sock.send(&pkt) {
                Ok(_) => sent += 1,
                Err(_) => errors += 1, // local buffer full: counted, not retried
            }
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    println!("{{\"packets_sent\": {sent}, \"send_errors\": {errors}, \"size_bytes\": {size}, \"seconds\": {seconds}}}");
    Ok(())
}

pub fn cbr_sink(args: &Args) -> Result<(), String> {
    let bind = args.required("bind")?;
    let sock = UdpSocket::bind(bind).map_err(|e| format!("bind {bind}: {e}"))?;
    // 16 MB of receive buffer (forced past net.core.rmem_max when root): ~130 ms of 1 Gb/s, so
    // the sink being descheduled for a while on a busy 2-core machine does not count as loss.
    let rcvbuf: libc::c_int = 16 << 20;
    // SAFETY: an int option value of the right size; failure leaves the default buffer.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&rcvbuf as *const libc::c_int).cast(),
            4,
        )
    };
    let until = Instant::now() + Duration::from_secs_f64(args.num("timeout-s", 60.0)?);
    let idle = Duration::from_secs_f64(args.num("idle-s", 1.0)?);
    sock.set_read_timeout(Some(Duration::from_millis(50))).map_err(|e| e.to_string())?;
    println!("ready");
    let _ = std::io::stdout().flush();
    let mut buf = vec![0u8; 65536];
    let (mut received, mut bytes, mut max_seq) = (0u64, 0u64, 0u64);
    let mut last: Option<Instant> = None;
    while Instant::now() < until {
        match sock.recv(&mut buf) {
            Ok(n) => {
                received += 1;
                bytes += n as u64;
                if n >= 8 {
                    max_seq = max_seq.max(u64::from_le_bytes(buf[..8].try_into().unwrap()));
                }
                last = Some(Instant::now());
            }
            Err(_) => {
                if last.is_some_and(|l| l.elapsed() > idle) {
                    break;
                }
            }
        }
    }
    println!("{{\"packets_received\": {received}, \"bytes_received\": {bytes}, \"max_seq\": {max_seq}}}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), 50.0);
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert_eq!(percentile(&v, 1.0), 100.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }
}
