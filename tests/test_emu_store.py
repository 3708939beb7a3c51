"""Emulated benchmarks land in the same results store as the simulator's (source = emu)."""

from __future__ import annotations

import json
import os

import pytest

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/net/tun"),
                                reason="the emulator needs root and /dev/net/tun")


def test_bench_ping_is_saved_with_its_label(cli, tmp_path):
    store = tmp_path / "store"
    out = cli("emu", "bench", "ping", "--delay-us", "100", "--count", "50", "--store", str(store), "--label", "lab-a",
              "--format", "json", check=True)
    assert json.loads(out.stdout)[0]["rtt_p50_us"] > 200.0  # 2 x 100 us one way, plus the hosts
    runs = json.loads(cli("results", "ls", "--store", str(store), "--format", "json", check=True).stdout)
    assert len(runs) == 1 and runs[0]["source"] == "emu" and runs[0]["label"] == "lab-a"
    cli("emu", "bench", "ping", "--delay-us", "0", "--count", "20", "--store", str(store), "--no-store", check=True)
    assert len(json.loads(cli("results", "ls", "--store", str(store), "--format", "json", check=True).stdout)) == 1
