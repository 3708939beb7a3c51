"""``longhaul sim iser`` as a user runs it (records with units, formats, bad input as one line with
exit status 2, the store through ``sweep iser``), determinism, and properties of the iSER model
(hypothesis): every byte moved once, never above the link, never faster farther away."""

from __future__ import annotations

import csv
import io
import itertools
import json

import pytest
from hypothesis import given, settings, strategies as st

from longhaul.sim import iser

#: The S1 WAN: 4x SDR, 8 Gb/s of data after 8b/10b = 1000 MB/s.
SDR_DATA_MBPS = 1000.0


def test_json_records_carry_units_and_writes_fall_behind_reads_far_away(cli):
    proc = cli("sim", "iser", "--op", "read,write", "--delay-us", "0,1000", "--total-bytes", "16M", "--format", "json",
               check=True)
    recs = json.loads(proc.stdout)
    assert [(r["op"], r["delay_us"]) for r in recs] == [("read", 0), ("read", 1000), ("write", 0), ("write", 1000)]
    for r in recs:
        assert {"bw_MBps", "delay_us", "distance_km", "block_bytes", "queue_depth", "max_burst_bytes",
                "rdma_read_depth", "commands", "data_bytes", "status"} <= r.keys()
        assert r["status"] == "ok" and r["commands"] == 32 and r["data_bytes"] == 16 << 20
    bw = {(r["op"], r["delay_us"]): r["bw_MBps"] for r in recs}
    assert bw[("read", 0)] > 900 and bw[("write", 0)] > 900
    # A WRITE is pulled by RDMA Reads: 4 (InfiniHost III max_rd_atomic) x 256 KiB per 2 ms round
    # trip, about 524 MB/s at most; a READ's Writes are held only by the 32 x 512 KiB queue.
    assert bw[("write", 1000)] < 0.6 * bw[("read", 1000)]
    assert bw[("write", 1000)] < 4 * 262144 / 2000e-6 / 1e6


def test_csv_distance_and_the_session_keys(cli):
    rows = list(csv.DictReader(io.StringIO(cli(
        "sim", "iser", "--op", "write", "--distance-km", "200", "--total-bytes", "8M", "--max-outstanding-r2t", "2",
        "--max-burst-bytes", "1M", "--first-burst-bytes", "64K", "--initial-r2t", "no", "--format", "csv",
        check=True).stdout)))
    (r,) = rows
    assert float(r["distance_km"]) == pytest.approx(200.0)
    assert (r["max_outstanding_r2t"], r["initial_r2t"], r["max_burst_bytes"]) == ("2", "False", "1048576")
    assert int(r["data_bytes"]) == 8 << 20
    table = cli("sim", "iser", "--total-bytes", "2M", check=True).stdout
    assert "MB = 10^6 bytes" in table and "read" in table


def test_the_rdma_read_depth_and_bursts_bound_a_distant_write(cli):
    def bw(*args):
        (r,) = json.loads(cli("sim", "iser", "--op", "write", "--delay-us", "2000", "--total-bytes", "32M",
                              *args, "--format", "json", check=True).stdout)
        return r["bw_MBps"]

    base = bw()
    # Larger bursts move more per RDMA Read; a ConnectX (max_rd_atomic 16) keeps more Reads out.
    assert bw("--max-burst-bytes", "1M", "--first-burst-bytes", "64K", "--max-outstanding-r2t", "2") > 1.5 * base
    assert bw("--profile", "s1-connectx") > 2 * base


@pytest.mark.parametrize("args, needle", [
    (["--queue-depth", "0"], "--queue-depth: 0 is out of range [1, 4096]"),
    (["--op", "trim"], "--op: unknown 'trim' (valid: read, write)"),
    (["--block-bytes", "100"], "block_bytes: 100 is out of range [512, 1073741824]"),
    (["--first-burst-bytes", "1M"], "first_burst_bytes: 1048576 is out of range [512, 262144]"),
    (["--block-bytes", "1M", "--total-bytes", "4K"], "total_bytes: 4096 is out of range [1048576,"),
    (["--delay-us", "-5"], "--delay-us"),
    (["--backing-MBps", "0"], "--backing-MBps: 0 is out of range [1, 1e6]"),
    (["--initial-r2t", "maybe"], "--initial-r2t: invalid choice"),
])
def test_bad_input_is_one_line_and_exit_2(cli, args, needle):
    proc = cli("sim", "iser", *args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert needle in proc.stderr and proc.stderr.strip().count("\n") == 0, proc.stderr


def test_sweep_iser_saves_to_the_store_and_reuses_it(cli, tmp_path):
    grid = json.dumps({"op": ["read", "write"], "delay_us": [0, 500], "total_bytes": [4 << 20]})
    store = str(tmp_path / "store")
    first = cli("sweep", "iser", "--grid", grid, "--store", store, "--format", "json", check=True)
    assert "4 computed" in first.stderr
    again = cli("sweep", "iser", "--grid", grid, "--store", store, "--format", "json", check=True)
    assert "0 computed" in again.stderr and "4 cached" in again.stderr
    assert json.loads(again.stdout) == json.loads(first.stdout)


def test_same_seed_same_record():
    sc = iser.scenario(op="write", delay_us=300.0, total_bytes=4 << 20, seed=3)
    assert iser.run(sc) == iser.run(sc)


@settings(max_examples=12, deadline=None)
@given(op=st.sampled_from(iser.OPS), block_kib=st.sampled_from([4, 96, 512, 1536]),
       queue_depth=st.integers(1, 64), first_burst_kib=st.sampled_from([4, 64]), initial_r2t=st.booleans(),
       immediate=st.booleans(), delays=st.lists(st.sampled_from([0.0, 50.0, 400.0, 3000.0]), min_size=2, max_size=3,
                                                unique=True))
def test_every_byte_once_never_above_the_link_never_faster_farther(op, block_kib, queue_depth, first_burst_kib,
                                                                     initial_r2t, immediate, delays):
    total = 4 << 20
    recs = iser.sweep([op], delays_us=sorted(delays), total_bytes=total, block_bytes=block_kib << 10,
                      queue_depth=queue_depth, first_burst_bytes=first_burst_kib << 10, initial_r2t=initial_r2t,
                      immediate_data=immediate, show_progress=False, workers=1)
    for r in recs:
        assert r["status"] == "ok"
        # WRITE: the target got every byte (immediate, unsolicited and read) once; READ: the
        # initiator's buffers hold exactly the requested bytes (each command is also checked alone).
        assert r["data_bytes"] == total
        assert 0 < r["bw_MBps"] <= SDR_DATA_MBPS
    bws = [r["bw_MBps"] for r in recs]
    assert all(far <= near for near, far in itertools.pairwise(bws)), bws


def test_scenario_file_is_the_base_options_override_it_and_its_errors_name_its_keys(cli, tmp_path):
    path = tmp_path / "iser.toml"
    path.write_text('op = "write"\n[path]\ndelay_us = 500\n[iser]\nqueue_depth = 4\ntotal_bytes = 4194304\n')
    (rec,) = json.loads(cli("sim", "iser", "--scenario", str(path), "--format", "json", check=True).stdout)
    assert (rec["op"], rec["delay_us"], rec["queue_depth"], rec["total_bytes"]) == ("write", 500, 4, 4 << 20)
    (rec,) = json.loads(cli("sim", "iser", "--scenario", str(path), "--op", "read", "--queue-depth", "8",
                            "--format", "json", check=True).stdout)
    assert (rec["op"], rec["queue_depth"]) == ("read", 8)
    path.write_text("[iser]\nqueue_depth = 0\n")
    proc = cli("sim", "iser", "--scenario", str(path))
    assert proc.returncode == 2 and "iser.queue_depth: 0 is out of range [1, 4096]" in proc.stderr
    assert proc.stderr.strip().count("\n") == 0
