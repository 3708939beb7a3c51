"""`longhaul emu mpi run --env/--mca`: a --env variable reaches the MPI ranks only, never the
launcher (ip, mpirun, the agent, orted; MPICH's rank wrapper), so `--env PATH=/nonexist` or
`--env LD_PRELOAD=...` cannot break the launch; a launcher that cannot start is one line, exit 2;
an --mca or --env NAME that is not a name is refused before any namespace exists.
Needs root, /dev/net/tun and Open MPI; skipped otherwise."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from longhaul.emu.mpi import LIBRARIES as LAUNCHERS
from test_emu_helpers import ENV, ROOT, cli, needs_root

pytestmark = [pytest.mark.root, needs_root,
              pytest.mark.skipif(shutil.which("mpirun.openmpi") is None,
                                 reason="needs Open MPI's mpirun.openmpi (Debian package openmpi-bin)")]

MPICH = pytest.mark.skipif(shutil.which("mpiexec.hydra") is None,
                           reason="needs MPICH's mpiexec.hydra (Debian package mpich)")
MPICH_OFI = pytest.mark.skipif(not Path(LAUNCHERS["mpich-ofi"][0]).exists(),
                               reason="needs MPICH ch4:ofi in target/mpich-ofi (scripts/bootstrap.sh installs it)")
LIBRARIES = ["openmpi", pytest.param("mpich", marks=MPICH), pytest.param("mpich-ofi", marks=MPICH_OFI)]
BAD_SO = "/nonexistent/longhaul-test-preload.so"


def no_mpi_process_left() -> None:
    # Live launcher processes only (an exited one may be a zombie for a moment until reaped).
    for _ in range(10):
        ps = subprocess.run(["ps", "-eo", "stat=,args="], capture_output=True, text=True).stdout
        left = [ln for ln in ps.splitlines() if not ln.startswith("Z")
                and any(w in ln for w in ("mpirun.openmpi", "orted", "mpiexec.hydra", "hydra_pmi_proxy"))]
        if not left:
            return
        time.sleep(0.5)
    assert not left, left


@pytest.mark.parametrize("library", LIBRARIES)
def test_env_path_reaches_the_ranks_not_the_launcher(library, leaves_nothing):
    # Was: FileNotFoundError: 'ip' (a traceback, exit 1): --env PATH was the launcher's PATH too.
    p = cli("emu", "mpi", "run", "--mpi", library, "--env", "PATH=/nonexist", "--env", "LH_TEST=a b,c='d'",
            "--env", "PYTHONPATH=/nonexistent/pp", "--", "/bin/sh", "-c",
            'echo "rank sees PATH=[$PATH] LH_TEST=[$LH_TEST] PYTHONPATH=[$PYTHONPATH]"')
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    seen = [ln for ln in p.stdout.splitlines() if ln.startswith("rank sees")]
    assert len(seen) == 2, p.stdout
    for line in seen:
        # Open MPI puts its own bin directory before the rank's PATH; the rank's is there, the launcher's is not.
        path = line.split("PATH=[", 1)[1].split("]", 1)[0].split(":")
        assert path[-1] == "/nonexist" and len(path) <= 2, line
        assert "LH_TEST=[a b,c='d']" in line, line
        # A PYTHONPATH of the job's still has this checkout's python/ first (docs/reference/cli/emu-mpi.md).
        assert f"PYTHONPATH=[{ROOT / 'python'}:/nonexistent/pp]" in line, line
    no_mpi_process_left()


@pytest.mark.parametrize("library", LIBRARIES)
def test_env_ld_preload_is_loaded_by_the_ranks_only(library, leaves_nothing):
    # The dynamic loader warns once for every process started with a preload it cannot open: two
    # ranks, two warnings. Before, ip, mpirun, the agent's shells and every orted warned too.
    p = cli("emu", "mpi", "run", "--format", "json", "--mpi", library, "--env", f"LD_PRELOAD={BAD_SO}",
            "--", "/bin/true")
    assert p.returncode == 0, p.stderr
    rec = json.loads(p.stdout)[0]
    warnings = [ln for ln in (rec["stderr"] + p.stderr).splitlines() if BAD_SO in ln]
    assert len(warnings) == rec["ranks"] == 2, rec["stderr"]
    no_mpi_process_left()


def test_a_launcher_that_cannot_start_is_one_line_exit_2(tmp_path, leaves_nothing):
    # A launcher binary that disappears between the check and the start (here: one that is not an
    # executable at all): UserError, not an OSError traceback; the emulator is torn down.
    code = f"""
import sys
from longhaul.cli import main
from longhaul.emu import mpi
real = mpi.openmpi_command
mpi.openmpi_command = lambda *a, **k: [{str(tmp_path / 'no-such-launcher')!r}, *real(*a, **k)[1:]]
sys.argv = ["longhaul", "emu", "mpi", "run", "--", "/bin/true"]
sys.exit(main())
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=120)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert lines[0].startswith("longhaul: error: cannot start the MPI launcher") and "no-such-launcher" in lines[0], lines
    no_mpi_process_left()


@pytest.mark.parametrize("args, words", [
    # Was: built the emulator, then "mpirun.openmpi exit status 213".
    (["--mca", "a b=1"], "--mca: 'a b' is not an MCA parameter name"),
    (["--mca", "btl.tcp=1"], "--mca: 'btl.tcp' is not an MCA parameter name"),
    (["--mca", "btl-tcp=1"], "--mca: 'btl-tcp' is not an MCA parameter name"),
    (["--env", "A B=1"], "--env: 'A B' is not an environment variable name"),
    (["--env", "1X=1"], "--env: '1X' is not an environment variable name"),
    (["--env", "A-B=1"], "--env: 'A-B' is not an environment variable name"),
])
@pytest.mark.parametrize("verb", [["run"], ["osu", "--bench", "latency", "--sizes", "1"]])
def test_a_bad_name_is_refused_before_any_namespace(verb, args, words, leaves_nothing):
    p = cli("emu", "mpi", *verb, *args, *(["--", "/bin/true"] if verb == ["run"] else []))
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and words in lines[0] and "Traceback" not in p.stderr, p.stderr
    assert "letters, digits and underscores" in lines[0], lines[0]  # what a valid name is
    # Refused by the option check: no emulator was built, so no MPI launcher ran.
    assert "exit status" not in lines[0]
