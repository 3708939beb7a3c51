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
    "source", "tool", "device", "transport", "op", "test", "bench", "workload", "app", "class", "algo", "datatype",
    "cc", "stack", "streams", "qps", "pairs", "ranks", "nodes", "ppn", "ranks_per_cluster", "placement", "mpi",
    "tx_depth", "rx_depth", "outstanding_reads", "window_msgs", "window_bytes", "mtu_bytes", "rmem_max_bytes",
    "eager_threshold_bytes", "rndv_protocol", "testbed", "hca", "node", "link", "rate_gbps", "wan_gbps", "loss",
    "cross_gbps", "threads", "rsize_bytes", "record_bytes",
)


def _valued(records: Sequence[dict], value: str, x: str) -> list[dict]:
    """The records a profile of ``value`` over ``x`` uses (both numeric)."""
    return [r for r in records if _num(r.get(value)) is not None and _num(r.get(x)) is not None]


def varying_configuration(records: Sequence[dict], value: str, x: str = "delay_us") -> list[str]:
    """The configuration columns whose value differs between the records with a ``value``."""
    used = _valued(records, value, x)
    return [c for c in CONFIGURATION_COLUMNS if len({value_text(r.get(c)) for r in used if r.get(c) is not None}) > 1]


def mixed_configuration(records: Sequence[dict], value: str, x: str, by: Sequence[str],
                        free: Sequence[str] = ()) -> tuple[dict, str, list]:
    """The first ``by`` group whose records differ in a configuration column outside ``by`` and
    ``free`` (the columns a fit takes as variables), as (group, column, its values);
    ``({}, "", [])`` when every group is one configuration."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in _valued(records, value, x):
        groups[tuple(r.get(b) for b in by)].append(r)
    for g in sorted(groups, key=_sort_key):
        for c in CONFIGURATION_COLUMNS:
            if c in by or c in free:
                continue
            vals = sorted({value_text(r.get(c)) for r in groups[g] if r.get(c) is not None})
            if len(vals) > 1:
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
    """Spread of repeated runs per distance: mean, sample std-dev (n-1), min, max, coefficient of variation."""
    rows = []
    groups = group_values(records, value, x, by)
    for g in sorted(groups, key=_sort_key):
        for xv in sorted(groups[g]):
            vals = groups[g][xv]
            n = len(vals)
            # statistics sums exactly: identical values have a std of 0, not a rounding residue
            mean = statistics.mean(vals)
            std = statistics.stdev(vals) if n > 1 else 0.0
            row = dict(zip(by, g))
            row[x] = xv
            if x == "delay_us":
                row["distance_km"] = xv / FIBRE_DELAY_US_PER_KM
            row.update({f"{value}_mean": mean, f"{value}_std": std, f"{value}_min": min(vals),
                        f"{value}_max": max(vals), "cv_pct": 100 * std / mean if mean else 0.0, "n": n})
            rows.append(row)
    return rows
