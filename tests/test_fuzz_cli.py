"""Fuzzing every command: hostile arguments and files (tests/cli_fuzzing.py) end with exit status 0 or
2, a refusal in exactly one `longhaul: error:` line, no traceback, no control character echoed, within
seconds. Runs in this process (no interpreter start-up per example); the seed corpus is the audit's
cases (issue 26). bench/fuzz_cli.py runs the same generator for longer."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import cli_fuzzing as fz

COMMANDS = fz.commands()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return fz.hostile_files(tmp_path_factory.mktemp("hostile"))


@pytest.fixture(scope="module")
def isolated(tmp_path_factory):
    """Work in an empty directory (a default store, a report or a plot lands there)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path_factory.mktemp("cwd"))
        mp.setenv("LONGHAUL_STORE", str(tmp_path_factory.mktemp("store") / "results"))
        yield


def _check(argv: list[str]) -> None:
    with fz.no_real_work():
        status, _out, err, _seconds = fz.run(argv)
    problems = fz.findings(status, err)
    assert not problems, f"longhaul {argv!r}: {'; '.join(problems)}\n{err[-2000:]}"


#: The audit's cases (issue 26), with FILE standing for each hostile file in turn.
SEED = [
    ["sim", "tcp", "--scenario", "FILE"], ["sweep", "verbs", "--grid", "{}", "--base", "FILE"],
    ["sweep", "verbs", "--grid", "[" * 5000], ["ingest", "--tool", "iperf3", "FILE"], ["ingest", "--tool", "perftest", "FILE"],
    ["analyse", "profile", "--input", "FILE"], ["sim", "mpi", "replay", "FILE"], ["emu", "bench", "tcp", "--scenario", "FILE"],
    ["sim", "verbs", "--sizes", "\x1b[2J\x1b[H"], ["sim", "verbs", "--workers", "٣"], ["compare", "failover", "FILE"],
    ["sweep", "verbs", "--grid", '{"delay_us": [' + ",".join(["1"] * 3000) + '], "size_bytes": [' + ",".join(["2"] * 6000) + "]}"],
    ["results", "rm", "0000"], ["results", "show", "\x1b[2J"], ["measure", "--tool", "perftest", "--", "\x1b]0;x\x07"],
    # found by the fuzzing itself: names over NAME_MAX were OSError tracebacks
    ["results", "ls", "--store", "9" * 5000], ["results", "export", "--out", "[" * 5000],
    ["analyse", "profile", "--plot", "9" * 300],
]


@pytest.mark.parametrize("argv", SEED, ids=lambda a: " ".join(a[:3]))
def test_the_audits_cases(argv, files, isolated):
    for f in files if "FILE" in argv else [None]:
        _check([f if a == "FILE" else a for a in argv])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(data=st.data())
def test_hostile_arguments_to_every_command(data, files, isolated):
    path, parser = data.draw(st.sampled_from(COMMANDS), label="command")
    values = [*fz.HOSTILE_TEXT, *files]
    argv = fz.argv_for(path, parser, lambda seq: data.draw(st.sampled_from(list(seq))), values)
    _check(argv)
