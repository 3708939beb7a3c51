"""MPI model benchmark (not a timed test): prints wall times and their ratio to the targets.

1. osu_bcast, 128 ranks (32 nodes x 2 per cluster), sizes 1 B .. 1 MiB, delays 10/100/1000 us,
   default and hierarchical algorithms (target: under 10 s in all).
2. NAS CG class B skeleton, 64 ranks (16 nodes x 2 per cluster), 5 delays (target: under 10 s).
Both run the points on all local cores, as the CLI does.

``python bench/mpi_bench.py scale [--limit-s S] [--delay-us US] [--longhaul-args "..."] [--case W:R]``
instead runs the scale cases of issue 27 (or only those named, e.g. ``--case bcast:4096``) on longhaul
and, side by side, on SimGrid's SMPI: see bench/mpi_scale.py.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time

import mpi_scale
from longhaul.sim import mpi


def timed(label: str, fn, target_s: float) -> None:
    t = time.perf_counter()
    recs = fn()
    wall = time.perf_counter() - t
    events = sum(r["sim_events"] for r in recs)
    bad = [r for r in recs if r["status"] != "ok"]
    print(f"{label}: {len(recs)} runs, {wall:.2f} s wall (target {target_s:g} s, ratio {wall / target_s:.2f}), "
          f"{events / wall / 1e6:.1f} M events/s{'; NOT OK: ' + str(len(bad)) if bad else ''}")


def main() -> None:
    if sys.argv[1:2] == ["scale"]:
        parser = argparse.ArgumentParser(prog="mpi_bench.py scale", description=mpi_scale.__doc__,
                                         formatter_class=argparse.RawDescriptionHelpFormatter)
        parser.add_argument("--limit-s", type=float, default=120.0,
                            help="stop a case after this much CPU time (default 120)")
        parser.add_argument("--delay-us", type=float, default=0.0,
                            help="one-way delay of the long-haul link on both simulators (default 0, longhaul's)")
        parser.add_argument("--longhaul-args", default="",
                            help="arguments appended to every longhaul command (e.g. \"--network fluid\")")
        parser.add_argument("--case", action="append", default=[], metavar="WORKLOAD:RANKS",
                            help="run only this case (e.g. bcast:4096; repeatable; default: all)")
        a = parser.parse_args(sys.argv[2:])
        if not (a.limit_s > 0 and 0 <= a.delay_us <= 200_000):
            parser.error("--limit-s must be > 0 and --delay-us in [0, 200000]")
        try:
            only = {mpi_scale.parse_case(c) for c in a.case} or None
        except ValueError as e:
            parser.error(str(e))
        return mpi_scale.scale(a.limit_s, a.delay_us, shlex.split(a.longhaul_args), only)
    sizes = [2**k for k in range(21)]
    timed("osu_bcast 128 ranks x 21 sizes x 3 delays x 2 algorithms",
          lambda: [r for a in ("default", "hierarchical")
                   for r in mpi.osu_sweep("bcast", sizes, [10.0, 100.0, 1000.0], nodes=32, ppn=2, algo=a,
                                          show_progress=False)], 10.0)
    timed("NAS CG class B, 64 ranks x 5 delays",
          lambda: mpi.app_sweep(["cg"], "B", [0.0, 10.0, 100.0, 1000.0, 10000.0], nodes=16, ppn=2,
                                show_progress=False), 10.0)


if __name__ == "__main__":
    main()
