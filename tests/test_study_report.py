"""`longhaul study` end to end with a fake simulator (the real one is not needed), pluggable parts,
the report's content, and a headless-Chromium screenshot of it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import longhaul.study as study_mod
from longhaul.analysis import window_model
from longhaul.cli import main
from longhaul.results import Store
from longhaul.study import PartResult, SkipPart, StudyPart, Table

FAKE_PARAMS = {"rc": (960.0, 1.0, 32.0), "uc": (960.0, 0.9, 64.0), "ud": (967.0, 0.8, 1e9)}


def fake_sweep(transport="rc", op="write", test="bw", sizes=(), delays_us=(), qps=1, profile="s1",
               iterations=None, tx_depth=None, seed=1):
    """Stands in for longhaul.sim.verbs.sweep: a windowed-pipe bandwidth, the documented record keys."""
    link, per_msg, window = FAKE_PARAMS[transport]
    out = []
    for d in delays_us:
        for s in sizes:
            bw = float(window_model({"link_MBps": link, "per_msg_us": per_msg, "window_msgs": window},
                                    np.array([[s, d]]))[0])
            lat = d + per_msg + s / link
            out.append({"transport": transport, "op": op, "test": test, "profile": profile, "size_bytes": s,
                        "delay_us": float(d), "distance_km": d / 5, "qps": qps, "iterations": iterations or 1000,
                        "bw_MBps": bw if test != "lat" else None, "lat_us": lat, "lat_min_us": lat, "lat_max_us": lat,
                        "msg_rate_Mps": bw / s, "sim_events": 1000})
    return out


@pytest.fixture(autouse=True)
def no_emulation(monkeypatch):
    """These tests are about the study's plumbing: the emulated part (real traffic, ~10 s) is
    tested in tests/test_emu_study.py."""
    import longhaul.emu

    def skip(ctx):
        raise SkipPart("emulation is not part of this test")

    monkeypatch.setattr(longhaul.emu, "study_part", skip)


@pytest.fixture
def fake_sim(monkeypatch):
    """Replace the simulator's verbs model for the study part only (the CLI's own `sim` verb keeps the real one)."""
    calls = []
    verbs = types.SimpleNamespace()

    def sweep(**kw):
        calls.append(kw)
        return fake_sweep(**kw)

    verbs.sweep = sweep
    monkeypatch.setattr(study_mod, "load_verbs", lambda: verbs)
    return calls


@pytest.fixture
def fake_validation(monkeypatch):
    val = types.ModuleType("longhaul.validation")
    val.check_all = lambda **kw: [
        {"id": "S1-verbs-rc-peak", "source": "S1", "what": "RC peak", "expected": 984.0, "model": 960.0,
         "rel_err": -0.0244, "passed": True, "detail": "within 5%"},
        {"id": "S1-verbs-ud-peak", "source": "S1", "what": "UD peak", "expected": 967.0, "model": 700.0,
         "rel_err": -0.276, "passed": False, "detail": "off by 28%"},
        {"id": "S1-verbs-rc-lat", "source": "S1", "what": "RC latency", "expected": 4.0, "model": 9.0,
         "rel_err": 1.25, "passed": False, "known_gap": "no model of X yet", "detail": "off; known gap: no model of X"},
    ]
    monkeypatch.setitem(sys.modules, "longhaul.validation", val)


def test_a_long_validation_detail_is_folded_behind_its_beginning():
    from html import unescape

    from longhaul.report import DETAIL_SHOWN_CHARS, validation_table

    long = "known gap: " + "the default's last step crosses the WAN; " * 40
    html = validation_table([{"id": "S1-x", "detail": long, "passed": False}, {"id": "S1-y", "detail": "short"}])
    assert html.count("<details>") == 1 and "<td class=t>short</td>" in html
    summary = unescape(html.split("<summary>", 1)[1].split("</summary>", 1)[0])
    assert summary.startswith("known gap: ") and len(summary) <= DETAIL_SHOWN_CHARS + 2
    assert long.strip() in unescape(html.split("</summary>", 1)[1])         # the whole text is there


def test_quick_study_end_to_end_then_warm_cache(tmp_path, fake_sim, fake_validation, capsys):
    store, out = tmp_path / "res", tmp_path / "out"
    assert main(["study", "--quick", "--out", str(out), "--store", str(store)]) == 0
    md = capsys.readouterr().out
    n_points = len(study_mod.s1_matrix(quick=True))
    assert len(fake_sim) == n_points
    assert "**s1-verbs**: ok" in md and f"{n_points} computed, 0 cached" in md
    assert "**measured**: skipped" in md and "longhaul ingest" in md
    assert "## Validation: 1 pass, 2 fail (1 known gap)" in md
    assert "| S1-verbs-ud-peak |" in md and "| FAIL |" in md and "| FAIL (known gap) |" in md
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") >= 3                     # figures embedded
    assert "<script" not in html and "http://" not in html and "https://" not in html   # self-contained
    assert "S1-nfs-rdma-read" in html and "not checked" in html            # every published point listed
    assert "PASS" in html and "FAIL<" in html and "FAIL (known gap)<" in html
    assert "longhaul study --quick --store" in html                        # exact command to reproduce
    assert "needs messages of at least" in html                            # tuning advice from the model
    assert (out / "figures" / "s1_rc_write_bw_vs_size.png").exists() and (out / "figures" / "s1_rc_write_bw_vs_size.svg").exists()
    assert (out / "records.csv").read_text().startswith("transport,op,test")
    assert len(Store(store).runs(kind="verbs")) == n_points

    # (How long a warm re-run takes is bench/study_bench.py's business, not a test's.)
    assert main(["study", "--quick", "--out", str(tmp_path / "out2"), "--store", str(store)]) == 0
    md2 = capsys.readouterr().out
    assert len(fake_sim) == n_points                                       # nothing recomputed
    assert f"0 computed, {n_points} cached" in md2


def test_default_out_dir_is_timestamped(tmp_path, fake_sim, fake_validation, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LONGHAUL_STORE", raising=False)
    assert main(["study", "--quick", "--parts", "s1-verbs", "--no-summary"]) == 0
    (d,) = list((tmp_path / "study").iterdir())
    assert len(d.name) == 16 and d.name.endswith("Z") and (d / "report.html").exists()
    assert (tmp_path / "results" / "manifest.json").exists()              # default store ./results


def test_without_simulator_the_part_is_skipped_with_reason(tmp_path, fake_validation, monkeypatch, capsys):
    def missing():
        raise ImportError("No module named 'longhaul.sim'")

    monkeypatch.setattr(study_mod, "load_verbs", missing)
    # Only the part under test: the other parts run real simulations (the MPI one ~10 s).
    assert main(["study", "--quick", "--parts", "s1-verbs", "--out", str(tmp_path / "o"),
                 "--store", str(tmp_path / "r")]) == 0
    md = capsys.readouterr().out
    assert "**s1-verbs**: skipped — the simulator's verbs model is not available" in md
    html = (tmp_path / "o" / "report.html").read_text()
    assert "Skipped:</b> the simulator" in html


def test_pluggable_parts_skip_fail_and_order(tmp_path, monkeypatch, capsys):
    def good(ctx):
        from longhaul import plots

        recs = [{"size_bytes": 2**k, "delay_us": d, "bw_MBps": 900.0 - d / 20 + k} for k in range(4, 12) for d in (0.0, 1000.0)]
        res = PartResult(records=recs, advice=["fake advice: use bigger messages"], commands=["longhaul fake --go"])
        res.figures.append(study_mod.Figure("fake_bw", "fake bandwidth", plots.bandwidth_vs_size(recs)))
        res.tables.append(Table("fake table", [{"a_MBps": 1.5, "b": "x"}]))
        return res

    def skip(ctx):
        raise SkipPart("needs a cluster pair and root")

    def broken(ctx):
        raise ZeroDivisionError("division by zero")

    parts = [StudyPart("fake", "Fake model", good), StudyPart("needs-root", "Needs root", skip),
             StudyPart("broken", "Broken", broken)]
    monkeypatch.setattr(study_mod, "PARTS", parts)
    assert main(["study", "--out", str(tmp_path / "o"), "--store", str(tmp_path / "r")]) == 0
    md = capsys.readouterr().out
    assert "**fake**: ok" in md and "**needs-root**: skipped — needs a cluster pair and root" in md
    assert "**broken**: failed — ZeroDivisionError: division by zero" in md
    html = (tmp_path / "o" / "report.html").read_text()
    assert html.index("Fake model") < html.index("Needs root") < html.index("Broken")
    assert "fake advice" in html and "longhaul fake --go" in html and "fake table" in html
    assert main(["study", "--parts", "nope", "--out", str(tmp_path / "o2")]) == 2
    assert "unknown part 'nope'" in capsys.readouterr().err
    assert main(["study", "--executor", "serial", "--workers", "3", "--out", str(tmp_path / "o3")]) == 2
    assert "--workers: not used with --executor serial" in capsys.readouterr().err
    assert main(["study", "--list-parts"]) == 0
    assert "needs-root" in capsys.readouterr().out


def test_an_empty_parts_list_is_refused_not_read_as_every_part(tmp_path, monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(study_mod, "PARTS", [StudyPart("fake", "Fake", lambda ctx: ran.append(1) or PartResult())])
    for parts in ("", " "):
        assert main(["study", "--parts", parts, "--out", str(tmp_path / "o"), "--store", str(tmp_path / "r")]) == 2
        assert capsys.readouterr().err == "longhaul: error: --parts: empty list (give part names: fake)\n"
    assert ran == [] and not (tmp_path / "o").exists() and not (tmp_path / "r").exists()


def test_register_part(monkeypatch):
    monkeypatch.setattr(study_mod, "PARTS", list(study_mod.PARTS))
    study_mod.register_part(StudyPart("ipoib", "IPoIB", lambda ctx: PartResult()), before="validation")
    names = [p.name for p in study_mod.PARTS]
    assert names.index("ipoib") == names.index("validation") - 1


def test_measured_part_uses_ingested_runs(tmp_path, fake_sim, fake_validation, capsys):
    fix = Path(__file__).parent / "fixtures" / "ingest"
    store = tmp_path / "res"
    for d in ("0", "1000"):
        for f in ("perftest_write_bw_mb.txt", "perftest_read_bw_gbits.txt"):
            assert main(["ingest", str(fix / f), "--tool", "perftest", "--delay-us", d,
                         "--store", str(store), "--label", "site-a", "--format", "csv"]) == 0
    capsys.readouterr()
    assert main(["study", "--quick", "--parts", "s1-verbs,measured", "--out", str(tmp_path / "o"),
                 "--store", str(store)]) == 0
    md = capsys.readouterr().out
    assert "**measured**: ok" in md
    assert "quick matrix, parts s1-verbs, measured" in md.splitlines()[0]   # the scope says which parts ran
    html = (tmp_path / "o" / "report.html").read_text()
    assert "--parts s1-verbs,measured" in html                             # the command to reproduce it
    assert "Measured perftest bandwidth" in html and "Decrease per mile" in html
    # the comparison table carries the measured peak (916.86 MiB/s printed -> 961.4 MB/s)
    assert "961.4" in html
    # A write and a read bandwidth (another adapter, 2 QPs) at one size are two series, never one
    # averaged one: 65536 B has a row of each, and the command to redo it splits the same way.
    dpm = html[html.index("Decrease per mile"):]
    assert "mthca0" in dpm and "mlx4_0" in dpm and ">write<" in dpm and ">read<" in dpm, dpm[:3000]
    assert "--where source=measured --by kind,device,op,qps,size_bytes" in html


def test_the_measured_parts_dpm_command_runs_on_measured_and_emulated_runs(tmp_path, fake_validation, capsys):
    # The table splits by every column that varies among measured and emulated records (here the
    # emulator's jitter); the command printed to redo it selected --source measured only, and
    # analyse then refused "--by column 'jitter_us' is in no record".
    import html as html_mod
    import shlex

    fix = Path(__file__).parent / "fixtures" / "ingest"
    store = tmp_path / "res"
    for d in ("0", "1000"):
        assert main(["ingest", str(fix / "perftest_write_bw_mb.txt"), "--tool", "perftest", "--delay-us", d,
                     "--store", str(store), "--format", "csv"]) == 0
    for jitter in (0.0, 50.0):
        Store(store).put({"kind": "emu-bench-tcp", "jitter_us": jitter},
                         [{"tool": "iperf3", "size_bytes": 131072, "delay_us": d, "jitter_us": jitter, "bw_MBps": bw}
                          for d, bw in ((0.0, 900.0), (1000.0, 600.0))], source="emu")
    capsys.readouterr()
    assert main(["study", "--quick", "--parts", "measured", "--out", str(tmp_path / "o"), "--store", str(store),
                 "--no-summary"]) == 0
    pre = html_mod.unescape((tmp_path / "o" / "report.html").read_text().rsplit("<pre>", 1)[1].split("</pre>", 1)[0])
    (dpm,) = [line for line in pre.splitlines() if line.startswith("longhaul analyse dpm")]
    assert "--where source=emu,measured" in dpm and "jitter_us" in dpm, dpm
    capsys.readouterr()
    assert main([*shlex.split(dpm)[1:], "--store", str(store), "--format", "csv"]) == 0, capsys.readouterr().err
    rows = capsys.readouterr().out
    assert "emu-bench-tcp" in rows and "ingest-perftest" in rows


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (Debian package chromium; in scripts/apt-packages.txt)")
def test_report_renders_in_headless_chromium(tmp_path, fake_sim, fake_validation, capsys):
    from PIL import Image

    out = tmp_path / "o"
    assert main(["study", "--quick", "--parts", "s1-verbs,validation", "--out", str(out), "--store", str(tmp_path / "r"),
                 "--no-summary"]) == 0
    png = tmp_path / "shot.png"
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
           "--hide-scrollbars", "--window-size=1200,2400", f"--screenshot={png}", (out / "report.html").as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and png.exists(), proc.stderr[-2000:]
    img = Image.open(png).convert("L")
    assert img.size == (1200, 2400)
    hist = img.histogram()
    white = sum(hist[250:])
    dark = sum(hist[:100])
    total = img.size[0] * img.size[1]
    assert white < 0.97 * total, "screenshot is (almost) blank"
    assert dark > 0.002 * total, "no text or lines drawn"
    # the top of the page holds the title and the parts table: not blank either
    top = img.crop((0, 0, 1200, 300)).histogram()
    assert sum(top[:100]) > 0.002 * 1200 * 300


def test_interrupted_study_resumes(tmp_path, monkeypatch, fake_validation, capsys):
    """Ctrl-C in the middle of the S1 sweep: exit 130, finished points kept, the re-run computes the rest."""
    calls = []

    def sweep(**kw):
        calls.append(kw)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return fake_sweep(**kw)

    monkeypatch.setattr(study_mod, "load_verbs", lambda: types.SimpleNamespace(sweep=sweep))
    argv = ["study", "--quick", "--executor", "serial", "--out", str(tmp_path / "o"), "--store", str(tmp_path / "r"),
            "--parts", "s1-verbs"]
    assert main(argv) == 130
    assert "interrupted (completed points are kept" in capsys.readouterr().err
    assert len(Store(tmp_path / "r").runs(kind="verbs")) == 3
    assert not (tmp_path / "o" / "report.html").exists()
    n = len(study_mod.s1_matrix(quick=True))
    assert main(argv) == 0
    assert f"{n - 3} computed, 3 cached" in capsys.readouterr().out


def test_an_unwritable_out_dir_is_refused_before_the_study_runs(tmp_path, monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(study_mod, "PARTS", [StudyPart("fake", "Fake", lambda ctx: ran.append(1) or PartResult())])
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    out = blocker / "report"   # under a file: no directory can be made there
    assert main(["study", "--out", str(out), "--store", str(tmp_path / "r"), "--no-summary"]) == 2
    assert capsys.readouterr().err == f"longhaul: error: --out: cannot write the report to '{out}' (Not a directory)\n"
    assert ran == [] and not (tmp_path / "r").exists()
    # The check leaves no trace: a missing --out is made when the report is written.
    fresh = tmp_path / "new" / "deep"
    assert main(["study", "--out", str(fresh), "--store", str(tmp_path / "r"), "--no-summary"]) == 0
    assert ran == [1] and (fresh / "report.html").exists()


def test_the_commands_to_reproduce_are_ones_the_cli_accepts(tmp_path, monkeypatch, capsys):
    """The report's Reproduce block is for pasting into a shell: every `longhaul ...` line must parse
    (the MPI part printed `sim mpi tune --sizes` for `--size` and `--algo default,hierarchical`)."""
    import html as html_mod
    import shlex

    import longhaul.study_models as models
    from longhaul.cli import build_parser
    from longhaul.sim import mpi

    # A small MPI matrix (the study's takes ~10 s); the commands do not depend on it.
    monkeypatch.setattr(models, "mpi_scenarios", lambda quick: {
        "tuning": [mpi.scenario(osu={"bench": "bw", "size_bytes": 8192}, delay_us=1000.0, eager_threshold_bytes=t)
                   for t in models.THRESHOLDS_BYTES],
        "bcast": [mpi.scenario(osu={"bench": "bcast", "size_bytes": 131072}, delay_us=d, nodes=2, ppn=1, algo=a)
                  for a in ("default", "hierarchical") for d in models.BCAST_DELAYS_US],
        "nas": [mpi.scenario(app={"name": "is", "class": "A"}, delay_us=d, nodes=2, ppn=1) for d in (0.0, 1000.0)],
    })
    out = tmp_path / "o"
    assert main(["study", "--quick", "--parts", "mpi,nfs", "--out", str(out), "--store", str(tmp_path / "r"),
                 "--no-summary"]) == 0
    pre = html_mod.unescape((out / "report.html").read_text().rsplit("<pre>", 1)[1].split("</pre>", 1)[0])
    cmds = [line for line in pre.splitlines() if line.startswith("longhaul ")]
    assert any(c.startswith("longhaul sim mpi tune ") for c in cmds) and any(" sim nfs " in c for c in cmds)
    capsys.readouterr()
    for cmd in cmds:
        try:
            build_parser().parse_args(shlex.split(cmd)[1:])
        except SystemExit:
            pytest.fail(f"the report's command does not parse: {cmd}\n{capsys.readouterr().err}")
