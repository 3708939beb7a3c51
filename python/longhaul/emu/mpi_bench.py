"""OSU-style MPI benchmarks through the emulator: ``osu()`` runs ``osu_mpi.py`` (mpi4py) on
ranks placed in the emulated clusters, one emulator per delay, and returns the parsed records
(``longhaul.ingest.osu``) with the link, placement and the bytes the link carried."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from longhaul.emu import mpi
from longhaul.emu.options import LinkOptions
from longhaul.errors import UserError
from longhaul.ingest import osu as osu_parser
from longhaul.osu_text import PORTED

# The program runs in the ranks only: importing it here would import mpi4py, whose MPI_Init in
# this process (a singleton) leaves OMPI_* variables that break every mpirun started later.
OSU_PROGRAM = str(Path(__file__).with_name("osu_mpi.py"))
BENCHES = PORTED  # what the mpi4py port implements
ALGOS = ("default", "hierarchical")
PT2PT = ("latency", "bw", "bibw")
STREAMING = ("bw", "bibw", "mbw_mr")  # a window of messages in flight (osu_bw's WINDOW)
COLLECTIVES = ("allreduce", "alltoall", "bcast")  # every rank; --algo applies
WINDOW = 64  # osu_bw's WINDOW_SIZE
BYTES_PER_POINT = 512 << 20  # keep a bandwidth point to ~half a second at the emulator's ~1 GB/s
LAT_SECONDS_PER_POINT = 0.5


def default_iterations(bench: str, size_bytes: int, delay_us: float, window: int = WINDOW) -> tuple[int, int]:
    """(iterations, warm-up) small enough for a 2-core machine yet past TCP's start-up: the OSU
    defaults (latency 1000/100 below 8 KiB, else 100/10; bw 100/10 below 8 KiB, else 20/2) cut to
    about LAT_SECONDS_PER_POINT of round trips and BYTES_PER_POINT of data."""
    small = size_bytes <= 8192
    if bench == "latency":
        iters = 1000 if small else 100
        iters = min(iters, max(10, int(LAT_SECONDS_PER_POINT / (2 * delay_us * 1e-6 + 1e-4))))
    elif bench in STREAMING:
        iters = 100 if small else 20
        iters = min(iters, max(3, BYTES_PER_POINT // max(size_bytes * window, 1)))
    else:
        iters = min(100 if small else 20, max(5, int(LAT_SECONDS_PER_POINT / (6 * delay_us * 1e-6 + 1e-3))))
    return iters, max(1, iters // 10)


def osu_once(emu, bench: str, sizes: Sequence[int], ranks_per_cluster: int, algo: str = "default",
             iterations: int | None = None, warmup: int | None = None, window: int = WINDOW, pairs: int = 0,
             placement: str = "block", mca: dict | None = None, timeout_s: float = 600.0,
             library: str = "openmpi", env: dict | None = None) -> list[dict]:
    """One benchmark on a running emulator (built by ``mpi.emulator``); one record per size."""
    delay = emu.link.ab.delay_us
    records = []
    for size in sizes:  # one launch per size: iterations differ with the size
        it, wu = default_iterations(bench, size, delay, window)
        if iterations:  # the user's count, with a tenth of it as warm-up unless given too
            it, wu = iterations, max(1, iterations // 10)
        wu = warmup if warmup is not None else wu
        argv = [sys.executable, OSU_PROGRAM, bench, "--sizes", str(size), "--iterations", str(it),
                "--warmup", str(wu), "--window", str(window), "--pairs", str(pairs), "--algo", algo]
        r = mpi.run(emu, mpi.MpiJob(argv=argv, ranks_per_cluster=ranks_per_cluster, placement=placement,
                                    library=library, mca=dict(mca or {}), env=dict(env or {}),
                                    timeout_s=timeout_s))
        for rec in osu_parser.parse(r["stdout"], f"osu_mpi {bench}"):
            records.append({**rec, "delay_us": delay, "rate_gbps": emu.link.ab.rate_gbps, "mtu_bytes": emu.link.mtu,
                            "ranks": r["ranks"], "ranks_per_cluster": ranks_per_cluster, "placement": placement,
                            "algo": algo, "mpi": r["mpi"], "iterations": it, "warmup": wu, "window_msgs": window,
                            "mca": ",".join(f"{k}={v}" for k, v in sorted((mca or {}).items())),
                            "env": ",".join(f"{k}={v}" for k, v in sorted((env or {}).items())),
                            "wan_bytes_ab": r["wan_bytes_ab"], "wan_bytes_ba": r["wan_bytes_ba"],
                            "run_time_s": r["seconds"], "source": "emu"})
    return records


def osu(bench: str, sizes: Sequence[int], delays_us: Sequence[float] = (0.0,), ranks_per_cluster: int | None = None,
        link: dict | LinkOptions | None = None, name: str | None = None, **kw) -> list[dict]:
    """The benchmark at every delay (one emulator each, one host per rank). ``link``: the link
    (e.g. from a scenario file), or further ``LinkOptions.symmetric`` arguments (rate_gbps, mtu,
    window, loss, ...); its delay is replaced by each of ``delays_us``; ``kw``: those of
    ``osu_once``. ``ranks_per_cluster`` defaults to 1 for latency/bw/bibw, ``pairs`` (or 2) for
    mbw_mr, 4 for collectives."""
    if bench not in BENCHES:
        raise UserError(f"--bench: '{bench}' is not one of {', '.join(BENCHES)}")
    if kw.get("algo", "default") not in ALGOS:
        raise UserError(f"--algo: '{kw['algo']}' is not one of {', '.join(ALGOS)}")
    if ranks_per_cluster is None:
        ranks_per_cluster = 1 if bench in PT2PT else (kw.get("pairs") or 2) if bench == "mbw_mr" else 4
    if bench != "mbw_mr" and kw.get("pairs"):
        raise UserError(f"--pairs: only for mbw_mr ({bench} uses {'one pair' if bench in PT2PT else 'every rank'})")
    if bench == "mbw_mr" and kw.get("pairs", 0) > ranks_per_cluster:
        raise UserError(f"--pairs: {kw['pairs']} pairs need {kw['pairs']} ranks per cluster, the job has "
                        f"{ranks_per_cluster} (raise --ranks-per-cluster)")
    if bench not in COLLECTIVES and kw.get("algo", "default") != "default":
        raise UserError(f"--algo: only for the collectives ({', '.join(COLLECTIVES)}), not {bench}")
    # Refuse bad jobs and a missing MPI library before any namespace exists.
    mpi.MpiJob(argv=["osu_mpi"], ranks_per_cluster=ranks_per_cluster, placement=kw.get("placement", "block"),
               library=kw.get("library", "openmpi"), mca=kw.get("mca") or {}, env=kw.get("env") or {}).validated()
    mpi.launcher(kw.get("library", "openmpi"))
    base = link if isinstance(link, LinkOptions) else LinkOptions.symmetric(**(link or {}))
    records = []
    for d in delays_us:
        opts = replace(base.at(d, base.ab.rate_gbps), hosts=ranks_per_cluster).validated()
        with mpi.emulator(opts, name=name) as emu:
            records += osu_once(emu, bench, sizes, ranks_per_cluster, **kw)
    return records
