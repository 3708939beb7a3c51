"""``longhaul analyse profile|stability|dpm|balance|calibrate|compare``: analysis of stored runs."""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

from longhaul import safeio
from longhaul.errors import UserError
from longhaul.output import FORMATS, emit
from longhaul.results import SOURCES, add_store_option, store_from_args
from longhaul.units import parse_float_list, parse_sizes


def _selection(p, prefix: str = "") -> None:
    dest = prefix.replace("-", "_")
    p.add_argument(f"--{prefix}run", dest=f"{dest}run", action="append", metavar="RUN",
                   help="run id or prefix (repeatable; default: every run that passes the filters)")
    p.add_argument(f"--{prefix}label", dest=f"{dest}label",
                   help='only runs with this label ("" for runs saved without one)')
    if not prefix:
        p.add_argument("--source", choices=SOURCES, help="only runs of this source")
        p.add_argument("--kind", help="only runs of this kind (e.g. verbs, ingest-perftest)")
        p.add_argument("--input", metavar="FILE", help="read records from a csv, json or parquet file "
                                                       "(e.g. from `results export`) instead of the store")


def _common(p, value: str | None = "bw_MBps") -> None:
    add_store_option(p)
    _selection(p)
    if value:
        p.add_argument("--value", default=value, help=f"column to analyse (default {value})")
        p.add_argument("--by", default=None, help="comma list of columns that split the series (default: every "
                                                  "configuration column that varies, e.g. transport or streams, "
                                                  "then size_bytes when the records have sizes)")
    p.add_argument("--where", action="append", default=[], metavar="COL=V1,V2",
                   help="keep records whose column equals one of the values (repeatable), e.g. test=bw")
    p.add_argument("--format", choices=FORMATS, default="table")


def register(subparsers) -> None:
    parser = subparsers.add_parser("analyse", aliases=["analyze"], help="analyse stored runs (or an exported file)",
                                   description="Analyse stored runs (or an exported file).")
    sub = parser.add_subparsers(dest="analyse_cmd", metavar="ANALYSIS", parser_class=type(parser))
    sub.required = True

    p = sub.add_parser("profile", help="throughput distance profile T(d, s): mean per delay, one series per size")
    _common(p)
    p.add_argument("--plot", metavar="FILE", help="also draw it (FILE.png and FILE.svg)")
    p.set_defaults(func=cmd_profile)

    p = sub.add_parser("stability", help="repeated runs: mean, std-dev, min, max per distance")
    _common(p)
    p.set_defaults(func=cmd_stability)

    p = sub.add_parser("dpm", help="decrease-per-mile D(d_i) and its average, with a Hoeffding bound")
    _common(p)
    p.add_argument("--confidence", type=float, default=0.95, help="confidence level of the bound (default 0.95)")
    p.add_argument("--bound-MBps", dest="bound", type=float, default=None,
                   help="a-priori upper bound B on every measurement, in --value's unit (e.g. 1000 MB/s for 4x "
                        "SDR); default: observed max")
    p.add_argument("--simultaneous", action="store_true", help="bound all estimates at once (Bonferroni)")
    p.set_defaults(func=cmd_dpm)

    p = sub.add_parser("balance", help="communication balance ratio intra-node / inter-node")
    add_store_option(p)
    _selection(p, "intra-")
    _selection(p, "inter-")
    p.add_argument("--where", action="append", default=[], metavar="COL=V1,V2",
                   help="keep records whose column equals one of the values, on both sides (repeatable), "
                        "e.g. delay_us=0")
    p.add_argument("--format", choices=FORMATS, default="table")
    p.set_defaults(func=cmd_balance)

    p = sub.add_parser("calibrate", help="fit a model's free parameters to measured bandwidths")
    _common(p, value=None)
    p.add_argument("--model", default="window",
                   help="built-in model to fit: window (verbs/MPI bandwidth vs size and delay: per-message cost, "
                        "messages in flight) or tcp-stack (TCP throughput vs delay and streams: stack cost per "
                        "segment and per byte, window, base RTT)")
    p.add_argument("--value", default="bw_MBps", help="measured column (default bw_MBps)")
    p.add_argument("--predict-delays-us", metavar="LIST", help="predict at these delays (comma list of us)")
    p.add_argument("--predict-sizes", metavar="LIST", help="... and these sizes (window model; default: the measured sizes)")
    p.set_defaults(func=cmd_calibrate)

    p = sub.add_parser("compare", help="published point vs model vs measured, with relative errors")
    add_store_option(p)
    p.add_argument("--published", metavar="TOML", help="published-points.toml (default: found in the repo)")
    p.add_argument("--point", action="append", metavar="ID", help="only these point ids (repeatable)")
    p.add_argument("--model-run", action="append", metavar="RUN", help="runs whose peak bw_MBps is the model value")
    p.add_argument("--measured-run", action="append", metavar="RUN", help="runs whose peak bw_MBps is the measured value")
    p.add_argument("--format", choices=FORMATS, default="table")
    p.set_defaults(func=cmd_compare)


# --------------------------------------------------------------------------- selection
def _read_input(path: str) -> list[dict]:
    p = Path(path)
    # bounded: a FIFO blocked, /dev/zero was read until memory ran out
    data = safeio.read_file(path, "--input", safeio.TABLE_BYTES,
                            "a csv, json or parquet file (from `longhaul results export`)")
    if data.startswith(b"PAR1"):  # `results export --format parquet`: one flat record per row
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            return pq.read_table(pa.BufferReader(data), use_threads=False, pre_buffer=False).to_pylist()  # see Store.read_run
        except (OSError, pa.ArrowException) as err:
            raise UserError(f"--input: '{p}' is not a readable Parquet file "
                            f"({str(err).splitlines()[0][:120]})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        text, bad = "", f"byte {err.start} is not UTF-8"
    else:
        ctrl = re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", text)
        bad = f"binary content at character {ctrl.start()}" if ctrl else ""
    if bad:
        raise UserError(f"--input: '{p}' is not a csv, json or parquet file ({bad}); "
                        "give a file from `longhaul results export`")
    if p.suffix == ".json" or text.lstrip().startswith("["):
        try:   # bounded: a deep document was a RecursionError traceback
            data = safeio.parse_json(text, f"--input: '{p}'", finite=False)
        except safeio.DocumentError as err:
            raise UserError(f"--input: '{p}' line {err.line}: not JSON ({err.problem})") from None
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise UserError(f"--input: '{p}' must hold a JSON list of records")
        return data
    import csv

    rows = []
    reader = csv.DictReader(text.splitlines())
    try:
        for r in reader:
            if None in r:
                raise UserError(f"--input: '{p}' line {reader.line_num}: more fields than the header has columns "
                                "(not a csv file of records?)")
            rows.append({k: (v if k in _TEXT_COLUMNS else _auto(v)) for k, v in r.items()})
    except csv.Error as err:
        raise UserError(f"--input: '{p}' line {reader.line_num}: not csv ({err})") from None
    return rows


#: Columns `results export` writes that are names, never numbers: a csv run id of digits (or one
#: like '123e45678901') or a label '007' stays the text json and parquet carry.
_TEXT_COLUMNS = ("run_id", "source", "label", "kind")


def _auto(v: str):
    if v is None or v == "":
        return None
    if not safeio.is_ascii_number(v):   # int() reads '٣' as 3
        return v
    for t in (int, float):
        try:
            return t(v)
        except ValueError:
            pass
    return v


def _where(records: list[dict], clauses: list[str]) -> list[dict]:
    from longhaul.analysis.profiles import LIST_LIMIT, column_list, present_columns, value_text
    from longhaul.units import list_items

    if not clauses:
        return records
    present = present_columns(records)
    for c in clauses:
        col, eq, vals = c.partition("=")
        col = col.strip()
        if not eq or not col:
            raise UserError(f"--where '{c}': use COLUMN=VALUE[,VALUE...], e.g. test=bw")
        items = list_items(vals, f"--where '{c}'", "a value")
        if not items:
            have = sorted({r[col] for r in records if r.get(col) is not None}, key=_value_sort)
            example = value_text(have[0]) if have else "65536"   # a value the records hold, where they hold one
            raise UserError(f"--where '{c}': no value; use COLUMN=VALUE[,VALUE...], e.g. {col}={example}")
        if col not in present:
            raise UserError(f"--where '{c}': column '{col}' is in no selected record "
                            f"(columns present: {column_list(present)})")
        # A value matches a number by value (delay_us=0 selects 0.0) and any value by its text.
        held = {_match_key(r[col]) for r in records if r.get(col) is not None}
        missing = [v for v in items if _match_key(_auto(v)) not in held and v not in held]
        if missing:   # a typo (6553 for 65536) would silently drop that value's records from the analysis
            have = sorted({r[col] for r in records if r.get(col) is not None}, key=_value_sort)
            shown = ", ".join(value_text(v) for v in have[:LIST_LIMIT])
            more = f" and {len(have) - LIST_LIMIT} more" if len(have) > LIST_LIMIT else ""
            raise UserError(f"--where '{c}': no selected record has {col} = {' or '.join(missing)} "
                            f"(values present: {shown}{more})")
        allowed = {_match_key(_auto(v)) for v in items} | set(items)
        records = [r for r in records if r.get(col) is not None and _match_key(r[col]) in allowed]
    return records


def _value_sort(v):
    k = _match_key(v)
    return (0, k, "") if isinstance(k, float) else (1, 0.0, k)


def _match_key(v):
    """Numbers compare by value (delay_us=0 selects 0.0), anything else by its text."""
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)


def _select_input(path: str, runs: list[str], label: str | None, source: str | None,
                  kind: str | None) -> list[dict]:
    """The records of an exported file that pass --run, --label, --source and --kind, judged by
    the columns `results export` writes (run_id, kind, source, label), as the store judges its runs."""
    recs = _read_input(path)

    def column(option: str, col: str) -> None:
        if not any(col in r for r in recs):
            hint = "not a file from `longhaul results export`?"
            raise UserError(f"{option}: '{path}' has no {col} column ({hint})")

    def text(v) -> str:
        return "" if v is None else str(v)

    if runs:
        column("--run", "run_id")
        ids = list(dict.fromkeys(text(r.get("run_id")) for r in recs if r.get("run_id") is not None))
        from longhaul.analysis.profiles import column_list
        from longhaul.results import resolve_run

        see = f"the run_id column: {column_list(ids, 10)}"
        wanted = {resolve_run(ref, ids, f"'{path}'", see) for ref in runs}
        recs = [r for r in recs if text(r.get("run_id")) in wanted]
    for option, col, want in (("--label", "label", label), ("--source", "source", source), ("--kind", "kind", kind)):
        if want is not None:   # as for the store: "" selects records without a label
            column(option, col)
            recs = [r for r in recs if text(r.get(col)) == want]
    return recs


def _check_one_kind(args, recs: list[dict]) -> None:
    """Refuse to average (or fit) records of runs of different kinds: a verbs bandwidth and an NFS
    throughput at the same size and delay are different measurements. ``--by kind,...`` keeps
    them apart, so then it is fine."""
    by = _by_columns(args, recs) if hasattr(args, "by") else ()
    if "kind" in by:
        return
    kinds = sorted({str(r["kind"]) or "(none)" for r in recs if r.get("kind") is not None})
    if len(kinds) > 1:
        has_by = hasattr(args, "by")
        split = f", or keep them apart with --by {','.join(('kind',) + by)}" if has_by else ""
        raise UserError(f"analysis: the selection mixes runs of {len(kinds)} kinds ({', '.join(kinds)}), whose "
                        f"records are different measurements; choose one with --kind (e.g. --kind {kinds[0]}){split}")


def select(args, prefix: str = "") -> list[dict]:
    """The records --run/--label/--source/--kind/--where select, from the store or from --input.
    --run and the filters combine (a named run must pass them too); a run named twice counts once."""
    dest = prefix.replace("-", "_")
    runs = getattr(args, f"{dest}run") or []
    label = getattr(args, f"{dest}label")
    source = None if prefix else getattr(args, "source", None)
    kind = None if prefix else getattr(args, "kind", None)
    if prefix and not runs and label is None:
        raise UserError(f"balance: give --{prefix}run or --{prefix}label")
    if not prefix and getattr(args, "input", None):
        recs = _select_input(args.input, runs, label, source, kind)
        where = f"in '{args.input}'"
    else:
        store = store_from_args(args)
        named = list(dict.fromkeys(store.resolve(r) for r in runs))
        entries = {e["run_id"]: e for e in store.runs(source=source, label=label, kind=kind)}
        ids = [i for i in named if i in entries] if runs else list(entries)
        # Each record knows its run's id, kind, source and label: --by kind, --where kind=.
        recs = store.records(ids)
        where = f"in store '{store.root}'"
    recs = _where(recs, getattr(args, "where", []) or [])
    if not recs:
        given = [f"--{prefix}run {r}" for r in runs] + [f"--{o} {v or repr(v)}" for o, v in
                 ((f"{prefix}label", label), ("source", source), ("kind", kind)) if v is not None]
        by = f" by {' '.join(given)}" if given else ""
        see = "its run_id, kind, source and label columns" if where.startswith("in '") else "`longhaul results ls`"
        raise UserError(f"analysis: no records selected{by} {where} (see {see})")
    if not prefix:
        _check_one_kind(args, recs)
    return recs


def _by_columns(args, recs: list[dict]) -> tuple[str, ...]:
    """--by's columns; left out, the configuration columns that vary in the selection (one series
    per configuration: transport, streams, source, ...), then size_bytes if the records have sizes."""
    from longhaul.analysis.profiles import varying_configuration
    from longhaul.units import list_items
    if args.by is None:
        sizes = ("size_bytes",) if any(r.get("size_bytes") is not None for r in recs) else ()
        return tuple(varying_configuration(recs, args.value)) + sizes
    by = list_items(args.by, "--by", "a column name")
    if not by:   # '' pooled every size and configuration into one series
        raise UserError("--by: empty; give a comma list of columns (e.g. --by size_bytes), or leave --by out to split "
                        "by every configuration column that varies, then size_bytes")
    twice = sorted({b for b in by if by.count(b) > 1})
    if twice:
        raise UserError(f"--by: {', '.join(twice)} given twice (each column splits the series once)")
    return tuple(by)


def _by(args, recs: list[dict]) -> tuple[str, ...]:
    """--by's columns, refused when a series would average different measurements: records that
    differ in a configuration column --by leaves out are not repeats of one measurement."""
    from longhaul.analysis.profiles import mixed_configuration

    by = _by_columns(args, recs)
    group, col, vals = mixed_configuration(recs, args.value, "delay_us", by)
    if col:
        series = f" in the series {', '.join(f'{k}={v}' for k, v in group.items())}" if group else ""
        raise UserError(f"analysis: records with different {col} ({', '.join(vals)}) would be averaged together"
                        f"{series}; they are different measurements, not repeats: add it to --by "
                        f"(--by {','.join((col,) + by)}), choose one with --where {col}={vals[0]}, or leave --by "
                        "out (it then splits by every such column)")
    return by


# --------------------------------------------------------------------------- verbs
def _plot_paths(plot: str) -> None:
    """Refuse a --plot path that cannot be written, before any work: an empty name, a directory, or
    a missing directory (not created, as `results export --out` and cp do not)."""
    from longhaul.results import check_output_path

    if not plot.strip():
        raise UserError("--plot: empty file name; give FILE (FILE.png and FILE.svg are written)")
    base = Path(plot)
    if base.suffix in (".png", ".svg"):   # as plots.save: p.png draws p.png and p.svg
        base = base.with_suffix("")
    try:
        check_output_path(base, make_parents=False)
        for ext in (".png", ".svg"):
            check_output_path(base.with_suffix(ext), make_parents=False)
    except UserError as err:
        raise UserError(f"--plot: {err}") from None


def cmd_profile(args) -> int:
    from longhaul.analysis import distance_profile

    if args.plot is not None:
        _plot_paths(args.plot)
    recs = select(args)
    by = _by(args, recs)
    rows = distance_profile(recs, value=args.value, by=by)
    emit(rows, args.format, title=f"distance profile of {args.value}")
    if args.plot is not None:
        from longhaul.plots import bandwidth_vs_delay, close, save

        series = by[0] if len(by) == 1 else None
        if len(by) > 1:  # one curve per combination, as the table has one series per combination
            series = "/".join(by)
            rows = [{**r, series: "/".join("" if r.get(b) is None else str(r[b]) for b in by)} for r in rows]
        fig = bandwidth_vs_delay(rows, value=args.value, series=series, title=f"{args.value} vs WAN delay")
        paths = save(fig, args.plot)
        close(fig)
        print("wrote " + ", ".join(str(p) for p in paths), file=sys.stderr)
    return 0


def cmd_stability(args) -> int:
    from longhaul.analysis import stability_profile

    recs = select(args)
    emit(stability_profile(recs, value=args.value, by=_by(args, recs)), args.format,
         title=f"stability of {args.value} over repeated runs")
    return 0


def cmd_dpm(args) -> int:
    from longhaul.analysis import decrease_per_mile
    from longhaul.analysis.dpm import value_unit

    recs = select(args)
    by = _by(args, recs)
    rows = decrease_per_mile(recs, value=args.value, by=by, confidence=args.confidence,
                             bound=args.bound, simultaneous=args.simultaneous)
    u = value_unit(args.value)
    cols = list(by) + ["estimate", "distance_miles", f"D_{u}_per_mile", f"D_lo_{u}_per_mile", f"D_hi_{u}_per_mile",
                       "n0", "n", f"bound_{u}", "bound_from"]
    emit(rows, args.format, columns=cols if args.format == "table" else None,
         title=f"decrease per mile of {args.value}, Hoeffding {args.confidence:.0%} bound")
    return 0


def cmd_balance(args) -> int:
    from longhaul.analysis import balance_ratios

    rows, summary = balance_ratios(select(args, "intra-"), select(args, "inter-"))
    if args.format == "json":
        json.dump({"per_size": rows, "summary": summary}, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    if args.format == "csv":
        # One document for programs, as json: the per-size rows, then the summary, told apart by `row`.
        emit([{"row": "per_size", **r} for r in rows] + [{"row": "summary", **r} for r in summary], args.format)
        return 0
    emit(rows, args.format, title="intra-node / inter-node per size")
    emit(summary, args.format, title="communication balance ratio (1.0 = balanced)")
    return 0


#: The smallest value each calibration column may take (delays from 0; sizes, streams, MSS from 1).
_CALIBRATION_MIN = {"delay_us": 0.0, "size_bytes": 1.0, "streams": 1.0, "mss_bytes": 1.0}


def _calibration_number(i: int, column: str, value, lo: float | None) -> float:
    """``value`` of ``column`` in record ``i`` as a finite number >= ``lo`` (> 0 when ``lo`` is None)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = math.nan
    if isinstance(value, bool) or not math.isfinite(v) or (v <= 0 if lo is None else v < lo):
        valid = "a number > 0" if lo is None else f"a number >= {lo:g}"
        raise UserError(f"calibrate: record {i + 1} has {column} = {value!r}; give {valid}")
    return v


def cmd_calibrate(args) -> int:
    import numpy as np

    from longhaul.analysis import MODELS, fit

    if args.model not in MODELS:
        raise UserError(f"--model '{args.model}' is not one of {', '.join(MODELS)}")
    m = MODELS[args.model]
    # Check the prediction options before any work, so a bad one prints nothing but its error.
    delays = parse_float_list(args.predict_delays_us, "--predict-delays-us", 0, 200_000) \
        if args.predict_delays_us is not None else None
    sizes = parse_sizes(args.predict_sizes, "--predict-sizes") if args.predict_sizes is not None else None
    if sizes and "size_bytes" not in m.columns:
        raise UserError(f"--predict-sizes: the {args.model} model has no message size (it predicts at the measured "
                        f"{', '.join(c for c in m.columns if c != 'delay_us')})")
    if sizes and not delays:
        raise UserError("--predict-sizes: give --predict-delays-us too (predictions are per delay)")

    def get(r, c):
        v = r.get(c)
        return r.get(m.aliases[c]) if v is None and c in m.aliases else v

    selected = select(args)
    need = [c for c in m.columns if c not in m.column_defaults]
    recs = [r for r in selected if r.get(args.value) is not None and all(get(r, c) is not None for c in need)]
    if not recs:
        from longhaul.analysis.profiles import column_list, numeric_columns

        raise UserError(f"calibrate: no record has {', '.join(need)} and {args.value} "
                        "(ingest with --delay-us so measurements carry their delay); "
                        f"numeric columns present: {column_list(numeric_columns(selected))}")

    def column(i, r, c):
        v = get(r, c)
        return _calibration_number(i, c, m.column_defaults[c] if v is None else v, _CALIBRATION_MIN[c])

    from longhaul.analysis.profiles import mixed_configuration

    # One fit is one configuration: its model's columns vary, nothing else that says what was measured.
    free = (*m.columns, *m.aliases.values(), *m.varies_through_columns)
    _, col, vals = mixed_configuration(recs, args.value, None, (), free=free)
    if col:
        raise UserError(f"calibrate: the records mix {col} {', '.join(vals)}, different measurements the {args.model} "
                        f"model does not take as a variable; fit one at a time (--where {col}={vals[0]})")
    x = np.array([[column(i, r, c) for c in m.columns] for i, r in enumerate(recs)])
    y = np.array([_calibration_number(i, args.value, r[args.value], None) for i, r in enumerate(recs)])
    p0 = dict(m.params0)
    p0["link_MBps"] = float(y.max())
    notes = []
    for name, col in m.needs_spread.items():
        if len(set(x[:, m.columns.index(col)])) < 2:
            p0.pop(name)
            notes.append(f"{name} not fitted (taken as 0): every point has the same {col}, so per-byte "
                         "and per-segment costs cannot be told apart; the per-segment cost carries both")
    starts = [p0] + ([{k: v for k, v in m.start(x, y).items() if k in p0}] if m.start else [])
    res = min((fit(m.fn, s, x, y, bounds=m.bounds) for s in starts), key=lambda r: r.rss)
    r2 = "undefined (every measured value is the same)" if math.isnan(res.r2) else f"{res.r2:.4f}"
    title = f"{args.model} model fitted to {res.n} points (R^2 = {r2})"
    # Signs of a fit that went nowhere. Upper bounds only: a lower one (a zero cost, a window of one
    # message) can be the real answer.
    if res.r2 < 0:
        notes.append(f"R^2 = {res.r2:.3g}: the model fits these points worse than their mean does; check the value "
                     "column and its unit")
    for k in res.names:
        hi = m.bounds[k][1]
        if math.isclose(res.values[k], hi, rel_tol=1e-6):
            notes.append(f"{k} ended at its upper bound {hi:g}: no value in range fits these points; check the value "
                         "column and its unit")
    notes += [f"{k}: not constrained by these points "
              + (f"(they determine it only together with {', '.join(res.tied[k])}: measure where one of them alone "
                 "limits, e.g. at more delays)" if res.tied.get(k) else "(no measurement is limited by it)")
              for k in res.names if not np.isfinite(res.stderr[k])]
    predictions = []
    if delays:
        # Predict at the measured combinations of every other column, at each requested delay.
        di = m.columns.index("delay_us")
        others = sorted({tuple(v for j, v in enumerate(row) if j != di) for row in x})
        if sizes:
            si = [c for c in m.columns if c != "delay_us"].index("size_bytes")
            others = sorted({o[:si] + (float(s),) + o[si + 1:] for o in others for s in sizes})
        xp = np.array([o[:di] + (d,) + o[di:] for o in others for d in delays], dtype=float)
        yp, se = res.predict(xp)
        predictions = [{**{c: (int(v) if c != "delay_us" else v) for c, v in zip(m.columns, row)},
                        f"{args.value}_pred": val, f"{args.value}_pred_stderr": e if np.isfinite(e) else None}
                       for row, val, e in zip(xp, yp, se)]
    if args.format == "table":
        emit(res.table(), args.format, title=title)
        if predictions:
            emit(predictions, args.format, title="predictions (delta-method standard error)")
    else:
        # One document for programs: the parameters, then the predictions, told apart by `row`.
        emit([{"row": "param", **row} for row in res.table()] + [{"row": "prediction", **p} for p in predictions],
             args.format)
        print(title, file=sys.stderr)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return 0


def cmd_compare(args) -> int:
    from longhaul.analysis import comparison_table, load_published, scalar_points

    store = store_from_args(args)
    points = scalar_points(load_published(args.published))
    if not points:
        raise UserError(f"compare: no published point in '{args.published or 'the default points file'}' "
                        "has one MB/s value (value_MBps = number)")
    if args.point:
        unknown = set(args.point) - {p["id"] for p in points}
        if unknown:
            raise UserError(f"--point {sorted(unknown)[0]}: not a published point with one MB/s value "
                            f"(known: {', '.join(p['id'] for p in points)})")
        points = [p for p in points if p["id"] in args.point]
    elif args.model_run or args.measured_run:
        # One run's peak against every published point would set an RC write beside UD, IPoIB and MPI.
        raise UserError("compare: name the published point(s) these runs measure with --point ID (known: "
                        f"{', '.join(p['id'] for p in points)})")

    def peak(runs):
        if not runs:
            return None
        recs = store.records([store.resolve(r) for r in runs])
        vals = [float(r["bw_MBps"]) for r in recs if r.get("bw_MBps") is not None]
        if not vals:
            raise UserError("compare: the runs have no bw_MBps values")
        return max(vals)

    model, measured = peak(args.model_run), peak(args.measured_run)
    rows = comparison_table([{**p, "model": model, "measured": measured} for p in points])
    emit(rows, args.format, columns=("id", "published", "model", "measured", "model_rel_err", "measured_rel_err")
         if args.format == "table" else None, title="published vs model vs measured (MB/s)")
    return 0
