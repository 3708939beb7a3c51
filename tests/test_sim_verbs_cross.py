"""`longhaul sim verbs --cross-gbps`: UDP cross traffic on the WAN switches where the extenders frame
IB in SONET or Ethernet (the same options and scenario keys as `sim tcp`). What the switch drops,
RC resends (every byte arrives) and UD/UC lose (counted); bad input is one line, exit 2."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

OC192_MBPS = 9.58464 * 125.0   # the usn profile's WAN: OC-192's payload rate


def run(cli, *args):
    proc = cli("sim", "verbs", "--profile", "usn", *args, "--format", "json", check=True)
    return json.loads(proc.stdout)


def test_rc_resends_what_cross_traffic_pushes_out_and_keeps_under_what_it_leaves(cli):
    [r] = run(cli, "--distance-km", "500", "--sizes", "1M", "--iterations", "30", "--cross-gbps", "4")
    assert r["status"] == "ok" and r["delivered_bytes"] == 30 << 20
    assert r["wan_drops_queue"] > 0 and r["retransmitted_packets"] > 0
    assert r["bw_MBps"] <= OC192_MBPS - 4 * 125.0
    assert 400.0 < r["cross_bw_MBps"] <= 500.0 and r["cross_gbps"] == 4
    # Without cross traffic the same run resends nothing.
    [clean] = run(cli, "--distance-km", "500", "--sizes", "1M", "--iterations", "30")
    assert clean["retransmitted_packets"] == 0 and clean["wan_drops_queue"] == 0 and clean["cross_gbps"] == 0


def test_ud_and_uc_lose_what_the_switch_drops(cli):
    [ud] = run(cli, "--transport", "ud", "--distance-km", "500", "--sizes", "2048", "--iterations", "20000",
               "--cross-gbps", "4", "--queue", "1M")
    assert ud["wan_drops_queue"] > 0
    assert ud["delivered_bytes"] == (20000 - ud["wan_drops_queue"]) * 2048
    [uc] = run(cli, "--transport", "uc", "--distance-km", "500", "--sizes", "64K", "--iterations", "300",
               "--cross-gbps", "4", "--queue", "1M")
    assert uc["uc_messages_dropped"] > 0 and uc["delivered_bytes"] < 300 * 65536


def test_bursts_and_the_scenario_file_say_the_same_as_the_options(cli, tmp_path):
    args = ("--transport", "uc", "--distance-km", "300", "--sizes", "64K", "--iterations", "200")
    [opts] = run(cli, *args, "--cross-gbps", "5", "--cross-on-off-ms", "2,2")
    f = tmp_path / "s.toml"
    f.write_text("[cross]\ngbps = 5\non_ms = 2\noff_ms = 2\n")
    [file] = run(cli, *args, "--scenario", str(f))
    assert opts == file
    assert run(cli, *args, "--cross-gbps", "5", "--cross-on-off-ms", "2,2") == [opts]   # same seed, same record


@pytest.mark.parametrize("args, needle", [
    (["--cross-gbps", "12"], "cross_gbps: 12 is out of range (0, 9.5846] (the WAN line rate of oc192)"),
    (["--cross-gbps", "2", "--wan-framing", "ib"], "this path's extenders carry IB natively (wan_framing ib)"),
    (["--cross-gbps", "2", "--extender", "none"], "a plain IB link (extender none)"),
    (["--queue", "1M"], "queue_bytes: the WAN switches' queue exists only with cross traffic"),
    (["--cross-gbps", "2", "--cross-on-off-ms", "1"], "--cross-on-off-ms: give two numbers, ON,OFF in ms"),
])
def test_bad_input_is_one_line_and_exit_2(cli, args, needle):
    proc = cli("sim", "verbs", "--profile", "usn", *args)
    assert proc.returncode == 2
    assert needle in proc.stderr and proc.stderr.count("\n") == 1 and proc.stderr.startswith("longhaul: error: ")


@settings(max_examples=6, deadline=None)
@given(km=st.floats(0, 1500), gbps=st.floats(0.5, 9.5), size=st.integers(4096, 1 << 20),
       seed=st.integers(0, 1000))
def test_rc_delivers_every_byte_whatever_the_cross_traffic(km, gbps, size, seed):
    from longhaul.sim import verbs

    r = verbs.run(verbs.scenario(testbed="usn", transport="rc", op="write", test="bw", size_bytes=size, iterations=8,
                                 fibre_km=km, cross_gbps=gbps, seed=seed))
    assert r["status"] == "ok" and r["delivered_bytes"] == 8 * size


def test_a_lost_ping_under_cross_traffic_ends_the_run_and_says_why(cli):
    # The fabric never falls idle with cross traffic: a UD ping the switch dropped would be
    # waited for forever; the run stops after a few of the path's round trips and says so.
    [r] = run(cli, "--transport", "ud", "--test", "lat", "--sizes", "2048", "--iterations", "2000",
              "--distance-km", "10", "--cross-gbps", "9.5", "--queue", "16K")
    assert r["wan_drops_queue"] > 0 and r["sim_time_us"] < 1e5
    assert r["status"].startswith("incomplete: no completion for") and "never resent over UD or UC" in r["status"]
