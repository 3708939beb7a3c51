"""The emulator watches its data plane: killed or stopped in the middle of a run, the command stops at
once, says so in one line, tears everything down, stores nothing and exits 2. Needs root."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_emu_helpers import ENV, needs_root, netns_and_links

pytestmark = [pytest.mark.root, needs_root]


def _dataplane_pid(name: str, timeout_s: float = 30) -> int:
    """The data plane's pid, once the run is up (its hosts have their route across the link)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            st = json.loads(Path(f"/run/longhaul-emu/{name}/state.json").read_text())
            if st.get("dataplane_pid") and "10.77.2.0/24" in subprocess.run(
                    ["ip", "-n", f"{name}-a0", "route"], capture_output=True, text=True).stdout:
                return st["dataplane_pid"]
        except (OSError, ValueError):
            pass
        time.sleep(0.1)
    raise AssertionError(f"emulator {name} never came up")


def _start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "longhaul.cli", "emu", *args], env=ENV, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.parametrize("how, sig", [("died", signal.SIGKILL), ("stalled", signal.SIGSTOP)])
def test_emu_run_stops_when_its_data_plane_dies_or_stalls(how, sig, leaves_nothing):
    name = f"lhw{how[:4]}"
    ctl = _start("run", "--name", name, "--timeout-s", "120", "--", "A:", "sleep", "100")
    try:
        pid = _dataplane_pid(name)
        os.kill(pid, sig)
        t0 = time.monotonic()
        _out, err = ctl.communicate(timeout=60)
    finally:
        ctl.kill()
    assert ctl.returncode == 2, err
    assert err.count("\n") == 1 and err.startswith(
        f"longhaul: error: the emulator's data plane (pid {pid}) {how} during the run"), err
    assert "Traceback" not in err and time.monotonic() - t0 < 30   # not the --timeout-s or the sleep
    assert name not in netns_and_links()[0] and not Path(f"/run/longhaul-emu/{name}").exists()


def test_a_data_plane_that_dies_while_the_hosts_are_set_up_is_one_line(tmp_path, leaves_nothing):
    # It said ready and went, taking its TUN device: the next `ip ... link set wan0 up` failed, and that
    # was a CommandFailed traceback (exit 1) instead of the death (CI on 93ed415 caught the real data
    # plane killed between the two sides' set-up).
    fake = tmp_path / "fakewan"
    fake.write_text("#!/bin/sh\necho ready\nexit 0\n")
    fake.chmod(0o755)
    p = subprocess.run([sys.executable, "-m", "longhaul.cli", "emu", "run", "--name", "lhwsetup", "--", "A: true"],
                       capture_output=True, text=True, timeout=60, env={**ENV, "LONGHAUL_WAN": str(fake)})
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and p.stderr.startswith(
        "longhaul: error: the emulator's data plane (pid ") and "died during the run (it exited with status 0)" in \
        p.stderr and "Traceback" not in p.stderr, p.stderr
    assert "lhwsetup" not in netns_and_links()[0] and not Path("/run/longhaul-emu/lhwsetup").exists()


def test_bench_tcp_whose_data_plane_dies_stores_nothing(tmp_path, leaves_nothing):
    store = tmp_path / "store"
    ctl = _start("bench", "tcp", "--name", "lhwbench", "--delay-us", "1000", "--rate-gbps", "1",
                 "--duration-s", "20", "--store", str(store))
    try:
        pid = _dataplane_pid("lhwbench")
        time.sleep(1.0)   # traffic is flowing
        os.kill(pid, signal.SIGKILL)
        _out, err = ctl.communicate(timeout=60)
    finally:
        ctl.kill()
    assert ctl.returncode == 2, err
    assert err.count("\n") == 1 and f"data plane (pid {pid}) died" in err and "nothing was stored" in err
    assert not list(store.rglob("*.parquet"))
    assert "lhwbench" not in netns_and_links()[0]


def test_emu_mpi_run_whose_data_plane_dies_stops_and_leaves_no_rank(leaves_nothing):
    ctl = _start("mpi", "run", "--name", "lhwmpi", "--", "sleep", "100")
    try:
        pid = _dataplane_pid("lhwmpi")
        time.sleep(2.0)   # mpirun has started the ranks
        os.kill(pid, signal.SIGKILL)
        _out, err = ctl.communicate(timeout=60)
    finally:
        ctl.kill()
    assert ctl.returncode == 2, err
    assert err.splitlines()[-1].startswith(f"longhaul: error: the emulator's data plane (pid {pid}) died"), err
    assert "lhwmpi" not in netns_and_links()[0]
    ranks = subprocess.run(["pgrep", "-f", "^sleep 100$"], capture_output=True, text=True).stdout.split()
    assert not [r for r in ranks if Path(f"/proc/{r}/ns/net").exists()
                and os.readlink(f"/proc/{r}/ns/net") != os.readlink("/proc/self/ns/net")]
