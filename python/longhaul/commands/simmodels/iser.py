"""``longhaul sim iser``: iSCSI over RDMA (iSER) READ and WRITE throughput across the long-haul link."""

from __future__ import annotations

import argparse

from longhaul import units
from longhaul.commands.simmodels import _path_options as path_options
from longhaul.commands.simmodels.verbs import naming_the_file
from longhaul.errors import UserError
from longhaul.helpformat import DefaultsHelpFormatter
from longhaul.output import FORMATS, emit
from longhaul.scenario_file import load_scenario_file
from longhaul.sim import iser

COLUMNS = ["op", "delay_us", "distance_km", "block_bytes", "queue_depth", "max_burst_bytes", "rdma_read_depth",
           "bw_MBps", "commands", "rdma_ops", "retransmitted_packets", "status"]

_YES_NO = {"yes": True, "no": False}


def register(models: argparse._SubParsersAction) -> None:
    p = models.add_parser(
        "iser",
        help="iSCSI over RDMA (iSER) READ and WRITE throughput across the long-haul link",
        description="An iSCSI initiator reads or writes a target LUN (a RAM disk) over one iSER session: SCSI "
                    "commands and responses are RC Sends; the target RDMA-Writes READ data into the initiator's "
                    "buffer and pulls WRITE data with RDMA Reads of at most MaxBurstLength, MaxOutstandingR2T per "
                    "command and the adapter's RDMA Read depth per queue pair. Up to queue-depth commands are "
                    "outstanding. Throughput bw_MBps in MB/s with MB = 10^6 bytes: every byte / the time from the "
                    "first command to the last response (as fio reports a job).",
        formatter_class=DefaultsHelpFormatter,
    )
    p.add_argument("--op", default=None, metavar="LIST",
                   help="comma list of read, write (default read, or the scenario file's)")
    path_options.add_distance_lists(p)
    p.add_argument("--block-bytes", default=None, metavar="BYTES",
                   help="bytes per I/O (512..1G; default 1M), cut into SCSI commands of at most --max-command-bytes")
    p.add_argument("--total-bytes", default=None, metavar="BYTES", help="bytes read or written (block..1T; default 64M)")
    p.add_argument("--queue-depth", type=units.whole(1, 4096), default=None, metavar="N",
                   help="SCSI commands outstanding (1..4096; default 32, open-iscsi's node.session.queue_depth)")
    p.add_argument("--max-command-bytes", default=None, metavar="BYTES",
                   help="largest SCSI command (512..16M; default 512K, ib_iser's 1024 sectors)")
    p.add_argument("--max-burst-bytes", default=None, metavar="BYTES",
                   help="MaxBurstLength: bytes per RDMA Read of a WRITE, per RDMA Write of a READ (512..16777215; "
                        "default 262144, RFC 3720)")
    p.add_argument("--first-burst-bytes", default=None, metavar="BYTES",
                   help="FirstBurstLength: unsolicited WRITE data (512..MaxBurstLength; default 65536, RFC 3720)")
    p.add_argument("--max-outstanding-r2t", type=units.whole(1, 65535), default=None, metavar="N",
                   help="MaxOutstandingR2T: RDMA Reads outstanding per WRITE command (1..65535; default 1, RFC 3720)")
    p.add_argument("--immediate-data", choices=sorted(_YES_NO), default=None,
                   help="ImmediateData: WRITE data in the command PDU (default yes, RFC 3720)")
    p.add_argument("--initial-r2t", choices=sorted(_YES_NO), default=None,
                   help="InitialR2T: no unsolicited Data-Out PDUs (default yes, RFC 3720)")
    p.add_argument("--backing-MBps", type=units.real(1, 1e6), default=None, metavar="MBPS",
                   help="target backing store rate in MB/s (1..1e6; default 5000, a RAM disk)")
    path_options.add_profile_and_extender(p, iser.TESTBEDS, "hardware profile (default s1: the [S1] testbed)")
    path_options.add_seed(p)
    p.add_argument("--scenario", default=None, metavar="FILE", help="base scenario file (TOML or JSON); options override it")
    p.add_argument("--workers", type=units.whole(1, 65536), default=None, metavar="N", help="parallel points (default: all cores)")
    p.add_argument("--format", choices=FORMATS, default="table", help="output format")
    p.set_defaults(func=run_iser)


def run_iser(args: argparse.Namespace) -> int:
    base = load_scenario_file(args.scenario) if args.scenario is not None else None
    # None: the file's op (checked by the core, like the file's other values), else read.
    ops = [None] if args.op is None else units.parse_name_list(args.op, "--op", iser.OPS)
    points = path_options.distance_points(args)
    size = units.parse_optional_size
    common = dict(testbed=args.profile, seed=args.seed, extender=args.extender, queue_depth=args.queue_depth,
                  block_bytes=size(args.block_bytes, "--block-bytes"), total_bytes=size(args.total_bytes, "--total-bytes"),
                  max_command_bytes=size(args.max_command_bytes, "--max-command-bytes"),
                  max_burst_bytes=size(args.max_burst_bytes, "--max-burst-bytes"),
                  first_burst_bytes=size(args.first_burst_bytes, "--first-burst-bytes"),
                  max_outstanding_r2t=args.max_outstanding_r2t, backing_MBps=args.backing_MBps,
                  immediate_data=None if args.immediate_data is None else _YES_NO[args.immediate_data],
                  initial_r2t=None if args.initial_r2t is None else _YES_NO[args.initial_r2t])
    scenarios = [iser.scenario(base, op=o, **common, **where) for o in ops for where in points]
    try:
        records = iser.run_many(scenarios, workers=args.workers, description="iser")
    except UserError as err:
        raise naming_the_file(err, args.scenario, lambda: iser.validate(iser.scenario(base)), iser.FILE_KEYS) from None
    emit(records, args.format, COLUMNS, title=f"longhaul sim iser ({records[0]['testbed'] if records else ''})")
    return 0
