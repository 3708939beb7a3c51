"""MPI model benchmark (not a timed test): prints wall times and their ratio to the targets.

1. osu_bcast, 128 ranks (32 nodes x 2 per cluster), sizes 1 B .. 1 MiB, delays 10/100/1000 us,
   default and hierarchical algorithms (target: under 10 s in all).
2. NAS CG class B skeleton, 64 ranks (16 nodes x 2 per cluster), 5 delays (target: under 10 s).
Both run the points on all local cores, as the CLI does.

``python bench/mpi_bench.py scale [--limit-s S]`` instead runs the scale cases of issue 27, each
as the CLI in a fresh process (one point, one worker, one timed iteration after OSU's two
warm-up calls; one rank per node): osu_bcast 1 MiB at 128, 2,048 and 4,096 ranks, osu_alltoall
64 KiB at 128, 256, 1,024 and 4,096 ranks. It prints each one's peak resident set and wall time
and how both grow from 128 ranks (the exponent k of ranks^k; memory above a 2-rank run's). A
case still running after S seconds (default 600) is stopped: its peak so far is printed as a
lower bound ('>=').
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import time

from longhaul.sim import mpi


def timed(label: str, fn, target_s: float) -> None:
    t = time.perf_counter()
    recs = fn()
    wall = time.perf_counter() - t
    events = sum(r["sim_events"] for r in recs)
    bad = [r for r in recs if r["status"] != "ok"]
    print(f"{label}: {len(recs)} runs, {wall:.2f} s wall (target {target_s:g} s, ratio {wall / target_s:.2f}), "
          f"{events / wall / 1e6:.1f} M events/s{'; NOT OK: ' + str(len(bad)) if bad else ''}")


def peak_run(args: list[str], limit_s: float) -> tuple[float, int, bool]:
    """(wall s, peak RSS bytes, finished) of ``longhaul ARGS`` in a fresh process."""
    exe = shutil.which("longhaul") or sys.exit("bench: longhaul is not on PATH (source .venv/bin/activate)")
    t = time.perf_counter()
    proc = subprocess.Popen([exe, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode != 0:
                sys.exit(f"bench: longhaul {' '.join(args)} failed: {proc.stderr.read().decode()[-300:] if proc.stderr else ''}")
            return time.perf_counter() - t, max(peak, usage.ru_maxrss * 1024), True
        try:
            with open(f"/proc/{proc.pid}/status", encoding="ascii") as f:
                hwm = [line for line in f if line.startswith("VmHWM:")]
            peak = max(peak, int(hwm[0].split()[1]) * 1024) if hwm else peak
        except OSError:
            pass
        if time.perf_counter() - t > limit_s:
            proc.kill()
            proc.wait()
            return time.perf_counter() - t, peak, False
        time.sleep(0.2)


def scale(limit_s: float) -> None:
    common = ["--iterations", "1", "--workers", "1", "--format", "csv"]
    _, base, _ = peak_run(["sim", "mpi", "osu", "--bench", "latency", "--sizes", "8", *common], limit_s)
    print(f"base: a 2-rank run's peak RSS {base / 1e6:.0f} MB (subtracted for the memory exponent)")
    for bench, size, rank_counts in (("bcast", "1M", (128, 2048, 4096)), ("alltoall", "64K", (128, 256, 1024, 4096))):
        first = None
        for ranks in rank_counts:
            args = ["sim", "mpi", "osu", "--bench", bench, "--sizes", size, "--nodes", str(ranks // 2), *common]
            wall, peak, done = peak_run(args, limit_s)
            line = f"osu_{bench} {size} {ranks:5d} ranks: "
            line += f"{'' if done else '>='}{peak / 1e6:7.0f} MB peak RSS, {'' if done else '>'}{wall:7.1f} s wall"
            if first is None:
                first = (ranks, wall, peak)
            elif done:
                r0, w0, p0 = first
                grow = math.log(ranks / r0)
                mem_k = math.log(max(peak - base, 1) / max(p0 - base, 1)) / grow
                line += f"; growth from {r0} ranks: memory ranks^{mem_k:.2f}, time ranks^{math.log(wall / w0) / grow:.2f}"
            else:
                line += f"; stopped after {limit_s:g} s"
            print(line, flush=True)


def main() -> None:
    if sys.argv[1:2] == ["scale"]:
        limit = float(sys.argv[3]) if sys.argv[2:3] == ["--limit-s"] and len(sys.argv) > 3 else 600.0
        return scale(limit)
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
