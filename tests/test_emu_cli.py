"""`longhaul emu` at the level a user sees: commands, bad input (one line, exit 2, nothing
left), clean-up after a killed controller. Needs root; skipped otherwise."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from test_emu_helpers import ENV, ROOT, cli, cli_json, leaves_nothing, needs_root, netns_and_links  # noqa: F401

pytestmark = [pytest.mark.root, needs_root]


@pytest.mark.parametrize("args, words", [
    (["run", "--delay-us", "300000", "--", "A:", "true"], "--delay-us"),
    (["run", "--rate-gbps", "500", "--", "A:", "true"], "--rate-gbps"),
    (["run", "--loss", "0.9", "--", "A:", "true"], "--loss"),
    (["run", "--queue", "10", "--", "A:", "true"], "--queue"),
    (["run", "--queue", "3p", "--", "A:", "true"], "--queue"),
    (["run", "--mtu", "70000", "--", "A:", "true"], "--mtu"),
    (["run", "--jitter-us", "-5", "--", "A:", "true"], "--jitter-us"),
    (["run", "--", "A:", "true", "::"], "missing command"),
    (["run", "--", "A:"], "missing command"),
    (["run"], "no command"),
    (["run", "--", "C:", "true"], "host label"),
    (["run", "--hosts", "2", "--", "B2:", "true"], "B2"),
    (["bench", "tcp", "--cc", "nosuchcc"], "--cc"),
    (["bench", "tcp", "--streams", "0"], "--streams"),
    (["run", "--scenario", "/nonexistent.toml", "--", "A:", "true"], "scenario"),
])
def test_bad_input_is_one_line_exit_2_and_nothing_left(args, words, leaves_nothing):
    p = cli("emu", *args)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in p.stderr, p.stderr


def test_refuses_without_privileges(tmp_path):
    # setpriv drops to nobody with no capabilities: one clear line, exit 2.
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                        sys.executable, "-m", "longhaul.cli", "emu", "run", "--", "A:", "true"],
                       capture_output=True, text=True, env=ENV, timeout=60, cwd=tmp_path)
    if "Permission denied" in p.stderr and "longhaul" not in p.stderr:
        pytest.skip("the Python environment is not readable by nobody")
    assert p.returncode == 2
    assert p.stderr.strip().count("\n") == 0 and "root" in p.stderr


def test_run_both_sides_output_and_exit_codes(leaves_nothing):
    p = cli("emu", "run", "--delay-us", "500", "--format", "json", "--",
            "A: ip -br addr show wan0; exit 3", "::", "B: echo server on $LH_B0; sleep 0.2")
    assert p.returncode == 1, p.stderr  # a command failed
    by_host = {r["host"]: r for r in json.loads(p.stdout)}
    assert by_host["A0"]["exit_code"] == 3 and "10.77.1.1" in by_host["A0"]["stdout"]
    assert by_host["B0"]["exit_code"] == 0 and "server on 10.77.2.1" in by_host["B0"]["stdout"]


def test_run_table_prints_outputs_and_nonzero_status_on_failure(leaves_nothing):
    p = cli("emu", "run", "--", "A:", "sh", "-c", "echo hello; exit 4")
    assert p.returncode == 1 and "hello" in p.stdout and "exit 4" in p.stdout


def test_multi_host_clusters_reach_each_other_and_their_own_cluster(leaves_nothing):
    wan = str(ROOT / "target" / "release" / "longhaul-wan")
    # A1 pings B1 across the link and A0 (same cluster, over the bridge) in turn.
    cmd = (f"{wan} ping-client --connect $LH_B1:9000 --count 5 --interval-us 1000 && "
           f"{wan} ping-client --connect $LH_A0:9001 --count 5 --interval-us 1000")
    recs = cli_json("emu", "run", "--hosts", "2", "--delay-us", "2000", "--",
                    f"A1: {cmd}", "::", f"B1: {wan} ping-server --bind $LH_B1:9000 --timeout-s 20",
                    "::", f"A0: {wan} ping-server --bind $LH_A0:9001 --timeout-s 20")
    lines = [json.loads(x) for x in recs[0]["stdout"].splitlines()]
    assert recs[0]["exit_code"] == 0, recs
    across, inside = lines
    assert across["received"] == 5 and across["rtt_p50_us"] > 4000  # crosses the 2 x 2 ms link
    assert inside["received"] == 5 and inside["rtt_p50_us"] < 2000  # stays inside cluster A


def test_shell_runs_in_cluster_a_and_returns_its_status(leaves_nothing):
    p = cli("emu", "shell", "--delay-us", "100", input="ip -br addr show wan0; echo peer=$LH_B0; exit 7\n")
    assert p.returncode == 7, p.stderr
    assert "10.77.1.1" in p.stdout and "peer=10.77.2.1" in p.stdout


def test_second_emulator_with_the_same_name_is_refused(leaves_nothing):
    first = subprocess.Popen([sys.executable, "-m", "longhaul.cli", "emu", "run", "--name", "lhdup", "--",
                              "A:", "sleep", "5"], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for_namespace("lhdup-a0")
        p = cli("emu", "run", "--name", "lhdup", "--", "A:", "true")
        assert p.returncode == 2 and "already exists" in p.stderr and p.stderr.count("\n") == 1
        assert "lhdup-a0" in netns_and_links()[0], "the refused run must not touch the first one"
    finally:
        first.send_signal(signal.SIGINT)
        first.wait(timeout=30)


def _wait_for_namespace(ns: str, timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ns in netns_and_links()[0] and subprocess.run(["ip", "-n", ns, "link", "show", "wan0"],
                                                          capture_output=True).returncode == 0:
            return
        time.sleep(0.05)
    raise AssertionError(f"namespace {ns} never appeared")


def _start_controller(name: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "longhaul.cli", "emu", "run", "--name", name, "--hosts", "2",
                             "--", "A: sleep 60", "::", "B: sleep 60"],
                            env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _state(name: str) -> dict:
    return json.loads(open(f"/run/longhaul-emu/{name}/state.json").read())


def test_kill_9_of_controller_and_reaper_then_clean_leaves_nothing(leaves_nothing):
    ctl = _start_controller("lhkill")
    _wait_for_namespace("lhkill-b1")
    reaper = _state("lhkill")["reaper_pid"]
    os.kill(reaper, signal.SIGKILL)  # the worst case: nobody is left to clean up
    ctl.kill()
    ctl.wait()
    time.sleep(0.3)
    assert "lhkill-a0" in netns_and_links()[0]  # leftovers exist ...
    recs = cli_json("emu", "clean")
    assert {"name": "lhkill", "status": "removed"}.items() <= {k: v for r in recs for k, v in r.items()
                                                               if r["name"] == "lhkill"}.items()
    assert not os.path.exists("/run/longhaul-emu/lhkill")
    assert subprocess.run(["pgrep", "-f", "sleep 60"], capture_output=True).returncode == 1


def test_kill_9_of_controller_alone_is_cleaned_up_by_the_reaper(leaves_nothing):
    ctl = _start_controller("lhreap")
    _wait_for_namespace("lhreap-b1")
    ctl.kill()
    ctl.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and "lhreap" in netns_and_links()[0]:
        time.sleep(0.1)
    assert "lhreap" not in netns_and_links()[0]


def test_clean_keeps_a_live_run(leaves_nothing):
    first = subprocess.Popen([sys.executable, "-m", "longhaul.cli", "emu", "run", "--name", "lhlive", "--",
                              "A:", "sleep", "5"], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for_namespace("lhlive-a0")
        recs = cli_json("emu", "clean")
        assert any(r["name"] == "lhlive" and r["status"].startswith("running") for r in recs)
        assert "lhlive-a0" in netns_and_links()[0]
    finally:
        first.send_signal(signal.SIGTERM)  # SIGTERM must tear down too
        first.wait(timeout=30)
    assert "lhlive" not in netns_and_links()[0]


def test_scenario_file_drives_the_emulator(tmp_path, leaves_nothing):
    f = tmp_path / "s.toml"
    f.write_text('[link]\ndelay_us = 2000\nmtu = 9000\n[link.ba]\ndelay_us = 500\n'
                 '[[bench]]\nkind = "ping"\ncount = 50\ninterval_us = 500\n')
    recs = cli_json("emu", "scenario", str(f))
    assert recs[0]["rtt_configured_us"] == 2500 and recs[0]["mtu_bytes"] == 9000
    assert 2500 < recs[0]["rtt_p50_us"] < 3500
    # The same file gives the link of `run`; the command line overrides it.
    p = cli("emu", "run", "--scenario", str(f), "--mtu", "4000", "--", "A: ip link show wan0")
    assert p.returncode == 0 and "mtu 4000" in p.stdout


def test_bench_formats(leaves_nothing):
    p = cli("emu", "bench", "ping", "--count", "20", "--interval-us", "200", "--format", "csv")
    assert p.returncode == 0 and p.stdout.startswith("source,") and "rtt_p50_us" in p.stdout.splitlines()[0]
    p = cli("emu", "bench", "ping", "--count", "20", "--interval-us", "200")
    assert p.returncode == 0 and "rtt_p99_us" in p.stdout


@pytest.mark.skipif(subprocess.run(["which", "iperf3"], capture_output=True).returncode != 0,
                    reason="iperf3 not installed (scripts/apt-packages.txt)")
def test_iperf3_is_driven_and_parsed(leaves_nothing):
    recs = cli_json("emu", "bench", "tcp", "--tool", "iperf3", "--rate-gbps", "0.5", "--delay-us", "1000",
                    "--duration-s", "2", "--mtu", "9000", timeout=60)
    assert recs[0]["tool"] == "iperf3" and 0.40 < recs[0]["throughput_gbps"] <= 0.51
