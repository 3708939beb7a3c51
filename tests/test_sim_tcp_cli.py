"""``longhaul sim tcp`` as a user runs it: records with units, formats, and bad input as one line
with exit status 2."""

from __future__ import annotations

import csv
import io
import json

import pytest

from longhaul.sim import tcp


def test_json_records_carry_units_and_per_stream_values(cli):
    proc = cli("sim", "tcp", "--link", "ipoib-ud", "--delay-us", "0,1000", "--streams", "1,2", "--window", "256K",
               "--duration-s", "0.5", "--format", "json", check=True)
    recs = json.loads(proc.stdout)
    assert len(recs) == 4
    for r in recs:
        assert {"bw_MBps", "stream_bw_MBps", "retransmits", "delay_us", "distance_km", "mtu_bytes"} <= r.keys()
        assert len(r["stream_bw_MBps"]) == r["streams"]
        assert r["bw_MBps"] == pytest.approx(sum(r["stream_bw_MBps"]))
    one = {r["delay_us"]: r["bw_MBps"] for r in recs if r["streams"] == 1}
    assert one[1000.0] < 0.6 * one[0.0], "a 256 KiB window cannot fill a 2 ms round trip"


def test_a_window_of_one_segment_is_updated_when_read_not_on_the_delayed_ack_timer(cli):
    # IPoIB-CM's 64 KiB buffer holds one 65468-byte segment: the receiver must reopen the window
    # as soon as it has read it (Linux tcp_cleanup_rbuf), or every segment waits 40 ms (1.6 MB/s).
    proc = cli("sim", "tcp", "--link", "ipoib-cm", "--window", "64K,128K", "--delay-us", "0", "--duration-s", "0.3",
               "--format", "json", check=True)
    bw = {r["window_bytes"]: r["bw_MBps"] for r in json.loads(proc.stdout)}
    assert bw[65536] > 300 and bw[131072] > 1.8 * bw[65536], bw
    assert all(r["min_rtt_us"] < 1000 for r in json.loads(proc.stdout))


def test_window_option_overrides_the_scenario_files_either_way(cli, tmp_path):
    fixed = tmp_path / "fixed.toml"
    fixed.write_text('link = "ipoib-ud"\n[tcp]\nwindow_bytes = 393216\n')
    run = ["--delay-us", "0", "--duration-s", "0.01", "--format", "json"]
    (kept,) = json.loads(cli("sim", "tcp", "--scenario", str(fixed), *run, check=True).stdout)
    assert kept["window_bytes"] == 393216 and kept["rmem_max_bytes"] is None
    recs = json.loads(cli("sim", "tcp", "--scenario", str(fixed), "--window", "auto,1M", *run, check=True).stdout)
    assert [(r["window_bytes"], r["rmem_max_bytes"]) for r in recs] == [(None, 6291456), (1 << 20, None)]
    auto = tmp_path / "auto.toml"
    auto.write_text('link = "ipoib-ud"\n[tcp]\nrmem_max_bytes = 16777216\n')
    (r,) = json.loads(cli("sim", "tcp", "--scenario", str(auto), "--window", "1M", *run, check=True).stdout)
    assert (r["window_bytes"], r["rmem_max_bytes"]) == (1 << 20, None)
    both = tmp_path / "both.toml"
    both.write_text('link = "ipoib-ud"\n[tcp]\nwindow_bytes = 393216\nrmem_max_bytes = 16777216\n')
    proc = cli("sim", "tcp", "--scenario", str(both), *run)
    assert proc.returncode == 2 and "window_bytes: a fixed socket buffer excludes rmem_max_bytes" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_no_round_trip_measured_is_an_empty_min_rtt_not_zero(cli):
    # 1 ms on a 2 ms round trip: nothing has come back yet (it printed 0.0 us).
    (r,) = json.loads(cli("sim", "tcp", "--link", "10gige-lan", "--delay-us", "1000", "--duration-s", "0.001",
                          "--format", "json", check=True).stdout)
    assert r["min_rtt_us"] is None and r["bw_MBps"] == 0


def test_csv_and_table_and_distance(cli):
    proc = cli("sim", "tcp", "--link", "10gige-lan", "--distance-km", "100", "--cc", "bbr", "--duration-s", "0.2",
               "--format", "csv", check=True)
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert rows[0]["cc"] == "bbr" and float(rows[0]["distance_km"]) == pytest.approx(100.0)
    table = cli("sim", "tcp", "--link", "oc192", "--duration-s", "0.1", check=True).stdout
    assert "MB = 10^6 bytes" in table and "oc192" in table
    # Large values print whole, never with an exponent (it printed 1e+04 for 10000 us).
    table = cli("sim", "tcp", "--link", "oc192", "--delay-us", "10000", "--duration-s", "0.05", check=True).stdout
    assert " 10000 " in table and "e+0" not in table, table


def test_help_lists_units_defaults_and_ranges(cli):
    out = cli("sim", "tcp", "--help", check=True).stdout
    for text in ("--link", "--mtu", "--delay-us", "--streams", "--window", "--cc", "--loss", "--cross-gbps",
                 "--duration-s", "--format", "576..65520", "auto", "cubic", "0..0.5"):
        assert text in out, text


@pytest.mark.parametrize("args, words", [
    (["--cc", "westwood"], "--cc"),
    (["--link", "fddi"], "--link"),
    (["--link", "ipoib-ud", "--mtu", "4000"], "mtu_bytes: 4000 is out of range for ipoib-ud [576, 2044]"),
    (["--link", "10gige-lan", "--mtu", "100"], "mtu_bytes: 100 is out of range"),
    (["--loss", "-0.1"], "--loss: -0.1 is out of range [0, 0.5]"),
    (["--link", "10gige-lan", "--cross-gbps", "12"], "cross_gbps: 12 is out of range (0, 10.0000]"),
    # 0 is no rate: the same open range whatever the bad value (it said [0, 400] for nan)
    (["--cross-gbps", "0"], "--cross-gbps: 0 is out of range (0, 400]"),
    (["--cross-gbps", "nan"], "--cross-gbps: nan is out of range (0, 400]"),
    (["--streams", "0"], "--streams: 0 is out of range [1, 1024]"),
    (["--window", "lots"], "--window"),
    (["--window", "64K,,1M"], "--window: empty item in '64K,,1M'"),
    (["--delay-us", "-5"], "--delay-us"),
    (["--rto-restart", "sometimes"], "--rto-restart"),
    (["--cwnd-growth", "fast"], "--cwnd-growth"),
    (["--initial-cwnd", "0"], "--initial-cwnd: 0 is out of range [1, 1000]"),
    (["--seed", "-2"], "--seed: -2 is out of range [0, 18446744073709551615]"),
    # A rate above the named link's would label every record with a link it is not.
    (["--link", "10gige-lan", "--rate-gbps", "100"],
     ("rate_gbps: 100 is above the 10gige-lan line rate of 10 Gb/s (valid: (0, 10]; a faster WAN is another link: "
      "100gige, 200gige, 400gige)")),
    (["--link", "25gige", "--rate-gbps", "40"], "a faster WAN is another link: 40gige, 100gige, 200gige, 400gige"),
])
def test_bad_input_is_one_line_and_exit_2(cli, args, words):
    proc = cli("sim", "tcp", "--duration-s", "0.01", *args)
    assert proc.returncode == 2, proc.stderr
    assert words in proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


@pytest.mark.parametrize("link, gbps", [("25gige", 25), ("40gige", 40), ("100gige", 100), ("200gige", 200),
                                        ("400gige", 400)])
def test_todays_ethernet_links_run_at_their_mac_rate_and_never_above_it(cli, link, gbps):
    """With no host cost, jumbo-frame streams fill the link to its MAC rate less the framing (38 bytes
    of Ethernet, 52 of IP/TCP per 9000-byte frame), never more; a sub-rate circuit on the link says so
    in wan_gbps."""
    proc = cli("sim", "tcp", "--link", link, "--mtu", "9000", "--streams", "8", "--stack", "ideal",
               "--duration-s", "0.05", "--format", "json", check=True)
    [r] = json.loads(proc.stdout)
    goodput = gbps * 1e3 / 8 * (9000 - 52) / (9000 + 38)
    assert r["link"] == link and r["wan_gbps"] == gbps
    assert 0.9 * goodput <= r["bw_MBps"] <= goodput * 1.0001, (r["bw_MBps"], goodput)
    slow = json.loads(cli("sim", "tcp", "--link", link, "--rate-gbps", str(gbps / 2), "--duration-s", "0.01",
                          "--format", "json", check=True).stdout)[0]
    assert slow["link"] == link and slow["wan_gbps"] == gbps / 2


def test_one_stream_of_the_modern_stack_is_held_by_its_receiving_core(cli):
    """At 100 GbE and 1500 bytes one stream gets what one core receives (150 ns + 0.06 ns/byte per
    segment: ~6.1 GB/s), not the link; several streams get the link."""
    recs = json.loads(cli("sim", "tcp", "--link", "100gige", "--streams", "1,8", "--duration-s", "0.05",
                          "--format", "json", check=True).stdout)
    bw = {r["streams"]: r["bw_MBps"] for r in recs}
    core = 1448 / (150 + 1448 * 0.06) * 1e3
    assert 0.9 * core <= bw[1] <= core and bw[8] > 1.5 * bw[1], (bw, core)


def test_library_sweep_and_determinism():
    a = tcp.sweep("10gige-wan", delays_us=[500], streams=[2], duration_s=0.3, loss=1e-3, show_progress=False)
    b = tcp.sweep("10gige-wan", delays_us=[500], streams=[2], duration_s=0.3, loss=1e-3, show_progress=False)
    assert a == b and a[0]["retransmits"] > 0
    assert a[0]["wan_gbps"] == pytest.approx(9.584_64 * 64 / 66)


def test_cross_traffic_bursts_share_the_wan():
    r = tcp.run(tcp.scenario(link="10gige-lan", stack="ideal", delay_us=1000, duration_s=1, window_bytes=64 << 20,
                             cross_gbps=4, cross_on_ms=10, cross_off_ms=10))
    assert r["cross_bw_MBps"] == pytest.approx(250, rel=0.1)
    assert r["bw_MBps"] + r["cross_bw_MBps"] <= 10e3 / 8


def test_without_rack_lost_retransmissions_wait_for_the_rto(cli):
    # 2% random loss at 1 ms: many retransmissions are lost again. RACK (Linux tcp_recovery=1)
    # finds them within a round trip; without it (--no-rack) each one costs a timeout.
    def run(*extra):
        proc = cli("sim", "tcp", "--link", "10gige-lan", "--delay-us", "1000", "--loss", "0.02", "--window", "16M",
                   "--duration-s", "5", "--format", "json", *extra, check=True)
        return json.loads(proc.stdout)[0]

    rack, no_rack = run(), run("--no-rack")
    print(f"RACK: {rack['timeouts']} timeouts, {rack['bw_MBps']:.2f} MB/s; without: {no_rack['timeouts']} timeouts, "
          f"{no_rack['bw_MBps']:.2f} MB/s")
    assert no_rack["timeouts"] >= 5 * max(rack["timeouts"], 1)
    assert no_rack["bw_MBps"] < rack["bw_MBps"]


def test_ns3_recovery_rules_time_out_where_linux_recovers(cli):
    # 70 ms one way, 100-packet queue: slow start overshoots and loses ~160 segments. Linux's rules
    # repair them in one fast recovery; ns-3 3.37's (docs/models/tcp.md, "ns-3 comparison") time out 200 ms
    # after the first partial ACK, while the recovery still needs a third round trip.
    def run(*extra):
        proc = cli("sim", "tcp", "--link", "10gige-lan", "--rate-gbps", "1", "--delay-us", "70000", "--queue", "100p",
                   "--window", "64M", "--cc", "reno", "--stack", "ideal", "--no-hystart", "--no-rack",
                   "--no-delayed-ack", "--duration-s", "2", "--format", "json", *extra, check=True)
        return json.loads(proc.stdout)[0]
    linux = run()
    ns3 = run("--rto-formula", "rfc6298", "--rto-restart", "first-partial-ack", "--rto-ssthresh", "every-timeout",
              "--cwnd-growth", "cumulative")
    assert (linux["timeouts"], ns3["timeouts"]) == (0, 1)
    assert ns3["bw_MBps"] < 0.8 * linux["bw_MBps"]


def test_a_negative_zero_loss_is_zero_in_the_records(cli):
    (rec,) = json.loads(cli("sim", "tcp", "--duration-s", "0.01", "--loss", "-0", "--format", "json", check=True).stdout)
    assert json.dumps(rec["loss"]) == "0.0"  # not -0.0


def test_cross_traffic_on_and_off_for_equal_times(cli):
    # ON,OFF is a pair, not a list of points: 10,10 is a 50% duty cycle, not "10 given twice".
    proc = cli("sim", "tcp", "--link", "10gige-lan", "--cross-gbps", "5", "--cross-on-off-ms", "10,10",
               "--duration-s", "0.2", "--format", "json", check=True)
    (rec,) = json.loads(proc.stdout)
    assert proc.stderr == "" and rec["cross_bw_MBps"] == pytest.approx(5e9 / 8 / 1e6 / 2, rel=0.05)


@pytest.mark.parametrize("content", ["stack = {per_seg_us = 3.0}\n", "stack = 5\n"])
def test_a_stack_that_is_neither_a_name_nor_costs_says_what_one_is(cli, tmp_path, content):
    # serde's own words leaked: "data did not match any variant of untagged enum StackSpec".
    f = tmp_path / "s.toml"
    f.write_text(content)
    proc = cli("sim", "tcp", "--scenario", str(f), "--duration-s", "0.01")
    assert proc.returncode == 2 and proc.stderr == (
        f"longhaul: error: scenario {f}: stack: expected a stack name (s1, s3, usn, modern, ideal) or costs {{per_seg_us, "
        "per_byte_ns[, ack_us, cores]} (per_seg_us and per_byte_ns both required; no other keys)\n"), proc.stderr
