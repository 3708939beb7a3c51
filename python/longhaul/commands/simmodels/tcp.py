"""``longhaul sim tcp``: iperf-like TCP benchmarks on the embedded simulator."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from longhaul import units
from longhaul.commands.simmodels import _path_options as path_options
from longhaul.commands.simmodels.verbs import add_cross_arguments, cross_options, naming_the_file
from longhaul.errors import UserError
from longhaul.helpformat import DefaultsHelpFormatter
from longhaul.output import FORMATS, emit
from longhaul.scenario_file import load_scenario_file
from longhaul.sim import tcp

#: The link `sim tcp` runs when --link is left out (IPoIB over S1's path).
DEFAULT_LINK = "ipoib-ud"
COLUMNS = ["link", "cc", "mtu_bytes", "streams", "window_bytes", "rmem_max_bytes", "delay_us", "distance_km", "bw_MBps", "stream_bw_MBps",
           "retransmits", "timeouts", "cross_bw_MBps", "status"]


def register(models: argparse._SubParsersAction) -> None:
    p = models.add_parser(
        "tcp",
        help="iperf-like TCP over IPoIB, 10GigE or SONET long-haul links",
        description="iperf-like TCP streams across the simulated long-haul path. Bandwidth in MB/s with "
                    "MB = 10^6 bytes (aggregate bw_MBps, per stream stream_bw_MBps). Unset options are those of "
                    "a stock Linux host: CUBIC, initial window 10, SACK, delayed ACKs (40 ms, every 2nd segment), "
                    "min RTO 200 ms, auto-tuned buffers up to tcp_rmem 6 MiB / tcp_wmem 4 MiB; iperf's 10 s test.",
        formatter_class=DefaultsHelpFormatter,
    )
    p.add_argument("--link", choices=tcp.LINKS, default=None,
                   help="link layer under TCP/IP: IPoIB datagram (UD) or connected (RC) mode over the testbed's IB "
                        "fabric and range extender; 10GigE LAN PHY, 10GigE WAN PHY or SONET OC-192 between IP routers "
                        "(default ipoib-ud, or the scenario file's)")
    p.add_argument("--mtu", type=units.whole(1, 65535), default=None, metavar="BYTES",
                   help="IP MTU: ipoib-ud 576..2044 (default 2044), ipoib-cm 576..65520 (default 65520), "
                        "Ethernet/SONET 576..9000 (default 1500)")
    path_options.add_distance_lists(p)
    p.add_argument("--streams", default=None, metavar="LIST",
                   help="parallel streams, iperf -P (comma list; 1..1024; default: the scenario file's, else 1)")
    p.add_argument("--window", default=None, metavar="LIST",
                   help="socket buffer per stream, iperf -w (comma list of sizes like 64K,1M,16M, or auto = Linux "
                        "auto-tuning; mss..4G; default: the scenario file's, else auto)")
    p.add_argument("--cc", choices=tcp.CCS, default=None, help="congestion control (default cubic)")
    p.add_argument("--loss", type=units.real(0, 0.5), default=None, metavar="P", help="probability a packet is corrupted on the WAN, each direction (0..0.5; default 0)")
    add_cross_arguments(p)
    p.add_argument("--duration-s", type=units.real(0.001, 3600), default=None, metavar="S", help="test length in simulated seconds, iperf -t (0.001..3600; default 10)")
    p.add_argument("--interval-s", type=units.real(1e-7, 3600), default=None, metavar="S", help="throughput time-series interval, iperf -i (duration/10000..duration; default 1, or a tenth of a "
                        "shorter test)")
    p.add_argument("--queue", default=None, metavar="SIZE",
                   help="bottleneck (WAN egress) drop-tail queue: bytes (64K, 8M) or packets with a p suffix (100p); "
                        "IPoIB: the extender buffer in bytes. Default: one bandwidth-delay product (>= 100 packets); "
                        "IPoIB: the extender's buffer")
    p.add_argument("--rate-gbps", type=units.real(0.001, 400), default=None, metavar="G", help="Ethernet/SONET only: the WAN circuit's rate, at most the link's line rate (0.001..400; a faster "
                        "WAN is another --link)")
    p.add_argument("--profile", choices=tcp.TESTBEDS, default=None,
                   help="hardware profile: s1 = [S1] InfiniHost III + Longbow XR hosts, s3 = ConnectX-2 + Longbow C103, "
                        "ndr, modern (current server), ideal (no host cost). Default: s1 for IPoIB, modern otherwise")
    p.add_argument("--stack", choices=tcp.STACKS, default=None, help="override the profile's host stack costs")
    p.add_argument("--extender", choices=tcp.EXTENDERS, default=None,
                   help="boxes at the WAN ends: an extender pair, or none (IPoIB: plain IB link; Ethernet: IP routers)")
    p.add_argument("--no-sack", action="store_true", help="turn SACK off (NewReno recovery)")
    p.add_argument("--no-hystart", action="store_true",
                   help="CUBIC: plain slow start, without Linux's HyStart exit (tcp_cubic hystart=0)")
    p.add_argument("--no-rack", action="store_true",
                   help="no RACK detection of lost retransmissions: they wait for the RTO (Linux tcp_recovery=0, "
                        "stacks before Linux 4.18, ns-3 3.37)")
    p.add_argument("--rto-formula", choices=tcp.RTO_FORMULAS, default=None,
                   help="where min RTO bounds the retransmission timeout: linux = SRTT + max(4 RTTVAR, min RTO), "
                        "rfc6298 = max(SRTT + 4 RTTVAR, min RTO) as ns-3 (default linux)")
    p.add_argument("--rto-restart", choices=tcp.RTO_RESTARTS, default=None,
                   help="which ACKs restart the retransmission timer in fast recovery: every-ack (RFC 6298, Linux) or "
                        "first-partial-ack (RFC 6582, ns-3) (default every-ack)")
    p.add_argument("--rto-ssthresh", choices=tcp.RTO_SSTHRESHES, default=None,
                   help="a timeout in fast recovery: once-per-episode keeps ssthresh (Linux tcp_enter_loss), "
                        "every-timeout lowers it again (RFC 5681, ns-3) (default once-per-episode)")
    p.add_argument("--cwnd-growth", choices=tcp.CWND_GROWTHS, default=None,
                   help="which ACKs grow cwnd: in-order = only ACKs that advance snd_una, by what they deliver "
                        "(Linux); cumulative = only those, by all their cumulative acknowledgement covers (RFC 3465, "
                        "ns-3) (default in-order)")
    p.add_argument("--no-delayed-ack", action="store_true", help="acknowledge every segment (Linux quickack)")
    p.add_argument("--initial-cwnd", type=units.whole(1, 1000), default=None, metavar="SEGS", help="initial congestion window (1..1000; default 10, RFC 6928)")
    p.add_argument("--cwnd-trace", action="store_true", help="add each stream's cwnd at every interval (cwnd_trace_segs)")
    path_options.add_seed(p)
    p.add_argument("--scenario", default=None, metavar="FILE", help="base scenario file (TOML or JSON); options override it")
    p.add_argument("--workers", type=units.whole(1, 65536), default=None, metavar="N", help="parallel points (default: all cores)")
    p.add_argument("--format", choices=FORMATS, default="table", help="output format")
    p.set_defaults(func=run_tcp)


def _windows(text: str | None) -> list[int | str | None]:
    """--window's list: sizes in bytes and "auto"; left out, [None] (the scenario file's, else auto)."""
    if text is None:
        return [None]
    items = units.list_items(text, "--window", "a size like 64K or 1M, or auto")
    out = ["auto" if part.lower() == "auto" else units.parse_size(part, "--window") for part in items]
    if not out:
        raise UserError("--window: empty list (give sizes like 64K,1M or auto)")
    return units.unique(out, "--window", str)


def _queue(text: str | None) -> dict:
    if text is None:
        return {}
    t = text.strip()
    if t.lower().endswith("p"):
        return {"queue_packets": units.parse_int_list(t[:-1], "--queue", 1, 1 << 30)[0]}
    return {"queue_bytes": units.parse_size(t, "--queue")}


def run_tcp(args: argparse.Namespace) -> int:
    base = load_scenario_file(args.scenario) if args.scenario is not None else None
    points = path_options.distance_points(args)
    streams: Sequence[int | None] = [None]   # None: the scenario file's value, else the core's default (1)
    if args.streams is not None:
        streams = units.parse_int_list(args.streams, "--streams", 1, 1024)
    windows = _windows(args.window)
    cross = cross_options(args)
    common = dict(
        link=args.link or (None if base and "link" in base else DEFAULT_LINK),
        testbed=args.profile, stack=args.stack, seed=args.seed, cc=args.cc, mtu_bytes=args.mtu, loss=args.loss,
        duration_s=args.duration_s, interval_s=args.interval_s, extender=args.extender, rate_gbps=args.rate_gbps,
        sack=False if args.no_sack else None, hystart=False if args.no_hystart else None,
        rack=False if args.no_rack else None, rto_formula=args.rto_formula, rto_restart=args.rto_restart,
        rto_ssthresh=args.rto_ssthresh, cwnd_growth=args.cwnd_growth,
        delayed_ack=False if args.no_delayed_ack else None,
        initial_cwnd_segs=args.initial_cwnd, cwnd_trace=True if args.cwnd_trace else None,
        **_queue(args.queue), **cross,
    )
    scenarios = [tcp.scenario(base, **common, **where, streams=n, window_bytes=w)
                 for where in points for n in streams for w in windows]
    try:
        records = tcp.run_many(scenarios, workers=args.workers, description=f"tcp {args.link or DEFAULT_LINK}")
    except UserError as err:
        file_link = None if base and "link" in base else DEFAULT_LINK
        raise naming_the_file(err, args.scenario, lambda: tcp.validate(tcp.scenario(base, link=file_link)),
                              tcp.FILE_KEYS) from None
    emit(records, args.format, COLUMNS, title=f"longhaul sim tcp ({records[0]['testbed'] if records else ''})")
    return 0
