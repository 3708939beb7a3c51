"""Resource admission: a job that would not fit in memory is refused before it starts, in one line with
the estimate and the limit (--max-memory, default 80% of MemAvailable); a command printing without end
to `measure` is stopped at the bound."""

from __future__ import annotations

import pytest

from longhaul import admission, measure
from longhaul.cli import main


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("longhaul: error: ") and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("argv, words", [
    (["sim", "mpi", "osu", "--bench", "alltoall", "--nodes", "2048", "--max-memory", "4G"],
     ["osu_alltoall (4096 ranks", "over the limit of 4G (--max-memory 4G)"]),
    (["sim", "mpi", "osu", "--bench", "bcast", "--nodes", "2048", "--sizes", "1K", "--max-memory", "256M"],
     ["osu_bcast (4096 ranks, 1 point(s) at once) would need an estimated 448M"]),
    (["sim", "mpi", "app", "--app", "cg", "--nodes", "1024", "--ppn", "2", "--max-memory", "256M"],
     ["the NAS skeletons (4096 ranks"]),
    (["sweep", "mpi", "--grid", '{"osu": [{"bench": "alltoall", "size_bytes": 8}], "nodes": [2, 2048]}',
      "--max-memory", "4G"], ["the grid (its largest point 4096 ranks"]),
    # At the flow level a queue pair is a few counters: 128 B a pair of ranks bounds it, not 256.
    (["sim", "mpi", "osu", "--bench", "alltoall", "--nodes", "2048", "--sizes", "64K", "--network", "fluid",
      "--max-memory", "2G"], ["osu_alltoall (4096 ranks, 1 point(s) at once) would need an estimated 2.3G"]),
    (["sim", "mpi", "osu", "--bench", "alltoall", "--nodes", "2048", "--sizes", "64K", "--network", "packet",
      "--max-memory", "2G"], ["osu_alltoall (4096 ranks, 1 point(s) at once) would need an estimated 4.3G"]),
    (["sweep", "mpi", "--grid", '{"osu": [{"bench": "alltoall", "size_bytes": 8}], "nodes": [2048], "network": ["fluid"]}',
      "--max-memory", "2G"], ["largest point 4096 ranks, 1 point(s) at once) would need an estimated 2.3G"]),
    (["sim", "mpi", "osu", "--bench", "latency", "--max-memory", "8x"], ["--max-memory: '8x' is not a size"]),
    (["sim", "mpi", "osu", "--bench", "latency", "--max-memory", "1M"], ["--max-memory: 1M is below 64M"]),
])
def test_a_job_over_the_memory_limit_is_refused_before_it_starts(argv, words, capsys, tmp_path):
    assert main([*argv, *(["--store", str(tmp_path / "s")] if argv[0] == "sweep" else [])]) == 2
    err = _one_line(capsys)
    assert all(w in err for w in words), err
    assert not (tmp_path / "s").exists()   # nothing computed, nothing stored


def test_the_default_limit_is_a_share_of_the_memory_available(capsys, monkeypatch):
    monkeypatch.setattr(admission, "available_bytes", lambda: 2 << 30)
    assert main(["sim", "mpi", "osu", "--bench", "alltoall", "--nodes", "2048", "--sizes", "1K"]) == 2
    err = _one_line(capsys)
    assert "over the limit of 1.6G (80% of the 2G available now; --max-memory raises it)" in err


def test_a_trace_declaring_thousands_of_ranks_is_refused_from_its_first_line(tmp_path, capsys):
    trace = tmp_path / "big.trace"
    trace.write_text("# 54 bytes that once took 2.2 GB\nranks 4096\n* barrier\n")
    assert main(["sim", "mpi", "replay", str(trace), "--max-memory", "256M"]) == 2
    assert "the replay of big.trace (4096 ranks" in _one_line(capsys)


def test_jobs_within_the_limit_run(capsys):
    assert main(["sim", "mpi", "osu", "--bench", "alltoall", "--nodes", "8", "--sizes", "1K", "--iterations", "1",
                 "--max-memory", "256M", "--format", "csv"]) == 0
    assert "alltoall" in capsys.readouterr().out


def test_the_estimate_grows_with_ranks_squared_only_where_every_pair_connects():
    small, large = admission.mpi_point_bytes(512, "alltoall"), admission.mpi_point_bytes(1024, "alltoall")
    assert 3 < large / small < 4.1
    small, large = admission.mpi_point_bytes(512, "other"), admission.mpi_point_bytes(1024, "other")
    assert 2 < large / small < 2.5
    assert admission.mpi_scenario_ranks({"cluster": {"nodes": 8, "ppn": 2}, "osu": {"bench": "alltoall"}}) == (
        32, "alltoall")
    assert admission.mpi_scenario_ranks({"cluster": {"nodes": 8}, "osu": {"bench": "bcast"}}) == (16, "other")
    assert admission.mpi_scenario_ranks({"cluster": {"nodes": 8}, "app": {"name": "ft"}}) == (16, "alltoall")
    assert admission.mpi_scenario_ranks({"cluster": {}, "trace": {"text": "ranks 300\n"}}) == (300, "trace")
    assert admission.mpi_scenario_network({"mpi": {"network": "fluid"}}) == "fluid"
    assert admission.mpi_scenario_network({"cluster": {}}) is None
    assert admission.trace_ranks("ranks ٣\n") == 0   # not a number: the core names the problem


def test_measure_of_a_command_that_prints_without_end_is_stopped_at_the_bound(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(measure, "TOOL_OUTPUT_BYTES", 1 << 20)
    assert main(["measure", "--tool", "perftest", "--store", str(tmp_path / "s"), "--", "yes"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == ("longhaul: error: measure: `yes` printed more than 1 MiB on stdout, more than any benchmark's "
                       "output (ingest reads at most that of a file); it was stopped (its process group killed); "
                       "nothing stored")
    assert not (tmp_path / "s").exists()
