"""Shared helpers of the tests/test_emu_*.py files: run the CLI as a user would, skip when
the machine cannot host the emulator, and check that nothing is left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", "")}


def cli(*args: str, timeout: float = 120, input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "longhaul.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=ENV, input=input)


def cli_json(*args: str, timeout: float = 120) -> list[dict]:
    args = list(args)
    at = args.index("--") if "--" in args else len(args)  # options go before the command
    p = cli(*args[:at], "--format", "json", *args[at:], timeout=timeout)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    if not os.path.exists("/dev/net/tun"):
        return "needs /dev/net/tun"
    if not (ROOT / "target" / "release" / "longhaul-wan").exists() and not os.environ.get("LONGHAUL_WAN"):
        return "needs the data plane: cargo build --release -p longhaul-wan"
    return None


needs_root = pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")


def netns_and_links() -> tuple[str, str]:
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout
    return ns, links
