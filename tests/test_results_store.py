"""Results store: round trip, cache key, atomic writes, damaged/foreign files, CLI ls/show/export/rm."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from longhaul.cli import main
from longhaul.errors import UserError
from longhaul.results import Store, canonical_json, scenario_hash

RECS = [{"size_bytes": 2, "delay_us": 0.0, "bw_MBps": 1.5, "transport": "rc"},
        {"size_bytes": 65536, "delay_us": 1000.0, "bw_MBps": 688.2, "transport": "rc"}]


def test_scenario_hash_is_canonical():
    a = {"b": [1, 2], "a": {"y": 1, "x": "é"}}
    b = {"a": {"x": "é", "y": 1}, "b": (1, 2)}
    assert canonical_json(a) == '{"a":{"x":"é","y":1},"b":[1,2]}'
    assert scenario_hash(a) == scenario_hash(b)
    assert scenario_hash(a) != scenario_hash({**a, "seed": 2})
    # numbers by value: a whole float is its int, whatever its sign of zero; other values stay apart
    assert scenario_hash({"d": [1000.0, -0.0]}) == scenario_hash({"d": [1000, 0]})
    assert len({scenario_hash({"d": v}) for v in (0.5, 1, True, "1", 1e300)}) == 5
    assert len(scenario_hash(a)) == 64


def test_put_get_cached_and_facts(tmp_path):
    store = Store(tmp_path / "res")
    sc = {"kind": "demo", "transport": "rc", "seed": 7}
    assert store.get_cached(sc) is None
    run_id = store.put(sc, RECS, source="sim", label="t1")
    assert run_id == scenario_hash(sc)
    assert store.get_cached(dict(reversed(list(sc.items())))) == RECS
    meta, recs = store.read_run(run_id)
    assert recs == RECS
    assert meta["scenario"] == sc and meta["seed"] == 7 and meta["source"] == "sim" and meta["label"] == "t1"
    assert meta["software_version"].startswith("longhaul ")
    assert {"hostname", "os", "python", "cpus"} <= set(meta["host"])
    assert meta["started_utc"] <= meta["finished_utc"]
    manifest = json.loads((tmp_path / "res" / "manifest.json").read_text())
    assert manifest["runs"][run_id]["n_records"] == 2
    # no temp files left behind
    assert [p.name for p in (tmp_path / "res" / "runs").iterdir()] == [f"{run_id}.parquet"]


def test_a_run_whose_scenario_leaves_the_seed_to_the_model_keeps_the_records_seed(tmp_path):
    store = Store(tmp_path / "res")
    same = store.put({"kind": "demo", "x": 1}, [{"x": 1, "seed": 1}, {"x": 2, "seed": 1}], source="sim")
    mixed = store.put({"kind": "demo", "x": 2}, [{"x": 1, "seed": 1}, {"x": 2, "seed": 2}], source="sim")
    assert store.read_run(same)[0]["seed"] == 1
    assert store.read_run(mixed)[0]["seed"] is None  # no one seed to name


def test_cache_miss_on_other_software_version(tmp_path, monkeypatch):
    store = Store(tmp_path)
    store.put({"kind": "demo"}, RECS, source="sim")
    import longhaul.results as results

    monkeypatch.setitem(results._VERSION_CACHE, "fp", "0123456789ab")   # a rebuilt / edited model
    assert store.get_cached({"kind": "demo"}) is None
    assert store.get_cached({"kind": "demo"}, same_version=False) == RECS


def test_manifest_rebuilt_from_files(tmp_path):
    store = Store(tmp_path)
    rid = store.put({"kind": "demo"}, RECS, source="measured", label="site-a")
    (tmp_path / "manifest.json").write_text("{ not json")
    entries = Store(tmp_path).runs()
    assert [e["run_id"] for e in entries] == [rid]
    assert entries[0]["label"] == "site-a"
    assert json.loads((tmp_path / "manifest.json").read_text())["runs"][rid]["source"] == "measured"


def test_interrupted_write_leaves_old_run(tmp_path, monkeypatch):
    store = Store(tmp_path)
    sc = {"kind": "demo"}
    store.put(sc, RECS, source="sim")
    import longhaul.results as results

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(results.os, "replace", boom)
    with pytest.raises(KeyboardInterrupt):
        store.put(sc, [{"size_bytes": 1, "bw_MBps": 0.0}], source="sim")
    monkeypatch.undo()
    assert store.get_cached(sc) == RECS
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [f"{scenario_hash(sc)}.parquet"]


def test_bad_source_and_mixed_types(tmp_path):
    store = Store(tmp_path)
    with pytest.raises(UserError, match="source 'lab'"):
        store.put({"k": 1}, RECS, source="lab")
    with pytest.raises(ValueError, match="column 'x'"):
        store.put({"k": 1}, [{"x": 1}, {"x": "one"}], source="sim")


def test_store_path_is_a_file(tmp_path, capsys):
    f = tmp_path / "f.parquet"
    f.write_text("x")
    assert main(["results", "ls", "--store", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a file" in err


scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**62), 2**62),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_store_round_trip_property(tmp_path_factory, data):
    """Any homogeneous table of scalars comes back exactly (same keys, values and types)."""
    keys = data.draw(st.lists(st.text("abcdefgh_", min_size=1, max_size=6), min_size=1, max_size=4, unique=True))
    kinds = {k: data.draw(st.sampled_from(["int", "float", "str", "bool"])) for k in keys}
    strat = {"int": st.integers(-(2**62), 2**62), "float": st.floats(allow_nan=False, allow_infinity=False),
             "str": st.text(max_size=12), "bool": st.booleans()}
    recs = data.draw(st.lists(st.fixed_dictionaries({k: st.one_of(st.none(), strat[kinds[k]]) for k in keys}),
                              min_size=1, max_size=8))
    store = Store(tmp_path_factory.mktemp("rt"))
    sc = {"kind": "prop", "keys": keys}
    store.put(sc, recs, source="sim")
    back = store.get_cached(sc)
    assert back == recs
    for a, b in zip(recs, back):
        for k in keys:
            assert type(a[k]) is type(b[k]) or (a[k] is None and b[k] is None)


# ------------------------------------------------------------------------------------------ CLI
@pytest.fixture
def filled(tmp_path):
    store = Store(tmp_path / "res")
    a = store.put({"kind": "demo", "i": 1}, RECS, source="sim", label="one")
    b = store.put({"kind": "ingest-perftest", "i": 2}, RECS[:1], source="measured", label="site-a")
    return tmp_path / "res", a, b


def test_cli_ls_show_export_rm(filled, capsys, tmp_path):
    root, a, b = filled
    assert main(["results", "ls", "--store", str(root), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["run_id"] for r in rows} == {a[:12], b[:12]}
    assert main(["results", "ls", "--store", str(root), "--source", "measured", "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert b[:12] in out and a[:12] not in out

    assert main(["results", "show", a[:6], "--store", str(root), "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["records"] == RECS and shown["run"]["scenario"] == {"kind": "demo", "i": 1}

    out_csv = tmp_path / "all.csv"
    assert main(["results", "export", "--store", str(root), "--out", str(out_csv)]) == 0
    lines = out_csv.read_text().splitlines()
    assert lines[0].startswith("run_id,kind,source,label,") and len(lines) == 1 + 3
    out_pq = tmp_path / "all.parquet"
    assert main(["results", "export", "--store", str(root), "--format", "parquet", "--out", str(out_pq)]) == 0
    assert pq.read_table(out_pq).num_rows == 3
    assert main(["results", "export", "--store", str(root), "--format", "parquet"]) == 2

    # A full id with anything after it is no run's id (it named b, and rm removed it).
    assert main(["results", "rm", b + "xx", "--store", str(root)]) == 2
    assert f"run '{b}xx': no such run" in capsys.readouterr().err
    assert main(["results", "rm", b[:8], "--store", str(root)]) == 0
    capsys.readouterr()
    assert [e["run_id"] for e in Store(root).runs()] == [a]
    assert main(["results", "rm", "--store", str(root)]) == 2
    assert main(["results", "rm", "--all", "--store", str(root)]) == 0
    assert Store(root).runs() == []


def test_cli_unknown_and_ambiguous_run(filled, capsys):
    root, _a, _b = filled
    assert main(["results", "show", "zzzz", "--store", str(root)]) == 2
    assert "no such run" in capsys.readouterr().err
    assert main(["results", "show", "ab", "--store", str(root)]) == 2
    assert "at least 4" in capsys.readouterr().err


@pytest.mark.parametrize("content", [b"garbage, not parquet at all", b"PAR1" + b"\0" * 20 + b"PAR1"])
def test_a_damaged_file_is_named_once_and_skipped_and_verify_fails(filled, capsys, content):
    root, a, b = filled
    bad = root / "runs" / f"{'e' * 64}.parquet"
    bad.write_bytes(content)
    for argv in (["results", "ls", "--format", "csv"], ["results", "export"]):
        assert main([*argv, "--store", str(root)]) == 0
        out, err = capsys.readouterr()
        assert a[:12] in out and b[:12] in out   # the good runs are not blocked
        warnings = [line for line in err.splitlines() if "eeeeeeee" in line]
        assert len(warnings) == 1 and "damaged" in warnings[0] and "Traceback" not in err
    assert main(["results", "verify", "--store", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "eeeeeeee" in err and "Traceback" not in err
    assert bad.read_bytes() == content           # nothing lost: the damaged file is untouched
    assert Store(root).read_run(a)[1] == RECS    # and the good runs are intact
    assert main(["results", "rm", "eeeeeeee", "--store", str(root)]) == 0
    assert main(["results", "verify", "--store", str(root)]) == 0


def test_foreign_parquet_named_as_run(filled, capsys):
    root, a, _b = filled
    foreign = root / "runs" / f"{'f' * 64}.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), foreign)
    assert main(["results", "ls", "--store", str(root)]) == 0
    out, err = capsys.readouterr()
    assert "foreign" in err and err.count("\n") == 1 and a[:12] in out
    assert main(["results", "verify", "--store", str(root)]) == 2
    assert "foreign" in capsys.readouterr().err
    assert pq.read_table(foreign).num_rows == 2


def test_cli_subprocess_and_env_store(filled, tmp_path):
    import subprocess
    import sys

    root, a, b = filled
    env = {**os.environ, "LONGHAUL_STORE": str(root), "PYTHONPATH": str(Path(__file__).parents[1] / "python")}
    out = subprocess.run([sys.executable, "-m", "longhaul.cli", "results", "ls", "--format", "csv"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert a[:12] in out.stdout and b[:12] in out.stdout


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("longhaul: error: ") and "Traceback" not in err, err
    return err


def test_export_to_a_directory_or_unwritable_path_is_one_line(filled, capsys, tmp_path, cli):
    root, _a, _b = filled
    adir = tmp_path / "adir"
    adir.mkdir()
    for fmt in ("csv", "parquet"):
        assert main(["results", "export", "--store", str(root), "--format", fmt, "--out", str(adir)]) == 2
        assert "is a directory" in _one_line_error(capsys)
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert main(["results", "export", "--store", str(root), "--out", str(afile / "x.csv")]) == 2
    assert f"'{afile}' is not a directory" in _one_line_error(capsys)
    assert afile.read_text() == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "afile", "res"]   # no temp file left
    assert list(adir.iterdir()) == []
    if Path("/proc/version").is_file():   # a path no one can create a file beside
        proc = cli("results", "export", "--store", str(root), "--out", "/proc/version")
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "'/proc/version'" in proc.stderr
        assert "Traceback" not in proc.stderr


def test_export_writes_through_links_fifos_and_devices(filled, capsys, tmp_path, cli):
    # The file was renamed over whatever stood there: a FIFO became a regular file, a link was
    # replaced (its target untouched), and as root --out /dev/full replaced the device.
    root, _a, _b = filled
    target = tmp_path / "real.csv"
    target.write_text("old")
    (tmp_path / "link.csv").symlink_to(target.name)
    assert main(["results", "export", "--store", str(root), "--out", str(tmp_path / "link.csv")]) == 0
    assert (tmp_path / "link.csv").is_symlink() and target.read_text().count("\n") == 4   # header + 3 records
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE, text=True)
    assert main(["results", "export", "--store", str(root), "--out", str(fifo)]) == 0
    assert reader.communicate(timeout=30)[0] == target.read_text()
    assert fifo.is_fifo()
    if Path("/dev/full").is_char_device():   # a device that refuses every write
        proc = cli("results", "export", "--store", str(root), "--out", "/dev/full")
        assert proc.returncode == 2 and proc.stderr == "longhaul: error: cannot write '/dev/full' (No space left on device)\n"
        assert Path("/dev/full").is_char_device()


def test_export_into_a_missing_directory_is_an_error(filled, capsys, tmp_path):
    root, _a, _b = filled
    out = tmp_path / "missing" / "dir" / "x.csv"
    assert main(["results", "export", "--store", str(root), "--out", str(out)]) == 2
    err = _one_line_error(capsys)
    assert f"directory '{out.parent}' does not exist" in err
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o002], ids=oct)
def test_written_files_get_the_umask_mode(filled, capsys, tmp_path, umask):
    """Exported files (and run files) are ordinary new files: 0666 less the umask, not 0600."""
    root, _a, _b = filled
    old = os.umask(umask)
    try:
        for fmt in ("csv", "json", "parquet"):
            out = tmp_path / f"all.{fmt}"
            assert main(["results", "export", "--store", str(root), "--format", fmt, "--out", str(out)]) == 0
            assert out.stat().st_mode & 0o777 == 0o666 & ~umask, fmt
        out.write_bytes(b"old")   # replacing an existing file: the new one gets the umask mode too
        out.chmod(0o600)
        assert main(["results", "export", "--store", str(root), "--format", "parquet", "--out", str(out)]) == 0
        assert out.stat().st_mode & 0o777 == 0o666 & ~umask
        run_id = Store(root).put({"kind": "demo", "umask": umask}, RECS, source="sim")
        assert Store(root).run_path(run_id).stat().st_mode & 0o777 == 0o666 & ~umask
    finally:
        os.umask(old)


# ------------------------------------------------------------------- a missing store is not created
FIX = Path(__file__).parent / "fixtures" / "ingest"
READ_ONLY = {
    "ls": ["results", "ls"],
    "ls-json": ["results", "ls", "--format", "json"],
    "show": ["results", "show", "abcd"],
    "export": ["results", "export", "--format", "csv"],
    "export-out": ["results", "export", "--out", "OUT"],
    "verify": ["results", "verify"],
    "rm": ["results", "rm", "abcd"],
    "rm-all": ["results", "rm", "--all"],
    "analyse-profile": ["analyse", "profile"],
    "analyse-compare-run": ["analyse", "compare", "--point", "S3-rdma-bw-10km", "--measured-run", "abcd"],
}


@pytest.mark.parametrize("argv", list(READ_ONLY.values()), ids=list(READ_ONLY))
@pytest.mark.parametrize("where", ["missing", "empty-dir"])
def test_a_read_only_command_refuses_a_missing_store_and_creates_nothing(cli, tmp_path, argv, where):
    """A mistyped --store is one line naming it, exit 2, and no directory (or .lock) appears."""
    store = tmp_path / "typo" / "store"
    if where == "empty-dir":   # a directory that is not a store (no manifest.json, no runs/)
        store.mkdir(parents=True)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    argv = [str(tmp_path / "out.csv") if a == "OUT" else a for a in argv]
    proc = cli(*argv, "--store", str(store))
    assert proc.returncode == 2, proc
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"no store at '{store}'" in proc.stderr, proc.stderr
    assert proc.stdout == ""
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_a_missing_store_from_the_environment_is_named_too(tmp_path):
    import subprocess
    import sys

    env_store = tmp_path / "nowhere"

    env = {**os.environ, "LONGHAUL_STORE": str(env_store)}
    proc = subprocess.run([sys.executable, "-m", "longhaul.cli", "results", "ls"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 2 and f"no store at '{env_store}'" in proc.stderr
    assert "LONGHAUL_STORE" in proc.stderr and not env_store.exists()


def test_writing_commands_still_create_the_store(cli, tmp_path):
    ingested = tmp_path / "new" / "ingested"
    cli("ingest", str(FIX / "perftest_write_bw_mb.txt"), "--tool", "perftest", "--delay-us", "0",
        "--store", str(ingested), check=True)
    swept = tmp_path / "new" / "swept"
    cli("sweep", "verbs", "--grid", '{"delay_us": [0], "size_bytes": [4096]}', "--store", str(swept), check=True)
    for store in (ingested, swept):
        rows = json.loads(cli("results", "ls", "--store", str(store), "--format", "json", check=True).stdout)
        assert len(rows) == 1
        assert [r[:12] for r in json.loads((store / "manifest.json").read_text())["runs"]] == [rows[0]["run_id"]]


# ingest and both sweeps never checked: a store they cannot write was a FileNotFoundError traceback.
@pytest.mark.parametrize("argv", [
    ["ingest", str(FIX / "perftest_write_bw_mb.txt"), "--tool", "perftest", "--delay-us", "0"],
    ["sweep", "verbs", "--grid", '{"delay_us": [0], "size_bytes": [4096]}'],
])
def test_writing_commands_refuse_a_store_they_cannot_write(cli, tmp_path, argv):
    proc = cli(*argv, "--store", "/proc/nope/res")
    assert proc.returncode == 2 and proc.stderr == ("longhaul: error: --store: cannot write results to '/proc/nope/res' "
                                                    "(No such file or directory)\n"), proc.stderr


def test_the_library_sweep_and_a_put_refuse_it_in_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "longhaul.sweep", "--fn", "longhaul.sim.verbs:run", "--grid",
                           '{"delay_us": [0]}', "--kind", "k", "--store", "/proc/nope/res"], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.startswith("longhaul: error: --store: cannot write results to"), \
        proc.stderr
    with pytest.raises(UserError, match="cannot write results to '/proc/nope/res'"):
        Store("/proc/nope/res").put({"a": 1}, [{"b": 2}], source="sim")


def test_an_emptied_store_is_still_a_store(filled, cli):
    root, _a, _b = filled
    cli("results", "rm", "--all", "--store", str(root), check=True)
    proc = cli("results", "ls", "--store", str(root), check=True)
    assert proc.stdout.strip() == f"no runs in store '{root}'"
    assert json.loads(cli("results", "ls", "--store", str(root), "--format", "json", check=True).stdout) == []
    assert "0 run files" in cli("results", "verify", "--store", str(root), check=True).stdout


# ------------------------------------------------------------------- filters and run ids
def test_ls_with_a_filter_that_matches_nothing_says_so_and_names_what_is_there(filled, cli):
    root, _a, _b = filled
    proc = cli("results", "ls", "--store", str(root), "--kind", "bogus", check=True)
    out = proc.stdout.strip()
    assert out.startswith(f"no run in store '{root}' matches --kind bogus"), out
    assert "2 runs in the store" in out and "'demo'" in out and "'ingest-perftest'" in out
    assert "no runs in store" not in out
    proc = cli("results", "ls", "--store", str(root), "--label", "nobody", "--format", "json", check=True)
    assert json.loads(proc.stdout) == []   # stdout stays the document; the note goes to stderr
    assert "matches --label nobody" in proc.stderr and "'one'" in proc.stderr and "'site-a'" in proc.stderr
    # filters that each match some run, but not together: no value list, just the fact
    proc = cli("results", "ls", "--store", str(root), "--kind", "demo", "--source", "measured", check=True)
    assert "matches --source measured --kind demo (2 runs in the store)" in proc.stdout


def test_an_empty_label_selects_the_runs_saved_without_one(filled, cli, tmp_path):
    """`--label ""` is a filter like any other (it was read as "no filter" and selected every run)."""
    root, _a, _b = filled
    c = Store(root).put({"kind": "demo", "i": 3}, RECS, source="sim")
    rows = json.loads(cli("results", "ls", "--store", str(root), "--label", "", "--format", "json", check=True).stdout)
    assert [r["run_id"] for r in rows] == [c[:12]]
    recs = json.loads(cli("analyse", "profile", "--store", str(root), "--label", "", "--by", "size_bytes",
                          "--format", "json", check=True).stdout)
    assert {r["n"] for r in recs} == {1}     # run c's two points only, not averaged with run a's
    out = tmp_path / "all.csv"
    cli("results", "export", "--store", str(root), "--out", str(out), check=True)
    assert json.loads(cli("analyse", "profile", "--input", str(out), "--label", "", "--by", "size_bytes",
                          "--format", "json", check=True).stdout) == recs
    proc = cli("results", "ls", "--store", str(root), "--label", "", "--kind", "ingest-perftest", check=True)
    assert "matches --label '' --kind ingest-perftest (3 runs in the store)" in proc.stdout


def test_rm_refuses_run_ids_with_all_or_filters_and_removes_nothing(filled, cli):
    root, a, b = filled
    for extra in (["--all"], ["--kind", "demo"], ["--all", "--source", "sim"]):
        proc = cli("results", "rm", a[:8], *extra, "--store", str(root))
        assert proc.returncode == 2, (extra, proc)
        assert proc.stderr.count("\n") == 1 and "not both" in proc.stderr, proc.stderr
        assert sorted(e["run_id"] for e in Store(root).runs()) == sorted([a, b])
    proc = cli("results", "export", a[:8], "--kind", "demo", "--store", str(root))
    assert proc.returncode == 2 and "not both" in proc.stderr and proc.stdout == ""
    cli("results", "rm", "--all", "--kind", "demo", "--store", str(root), check=True)
    assert [e["run_id"] for e in Store(root).runs()] == [b]


# ------------------------------------------------------------------- the manifest journal
def test_storing_a_point_does_not_rewrite_the_whole_manifest(tmp_path, monkeypatch):
    """The index is not re-read and rewritten for every run (that made a sweep's cost grow with
    the square of its points): the rewrites double in size, so there are O(log N) of them.
    (The cost itself is measured by bench/store_bench.py, not here.)"""
    import longhaul.results as results

    writes = []
    real = results.atomic_write_bytes

    def counting(path, data, *args, **kw):
        if Path(path).name == "manifest.json":
            writes.append(len(data))
        return real(path, data, *args, **kw)

    monkeypatch.setattr(results, "atomic_write_bytes", counting)
    store = Store(tmp_path)
    ids = [store.put({"kind": "demo", "i": i}, RECS[:1], source="sim") for i in range(200)]
    assert 1 <= len(writes) <= 12, len(writes)
    assert sorted(e["run_id"] for e in store.runs()) == sorted(ids)   # a read folds in the rest
    assert sorted(json.loads((tmp_path / "manifest.json").read_text())["runs"]) == sorted(ids)
    assert not (tmp_path / "manifest.journal").exists()


def test_a_journal_left_by_a_killed_writer_is_folded_in_on_reading(tmp_path, cli, monkeypatch):
    """A writer killed before folding its journal (even mid-line) loses no run: `results ls`
    lists them all, with the latest facts of a replaced run, and rewrites manifest.json."""
    store = Store(tmp_path)
    first = store.put({"kind": "demo", "i": 0}, RECS, source="sim", label="first")
    monkeypatch.setattr(Store, "_fold_journal", lambda self: None)   # killed before any fold
    ids = [store.put({"kind": "demo", "i": i}, RECS, source="sim", label="old") for i in range(1, 4)]
    store.put({"kind": "demo", "i": 3}, RECS, source="sim", label="new")  # replaces run 3
    monkeypatch.undo()
    with open(tmp_path / "manifest.journal", "a") as f:
        f.write('{"run_id": "torn')   # the tail of a write cut short (a power loss) ...
    monkeypatch.setattr(Store, "_fold_journal", lambda self: None)
    store.put({"kind": "demo", "i": 0}, RECS, source="sim", label="again")   # ... then a writer replaces a run
    monkeypatch.undo()
    assert list(json.loads((tmp_path / "manifest.json").read_text())["runs"]) == [first]
    rows = json.loads(cli("results", "ls", "--store", str(tmp_path), "--format", "json", check=True).stdout)
    assert {r["run_id"]: r["label"] for r in rows} == {
        first[:12]: "again", ids[0][:12]: "old", ids[1][:12]: "old", ids[2][:12]: "new"}
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert sorted(manifest["runs"]) == sorted([first, *ids]) and manifest["runs"][ids[2]]["label"] == "new"
    assert manifest["runs"][first]["label"] == "again"
    assert not (tmp_path / "manifest.journal").exists()


def test_a_removed_run_does_not_come_back_from_the_journal(tmp_path, monkeypatch):
    store = Store(tmp_path)
    monkeypatch.setattr(Store, "_fold_journal", lambda self: None)
    a = store.put({"kind": "demo", "i": 1}, RECS, source="sim")
    b = store.put({"kind": "demo", "i": 2}, RECS, source="sim")
    monkeypatch.undo()
    assert store.remove([a]) == [a]
    assert [e["run_id"] for e in Store(tmp_path).runs()] == [b]
    assert list(json.loads((tmp_path / "manifest.json").read_text())["runs"]) == [b]


def test_a_run_replaced_by_a_writer_killed_before_its_index_line_is_described_by_its_file(tmp_path, monkeypatch):
    """Replacing a run and dying between its new file and its index line must not leave the old
    run's facts (label, times, record count) describing the new file."""
    store = Store(tmp_path)
    run = store.put({"kind": "demo", "i": 1}, RECS, source="sim", label="old")
    assert store.runs()[0]["label"] == "old"          # folded into manifest.json
    real = Store._append_journal

    def killed_after_the_file(self, entry):
        if "label" in entry:                          # the new run's entry: the writer dies here
            raise KeyboardInterrupt
        return real(self, entry)

    monkeypatch.setattr(Store, "_append_journal", killed_after_the_file)
    with pytest.raises(KeyboardInterrupt):
        store.put({"kind": "demo", "i": 1}, RECS[:1], source="sim", label="new")
    monkeypatch.undo()
    [entry] = Store(tmp_path).runs()
    assert (entry["run_id"], entry["label"], entry["n_records"]) == (run, "new", 1)


def test_renames_are_synced_to_their_directory(tmp_path, monkeypatch):
    """A run file and a new journal survive a power loss only once their directory is synced."""
    import longhaul.results as results

    synced = []
    real = results._fsync_dir
    monkeypatch.setattr(results, "_fsync_dir", lambda d: (synced.append(Path(d)), real(d)))
    Store(tmp_path).put({"kind": "demo"}, RECS, source="sim")
    assert tmp_path / "runs" in synced and tmp_path in synced


def test_sim_saves_no_run_so_the_missing_store_message_does_not_say_it_does(cli, tmp_path, monkeypatch):
    store = tmp_path / "st"
    monkeypatch.setenv("LONGHAUL_STORE", str(store))
    cli("sim", "verbs", "--sizes", "64K", "--iterations", "10", "--format", "csv", check=True)
    assert not store.exists()                       # `longhaul sim` prints its records and stores nothing
    proc = cli("results", "ls")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "give --store DIR of a store that a sweep, study, emu, ingest or measure saved runs to" in proc.stderr, proc.stderr
