"""`longhaul sim verbs` with the range extenders' rated reach and the UltraScience Net profile:
what a user is told when a product is past its rating or slower than the adapters, and what it
costs; bad combinations refused in one line."""

from __future__ import annotations

import json

import pytest


def run(cli, *args):
    proc = cli("sim", "verbs", *args, "--format", "json", check=True)
    return json.loads(proc.stdout), proc.stderr


def test_an_extender_slower_than_the_adapters_says_it_caps_them(cli):
    [r], err = run(cli, "--profile", "ndr", "--extender", "longbow-xr", "--mtu", "4096", "--sizes", "1M",
                   "--iterations", "50")
    assert r["bw_MBps"] < 1000.0  # the XR's 4x SDR, not NDR's 50 GB/s
    assert "longbow-xr" in r["warnings"] and "caps bandwidth near 1000 MB/s" in r["warnings"]
    assert f"longhaul: warning: {r['warnings']}" in err
    # A testbed's own pairing (S1's DDR adapters behind its SDR WAN) is its design: no warning.
    [own], err = run(cli, "--sizes", "1M", "--iterations", "20")
    assert own["warnings"] == "" and "warning" not in err


def test_beyond_its_rated_reach_the_credits_cap_a_link(cli):
    # The campus Longbow is rated for 100 km: its 1 MB of credits cover a fifth of 500 km's round trip.
    [r], err = run(cli, "--profile", "s3", "--distance-km", "500", "--sizes", "1M", "--iterations", "100")
    assert "beyond its rated 100 km" in r["warnings"] and r["warnings"] in err
    credit_bound = 1e6 / (2 * 500 * 5e-6) / 1e6  # credits / round trip, MB/s
    assert 0.8 * credit_bound < r["bw_MBps"] <= credit_bound
    [near], _ = run(cli, "--profile", "s3", "--distance-km", "50", "--sizes", "1M", "--iterations", "100")
    assert near["warnings"] == "" and near["bw_MBps"] > 4 * r["bw_MBps"]


def test_uc_at_8600_miles_is_not_capped_by_the_longbow_xr(cli):
    # The XR's credit extension spans 150,000 km: UC, which waits for no acknowledgement, sends at
    # the wire's rate across the UltraScience Net's longest loop as across the room.
    recs, _ = run(cli, "--transport", "uc", "--distance-miles", "0.2,8600", "--sizes", "8M", "--iterations", "60")
    near, far = (r["bw_MBps"] for r in recs)
    assert far == pytest.approx(near, rel=0.01) and far > 950.0
    assert all(r["delivered_bytes"] == 60 << 23 for r in recs)


def test_the_ultrascience_net_profile(cli):
    # ib_rdma_bw -c over the loop: the CM's 2.1 s timer, the era's window of 100, OC-192 framing,
    # no resend at 8,600 miles and the path full with 8 MiB messages.
    [r], err = run(cli, "--profile", "usn", "--distance-miles", "8600", "--sizes", "8M", "--iterations", "100")
    assert (r["hca"], r["cm"], r["ack_timeout_exp"], r["tx_depth"]) == ("voltaire-sdr", True, 19, 100)
    assert r["timeouts"] == 0 and r["status"] == "ok" and r["warnings"] == "" and err == ""
    # 100 messages against the start-up round trip (138 ms) of a ~990 MB/s path.
    assert 840.0 < r["bw_MBps"] < 870.0
    [abex], err = run(cli, "--profile", "usn", "--extender", "abex-2020", "--wan-framing", "10gige-wan",
                      "--distance-miles", "8600", "--sizes", "8M", "--iterations", "20")
    assert abex["status"] == "ok" and abex["warnings"] == ""


@pytest.mark.parametrize("args, needle", [
    (("--extender", "longbow-xr", "--wan-framing", "10gige-lan"),
     "wan_framing: the longbow-xr cannot carry IB over 10gige-lan (valid for it: ib, oc192, 10gige-wan)"),
    (("--extender", "metrox-2", "--wan-framing", "oc192"), "valid for it: ib"),
    (("--extender", "nope"), "--extender"),
    (("--profile", "nope"), "--profile"),
    (("--qp-timeout", "32"), "--qp-timeout: 32 is out of range [0, 31]"),
    (("--qp-timeout", "-1"), "--qp-timeout: -1 is out of range [0, 31]"),
    (("--retry-count", "8"), "--retry-count: 8 is out of range [0, 7]"),
])
def test_bad_long_haul_input_is_one_line(cli, args, needle):
    proc = cli("sim", "verbs", *args)
    assert proc.returncode == 2
    line = proc.stderr.strip()
    assert "\n" not in line and needle in line, line
