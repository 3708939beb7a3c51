"""Wall and CPU time and peak memory of a command and its child processes, for the benchmarks.

Peak resident set: the largest VmHWM of any process of the tree, and at the end `wait4`'s
ru_maxrss (which covers the reaped descendants too). Peak proportional set size: the largest
sum over the tree's processes of the Pss of /proc/PID/smaps_rollup, sampled every
`interval_s` (shared pages count once in all, split between the processes mapping them; a
short peak between two samples can be missed, so it is a lower bound). A sample of a process with
many mappings costs (the kernel walks them all: SMPI at 4,096 ranks maps thousands, and sampling it
every 50 ms took 40-65% of a core on 2026-12-07, a share of a 2-core machine's wall time the
measured command then did not have), so the sampler waits at least 9 times as long as its last
sample took: at most a tenth of a core. A command whose processes
have used more than `limit_s` of CPU time (user + system, so that other jobs on a shared machine
do not stop it early), or that has run for 4 x `limit_s` of wall time, is stopped (its whole
process group) and its peaks so far are returned.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Peak:
    wall_s: float
    # CPU time (user + system) of the process tree (when stopped: as far as sampled).
    cpu_s: float
    rss_bytes: int
    pss_bytes: int
    done: bool
    stdout: str


def _tree(pid: int) -> list[int]:
    """`pid` and its descendants (from each thread's children list)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children", encoding="ascii") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            continue
    return out


def _kb(path: str, key: str) -> int:
    try:
        with open(path, encoding="ascii") as f:
            return next((int(line.split()[1]) for line in f if line.startswith(key)), 0)
    except OSError:
        return 0


# Clock ticks per second of /proc/PID/stat's times.
TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float:
    """User + system time of `pid` and of its reaped children (/proc/PID/stat fields 14-17)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return sum(int(x) for x in fields[11:15]) / TICKS_PER_S


def run(cmd: list[str], limit_s: float, interval_s: float = 0.05) -> Peak:
    """Run `cmd` (stdout kept, stderr's tail reported on failure) and measure it."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, start_new_session=True)
        rss = pss = 0
        sampled_s = 0.0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                wall = time.perf_counter() - t
                code = os.waitstatus_to_exitcode(status)
                if code != 0:
                    err.seek(0)
                    tail = err.read().decode(errors="replace")[-400:]
                    raise RuntimeError(f"{Path(cmd[0]).name} exited with {code}: {tail}")
                out.seek(0)
                cpu = usage.ru_utime + usage.ru_stime
                return Peak(wall, cpu, max(rss, usage.ru_maxrss * 1024), pss, True, out.read().decode())
            sample_t = time.perf_counter()
            tree = _tree(proc.pid)
            cpu = sum(_cpu_s(p) for p in tree)
            rss = max(rss, *(_kb(f"/proc/{p}/status", "VmHWM:") * 1024 for p in tree))
            pss = max(pss, sum(_kb(f"/proc/{p}/smaps_rollup", "Pss:") * 1024 for p in tree))
            sampled_s = time.perf_counter() - sample_t
            if cpu > limit_s or time.perf_counter() - t > 4 * limit_s:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return Peak(time.perf_counter() - t, cpu, rss, pss, False, "")
            time.sleep(max(interval_s, 9 * sampled_s))
