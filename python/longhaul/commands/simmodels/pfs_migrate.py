"""``longhaul sim pfs migrate``: how long moving a file system's data to the other site takes,
what bounds it, and what a link or server more or less changes.

Registered as an action of ``longhaul sim pfs`` (the models are registered in name order, so the
``pfs`` parser exists when this module's turn comes)."""

from __future__ import annotations

import argparse

from longhaul import units
from longhaul.commands.simmodels import _path_options as path_options
from longhaul.commands.simmodels.verbs import naming_the_file
from longhaul.errors import UserError
from longhaul.helpformat import DefaultsHelpFormatter
from longhaul.output import FORMATS, emit
from longhaul.scenario_file import load_scenario_file
from longhaul.sim import pfs_migrate

SUMMARY_COLUMNS = ["method", "moved_bytes", "files", "move_nsds", "target_nsds", "wan_links", "source_servers",
                   "target_servers", "nodes", "time_s", "time_min", "rate_MBps", "bottleneck"]
WHAT_IF_COLUMNS = ["case", "wan_links", "source_servers", "target_servers", "time_s", "rate_MBps", "bottleneck",
                   "time_change_pct"]
RESOURCE_COLUMNS = ["resource", "count", "capacity_MBps", "busiest_MBps", "util"]
SHOWS = ("what-if", "summary", "resources")
#: decimal terabytes (MB = 10^6 bytes, so TB = 10^12), as S3 and disk vendors count
BYTES_PER_TB = 10**12


def register(models: argparse._SubParsersAction) -> None:
    pfs_parser = models.choices["pfs"]
    actions = pfs_parser.add_subparsers(dest="pfs_action", metavar="ACTION", required=False,
                                        title="actions (without one: the write/read drill)")
    p = actions.add_parser(
        "migrate",
        help="migration planning: time, bottleneck and what-ifs of moving the data to the other site's NSDs",
        description="Move data_bytes in F files from the source site's NSDs to new NSDs on the target site, by "
                    "GPFS's restripe (mmadddisk the new NSDs, suspend and empty the old ones with mmrestripefs / "
                    "mmdeldisk on the -N nodes; every block read from its old NSD's server, carried by a node, "
                    "written to a new NSD's server across one WAN link) or by a parallel copy (cp/rsync streams, "
                    "per-file round trips over the WAN). A flow-level estimate (max-min fair rates of the LUNs, "
                    "servers' storage paths, CPU and adapters, the WAN links as the subnet manager routes them, "
                    "the nodes' adapters, and the nodes' threads or streams): predicted time, the bottleneck, and "
                    "a what-if table (links +1/-1, servers +1/-1 and one lost on each side). MB = 10^6 bytes.",
        formatter_class=DefaultsHelpFormatter,
    )
    p.add_argument("--method", choices=pfs_migrate.METHODS, default=None,
                   help="restripe (GPFS mmrestripefs/mmdeldisk; default) or copy (parallel cp/rsync streams)")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--data-bytes", default=None, metavar="SIZE",
                      help="data in the file system (restripe: spread over the source NSDs) or to copy "
                           "(bytes, or 2T = 2 TiB; default 2000000000000, the S3 move)")
    size.add_argument("--data-TB", type=units.real(0, 1e6, above_lo=True), default=None, metavar="TB",
                      help="the same in decimal TB (10^12 bytes)")
    p.add_argument("--files", type=units.whole(1, 1 << 40), default=None, metavar="N",
                   help="files holding the data (1..data bytes; default 5050, the S3 move)")
    p.add_argument("--source-nsds", type=units.whole(1, 4096), default=None, metavar="N",
                   help="NSDs of the file system on the source site (1..4096; default 6)")
    p.add_argument("--move-nsds", type=units.whole(1, 4096), default=None, metavar="N",
                   help="restripe: how many source NSDs are emptied (1..source NSDs; default all)")
    p.add_argument("--target-nsds", type=units.whole(1, 4096), default=None, metavar="N",
                   help="new NSDs on the target site (1..4096; default as many as are moved)")
    p.add_argument("--source-servers", type=units.whole(1, 1024), default=None, metavar="N",
                   help="NSD servers on the source site (1..1024; default 2)")
    p.add_argument("--target-servers", type=units.whole(1, 1024), default=None, metavar="N",
                   help="NSD servers on the target site (1..1024; default 2)")
    p.add_argument("--nodes", type=units.whole(1, 1024), default=None, metavar="N",
                   help="nodes doing the moving: mmrestripefs -N, or running the copy streams (1..1024; default 2)")
    p.add_argument("--nodes-at", choices=pfs_migrate.NODES_AT, default=None,
                   help="the site of those nodes (default source)")
    p.add_argument("--threads", type=units.whole(1, 1024), default=None, metavar="N",
                   help="restripe: PIT threads per node (1..1024; default 16)")
    p.add_argument("--streams", type=units.whole(1, 1 << 20), default=None, metavar="N",
                   help="copy: streams in all, spread over the nodes (default 8 per node)")
    p.add_argument("--data-disks", type=units.whole(0, 64), default=None, metavar="N",
                   help="data disks per LUN's RAID group (1..64; default 8, of 8+2 RAID 6)")
    p.add_argument("--block-size", default=None, metavar="BYTES",
                   help="file system block size, one block move (4K..64M; default 256K)")
    p.add_argument("--wan-links", type=units.whole(0, 1 << 20), default=None, metavar="N",
                   help="parallel WAN links (1..16; default the extender's ports)")
    path_options.add_distance(p)
    path_options.add_profile_and_extender(p, pfs_migrate.TESTBEDS, "hardware profile (default s3: the CSCS testbed)",
                                          "range extender pair of each link")
    p.add_argument("--scenario", default=None, metavar="FILE",
                   help="scenario file (TOML or JSON: [path], [migrate]); options override it")
    p.add_argument("--show", choices=SHOWS, default="what-if", help="what the table shows (json carries everything)")
    p.add_argument("--format", choices=FORMATS, default="table", help="output format")
    p.set_defaults(func=run_migrate)


def data_bytes(args: argparse.Namespace) -> int | None:
    if args.data_TB is not None:
        return round(args.data_TB * BYTES_PER_TB)
    return units.parse_optional_size(args.data_bytes, "--data-bytes")


def run_migrate(args: argparse.Namespace) -> int:
    base = load_scenario_file(args.scenario) if args.scenario is not None else None
    sc = pfs_migrate.scenario(
        base, testbed=args.profile, extender=args.extender, method=args.method, data_bytes=data_bytes(args),
        files=args.files, source_nsds=args.source_nsds, move_nsds=args.move_nsds, target_nsds=args.target_nsds,
        source_servers=args.source_servers, target_servers=args.target_servers, nodes=args.nodes,
        nodes_at=args.nodes_at, threads=args.threads, streams=args.streams, data_disks=args.data_disks,
        block_bytes=units.parse_optional_size(args.block_size, "--block-size"), wan_links=args.wan_links,
        delay_us=args.delay_us, fibre_km=args.distance_km)
    try:
        rec = pfs_migrate.run(sc)
    except UserError as err:
        raise naming_the_file(err, args.scenario, lambda: pfs_migrate.validate(pfs_migrate.scenario(base)),
                              pfs_migrate.FILE_KEYS) from None
    title = (f"longhaul sim pfs migrate ({rec['testbed']}, {rec['method']}: {rec['moved_bytes'] / 1e12:.3g} TB in "
             f"{rec['files']} files, {rec['move_nsds']} -> {rec['target_nsds']} NSDs, {rec['wan_links']} links): "
             f"{rec['time_min']:.1f} min, bottleneck {rec['bottleneck']}")
    if args.format == "json":
        emit([rec], "json")
    elif args.show == "what-if":
        emit(rec["what_if"], args.format, WHAT_IF_COLUMNS, title=title)
    elif args.show == "resources":
        emit(rec["resources"], args.format, RESOURCE_COLUMNS, title=title)
    else:
        emit([rec], args.format, SUMMARY_COLUMNS, title=title)
    return 0
