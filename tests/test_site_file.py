"""The site file: every shipped example loads, maps onto the simulator's scenarios with the CLI's
names, and bad input is one line naming the file, the key and the valid range, exit 2, with
nothing written."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from longhaul import site as site_mod
from longhaul.cli import main
from longhaul.errors import UserError
from longhaul.site_scenarios import scenarios

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples" / "sites").glob("*.toml"))
TINY = Path(__file__).parent / "fixtures" / "sites" / "tiny.toml"


def test_the_shipped_examples_load_and_the_default_is_s1():
    names = {p.name for p in EXAMPLES}
    assert {"s1-2008.toml", "cscs-10km.toml", "usn-8600mi.toml", "ndr-metrox-40km.toml",
            "ip-100gige-2000km.toml"} <= names
    for path in EXAMPLES:
        s = site_mod.load(path)
        assert s.workloads and s.planned in s.explore, path
    default = site_mod.load()
    assert default.profile == "s1" and default.planned == {"delay_us": 1000.0}
    assert [p["delay_us"] for p in default.explore] == [0, 10, 100, 1000, 10000]


def test_distances_map_onto_the_scenarios_fibre_and_delay():
    s = site_mod.load(TINY)
    w = s.of("verbs")[0]
    scs = scenarios(s, w)
    assert {sc["path"].get("fibre_km") for _, sc in scs} == {0.0, 200.0}
    model, sc = scs[0]
    assert model == "verbs" and sc["testbed"] == "s1" and sc["hca"] == "infinihost3"
    assert sc["path"]["extender"] == "longbow-xr" and sc["verbs"]["size_bytes"] == 65536
    # the extenders' WAN port, for the verbs model
    wan = site_mod.Site.from_dict({**tomllib.loads(TINY.read_text().replace('extender = "longbow-xr"',
                                   'extender = "longbow-xr"\nwan_generation = "ddr"\nwan_width = 4'))}, "x.toml")
    assert scenarios(wan, wan.of("verbs")[0])[0][1]["path"]["wan_generation"] == "ddr"
    # miles are converted once, at the edge; up_to spreads the explored distances 0..2x planned
    miles = site_mod.load(ROOT / "examples" / "sites" / "usn-8600mi.toml")
    assert miles.planned == {"fibre_km": pytest.approx(8600 * 1.609344)}
    ndr = site_mod.load(ROOT / "examples" / "sites" / "ndr-metrox-40km.toml")
    assert [p["fibre_km"] for p in ndr.explore] == [0, 20, 40, 60, 80]


def test_a_json_site_file_is_read_too(tmp_path):
    import tomllib

    data = tomllib.loads(TINY.read_text())
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(data))
    assert site_mod.load(path).planned == {"fibre_km": 200.0}


def _edit(tmp_path, old: str, new: str, name: str = "site.toml") -> Path:
    text = TINY.read_text()
    assert old in text, old
    path = tmp_path / name
    path.write_text(text.replace(old, new, 1))
    return path


BAD = [
    ("unknown top key", 'profile = "s1"', 'profile = "s1"\nprofil = "s3"', "profil: unknown key (did you mean 'profile'?"),
    ("unknown cluster key", "cores_per_node = 2\nhca", "cores_per_node = 2\ncpus = 4\nhca", "clusters.a.cpus: unknown key"),
    ("unknown workload key", 'op = "write"', 'op = "write"\ndepth = 4', "workloads[0].depth: unknown key"),
    ("missing cluster", "[clusters.b]\nnodes = 4\ncores_per_node = 2\n", "",
     "clusters.b: missing cluster (a site has two: [clusters.a] and [clusters.b])"),
    ("negative distance", "distance_km = 200", "distance_km = -5", "link.distance_km: -5 is out of range (valid: 0 to 40000 km)"),
    ("negative explored distance", "distances_km = [0, 200]", "distances_km = [0, -1]",
     "explore.distances_km[1]: -1 is out of range (valid: 0 to 40000 km)"),
    ("adapter the fabric cannot carry", 'fabric = "ddr"', 'fabric = "ndr"',
     ("clusters.a.fabric: a ndr fabric cannot carry the infinihost3 adapter at its rate: the adapter's port is ddr "
     "(valid for infinihost3: sdr, ddr)")),
    ("a slot that is not the adapter's", 'hca = "infinihost3"', 'hca = "infinihost3"\npcie_gen = 5',
     "clusters.a.pcie_gen: 5 is not the infinihost3 adapter's (1;"),
    ("too many ranks", "nodes = 2\nppn = 2", "nodes = 8\nppn = 2",
     ("workloads[4].nodes: needs 8 nodes x 2 processes in each cluster, but the smaller cluster has 4 nodes of 2 cores "
     "(valid: at most 8 ranks per cluster)")),
    ("more ppn than cores", "nodes = 2\nppn = 2", "nodes = 2\nppn = 3", ("workloads[4].ppn: 3 processes per node, but a node "
     "has 2 cores (valid: 1 to 2)")),
    ("unknown adapter", 'hca = "infinihost3"', 'hca = "connectx9"', 'clusters.a.hca: unknown "connectx9" ('),
    ("two distances", "distance_km = 200", "distance_km = 200\ndelay_us = 5",
     "link: give exactly one of distance_km, distance_miles, delay_us (the planned distance); got distance_km, delay_us"),
    ("verbs over IP routers", 'extender = "longbow-xr"', 'routers = "10gige-lan"',
     "workloads[0].layer: 'verbs' needs InfiniBand between the sites (link.extender)"),
    ("a value of the wrong kind", "streams = [1]", 'streams = ["one"]', 'workloads[2].streams[0]: give a whole number'),
    ("a range the core refuses", "sizes = [1024, 2048]", "sizes = [4096]",
     "workloads[1] (verbs): size_bytes: 4096 is above the MTU"),
    ("not TOML", "[link]", "[link", "not valid TOML"),
]


@pytest.mark.parametrize("what,old,new,message", BAD, ids=[b[0] for b in BAD])
def test_bad_site_files_are_one_line_exit_2_and_nothing_written(tmp_path, capsys, what, old, new, message):
    path = _edit(tmp_path, old, new)
    out, store = tmp_path / "out", tmp_path / "store"
    assert main(["study", "--site", str(path), "--out", str(out), "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"longhaul: error: site {path}: "), err
    assert message in err, err
    assert not out.exists() and not store.exists()


def test_a_missing_or_endless_site_file_is_refused(tmp_path, capsys):
    assert main(["study", "--site", str(tmp_path / "nope.toml"), "--out", str(tmp_path / "o")]) == 2
    assert "--site: cannot read" in capsys.readouterr().err
    assert main(["study", "--site", "/dev/zero", "--out", str(tmp_path / "o")]) == 2
    assert "is over 1 MiB: not a site file" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_names_come_from_the_simulator():
    from longhaul.sim import verbs

    assert site_mod.names("hca") == list(verbs.HCAS)
    with pytest.raises(UserError, match="valid: " + ", ".join(verbs.EXTENDERS)):
        site_mod.Site.from_dict({"clusters": {"a": {"nodes": 1, "cores_per_node": 1},
                                              "b": {"nodes": 1, "cores_per_node": 1}},
                                 "link": {"delay_us": 0, "extender": "metrox-9"}}, "x.toml")


def test_the_reference_page_lists_every_key():
    page = (ROOT / "docs" / "reference" / "site-file.md").read_text()
    assert site_mod.schema_markdown().strip() in page, "regenerate the table: python -m longhaul.site --reference"


@pytest.mark.parametrize("profile", ["s1", "s1-connectx", "s3", "usn", "fdr", "edr", "hdr", "ndr", "xdr"])
def test_the_summarys_rate_ceilings_match_the_simulator(profile):
    """The summary names 'line rate' or 'PCIe' from rates restated in Python: a large RC write at
    0 km, where no window limits it, reaches the lower of them and never passes it."""
    from longhaul.sim import verbs
    from longhaul.study_parts._common import ceilings_MBps

    sc = verbs.scenario(testbed=profile, transport="rc", op="write", test="bw", size_bytes=1 << 20, iterations=100,
                        tx_depth=64)
    ceiling = min(v for v, _ in ceilings_MBps(verbs.validate(sc)).values())
    bw = verbs.run(sc)["bw_MBps"]
    assert 0.85 * ceiling <= bw <= ceiling, (bw, ceiling)


def test_an_ip_sites_mpi_over_tcp_runs_at_its_routers_link_rate():
    """MPI over TCP takes a rate, not a link: a site of 100 GbE routers runs it at 100 Gb/s (it ran at the
    model's 10 Gb/s default once the example named its link instead of a rate), and says so in the command."""
    s = site_mod.load(ROOT / "examples" / "sites" / "ip-100gige-2000km.toml")
    assert s.link["routers"] == "100gige" and s.routers_gbps() == 100.0
    assert s.mpi_tcp(s.planned)["path"]["rate_gbps"] == 100.0
    assert "--transport tcp --rate-gbps 100" in s.options("mpi")
