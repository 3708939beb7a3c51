"""Checks of the NFS model against the S1 NFS points (``points_nfs.toml``)."""

from __future__ import annotations

from collections.abc import Callable

from longhaul.sim import nfs


def _row(p: dict, expected, model, passed: bool, detail: str, rel_err: float | None = None) -> dict:
    return {"id": p["id"], "source": p["source"], "what": p["what"], "expected": expected, "model": model,
            "rel_err": rel_err, "passed": bool(passed), "detail": detail}


def _bw(transports, delays, quiet: bool) -> dict[tuple[str, float], float]:
    recs = nfs.sweep(transports, delays_us=delays, show_progress=not quiet)
    return {(r["transport"], r["delay_us"]): r["bw_MBps"] for r in recs}


def check_rdma_read(p: dict, quiet: bool = True) -> dict:
    delays = [float(d) for d in p["delays_us"]]
    bw = _bw(["rdma"], delays, quiet)
    model = [bw[("rdma", d)] for d in delays]
    errs = [(m - v) / v for m, v in zip(model, p["value_MBps"])]
    worst = max(errs, key=abs)
    collapse = model[-1] / model[0]
    ok = all(abs(e) <= p["tolerance"] for e in errs) and collapse <= p["collapse_at_1000us_at_most"]
    return _row(p, p["value_MBps"], [round(m, 1) for m in model], ok,
                f"per delay {[f'{e:+.0%}' for e in errs]}; 1000 us / 0 us = {collapse:.2f}", worst)


def check_rdma_vs_ipoib(p: dict, quiet: bool = True) -> dict:
    bw = _bw(nfs.TRANSPORTS, [10.0, 1000.0], quiet)
    over_rc = bw[("rdma", 10.0)] / bw[("ipoib-rc", 10.0)] - 1
    over_ud = bw[("rdma", 10.0)] / bw[("ipoib-ud", 10.0)] - 1
    best_1ms = max(nfs.TRANSPORTS, key=lambda t: bw[(t, 1000.0)])
    ok = over_rc >= p["rdma_over_rc_at_10us_at_least"] and over_ud >= p["rdma_over_ud_at_10us_at_least"] and best_1ms == "ipoib-rc"
    return _row(p, "10 us: RDMA > RC by ~40%, > UD by ~250%; 1000 us: IPoIB-RC best",
                f"10 us: +{over_rc:.0%} / +{over_ud:.0%}; 1000 us best: {best_1ms}", ok,
                "MBps " + ", ".join(f"{t} {bw[(t, 10.0)]:.0f} at 10 us, {bw[(t, 1000.0)]:.0f} at 1000 us" for t in nfs.TRANSPORTS))


CHECKS: dict[str, Callable[[dict, bool], dict]] = {
    "S1-nfs-rdma-read": check_rdma_read,
    "S1-nfs-rdma-vs-ipoib": check_rdma_vs_ipoib,
}
