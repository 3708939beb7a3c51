"""The OSU micro-benchmarks' printed layout, shared by the mpi4py port that runs in the emulator
(``longhaul.emu.osu_mpi``) and ``longhaul sim mpi osu --format osu``, and read back by
``longhaul.ingest.osu``.

The layout follows OSU's c/util/osu_util.c (print_header, print_data): a ``# OSU MPI ... Test``
title, comment lines, a ``# Size ...`` column header, then one row per size: the size left-aligned
in 10 characters, each value right-aligned in 18 with 2 decimals (``%-10d%18.2f``); osu_mbw_mr
adds messages per second, the collectives (with ``-f``) the fastest and slowest rank's latency
and the iterations. Bandwidths are MB/s with MB = 10^6 bytes, as OSU's. Nothing here imports
MPI: mpi4py initialises MPI on import.

Where OSU's title ends in its version (``# OSU MPI Latency Test v7.3``: ``"# " BENCHMARK " v"
PACKAGE_VERSION``), this text says what made it instead: ``(longhaul 0.1.0 model of OMB)`` from the
simulator, ``(longhaul 0.1.0 mpi4py port of OMB)`` from the emulator's port. It is not OMB output, so
it claims no OMB version; ``longhaul ingest --tool osu`` reads it as the title's version.
"""

from __future__ import annotations

from longhaul import __version__

#: benchmark -> (title, point-to-point value columns; None for the collectives' COLL_COLUMNS)
TITLES = {
    "latency": ("OSU MPI Latency Test", ("Latency (us)",)),
    "bw": ("OSU MPI Bandwidth Test", ("Bandwidth (MB/s)",)),
    "bibw": ("OSU MPI Bi-Directional Bandwidth Test", ("Bandwidth (MB/s)",)),
    "mbw_mr": ("OSU MPI Multiple Bandwidth / Message Rate Test", ("MB/s", "Messages/s")),
    "bcast": ("OSU MPI Broadcast Latency Test", None),
    "scatter": ("OSU MPI Scatter Latency Test", None),
    "allreduce": ("OSU MPI Allreduce Latency Test", None),
    "alltoall": ("OSU MPI All-to-All Personalized Exchange Latency Test", None),
}
#: The collectives' value columns (with -f); their iteration count follows in 12 characters.
COLL_COLUMNS = ("Avg Latency(us)", "Min Latency(us)", "Max Latency(us)")
#: The benchmarks the mpi4py port (longhaul.emu.osu_mpi) implements; the simulator has scatter too.
PORTED = ("allreduce", "alltoall", "bcast", "bibw", "bw", "latency", "mbw_mr")


def version(made_by: str = "model") -> str:
    """What stands for OSU's ``vX.Y`` after the title: ``(longhaul <version> <made_by> of OMB)``."""
    return f"(longhaul {__version__} {made_by} of OMB)"


def header(bench: str, comments: list[str], pairs: int | None = None, window: int | None = None,
           made_by: str = "model") -> list[str]:
    """The title with :func:`version`, ``comments`` (each made a '#' line), osu_mbw_mr's pairs and
    window, the column header. ``made_by``: ``model`` (the simulator) or ``mpi4py port`` (the emulator)."""
    title, columns = TITLES[bench]
    lines = [f"# {title} {version(made_by)}", *(f"# {c}" for c in comments)]
    if bench == "mbw_mr":
        lines.append(f"# [ pairs: {pairs} ] [ window size: {window} ]")
    # As the rows: "# Size" in 10 characters, each column name right-aligned in 18 (%-10s%18s).
    cells = "".join(f"{c:>18}" for c in columns or COLL_COLUMNS) + ("" if columns else f"{'Iterations':>12}")
    lines.append(f"{'# Size':<10}{cells}")
    return lines


def row(size: int, *values: float, iterations: int | None = None) -> str:
    """One result row: the size, then each value (%18.2f), then the collectives' iterations."""
    text = f"{size:<10d}" + "".join(f" {v:17.2f}" for v in values)
    return text + (f" {iterations:11d}" if iterations is not None else "")
