"""``longhaul sim pfs``: a parallel file system over parallel WAN links, with link failover."""

from __future__ import annotations

import argparse
import sys

from longhaul import units
from longhaul.commands.simmodels import _path_options as path_options
from longhaul.commands.simmodels.verbs import naming_the_file
from longhaul.errors import UserError
from longhaul.helpformat import DefaultsHelpFormatter
from longhaul.output import FORMATS, emit
from longhaul.scenario_file import load_scenario_file
from longhaul.sim import pfs

#: A run in one row (what `longhaul sweep pfs` shows per point).
COLUMNS = ["variant", "op", "clients", "threads", "servers", "luns", "wan_links", "distance_km", "bw_MBps", "link_MBps",
           "lun_MBps", "qp_errors", "ledger_ok"]
PHASE_COLUMNS = ["from_s", "to_s", "event", "links_plugged", "bw_MBps", "min_MBps", "recovery_s"]
SHOWS = ("phases", "series", "summary")


def register(models: argparse._SubParsersAction) -> None:
    p = models.add_parser(
        "pfs",
        help="parallel file system (GPFS-like or Lustre-like) writes/reads over parallel WAN links, with failover",
        description="Client threads write (or read) files through their page pool to NSD servers (OSSs) and their "
                    "RAID LUNs on the other site, over wan_links parallel extender links; [[events]] in the scenario "
                    "file unplug and replug links (at_s, link, action). A flow-level model (max-min fair shares of "
                    "adapters, links, server CPU and storage path, LUNs), with the subnet manager's rerouting, RC "
                    "retries, QP errors and reconnects: a 10-minute drill runs in seconds; --network packet runs "
                    "the same file system packet by packet over RC verbs (RDMA for data) or TCP over IPoIB, for "
                    "runs of seconds. Output: the run cut into "
                    "phases at its events (steady bw_MBps, the dip min_MBps, recovery_s after a replug), the time "
                    "series (--show series), or the summary with RPC latency and the ledger (every acknowledged "
                    "write on a server exactly once). MB = 10^6 bytes.",
        formatter_class=DefaultsHelpFormatter,
    )
    p.add_argument("--op", choices=pfs.OPS, default=None, help="write (default) or read")
    p.add_argument("--network", choices=pfs.NETWORKS, default=None,
                   help="fluid (default: flows over fair shares of the links, minutes in seconds) or packet (every "
                        "packet over the verbs or TCP model: seconds of traffic; a QP out of retries is not reconnected)")
    p.add_argument("--transport", choices=pfs.TRANSPORTS, default=None,
                   help="packet level: rc (verbs, data by RDMA; default) or tcp (over IPoIB connected mode)")
    p.add_argument("--variant", choices=pfs.VARIANTS, default=None,
                   help="gpfs (every file striped over all NSDs; default) or lustre (each file over stripe_count OSTs)")
    p.add_argument("--clients", type=units.whole(1, 1024), default=None, metavar="N", help="client nodes (1..1024; default 2)")
    p.add_argument("--threads", type=units.whole(1, 256), default=None, metavar="N",
                   help="writer threads per client, one file each (1..256; default 6)")
    p.add_argument("--servers", type=units.whole(1, 1024), default=None, metavar="N", help="NSD servers / OSSs (1..1024; default 2)")
    p.add_argument("--luns-per-server", type=units.whole(1, 64), default=None, metavar="N",
                   help="LUNs (NSDs, OSTs) per server (1..64; default 3)")
    p.add_argument("--data-disks", type=units.whole(0, 64), default=None, metavar="N",
                   help="data disks per LUN's RAID group (1..64; default 8, of 8+2 RAID 6)")
    p.add_argument("--block-size", default=None, metavar="BYTES",
                   help="file system block size, one RPC (4K..64M; default 256K for gpfs, 1M for lustre)")
    p.add_argument("--stripe-count", type=units.whole(0, 1 << 20), default=None, metavar="N",
                   help="lustre: OSTs per file (1..servers x luns-per-server; default 1)")
    p.add_argument("--wan-links", type=units.whole(0, 1 << 20), default=None, metavar="N",
                   help="parallel WAN links (1..16; default the extender's ports)")
    path_options.add_distance(p)
    p.add_argument("--duration-s", type=units.real(0.001, 86400), default=None, metavar="S",
                   help="simulated time (0.001..86400; default 60)")
    p.add_argument("--interval-s", type=units.real(0, 86400, above_lo=True), default=None, metavar="S",
                   help="time-series interval (default 1, or a tenth of a shorter run)")
    path_options.add_profile_and_extender(p, pfs.TESTBEDS, "hardware profile (default s3: the CSCS testbed)",
                                          "range extender pair of each link")
    path_options.add_seed(p, "random seed, recorded (the flow-level model draws nothing at random; default: the "
                             "scenario file's, else 1)")
    p.add_argument("--scenario", default=None, metavar="FILE",
                   help="scenario file (TOML or JSON: [path], [pfs], [[events]], [subnet_manager]); options override it")
    p.add_argument("--show", choices=SHOWS, default="phases", help="what the table shows (json carries everything)")
    p.add_argument("--format", choices=FORMATS, default="table", help="output format")
    p.set_defaults(func=run_pfs)


def run_pfs(args: argparse.Namespace) -> int:
    base = load_scenario_file(args.scenario) if args.scenario is not None else None
    sc = pfs.scenario(base, seed=args.seed, testbed=args.profile, extender=args.extender, op=args.op,
                      variant=args.variant, clients=args.clients, threads=args.threads, servers=args.servers,
                      luns_per_server=args.luns_per_server, data_disks=args.data_disks,
                      block_bytes=units.parse_optional_size(args.block_size, "--block-size"),
                      stripe_count=args.stripe_count, wan_links=args.wan_links, delay_us=args.delay_us,
                      fibre_km=args.distance_km, duration_s=args.duration_s, interval_s=args.interval_s,
                      network=args.network, transport=args.transport)
    try:
        pfs.validate(sc)
    except UserError as err:
        raise naming_the_file(err, args.scenario, lambda: pfs.validate(pfs.scenario(base)), pfs.FILE_KEYS) from None
    rec = pfs.run(sc)
    title = (f"longhaul sim pfs ({rec['testbed']}, {rec['network']} {rec['transport']}, {rec['variant']} {rec['op']}, {rec['clients']} clients x "
             f"{rec['threads']} threads, {rec['servers']} servers, {rec['wan_links']} links)")
    if args.format == "json":
        emit([rec], "json")
    elif args.show == "phases":
        emit(rec["phases"], args.format, PHASE_COLUMNS, title=title)
    elif args.show == "series":
        emit(series_rows(rec), args.format, title=title)
    else:
        emit([summary(rec)], args.format, title=title)
    if not rec["ledger_ok"]:
        sys.stderr.write(f"longhaul: ledger violated: {rec['ledger_violation']}\n")
        return 1
    return 0


def series_rows(rec: dict) -> list[dict]:
    """One row per interval: aggregate, per client, per link."""
    s = rec["series"]
    rows = []
    for i, t in enumerate(s["t_s"]):
        row = {"t_s": t, "bw_MBps": s["bw_MBps"][i], "links_up": s["links_up"][i]}
        row |= {f"client{c}_MBps": v[i] for c, v in enumerate(s["client_bw_MBps"])}
        row |= {f"link{k}_util": v[i] for k, v in enumerate(s["link_util"])}
        rows.append(row)
    return rows


def summary(rec: dict) -> dict:
    """The run in one row: bandwidth, capacities, RPC latency, failover counts, the ledger."""
    keys = ("bw_MBps", "link_MBps", "lun_MBps", "acked_blocks", "rewritten_blocks", "outstanding_blocks", "ledger_ok",
            "rc_recoveries", "qp_errors", "reconnects", "expelled_clients", "status")
    lat = {f"rpc_{k}": v for k, v in rec["rpc_latency"].items()}
    return {k: rec[k] for k in keys} | lat
