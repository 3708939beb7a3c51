"""`longhaul sim verbs` at distances where the RC local ACK timer matters: the timer each adapter
and connection mode really has, `retry count exceeded` only where it runs out before an
acknowledgement can come back, and what the record then says."""

from __future__ import annotations

import json

import pytest

# The UltraScience Net's longest loop: 8,600 miles, a 138 ms round trip.
LOOP = ("--distance-miles", "8600")


def run(cli, *args):
    proc = cli("sim", "verbs", *LOOP, "--sizes", "1M", "--iterations", "40", *args, "--format", "json", check=True)
    return json.loads(proc.stdout)[0], proc.stderr


def test_a_timer_shorter_than_the_round_trip_resends_but_recovers(cli):
    # perftest's -u 14 (67 ms) on an InfiniHost III, which applies it as set: the timer fires before
    # the first acknowledgement is back and go-back-N resends, but the acknowledgements of the
    # first transmission still arrive (once: 1,024,000 resent packets and "retry count exceeded").
    r, err = run(cli)
    assert r["status"] == "ok" and r["delivered_bytes"] == 40 << 20
    assert r["ack_timeout_us"] == pytest.approx(67108.864)
    assert r["timeouts"] > 0 and 0 < r["retries_max"] < 7
    assert "--qp-timeout 17" in r["advice"] and r["advice"] in err


@pytest.mark.parametrize("args, exp, timeout_us", [
    (("--qp-timeout", "17"), 17, 536870.912),
    # The CM derives 19 from OpenSM's packet life time 18 and mthca's ACK delay 15 (2.1 s).
    (("--cm",), 19, 2147483.648),
    # ConnectX-2 firmware raises anything shorter to about 500 ms.
    (("--hca", "connectx2", "--mtu", "2048"), 14, 500000.0),
])
def test_the_timer_in_force_covers_the_loop_without_a_resend(cli, args, exp, timeout_us):
    r, err = run(cli, *args)
    assert r["status"] == "ok" and r["timeouts"] == 0 and r["retransmitted_packets"] == 0
    assert r["ack_timeout_exp"] == exp and r["ack_timeout_us"] == pytest.approx(timeout_us)
    assert r["advice"] == "" and "advice" not in err


def test_today_stacks_pass_the_exponent_through_the_cm(cli):
    r, _ = run(cli, "--profile", "ndr", "--cm", "--qp-timeout", "18", "--mtu", "4096")
    assert r["cm"] and r["ack_timeout_exp"] == 18


def test_retry_count_exceeded_says_why_and_what_to_set(cli):
    r, err = run(cli, "--qp-timeout", "8")
    assert r["status"].startswith("qp error: retry count exceeded: the local ACK timeout (1.0 ms, exponent 8) ran "
                                  "out 8 times before the first acknowledgement")
    assert r["bw_MBps"] is None and r["retries_max"] == 7
    assert "--qp-timeout 17" in r["advice"] and "--cm" in r["advice"] and r["advice"] in err


def test_exponent_zero_is_no_timer(cli):
    r, _ = run(cli, "--qp-timeout", "0")
    assert r["ack_timeout_us"] is None and r["timeouts"] == 0 and r["status"] == "ok"
