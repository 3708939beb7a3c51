"""Sweeps: grid order, caching by scenario hash, resume after Ctrl-C, errors, MPI across ranks."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from longhaul import sweep
from longhaul.errors import UserError
from longhaul.results import Store

PYTHONPATH = str(Path(__file__).parents[1] / "python")


def test_grid_cross_product_order():
    g = sweep.grid({"a": [1, 2], "b": ["x", "y", "z"], "c": 5})
    assert len(g) == 6
    assert g[0] == {"a": 1, "b": "x", "c": 5} and g[1] == {"a": 1, "b": "y", "c": 5} and g[-1] == {"a": 2, "b": "z", "c": 5}
    with pytest.raises(UserError, match="empty list"):
        sweep.grid({"a": []})


def test_grid_runs_a_repeated_value_once(capsys):
    assert sweep.grid({"a": [1, 2, 1.0], "b": [{"k": 1}, {"k": 1}]}) == [{"a": 1, "b": {"k": 1}}, {"a": 2, "b": {"k": 1}}]
    err = capsys.readouterr().err
    assert "sweep parameter 'a': 1 given more than once" in err and "sweep parameter 'b'" in err


class Counter:
    def __init__(self, fail_at=None, interrupt_at=None):
        self.calls, self.lock = [], threading.Lock()
        self.fail_at, self.interrupt_at = fail_at, interrupt_at

    def __call__(self, sc):
        with self.lock:
            self.calls.append(sc["x"])
        if sc["x"] == self.interrupt_at:
            raise KeyboardInterrupt
        if sc["x"] == self.fail_at:
            raise RuntimeError("point failed")
        return [{"x": sc["x"], "y": sc["x"] ** 2}]


@pytest.mark.parametrize("executor", ["threads", "serial"])
def test_results_in_scenario_order_and_cached(tmp_path, executor):
    store = Store(tmp_path)
    fn = Counter()
    scen = sweep.grid({"x": list(range(12))})
    res = sweep.run(fn, scen, kind="demo", store=store, executor=executor, workers=4)
    assert [r["x"] for r in res.records] == list(range(12))
    assert res.computed == 12 and res.cached == 0 and len(store.runs()) == 12
    fn2 = Counter()
    res2 = sweep.run(fn2, scen, kind="demo", store=store, executor=executor)
    assert fn2.calls == [] and res2.cached == 12 and res2.records == res.records
    # kind is part of the key: another model is not served these results
    fn3 = Counter()
    sweep.run(fn3, scen[:2], kind="other", store=store, executor=executor)
    assert sorted(fn3.calls) == [0, 1]
    # --no-cache recomputes
    fn4 = Counter()
    sweep.run(fn4, scen[:3], kind="demo", store=store, use_cache=False, executor=executor)
    assert sorted(fn4.calls) == [0, 1, 2]


def test_interrupt_keeps_completed_points_and_resumes(tmp_path):
    store = Store(tmp_path)
    scen = sweep.grid({"x": list(range(10))})
    with pytest.raises(KeyboardInterrupt):
        sweep.run(Counter(interrupt_at=6), scen, kind="demo", store=store, executor="serial")
    assert sorted(e["run_id"] for e in store.runs()) == sorted(
        __import__("longhaul.results", fromlist=["x"]).scenario_hash({"kind": "demo", "x": i}) for i in range(6))
    again = Counter()
    res = sweep.run(again, scen, kind="demo", store=store, executor="serial")
    assert again.calls == [6, 7, 8, 9] and res.cached == 6 and [r["x"] for r in res.records] == list(range(10))


def test_error_in_one_point_keeps_the_others(tmp_path):
    store = Store(tmp_path)
    with pytest.raises(RuntimeError, match="point failed"):
        sweep.run(Counter(fail_at=3), sweep.grid({"x": list(range(6))}), kind="demo", store=store, workers=2)
    assert len(store.runs()) == 5


def test_bad_executor():
    with pytest.raises(UserError, match="executor"):
        sweep.run(Counter(), [{"x": 1}], kind="demo", executor="cluster")


def test_sigint_subprocess_then_resume(tmp_path):
    """A real Ctrl-C (SIGINT) in the middle of a sweep: finished points stay, a re-run does the rest."""
    env = {**os.environ, "PYTHONPATH": PYTHONPATH}
    cmd = [sys.executable, "-m", "longhaul.sweep", "--fn", "longhaul.sweep:demo_point", "--kind", "demo",
           "--grid", '{"x": [1,2,3,4,5,6,7,8,9,10,11,12], "sleep_s": 0.25}', "--store", str(tmp_path),
           "--executor", "serial", "--format", "csv"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    runs = tmp_path / "runs"
    deadline = time.time() + 30
    while time.time() < deadline and len(list(runs.glob("*.parquet")) if runs.exists() else []) < 3:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    done = len(list(runs.glob("*.parquet")))
    assert 3 <= done < 12
    assert not list(runs.glob(".*.tmp"))          # no half-written file
    # the index lists every saved point (the journal was folded in on the way out)
    assert sorted(json.loads((tmp_path / "manifest.json").read_text())["runs"]) == sorted(p.stem for p in runs.glob("*.parquet"))
    assert not (tmp_path / "manifest.journal").exists()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert f"{12 - done} computed, {done} cached" in out.stderr
    assert out.stdout.count("\n") == 1 + 12


def test_manifest_lists_every_point_when_the_sweep_ends(tmp_path):
    """manifest.json (read by other tools, too) is complete after a sweep, however it ends."""
    store = Store(tmp_path)

    def indexed() -> int:
        assert not (tmp_path / "manifest.journal").exists()
        return len(json.loads((tmp_path / "manifest.json").read_text())["runs"])

    ok = sweep.run(Counter(), sweep.grid({"x": list(range(40))}), kind="demo", store=store, executor="serial")
    assert indexed() == 40 and set(ok.run_ids) == set(json.loads((tmp_path / "manifest.json").read_text())["runs"])
    # a few more points after 40: too few to fold the journal on their own account
    with pytest.raises(KeyboardInterrupt):
        sweep.run(Counter(interrupt_at=45), sweep.grid({"x": list(range(40, 50))}), kind="demo", store=store,
                  executor="serial")
    assert indexed() == 45
    with pytest.raises(RuntimeError, match="point failed"):
        sweep.run(Counter(fail_at=55), sweep.grid({"x": list(range(50, 60))}), kind="demo", store=store, workers=2)
    assert indexed() == 54


def test_two_sweeps_writing_one_store_at_once_lose_no_entry(tmp_path):
    """Concurrent writers (two processes) append to the journal and fold it under the file lock."""
    env = {**os.environ, "PYTHONPATH": PYTHONPATH}

    def cmd(xs):
        return [sys.executable, "-m", "longhaul.sweep", "--fn", "longhaul.sweep:demo_point", "--kind", "demo",
                "--grid", json.dumps({"x": xs}), "--store", str(tmp_path), "--executor", "serial", "--format", "csv"]

    procs = [subprocess.Popen(cmd(list(range(k, 120, 2))), env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for k in (0, 1)]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert len(manifest["runs"]) == 120 and not (tmp_path / "manifest.journal").exists()
    assert {e["n_records"] for e in manifest["runs"].values()} == {1}


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="Open MPI (mpirun) not installed: apt-get install openmpi-bin")
def test_mpi_sweep_across_three_ranks(tmp_path):
    pytest.importorskip("mpi4py", reason="mpi4py not installed (pip install mpi4py==4.1.2)")
    env = {**os.environ, "PYTHONPATH": PYTHONPATH, "OMPI_MCA_rmaps_base_oversubscribe": "1"}
    cmd = ["mpirun", "-n", "3", "--allow-run-as-root", "--oversubscribe", sys.executable, "-m", "mpi4py.futures",
           "-m", "longhaul.sweep", "--fn", "longhaul.sweep:demo_point", "--kind", "demo",
           "--grid", '{"x": [1,2,3,4,5,6,7,8], "sleep_s": 0.05}', "--store", str(tmp_path),
           "--executor", "mpi", "--format", "csv"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = [line.split(",") for line in out.stdout.strip().splitlines()[1:]]
    assert [float(r[1]) for r in rows] == [float(x * x) for x in range(1, 9)]
    pids = {r[3] for r in rows}
    assert len(pids) == 2 and str(os.getpid()) not in pids      # two worker ranks did the work
    assert len(Store(tmp_path).runs()) == 8                      # rank 0 stored every point
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "0 computed, 8 cached" in again.stderr


def test_the_module_sweep_errors_in_one_line_as_the_command_does():
    # `python -m longhaul.sweep` printed argparse's usage and `python -m longhaul.sweep: error:`.
    p = subprocess.run([sys.executable, "-m", "longhaul.sweep", "--fn", "longhaul.sweep:demo_point"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr == "longhaul: error: the following arguments are required: --grid, --kind\n", \
        p.stderr
