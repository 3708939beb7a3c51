"""`longhaul compare tcp`'s bad input, refused before the emulator starts (no root or network
namespaces needed: the emulator is replaced by one that fails the test if it is reached)."""

from __future__ import annotations

import pytest

from longhaul.cli import main


@pytest.fixture
def no_emulator(monkeypatch):
    from longhaul.emu import bench

    def reached(**kwargs):
        raise AssertionError(f"the emulator was started with {kwargs}")

    monkeypatch.setattr(bench, "tcp", reached)


@pytest.mark.parametrize("cc, message", [
    ("", "--cc: empty list (give names like reno,cubic)"),
    (" ", "--cc: empty list (give names like reno,cubic)"),
    ("reno,,cubic", "--cc: empty item in 'reno,,cubic' (each item is a congestion control name)"),
])
def test_an_empty_congestion_control_list_or_item_is_one_line(no_emulator, capsys, cc, message):
    assert main(["compare", "tcp", "--cc", cc]) == 2
    assert capsys.readouterr().err == f"longhaul: error: {message}\n"
