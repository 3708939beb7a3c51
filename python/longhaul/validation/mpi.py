"""Checks of the MPI model against the S1 MPI/NAS points and the S2 points (``points_mpi.toml``).

Each check runs the simulator the way the study ran its benchmark (S1: one process per cluster
for point-to-point, 32 nodes x 2 processes per cluster for the broadcast, 32 processes per
cluster for NAS class B; S2: two nodes, or two processes on one node, of each platform).
Parameters are the hardware profile's, never set per point.
"""

from __future__ import annotations

from collections.abc import Callable

from longhaul.sim import mpi


def _row(p: dict, expected, model, passed: bool, detail: str, rel_err: float | None = None) -> dict:
    return {"id": p["id"], "source": p["source"], "what": p["what"], "expected": expected, "model": model,
            "rel_err": rel_err, "passed": bool(passed), "detail": detail}


def _bw(size: int, delay_us: float = 0.0, quiet: bool = True, **params) -> float:
    return mpi.osu_sweep("bw", [size], [delay_us], show_progress=not quiet, **params)[0]["bw_MBps"]


#: A scenario a check runs: what it is, the scenario, the record column the check reads.
Case = tuple[str, dict, str]
NAS_APPS = ("is", "ft", "cg")


def bw_peak_cases(p: dict) -> list[Case]:
    return [(f"osu_bw {s >> 20} MiB, 0 us", mpi.scenario(osu={"bench": "bw", "size_bytes": s}, delay_us=0.0),
             "bw_MBps") for s in (1 << 20, 4 << 20)]


def threshold_cases(p: dict) -> list[Case]:
    d = p["delay_us"]
    return [(f"osu_bw 8 KiB at {d:g} us, threshold {t >> 10} KiB",
             mpi.scenario(osu={"bench": "bw", "size_bytes": 8192}, delay_us=d, eager_threshold_bytes=t), "bw_MBps")
            for t in (8192, 65536)]


def multipair_cases(p: dict) -> list[Case]:
    d = p["delay_us"]
    return [(f"osu_mbw_mr 8 B at {d:g} us, {n} pair{'s' if n > 1 else ''}",
             mpi.scenario(osu={"bench": "mbw_mr", "size_bytes": 8, "pairs": n}, delay_us=d), "msg_rate_Mps")
            for n in (1, p["pairs"])]


def bcast_cases(p: dict) -> list[Case]:
    return [(f"bcast 128 KiB, 128 ranks, {a}, {d:g} us",
             mpi.scenario(osu={"bench": "bcast", "size_bytes": 131072}, delay_us=d, algo=a, nodes=32, ppn=2,
                          placement="block"), "lat_us")
            for d in p["delays_us"] for a in ("default", "hierarchical")]


def nas_cases(p: dict) -> list[Case]:
    return [(f"NAS {app.upper()} class B, 64 ranks, {d:g} us",
             mpi.scenario(app={"name": app, "class": "B"}, delay_us=d, nodes=16, ppn=2), "run_time_s")
            for app in NAS_APPS for d in (0.0, 1000.0)]


#: The scenarios of each S1 point's check, as the check runs them (``bench/mpi_fluid_s1.py`` runs
#: the same at both network levels).
S1_CASES: dict[str, Callable[[dict], list[Case]]] = {
    "S1-mpi-bw-peak": bw_peak_cases,
    "S1-mpi-rndv-threshold-tuning": threshold_cases,
    "S1-mpi-multipair": multipair_cases,
    "S1-mpi-bcast-hierarchical": bcast_cases,
    "S1-nas-tolerance": nas_cases,
}


def s1_cases(points: dict[str, dict]) -> list[Case]:
    """Every scenario the S1 MPI and NAS checks run, with the parameters of their ``points``
    (``longhaul.validation.points()``)."""
    return [case for pid, cases in S1_CASES.items() for case in cases(points[pid])]


def _run(cases: list[Case], quiet: bool) -> list[dict]:
    return mpi.run_many([sc for _, sc, _ in cases], show_progress=not quiet)


def check_bw_peak(p: dict, quiet: bool = True) -> dict:
    recs = _run(bw_peak_cases(p), quiet)
    peak = max(r["bw_MBps"] for r in recs)
    err = (peak - p["value_MBps"]) / p["value_MBps"]
    return _row(p, p["value_MBps"], round(peak, 1), abs(err) <= p["tolerance"],
                f"osu_bw 1 MiB / 4 MiB at 0 us: {[round(r['bw_MBps'], 1) for r in recs]} MBps", err)


def check_threshold(p: dict, quiet: bool = True) -> dict:
    d = p["delay_us"]
    recs = _run(threshold_cases(p), quiet)
    old, new = recs[0]["bw_MBps"], recs[1]["bw_MBps"]
    gain = 100.0 * (new / old - 1.0)
    lo, hi = p["range_pct"]
    return _row(p, f"{p['value_improvement_pct']}% ({lo}-{hi}%)", f"{gain:.0f}%", lo <= gain <= hi,
                f"8 KiB at {d:g} us: {old:.1f} MBps (threshold 8 KiB, rendezvous) -> {new:.1f} MBps (64 KiB, eager)",
                (gain - p["value_improvement_pct"]) / p["value_improvement_pct"])


def check_multipair(p: dict, quiet: bool = True) -> dict:
    k = p["pairs"]
    recs = _run(multipair_cases(p), quiet)
    one, many = recs[0]["msg_rate_Mps"], recs[1]["msg_rate_Mps"]
    ratio = many / one
    return _row(p, f">= {p['at_least_times']}x with {k} pairs", f"{ratio:.2f}x", ratio >= p["at_least_times"],
                f"8 B at {p['delay_us']:g} us: 1 pair {one:.4f}, {k} pairs {many:.4f} M msg/s")


def check_bcast(p: dict, quiet: bool = True) -> dict:
    recs = _run(bcast_cases(p), quiet)
    gains, parts = [], []
    for i, d in enumerate(p["delays_us"]):
        flat, hier = recs[2 * i]["lat_us"], recs[2 * i + 1]["lat_us"]
        gains.append(100.0 * (1.0 - hier / flat))
        parts.append(f"{d:g} us: {recs[2 * i]['algo']} {flat:.0f} us vs hierarchical {hier:.0f} us")
    ok = all(abs(g - e) <= p["within_points"] for g, e in zip(gains, p["value_improvement_pct"]))
    return _row(p, f"{p['value_improvement_pct']}% (+-{p['within_points']} points)", f"{[round(g) for g in gains]}%", ok,
                "gain = 1 - hierarchical/default latency; " + "; ".join(parts))


def check_nas(p: dict, quiet: bool = True) -> dict:
    recs = _run(nas_cases(p), quiet)
    t = {(r["app"], r["delay_us"]): r["run_time_s"] for r in recs}
    slow = {a: t[(a, 1000.0)] / t[(a, 0.0)] - 1.0 for a in NAS_APPS}
    ok = (slow["is"] <= p["tolerant_within"] and slow["ft"] <= p["tolerant_within"]
          and slow["cg"] >= p["cg_slower_at_least"])
    share = {r["app"]: r["large_msg_share"] for r in recs if r["delay_us"] == 0.0}
    return _row(p, f"IS, FT within {p['tolerant_within']:.0%}; CG >= {p['cg_slower_at_least']:.0%} slower at 1000 us",
                ", ".join(f"{a.upper()} {v:+.1%}" for a, v in slow.items()), ok,
                "run time 0 -> 1000 us: " + "; ".join(f"{a.upper()} {t[(a, 0.0)]:.2f} -> {t[(a, 1000.0)]:.2f} s"
                                                      for a in NAS_APPS)
                + "; large-message byte share " + ", ".join(f"{a.upper()} {v:.0%}" for a, v in share.items()))


def check_nehalem_qdr(p: dict, quiet: bool = True) -> dict:
    uni = _bw(4 << 20, testbed="s2-nh-qdr", quiet=quiet)
    bi = mpi.osu_sweep("bibw", [4 << 20], [0.0], testbed="s2-nh-qdr", show_progress=not quiet)[0]["bw_MBps"]
    err = (uni - p["value_uni_MBps"]) / p["value_uni_MBps"]
    return _row(p, p["value_uni_MBps"], round(uni, 1), abs(err) <= p["tolerance"],
                f"osu_bw 4 MiB {uni:.0f} MBps; osu_bibw {bi:.0f} MBps (published {p['value_bi_MBps']}, "
                f"{(bi - p['value_bi_MBps']) / p['value_bi_MBps']:+.1%}; not checked)", err)


def balance(testbed: str, quiet: bool = True) -> dict:
    """Intra-node / inter-node ratios (bandwidth at 4 MiB, latency at 4 B) on one S2 platform."""
    out = {}
    for bench, size, key in (("bw", 4 << 20, "bw_MBps"), ("latency", 4, "lat_us")):
        inter = mpi.osu_sweep(bench, [size], [0.0], testbed=testbed, show_progress=not quiet)[0][key]
        intra = mpi.osu_sweep(bench, [size], [0.0], testbed=testbed, nodes=1, ppn=2, show_progress=not quiet)[0][key]
        out[bench] = (intra, inter, intra / inter)
    return out


def check_balance(p: dict, quiet: bool = True) -> dict:
    plats = ("s2-ct-ddr", "s2-nh-ddr", "s2-nh-qdr")
    b = {t: balance(t, quiet) for t in plats}
    bw = {t: b[t]["bw"][2] for t in plats}
    off = {t: abs(bw[t] - 1.0) for t in plats}
    # Shape: NH-QDR the most balanced; NH-DDR above 1 (memory outruns the DDR network);
    # CT-DDR's network capped by PCIe 1.1 (below NH-DDR's inter-node bandwidth).
    ok = (min(off, key=lambda t: off[t]) == "s2-nh-qdr" and bw["s2-nh-ddr"] > 1.1
          and b["s2-ct-ddr"]["bw"][1] < b["s2-nh-ddr"]["bw"][1])
    detail = "; ".join(f"{t}: bw intra {b[t]['bw'][0]:.0f} / inter {b[t]['bw'][1]:.0f} MBps = {bw[t]:.2f}, "
                       f"latency ratio {b[t]['latency'][2]:.2f}" for t in plats)
    return _row(p, "NH-QDR closest to 1; NH-DDR > 1 (memory); CT-DDR network capped by PCIe 1.1",
                ", ".join(f"{t[3:]} {bw[t]:.2f}" for t in plats), ok, detail)


CHECKS: dict[str, Callable[[dict, bool], dict]] = {
    "S1-mpi-bw-peak": check_bw_peak,
    "S1-mpi-rndv-threshold-tuning": check_threshold,
    "S1-mpi-multipair": check_multipair,
    "S1-mpi-bcast-hierarchical": check_bcast,
    "S1-nas-tolerance": check_nas,
    "S2-nehalem-qdr-mpi": check_nehalem_qdr,
    "S2-balance-ratio": check_balance,
}
