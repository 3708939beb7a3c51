"""`longhaul sim tcp --profile usn`: 10GigE TCP on the UltraScience Net's loops with its hosts'
Linux 2.6.18-era stacks (BIC by default, Vegas loadable, buffers raised to TCP's largest window)."""

from __future__ import annotations

import json

import pytest


def run(cli, *args):
    proc = cli("sim", "tcp", "--profile", "usn", "--link", "10gige-wan", "--distance-miles", "1400",
               "--duration-s", "0.5", *args, "--format", "json", check=True)
    return json.loads(proc.stdout)


def test_the_2_6_18_stack_defaults(cli):
    [r] = run(cli)
    assert r["stack"] == "usn" and r["cc"] == "bic"
    # Auto-tuning's ceilings raised to the largest window TCP can advertise (window scale 14).
    assert r["rmem_max_bytes"] == 65535 << 14


@pytest.mark.parametrize("cc", ["bic", "cubic", "htcp", "scalable", "highspeed", "vegas"])
def test_every_loadable_algorithm_of_the_era_runs(cli, cc):
    [r] = run(cli, "--cc", cc, "--mtu", "9000")
    assert r["cc"] == cc and r["status"] == "ok" and 0 < r["bw_MBps"] <= 1200.0


def test_vegas_backs_off_on_queueing_where_bic_fills_the_queue(cli):
    # Vegas reads the queue from the round trip and stops growing a few segments above the base
    # RTT; BIC grows until the drop-tail queue overflows.
    bic, vegas = (run(cli, "--cc", cc, "--mtu", "9000", "--duration-s", "2")[0] for cc in ("bic", "vegas"))
    assert vegas["retransmits"] < bic["retransmits"]
