"""Ingest of perftest, OSU and iperf3 outputs (fixtures in each tool's documented format)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import NO_IPERF3, iperf3_server
from longhaul.cli import main
from longhaul.ingest import IngestError, ingest_file, parse_text
from longhaul.results import Store

FIX = Path(__file__).parent / "fixtures" / "ingest"


def parse(name, tool):
    return parse_text((FIX / name).read_text(), tool, name)


# ------------------------------------------------------------------------------------- perftest
def test_perftest_write_bw_mb_header_is_mib():
    recs = parse("perftest_write_bw_mb.txt", "perftest")
    assert [r["size_bytes"] for r in recs] == [2, 1024, 65536, 1048576, 8388608]
    r = recs[2]
    assert (r["op"], r["test"], r["transport"], r["qps"], r["mtu_bytes"], r["tx_depth"]) == ("write", "bw", "rc", 1, 2048, 128)
    assert r["bw_reported"] == 688.20 and r["bw_reported_unit"] == "MB/sec"
    assert r["bw_MBps"] == pytest.approx(688.20 * 1048576 / 1e6)      # perftest's MB is 2^20
    assert r["bw_peak_MBps"] == pytest.approx(701.44 * 1.048576)
    assert r["msg_rate_Mps"] == 0.011011 and r["iterations"] == 5000
    assert "2^20" in r["unit_note"]


def test_perftest_gbits_and_mib_headers():
    g = parse("perftest_read_bw_gbits.txt", "perftest")
    assert g[0]["op"] == "read" and g[0]["qps"] == 2
    assert g[1]["bw_MBps"] == pytest.approx(7.60 * 125)                 # 10^9 bit/s = 125 MB/s
    m = parse("perftest_send_bw_mib.txt", "perftest")
    assert len(m) == 1 and m[0]["transport"] == "ud" and m[0]["op"] == "send"
    assert m[0]["bw_MBps"] == pytest.approx(922.18 * 1.048576) and m[0]["bw_reported_unit"] == "MiB/sec"


def test_perftest_latency_new_and_old_columns():
    new = parse("perftest_write_lat.txt", "perftest")
    assert new[0]["test"] == "lat" and new[0]["lat_us"] == 51.55 and new[0]["lat_min_us"] == 51.12
    assert new[0]["lat_p999_us"] == 58.90 and new[2]["size_bytes"] == 32768
    old = parse("perftest_send_lat_old.txt", "perftest")
    assert old[1]["lat_us"] == 1015.31 and old[1]["lat_typical_us"] == 1015.31 and "lat_avg_us" not in old[1]


def test_perftest_bad_row_names_tool_and_line():
    with pytest.raises(IngestError) as e:
        parse("bad_perftest_row.txt", "perftest")
    assert str(e.value).startswith("perftest: bad_perftest_row.txt line 7:")


def test_perftest_unknown_unit_and_column():
    text = " #bytes     #iterations    BW peak[KB/sec]    BW average[KB/sec]   MsgRate[Mpps]\n 2 5 1 1 1\n"
    with pytest.raises(IngestError, match="line 1: unknown bandwidth unit"):
        parse_text(text, "perftest")
    with pytest.raises(IngestError, match="line 2: unknown column 'Foo\\[x\\]'"):
        parse_text("hello\n #bytes #iterations Foo[x]\n", "perftest")


# ------------------------------------------------------------------------------------------ OSU
@pytest.mark.parametrize("name,test,col,size,value", [
    ("osu_latency.txt", "latency", "lat_us", 1024, 1005.9),
    ("osu_bw.txt", "bw", "bw_MBps", 4194304, 955.6),
    ("osu_bibw.txt", "bibw", "bw_MBps", 1048576, 1520.8),
    ("osu_allreduce.txt", "allreduce", "lat_us", 65536, 2702.3),
])
def test_osu_files(name, test, col, size, value):
    recs = parse(name, "osu")
    assert {r["test"] for r in recs} == {test}
    assert next(r[col] for r in recs if r["size_bytes"] == size) == value
    assert all(isinstance(r["size_bytes"], int) for r in recs)


def test_osu_mbw_mr_pairs_window_and_rate():
    recs = parse("osu_mbw_mr.txt", "osu")
    assert recs[0]["pairs"] == 4 and recs[0]["window_msgs"] == 64 and recs[0]["test"] == "mbw_mr"
    assert recs[-1]["bw_MBps"] == 951.2 and recs[-1]["msg_rate_Mps"] == pytest.approx(0.0145142)


def test_osu_collective_full_columns_skip_launcher_noise():
    recs = parse("osu_bcast_full.txt", "osu")
    assert [r["size_bytes"] for r in recs] == [1, 131072, 1048576]
    assert recs[1]["lat_us"] == 3460.2 and recs[1]["lat_min_us"] == 3401.7 and recs[1]["iterations"] == 100
    assert recs[0]["pattern"] == "collective" and recs[0]["osu_version"] == "7.3"


def test_osu_bad_row_and_missing_title():
    with pytest.raises(IngestError, match=r"^osu: bad_osu_row.txt line 4: row has 3 fields"):
        parse("bad_osu_row.txt", "osu")
    with pytest.raises(IngestError, match=r"^osu: bad_not_a_benchmark.txt line 1: no '# OSU"):
        parse("bad_not_a_benchmark.txt", "osu")


@pytest.mark.parametrize("fixture,line,value,cut,shown", [
    ("osu_latency.txt", 11, "1620.70", "16", "Latency (us) '16'"),          # cut mid-number
    ("osu_latency.txt", 11, "1620.70", "1620.7", "Latency (us) '1620.7'"),  # cut in the decimals
    ("osu_latency.txt", 11, "1620.70", "1620.", "Latency (us) '1620.'"),
    ("osu_mbw_mr.txt", 7, "14514.20", "145", "Messages/s '145'"),
    ("osu_bcast_full.txt", 8, "9240.80", "92", "Max Latency(us) '92'"),   # a middle column
])
def test_osu_row_cut_short_is_refused(cli, tmp_path, fixture, line, value, cut, shown):
    # The last row of a file cut while OSU was writing it (or a value otherwise without its decimals):
    # the number is plausible, so only the missing decimals (OSU prints every value with %.2f) tell.
    f = tmp_path / "cut.txt"
    f.write_text(_fixture_with(fixture, line, value, cut).rstrip("\n"))
    proc = cli("ingest", str(f), "--tool", "osu", "--delay-us", "0", "--dry-run")
    assert proc.returncode == 2, proc.stdout
    assert proc.stderr.startswith(f"longhaul: error: osu: cut.txt line {line}: {shown} "), proc.stderr
    assert proc.stderr.count("\n") == 1 and "2 decimals" in proc.stderr and "Traceback" not in proc.stderr


def test_osu_text_printed_by_longhaul_is_stored_as_what_made_it(cli, tmp_path):
    """The simulator's `--format osu` text is not a measurement: stored as sim, never as measured."""
    f = tmp_path / "sim.txt"
    f.write_text(cli("sim", "mpi", "osu", "--bench", "latency", "--sizes", "8", "--format", "osu", check=True).stdout)
    store = ["--store", str(tmp_path / "st")]
    cli("ingest", str(f), "--tool", "osu", "--delay-us", "0", *store, check=True)
    cli("ingest", str(FIX / "osu_latency.txt"), "--tool", "osu", "--delay-us", "0", *store, check=True)
    runs = json.loads(cli("results", "ls", *store, "--format", "json", check=True).stdout)
    assert sorted(r["source"] for r in runs) == ["measured", "sim"]
    proc = cli("ingest", str(f), "--tool", "osu", "--source", "measured", *store)
    assert proc.returncode == 2 and proc.stderr == (
        f"longhaul: error: ingest: '{f}' was printed by longhaul's simulator (its title says so), so --source "
        "measured would mislabel it; leave --source out (it is stored as sim)\n"), proc.stderr


def test_osu_file_is_one_run_at_one_delay(cli, tmp_path):
    # `sim mpi osu --format osu` prints one block per delay; merged, each size would appear twice
    # under one delay. A size repeated within a block is refused too.
    two = tmp_path / "two.txt"
    two.write_text(cli("sim", "mpi", "osu", "--bench", "bw", "--sizes", "1:4", "--delay-us", "0,100", "--format", "osu",
                       check=True).stdout)
    proc = cli("ingest", str(two), "--tool", "osu", "--dry-run")
    assert proc.returncode == 2 and "two.txt line 8: a second '# OSU ... Test' block (the first starts on line 1)" \
        in proc.stderr, proc.stderr
    text = (FIX / "osu_latency.txt").read_text().rstrip("\n")
    dup = tmp_path / "dup.txt"
    dup.write_text(text + "\n" + text.splitlines()[-1] + "\n")
    proc = cli("ingest", str(dup), "--tool", "osu", "--dry-run")
    assert proc.returncode == 2 and "again (first on line" in proc.stderr, proc.stderr
    # A byte-order mark (Windows editors) is not part of the output.
    bom = tmp_path / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbf" + (FIX / "osu_latency.txt").read_bytes())
    assert cli("ingest", str(bom), "--tool", "osu", "--delay-us", "0", "--dry-run").returncode == 0


def test_iperf3_json_array_is_named_as_json(cli, tmp_path):
    f = tmp_path / "arr.json"
    f.write_text('[{"start": {}}]')
    proc = cli("ingest", str(f), "--tool", "iperf3", "--dry-run")
    assert proc.returncode == 2 and "JSON is not an object; expected iperf3 -J output" in proc.stderr, proc.stderr


def test_perftest_bandwidths_in_two_units_are_refused(cli, tmp_path):
    f = tmp_path / "mixed.txt"
    f.write_text((FIX / "perftest_write_bw_mb.txt").read_text().replace("BW average[MB/sec]", "BW average[Gb/sec]"))
    proc = cli("ingest", str(f), "--tool", "perftest", "--dry-run")
    assert proc.returncode == 2 and "bandwidth columns in two units ([MB/sec] and [Gb/sec])" in proc.stderr


def test_osu_real_layouts_still_ingest(cli, tmp_path):
    # Every OSU fixture (integer sizes and Iterations, values with 2 decimals), and a build with more
    # decimals: FLOAT_PRECISION is an #ifndef default in osu_util.h, so -DFLOAT_PRECISION=3 prints 3.
    three = tmp_path / "three_decimals.txt"
    three.write_text(_fixture_with("osu_latency.txt", 11, "1620.70", "1620.705"))
    files = [str(f) for f in sorted(FIX.glob("osu_*.txt"))] + [str(three)]
    proc = cli("ingest", *files, "--tool", "osu", "--dry-run", "--format", "json", check=True)
    records = json.loads(proc.stdout)
    # the fixtures in name order (allreduce, bcast_ddt_type_all: 3 datatypes x 3 sizes, bcast_full, bibw, bw,
    # bw_ddt_vect, bw_type_all: 6 + 5 + 5 sizes, latency, latency_validation, mbw_mr, mbw_mr_validation,
    # mbw_mr_window_varied: 4 sizes x 8 windows), then three_decimals.txt
    assert len(records) == 3 + 9 + 3 + 9 + 9 + 7 + 16 + 9 + 5 + 4 + 4 + 32 + 9
    assert records[-1]["lat_us"] == 1620.705 and any(r.get("iterations") == 1000 for r in records)


def test_osu_validation_column_kept_per_row(cli):
    # OMB 6.x/7.x -c prints a last "Validation" column (Pass/Fail, VALIDATION_STATUS in
    # c/util/osu_util_mpi.h): a boolean per row. osu_mbw_mr (late 5.x on) prints its title twice
    # (HEADER, then print_header), 6.x/7.x with an empty line after the second.
    files = [str(FIX / "osu_latency_validation.txt"), str(FIX / "osu_mbw_mr_validation.txt")]
    proc = cli("ingest", *files, "--tool", "osu", "--delay-us", "0", "--dry-run", "--format", "json", check=True)
    lat, mbw = [r for r in json.loads(proc.stdout) if r["test"] == "latency"], \
        [r for r in json.loads(proc.stdout) if r["test"] == "mbw_mr"]
    assert [r["size_bytes"] for r in lat] == [1, 8, 1024, 65536, 1048576] and lat[2]["lat_us"] == 1005.9
    assert all(r["validation_passed"] is True for r in lat + mbw)
    assert len(mbw) == 4 and mbw[0]["pairs"] == 2 and mbw[0]["window_msgs"] == 64 and mbw[0]["osu_version"] == "7.3"
    assert mbw[-1]["bw_MBps"] == 951.2 and mbw[-1]["msg_rate_Mps"] == pytest.approx(0.01451416)
    # Collectives print it after -f's Iterations (print_stats_validate).
    coll = ("# OSU MPI Allreduce Latency Test v7.3\n"
            "# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations      Validation\n"
            "4                    2010.40           2001.20           2020.90        1000            Pass\n")
    (rec,) = parse_text(coll, "osu", "coll.txt")
    assert rec["iterations"] == 1000 and rec["lat_max_us"] == 2020.9 and rec["validation_passed"] is True


LAT_V = "65536                  1060.80                Pass"


@pytest.mark.parametrize("row,shown", [
    ("65536                  1060.80                Maybe", "Validation 'Maybe' is not a validation result (valid: Pass, "),
    ("65536                  1060.80                pass", "Validation 'pass' is not a validation result (valid: Pass, "),
    ("65536                  1060.80                1", "Validation '1' is not a validation result (valid: Pass, Fail"),
    ("65536                  1060.80", "row has 2 fields, the header on line 2 has 3"),        # cut before it
    ("65536                  Pass                1060.80", "has a field that is not a number"),  # columns swapped
    ("65536                  1060.8                 Pass", "Latency (us) '1060.8' does not have the 2 decimals"),
    ("65536                  1060.80                Fail", "Validation 'Fail' at size 65536: the data OSU received"),
])
def test_osu_validation_value_refused(tmp_path, capsys, row, shown):
    # Anything but Pass and Fail is not OSU's output; Fail is OSU's failed run (it stops at that size
    # and exits 1): refused, one line naming the file and line, nothing stored.
    err = _rejected(tmp_path, capsys, "osu", _fixture_with("osu_latency_validation.txt", 7, LAT_V, row), 7, shown)
    if "Fail" in row:
        assert "a failed run is not ingested (remove this row to keep the sizes that passed)" in err


def test_osu_validation_header_alone_or_twice_refused(tmp_path, capsys):
    _rejected(tmp_path, capsys, "osu", "# OSU MPI Latency Test v7.3\n# Size    Validation\n1    Pass\n", 2,
              "column header names no value column")
    _rejected(tmp_path, capsys, "osu", "# OSU MPI Latency Test v7.3\n# Size  Latency (us)  Validation  Validation\n"
              "1  3.00  Pass  Pass\n", 2, "column header names 'Validation' twice")


def test_osu_title_repeated_before_the_header_is_one_block(tmp_path, capsys):
    # osu_mbw_mr (OMB sources from 2020 on) prints its title twice (5.x without the empty line
    # 6.x/7.x add): the same title before any column header. Another title there, the same one
    # after a table, or another benchmark's title twice (only mbw_mr does that) is still a second block.
    lines = (FIX / "osu_mbw_mr.txt").read_text().splitlines()
    twice = tmp_path / "twice.txt"
    twice.write_text("\n".join([lines[0], *lines]) + "\n")
    assert main(["ingest", str(twice), "--tool", "osu", "--delay-us", "0", "--dry-run", "--format", "json"]) == 0
    recs = json.loads(capsys.readouterr().out)
    assert len(recs) == 4 and recs[0]["osu_version"] == "5.7.1" and recs[-1]["bw_MBps"] == 951.2
    mbw = (FIX / "osu_mbw_mr_validation.txt").read_text()
    _rejected(tmp_path, capsys, "osu", mbw.replace("Message Rate Test v7.3\n\n", "Message Rate Test v7.4\n\n", 1),
              2, "a second '# OSU ... Test' block (the first starts on line 1)")
    text = (FIX / "osu_latency.txt").read_text()
    _rejected(tmp_path, capsys, "osu", text + text.splitlines()[0] + "\n", 12, "a second '# OSU ... Test' block")
    _rejected(tmp_path, capsys, "osu", text.splitlines()[0] + "\n" + text, 2, "a second '# OSU ... Test' block")


def test_osu_mbw_mr_window_varied_tables(cli):
    # osu_mbw_mr -V prints no "# Size" header: a bandwidth table and a message-rate table, each
    # headed by the window sizes; one record per size and window.
    proc = cli("ingest", str(FIX / "osu_mbw_mr_window_varied.txt"), "--tool", "osu", "--delay-us", "1000",
               "--dry-run", "--format", "json", check=True)
    recs = json.loads(proc.stdout)
    assert len(recs) == 4 * 8 and {r["window_msgs"] for r in recs} == {1, 2, 4, 8, 16, 32, 64, 128}
    assert {r["size_bytes"] for r in recs} == {4096, 8192, 16384, 32768} and recs[0]["pairs"] == 1
    r = next(r for r in recs if r["size_bytes"] == 16384 and r["window_msgs"] == 128)
    assert r["bw_MBps"] == 950.0 and r["msg_rate_Mps"] == pytest.approx(0.0579834) and r["osu_version"] == "5.4.0"


@pytest.mark.parametrize("line,old,new,shown", [
    (6, "2.01        4.01", "2.01", "row has 8 fields, the header on line 5 has 9 (the size and 8 windows)"),
    (6, "4.01", "4.0", "MB/s (window 2) '4.0' does not have the 2 decimals"),
    (6, "4.01", "-4.01", "MB/s (window 2) -4.01 is not a possible value"),
    (13, "490.72", "nan", "Messages/s (window 1) nan is not a possible value"),
    (13, "4096 ", "2048 ", "size 2048 at window 1 under '# Message Rate Profile' (line 11) has no bandwidth above"),
    (7, "8192 ", "4096 ", "size 4096 at window 1 again (first on line 6)"),
    (14, "8192 ", "4096 ", "size 4096 at window 1 again in the Message Rate Profile"),
    (5, "           2 ", "           1 ", "window sizes 1 1 4 8"),
    (4, "Uni-directional Bandwidth (MB/sec)", "Bandwidth", "window sizes with no '# Uni-directional Bandwidth"),
    (1, "Multiple Bandwidth / Message Rate Test", "Bandwidth Test",
     "'window size: varied' under the title 'OSU MPI Bandwidth Test v5.4.0' on line 1: only osu_mbw_mr -V"),
])
def test_osu_mbw_mr_window_varied_bad_tables_refused(tmp_path, capsys, line, old, new, shown):
    text = _fixture_with("osu_mbw_mr_window_varied.txt", line, old, new)
    err_line = {1: 2, 4: 5}.get(line, line)  # a wrong title is named on the 'varied' line, a lost table title on its header
    _rejected(tmp_path, capsys, "osu", text, err_line, shown)


# OMB 7.x -T (one table per MPI datatype) and -D (derived datatypes: a "Transmit Size" column). The
# *_omb7_handwritten.txt fixtures are written by hand in the layout the OMB 7.x sources print (see
# fixtures/ingest/README.md and the comment at _DATATYPE in longhaul/ingest/osu.py).
TYPE_ALL = "osu_bw_type_all_omb7_handwritten.txt"
DDT_BW = "osu_bw_ddt_vect_omb7_handwritten.txt"
DDT_BCAST = "osu_bcast_ddt_type_all_omb7_handwritten.txt"


def _ingest_json(cli, name, *extra):
    proc = cli("ingest", str(FIX / name), "--tool", "osu", "--delay-us", "1000", *extra, "--format", "json", check=True)
    return json.loads(proc.stdout)


def test_osu_type_all_one_table_per_datatype(cli, tmp_path):
    # osu_bw -T all: MPI_CHAR, MPI_INT, MPI_FLOAT tables, each after "# Datatype: X."; sizes stay bytes and
    # start at one element (4 for MPI_INT); OMB 7.0-7.3 heads the later tables "Avg Latency(us)" although
    # their rows are bandwidths (print_only_header), so they stay bw_MBps.
    store = tmp_path / "res"
    recs = _ingest_json(cli, TYPE_ALL, "--store", str(store))
    by = {(r["datatype"], r["size_bytes"]): r for r in recs}
    assert len(recs) == len(by) == 16
    assert [r["size_bytes"] for r in recs if r["datatype"] == "MPI_CHAR"] == [2, 4, 8, 16, 32, 64]
    assert [r["size_bytes"] for r in recs if r["datatype"] == "MPI_INT"] == [4, 8, 16, 32, 64]
    assert [r["size_bytes"] for r in recs if r["datatype"] == "MPI_FLOAT"] == [4, 8, 16, 32, 64]
    assert by[("MPI_CHAR", 4)]["bw_MBps"] == 0.13 and by[("MPI_INT", 4)]["bw_MBps"] == 0.12
    assert by[("MPI_FLOAT", 64)]["bw_MBps"] == 2.02 and by[("MPI_INT", 32)]["bw_MBps"] == 1.01
    assert all("lat_us" not in r and r["test"] == "bw" and r["osu_version"] == "7.3" for r in recs)
    (run,) = Store(store).runs()
    assert run["n_records"] == 16 and run["kind"] == "ingest-osu"


def test_osu_ddt_transmit_size_kept_in_bytes(cli):
    # osu_bw -D vect:2:1: every other byte moves; "Transmit Size" is those bytes, and OSU's MB/s counts them.
    bw = _ingest_json(cli, DDT_BW, "--dry-run")
    assert [r["size_bytes"] for r in bw] == [65536 << k for k in range(7)]
    assert all(r["ddt_transmit_size_bytes"] == r["size_bytes"] // 2 and r["datatype"] == "MPI_CHAR" for r in bw)
    assert bw[0]["bw_MBps"] == 480.1 and bw[-1]["bw_MBps"] == 944.9
    assert "ddt_transmit_size_bytes / 1e6" in bw[0]["unit_note"]
    # osu_bcast -f -D cont -T all: a collective prints the header after every "# Datatype:" line, and the
    # transmit size after -f's Iterations (omb_ddt_append_stats).
    bc = _ingest_json(cli, DDT_BCAST, "--dry-run")
    by = {(r["datatype"], r["size_bytes"]): r for r in bc}
    assert len(bc) == len(by) == 9 and {d for d, _ in by} == {"MPI_CHAR", "MPI_INT", "MPI_FLOAT"}
    r = by[("MPI_INT", 8)]
    assert (r["lat_us"], r["lat_min_us"], r["lat_max_us"], r["iterations"]) == (2012.05, 2004.71, 2020.4, 1000)
    assert r["ddt_transmit_size_bytes"] == 8 and r["pattern"] == "collective"


@pytest.mark.parametrize("name,line,old,new,err_line,shown", [
    (TYPE_ALL, 10, "MPI_INT.", ".", 10, "'# Datatype: ' names no MPI datatype"),
    (TYPE_ALL, 10, "MPI_INT.", "int, 4 bytes.", 10, "'# Datatype: int, 4 bytes' names no MPI datatype"),
    (TYPE_ALL, 14, "16 ", "8  ", 14, "size 8 again in the MPI_INT table (first on line 13): OSU prints each size"),
    (TYPE_ALL, 3, "# Datatype: MPI_CHAR.", "", 10, "'# Datatype:' line after result rows that had none"),
    (TYPE_ALL, 11, "Avg Latency(us)", "Latency (us)          Validation", 11,
     "column header (Size, Latency (us), Validation) is not the one of the first datatype's table on line 2"),
    (DDT_BW, 5, "32768", "32768.00", 5, "Transmit Size '32768.00' is not a whole number of bytes"),
    (DDT_BW, 5, "32768", "-32768", 5, "Transmit Size -32768 is not a possible value"),
    (DDT_BW, 5, "               32768", "", 5, "row has 2 fields, the header on line 3 has 3"),
    (DDT_BW, 3, "Bandwidth (MB/s)", "Bandwidth (MB/s)  Validation", 3,
     "both 'Validation' (-c) and 'Transmit Size' (-D): OSU refuses -c with -D"),
    (DDT_BCAST, 9, "       Transmit Size", "", 9, "is not the one of the first datatype's table on line 4"),
])
def test_osu_type_and_ddt_malformed_refused(tmp_path, capsys, name, line, old, new, err_line, shown):
    # One line naming the file and line, exit status 2, nothing stored (after a good file in the same call).
    _rejected(tmp_path, capsys, "osu", _fixture_with(name, line, old, new), err_line, shown)


# --------------------------------------------------------------------------------------- iperf3
def test_iperf3_json_tcp():
    recs = parse("iperf3_tcp.json", "iperf3")
    doc = json.loads((FIX / "iperf3_tcp.json").read_text())
    sender = next(r for r in recs if r["direction"] == "sender")
    assert sender["bw_MBps"] == pytest.approx(doc["end"]["sum_sent"]["bits_per_second"] / 8e6)
    assert sender["rate_gbps"] == pytest.approx(doc["end"]["sum_sent"]["bits_per_second"] / 1e9)
    assert sender["retransmits"] == 0 and sender["streams"] == 1 and sender["test"] == "tcp"
    assert {r["direction"] for r in recs} == {"sender", "receiver"}


def test_iperf3_json_udp_and_failed_run():
    (u,) = parse("iperf3_udp.json", "iperf3")
    assert u["test"] == "udp" and u["lost_packets"] == 31 and u["jitter_ms"] == 0.012
    assert u["rate_gbps"] == pytest.approx(0.9999596681)
    with pytest.raises(IngestError, match="the iperf3 run failed: unable to connect"):
        parse("iperf3_failed.json", "iperf3")
    with pytest.raises(IngestError, match=r"^iperf3: bad_iperf3_truncated.json line 6: not iperf3 -J JSON"):
        parse("bad_iperf3_truncated.json", "iperf3")


@pytest.mark.parametrize("change, words", [
    (lambda d: d["end"]["sum_received"].pop("bits_per_second"), "end.sum_received has no bits_per_second"),
    (lambda d: d["end"]["sum_received"].update(seconds=0), "end.sum_received.seconds: a summary over 0 s"),
    # An interrupted run writes its partial sums as well as the error.
    (lambda d: d.update(error="interrupt - the client has terminated"), "the iperf3 run failed: interrupt"),
    # Figures that contradict each other: an edited file, not a run.
    (lambda d: d["start"]["test_start"].update(num_streams=0), "num_streams: 0 streams ran nothing"),
    (lambda d: d["end"]["sum_received"].update(bytes=d["end"]["sum_received"]["bytes"] * 10),
     "end.sum_received: bits_per_second .* is not bytes x 8 / seconds"),
])
def test_iperf3_json_that_did_not_measure_a_run_is_refused(change, words):
    doc = json.loads((FIX / "iperf3_tcp.json").read_text())
    change(doc)
    with pytest.raises(IngestError, match=words):
        parse_text(json.dumps(doc, indent=1), "iperf3", "run.json")


def test_iperf3_text_single_and_parallel():
    single = parse("iperf3_single.txt", "iperf3")
    s = next(r for r in single if r["direction"] == "sender")
    assert s["rate_gbps"] == pytest.approx(0.934) and s["bw_MBps"] == pytest.approx(116.75)
    assert s["bytes"] == 334 * 1024**2 and s["streams"] == 1
    par = parse("iperf3_P4.txt", "iperf3")
    assert len(par) == 2 and all(r["streams"] == 4 for r in par)      # the [SUM] rows, not per stream
    assert next(r for r in par if r["direction"] == "receiver")["rate_gbps"] == pytest.approx(7.87)
    assert next(r for r in par if r["direction"] == "sender")["retransmits"] == 42


def test_iperf3_bad_text_row():
    with pytest.raises(IngestError, match=r"^iperf3: bad_iperf3_row.txt line 3:"):
        parse("bad_iperf3_row.txt", "iperf3")


# ------------------------------------------------------------------------------------------ CLI
def test_cli_ingest_stores_measured_run(tmp_path, capsys):
    store = tmp_path / "res"
    argv = ["ingest", str(FIX / "perftest_write_bw_mb.txt"), "--tool", "perftest", "--delay-us", "1000",
            "--label", "site-a", "--store", str(store), "--format", "json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out) == 5 and all(r["delay_us"] == 1000.0 and r["distance_km"] == 200.0 for r in out)
    (entry,) = Store(store).runs()
    assert (entry["source"], entry["label"], entry["kind"], entry["n_records"]) == ("measured", "site-a", "ingest-perftest", 5)
    assert main(argv) == 0                                     # same file, same facts: replaced, not duplicated
    assert len(Store(store).runs()) == 1
    assert main([*argv[:-2], "--delay-us", "10", "--format", "csv"]) == 0
    assert len(Store(store).runs()) == 2


def test_cli_ingest_distance_km_and_emu_source(tmp_path, capsys):
    store = tmp_path / "res"
    assert main(["ingest", str(FIX / "iperf3_P4.txt"), "--tool", "iperf3", "--distance-km", "10", "--source", "emu",
                 "--store", str(store), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out[0]["delay_us"] == 50.0
    assert Store(store).runs()[0]["source"] == "emu"


@pytest.mark.parametrize("name,tool,line", [
    ("bad_perftest_row.txt", "perftest", 7), ("bad_osu_row.txt", "osu", 4), ("osu_bw.txt", "perftest", 1),
    ("perftest_write_lat.txt", "osu", 1), ("perftest_write_lat.txt", "iperf3", 1), ("bad_iperf3_row.txt", "iperf3", 3),
])
def test_cli_wrong_format_one_line_exit_2_nothing_stored(tmp_path, capsys, name, tool, line):
    store = tmp_path / "res"
    good = {"perftest": "perftest_write_lat.txt", "osu": "osu_bw.txt", "iperf3": "iperf3_single.txt"}[tool]
    argv = ["ingest", str(FIX / good), str(FIX / name), "--tool", tool, "--delay-us", "0", "--store", str(store)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"longhaul: error: {tool}: {name} line {line}:")
    assert not (store / "runs").exists()                      # all files parsed before anything is stored


def test_cli_ingest_bad_options(tmp_path, capsys):
    f = str(FIX / "osu_bw.txt")
    assert main(["ingest", f, "--tool", "osu", "--delay-us", "-5", "--dry-run"]) == 2
    assert "--delay-us" in capsys.readouterr().err
    assert main(["ingest", f, "--tool", "osu", "--delay-us", "1,2", "--dry-run"]) == 2
    assert "one delay" in capsys.readouterr().err
    assert main(["ingest", str(tmp_path / "missing.txt"), "--tool", "osu", "--dry-run"]) == 2
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["ingest", f, "--tool", "netperf"])
    assert e.value.code == 2


@pytest.mark.parametrize("fixture, tool, option, refused, shown", [
    # ib_write_lat's 51 us (half a ping-pong) through 200 km, 1000 us one way, was stored as measured.
    ("perftest_write_lat.txt", "perftest", ["--distance-km", "200"], True,
     "ib_write_lat with 2-byte messages took 51.12 us, less than the 1000 us one way through the declared delay of 1000 us"),
    ("perftest_write_lat.txt", "perftest", ["--distance-km", "10"], False, None),
    # osu_latency's 1003 us: possible at 1000 us one way, not at 2000
    ("osu_latency.txt", "osu", ["--delay-us", "1000"], False, None),
    ("osu_latency.txt", "osu", ["--delay-us", "2000"], True,
     "OSU Latency with 1-byte messages took 1003.1 us, less than the 2000 us"),
    ("osu_bw.txt", "osu", ["--delay-us", "100000"], False, None),   # a bandwidth has no such floor
])
def test_a_latency_shorter_than_the_declared_delay_is_refused(tmp_path, capsys, fixture, tool, option, refused,
                                                                shown):
    store = tmp_path / "res"
    status = main(["ingest", str(FIX / fixture), "--tool", tool, *option, "--store", str(store), "--format", "csv"])
    err = capsys.readouterr().err
    if refused:
        assert status == 2 and err.count("\n") == 1 and shown in err and "check --delay-us" in err, err
        assert not (store / "runs").exists()
    else:
        assert status == 0, err


def test_the_same_output_under_another_name_is_stored_with_a_note(tmp_path, capsys):
    # A copy of a file ingested again under another name was a second run with no word, and analysis
    # counted it as an independent repeat (narrowing the decrease-per-mile bound).
    store = tmp_path / "res"
    copy = tmp_path / "copy.txt"
    copy.write_bytes((FIX / "osu_bw.txt").read_bytes())
    s = ["--tool", "osu", "--delay-us", "0", "--store", str(store), "--format", "csv"]
    assert main(["ingest", str(FIX / "osu_bw.txt"), *s]) == 0
    assert "note" not in capsys.readouterr().err
    assert main(["ingest", str(FIX / "osu_bw.txt"), *s]) == 0   # the same facts again: replaced, nothing to say
    assert "note" not in capsys.readouterr().err
    assert main(["ingest", str(copy), *s]) == 0
    first = Store(store).runs()[0]["run_id"][:12]
    err = capsys.readouterr().err
    assert f"copy.txt: note: the same output is already stored as run {first} ('osu_bw.txt', delay_us 0.0" in err, err
    assert f"`longhaul results rm {first}` if one is a copy" in err and len(Store(store).runs()) == 2


# ------------------------------------------------------------- impossible values, mismatched files
def _fixture_with(name: str, lineno: int, old: str, new: str) -> str:
    """A fixture's text with ``old`` replaced by ``new`` on line ``lineno`` (1-based; checked there)."""
    lines = (FIX / name).read_text().split("\n")
    assert old in lines[lineno - 1], lines[lineno - 1]
    lines[lineno - 1] = lines[lineno - 1].replace(old, new)
    return "\n".join(lines)


def _rejected(tmp_path, capsys, tool: str, text: str, line: int, *needles: str) -> str:
    """`longhaul ingest` of ``text`` (after a good file) stops with one line naming the file and line,
    exit status 2, and stores nothing."""
    good = {"perftest": "perftest_write_lat.txt", "osu": "osu_bw.txt", "iperf3": "iperf3_single.txt"}[tool]
    f = tmp_path / "in.txt"
    f.write_text(text)
    store = tmp_path / "res"
    assert main(["ingest", str(FIX / good), str(f), "--tool", tool, "--delay-us", "0", "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"longhaul: error: {tool}: in.txt line {line}: "), err
    for needle in needles:
        assert needle in err, err
    assert not (store / "runs").exists()
    return err


ROW_65536 = "65536      5000             701.44             688.20 \t\t   0.011011"


@pytest.mark.parametrize("row,shown", [
    ("65536 5000 nan nan nan", "BW peak[MB/sec] nan"),
    ("65536 5000 -5 -5 0.1", "BW peak[MB/sec] -5"),
    ("65536 5000 1e30 1e30 0.1", "BW peak[MB/sec] 1e+30"),
    ("65536 5000 701.44 688.20 inf", "MsgRate[Mpps] inf"),
    ("-5 5000 701.44 688.20 0.011011", "#bytes -5"),
    ("65536 -1 701.44 688.20 0.011011", "#iterations -1"),
])
def test_perftest_impossible_bandwidth_row_rejected(tmp_path, capsys, row, shown):
    text = _fixture_with("perftest_write_bw_mb.txt", 21, ROW_65536, row)
    err = _rejected(tmp_path, capsys, "perftest", text, 21, shown, "is not a possible value (valid: a number from 0 to")
    if "BW" in shown:
        assert "9.53674e+06 MB/sec" in err                     # 10^7 MB/s in perftest's 2^20-byte MB/sec


@pytest.mark.parametrize("row,shown", [
    ("2 1000 -1 inf nan", "t_min[usec] -1"), ("2 1000 1 inf nan", "t_max[usec] inf"),
    ("2 1000 1 2 nan", "t_typical[usec] nan"), ("2 1000 1 2 1e10", "t_typical[usec] 1e+10"),
])
def test_perftest_impossible_latency_row_rejected(tmp_path, capsys, row, shown):
    text = _fixture_with("perftest_send_lat_old.txt", 9, "2       1000          1006.12        1011.40      1006.55", row)
    _rejected(tmp_path, capsys, "perftest", text, 9, shown, "0 to 1e+09 us")


def test_perftest_zero_bandwidth_of_a_failed_run_kept_and_bound_in_gbits():
    zero = _fixture_with("perftest_write_bw_mb.txt", 21, ROW_65536, "65536 5000 0.00 0.00 0.000000")
    assert parse_text(zero, "perftest", "zero.txt")[2]["bw_MBps"] == 0.0
    at_bound = _fixture_with("perftest_read_bw_gbits.txt", 16, "7.61               7.60", "80000 80000")
    assert parse_text(at_bound, "perftest")[1]["bw_MBps"] == pytest.approx(1e7)   # 80 Tb/s: the bound itself
    over = _fixture_with("perftest_read_bw_gbits.txt", 16, "7.61               7.60", "80001 80001")
    with pytest.raises(IngestError, match=r"line 16: BW peak\[Gb/sec\] 80001 .* 0 to 80000 Gb/sec"):
        parse_text(over, "perftest")


def test_perftest_unknown_or_mismatched_title_rejected(tmp_path, capsys):
    foo = _fixture_with("perftest_write_bw_mb.txt", 2, "RDMA_Write BW Test", "Foo BW Test")
    _rejected(tmp_path, capsys, "perftest", foo, 2, "unknown test title 'Foo BW Test'", "RDMA_Write, RDMA_Read")
    lat_title = _fixture_with("perftest_write_bw_mb.txt", 2, "RDMA_Write BW Test", "RDMA_Write Latency Test")
    _rejected(tmp_path, capsys, "perftest", lat_title, 17,
              "does not match the title 'RDMA_Write Latency Test' on line 2", "a latency test's table has 't_min[usec]")
    bw_title = _fixture_with("perftest_send_lat_old.txt", 2, "Send Latency Test", "Send BW Test")
    _rejected(tmp_path, capsys, "perftest", bw_title, 8, "does not match the title 'Send BW Test'", "a bandwidth test's table has 'BW average[")
    untitled = _fixture_with("perftest_write_bw_mb.txt", 2, "RDMA_Write BW Test", "")
    _rejected(tmp_path, capsys, "perftest", untitled, 17, "no test title before it", "'RDMA_Write BW Test'")


@pytest.mark.parametrize("rows,line,shown,valid", [
    ("1 nan\n2 3.0\n", 3, "Latency (us) nan", "0 to 1e+09 us"),
    ("1 1.00\n2 -3\n", 4, "Latency (us) -3", "0 to 1e+09 us"),
    ("-1 1.0\n", 3, "Size -1", "0 to 2.81475e+14 bytes"),
])
def test_osu_impossible_latency_rejected(tmp_path, capsys, rows, line, shown, valid):
    _rejected(tmp_path, capsys, "osu", "# OSU MPI Latency Test v7.3\n# Size          Latency (us)\n" + rows, line,
              shown, valid)


def test_osu_bandwidth_bound_and_zero_kept(tmp_path, capsys):
    assert parse("osu_bw.txt", "osu")[0]["bw_MBps"] == 0.0          # 1 byte over a WAN prints 0.00: kept
    _rejected(tmp_path, capsys, "osu", _fixture_with("osu_bw.txt", 11, "955.60", "20000000"), 11,
              "Bandwidth (MB/s) 2e+07", "0 to 1e+07 MB/s")
    mbw_mr = "# OSU MPI Multiple Bandwidth / Message Rate Test v7.3\n# Size MB/s Messages/s\n1 0.5 -2\n"
    _rejected(tmp_path, capsys, "osu", mbw_mr, 3, "Messages/s -2", "0 to 1e+10 messages/s")


@pytest.mark.parametrize("title,header,needs", [
    ("# OSU MPI Latency Test", "# Size      Bandwidth (MB/s)", "a latency test's header has 'Latency (us)'"),
    ("# OSU MPI Bandwidth Test v7.3", "# Size          Latency (us)", "a bandwidth test's header has 'Bandwidth (MB/s)'"),
    ("# OSU MPI Allreduce Latency Test v7.3", "# Size MB/s Messages/s", "a latency test's header"),
])
def test_osu_header_not_matching_title_rejected(tmp_path, capsys, title, header, needs):
    _rejected(tmp_path, capsys, "osu", f"{title}\n{header}\n1 5.00\n", 2,
              f"does not match the title '{title.lstrip('# ')}' on line 1", needs)


BPS_SENT = '"bits_per_second": 7855904157.969274,'


@pytest.mark.parametrize("line,old,new,shown", [
    (224, BPS_SENT, '"bits_per_second": "abc",', 'end.sum_sent.bits_per_second "abc"'),
    (224, BPS_SENT, '"bits_per_second": null,', "end.sum_sent.bits_per_second null"),
    (224, BPS_SENT, '"bits_per_second": -1,', "end.sum_sent.bits_per_second -1"),
    (224, BPS_SENT, '"bits_per_second": NaN,', "end.sum_sent.bits_per_second nan"),
    (224, BPS_SENT, '"bits_per_second": 1e14,', "end.sum_sent.bits_per_second 1e+14"),
    (233, '"bits_per_second": 7852274761.925229', '"bits_per_second": Infinity', "end.sum_received.bits_per_second inf"),
    (223, '"bytes": 4910000000,', '"bytes": "q",', 'end.sum_sent.bytes "q"'),
])
def test_iperf3_json_impossible_summary_rejected(tmp_path, capsys, line, old, new, shown):
    text = _fixture_with("iperf3_tcp.json", line, old, new)
    err = _rejected(tmp_path, capsys, "iperf3", text, line, shown, "is not a possible value (valid: a number from 0 to")
    if "bits_per_second" in shown:
        assert "0 to 8e+13 bit/s" in err


def test_iperf3_json_bad_start_field_and_huge_numbers(tmp_path, capsys):
    doc = json.loads((FIX / "iperf3_tcp.json").read_text())
    doc["start"]["test_start"]["num_streams"] = "four"
    _rejected(tmp_path, capsys, "iperf3", json.dumps(doc), 1, 'start.test_start.num_streams "four"')
    doc = json.loads((FIX / "iperf3_udp.json").read_text())
    doc["end"]["sum"]["lost_percent"] = 120
    _rejected(tmp_path, capsys, "iperf3", json.dumps(doc), 1, "end.sum.lost_percent 120", "0 to 100 %")
    _rejected(tmp_path, capsys, "iperf3", '{"start": {}, "end": {"sum": {"bits_per_second": 1' + "0" * 5000 + "}}}",
              1, "not iperf3 -J JSON (a number too long to read)")


@pytest.mark.parametrize("old,new,shown", [
    ("934 Mbits/sec", "99999 Tbits/sec", "bitrate 9.9999e+16 is not a possible value (valid: a number from 0 to 8e+13"),
    ("0.00-3.00", "3.00-1.00", "interval 3.00-1.00 sec: length -2"),
])
def test_iperf3_text_impossible_summary_rejected(tmp_path, capsys, old, new, shown):
    _rejected(tmp_path, capsys, "iperf3", _fixture_with("iperf3_single.txt", 9, old, new), 9, shown)


@NO_IPERF3
def test_real_iperf3_on_loopback(tmp_path):
    """A real iperf3 run on 127.0.0.1 (1 s, bounded) parses in both JSON and text form."""
    with iperf3_server() as port:
        out = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", port, "-t", "1", "-J"], capture_output=True,
                             text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    recs = parse_text(out.stdout, "iperf3", "live.json")
    assert {r["direction"] for r in recs} == {"sender", "receiver"} and all(r["bw_MBps"] > 0 for r in recs)
    with iperf3_server() as port:
        txt = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", port, "-t", "1", "-P", "2"], capture_output=True,
                             text=True, timeout=30)
    recs = parse_text(txt.stdout, "iperf3", "live.txt")
    assert len(recs) == 2 and all(r["streams"] == 2 for r in recs)
    f = tmp_path / "live.txt"
    f.write_text(txt.stdout)
    scenario, recs2 = ingest_file(f, "iperf3", delay_us=0.0)
    assert scenario["kind"] == "ingest-iperf3" and recs2[0]["delay_us"] == 0.0
