"""``longhaul sim nfs``: NFS read throughput (IOzone) over NFS/RDMA or NFS over IPoIB."""

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
from longhaul.sim import nfs

COLUMNS = ["transport", "delay_us", "distance_km", "threads", "rsize_bytes", "read_bytes", "slots", "chunk_bytes", "bw_MBps",
           "rpcs", "retransmitted_packets", "status"]


def register(models: argparse._SubParsersAction) -> None:
    p = models.add_parser(
        "nfs",
        help="NFS read throughput (IOzone) over NFS/RDMA or NFS over IPoIB across the long-haul link",
        description="IOzone's read test: T client threads read records of a file over one NFSv3 mount across the "
                    "simulated long-haul path, with the Linux NFS client and server of the profile's era ([S1]'s 2008 "
                    "Linux on s1..usn, Linux 5.4-6.12 on fdr..xdr). NFS/RDMA moves the data with RDMA Writes on an RC "
                    "queue pair (page-sized in 2008, one per READ today); NFS over IPoIB carries it on one TCP "
                    "connection. Throughput bw_MBps in MB/s with "
                    "MB = 10^6 bytes: READ data received after a warm-up (the first quarter of the simulated bytes) / "
                    "the time it took. Only simulated_bytes of the file are read (the rate is steady once the "
                    "connection is warm; bw_drift_pct, the second half of the measured bytes against the first, "
                    "shows whether it was, and a note says when it was not).",
        formatter_class=DefaultsHelpFormatter,
    )
    p.add_argument("--transport", default=None, metavar="LIST",
                   help="comma list of rdma (NFS/RDMA), ipoib-rc (TCP over IPoIB connected mode), ipoib-ud "
                        "(TCP over IPoIB datagram mode) (default rdma, or the scenario file's)")
    path_options.add_distance_lists(p)
    p.add_argument("--threads", type=units.whole(1, 1024), default=None, metavar="N", help="IOzone client threads (1..1024; default 8)")
    p.add_argument("--rsize", default=None, metavar="BYTES",
                   help="bytes per NFS READ at most, the mount's rsize (4K..1M; default: the profile's, 32K on s1..usn "
                        "(the early Linux NFS/RDMA client's maximum), 1M on fdr..xdr (knfsd's))")
    p.add_argument("--direct-io", action="store_true", default=None,
                   help="IOzone -I: O_DIRECT reads, each thread a record at a time with no readahead (default: through "
                        "the page cache, the client's readahead keeping 15 rsize READs per thread outstanding on s1..usn, "
                        "two windows of max(128K, min(record, rsize)) on fdr..xdr)")
    p.add_argument("--readahead", default=None, metavar="BYTES",
                   help="the mount's readahead, read_ahead_kb in bytes (4K..1G; default: the profile's, 15 x rsize on "
                        "s1..usn, 128K on fdr..xdr)")
    p.add_argument("--record-bytes", default=None, metavar="BYTES", help="IOzone record size (4K..1G; default 256K)")
    p.add_argument("--file-bytes", default=None, metavar="BYTES", help="IOzone file size (record..1T; default 512M)")
    p.add_argument("--simulated-bytes", default=None, metavar="BYTES",
                   help="bytes of the file actually simulated (record..file; default 32M or the file)")
    p.add_argument("--slots", type=units.whole(1, 65536), default=None, metavar="N",
                   help="READs outstanding on the connection: RPC-over-RDMA credits or the TCP slot table (1..65536; "
                        "default: the profile's, 16 and 16 on s1..usn, 64 and 65536 on fdr..xdr)")
    path_options.add_profile_and_extender(p, nfs.TESTBEDS, "hardware profile (default s1: the [S1] testbed)")
    path_options.add_seed(p)
    p.add_argument("--scenario", default=None, metavar="FILE", help="base scenario file (TOML or JSON); options override it")
    p.add_argument("--workers", type=units.whole(1, 65536), default=None, metavar="N", help="parallel points (default: all cores)")
    p.add_argument("--format", choices=FORMATS, default="table", help="output format")
    p.set_defaults(func=run_nfs)


#: A measured rate that still rose by more than this between its halves is reported as not steady.
DRIFT_NOTE_PCT = 10.0


def run_nfs(args: argparse.Namespace) -> int:
    base = load_scenario_file(args.scenario) if args.scenario is not None else None
    # None: the file's transport (checked by the core, like the file's other values), else rdma.
    transports = [None] if args.transport is None else units.parse_name_list(args.transport, "--transport",
                                                                             nfs.TRANSPORTS)
    points = path_options.distance_points(args)
    common = dict(testbed=args.profile, seed=args.seed, extender=args.extender, threads=args.threads,
                  rsize_bytes=units.parse_optional_size(args.rsize, "--rsize"),
                  readahead_bytes=units.parse_optional_size(args.readahead, "--readahead"),
                  record_bytes=units.parse_optional_size(args.record_bytes, "--record-bytes"),
                  file_bytes=units.parse_optional_size(args.file_bytes, "--file-bytes"),
                  simulated_bytes=units.parse_optional_size(args.simulated_bytes, "--simulated-bytes"), slots=args.slots,
                  direct_io=args.direct_io)
    scenarios = [nfs.scenario(base, transport=t, **common, **where) for t in transports for where in points]
    try:
        records = nfs.run_many(scenarios, workers=args.workers, description="nfs")
    except UserError as err:
        raise naming_the_file(err, args.scenario, lambda: nfs.validate(nfs.scenario(base)), nfs.FILE_KEYS) from None
    emit(records, args.format, COLUMNS, title=f"longhaul sim nfs ({records[0]['testbed'] if records else ''})")
    note_warm_up(records, "--simulated-bytes")
    return 0


def note_warm_up(records: list[dict], knob: str) -> None:
    """A note on stderr for each NFS point whose rate still rose between the halves of its bytes."""
    for r in records:
        if (r.get("bw_drift_pct") or 0.0) > DRIFT_NOTE_PCT:
            sys.stderr.write(f"longhaul: note: {r['transport']} at {r['one_way_delay_us']:g} us: the second half of the "
                             f"measured bytes went {r['bw_drift_pct']:.0f}% faster than the first (the connection "
                             f"was still opening its window), so {r['bw_MBps']:.1f} MB/s is below the steady rate; "
                             f"raise {knob} (now {r['simulated_bytes']} bytes)\n")
