"""`longhaul emu mpi` with real Open MPI: ranks land in both emulated clusters, rank-to-rank data
between clusters crosses the emulated link (its byte counters) and nothing else does; bad input
is one line, exit 2, nothing left behind; a killed controller leaves no MPI process. Needs root and Open MPI; skipped otherwise."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from longhaul.emu.mpi import LIBRARIES
from test_emu_helpers import ENV, cli, needs_root

PROG = str(Path(__file__).with_name("mpi_progs") / "emu_traffic.py")
MIB = 1 << 20

pytestmark = [pytest.mark.root, needs_root,
              pytest.mark.skipif(shutil.which("mpirun.openmpi") is None,
                                 reason="needs Open MPI's mpirun.openmpi (Debian package openmpi-bin)")]


def run_traffic(*options: str, cross: int, local: int) -> dict:
    p = cli("emu", "mpi", "run", "--format", "json", *options, "--", sys.executable, PROG, str(cross), str(local))
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)[0]


def ranks_seen(record: dict) -> dict[int, tuple[str, str]]:
    # mpirun forwards each rank's output separately, so lines of different ranks can run together
    # ("... cluster brank 3 host ..."): find the reports wherever they are.
    return {int(r): (host, cluster)
            for r, host, cluster in re.findall(r"rank (\d+) host (\S+?) cluster ([ab])", record["stdout"])}


def test_block_placement_cross_cluster_data_crosses_the_link_and_local_data_does_not(leaves_nothing):
    # 3 MiB A0 -> B0 across the link; 8 MiB inside each cluster (A0 -> A1, B0 -> B1) over the bridges.
    rec = run_traffic("--delay-us", "1000", "--ranks-per-cluster", "2", cross=3 * MIB, local=8 * MIB)
    seen = ranks_seen(rec)
    assert [seen[r][1] for r in range(4)] == ["a", "a", "b", "b"], seen
    assert len({host for host, _ in seen.values()}) == 4  # one emulated host (own hostname) per rank
    # A->B: the 3 MiB plus TCP/IP headers (~3%) and MPI wire-up/barrier (a few kB); none of the 8 MiB.
    assert 3 * MIB <= rec["wan_bytes_ab"] <= 3 * MIB * 1.08 + 64_000, rec["wan_bytes_ab"]
    # B->A: acknowledgements and control only.
    assert rec["wan_bytes_ba"] < 0.05 * 3 * MIB, rec["wan_bytes_ba"]


def test_cyclic_placement_alternates_clusters(leaves_nothing):
    rec = run_traffic("--ranks-per-cluster", "2", "--placement", "cyclic", cross=MIB, local=MIB)
    assert [c for _, c in (ranks_seen(rec)[r] for r in range(4))] == ["a", "b", "a", "b"]
    assert MIB <= rec["wan_bytes_ab"] <= MIB * 1.08 + 64_000, rec["wan_bytes_ab"]


@pytest.mark.parametrize("args, words", [
    (["--", "/nonexistent/prog"], "not found"),
    (["--", sys.executable, "-c", "raise SystemExit(3)"], "exited with code 3"),
    # The program is named by what runs in the interpreter, not by the interpreter.
    (["--", sys.executable, PROG, "notanumber", "1"], f"MPI program '{Path(PROG).name}' failed"),
    (["--", sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"], "signal 11"),
    (["--hosts", "2", "--ranks-per-cluster", "3", "--", sys.executable, PROG, "1", "1"], "--ranks-per-cluster"),
    (["--ranks-per-cluster", "17", "--", sys.executable, PROG, "1", "1"], "--ranks-per-cluster"),
    (["--mca", "novalue", "--", sys.executable, PROG, "1", "1"], "--mca"),
])
def test_bad_input_is_one_line_exit_2_and_nothing_left(args, words, leaves_nothing):
    p = cli("emu", "mpi", "run", *args)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and words in lines[0] and "Traceback" not in p.stderr, p.stderr


@pytest.mark.parametrize("library, package", [("openmpi", "the Debian package openmpi-bin"),
                                              ("mpich", "the Debian package mpich")])
def test_mpi_library_not_installed_names_the_debian_package(library, package, tmp_path, leaves_nothing):
    # A PATH holding `ip` but no MPI launcher: the refusal comes before any namespace is made.
    (tmp_path / "ip").symlink_to(shutil.which("ip"))
    p = subprocess.run([sys.executable, "-m", "longhaul.cli", "emu", "mpi", "run", "--mpi", library, "--",
                        sys.executable, PROG, "1", "1"], capture_output=True, text=True,
                       env={**ENV, "PATH": str(tmp_path)}, timeout=60)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and f"install {package}" in lines[0], p.stderr


@pytest.mark.skipif(shutil.which("mpiexec.hydra") is None, reason="needs MPICH's mpiexec.hydra (Debian package mpich)")
def test_mpich_cross_cluster_data_crosses_the_link(leaves_nothing):
    # One rank per cluster: with more, MPICH 4.0/UCX sometimes hangs in MPI_Finalize at a
    # nonzero delay (docs/models/emulator.md, "Real MPI: limits").
    rec = run_traffic("--mpi", "mpich", "--delay-us", "1000", "--timeout-s", "60", cross=3 * MIB, local=0)
    assert [c for _, c in (ranks_seen(rec)[r] for r in range(2))] == ["a", "b"]
    assert 3 * MIB <= rec["wan_bytes_ab"] <= 3 * MIB * 1.08 + 64_000, rec["wan_bytes_ab"]
    assert rec["wan_bytes_ba"] < 0.05 * 3 * MIB, rec["wan_bytes_ba"]


@pytest.mark.skipif(not Path(LIBRARIES["mpich-ofi"][0]).exists(),
                    reason="needs MPICH ch4:ofi in target/mpich-ofi (scripts/bootstrap.sh installs it)")
def test_mpich_ofi_two_ranks_per_cluster_crosses_the_link_and_finishes(leaves_nothing):
    # Two ranks per cluster at 1 ms: where Debian's MPICH over UCX hangs in MPI_Finalize about
    # one run in three; over libfabric's tcp provider it ran 15 times of 15 (docs/models/emulator.md). Three runs
    # here, each bounded by --timeout-s (a hang would be exit 2).
    for _ in range(3):
        rec = run_traffic("--mpi", "mpich-ofi", "--delay-us", "1000", "--ranks-per-cluster", "2", "--timeout-s", "60",
                          cross=3 * MIB, local=8 * MIB)
        assert [c for _, c in (ranks_seen(rec)[r] for r in range(4))] == ["a", "a", "b", "b"]
        assert 3 * MIB <= rec["wan_bytes_ab"] <= 3 * MIB * 1.08 + 64_000, rec["wan_bytes_ab"]
        assert rec["wan_bytes_ba"] < 0.05 * 3 * MIB, rec["wan_bytes_ba"]


def test_killed_controller_leaves_no_mpi_process_or_namespace(leaves_nothing):
    # kill -9 of `longhaul emu mpi run` mid-job: its reaper removes the namespaces, and with them
    # mpirun (management namespace), the orted daemons and the ranks (host namespaces).
    name = "lhmpikill"
    ctl = subprocess.Popen([sys.executable, "-m", "longhaul.cli", "emu", "mpi", "run", "--name", name,
                            "--ranks-per-cluster", "2", "--", sys.executable, "-c",
                            "import time; from mpi4py import MPI; time.sleep(120)"],
                           env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    namespaces = [f"{name}-{s}{i}" for s in "ab" for i in range(2)] + [f"{name}-mg"]
    pids: set[int] = set()
    for _ in range(200):  # until every rank host runs something (bounded: 20 s)
        found = {ns: subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
                 for ns in namespaces}
        if all(found.values()):
            pids = {int(p) for v in found.values() for p in v}
            break
        time.sleep(0.1)
    ctl.kill()
    ctl.wait()
    assert pids, "the MPI job did not start"
    for _ in range(150):  # the reaper notices within a second; bounded at 15 s
        if not any(Path(f"/run/netns/{ns}").exists() for ns in namespaces) and not any(_alive(p) for p in pids):
            break
        time.sleep(0.1)
    assert not any(Path(f"/run/netns/{ns}").exists() for ns in namespaces)
    assert not any(_alive(p) for p in pids), "MPI processes survived the teardown"
    for _ in range(50):  # the reaper removes the session directories right after the namespaces
        if not _session_dirs(name):
            break
        time.sleep(0.1)
    assert not _session_dirs(name), "Open MPI session directories left in /tmp"


def _session_dirs(name: str) -> list[str]:
    """Open MPI's session directories of a run's hosts (ompi.NAME-a0.UID, ...)."""
    return glob.glob(os.path.join(tempfile.gettempdir(), f"ompi.{name}-*"))


@pytest.mark.parametrize("sig, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_job_stopped_by_a_signal_leaves_no_session_directory(sig, status, leaves_nothing):
    # Ctrl-C or SIGTERM mid-job: the orted daemons die with their namespaces, and the session
    # directories they made in /tmp (ompi.NAME-a0.0, ...) go with the run.
    name = f"lhsig{status}"
    ctl = subprocess.Popen([sys.executable, "-m", "longhaul.cli", "emu", "mpi", "run", "--name", name, "--",
                            "/bin/sleep", "60"], env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           # Ctrl-C reaches it as a user's would (a shell without job control ignores
                           # SIGINT in its children); the test process starts no threads of its own here.
                           text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # noqa: PLW1509
    for _ in range(200):  # until both hosts' daemons made theirs (bounded: 20 s)
        if len(_session_dirs(name)) == 2:
            break
        time.sleep(0.1)
    started = len(_session_dirs(name)) == 2
    ctl.send_signal(sig)
    _, err = ctl.communicate(timeout=60)
    assert started, "the MPI job did not start"
    assert ctl.returncode == status, err
    assert not _session_dirs(name), "Open MPI session directories left in /tmp"


def _alive(pid: int) -> bool:
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def test_compare_mpi_with_stack_says_the_costs_were_given_not_calibrated(leaves_nothing):
    # --stack skips the calibration; the table's note said "calibrated at 0 delay" all the same.
    p = cli("compare", "mpi", "--bench", "latency", "--sizes", "8", "--delay-us", "0", "--iterations", "10",
            "--stack", "3,0.4,10")
    assert p.returncode == 0, p.stderr
    assert "host stack given by --stack: 3.00 us/segment" in p.stdout and "calibrated" not in p.stdout, p.stdout
