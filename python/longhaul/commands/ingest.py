"""``longhaul ingest FILE --tool perftest|osu|iperf3 --delay-us D --label L``: store real measurements."""

from __future__ import annotations

import sys

from longhaul.errors import UserError
from longhaul.ingest import TOOLS, ingest_file
from longhaul.output import FORMATS, count as _count, emit
from longhaul.results import add_store_option, store_from_args
from longhaul.units import delays_from_options

SHOW = ("tool", "test", "op", "transport", "direction", "size_bytes", "streams", "delay_us",
        "bw_MBps", "lat_us", "msg_rate_Mps", "rate_gbps")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "ingest", help="read perftest / OSU / iperf3 output into the results store",
        description="Parse a benchmark's printed output and save it as a 'measured' run. Bandwidths are "
                    "converted to MB/s with MB = 10^6 bytes (perftest's MB/sec and MiB/sec are 2^20 bytes/s).")
    p.add_argument("files", nargs="+", metavar="FILE", help="output file(s) of the tool")
    add_measurement_options(p, "printed the file")
    p.add_argument("--source", choices=("measured", "emu"),
                   help="measured on real links (default) or through the link emulator; OSU text that longhaul "
                        "printed says which it is (sim for the model's, emu for the emulator's port)")
    add_output_options(p)
    p.set_defaults(func=cmd_ingest)


def add_measurement_options(p, tool_did: str) -> None:
    """--tool, the delay or distance, --label: the facts of a measurement (``ingest`` and ``measure``)."""
    p.add_argument("--tool", required=True, choices=TOOLS, help=f"which tool {tool_did}")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--delay-us", help="one-way WAN delay of the measurement in microseconds")
    where.add_argument("--distance-km", help="or: the fibre distance in km (5 us per km)")
    where.add_argument("--distance-miles", help="or: the fibre distance in miles")
    p.add_argument("--label", default="", help="free text naming the site/setup, e.g. site-a")


def add_output_options(p, dry_run: str = "parse and print, store nothing") -> None:
    add_store_option(p)
    p.add_argument("--dry-run", action="store_true", help=dry_run)
    p.add_argument("--format", choices=FORMATS, default="table")


def one_delay(args, verb: str, what: str) -> float | None:
    """The one delay (us) --delay-us / --distance-km / --distance-miles gives, None when none is given."""
    if args.delay_us is None and args.distance_km is None and args.distance_miles is None:
        return None
    delays = delays_from_options(args.delay_us, args.distance_km, args.distance_miles)
    if len(delays) != 1:
        raise UserError(f"{verb}: give one delay or distance {what}")
    return delays[0]


#: the title `longhaul.osu_text` gives OSU-style text (see ``longhaul.ingest.osu``): who made it
_MADE_BY = {"model of OMB": "sim", "port of OMB": "emu"}


def _source(path: str, records: list[dict], given: str | None) -> str:
    """A run's source: what longhaul's own OSU text says made it (the simulator's numbers must not
    be stored as measured), else --source, else measured."""
    made = {src for r in records for mark, src in _MADE_BY.items() if mark in str(r.get("osu_version", ""))}
    if not made:
        return given or "measured"
    (source,) = made
    if given is not None and given != source:
        raise UserError(f"ingest: '{path}' was printed by longhaul's {'simulator' if source == 'sim' else 'emulator'} "
                        f"(its title says so), so --source {given} would mislabel it; leave --source out "
                        f"(it is stored as {source})")
    return source


def cmd_ingest(args) -> int:
    delay = one_delay(args, "ingest", "per file (the one it was measured at)")
    store = None if args.dry_run else store_from_args(args).check_writable()
    parsed = [(f, *ingest_file(f, args.tool, delay_us=delay, label=args.label)) for f in args.files]
    return store_and_print(args, store, parsed)


def _note_copies(store, name: str, scenario: dict) -> None:
    """Say so when the same output (its bytes) is already stored as another run, under another file
    name, delay or label: analysis would count the copy as one more independent repeat."""
    from longhaul.results import scenario_hash

    digest = scenario.get("file_sha256") or scenario.get("output_sha256")
    if not digest or not store.exists():
        return
    this_run = scenario_hash(scenario)   # the same facts again: that run is replaced, not copied
    for e in store.runs(kind=scenario["kind"]):
        if e["run_id"] == this_run:
            continue
        old = store.read_meta(e["run_id"]).get("scenario", {})
        if digest in (old.get("file_sha256"), old.get("output_sha256")):
            was = old.get("file_name") or old.get("command")
            print(f"{name}: note: the same output is already stored as run {e['run_id'][:12]} ('{was}', delay_us "
                  f"{old.get('delay_us')}, label '{old.get('label', '')}'); analysis counts the two as independent "
                  f"repeats: `longhaul results rm {e['run_id'][:12]}` if one is a copy", file=sys.stderr)


def store_and_print(args, store, parsed: list[tuple[str, dict, list[dict]]], times: dict | None = None) -> int:
    """Store each parsed output ``(name, scenario, records)`` as one run (none when ``store`` is None:
    --dry-run), after checking them all, and print their records as ``--format`` says. ``times``:
    the run's started_utc and finished_utc (those of the measurement; default: now)."""
    all_records = []
    sources = [_source(name, records, getattr(args, "source", None)) for name, _, records in parsed]
    for (name, scenario, records), source in zip(parsed, sources):  # every file checked before anything is stored
        if store is not None:
            _note_copies(store, name, scenario)
            run_id = store.put(scenario, records, source=source, label=args.label, **(times or {}))
            print(f"{name}: {_count(len(records), 'record')} stored as run {run_id[:12]} in '{store.root}'",
                  file=sys.stderr)
        all_records.extend(records)
    cols = [c for c in SHOW if any(c in r for r in all_records)]
    emit(all_records, args.format, columns=cols if args.format == "table" else None,
         title=f"{args.tool}: {_count(len(all_records), 'record')}")
    return 0
