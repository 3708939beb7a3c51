"""Resource admission: a job's memory estimated before it starts, and refused, in one line with the
estimate and the limit, when it would not fit (``--max-memory``; default 80% of the memory the
kernel says is available now, ``MemAvailable`` in /proc/meminfo).

The MPI simulator's memory, measured as the peak resident set (``/usr/bin/time -v``, maximum
resident set size) of ``longhaul sim mpi ... --workers 1 --iterations 1`` on this repository's
2-core x86-64 VM (2026-12, core as built then), R = ranks in both clusters:

=======================  =====  =====  =====  ======  ======
job                      R=32   R=256  R=512  R=1024  R=2048
=======================  =====  =====  =====  ======  ======
osu alltoall 1K          28 MB  103    321
osu bcast 1K             28 MB         43
osu allreduce 1K                       61
app cg class A                  45            117
replay (barrier,         38 MB at R=256       154     523
allreduce 8)
=======================  =====  =====  =====  ======  ======

A fixed part (the interpreter and the core, ~28 MB), a part per rank and a part per rank *pair*
(connection state between every two ranks; alltoall also keeps every pair's messages in flight at
once): alltoall grows by ~1.15 kB x R^2 (103 - 28 MB over 256^2, 293 MB over 512^2), the others by
at most ~120 B x R^2 (replay: 496 MB over 2048^2; app cg 86 B, bcast 23 B). The estimate rounds
each up (``MPI_*`` below), so it is an upper bound at the measured sizes; the message size and the
iteration count barely matter (alltoall at R=256: 103 MB for 1 KiB or 64 KiB, 1 or 10
iterations). Points simulated at once (``--workers``) each take their own. At R = 4,096 this gives
20 GB for alltoall (the audit saw 11 GB after 102 s, still growing) and 2.9 GB for the others
(bcast 494 MB, a replay 2.2 GB).
"""

from __future__ import annotations

import os

from longhaul import units
from longhaul.errors import UserError

MiB = 1 << 20
#: the interpreter, numpy and the core, with margin (measured 28-33 MB for a small job)
BASE_BYTES = 64 * MiB
#: per rank: its queues, buffers and counters (bcast and app: 18-30 kB measured)
MPI_RANK_BYTES = 32 * 1024
#: per ordered rank pair: alltoall (every pair's messages in flight) and the rest (connections)
MPI_PAIR_BYTES_ALLTOALL = 1200
MPI_PAIR_BYTES = 160
#: the share of MemAvailable a job may take by default
DEFAULT_SHARE = 0.8


def available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (bytes), or None where there is none."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def size_text(n: float) -> str:
    """Bytes as the binary size a user would type back (``--max-memory 8G``), rounded."""
    for suffix, scale in (("T", 1 << 40), ("G", 1 << 30), ("M", MiB)):
        if n >= scale:
            return f"{n / scale:.1f}{suffix}".replace(".0", "")
    return f"{max(n, 0):.0f}"


def limit_bytes(text: str | None) -> tuple[int | None, str]:
    """The limit ``--max-memory`` gives (a size: 8G, 512M), or the default, and how to name it in
    messages. None: no limit known (no /proc/meminfo)."""
    if text is not None:
        limit = units.parse_size(text, "--max-memory")
        if limit < 64 * MiB:
            raise UserError(f"--max-memory: {text} is below 64M, less than longhaul itself needs "
                            "(give a size like 8G)")
        return limit, f"--max-memory {text}"
    available = available_bytes()
    if available is None:
        return None, ""
    return int(available * DEFAULT_SHARE), f"80% of the {size_text(available)} available now; --max-memory raises it"


def mpi_point_bytes(ranks: int, alltoall: bool) -> int:
    """Estimated memory of simulating one MPI point of ``ranks`` ranks (without ``BASE_BYTES``)."""
    pair = MPI_PAIR_BYTES_ALLTOALL if alltoall else MPI_PAIR_BYTES
    return ranks * MPI_RANK_BYTES + ranks * ranks * pair


def mpi_bytes(ranks: int, alltoall: bool, at_once: int = 1) -> int:
    """Estimated peak memory of simulating ``at_once`` MPI points of ``ranks`` ranks each."""
    return BASE_BYTES + max(at_once, 1) * mpi_point_bytes(ranks, alltoall)


#: Most ranks an MPI job has (--nodes 4096 per cluster at --ppn 1; the core refuses more)
MAX_MPI_RANKS = 4096
#: OSU benchmarks that are collectives: they run on 4 nodes per cluster unless told otherwise
COLLECTIVES = ("bcast", "scatter", "alltoall", "allreduce")


def trace_ranks(text: str) -> int:
    """The ranks a trace's first statement (``ranks N``) declares; 0 when it does not (the core says why)."""
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if words:
            ok = len(words) == 2 and words[0] == "ranks" and words[1].isascii() and words[1].isdigit()
            return int(words[1]) if ok else 0
    return 0


def mpi_scenario_ranks(sc: dict) -> tuple[int, bool]:
    """(ranks, is it alltoall) of an MPI scenario (``longhaul.sim.mpi.scenario``): both clusters'
    nodes x ppn, at least what its trace declares or its mbw_mr pairs need."""
    cluster = sc.get("cluster") or {}
    osu = sc.get("osu") or {}
    bench = osu.get("bench")
    nodes = cluster.get("nodes") or (4 if bench in COLLECTIVES else 1)
    ranks = 2 * int(nodes) * int(cluster.get("ppn") or 1)
    if bench == "mbw_mr":
        ranks = max(ranks, 2 * int(osu.get("pairs") or 1))
    if sc.get("trace"):
        ranks = max(trace_ranks(str(sc["trace"].get("text", ""))), 2 * int(cluster.get("nodes") or 0)
                    * int(cluster.get("ppn") or 1))
    return ranks, bench == "alltoall"


def admit(estimate: int, max_memory: str | None, what: str, fix: str) -> None:
    """Refuse (one line, UserError) a job whose ``estimate`` (bytes) is over the limit."""
    limit, named = limit_bytes(max_memory)
    if limit is not None and estimate > limit:
        raise UserError(f"{what} would need an estimated {size_text(estimate)} of memory, over the limit of "
                        f"{size_text(limit)} ({named}); {fix}")


def at_once(points: int, workers: int | None) -> int:
    """How many points run at the same time: the workers (default one per CPU), at most the points."""
    return max(1, min(points, workers or os.cpu_count() or 1))


def add_option(parser, what: str = "a job") -> None:
    parser.add_argument("--max-memory", metavar="SIZE", default=None,
                        help=f"refuse {what} estimated to need more memory than this, e.g. 8G "
                             "(default: 80%% of the memory available when it starts)")
