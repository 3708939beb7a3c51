"""Communication balance ratio: intra-node / inter-node performance (S2, section V).

For each metric (bandwidth, latency, bi-directional bandwidth, multi-pair bandwidth) and message
size, ratio = value measured between two processes on one node / value between two nodes. 1.0 is
perfectly balanced. For bandwidth-like metrics a ratio above 1 means the node's memory path is
faster than the network (the network is the bottleneck); for latency a ratio below 1 means the
same. The summary row per metric uses the largest common message size for bandwidths and the
smallest for latency (how the published study quotes them).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from longhaul.analysis.profiles import _num, mixed_configuration, value_text
from longhaul.errors import UserError

METRICS = {  # test name in records -> (metric label, value column)
    "bw": ("bandwidth", "bw_MBps"),
    "lat": ("latency", "lat_us"),
    "latency": ("latency", "lat_us"),
    "bibw": ("bi-directional bandwidth", "bw_MBps"),
    "mbw_mr": ("multi-pair bandwidth", "bw_MBps"),
}
METRICS_COLUMN = dict(METRICS.values())


def _index(records: Sequence[dict], side: str) -> dict[tuple[str, int], float]:
    """The mean of each (metric, size) cell of one side, refused when the cell holds different
    measurements (another delay, tool, transport, ...): those are not repeats to average."""
    cells: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for r in records:
        # OSU output (ingested or emulated) names the benchmark `test`; the simulator's MPI records `bench`.
        test = str(r.get("test") or r.get("bench") or "")
        if test not in METRICS:
            continue
        size = _num(r.get("size_bytes"))
        if _num(r.get(METRICS[test][1])) is None or size is None:
            continue
        cells[(METRICS[test][0], int(size))].append(r)
    out = {}
    for (metric, size), recs in cells.items():
        col = METRICS_COLUMN[metric]
        c, vals = "delay_us", sorted({value_text(d) for d in (_num(r.get("delay_us")) for r in recs) if d is not None})
        if len(vals) < 2:
            _, c, vals = mixed_configuration(recs, col, None, ())
        if c:
            raise UserError(f"balance: the {side} records of {metric} at {size} bytes differ in {c} "
                            f"({', '.join(vals)}): different measurements, not repeats to average; choose one with "
                            f"--where {c}={vals[0]} (it selects on both sides) or label the runs apart")
        out[(metric, size)] = sum(_num(r[col]) or 0.0 for r in recs) / len(recs)  # none is None (above)
    return out


def balance_ratios(intra: Sequence[dict], inter: Sequence[dict]) -> tuple[list[dict], list[dict]]:
    """(per-size rows, one summary row per metric) of intra/inter ratios."""
    a, b = _index(intra, "intra-node"), _index(inter, "inter-node")
    common = sorted(set(a) & set(b))
    if not common:
        raise UserError("balance: the intra-node and inter-node records share no (test, size_bytes); "
                        "ingest the same OSU tests (osu_bw, osu_latency, osu_bibw, osu_mbw_mr) for both")
    rows: list[dict] = []
    for metric, size in common:
        if b[(metric, size)] == 0:
            continue
        rows.append({"metric": metric, "size_bytes": size, "intra": a[(metric, size)], "inter": b[(metric, size)],
                     "unit": "us" if metric == "latency" else "MB/s",
                     "ratio": a[(metric, size)] / b[(metric, size)]})
    summary = []
    for metric in dict.fromkeys(r["metric"] for r in rows):
        mrows = [r for r in rows if r["metric"] == metric]
        pick = min(mrows, key=lambda r: r["size_bytes"]) if metric == "latency" else max(mrows, key=lambda r: r["size_bytes"])
        summary.append({**pick, "balanced_within_10pct": abs(pick["ratio"] - 1.0) <= 0.10})
    return rows, summary
