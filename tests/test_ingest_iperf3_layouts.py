"""iperf3 layouts the first parser got wrong: UDP loss and jitter, interrupted runs, --bidir, and JSON
values of the wrong type. Most fixtures are a real iperf3 3.12's output on 127.0.0.1 (see
tests/fixtures/ingest/README.md); the tests read what `longhaul ingest` prints and stores."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import NO_IPERF3, iperf3_server
from longhaul.cli import main
from longhaul.results import Store

FIX = Path(__file__).parent / "fixtures" / "ingest"


def _ingested(tmp_path, capsys, text: str, name: str = "in.txt") -> list[dict]:
    """`longhaul ingest --format json` of ``text``: exit 0, one run stored; its records."""
    f = tmp_path / name
    f.write_text(text)
    store = tmp_path / f"res-{name}"  # one store per file: its one run
    assert main(["ingest", str(f), "--tool", "iperf3", "--delay-us", "0", "--store", str(store),
                 "--format", "json"]) == 0, capsys.readouterr().err
    records = json.loads(capsys.readouterr().out)
    (entry,) = Store(store).runs()
    assert entry["n_records"] == len(records)
    return records


def _fixture(tmp_path, capsys, name: str) -> list[dict]:
    return _ingested(tmp_path, capsys, (FIX / name).read_text(), name)


def _rejected(tmp_path, capsys, text: str, line: int | None, *needles: str) -> str:
    """`longhaul ingest` of ``text`` after a good file: one line naming the file and ``line`` (None:
    any), exit status 2, nothing stored."""
    f = tmp_path / "in.txt"
    f.write_text(text)
    store = tmp_path / "res"
    assert main(["ingest", str(FIX / "iperf3_single.txt"), str(f), "--tool", "iperf3", "--delay-us", "0",
                 "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("longhaul: error: iperf3: in.txt line "), err
    if line is not None:
        assert err.startswith(f"longhaul: error: iperf3: in.txt line {line}: "), err
    for needle in needles:
        assert needle in err, err
    assert not (store / "runs").exists()
    return err


def _by_direction(records: list[dict]) -> dict[str, dict]:
    out = {r["direction"]: r for r in records}
    assert len(out) == len(records), records
    return out


# ------------------------------------------------------------------------------ 1. UDP loss, jitter
def test_udp_json_keeps_the_receivers_jitter_and_loss(tmp_path, capsys):
    """iperf3 3.12 writes end.sum_sent / end.sum_received beside end.sum for UDP."""
    doc = json.loads((FIX / "iperf3_udp_loss.json").read_text())
    got = _by_direction(_fixture(tmp_path, capsys, "iperf3_udp_loss.json"))
    assert set(got) == {"sender", "receiver"}
    rx, tx = got["receiver"], got["sender"]
    want = doc["end"]["sum_received"]
    assert rx["test"] == "udp"
    assert (rx["jitter_ms"], rx["lost_packets"], rx["packets"]) == (want["jitter_ms"], 50898, 98232)
    assert rx["lost_percent"] == pytest.approx(100 * 50898 / 98232)
    assert rx["bw_MBps"] == pytest.approx(want["bits_per_second"] / 8e6)
    # The sender's row has iperf3's zeros for what only a receiver measures: not kept as a measurement.
    assert tx["packets"] == 98232 and "jitter_ms" not in tx and "lost_percent" not in tx
    assert tx["bw_MBps"] == pytest.approx(doc["end"]["sum_sent"]["bits_per_second"] / 8e6)


def test_udp_json_sum_only_layout_keeps_lost_percent(tmp_path, capsys):
    """Older output: end.sum alone. Its loss is named lost_percent, as iperf3 names it."""
    (r,) = _fixture(tmp_path, capsys, "iperf3_udp.json")
    assert (r["jitter_ms"], r["lost_packets"], r["packets"], r["lost_percent"]) == (0.012, 31, 258978, 0.01197)


def test_udp_text_keeps_the_receivers_jitter_and_loss(tmp_path, capsys):
    got = _by_direction(_fixture(tmp_path, capsys, "iperf3_udp_loss.txt"))
    rx, tx = got["receiver"], got["sender"]
    assert (rx["test"], rx["jitter_ms"], rx["lost_packets"], rx["packets"]) == ("udp", 0.003, 51756, 105775)
    # iperf3 prints (49%) with two digits; the record has its exact 100 x lost / total.
    assert rx["lost_percent"] == pytest.approx(100 * 51756 / 105775)
    assert rx["rate_gbps"] == pytest.approx(3.54) and tx["rate_gbps"] == pytest.approx(6.93)
    assert tx["packets"] == 105775 and "jitter_ms" not in tx and "lost_packets" not in tx


def test_udp_text_parallel_keeps_the_sum_rows(tmp_path, capsys):
    got = _by_direction(_fixture(tmp_path, capsys, "iperf3_udp_P2.txt"))
    rx = got["receiver"]
    assert (rx["streams"], rx["jitter_ms"], rx["lost_packets"], rx["packets"]) == (2, 0.011, 0, 764)
    assert rx["lost_percent"] == 0
    assert got["sender"]["packets"] == 764 and got["sender"]["rate_gbps"] == pytest.approx(0.2)


def test_udp_text_percent_that_contradicts_the_counts_is_refused(tmp_path, capsys):
    text = (FIX / "iperf3_udp_loss.txt").read_text().replace("(49%)", "(12%)")
    _rejected(tmp_path, capsys, text, 8, "(12%) lost is not 51756/105775 = 48.9%")


# ------------------------------------------------------------------------------ 2. interrupted runs
def test_interrupted_text_is_refused_at_iperf3s_error_line(tmp_path, capsys):
    """A client stopped with Ctrl-C, stdout and stderr in one file (iperf3's line came first)."""
    _rejected(tmp_path, capsys, (FIX / "iperf3_interrupted.txt").read_text(), 1,
              "the iperf3 run failed: interrupt - the client has terminated")


def test_interrupted_text_without_the_error_line_is_refused_at_the_zero_row(tmp_path, capsys):
    """stdout alone (`iperf3 ... > out.txt`): the far end's row is 0.00 Bytes."""
    text = (FIX / "iperf3_interrupted.txt").read_text().split("\n", 1)[1]
    _rejected(tmp_path, capsys, text, 9, "the receiver row counted 0.00 Bytes while the sender row counted",
              "interrupted")
    # -R: the server is the sender, so its row is the one left at zero.
    _rejected(tmp_path, capsys, (FIX / "iperf3_interrupted_R.txt").read_text(), 9,
              "the sender row counted 0.00 Bytes while the receiver row counted")


def test_interrupted_text_through_the_command_line(cli, tmp_path):
    store = tmp_path / "res"
    proc = cli("ingest", str(FIX / "iperf3_interrupted.txt"), "--tool", "iperf3", "--store", str(store))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == ("longhaul: error: iperf3: iperf3_interrupted.txt line 1: the iperf3 run failed: "
                           "interrupt - the client has terminated\n")
    assert not (store / "runs").exists()


def test_client_json_with_a_zero_half_is_refused_like_the_text(tmp_path, capsys):
    doc = json.loads((FIX / "iperf3_tcp.json").read_text())
    doc["end"]["sum_received"].update(bytes=0, bits_per_second=0)
    text = json.dumps(doc, indent=1)
    line = text[: text.index('"bytes"', text.index('"sum_received": {'))].count("\n") + 1
    _rejected(tmp_path, capsys, text, line, "end.sum_received counted 0 bytes while end.sum_sent counted")


def test_server_json_drops_the_clients_zero_half(tmp_path, capsys):
    """A server's -J output writes zeros for the client's counts, which it never learns."""
    got = _by_direction(_fixture(tmp_path, capsys, "iperf3_server_bidir.json"))
    assert set(got) == {"forward-receiver", "reverse-sender"}
    assert all(r["bytes"] > 0 for r in got.values())
    assert got["reverse-sender"]["retransmits"] == 1


# ------------------------------------------------------------------------------------ 3. --bidir
def _check_bidir(got: dict[str, dict]) -> None:
    assert set(got) == {"forward-sender", "forward-receiver", "reverse-sender", "reverse-receiver"}
    for direction, r in got.items():
        assert r["bidir"] is True and r["reverse"] is direction.startswith("reverse"), r


def test_bidir_json_keeps_both_flows(tmp_path, capsys):
    doc = json.loads((FIX / "iperf3_bidir.json").read_text())["end"]
    got = _by_direction(_fixture(tmp_path, capsys, "iperf3_bidir.json"))
    _check_bidir(got)
    for direction, key in (("forward-sender", "sum_sent"), ("forward-receiver", "sum_received"),
                           ("reverse-sender", "sum_sent_bidir_reverse"),
                           ("reverse-receiver", "sum_received_bidir_reverse")):
        assert got[direction]["bytes"] == doc[key]["bytes"]
        assert got[direction]["bw_MBps"] == pytest.approx(doc[key]["bits_per_second"] / 8e6)
    assert (got["forward-sender"]["retransmits"], got["reverse-sender"]["retransmits"]) == (10, 3)
    assert all(r["streams"] == 1 for r in got.values())


def test_bidir_text_keeps_both_flows(tmp_path, capsys):
    """`[ ID][Role] Interval ...` header, `[SUM][TX-C]` / `[SUM][RX-C]` rows with -P 2."""
    got = _by_direction(_fixture(tmp_path, capsys, "iperf3_bidir_P2.txt"))
    _check_bidir(got)
    assert [got[d]["rate_gbps"] for d in ("forward-sender", "forward-receiver", "reverse-sender", "reverse-receiver")] \
        == pytest.approx([6.77, 6.65, 11.3, 11.2])
    assert got["forward-sender"]["retransmits"] == 14 and got["reverse-sender"]["retransmits"] == 19
    assert all(r["streams"] == 2 for r in got.values())       # -P 2: two streams each way, not four


def test_udp_bidir_text_and_json_keep_each_flows_jitter(tmp_path, capsys):
    txt = _by_direction(_fixture(tmp_path, capsys, "iperf3_udp_bidir.txt"))
    _check_bidir(txt)
    assert (txt["forward-receiver"]["jitter_ms"], txt["reverse-receiver"]["jitter_ms"]) == (0.055, 0.006)
    assert all(r["packets"] == 382 for r in txt.values())
    doc = json.loads((FIX / "iperf3_udp_bidir.json").read_text())["end"]
    js = _by_direction(_ingested(tmp_path, capsys, (FIX / "iperf3_udp_bidir.json").read_text(), "u.json"))
    _check_bidir(js)
    assert js["reverse-receiver"]["jitter_ms"] == doc["sum_received_bidir_reverse"]["jitter_ms"]
    assert js["forward-receiver"]["jitter_ms"] == doc["sum_received"]["jitter_ms"]


def test_bidir_and_one_way_runs_are_not_averaged_as_repeats(tmp_path, capsys):
    """analyse keeps direction apart (a configuration column): a --bidir flow is not a repeat of a one-way run."""
    store = tmp_path / "res"
    assert main(["ingest", str(FIX / "iperf3_bidir.json"), str(FIX / "iperf3_tcp.json"), "--tool", "iperf3",
                 "--delay-us", "100", "--store", str(store)]) == 0
    capsys.readouterr()
    assert main(["analyse", "profile", "--store", str(store), "--kind", "ingest-iperf3", "--by", "direction",
                 "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sorted((r["direction"], r["n"]) for r in rows) == [
        ("forward-receiver", 1), ("forward-sender", 1), ("receiver", 1), ("reverse-receiver", 1),
        ("reverse-sender", 1), ("sender", 1)]


@pytest.mark.parametrize("fixture, key, value, words", [
    # Releases after 3.12 write test_start.bidir; the reverse flow's summaries must then be there.
    ("iperf3_tcp.json", "bidir", 1, "start.test_start.bidir is 1 but 'end' has no sum_sent_bidir_reverse"),
    ("iperf3_bidir.json", "bidir", 0, "end.sum_sent_bidir_reverse in a run whose start.test_start.bidir is 0"),
    ("iperf3_bidir.json", "reverse", 1, "iperf3 refuses -R with --bidir"),
])
def test_bidir_json_that_contradicts_itself_is_refused(tmp_path, capsys, fixture, key, value, words):
    doc = json.loads((FIX / fixture).read_text())
    doc["start"]["test_start"][key] = value
    _rejected(tmp_path, capsys, json.dumps(doc, indent=1), None, words)


# ---------------------------------------------------------------------------- 4. JSON value types
def _line_of(text: str, *keys: str) -> int:
    """The line of the last of ``keys``, each searched after the one before."""
    pos = 0
    for key in keys:
        pos = text.index(f'"{key}"', pos)
    return text[:pos].count("\n") + 1


@pytest.mark.parametrize("fixture, path, value, shown", [
    ("iperf3_tcp.json", ("start", "test_start", "num_streams"), 1.5,
     "start.test_start.num_streams 1.5 is not a whole number"),
    ("iperf3_tcp.json", ("end", "sum_sent", "retransmits"), 1.5, "end.sum_sent.retransmits 1.5 is not a whole number"),
    ("iperf3_tcp.json", ("end", "sum_sent", "bytes"), 4910000000.5,
     "end.sum_sent.bytes 4.91e+09 is not a whole number"),
    ("iperf3_tcp.json", ("start", "test_start", "blksize"), 1024.5, "start.test_start.blksize 1024.5 is not a whole"),
    ("iperf3_tcp.json", ("start", "test_start", "protocol"), {"name": "TCP"},
     'start.test_start.protocol {"name": "TCP"} is not a protocol name'),
    ("iperf3_tcp.json", ("start", "test_start", "protocol"), 6, "start.test_start.protocol 6 is not a protocol name"),
    ("iperf3_tcp.json", ("start", "version"), {"major": 3}, 'start.version {"major": 3} is not a version string'),
    ("iperf3_tcp.json", ("start", "test_start", "reverse"), "yes", 'start.test_start.reverse "yes" is not 0 or 1'),
    ("iperf3_tcp.json", ("start", "test_start"), [1], "start.test_start [1] is not an object"),
    ("iperf3_tcp.json", ("end", "sum_sent"), [1], "end.sum_sent [1] is not an object"),
    ("iperf3_udp_loss.json", ("end", "sum_received", "lost_packets"), 2.5,
     "end.sum_received.lost_packets 2.5 is not a whole number"),
    ("iperf3_udp_loss.json", ("end", "sum_received", "packets"), "many", 'end.sum_received.packets "many" is not a'),
    ("iperf3_bidir.json", ("end", "sum_sent_bidir_reverse", "retransmits"), 0.5,
     "end.sum_sent_bidir_reverse.retransmits 0.5 is not a whole number"),
])
def test_json_value_of_the_wrong_type_is_refused(tmp_path, capsys, fixture, path, value, shown):
    doc = json.loads((FIX / fixture).read_text())
    obj = doc
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value
    text = json.dumps(doc, indent=1)
    _rejected(tmp_path, capsys, text, _line_of(text, *path), shown)


def test_json_whole_number_written_as_a_float_is_kept(tmp_path, capsys):
    """cJSON prints a count above 2^31 that needs 16+ digits as 1.2e+15: still a whole number."""
    doc = json.loads((FIX / "iperf3_tcp.json").read_text())
    doc["start"]["test_start"]["num_streams"] = 1.0
    (sender,) = [r for r in _ingested(tmp_path, capsys, json.dumps(doc), "n.json") if r["direction"] == "sender"]
    assert sender["streams"] == 1 and isinstance(sender["streams"], int)


# ---------------------------------------------------------------------- the real tool on loopback
def _run(*args: str) -> str:
    with iperf3_server() as port:
        out = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", port, "-t", "1", *args], capture_output=True,
                             text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout


@NO_IPERF3
@pytest.mark.parametrize("json_output", [False, True])
def test_real_iperf3_udp_and_bidir_on_loopback(tmp_path, capsys, json_output):
    extra = ("-J",) if json_output else ()
    udp = _by_direction(_ingested(tmp_path, capsys, _run("-u", "-b", "100M", *extra), "udp.out"))
    assert set(udp) == {"sender", "receiver"}
    rx = udp["receiver"]
    assert rx["test"] == "udp" and rx["jitter_ms"] >= 0 and rx["packets"] > 0
    assert rx["lost_packets"] >= 0 and 0 <= rx["lost_percent"] <= 100
    bidir = _by_direction(_ingested(tmp_path, capsys, _run("--bidir", *extra), "bidir.out"))
    _check_bidir(bidir)
    assert all(r["bw_MBps"] > 0 for r in bidir.values())
