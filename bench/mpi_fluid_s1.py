"""The flow level against the packet level on the S1 points' scenarios (not a timed test).

Runs every scenario the S1 MPI and NAS checks run (``s1_cases`` of python/longhaul/validation/mpi.py,
which the checks run too: OSU's and the NAS skeletons' default iterations, the profile s1) once with
``network = "packet"`` and once with ``network = "fluid"``, and prints the measured quantity of each at
both levels with the difference (issue 27's criterion: within 5%), and each level's wall time for the lot. The table in
docs/models/mpi.md ("Flow-level mode") comes from this script; its dated runs are in
bench/results/mpi_fluid_s1.md.

``python bench/mpi_fluid_s1.py [--workers N]``
"""

from __future__ import annotations

import argparse
import time

from longhaul import validation
from longhaul.sim import mpi
from longhaul.validation.mpi import s1_cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=None, help="threads per level (default: every core)")
    a = parser.parse_args()
    todo = s1_cases(validation.points())
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
