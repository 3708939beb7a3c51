"""Link failover: the emulator's drill (``longhaul emu drill``) vs the simulator on the same scenario.

The emulated side stands alone: real iperf3 and rsync over ``path.wan_links`` links while the
scenario's ``[[events]]`` unplug and replug them, measured per phase (between events). The
simulated side plugs in through ``SIMULATED``: a function of the drill's inputs that returns
one record per phase with ``bw_MBps`` (and ``recovery_s`` when it models the transient).

The simulator's link events are InfiniBand's (``sim verbs`` with ``[[events]]``, packet level, and
``sim pfs``, a file system at flow level: the subnet manager's reroute, RC retries); the drill runs TCP over Ethernet links with the kernel's
multipath routes, which the TCP model does not build, so the one here is still
``tcp-aggregate``: the simulator's existing TCP model on one Ethernet link as fast as the links
up in the phase, the same streams, delay, MTU and buffers, in steady state (mean of the second
half of a run as long as the phase, at least ``MIN_SIM_S``). It has no failure transient
(detection, retransmission time-outs: ``recovery_s`` is empty) and no flow hashing: a link that
no flow hashes to idles in the emulator, not in it. Emulated bandwidth is converted from IP bytes
to TCP payload (MTU - 52 bytes of IPv4, TCP and timestamp-option headers per MTU-sized segment)
to sit beside the simulator's payload rate.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from longhaul.output import FORMATS, emit

#: IPv4 (20) + TCP (20) + timestamps option (12, Linux's default tcp_timestamps = 1) per segment.
TCP_IP_HEADER_BYTES = 52
MIN_SIM_S = 4.0
SIM_INTERVAL_S = 0.1
COLUMNS = ["phase", "event", "links_up", "emu_bw_MBps", "sim_bw_MBps", "rel_diff", "emu_dip_MBps", "emu_recovery_s",
           "sim_recovery_s"]


def tcp_aggregate(link, phases: list[dict], streams: int, seed: int) -> list[dict]:
    """Per phase: the simulator's TCP over one link of (links up) x the link rate, steady state."""
    from longhaul.sim import tcp

    out = []
    for ph in phases:
        rate = ph["links_up"] * link.ab.rate_gbps
        if rate == 0:
            out.append({"phase": ph["phase"], "bw_MBps": 0.0, "recovery_s": None})
            continue
        seconds = max(MIN_SIM_S, ph["to_s"] - ph["from_s"])
        sc = tcp.scenario(link="10gige-lan", stack="modern", seed=seed, delay_us=link.ab.delay_us, rate_gbps=rate,
                          mtu_bytes=link.mtu, streams=streams, rmem_max_bytes=link.effective_window(),
                          wmem_max_bytes=link.wmem_max or link.effective_window(), duration_s=seconds,
                          interval_s=SIM_INTERVAL_S)
        rec = tcp.run(sc)
        late = [bw for t, bw in zip(rec["series_t_s"], rec["series_bw_MBps"]) if t > seconds / 2]
        out.append({"phase": ph["phase"], "bw_MBps": round(sum(late) / len(late), 3) if late else rec["bw_MBps"],
                    "recovery_s": None})
    return out


#: The simulated sides, by name: (link, emulated phases, streams, seed) -> per-phase records.
SIMULATED: dict[str, Callable[..., list[dict]]] = {"tcp-aggregate": tcp_aggregate}


def side_by_side(emulated: dict, simulated: list[dict], mtu: int) -> list[dict]:
    payload = (mtu - TCP_IP_HEADER_BYTES) / mtu
    sim = {r["phase"]: r for r in simulated}
    rows = []
    for ph in emulated["phases"]:
        e = round(ph["bw_MBps"] * payload, 3) if ph["bw_MBps"] is not None else None
        s = sim.get(ph["phase"], {})
        rows.append({"phase": ph["phase"], "event": ph["event"], "links_up": ph["links_up"], "emu_bw_MBps": e,
                     "sim_bw_MBps": s.get("bw_MBps"),
                     "rel_diff": round((s["bw_MBps"] - e) / e, 4) if e and s.get("bw_MBps") is not None else None,
                     "emu_dip_MBps": round(ph["dip_MBps"] * payload, 3) if ph["dip_MBps"] is not None else None,
                     "emu_recovery_s": ph["recovery_s"], "sim_recovery_s": s.get("recovery_s")})
    return rows


def register(sub: argparse._SubParsersAction) -> None:
    from longhaul.emu.drill import DEFAULT_DURATION_S, DEFAULT_STREAMS
    p = sub.add_parser("failover", help="link failover: the emulator's drill vs the simulator, phase by phase",
                       description="Run the scenario file's failover drill in the emulator (iperf3 and rsync over "
                                   "path.wan_links links while its [[events]] unplug and replug them; needs root), "
                                   "then the simulated side, and print per phase (between events) both bandwidths "
                                   "(TCP payload, MB = 10^6 bytes) with rel_diff = (sim - emu) / emu. The simulated "
                                   "side today is tcp-aggregate: the TCP model on one link as fast as the links up, "
                                   "in steady state (no failure transient, no flow hashing).")
    p.add_argument("--scenario", required=True, help="the scenario file (TOML/JSON): a TCP scenario with "
                                                     "path.wan_links and [[events]] (docs/reference/scenario-files.md)")
    p.add_argument("--duration-s", help=f"seconds of traffic, whole, 2..3600 (default the file's tcp.duration_s, "
                                        f"else {DEFAULT_DURATION_S})")
    p.add_argument("--streams", help=f"iperf3 -P streams, 1..128 (default the file's tcp.streams, else {DEFAULT_STREAMS})")
    p.add_argument("--transfer-workers", default="4", help="rsync workers, 0..16 (default 4)")
    p.add_argument("--transfer-bytes", default="8M", help="size of each worker's file, 4K..1G (default 8M)")
    p.add_argument("--interval-s", default="0.2", help="sampling period, 0.05..10 s (default 0.2)")
    p.add_argument("--sim", choices=sorted(SIMULATED), default="tcp-aggregate", help="the simulated side")
    p.add_argument("--name", help="run name of the emulator (default random)")
    p.add_argument("--format", choices=FORMATS, default="table")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    import json
    import sys

    from longhaul.emu import drill, scenario
    from longhaul.units import parse_one_float, parse_one_int, parse_size

    file = scenario.load(args.scenario)
    link = scenario.build_link(file["link"])
    events, duration, streams = drill.plan(file, link, args.duration_s, args.streams, args.scenario)
    workers = parse_one_int(args.transfer_workers, "--transfer-workers", 0, drill.MAX_WORKERS)
    size = parse_size(args.transfer_bytes, "--transfer-bytes")
    interval = parse_one_float(args.interval_s, "--interval-s", *drill.INTERVAL_S_RANGE)
    drill.check(streams, workers, size, interval, duration)
    emulated = drill.run(link, events, duration, streams=streams, transfer_workers=workers, transfer_bytes=size,
                         interval_s=interval, name=args.name)
    simulated = SIMULATED[args.sim](link, emulated["phases"], streams, link.seed)
    rows = side_by_side(emulated, simulated, link.mtu)
    if args.format == "json":
        json.dump({"side_by_side": rows, "sim": args.sim, "emu": emulated}, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        emit(rows, args.format, COLUMNS if args.format == "table" else None,
             title=f"longhaul compare failover ({link.links} links; sim = {args.sim}; rel_diff = (sim - emu) / emu)")
        if args.format == "table":
            print(drill.summary_text(emulated["summary"]))
    return 0
