"""``longhaul study``: a study of one site (``longhaul.site``: two clusters, the link between them,
the workloads that matter), as a list of pluggable parts.

A part is a ``StudyPart(name, title, run, order)``; ``run(ctx)`` returns a ``PartResult`` (summary
rows, records, figures, tables, validation rows, tuning advice, commands to reproduce) or raises
``SkipPart`` with the reason it cannot run here (no workload of its layer in the site, no
measurements in the store, ...). Parts are the modules of ``longhaul.study_parts`` that define
``PART`` (found when the study starts, so adding a part edits no other file), in their ``order``;
``register_part`` adds one from elsewhere. The report shows every part, run or skipped, with its
reason; docs/explanation/study-report.md says how to write one.
"""

from __future__ import annotations

import datetime as _dt
import importlib
import pkgutil
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from longhaul import sweep as _sweep
from longhaul.errors import UserError
from longhaul.results import Store, host_facts, software_version
from longhaul.site import Site, load as load_site


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
class SummaryRow:
    """One line of the report's summary: what a layer gets at the planned distance, the mechanism
    that limits it (from the model's own quantities), the change that helps, its gain as the
    simulator predicts it, and the command that reproduces the number."""
    layer: str
    gets: str
    limited_by: str
    change: str = ""
    gain_pct: float | None = None
    command: str = ""


@dataclass
class PartResult:
    summary: list[SummaryRow] = field(default_factory=list)
    records: list[dict] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    validation: list[dict] = field(default_factory=list)
    advice: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: files the report's commands need (a drill's scenario file), by their path under the output
    #: directory: written with the report
    files: dict[str, str] = field(default_factory=dict)
    computed: int = 0
    cached: int = 0
    skipped_reason: str = ""     # set: the part is reported as skipped, with whatever it still shows


@dataclass
class StudyPart:
    name: str
    title: str
    run: Callable[[StudyContext], PartResult]
    order: int = 50             # where the part stands in the report (lower first)


@dataclass
class PartOutcome:
    part: StudyPart
    status: str                  # ok | skipped | failed
    reason: str = ""
    result: PartResult = field(default_factory=PartResult)
    seconds: float = 0.0


@dataclass
class StudyContext:
    site: Site = field(default_factory=load_site)   # default: examples/sites/s1-2008.toml
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


def sweep(ctx: StudyContext, points: list[dict], kind: str, label: str) -> _sweep.SweepResult:
    """Run a part's points (``longhaul.site_scenarios.run_point``) in parallel, cached in the store
    by scenario hash and resumable."""
    from longhaul.site_scenarios import run_point

    return _sweep.run(run_point, points, kind=kind, store=ctx.store, source="sim", label=label, workers=ctx.workers,
                      use_cache=ctx.use_cache, executor=ctx.executor, description=f"{label} ({len(points)} points)")


def _discover() -> list[StudyPart]:
    """Every ``PART`` of the modules in ``longhaul.study_parts``, in their order."""
    import longhaul.study_parts as pkg

    found = []
    for mod in pkgutil.iter_modules(pkg.__path__):
        part = getattr(importlib.import_module(f"{pkg.__name__}.{mod.name}"), "PART", None)
        if isinstance(part, StudyPart):
            found.append(part)
    return sorted(found, key=lambda p: (p.order, p.name))


PARTS: list[StudyPart] = []


def register_part(part: StudyPart, before: str | None = None) -> None:
    """Add a part (in its order, or before the named one); a part of the same name is replaced."""
    all_parts()
    names = [p.name for p in PARTS]
    if part.name in names:
        PARTS[names.index(part.name)] = part
    elif before in names:
        PARTS.insert(names.index(before), part)
    else:
        PARTS.append(part)
        PARTS.sort(key=lambda p: p.order)


def all_parts() -> list[StudyPart]:
    """The study's parts (found the first time)."""
    if not PARTS:
        PARTS.extend(_discover())
    return PARTS


# =========================================================================== running
def run_study(ctx: StudyContext, parts: Sequence[StudyPart] | None = None, only: Sequence[str] | None = None) -> Study:
    """Run every part (skips and failures are recorded, never fatal except Ctrl-C)."""
    started = _dt.datetime.now(_dt.UTC)
    t0 = time.perf_counter()
    parts = list(all_parts() if parts is None else parts)
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
    """Figures (PNG+SVG), report.html, summary.md, records.csv and the files the report's commands
    name (a drill's scenario) — each written atomically."""
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
    for o in study.outcomes:
        for name, text in o.result.files.items():
            paths[name] = out_dir / name
            atomic_write_text(paths[name], text)
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
