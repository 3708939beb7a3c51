"""OSU and perftest layouts that ingest filed wrongly or merged: each benchmark its own test name, one run per
file (a second header, datatype table, result block or size is refused), -T tables start at one element, -D
runs carry `ddt` (a configuration column, so `analyse` never averages them with plain runs), perftest's bare
`Mtu : 2048B`. Fixtures: tests/fixtures/ingest/ (see its README); the *_handwritten.txt ones are written by
hand in the layout of OMB 7.x (yqin/osu-micro-benchmarks b7fc8c5, as the comments in longhaul/ingest/osu.py say).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longhaul.cli import main

FIX = Path(__file__).parent / "fixtures" / "ingest"
# In a subdirectory: test_ingest_tools' test_osu_real_layouts_still_ingest counts the records of FIX/osu_*.txt.
MULTI_LAT = "omb7/osu_multi_lat_omb7_handwritten.txt"
MBW_MR_DDT = "omb7/osu_mbw_mr_ddt_vect_omb7_handwritten.txt"
BW_DDT = "osu_bw_ddt_vect_omb7_handwritten.txt"
TYPE_ALL = "osu_bw_type_all_omb7_handwritten.txt"


def _records(capsys, tool: str, *files: Path | str) -> list[dict]:
    """`longhaul ingest FILE... --tool T --dry-run --format json`: the records it prints."""
    assert main(["ingest", *map(str, files), "--tool", tool, "--delay-us", "0", "--dry-run", "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _text(tmp_path: Path, text: str, name: str = "in.txt") -> Path:
    f = tmp_path / name
    f.write_text(text)
    return f


def _refused(tmp_path: Path, capsys, tool: str, text: str, line: int, *needles: str) -> str:
    """`longhaul ingest GOOD FILE --store S` stops with one line naming the file and line, exit status 2, and
    stores nothing (not even the good file before it)."""
    good = {"perftest": "perftest_write_lat.txt", "osu": "osu_bw.txt"}[tool]
    store = tmp_path / "res"
    f = _text(tmp_path, text)
    assert main(["ingest", str(FIX / good), str(f), "--tool", tool, "--delay-us", "0", "--store", str(store)]) == 2
    captured = capsys.readouterr()
    err = captured.err
    assert captured.out == "" and err.count("\n") == 1, err
    assert err.startswith(f"longhaul: error: {tool}: in.txt line {line}: "), err
    for needle in needles:
        assert needle in err, err
    assert "Traceback" not in err
    assert not (store / "runs").exists()
    return err


def _stability(capsys, store: Path, *where: str, value: str = "bw_MBps") -> list[dict]:
    """`longhaul analyse stability --value V --where ...`: its rows (one per series and delay, with n repeats)."""
    args = ["analyse", "stability", "--store", str(store), "--value", value, "--format", "json"]
    for w in where:
        args += ["--where", w]
    assert main(args) == 0
    return json.loads(capsys.readouterr().out)


def _ingest(capsys, store: Path, tool: str, *files: Path | str) -> None:
    assert main(["ingest", *map(str, files), "--tool", tool, "--delay-us", "0", "--store", str(store)]) == 0
    capsys.readouterr()


def _fixture(name: str) -> str:
    return (FIX / name).read_text()


# ------------------------------------------------------------------------------ OSU test names
def test_osu_multi_lat_is_its_own_test_never_averaged_with_osu_latency(tmp_path, capsys):
    # "# OSU MPI Multi Latency Test" (osu_multi_lat: several pairs at once) was filed as test=latency, and then
    # averaged with osu_latency's records as repeats of one measurement.
    recs = _records(capsys, "osu", FIX / MULTI_LAT)
    assert {r["test"] for r in recs} == {"multi_lat"} and len(recs) == 7
    assert recs[-1]["size_bytes"] == 1048576 and recs[-1]["lat_us"] == 1301.75 and recs[0]["pattern"] == "pt2pt"
    store = tmp_path / "res"
    _ingest(capsys, store, "osu", FIX / "osu_latency.txt", FIX / MULTI_LAT)
    rows = _stability(capsys, store, "size_bytes=1048576", value="lat_us")
    assert sorted((r["test"], r["n"]) for r in rows) == [("latency", 1), ("multi_lat", 1)], rows


@pytest.mark.parametrize("title,test", [
    ("OSU MPI Multi-process Latency Test v7.3", "latency_mp"),        # osu_latency_mp
    ("OSU MPI Multi-threaded Latency Test v7.3", "latency_mt"),
    ("OSU MPI Latency Persistent Test v7.3", "latency_persistent"),   # osu_latency_persistent (MPI_Send_init)
    ("OSU MPI Bi-Directional Bandwidth Persistent Test v7.3", "bibw_persistent"),
    ("OSU MPI Multiple Latency Test v5.4.0", "multi_lat"),
    ("OSU MPI Latency Test v7.3", "latency"),
])
def test_osu_latency_variants_each_have_their_own_test_name(tmp_path, capsys, title, test):
    # Another benchmark of the same operation is another measurement: a multi-process, multi-threaded or
    # persistent latency was filed as osu_latency's "latency".
    header = "# Size       Bandwidth (MB/s)" if "Bandwidth" in title else "# Size          Latency (us)"
    (rec,) = _records(capsys, "osu", _text(tmp_path, f"# {title}\n{header}\n1024    1005.90\n"))
    assert rec["test"] == test, rec


def test_osu_one_sided_title_refused_naming_the_test(tmp_path, capsys):
    # It said "column header before any '# OSU ... Test' title line" although line 1 is the title.
    text = ("# OSU MPI_Put Latency Test v7.3\n# Window creation: MPI_Win_allocate\n# Synchronization: MPI_Win_flush\n"
            "# Size          Latency (us)\n1                    1003.10\n")
    err = _refused(tmp_path, capsys, "osu", text, 1, "'OSU MPI_Put Latency Test v7.3' is a one-sided (MPI RMA) test "
                   "(put_latency), which ingest does not support")
    assert "column header before any" not in err
    _refused(tmp_path, capsys, "osu", "# OSU MPI_Get-CUDA Bandwidth Test v7.3\n# Size   Bandwidth (MB/s)\n1  1.00\n",
             1, "one-sided (MPI RMA) test (get_bw)")
    _refused(tmp_path, capsys, "osu", "[0] launcher noise\n# OSU MPI_Get_accumulate latency Test v7.3\n", 2,
             "(get_accumulate_latency)")


# ---------------------------------------------------------------------- OSU: one run per file
def test_osu_second_size_header_without_datatype_refused(tmp_path, capsys):
    # A second "# Size" header with no "# Datatype:" line before it (a file without -T) started no new
    # table: the rows under it were merged into the first run.
    text = _fixture("osu_latency.txt") + "# Size          Latency (us)\n8388608              2410.30\n"
    _refused(tmp_path, capsys, "osu", text, 12, "a second column header for the table headed on line 2: OSU prints "
             "one header per table, and a new table only after the next datatype's '# Datatype:' line")
    # OMB 7.x prints its "# Datatype:" line after the header; a header repeated after it is a second one too.
    text = _fixture(BW_DDT).replace("# Datatype: MPI_CHAR.\n", "# Datatype: MPI_CHAR.\n"
                                    "# Size        Bandwidth (MB/s)       Transmit Size\n")
    _refused(tmp_path, capsys, "osu", text, 5, "a second column header for the table headed on line 3")


def test_osu_same_datatype_twice_refused(tmp_path, capsys):
    # Two "# Datatype: MPI_CHAR." tables (other sizes, so no size repeats) merged into one MPI_CHAR table.
    text = _fixture(TYPE_ALL) + "# Datatype: MPI_CHAR.\n# Size         Avg Latency(us)\n128    4.05\n256    8.11\n"
    _refused(tmp_path, capsys, "osu", text, 24, "'# Datatype: MPI_CHAR.' again (the first on line 3): OSU prints "
             "one table per datatype in a run")


@pytest.mark.parametrize("old,new,line,shown", [
    ("4                         0.12", "1                         0.12", 12,
     "size 1 in the MPI_INT table is less than one MPI_INT element (4 bytes): OSU skips a size"),
    ("4                         0.12", "2                         0.12", 12, "size 2 in the MPI_INT table"),
    ("4                         0.13", "3                         0.13", 19, "size 3 in the MPI_FLOAT table"),
    ("2                         0.06", "0                         0.00", 4,
     "size 0 in the MPI_CHAR table is less than one MPI_CHAR element (1 byte)"),
])
def test_osu_size_below_one_element_of_its_datatype_refused(tmp_path, capsys, old, new, line, shown):
    lines = _fixture(TYPE_ALL).split("\n")
    assert lines[line - 1] == old, lines[line - 1]
    lines[line - 1] = new
    _refused(tmp_path, capsys, "osu", "\n".join(lines), line, shown)


def test_osu_sizes_of_whole_elements_and_plain_runs_kept(tmp_path, capsys):
    # One element and up is kept (MPI_INT's table starts at 4), and without a "# Datatype:" line (OMB before
    # 7.0) size 0 is osu_latency's first row as ever.
    recs = _records(capsys, "osu", FIX / TYPE_ALL)
    assert min(r["size_bytes"] for r in recs if r["datatype"] == "MPI_INT") == 4
    assert len(recs) == 16
    plain = "# OSU MPI Latency Test v5.6.3\n# Size          Latency (us)\n0                    1002.90\n1     1003.10\n"
    assert [r["size_bytes"] for r in _records(capsys, "osu", _text(tmp_path, plain))] == [0, 1]


# ------------------------------------------------------------------------------ OSU -D: ddt
def test_osu_every_record_says_its_ddt(capsys):
    recs = {name: _records(capsys, "osu", FIX / name) for name in
            ("osu_bw.txt", "osu_latency.txt", "osu_mbw_mr_window_varied.txt", TYPE_ALL, BW_DDT, MBW_MR_DDT,
             "osu_bcast_ddt_type_all_omb7_handwritten.txt", MULTI_LAT)}
    ddt = {name: {r["ddt"] for r in rs} for name, rs in recs.items()}
    assert ddt["osu_bw.txt"] == ddt["osu_latency.txt"] == ddt[TYPE_ALL] == ddt[MULTI_LAT] == {"none"}
    assert ddt["osu_mbw_mr_window_varied.txt"] == {"none"}
    # OMB 7.0-7.3 prints the -D preamble (block length and stride) before the title, osu_mbw_mr between its
    # two titles; the collectives print none, so a Transmit Size column alone says "derived".
    assert ddt[BW_DDT] == {"derived:block_length=1:stride=2"}
    assert ddt[MBW_MR_DDT] == {"derived:block_length=2:stride=4"}
    assert ddt["osu_bcast_ddt_type_all_omb7_handwritten.txt"] == {"derived"}
    mbw = recs[MBW_MR_DDT]
    assert len(mbw) == 5 and all(r["test"] == "mbw_mr" and r["pairs"] == 1 and r["window_msgs"] == 64 for r in mbw)
    assert all(r["ddt_transmit_size_bytes"] == r["size_bytes"] // 2 for r in mbw)
    assert mbw[0]["msg_rate_Mps"] == pytest.approx(14291.38e-6) and mbw[0]["bw_MBps"] == 468.30


def test_osu_ddt_run_never_averaged_with_a_plain_one(tmp_path, capsys):
    # analyse stability took a plain osu_bw and an osu_bw -D vect:2:1 at 1 MiB as two repeats (n=2).
    store = tmp_path / "res"
    _ingest(capsys, store, "osu", FIX / "osu_bw.txt", FIX / BW_DDT)
    rows = _stability(capsys, store, "size_bytes=1048576")
    assert sorted((r["ddt"], r["n"], r["bw_MBps_mean"]) for r in rows) == [
        ("derived:block_length=1:stride=2", 1, 933.0), ("none", 1, 770.2)], rows


@pytest.mark.parametrize("text_of,line,shown", [
    (lambda t: t.replace("# OSU MPI Bandwidth", "# Set Derived DataTypes block_length to 1, stride to 2\n"
                         "# OSU MPI Bandwidth"), 2, "a second '# Set Derived DataTypes' line (the first on line 1)"),
    (lambda t: t + "# Set Derived DataTypes block_length to 1, stride to 2\n", 12,
     "'# Set Derived DataTypes' line after the column header on line 3: OSU prints it before its table"),
    (lambda t: t.replace("block_length to 1, stride to 2", "block_length to one"), 1,
     "'# Set Derived DataTypes block_length to one' gives no block length and stride"),
])
def test_osu_ddt_preamble_misplaced_or_malformed_refused(tmp_path, capsys, text_of, line, shown):
    _refused(tmp_path, capsys, "osu", text_of(_fixture(BW_DDT)), line, shown)


# --------------------------------------------------------------------------------- perftest
def test_perftest_two_result_blocks_refused(tmp_path, capsys):
    # An ib_write_bw block followed by an ib_read_bw one was one run with both ops (and both MTUs, qps...).
    text = _fixture("perftest_write_bw_mb.txt") + _fixture("perftest_read_bw_gbits.txt")
    _refused(tmp_path, capsys, "perftest", text, 26, "a second test title 'RDMA_Read BW Test' (the first, "
             "'RDMA_Write BW Test', on line 2, has its result table on line 17): ingest one perftest run per file")
    # The same test twice is two runs as well.
    text = _fixture("perftest_send_lat_old.txt") * 2
    _refused(tmp_path, capsys, "perftest", text, 13, "a second test title 'Send Latency Test'")


def test_perftest_size_twice_refused(tmp_path, capsys):
    lines = _fixture("perftest_write_bw_mb.txt").split("\n")
    lines.insert(22, lines[20])  # the 65536 row again after the 1048576 one
    _refused(tmp_path, capsys, "perftest", "\n".join(lines), 23, "size 65536 again (first on line 21): perftest "
             "prints each size once per run")


def test_perftest_title_repeated_before_its_table_is_one_run(capsys, tmp_path):
    # Only a title after a result header starts a second block; each fixture alone is one run, as before.
    lines = _fixture("perftest_write_bw_mb.txt").split("\n")
    lines.insert(2, lines[1])
    recs = _records(capsys, "perftest", _text(tmp_path, "\n".join(lines)))
    assert len(recs) == 5 and {r["op"] for r in recs} == {"write"}


@pytest.mark.parametrize("mtu", ["2048B", "2048[B]", "2048 [B]"])
def test_perftest_mtu_with_or_without_brackets(tmp_path, capsys, mtu):
    # Older perftest prints "Mtu : 2048B" (the repo's perftest_send_lat_old.txt): mtu_bytes was dropped.
    text = _fixture("perftest_send_lat_old.txt").replace("2048B", mtu)
    recs = _records(capsys, "perftest", _text(tmp_path, text))
    assert [r["mtu_bytes"] for r in recs] == [2048, 2048]


def test_perftest_old_fixture_keeps_its_mtu(capsys):
    recs = _records(capsys, "perftest", FIX / "perftest_send_lat_old.txt")
    assert all(r["mtu_bytes"] == 2048 and r["qps"] == 1 and r["transport"] == "rc" for r in recs)
