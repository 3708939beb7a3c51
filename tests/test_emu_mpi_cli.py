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
    # Options that would be ignored or quietly changed are refused (before any emulator).
    (["emu", "mpi", "osu", "--bench", "mbw_mr", "--pairs", "3", "--ranks-per-cluster", "2"],
     "3 pairs need 3 ranks per cluster, the job has 2"),
    (["emu", "mpi", "osu", "--bench", "allreduce", "--pairs", "2"], "--pairs: only for mbw_mr"),
    (["emu", "mpi", "osu", "--bench", "latency", "--algo", "hierarchical"], "--algo: only for the collectives"),
    (["emu", "mpi", "osu", "--bench", "latency", "--window-msgs", "7"], "--window-msgs: only for bw, bibw and mbw_mr"),
    (["emu", "mpi", "osu", "--bench", "latency", "--store", "/proc/nope"], "--store: cannot write results to '/proc/nope'"),
    (["compare", "mpi", "--bench", "allreduce", "--stack", "3,0.4,10"], "--stack: only where the model is MPI over TCP"),
    (["compare", "mpi", "--bench", "latency", "--algo", "hierarchical"], "--algo: only for the collectives"),
    (["compare", "mpi", "--bench", "latency", "--ranks-per-cluster", "3"], "latency runs one rank pair"),
    (["compare", "tcp", "--mtu", "60000"], "--mtu: 60000 is out of range [576, 9000]"),
    # An empty value is refused, not taken as the default; a list where one value goes is not cut to its first item.
    (["emu", "mpi", "osu", "--bench", "bw", "--iterations", ""], "--iterations: empty list"),
    (["emu", "mpi", "osu", "--bench", "bw", "--warmup", ""], "--warmup: empty list"),
    (["emu", "mpi", "osu", "--bench", "bw", "--window-msgs", ""], "--window-msgs: empty list"),
    (["emu", "mpi", "osu", "--bench", "mbw_mr", "--pairs", ""], "--pairs: empty list"),
    (["emu", "mpi", "osu", "--bench", "bw", "--ranks-per-cluster", ""], "--ranks-per-cluster: empty list"),
    (["compare", "mpi", "--eager-limit", ""], "--eager-limit: empty list"),
    (["compare", "mpi", "--stack", ""], "--stack: '' is not 'per-segment us,per-byte ns,per-message us'"),
    (["compare", "mpi", "--rate-gbps", ""], "--rate-gbps: empty list"),
    (["compare", "mpi", "--rate-gbps", "1,2"], "--rate-gbps: give one value here, not a list"),
    (["compare", "mpi", "--iterations", ""], "--iterations: empty list"),
    (["compare", "mpi", "--repeats", ""], "--repeats: empty list"),
])
def test_bad_input_is_one_line_exit_2(args, words):
    p = cli(*args)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and words in lines[0] and "Traceback" not in p.stderr, p.stderr
