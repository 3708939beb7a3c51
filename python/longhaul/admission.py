"""Resource admission: a job's memory estimated before it starts, and refused, in one line with the
estimate and the limit, when it would not fit (``--max-memory``; default 80% of the memory the
kernel says is available now, ``MemAvailable`` in /proc/meminfo).

The MPI simulator's memory, measured as the peak resident set (``/usr/bin/time -v``, maximum
resident set size) of ``longhaul sim mpi ... --workers 1 --iterations 1`` on this repository's
2-core x86-64 VM (2026-12-06, after the per-pair state was cut, before idle connections were parked;
one rank per node), R = ranks in both clusters, MB:

=========================  =====  =====  =====  ======  ======  ======
job                        R=32   R=256  R=512  R=1024  R=2048  R=4096
=========================  =====  =====  =====  ======  ======  ======
osu alltoall 1K            29     65     162    540
osu alltoall 64K                  58            (bench/results/mpi_bench.md)
osu alltoall 8 (Bruck)            32            59
osu bcast 1K               28            38             121     350
osu allreduce 1K                         39             126     358
app cg class A                    44            116
replay (barrier,                  36            154     520
allreduce 8)
=========================  =====  =====  =====  ======  ======  ======

A fixed part (the interpreter and the core, ~28 MB), a part per rank, and a part per ordered
rank pair, of three kinds (``MPI_*`` below, each rounded up so the estimate bounds every
measurement):

- alltoall (and the NAS skeletons FT and IS, which run one): the pairwise and scattered algorithms
  connect every pair of ranks, and a connection keeps its state for the run. Since 2026-12-06 a
  drained connection parks its directions and queue pairs (~900 B -> ~160 B, plus the pair's
  sequence numbers and table slots): 175 B per ordered pair at R=1024 ((318 - 28 - 64) MB over
  1024^2), rounded up to 256. Bruck's (up to 256 bytes) connects log2(R) peers per rank only.
- a trace: it no longer keeps its collectives' block lists (the check before the replay reads byte
  counts only since 2026-12-06), so it is counted as the rest.
- the rest: the fabric's forwarding state no longer grows with hosts^2 (rows per switch, columns
  per host since 2026-12-06); connections follow the active pairs (R log R for the tree, ring and
  recursive-doubling algorithms): 8 B per pair bounds them.

Measured after those changes (same machine, 2026-12-06, MB): osu alltoall 1K at R=1024 318 (540
before), alltoall 64K at R=256 43 (58), bcast 1K at R=2048 57 (121), a 1,024-rank replay of bcast,
allreduce, alltoall and barrier 51 (279). Points simulated at once (``--workers``) each take their
own. At R = 4,096 this gives 4.3 GiB for alltoall (8.3 GiB before the parking, 20 GB before the
per-pair state was cut) and 448 MiB for the others.

At the flow level (``network = fluid``) a queue pair is a few counters (32 B) instead of the
adapter's state, and nothing is on the wire as packets: osu alltoall 1K at R=1024 185 MB against
the packet level's 269 MB (2026-12-07, same machine and command with ``--network fluid``), 89 B
per ordered pair ((185 - 28 - 64) MB over 1024^2); osu alltoall 64K at R=4096 levelled off at 1.65
GB (bench/results/mpi_bench.md), 81 B per pair. Rounded up to 128 B: 2.3 GiB at R=4096 all told. ``auto``
is counted as the packet level (it runs packets up to 256 ranks, and the packet bound covers
both).
"""

from __future__ import annotations

import os

from longhaul import units
from longhaul.errors import UserError

MiB = 1 << 20
#: the interpreter, numpy and the core, with margin (measured 28-33 MB for a small job)
BASE_BYTES = 64 * MiB
#: per rank: its state, programs and connections to the peers of log-size collectives
#: (cg class A: 44 MB at 256 ranks)
MPI_RANK_BYTES = 64 * 1024
#: per ordered rank pair, by kind (see above): every pair connected (parked when idle); a trace; the rest
MPI_PAIR_BYTES = {"alltoall": 256, "trace": 8, "other": 8}
#: an alltoall's pair at the flow level (``network = fluid``; see above); the other kinds are as above
MPI_ALLTOALL_PAIR_BYTES_FLUID = 128
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


def mpi_point_bytes(ranks: int, kind: str, network: str | None = None) -> int:
    """Estimated memory of simulating one MPI point of ``ranks`` ranks (without ``BASE_BYTES``);
    ``kind``: a key of ``MPI_PAIR_BYTES``; ``network``: the scenario's (None: the default, packet)."""
    per_pair = MPI_ALLTOALL_PAIR_BYTES_FLUID if network == "fluid" and kind == "alltoall" else MPI_PAIR_BYTES[kind]
    return ranks * MPI_RANK_BYTES + ranks * ranks * per_pair


def mpi_bytes(ranks: int, kind: str, at_once: int = 1, network: str | None = None) -> int:
    """Estimated peak memory of simulating ``at_once`` MPI points of ``ranks`` ranks each."""
    return BASE_BYTES + max(at_once, 1) * mpi_point_bytes(ranks, kind, network)


#: NAS skeletons that run an alltoall (every pair of ranks connects)
ALLTOALL_APPS = ("ft", "is")


def app_kind(apps: list[str]) -> str:
    """The ``MPI_PAIR_BYTES`` kind of a run of the NAS skeletons ``apps``."""
    return "alltoall" if any(a in ALLTOALL_APPS for a in apps) else "other"


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


def mpi_scenario_network(sc: dict) -> str | None:
    """The ``network`` an MPI scenario asks for (None: the default)."""
    network = (sc.get("mpi") or {}).get("network")
    return network if isinstance(network, str) else None


def mpi_scenario_ranks(sc: dict) -> tuple[int, str]:
    """(ranks, ``MPI_PAIR_BYTES`` kind) of an MPI scenario (``longhaul.sim.mpi.scenario``): both
    clusters' nodes x ppn, at least what its trace declares or its mbw_mr pairs need."""
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
        return ranks, "trace"
    if sc.get("app"):
        return ranks, app_kind([str(sc["app"].get("name", ""))])
    return ranks, "alltoall" if bench == "alltoall" else "other"


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
