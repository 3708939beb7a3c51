"""``python bench/mpi_bench.py scale``: issue 27's scale cases on longhaul and, side by side in the
same run, on SimGrid's SMPI (bench/smpi_side.py) over the same two-cluster platform.

Cases (one rank per node, half the ranks in each cluster): osu_bcast 1 MiB at 128, 2,048 and
4,096 ranks; osu_alltoall 64 KiB at 128, 256, 1,024 and 4,096; NAS CG class C at 128 and 1,024.
The OSU cases run OSU's 2 warm-up calls and 1 timed call, each followed by a barrier (longhaul's
`--iterations 1`); CG runs the iterations longhaul simulates (10 of class C's 75; both report
the run time scaled to 75). Each case is one command in a fresh process, start-up included
(SMPI's programs are compiled before, into a temporary directory, untimed): wall time, peak
resident set (RSS) and peak proportional set size (PSS) of the process tree (bench/proc_peak.py).
A case that has used `--limit-s` of CPU time (or run 4 times that long) is stopped: its figures
are lower bounds ('>='). CPU time is printed next to wall time: on a shared machine it is the
figure other jobs do not inflate (both simulators run on one thread).

Printed per case: both simulators' wall time and memory, longhaul / SMPI for time and for memory
(longhaul's peak RSS over SMPI's peak PSS), and how each grows from 128 ranks: the exponent k of
ranks^k for CPU time and for peak PSS above the simulator's own 2-rank run (PSS, not RSS: SMPI's
shared buffers map the same pages once per rank, which RSS counts each time). Then what each
simulated (the collective's average latency; CG's run time), to show the two simulate the same
thing.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import proc_peak
import smpi_side

# (label, workload, message bytes, rank counts); the first count is the growth's reference.
CASES: list[tuple[str, str, int, tuple[int, ...]]] = [
    ("osu_bcast 1M", "bcast", 1 << 20, (128, 2048, 4096)),
    ("osu_alltoall 64K", "alltoall", 64 << 10, (128, 256, 1024, 4096)),
    ("NAS CG class C", "cg", 0, (128, 1024)),
]
# NAS CG class C (NPB's cg.f / NAS-95-020: na 150000, 75 iterations), of which longhaul simulates
# SIM_ITERATIONS = 10 (crates/longhaul-sim/src/mpi/apps.rs) and scales; used when longhaul's
# record is missing (a stopped run).
CG_NA = 150_000
CG_ITERATIONS = 75
CG_SIMULATED = 10


@dataclass
class Result:
    peak: proc_peak.Peak | None  # None: not run (SMPI unavailable)
    simulated: str = "-"  # what the simulator reported, with its unit


def longhaul_args(workload: str, size: int, ranks: int, delay_us: float, extra: list[str]) -> list[str]:
    common = ["--nodes", str(ranks // 2), "--delay-us", f"{delay_us:g}", "--workers", "1", "--format", "json"]
    if workload == "cg":
        return ["sim", "mpi", "app", "--app", "cg", "--class", "C", *common, *extra]
    return ["sim", "mpi", "osu", "--bench", workload, "--sizes", str(size), "--iterations", "1", *common, *extra]


def run_longhaul(args: list[str], limit_s: float) -> tuple[Result, dict]:
    exe = shutil.which("longhaul") or sys.exit("bench: longhaul is not on PATH (source .venv/bin/activate)")
    peak = proc_peak.run([exe, *args], limit_s)
    rec = json.loads(peak.stdout)[0] if peak.done else {}
    if not rec:
        return Result(peak), rec
    if rec.get("lat_us") is not None:
        return Result(peak, f"{rec['lat_us']:.0f} us"), rec
    return Result(peak, f"{rec['run_time_s']:.3f} s"), rec


def run_smpi(programs: dict[str, Path], workload: str, size: int, ranks: int, delay_us: float, cg: tuple[float, int],
             work: Path, limit_s: float) -> Result:
    """`cg`: CG's compute per iteration (us) and the iterations to simulate."""
    if workload == "cg":
        compute_us, simulated = cg
        exe, args = programs["nas_cg"], [str(CG_NA), str(simulated), f"{compute_us:.6f}"]
    else:
        exe, args = programs["osu_coll"], [workload, str(size), "2", "1"]
    peak = proc_peak.run(smpi_side.command(exe, args, ranks, delay_us, work), limit_s)
    if not peak.done:
        return Result(peak)
    key, value = peak.stdout.split()[:2]
    if key == "s_per_iter":
        return Result(peak, f"{float(value) * CG_ITERATIONS:.3f} s")
    return Result(peak, f"{float(value):.0f} us")


def fmt(value: float, done: bool, width: int, digits: int = 1) -> str:
    return f"{'' if done else '>='}{value:.{digits}f}".rjust(width)


def ratio(a: proc_peak.Peak, b: proc_peak.Peak, av: float, bv: float) -> str:
    """a / b, as a bound when either was stopped."""
    bound = {(True, True): "", (False, True): ">=", (True, False): "<="}.get((a.done, b.done))
    return f"{bound}{av / bv:.2f}" if bound is not None and av > 0 and bv > 0 else "?"


def growth(first: proc_peak.Peak | None, now: proc_peak.Peak, r0: int, r: int, base: int) -> str:
    """Exponents k of ranks^k from `first` (at r0 ranks) to `now`: CPU time, and PSS above `base`."""
    if first is None or not (first.done and now.done) or r == r0:
        return "-".rjust(11)
    g = math.log(r / r0)
    mem = math.log(max(now.pss_bytes - base, 1) / max(first.pss_bytes - base, 1)) / g
    return f"{math.log(now.cpu_s / first.cpu_s) / g:5.2f} {mem:5.2f}"


HEADER = (f"{'case':<17}{'ranks':>6} | {'longhaul: wall s':>16} {'cpu s':>6} {'RSS MB':>7} {'PSS MB':>7} | "
          f"{'SMPI: wall s':>12} {'cpu s':>6} {'RSS MB':>7} {'PSS MB':>7} | {'lh/SMPI: wall':>13} {'cpu':>5} "
          f"{'memory':>7} | {'growth lh: cpu^k':>16} {'m^k':>5} | {'SMPI: cpu^k':>11} {'m^k':>5} | simulated: longhaul, SMPI")


def side(p: proc_peak.Peak, wall_width: int) -> str:
    return (f"{fmt(p.wall_s, p.done, wall_width)} {fmt(p.cpu_s, p.done, 6)} {fmt(p.rss_bytes / 1e6, p.done, 7, 0)} "
            f"{fmt(p.pss_bytes / 1e6, p.done, 7, 0)}")


def row(label: str, ranks: int, lh: Result, sm: Result, growth_lh: str, growth_sm: str) -> str:
    a, b = lh.peak, sm.peak
    assert a is not None
    line = f"{label:<17}{ranks:>6} | {side(a, 16)} | "
    if b is None:
        none = f"{'-':>12} {'-':>6} {'-':>7} {'-':>7} | {'-':>13} {'-':>5} {'-':>7}"
        return line + f"{none} | {growth_lh:>22} | {'-':>17} | {lh.simulated}"
    return line + (f"{side(b, 12)} | {ratio(a, b, a.wall_s, b.wall_s):>13} {ratio(a, b, a.cpu_s, b.cpu_s):>5} "
                   f"{ratio(a, b, a.rss_bytes, b.pss_bytes):>7} | {growth_lh:>22} | {growth_sm:>17} | "
                   f"{lh.simulated}, {sm.simulated}")


def compile_longhaul() -> None:
    """Byte-compile the longhaul package once, as installing it does: a machine that sets
    PYTHONDONTWRITEBYTECODE (this one does) would otherwise compile every module of every run
    from source, about 0.14 s of start-up that no installed longhaul pays."""
    import compileall

    import longhaul

    compileall.compile_dir(str(Path(longhaul.__file__).parent), quiet=1)


def parse_case(text: str) -> tuple[str, int]:
    """`WORKLOAD:RANKS` (e.g. `bcast:4096`) as one of CASES' points; ValueError naming the valid ones."""
    valid = [f"{w}:{r}" for _, w, _, counts in CASES for r in counts]
    workload, _, ranks = text.partition(":")
    if text not in valid:
        raise ValueError(f"--case {text!r}: not one of {', '.join(valid)}")
    return workload, int(ranks)


def scale(limit_s: float, delay_us: float, extra: list[str], only: set[tuple[str, int]] | None = None) -> None:
    """Every case, or those in `only` (workload, ranks); growth exponents need the case's first count run."""
    compile_longhaul()
    print(f"longhaul: profile s1 (the default), one-way delay {delay_us:g} us, extra arguments: "
          f"{shlex.join(extra) or '(none)'}; limit {limit_s:g} s of CPU per case; {load()}")
    why_not = smpi_side.available()
    with tempfile.TemporaryDirectory(prefix="smpi-bench-") as tmp:
        work = Path(tmp)
        programs = {} if why_not else smpi_side.build(work)
        print(why_not or f"SMPI: SimGrid {smpi_side.version()}'s smpirun, CM02 network model, collectives "
                         f"{smpi_side.COLLECTIVES}")
        try:
            base_lh = run_longhaul(longhaul_args("bcast", 8, 2, delay_us, extra), limit_s)[0].peak
        except RuntimeError as e:
            # The first longhaul command: a bad --longhaul-args shows here.
            print(f"bench: longhaul {shlex.join(extra)}: {str(e).strip().splitlines()[-1]}", file=sys.stderr)
            sys.exit(2)
        base_lh_bytes = base_lh.pss_bytes if base_lh else 0
        base_sm = 0
        if programs:
            # 20,000 calls: a second or two, long enough for PSS to be sampled once the simulator runs.
            base_sm = proc_peak.run(smpi_side.command(programs["osu_coll"], ["bcast", "8", "0", "20000"], 2,
                                                      delay_us, work), limit_s).pss_bytes
        print(f"base (2 ranks, bcast 8 B): longhaul {base_lh_bytes / 1e6:.0f} MB, SMPI {base_sm / 1e6:.0f} MB peak PSS "
              "(subtracted for the memory exponent)")
        print(HEADER, flush=True)
        for label, workload, size, rank_counts in CASES:
            first: tuple[Result, Result] | None = None
            cg_at_first = (0.0, CG_SIMULATED)
            for ranks in rank_counts:
                if only is not None and (workload, ranks) not in only:
                    continue
                lh, rec = run_longhaul(longhaul_args(workload, size, ranks, delay_us, extra), limit_s)
                if rec.get("compute_s") is not None:
                    cg = (rec["compute_s"] / rec["iterations"] * 1e6, rec["iterations_simulated"])
                else:
                    # Compute per iteration falls as 1 / ranks (apps.rs: Mop / iterations / (P x rate)).
                    cg = (cg_at_first[0] * rank_counts[0] / ranks, cg_at_first[1])
                if first is None:
                    cg_at_first = cg
                sm = Result(None)
                if programs:
                    sm = run_smpi(programs, workload, size, ranks, delay_us, cg, work, limit_s)
                if first is None:
                    first = (lh, sm)
                r0 = rank_counts[0]
                measured_r0 = only is None or (workload, r0) in only
                g_lh = growth(first[0].peak, lh.peak, r0, ranks, base_lh_bytes) if lh.peak and measured_r0 else "-"
                g_sm = growth(first[1].peak, sm.peak, r0, ranks, base_sm) if sm.peak and measured_r0 else "-"
                print(row(label, ranks, lh, sm, g_lh, g_sm), flush=True)
    print(f"done; {load()}")


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.1f} {five:.1f} {fifteen:.1f} on {os.cpu_count()} CPUs"
