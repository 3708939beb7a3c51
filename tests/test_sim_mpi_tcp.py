"""MPI over TCP in the simulator (`longhaul sim mpi osu --transport tcp`) as a user runs it:
records with the MPI records' keys, the link rate as a ceiling, the rendezvous round trip at
distance, determinism, one-line errors with exit status 2; and the stack calibration of
`longhaul compare mpi` recovering known costs from points the simulator itself produced."""

from __future__ import annotations

import itertools
import json

import pytest


def records(cli, *args):
    return json.loads(cli("sim", "mpi", "osu", *args, "--format", "json", check=True).stdout)


TCP = ("--transport", "tcp", "--iterations", "3")


def test_records_have_the_mpi_keys_and_the_link_is_the_ceiling(cli):
    tcp = records(cli, "--bench", "bw", "--sizes", "1K,1M", "--delay-us", "0,1000", "--rate-gbps", "1", *TCP)
    ib = records(cli, "--bench", "bw", "--sizes", "1K")
    assert set(tcp[0]) == set(ib[0])
    assert all(r["transport"] == "tcp" and r["status"] == "ok" and r["order_violations"] == 0
               and r["delivered_messages"] == r["messages"] for r in tcp)
    by = {(r["delay_us"], r["size_bytes"]): r["bw_MBps"] for r in tcp}
    assert max(by.values()) <= 125.0  # 1 Gb/s = 125 MB/s
    assert by[(0, 1 << 20)] > 100.0  # the default stack keeps up with 1 Gb/s
    assert by[(1000, 1024)] < by[(0, 1024)]


def test_latency_is_the_delay_plus_the_stack_and_library_costs(cli):
    def lat(*extra):
        return records(cli, "--bench", "latency", "--sizes", "8", "--delay-us", "1000", *TCP, *extra)[0]["lat_us"]
    ideal = lat("--stack", "ideal")
    assert 1000 < ideal < 1010
    # One way: 2 x 4 us per segment + 2 x 10 us per message on top.
    assert lat("--stack", "4,0", "--per-msg-us", "10") == pytest.approx(ideal + 28, abs=0.5)


def test_a_larger_eager_limit_saves_the_rendezvous_round_trip_at_distance(cli):
    def bw(limit):
        return records(cli, "--bench", "bw", "--sizes", "256K", "--delay-us", "5000", "--window", "8",
                       "--eager-limit", limit, *TCP)[0]["bw_MBps"]
    assert bw("1M") > 1.3 * bw("64K")


def test_a_cheaper_stack_is_never_slower_and_bbr_fills_the_link_like_cubic(cli):
    """A paced sender's core works on its next segment while the port sends the last one: BBR
    pacing at the link's rate keeps the link full whenever the stack is faster than the link
    (the core's cost used to follow each packet's wire time, which halved BBR's rate there)."""
    def bw(stack, cc):
        return records(cli, "--bench", "bw", "--sizes", "1M", "--delay-us", "1000", "--rate-gbps", "8",
                       "--transport", "tcp", "--iterations", "4", "--stack", stack, "--cc", cc)[0]["bw_MBps"]
    per_seg_us = (0.5, 0.9, 1.0, 1.2, 1.6)  # with 0.3 ns/B: 1.9 down to 0.7 GB/s of stack
    bbr = [bw(f"{s},0.3", "bbr") for s in per_seg_us]
    assert all(later <= earlier * 1.01 for earlier, later in itertools.pairwise(bbr)), bbr
    assert bbr[1] >= 0.9 * 1000.0, bbr  # 8 Gb/s = 1000 MB/s
    assert bbr[1] == pytest.approx(bw("0.9,0.3", "cubic"), rel=0.03)


def test_same_command_same_records(cli):
    args = ("--bench", "bibw", "--sizes", "300K", "--delay-us", "2000", "--window", "8", *TCP)
    assert records(cli, *args) == records(cli, *args)


@pytest.mark.parametrize("args,needle", [
    (("--bench", "bcast", "--transport", "tcp", "--nodes", "2100"), "ranks: 4200 (2100 nodes x 1 per node"),
    (("--bench", "bcast", "--transport", "tcp", "--pairs", "2"), "--pairs: only for --bench mbw_mr"),
    (("--bench", "bw", "--transport", "tcp", "--rndv-threshold", "16K"), "--rndv-threshold: not used with --transport tcp"),
    (("--bench", "bw", "--transport", "tcp", "--eager-limit", "10"), "--eager-limit: 10 bytes is out of range"),
    (("--bench", "bw", "--transport", "tcp", "--stack", "fast"), "--stack: 'fast' is neither a profile"),
    (("--bench", "bw", "--transport", "tcp", "--stack", "1,-1"), "--stack: per-byte cost -1 ns is out of range [0, 1000] ns"),
    (("--bench", "bw", "--transport", "tcp", "--rate-gbps", "0"), "--rate-gbps"),
    (("--bench", "bw", "--transport", "tcp", "--per-msg-us", "-3"), "--per-msg-us: -3 is out of range"),
    (("--bench", "bw", "--rate-gbps", "8"), "--rate-gbps: only with --transport tcp"),
])
def test_bad_input_one_line_exit_2(cli, args, needle):
    proc = cli("sim", "mpi", "osu", "--sizes", "1K", *args)
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_bcast_over_tcp_open_mpi_default_vs_hierarchical_at_distance(cli):
    """osu_bcast, 4 ranks per cluster, 1 MiB at 10 ms: Open MPI 4.1 picks basic_linear for 8
    ranks (four 1 MiB rendezvous sends cross the WAN); the hierarchical bcast sends one message
    in eager pieces and runs Open MPI's chain inside each cluster."""
    def bcast(algo):
        (r,) = records(cli, "--bench", "bcast", "--sizes", "1M", "--delay-us", "10000", "--nodes", "4", "--algo", algo,
                       "--rate-gbps", "8", *TCP)
        assert r["status"] == "ok" and r["ranks"] == 8 and r["delivered_messages"] == r["messages"], r
        return r
    flat, hier = bcast("default"), bcast("hierarchical")
    assert flat["algo"] == "linear" and hier["algo"] == "hierarchical"
    assert hier["lat_us"] < 0.75 * flat["lat_us"], (flat["lat_us"], hier["lat_us"])
    # Ranks of the far cluster wait at least one WAN crossing; the root's cluster does not.
    assert flat["lat_max_us"] > 10_000 and hier["lat_max_us"] > 10_000 and hier["lat_min_us"] < 10_000


def test_nas_skeletons_run_over_tcp_and_the_link_rate_shows(cli):
    """`sim mpi app --transport tcp`: NAS IS (alltoall-heavy) on Open MPI over TCP; a slower WAN
    link makes it slower, a longer path too, and every message arrives once."""
    def app(*extra):
        out = cli("sim", "mpi", "app", "--app", "is", "--class", "A", "--iterations", "2", "--nodes", "2",
                  "--transport", "tcp", "--format", "json", *extra, check=True).stdout
        (r,) = json.loads(out)
        assert r["transport"] == "tcp" and r["status"] == "ok" and r["delivered_messages"] == r["messages"] > 0, r
        return r["run_time_s"]
    fast = app("--rate-gbps", "10", "--delay-us", "100")
    assert app("--rate-gbps", "1", "--delay-us", "100") > fast
    assert app("--rate-gbps", "10", "--delay-us", "5000") > fast


def test_a_trace_replays_over_tcp_and_auto_goes_hierarchical_at_distance(cli, tmp_path):
    trace = tmp_path / "app.trace"
    trace.write_text("ranks 4\n0 send 2 200000\n2 recv 0 200000\n* compute 50\n* bcast 0 300000\n* allreduce 8\n")
    def replay(*extra):
        out = cli("sim", "mpi", "replay", str(trace), "--transport", "tcp", "--delay-us", "2000", "--format", "json",
                  *extra, check=True).stdout
        (r,) = json.loads(out)
        assert r["transport"] == "tcp" and r["status"] == "ok" and r["ranks"] == 4, r
        assert r["delivered_messages"] == r["messages"] and r["rendezvous_messages"] > 0, r
        return r
    flat, auto = replay(), replay("--algo", "auto")
    assert auto["run_time_s"] < flat["run_time_s"], (auto["run_time_s"], flat["run_time_s"])
    # Over verbs the same trace runs too, with MVAPICH2's protocol.
    proc = cli("sim", "mpi", "replay", str(trace), "--delay-us", "2000", "--format", "json", check=True)
    assert json.loads(proc.stdout)[0]["rndv_protocol"] != "ob1-tcp"


def test_tune_over_tcp_advises_an_eager_limit_above_the_message_at_distance(cli):
    """`tune mpi --transport tcp`: at 5 ms a 64 KiB message (rendezvous at Open MPI's 64 KiB limit,
    which includes the header) gains from a limit that sends it eagerly; then the process pairs."""
    out = cli("tune", "mpi", "--size", "64K", "--transport", "tcp", "--delay-us", "5000", "--rate-gbps", "8",
              "--format", "json", "--workers", "2", check=True).stdout
    rows = {r["knob"]: r for r in json.loads(out)}
    limit = rows["eager limit (bytes, header included)"]
    assert int(limit["default"]) == 65536 and int(limit["best"]) > 65536 and float(limit["gain_pct"]) > 10, limit
    assert int(rows["process pairs across the link"]["best"]) > 1
    proc = cli("tune", "mpi", "--size", "64K", "--transport", "tcp", "--eager-limit", "1M")
    assert proc.returncode == 2 and "--eager-limit: tune searches the eager limit itself" in proc.stderr


def test_calibration_recovers_the_costs_the_points_were_made_with():
    """The 0-delay calibration of `longhaul compare mpi`, fed points the simulator made with
    known costs (in place of emulator runs), finds those costs again."""
    from longhaul.compare.mpi import CALIBRATION, METRIC, calibrate_stack, namespace_tcp
    from longhaul.sim import mpi

    truth = {"per_seg_us": 3.0, "per_byte_ns": 0.5, "per_msg_us": 20.0}
    tcp = namespace_tcp(8.0, 0.0)
    made = []
    for bench, size in CALIBRATION:
        r = mpi.run(mpi.scenario(osu={"bench": bench, "size_bytes": size, "iterations": 2, "warmup": 1},
                                 transport="tcp", delay_us=0.0, rate_gbps=8.0, per_msg_us=truth["per_msg_us"],
                                 stack=mpi.stack_costs(truth["per_seg_us"], truth["per_byte_ns"]), **tcp))
        made.append({"test": bench, "size_bytes": size, METRIC[bench]: r[METRIC[bench]]})
    fit = calibrate_stack(8.0, made)
    def per_full_segment(c):
        return c["per_seg_us"] + 1448 * c["per_byte_ns"] / 1000
    assert per_full_segment(fit) == pytest.approx(per_full_segment(truth), rel=0.1)
    assert fit["per_msg_us"] == pytest.approx(truth["per_msg_us"], rel=0.15)
    for p in fit["points"]:
        assert p["fit"] == pytest.approx(p["emu"], rel=0.1), p
