"""Figures in the style of the published ones (matplotlib, Agg backend, PNG and SVG).

Every function takes a list of records (flat dicts with unit-carrying keys), returns the
matplotlib Figure, and when ``out`` is given writes ``out.png`` and ``out.svg`` (atomically) and
returns their paths via ``save``. Output is deterministic (no dates in the SVG, fixed hash salt).
"""

from __future__ import annotations

import io
import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter

from longhaul.errors import UserError
from longhaul.results import atomic_write_bytes

matplotlib.rcParams["svg.hashsalt"] = "longhaul"
matplotlib.rcParams["figure.dpi"] = 100

FIGSIZE = (7.0, 4.3)


def _size_label(v: float, _pos=None) -> str:
    v = float(v)
    for unit, f in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if v >= f and v % f == 0:
            return f"{int(v // f)}{unit}"
    return f"{v:g}"


def _delay_label(v: float) -> str:
    return f"{v:g} us ({v / 5:g} km)"


def _num(v):
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _series(records: Sequence[dict], x: str, y: str, by: str | None) -> dict:
    out: dict = defaultdict(lambda: defaultdict(list))
    for r in records:
        xv, yv = _num(r.get(x)), _num(r.get(y))
        if xv is None or yv is None:
            continue
        out[r.get(by) if by else ""][xv].append(yv)
    if not out:
        raise UserError(f"plot: no record has numeric '{x}' and '{y}'")
    return {k: sorted((xv, sum(v) / len(v)) for xv, v in pts.items()) for k, pts in out.items()}


def _sorted_keys(keys):
    return sorted(keys, key=lambda k: (0, float(k)) if _num(k) is not None else (1, str(k)))


def save(fig, out: str | Path) -> list[Path]:
    """Write ``out``.png and ``out``.svg atomically; return both paths."""
    base = Path(out)
    if base.suffix in (".png", ".svg"):
        base = base.with_suffix("")
    paths = []
    for ext in ("png", "svg"):
        buf = io.BytesIO()
        fig.savefig(buf, format=ext, bbox_inches="tight", metadata={"Date": None} if ext == "svg" else None)
        path = base.with_suffix(f".{ext}")
        atomic_write_bytes(path, buf.getvalue())
        paths.append(path)
    return paths


def png_bytes(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    return buf.getvalue()


def _finish(fig, ax, out, legend_title=None):
    if ax.get_legend_handles_labels()[0]:
        ax.legend(title=legend_title, fontsize="small", title_fontsize="small", frameon=False)
    ax.grid(True, which="major", alpha=0.3)
    fig.tight_layout()
    if out is not None:
        save(fig, out)
    return fig


def bandwidth_vs_size(records: Sequence[dict], out=None, value: str = "bw_MBps", series: str = "delay_us",
                      title: str = "Bandwidth vs message size") -> plt.Figure:
    """One curve per delay (or another ``series`` column), message size on a log2 axis."""
    data = _series(records, "size_bytes", value, series)
    fig, ax = plt.subplots(figsize=FIGSIZE)
    for k in _sorted_keys(data):
        xs, ys = zip(*data[k])
        label = _delay_label(float(k)) if series == "delay_us" and _num(k) is not None else f"{series}={k}"
        ax.plot(xs, ys, marker="o", ms=3, label=label)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(_size_label))
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel(f"{value} (MB/s, MB = 10^6 B)" if "MBps" in value else value)
    ax.set_title(title)
    return _finish(fig, ax, out, "one-way delay" if series == "delay_us" else series)


def bandwidth_vs_delay(records: Sequence[dict], out=None, value: str = "bw_MBps", series: str | None = "streams",
                       title: str = "Bandwidth vs WAN delay") -> plt.Figure:
    """One curve per ``series`` value (stream count, MTU, message size), delay on a log axis
    (symmetric-log so that 0 us, the back-to-back case, is shown)."""
    data = _series(records, "delay_us", value, series)
    fig, ax = plt.subplots(figsize=FIGSIZE)
    for k in _sorted_keys(data):
        xs, ys = zip(*data[k])
        label = _size_label(k) + " B" if series == "size_bytes" else f"{series}={k}" if series else None
        ax.plot(xs, ys, marker="o", ms=3, label=label)
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlim(left=0)
    ax.set_xlabel("one-way delay (us); 5 us = 1 km of fibre")
    ax.set_ylabel(f"{value} (MB/s, MB = 10^6 B)" if "MBps" in value else value)
    ax.set_title(title)
    return _finish(fig, ax, out, series)


def before_after(before: Sequence[dict], after: Sequence[dict], out=None, value: str = "bw_MBps",
                 labels: tuple[str, str] = ("default", "tuned"),
                 title: str = "MPI bandwidth: rendezvous threshold before/after tuning",
                 log_y: bool = False) -> plt.Figure:
    """Two curves over message size (e.g. MPI bandwidth with the default and the raised eager
    threshold, or bcast latency default vs hierarchical; ``log_y`` for values spanning decades)."""
    fig, ax = plt.subplots(figsize=FIGSIZE)
    for recs, lab, style in ((before, labels[0], "--"), (after, labels[1], "-")):
        data = _series(recs, "size_bytes", value, None)[""]
        xs, ys = zip(*data)
        ax.plot(xs, ys, style, marker="o", ms=3, label=lab)
    ax.set_xscale("log", base=2)
    if log_y:
        ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(_size_label))
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel(value)
    ax.set_title(title)
    return _finish(fig, ax, out)


def mpi_threshold_tuning(before, after, out=None, value: str = "bw_MBps"):
    return before_after(before, after, out, value, ("eager/rendezvous threshold 8 KB", "threshold 64 KB"))


def bcast_latency(default, hierarchical, out=None, value: str = "lat_us", where: str = ""):
    """Default vs hierarchical bcast over message size, latency on a log axis (small messages
    take microseconds, large ones across the WAN up to seconds); ``where``: e.g. '1 ms, 128 ranks'."""
    return before_after(default, hierarchical, out, value, ("default MPI_Bcast", "hierarchical (one WAN crossing)"),
                        title=f"MPI_Bcast latency{f' ({where})' if where else ''}: default vs hierarchical", log_y=True)


def normalised_time_vs_delay(records: Sequence[dict], out=None, value: str = "time_s", series: str = "benchmark",
                             title: str = "NAS run time normalised to 0 us vs WAN delay") -> plt.Figure:
    """Each series' ``value`` divided by its value at the smallest delay (NAS normalised time)."""
    data = _series(records, "delay_us", value, series)
    fig, ax = plt.subplots(figsize=FIGSIZE)
    for k in _sorted_keys(data):
        xs, ys = zip(*data[k])
        ref = ys[0] if ys[0] else 1.0
        ax.plot(xs, [y / ref for y in ys], marker="o", ms=3, label=str(k))
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlim(left=0)
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xlabel("one-way delay (us)")
    ax.set_ylabel("normalised run time")
    ax.set_title(title)
    return _finish(fig, ax, out, series)


def nfs_throughput_vs_delay(records: Sequence[dict], out=None, value: str = "bw_MBps", series: str = "transport"):
    return bandwidth_vs_delay(records, out, value, series, title="NFS read throughput vs WAN delay")


def close(fig) -> None:
    plt.close(fig)
