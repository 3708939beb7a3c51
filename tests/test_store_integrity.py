"""The store checks its bytes: a checksum in every run file (any flipped bit is found), damaged runs
named and skipped, read-only stores readable, stray temporary files reported and collected, a
malformed index rebuilt."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from longhaul import sweep
from longhaul.cli import main
from longhaul.results import DamagedRun, Store

RECS = [{"size_bytes": 2, "iterations": 100, "bw_MBps": 1.5, "drops": 0, "transport": "rc"},
        {"size_bytes": 65536, "iterations": 100, "bw_MBps": 688.2, "drops": 3, "transport": "rc"}]


@pytest.fixture
def two_runs(tmp_path):
    root = tmp_path / "res"
    store = Store(root)
    a = store.put({"kind": "demo", "i": 1}, RECS, source="sim", label="one")
    b = store.put({"kind": "demo", "i": 2}, RECS[:1], source="sim", label="two")
    return root, a, b


def _flip(path: Path, bit: int) -> None:
    data = bytearray(path.read_bytes())
    data[bit // 8] ^= 1 << (bit % 8)
    path.write_bytes(bytes(data))


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.floats(min_value=0, max_value=1, exclude_max=True))
def test_any_flipped_bit_of_a_run_file_is_found_by_verify_and_by_every_read(tmp_path_factory, where):
    root = tmp_path_factory.mktemp("flip") / "res"
    store = Store(root)
    a = store.put({"kind": "demo", "i": 1}, RECS, source="sim", label="one")
    b = store.put({"kind": "demo", "i": 2}, RECS[:1], source="sim")
    path = store.run_path(a)
    _flip(path, int(where * path.stat().st_size * 8))
    fresh = Store(root)
    problems, _ = fresh.verify()
    assert len(problems) == 1 and a[:12] in problems[0]
    with pytest.raises(DamagedRun):   # never the changed values, silently
        fresh.read_run(a)
    assert fresh.records() == [{"run_id": b[:12], "kind": "demo", "source": "sim", "label": "", **RECS[0]}]
    assert list(fresh.skipped) == [path]


def test_verify_names_each_damaged_run_and_exits_2(two_runs, capsys):
    root, a, b = two_runs
    assert main(["results", "verify", "--store", str(root)]) == 0
    assert "2 run files" in capsys.readouterr().out
    _flip(root / "runs" / f"{a}.parquet", 200)
    assert main(["results", "verify", "--store", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and a[:12] in err and "checksum" in err and b[:12] not in err


def test_a_damaged_run_is_skipped_by_export_and_show_names_it(two_runs, capsys, tmp_path):
    root, a, b = two_runs
    _flip(root / "runs" / f"{a}.parquet", 300)
    out = tmp_path / "x.csv"
    assert main(["results", "export", "--store", str(root), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert next(line for line in err.splitlines() if a[:12] in line).startswith("longhaul: warning: skipped damaged run")
    assert "skipped 1 damaged run" in err
    assert [line.split(",")[0] for line in out.read_text().splitlines()[1:]] == [b[:12]]
    assert main(["results", "show", a[:8], "--store", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("longhaul: error: ") and a[:12] in err


def test_a_sweep_recomputes_a_damaged_cached_point(tmp_path, capsys):
    store = Store(tmp_path / "res")
    calls = []

    def fn(sc):
        calls.append(sc["x"])
        return [{"x": sc["x"], "y": sc["x"] ** 2}]

    points = sweep.grid({"x": [1, 2, 3]})
    first = sweep.run(fn, points, kind="demo", store=store, executor="serial")
    damaged = next(p for p in (tmp_path / "res" / "runs").glob("*.parquet"))
    _flip(damaged, 64)
    calls.clear()
    again = sweep.run(fn, points, kind="demo", store=Store(tmp_path / "res"), executor="serial")
    assert len(calls) == 1 and again.computed == 1 and again.cached == 2
    assert again.records == first.records
    assert f"skipped damaged run {damaged.stem[:12]}" in capsys.readouterr().err
    assert Store(tmp_path / "res").verify() == ([], 0)   # replaced by the recomputed run


def _read_only(root: Path, argv: list[str]) -> subprocess.CompletedProcess:
    """`longhaul ARGV` on ``root`` made read-only: a read-only bind mount as root (who may write
    anywhere), else the write permissions removed."""
    from conftest import longhaul_exe
    if os.geteuid() == 0:
        script = 'mount --bind -o ro "$0" "$0" && exec "$@"'
        return subprocess.run(["unshare", "-m", "sh", "-c", script, str(root), *longhaul_exe(), *argv],
                              capture_output=True, text=True, timeout=120)
    modes = {p: p.stat().st_mode for p in [root, *root.rglob("*")]}
    try:
        for p in modes:
            p.chmod(modes[p] & ~0o222)
        return subprocess.run([*longhaul_exe(), *argv], capture_output=True, text=True, timeout=120)
    finally:
        for p, mode in modes.items():
            p.chmod(mode)


def test_a_read_only_store_is_read_without_a_write_lock(two_runs, tmp_path):
    root, a, b = two_runs
    c = Store(root).put({"kind": "demo", "i": 3}, RECS, source="measured")   # still in the journal
    (root / ".lock").unlink()
    before = sorted((p.name, p.stat().st_mtime_ns) for p in root.rglob("*"))
    ls = _read_only(root, ["results", "ls", "--store", str(root), "--format", "csv"])
    assert ls.returncode == 0, ls.stderr
    assert all(run[:12] in ls.stdout for run in (a, b, c))
    show = _read_only(root, ["results", "show", c[:8], "--store", str(root), "--format", "json"])
    assert show.returncode == 0, show.stderr
    assert json.loads(show.stdout)["records"] == RECS
    export = _read_only(root, ["results", "export", "--store", str(root), "--format", "json"])
    assert export.returncode == 0 and len(json.loads(export.stdout)) == 5
    verify = _read_only(root, ["results", "verify", "--store", str(root)])
    assert verify.returncode == 0 and "3 run files" in verify.stdout
    assert sorted((p.name, p.stat().st_mtime_ns) for p in root.rglob("*")) == before


def test_stray_temporary_files_are_reported_and_collected(two_runs, capsys):
    root, _a, _b = two_runs
    strays = [root / "runs" / f".{'c' * 64}.parquet.0badcafe.tmp", root / ".manifest.json.12345678.tmp"]
    for p in strays:
        p.write_bytes(b"half a run")
    assert main(["results", "ls", "--store", str(root)]) == 0
    assert "2 temporary file(s)" in capsys.readouterr().err
    assert main(["results", "verify", "--store", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and all(p.name in err for p in strays)
    assert main(["results", "gc", "--store", str(root)]) == 0
    assert "removed 2 stray temporary files" in capsys.readouterr().out
    assert not any(p.exists() for p in strays)
    assert main(["results", "verify", "--store", str(root)]) == 0


@pytest.mark.parametrize("damage", [
    lambda e: e.update(started_utc=None), lambda e: e.update(n_records="2"), lambda e: e.pop("label"),
    lambda e: e.update(seed={"x": 1}),
])
def test_a_malformed_manifest_entry_rebuilds_the_index_from_the_files(two_runs, capsys, damage):
    root, a, b = two_runs
    Store(root).fold_journal()
    manifest = json.loads((root / "manifest.json").read_text())
    damage(manifest["runs"][a])
    (root / "manifest.json").write_text(json.dumps(manifest))
    assert main(["results", "ls", "--store", str(root), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["run_id"] for r in rows} == {a[:12], b[:12]} and {r["label"] for r in rows} == {"one", "two"}
    rebuilt = json.loads((root / "manifest.json").read_text())["runs"][a]
    assert isinstance(rebuilt["started_utc"], str) and rebuilt["n_records"] == 2


def test_rm_of_a_directory_named_like_a_run_is_one_line_and_removes_nothing(two_runs, capsys):
    root, a, _b = two_runs
    run_dir = root / "runs" / f"{'d' * 64}.parquet"
    run_dir.mkdir()
    assert main(["results", "rm", "dddddddd", a[:8], "--store", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("longhaul: error: ") and "is a directory" in err
    assert run_dir.is_dir() and (root / "runs" / f"{a}.parquet").exists()
    assert main(["results", "rm", "****", "--store", str(root)]) == 2   # a glob is no run id
    assert (root / "runs" / f"{a}.parquet").exists()


@pytest.fixture
def measured(tmp_path):
    fixture = Path(__file__).parent / "fixtures" / "ingest" / "perftest_write_bw_mb.txt"
    store = tmp_path / "measured"
    for d in ("0", "1000", "10000"):
        assert main(["ingest", str(fixture), "--tool", "perftest", "--delay-us", d, "--label", f"d{d}",
                     "--store", str(store), "--format", "csv"]) == 0
    return store


def test_analyse_reads_a_read_only_store_and_skips_a_damaged_run(measured, capsys):
    argv = ["analyse", "profile", "--store", str(measured), "--where", "size_bytes=65536", "--format", "json"]
    ro = _read_only(measured, argv)
    assert ro.returncode == 0, ro.stderr
    assert [r["delay_us"] for r in json.loads(ro.stdout)] == [0.0, 1000.0, 10000.0]
    damaged = next(e for e in Store(measured).runs() if e["label"] == "d1000")
    _flip(measured / damaged["file"], 500)
    capsys.readouterr()
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert [r["delay_us"] for r in json.loads(out)] == [0.0, 10000.0]   # the others carry on
    assert f"skipped damaged run {damaged['run_id'][:12]}" in err


def test_the_sweep_command_says_how_many_damaged_points_it_computed_again(tmp_path, capsys):
    argv = ["sweep", "verbs", "--grid", '{"delay_us": [0, 100], "size_bytes": [65536]}', "--store", str(tmp_path / "s"),
            "--format", "csv"]
    assert main(argv) == 0
    _flip(next((tmp_path / "s" / "runs").glob("*.parquet")), 100)
    capsys.readouterr()
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "1 computed (1 of them damaged in the store, computed again), 1 cached" in err
    assert Store(tmp_path / "s").verify() == ([], 0)
