"""Emulated multi-link failover at the level a user sees: `longhaul emu drill` over 4 links with
real iperf3 -P and rsync while links are unplugged and replugged (throughput per phase, recovery,
SHA-256 of every copy), `longhaul emu link down|up`, bad input (one line, exit 2), and nothing
left behind after SIGKILL. Needs root; skipped otherwise."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from test_emu_helpers import ENV, cli, cli_json, needs_root, netns_and_links

pytestmark = [pytest.mark.root, needs_root]

#: 4 links of 50 Mb/s (6.25 MB/s each) at 1 ms: light for the data plane on a shared 2-core machine.
LINK_MBPS = 6.25
DRILL = """
link = "10gige-lan"
[path]
rate_gbps = 0.05
delay_us = 1000
wan_links = 4
detect_ms = 300
[tcp]
streams = 16
duration_s = {duration}
{events}
"""
EVENTS = [(3, 1, "down"), (5, 2, "down"), (7, 1, "up")]


def _events(events) -> str:
    return "".join(f'\n[[events]]\nat_s = {t}\nlink = {k}\naction = "{a}"\n' for t, k, a in events)


def _scenario(tmp_path: Path, events=EVENTS, duration: int = 10) -> str:
    path = tmp_path / "drill.toml"
    path.write_text(DRILL.format(duration=duration, events=_events(events)))
    return str(path)


def _nothing_of(name: str) -> bool:
    """No namespace, transfer directory or process (iperf3, rsync, data plane) of run `name`."""
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return (name not in netns_and_links()[0] and not os.path.exists(Path(tempfile.gettempdir()) / f"longhaul-{name}-drill")
            and f"longhaul-{name}-drill" not in ps and not os.path.exists(f"/run/longhaul-emu/{name}"))


def test_drill_over_four_links_loses_capacity_per_link_recovers_and_corrupts_nothing(tmp_path, leaves_nothing):
    p = cli("emu", "drill", "--scenario", _scenario(tmp_path), "--format", "json", timeout=180)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    phases, s = out["phases"], out["summary"]
    assert [ph["links_up"] for ph in phases] == [4, 3, 2, 3]
    assert [ph["event"] for ph in phases] == ["start", "link 1 down", "link 2 down", "link 1 up"]
    for ph in phases:
        # The surviving links stay full: 16 streams and the transfers hash onto every link up.
        assert 0.8 * ph["capacity_MBps"] <= ph["bw_MBps"] <= 1.02 * ph["capacity_MBps"], ph
        for k, bw in enumerate(ph["link_bw_MBps"]):
            up = not ((ph["phase"] in (1, 2) and k == 1) or (ph["phase"] in (2, 3) and k == 2))
            assert (bw > 0.7 * LINK_MBPS) if up else (bw < 0.01 * LINK_MBPS), (ph, k)
    # Replugged: link 1 carries traffic again within a second of the event.
    assert phases[3]["recovery_s"] is not None and phases[3]["recovery_s"] < 1.0
    assert [e["applied_s"] for e in s["events"]] == pytest.approx([3, 5, 7], abs=0.5)
    # Every stream the kernel hashed onto link 1 sent nothing from just after its cut (3 s) until the
    # hosts noticed (detect_ms = 300): no ACK can come back before its packets take another link.
    # (A stream may already have been silent before, after a congestion time-out: the stall then began earlier.)
    assert sum(s["streams_per_link"]) == 16 and "iperf3_error" not in s
    cut = [st for st in s["iperf3_streams"] if st["link"] == 1]
    assert cut and all(any(a <= 3.101 and a + b >= 3.299 for a, b in st["stalls"]) for st in cut), cut
    # Every rsync copy that arrived is the source, byte for byte; none was lost.
    assert s["copies_arrived"] >= 4 and s["copies_corrupt"] == 0 and s["copies_failed"] == 0
    assert s["bytes_verified"] == s["copies_arrived"] * s["transfer_bytes"]
    spanning = [c for c in out["transfer"] if c["start_s"] < 5 < c["end_s"] or c["start_s"] < 3 < c["end_s"]]
    assert spanning, "no copy was in flight at a failure"
    # The series: the cut links carry nothing while down.
    for row in out["series"]:
        if 3.3 < row["t_s"] < 7:
            assert row["link_bw_MBps"][1] == 0.0


def _drill_args(tmp_path, events):
    return ["drill", "--scenario", _scenario(tmp_path, events)]


@pytest.mark.parametrize("events, words", [
    ([(3, 4, "down")], "events[0].link: 4 does not exist (valid: 0..3 for wan_links = 4)"),
    ([(3, 1, "down"), (4, 1, "down")], "events: at 4 s link 1 is already down (links down then: 1)"),
    ([(3, 1, "up")], "events: at 3 s link 1 is already up (links down then: none)"),
    ([(12, 1, "down")], "events[0].at_s: 12 is outside the run (valid: 0 < at_s < duration_s = 10 s)"),
    ([(0, 1, "down")], "events[0].at_s: 0 is outside the run"),
    ([(3, 1, "unplug")], "events[0].action: 'unplug' is not one of 'down', 'up'"),
])
def test_bad_events_are_one_line_naming_the_range_and_nothing_is_built(tmp_path, events, words, leaves_nothing):
    p = cli("emu", *_drill_args(tmp_path, events))
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "drill.toml" in lines[0], p.stderr


@pytest.mark.parametrize("args, words", [
    (["drill", "--wan-links", "17"], "--wan-links: 17 is out of range [1, 16]"),
    (["drill", "--detect-ms", "-1"], "--detect-ms: -1 is out of range [0, 60000]"),
    (["drill", "--duration-s", "2.5"], "--duration-s: 2.5 is not whole seconds"),
    (["drill", "--transfer-workers", "17"], "--transfer-workers: 17 is out of range [0, 16]"),
    (["link", "down", "x"], "K: 'x' is not a whole number"),
    (["link", "down", "1", "--name", "nosuch"], "no emulator named 'nosuch' is running"),
])
def test_bad_options_are_one_line_exit_2(args, words, leaves_nothing):
    p = cli("emu", *args)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], p.stderr


def test_events_only_where_they_are_applied(tmp_path, leaves_nothing):
    p = cli("emu", "bench", "tcp", "--scenario", _scenario(tmp_path))
    assert p.returncode == 2 and "events: timed link failures are applied by `longhaul emu run`" in p.stderr
    p = cli("emu", "run", "--scenario", _scenario(tmp_path), "--timeout-s", "6", "--", "A: true")
    assert p.returncode == 2 and p.stderr.strip().endswith("events[2].at_s: 7 is outside the run (valid: 0 < at_s "
                                                           "< --timeout-s = 6 s)"), p.stderr


def test_run_applies_the_files_events_to_the_users_programs(tmp_path, leaves_nothing):
    # A program across 2 links while link 0 goes down at 0.5 s and up at 3 s: the route moves. The hosts
    # lose carrier 300 ms after the cut (detect_ms) and the kernel's link watch may hold a carrier loss
    # up to a second more (net/core/link_watch.c), so the route is read at 2.2 s; a carrier gain is urgent.
    path = tmp_path / "two.toml"
    path.write_text(DRILL.format(duration=10, events=_events([(0.5, 0, "down"), (3, 0, "up"), (30, 1, "down")]))
                    .replace("wan_links = 4", "wan_links = 2"))
    route = "ip route show 10.77.2.0/24"
    p = cli("emu", "run", "--scenario", str(path), "--format", "json", "--",
            f"A: sleep 2.2; {route}; sleep 1.8; {route}")
    assert p.returncode == 0, p.stderr
    (rec,) = json.loads(p.stdout)
    during, after = rec["stdout"].split("10.77.2.0/24")[1:]
    assert "wan0 weight 1 dead linkdown" in during and "dead" not in after, rec["stdout"]
    times = {m[1]: float(m[0]) for m in re.findall(r"run: ([0-9.]+) s: link 0 (down|up)", p.stderr)}
    assert times == pytest.approx({"down": 0.5, "up": 3.0}, abs=0.3), p.stderr
    assert "1 of the scenario's events came after the commands ended (30 s and later)" in p.stderr


def test_link_down_up_on_a_running_emulator_and_its_bad_input(leaves_nothing):
    run = subprocess.Popen([sys.executable, "-m", "longhaul.cli", "emu", "run", "--wan-links", "3", "--name", "lhlink",
                            "--", "A: sleep 60"], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_links("lhlink", 3)
        down = cli("emu", "link", "down", "1", "--name", "lhlink")
        assert down.returncode == 0 and down.stdout.startswith("link 1: down at"), down.stderr
        # The kernel tells the routes of a carrier loss through its link watch, which handles a
        # non-urgent event at most once a second (net/core/link_watch.c): the route follows within ~1 s.
        route = _route_when("lhlink-a0", "nexthop dev wan1 weight 1 dead linkdown")
        assert "nexthop dev wan1 weight 1 dead linkdown" in route, route
        for args, words in ((["down", "1"], "link 1 is already down (links down: 1; up: 0, 2)"),
                            (["up", "2"], "link 2 is already up (links down: 1; up: 0, 2)"),
                            (["down", "3"], "link 3 does not exist: the emulator 'lhlink' has wan_links = 3 (valid: 0..2)")):
            p = cli("emu", "link", *args)   # the only emulator running: no --name needed
            assert p.returncode == 2 and p.stderr.strip() == f"longhaul: error: {words}", p.stderr
        assert cli("emu", "link", "up", "1").returncode == 0
        shown = cli_json("emu", "link", "show")
        assert [(r["link"], r["up"], r["carrier"], r["changes"]) for r in shown] == [
            (0, True, True, 0), (1, True, True, 2), (2, True, True, 0)]
    finally:
        run.send_signal(signal.SIGTERM)
        run.wait(timeout=30)


def _route_when(ns: str, wanted: str, timeout_s: float = 3) -> str:
    """The namespace's routes once they show ``wanted``, or as they are after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        route = subprocess.run(["ip", "-n", ns, "route"], capture_output=True, text=True).stdout
        if wanted in route or time.monotonic() > deadline:
            return route
        time.sleep(0.05)


def _wait_for_links(name: str, links: int, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            stats = json.loads(Path(f"/run/longhaul-emu/{name}/stats.json").read_text())
            if len(stats.get("links", [])) == links and subprocess.run(
                    ["ip", "-n", f"{name}-a0", "route"], capture_output=True, text=True).stdout.count("nexthop") == links:
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"emulator {name} never came up with {links} links")


def _start_drill(tmp_path, name: str) -> subprocess.Popen:
    ctl = subprocess.Popen([sys.executable, "-m", "longhaul.cli", "emu", "drill", "--scenario",
                            _scenario(tmp_path, events=[(2, 0, "down")], duration=30), "--name", name],
                           env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:   # traffic flows: iperf3 and rsync are running in the namespaces
        ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
        if f"longhaul-{name}-drill" in ps and "iperf3 -c" in ps:
            return ctl
        time.sleep(0.1)
    ctl.kill()
    raise AssertionError("the drill never started its traffic")


def test_sigkill_during_a_drill_leaves_nothing(tmp_path, leaves_nothing):
    ctl = _start_drill(tmp_path, "lhdkill")
    time.sleep(2.5)   # past the first link failure
    ctl.kill()
    ctl.wait()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not _nothing_of("lhdkill"):
        time.sleep(0.1)
    assert _nothing_of("lhdkill")


def test_sigkill_of_drill_and_reaper_then_clean_leaves_nothing(tmp_path, leaves_nothing):
    ctl = _start_drill(tmp_path, "lhdclean")
    reaper = json.loads(Path("/run/longhaul-emu/lhdclean/state.json").read_text())["reaper_pid"]
    os.kill(reaper, signal.SIGKILL)
    ctl.kill()
    ctl.wait()
    time.sleep(0.3)
    assert not _nothing_of("lhdclean")   # the transfer's files, rsync and iperf3 are left ...
    recs = cli_json("emu", "clean")
    assert any(r["name"] == "lhdclean" and r["status"] == "removed" for r in recs), recs
    assert _nothing_of("lhdclean")       # ... and clean removes them all
