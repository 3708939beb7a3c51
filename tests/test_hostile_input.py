"""Hostile input from the audit of issue 26: every case is one line `longhaul: error: ...`, exit
status 2, no traceback, no hang, bounded memory. Each test failed on the code before (the cause
is named in its docstring). In-process (`longhaul.cli.main`): no interpreter start-up per case."""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import signal
import subprocess

import pytest

from conftest import longhaul_exe
from longhaul.cli import main

FIX = __import__("pathlib").Path(__file__).parent / "fixtures" / "ingest"


@contextlib.contextmanager
def bounded(seconds: float):
    """Fail (instead of hanging the suite) when the block takes longer than ``seconds``: a FIFO
    opened for reading blocked forever."""
    def expire(signum, frame):
        raise TimeoutError(f"still running after {seconds} s: it hangs")

    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run(argv: list[str]) -> int:
    """``longhaul ARGV``'s exit status (argparse's errors raise SystemExit)."""
    try:
        return main(argv)
    except SystemExit as stop:
        return int(stop.code or 0)


def one_error(capsys, argv: list[str], *needles: str, seconds: float = 20) -> str:
    """Run ``argv``; assert exit 2 and exactly one line on stderr, the error, with each needle."""
    with bounded(seconds):
        status = run(argv)
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.count("\n") == 1 and err.startswith("longhaul: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err
    return err


def capped(argv: list[str]) -> subprocess.CompletedProcess:
    """``argv`` in a child capped at 2 GiB of address space and 60 s: a case that once grew without
    bound fails there if it regresses, instead of taking the shared machine's memory."""
    return subprocess.run(argv, capture_output=True, text=True, timeout=60,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)))


@pytest.fixture(autouse=True)
def _no_emulator(monkeypatch):
    """An emu case must be refused before anything is built: were it not, fail, never build."""
    from longhaul.emu import topology

    def refuse(self):
        raise AssertionError("the emulator was about to be built")

    monkeypatch.setattr(topology.Emulator, "__enter__", refuse)


def deep_toml(path, depth=5000):
    path.write_text("a = " + "[" * depth + "]" * depth + "\n")
    return str(path)


def deep_json(path, depth=5000):
    path.write_text("[" * depth + "]" * depth)
    return str(path)


# ------------------------------------------------------------------ the 10 traceback causes
@pytest.mark.parametrize("argv", [
    ["sim", "verbs", "--scenario", "{toml}"],
    ["sim", "tcp", "--scenario", "{json}"],
    ["sweep", "tcp", "--grid", '{{"delay_us": [0]}}', "--base", "{toml}"],
    ["emu", "run", "--scenario", "{toml}", "--", "A:", "true"],
])
def test_deeply_nested_scenario_files(capsys, tmp_path, argv):
    """RecursionError from tomllib/json (--scenario, --base, emu --scenario)."""
    files = {"toml": deep_toml(tmp_path / "deep.toml"), "json": deep_json(tmp_path / "deep.json")}
    one_error(capsys, [a.format(**files) for a in argv], "nested more than 32 levels deep")


def test_a_deeply_nested_sweep_grid(capsys):
    """RecursionError from json.loads of --grid."""
    one_error(capsys, ["sweep", "verbs", "--grid", '{"delay_us": ' + "[" * 5000 + "]" * 5000 + "}"],
              "--grid: nested more than 32 levels deep")


def test_deeply_nested_iperf3_json_and_analysis_input(capsys, tmp_path):
    """RecursionError in iperf3 -J ingest and in `analyse --input` JSON."""
    deep = tmp_path / "deep.json"
    deep.write_text('{"start": ' + "[" * 5000 + "]" * 5000 + "}")
    one_error(capsys, ["ingest", "--tool", "iperf3", "--dry-run", str(deep)], "nested more than 32 levels deep")
    one_error(capsys, ["analyse", "profile", "--input", deep_json(tmp_path / "in.json")],
              "nested more than 32 levels deep")


def test_a_scenario_integer_of_thousands_of_digits(capsys, tmp_path):
    """ValueError (Python's 4,300-digit limit) from tomllib: `seed = 999...`."""
    f = tmp_path / "seed.toml"
    f.write_text("seed = " + "9" * 5000 + "\n")
    one_error(capsys, ["sim", "verbs", "--scenario", str(f)], "a number too long to read")


def test_a_tcp_scenario_whose_cross_is_not_a_table(capsys, tmp_path):
    """TypeError in sim/tcp.py: `cross = 5`."""
    f = tmp_path / "cross.toml"
    f.write_text("cross = 5\n")
    one_error(capsys, ["sim", "tcp", "--scenario", str(f)], "'cross' must be a table")


def test_a_perftest_header_value_of_2_to_the_64(capsys, tmp_path):
    """OverflowError when stored (and --dry-run accepted it): 'Number of qps : 18446744073709551616'."""
    text = (FIX / "perftest_read_bw_gbits.txt").read_text()
    f = tmp_path / "qps.txt"
    f.write_text(re.sub(r"Number of qps(\s*):\s*\d+", r"Number of qps\1: 18446744073709551616", text, count=1))
    for extra in (["--dry-run"], ["--store", str(tmp_path / "st")]):
        one_error(capsys, ["ingest", "--tool", "perftest", *extra, str(f)], "Number of qps 18446744073709551616")
    assert not (tmp_path / "st").exists()


# ------------------------------------------------------------------ hangs and unbounded reads
@pytest.mark.parametrize("argv", [
    ["sim", "verbs", "--scenario", "{fifo}"],
    ["sweep", "verbs", "--grid", '{{"delay_us": [0]}}', "--base", "{fifo}"],
    ["ingest", "--tool", "perftest", "--dry-run", "{fifo}"],
    ["sim", "mpi", "replay", "{fifo}"],
    ["analyse", "profile", "--input", "{fifo}"],
])
def test_a_fifo_where_a_file_is_expected(capsys, tmp_path, argv):
    """open() of a FIFO with no writer blocked forever."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    one_error(capsys, [a.format(fifo=fifo) for a in argv], "is a FIFO (named pipe), not a file", seconds=10)


@pytest.mark.parametrize("argv", [
    ["ingest", "--tool", "osu", "--dry-run", "/dev/zero"],
    ["sim", "mpi", "replay", "/dev/zero"],
    ["sim", "tcp", "--scenario", "/dev/zero"],
])
def test_a_device_is_refused_unread(argv):
    """/dev/zero was read until memory ran out (ingest: 6 GB in 10 s). In a process of its own,
    capped at 2 GiB of address space, so that a regression fails instead of taking the machine."""
    proc = capped([*longhaul_exe(), *argv])
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "'/dev/zero' is a character device, not a file" in proc.stderr


def test_a_file_over_the_bound_is_refused_unread(capsys, tmp_path):
    big = tmp_path / "big.toml"
    with open(big, "wb") as f:
        f.truncate((16 << 20) + 1)   # sparse: nothing written, nothing read
    one_error(capsys, ["sim", "verbs", "--scenario", str(big)], "over the 16 MiB limit")


def test_a_grid_of_millions_of_points_is_refused_before_it_is_built():
    """An 18-million-point grid grew to 3.6 GB in 60 s with nothing computed (capped child process)."""
    values = list(range(4243))
    proc = capped([*longhaul_exe(), "sweep", "tcp", "--grid", json.dumps({"delay_us": values, "streams": values})])
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "18,003,049 points, over the limit of 100,000" in proc.stderr


# ------------------------------------------------------------------ terminal hygiene
def test_control_characters_are_echoed_escaped(capsys):
    """--sizes $'\\e[2J...' cleared the screen: the value was echoed raw."""
    err = one_error(capsys, ["sim", "verbs", "--sizes", "\x1b[2J\x1b[H64K\n2"], "\\x1b[2J")
    assert "\x1b" not in err and err.count("\n") == 1


@pytest.mark.parametrize("argv", [["sim", "verbs", "--workers", "\u0663"], ["sim", "verbs", "--delay-us", "\u0661\u0660"],
                                  ["sim", "verbs", "--sizes", "\u0666\u0664K"], ["sim", "tcp", "--streams", "\uff14"]])
def test_only_ascii_digits_are_numbers(capsys, argv):
    """`--workers ٣` was read as 3 (Python's int reads every script's digits)."""
    one_error(capsys, argv, "is not a")
