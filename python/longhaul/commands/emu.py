"""`longhaul emu`: run real programs between two emulated clusters joined by a long-haul
link (delay, rate, queue, loss, jitter). Parsing and printing only; the work is in
longhaul.emu. Needs root (network namespaces, /dev/net/tun)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from longhaul.commands.emuverbs.link import (
    add_store_options,
    bench_link,
    check_store,
    link_args,
    link_of,
    link_values,
    save,
    scenario_file,
)
from longhaul.errors import UserError
from longhaul.output import FORMATS, emit
from longhaul.units import parse_one_float, parse_one_int

LINK_HELP = """link options (units in the names; lists only for bench):
  --delay-us US        one-way delay in microseconds, 0..200000 (default 0); or
  --distance-km KM     fibre length, 5 us per km
  --rate-gbps G        link rate at the IP layer in Gb/s, 0 = unlimited, else 0.001..100
  --loss P             random loss probability per wire packet, 0..0.5
  --jitter-us US       extra delay uniform in [-US, +US], 0..100000, never reorders
  --queue SIZE         drop-tail bottleneck queue: bytes (4MB, 64K..1G) or packets (1000p)
  --mtu BYTES          MTU of every interface, >= 576 up to what the kernel accepts (65535
                       for TUN and veth; 65520 = IPoIB connected mode; default 1500)
  --window SIZE        TCP buffer maximum (tcp_rmem/tcp_wmem) per namespace, 64K..1G
  --scenario FILE      the simulator's TCP scenario file (`longhaul sim tcp --scenario FILE`):
                       link, TCP settings and, for bench tcp, the workload; options override it
  --wan-links N        parallel links, 1..16, each with the options above (shell, run, bench tcp,
                       drill); take one down and up with `longhaul emu link down|up K`
"""


def register(subparsers) -> None:
    p = subparsers.add_parser("emu", help="emulate a long-haul link between two clusters and run real programs on it",
                              description=__doc__ + "\n\n" + LINK_HELP,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="emu_command", metavar="VERB", parser_class=type(p))
    sub.required = True

    sh = sub.add_parser("shell", help="a shell on host A0 with cluster B reachable ($LH_B0 = its address)")
    link_args(sh, links=True)
    sh.add_argument("--hosts", help="hosts per cluster, 1..16 (default 1)")
    sh.add_argument("--side", choices=["a", "b"], default="a", help="cluster of the shell (default a)")
    sh.set_defaults(func=_shell)

    run = sub.add_parser("run", help="run commands on both clusters: -- A: CMD :: B: CMD",
                         description="Run commands on the hosts: `longhaul emu run --delay-us 1000 -- A: CMD :: B: CMD`. "
                                     "Host labels A:, B: (host 0) or A1:, B2:. The first segment is the client: when "
                                     "it exits, the others get --grace-s, then are stopped. Addresses are in $LH_A0, "
                                     "$LH_B0, ... (quote a segment as one word to have sh expand them).")
    link_args(run, links=True)
    run.add_argument("--hosts", help="hosts per cluster, 1..16 (default 1)")
    run.add_argument("--grace-s", type=float, default=3.0,
                     help="seconds the other commands get after the client ends, 0..3600 (default 3)")
    run.add_argument("--timeout-s", type=float, default=3600.0,
                     help="stop everything after this many seconds, 0.1..86400 (default 3600); a client "
                          "stopped so makes the exit status 1")
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
    link_args(bt, lists=True, links=True)
    bt.add_argument("--streams", help="parallel TCP streams, 1..128 (comma list for a grid; default 1)")
    bt.add_argument("--cc", help="congestion control per socket, e.g. cubic,reno,bbr (default: the system's)")
    bt.add_argument("--duration-s", help="measured seconds, 0.1..3600 (default 5)")
    bt.add_argument("--socket-buffer", help="fixed socket buffers at both ends, as iperf -w (e.g. 256K; 4K..1G; "
                                            "default: auto-tuning up to --window)")
    bt.add_argument("--omit-s", help="warm-up seconds left out, 0..60 (default 10 round trips, kept within 0.2..2)")
    bt.add_argument("--tool", choices=["builtin", "iperf3"], default="builtin",
                    help="load generator: the project's own (default) or iperf3")
    bt.add_argument("--cross-gbps", help="UDP constant-bit-rate cross traffic A0->B0, Gb/s (default 0)")
    bt.add_argument("--format", choices=FORMATS, default="table")
    add_store_options(bt)
    bt.set_defaults(func=_bench_tcp)
    bp = bsub.add_parser("ping", help="UDP ping-pong RTT percentiles A0 <-> B0 (rtt_p50_us, rtt_p99_us)")
    link_args(bp, lists=True)
    bp.add_argument("--count", default="1000", help="probes, 1..1000000 (default 1000)")
    bp.add_argument("--interval-us", default="1000", help="gap between probes, us, 10..1e7 (default 1000; count x "
                                                          "interval at most a day)")
    bp.add_argument("--size", default="64", help="UDP payload bytes, 24..65000 (default 64)")
    bp.add_argument("--cross-gbps", help="UDP constant-bit-rate cross traffic A0->B0, Gb/s (default 0)")
    bp.add_argument("--format", choices=FORMATS, default="table")
    add_store_options(bp)
    bp.set_defaults(func=_bench_ping)

    from longhaul.commands.emuverbs.mpi import register as register_mpi
    register_mpi(sub, link_args)
    from longhaul.commands.emuverbs.failover import register as register_failover
    register_failover(sub, link_args)


def _shell(args) -> int:
    from longhaul.emu.topology import Emulator
    link = link_of(args)
    with Emulator(link, name=args.name) as emu:
        sys.stderr.write(f"longhaul emu: {emu.name}: host {args.side.upper()}0 ({emu.address(args.side)}); other cluster "
                         f"at {emu.address('b' if args.side == 'a' else 'a')} ($LH_A0, $LH_B0); exit the shell to tear down\n")
        if link.links > 1:
            sys.stderr.write(f"longhaul emu: {link.links} links ({', '.join(emu.link_devices)}); from another terminal: "
                             f"longhaul emu link down|up K --name {emu.name}\n")
        shell = os.environ.get("SHELL", "/bin/bash")
        env = {"PS1": f"[emu {emu.name} {args.side.upper()}0] \\w# "}
        p = emu.popen(args.side, 0, [shell], env=env)
        try:
            return p.wait()
        except KeyboardInterrupt:   # SIGINT to longhaul itself (a typed Ctrl-C goes to the shell, which stays)
            p.terminate()
            p.wait()
            sys.stderr.write("longhaul: interrupted (the shell was stopped and the emulated link torn down)\n")
            return 130


def _run(args) -> int:
    from longhaul import failover
    from longhaul.emu import run as runmod, scenario
    from longhaul.emu.topology import Emulator
    runmod.check_times(args.grace_s, args.timeout_s)
    file = scenario_file(args, events=True)
    link = scenario.build_link(scenario.merged(file["link"], link_values(args)))
    # The run lasts at most --timeout-s: an event later than that could never happen.
    events = failover.parse(file["events"], link.links, args.timeout_s, f"scenario {args.scenario}: events",
                            length="--timeout-s")
    commands = runmod.parse(args.command, link.hosts)
    applied: list[dict] = []
    with Emulator(link, name=args.name) as emu:
        records = runmod.run(emu, commands, grace_s=args.grace_s, timeout_s=args.timeout_s, events=events,
                             applied=applied)
        stats = emu.stats()
    for e in applied:
        sys.stderr.write(f"longhaul emu run: {e['applied_s']:.2f} s: link {e['link']} {e['action']}\n")
    if len(applied) < len(events):
        sys.stderr.write(f"longhaul: note: {len(events) - len(applied)} of the scenario's events came after the "
                         f"commands ended ({events[len(applied)].at_s:g} s and later) and were not applied\n")
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
        if args.stats:  # nested in JSON; CSV has one cell for it
            for r in records:
                r["link_stats"] = stats.get("directions", {}) if args.format == "json" else json.dumps(stats.get("directions", {}))
        emit(records, args.format)
    timed_out = [r["host"] for r in records if r["client"] and r["stopped"]]
    if timed_out:
        sys.stderr.write(f"longhaul: the client ({', '.join(timed_out)}) was still running at --timeout-s "
                         f"{args.timeout_s:g} and was stopped\n")
    failed = [r for r in records if not r["stopped"] and r["exit_code"] != 0]
    return 1 if failed or timed_out else 0


def _clean(args) -> int:
    from longhaul.emu import state, system
    system.require_privileges()
    records = state.clean()
    if args.format == "table" and not records:
        print("nothing to clean")
        return 0
    emit(records, args.format, columns=["name", "status", "namespaces_removed", "processes_killed"])
    return 0


TCP_COLUMNS = ["delay_us", "rate_gbps", "mtu_bytes", "streams", "cc", "window_bytes", "bw_MBps", "throughput_gbps", "utilization",
               "retransmits", "rtt_us", "drops_queue", "emu_cpu_pct", "lateness_p99_us"]
PING_COLUMNS = ["delay_us", "rate_gbps", "rtt_configured_us", "rtt_min_us", "rtt_p50_us", "rtt_p90_us", "rtt_p99_us",
                "app_rtt_p50_us", "received", "count", "lateness_p99_us"]


def _given(cli_value, file_value, default):
    return cli_value if cli_value is not None else file_value if file_value is not None else default


def _cross(args, file: dict) -> tuple[float, str]:
    """Cross traffic in Gb/s, from --cross-gbps or else the scenario file (whose load checked it),
    and what messages call it: bench checks it against the link's rates, which either may set."""
    from longhaul.emu import bench, scenario
    if args.cross_gbps is not None:
        return parse_one_float(args.cross_gbps, "--cross-gbps", 0, bench.MAX_CROSS_GBPS), "--cross-gbps"
    if args.scenario is not None:
        return file.get("cross_gbps", 0.0), scenario.key_name(args.scenario, "cross.gbps")
    return 0.0, "--cross-gbps"


def _cc_list(text: str) -> list[str]:
    from longhaul.units import list_items
    valid = "a congestion control this machine has, like cubic or bbr"
    names = list_items(text, "--cc", valid)
    if not names:
        raise UserError(f"--cc: empty list (each item is {valid})")
    return names


def _bench_tcp(args) -> int:
    from longhaul.emu import bench
    from longhaul.results import now_utc
    from longhaul.units import parse_int_list, parse_size
    started = now_utc()
    check_store(args)
    link, delays, rates, file = bench_link(args)
    cross, cross_name = _cross(args, file)
    buffer = parse_size(args.socket_buffer, "--socket-buffer") if args.socket_buffer is not None else file.get("socket_buffer_bytes")
    records = bench.tcp(link=link, delay_us=delays, rate_gbps=rates,
                        streams=parse_int_list(str(_given(args.streams, file.get("streams"), 1)), "--streams", 1,
                                               bench.MAX_STREAMS),
                        cc=_cc_list(args.cc) if args.cc is not None else file.get("cc"),
                        duration_s=parse_one_float(str(_given(args.duration_s, file.get("duration_s"), 5)), "--duration-s",
                                              bench.MIN_DURATION_S, bench.MAX_DURATION_S),
                        omit_s=parse_one_float(args.omit_s, "--omit-s", 0, 60) if args.omit_s is not None else None,
                        tool=args.tool, cross_gbps=cross, cross_size_bytes=file.get("cross_size_bytes"),
                        socket_buffer_bytes=buffer, name=args.name, cross_name=cross_name)
    save(args, "emu-bench-tcp", records, started)
    emit(records, args.format, columns=TCP_COLUMNS if args.format == "table" else None, title="longhaul emu bench tcp")
    return 0


def _bench_ping(args) -> int:
    from longhaul.emu import bench
    from longhaul.results import now_utc
    started = now_utc()
    check_store(args)
    link, delays, rates, file = bench_link(args)
    cross, cross_name = _cross(args, file)
    records = bench.ping(link=link, delay_us=delays, rate_gbps=rates,
                         count=parse_one_int(args.count, "--count", 1, 1_000_000),
                         interval_us=parse_one_float(args.interval_us, "--interval-us", 10, 1e7),
                         size_bytes=parse_one_int(args.size, "--size", 24, 65000),
                         cross_gbps=cross, cross_size_bytes=file.get("cross_size_bytes"), name=args.name,
                         cross_name=cross_name)
    for r in records:
        if not r["received"]:
            sys.stderr.write(f"longhaul: note: at {r['delay_us']:g} us, {r['rate_gbps']:g} Gb/s none of the "
                             f"{r['count']} probes came back, so the RTT columns are empty\n")
    save(args, "emu-bench-ping", records, started)
    emit(records, args.format, columns=PING_COLUMNS if args.format == "table" else None, title="longhaul emu bench ping")
    return 0
