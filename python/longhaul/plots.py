"""Figures in the style of the published ones (matplotlib, Agg backend, PNG and SVG).

Every function takes a list of records (flat dicts with unit-carrying keys), returns the
matplotlib Figure, and when ``out`` is given writes ``out.png`` and ``out.svg`` (atomically) and
returns their paths via ``save``. Output is deterministic (no dates in the SVG, fixed hash salt).
"""

from __future__ import annotations

import io
import math
import weakref
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


#: Axis and legend names in words, with units, for the records' keys.
WORDS = {
    "bw_MBps": "bandwidth (MB/s, MB = 10^6 bytes)",
    "lat_us": "latency (us)",
    "run_time_s": "run time (s)",
    "time_s": "run time (s)",
    "msg_rate_Mps": "message rate (million messages/s)",
    "size_bytes": "message size (bytes)",
    "delay_us": "one-way delay (us); 5 us = 1 km of fibre",
    "one_way_delay_us": "one-way delay (us); 5 us = 1 km of fibre",
    "distance_km": "distance (km of fibre)",
    "fibre_km": "distance (km of fibre)",
    "streams": "parallel TCP streams",
    "transport": "transport",
    "benchmark": "benchmark",
    "window_bytes": "socket buffer (bytes)",
    "cv_pct": "spread over seeds: coefficient of variation (%)",
    "configuration": "configuration",
}


def words(key: str | None) -> str:
    """``key`` named in words with its unit (the key itself when it has no entry)."""
    return WORDS.get(key or "", key or "")


def series_label(series: str | None, k) -> str:
    """A legend entry: '1000 us (200 km)', '64K B', '4 streams', 'rdma'."""
    if series in ("delay_us", "one_way_delay_us") and _num(k) is not None:
        return _delay_label(float(k))
    if series in ("distance_km", "fibre_km") and _num(k) is not None:
        return f"{float(k):g} km"
    if series == "size_bytes" and _num(k) is not None:
        return _size_label(k) + " B"
    if series == "streams" and _num(k) is not None:
        return f"{int(float(k))} stream{'s' if float(k) != 1 else ''}"
    if series == "eager_threshold_bytes" and _num(k) is not None:
        return f"eager threshold {_size_label(k)} B"
    if series in ("transport", "benchmark", "algo", "link", "configuration", None):
        return str(k)
    return f"{series}={k}"


#: Two curves whose values differ by less than this share everywhere are drawn on top of each
#: other: the figure and its caption say so.
COINCIDE_REL = 0.01


def coinciding(data: dict) -> list[list]:
    """Groups of series (keys of ``data``: {key: [(x, y), ...]}) whose y differ by less than
    ``COINCIDE_REL`` at every x they share (at least two)."""
    keys = _sorted_keys(data)
    groups: list[list] = []
    for k in keys:
        pts = dict(data[k])
        for g in groups:
            ref = dict(data[g[0]])
            common = [x for x in pts if x in ref]
            if len(common) >= 2 and all(abs(pts[x] - ref[x]) <= COINCIDE_REL * max(abs(pts[x]), abs(ref[x]), 1e-12)
                                        for x in common):
                g.append(k)
                break
        else:
            groups.append([k])
    return [g for g in groups if len(g) > 1]


#: each figure's coinciding curves, by their legend labels (for its caption)
_COINCIDING: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def coincide_note(fig) -> str:
    """The sentence a caption adds for the figure's coinciding curves ('' when none do)."""
    groups = _COINCIDING.get(fig, [])
    return " ".join(f"The curves for {', '.join(g[:-1])} and {g[-1]} coincide (within "
                    f"{COINCIDE_REL:.0%}), drawn on top of each other." for g in groups)


def _plot_series(fig, ax, data: dict, series: str | None) -> None:
    """One line per series; coinciding ones get distinct dashes and a note in the axes."""
    groups = coinciding(data)
    dashes = {k: ("-", "--", ":", "-.")[i % 4] for g in groups for i, k in enumerate(g)}
    for k in _sorted_keys(data):
        xs, ys = zip(*data[k])
        ax.plot(xs, ys, dashes.get(k, "-"), marker="o", ms=3, label=series_label(series, k) if series else None)
    labelled = [[series_label(series, k) for k in g] for g in groups]
    _COINCIDING[fig] = labelled
    if labelled:
        ax.text(0.01, 0.01, "; ".join(f"{', '.join(g)}: coincide" for g in labelled), transform=ax.transAxes,
                fontsize="x-small", color="#444", va="bottom")


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
    _plot_series(fig, ax, data, series)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(_size_label))
    ax.set_xlabel(words("size_bytes"))
    ax.set_ylabel(words(value))
    ax.set_title(title)
    return _finish(fig, ax, out, _legend_title(series))


def _legend_title(series: str | None) -> str | None:
    if series in ("delay_us", "one_way_delay_us"):
        return "one-way delay"
    if series in ("distance_km", "fibre_km"):
        return "distance"
    return words(series) if series else None


def bandwidth_vs_delay(records: Sequence[dict], out=None, value: str = "bw_MBps", series: str | None = "streams",
                       title: str = "Bandwidth vs WAN delay", x: str = "delay_us") -> plt.Figure:
    """One curve per ``series`` value (stream count, MTU, message size) over the delay (``x``:
    ``delay_us`` or ``one_way_delay_us``, on a symmetric-log axis so that 0 us, the back-to-back
    case, is shown) or the distance (``distance_km``, a linear axis)."""
    data = _series(records, x, value, series)
    fig, ax = plt.subplots(figsize=FIGSIZE)
    _plot_series(fig, ax, data, series)
    if x.endswith("_us"):
        ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlim(left=0)
    ax.set_xlabel(words(x))
    ax.set_ylabel(words(value))
    ax.set_title(title)
    return _finish(fig, ax, out, _legend_title(series))


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
    ax.set_xlabel(words("size_bytes"))
    ax.set_ylabel(words(value))
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
                             title: str = "NAS run time normalised to 0 us vs WAN delay",
                             x: str = "delay_us") -> plt.Figure:
    """Each series' ``value`` divided by its value at the smallest delay (NAS normalised time)."""
    data = _series(records, x, value, series)
    data = {k: [(xv, yv / (pts[0][1] or 1.0)) for xv, yv in pts] for k, pts in data.items()}
    fig, ax = plt.subplots(figsize=FIGSIZE)
    _plot_series(fig, ax, data, series)
    if x.endswith("_us"):
        ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlim(left=0)
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xlabel(words(x))
    ax.set_ylabel("run time / run time at the shortest distance")
    ax.set_title(title)
    return _finish(fig, ax, out, series)


def nfs_throughput_vs_delay(records: Sequence[dict], out=None, value: str = "bw_MBps", series: str = "transport",
                            x: str = "delay_us"):
    return bandwidth_vs_delay(records, out, value, series, title="NFS read throughput vs WAN delay", x=x)


def failover_series(series: dict, events: Sequence[dict], out=None,
                    title: str = "Bandwidth over time through a failure drill") -> plt.Figure:
    """A ``sim pfs`` record's time series: the aggregate bandwidth and each WAN link's, over time,
    with every event (``at_s``, ``link``, ``action``) marked by a vertical line and its words."""
    fig, ax = plt.subplots(figsize=FIGSIZE)
    t = series["t_s"]
    ax.plot(t, series["bw_MBps"], color="black", linewidth=1.8, label="aggregate (clients)")
    for k, link in enumerate(series["link_MBps"]):
        ax.plot(t, link, linewidth=1.0, label=f"WAN link {k}")
    top = max(series["bw_MBps"], default=0.0)
    for e in events:
        ax.axvline(e["at_s"], color="grey", linestyle="--", linewidth=0.8)
        ax.annotate(f"link {e['link']} {'unplugged' if e['action'] == 'down' else 'replugged'}",
                    (e["at_s"], top * 1.02), rotation=90, fontsize="x-small", va="bottom", ha="right")
    ax.set_ylim(bottom=0, top=top * 1.35 if top > 0 else 1.0)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(words("bw_MBps"))
    ax.set_title(title)
    return _finish(fig, ax, out)


def close(fig) -> None:
    plt.close(fig)
