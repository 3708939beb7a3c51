"""longhaul.mpi's hierarchical collectives return the same buffers as MPI's built-ins (real
Open MPI, 2..8 ranks on this machine, random cluster maps, datatypes, ops, counts and roots)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROG = Path(__file__).with_name("mpi_progs") / "hier_vs_builtin.py"
MPIRUN = shutil.which("mpirun")

pytestmark = pytest.mark.skipif(MPIRUN is None, reason="mpirun not installed (Debian package openmpi-bin)")


def mpirun(n: int, *args: str) -> subprocess.CompletedProcess:
    cmd = [MPIRUN, "--oversubscribe", "-n", str(n), sys.executable, str(PROG), *args]
    if Path("/proc/self").exists() and __import__("os").geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("ranks,seed", [(2, 11), (3, 12), (4, 13), (5, 14), (6, 15), (7, 16), (8, 17)])
def test_hierarchical_collectives_match_builtins(ranks, seed):
    proc = mpirun(ranks, str(seed), "12")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"OK 12 cases on {ranks} ranks" in proc.stdout


def test_cluster_map_must_cover_every_rank():
    # In a child process: MPI_Init inside pytest would leave OMPI_* variables that break every
    # later mpirun the suite starts.
    code = ("from mpi4py import MPI\n"
            "from longhaul.mpi import cluster_of_ranks\n"
            "try:\n    cluster_of_ranks(MPI.COMM_SELF, cluster_map=[0, 1])\n"
            "except ValueError as e:\n    print('refused:', e)\n"
            "print(cluster_of_ranks(MPI.COMM_SELF, cluster_map=['site-b']))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "refused: cluster_map has 2 entries for 1 ranks" in proc.stdout, proc.stderr
    assert proc.stdout.strip().endswith("[0]")


def test_cluster_from_environment_and_pattern(monkeypatch):
    from longhaul.mpi.topology import local_cluster_label

    monkeypatch.setenv("LONGHAUL_CLUSTER", "b")
    assert local_cluster_label() == "b"
    monkeypatch.delenv("LONGHAUL_CLUSTER")
    assert local_cluster_label(r"^(site-[ab])-node\d+$", hostname="site-a-node07") == "site-a"
    with pytest.raises(ValueError, match="does not match"):
        local_cluster_label(r"^(site-[ab])-node\d+$", hostname="login1")
