"""Communication balance ratio: intra-node / inter-node performance (S2, section V).

For each metric (bandwidth, latency, bi-directional bandwidth, multi-pair bandwidth) and message
size, ratio = value measured between two processes on one node / value between two nodes. 1.0 is
perfectly balanced. For bandwidth-like metrics a ratio above 1 means the node's memory path is
faster than the network (the network is the bottleneck); for latency a ratio below 1 means the
same. The summary row per metric uses the largest common message size for bandwidths and the
smallest for latency (how the published study quotes them).
"""

from __future__ import annotations

from collections.abc import Sequence

from longhaul.analysis.profiles import _num
from longhaul.errors import UserError

METRICS = {  # test name in records -> (metric label, value column)
    "bw": ("bandwidth", "bw_MBps"),
    "lat": ("latency", "lat_us"),
    "latency": ("latency", "lat_us"),
    "bibw": ("bi-directional bandwidth", "bw_MBps"),
    "mbw_mr": ("multi-pair bandwidth", "bw_MBps"),
}


def _index(records: Sequence[dict]) -> dict[tuple[str, int], float]:
    out: dict[tuple[str, int], list[float]] = {}
    for r in records:
        # OSU output (ingested or emulated) names the benchmark `test`; the simulator's MPI records `bench`.
        test = str(r.get("test") or r.get("bench") or "")
        if test not in METRICS:
            continue
        col = METRICS[test][1]
        v, s = _num(r.get(col)), _num(r.get("size_bytes"))
        if v is None or s is None:
            continue
        out.setdefault((METRICS[test][0], int(s)), []).append(v)
    return {k: sum(v) / len(v) for k, v in out.items()}


def balance_ratios(intra: Sequence[dict], inter: Sequence[dict]) -> tuple[list[dict], list[dict]]:
    """(per-size rows, one summary row per metric) of intra/inter ratios."""
    a, b = _index(intra), _index(inter)
    common = sorted(set(a) & set(b))
    if not common:
        raise UserError("balance: the intra-node and inter-node records share no (test, size_bytes); "
                        "ingest the same OSU tests (osu_bw, osu_latency, osu_bibw, osu_mbw_mr) for both")
    rows = []
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
