"""`longhaul measure`: run a benchmark, show its output as it comes, ingest what it printed.

A real iperf3 client against a server on 127.0.0.1, and fake perftest/OSU tools (scripts that print
a fixture of tests/fixtures/ingest/); every failure ends with one line, exit status 2, nothing stored."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import NO_IPERF3, iperf3_server, longhaul_exe
from longhaul.results import Store

FIX = Path(__file__).parent / "fixtures" / "ingest"


def _tool(tmp_path: Path, name: str, body: str, mode: int = 0o755) -> str:
    """A fake tool: a shell script ``name`` in tmp_path running ``body``; its path."""
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(mode)
    return str(path)


def _runs(store: Path) -> list[dict]:
    return Store(store).runs() if (store / "runs").exists() else []


def _failed(proc, *needles: str) -> str:
    """Exit status 2, longhaul's one line last on stderr (after what the command printed), no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    ours = [ln for ln in proc.stderr.splitlines() if ln.startswith("longhaul")]
    assert len(ours) == 1 and proc.stderr.splitlines()[-1] == ours[0], proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == "", proc.stderr
    for needle in needles:
        assert needle in ours[0], ours[0]
    return ours[0]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


# ------------------------------------------------------------------------------------ runs that store
@NO_IPERF3
def test_real_iperf3_client_on_loopback_is_measured_and_stored(cli, tmp_path):
    store = tmp_path / "res"
    with iperf3_server() as port:
        argv = ["iperf3", "-c", "127.0.0.1", "-p", port, "-t", "1", "-J"]
        proc = cli("measure", "--tool", "iperf3", "--distance-km", "10", "--label", "loopback", "--store", str(store),
                   "--format", "json", "--", *argv, timeout=30)
    assert proc.returncode == 0, proc.stderr
    recs = json.loads(proc.stdout)                      # stdout: the records only; the tool's output went to stderr
    assert '"test_start"' in proc.stderr and "stored as run" in proc.stderr
    assert {r["direction"] for r in recs} == {"sender", "receiver"} and all(r["bw_MBps"] > 0 for r in recs)
    assert all(r["command"] == shlex.join(argv) and r["delay_us"] == 50.0 for r in recs)
    (entry,) = Store(store).runs()
    assert (entry["kind"], entry["source"], entry["label"], entry["n_records"]) == ("ingest-iperf3", "measured",
                                                                                    "loopback", 2)


def test_fake_perftest_parsed_as_ingest_parses_the_file_same_output_replaces(cli, tmp_path):
    store = tmp_path / "res"
    tool = _tool(tmp_path, "ib_write_bw", f"cat {FIX / 'perftest_write_bw_mb.txt'}")
    args = ["measure", "--tool", "perftest", "--delay-us", "1000", "--label", "site-a", "--store", str(store),
            "--format", "json", "--", tool, "-a", "-d", "mlx5_0", "remote host"]
    first = cli(*args, check=True)
    measured = json.loads(first.stdout)
    assert "RDMA_Write BW Test" in first.stderr          # the tool's output, shown
    ingested = json.loads(cli("ingest", str(FIX / "perftest_write_bw_mb.txt"), "--tool", "perftest",
                              "--delay-us", "1000", "--dry-run", "--format", "json", check=True).stdout)
    command = f"{tool} -a -d mlx5_0 'remote host'"
    assert [r.pop("command") for r in measured] == [command] * 5
    assert measured == ingested                          # the same parse as ingest's
    (entry,) = Store(store).runs()
    assert (entry["kind"], entry["source"], entry["n_records"]) == ("ingest-perftest", "measured", 5)
    scenario = json.loads(cli("results", "show", entry["run_id"], "--store", str(store), "--format", "json",
                              check=True).stdout)["run"]["scenario"]
    assert scenario["command"] == command and scenario["kind"] == "ingest-perftest" and "output_sha256" in scenario
    cli(*args, check=True)                               # byte-identical output, same facts: replaced
    assert len(Store(store).runs()) == 1


def test_fake_osu_two_runs_unless_output_identical_and_dry_run_stores_nothing(cli, tmp_path):
    store = tmp_path / "res"
    # Each run prints one more trailing blank line: the same numbers, other bytes (a real tool's differ anyway).
    tool = _tool(tmp_path, "osu_bw", f"cat {FIX / 'osu_bw.txt'}; echo x >> {tmp_path / 'n'}; "
                                     f"sed 's/.*//' {tmp_path / 'n'}")
    args = ["measure", "--tool", "osu", "--distance-miles", "100", "--store", str(store), "--", tool]
    dry = cli(*args[:-2], "--dry-run", "--format", "csv", "--", tool, check=True)
    assert dry.stdout.startswith("tool,") and "1048576" in dry.stdout and not store.exists()
    cli(*args, check=True)
    cli(*args, check=True)
    runs = Store(store).runs()
    assert len(runs) == 2 and {r["kind"] for r in runs} == {"ingest-osu"}


def test_output_is_shown_as_it_comes(tmp_path):
    """The tool prints a line, then waits for the test to have seen it on longhaul's stderr."""
    seen = tmp_path / "seen"
    tool = _tool(tmp_path, "slow_osu", f"echo first-row; i=0; while [ ! -e {seen} ]; do i=$((i+1)); "
                                       f"[ $i -gt 100 ] && exit 1; sleep 0.05; done; cat {FIX / 'osu_bw.txt'}")
    proc = subprocess.Popen([*longhaul_exe(), "measure", "--tool", "osu", "--dry-run", "--", tool],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr.readline() == "first-row\n"   # while the tool still runs
        seen.touch()
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "osu:" in out and "1048576" in out


# ------------------------------------------------------------------------------------------ failures
def test_command_not_found_or_not_executable_or_missing(cli, tmp_path):
    store = tmp_path / "res"
    base = ["measure", "--tool", "perftest", "--store", str(store)]
    _failed(cli(*base, "--", "ib_write_bw_not_installed_here", "-a"),
            "command 'ib_write_bw_not_installed_here' not found (not on PATH)")
    _failed(cli(*base, "--", str(tmp_path / "missing")), "not found (no such file)")
    plain = _tool(tmp_path, "ib_read_bw", "true", mode=0o644)
    _failed(cli(*base, "--", plain), f"'{plain}' is not executable")
    _failed(cli(*base, "--"), "measure: no command to run")
    _failed(cli(*base), "measure: no command to run")
    assert _runs(store) == []


def test_non_zero_exit_names_status_and_last_stderr_line(cli, tmp_path):
    store = tmp_path / "res"
    tool = _tool(tmp_path, "ib_write_bw", f"cat {FIX / 'perftest_write_bw_mb.txt'}; echo 'Unable to init the "
                                          "socket connection' >&2; echo \" Couldn't connect to remote:18515\" >&2; "
                                          "exit 1")
    err = _failed(cli("measure", "--tool", "perftest", "--store", str(store), "--", tool, "remote"),
                  f"measure: `{tool} remote` exited with status 1 (its last line on stderr: Couldn't connect to "
                  "remote:18515); nothing stored")
    assert "Unable to init" not in err
    assert not store.exists()   # "nothing stored": not even an empty store (its writability is checked in place)


def test_the_error_starts_its_own_line_after_output_that_did_not_end_one(cli, tmp_path):
    # "connecting...longhaul: error: ..." when the command's last output had no newline.
    tool = _tool(tmp_path, "osu_bw", "printf 'connecting...' >&2; exit 1")
    proc = cli("measure", "--tool", "osu", "--store", str(tmp_path / "res"), "--", tool)
    assert proc.stderr.startswith("connecting...\n")
    _failed(proc, "exited with status 1 (its last line on stderr: connecting...)")


# A real-time signal has no member in signal.Signals: naming it raised ValueError (a traceback).
@pytest.mark.parametrize("sig, name", [("KILL", "SIGKILL"), ("40", "SIGRTMIN+6")])
def test_killed_by_a_signal(cli, tmp_path, sig, name):
    store = tmp_path / "res"
    tool = _tool(tmp_path, "osu_bw", f"cat {FIX / 'osu_bw.txt'}; kill -{sig} $$")
    _failed(cli("measure", "--tool", "osu", "--store", str(store), "--", tool), f"`{tool}` was killed by {name}")
    assert _runs(store) == []


def test_timeout_kills_the_whole_process_group(cli, tmp_path):
    store = tmp_path / "res"
    pids = tmp_path / "pids"
    tool = _tool(tmp_path, "iperf3", f"sleep 30 & echo $! > {pids}; echo $$ >> {pids}; sleep 30")
    t = time.monotonic()
    _failed(cli("measure", "--tool", "iperf3", "--timeout-s", "0.5", "--store", str(store), "--", tool, "-c", "x"),
            f"`{tool} -c x` was still running after --timeout-s 0.5 and was stopped (its process group killed)")
    assert time.monotonic() - t < 8
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == 2 and not any(_alive(p) for p in started)  # the child's own child too
    assert _runs(store) == []


@pytest.mark.parametrize("fixture,tool,line", [("perftest_write_lat.txt", "osu", 1), ("bad_perftest_row.txt",
                                                                                     "perftest", 7)])
def test_output_not_in_the_tools_format(cli, tmp_path, fixture, tool, line):
    store = tmp_path / "res"
    fake = _tool(tmp_path, "bench", f"cat {FIX / fixture}")
    _failed(cli("measure", "--tool", tool, "--store", str(store), "--", fake, "-n", "2"),
            f"longhaul: error: {tool}: `{fake} -n 2` line {line}: ")
    assert _runs(store) == []


@pytest.mark.parametrize("option,shown", [
    (["--delay-us", "-5"], "--delay-us: -5 is out of range"),
    (["--delay-us", "1,2"], "measure: give one delay or distance"),
    (["--distance-km", "far"], "--distance-km: 'far' is not a number"),
    (["--timeout-s", "0"], "--timeout-s: 0 is out of range"),
    (["--label", "two\nlines"], "--label: give one line"),
    (["--store", "FILE"], "is a file, not a results directory"),
    (["--format", "xml"], "--format: invalid choice"),
    (["--delay-us", "5"], None),                         # the control: with good options, the command runs
])
def test_bad_option_refused_before_the_command_runs(cli, tmp_path, option, shown):
    ran = tmp_path / "ran"
    tool = _tool(tmp_path, "osu_bw", f"touch {ran}; cat {FIX / 'osu_bw.txt'}")
    (tmp_path / "FILE").write_text("")
    option = [str(tmp_path / o) if o == "FILE" else o for o in option]
    store = [] if "--store" in option else ["--store", str(tmp_path / "res")]
    proc = cli("measure", "--tool", "osu", *option, *store, "--", tool)
    if shown is None:
        assert proc.returncode == 0 and ran.exists(), proc.stderr
        return
    _failed(proc, shown)
    assert not ran.exists()


def _measuring(tmp_path, traps: str = "") -> tuple[subprocess.Popen, str, Path, Path]:
    """`longhaul measure` of a fake osu_bw that writes its pid, says 'started' and sleeps (after
    ``traps``): (the longhaul process, the tool, the store, the pid file)."""
    store, pid = tmp_path / "res", tmp_path / "pid"
    tool = _tool(tmp_path, "osu_bw", f"{traps}echo $$ > {pid}; echo started; sleep 30")
    proc = subprocess.Popen([*longhaul_exe(), "measure", "--tool", "osu", "--store", str(store), "--", tool],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, tool, store, pid


@pytest.mark.parametrize("sig, status, said", [
    (signal.SIGINT, 130, "longhaul: interrupted"),
    # A batch system's kill or a closed terminal: the command, in its own session, would not get it.
    (signal.SIGTERM, 143, "longhaul: stopped by SIGTERM (the measured command `{tool}` was stopped; nothing stored)"),
    (signal.SIGHUP, 129, "longhaul: stopped by SIGHUP (the measured command `{tool}` was stopped; nothing stored)"),
])
def test_ctrl_c_or_a_kill_stops_the_command_stores_nothing(tmp_path, sig, status, said):
    proc, tool, store, pid = _measuring(tmp_path)
    try:
        assert proc.stderr.readline() == "started\n"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == status, err
    assert err.splitlines() == [said.format(tool=tool)] and out == ""
    assert not _alive(int(pid.read_text()))
    assert _runs(store) == []


@pytest.mark.parametrize("second", [signal.SIGINT, signal.SIGTERM])
def test_a_second_interrupt_still_kills_a_command_that_ignores_sigterm(tmp_path, second):
    # Ctrl-C twice (or Ctrl-C, then a batch system's SIGTERM) within the 2 s grace: the second one
    # cut the stop short before its SIGKILL, and a tool that ignores SIGTERM kept running.
    proc, _tool, store, pid = _measuring(tmp_path, traps="trap '' TERM; ")
    try:
        assert proc.stderr.readline() == "started\n"
        proc.send_signal(signal.SIGINT)
        time.sleep(0.5)                                  # within STOP_GRACE_S: the command still runs
        proc.send_signal(second)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    alive = _alive(int(pid.read_text()))
    if alive:
        os.killpg(int(pid.read_text()), signal.SIGKILL)  # not left behind by the test either
    assert not alive
    assert proc.returncode == {signal.SIGINT: 130, signal.SIGTERM: 143}[second], err
    assert out == "" and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert _runs(store) == []
