"""The OSU micro-benchmarks' printed layout, shared by the mpi4py port that runs in the emulator
(``longhaul.emu.osu_mpi``) and ``longhaul sim mpi osu --format osu``, and read back by
``longhaul.ingest.osu``.

The layout follows OSU's c/util/osu_util.c (print_header, print_data): a ``# OSU MPI ... Test``
title, comment lines, a ``# Size ...`` column header, then one row per size: the size left-aligned
in 10 characters, each value right-aligned in 18 with 2 decimals (``%-10d%18.2f``); osu_mbw_mr
adds messages per second, the collectives (with ``-f``) the fastest and slowest rank's latency
and the iterations. Bandwidths are MB/s with MB = 10^6 bytes, as OSU's. Nothing here imports
MPI: mpi4py initialises MPI on import.
"""

from __future__ import annotations

#: benchmark -> (title, point-to-point column header; None for the collectives' COLL_HEADER)
TITLES = {
    "latency": ("OSU MPI Latency Test", "Latency (us)"),
    "bw": ("OSU MPI Bandwidth Test", "Bandwidth (MB/s)"),
    "bibw": ("OSU MPI Bi-Directional Bandwidth Test", "Bandwidth (MB/s)"),
    "mbw_mr": ("OSU MPI Multiple Bandwidth / Message Rate Test", "MB/s        Messages/s"),
    "bcast": ("OSU MPI Broadcast Latency Test", None),
    "scatter": ("OSU MPI Scatter Latency Test", None),
    "allreduce": ("OSU MPI Allreduce Latency Test", None),
    "alltoall": ("OSU MPI All-to-All Personalized Exchange Latency Test", None),
}
COLL_HEADER = "Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations"
#: The benchmarks the mpi4py port (longhaul.emu.osu_mpi) implements; the simulator has scatter too.
PORTED = ("allreduce", "alltoall", "bcast", "bibw", "bw", "latency", "mbw_mr")


def header(bench: str, comments: list[str], pairs: int | None = None, window: int | None = None) -> list[str]:
    """The title, ``comments`` (each made a '#' line), osu_mbw_mr's pairs and window, the column header."""
    title, columns = TITLES[bench]
    lines = [f"# {title}", *(f"# {c}" for c in comments)]
    if bench == "mbw_mr":
        lines.append(f"# [ pairs: {pairs} ] [ window size: {window} ]")
    lines.append(f"# Size {columns or COLL_HEADER}")
    return lines


def row(size: int, *values: float, iterations: int | None = None) -> str:
    """One result row: the size, then each value (%18.2f), then the collectives' iterations."""
    text = f"{size:<10d}" + "".join(f" {v:17.2f}" for v in values)
    return text + (f" {iterations:11d}" if iterations is not None else "")
