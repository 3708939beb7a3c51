r"""Decrease-per-mile of throughput with a distribution-free (Hoeffding) confidence bound.

Estimator. With mean throughputs :math:`\bar T_i` measured at distances :math:`d_0 < d_1 < \dots < d_m`
(miles; from the one-way delay at 5 us per km),

    D(d_i) = (\bar T_0 - \bar T_i) / (d_i - d_0)        [MB/s per mile], i = 1..m
    \bar D = (1/m) \sum_i D(d_i)

Bound (Hoeffding's inequality). If :math:`X_1..X_N` are independent and :math:`a_k \le X_k \le b_k`,
then for :math:`S = \sum_k X_k` and every :math:`t > 0`

    P(|S - E S| \ge t) \le 2 \exp(-2 t^2 / \sum_k (b_k - a_k)^2).

Both estimators are such sums: every single measurement :math:`T_{ij}` enters :math:`D(d_i)` with
weight :math:`\pm 1/(n_j (d_i - d_0))`, and :math:`\bar D` with weight
:math:`(1/m)\sum_i 1/(n_0 (d_i - d_0))` (for :math:`j = 0`) or :math:`-1/(m\, n_i (d_i - d_0))`.
With every measurement in :math:`[0, B]`, setting the right side to :math:`\delta` gives, with
probability at least :math:`1 - \delta`,

    |D - E D| \le B \sqrt{ \ln(2/\delta) / 2 \cdot \sum_k w_k^2 }

where :math:`w_k` are those weights (for :math:`D(d_i)`: :math:`\sum w^2 = (1/n_0 + 1/n_i)/(d_i-d_0)^2`).

Assumptions, stated: (1) the repeated measurements are independent (separate runs, no shared
warm-up effects); (2) each lies in a known range ``[0, B]``: B should be an a-priori bound such as
the link's data rate (8 Gbit/s = 1000 MB/s for 4x SDR); if none is given the largest observed
value is used, which makes the bound approximate (the output says which); (3) nothing about the
shape of the distribution is assumed (no normality), which is why the bound is wide with few
repeats. The bound is per estimate; with ``simultaneous=True`` it holds for all m+1 estimates at
once (Bonferroni: each at :math:`\delta/(m+1)`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from longhaul.analysis.profiles import _num, _sort_key, group_values, miles_from_delay_us
from longhaul.errors import UserError


def hoeffding_halfwidth(bound: float, sum_w2: float, delta: float) -> float:
    """Half-width t with P(|S - E S| >= t) <= delta for S = sum w_k X_k, X_k in [0, bound]."""
    return bound * math.sqrt(math.log(2.0 / delta) / 2.0 * sum_w2)


def value_unit(value: str) -> str:
    """The unit a column's name ends in (bw_MBps -> MBps, lat_us -> us): the estimates' columns
    carry it, so a latency's decrease per mile is in us per mile, never labelled MB/s."""
    head, sep, unit = value.rpartition("_")
    return unit if sep and head else value


def decrease_per_mile(records: Sequence[dict], value: str = "bw_MBps", by: Sequence[str] = ("size_bytes",),
                      confidence: float = 0.95, bound: float | None = None, simultaneous: bool = False) -> list[dict]:
    """D(d_i) per distance and the average D, each with a Hoeffding bound, per ``by`` group.

    Records need ``delay_us`` and ``value``. Rows, with U the unit of ``value`` (``value_unit``; MBps
    for bw_MBps): ``{*by, distance_miles, delay_us, D_U_per_mile, D_lo_U_per_mile, D_hi_U_per_mile,
    halfwidth_U_per_mile, n0, n, bound_U, bound_from, confidence, estimate}`` with ``estimate`` =
    "D(d_i)" or "mean D". A value that grows with distance (a latency) has a negative D.
    """
    u = value_unit(value)
    if not 0.0 < confidence < 1.0:
        raise UserError(f"--confidence {confidence}: must be between 0 and 1 (e.g. 0.95)")
    if bound is not None and not bound > 0:
        raise UserError(f"--bound-MBps {bound}: must be > 0 (an upper bound on every measurement)")
    groups = group_values(records, value, "delay_us", by)
    out = []
    for g in sorted(groups, key=_sort_key):
        series = groups[g]
        delays = sorted(series)
        if len(delays) < 2:
            raise UserError(f"decrease-per-mile: group {dict(zip(by, g))} has measurements at "
                            f"{len(delays)} distance(s); need at least 2 distinct distances")
        allv = [v for d in delays for v in series[d]]
        if min(allv) < 0:
            raise UserError(f"decrease-per-mile: negative {value} ({min(allv)}); the bound assumes values in [0, B]")
        if bound is not None and max(allv) > bound:
            raise UserError(f"--bound-MBps {bound:g}: a measurement ({max(allv):g}) exceeds it; "
                            "the bound must hold for every measurement")
        B = bound if bound is not None else max(allv)
        bound_from = "given" if bound is not None else "observed max (approximate)"
        m = len(delays) - 1
        delta = (1 - confidence) / ((m + 1) if simultaneous else 1)
        d0 = delays[0]
        x0 = miles_from_delay_us(d0)
        t0 = series[d0]
        n0 = len(t0)
        mean0 = sum(t0) / n0
        inv = []
        w2_rest = 0.0
        dsum = 0.0
        for d in delays[1:]:
            ti = series[d]
            ni = len(ti)
            dx = miles_from_delay_us(d) - x0
            D = (mean0 - sum(ti) / ni) / dx
            hw = hoeffding_halfwidth(B, (1 / n0 + 1 / ni) / dx**2, delta)
            row = dict(zip(by, g))
            row.update({"estimate": "D(d_i)", "delay_us": d, "distance_miles": miles_from_delay_us(d),
                        **_estimate(u, D, hw), "n0": n0, "n": ni, f"bound_{u}": B, "bound_from": bound_from,
                        "confidence": confidence})
            out.append(row)
            inv.append(1 / dx)
            w2_rest += 1 / (m * m * dx * dx * ni)
            dsum += D
        Dbar = dsum / m
        w2 = (sum(inv) / m) ** 2 / n0 + w2_rest
        hw = hoeffding_halfwidth(B, w2, delta)
        row = dict(zip(by, g))
        row.update({"estimate": "mean D", "delay_us": None, "distance_miles": None, **_estimate(u, Dbar, hw),
                    "n0": n0, "n": sum(len(series[d]) for d in delays[1:]), f"bound_{u}": B, "bound_from": bound_from,
                    "confidence": confidence})
        out.append(row)
    return out


def _estimate(u: str, d: float, hw: float) -> dict:
    return {f"D_{u}_per_mile": d, f"D_lo_{u}_per_mile": d - hw, f"D_hi_{u}_per_mile": d + hw,
            f"halfwidth_{u}_per_mile": hw}


__all__ = ["decrease_per_mile", "hoeffding_halfwidth", "value_unit", "_num"]
