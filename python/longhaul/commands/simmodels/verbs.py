"""``longhaul sim verbs``: perftest-like benchmarks on the embedded simulator."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from longhaul import units
from longhaul.commands.simmodels import _path_options as path_options
from longhaul.errors import UserError, in_scenario_file
from longhaul.helpformat import DefaultsHelpFormatter
from longhaul.output import FORMATS, emit
from longhaul.scenario_file import load_scenario_file
from longhaul.sim import verbs

BW_COLUMNS = ["transport", "op", "test", "size_bytes", "delay_us", "distance_km", "qps", "bw_MBps", "rx_bw_MBps", "msg_rate_Mps",
              "retransmitted_packets", "status"]
#: Shown when the WAN carries cross traffic.
CROSS_COLUMNS = ["cross_gbps", "cross_bw_MBps", "wan_drops_queue", "uc_messages_dropped"]
#: Shown when the scenario has link events.
FAILOVER_COLUMNS = ["qps_errored", "drops_link_down"]
LAT_COLUMNS = ["transport", "op", "size_bytes", "delay_us", "distance_km", "lat_us", "lat_min_us", "lat_max_us", "status"]


def register(models: argparse._SubParsersAction) -> None:
    p = models.add_parser(
        "verbs",
        help="perftest-like verbs benchmarks (RC/UC/UD send, write, read)",
        description="perftest-like verbs benchmarks across the simulated long-haul path. Bandwidth in MB/s with "
                    "MB = 10^6 bytes (perftest itself prints MiB/s). Unset options take perftest's defaults.",
        formatter_class=DefaultsHelpFormatter,
    )
    p.add_argument("--transport", choices=verbs.TRANSPORTS, default=None,
                   help="IB transport (default: the scenario file's, else rc)")
    p.add_argument("--op", choices=verbs.OPS, default=None,
                   help="verbs operation (default: the scenario file's, else write; send for ud)")
    p.add_argument("--test", choices=verbs.TESTS, default=None,
                   help="bw, lat (half round trip; full for read), bibw (both directions, summed), rate (bw reporting "
                        "msg_rate_Mps); default: the scenario file's, else bw")
    path_options.add_distance_lists(p, "range-extender delay setting, one way, in us (comma list; 0..200000; default 0)")
    p.add_argument("--sizes", default=None, metavar="LIST",
                   help="message sizes in bytes: comma list (2048,65536) or power-of-two range (2:8M); 1..1G; "
                        "default 2:8M (bw) or 2:MTU for ud, 2 for lat")
    p.add_argument("--qps", default=None, metavar="N",
                   help="queue pairs (comma list allowed; 1..1024; default: the scenario file's, else 1)")
    p.add_argument("--iterations", type=units.whole(1, 10**8), default=None, metavar="N", help="iterations per point (1..1e8; perftest default 1000)")
    p.add_argument("--duration-s", type=units.real(0, 3600, above_lo=True), default=None, metavar="S",
                   help="run for S seconds, posting without an iteration count (perftest -D; 0 < S <= 3600); needed "
                        "with the scenario file's [[events]] (WAN links unplugged and plugged back)")
    p.add_argument("--interval-s", type=units.real(1e-4, 3600), default=None, metavar="S",
                   help="with [[events]]: the time series' interval (default 0.1 s)")
    p.add_argument("--tx-depth", type=units.whole(1, 16384), default=None, metavar="N",
                   help="the benchmark's window: send work requests posted and not completed per QP, its send queue "
                        "depth (1..16384; default perftest's 128, 1 for lat; the S1 profiles use the windows of S1's "
                        "runs: 16 for s1, calibrated on S1 Fig 2, and 64 for s1-connectx, assumed)")
    p.add_argument("--rx-depth", type=units.whole(1, 16384), default=None, metavar="N", help="receive work requests posted (1..16384; default 512; recorded only: receives never run out in the model)")
    p.add_argument("--outstanding-reads", type=units.whole(1, 256), default=None, metavar="N", help="RDMA reads in flight per QP (1 up to the adapter's limit, its max_qp_rd_atom: 4 on infinihost3, 16 from connectx; default: that limit)")
    p.add_argument("--qp-timeout", dest="timeout_exp", type=units.whole(0, 31), default=None, metavar="EXP",
                   help="perftest's -u: the RC local ACK timeout exponent, 4.096 us x 2^EXP (0..31, 0 = no timer; default "
                        "14 = 67 ms); the adapter's firmware may raise it (ConnectX-2: ~500 ms) and --cm may replace it")
    p.add_argument("--retry-count", type=units.whole(0, 7), default=None, metavar="N",
                   help="RC retries after a local ACK timeout before the queue pair fails (0..7; default 7)")
    p.add_argument("--cm", action="store_true", default=None,
                   help="connect the queue pairs through the RDMA CM (perftest -c/-R): the CM sets their ACK timeout "
                        "from the path's packet life time and the adapter's ACK delay (2.1 s with OpenSM's defaults), "
                        "except on today's stacks (ndr), which pass --qp-timeout on")
    p.add_argument("--mtu", type=int, default=None, choices=verbs.MTUS, metavar="BYTES", help="IB path MTU: 256, 512, 1024, 2048, 4096, at most the adapter's (2048 on infinihost3; default 2048)")
    p.add_argument("--profile", choices=verbs.TESTBEDS, default=None,
                   help="hardware profile (testbed; default s1): s1 = [S1] InfiniHost III + Longbow XR, s3 = ConnectX-2 + "
                        "Longbow C103, ndr = ConnectX-7 NDR, usn = ORNL's UltraScience Net (Voltaire 4x SDR, Longbow XR "
                        "over OC-192, ib_rdma_bw -c: --distance-miles is the loop length, both extenders at ORNL)")
    p.add_argument("--hca", choices=verbs.HCAS, default=None, help="override the profile's adapter")
    p.add_argument("--extender", choices=verbs.EXTENDERS, default=None,
                   help="range extender pair, each with its rated reach (beyond it, a warning and credit-bound "
                        "bandwidth): longbow-xr (4x SDR, 150,000 km), longbow-c103 (4x SDR, 100 km), abex-2020 (4x SDR "
                        "over OC-192/10GigE), metrox-2 (HDR, 40 km), metrox-3-xc (EDR in RoCE over 2 x 100GbE, 40 km); "
                        "none = plain IB link over the distance")
    p.add_argument("--wan-framing", choices=verbs.WAN_FRAMINGS, default=None,
                   help="how the extenders carry IB on the WAN: ib (native), oc192 (SONET + GFP), 10gige-lan, "
                        "10gige-wan, 100gige-roce; each extender carries some of them (default: the profile's, else the "
                        "extender's first)")
    p.add_argument("--wan-links", type=units.whole(1, 16), default=None, metavar="N", help="parallel WAN links between the extenders (1..16; default 1)")
    p.add_argument("--extender-buffer", default=None, metavar="SIZE", help="extender WAN receive buffer (bytes, e.g. 64M; >= one packet)")
    p.add_argument("--switch-buffer", default=None, metavar="SIZE", help="switch per-port receive buffer (bytes, e.g. 16K; >= one packet)")
    p.add_argument("--loss", type=units.real(0, 0.5), default=None, metavar="P", help="probability a packet is corrupted on the WAN (0..0.5; default 0)")
    add_cross_arguments(p, where="; it shares the WAN switches, found where the extenders frame IB in SONET or "
                                 "Ethernet (--wan-framing oc192, 10gige-lan, 10gige-wan, 100gige-roce): what they "
                                 "drop, RC resends and UD/UC lose")
    p.add_argument("--queue", default=None, metavar="SIZE",
                   help="with --cross-gbps: the WAN switches' drop-tail queue toward the long-haul link, in bytes "
                        "(64K, 8M; default one bandwidth-delay product, >= 100 frames)")
    path_options.add_seed(p)
    p.add_argument("--scenario", default=None, metavar="FILE", help="base scenario file (TOML or JSON); options override it")
    p.add_argument("--workers", type=units.whole(1, 65536), default=None, metavar="N", help="parallel points (default: all cores)")
    p.add_argument("--format", choices=FORMATS, default="table", help="output format")
    p.set_defaults(func=run_verbs)


def add_cross_arguments(p: argparse.ArgumentParser, where: str = "") -> None:
    """--cross-gbps and --cross-on-off-ms, the same for every model with cross traffic; ``where``
    ends the help with where the model puts it."""
    p.add_argument("--cross-gbps", type=units.real(0, 400, above_lo=True), default=None, metavar="G",
                   help="constant-rate UDP cross traffic on the WAN from a second host pair, IP-level Gb/s "
                        f"(0 < G <= the WAN line rate; default none){where}")
    p.add_argument("--cross-on-off-ms", default=None, metavar="ON,OFF", help="cross traffic in bursts: on ms, off ms (default: always on)")


def cross_options(args: argparse.Namespace) -> dict:
    """The scenario parameters --cross-gbps and --cross-on-off-ms give."""
    cross: dict = {}
    if args.cross_gbps is not None:
        cross["cross_gbps"] = args.cross_gbps
    if args.cross_on_off_ms is not None:
        # A pair, not a list of points: each half parsed alone, so that ON = OFF is not "given twice".
        halves = units.list_items(args.cross_on_off_ms, "--cross-on-off-ms", "a time in ms in [0.001, 3600000]")
        if len(halves) != 2:
            raise UserError("--cross-on-off-ms: give two numbers, ON,OFF in ms")
        on_off = [units.parse_float_list(h, "--cross-on-off-ms", 0.001, 3.6e6)[0] for h in halves]
        cross.update(cross_on_ms=on_off[0], cross_off_ms=on_off[1])
    return cross


def naming_the_file(err: UserError, path: str | None, file_alone: Callable[[], object],
                    keys: dict[str, str]) -> UserError:
    """``err``, raised by scenarios made of the file at ``path`` and the options, naming the file
    and the value's key in it (``scenario PATH: tcp.streams: ...``; ``keys``: the model's
    ``FILE_KEYS``) when ``file_alone`` (the file's scenario with the defaults for what it leaves
    out) fails the same way: the value at fault is the file's. Else ``err`` as it is, as an
    option's value or the two together are at fault."""
    if path is not None:
        try:
            file_alone()
        except UserError as alone:
            if str(alone) == str(err):
                return in_scenario_file(err, path, keys)
    return err


def table_of(sc: dict | None, name: str) -> dict:
    """Table `name` of a scenario file, or {} (a table of the wrong type is reported when the
    scenario is built)."""
    t = (sc or {}).get(name)
    return t if isinstance(t, dict) else {}


def default_workload(transport: str | None) -> dict:
    """What `sim verbs` runs for the options left out: perftest's ib_write_bw over RC, and
    ib_send_bw over UD (which has no RDMA)."""
    transport = "rc" if transport is None else transport
    return {"transport": transport, "test": "bw", "op": "send" if transport == "ud" else "write"}


def given(*values):
    """The first value given (not None): an option's, else the file's. An empty or wrong value
    is passed on, for the core to refuse with its range, never replaced by a default."""
    return next((v for v in values if v is not None), None)


def default_sizes(base: dict | None, transport=None, test=None, mtu_bytes=None) -> list[int]:
    """The message sizes `sim verbs` runs when neither --sizes nor the scenario file ``base`` gives
    one, for the workload given (None: left out, the file's, else the default): perftest's 2 B for
    latency; every power of two up to 8 MiB for bandwidth, up to the MTU over UD (one datagram
    carries one message). `sim verbs` and a verbs sweep without sizes both call this."""
    from_file = table_of(base, "verbs")
    workload = default_workload(given(transport, from_file.get("transport")))
    if given(test, from_file.get("test"), workload["test"]) == "lat":
        return [2]
    mtu = given(mtu_bytes, table_of(base, "path").get("mtu_bytes"), 2048)
    if mtu not in verbs.MTUS:
        mtu = 2048  # only for the default sizes: the core refuses the bad value, naming it
    return units.parse_sizes(f"2:{mtu if workload['transport'] == 'ud' else 8 << 20}", "--sizes")


def run_verbs(args: argparse.Namespace) -> int:
    base = load_scenario_file(args.scenario) if args.scenario is not None else None
    # An option given on the command line overrides the file; one left out keeps the file's value.
    from_file = table_of(base, "verbs")
    left_out = default_workload(given(args.transport, from_file.get("transport")))
    transport = left_out["transport"]
    test = given(args.test, from_file.get("test"), left_out["test"])
    op = given(args.op, from_file.get("op"), left_out["op"])
    base_size = from_file.get("size_bytes")
    if args.sizes is not None:
        sizes = units.parse_sizes(args.sizes, "--sizes", 1, 1 << 30)
    elif base_size is not None:
        sizes = [base_size]
    else:
        sizes = default_sizes(base, args.transport, args.test, args.mtu)
    points = path_options.distance_points(args)
    # None: the scenario file's value, else the core's default (1).
    qps_list: Sequence[int | None] = [None] if args.qps is None else units.parse_int_list(args.qps, "--qps", 1, 1024)
    common = dict(
        testbed=args.profile, hca=args.hca, seed=args.seed, transport=transport, op=op, test=test,
        iterations=args.iterations, tx_depth=args.tx_depth, rx_depth=args.rx_depth,
        outstanding_reads=args.outstanding_reads, timeout_exp=args.timeout_exp, retry_count=args.retry_count,
        cm=args.cm, duration_s=args.duration_s, interval_s=args.interval_s, mtu_bytes=args.mtu, extender=args.extender,
        wan_links=args.wan_links, wan_framing=args.wan_framing, loss=args.loss,
        extender_buffer_bytes=units.parse_optional_size(args.extender_buffer, "--extender-buffer"),
        switch_buffer_bytes=units.parse_optional_size(args.switch_buffer, "--switch-buffer"),
        queue_bytes=units.parse_optional_size(args.queue, "--queue"), **cross_options(args),
    )
    scenarios = [verbs.scenario(base, **common, **where, qps=q, size_bytes=s)
                 for where in points for q in qps_list for s in sizes]
    try:
        records = verbs.run_many(scenarios, workers=args.workers, description=f"{transport} {op} {test}")
    except UserError as err:
        left_out = {**default_workload(from_file.get("transport")), "size_bytes": sizes[0]}
        left_out_of_file = {k: v for k, v in left_out.items() if k not in from_file}
        raise naming_the_file(err, args.scenario, lambda: verbs.validate(verbs.scenario(base, **left_out_of_file)),
                              verbs.FILE_KEYS) from None
    columns = LAT_COLUMNS if test == "lat" else BW_COLUMNS
    if any(r.get("cross_gbps") for r in records):
        columns = [*columns[:-1], *CROSS_COLUMNS, columns[-1]]
    if any(r.get("failover") for r in records):
        columns = [*columns[:-1], *FAILOVER_COLUMNS, columns[-1]]
        for r in records:
            r.update(qps_errored=sum(t is not None for t in r["failover"]["qp_error_s"]),
                     drops_link_down=r["failover"]["drops_link_down"])
    emit(records, args.format, columns, title=f"longhaul sim verbs ({records[0]['testbed'] if records else ''})")
    if args.format == "table":
        for r in records:
            if r.get("failover"):
                emit(verbs.series_rows(r), "table", title=f"link events, {r['qps']} QPs {r['size_bytes']} B: "
                     f"new routes at {r['failover']['reroute_s']} s, links active again at "
                     f"{r['failover']['link_active_s']} s")
    for warning in dict.fromkeys(w for r in records for w in r.get("warnings", "").split("; ") if w):
        sys.stderr.write(f"longhaul: warning: {warning}\n")
    for advice in dict.fromkeys(r["advice"] for r in records if r.get("advice")):
        sys.stderr.write(f"longhaul: advice: {advice}\n")
    return 0
