"""The study's storage part (issue 24 item 6): a site's `pfs` workload (file system, servers, LUNs,
links and a failure drill as [[workloads.events]]) run by `sim pfs` into the report: the failover
time series figure, the phases, RPC latency and ledger tables, a summary row naming the limit and
a simulated change; skipped with its reason when the site has none; bad drills refused in one line."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

import longhaul.study_parts.storage as storage
from longhaul.cli import main
from longhaul.site import load
from longhaul.site_scenarios import pfs_drill
from longhaul.study import SkipPart, StudyContext
from longhaul.validation.storage import DRILL

ROOT = Path(__file__).resolve().parent.parent
CSCS = ROOT / "examples" / "sites" / "cscs-10km.toml"
S1 = ROOT / "examples" / "sites" / "s1-2008.toml"


def _storage_site(tmp_path: Path, old: str = "", new: str = "") -> Path:
    """S3's site with its storage workload only (the other workloads cost time, not coverage)."""
    text = CSCS.read_text()
    head, drill = text.split("# Fig 4")[0], text[text.index('[[workloads]]\nlayer = "pfs"'):]
    text = head + drill
    assert old in text, old
    path = tmp_path / "site.toml"
    path.write_text(text.replace(old, new, 1))
    return path


def test_s3s_site_runs_the_validated_drill():
    import tomllib

    site = load(CSCS)
    (w,) = site.of("pfs")
    with DRILL.open("rb") as f:
        published = tomllib.load(f)
    sc = pfs_drill(site, w)
    assert sc["events"] == published["events"] and sc["pfs"] == {**published["pfs"], "duration_s": 600.0}
    assert sc["path"] == {**published["path"], "fibre_km": 10.0} and sc["testbed"] == published["testbed"]


def test_the_report_shows_the_drill(tmp_path):
    site = _storage_site(tmp_path)
    out = tmp_path / "o"
    assert main(["study", "--site", str(site), "--parts", "storage", "--out", str(out), "--store",
                 str(tmp_path / "r"), "--no-summary"]) == 0
    svg = (out / "figures" / "storage_0_failover.svg").read_text()
    assert "link 2 replugged" in svg and "WAN link 3" in svg and "time (s)" in svg
    html = (out / "report.html").read_text()
    for text in ("phases between events", "RPC latency", "the ledger", "S3-gpfs-failover",
                 "Storage: GPFS failure drill (S3 tests 4-5)", "nothing lost",
                 f"longhaul sim pfs --scenario {out}/scenarios/storage_0_drill.json",
                 "migration estimate (2 TB in 5,050 files, 6 of 6 NSDs, by restripe", "S3-gpfs-migration-time",
                 "wan_links -1 (one lost)", "Storage: migrating 2 TB"):
        assert text in html, text
    (rec,) = list(csv.DictReader((out / "records.csv").open()))
    assert rec["ledger_ok"] == "True" and int(rec["acked_blocks"]) == int(rec["stored_blocks"]) > 0


def test_the_drills_command_reproduces_its_numbers(tmp_path, capsys):
    """The summary's command runs the drill's scenario file, which the study writes beside the report."""
    import json
    import re
    import shlex

    out = tmp_path / "o"
    assert main(["study", "--site", str(_storage_site(tmp_path)), "--parts", "storage", "--out", str(out),
                 "--store", str(tmp_path / "r"), "--no-summary"]) == 0
    md = (out / "summary.md").read_text()
    cmd = next(line for line in md.split("`") if line.startswith("longhaul sim pfs --scenario"))
    steady = float(re.search(r"Storage: GPFS failure drill \(S3 tests 4-5\)\*\*: ([\d,]+) MB/s on 4 links", md)
                   .group(1).replace(",", ""))
    capsys.readouterr()
    assert main([*shlex.split(cmd)[1:], "--format", "json"]) == 0
    recs = json.loads(capsys.readouterr().out)
    rec = recs[0] if isinstance(recs, list) else recs
    assert round(rec["phases"][0]["bw_MBps"]) == steady and rec["ledger_ok"]



def test_the_summary_names_the_limit_the_model_finds(tmp_path):
    site = load(_storage_site(tmp_path))
    res = storage.run(StudyContext(site=site, out_dir=tmp_path))
    row = res.summary[0]
    # four SDR links carry more than the six LUNs write; one link carries less
    assert row.limited_by.startswith("6 LUNs") and "1 WAN link of" in row.limited_by
    assert row.change.startswith("a LUN more per server") and row.gain_pct > 5
    phases = res.tables[0].rows
    assert [p["links_plugged"] for p in phases] == [4, 3, 2, 1, 2]
    assert phases[3]["bw_MBps"] < phases[0]["bw_MBps"] and phases[-1]["recovery_s"] is not None


def test_the_migration_estimate_is_the_commands(tmp_path, capsys):
    import shlex

    site = load(_storage_site(tmp_path))
    res = storage.run(StudyContext(site=site, out_dir=tmp_path))
    row = res.summary[1]
    assert row.limited_by.startswith("source_luns: 6 of") and row.change.startswith("none found")
    assert main([*shlex.split(row.command)[1:], "--format", "json"]) == 0
    import json

    rec = json.loads(capsys.readouterr().out)
    rec = rec[0] if isinstance(rec, list) else rec
    assert row.gets == f"{rec['time_min']:,.0f} min at {rec['rate_MBps']:,.0f} MB/s"
    assert res.tables[-1].rows == rec["what_if"]


def test_a_second_study_takes_the_drill_from_the_store(tmp_path):
    """The drill, its what-if (with its base) and the migration are cached like the other parts' points: the same
    site again computes nothing and gives the same records and tables."""
    from longhaul.results import Store

    site = load(_storage_site(tmp_path))
    first = storage.run(StudyContext(site=site, out_dir=tmp_path, store=Store(tmp_path / "r")))
    again = storage.run(StudyContext(site=site, out_dir=tmp_path, store=Store(tmp_path / "r")))
    assert (first.computed, first.cached) == (4, 0) and (again.computed, again.cached) == (0, 4)
    assert again.records == first.records and [t.rows for t in again.tables] == [t.rows for t in first.tables]
    fresh = storage.run(StudyContext(site=site, out_dir=tmp_path, store=Store(tmp_path / "r"), use_cache=False))
    assert (fresh.computed, fresh.cached) == (4, 0) and fresh.records == first.records


def test_a_site_without_storage_skips_the_part_and_says_why(tmp_path):
    with pytest.raises(SkipPart, match=r"no storage workload .* has 1 WAN link, and a drill needs more than one"):
        storage.run(StudyContext(site=load(S1), quick=True, out_dir=tmp_path))
    assert main(["study", "--parts", "storage", "--out", str(tmp_path / "o"), "--store", str(tmp_path / "r"),
                 "--no-summary"]) == 0
    md = (tmp_path / "o" / "summary.md").read_text()
    assert "**storage**: skipped — the site has no storage workload" in md


BAD = [
    ("a link that does not exist", 'link = 2\naction = "up"', 'link = 4\naction = "up"',
     "workloads[0] (pfs): events[3].link: 4 does not exist (valid: 0..3 for wan_links = 4)"),
    ("an event after the run", "at_s = 480.0", "at_s = 900.0", "events[3].at_s: 900 is outside the run"),
    ("unplugging a link already down", 'link = 2\naction = "up"', 'link = 1\naction = "down"',
     "link 1 is already down"),
    ("an unknown action", 'action = "up"', 'action = "unplug"',
     'workloads[0].events[3].action: unknown "unplug" (valid: down, up)'),
    ("an event without action", 'action = "up"', "", "workloads[0].events[3].action: missing"),
    ("zero disks", "threads = 6", "threads = 6\ndata_disks = 0", "workloads[0].data_disks: 0 is out of range"),
    ("stripes on gpfs", "threads = 6", "threads = 6\nstripe_count = 4", "stripe_count: GPFS stripes every file"),
    ("more NSDs moved than there are", "source_nsds = 6", "source_nsds = 6\nmove_nsds = 7",
     "workloads[0].migrate: move_nsds"),
    ("a migration without its files", "files = 5050\n", "", "workloads[0].migrate.files: missing"),
    ("an unknown migration method", 'method = "restripe"', 'method = "rsync"',
     'workloads[0].migrate.method: unknown "rsync"'),
    ("path migration without a second path", "threads = 6", "threads = 6\napm = true\nlmc = 0",
     "workloads[0] (pfs): apm: automatic path migration needs an alternate path"),
    ("path migration as a word", "threads = 6", 'threads = 6\napm = "yes"', 'workloads[0].apm: give true or false'),
    ("distances for a drill", "threads = 6", "threads = 6\ndistances_km = [1]",
     "workloads[0].distances_km: the storage drill runs at the planned distance"),
]


@pytest.mark.parametrize("what,old,new,message", BAD, ids=[b[0] for b in BAD])
def test_bad_drills_are_one_line_exit_2_and_nothing_written(tmp_path, capsys, what, old, new, message):
    path = _storage_site(tmp_path, old, new)
    out, store = tmp_path / "out", tmp_path / "store"
    assert main(["study", "--site", str(path), "--out", str(out), "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"longhaul: error: site {path}: "), err
    assert message in err, err
    assert not out.exists() and not store.exists()
