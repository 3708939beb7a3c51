"""Progress while a point runs: an MPI job tells the core how far its ranks' programs are, the
core sums the running jobs' shares (``_core.runs_progress``), and the progress bar adds them to
the points finished, so that a single point of minutes moves the bar and its time left."""

from __future__ import annotations

import threading
import time

import pytest
import rich.console
import rich.progress

from longhaul import _core, output, sweep
from longhaul.sim import mpi


def test_a_running_mpi_job_reports_its_share_done_and_takes_it_back_when_it_ends():
    assert _core.runs_progress() == 0.0
    seen: list[float] = []
    job = threading.Thread(target=mpi.osu_sweep, args=("bcast", [1 << 20]),
                           kwargs={"nodes": 256, "network": "fluid", "iterations": 1, "show_progress": False})
    job.start()
    while job.is_alive():
        seen.append(_core.runs_progress())
        time.sleep(0.005)
    job.join()
    moving = [s for s in seen if s > 0]
    assert moving, "no share reported while the job ran"
    assert all(0.0 < s <= 1.0 for s in moving)
    assert moving == sorted(moving), "one job's share only grows"
    assert max(moving) > 0.5 and min(moving) < 0.5, moving[:3] + moving[-3:]
    assert _core.runs_progress() == 0.0   # taken back when the run returned


@pytest.fixture
def terminal_bar(monkeypatch):
    """Make the bar show (as on a terminal) and record every value it is given."""
    monkeypatch.setattr(rich.console.Console, "is_terminal", property(lambda self: True))
    shown: list[float] = []
    update = rich.progress.Progress.update

    def recording(self, task_id, **kw):
        if kw.get("completed") is not None:
            shown.append(kw["completed"])
        return update(self, task_id, **kw)

    monkeypatch.setattr(rich.progress.Progress, "update", recording)
    monkeypatch.setattr(output, "PARTIAL_REFRESH_S", 0.01)
    return shown


def test_the_bar_adds_the_running_shares_and_never_moves_back(terminal_bar):
    shares = iter([0.3, 0.6, 0.2, 0.9, 0.0] + [0.0] * 1000)   # a share leaves the sum as its point ends

    def slow(n):
        for i in range(n):
            time.sleep(0.08)
            yield i

    assert list(output.progress(slow(2), 2, "points", partial=lambda: next(shares))) == [0, 1]
    assert terminal_bar, "the bar was never updated"
    assert terminal_bar == sorted(terminal_bar), terminal_bar
    assert any(0 < v < 1 for v in terminal_bar), "the running point's share was not shown"
    assert terminal_bar[-1] == 2 and max(terminal_bar) <= 2


@pytest.mark.parametrize("executor", ["serial", "threads"])
def test_a_sweep_of_one_long_point_moves_its_bar_while_the_point_runs(terminal_bar, executor):
    point = mpi.scenario(osu={"bench": "bcast", "size_bytes": 1 << 20, "iterations": 1}, nodes=256, network="fluid")
    res = sweep.run(lambda sc: [mpi.run(sc)], [point], kind="mpi", executor=executor, workers=1)
    assert res.records[0]["status"] == "ok"
    assert any(0 < v < 1 for v in terminal_bar), terminal_bar
    assert terminal_bar == sorted(terminal_bar) and terminal_bar[-1] == 1
