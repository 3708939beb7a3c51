"""Shared helpers: run the ``longhaul`` command as a user would (a subprocess of the installed
entry point) and capture what it prints."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from test_emu_helpers import netns_and_links

# CI sees the same examples every run (a failure reproduces; no flaky draws); locally, explore.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

ROOT = Path(__file__).resolve().parents[1]

# A shell without job control starts a background command with SIGINT ignored, and children
# inherit that: the longhaul processes the interrupt tests start would ignore Ctrl-C. A handler
# of pytest's own is reset to the default in every child, however pytest was launched.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(items):
    """Every test of the emulator's modules is an `emu` test: scripts/test.sh runs them on their own,
    one at a time, after the rest (which run on parallel workers), because they time real traffic
    and a busy CPU moves what they measure."""
    for item in items:
        name = item.path.name
        if name.startswith("test_emu_") or name == "test_compare_tcp.py":
            item.add_marker(pytest.mark.emu)


def longhaul_exe() -> list[str]:
    exe = shutil.which("longhaul") or str(Path(sys.executable).with_name("longhaul"))
    return [exe]


@pytest.fixture
def cli():
    def run(*args: str, check: bool = False, timeout: float = 300, cwd: str | os.PathLike | None = None):
        proc = subprocess.run([*longhaul_exe(), *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)
        if check and proc.returncode != 0:
            raise AssertionError(f"longhaul {' '.join(args)} -> {proc.returncode}\n{proc.stderr}")
        return proc

    return run


@pytest.fixture(autouse=True, scope="session")
def _private_results_store(tmp_path_factory):
    """Runs that save to the default store write into a temporary one, never into the checkout."""
    old = os.environ.get("LONGHAUL_STORE")
    os.environ["LONGHAUL_STORE"] = str(tmp_path_factory.mktemp("store"))
    yield
    if old is None:
        os.environ.pop("LONGHAUL_STORE", None)
    else:
        os.environ["LONGHAUL_STORE"] = old


@pytest.fixture(autouse=True)
def _no_mpi_in_this_process():
    """Importing mpi4py.MPI initialises MPI in the pytest process; Open MPI then sets OMPI_*
    variables in the C environment, and every later `mpirun` the suite starts fails silently.
    Fail the test that does it, so the cause is found where it is."""
    import sys

    yield
    assert "mpi4py.MPI" not in sys.modules, "this test initialised MPI in the pytest process: run MPI in a subprocess"


@pytest.fixture
def leaves_nothing():
    """Fail the test if it leaves a namespace or a link behind (the emulator's tests)."""
    before = netns_and_links()
    yield
    assert netns_and_links() == before, "namespaces or links left behind"


NO_IPERF3 = pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 not installed (Debian package iperf3)")


@contextlib.contextmanager
def iperf3_server() -> Iterator[str]:
    """A one-shot iperf3 server on 127.0.0.1 and a free port (yielded): it ends after its one
    client; if no client came, it is killed, so no test leaves one listening."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    server = subprocess.Popen(["iperf3", "-s", "-B", "127.0.0.1", "-p", port, "-1"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        yield port
    finally:
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
