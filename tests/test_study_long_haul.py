"""The study's long-haul part (issue 22 item 6): asked for by a site's `long-haul` workload (the
shipped UltraScience Net site), it covers verbs RC/UC/UD, MPI over RC and UD, IPoIB and 10GigE TCP
(1 and 16 streams, BIC and HTCP) on the `usn` profile at the USN loops and 20,000 km, and reports a
distance profile, a stability profile over seeds and the decrease per mile with its bound."""

from __future__ import annotations

from pathlib import Path

import pytest

import longhaul.study_parts.long_haul as lh
from longhaul.cli import main
from longhaul.errors import UserError
from longhaul.site import Site, load
from longhaul.units import KM_PER_MILE

ROOT = Path(__file__).resolve().parent.parent
USN = ROOT / "examples" / "sites" / "usn-8600mi.toml"


def test_the_matrix_covers_the_issues_range():
    pts = lh._points(quick=False, repeats=3)
    km = sorted({sc["path"]["fibre_km"] for p in pts for sc in p["scenarios"]})
    assert km == pytest.approx([0.2 * KM_PER_MILE, 1400 * KM_PER_MILE, 6600 * KM_PER_MILE, 8600 * KM_PER_MILE, 20000])
    scs = [(p["model"], sc) for p in pts for sc in p["scenarios"]]
    assert all(sc.get("testbed") == "usn" for _, sc in scs)
    verbs = {sc["verbs"]["transport"] for m, sc in scs if m == "verbs"}
    mpi = {sc["mpi"]["transport"] for m, sc in scs if m == "mpi"}
    tcp = {(sc["link"], sc["tcp"].get("cc"), sc["tcp"].get("streams")) for m, sc in scs if m == "tcp"}
    assert verbs == {"rc", "uc", "ud"} and mpi == {"rc", "ud"}
    assert {("10gige-wan", cc, n) for cc in ("bic", "htcp") for n in (1, 16)} <= tcp
    assert any(link == "ipoib-cm" for link, _, _ in tcp)
    seeds = {sc["seed"] for m, sc in scs if sc.get("path", {}).get("loss")}
    assert seeds == {1, 2, 3}


def test_the_usn_site_asks_for_it_and_the_report_shows_it(tmp_path, monkeypatch, capsys):
    # Two of the five distances keep the test short; the matrix above is the part's own.
    monkeypatch.setattr(lh, "DISTANCES_KM", (lh.DISTANCES_KM[0], lh.DISTANCES_KM[3]))
    assert main(["study", "--site", str(USN), "--parts", "long-haul", "--quick", "--out", str(tmp_path / "o"),
                 "--store", str(tmp_path / "r"), "--no-summary"]) == 0
    html = (tmp_path / "o" / "report.html").read_text()
    for caption in ("Verbs (perftest): bandwidth vs distance", "MPI (osu_bw): bandwidth vs distance",
                    "10GigE TCP (WAN PHY): bandwidth vs distance", "Stability profile", "Decrease per mile"):
        assert caption in html, caption
    svg = (tmp_path / "o" / "figures" / "long_haul_verbs_vs_distance.svg").read_text()
    assert "distance (km of fibre)" in svg and "bandwidth (MB/s, MB = 10^6 bytes)" in svg
    assert "Long haul (usn profile)" in html


def test_a_site_without_the_workload_skips_it(tmp_path):
    site = load(str(ROOT / "examples" / "sites" / "s1-2008.toml"))
    from longhaul.study import SkipPart, StudyContext

    with pytest.raises(SkipPart, match="layer = \"long-haul\""):
        lh.run(StudyContext(site=site, quick=True, out_dir=tmp_path))


def test_its_workload_takes_no_distances():
    text = USN.read_text().replace('layer = "long-haul"', 'layer = "long-haul"\ndistances_km = [10]')
    import tomllib

    with pytest.raises(UserError, match="long-haul part runs at the UltraScience Net's loops"):
        Site.from_dict(tomllib.loads(text), str(USN))
