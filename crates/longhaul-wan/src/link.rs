//! `longhaul-wan link`: the data plane process. Creates one TUN device per host and link in
//! each cluster's namespaces, runs one thread per direction (A->B and B->A, independent link
//! models, one per link) and writes the stats file every interval, on SIGUSR1 and at exit;
//! on SIGUSR2 it reads the control file and takes links down or up (`control.rs`).
//!
//! Options (all values; Python's longhaul.emu.topology builds them):
//!   --a NS=IP[,IP..]   a host of cluster A: namespace name and its addresses (repeatable)
//!   --b NS=IP[,IP..]   the same for cluster B
//!   --ab SPEC          each link A->B: delay_ns=,jitter_ns=,rate_bps=,queue_bytes=|queue_packets=,loss=,frame_bytes=,seed=
//!   --ba SPEC          each link B->A (link k draws from seed + 2k)
//!   --links N          parallel links, 1..16 (default 1), devices IFNAME0 .. IFNAME<N-1>
//!   --ifname PREFIX    TUN device name prefix inside each host namespace (default wan)
//!   --control PATH     the control file: links to be down (default: none; links stay up)
//!   --detect-us N      time from a cut to the hosts losing carrier on the link (default 0)
//!   --stats PATH       stats JSON file (default: none)
//!   --interval-ms N    stats period (default 200)
//!   --spin-us N        busy-poll window before each release (default 50)
//!   --idle-wake-us N   wake at least this often even with nothing to do (default 0 = never)
//!   --rt-priority N    SCHED_FIFO priority of the direction threads, 0 = none (default 10)
//!   --ab-cpu N, --ba-cpu N  pin a direction's thread to a CPU (default -1 = any)
//!   --parent-pid N     exit at once if this process is gone (race-free with PDEATHSIG)

use std::io::Write;
use std::net::IpAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

use crate::args::{parse_kv, Args};
use crate::control::{self, Control};
use crate::dataplane::{self, Counters, Input, Lane, LaneCounters, LinkStates, LoopOptions, Output};
use crate::model::{DirectionConfig, LinkModel, QueueLimit};
use crate::packet::Dest;
use crate::stats::{render, write_atomically, DirectionStats, LinkStats};
use crate::sys;
use crate::tun;

pub fn direction_config(spec: &str) -> Result<DirectionConfig, String> {
    let kv = parse_kv(spec)?;
    let num = |k: &str, default: u64| -> Result<u64, String> {
        kv.get(k).map_or(Ok(default), |v| v.parse().map_err(|_| format!("{k}: '{v}' is not a whole number")))
    };
    let loss: f64 =
        kv.get("loss").map_or(Ok(0.0), |v| v.parse().map_err(|_| format!("loss: '{v}' is not a number")))?;
    if !(0.0..1.0).contains(&loss) {
        return Err(format!("loss {loss} is out of range [0, 1)"));
    }
    let queue = match (kv.get("queue_bytes"), kv.get("queue_packets")) {
        (Some(_), Some(_)) => return Err("give queue_bytes or queue_packets, not both".into()),
        (_, Some(_)) => QueueLimit::Packets(num("queue_packets", 0)?.max(1)),
        _ => QueueLimit::Bytes(num("queue_bytes", 4 << 20)?.max(1)),
    };
    for k in kv.keys() {
        if !["delay_ns", "jitter_ns", "rate_bps", "queue_bytes", "queue_packets", "loss", "frame_bytes", "seed"]
            .contains(&k.as_str())
        {
            return Err(format!("unknown link parameter '{k}'"));
        }
    }
    Ok(DirectionConfig {
        delay_ns: num("delay_ns", 0)?,
        jitter_ns: num("jitter_ns", 0)?,
        rate_bps: num("rate_bps", 0)?,
        queue,
        loss,
        frame_bytes: num("frame_bytes", 0)?,
        seed: num("seed", 1)?,
    })
}

struct Host {
    ns: String,
    addresses: Vec<Dest>,
}

fn parse_host(text: &str) -> Result<Host, String> {
    let (ns, addrs) = text.split_once('=').ok_or_else(|| format!("host '{text}' is not NS=IP[,IP..]"))?;
    let mut addresses = Vec::new();
    for a in addrs.split(',').filter(|a| !a.is_empty()) {
        match a.parse::<IpAddr>().map_err(|_| format!("'{a}' is not an IP address"))? {
            IpAddr::V4(v4) => addresses.push(Dest::V4(v4.octets())),
            IpAddr::V6(v6) => addresses.push(Dest::V6(v6.octets())),
        }
    }
    Ok(Host { ns: ns.to_string(), addresses })
}

/// Most parallel links, as the simulator's path.wan_links (the S3 study used 4).
const MAX_LINKS: usize = 16;

/// The lanes of one direction: link k's model (seed + 2k) and the receiving hosts' devices.
fn lanes(cfg: &DirectionConfig, tuns: &[Vec<tun::Tun>], hosts: &[Host], counters: &[Arc<LaneCounters>]) -> Vec<Lane> {
    (0..counters.len())
        .map(|k| Lane {
            model: LinkModel::new(DirectionConfig { seed: cfg.seed.wrapping_add(2 * k as u64), ..cfg.clone() }),
            outputs: tuns
                .iter()
                .zip(hosts)
                .map(|(t, h)| Output { fd: t[k].fd.as_raw_fd(), addresses: h.addresses.clone() })
                .collect(),
            counters: counters[k].clone(),
        })
        .collect()
}

fn inputs(tuns: &[Vec<tun::Tun>]) -> Vec<Input> {
    tuns.iter().flat_map(|t| t.iter().enumerate().map(|(k, d)| Input { fd: d.fd.as_raw_fd(), lane: k })).collect()
}

pub fn main(args: &Args) -> Result<(), String> {
    let hosts_a: Vec<Host> = args.all("a").into_iter().map(parse_host).collect::<Result<_, _>>()?;
    let hosts_b: Vec<Host> = args.all("b").into_iter().map(parse_host).collect::<Result<_, _>>()?;
    if hosts_a.is_empty() || hosts_b.is_empty() {
        return Err("need at least one --a and one --b host".into());
    }
    let ab = direction_config(args.get("ab").unwrap_or(""))?;
    let ba = direction_config(args.get("ba").unwrap_or(""))?;
    let links: usize = args.num("links", 1)?;
    if !(1..=MAX_LINKS).contains(&links) {
        return Err(format!("--links: {links} is out of range [1, {MAX_LINKS}]"));
    }
    let ifname = args.get("ifname").unwrap_or("wan");
    let control_path = args.get("control").map(str::to_string);
    let detect_ns = args.num::<u64>("detect-us", 0)?.saturating_mul(1000);
    let stats_path = args.get("stats").map(str::to_string);
    let interval_ms: u64 = args.num("interval-ms", 200)?;
    let spin_ns = args.num::<u64>("spin-us", 50)? * 1000;
    let idle_wake_ns = args.num::<u64>("idle-wake-us", 0)? * 1000;
    let rt_priority: i32 = args.num("rt-priority", 10)?;
    let cpu = |key: &str| -> Result<Option<usize>, String> {
        match args.num::<i64>(key, -1)? {
            -1 => Ok(None),
            n if n >= 0 && (n as usize) < std::thread::available_parallelism().map_or(1, |p| p.get()) => {
                Ok(Some(n as usize))
            }
            n => Err(format!("--{key}: CPU {n} is not one of this machine's (or -1 for any)")),
        }
    };
    let (cpu_ab, cpu_ba) = (cpu("ab-cpu")?, cpu("ba-cpu")?);

    let signals = sys::signal_set(&[libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGUSR1, libc::SIGUSR2]);
    sys::block_signals(&signals);
    sys::die_with_parent(libc::SIGTERM);
    if let Some(ppid) = args.get("parent-pid") {
        // SAFETY: getppid has no preconditions.
        if ppid.parse::<i32>().ok() != Some(unsafe { libc::getppid() }) {
            return Err("the controller is already gone".into());
        }
    }

    // tuns[host][link]
    let open_all = |hosts: &[Host]| -> Result<Vec<Vec<tun::Tun>>, String> {
        hosts
            .iter()
            .map(|h| {
                (0..links)
                    .map(|k| {
                        tun::open(&h.ns, &format!("{ifname}{k}"))
                            .map_err(|e| format!("TUN {ifname}{k} in namespace {}: {e}", h.ns))
                    })
                    .collect()
            })
            .collect()
    };
    let tuns_a = open_all(&hosts_a)?;
    let tuns_b = open_all(&hosts_b)?;
    let all_tuns = || tuns_a.iter().chain(tuns_b.iter()).flatten();
    let offload = all_tuns().all(|t| t.offload);
    // Whether the hosts can be told of a failure (TUNSETCARRIER, Linux 5.0+).
    let carrier = all_tuns().all(|t| tun::set_carrier(&t.fd, true).is_ok());

    let stop = Arc::new(AtomicBool::new(false));
    let states = Arc::new(LinkStates::all_up(links));
    let counters_ab = Arc::new(Counters::default());
    let counters_ba = Arc::new(Counters::default());
    let lanes_ab: Vec<Arc<LaneCounters>> = (0..links).map(|_| Arc::default()).collect();
    let lanes_ba: Vec<Arc<LaneCounters>> = (0..links).map(|_| Arc::default()).collect();
    let start_ns = sys::mono_ns();
    let spawn = |name: &str, inputs, lanes, counters: Arc<Counters>, cpu: Option<usize>| {
        let (stop, states) = (stop.clone(), states.clone());
        std::thread::Builder::new().name(name.to_string()).spawn(move || {
            let opts = LoopOptions { spin_ns, rt_priority, idle_wake_ns, cpu };
            dataplane::run(inputs, lanes, states, counters, stop, opts)
        })
    };
    let t_ab = spawn("ab", inputs(&tuns_a), lanes(&ab, &tuns_b, &hosts_b, &lanes_ab), counters_ab.clone(), cpu_ab)
        .map_err(|e| format!("cannot start thread: {e}"))?;
    let t_ba = spawn("ba", inputs(&tuns_b), lanes(&ba, &tuns_a, &hosts_a, &lanes_ba), counters_ba.clone(), cpu_ba)
        .map_err(|e| format!("cannot start thread: {e}"))?;

    let mut control = Control::new(states.clone(), detect_ns);
    let mut control_error: Option<String> = None;
    let snapshot = |control: &Control, error: &Option<String>, running: bool| -> String {
        let dirs = [
            DirectionStats { name: "ab", config: &ab, counters: &counters_ab },
            DirectionStats { name: "ba", config: &ba, counters: &counters_ba },
        ];
        let elapsed = |ns: u64| ns.saturating_sub(start_ns) as f64 * 1e-9;
        let link_stats: Vec<LinkStats> = (0..links)
            .map(|k| LinkStats {
                up: control.links.is_up(k),
                carrier: control.carrier[k],
                changes: control.changes[k],
                changed_s: (control.changes[k] > 0).then(|| elapsed(control.changed_ns[k])),
                ab: &lanes_ab[k],
                ba: &lanes_ba[k],
            })
            .collect();
        render(&dirs, &link_stats, elapsed(sys::mono_ns()), sys::process_cpu_s(), offload, running, error.as_deref())
    };
    let publish = |control: &Control, error: &Option<String>, running: bool| {
        if let Some(p) = &stats_path {
            let _ = write_atomically(p, &snapshot(control, error, running));
        }
    };
    let set_carrier = |change: control::CarrierChange| {
        for host in tuns_a.iter().chain(tuns_b.iter()) {
            let _ = tun::set_carrier(&host[change.link].fd, change.on);
        }
    };
    publish(&control, &control_error, true);
    println!("ready offload={offload} carrier={carrier}");
    let _ = std::io::stdout().flush();

    // SIGUSR1 or the interval: publish the statistics; SIGUSR2: read the control file; any
    // other signal: stop. A pending carrier loss shortens the wait.
    loop {
        let now = sys::mono_ns();
        let wait_ms =
            control.next_due_ns().map_or(interval_ms, |t| interval_ms.min(t.saturating_sub(now).div_ceil(1_000_000)));
        match sys::wait_signal(&signals, wait_ms) {
            None | Some(libc::SIGUSR1) => {}
            Some(libc::SIGUSR2) => {
                let text = control_path.as_ref().map(std::fs::read_to_string).transpose();
                match text
                    .map_err(|e| format!("control file: {e}"))
                    .and_then(|t| control::parse_down(t.as_deref().unwrap_or(""), links))
                {
                    Ok(down) => {
                        control_error = None;
                        control.apply(&down, sys::mono_ns()).into_iter().for_each(set_carrier);
                    }
                    Err(e) => control_error = Some(e),
                }
            }
            Some(_) => break,
        }
        control.due(sys::mono_ns()).into_iter().for_each(set_carrier);
        publish(&control, &control_error, true);
        if t_ab.is_finished() || t_ba.is_finished() {
            break;
        }
    }
    stop.store(true, Relaxed);
    let r_ab = t_ab.join();
    let r_ba = t_ba.join();
    publish(&control, &control_error, false);
    for r in [r_ab, r_ba] {
        match r {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(format!("direction thread failed: {e}")),
            Err(_) => return Err("direction thread panicked".into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direction_spec_parses_and_rejects() {
        let c = direction_config("delay_ns=1000000,rate_bps=1000000000,queue_packets=100,loss=0.001,seed=5").unwrap();
        assert_eq!(c.delay_ns, 1_000_000);
        assert_eq!(c.queue, QueueLimit::Packets(100));
        assert!(direction_config("loss=1.5").is_err());
        assert!(direction_config("delay_ns=-3").is_err());
        assert!(direction_config("bogus=1").is_err());
        assert!(direction_config("queue_bytes=1,queue_packets=1").is_err());
        assert_eq!(direction_config("").unwrap(), DirectionConfig::default());
    }

    #[test]
    fn hosts_parse() {
        let h = parse_host("lh-a0=10.77.1.1,fd00::1").unwrap();
        assert_eq!(h.ns, "lh-a0");
        assert_eq!(h.addresses.len(), 2);
        assert!(parse_host("nope").is_err());
        assert!(parse_host("ns=300.1.1.1").is_err());
    }
}
