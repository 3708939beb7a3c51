"""``longhaul study``: the default cluster-of-clusters study, as a list of pluggable parts.

A part is a ``StudyPart(name, title, run)``; ``run(ctx)`` returns a ``PartResult`` (records,
figures, tables, validation rows, tuning advice, commands to reproduce) or raises ``SkipPart``
with the reason it cannot run here (no simulator model yet, no measurements in the store, ...).
New models plug in by appending to ``PARTS`` (or ``register_part``); the report shows every
part, run or skipped, with its reason.

Parts in order:
  1. ``s1-verbs``  the S1 verbs experiment matrix on the embedded simulator
                   (``longhaul.sim.verbs.sweep``), cached in the results store by scenario hash;
  2. ``validation`` every published point with the model's value, relative error and pass/fail
                   (``longhaul.validation.check_all``);
  3. ``measured``  real (and emulated) measurements found in the store (``longhaul ingest``);
  4. ``emulated``  the link emulator (``longhaul.emu``), when it exists.
"""

from __future__ import annotations

import datetime as _dt
import importlib
import inspect
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from longhaul import sweep as _sweep
from longhaul.errors import UserError
from longhaul.results import Store, host_facts, software_version


class SkipPart(Exception):
    """Raised by a part that cannot run here; the message is the stated reason."""


@dataclass
class Figure:
    name: str          # file stem under figures/
    caption: str
    fig: object        # matplotlib Figure
    png: bytes | None = None   # filled when saved, reused by the report


@dataclass
class Table:
    caption: str
    rows: list[dict]
    columns: list[str] | None = None


@dataclass
class PartResult:
    records: list[dict] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    validation: list[dict] = field(default_factory=list)
    advice: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    computed: int = 0
    cached: int = 0
    skipped_reason: str = ""     # set: the part is reported as skipped, with whatever it still shows


@dataclass
class StudyPart:
    name: str
    title: str
    run: Callable[[StudyContext], PartResult]


@dataclass
class PartOutcome:
    part: StudyPart
    status: str                  # ok | skipped | failed
    reason: str = ""
    result: PartResult = field(default_factory=PartResult)
    seconds: float = 0.0


@dataclass
class StudyContext:
    quick: bool = False
    store: Store | None = None
    out_dir: Path = Path(".")
    executor: str | None = None
    workers: int | None = None
    use_cache: bool = True
    argv: list[str] = field(default_factory=list)


@dataclass
class Study:
    ctx: StudyContext
    outcomes: list[PartOutcome]
    started_utc: str
    seconds: float
    version: str
    host: dict
    command: str


# =========================================================================== part 1: S1 verbs
S1_DELAYS_US = [0.0, 10.0, 100.0, 1000.0, 10000.0]          # S1 swept 0..10000 us
QUICK_DELAYS_US = [0.0, 100.0, 1000.0, 10000.0]
UD_MTU_BYTES = 2048                                          # UD messages are limited to the IB MTU


def s1_matrix(quick: bool) -> list[dict]:
    """The S1 verbs scenarios: one scenario per (transport, op, test, delay), all sizes in it."""
    if quick:
        big = [2**k for k in range(1, 22, 2)]                # 2 B .. 2 MB, every 4th power (2 MB fills the pipe at 10 ms)
        ud = [2**k for k in range(1, 12, 2)] + [UD_MTU_BYTES]
        delays = QUICK_DELAYS_US
        combos = [("rc", "write", "bw", big), ("ud", "send", "bw", sorted(set(ud)))]
    else:
        big = [2**k for k in range(1, 24)]                   # 2 B .. 8 MB
        ud = [2**k for k in range(1, 12)]                    # 2 B .. 2 KB
        delays = S1_DELAYS_US
        combos = [("rc", "write", "bw", big), ("rc", "send", "bw", big), ("rc", "read", "bw", big),
                  ("uc", "write", "bw", big), ("ud", "send", "bw", ud),
                  ("rc", "write", "lat", [2**k for k in range(1, 17, 3)])]
    out = []
    for transport, op, test, sizes in combos:
        for d in delays:
            out.append({"model": "verbs", "transport": transport, "op": op, "test": test, "sizes": sizes,
                        "delays_us": [d], "qps": 1, "profile": "s1", "seed": 1})
    return out


def load_verbs():
    """The simulator's verbs model (``longhaul.sim.verbs``); tests replace this function."""
    return importlib.import_module("longhaul.sim.verbs")


def verbs_point(scenario: dict) -> list[dict]:
    """Sweep point for the S1 part: one call of ``longhaul.sim.verbs.sweep`` (module level so that
    MPI workers can import it). The study's sweep already runs points in parallel, so the model's
    own thread pool and progress bar are turned off when it has them."""
    verbs = load_verbs()
    kw = dict(transport=scenario["transport"], op=scenario["op"], test=scenario["test"],
              sizes=list(scenario["sizes"]), delays_us=list(scenario["delays_us"]), qps=scenario["qps"],
              profile=scenario["profile"], seed=scenario["seed"])
    params = inspect.signature(verbs.sweep).parameters
    if "workers" in params:
        kw["workers"] = 1
    if "show_progress" in params:
        kw["show_progress"] = False
    return verbs.sweep(**kw)


def _peak_rows(records: Sequence[dict]) -> list[dict]:
    peaks: dict[tuple, dict] = {}
    for r in records:
        if r.get("test") != "bw" or r.get("bw_MBps") is None:
            continue
        key = (r["transport"], r["op"], float(r["delay_us"]))
        if key not in peaks or r["bw_MBps"] > peaks[key]["peak_bw_MBps"]:
            peaks[key] = {"transport": r["transport"], "op": r["op"], "delay_us": float(r["delay_us"]),
                          "peak_bw_MBps": float(r["bw_MBps"]), "at_size_bytes": int(r["size_bytes"])}
    return [peaks[k] for k in sorted(peaks)]


def half_peak_sizes(records: Sequence[dict], transport: str, op: str, fraction: float = 0.9) -> list[dict]:
    """Smallest message size reaching ``fraction`` of the peak bandwidth, per delay (tuning advice)."""
    rows = []
    sel = [r for r in records if r.get("transport") == transport and r.get("op") == op and r.get("test") == "bw"
           and r.get("bw_MBps") is not None]
    for d in sorted({float(r["delay_us"]) for r in sel}):
        pts = sorted((int(r["size_bytes"]), float(r["bw_MBps"])) for r in sel if float(r["delay_us"]) == d)
        peak = max(v for _, v in pts)
        size = next((s for s, v in pts if v >= fraction * peak), None)
        rows.append({"transport": transport, "op": op, "delay_us": d, "peak_bw_MBps": peak,
                     f"size_for_{int(fraction * 100)}pct_bytes": size})
    return rows


def _measured_peak(store: Store | None, transport: str, op: str) -> float | None:
    if store is None:
        return None
    try:
        recs = store.records(source="measured", kind="ingest-perftest")
    except UserError:
        return None
    vals = [float(r["bw_MBps"]) for r in recs
            if r.get("transport") == transport and r.get("op") == op and r.get("bw_MBps") is not None]
    return max(vals) if vals else None


def run_s1_verbs(ctx: StudyContext) -> PartResult:
    try:
        load_verbs()
    except Exception as err:  # noqa: BLE001 - ImportError, or a half-built extension: the part is skipped, saying why
        raise SkipPart(f"the simulator's verbs model is not available here (import longhaul.sim.verbs: "
                       f"{type(err).__name__}: {err})") from None
    from longhaul import plots
    from longhaul.analysis import comparison_table, load_published

    scenarios = s1_matrix(ctx.quick)
    res = _sweep.run(verbs_point, scenarios, kind="verbs", store=ctx.store, source="sim", label="study-s1",
                     workers=ctx.workers, use_cache=ctx.use_cache, executor=ctx.executor,
                     description=f"S1 verbs ({len(scenarios)} points)")
    recs = res.records
    out = PartResult(records=recs, computed=res.computed, cached=res.cached)
    bw = [r for r in recs if r.get("test") == "bw"]
    for transport, op in (("rc", "write"), ("ud", "send"), ("rc", "send"), ("rc", "read"), ("uc", "write")):
        sel = [r for r in bw if r.get("transport") == transport and r.get("op") == op]
        if sel:
            out.figures.append(Figure(f"s1_{transport}_{op}_bw_vs_size",
                                      f"Verbs {transport.upper()} {op} bandwidth vs message size, one curve per delay (model)",
                                      plots.bandwidth_vs_size(sel, title=f"Verbs {transport.upper()} {op}: bandwidth vs size")))
    rc = [r for r in bw if r.get("transport") == "rc" and r.get("op") == "write"
          and int(r.get("size_bytes", 0)) in (2048, 8192, 65536, 1 << 20, 1 << 23, 1 << 21, 1 << 19, 1 << 15, 1 << 13, 1 << 11)]
    if rc:
        out.figures.append(Figure("s1_rc_write_bw_vs_delay", "Verbs RC write bandwidth vs delay, one curve per message size (model)",
                                  plots.bandwidth_vs_delay(rc, series="size_bytes", title="Verbs RC write: bandwidth vs delay")))
    out.tables.append(Table("Peak bandwidth per transport and delay (model)", _peak_rows(recs)))
    advice_rows = half_peak_sizes(recs, "rc", "write")
    if advice_rows:
        key = "size_for_90pct_bytes"
        out.tables.append(Table("Smallest RC write message reaching 90% of peak, per delay (model)", advice_rows))
        for row in advice_rows:
            if row[key] is None:
                continue
            if row["delay_us"] > 0:
                out.advice.append(f"At {row['delay_us']:g} us one-way delay ({row['delay_us'] / 5:g} km) RC write needs "
                                  f"messages of at least {row[key]:,} bytes to reach 90% of its peak "
                                  f"({row['peak_bw_MBps']:.0f} MB/s): aggregate small messages, or keep more "
                                  f"messages in flight (larger send queue / more QPs).")
    ud = [r for r in bw if r.get("transport") == "ud"]
    if ud:
        out.advice.append("UD bandwidth does not depend on the delay (no acknowledgements): for small, loss-tolerant "
                          "transfers over long distance UD keeps its peak where RC does not.")
    # model vs published vs measured for the scalar verbs points
    try:
        points = {p["id"]: p for p in load_published()}
    except UserError:
        points = {}
    peaks = _peak_rows(recs)
    cmp_rows = []
    for pid, transport, op, size in (("S1-verbs-rc-peak", "rc", "write", None), ("S1-verbs-ud-peak", "ud", "send", UD_MTU_BYTES)):
        if pid not in points:
            continue
        for d in sorted({p["delay_us"] for p in peaks if p["transport"] == transport and p["op"] == op}):
            if size is None:
                model = next((p["peak_bw_MBps"] for p in peaks if p["transport"] == transport and p["op"] == op
                              and p["delay_us"] == d), None)
            else:
                model = next((float(r["bw_MBps"]) for r in bw if r["transport"] == transport and r["op"] == op
                              and float(r["delay_us"]) == d and int(r["size_bytes"]) == size), None)
            cmp_rows.append({"id": pid, "delay_us": d, "published": float(points[pid]["value_MBps"]), "model": model,
                             "measured": _measured_peak(ctx.store, transport, op)})
    if cmp_rows:
        out.tables.append(Table("Model vs published vs measured (MB/s; measured = peak of ingested perftest runs)",
                                comparison_table(cmp_rows),
                                ["id", "delay_us", "published", "model", "measured", "model_rel_err", "measured_rel_err"]))
    store_opt = f" --store {ctx.store.root}" if ctx.store is not None else ""
    out.commands.append(f"longhaul study{' --quick' if ctx.quick else ''}{store_opt}")
    out.commands.append(f"longhaul results ls --kind verbs{store_opt}")
    return out


# =========================================================================== part 2: validation
def run_validation(ctx: StudyContext) -> PartResult:
    from longhaul.analysis import load_published

    try:
        points = load_published()
    except UserError as err:
        raise SkipPart(str(err)) from None
    reason = ""
    try:
        validation = importlib.import_module("longhaul.validation")
        # --quick checks the fast verbs points only; the full study checks every model.
        models = QUICK_VALIDATION_MODELS if ctx.quick else None
        rows = _cached_check_all(ctx, lambda: validation.check_all(models=models), models)
    except Exception as err:  # noqa: BLE001 - the report says why the validation part is empty
        rows, reason = [], f"longhaul.validation.check_all is not available ({type(err).__name__}: {err})"
    by_id = {r.get("id"): r for r in rows}
    table = []
    for p in points:
        r = by_id.get(p["id"])
        if r is None:
            table.append({"id": p["id"], "source": p.get("source", ""), "what": p.get("what", ""),
                          "expected": _expected(p), "model": None, "rel_err": None,
                          "passed": None, "detail": reason or (
                              "checked by the full study (not in --quick)" if p["id"] in _checked_elsewhere(ctx)
                              else "no check for this point yet")})
        else:
            table.append({k: r.get(k) for k in _VALIDATION_KEYS})
    for r in rows:  # checks of points not in the file (kept, not lost)
        if r.get("id") not in {p["id"] for p in points}:
            table.append({k: r.get(k) for k in _VALIDATION_KEYS})
    out = PartResult(validation=table, skipped_reason=reason)
    out.notes.append(f"{len(table)} published points: see the validation table (the next section of this report).")
    out.commands.append("python -c 'import longhaul.validation as v; print(v.check_all())'")
    return out


QUICK_VALIDATION_MODELS = ["verbs"]
#: a validation row as the report shows it; ``known_gap`` (the points file's reason, or None) marks a
#: point the model is known not to reproduce yet
_VALIDATION_KEYS = ("id", "source", "what", "expected", "model", "rel_err", "passed", "known_gap", "detail")


def _checked_elsewhere(ctx: StudyContext) -> set[str]:
    """Points that have a check which this (quick) run left out."""
    if not ctx.quick:
        return set()
    try:
        validation = importlib.import_module("longhaul.validation")
    except Exception:  # noqa: BLE001 - no validation module: no checks to list (the validation part says why)
        return set()
    return set(getattr(validation, "CHECKS", {}))


def _cached_check_all(ctx: StudyContext, check_all, models: list[str] | None = None) -> list[dict]:
    """check_all() rows, cached in the store like any run (keyed by the model fingerprint via the
    software version; values kept as JSON since a column mixes numbers and text)."""
    import json

    key = {"kind": "validation", "fn": "longhaul.validation.check_all", "models": models}
    if ctx.store is not None and ctx.use_cache:
        cached = ctx.store.get_cached(key)
        if cached is not None:
            return [json.loads(r["row_json"]) for r in cached]
    rows = [dict(r) for r in check_all()]
    if ctx.store is not None:
        ctx.store.put(key, [{"id": str(r.get("id")), "row_json": json.dumps(r, default=str)} for r in rows],
                      source="sim", label="study-validation")
    return rows


def _expected(p: dict) -> str:
    vals = [f"{k}={v}" for k, v in p.items() if k.startswith("value")]
    return "; ".join(vals) if vals else str(p.get("claim", ""))[:160]


# =========================================================================== part 3: measured
def run_measured(ctx: StudyContext) -> PartResult:
    from longhaul import plots

    if ctx.store is None:
        raise SkipPart("no results store given")
    runs = [e for e in ctx.store.runs() if e["source"] in ("measured", "emu")]
    if not runs:
        raise SkipPart(f"no measured or emulated runs in store '{ctx.store.root}' "
                       "(add some with `longhaul ingest FILE --tool perftest --delay-us D --label SITE`)")
    recs = ctx.store.records([e["run_id"] for e in runs])
    out = PartResult(records=recs)
    out.tables.append(Table(f"{len(runs)} measured/emulated runs in the store",
                            [{k: e[k] for k in ("run_id", "kind", "source", "label", "n_records")} for e in runs]))
    bw = [r for r in recs if r.get("bw_MBps") is not None and r.get("size_bytes") is not None and r.get("delay_us") is not None]
    for tool in sorted({str(r.get("tool")) for r in bw}):
        sel = [r for r in bw if str(r.get("tool")) == tool]
        out.figures.append(Figure(f"measured_{tool}_bw_vs_size", f"Measured {tool} bandwidth vs message size per delay",
                                  plots.bandwidth_vs_size(sel, title=f"Measured ({tool}): bandwidth vs size")))
    delays = {float(r["delay_us"]) for r in bw}
    from longhaul.analysis.profiles import varying_configuration

    # One series per tool and per configuration that varies (test, source, streams, ...): never
    # averages an ib_write_bw with an ib_read_bw, or an emulated run with a measured one.
    varying = tuple(c for c in varying_configuration(bw, "bw_MBps") if c != "tool")
    if len(delays) >= 2:
        from longhaul.analysis import decrease_per_mile

        try:
            rows = decrease_per_mile(bw, by=("tool", *varying, "size_bytes"))
            out.tables.append(Table("Decrease per mile of measured bandwidth (Hoeffding 95% bound, B = observed max)",
                                    [r for r in rows if r["estimate"] == "mean D"]))
        except UserError as err:
            out.notes.append(f"decrease per mile not computed: {err}")
    else:
        out.notes.append("decrease per mile needs measurements at two or more delays")
    out.commands.append("longhaul results ls --source measured")
    # The records of the table above: measured and emulated (a column that varies only among the
    # emulated ones is in the --by too, so --source measured alone named a column no record had).
    sources = ",".join(sorted({str(r.get("source")) for r in bw} or {"measured"}))
    out.commands.append(f"longhaul analyse dpm --where source={sources} "
                        f"--by {','.join(('kind', *varying, 'size_bytes'))} --bound-MBps 1000")
    return out


# =========================================================================== part 4: emulated
def run_emulated(ctx: StudyContext) -> PartResult:
    try:
        emu = importlib.import_module("longhaul.emu")
    except Exception as err:  # noqa: BLE001 - the part is skipped, saying why
        raise SkipPart(f"the link emulator's study part is not available ({type(err).__name__}: {err})") from None
    fn = getattr(emu, "study_part", None)
    if fn is None:
        raise SkipPart("longhaul.emu has no study_part(ctx) yet")
    return fn(ctx)


def _models():
    """The TCP, MPI and NFS parts (``longhaul.study_models``), imported when they run."""
    return importlib.import_module("longhaul.study_models")


PARTS: list[StudyPart] = [
    StudyPart("s1-verbs", "S1 verbs over the WAN (simulator)", run_s1_verbs),
    StudyPart("tcp", "TCP over IPoIB (simulator)", lambda ctx: _models().run_tcp(ctx)),
    StudyPart("mpi", "MPI across the clusters (simulator)", lambda ctx: _models().run_mpi(ctx)),
    StudyPart("nfs", "NFS reads across the WAN (simulator)", lambda ctx: _models().run_nfs(ctx)),
    StudyPart("validation", "Validation against every published point", run_validation),
    StudyPart("measured", "Your measurements (ingested)", run_measured),
    StudyPart("emulated", "Link emulator", run_emulated),
]


def register_part(part: StudyPart, before: str | None = None) -> None:
    """Add a part (at the end, or before the named one)."""
    names = [p.name for p in PARTS]
    if part.name in names:
        PARTS[names.index(part.name)] = part
    elif before in names:
        PARTS.insert(names.index(before), part)
    else:
        PARTS.append(part)


# =========================================================================== running
def run_study(ctx: StudyContext, parts: Sequence[StudyPart] | None = None, only: Sequence[str] | None = None) -> Study:
    """Run every part (skips and failures are recorded, never fatal except Ctrl-C)."""
    started = _dt.datetime.now(_dt.UTC)
    t0 = time.perf_counter()
    parts = list(PARTS if parts is None else parts)
    if only:
        unknown = set(only) - {p.name for p in parts}
        if unknown:
            raise UserError(f"--parts: unknown part '{sorted(unknown)[0]}' (known: {', '.join(p.name for p in parts)})")
        parts = [p for p in parts if p.name in only]
    outcomes = []
    for part in parts:
        t = time.perf_counter()
        try:
            result = part.run(ctx)
            status = "skipped" if result.skipped_reason else "ok"
            outcomes.append(PartOutcome(part, status, reason=result.skipped_reason, result=result,
                                        seconds=time.perf_counter() - t))
        except SkipPart as err:
            outcomes.append(PartOutcome(part, "skipped", reason=str(err), seconds=time.perf_counter() - t))
        except UserError as err:
            outcomes.append(PartOutcome(part, "failed", reason=str(err), seconds=time.perf_counter() - t))
        except KeyboardInterrupt:
            raise
        except Exception as err:  # noqa: BLE001 - a broken part must not take the report down with it
            last = traceback.extract_tb(err.__traceback__)[-1]
            outcomes.append(PartOutcome(part, "failed", reason=f"{type(err).__name__}: {err} "
                                        f"(at {Path(last.filename).name}:{last.lineno})",
                                        seconds=time.perf_counter() - t))
    command = "longhaul study" + ("".join(f" {a}" for a in ctx.argv) if ctx.argv else "")
    return Study(ctx=ctx, outcomes=outcomes, started_utc=started.isoformat(timespec="seconds"),
                 seconds=time.perf_counter() - t0, version=software_version(), host=host_facts(), command=command)


def default_out_dir(base: str | Path = "study") -> Path:
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = Path(base) / stamp
    n = 1
    while out.exists():
        n += 1
        out = Path(base) / f"{stamp}-{n}"
    return out


def write_outputs(study: Study, out_dir: Path) -> dict[str, Path]:
    """Figures (PNG+SVG), report.html, summary.md, records.csv — each written atomically."""
    import io

    from longhaul import plots
    from longhaul.output import emit
    from longhaul.report import render_html, render_markdown
    from longhaul.results import atomic_write_text

    out_dir = Path(out_dir)
    fig_dir = out_dir / "figures"
    for o in study.outcomes:
        for f in o.result.figures:
            f.png = plots.save(f.fig, fig_dir / f.name)[0].read_bytes()
    html = render_html(study)
    md = render_markdown(study)
    paths = {"report": out_dir / "report.html", "summary": out_dir / "summary.md"}
    atomic_write_text(paths["report"], html)
    atomic_write_text(paths["summary"], md)
    recs = [r for o in study.outcomes for r in o.result.records]
    if recs:
        buf = io.StringIO()
        emit(recs, "csv", out=buf)
        paths["records"] = out_dir / "records.csv"
        atomic_write_text(paths["records"], buf.getvalue())
    for o in study.outcomes:
        for f in o.result.figures:
            plots.close(f.fig)
    return paths
