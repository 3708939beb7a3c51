"""Ctrl-C during one long simulated point: the core runs with the GIL released, and a single
point (osu_bw with 1 GiB messages at 100 ms) takes minutes, so SIGINT must cancel the run in the
core instead of waiting for it. Exit 130 within seconds, one line, no traceback; from the Python
API, KeyboardInterrupt, and the next run in the same process works."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from conftest import longhaul_exe

#: Long enough that the run is still going when the signal arrives (minutes of simulation).
LONG = ["--bench", "bw", "--sizes", "1G", "--delay-us", "100000"]


def _interrupt(proc: subprocess.Popen, started: float) -> tuple[float, str, str]:
    """SIGINT once the process has been running `started` seconds more; how long it took to end,
    and what it printed."""
    time.sleep(started)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    t = time.monotonic()
    try:
        out, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("still running 20 s after SIGINT")
    return time.monotonic() - t, out, err


@pytest.mark.parametrize("args", [["sim", "mpi", "osu", *LONG],
                                  ["sim", "verbs", "--sizes", "8M", "--iterations", "100000000"]],
                         ids=["sim-mpi-osu", "sim-verbs"])
def test_ctrl_c_cancels_a_long_point(args):
    proc = subprocess.Popen([*longhaul_exe(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    took, _, err = _interrupt(proc, 2.0)
    assert proc.returncode == 130, err
    assert took < 5, f"took {took:.1f} s to stop"
    assert "interrupted" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "re-run to resume" not in err  # a sim command keeps nothing to resume (sweep and study do)


SCRIPT = """
import sys
from longhaul.sim import mpi
long = mpi.scenario(osu={"bench": "bw", "size_bytes": 1 << 30}, delay_us=100000)
print("started", flush=True)
try:
    mpi.run(long)
except KeyboardInterrupt:
    print("interrupted", flush=True)
rec = mpi.run(mpi.scenario(osu={"bench": "latency", "size_bytes": 8}))
print("next run", rec["status"], flush=True)
"""


def test_python_api_raises_keyboard_interrupt_and_runs_again():
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "started"
    took, out, err = _interrupt(proc, 1.0)
    assert proc.returncode == 0, err
    assert took < 5, f"took {took:.1f} s to stop"
    assert "interrupted" in out and "next run ok" in out, (out, err)


def test_ctrl_c_while_the_commands_load_is_an_interrupt_not_a_traceback(monkeypatch, capsys):
    """The first ~0.2 s of every command import and parse; Ctrl-C there printed a traceback."""
    import longhaul.cli as cli

    def interrupted(command=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    assert cli.main(["sweep", "verbs"]) == 130
    assert capsys.readouterr().err == "longhaul: interrupted\n"
