"""``longhaul measure --tool perftest|osu|iperf3 --delay-us D -- COMMAND ...``: run a benchmark on a
real link and store what it prints, as ``longhaul ingest`` stores a file of that tool's output."""

from __future__ import annotations

import argparse

from longhaul.commands.ingest import add_measurement_options, add_output_options, one_delay, store_and_print
from longhaul.errors import UserError
from longhaul.results import check_label, store_from_args
from longhaul.units import real

MAX_TIMEOUT_S = 7 * 86400.0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "measure", help="run perftest / OSU / iperf3 on a real link and store what it prints",
        description="Run COMMAND (no shell; its output is shown on stderr as it comes), then parse what it printed "
                    "on stdout as `longhaul ingest --tool T` parses a file and save it as a 'measured' run of the same "
                    "kind (ingest-T), with the command line in the scenario and in every record. Nothing is stored "
                    "unless the command exits 0 and all its output parses. Example: longhaul measure --tool iperf3 "
                    "--distance-km 10 -- iperf3 -c HOST -P 4 -t 10 -J")
    add_measurement_options(p, "COMMAND runs (its output format)")
    p.add_argument("--timeout-s", type=real(0, MAX_TIMEOUT_S, above_lo=True),
                   help="stop COMMAND (its whole process group) after this many seconds, (0, 604800]; "
                        "nothing is stored then (default: no limit)")
    add_output_options(p, "run and parse, store nothing")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARG ...]",
                   help="the benchmark and its arguments, after --")
    p.set_defaults(func=cmd_measure)


def cmd_measure(args) -> int:
    from longhaul.measure import measure, named

    argv = args.command[1:] if args.command[:1] == ["--"] else args.command
    # Every option is checked before the command runs: a typo must not cost a long measurement.
    if not argv:
        raise UserError("measure: no command to run (give it after --, e.g. -- iperf3 -c HOST -J)")
    delay = one_delay(args, "measure", "(the one the link has)")
    check_label(args.label)
    store = None if args.dry_run else store_from_args(args).check_writable()
    scenario, records, captured = measure(argv, args.tool, delay_us=delay, label=args.label, timeout_s=args.timeout_s)
    times = {"started_utc": captured.started_utc, "finished_utc": captured.finished_utc}
    return store_and_print(args, store, [(named(argv), scenario, records)], times=times)
