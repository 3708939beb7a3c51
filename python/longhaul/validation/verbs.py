"""Checks of the verbs model against the S1 and S3 verbs points (``points_verbs.toml``)."""

from __future__ import annotations

from collections.abc import Callable

from longhaul.sim import verbs

# Iterations: perftest's 1000 for sizes up to 1 MiB; fewer for 8 MiB, where 100 messages
# (840 MB) already make the start-up round trip negligible (documented in docs/models/verbs.md).
BIG_ITERATIONS = 100


def _row(p: dict, expected, model, passed: bool, detail: str, rel_err: float | None = None) -> dict:
    return {"id": p["id"], "source": p["source"], "what": p["what"], "expected": expected, "model": model,
            "rel_err": rel_err, "passed": bool(passed), "detail": detail}


def _rel(model: float, expected: float) -> float:
    return (model - expected) / expected


def _worst(values: list[float], expected: float) -> tuple[float, float]:
    """The value farthest from ``expected`` and its relative error: a row's model and rel_err
    name the same number (the detail lists them all)."""
    v = max(values, key=lambda b: abs(_rel(b, expected)))
    return round(v, 1), _rel(v, expected)


def _bw(records: list[dict]) -> list[float]:
    return [r["bw_MBps"] for r in records]


def check_ud_peak(p: dict, quiet: bool = True) -> dict:
    recs = verbs.sweep("ud", "send", "bw", sizes=[2048], delays_us=p["delays_us"], profile="s1", show_progress=not quiet)
    bws = _bw(recs)
    errs = [_rel(b, p["value_MBps"]) for b in bws]
    spread = (max(bws) - min(bws)) / max(bws)
    ok = all(abs(e) <= p["tolerance"] for e in errs) and spread <= p["flat_tolerance"]
    model, err = _worst(bws, p["value_MBps"])
    return _row(p, p["value_MBps"], model, ok,
                f"per delay {[round(b, 1) for b in bws]} MBps; spread {spread:.2%} (flat within {p['flat_tolerance']:.0%})",
                err)


def _rc_write(delays, sizes, profile="s1", iterations=None, quiet=True) -> dict[tuple[float, int], float]:
    recs = verbs.sweep("rc", "write", "bw", sizes=sizes, delays_us=delays, profile=profile, iterations=iterations,
                       show_progress=not quiet)
    return {(r["delay_us"], r["size_bytes"]): r["bw_MBps"] for r in recs}


def check_rc_peak(p: dict, quiet: bool = True) -> dict:
    mid = _rc_write(p["delays_us"], [64 << 10, 1 << 20], quiet=quiet)
    big = _rc_write(p["delays_us"], [8 << 20], iterations=BIG_ITERATIONS, quiet=quiet)
    peaks = [max(mid[(d, 64 << 10)], mid[(d, 1 << 20)], big[(d, 8 << 20)]) for d in p["delays_us"]]
    errs = [_rel(b, p["value_MBps"]) for b in peaks]
    reach = [big[(d, 8 << 20)] / peaks[0] for d in p["delays_us"]]
    ok = all(abs(e) <= p["tolerance"] for e in errs) and min(reach) >= 0.95
    model, err = _worst(peaks, p["value_MBps"])
    return _row(p, p["value_MBps"], model, ok,
                f"peak per delay {[round(b, 1) for b in peaks]} MBps (model: the one farthest from the published); "
                f"8 MiB reaches {min(reach):.1%} of the 0-delay peak at worst", err)


def check_rc_64k_drop(p: dict, quiet: bool = True) -> dict:
    bw = _rc_write([10, 1000], [64 << 10, 1 << 20], quiet=quiet)
    peak = max(bw.values())
    drop = 1 - bw[(1000, 64 << 10)] / peak
    near = 1 - bw[(10, 64 << 10)] / peak
    ok = drop >= p["drop_at_1000us_at_least"] and near <= p["near_peak_at_10us_within"]
    return _row(p, f">= {p['drop_at_1000us_at_least']:.0%} below peak at 1000 us; within {p['near_peak_at_10us_within']:.0%} at 10 us",
                f"{drop:.1%} below; {near:.1%} below", ok,
                f"64 KiB: {bw[(1000, 64 << 10)]:.1f} MBps at 1000 us, {bw[(10, 64 << 10)]:.1f} at 10 us; peak {peak:.1f}")


def check_connectx(p: dict, quiet: bool = True) -> dict:
    sizes = [4 << 10, 16 << 10, 64 << 10]
    old = _rc_write([1000], sizes, profile="s1", quiet=quiet)
    new = _rc_write([1000], sizes, profile="s1-connectx", quiet=quiet)
    ok = all(new[(1000, s)] > old[(1000, s)] for s in sizes)
    return _row(p, "ConnectX > InfiniHost III for 4-64 KiB at 1 ms", "ConnectX ahead" if ok else "not ahead", ok,
                "; ".join(f"{s >> 10} KiB: {new[(1000, s)]:.0f} vs {old[(1000, s)]:.0f} MBps" for s in sizes))


def check_s3_bw(p: dict, quiet: bool = True) -> dict:
    recs = [verbs.run(verbs.scenario(testbed="s3", fibre_km=10, transport="rc", op=op, test="bw", size_bytes=65536))
            for op in ("write", "read")]
    bws = _bw(recs)
    errs = [_rel(b, p["value_MBps"]) for b in bws]
    ok = all(abs(e) <= p["tolerance"] for e in errs)
    model, err = _worst(bws, p["value_MBps"])
    return _row(p, p["value_MBps"], model, ok, f"write {bws[0]:.1f}, read {bws[1]:.1f} MBps (64 KiB, perftest default size)",
                err)


def check_s3_latency(p: dict, quiet: bool = True) -> dict:
    lo, hi = p["range_us"]
    recs = verbs.sweep("rc", "write", "lat", sizes=[2, 1024, 32 << 10], delays_us=[0], profile="s3", fibre_km=10,
                       show_progress=not quiet)
    lats = [r["lat_us"] for r in recs]
    ok = all(lo <= x <= hi for x in lats)
    return _row(p, f"{lo}-{hi} us", f"{min(lats):.1f}-{max(lats):.1f} us", ok,
                f"ib_write_lat 2 B, 1 KiB, 32 KiB: {[round(x, 1) for x in lats]} us")


def check_s3_msgrate(p: dict, quiet: bool = True) -> dict:
    r = verbs.run(verbs.scenario(testbed="s3", fibre_km=10, transport="rc", op="write", test="bw", size_bytes=2,
                                 qps=p["assumed_qps"]))
    rate = r["msg_rate_Mps"]
    err = _rel(rate, p["value_Mmsgs"])
    return _row(p, p["value_Mmsgs"], round(rate, 3), abs(err) <= p["tolerance"],
                f"ib_write_bw 2 B, {p['assumed_qps']} QPs: {rate:.3f} M msg/s", err)


CHECKS: dict[str, Callable[[dict, bool], dict]] = {
    "S1-verbs-ud-peak": check_ud_peak,
    "S1-verbs-rc-peak": check_rc_peak,
    "S1-verbs-rc-64k-1000us-drop": check_rc_64k_drop,
    "S1-verbs-rc-connectx-1ms": check_connectx,
    "S3-rdma-bw-10km": check_s3_bw,
    "S3-latency-10km": check_s3_latency,
    "S3-msgrate-10km": check_s3_msgrate,
}

