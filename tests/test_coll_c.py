"""liblonghaul_coll (C): built with the Makefile, linked by a C program that checks every
LH_ collective against MPI's own on 2..8 ranks (real Open MPI), and through the emulator, where
its broadcast must cross the long-haul link once."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "c" / "longhaul_coll"
CHECK = Path(__file__).with_name("mpi_progs") / "coll_check.c"
MPIRUN, MPICC = shutil.which("mpirun"), shutil.which("mpicc")

pytestmark = pytest.mark.skipif(MPIRUN is None or MPICC is None,
                                reason="needs mpirun and mpicc (Debian packages openmpi-bin, libopenmpi-dev)")


@pytest.fixture(scope="module")
def check_prog(tmp_path_factory) -> Path:
    build = tmp_path_factory.mktemp("lhcoll")
    subprocess.run(["make", "-s", "-C", str(SRC), f"BUILD={build}"], check=True, capture_output=True, text=True)
    assert (build / "liblonghaul_coll.so").stat().st_size > 0 and (build / "longhaul_coll.h").exists()
    exe = build / "coll_check"
    subprocess.run([MPICC, "-O2", "-Wall", "-Werror", f"-I{build}", "-o", str(exe), str(CHECK), f"-L{build}",
                    "-llonghaul_coll", f"-Wl,-rpath,{build}"], check=True, capture_output=True, text=True)
    return exe


def mpirun(n: int, *args: str, chunk: str | None = None) -> subprocess.CompletedProcess:
    cmd = [MPIRUN, "--oversubscribe", "-n", str(n), *(["-x", "LONGHAUL_WAN_CHUNK_BYTES"] if chunk else []), *args]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    env = {**os.environ, **({"LONGHAUL_WAN_CHUNK_BYTES": chunk} if chunk else {})}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


# chunk: LH_Bcast's WAN pieces (default 32 KiB: only the 70,000-element cases are cut; 40 bytes: most are)
@pytest.mark.parametrize("ranks,seed,chunk", [(2, 21, None), (3, 22, "40"), (4, 23, None), (5, 24, "40"), (8, 25, None)])
def test_lh_collectives_match_mpi_builtins(check_prog, ranks, seed, chunk):
    proc = mpirun(ranks, str(check_prog), str(seed), "28", chunk=chunk)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"OK 28 cases on {ranks} ranks" in proc.stdout


@pytest.mark.emu
@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/net/tun"), reason="the emulator needs root and /dev/net/tun")
def test_lh_bcast_crosses_the_emulated_link_once(check_prog):
    # Cyclic placement (a, b, a, b): the b ranks get the 1 MiB from their leader, not from rank 0's cluster.
    size = 1 << 20
    p = subprocess.run([sys.executable, "-m", "longhaul.cli", "emu", "mpi", "run", "--delay-us", "100",
                        "--ranks-per-cluster", "2", "--placement", "cyclic", "--format", "json", "--",
                        str(check_prog), "wan-bcast", str(size), "lh"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    rec = json.loads(p.stdout)[0]
    assert "over 2 clusters" in rec["stdout"], rec["stdout"]     # discovered from LONGHAUL_CLUSTER
    assert size <= rec["wan_bytes_ab"] <= size * 1.08 + 64_000, rec["wan_bytes_ab"]
