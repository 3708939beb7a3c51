"""The failover scenario vocabulary (``[[events]]``, longhaul.failover) and the drill's arithmetic
(time series from the data plane's counters, phases, the side-by-side with the simulator), without
the emulator: every fault one line naming the range, phases that tile the run."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, strategies as st

from longhaul import failover
from longhaul.compare.failover import TCP_IP_HEADER_BYTES, side_by_side
from longhaul.emu import drill
from longhaul.errors import UserError


def ev(at_s, link, action="down"):
    return {"at_s": at_s, "link": link, "action": action}


def test_events_are_put_in_time_order_and_cut_the_run_into_phases():
    events = failover.parse([ev(7, 1, "up"), ev(3, 1), ev(5, 2)], links=4, duration_s=10)
    assert [(e.at_s, e.link, e.action) for e in events] == [(3, 1, "down"), (5, 2, "down"), (7, 1, "up")]
    phases = failover.phases(events, 4, 10)
    assert [(p.from_s, p.to_s, p.links_up) for p in phases] == [
        (0, 3, (0, 1, 2, 3)), (3, 5, (0, 2, 3)), (5, 7, (0, 3)), (7, 10, (0, 1, 3))]
    assert phases[0].event is None and phases[3].event == events[2]


@pytest.mark.parametrize("raw, words", [
    ([ev(3, 4)], "events[0].link: 4 does not exist (valid: 0..3 for wan_links = 4)"),
    ([ev(3, -1)], "events[0].link: -1 does not exist"),
    ([ev(3, True)], "events[0].link: True does not exist"),
    ([ev(10, 1)], "events[0].at_s: 10 is outside the run (valid: 0 < at_s < duration_s = 10 s)"),
    ([ev(float("nan"), 1)], "events[0].at_s: nan is outside the run"),
    ([ev("3", 1)], "events[0].at_s: '3' is outside the run"),
    ([ev(3, 1, "off")], "events[0].action: 'off' is not one of 'down', 'up'"),
    ([{"at_s": 3, "link": 1}], "events[0]: missing 'action' (an event has at_s, link and action)"),
    ([{**ev(3, 1), "when": 2}], "events[0]: unknown key 'when' (an event has at_s, link, action)"),
    ([ev(3, 1), ev(4, 1)], "events: at 4 s link 1 is already down (links down then: 1)"),
    ([ev(3, 1, "up")], "events: at 3 s link 1 is already up (links down then: none)"),
    ({"at_s": 3}, "events: give a list of tables"),
    (["down"], "events[0]: give a table with at_s, link and action"),
])
def test_every_bad_event_is_one_line_naming_it_and_the_range(raw, words):
    with pytest.raises(UserError) as err:
        failover.parse(raw, links=4, duration_s=10)
    assert words in str(err.value) and "\n" not in str(err.value)


@given(st.integers(1, 6), st.lists(st.tuples(st.floats(0.01, 9.99), st.integers(0, 5)), max_size=12))
def test_phases_tile_the_run_and_follow_the_links(links, draws):
    # A valid schedule: toggle the drawn link at each drawn time.
    up = [True] * links
    raw = []
    for t, drawn in sorted(draws):
        k = drawn % links
        raw.append(ev(t, k, "down" if up[k] else "up"))
        up[k] = not up[k]
    events = failover.parse(raw, links, 10.0)
    phases = failover.phases(events, links, 10.0)
    assert phases[0].from_s == 0 and phases[-1].to_s == 10
    assert all(a.to_s == b.from_s for a, b in itertools.pairwise(phases))
    assert all(p.from_s < p.to_s for p in phases)
    assert set(phases[-1].links_up) == {k for k in range(links) if up[k]}


def test_series_is_bytes_over_the_data_planes_own_clock_per_link():
    samples = [{"elapsed_s": 1.0, "bytes": [0, 0], "up": [True, True]},
               {"elapsed_s": 1.5, "bytes": [1_000_000, 3_000_000], "up": [True, False]}]
    (row,) = drill.series(samples, t0=1.0)
    assert row == {"t_s": 0.5, "bw_MBps": 8.0, "link_bw_MBps": [2.0, 6.0], "links_up": 1}


def test_phase_level_dip_and_recovery():
    events = failover.parse([ev(2, 1)], 2, 4)
    rows = [{"t_s": t / 10, "bw_MBps": bw, "link_bw_MBps": [bw / 2, bw / 2]}
            for t, bw in [(5, 10), (10, 10), (15, 10), (20, 10), (25, 1), (30, 4), (35, 5), (40, 5)]]
    first, second = drill.phase_records(rows, failover.phases(events, 2, 4), link_MBps=5.0)
    assert first["bw_MBps"] == 10 and first["capacity_MBps"] == 10 and first["recovery_s"] is None
    assert second["event"] == "link 1 down" and second["links_up"] == 1
    assert second["bw_MBps"] == 5 and second["dip_MBps"] == 1
    assert second["recovery_s"] == pytest.approx(1.5)   # 90% of 5 MB/s first reached at 3.5 s


def test_side_by_side_puts_tcp_payload_beside_the_simulator():
    emulated = {"phases": [{"phase": 0, "event": "start", "links_up": 2, "bw_MBps": 100.0, "dip_MBps": 50.0,
                            "recovery_s": None},
                           {"phase": 1, "event": "link 0 down", "links_up": 1, "bw_MBps": 50.0, "dip_MBps": 10.0,
                            "recovery_s": 0.2}]}
    simulated = [{"phase": 0, "bw_MBps": 96.5, "recovery_s": None}, {"phase": 1, "bw_MBps": 50.0, "recovery_s": None}]
    rows = side_by_side(emulated, simulated, mtu=1500)
    payload = (1500 - TCP_IP_HEADER_BYTES) / 1500
    assert rows[0]["emu_bw_MBps"] == round(100 * payload, 3) and rows[0]["sim_bw_MBps"] == 96.5
    assert rows[0]["rel_diff"] == round((96.5 - 100 * payload) / (100 * payload), 4)
    assert rows[1]["emu_recovery_s"] == 0.2 and rows[1]["sim_recovery_s"] is None
