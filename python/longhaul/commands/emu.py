"""`longhaul emu`: run real programs between two emulated clusters joined by a long-haul
link (delay, rate, queue, loss, jitter). Parsing and printing only; the work is in
longhaul.emu. Needs root (network namespaces, /dev/net/tun)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from longhaul.output import FORMATS, emit

LINK_HELP = """link options (units in the names; lists only for bench):
  --delay-us US        one-way delay in microseconds, 0..200000 (default 0); or
  --distance-km KM     fibre length, 5 us per km
  --rate-gbps G        link rate at the IP layer in Gb/s, 0 = unlimited, else 0.001..100
  --loss P             random loss probability per packet, 0..0.5
  --jitter-us US       extra delay uniform in [-US, +US], 0..100000, never reorders
  --queue SIZE         drop-tail bottleneck queue: bytes (4MB, 64K..1G) or packets (1000p)
  --mtu BYTES          MTU of every interface, 576..65520 (default 1500)
  --window SIZE        TCP buffer maximum (tcp_rmem/tcp_wmem) per namespace, 64K..1G
"""


def _link_args(p: argparse.ArgumentParser, lists: bool = False) -> None:
    g = p.add_argument_group("link (see 'longhaul emu --help')")
    many = " (comma list for a grid)" if lists else ""
    g.add_argument("--delay-us", help=f"one-way delay, us, 0..200000 (default 0){many}")
    g.add_argument("--distance-km", help=f"fibre length in km instead of --delay-us (5 us/km){many}")
    g.add_argument("--distance-miles", help="fibre length in miles instead of --delay-us")
    g.add_argument("--rate-gbps", help=f"link rate, Gb/s; 0 = unlimited (default){many}")
    g.add_argument("--loss", help="loss probability per packet, 0..0.5 (default 0)")
    g.add_argument("--jitter-us", help="jitter amplitude, us, 0..100000 (default 0)")
    g.add_argument("--queue", help="bottleneck queue: bytes (e.g. 4MB) or packets (e.g. 1000p); "
                                   "default one round trip at the rate, >= 256K")
    g.add_argument("--mtu", help="MTU in bytes, 576..65520 (default 1500)")
    g.add_argument("--window", help="TCP buffer maximum per namespace, e.g. 64M (default 4 x BDP, >= 4M)")
    g.add_argument("--scenario", help="TOML/JSON scenario file giving the link (options here override it)")
    g.add_argument("--seed", help="seed of loss and jitter (default 1)")
    g.add_argument("--name", help="run name (namespaces NAME-a0, NAME-b0, ...); default random lhXXXXXX")


def _link_values(args) -> dict:
    return {"delay_us": args.delay_us, "distance_km": args.distance_km, "distance_miles": args.distance_miles,
            "rate_gbps": args.rate_gbps, "loss": args.loss, "jitter_us": args.jitter_us, "queue": args.queue,
            "mtu": args.mtu, "window": args.window, "seed": args.seed, "hosts": getattr(args, "hosts", None)}


def _link(args):
    from longhaul.emu import scenario
    file_link = scenario.load(args.scenario)["link"] if args.scenario else {}
    return scenario.build_link(scenario.merged(file_link, _link_values(args)))


def register(subparsers) -> None:
    p = subparsers.add_parser("emu", help="emulate a long-haul link between two clusters and run real programs on it",
                              description=__doc__ + "\n\n" + LINK_HELP,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="emu_command", metavar="VERB", parser_class=type(p))
    sub.required = True

    sh = sub.add_parser("shell", help="a shell on host A0 with cluster B reachable ($LH_B0 = its address)")
    _link_args(sh)
    sh.add_argument("--hosts", help="hosts per cluster, 1..16 (default 1)")
    sh.add_argument("--side", choices=["a", "b"], default="a", help="cluster of the shell (default a)")
    sh.set_defaults(func=_shell)

    run = sub.add_parser("run", help="run commands on both clusters: -- A: CMD :: B: CMD",
                         description="Run commands on the hosts: `longhaul emu run --delay-us 1000 -- A: CMD :: B: CMD`. "
                                     "Host labels A:, B: (host 0) or A1:, B2:. The first segment is the client: when "
                                     "it exits, the others get --grace-s, then are stopped. Addresses are in $LH_A0, "
                                     "$LH_B0, ... (quote a segment as one word to have sh expand them).")
    _link_args(run)
    run.add_argument("--hosts", help="hosts per cluster, 1..16 (default 1)")
    run.add_argument("--grace-s", type=float, default=3.0, help="time the other commands get after the client ends")
    run.add_argument("--timeout-s", type=float, default=3600.0, help="stop everything after this (default 3600)")
    run.add_argument("--format", choices=FORMATS, default="table")
    run.add_argument("--stats", action="store_true", help="also print the link counters at the end")
    run.add_argument("command", nargs=argparse.REMAINDER, help="-- A: CMD :: B: CMD")
    run.set_defaults(func=_run)

    cl = sub.add_parser("clean", help="remove namespaces and processes left by runs whose controller died")
    cl.add_argument("--format", choices=FORMATS, default="table")
    cl.set_defaults(func=_clean)

    bench = sub.add_parser("bench", help="TCP throughput or UDP ping-pong RTT through the emulator")
    bsub = bench.add_subparsers(dest="bench_kind", metavar="KIND", parser_class=type(p))
    bsub.required = True
    bt = bsub.add_parser("tcp", help="TCP throughput A0 -> B0 (1..N streams, CC, window, duration)")
    _link_args(bt, lists=True)
    bt.add_argument("--streams", default="1", help="parallel TCP streams, 1..128 (comma list for a grid)")
    bt.add_argument("--cc", help="congestion control per socket, e.g. cubic,reno,bbr (default: the system's)")
    bt.add_argument("--duration-s", default="5", help="measured seconds, 0.1..3600 (default 5)")
    bt.add_argument("--omit-s", help="warm-up seconds left out (default 10 RTT, 0.2..2)")
    bt.add_argument("--tool", choices=["builtin", "iperf3"], default="builtin",
                    help="load generator: the project's own (default) or iperf3")
    bt.add_argument("--cross-gbps", default="0", help="UDP constant-bit-rate cross traffic A0->B0, Gb/s")
    bt.add_argument("--format", choices=FORMATS, default="table")
    _add_store_options(bt)
    bt.set_defaults(func=_bench_tcp)
    bp = bsub.add_parser("ping", help="UDP ping-pong RTT percentiles A0 <-> B0 (rtt_p50_us, rtt_p99_us)")
    _link_args(bp, lists=True)
    bp.add_argument("--count", default="1000", help="probes, 1..1000000 (default 1000)")
    bp.add_argument("--interval-us", default="1000", help="gap between probes, us (default 1000)")
    bp.add_argument("--size", default="64", help="UDP payload bytes, 16..65000 (default 64)")
    bp.add_argument("--cross-gbps", default="0", help="UDP constant-bit-rate cross traffic A0->B0, Gb/s")
    bp.add_argument("--format", choices=FORMATS, default="table")
    _add_store_options(bp)
    bp.set_defaults(func=_bench_ping)

    sc = sub.add_parser("scenario", help="run the [[bench]] entries of a scenario file on its [link]")
    sc.add_argument("file", help="TOML or JSON scenario file (see longhaul/emu/scenario.py for the format)")
    sc.add_argument("--format", choices=FORMATS, default="table")
    sc.set_defaults(func=_scenario)

    from longhaul.emu.mpi_cli import register as register_mpi
    register_mpi(sub, _link_args)


def _shell(args) -> int:
    from longhaul.emu.topology import Emulator
    link = _link(args)
    with Emulator(link, name=args.name) as emu:
        sys.stderr.write(f"longhaul emu: {emu.name}: host {args.side.upper()}0 ({emu.address(args.side)}); other cluster "
                         f"at {emu.address('b' if args.side == 'a' else 'a')} ($LH_A0, $LH_B0); exit the shell to tear down\n")
        shell = os.environ.get("SHELL", "/bin/bash")
        env = {"PS1": f"[emu {emu.name} {args.side.upper()}0] \\w# "}
        p = emu.popen(args.side, 0, [shell], env=env)
        try:
            return p.wait()
        except KeyboardInterrupt:
            p.terminate()
            p.wait()
            return 130


def _run(args) -> int:
    from longhaul.emu import run as runmod
    from longhaul.emu.topology import Emulator
    link = _link(args)
    commands = runmod.parse(args.command, link.hosts)
    with Emulator(link, name=args.name) as emu:
        records = runmod.run(emu, commands, grace_s=args.grace_s, timeout_s=args.timeout_s)
        stats = emu.stats()
    if args.format == "table":
        for r in records:
            how = "stopped" if r["stopped"] else f"exit {r['exit_code']}"
            print(f"== {r['host']}: {r['command']} ({how}, {r['seconds']} s)")
            sys.stdout.write(r["stdout"])
            if r["stderr"]:
                sys.stdout.write(r["stderr"])
        if args.stats:
            print(json.dumps(stats.get("directions", {}), indent=1))
    else:
        if args.stats:
            for r in records:
                r["link_stats"] = json.dumps(stats.get("directions", {}))
        emit(records, args.format)
    failed = [r for r in records if not r["stopped"] and r["exit_code"] != 0]
    return 1 if failed else 0


def _clean(args) -> int:
    from longhaul.emu import state, system
    system.require_privileges()
    records = state.clean()
    if args.format == "table" and not records:
        print("nothing to clean")
        return 0
    emit(records, args.format, columns=["name", "status", "namespaces_removed", "processes_killed"])
    return 0


def _floats(text, option, lo, hi):
    from longhaul.units import parse_float_list
    return parse_float_list(text, option, lo, hi)


def _bench_link_kwargs(args) -> dict:
    from longhaul.emu import scenario
    from longhaul.units import delays_from_options, parse_float_list
    file_link = scenario.load(args.scenario)["link"] if args.scenario else {}
    values = scenario.merged(file_link, _link_values(args))
    dist = [values.get(k) for k in ("delay_us", "distance_km", "distance_miles")]
    delays = delays_from_options(*[None if v is None else str(v) for v in dist])
    rates = parse_float_list(str(values.get("rate_gbps", 0)), "--rate-gbps", 0, 100)
    single = {k: values.get(k) for k in ("loss", "jitter_us", "queue", "mtu", "seed")}
    base = scenario.build_link({**single, "delay_us": delays[0], "rate_gbps": rates[0], "window": values.get("window")})
    return {"delay_us": delays, "rate_gbps": rates, "loss": base.ab.loss, "jitter_us": base.ab.jitter_us,
            "queue": base.ab.queue, "mtu": base.mtu, "window": base.window, "name": args.name}


TCP_COLUMNS = ["delay_us", "rate_gbps", "streams", "cc", "window_bytes", "bw_MBps", "throughput_gbps", "utilization",
               "retransmits", "rtt_us", "drops_queue", "emu_cpu_pct", "lateness_p99_us"]
PING_COLUMNS = ["delay_us", "rate_gbps", "rtt_configured_us", "rtt_min_us", "rtt_p50_us", "rtt_p90_us", "rtt_p99_us",
                "received", "count", "lateness_p99_us"]


def _add_store_options(p) -> None:
    from longhaul.results import add_store_option
    add_store_option(p)
    p.add_argument("--label", default="", help="label stored with the run (e.g. site or test name)")
    p.add_argument("--no-store", action="store_true", help="print only; do not save the run in the results store")


def _save(args, kind: str, records: list[dict], started_utc: str) -> None:
    """One emulated run per invocation, keyed by its options and start time (repeats are kept)."""
    if args.no_store or not records:
        return
    from longhaul.results import now_utc, store_from_args
    options = {k: v for k, v in vars(args).items() if k not in ("func", "format", "store", "no_store")
               and isinstance(v, (str, int, float, bool, type(None)))}
    scenario = {"kind": kind, "options": options, "started_utc": started_utc}
    store_from_args(args).put(scenario, records, source="emu", label=args.label, started_utc=started_utc,
                              finished_utc=now_utc())


def _bench_tcp(args) -> int:
    from longhaul.emu import bench
    from longhaul.units import parse_int_list
    from longhaul.results import now_utc
    started = now_utc()
    kw = _bench_link_kwargs(args)
    records = bench.tcp(**kw, streams=parse_int_list(args.streams, "--streams", 1, bench.MAX_STREAMS),
                        cc=args.cc.split(",") if args.cc else None,
                        duration_s=_floats(args.duration_s, "--duration-s", 0.1, 3600)[0],
                        omit_s=_floats(args.omit_s, "--omit-s", 0, 60)[0] if args.omit_s else None,
                        tool=args.tool, cross_gbps=_floats(args.cross_gbps, "--cross-gbps", 0, 100)[0])
    _save(args, "emu-bench-tcp", records, started)
    emit(records, args.format, columns=TCP_COLUMNS if args.format == "table" else None, title="longhaul emu bench tcp")
    return 0


def _bench_ping(args) -> int:
    from longhaul.emu import bench
    from longhaul.units import parse_int_list
    from longhaul.results import now_utc
    started = now_utc()
    kw = _bench_link_kwargs(args)
    kw.pop("window")
    records = bench.ping(**kw, count=parse_int_list(args.count, "--count", 1, 1_000_000)[0],
                         interval_us=_floats(args.interval_us, "--interval-us", 10, 1e7)[0],
                         size_bytes=parse_int_list(args.size, "--size", 16, 65000)[0],
                         cross_gbps=_floats(args.cross_gbps, "--cross-gbps", 0, 100)[0])
    _save(args, "emu-bench-ping", records, started)
    emit(records, args.format, columns=PING_COLUMNS if args.format == "table" else None, title="longhaul emu bench ping")
    return 0


def _scenario(args) -> int:
    from longhaul.emu import bench, scenario
    from longhaul.emu.topology import Emulator
    data = scenario.load(args.file)
    link = scenario.build_link(data["link"])
    if not data["bench"]:
        sys.stderr.write(f"longhaul emu: {args.file} has no [[bench]] entries; nothing to run\n")
        return 0
    records = []
    with Emulator(link) as emu:
        for b in data["bench"]:
            if b["kind"] == "tcp":
                streams = b.get("streams", 1)
                ccs = b.get("cc", [None])
                for s in streams if isinstance(streams, list) else [streams]:
                    for c in ccs if isinstance(ccs, list) else [ccs]:
                        records.append(bench.tcp_once(emu, int(s), c and _check_cc(c), float(b.get("duration_s", 5)),
                                                      b.get("omit_s"), b.get("tool", "builtin"),
                                                      float(b.get("cross_gbps", 0))))
            else:
                records.append(bench.ping_once(emu, int(b.get("count", 1000)), float(b.get("interval_us", 1000)),
                                               int(b.get("size_bytes", 64)), float(b.get("cross_gbps", 0))))
    emit(records, args.format)
    return 0


def _check_cc(cc: str) -> str:
    from longhaul.emu import system
    return system.check_congestion_control(cc)
