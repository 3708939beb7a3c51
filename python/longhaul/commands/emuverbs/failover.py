"""``longhaul emu link down|up|show`` (a running emulator's parallel links) and ``longhaul emu drill``
(real traffic over them while links fail at the scenario's times). Parsing and printing only; the
work is in longhaul.emu.links and longhaul.emu.drill."""

from __future__ import annotations

import json
import sys

from longhaul.commands.emuverbs.link import link_values, scenario_file
from longhaul.output import FORMATS, emit
from longhaul.units import parse_one_float, parse_one_int, parse_size

PHASE_COLUMNS = ["phase", "from_s", "to_s", "event", "links_up", "capacity_MBps", "bw_MBps", "dip_MBps", "recovery_s",
                 "streams_stalled", "stall_max_s", "link_bw_MBps"]
SERIES_COLUMNS = ["t_s", "links_up", "bw_MBps", "link_bw_MBps"]


def register(sub, link_args) -> None:
    """Add ``link`` and ``drill`` to ``longhaul emu``; ``link_args(parser, links=True)`` adds the link options."""
    lk = sub.add_parser("link", help="take a parallel link of a running emulator down or up, or show them",
                        description="Unplug (down) or replug (up) link K (0..wan_links-1) of a running emulator, e.g. "
                                    "one started with `longhaul emu shell --wan-links 4 --name drill`, while traffic "
                                    "runs: the link drops everything at once, and the hosts' routes leave it after "
                                    "the run's --detect-ms.")
    actions = lk.add_subparsers(dest="link_action", metavar="ACTION", parser_class=type(lk))
    actions.required = True
    for action, text in (("down", "unplug link K"), ("up", "plug link K back")):
        a = actions.add_parser(action, help=text)
        a.add_argument("k", metavar="K", help="the link, 0..wan_links-1")
        a.add_argument("--name", help="the emulator (default: the only one running)")
        a.set_defaults(func=_link_change, up=action == "up")
    show = actions.add_parser("show", help="the links and whether each is up")
    show.add_argument("--name", help="the emulator (default: the only one running)")
    show.add_argument("--format", choices=FORMATS, default="table")
    show.set_defaults(func=_link_show)

    dr = sub.add_parser("drill", help="failover drill: iperf3 and rsync across parallel links while links fail",
                        description="Run iperf3 -P and an rsync file transfer from A0 to B0 over --wan-links parallel "
                                    "links while the scenario's [[events]] unplug and replug links; print per phase "
                                    "(between events) the throughput reached, the dip and the recovery time, and "
                                    "check every transferred copy by SHA-256. Bandwidth: IP bytes delivered A->B, "
                                    "MB = 10^6 bytes.")
    link_args(dr, links=True)
    from longhaul.emu.drill import DEFAULT_DURATION_S, DEFAULT_STREAMS
    dr.add_argument("--duration-s", help=f"seconds of traffic, whole, 2..3600 (default the file's tcp.duration_s, "
                                         f"else {DEFAULT_DURATION_S}); every event falls within it")
    dr.add_argument("--streams", help=f"iperf3 -P streams, 1..128 (default the file's tcp.streams, else "
                                      f"{DEFAULT_STREAMS})")
    dr.add_argument("--transfer-workers", default="4", help="rsync workers, each pushing its own file again and "
                                                            "again, 0..16 (default 4; 0 = iperf3 only)")
    dr.add_argument("--transfer-bytes", default="8M", help="size of each worker's file, 4K..1G (default 8M)")
    dr.add_argument("--interval-s", default="0.2", help="sampling period of the time series, 0.05..10 s (default 0.2)")
    dr.add_argument("--series", action="store_true", help="print the time series (per link and total) instead "
                                                         "of the phases")
    dr.add_argument("--format", choices=FORMATS, default="table")
    dr.set_defaults(func=_drill)


def _link_change(args) -> int:
    from longhaul.emu import links, options, system
    system.require_privileges()
    k = parse_one_int(args.k, "K", 0, options.MAX_LINKS - 1)
    rec = links.set_link(links.find_run(args.name), k, args.up)
    print(f"link {rec['link']}: {'up' if rec['up'] else 'down'} at {rec['changed_s']:.3f} s of the run")
    return 0


def _link_show(args) -> int:
    from longhaul.emu import links, system
    system.require_privileges()
    emit(links.status(links.find_run(args.name)), args.format)
    return 0


def drill_inputs(args) -> tuple:
    """(link, events, duration_s, streams) from the scenario file and the options, all checked."""
    from longhaul.emu import drill, scenario
    file = scenario_file(args, events=True)
    link = scenario.build_link(scenario.merged(file["link"], link_values(args)))
    events, duration, streams = drill.plan(file, link, args.duration_s, args.streams, args.scenario)
    return link, events, duration, streams


def _drill(args) -> int:
    from longhaul.emu import drill
    link, events, duration, streams = drill_inputs(args)
    workers = parse_one_int(args.transfer_workers, "--transfer-workers", 0, drill.MAX_WORKERS)
    size = parse_size(args.transfer_bytes, "--transfer-bytes")
    interval = parse_one_float(args.interval_s, "--interval-s", *drill.INTERVAL_S_RANGE)
    drill.check(streams, workers, size, interval, duration)
    result = drill.run(link, events, duration, streams=streams, transfer_workers=workers, transfer_bytes=size,
                       interval_s=interval, name=args.name, progress=lambda text: sys.stderr.write(f"longhaul emu drill: {text}\n"))
    show(result, args.format, args.series)
    s = result["summary"]
    if s["copies_corrupt"] or s["copies_failed"]:
        sys.stderr.write(f"longhaul: {s['copies_corrupt']} transferred copies differ from their source and "
                         f"{s['copies_failed']} did not arrive\n")
        return 1
    return 0


def show(result: dict, fmt: str, series: bool = False) -> None:
    """The phases (or the time series) as records, then a summary of the workload in table format;
    json carries everything."""
    if fmt == "json":
        json.dump(result, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return
    rows = result["series"] if series else result["phases"]
    emit(rows, fmt, columns=(SERIES_COLUMNS if series else PHASE_COLUMNS) if fmt == "table" else None,
         title=f"longhaul emu drill: {result['summary']['wan_links']} links")
    if fmt == "table":
        from longhaul.emu.drill import summary_text
        print(summary_text(result["summary"]))
