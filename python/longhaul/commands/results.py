"""``longhaul results ls|show|export|rm|verify|gc``: look into the results store.

Every action needs an existing store: a missing one (a mistyped ``--store``) is a one-line error,
exit status 2, and nothing is created (``store_from_args`` opens it with ``must_exist``).
"""

from __future__ import annotations

import io
import json
import sys

from longhaul.errors import UserError
from longhaul.output import FORMATS, count as _count, emit
from longhaul.results import (
    SOURCES,
    add_store_option,
    atomic_write_bytes,
    atomic_write_text,
    check_output_path,
    records_to_table,
    scenario_params,
    store_from_args,
)

LS_COLUMNS = ("run_id", "kind", "params", "source", "label", "n_records", "started_utc")
EXPORT_FORMATS = ("csv", "json", "parquet")
HEX = "0123456789abcdef"


def _filters(p) -> None:
    p.add_argument("--source", choices=SOURCES, help="only runs of this source")
    p.add_argument("--label", help='only runs with this label ("" for runs saved without one)')
    p.add_argument("--kind", help="only runs of this kind (e.g. verbs, ingest-perftest)")


def register(subparsers) -> None:
    parser = subparsers.add_parser("results", help="list, show, export or remove stored runs",
                                   description="The results store: one Parquet file per run plus manifest.json.")
    sub = parser.add_subparsers(dest="results_cmd", metavar="ACTION", parser_class=type(parser))
    sub.required = True

    p = sub.add_parser("ls", help="list stored runs")
    add_store_option(p)
    _filters(p)
    p.add_argument("--format", choices=FORMATS, default="table")
    p.set_defaults(func=cmd_ls)

    p = sub.add_parser("show", help="show one run: its facts and records")
    add_store_option(p)
    p.add_argument("run", help="run id or a unique prefix of it (4+ characters)")
    p.add_argument("--format", choices=FORMATS, default="table")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("export", help="export records of runs as csv, json or parquet")
    add_store_option(p)
    p.add_argument("runs", nargs="*", help="run ids or prefixes (default: every run that passes the filters)")
    _filters(p)
    p.add_argument("--format", choices=EXPORT_FORMATS, default="csv")
    p.add_argument("--out", metavar="FILE", help="write here (atomically) instead of stdout; required for parquet")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("rm", help="remove runs (also damaged ones)")
    add_store_option(p)
    p.add_argument("runs", nargs="*", help="run ids or prefixes")
    p.add_argument("--all", action="store_true", help="every run that passes the filters")
    _filters(p)
    p.set_defaults(func=cmd_rm)

    p = sub.add_parser("verify", help="read every run file and check its checksum; list damaged or foreign ones "
                                      "and stray temporary files (exit 2 if any)")
    add_store_option(p)
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("gc", help="remove the temporary files left by interrupted writes")
    add_store_option(p)
    p.set_defaults(func=cmd_gc)


def _no_match(store, args) -> str | None:
    """When the store holds runs but the filters select none: a line saying so, naming for each
    filter that matches no run the values the store does hold (kinds and labels are not a fixed
    set: any model, tool or user names them). None when the store is empty."""
    every = store.runs()
    if not every:
        return None
    given = [(opt, key, value) for opt, key, value in (("--source", "source", args.source),
                                                       ("--label", "label", args.label),
                                                       ("--kind", "kind", args.kind)) if value is not None]
    hints = []
    for _opt, key, value in given:
        held = sorted({str(e[key]) for e in every})
        if value not in held:
            shown = ", ".join(repr(h) for h in held[:12]) + (f", ... ({len(held)} in all)" if len(held) > 12 else "")
            hints.append(f"{key}s in the store: {shown}")
    filters = " ".join(f"{opt} {value or repr(value)}" for opt, _, value in given)
    return (f"no run in store '{store.root}' matches {filters} ({_count(len(every), 'run')} in the store"
            + "".join(f"; {h}" for h in hints) + ")")


def cmd_ls(args) -> int:
    store = store_from_args(args)
    entries = store.runs(source=args.source, label=args.label, kind=args.kind)
    # an index written before runs had their parameters in it: read them from the run's file
    rows = [{**e, "run_id": e["run_id"][:12],
             "params": e["params"] if "params" in e else scenario_params(store.read_meta(e["run_id"]).get("scenario", {}))}
            for e in entries]
    if not rows:
        note = _no_match(store, args)
        if args.format == "table":
            print(note or f"no runs in store '{store.root}'")
            return 0
        if note:  # stdout stays the (empty) document a program asked for
            print(f"note: {note}", file=sys.stderr)
    emit(rows, args.format, columns=LS_COLUMNS, title=f"runs in {store.root}")
    return 0


def cmd_show(args) -> int:
    store = store_from_args(args)
    run_id = store.resolve(args.run)
    meta, records = store.read_run(run_id)
    if args.format == "json":
        json.dump({"run": meta, "records": records}, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    if args.format == "table":
        print(f"{'run':<17} {run_id}")
        for key in ("source", "label", "seed", "software_version", "started_utc", "finished_utc"):
            print(f"{key:<17} {meta.get(key)}")
        print(f"{'host':<17} {json.dumps(meta.get('host', {}), sort_keys=True)}")
        print(f"{'scenario':<17} {meta.get('scenario_json', json.dumps(meta.get('scenario')))}")
    emit(records, args.format, title=_count(len(records), "record"))
    return 0


def _no_filters_with_runs(args, action: str) -> None:
    """Run ids and filters are two ways to select: the filters would be ignored, so refuse both."""
    given = [opt for opt, value in (("--source", args.source), ("--label", args.label), ("--kind", args.kind))
             if value is not None]
    if args.runs and given:
        raise UserError(f"results {action}: give run ids or filters ({', '.join(given)}), not both "
                        "(filters select runs in place of run ids)")


def _select(store, args) -> list[str]:
    if args.runs:
        return [store.resolve(r) for r in args.runs]
    run_ids = [e["run_id"] for e in store.runs(source=args.source, label=args.label, kind=args.kind)]
    if not run_ids and any(v is not None for v in (args.source, args.label, args.kind)):
        note = _no_match(store, args)
        if note:
            print(f"note: {note}", file=sys.stderr)
    return run_ids


def cmd_export(args) -> int:
    if args.format == "parquet" and not args.out:
        raise UserError("export --format parquet: give --out FILE (Parquet is binary, not for a terminal)")
    _no_filters_with_runs(args, "export")
    if args.out:  # like cp: an existing directory or a missing one is an error, before any work
        check_output_path(args.out, make_parents=False)
    store = store_from_args(args)
    run_ids = _select(store, args)
    records = store.records(run_ids)
    if args.format == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        sink = pa.BufferOutputStream()
        pq.write_table(records_to_table(records, {"exported_runs": run_ids}), sink)
        atomic_write_bytes(args.out, sink.getvalue().to_pybytes(), make_parents=False)
    else:
        buf = io.StringIO()
        emit(records, args.format, out=buf)
        if args.out:
            atomic_write_text(args.out, buf.getvalue(), make_parents=False)
        else:
            sys.stdout.write(buf.getvalue())
    skipped = len(store.skipped)
    if args.out:
        print(f"exported {_count(len(records), 'record')} of {_count(len(run_ids) - skipped, 'run')} to {args.out}"
              + (f" (skipped {_count(skipped, 'damaged run')})" if skipped else ""), file=sys.stderr)
    elif skipped:
        print(f"longhaul: note: exported the good runs; skipped {_count(skipped, 'damaged run')}", file=sys.stderr)
    return 0


def cmd_rm(args) -> int:
    if not args.runs and not args.all:
        raise UserError("results rm: name runs to remove, or give --all (with --source/--label/--kind to narrow)")
    if args.runs and args.all:
        raise UserError(f"results rm: give run ids or --all, not both (RUN ... removes those runs, "
                        f"--all every run that passes --source/--label/--kind); got {len(args.runs)} run id(s) and --all")
    _no_filters_with_runs(args, "rm")
    store = store_from_args(args)
    store.check_exists()   # a missing store is an error, and nothing is created
    if args.runs:
        run_ids = []
        for ref in args.runs:
            # a damaged file is not in the manifest's good entries: accept its file name too
            prefix = ref.strip().lower()
            path_match = sorted(p.stem for p in store.runs_dir.glob(f"{prefix}*.parquet")) \
                if store.runs_dir.is_dir() and len(prefix) >= 4 and all(c in HEX for c in prefix) else []
            if len(path_match) == 1:
                run_ids.append(path_match[0])
            else:
                run_ids.append(store.resolve(ref))
    else:
        run_ids = _select(store, args)
    removed = store.remove(run_ids)
    print(f"removed {_count(len(removed), 'run')} from '{store.root}'")
    return 0


def cmd_verify(args) -> int:
    store = store_from_args(args)
    problems, unchecked = store.verify()   # a missing store is an error, not a store of 0 good files
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        return 2
    n = len(list(store.runs_dir.glob("*.parquet"))) if store.runs_dir.is_dir() else 0
    print(f"{_count(n, 'run file')} in '{store.root}' read back fine and match their checksums"
          + (f" ({unchecked} written before checksums: read back, not checked)" if unchecked else ""))
    return 0


def cmd_gc(args) -> int:
    store = store_from_args(args)
    removed = store.gc()
    print(f"removed {_count(len(removed), 'stray temporary file')} from '{store.root}'")
    return 0
