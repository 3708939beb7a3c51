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
