"""The flow level against the packet level on the S1 points' scenarios (not a timed test).

Runs every scenario the S1 MPI and NAS checks run (python/longhaul/validation/mpi.py: OSU's and the
NAS skeletons' default iterations, the profile s1) once with ``network = "packet"`` and once with
``network = "fluid"``, and prints the measured quantity of each at both levels with the difference
(issue 27's criterion: within 5%), and each level's wall time for the lot. The table in
docs/models/mpi.md ("Flow-level mode") comes from this script; its dated runs are in
bench/results/mpi_fluid_s1.md.

``python bench/mpi_fluid_s1.py [--workers N]``
"""

from __future__ import annotations

import argparse
import time

from longhaul.sim import mpi

BCAST = {"nodes": 32, "ppn": 2, "placement": "block"}


def cases() -> list[tuple[str, dict, str]]:
    """(what, scenario, the record column it measures), as the validation builds them."""
    out = [(f"osu_bw {s >> 20} MiB, 0 us", mpi.scenario(osu={"bench": "bw", "size_bytes": s}, delay_us=0.0), "bw_MBps")
           for s in (1 << 20, 4 << 20)]
    out += [(f"osu_bw 8 KiB at 1 ms, threshold {t >> 10} KiB",
             mpi.scenario(osu={"bench": "bw", "size_bytes": 8192}, delay_us=1000.0, eager_threshold_bytes=t), "bw_MBps")
            for t in (8192, 65536)]
    out += [(f"osu_mbw_mr 8 B at 1 ms, {n} pair{'s' if n > 1 else ''}",
             mpi.scenario(osu={"bench": "mbw_mr", "size_bytes": 8, "pairs": n}, delay_us=1000.0), "msg_rate_Mps")
            for n in (1, 4)]
    out += [(f"bcast 128 KiB, 128 ranks, {a}, {d:g} us",
             mpi.scenario(osu={"bench": "bcast", "size_bytes": 131072}, delay_us=d, algo=a, **BCAST), "lat_us")
            for d in (10.0, 100.0, 1000.0) for a in ("default", "hierarchical")]
    out += [(f"NAS {app.upper()} class B, 64 ranks, {d:g} us",
             mpi.scenario(app={"name": app, "class": "B"}, delay_us=d, nodes=16, ppn=2), "run_time_s")
            for app in ("is", "ft", "cg") for d in (0.0, 1000.0)]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=None, help="threads per level (default: every core)")
    a = parser.parse_args()
    todo = cases()
    results, walls = {}, {}
    for network in ("packet", "fluid"):
        t = time.perf_counter()
        recs = mpi.run_many([{**sc, "mpi": {**sc["mpi"], "network": network}} for _, sc, _ in todo],
                            workers=a.workers, show_progress=False)
        walls[network] = time.perf_counter() - t
        results[network] = [r[col] if r["status"] == "ok" else float("nan") for r, (_, _, col) in zip(recs, todo)]
    print(f"{'scenario':50} {'column':>12} {'packet':>11} {'fluid':>11} {'difference':>10}")
    within = 0
    for (what, _, col), p, f in zip(todo, results["packet"], results["fluid"]):
        diff = f / p - 1.0
        within += abs(diff) <= 0.05
        print(f"{what:50} {col:>12} {p:11.4g} {f:11.4g} {100 * diff:+9.1f}%")
    print(f"{within} of {len(todo)} within 5%; wall time packet {walls['packet']:.1f} s, fluid {walls['fluid']:.1f} s")


if __name__ == "__main__":
    main()
