"""`longhaul tune` as a user runs it: each knob that dominates at distance comes out in the right
direction (issue 23's examples), the range searched and its edge are said, the path is named as
every other table names it, and bad input is one line with exit status 2."""

from __future__ import annotations

import json

import pytest


def knobs(cli, *args) -> dict[str, dict]:
    proc = cli("tune", *args, "--format", "json", check=True)
    return {r["knob"]: r for r in json.loads(proc.stdout)}


def test_verbs_tx_depth_at_2000_km_on_ndr(cli):
    # issue 23: 1 MiB at 2,000 km on NDR, tx-depth 128 gives 6,458 MB/s, 1024 gives 25,426
    k = knobs(cli, "verbs", "--profile", "ndr", "--size", "1M", "--distance-km", "2000", "--knobs", "tx-depth")
    depth = k["send queue depth (work requests in flight per QP)"]
    assert depth["default_value"] == 128 and depth["default_bw_MBps"] == pytest.approx(6458, rel=0.01)
    assert 512 <= depth["best_value"] <= 1024 and depth["best_bw_MBps"] > 3.5 * depth["default_bw_MBps"]
    assert depth["bw_by_value_MBps"]["1024"] == pytest.approx(25426, rel=0.01)
    # the depth stops helping once the window covers the round trip: the best is inside the range
    assert depth["note"] == "" and int(depth["searched"].split("..")[1]) > depth["best_value"]
    assert (depth["delay_us"], depth["distance_km"], depth["one_way_delay_us"]) == (0, 2000, 10000)


def test_one_tcp_stream_at_distance_is_window_limited(cli):
    # issue 23: one stream at 2,000 km is window-bound; more window or more streams fix it
    k = knobs(cli, "tcp", "--link", "10gige-lan", "--rate-gbps", "10", "--distance-km", "2000", "--duration-s", "2")
    buf, auto, streams = (k["socket buffer per stream (bytes)"], k["auto-tuning ceiling (bytes)"],
                          k["parallel streams"])
    assert buf["default"].startswith("auto") and buf["default_bw_MBps"] < 400   # 6 MiB / 20 ms
    for knob in (buf, auto, streams):
        assert knob["gain_pct"] > 100 and knob["best_bw_MBps"] > 800, knob
    assert buf["best_value"] >= 16 << 20 and "rmem_max" in buf["setting"] and "tcp_rmem" in auto["setting"]
    assert streams["best_value"] >= 4


def test_edge_of_the_range_is_said(cli):
    # 64 KiB at 2,000 km: every pair adds its own window, so the best pair count is the most tried
    table = cli("sim", "mpi", "tune", "--profile", "ndr", "--size", "64K", "--distance-km", "2000", check=True).stdout
    line = next(x for x in table.splitlines() if x.startswith("process pairs"))
    assert "at the top of the range searched (32" in line
    k = json.loads(cli("tune", "mpi", "--profile", "ndr", "--size", "64K", "--distance-km", "2000", "--format", "json",
                       check=True).stdout)
    pairs = next(r for r in k if r["knob"].startswith("process pairs"))
    assert pairs["best_value"] == 32 and pairs["note"].startswith("at the top of the range searched")
    thr = next(r for r in k if r["knob"].startswith("eager threshold"))
    assert thr["best_value"] > 65536 and thr["gain_pct"] > 20
    assert thr["searched"] == f"{thr['default']}..524288"   # the default, 128 KiB (above the message) and 4 x that


def test_mpi_over_ud_window_and_retry(cli):
    # issue 22 item 4: over UD the reliability window bounds a sender to window / round trip
    k = knobs(cli, "mpi", "--transport", "ud", "--size", "64K", "--distance-km", "2000")
    win = k["UD reliability window (frames)"]
    assert win["default_value"] == 400 and win["best_value"] > 400 and win["gain_pct"] > 100
    assert "MV2_UD_SENDWINDOW_SIZE" in win["setting"]
    assert "UD retry timeout (us)" not in k   # no loss: nothing to resend
    # the window found, given to sim mpi osu, gives the bandwidth tune predicted
    osu = json.loads(cli("sim", "mpi", "osu", "--bench", "bw", "--transport", "ud", "--sizes", "64K", "--distance-km",
                         "2000", "--ud-window", str(win["best_value"]), "--format", "json", check=True).stdout)
    assert osu[0]["bw_MBps"] == win["best_bw_MBps"]


def test_tune_prints_delay_as_every_table_does(cli):
    # delay_us is what the extender adds: 0 at 40 km of fibre, as sim mpi osu prints it
    rows = json.loads(cli("sim", "mpi", "tune", "--size", "8K", "--distance-km", "40", "--format", "json",
                          check=True).stdout)
    assert {(r["delay_us"], r["distance_km"], r["one_way_delay_us"]) for r in rows} == {(0, 40, 200)}
    osu = json.loads(cli("sim", "mpi", "osu", "--bench", "bw", "--sizes", "8K", "--distance-km", "40", "--format",
                         "json", check=True).stdout)
    assert osu[0]["delay_us"] == rows[0]["delay_us"] and osu[0]["bw_MBps"] == rows[0]["default_bw_MBps"]


@pytest.mark.parametrize("args,message", [
    (("verbs", "--size", "0"), "--size: 0 bytes is out of range"),
    (("verbs", "--knobs", "depth"), "--knobs: unknown 'depth' (valid: size, tx-depth, qps)"),
    (("tcp", "--knobs", "window,rmem"), "--knobs: unknown 'rmem' (valid: window, tcp-rmem, streams)"),
    (("mpi", "--size", "8K", "--ud-window", "800"), "--ud-window: only for --transport ud or uc"),
    (("mpi", "--size", "8K", "--ppn", "2"), "--ppn: tune sizes the job itself"),
])
def test_bad_input_is_one_line(cli, args, message):
    p = cli("tune", *args)
    assert p.returncode == 2 and p.stderr.startswith(f"longhaul: error: {message}"), p.stderr
    assert p.stderr.count("\n") == 1


def test_tables_leave_out_empty_columns_and_csv_splits_lists(cli):
    # issue 23 item 4: a bandwidth table prints no latency column, a latency table no bandwidth column
    bw = cli("sim", "mpi", "osu", "--bench", "bw", "--sizes", "8K", check=True).stdout
    lat = cli("sim", "mpi", "osu", "--bench", "latency", "--sizes", "8K", check=True).stdout
    header = lambda text: next(x for x in text.splitlines() if "size_bytes" in x)  # noqa: E731
    assert "bw_MBps" in header(bw) and "lat_us" not in header(bw)
    assert "lat_us" in header(lat) and "bw_MBps" not in header(lat)
    # csv: a per-stream list is one column per stream, at full precision
    csv = cli("sim", "tcp", "--streams", "2", "--duration-s", "0.2", "--format", "csv", check=True).stdout
    head, row = (line.split(",") for line in csv.splitlines()[:2])
    values = dict(zip(head, row))
    assert "stream_bw_MBps" not in head and {"stream_bw_MBps.1", "stream_bw_MBps.2"} <= set(head)
    assert abs(float(values["stream_bw_MBps.1"]) + float(values["stream_bw_MBps.2"]) - float(values["bw_MBps"])) < 1e-6
    assert not any(v.startswith("[") for v in row)


def test_wide_shows_every_field(cli):
    narrow = cli("sim", "verbs", "--sizes", "64K", check=True).stdout
    wide = cli("sim", "verbs", "--sizes", "64K", "--wide", check=True).stdout
    header = lambda text: next(x for x in text.splitlines() if "size_bytes" in x)  # noqa: E731
    assert "sim_events" not in header(narrow) and "tx_depth" not in header(narrow)
    assert "sim_events" in header(wide) and "tx_depth" in header(wide) and "bw_MBps" in header(wide)
    assert "lat_us" not in header(wide)   # still no empty column
