"""``longhaul tune verbs|tcp|mpi``: the knobs that dominate at distance, searched by simulating
(``longhaul.tune``). ``tune mpi`` is ``sim mpi tune`` under a second name."""

from __future__ import annotations

import argparse

from longhaul import tune, units
from longhaul.commands.simmodels.mpi import add_tune, tune_emit
from longhaul.errors import UserError
from longhaul.helpformat import DefaultsHelpFormatter
from longhaul.output import FORMATS
from longhaul.sim import tcp, verbs


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tune", help="tuning advice: the knobs that dominate at distance, searched by simulating",
                       description="For each knob that dominates at distance: the default, the best value found with "
                                   "its predicted bandwidth and gain, the range searched, and a note when the best "
                                   "sits at the edge of that range. MB = 10^6 bytes. See docs/how-to/tune.md.")
    layers = p.add_subparsers(dest="layer", metavar="LAYER", required=True)
    fmt = DefaultsHelpFormatter

    v = layers.add_parser("verbs", formatter_class=fmt, help="perftest bandwidth: message size, tx-depth, QPs",
                          description="perftest-like bandwidth (ib_write_bw by default): the message size, the send "
                                      "queue depth (tx-depth) and the queue pairs, each searched alone.")
    v.add_argument("--transport", choices=verbs.TRANSPORTS, default="rc", help="IB transport")
    v.add_argument("--op", choices=verbs.OPS, default=None, help="operation (default write; send for ud)")
    v.add_argument("--size", default="64K", metavar="SIZE", help="message size to start from (bytes, K/M; 1..1G)")
    v.add_argument("--tx-depth", type=units.whole(1, 16384), default=None, metavar="N",
                   help="send queue depth to start from (default perftest's 128)")
    v.add_argument("--qps", type=units.whole(1, 1024), default=None, metavar="N", help="queue pairs to start from (default 1)")
    v.add_argument("--profile", choices=verbs.TESTBEDS, default=None, help="hardware profile (default s1)")
    v.add_argument("--hca", choices=verbs.HCAS, default=None, help="override the profile's adapter")
    v.add_argument("--extender", choices=verbs.EXTENDERS, default=None, help="range extender pair")
    v.add_argument("--wan-links", type=units.whole(1, 16), default=None, metavar="N", help="parallel WAN links (1..16)")
    v.add_argument("--loss", type=units.real(0, 0.5), default=None, metavar="P", help="WAN packet corruption (0..0.5)")
    v.add_argument("--knobs", default=",".join(tune.VERBS_KNOBS), metavar="LIST",
                   help=f"the knobs to search (comma list of {', '.join(tune.VERBS_KNOBS)})")
    _where(v)
    v.set_defaults(func=run_verbs)

    t = layers.add_parser("tcp", formatter_class=fmt, help="iperf streams: socket buffer, tcp_rmem ceiling, streams",
                          description="iperf-like TCP: the socket buffer per stream (iperf -w, allowed by "
                                      "net.core.rmem_max/wmem_max), the auto-tuning ceiling (tcp_rmem/tcp_wmem "
                                      "maximum) and parallel streams. Each point runs 50 round trips (1..10 s) "
                                      "unless --duration-s is given.")
    t.add_argument("--link", choices=tcp.LINKS, default="10gige-lan", help="link layer under TCP/IP")
    t.add_argument("--rate-gbps", type=units.real(0.001, 400), default=None, metavar="G",
                   help="Ethernet/SONET WAN rate instead of the link's (0.001..400)")
    t.add_argument("--cc", choices=tcp.CCS, default=None, help="congestion control (default cubic)")
    t.add_argument("--streams", type=units.whole(1, 1024), default=None, metavar="N", help="streams to start from (default 1)")
    t.add_argument("--window", default=None, metavar="SIZE",
                   help="socket buffer to start from (default: Linux auto-tuning up to tcp_rmem's 6 MiB)")
    t.add_argument("--mtu", type=units.whole(576, 65520), default=None, metavar="BYTES", help="IP MTU")
    t.add_argument("--profile", choices=tcp.TESTBEDS, default=None, help="hardware profile (default modern)")
    t.add_argument("--stack", choices=tcp.STACKS, default=None, help="override the profile's host stack")
    t.add_argument("--loss", type=units.real(0, 0.5), default=None, metavar="P", help="WAN packet corruption (0..0.5)")
    t.add_argument("--duration-s", type=units.real(0.001, 3600), default=None, metavar="S",
                   help="test length per point (default 50 round trips, 1..10 s)")
    t.add_argument("--knobs", default=",".join(tune.TCP_KNOBS), metavar="LIST",
                   help=f"the knobs to search (comma list of {', '.join(tune.TCP_KNOBS)})")
    _where(t)
    t.set_defaults(func=run_tcp)

    add_tune(layers, "mpi")


def _where(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--delay-us", default=None, metavar="LIST", help="delay the extender adds, one way, us (comma list)")
    g.add_argument("--distance-km", default=None, metavar="LIST", help="fibre length in km instead (5 us/km)")
    g.add_argument("--distance-miles", default=None, metavar="LIST", help="fibre length in miles instead")
    p.add_argument("--seed", type=units.whole(0, units.SEED_MAX), default=None, help="random seed")
    p.add_argument("--workers", type=units.whole(1, 65536), default=None, metavar="N", help="parallel points")
    p.add_argument("--format", choices=FORMATS, default="table", help="output format")


def _points(args: argparse.Namespace) -> list[dict]:
    if args.distance_km is None and args.distance_miles is None:
        return [{"delay_us": d} for d in units.parse_float_list(args.delay_us or "0", "--delay-us", 0,
                                                                units.MAX_DELAY_US)]
    return [{"fibre_km": d / units.FIBRE_DELAY_US_PER_KM}
            for d in units.delays_from_options(None, args.distance_km, args.distance_miles)]


def run_verbs(args: argparse.Namespace) -> int:
    size = units.parse_size(args.size, "--size")
    if not 1 <= size <= 1 << 30:
        raise UserError(f"--size: {size} bytes is out of range [1, 1073741824]")
    op = args.op or ("send" if args.transport == "ud" else "write")
    params = dict(testbed=args.profile, hca=args.hca, extender=args.extender, wan_links=args.wan_links, loss=args.loss,
                  seed=args.seed, transport=args.transport, op=op, size_bytes=size, tx_depth=args.tx_depth,
                  qps=args.qps)
    params = {k: v for k, v in params.items() if v is not None}
    run = tune.simulate(args.workers)
    rows = []
    for w in _points(args):
        where, knobs = tune.verbs_knobs(run, units.parse_name_list(args.knobs, "--knobs", tune.VERBS_KNOBS),
                                        **params, **w)
        rows += tune.rows(where, knobs, transport=args.transport, op=op)
    tune_emit(rows, args.format, f"longhaul tune verbs ({args.transport} {op})")
    return 0


def run_tcp(args: argparse.Namespace) -> int:
    window = units.parse_optional_size(args.window, "--window")
    params = dict(link=args.link, rate_gbps=args.rate_gbps, cc=args.cc, streams=args.streams, window_bytes=window,
                  mtu_bytes=args.mtu, testbed=args.profile, stack=args.stack, loss=args.loss,
                  duration_s=args.duration_s, seed=args.seed)
    params = {k: v for k, v in params.items() if v is not None}
    run = tune.simulate(args.workers)
    rows = []
    for w in _points(args):
        where, knobs = tune.tcp_knobs(run, units.parse_name_list(args.knobs, "--knobs", tune.TCP_KNOBS),
                                      **params, **w)
        rows += tune.rows(where, knobs, link=args.link)
    rate = f" at {args.rate_gbps:g} Gb/s" if args.rate_gbps else ""
    tune_emit(rows, args.format, f"longhaul tune tcp ({args.link}{rate})")
    return 0
