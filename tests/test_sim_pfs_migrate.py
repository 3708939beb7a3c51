"""``longhaul sim pfs migrate`` as a user runs it: the S3 move's shape (emptying 2 of 6 NSDs takes
as long as all 6), the what-if table, a bottleneck that moves when a resource shrinks, the copy
method, determinism, a scenario file, the sweep's stored records, and bad input as one line
with exit status 2."""

from __future__ import annotations

import csv
import io
import json

import pytest

S3 = ("--wan-links", "4", "--distance-km", "10")


def migrate(cli, *args: str) -> dict:
    (rec,) = json.loads(cli("sim", "pfs", "migrate", *S3, *args, "--format", "json", check=True).stdout)
    return rec


def test_emptying_two_of_six_nsds_takes_as_long_as_six(cli):
    six, two = migrate(cli), migrate(cli, "--move-nsds", "2")
    assert six["moved_bytes"] == pytest.approx(3 * two["moved_bytes"])
    assert two["time_s"] == pytest.approx(six["time_s"], rel=0.01)
    assert six["bottleneck"] == two["bottleneck"] == "source_luns"
    # Over one slow link (the extender's credits at 300 km) the shared WAN bounds it, and a third
    # of the data takes a third of the time.
    far = ("--wan-links", "1", "--distance-km", "300")
    six, two = migrate(cli, *far), migrate(cli, *far, "--move-nsds", "2")
    assert six["bottleneck"] == "wan_links"
    assert two["time_s"] < 0.5 * six["time_s"]


def test_the_what_if_table_and_its_rows(cli):
    rec = migrate(cli)
    rows = {r["case"]: r for r in rec["what_if"]}
    assert rows["as given"]["time_s"] == pytest.approx(rec["time_s"]) and rows["as given"]["time_change_pct"] == 0
    for case, row in rows.items():
        assert row["time_s"] is None or row["time_s"] > 0, case
    # A link more never slows it; a link lost never speeds it.
    assert rows["wan_links +1"]["time_s"] <= rec["time_s"] <= rows["wan_links -1 (one lost)"]["time_s"]
    # One target server left: minhop puts all new NSDs behind one link, and it fills.
    assert rows["target_servers -1"]["bottleneck"] == "wan_links"
    assert rows["target_servers -1"]["time_change_pct"] > 0
    one = migrate(cli, "--wan-links", "1")
    lost = {r["case"]: r for r in one["what_if"]}["wan_links -1 (one lost)"]
    assert lost["time_s"] is None and lost["bottleneck"] == "no WAN link left"
    table = cli("sim", "pfs", "migrate", *S3, check=True).stdout
    assert "a source server lost" in table and "bottleneck source_luns" in table


def test_the_bottleneck_moves_to_the_resource_made_small(cli):
    assert migrate(cli, "--wan-links", "1", "--data-disks", "64")["bottleneck"] == "wan_links"
    assert migrate(cli, "--target-nsds", "1")["bottleneck"] == "target_luns"
    assert migrate(cli, "--threads", "1")["bottleneck"] == "block_latency"
    small_files = migrate(cli, "--files", "200000000", "--distance-km", "1000", "--extender", "generic")
    assert small_files["bottleneck"] == "per_file_round_trips"
    rows = list(csv.DictReader(io.StringIO(cli("sim", "pfs", "migrate", *S3, "--show", "resources", "--format", "csv",
                                               check=True).stdout)))
    assert {r["resource"] for r in rows} >= {"source_luns", "target_luns", "wan_links", "node_adapters"}
    assert all(float(r["util"]) <= 1.0 + 1e-9 for r in rows)


def test_a_copy_pays_per_file_round_trips_and_gains_with_streams(cli):
    far = ("--method", "copy", "--extender", "generic", "--distance-km", "2000", "--data-TB", "0.1")
    few, many = migrate(cli, *far, "--streams", "1"), migrate(cli, *far, "--streams", "64")
    assert few["method"] == "copy" and few["streams"] == 1 and few["threads_per_node"] is None
    assert few["bottleneck"] == "stream_window" and many["time_s"] < few["time_s"] / 4
    assert few["moved_bytes"] == 1e11


def test_same_scenario_same_record_and_a_scenario_file(cli, tmp_path):
    path = tmp_path / "move.toml"
    path.write_text("[path]\nwan_links = 4\nfibre_km = 10\n[migrate]\nmove_nsds = 2\nfiles = 100\n")
    a = cli("sim", "pfs", "migrate", "--scenario", str(path), "--format", "json", check=True).stdout
    b = cli("sim", "pfs", "migrate", "--scenario", str(path), "--format", "json", check=True).stdout
    assert a == b
    (rec,) = json.loads(a)
    assert (rec["move_nsds"], rec["files"], rec["wan_links"]) == (2, 100, 4)
    bad = tmp_path / "bad.toml"
    bad.write_text("[migrate]\nmove_nsds = 9\n")
    proc = cli("sim", "pfs", "migrate", "--scenario", str(bad))
    assert proc.returncode == 2 and str(bad) in proc.stderr and "migrate.move_nsds" in proc.stderr, proc.stderr


def test_a_sweep_saves_the_records_in_the_store(cli, tmp_path):
    store = tmp_path / "store"
    cli("sweep", "pfs-migrate", "--grid", '{"move_nsds": [2, 6], "wan_links": [4]}', "--store", str(store),
        "--format", "json", check=True)
    runs = json.loads(cli("results", "ls", "--store", str(store), "--format", "json", check=True).stdout)
    assert sorted(r["params"] for r in runs) == ["move_nsds=2 wan_links=4", "move_nsds=6 wan_links=4"]
    assert {r["kind"] for r in runs} == {"pfs-migrate"}


@pytest.mark.parametrize("args, needle", [
    (["--move-nsds", "7"], "move_nsds: 7 is out of range [1, 6]"),
    (["--method", "copy", "--move-nsds", "2"], "move_nsds: a copy moves whole files"),
    (["--streams", "4"], "streams: the copy streams"),
    (["--data-bytes", "10", "--files", "11"], "files: 11 is more than data_bytes = 10"),
    (["--data-bytes", "2X"], "--data-bytes: '2X' is not a size"),
    (["--data-disks", "0"], "data_disks: 0 is out of range [1, 64]"),
    (["--wan-links", "17"], "wan_links: 17 is out of range"),
    (["--target-servers", "0"], "0 is out of range"),
    (["--method", "rsync"], "invalid choice: 'rsync'"),
])
def test_bad_input_is_one_line_and_exit_2(cli, args, needle):
    proc = cli("sim", "pfs", "migrate", *args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert needle in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert len(lines) == 1 or "invalid choice" in needle, proc.stderr
