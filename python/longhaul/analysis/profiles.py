"""Distance and stability profiles of throughput (or any measured column) over WAN delay."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence

from longhaul.errors import UserError
from longhaul.units import FIBRE_DELAY_US_PER_KM, KM_PER_MILE


def miles_from_delay_us(delay_us: float) -> float:
    return delay_us / FIBRE_DELAY_US_PER_KM / KM_PER_MILE


def _num(v) -> float | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


#: Column lists in messages stop here and say how many more there are.
LIST_LIMIT = 60


def column_list(columns, limit: int = LIST_LIMIT) -> str:
    """Sorted ``columns`` as ``a, b, c`` (the first ``limit``, then 'and N more')."""
    cols = sorted(set(columns))
    more = f" and {len(cols) - limit} more" if len(cols) > limit else ""
    return ", ".join(cols[:limit]) + more


def numeric_columns(records: Sequence[dict]) -> list[str]:
    """The columns at least one record holds a finite number in: what ``--value`` can analyse."""
    return sorted({k for r in records for k, v in r.items() if _num(v) is not None})


def present_columns(records: Sequence[dict]) -> list[str]:
    """The columns at least one record holds a value in (what ``--by`` and ``--where`` can name)."""
    return sorted({k for r in records for k, v in r.items() if v is not None})


def _check_columns(records: Sequence[dict], needed: Sequence[str]) -> None:
    if not records:
        raise UserError("analysis: no records selected (check --run/--label/--source, or `longhaul results ls`)")
    for c in needed:
        if not any(_num(r.get(c)) is not None for r in records):
            raise UserError(f"analysis: no record has a numeric '{c}' "
                            f"(numeric columns present: {column_list(numeric_columns(records))})")


def _check_by(records: Sequence[dict], by: Sequence[str]) -> None:
    for b in by:
        if not any(r.get(b) is not None for r in records):
            raise UserError(f"analysis: --by column '{b}' is in no record "
                            f"(columns present: {column_list(present_columns(records))})")


#: Columns that say what was measured and how, not what came out. Records that differ in one of them
#: are different measurements (an RC and a UD bandwidth, a sim and a measured one, 1 and 4 streams),
#: never repeats of one: a series averages or fits only records that agree on all of them. Counters,
#: timings, iteration counts, seeds and labels are not here: repeats may differ in those.
CONFIGURATION_COLUMNS = (
    "source", "tool", "device", "transport", "network", "op", "test", "bench", "workload", "app", "class", "algo", "datatype",
    # OSU's -D: "none", or the derived datatype a run sent (longhaul.ingest.osu, _DDT_PREAMBLE)
    "ddt",
    "cc", "stack", "streams", "qps", "pairs", "ranks", "nodes", "ppn", "ranks_per_cluster", "placement", "mpi",
    "tx_depth", "rx_depth", "outstanding_reads", "window_msgs", "window_bytes", "mtu_bytes", "rmem_max_bytes",
    "eager_threshold_bytes", "rndv_protocol", "testbed", "hca", "node", "link", "rate_gbps", "wan_gbps", "loss",
    "jitter_us", "cross_gbps", "threads", "rsize_bytes", "record_bytes", "file_bytes", "mca", "env",
    # the emulator's link and host TCP settings (the B-to-A direction's where it differs)
    "queue_bytes", "queue_packets", "wmem_max_bytes", "initcwnd_segs", "rto_min_ms", "quickack", "sack", "rack",
    "ba_delay_us", "ba_rate_gbps", "ba_loss",
    # iperf3's: the sender's and the receiver's count of one transfer are one measurement seen from two
    # ends, not two repeats; -R, -w and -l are options of the measurement
    "direction", "reverse", "sock_bufsize_bytes", "blksize_bytes",
)

#: Configuration columns that are a result in the records of some kinds (kind -> columns): iperf3's
#: ``rate_gbps`` is the rate it measured (bits_per_second / 10^9), not a link rate longhaul set.
RESULT_IN_KIND = {"ingest-iperf3": ("rate_gbps",)}


def _configuration(r: dict, column: str):
    """``r``'s value of the configuration column ``column``; None where it is unset or, in ``r``'s
    kind, a result (RESULT_IN_KIND)."""
    if column in RESULT_IN_KIND.get(str(r.get("kind")), ()):
        return None
    return r.get(column)


def _valued(records: Sequence[dict], value: str, x: str) -> list[dict]:
    """The records a profile of ``value`` over ``x`` uses (both numeric)."""
    return [r for r in records if _num(r.get(value)) is not None and _num(r.get(x)) is not None]


def _mixed_in(records: Sequence[dict], column: str) -> list[str]:
    """The values of the configuration column ``column`` the records hold, when they hold more than one."""
    vals = sorted({value_text(v) for v in (_configuration(r, column) for r in records) if v is not None})
    return vals if len(vals) > 1 else []


def varying_configuration(records: Sequence[dict], value: str, x: str = "delay_us",
                          within: Sequence[str] = ("size_bytes",)) -> list[str]:
    """The configuration columns whose value differs between records with a ``value`` at one ``x``
    (and one value of each ``within`` column): those would be averaged as repeats. A column that
    changes only with ``x`` (the emulator's default window, 4 x the bandwidth-delay product; the
    algorithm ``--algo auto`` picks per delay) is part of the series, not a second measurement."""
    cells: dict[tuple, list[dict]] = defaultdict(list)
    for r in _valued(records, value, x):
        cells[(_num(r.get(x)), *(r.get(w) for w in within))].append(r)
    return [c for c in CONFIGURATION_COLUMNS if any(_mixed_in(cell, c) for cell in cells.values())]


def mixed_configuration(records: Sequence[dict], value: str, x: str | None, by: Sequence[str],
                        free: Sequence[str] = ()) -> tuple[dict, str, list]:
    """The first ``by`` group whose records at one ``x`` (averaged together as repeats) differ in a
    configuration column outside ``by`` and ``free`` (the columns a fit takes as variables), as
    (group, column, its values); ``({}, "", [])`` when no group mixes. ``x`` None: across the whole
    group (a fit, which takes all its records as one configuration)."""
    cells: dict[tuple, dict[float | None, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for r in _valued(records, value, x or value):
        cells[tuple(r.get(b) for b in by)][_num(r.get(x)) if x else None].append(r)
    for g in sorted(cells, key=_sort_key):
        for c in CONFIGURATION_COLUMNS:
            if c in by or c in free:
                continue
            for at in cells[g].values():
                vals = _mixed_in(at, c)
                if vals:
                    return dict(zip(by, g)), c, vals
    return {}, "", []


def value_text(v) -> str:
    """A value as text; whole floats as ints, so 1 and 1.0 are one value."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def group_values(records: Sequence[dict], value: str, x: str, by: Sequence[str]) -> dict[tuple, dict[float, list[float]]]:
    """{group key tuple: {x value: [values...]}} with non-numeric rows skipped."""
    _check_columns(records, [value, x])
    _check_by(records, by)
    out: dict[tuple, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        v, xv = _num(r.get(value)), _num(r.get(x))
        if v is None or xv is None:
            continue
        if x == "delay_us":
            xv = round(xv, 6)  # delays closer than a picosecond are one distance
        out[tuple(r.get(b) for b in by)][xv].append(v)
    return out


def _sort_key(g: tuple) -> tuple:
    return tuple((0, v) if isinstance(v, (int, float)) else (1, str(v)) for v in g)


def distance_profile(records: Sequence[dict], value: str = "bw_MBps", x: str = "delay_us",
                     by: Sequence[str] = ("size_bytes",)) -> list[dict]:
    """T(d, s): the mean of ``value`` at each delay, one series per ``by`` group (e.g. message size).

    Returns records ``{*by, delay_us, distance_km, distance_miles, <value>, n}``, sorted by group then
    delay. Repeats at the same delay are averaged (see ``stability_profile`` for their spread).
    """
    rows = []
    groups = group_values(records, value, x, by)
    for g in sorted(groups, key=_sort_key):
        for xv in sorted(groups[g]):
            vals = groups[g][xv]
            row = dict(zip(by, g))
            row[x] = xv
            if x == "delay_us":
                row["distance_km"] = xv / FIBRE_DELAY_US_PER_KM
                row["distance_miles"] = miles_from_delay_us(xv)
            row[value] = statistics.mean(vals)
            row["n"] = len(vals)
            rows.append(row)
    return rows


def stability_profile(records: Sequence[dict], value: str = "bw_MBps", x: str = "delay_us",
                      by: Sequence[str] = ("size_bytes",)) -> list[dict]:
    """Spread of repeated runs per distance: mean, sample std-dev (n-1), min, max, coefficient of variation.
    One run has no spread to measure: its std-dev and cv are None (empty), not 0, which would read as perfectly stable."""
    rows = []
    groups = group_values(records, value, x, by)
    for g in sorted(groups, key=_sort_key):
        for xv in sorted(groups[g]):
            vals = groups[g][xv]
            n = len(vals)
            # statistics sums exactly: identical values have a std of 0, not a rounding residue
            mean = statistics.mean(vals)
            std = statistics.stdev(vals) if n > 1 else None
            row = dict(zip(by, g))
            row[x] = xv
            if x == "delay_us":
                row["distance_km"] = xv / FIBRE_DELAY_US_PER_KM
            row.update({f"{value}_mean": mean, f"{value}_std": std, f"{value}_min": min(vals),
                        f"{value}_max": max(vals), "cv_pct": None if std is None else 100 * std / mean if mean else 0.0,
                        "n": n})
            rows.append(row)
    return rows
