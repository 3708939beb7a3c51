"""`longhaul emu` at the level a user sees: commands, bad input (one line, exit 2, nothing
left), clean-up after a killed controller. Needs root; skipped otherwise."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_emu_helpers import ENV, ROOT, cli, cli_json, needs_root, netns_and_links

pytestmark = [pytest.mark.root, needs_root]


@pytest.mark.parametrize("args, words", [
    (["run", "--delay-us", "300000", "--", "A:", "true"], "--delay-us"),
    (["run", "--rate-gbps", "500", "--", "A:", "true"], "--rate-gbps"),
    (["run", "--loss", "0.9", "--", "A:", "true"], "--loss"),
    (["run", "--queue", "10", "--", "A:", "true"], "--queue"),
    (["run", "--queue", "3p", "--", "A:", "true"], "--queue"),
    (["run", "--mtu", "500", "--", "A:", "true"], "--mtu"),
    (["run", "--jitter-us", "-5", "--", "A:", "true"], "--jitter-us"),
    (["run", "--", "A:", "true", "::"], "missing command"),
    (["run", "--", "A:"], "missing command"),
    # one value with its range ("'2,3' is not a whole number", "'1M,2M' is not a size")
    (["run", "--hosts", "2,3", "--", "A:", "true"], "--hosts: give one value here, not a list"),
    (["run", "--window", "1M,2M", "--", "A:", "true"], "--window: give one value here, not a list"),
    (["run", "--mtu", "abc", "--", "A:", "true"], "--mtu: 'abc' is not a whole number (valid range [576, 65535])"),
    (["run", "--seed", "1.5", "--", "A:", "true"], "--seed: '1.5' is not a whole number (valid range [0, "),
    # an empty command ran `sh -c ''` and exited 0
    (["run", "--", "A: "], "missing command after 'A: '"),
    (["run", "--", "A:", ""], "missing command after 'A:'"),
    # a device or a wrong file was read without end (/dev/zero: memory grew until killed)
    (["run", "--scenario", "/dev/zero", "--", "A:", "true"], "--scenario: '/dev/zero' is a character device, not a file"),
    (["run"], "no command"),
    (["run", "--", "C:", "true"], "host label"),
    (["run", "--hosts", "2", "--", "B2:", "true"], "B2"),
    (["bench", "tcp", "--cc", "nosuchcc"], "--cc"),
    (["bench", "tcp", "--streams", "0"], "--streams"),
    (["run", "--scenario", "/nonexistent.toml", "--", "A:", "true"], "scenario"),
    # The real ranges (a negative loss said [0, inf]); the seed before the data plane sees it.
    (["run", "--loss", "-0.1", "--", "A:", "true"], "--loss: -0.1 is out of range [0, 0.5]"),
    (["run", "--jitter-us", "nan", "--", "A:", "true"], "--jitter-us: nan is out of range [0, 100000]"),
    (["bench", "ping", "--rate-gbps", "0.0001"], "give 0 (unlimited) or [0.001, 100] Gb/s"),
    (["bench", "ping", "--rate-gbps", "1,,2"], "--rate-gbps: empty item in '1,,2' (each item is 0 (unlimited) or [0.001, 100] Gb/s)"),
    (["bench", "ping", "--seed", "-1"], "--seed: -1 is out of range [0, 18446744073709551614]"),
    (["bench", "ping", "--count", "1000000", "--interval-us", "10000000"], "at most 86400 s per point"),
    (["bench", "ping", "--store", "/proc/nope"], "--store: cannot write results to '/proc/nope'"),
    (["run", "--timeout-s", "0", "--", "A:", "true"], "--timeout-s: 0 is out of range [0.1, 86400] s"),
    (["run", "--grace-s", "-1", "--", "A:", "true"], "--grace-s: -1 is out of range [0, 3600] s"),
    (["run", "--name", "", "--", "A:", "true"], "--name: '' must be 1-10 lowercase letters"),
    (["bench", "ping", "--label", "two\nlines"], "--label: give one line of at most 200 characters"),
    # Cross traffic above the line rate only fills the queue (the simulator refuses it too).
    (["bench", "tcp", "--rate-gbps", "1", "--cross-gbps", "5"], "--cross-gbps: 5 is above the A->B line rate of 1 Gb/s"),
    (["bench", "ping", "--rate-gbps", "0,1", "--cross-gbps", "2"], "--cross-gbps: 2 is above the A->B line rate of 1"),
    # Options of one value refuse a list (they ran the first item) and an empty value (they ran the default).
    (["bench", "ping", "--count", "5,6"], "--count: give one value here, not a list"),
    (["bench", "ping", "--size", "64,128"], "--size: give one value here, not a list"),
    (["bench", "ping", "--interval-us", "100,200"], "--interval-us: give one value here, not a list"),
    (["bench", "ping", "--cross-gbps", "0.1,0.2"], "--cross-gbps: give one value here, not a list"),
    (["bench", "tcp", "--duration-s", "0.1,0.2"], "--duration-s: give one value here, not a list"),
    (["bench", "tcp", "--omit-s", "0,1"], "--omit-s: give one value here, not a list"),
    (["bench", "tcp", "--omit-s", ""], "--omit-s: empty list"),
    (["bench", "tcp", "--cross-gbps", ""], "--cross-gbps: empty list"),
    (["bench", "tcp", "--cc", ""], "--cc: empty list"),
    (["bench", "tcp", "--socket-buffer", ""], "--socket-buffer: '' is not a size"),
    (["bench", "ping", "--scenario", ""], "--scenario: empty file name"),
    (["run", "--scenario", " ", "--", "A:", "true"], "--scenario: empty file name"),
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


def test_run_json_stats_are_nested_records(leaves_nothing):
    (rec,) = cli_json("emu", "run", "--stats", "--", "A:", "true")
    assert rec["client"] is True and rec["link_stats"]["ab"]["queue_limit_bytes"] > 0


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


def test_a_shell_stopped_by_sigint_says_so_and_leaves_nothing(leaves_nothing):
    # It exited 130 without a word (SIGTERM printed its line).
    shell = subprocess.Popen([sys.executable, "-m", "longhaul.cli", "emu", "shell", "--name", "lhsig"], env=ENV,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_namespace("lhsig-a0")
        time.sleep(0.5)
        shell.send_signal(signal.SIGINT)
        _out, err = shell.communicate(timeout=60)
    finally:
        shell.kill()
    assert shell.returncode == 130 and err.splitlines()[-1] == (
        "longhaul: interrupted (the shell was stopped and the emulated link torn down)"), err


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


#: What the emulated hosts run: a duration nothing else on the machine sleeps for, so that looking for
#: leftovers by command line (pgrep -f) finds only these (a developer's own `sleep 60` failed the check once).
SLEEPER = "sleep 60.0417"


def _start_controller(name: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "longhaul.cli", "emu", "run", "--name", name, "--hosts", "2",
                             "--", f"A: {SLEEPER}", "::", f"B: {SLEEPER}"],
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
    assert subprocess.run(["pgrep", "-f", SLEEPER], capture_output=True).returncode == 1


def test_clean_takes_a_killed_controller_not_yet_reaped_for_dead(leaves_nothing):
    # The controller's parent has not waited for it yet (a zombie): its run is still clean's to remove.
    ctl = _start_controller("lhzomb")
    _wait_for_namespace("lhzomb-b1")
    os.kill(_state("lhzomb")["reaper_pid"], signal.SIGKILL)
    ctl.kill()
    try:
        time.sleep(0.3)
        recs = cli_json("emu", "clean")
        assert any(r["name"] == "lhzomb" and r["status"] == "removed" for r in recs), recs
        assert "lhzomb" not in netns_and_links()[0]
    finally:
        ctl.wait()
        cli("emu", "clean")


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


def test_sigterm_is_one_line_exit_143_and_leaves_nothing(leaves_nothing):
    ctl = subprocess.Popen([sys.executable, "-m", "longhaul.cli", "emu", "run", "--name", "lhterm", "--",
                            "A:", "sleep", "30"], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for_namespace("lhterm-a0")
    ctl.send_signal(signal.SIGTERM)
    _, err = ctl.communicate(timeout=30)
    assert ctl.returncode == 143 and err.strip() == "longhaul: stopped by SIGTERM (the emulated run was torn down)", err
    assert "lhterm" not in netns_and_links()[0]


def test_a_client_stopped_at_the_timeout_fails_the_run(leaves_nothing):
    p = cli("emu", "run", "--timeout-s", "0.5", "--", "A:", "sleep", "5")
    assert p.returncode == 1 and "(stopped," in p.stdout, p.stdout
    assert "the client (A0) was still running at --timeout-s 0.5" in p.stderr
    # Servers stopped after the client's grace time are the normal end of a run.
    ok = cli("emu", "run", "--grace-s", "0.2", "--", "A:", "true", "::", "B:", "sleep", "5")
    assert ok.returncode == 0, ok.stderr


def test_ping_with_no_reply_reports_no_rtt(leaves_nothing):
    # A 65000-byte probe is 45 packets at the 1500-byte MTU, each lost with p = 0.5: none of 3 returns.
    p = cli("emu", "bench", "ping", "--count", "3", "--loss", "0.5", "--size", "65000", "--no-store",
            "--format", "json")
    (rec,) = json.loads(p.stdout)
    assert p.returncode == 0 and rec["received"] == 0 and rec["rtt_p50_us"] is None, rec
    assert "none of the 3 probes came back" in p.stderr


def test_a_slow_reply_is_waited_for_and_a_lost_one_costs_what_the_link_allows(leaves_nothing):
    """The client waits for a reply as long as the link can take (delay, jitter, a full queue at the
    rate, both ways), not a fixed 1 s: a 65000-byte probe at 1 Mb/s (1.04 s there and back) came back
    "lost", and every lost probe cost 1 s (2000 probes at 10% loss: 6.5 minutes)."""
    slow = cli_json("emu", "bench", "ping", "--count", "2", "--rate-gbps", "0.001", "--size", "65000", "--no-store")[0]
    assert slow["received"] == 2 and 1.04e6 <= slow["rtt_p50_us"] <= 1.3e6, slow
    t = time.monotonic()
    lossy = cli_json("emu", "bench", "ping", "--loss", "0.3", "--count", "100", "--interval-us", "100", "--no-store",
                     timeout=300)[0]
    assert time.monotonic() - t < 30, "each of ~50 lost probes cost a second"
    # Every reply counted: the server stays up as long as the client can wait (it quit after
    # count x interval + 30 s, so the probes after that all came back "lost": 28 of 100, not ~48).
    rec = lossy
    reached_b = rec["packets_ab"] - rec["drops_loss"]  # probes the server got (A->B loss is deterministic)
    assert 0.55 * rec["count"] <= reached_b <= 0.85 * rec["count"], rec
    assert rec["received"] >= 0.7 * reached_b - 3 * (0.21 * reached_b) ** 0.5, rec  # replies lost at 30%, 3 sigma


@pytest.mark.parametrize("verb, text, message", [
    # A scenario file's workload value outside bench tcp's range: named by its key in the file.
    (["tcp"], "[tcp]\nstreams = 1000\n", "scenario {f}: tcp.streams: 1000 is out of range [1, 128]"),
    # ... and so is a value the simulator's scenario check refuses (it said 'loss', not 'path.loss')
    (["tcp"], "[path]\nloss = 0.6\n", "scenario {f}: path.loss: 0.6 is out of range [0, 0.5]"),
    (["tcp"], "[tcp]\nduration_s = 0.01\n", "scenario {f}: tcp.duration_s: 0.01 is out of range [0.1, 3600]"),
    (["tcp"], "[tcp]\nwindow_bytes = 2000000000\n",
     "scenario {f}: tcp.window_bytes: 2000000000 bytes is out of range [4096, 1073741824] (4K .. 1G)"),
    # Checked when the file is read, whichever verb reads it (ping runs no TCP streams).
    (["ping"], "[tcp]\nstreams = 1000\n", "scenario {f}: tcp.streams: 1000 is out of range [1, 128]"),
    # The file's cross traffic above a line rate the command line sets.
    (["tcp", "--rate-gbps", "1"], "[cross]\ngbps = 5\n",
     "scenario {f}: cross.gbps: 5 is above the A->B line rate of 1 Gb/s (valid: 0 for none, up to 1)"),
    (["ping", "--rate-gbps", "0,1"], "[cross]\ngbps = 5\n",
     "scenario {f}: cross.gbps: 5 is above the A->B line rate of 1 Gb/s (valid: 0 for none, up to 1)"),
    # A value typed on the command line over a good file is named by its option.
    (["tcp", "--streams", "1000"], "[tcp]\nstreams = 2\n", "--streams: 1000 is out of range [1, 128]"),
    (["tcp", "--duration-s", "0.01"], "[tcp]\nduration_s = 1\n", "--duration-s: 0.01 is out of range [0.1, 3600]"),
    (["tcp", "--socket-buffer", "1K"], "[tcp]\nwindow_bytes = 65536\n",
     "--socket-buffer: 1024 bytes is out of range [4096, 1073741824] (4K .. 1G)"),
    (["tcp", "--cross-gbps", "5"], "[path]\nrate_gbps = 1\n",
     "--cross-gbps: 5 is above the A->B line rate of 1 Gb/s (valid: 0 for none, up to 1)"),
    (["ping", "--cross-gbps", "5"], "[path]\nrate_gbps = 1\n[cross]\ngbps = 0.5\n",
     "--cross-gbps: 5 is above the A->B line rate of 1 Gb/s (valid: 0 for none, up to 1)"),
    # A rate above the file's link is another link, refused by the simulator's check.
    (["tcp"], "[path]\nrate_gbps = 200\n", ("scenario {f}: path.rate_gbps: 200 is above the 10gige-lan line rate of "
                                            "10 Gb/s (valid: (0, 10]; a faster WAN is another link: 200gige, 400gige)")),
    (["tcp"], "[path]\nqueue_packets = 3\n", "scenario {f}: path.queue_packets: 3 packets is out of range [8, 1000000]"),
])
def test_scenario_values_out_of_the_emulators_range_name_the_file_key(tmp_path, verb, text, message, leaves_nothing):
    f = tmp_path / "s.toml"
    f.write_text('link = "10gige-lan"\n' + text)
    p = cli("emu", "bench", *verb, "--scenario", str(f), "--no-store")
    assert p.returncode == 2 and p.stderr == f"longhaul: error: {message.format(f=f)}\n", p.stderr


@pytest.mark.parametrize("link, ok", [("100gige", True), ("200gige", False), ("400gige", False)])
def test_todays_ethernet_links_run_where_the_emulator_reaches_their_rate(tmp_path, link, ok):
    """A file naming a 100 GbE link reads as a 100 Gb/s link; 200 and 400 GbE are above what the emulator
    carries: one line naming the link and the emulator's range, nothing run."""
    from longhaul.emu import scenario

    f = tmp_path / "s.toml"
    f.write_text(f'link = "{link}"\n')
    if ok:
        assert scenario.load(str(f))["link"]["rate_gbps"] == 100
        return
    p = cli("emu", "bench", "tcp", "--scenario", str(f), "--no-store")
    gbps = link.removesuffix("gige")
    assert p.returncode == 2 and p.stderr == (f"longhaul: error: scenario {f}: link: {link} runs at {gbps} Gb/s, above "
                                              "the emulator's 100 Gb/s (valid: a link, or path.rate_gbps, up to 100 "
                                              "Gb/s)\n"), p.stderr


def _a_cc_the_simulator_knows_and_this_machine_lacks() -> str | None:
    have = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    for cc in ("htcp", "scalable", "highspeed", "bic"):  # the simulator's, besides reno, cubic, bbr
        loadable = shutil.which("modprobe") and subprocess.run(["modprobe", "-n", f"tcp_{cc}"],
                                                               capture_output=True).returncode == 0
        if cc not in have and not loadable:
            return cc
    return None


@pytest.mark.skipif(_a_cc_the_simulator_knows_and_this_machine_lacks() is None,
                    reason="this machine has every congestion control the simulator knows")
def test_a_scenario_cc_this_machine_lacks_names_the_file_key(tmp_path, leaves_nothing):
    cc = _a_cc_the_simulator_knows_and_this_machine_lacks()
    f = tmp_path / "s.toml"
    f.write_text(f'link = "10gige-lan"\n[tcp]\ncc = "{cc}"\n')
    p = cli("emu", "bench", "tcp", "--scenario", str(f), "--no-store")
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1, p.stderr
    assert lines[0].startswith(f"longhaul: error: scenario {f}: tcp.cc: '{cc}' is not available here (choose one of: "), p.stderr
    p = cli("emu", "bench", "tcp", "--cc", cc, "--no-store")
    assert p.returncode == 2 and p.stderr.startswith(f"longhaul: error: --cc: '{cc}' is not available here"), p.stderr


def test_an_mtu_the_kernel_refuses_is_one_line_and_leaves_nothing():
    # The command line refuses 70000 before anything exists (TUN and veth take at most 65535); a
    # library caller's LinkOptions is checked against >= 576 only, and the kernel refuses it after the
    # namespaces and the data plane exist: one line, and the teardown leaves nothing.
    def world():
        ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
        return ns, links, sorted(os.listdir("/run/longhaul-emu")) if os.path.isdir("/run/longhaul-emu") else []
    before = world()
    p = cli("emu", "run", "--name", "lhmtu", "--hosts", "2", "--mtu", "70000", "--", "A:", "true")
    assert p.returncode == 2 and p.stderr == "longhaul: error: --mtu: 70000 is out of range [576, 65535]\n", p.stderr
    code = ("from longhaul.emu.options import LinkOptions\nfrom longhaul.emu.topology import Emulator\n"
            "from longhaul.errors import UserError\ntry:\n"
            "    with Emulator(LinkOptions(mtu=70000, hosts=2), name='lhmtu'):\n        pass\n"
            "except UserError as err:\n    print(err)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=ENV)
    assert "--mtu" in p.stdout and "kernel refused" in p.stdout and "Traceback" not in p.stderr, (p.stdout, p.stderr)
    assert world() == before
    assert subprocess.run(["pgrep", "-f", "longhaul-wan link .*lhmtu"], capture_output=True).returncode == 1


SCENARIO = """link = "10gige-lan"
seed = 3
[path]
delay_us = 1000
rate_gbps = 0.5
[tcp]
mtu_bytes = 9000
cc = "reno"
streams = 2
rmem_max_bytes = 16777216
wmem_max_bytes = 16777216
duration_s = 1
"""


def test_one_scenario_file_drives_the_simulator_and_the_emulator(tmp_path, leaves_nothing):
    f = tmp_path / "s.toml"
    f.write_text(SCENARIO)
    sim = cli_json("sim", "tcp", "--scenario", str(f))[0]
    emu = cli_json("emu", "bench", "tcp", "--scenario", str(f), "--no-store")[0]
    same = ("delay_us", "mtu_bytes", "cc", "streams")
    assert {k: sim[k] for k in same} == {k: emu[k] for k in same} == {"delay_us": 1000, "mtu_bytes": 9000,
                                                                       "cc": "reno", "streams": 2}
    # The link type's framing (Ethernet: 38 bytes per packet) and the file's buffers and length.
    assert (emu["rate_gbps"], emu["frame_bytes"], emu["window_bytes"], emu["duration_s"]) == (0.5, 38, 16 << 20, 1.0)
    for bw in (sim["bw_MBps"], emu["bw_MBps"]):
        assert 0.5 * 62.5 < bw <= 62.5, (sim["bw_MBps"], emu["bw_MBps"])


def test_scenario_tcp_settings_reach_the_hosts_and_options_override_the_file(tmp_path, leaves_nothing):
    f = tmp_path / "s.json"
    f.write_text(json.dumps({"link": "ipoib-cm", "path": {"fibre_km": 200},
                             "tcp": {"sack": False, "rack": False, "initial_cwnd_segs": 20, "min_rto_ms": 50,
                                     "delayed_ack": False}}))
    recs = cli_json("emu", "run", "--scenario", str(f), "--",
                    "A: ip link show wan0; ip route show dev wan0; sysctl -n net.ipv4.tcp_recovery; "
                    "sysctl -n net.ipv4.tcp_sack")
    out = recs[0]["stdout"]
    # iproute2 locks rto_min, which is what makes the kernel use it.
    assert "mtu 65520" in out and "initcwnd 20" in out and "rto_min lock 50ms" in out and "quickack 1" in out, out
    assert out.split()[-2:] == ["0", "0"], out  # RACK and SACK off
    p = cli("emu", "run", "--scenario", str(f), "--mtu", "4000", "--", "A: ip link show wan0")
    assert p.returncode == 0 and "mtu 4000" in p.stdout
    # 200 km of fibre = 1 ms one way, at IPoIB's lossless queue and the S1 WAN rate.
    ping = cli_json("emu", "bench", "ping", "--scenario", str(f), "--count", "30", "--no-store")[0]
    assert ping["delay_us"] == 1000 and ping["rate_gbps"] == 8.0 and ping["queue_bytes"] == 1 << 30
    assert 2000 < ping["rtt_p50_us"] < 2500


def test_a_file_without_a_queue_sizes_it_for_the_delay_and_rate_in_force(tmp_path, leaves_nothing):
    # The queue was sized once, for the file's delay: --delay-us 20000 kept 0 us's 100 packets (153800
    # bytes) where the simulator, and the emulator without the file, hold one bandwidth-delay product.
    f = tmp_path / "r1.toml"
    f.write_text('link = "10gige-lan"\n[path]\nrate_gbps = 1\n')
    here = cli_json("emu", "bench", "ping", "--scenario", str(f), "--count", "3", "--no-store")[0]
    far = cli_json("emu", "bench", "ping", "--scenario", str(f), "--delay-us", "20000", "--count", "3", "--no-store")[0]
    fast = cli_json("emu", "bench", "ping", "--scenario", str(f), "--delay-us", "20000", "--rate-gbps", "2",
                    "--count", "3", "--no-store")[0]
    assert here["queue_bytes"] == 100 * (1500 + 38)          # the simulator's least: 100 packets with framing
    assert far["queue_bytes"] == 1e9 / 8 * 2 * 0.02 and fast["queue_bytes"] == 2 * far["queue_bytes"]


@pytest.mark.parametrize("text, words", [
    ('link = "10gige-lan"\nstack = "s1"\n', "stack:"),
    ('link = "10gige-lan"\ntestbed = "s3"\n', "testbed:"),
    ('link = "10gige-lan"\n[path]\nextender = "longbow-xr"\n', "extender:"),
    ('link = "ipoib-cm"\n[path]\nqueue_bytes = 1000000\n', "queue_bytes:"),
    ('link = "10gige-lan"\n[path]\nqueue_packets = 4\n', "queue_packets:"),
    ('link = "10gige-lan"\n[tcp]\nhystart = false\n', "hystart:"),
    ('link = "10gige-lan"\n[tcp]\nrto_restart = "first-partial-ack"\n', "rto_restart:"),
    ('link = "10gige-lan"\n[tcp]\ncwnd_growth = "cumulative"\n', "cwnd_growth:"),
    ('link = "10gige-lan"\n[tcp]\ninterval_s = 0.1\n', "interval_s:"),
    ('link = "10gige-lan"\n[cross]\ngbps = 1\non_ms = 5\noff_ms = 5\n', "cross.on_ms"),
    ('link = "10gige-lan"\n[tcp]\nmtu_bytes = 20000\n', "mtu_bytes:"),
    ('link = "fddi"\n', "link:"),
    ('[link]\ndelay_us = 2000\n', "invalid type"),  # the emulator's old format is not a scenario
    ('[tcp]\nstreams = "a"\n', ': tcp.streams: invalid type: string "a"'),  # the file named once, not "scenario" twice
])
def test_scenario_content_the_emulator_cannot_honour_is_one_line(tmp_path, text, words, leaves_nothing):
    f = tmp_path / "s.toml"
    f.write_text(text)
    for verb in (["run", "--scenario", str(f), "--", "A:", "true"], ["bench", "tcp", "--scenario", str(f)]):
        p = cli("emu", *verb)
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 2 and len(lines) == 1 and words in lines[0] and str(f) in lines[0], p.stderr
        assert "scenario: " not in lines[0].replace(f"scenario {f}: ", ""), p.stderr


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


def test_a_data_plane_that_cannot_start_is_one_line_and_leaves_nothing(tmp_path, leaves_nothing):
    # LONGHAUL_WAN naming no program was a FileNotFoundError traceback, one that exits at once a
    # RuntimeError traceback (exit 1).
    fake = tmp_path / "fakewan"
    fake.write_text("#!/bin/sh\necho 'cannot open /dev/net/tun' >&2\nexit 3\n")
    fake.chmod(0o755)
    for wan, said in ((str(tmp_path / "nope"), "cannot be started (No such file or directory)"),
                      (str(fake), "did not start: cannot open /dev/net/tun")):
        p = subprocess.run([sys.executable, "-m", "longhaul.cli", "emu", "run", "--", "A: true"], capture_output=True,
                           text=True, timeout=60, env={**ENV, "LONGHAUL_WAN": wan})
        assert p.returncode == 2 and p.stderr == f"longhaul: error: the data plane '{wan}' {said}" + (
            "; build it with `cargo build --release -p longhaul-wan` or set LONGHAUL_WAN to its path\n"
            if "started (" in said else "\n"), p.stderr
