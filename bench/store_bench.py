#!/usr/bin/env python3
"""Benchmark (not a timed test): what storing one sweep point costs, for small and large sweeps.

    .venv/bin/python bench/store_bench.py [--counts 100,2000] [--repeat 3] [--dir DIR]

After a one-point warm-up (one-time costs: the git commit and model fingerprint of the
software version, imports), for each point count N, a fresh store gets a sweep of N trivial points (serial executor, so the
time is the store's: writing each run file and indexing it, not the model), and then one
`Store.runs()` (what `longhaul results ls` reads); the fastest of --repeat runs counts (the
time is mostly fsync, which other jobs on a shared machine disturb). Prints the per-point cost of
each N side by side and the ratio of the largest N's per-point cost to the smallest's. The anchor: the ratio
stays near 1 (storing a point is O(1) amortised). Before the manifest journal, every point
re-read and rewrote the whole manifest.json, so the cost per point grew with N (ratio >> 1).

Stores go under DIR (default: a temporary directory in bench/out/, removed afterwards), so the
file system is the one the results store would use.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from longhaul import sweep  # noqa: E402
from longhaul.results import Store  # noqa: E402


def point(scenario: dict) -> list[dict]:
    return [{"x": scenario["x"], "y": scenario["x"] ** 2}]


def one(n: int, base: Path) -> dict:
    root = base / f"store-{n}"
    if root.exists():
        shutil.rmtree(root)
    store = Store(root)
    scenarios = [{"x": x} for x in range(n)]   # not sweep.grid: its duplicate check is not the store's cost
    t = time.perf_counter()
    res = sweep.run(point, scenarios, kind="bench", store=store, executor="serial", description=f"{n} points")
    put_s = time.perf_counter() - t
    assert res.computed == n
    t = time.perf_counter()
    assert len(Store(root).runs()) == n
    ls_s = time.perf_counter() - t
    shutil.rmtree(root)
    return {"n": n, "put_ms_per_point": 1e3 * put_s / n, "sweep_s": put_s, "ls_s": ls_s}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--counts", default="100,2000", help="comma list of point counts (default 100,2000)")
    p.add_argument("--repeat", type=int, default=3, help="runs of each count; the fastest is shown (default 3)")
    p.add_argument("--dir", help="where to put the stores (default: a temporary directory in bench/out/)")
    args = p.parse_args()
    counts = sorted({int(c) for c in args.counts.split(",")})
    if not counts or counts[0] < 1:
        p.error("--counts: give point counts >= 1, e.g. 100,2000")
    if args.dir:
        base = Path(args.dir)
        base.mkdir(parents=True, exist_ok=True)
        cleanup = False
    else:
        (ROOT / "bench" / "out").mkdir(parents=True, exist_ok=True)
        base = Path(tempfile.mkdtemp(prefix="store_bench-", dir=ROOT / "bench" / "out"))
        cleanup = True
    try:
        one(1, base)   # warm-up: the one-time costs (software version via git, model fingerprint, imports)
        rows = [min((one(n, base) for _ in range(max(1, args.repeat))), key=lambda r: r["sweep_s"])
                for n in counts]
    finally:
        if cleanup:
            shutil.rmtree(base, ignore_errors=True)
    print(f"cpus: {os.cpu_count()}   store under: {base}")
    print(f"{'points':>7} {'ms/point':>9} {'sweep s':>8} {'ls s':>6}")
    for r in rows:
        print(f"{r['n']:>7} {r['put_ms_per_point']:>9.3f} {r['sweep_s']:>8.2f} {r['ls_s']:>6.2f}")
    ratio = rows[-1]["put_ms_per_point"] / rows[0]["put_ms_per_point"]
    print(f"per-point cost, {rows[-1]['n']} vs {rows[0]['n']} points: x{ratio:.2f} "
          "(anchor: about 1, the cost of a point does not grow with the count)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
