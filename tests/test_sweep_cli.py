"""`longhaul sweep MODEL`: any parameter grid of a simulator model, cached in the store, and the
same sweep spread over MPI ranks with `mpirun ... -m longhaul.cli sweep ... --executor mpi`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

GRID = '{"delay_us": [0, 1000], "size_bytes": [65536], "transport": "rc", "op": "write", "test": "bw"}'


def test_grid_runs_then_is_cached(cli, tmp_path):
    store = str(tmp_path / "st")
    first = cli("sweep", "verbs", "--grid", GRID, "--store", store, "--format", "json", check=True)
    recs = json.loads(first.stdout)
    assert sorted(r["delay_us"] for r in recs) == [0, 1000]
    assert recs[0]["bw_MBps"] > recs[1]["bw_MBps"]  # 64 KiB falls at 1 ms (S1's window of 16 messages)
    assert "2 computed, 0 cached" in first.stderr
    second = cli("sweep", "verbs", "--grid", GRID, "--store", store, "--format", "json", check=True)
    assert "0 computed, 2 cached" in second.stderr and json.loads(second.stdout) == recs


def test_table_is_the_sim_commands_plus_what_was_swept_and_a_repeat_runs_once(cli, tmp_path):
    grid = '{"delay_us": [0, 10, 0], "size_bytes": 4096, "tx_depth": [16, 64]}'
    proc = cli("sweep", "verbs", "--grid", grid, "--store", str(tmp_path / "st"), check=True)
    header = next(line for line in proc.stdout.splitlines() if "bw_MBps" in line)
    assert "tx_depth" in header and "delay_us" in header  # swept, and sim verbs' own column
    assert "sim_events" not in header and "hca" not in header  # csv and json carry those
    assert "4 computed" in proc.stderr and "'delay_us': 0 given more than once" in proc.stderr


def test_options_left_out_are_the_sim_commands(cli, tmp_path):
    # The help's example grid: what `longhaul sim verbs` would run (rc, write, bw), point for point.
    grid = '{"delay_us": [0, 1000], "size_bytes": [65536]}'
    swept = json.loads(cli("sweep", "verbs", "--grid", grid, "--store", str(tmp_path / "st"), "--format", "json",
                           check=True).stdout)
    sim = json.loads(cli("sim", "verbs", "--delay-us", "0,1000", "--sizes", "64K", "--format", "json", check=True).stdout)
    assert [r["bw_MBps"] for r in swept] == [r["bw_MBps"] for r in sim]
    assert {(r["transport"], r["op"], r["test"]) for r in swept} == {("rc", "write", "bw")}
    (tcp,) = json.loads(cli("sweep", "tcp", "--grid", '{"delay_us": [100], "duration_s": 0.2}', "--store",
                            str(tmp_path / "st"), "--format", "json", check=True).stdout)
    assert tcp["link"] == "ipoib-ud"  # sim tcp's default link


@pytest.mark.parametrize("grid,needle", [('{"delay_us": [-1]}', "delay_us: -1 is out of range"), ("[1, 2]", "--grid"),
                                         ("{nope", "not JSON"),
                                         (('{"delay_us": [-1], "size_bytes": 8, "transport": "rc", "op": "write", '
                                          '"test": "bw"}'), "delay_us"),
                                         # true is not the seed 1 it equals in Python: refused, not merged
                                         ('{"seed": [1, true], "size_bytes": [64]}', "seed: invalid type: boolean"),
                                         # a typo: the name meant, and every valid one
                                         ('{"delai_us": [1]}', ("unknown scenario parameter 'delai_us' (did you mean "
                                                               "'delay_us'? valid: cm, cross_gbps, ")),
                                         ('{"zz": [1]}', "unknown scenario parameter 'zz' (valid: cm, cross_gbps, "),
                                         # null ran the model's default as if the key were left out
                                         ('{"testbed": [null], "size_bytes": [64]}',
                                          "sweep parameter 'testbed': null is not a value"),
                                         ('{"delay_us": null, "size_bytes": [64]}',
                                          "sweep parameter 'delay_us': null is not a value")])
def test_bad_grid_is_one_line(cli, tmp_path, grid, needle):
    proc = cli("sweep", "verbs", "--grid", grid, "--store", str(tmp_path / "st"))
    assert proc.returncode == 2 and needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun not installed (Debian package openmpi-bin)")
def test_sweep_across_mpi_ranks(tmp_path):
    cmd = ["mpirun", "--oversubscribe", "-n", "3", sys.executable, "-m", "mpi4py.futures", "-m", "longhaul.cli",
           "sweep", "tcp", "--grid", '{"link": "ipoib-ud", "delay_us": [0, 1000], "streams": [1, 2], "duration_s": 0.3}',
           "--store", str(tmp_path / "st"), "--executor", "mpi", "--format", "json"]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    recs = json.loads(proc.stdout)
    assert len(recs) == 4 and {r["streams"] for r in recs} == {1, 2}
    assert "4 computed" in proc.stderr


@pytest.mark.parametrize("model, grid, key", [
    ("nfs", '{"delay_us": [0, 1000], "transport": ["rdma"]}', "bw_MBps"),
    ("pfs", '{"delay_us": [0, 1000], "duration_s": [5]}', "bw_MBps"),
    ("mpi-tcp", '{"delay_us": [0, 1000], "osu": [{"bench": "bw", "size_bytes": 65536}]}', "bw_MBps"),
])
def test_every_model_sweeps(cli, tmp_path, model, grid, key):
    recs = json.loads(cli("sweep", model, "--grid", grid, "--store", str(tmp_path / "st"), "--format", "json",
                          check=True).stdout)
    assert [r["delay_us"] for r in recs] == [0.0, 1000.0]
    assert recs[0][key] > recs[1][key] > 0          # farther is slower for a window-limited exchange


def test_a_point_is_cached_by_its_values_not_their_spelling(cli, tmp_path):
    """0, 0.0 and -0.0 are one delay: one stored run (two runs of one point would be averaged as
    repeats by `analyse`)."""
    store = str(tmp_path / "st")
    cli("sweep", "nfs", "--grid", '{"delay_us": [0.0]}', "--store", store, check=True)
    for spelling in ("-0.0", "0"):
        proc = cli("sweep", "nfs", "--grid", f'{{"delay_us": [{spelling}]}}', "--store", store, "--format", "json",
                   check=True)
        assert "0 computed, 1 cached" in proc.stderr, spelling
        assert '"delay_us": -0.0' not in proc.stdout
    assert len(json.loads(cli("results", "ls", "--store", store, "--format", "json", check=True).stdout)) == 1


def test_an_empty_store_path_is_refused_and_nothing_is_written(cli, tmp_path):
    # Path("") is the current directory: the runs would be saved wherever the command was started.
    proc = cli("sweep", "nfs", "--grid", '{"delay_us": [0]}', "--store", "", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr == ("longhaul: error: --store: empty path (give a results directory; "
                                                    "it is created when missing)\n"), proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_sweep_prints_what_sim_prints(cli, tmp_path):
    """Per-stream lists read as numbers in the table (not a Python list), and the csv follows the
    rule `sim` does: its columns, then every single-valued field (no time series in a cell)."""
    args = ("--delay-us", "100", "--duration-s", "0.2", "--streams", "2")
    grid = '{"delay_us": [100], "duration_s": 0.2, "streams": [2]}'
    sweep = ("sweep", "tcp", "--grid", grid, "--store", str(tmp_path))
    table = cli(*sweep, check=True).stdout
    assert "[" not in table and "169.2 162.6" in table
    assert "169.2 162.6" in cli("sim", "tcp", *args, check=True).stdout
    sim_csv = cli("sim", "tcp", *args, "--format", "csv", check=True).stdout.splitlines()
    sweep_csv = cli(*sweep, "--format", "csv", check=True).stdout.splitlines()
    assert set(sweep_csv[0].split(",")) == set(sim_csv[0].split(",")) and "series_t_s" not in sweep_csv[0]


@pytest.mark.parametrize("model, grid, needle", [
    # a workload that is not a table was an AttributeError traceback
    ("mpi", '{"osu": "bw", "delay_us": [0]}', 'osu: give a table/object such as {"bench": "bw"'),
    ("mpi", '{"app": 5, "delay_us": [0]}', 'app: give a table/object such as {"name": "cg"'),
    ("mpi-tcp", '{"osu": "bw", "delay_us": [0]}', 'osu: give a table/object such as {"bench": "bw"'),
])
def test_an_mpi_workload_that_is_not_a_table_is_one_line(cli, tmp_path, model, grid, needle):
    proc = cli("sweep", model, "--grid", grid, "--store", str(tmp_path / "st"))
    assert proc.returncode == 2 and proc.stderr.startswith(f"longhaul: error: {needle}") \
        and proc.stderr.count("\n") == 1, proc.stderr


def test_grid_takes_the_names_the_output_and_the_cli_use(cli, tmp_path):
    # issue 23: a grid refused distance_km, the output's own column, and knew only testbed/fibre_km/size_bytes
    store = str(tmp_path / "st")
    named = json.loads(cli("sweep", "verbs", "--grid", '{"distance_km": [40], "--profile": "ndr", "sizes": ["64K"], '
                           '"tx-depth": 256}', "--store", store, "--format", "json", check=True).stdout)
    inner = json.loads(cli("sweep", "verbs", "--grid", '{"fibre_km": [40], "testbed": "ndr", "size_bytes": [65536], '
                           '"tx_depth": 256}', "--store", store, "--format", "json", check=True).stdout)
    assert named == inner
    (r,) = named
    assert (r["distance_km"], r["testbed"], r["size_bytes"], r["tx_depth"]) == (40, "ndr", 65536, 256)
    miles = json.loads(cli("sweep", "verbs", "--grid", '{"distance_miles": 100, "size_bytes": 4096}', "--store", store,
                           "--format", "json", check=True).stdout)
    assert miles[0]["distance_km"] == pytest.approx(160.9344)
    p = cli("sweep", "verbs", "--grid", '{"distance_km": [40], "fibre_km": [3]}', "--store", store)
    assert p.returncode == 2
    assert p.stderr == ("longhaul: error: sweep parameter 'fibre_km': names the same parameter as 'distance_km' "
                        "(fibre_km); give one\n")
