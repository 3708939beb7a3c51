"""`longhaul sim verbs` as a user runs it: output formats, unit-carrying keys, sweeps over
delays/distances/sizes, scenario files, determinism, and one-line errors with exit status 2."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest


def records(cli, *args):
    proc = cli("sim", "verbs", *args, "--format", "json", check=True)
    return json.loads(proc.stdout)


def test_issue_command_form_runs_the_sweep(cli):
    recs = records(cli, "--transport", "rc", "--op", "write", "--test", "bw", "--delay-us", "0,10,100,1000,10000",
                   "--sizes", "2048,65536", "--qps", "1", "--profile", "s1")
    assert len(recs) == 10
    assert {r["delay_us"] for r in recs} == {0, 10, 100, 1000, 10000}
    for key in ("size_bytes", "delay_us", "distance_km", "bw_MBps", "msg_rate_Mps", "lat_us"):
        assert key in recs[0]
    by = {(r["delay_us"], r["size_bytes"]): r["bw_MBps"] for r in recs}
    # Latency-bound medium messages fall with distance; the wire caps everything.
    assert by[(10000, 65536)] < by[(100, 65536)] < 1000.0


def test_the_window_is_the_benchmarks_tx_depth(cli):
    # S1's runs kept 16 messages in flight (the s1 default): 64 KiB cannot fill a 2 ms round trip.
    # The adapter does not limit the window: perftest's own 128 fills it on the same hardware.
    s1 = records(cli, "--sizes", "64K", "--delay-us", "1000", "--iterations", "200")[0]
    deep = records(cli, "--sizes", "64K", "--delay-us", "1000", "--iterations", "200", "--tx-depth", "128")[0]
    assert s1["tx_depth"] == 16 and deep["tx_depth"] == 128
    window_bound = 16 * 65536 / 2000.0  # bytes per us = MB/s: 16 messages per 2 ms round trip
    assert 0.85 * window_bound < s1["bw_MBps"] <= window_bound  # below it by the start-up round trip
    assert deep["bw_MBps"] > 800.0  # near the 4x SDR wire (987 MB/s) but for the start-up round trip
    other = records(cli, "--sizes", "64K", "--delay-us", "1000", "--iterations", "200", "--profile", "s3")[0]
    assert other["tx_depth"] == 128  # perftest's default outside the S1 profiles


def test_power_of_two_size_range_and_distance_units(cli):
    recs = records(cli, "--sizes", "2:64", "--distance-km", "10,100", "--iterations", "50")
    assert sorted({r["size_bytes"] for r in recs}) == [2, 4, 8, 16, 32, 64]
    assert sorted({r["distance_km"] for r in recs}) == [10, 100]
    miles = records(cli, "--sizes", "64K", "--distance-miles", "100")
    assert miles[0]["distance_km"] == pytest.approx(160.9344)
    assert miles[0]["one_way_delay_us"] == pytest.approx(804.672)


def test_a_point_given_twice_runs_once_with_a_note(cli):
    proc = cli("sim", "verbs", "--sizes", "64K,65536,4K", "--delay-us", "0,10,0.0", "--iterations", "50",
               "--format", "json", check=True)
    recs = json.loads(proc.stdout)
    assert sorted((r["size_bytes"], r["delay_us"]) for r in recs) == [(4096, 0), (4096, 10), (65536, 0), (65536, 10)]
    assert "--sizes: 65536 given more than once" in proc.stderr
    assert "--delay-us: 0 given more than once" in proc.stderr


def test_a_read_overtaken_by_a_later_reads_responses_is_requested_again_at_once(cli):
    # 0.1% loss, 4 reads in flight: a lost response shows as the next read's responses arriving,
    # and the requester asks again then (Linux rxe does), not after the ACK timeout (which left
    # reads at 26 MB/s while writes, repaired by NAKs, kept 972).
    clean, lossy = (records(cli, "--op", "read", "--sizes", "64K", "--iterations", "300", *extra)[0]
                    for extra in ((), ("--loss", "0.001")))
    assert lossy["read_retries"] > 0 and lossy["delivered_bytes"] == 300 * 65536
    assert lossy["bw_MBps"] > 0.9 * clean["bw_MBps"], (lossy["bw_MBps"], clean["bw_MBps"], lossy["timeouts"])


def test_what_the_wan_lost_is_counted_for_unreliable_transports(cli):
    uc = records(cli, "--transport", "uc", "--sizes", "64K", "--iterations", "300", "--loss", "0.001")[0]
    assert uc["wan_drops_loss"] > 0 and uc["uc_messages_dropped"] <= uc["wan_drops_loss"]
    assert records(cli, "--transport", "uc", "--sizes", "64K", "--iterations", "300")[0]["wan_drops_loss"] == 0


@pytest.mark.parametrize("qps", [2, 3])
def test_parallel_wan_links_each_carry_connections(cli, qps):
    # NDR hosts behind OC-192 extenders: one ~1178 MB/s link per connection, up to the link count
    # (the flow hash once took the destination QP, always odd one way, so half the links idled).
    bw = {n: records(cli, "--profile", "ndr", "--wan-framing", "oc192", "--sizes", "64K", "--iterations", "100",
                     "--qps", str(qps), "--wan-links", str(n))[0]["bw_MBps"] for n in (1, 4)}
    assert bw[1] < 1200 and bw[4] == pytest.approx(qps * bw[1], rel=0.02), bw


@pytest.mark.parametrize("fmt,marker", [("table", "bw_MBps"), ("csv", "size_bytes,"), ("json", '"bw_MBps"')])
def test_formats(cli, fmt, marker):
    out = cli("sim", "verbs", "--sizes", "4K", "--format", fmt, check=True).stdout
    assert marker in out
    if fmt == "table":
        assert "MB = 10^6 bytes" in out


def test_csv_carries_every_field_table_columns_first(cli):
    out = cli("sim", "verbs", "--test", "lat", "--sizes", "2", "--distance-km", "10", "--format", "csv", check=True).stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    header = out.splitlines()[0].split(",")
    assert header[:3] == ["transport", "op", "size_bytes"]
    assert float(rows[0]["one_way_delay_us"]) == 50.0 and rows[0]["seed"] == "1" and "sim_events" in header


def test_latency_and_read_tests(cli):
    lat = records(cli, "--test", "lat", "--op", "send", "--profile", "s3", "--distance-km", "10", "--sizes", "2")
    # 10 km of fibre is 50 us one way: the half round trip cannot be less.
    assert 50.0 < lat[0]["lat_us"] < 60.0
    rd = records(cli, "--test", "lat", "--op", "read", "--profile", "s3", "--distance-km", "10", "--sizes", "2")
    assert rd[0]["lat_us"] == pytest.approx(2 * lat[0]["lat_us"], rel=0.05)  # read reports the round trip


def test_bibw_doubles_and_ud_is_flat(cli):
    uni = records(cli, "--sizes", "1M", "--iterations", "50")[0]["bw_MBps"]
    bi = records(cli, "--test", "bibw", "--sizes", "1M", "--iterations", "50")[0]["bw_MBps"]
    assert bi == pytest.approx(2 * uni, rel=0.02)
    ud = records(cli, "--transport", "ud", "--sizes", "2048", "--delay-us", "0,10000")
    assert ud[0]["bw_MBps"] == pytest.approx(ud[1]["bw_MBps"], rel=0.02)


def test_same_seed_same_bits_and_loss_changes_with_seed(cli):
    args = ("--sizes", "64K", "--delay-us", "100", "--loss", "0.01", "--iterations", "100")
    a = cli("sim", "verbs", *args, "--seed", "3", "--format", "json", check=True).stdout
    b = cli("sim", "verbs", *args, "--seed", "3", "--format", "json", check=True).stdout
    c = cli("sim", "verbs", *args, "--seed", "4", "--format", "json", check=True).stdout
    assert a == b
    assert json.loads(a)[0]["retransmitted_packets"] > 0
    assert json.loads(a)[0]["sim_time_us"] != json.loads(c)[0]["sim_time_us"]


def test_scenario_file_drives_the_run(cli, tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('testbed = "s3"\nseed = 7\n[path]\nfibre_km = 10\n[verbs]\ntransport = "uc"\nop = "send"\n'
                 'test = "bibw"\nsize_bytes = 65536\n')
    r = records(cli, "--scenario", str(f))[0]
    assert (r["testbed"], r["fibre_km"], r["size_bytes"], r["seed"]) == ("s3", 10, 65536, 7)
    assert (r["transport"], r["op"], r["test"]) == ("uc", "send", "bibw")  # the file's, not the CLI's defaults
    given = records(cli, "--scenario", str(f), "--transport", "rc", "--op", "write", "--seed", "3")[0]
    assert (given["transport"], given["op"], given["test"], given["seed"]) == ("rc", "write", "bibw", 3)
    # What perftest's options were is in the record, the ones the model does not use too.
    depth = records(cli, "--scenario", str(f), "--rx-depth", "7", "--outstanding-reads", "2")[0]
    assert (depth["rx_depth"], depth["outstanding_reads"]) == (7, 2)
    # The file's queue pairs too (--qps left out used to mean 1 whatever the file said).
    qps = tmp_path / "qps.toml"
    qps.write_text("[verbs]\nqps = 4\nsize_bytes = 4096\n")
    assert records(cli, "--scenario", str(qps))[0]["qps"] == 4
    assert records(cli, "--scenario", str(qps), "--qps", "2")[0]["qps"] == 2


@pytest.mark.parametrize("model, content, file_error, option, option_error", [
    ("verbs", "[verbs]\nqps = 0\n", "verbs.qps: 0 is out of range [1, 1024]", ["--qps", "2"], None),
    ("verbs", '[verbs]\ntest = "lat"\n[path]\ndelay_us = -4\n', "path.delay_us: -4 is out of range [0, 200000]",
     ["--delay-us", "5"], None),
    ("tcp", "[tcp]\nstreams = 5000\n", "tcp.streams: 5000 is out of range [1, 1024]", ["--streams", "2"], None),
    ("tcp", "[cross]\ngbps = 50\n", "cross.gbps: 50 is out of range (0, 8.0000]", ["--cross-gbps", "1"], None),
    ("tcp", '[tcp]\nstreams = "a"\n', 'tcp.streams: invalid type: string "a"', ["--streams", "2"], None),
    # An option's value is named by the option, not the file.
    ("tcp", '[tcp]\nstreams = 2\n', None, ["--streams", "0"], "--streams: 0 is out of range [1, 1024]"),
    ("nfs", "[nfs]\nthreads = 0\n", "nfs.threads: 0 is out of range", ["--threads", "2"], None),
    # The file's transport went through --transport's parser: named as the option, a list garbled
    # ("unknown '['rdma''"), a number taken as a name, and "rdma,ipoib-rc" ran two transports.
    ("nfs", 'transport = "foo"\n', "transport: unknown 'foo' (valid: rdma, ipoib-rc, ipoib-ud)",
     ["--transport", "rdma"], None),
    ("nfs", 'transport = ["rdma", "ipoib-rc"]\n', "transport: invalid type: sequence, expected a string",
     ["--transport", "rdma"], None),
    ("nfs", 'transport = "rdma,ipoib-rc"\n', "transport: unknown 'rdma,ipoib-rc'", ["--transport", "rdma"], None),
])
def test_a_bad_value_from_the_scenario_file_names_the_file(cli, tmp_path, model, content, file_error, option,
                                                          option_error):
    f = tmp_path / "s.toml"
    f.write_text(content)
    quick = {"tcp": ["--duration-s", "0.01"], "verbs": ["--sizes", "64"], "nfs": ["--simulated-bytes", "1M"]}[model]
    proc = cli("sim", model, "--scenario", str(f), *quick)
    if file_error:
        assert proc.returncode == 2 and proc.stderr.startswith(f"longhaul: error: scenario {f}: ") \
            and file_error in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    # Overridden by an option, the file's bad value is not used; an option's bad value is the option's.
    given = cli("sim", model, "--scenario", str(f), *quick, *option)
    if option_error:
        assert given.returncode == 2 and option_error in given.stderr and str(f) not in given.stderr, given.stderr
    else:
        assert given.returncode == 0, given.stderr
    sweep = cli("sweep", model, "--base", str(f), "--grid", '{"seed": [1]}', "--store", str(tmp_path / "store"))
    if file_error:
        assert sweep.returncode == 2 and sweep.stderr.startswith(f"longhaul: error: scenario {f}: {file_error}"), \
            sweep.stderr


def test_a_bad_value_from_an_mpi_base_file_names_the_file_and_its_key(cli, tmp_path):
    """The grid gives an MPI sweep its workload; the file's own bad value is still the file's."""
    f = tmp_path / "m.toml"
    f.write_text("[cluster]\nnodes = 2\n[path]\nloss = 2\n")
    osu = '"osu": {"bench": "bw", "size_bytes": 8}'
    sweep = cli("sweep", "mpi", "--base", str(f), "--grid", f'{{{osu}, "delay_us": [0]}}', "--store", str(tmp_path))
    assert sweep.returncode == 2 and sweep.stderr == \
        f"longhaul: error: scenario {f}: path.loss: 2 is out of range [0, 0.5]\n", sweep.stderr
    sweep = cli("sweep", "mpi", "--base", str(f), "--grid", f'{{{osu}, "loss": [0, 3]}}', "--store", str(tmp_path))
    assert sweep.returncode == 2 and sweep.stderr == "longhaul: error: loss: 3 is out of range [0, 0.5]\n", \
        sweep.stderr


@pytest.mark.parametrize("argv", [["sim", "verbs"], ["sim", "tcp"], ["sim", "nfs"],
                                  ["sweep", "nfs", "--grid", '{"delay_us": [0]}', "--base"]])
def test_an_empty_scenario_file_name_is_refused(cli, argv):
    """'' was no file at all: the run went ahead on the defaults (sim), or read '' as a directory."""
    option = "--base" if argv[0] == "sweep" else "--scenario"
    proc = cli(*argv, *([] if option == "--base" else [option]), "")
    assert proc.returncode == 2 and proc.stderr == (
        f"longhaul: error: {option}: empty file name (give the path of a TOML or JSON scenario file)\n"), proc.stderr


def test_a_size_is_read_exactly(cli):
    """Sizes are whole numbers of bytes: read as typed, not through a float (which made
    99999999999999999999 into 100000000000000000000 in the error)."""
    proc = cli("sim", "tcp", "--window", "99999999999999999999")
    assert proc.returncode == 2 and "tcp.window_bytes: 99999999999999999999 is out of range" in proc.stderr, \
        proc.stderr


def test_help_lists_parameters_with_units(cli):
    out = cli("sim", "verbs", "--help", check=True).stdout
    for text in ("--delay-us", "--distance-km", "--distance-miles", "--sizes", "--tx-depth", "--qps", "MB = 10^6",
                 "default", "0..200000"):
        assert text in out


def test_no_progress_bar_when_not_a_terminal(cli):
    proc = cli("sim", "verbs", "--sizes", "2:1K", check=True)
    assert proc.stderr == ""


BAD = [
    (["--extender-buffer", ""], "--extender-buffer: '' is not a size"),   # was ignored: the default buffer ran
    (["--switch-buffer", ""], "--switch-buffer: '' is not a size"),
    (["--delay-us", "-5"], "--delay-us"),
    (["--delay-us", "abc"], "--delay-us"),
    (["--sizes", "0"], "--sizes"),
    (["--sizes", "12Q"], "--sizes"),
    (["--transport", "xx"], "--transport"),
    (["--op", "fly"], "--op"),
    (["--profile", "nope"], "--profile"),
    (["--transport", "ud", "--sizes", "4096"], "MTU"),
    (["--transport", "ud", "--op", "write"], "UD"),
    (["--qps", "0"], "--qps"),
    (["--switch-buffer", "100"], "switch_buffer_bytes"),
    (["--extender-buffer", "1K"], "extender_buffer_bytes"),
    (["--loss", "2"], "loss"),
    (["--loss", "nan"], "--loss: nan is out of range [0, 0.5]"),
    (["--mtu", "3000"], "--mtu"),
    # InfiniHost III ports stop at 2 KB (4 KB came with ConnectX): S1's adapters cannot run 4096.
    (["--mtu", "4096"], "mtu_bytes: 4096 is above the infinihost3 adapter's largest MTU (valid: 256, 512, 1024, 2048)"),
    (["--distance-km", "1", "--delay-us", "1"], "not allowed with"),
    (["--iterations", "-1"], "--iterations: -1 is out of range [1, 1e8]"),
    (["--seed", "1.5"], "--seed: '1.5' is not a whole number"),
    # An empty item in a comma list (a value lost in editing) is refused, not dropped: the run
    # would otherwise go ahead without the point and nothing would say so. A trailing comma too.
    (["--sizes", "1K,,2K"], "--sizes: empty item in '1K,,2K' (each item is a size in [1, 1073741824] bytes, like 65536 or 64K"),
    (["--sizes", "1K,"], "--sizes: empty item in '1K,'"),
    (["--delay-us", "0,,10"], "--delay-us: empty item in '0,,10' (each item is a number in [0, 200000])"),
    (["--qps", "1,2,"], "--qps: empty item in '1,2,' (each item is a whole number in [1, 1024])"),
    # More reads in flight than the adapter's max_qp_rd_atom: the run used the adapter's 4 while
    # the record said 64.
    (["--op", "read", "--outstanding-reads", "64"], "outstanding_reads: 64 is above the infinihost3 adapter's limit (valid: 1..4)"),
    (["--op", "read", "--outstanding-reads", "17", "--profile", "ndr"], "outstanding_reads: 17 is above the connectx7 adapter's limit (valid: 1..16)"),
]


@pytest.mark.parametrize("args,needle", BAD)
def test_bad_input_is_one_line_and_exit_2(cli, args, needle):
    proc = cli("sim", "verbs", *args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert needle in lines[0]
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("content,needle", [("verbs = 3\n", "'verbs' must be a table"), ("[path\n", "not valid TOML"),
                                            ('[verbs]\nbogus = 1\n', "unknown field"),
                                            ('[path]\nwan_framing = "atm"\n', "path.wan_framing: unknown variant `atm`, expected one of `ib`"),
                                            ("[path]\nloss = nan\n", "path.loss: not a finite number"),
                                            # a whole number no 64-bit field holds, or one past its field's
                                            # type: called what it is, with the range (not "a float", not "< 0")
                                            ("[verbs]\nqps = 99999999999999999999\n",
                                             ("verbs.qps: 99999999999999999999 is out of range (no parameter takes "
                                             "a whole number outside [-9223372036854775808, 18446744073709551615]")),
                                            ("[verbs]\nqps = 1099511627776\n", ("verbs.qps: invalid value: integer "
                                             "`1099511627776`, expected a whole number in [0, 4294967295]"))])
def test_malformed_scenario_file(cli, tmp_path, content, needle):
    f = tmp_path / "bad.toml"
    f.write_text(content)
    proc = cli("sim", "verbs", "--scenario", str(f))
    assert proc.returncode == 2 and needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    if "expected" in needle:  # the core's error: positions in the JSON the CLI built would mislead
        assert "column" not in proc.stderr
    missing = cli("sim", "verbs", "--scenario", str(tmp_path / "nope.toml"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr


@pytest.mark.parametrize("content,needle", [
    # An empty name is a bad value, not "left out" (it ran rc write bw).
    ('[verbs]\ntransport = ""\n', "verbs.transport: unknown variant ``, expected one of `rc`, `uc`, `ud`"),
    ('[verbs]\nop = ""\n', "verbs.op: unknown variant ``, expected one of `send`, `write`, `read`"),
    ('[verbs]\ntest = ""\n', "verbs.test: unknown variant ``, expected one of `bw`, `lat`, `bibw`, `rate`"),
    # The file's MTU, not --sizes (which was not given), is at fault for UD's default sizes.
    ('[path]\nmtu_bytes = 0\n[verbs]\ntransport = "ud"\n', "path.mtu_bytes: 0 is not an IB MTU"),
])
def test_an_empty_or_bad_workload_value_in_the_file_is_refused_naming_it(cli, tmp_path, content, needle):
    f = tmp_path / "s.toml"
    f.write_text(content)
    proc = cli("sim", "verbs", "--scenario", str(f), "--iterations", "5")
    assert proc.returncode == 2 and proc.stderr.startswith(f"longhaul: error: scenario {f}: {needle}") \
        and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_negative_zero_in_a_scenario_file_is_zero_in_the_records(cli, tmp_path):
    f = tmp_path / "z.toml"
    f.write_text("[path]\ndelay_us = -0.0\nfibre_km = -0.0\n[verbs]\nsize_bytes = 64\n")
    out = cli("sim", "verbs", "--scenario", str(f), "--iterations", "5", "--format", "csv", check=True).stdout
    (row,) = csv.DictReader(io.StringIO(out))
    keys = ("delay_us", "fibre_km", "one_way_delay_us", "distance_km")
    assert [row[k] for k in keys] == ["0.0"] * 4, row  # was delay_us -0.0 (and -0 in the table)
    (r,) = records(cli, "--scenario", str(f), "--iterations", "5")
    assert [math.copysign(1.0, r[k]) for k in keys] == [1.0] * 4, r


@pytest.mark.parametrize("name,content,needle", [("bin.toml", b"\xff\xfe\x00", "not a text file"),
                                                 ("list.json", b"[1, 2]", "must hold a table/object"),
                                                 ("path.toml", b"path = 3", "'path' must be a table")])
@pytest.mark.parametrize("model", ["verbs", "tcp", "nfs"])
def test_scenario_file_of_the_wrong_kind(cli, tmp_path, model, name, content, needle):
    f = tmp_path / name
    f.write_bytes(content)
    proc = cli("sim", model, "--scenario", str(f))
    assert proc.returncode == 2 and needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.parametrize("transport", ["uc", "ud"])
def test_unreliable_transports_count_what_landed(cli, transport):
    # The sender is done once its messages have left the adapter; the run goes on until they land.
    recs = records(cli, "--transport", transport, "--op", "send", "--sizes", "2048", "--iterations", "5",
                   "--delay-us", "0,1000")
    assert [r["delivered_bytes"] for r in recs] == [5 * 2048, 5 * 2048]
    assert recs[1]["sim_time_us"] > 1000  # the last packet crossed the 1 ms path after the sender finished


def test_a_ud_latency_probe_lost_says_why_the_run_is_incomplete(cli):
    # UD has no retransmission: a lost ping-pong message leaves both sides waiting forever.
    (r,) = records(cli, "--transport", "ud", "--op", "send", "--test", "lat", "--sizes", "64", "--loss", "0.5",
                   "--seed", "3")
    assert r["status"].startswith("incomplete: a lost message is never resent over UD (stopped after ")
    assert r["lat_us"] is None and r["sim_time_us"] > 0


def test_a_typed_minus_zero_is_zero(cli):
    out = cli("sim", "verbs", "--distance-km", "-0", "--sizes", "64", "--iterations", "20", "--format", "json",
              check=True).stdout
    assert '"fibre_km": 0.0' in out and "-0.0" not in out


def test_tables_keep_their_cells_whole_and_note_mb_only_where_used(cli):
    lat = cli("sim", "verbs", "--test", "lat", "--sizes", "64", "--iterations", "20", check=True).stdout
    assert "lat_us" in lat and "MB = 10^6 bytes" not in lat  # no MB column, no MB note
    bw = cli("sim", "verbs", "--sizes", "64", "--iterations", "20", check=True).stdout
    assert "MB = 10^6 bytes" in bw
    # Written to a pipe, a table is as wide as its cells: ids are not folded over two lines.
    compare = cli("analyse", "compare", check=True).stdout
    assert "S1-ipoib-rc-64k-peak" in compare and "MB = 10^6 bytes" in compare


def test_a_verbs_sweep_without_sizes_runs_the_sizes_sim_verbs_runs(cli, tmp_path):
    """A grid that leaves the message size out means what `sim verbs` means by it (it was refused
    with "scenario: verbs: missing field `size_bytes`", naming no option or key)."""
    def sizes(*argv):
        return [r["size_bytes"] for r in json.loads(cli(*argv, "--format", "json", check=True).stdout)]

    store = ["--store", str(tmp_path)]
    for grid, sim in (({"transport": ["ud"]}, ["--transport", "ud"]), ({"test": ["lat"]}, ["--test", "lat"])):
        assert sizes("sweep", "verbs", "--grid", json.dumps(grid), *store) == sizes("sim", "verbs", *sim)
    # 10 iterations a point: the sizes are the point here, not the bandwidth
    assert sizes("sweep", "verbs", "--grid", '{"delay_us": [0], "iterations": [10]}', *store) == [2 << k for k in range(23)]


def test_read_bibw_is_twice_read_bw_when_the_link_binds(cli):
    """Each host both answers its peer's reads and posts its own: with the link the bound (1 MiB
    reads, 4 outstanding, 1000 us), both directions fill. Responses used to go first, so a host's
    read requests waited behind its queued responses: 1590 MB/s bidirectional, not ~2 x 978."""
    def bw(test):
        (r,) = json.loads(cli("sim", "verbs", "--op", "read", "--test", test, "--sizes", "1M", "--delay-us", "1000",
                              "--iterations", "200", "--format", "json", check=True).stdout)
        return r["bw_MBps"]

    one_way, both = bw("bw"), bw("bibw")
    assert 1.95 * one_way <= both <= 2 * one_way * 1.001, (one_way, both)


def test_no_ack_timeout_on_a_lossless_path_when_queue_pairs_wait_their_turn(cli, tmp_path):
    # The RC ACK timer ran from a queue pair's last ACK, not from the packet it sent after waiting
    # (with nothing outstanding) behind 63 others: with a 4.2 ms timeout (timeout_exp 10) 64 QPs at
    # 0 us had 25 timeouts and 775 resent packets on a path that loses nothing.
    sc = tmp_path / "t.toml"
    sc.write_text("[verbs]\ntimeout_exp = 10\n")
    (r,) = records(cli, "--scenario", str(sc), "--qps", "64", "--sizes", "64K", "--iterations", "20", "--delay-us", "0")
    assert (r["timeouts"], r["retransmitted_packets"], r["status"]) == (0, 0, "ok")
