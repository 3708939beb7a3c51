#!/usr/bin/env python3
"""Benchmark of real MPI through the emulator (not a test), Open MPI 4.1, one rank per host:

1. latency at 0 delay: across the emulated link (A0 <-> B0) vs directly over veth + bridge
   (A0 <-> A1, same cluster: no data plane), and what mpi4py adds (the same ping-pong in C,
   bench/emu_mpi_pingpong.c, built with mpicc);
2. bandwidth (osu_bw, window 64) at 1 and 10 ms through the emulator at 8 Gb/s, side by side
   with the simulator's MPI-over-TCP model on this machine's stack, calibrated from 0-delay
   emulator runs first (see longhaul.compare.mpi).

Run as root after `source scripts/bootstrap.sh`:
    .venv/bin/python bench/emu_mpi_bench.py [--format table|csv|json]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))

from longhaul.compare.mpi import compare_mpi, side_by_side  # noqa: E402
from longhaul.emu import mpi, system  # noqa: E402
from longhaul.emu.mpi_bench import OSU_PROGRAM  # noqa: E402
from longhaul.emu.options import LinkOptions  # noqa: E402
from longhaul.ingest import osu as osu_parser  # noqa: E402
from longhaul.output import emit  # noqa: E402

LAT_SIZES = (8, 1024, 65536)
LAT_ITERS, LAT_WARMUP = 2000, 200
LAT_REPEATS = 3  # the least of 3 launches: single runs vary by tens of us on this 2-vCPU VM


def _lat(emu, argv: list[str]) -> float:
    runs = [mpi.run(emu, mpi.MpiJob(argv=argv, ranks_per_cluster=2))["stdout"] for _ in range(LAT_REPEATS)]
    return min(osu_parser.parse(out, "latency")[0]["lat_us"] for out in runs)


def latency_rows(c_binary: str | None) -> list[dict]:
    rows = []
    with mpi.emulator(LinkOptions.symmetric(delay_us=0, hosts=2)) as emu:
        for size in LAT_SIZES:
            common = [str(size)]
            py = [sys.executable, OSU_PROGRAM, "latency", "--sizes", str(size), "--iterations", str(LAT_ITERS),
                  "--warmup", str(LAT_WARMUP)]
            row = {"size_bytes": size, "emu_lat_us": _lat(emu, py), "veth_lat_us": _lat(emu, [*py, "--within"])}
            row["emu_added_us"] = round(row["emu_lat_us"] - row["veth_lat_us"], 2)
            if c_binary:
                row["c_emu_lat_us"] = _lat(emu, [c_binary, *common, str(LAT_ITERS), str(LAT_WARMUP)])
                row["mpi4py_added_us"] = round(row["emu_lat_us"] - row["c_emu_lat_us"], 2)
            rows.append(row)
    return rows


def build_c(tmp: Path) -> str | None:
    if shutil.which("mpicc") is None:
        return None
    out = tmp / "emu_mpi_pingpong"
    subprocess.run(["mpicc", "-O2", "-o", str(out), str(HERE / "emu_mpi_pingpong.c")], check=True)
    return str(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--format", default="table", choices=["table", "csv", "json"])
    args = ap.parse_args()
    system.require_privileges()
    with tempfile.TemporaryDirectory() as tmp:
        lat = latency_rows(build_c(Path(tmp)))
    emit(lat, args.format, title="MPI latency at 0 delay: emulator vs veth (same cluster), mpi4py vs C")
    bw = side_by_side(compare_mpi("bw", [64 << 10, 1 << 20, 4 << 20], [1000, 10_000]))
    emit(bw, args.format, ["delay_us", "size_bytes", "sim_bw_MBps", "emu_bw_MBps", "rel_diff"],
         title="osu_bw through the emulator (8 Gb/s) vs the simulator (s1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
