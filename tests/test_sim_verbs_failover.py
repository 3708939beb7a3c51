"""`longhaul sim verbs` with WAN links unplugged and plugged back (the scenario file's
[[events]]): the time series per link, the subnet manager's reroute, RC queue pairs that recover or
go to the error state, and bad events refused with one line and exit status 2."""

from __future__ import annotations

import json

import pytest

DRILL = """
testbed = "s3"
[path]
wan_links = 4
fibre_km = 10
[verbs]
qps = 8
size_bytes = 262144
duration_s = 2.0
interval_s = 0.1
{extra}
[[events]]
at_s = 0.3
link = 1
action = "down"
[[events]]
at_s = 0.5
link = 1
action = "up"
"""


def drill(cli, tmp_path, *args, extra=""):
    f = tmp_path / "drill.toml"
    f.write_text(DRILL.format(extra=extra))
    proc = cli("sim", "verbs", "--scenario", str(f), *args, "--format", "json", "--workers", "1", check=True)
    return json.loads(proc.stdout)[0]


def test_traps_reroute_at_once_and_no_queue_pair_fails(cli, tmp_path):
    r = drill(cli, tmp_path)
    f = r["failover"]
    # Trap 128 and a 0.1 s heavy sweep; the replug trains for 1 s, then the SM makes it Active.
    assert f["reroute_s"] == pytest.approx([0.4, 1.6])
    assert f["link_active_s"] == pytest.approx([1.6])
    link1 = f["series_link_MBps"][1]
    assert link1[2] > 0 and all(m == 0 for m in link1[3:16]) and link1[16] > 0
    # Four Longbow pairs under one ConnectX-2 (PCIe 2.0 x8, ~3.2 GB/s): four links share the
    # host's rate; once the tables change the three left take link 1's queue pairs, each link
    # full, and the total is what three SDR links carry until link 1 is Active again.
    links = f["series_link_MBps"]
    assert links[0][6] > links[0][1] and links[0][6] == pytest.approx(1000, rel=0.03)
    sdr = max(max(link) for link in links)
    assert all(b <= 3 * sdr * 1.01 for b in f["series_bw_MBps"][5:16])
    assert min(f["series_bw_MBps"][5:16]) > 0.5 * f["series_bw_MBps"][1]
    assert f["series_bw_MBps"][17] > f["series_bw_MBps"][10]
    assert f["drops_link_down"] > 0 and all(t is None for t in f["qp_error_s"])
    assert r["status"] == "ok (time limit)"


def test_without_traps_the_queue_pairs_on_the_dead_link_run_out_of_retries(cli, tmp_path):
    # No trap: the SM sees the cut at its next sweep (10 s), long after 1 + 1 timeouts of 500 ms
    # (ConnectX-2's floor): the two queue pairs hashed to link 1 go to the error state.
    r = drill(cli, tmp_path, "--retry-count", "1", extra="[subnet_manager]\ntraps = false")
    f = r["failover"]
    assert f["reroute_s"] == []
    errored = [t for t in f["qp_error_s"] if t is not None]
    assert len(errored) == 2 and all(t == pytest.approx(1.3, abs=0.01) for t in errored)
    assert r["status"].startswith("qp error: retry count exceeded on 2 of 8")


def test_the_table_shows_the_series(cli, tmp_path):
    f = tmp_path / "drill.toml"
    f.write_text(DRILL.format(extra=""))
    out = cli("sim", "verbs", "--scenario", str(f), "--workers", "1", check=True).stdout
    assert "link_3_MBps" in out and "new routes at" in out and "qps_errored" in out


@pytest.mark.parametrize("change, message", [
    (("link = 1", "link = 4"), "events[0].link: 4 does not exist (valid: 0..3 for wan_links = 4)"),
    (('action = "up"', 'action = "down"'), "events: at 0.5 s link 1 is already down (links down then: 1)"),
    (("at_s = 0.5", "at_s = 2.0"), "events[1].at_s: 2 is outside the run (valid: 0 < at_s < duration_s = 2 s)"),
    (("duration_s = 2.0", ""), "events: link events need a run of fixed length: set verbs.duration_s"),
    (('action = "down"', 'action = "off"'), "events[0].action: unknown variant `off`, expected `down` or `up`"),
])
def test_bad_events_are_refused_with_one_line(cli, tmp_path, change, message):
    f = tmp_path / "bad.toml"
    f.write_text(DRILL.format(extra="").replace(*change))
    proc = cli("sim", "verbs", "--scenario", str(f))
    assert proc.returncode == 2 and proc.stdout == ""
    assert message in proc.stderr and proc.stderr.count("\n") == 1
