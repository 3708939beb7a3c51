"""Printing records (a list of flat dicts whose keys carry their unit) as table, csv or json,
and the progress bar shown on sweeps (stderr, only when stderr is a terminal)."""

from __future__ import annotations

import csv
import json
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any, TypeVar

FORMATS = ("table", "csv", "json")
#: ``--wide``: a table shows every single-valued field, not only the command's columns.
WIDE = False
T = TypeVar("T")


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        # Four significant digits, but never an exponent for a value of 1000 or more (10000 us, not 1e+04).
        return f"{v:.4g}" if abs(v) < 1e3 else f"{v:.0f}"
    if isinstance(v, (list, tuple)):  # a per-stream list: its values, each as a cell's would be
        return " ".join(_fmt(x) for x in v)
    return "" if v is None else str(v)


def count(n: int, noun: str) -> str:
    """'1 record', '3 records'."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def emit(records: Sequence[dict], fmt: str, columns: Sequence[str] | None = None, title: str | None = None,
         out: IO[str] | None = None) -> None:
    """Write records to stdout in the chosen format. ``columns`` picks and orders the table's
    columns (those with no value in any record are left out of the table: a latency table shows no
    bandwidth column); csv, being for programs, carries those first and then every other field
    that holds a single value, a list as one column per item (``stream_bw_MBps.1``, ``.2``, ...),
    at full precision (json carries everything)."""
    out = out or sys.stdout
    if fmt == "json":
        json.dump(list(records), out, indent=1)
        out.write("\n")
        return
    every = list(dict.fromkeys(k for r in records for k in r))
    cols = list(columns) if columns else every
    if fmt == "csv":
        scalar = [k for k in every if k not in cols and all(not isinstance(r.get(k), (dict, list)) for r in records)]
        fields: list[str] = []
        for k in cols + scalar:
            n = max((len(r[k]) for r in records if isinstance(r.get(k), (list, tuple))), default=None)
            fields += [k] if n is None else [f"{k}.{i}" for i in range(1, n + 1)]
        w = csv.DictWriter(out, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        for r in records:
            w.writerow({**r, **{f"{k}.{i}": x for k, v in r.items() if isinstance(v, (list, tuple))
                                for i, x in enumerate(v, 1)}})
        return
    # rich is imported only to draw: json and csv output (what programs read) start faster without it.
    from rich.console import Console
    from rich.table import Table

    if WIDE:
        cols += [k for k in every if k not in cols and all(not isinstance(r.get(k), dict) for r in records)]
    if records:
        cols = [c for c in cols if any(_fmt(r.get(c)) != "" for r in records)] or cols
    rows = [[_fmt(r.get(c)) for c in cols] for r in records]
    # The unit note where a column (or the title) is in MB; no note under a table of latencies.
    in_mb = any("MB" in c for c in cols) or "MB" in (title or "")
    table = Table(title=title, caption="MB = 10^6 bytes" if in_mb else None)
    for c in cols:
        table.add_column(c, justify="right", overflow="fold")  # fold long names, never cut them
    for row in rows:
        table.add_row(*row)
    # Wide enough for every header and cell (3 characters of border and padding each), so that a
    # table written to a file or a pipe keeps its ids whole; 80 at least.
    natural = sum(max([len(c)] + [len(row[i]) for row in rows]) + 3 for i, c in enumerate(cols)) + 1
    Console(file=out, width=max(80, natural)).print(table)


#: how often the bar adds the running points' shares done (``progress``'s ``partial``), seconds
PARTIAL_REFRESH_S = 0.25


def progress(items: Iterable[T], total: int, description: str,
             partial: Callable[[], float] | None = None) -> Iterator[T]:
    """Yield items while showing a bar on stderr when it is a terminal (silent otherwise).
    ``partial``: the shares done of the items still being computed, summed, read every
    ``PARTIAL_REFRESH_S`` and added to the items yielded, so that the bar and its time left move
    while one point runs for minutes; the bar never moves back (a point's share leaves the sum
    as it ends, a moment before it is yielded)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    console = Console(stderr=True)
    if not console.is_terminal:
        yield from items
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=console, transient=True) as bar:
        task = bar.add_task(description, total=total)
        done = 0
        shown = 0.0
        lock = threading.Lock()
        stop = threading.Event()

        def show(extra: float) -> None:
            nonlocal shown
            with lock:
                shown = max(shown, min(float(total), done + extra))
                bar.update(task, completed=shown)

        def refresh(partial: Callable[[], float]) -> None:
            while not stop.wait(PARTIAL_REFRESH_S):
                show(partial())

        updater = None if partial is None else threading.Thread(target=refresh, args=(partial,), daemon=True)
        if updater is not None:
            updater.start()
        try:
            for item in items:
                yield item
                done += 1
                show(0.0)
        finally:
            stop.set()
            if updater is not None:
                updater.join()
