"""``longhaul sim nfs`` as a user runs it (records with units, formats, bad input as one line with
exit status 2), determinism, and properties of the NFS model (hypothesis)."""

from __future__ import annotations

import csv
import io
import itertools
import json

import pytest
from hypothesis import given, settings, strategies as st

from longhaul.sim import nfs

#: The S1 WAN: 4x SDR, 8 Gb/s of data after 8b/10b = 1000 MB/s.
SDR_DATA_MBPS = 1000.0


def test_json_records_carry_units_and_the_rdma_collapse(cli):
    proc = cli("sim", "nfs", "--transport", "rdma", "--delay-us", "0,1000", "--simulated-bytes", "4M",
               "--format", "json", check=True)
    recs = json.loads(proc.stdout)
    assert len(recs) == 2
    for r in recs:
        assert {"bw_MBps", "delay_us", "distance_km", "threads", "rsize_bytes", "slots", "chunk_bytes", "rpcs",
                "simulated_bytes", "status"} <= r.keys()
        assert r["status"] == "ok" and r["chunk_bytes"] == 4096 and r["rpcs"] == 4 * 1024 * 1024 // 32768
    bw = {r["delay_us"]: r["bw_MBps"] for r in recs}
    # 4 KiB chunks with the server's 128-work-request send queue cannot fill a 2 ms round trip.
    assert bw[1000.0] < 0.3 * bw[0.0]


def test_csv_table_distance_and_transports(cli):
    proc = cli("sim", "nfs", "--transport", "ipoib-rc,ipoib-ud", "--distance-km", "20", "--threads", "2",
               "--simulated-bytes", "2M", "--format", "csv", check=True)
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert [r["transport"] for r in rows] == ["ipoib-rc", "ipoib-ud"]
    assert float(rows[0]["distance_km"]) == pytest.approx(20.0) and rows[0]["chunk_bytes"] == "0"
    table = cli("sim", "nfs", "--simulated-bytes", "1M", check=True).stdout
    assert "MB = 10^6 bytes" in table and "rdma" in table
    # The file range's top, 1 TiB, as docs/reference/cli/sim-nfs.md writes it.
    (r,) = json.loads(cli("sim", "nfs", "--transport", "rdma", "--file-bytes", "1T", "--simulated-bytes", "1M",
                          "--format", "json", check=True).stdout)
    assert r["file_bytes"] == 1 << 40


def test_a_run_too_short_to_leave_slow_start_is_flagged(cli):
    # TCP over IPoIB-UD at 1000 us: 4 MiB is read while the window still opens, so the rate of
    # the measured bytes' second half is well above the first's; the default 32 MiB is steady.
    short = cli("sim", "nfs", "--transport", "ipoib-ud", "--delay-us", "1000", "--simulated-bytes", "4M",
                "--format", "json", check=True)
    (rec,) = json.loads(short.stdout)
    assert rec["bw_drift_pct"] > 30
    assert "raise --simulated-bytes (now 4194304 bytes)" in short.stderr and short.stderr.count("\n") == 1
    steady = cli("sim", "nfs", "--transport", "ipoib-ud", "--delay-us", "1000", "--format", "json", check=True)
    (warm,) = json.loads(steady.stdout)
    assert abs(warm["bw_drift_pct"]) < 5 and steady.stderr == ""
    assert warm["bw_MBps"] > 2 * rec["bw_MBps"]


def test_an_rsize_above_the_record_sends_no_padding_over_ipoib(cli):
    """O_DIRECT READs are never longer than a record: an rsize of 1 MiB reading 256 KiB records
    sends what 256 KiB READs send (each reply was cut into 1 MiB's segment size, padding the last:
    -14%). Through the page cache the readahead asks for whole rsize READs whatever the record."""
    def run(rsize):
        return json.loads(cli("sim", "nfs", "--transport", "ipoib-rc,ipoib-ud", "--rsize", rsize, "--record-bytes",
                              "256K", "--simulated-bytes", "16M", "--direct-io", "--format", "json",
                              check=True).stdout)

    at_record, above = run("256K"), run("1M")
    for a, b in zip(at_record, above):
        assert (b["bw_MBps"], b["data_packets"], b["rpcs"]) == (a["bw_MBps"], a["data_packets"], a["rpcs"]), b["transport"]


def test_ipoib_replies_are_cut_into_segments_as_tcp_sends_them(cli):
    """A reply is one write on a TCP_NODELAY socket, cut into segments as TCP sends: a reply written
    while the stack is still busy with the last segment shares segments with it (Linux's tcp_sendmsg
    appends to the unsent tail), so 64K O_DIRECT READs of 96K records over connected mode take between
    ceil(all bytes / MSS) segments and ceil((READ + 120 B header) / MSS) per reply, each byte once."""
    mss = {"ipoib-rc": 65480, "ipoib-ud": 1992}
    recs = json.loads(cli("sim", "nfs", "--transport", "ipoib-rc,ipoib-ud", "--rsize", "64K", "--record-bytes", "96K",
                          "--simulated-bytes", "8M", "--direct-io", "--format", "json", check=True).stdout)
    reads = 85 * [65536, 32768] + [8 * 2**20 - 85 * 96 * 1024]   # whole records, then the last one's part
    for r in recs:
        m = mss[r["transport"]]
        assert r["rpcs"] == len(reads) and r["retransmitted_packets"] == 0
        fewest = -(-sum(n + 120 for n in reads) // m)
        most = sum(-(-(n + 120) // m) for n in reads)
        assert fewest <= r["data_packets"] <= most, (r["transport"], fewest, r["data_packets"], most)
    assert recs[0]["data_packets"] < sum(-(-(n + 120) // 65480) for n in reads)  # replies written back to back coalesce


def test_help_lists_units_defaults_and_ranges(cli):
    out = cli("sim", "nfs", "--help", check=True).stdout
    for text in ("--transport", "--delay-us", "--distance-km", "--distance-miles", "--threads", "--rsize",
                 "--record-bytes", "--file-bytes", "--slots", "--format", "ipoib-rc", "4K..1M", "1..1024",
                 "(record..1T; default 512M)"):
        assert text in out, text
    assert "out of range [262144, 1099511627776]" in cli("sim", "nfs", "--file-bytes", "2T").stderr


@pytest.mark.parametrize("args, needle", [
    (("--transport", "smb"), "--transport: unknown 'smb'"),
    (("--transport", "rdma,,ipoib-ud"), "--transport: empty item in 'rdma,,ipoib-ud' (each item is one of rdma, ipoib-rc, ipoib-ud)"),
    (("--delay-us", "-1"), "--delay-us"),
    (("--delay-us", "abc"), "--delay-us"),
    (("--threads", "0"), "threads: 0 is out of range [1, 1024]"),
    (("--rsize", "100"), "rsize_bytes: 100 is out of range"),
    (("--slots", "0"), "slots: 0 is out of range"),
    (("--record-bytes", "1M", "--file-bytes", "512K"), "file_bytes"),
])
def test_bad_input_is_one_line_and_exit_2(cli, args, needle):
    proc = cli("sim", "nfs", *args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("profile", nfs.TESTBEDS)
def test_every_verbs_profile_carries_nfs_and_the_rest_are_refused_naming_them(cli, profile):
    """NFS runs over RDMA or IPoIB on any fabric (`sim nfs --profile ndr` was refused); a name that is not a
    verbs profile is refused in one line listing the valid ones."""
    proc = cli("sim", "nfs", "--profile", profile, "--transport", "rdma", "--file-bytes", "4M", "--simulated-bytes",
               "1M", "--format", "json", check=True)
    assert json.loads(proc.stdout)[0]["bw_MBps"] > 0


def test_a_profile_that_is_not_a_fabric_is_refused_for_nfs():
    from longhaul.errors import UserError

    with pytest.raises(UserError, match="testbed: unknown 'modern' for NFS \\(valid: s1, s1-connectx, s3, usn, fdr"):
        nfs.validate(nfs.scenario(testbed="modern"))


def test_same_seed_same_record():
    sc = nfs.scenario(transport="ipoib-ud", delay_us=100.0, simulated_bytes=2 << 20, seed=7)
    assert nfs.run(sc) == nfs.run(sc)
    sc = nfs.scenario(transport="rdma", delay_us=100.0, simulated_bytes=2 << 20, seed=7)
    assert nfs.run(sc) == nfs.run(sc)


@settings(max_examples=12)
@given(transport=st.sampled_from(nfs.TRANSPORTS), delay_us=st.sampled_from([0.0, 10.0, 300.0, 2000.0]),
       threads=st.integers(1, 16), slots=st.integers(1, 64))
def test_never_above_the_wan_data_rate_and_every_byte_read(transport, delay_us, threads, slots):
    r = nfs.run(nfs.scenario(transport=transport, delay_us=delay_us, threads=threads, slots=slots,
                             simulated_bytes=1 << 20))
    assert r["status"] == "ok"
    assert r["rpcs"] * r["rsize_bytes"] == r["simulated_bytes"]
    assert 0 < r["bw_MBps"] <= SDR_DATA_MBPS


@pytest.mark.parametrize("transport", nfs.TRANSPORTS)
def test_more_slots_and_threads_never_slower(transport):
    """More READs allowed in flight (credits / slot table, or threads issuing them) never lowers throughput."""
    def bw(**kw):
        return nfs.run(nfs.scenario(transport=transport, delay_us=1000.0, simulated_bytes=4 << 20, **kw))["bw_MBps"]
    by_slots = [bw(slots=s, threads=16) for s in (1, 4, 16)]
    by_threads = [bw(threads=t) for t in (1, 2, 8)]
    for seq in (by_slots, by_threads):
        assert all(b >= a * 0.98 for a, b in itertools.pairwise(seq)), seq
    assert by_slots[-1] > 1.5 * by_slots[0]


def test_scenario_file_is_the_base_and_options_override_it(cli, tmp_path):
    path = tmp_path / "nfs.toml"
    path.write_text('transport = "ipoib-ud"\n[path]\ndelay_us = 100\n[nfs]\nthreads = 4\n')
    rec = json.loads(cli("sim", "nfs", "--scenario", str(path), "--simulated-bytes", "1M", "--format", "json",
                         check=True).stdout)[0]
    assert (rec["transport"], rec["delay_us"], rec["threads"]) == ("ipoib-ud", 100.0, 4)
    rec = json.loads(cli("sim", "nfs", "--scenario", str(path), "--transport", "rdma", "--threads", "2",
                         "--simulated-bytes", "1M", "--format", "json", check=True).stdout)[0]
    assert (rec["transport"], rec["delay_us"], rec["threads"]) == ("rdma", 100.0, 2)


def test_a_point_still_warming_up_gets_a_note_from_sim_and_sweep_alike(cli, tmp_path):
    # 1 MiB over IPoIB-UD at 1000 us: the connection is still opening its window (docs/reference/cli/sim-nfs.md: a note on
    # stderr when the second half went more than 10% faster), whichever command ran the point.
    short = cli("sim", "nfs", "--transport", "ipoib-ud", "--delay-us", "1000", "--simulated-bytes", "1M", check=True)
    assert "note: ipoib-ud at 1000 us: the second half of the measured bytes went" in short.stderr
    assert "raise --simulated-bytes (now 1048576 bytes)" in short.stderr
    grid = '{"transport": ["ipoib-ud"], "delay_us": [1000], "simulated_bytes": 1048576}'
    swept = cli("sweep", "nfs", "--grid", grid, "--store", str(tmp_path / "store"), check=True)
    assert "note: ipoib-ud at 1000 us" in swept.stderr and "raise simulated_bytes in the grid" in swept.stderr
    steady = cli("sim", "nfs", "--transport", "rdma", "--delay-us", "0", "--simulated-bytes", "4M", check=True)
    assert "note:" not in steady.stderr


def test_one_direct_io_thread_waits_a_round_trip_per_record_and_readahead_does_not(cli):
    """IOzone -I with one thread: 8 READs per 256 KiB record, then a round trip of nothing; through
    the page cache the client's readahead keeps 15 READs outstanding, so the 16 credits stay full."""
    def bw(*args):
        recs = json.loads(cli("sim", "nfs", "--threads", "1", "--delay-us", "100,1000", "--simulated-bytes", "8M",
                              *args, "--format", "json", check=True).stdout)
        assert all(r["direct_io"] == ("--direct-io" in args) for r in recs)
        assert [r["readahead_reads"] for r in recs] == [0 if "--direct-io" in args else 15] * 2
        return [r["bw_MBps"] for r in recs]

    (direct_100, direct_1000), (buffered_100, buffered_1000) = bw("--direct-io"), bw()
    # 256 KiB per 2 ms round trip at 1000 us: about 130 MB/s at most.
    assert direct_1000 < 140 < 0.7 * buffered_1000
    assert direct_100 < 0.7 * buffered_100


def test_todays_linux_on_todays_profiles_is_held_by_its_readahead_not_its_credits(cli):
    """On ndr the client and server are Linux 5.4-6.12's: rsize 1 MiB, one write-chunk segment per READ,
    64 credits, and a readahead of two page-cache windows of max(128 KiB, min(record, rsize)) per thread. At a
    long delay the readahead sets the rate: threads x 2 windows per round trip, whatever the credits."""
    def run(*args):
        recs = json.loads(cli("sim", "nfs", "--profile", "ndr", "--transport", "rdma", "--delay-us", "1000,10000",
                              *args, "--format", "json", check=True).stdout)
        return recs

    recs = run()
    for r in recs:
        assert (r["rsize_bytes"], r["read_bytes"], r["slots"], r["chunk_bytes"], r["readahead_reads"]) == (
            1 << 20, 256 << 10, 64, 1 << 20, 2)
        window_MB = 8 * 2 * (256 << 10) / 1e6
        assert r["bw_MBps"] == pytest.approx(window_MB / (4 * r["one_way_delay_us"] / 2 / 1e6), rel=0.05)
    # A 1 MiB record reads a 1 MiB window: four times the rate at 10 ms, where the readahead binds (and
    # the run's default length grows to 8 x 8 threads x 2 windows, 128 MiB, so that its edges do not weigh;
    # over IPoIB to 64 x those, so that TCP's window has opened: no note).
    wide = run("--record-bytes", "1M")
    assert wide[1]["read_bytes"] == 1 << 20 and wide[1]["simulated_bytes"] == 128 << 20
    tcp = cli("sim", "nfs", "--profile", "ndr", "--transport", "ipoib-rc,ipoib-ud", "--delay-us", "1000",
              "--format", "json", check=True)
    assert [r["simulated_bytes"] for r in json.loads(tcp.stdout)] == [256 << 20] * 2 and "note" not in tcp.stderr
    assert wide[1]["bw_MBps"] == pytest.approx(4 * recs[1]["bw_MBps"], rel=0.05)
    # More credits change nothing at 10 ms (the readahead binds); S1's 2008 stack is unchanged.
    assert run("--slots", "128")[1]["bw_MBps"] == pytest.approx(recs[1]["bw_MBps"], rel=0.01)
    (old,) = json.loads(cli("sim", "nfs", "--transport", "rdma", "--delay-us", "1000", "--format", "json",
                            check=True).stdout)
    assert (old["rsize_bytes"], old["read_bytes"], old["slots"], old["readahead_reads"]) == (32768, 32768, 16, 15)


NDR_SITE = """name = "Two NDR clusters 2,000 km apart"
description = "NFS across the link on today's Linux"
profile = "ndr"
[clusters.a]
nodes = 4
cores_per_node = 2
[clusters.b]
nodes = 4
cores_per_node = 2
[link]
distance_km = 2000
extender = "generic"
[explore]
distances_km = [0, 2000]
[[workloads]]
layer = "nfs"
transports = ["rdma"]
"""


def test_the_study_names_the_readahead_where_it_holds_the_reads(cli, tmp_path):
    """The study's NFS summary says what holds the reads at the planned distance: on S1's 2008 stack the
    16 credits of 32 KiB READs, on today's the threads' readahead windows, with what to raise."""
    site = tmp_path / "ndr.toml"
    site.write_text(NDR_SITE)
    out = cli("study", "--site", str(site), "--parts", "nfs", "--out", str(tmp_path / "o"), "--store",
              str(tmp_path / "r"), check=True).stdout
    assert "8 threads x 2 readahead READs of 256 KiB (raise the mount's read_ahead_kb)" in out
    assert "allow 210 MB/s" in out
    # Raised to 15 MiB in the site file, the 64 credits of 1 MiB READs hold it instead.
    site.write_text(NDR_SITE + "readahead_bytes = 15728640\n")
    out = cli("study", "--site", str(site), "--parts", "nfs", "--out", str(tmp_path / "o15"), "--store",
              str(tmp_path / "r"), check=True).stdout
    assert "64 RPC slots x 1 MiB reads over a 20,000 us round trip allow 3,355 MB/s" in out
    site.write_text(NDR_SITE.replace('"ndr"', '"s1"').replace('"generic"', '"longbow-xr"'))
    out = cli("study", "--site", str(site), "--parts", "nfs", "--out", str(tmp_path / "o1"), "--store",
              str(tmp_path / "r"), check=True).stdout
    assert "16 RPC slots x 32 KiB reads over a 20,000 us round trip allow 26 MB/s" in out

