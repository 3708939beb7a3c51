"""The study's emulated part: real TCP and ping through the emulator, saved and then cached."""

from __future__ import annotations

import os

import pytest

from longhaul.cli import main

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/net/tun"),
                                reason="the emulator needs root and /dev/net/tun")


def test_emulated_part_runs_then_is_cached(tmp_path, capsys):
    args = ["study", "--quick", "--parts", "emulated", "--store", str(tmp_path / "r")]
    assert main([*args, "--out", str(tmp_path / "o1")]) == 0
    first = capsys.readouterr().out
    assert "**emulated**: ok — 3 computed" in first
    assert "4 TCP streams" in first or "four move" in first
    # 4 MiB over a 20 ms round trip allows ~210 MB/s, more than the 1 Gb/s link: not a cap here.
    assert "stock buffers are enough" in first and "capped near" not in first
    html = (tmp_path / "o1" / "report.html").read_text()
    assert "Emulated TCP throughput" in html and "rtt_p50_us" in html
    assert main([*args, "--out", str(tmp_path / "o2")]) == 0
    assert "0 computed, 3 cached" in capsys.readouterr().out
