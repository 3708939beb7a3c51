"""Bad input to `longhaul compare mpi` and `longhaul emu mpi` that is refused before any
emulator is built: one line naming the option and its valid range, exit 2. Needs no root."""

from __future__ import annotations

import pytest

from test_emu_helpers import cli


@pytest.mark.parametrize("args, words", [
    (["compare", "mpi", "--bench", "foo"], "--bench"),
    (["compare", "mpi", "--eager-limit", "10"], "[1024, 67108864]"),
    (["compare", "mpi", "--profile", "ndr"], "--profile"),
    (["compare", "mpi", "--algo", "fast"], "--algo"),
    (["compare", "mpi", "--delay-us", "-1"], "[0, 200000]"),
    (["compare", "mpi", "--rate-gbps", "500"], "--rate-gbps"),
    (["compare", "mpi", "--stack", "1,2"], "--stack"),
    (["compare", "mpi", "--stack", "1,2,-5"], "per-message cost -5 is out of range"),
    (["compare", "mpi", "--repeats", "0"], "--repeats"),
    (["compare", "mpi", "--repeats", "21", "--stack", "1,2,3"], "[1, 20]"),
    (["emu", "mpi", "run", "--ranks-per-cluster", "17", "--", "true"], "[1, 16]"),
    (["emu", "mpi", "run", "--mca", "novalue", "--", "true"], "NAME=VALUE"),
    (["emu", "mpi", "run", "--mpi", "mpich", "--mca", "a=b", "--", "true"], "--mca"),
    (["emu", "mpi", "run", "--"], "no MPI program"),
    (["emu", "mpi", "osu", "--bench", "bw", "--pairs", "2"], "--pairs"),
    (["emu", "mpi", "osu", "--bench", "bw", "--sizes", "0"], "--sizes"),
    (["emu", "mpi", "osu", "--bench", "nope"], "--bench"),
])
def test_bad_input_is_one_line_exit_2(args, words):
    p = cli(*args)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and words in lines[0] and "Traceback" not in p.stderr, p.stderr
