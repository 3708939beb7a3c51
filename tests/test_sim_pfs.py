"""``longhaul sim pfs`` as a user runs it: a failure drill from a scenario file (phases, recovery,
the ledger), the time series and summary, determinism, and bad input as one line with exit
status 2."""

from __future__ import annotations

import csv
import io
import json

import pytest

DRILL = """
seed = 3
[path]
fibre_km = 10
wan_links = 4
[pfs]
duration_s = 80
[[events]]
at_s = 15.0
link = 0
action = "down"
[[events]]
at_s = 30.0
link = 1
action = "down"
[[events]]
at_s = 45.0
link = 2
action = "down"
[[events]]
at_s = 60.0
link = 2
action = "up"
"""


@pytest.fixture
def drill(tmp_path):
    path = tmp_path / "drill.toml"
    path.write_text(DRILL)
    return str(path)


def test_a_drill_keeps_the_rate_on_two_links_drops_on_one_and_recovers(cli, drill):
    (rec,) = json.loads(cli("sim", "pfs", "--scenario", drill, "--format", "json", check=True).stdout)
    assert rec["ledger_ok"] and rec["ledger_violation"] is None and rec["acked_blocks"] > 0
    phases = rec["phases"]
    assert [p["event"] for p in phases] == ["", "link 0 down", "link 1 down", "link 2 down", "link 2 up"]
    assert [p["links_plugged"] for p in phases] == [4, 3, 2, 1, 2]
    bw = [p["bw_MBps"] for p in phases]
    assert bw[1] == pytest.approx(bw[0], rel=0.01) and bw[2] == pytest.approx(bw[0], rel=0.01)
    # One link carries at most its own rate.
    assert bw[3] <= rec["link_MBps"] * 1.0001 < bw[0]
    assert phases[4]["recovery_s"] is not None and phases[4]["recovery_s"] < 60
    # A failure is a dip while RC retries until the subnet manager has rerouted (trap, 0.1 s):
    # the connections recover on the same queue pairs.
    assert phases[1]["min_MBps"] < 0.95 * bw[0]
    assert rec["rc_recoveries"] > 0 and rec["qp_errors"] == 0
    assert rec["rpc_latency"]["max_us"] > rec["rpc_latency"]["p99_us"] > rec["rpc_latency"]["p50_us"] > 0
    s = rec["series"]
    assert len(s["t_s"]) == 80 and len(s["link_util"]) == 4 and len(s["client_bw_MBps"]) == 2
    assert all(0 <= u <= 1.0 + 1e-9 for link in s["link_util"] for u in link)
    assert s["links_up"][0] == 4 and min(s["links_up"]) == 1


def test_without_traps_the_reroute_waits_for_a_sweep_and_the_connections_fail(cli, tmp_path):
    path = tmp_path / "no_traps.toml"
    path.write_text(DRILL + "[subnet_manager]\ntraps = false\n")
    (rec,) = json.loads(cli("sim", "pfs", "--scenario", str(path), "--format", "json", check=True).stdout)
    # The next 10 s sweep comes after RC's 8 x 67 ms: the queue pairs fail, GPFS reconnects and
    # resends (some blocks are written twice at their address); nothing acknowledged is lost.
    assert rec["qp_errors"] > 0 and rec["reconnects"] == rec["qp_errors"] and rec["ledger_ok"]
    assert rec["phases"][1]["min_MBps"] < 0.5 * rec["phases"][0]["bw_MBps"]
    assert rec["phases"][4]["recovery_s"] > 2


def test_same_seed_same_record_and_the_table_views(cli, drill):
    a = cli("sim", "pfs", "--scenario", drill, "--duration-s", "70", "--format", "json", check=True).stdout
    b = cli("sim", "pfs", "--scenario", drill, "--duration-s", "70", "--format", "json", check=True).stdout
    assert a == b
    rows = list(csv.DictReader(io.StringIO(
        cli("sim", "pfs", "--duration-s", "5", "--show", "series", "--format", "csv", check=True).stdout)))
    assert len(rows) == 10 and {"t_s", "bw_MBps", "client0_MBps", "link0_util"} <= rows[0].keys()
    summary = cli("sim", "pfs", "--duration-s", "2", "--show", "summary", check=True).stdout
    assert "ledger_ok" in summary and "rpc_p99_us" in summary
    table = cli("sim", "pfs", "--duration-s", "2", check=True).stdout
    assert "bw_MBps" in table and "MB = 10^6 bytes" in table


def test_lustre_reads_and_distance(cli):
    (near,) = json.loads(cli("sim", "pfs", "--variant", "lustre", "--op", "read", "--stripe-count", "2",
                             "--duration-s", "5", "--format", "json", check=True).stdout)
    assert near["variant"] == "lustre" and near["op"] == "read" and near["block_bytes"] == 1 << 20
    assert near["ledger_ok"] and near["bw_MBps"] > 0
    (close,) = json.loads(cli("sim", "pfs", "--duration-s", "5", "--format", "json", check=True).stdout)
    # 10,000 km: the Longbow C103's credits (rated for 100 km) cover 1% of the round trip.
    (c103,) = json.loads(cli("sim", "pfs", "--distance-km", "10000", "--duration-s", "5", "--format", "json",
                             check=True).stdout)
    assert c103["link_MBps"] < 0.02 * close["link_MBps"] and c103["bw_MBps"] <= c103["link_MBps"] * 1.0001
    # 20,000 km with credits to spare: each writer's write-behind window (its share of half the
    # page pool) over a 200 ms round trip holds it.
    (far,) = json.loads(cli("sim", "pfs", "--extender", "generic", "--distance-km", "20000", "--duration-s", "5",
                            "--format", "json", check=True).stdout)
    window = 64e6 * 1.048576 / 2 / 6
    assert far["bw_MBps"] <= 12 * window / 0.2 / 1e6 * 1.0001 < 0.5 * close["bw_MBps"]


@pytest.mark.parametrize("args, needle", [
    (["--wan-links", "2", "--scenario", "EVENTS:[{at_s=1.0,link=3,action='down'}]"], "link: 3 does not exist (valid: 0..1"),
    (["--scenario", "EVENTS:[{at_s=1.0,link=0,action='down'},{at_s=2.0,link=0,action='down'}]"], "link 0 is already down"),
    (["--duration-s", "10", "--scenario", "EVENTS:[{at_s=20.0,link=0,action='down'}]"], "at_s: 20 is outside the run"),
    (["--variant", "lustre", "--stripe-count", "9"], "stripe_count: 9 is more than the file system's OSTs (valid: 1..6"),
    (["--variant", "gpfs", "--stripe-count", "2"], "stripe_count: GPFS stripes every file over all NSDs"),
    (["--data-disks", "0"], "data_disks: 0 is out of range [1, 64]"),
    (["--threads", "0"], "0 is out of range"),
    (["--block-size", "1"], "block_bytes: 1 is out of range"),
])
def test_bad_input_is_one_line_and_exit_2(cli, tmp_path, args, needle):
    args = list(args)
    if "--scenario" in args:
        i = args.index("--scenario") + 1
        events = args[i].removeprefix("EVENTS:")
        path = tmp_path / "s.toml"
        path.write_text(f"events = {events}\n")
        args[i] = str(path)
    proc = cli("sim", "pfs", "--duration-s", "10", *args) if "--duration-s" not in args else cli("sim", "pfs", *args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in proc.stderr, proc.stderr


NO_TRAP_CUT = """
[path]
fibre_km = 10
wan_links = 2
[pfs]
duration_s = 20
lmc = 1
apm = {apm}
[subnet_manager]
traps = false
[[events]]
at_s = 4.0
link = 0
action = "down"
"""


def test_apm_migrates_the_connections_to_the_other_link_instead_of_failing(cli, tmp_path):
    recs = {}
    for apm in ("false", "true"):
        path = tmp_path / f"apm_{apm}.toml"
        path.write_text(NO_TRAP_CUT.format(apm=apm))
        (recs[apm],) = json.loads(cli("sim", "pfs", "--scenario", str(path), "--format", "json", check=True).stdout)
    plain, apm = recs["false"], recs["true"]
    # Without APM the 10 s sweep comes long after RC's retries: the QPs fail and GPFS reconnects.
    # With it each QP's alternate path (its ports' second LIDs, on the other link) takes over
    # when the retries run out: no error, no reconnect, a shorter stall; nothing lost either way.
    assert plain["qp_errors"] > 0 and plain["reconnects"] > 0
    assert apm["qp_errors"] == 0 and apm["reconnects"] == 0 and apm["rc_recoveries"] > 0
    assert plain["ledger_ok"] and apm["ledger_ok"]
    assert apm["rpc_latency"]["max_us"] < plain["rpc_latency"]["max_us"]


def test_apm_without_a_second_lid_is_one_line_and_exit_2(cli, tmp_path):
    path = tmp_path / "apm.toml"
    path.write_text("[pfs]\napm = true\n")
    proc = cli("sim", "pfs", "--duration-s", "2", "--scenario", str(path))
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "apm" in lines[0] and "lmc 1..7" in lines[0], proc.stderr


@pytest.mark.parametrize("transport", ["rc", "tcp"])
def test_the_packet_level_over_rc_and_tcp(cli, transport):
    """Every packet over the verbs or TCP model: the ledger holds, no link above its rate, and the
    steady rate of a link-bound write is the fluid level's within 5%."""
    common = ("--wan-links", "1", "--distance-km", "10", "--duration-s", "0.6", "--format", "json")
    (rec,) = json.loads(cli("sim", "pfs", "--network", "packet", "--transport", transport, *common,
                            check=True).stdout)
    assert (rec["network"], rec["transport"]) == ("packet", transport)
    assert rec["ledger_ok"] and rec["acked_blocks"] > 0
    assert all(u <= 1.0 + 2.5e-4 for link in rec["series"]["link_util"] for u in link)
    (fluid,) = json.loads(cli("sim", "pfs", *common, check=True).stdout)
    assert fluid["network"] == "fluid"
    assert rec["phases"][0]["bw_MBps"] == pytest.approx(fluid["phases"][0]["bw_MBps"], rel=0.05)


def test_four_links_at_packet_level_are_four_extender_pairs(cli):
    """S3's four links are four Longbow C103 pairs (one long-haul port each): the packet level
    carries more than one link's rate, as the fluid level does, not one box's local port."""
    common = ("--profile", "s3", "--extender", "longbow-c103", "--wan-links", "4", "--distance-km", "10",
              "--duration-s", "0.6", "--format", "json")
    (rec,) = json.loads(cli("sim", "pfs", "--network", "packet", *common, check=True).stdout)
    (fluid,) = json.loads(cli("sim", "pfs", *common, check=True).stdout)
    assert rec["phases"][0]["bw_MBps"] > 1.1 * rec["link_MBps"]
    assert rec["phases"][0]["bw_MBps"] == pytest.approx(fluid["phases"][0]["bw_MBps"], rel=0.05)


@pytest.mark.parametrize("args, needle", [
    (["--transport", "tcp"], "transport: tcp runs at the packet level only"),
    (["--network", "packet", "--wan-links", "2", "--scenario", "EVENTS:[{at_s=1.0,link=2,action='down'}]"],
     "link: 2 does not exist (valid: 0..1"),
])
def test_packet_level_bad_input_is_one_line_and_exit_2(cli, tmp_path, args, needle):
    test_bad_input_is_one_line_and_exit_2(cli, tmp_path, args, needle)


def test_a_link_unplugged_at_packet_level(cli, tmp_path):
    """The drill's events on the fabric: RC recovers packet by packet, nothing acknowledged is lost,
    the unplugged link carries nothing once the subnet manager has rerouted."""
    path = tmp_path / "cut.toml"
    path.write_text('[path]\nwan_links = 2\nfibre_km = 10\n[pfs]\nnetwork = "packet"\nduration_s = 1.2\n'
                    'interval_s = 0.05\n[[events]]\nat_s = 0.2\nlink = 0\naction = "down"\n')
    (rec,) = json.loads(cli("sim", "pfs", "--scenario", str(path), "--format", "json", check=True).stdout)
    assert rec["ledger_ok"] and rec["qp_errors"] == 0 and rec["status"] == "ok"
    assert [p["event"] for p in rec["phases"]] == ["", "link 0 down"]
    s = rec["series"]
    after = [i for i, t in enumerate(s["t_s"]) if t > 0.3 + 1e-9]
    assert all(s["link_MBps"][0][i] == 0 and s["links_up"][i] == 1 for i in after)
    assert rec["phases"][1]["bw_MBps"] > 0.5 * rec["phases"][0]["bw_MBps"]
