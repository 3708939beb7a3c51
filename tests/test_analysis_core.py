"""Analysis: profiles, decrease-per-mile + Hoeffding bound, calibration, balance ratio, comparison."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from longhaul.analysis import (
    balance_ratios,
    comparison_table,
    decrease_per_mile,
    distance_profile,
    fit,
    hoeffding_halfwidth,
    load_published,
    miles_from_delay_us,
    rel_err,
    stability_profile,
    window_model,
)
from longhaul.cli import main
from longhaul.errors import UserError
from longhaul.results import Store

FIX = Path(__file__).parent / "fixtures" / "ingest"
DELAYS = [0.0, 10.0, 100.0, 1000.0, 10000.0]


def recs_from(fn, delays=DELAYS, sizes=(65536,), repeats=1):
    return [{"size_bytes": s, "delay_us": d, "bw_MBps": fn(s, d, k)} for s in sizes for d in delays for k in range(repeats)]


def test_distance_and_stability_profiles():
    recs = recs_from(lambda s, d, k: 900 - d / 100 + (k - 1) * 10, repeats=3)
    prof = distance_profile(recs)
    assert [r["delay_us"] for r in prof] == DELAYS
    assert prof[-1]["bw_MBps"] == pytest.approx(800) and prof[-1]["n"] == 3 and prof[-1]["distance_km"] == 2000
    stab = stability_profile(recs)
    assert stab[0]["bw_MBps_std"] == pytest.approx(10) and stab[0]["bw_MBps_min"] == 890 and stab[0]["bw_MBps_max"] == 910
    with pytest.raises(UserError, match="no record has a numeric 'lat_us'"):
        distance_profile(recs, value="lat_us")


@settings(max_examples=60, deadline=None)
@given(level=st.floats(1e-6, 1e6), repeats=st.integers(2, 9))
def test_repeated_identical_values_are_perfectly_stable(level, repeats):
    """The same value n times has a mean of that value and a spread of exactly 0 (not 1e-13)."""
    [row] = stability_profile(recs_from(lambda s, d, k: level, delays=[10.0], repeats=repeats))
    assert (row["bw_MBps_mean"], row["bw_MBps_std"], row["cv_pct"]) == (level, 0.0, 0.0)


DELAY_LISTS = st.lists(st.integers(0, 10**8).map(lambda n: n / 1000), min_size=2, max_size=6, unique=True)


@settings(max_examples=60, deadline=None)
@given(level=st.floats(0, 5000), delays=DELAY_LISTS,
       repeats=st.integers(1, 4))
def test_dpm_of_constant_profile_is_zero(level, delays, repeats):
    recs = recs_from(lambda s, d, k: level, delays=delays, repeats=repeats)
    rows = decrease_per_mile(recs, bound=max(level, 1.0))
    assert all(r["D_MBps_per_mile"] == pytest.approx(0, abs=1e-9) for r in rows)
    assert all(r["D_lo_MBps_per_mile"] <= 0 <= r["D_hi_MBps_per_mile"] for r in rows)


@settings(max_examples=40, deadline=None)
@given(slope=st.floats(0, 2), delays=DELAY_LISTS)
def test_dpm_of_linear_profile_is_its_slope(slope, delays):
    recs = recs_from(lambda s, d, k: 30000 - slope * miles_from_delay_us(d), delays=delays)
    for r in decrease_per_mile(recs, bound=30000):
        # 30000 minus a tiny slope x distance cancels: allow float error on the differences.
        assert r["D_MBps_per_mile"] == pytest.approx(slope, rel=1e-6, abs=1e-7)


def test_hoeffding_halfwidth_formula_and_coverage():
    # one distance pair, n0 = ni = 4 repeats, dx = 1 mile, B = 1000, delta = 0.05
    assert hoeffding_halfwidth(1000, (1 / 4 + 1 / 4), 0.05) == pytest.approx(1000 * math.sqrt(math.log(40) / 2 * 0.5))
    # coverage: independent uniform noise within [0, B]; the 95% bound must cover the true D in >= 95% of trials
    rng = random.Random(3)
    true_T = {0.0: 800.0, 1000.0: 500.0, 5000.0: 200.0}
    B = 1000.0
    covered = 0
    trials = 300
    for _ in range(trials):
        recs = [{"size_bytes": 1, "delay_us": d, "bw_MBps": t + rng.uniform(-150, 150)} for d, t in true_T.items()
                for _ in range(5)]
        rows = decrease_per_mile(recs, bound=B, simultaneous=True)
        ok = True
        for r in rows:
            if r["estimate"] == "mean D":
                truth = np.mean([(800 - true_T[d]) / miles_from_delay_us(d) for d in (1000.0, 5000.0)])
            else:
                truth = (800 - true_T[r["delay_us"]]) / r["distance_miles"]
            ok &= r["D_lo_MBps_per_mile"] <= truth <= r["D_hi_MBps_per_mile"]
        covered += ok
    assert covered / trials >= 0.95


def test_dpm_input_errors():
    one = recs_from(lambda s, d, k: 5.0, delays=[100.0])
    with pytest.raises(UserError, match="at least 2 distinct distances"):
        decrease_per_mile(one)
    with pytest.raises(UserError, match="exceeds it"):
        decrease_per_mile(recs_from(lambda s, d, k: 50.0), bound=10)
    with pytest.raises(UserError, match="confidence"):
        decrease_per_mile(recs_from(lambda s, d, k: 5.0), confidence=1.5)
    rows = decrease_per_mile(recs_from(lambda s, d, k: 5.0))
    assert rows[0]["bound_from"].startswith("observed max")


def test_calibration_recovers_window_model_and_predicts():
    truth = {"link_MBps": 950.0, "per_msg_us": 1.5, "window_msgs": 24.0}
    x = np.array([(2.0**k, d) for k in range(1, 24, 2) for d in DELAYS])
    rng = np.random.default_rng(7)
    y = window_model(truth, x) * (1 + 0.005 * rng.standard_normal(len(x)))
    res = fit(window_model, {"link_MBps": 500.0, "per_msg_us": 5.0, "window_msgs": 4.0}, x, y,
              bounds={"link_MBps": (1, 1e5), "per_msg_us": (0, 100), "window_msgs": (1, 1e4)})
    for k, v in truth.items():
        assert res.values[k] == pytest.approx(v, rel=0.03)
        assert abs(res.values[k] - v) < 5 * res.stderr[k] + 1e-9     # the uncertainty is honest
    assert res.r2 > 0.999 and res.dof == len(y) - 3
    pred, se = res.predict(np.array([[65536.0, 3000.0]]))
    assert pred[0] == pytest.approx(window_model(truth, np.array([[65536.0, 3000.0]]))[0], rel=0.03)
    assert 0 < se[0] < 0.05 * pred[0]


def test_calibration_any_callable_and_too_few_points():
    # a plain linear model with params dict and a list x
    res = fit(lambda p, x: [p["a"] + p["b"] * xi for xi in x], {"a": 0.0, "b": 0.0}, [0, 1, 2, 3], [1, 3, 5, 7.2])
    assert res.values["b"] == pytest.approx(2.06, abs=1e-6) and res.stderr["b"] > 0
    with pytest.raises(UserError, match="2 measured point\\(s\\) for 2 free parameter\\(s\\); need at least 3"):
        fit(lambda p, x: [p["a"] + p["b"] * xi for xi in x], {"a": 0.0, "b": 0.0}, [0, 1], [1, 3])
    # a model undefined where the search starts is named, not a solver's exception
    with pytest.raises(UserError, match="NaN or infinity at the start values"):
        fit(lambda p, x: [p["b"] * (np.inf if p["a"] == 0 else 1 / p["a"]) for _ in x], {"a": 0.0, "b": 1.0},
            [0, 1, 2], [1, 2, 3])


def test_balance_ratio():
    intra = [{"test": "bw", "size_bytes": 1 << 20, "bw_MBps": 3000.0}, {"test": "latency", "size_bytes": 1, "lat_us": 0.5},
             {"test": "bibw", "size_bytes": 1 << 20, "bw_MBps": 5000.0}]
    inter = [{"test": "bw", "size_bytes": 1 << 20, "bw_MBps": 3000.0}, {"test": "latency", "size_bytes": 1, "lat_us": 1.0},
             {"test": "bibw", "size_bytes": 1 << 20, "bw_MBps": 5730.0}]
    _rows, summary = balance_ratios(intra, inter)
    by = {s["metric"]: s for s in summary}
    assert by["bandwidth"]["ratio"] == 1.0 and by["bandwidth"]["balanced_within_10pct"]
    assert by["latency"]["ratio"] == 0.5 and not by["latency"]["balanced_within_10pct"]
    assert by["bi-directional bandwidth"]["ratio"] == pytest.approx(5000 / 5730)
    with pytest.raises(UserError, match="share no"):
        balance_ratios(intra, [{"test": "bw", "size_bytes": 8, "bw_MBps": 1.0}])


def test_comparison_table_and_published_points():
    assert rel_err(110, 100) == pytest.approx(0.1) and rel_err(None, 1) is None and rel_err(1, 0) is None
    (row,) = comparison_table([{"id": "p", "published": 984.0, "model": 960.0, "measured": 1000.0}])
    assert row["model_rel_err"] == pytest.approx(-24 / 984) and row["measured_rel_err"] == pytest.approx(16 / 984)
    assert row["model_vs_measured_rel_err"] == pytest.approx(-0.04)
    points = load_published()
    assert {"S1-verbs-rc-peak", "S3-rdma-bw-10km"} <= {p["id"] for p in points}


# ------------------------------------------------------------------------------------------ CLI
@pytest.fixture
def measured_store(tmp_path):
    store = tmp_path / "res"
    for d in ("0", "1000", "10000"):
        assert main(["ingest", str(FIX / "perftest_write_bw_mb.txt"), "--tool", "perftest", "--delay-us", d,
                     "--label", f"d{d}", "--store", str(store), "--format", "csv"]) == 0
    return store


def test_cli_profile_dpm_stability_calibrate(measured_store, capsys, tmp_path):
    capsys.readouterr()
    s = ["--store", str(measured_store), "--format", "json"]
    assert main(["analyse", "profile", *s, "--where", "size_bytes=65536", "--plot", str(tmp_path / "prof")]) == 0
    prof = json.loads(capsys.readouterr().out)
    assert [r["delay_us"] for r in prof] == [0.0, 1000.0, 10000.0]
    assert (tmp_path / "prof.png").stat().st_size > 1000 and (tmp_path / "prof.svg").exists()
    # Numbers match by value: delay_us=0 selects the records stored as 0.0.
    assert main(["analyse", "profile", *s, "--where", "size_bytes=65536", "--where", "delay_us=0,1e3"]) == 0
    assert [r["delay_us"] for r in json.loads(capsys.readouterr().out)] == [0.0, 1000.0]
    assert main(["analyse", "dpm", *s, "--bound-MBps", "1000"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert all(r["D_MBps_per_mile"] == 0 for r in rows)          # same file at every delay: no decrease
    assert main(["analyse", "stability", *s, "--label", "d0"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 5
    assert main(["analyse", "calibrate", *s, "--predict-delays-us", "500"]) == 0
    rows = json.loads(capsys.readouterr().out)   # one document: the parameters, then the predictions
    assert [r["param"] for r in rows if r["row"] == "param"] == ["link_MBps", "per_msg_us", "window_msgs"]
    preds = [r for r in rows if r["row"] == "prediction"]
    assert preds and all(r["delay_us"] == 500 and "bw_MBps_pred" in r and "bw_MBps_pred_stderr" in r for r in preds)


@pytest.mark.parametrize("change, words", [
    ({"bw_MBps": "abc"}, "record 2 has bw_MBps = 'abc'; give a number > 0"),
    ({"bw_MBps": 0}, "record 2 has bw_MBps = 0; give a number > 0"),
    ({"delay_us": -5}, "record 2 has delay_us = -5; give a number >= 0"),
    ({"size_bytes": float("nan")}, "record 2 has size_bytes = nan; give a number >= 1"),
])
def test_cli_calibrate_names_a_value_that_is_not_a_measurement(tmp_path, capsys, change, words):
    recs = recs_from(lambda s, d, k: window_model({"link_MBps": 950.0, "per_msg_us": 1.5, "window_msgs": 24.0},
                                                 np.array([[s, d]]))[0], sizes=(4096, 65536))
    recs[1].update(change)
    f = tmp_path / "m.json"
    f.write_text(json.dumps(recs))
    capsys.readouterr()
    assert main(["analyse", "calibrate", "--input", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1, err


def test_cli_calibrate_says_when_the_fit_went_nowhere(tmp_path, capsys):
    # Bandwidths in the wrong unit (bytes/s given as MB/s): no link rate in range fits them.
    recs = recs_from(lambda s, d, k: 1e5 * window_model({"link_MBps": 950.0, "per_msg_us": 1.5, "window_msgs": 24.0},
                                                        np.array([[s, d]]))[0], sizes=(4096, 65536, 1 << 20))
    f = tmp_path / "m.json"
    f.write_text(json.dumps(recs))
    capsys.readouterr()
    assert main(["analyse", "calibrate", "--input", str(f), "--format", "csv"]) == 0
    err = capsys.readouterr().err
    assert "link_MBps ended at its upper bound" in err and "worse than their mean" in err, err


def test_cli_analysis_errors(measured_store, capsys, tmp_path):
    s = ["--store", str(measured_store)]
    assert main(["analyse", "dpm", *s, "--label", "d0"]) == 2
    assert "at least 2 distinct distances" in capsys.readouterr().err
    assert main(["analyse", "calibrate", *s, "--label", "d0", "--where", "size_bytes=2,1024"]) == 2
    assert "need at least 4" in capsys.readouterr().err
    assert main(["analyse", "profile", *s, "--where", "nonsense"]) == 2
    assert "--where" in capsys.readouterr().err
    assert main(["analyse", "profile", *s, "--label", "nosuch"]) == 2
    assert "no records selected by --label nosuch in store" in capsys.readouterr().err
    assert main(["analyse", "calibrate", *s, "--value", "nope"]) == 2
    assert "columns present: " in capsys.readouterr().err
    assert main(["analyse", "calibrate", *s, "--model", "tcp-stack", "--predict-delays-us", "10",
                 "--predict-sizes", "4K"]) == 2
    assert "--predict-sizes: the tcp-stack model has no message size" in capsys.readouterr().err
    assert main(["analyse", "calibrate", *s, "--predict-delays-us", ""]) == 2
    assert "--predict-delays-us: empty list" in capsys.readouterr().err


def test_cli_balance_and_compare(tmp_path, capsys):
    store = tmp_path / "res"
    for label in ("intra", "inter"):
        assert main(["ingest", str(FIX / "osu_bw.txt"), str(FIX / "osu_latency.txt"), "--tool", "osu",
                     "--label", label, "--store", str(store), "--format", "csv"]) == 0
    capsys.readouterr()
    assert main(["analyse", "balance", "--store", str(store), "--intra-label", "intra", "--inter-label", "inter",
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {s["metric"] for s in out["summary"]} == {"bandwidth", "latency"} and all(s["ratio"] == 1 for s in out["summary"])
    run = Store(store).runs(label="intra")[0]["run_id"]
    assert main(["analyse", "compare", "--store", str(store), "--point", "S3-rdma-bw-10km", "--measured-run", run[:8],
                 "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["measured"] == 955.6 and row["measured_rel_err"] == pytest.approx((955.6 - 950) / 950)
    assert main(["analyse", "compare", "--store", str(store), "--point", "nope"]) == 2
    # A run's peak set beside every published point (UD, IPoIB, MPI...) means nothing: --point is needed.
    assert main(["analyse", "compare", "--store", str(store), "--measured-run", run[:8]]) == 2
    assert "name the published point(s) these runs measure with --point ID" in capsys.readouterr().err


def test_cli_calibrate_tcp_stack_recovers_the_simulators_host_stack(cli, tmp_path):
    """Fit the tcp-stack model to the TCP simulator's own output: the fitted stack costs must be
    the simulated S1 receiver's (HostStack::s1: 4000 ns per segment, 1.0 ns per byte, the busiest
    core), the window the iperf -w 1M given, and a limit no point reaches reported unconstrained.
    Three MSS: at 64 KiB the stack's 942 MB/s could as well be a link limit, so two sizes leave
    the per-segment and per-byte costs free along a line; the third pins them."""
    recs = []
    for mtu in ("4096", "16384", "65520"):
        out = cli("sim", "tcp", "--link", "ipoib-cm", "--mtu", mtu, "--delay-us", "0,3000,6000", "--streams", "1,2",
                  "--window", "1M", "--duration-s", "0.3", "--format", "json", check=True).stdout
        recs += json.loads(out)
    (tmp_path / "tcp.json").write_text(json.dumps(recs))
    proc = cli("analyse", "calibrate", "--model", "tcp-stack", "--input", str(tmp_path / "tcp.json"),
               "--predict-delays-us", "2000", "--format", "json", check=True)  # away from the knees (docs/explanation/analysis.md)
    rows = json.loads(proc.stdout)
    by = {r["param"]: r for r in rows if r["row"] == "param"}
    assert by["stack_per_seg_us"]["value"] == pytest.approx(4.0, rel=0.1)
    assert by["stack_per_byte_ns"]["value"] == pytest.approx(1.0, rel=0.1)
    assert by["window_bytes"]["value"] == pytest.approx(1 << 20, rel=0.1)
    assert by["link_MBps"]["constrained"] is False and by["link_MBps"]["stderr"] is None
    assert "link_MBps: not constrained" in proc.stderr
    preds = [r for r in rows if r["row"] == "prediction"]
    one = next(r for r in preds if r["streams"] == 1 and r["mss_bytes"] == 65468)
    assert one["bw_MBps_pred"] == pytest.approx((1 << 20) / (2 * 2000 + 200), rel=0.15)   # window / RTT
    # One MSS only: the per-byte cost cannot be separated from the per-segment one, and it says so.
    (tmp_path / "one.json").write_text(json.dumps([r for r in recs if r["mss_bytes"] == 65468]))
    proc = cli("analyse", "calibrate", "--model", "tcp-stack", "--input", str(tmp_path / "one.json"), check=True)
    assert "stack_per_byte_ns not fitted" in proc.stderr


def _one_line_error(capsys) -> str:
    cap = capsys.readouterr()
    assert cap.err.count("\n") == 1 and cap.err.startswith("longhaul: error: ") and "Traceback" not in cap.err, cap.err
    assert cap.out == ""   # checked before any output
    return cap.err


def test_cli_input_reads_the_parquet_export_and_rejects_other_files(measured_store, capsys, tmp_path):
    s = ["--store", str(measured_store)]
    capsys.readouterr()
    assert main(["analyse", "profile", *s, "--format", "json"]) == 0
    from_store = json.loads(capsys.readouterr().out)
    for fmt in ("csv", "json", "parquet"):
        out = tmp_path / f"exp.{fmt}"
        assert main(["results", "export", *s, "--format", fmt, "--out", str(out)]) == 0
        capsys.readouterr()
        assert main(["analyse", "profile", "--input", str(out), "--format", "json"]) == 0
        assert json.loads(capsys.readouterr().out) == from_store, fmt
    garbage = tmp_path / "bin.trace"
    garbage.write_bytes(bytes(range(256)) * 4)
    (tmp_path / "nul.csv").write_bytes(b"size_bytes,bw_MBps\n2,\x001.5\n")
    (tmp_path / "rag.csv").write_text("size_bytes,bw_MBps\n2,1.5\n4,3.0,9\n")
    (tmp_path / "cut.parquet").write_bytes((tmp_path / "exp.parquet").read_bytes()[:200])
    (tmp_path / "adir").mkdir()
    for name, why in [("bin.trace", "is not a csv, json or parquet file"), ("nul.csv", "binary content"),
                      ("rag.csv", "line 3: more fields than the header"), ("cut.parquet", "not a readable Parquet"),
                      ("adir", "is a directory")]:
        assert main(["analyse", "profile", "--input", str(tmp_path / name)]) == 2, name
        err = _one_line_error(capsys)
        assert f"'{tmp_path / name}'" in err and why in err, err


def test_cli_compare_rejects_a_published_file_that_is_not_points(measured_store, capsys, tmp_path):
    s = ["analyse", "compare", "--store", str(measured_store), "--published"]
    (tmp_path / "bin.trace").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "empty.toml").write_text("")
    (tmp_path / "other.toml").write_text('[tool]\nname = "x"\n')
    (tmp_path / "novalue.toml").write_text('[[point]]\nid = "p1"\nvalue_MBps = [1.0, 2.0]\n')
    (tmp_path / "adir").mkdir()
    for name, why in [("bin.trace", "is not valid TOML"), ("empty.toml", "has no [[point]] tables"),
                      ("other.toml", "has no [[point]] tables"), ("novalue.toml", "value_MBps"),
                      ("adir", "is a directory")]:
        assert main([*s, str(tmp_path / name)]) == 2, name
        err = _one_line_error(capsys)
        assert str(tmp_path / name) in err and why in err, err


def test_cli_bad_by_column_and_prediction_options_fail_before_any_output(measured_store, capsys):
    s = ["--store", str(measured_store)]
    for cmd in ("profile", "stability", "dpm"):
        assert main(["analyse", cmd, *s, "--by", "size_bytes,nonexist"]) == 2
        err = _one_line_error(capsys)
        assert "'nonexist'" in err and "size_bytes" in err and "delay_us" in err   # names the valid columns
    assert main(["analyse", "calibrate", *s, "--predict-delays-us", "-5"]) == 2
    assert "--predict-delays-us" in _one_line_error(capsys)
    assert main(["analyse", "calibrate", *s, "--predict-delays-us", "5", "--predict-sizes", "0"]) == 2
    assert "--predict-sizes" in _one_line_error(capsys)


# ------------------------------------------------------------------ selection, --input, --where, mixed kinds
@pytest.fixture
def two_kinds_store(measured_store):
    """The measured perftest runs (source measured, kind ingest-perftest, labels d0 d1000 d10000) and
    simulated verbs runs (source sim, kind verbs, label A) at the same sizes and delays."""
    assert main(["sweep", "verbs", "--grid", '{"delay_us": [0, 1000], "size_bytes": [1024, 65536]}',
                 "--store", str(measured_store), "--label", "A", "--format", "csv"]) == 0
    return measured_store


def _json_out(capsys, argv) -> list:
    capsys.readouterr()
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_cli_input_selects_by_run_label_source_and_kind_as_the_store_does(two_kinds_store, capsys, tmp_path):
    s = ["--store", str(two_kinds_store)]
    runs = {e["label"]: e["run_id"] for e in Store(two_kinds_store).runs()}
    selections = [["--label", "A"], ["--source", "measured"], ["--source", "sim", "--label", "A"],
                  ["--run", runs["d0"][:6]], ["--run", runs["d0"]],
                  ["--run", runs["d0"][:8], "--run", runs["d1000"][:8]],
                  ["--run", runs["d0"][:8], "--run", runs["d0"][:8]],       # named twice: its records count once
                  ["--label", "d1000", "--where", "size_bytes=65536"], ["--kind", "verbs"]]
    expected = [_json_out(capsys, ["analyse", "profile", *s, *sel, "--format", "json"]) for sel in selections]
    assert expected[0] != expected[1] and expected[0] == expected[2] and expected[3] == expected[4] == expected[6]
    assert [r["n"] for r in expected[6]] == [1] * 5
    for fmt in ("csv", "json", "parquet"):
        f = tmp_path / f"exp.{fmt}"
        assert main(["results", "export", *s, "--format", fmt, "--out", str(f)]) == 0
        for sel, want in zip(selections, expected):
            got = _json_out(capsys, ["analyse", "profile", "--input", str(f), *sel, "--format", "json"])
            assert got == want, (fmt, sel)
        # Nothing selected, an unknown run, a column the file lacks: one line, exit 2, as for the store.
        for sel, words in [(["--source", "emu"], "no records selected"), (["--label", "N"], "no records selected"),
                           (["--run", runs["d0"][:8], "--label", "A"], "no records selected"),
                           (["--run", "zzzz"], f"run 'zzzz': no such run in '{f}'"),
                           (["--run", "abc"], "at least 4 characters")]:
            assert main(["analyse", "profile", "--input", str(f), *sel]) == 2, (fmt, sel)
            err = _one_line_error(capsys)
            assert words in err, (fmt, sel, err)
    for sel in (["--source", "emu"], ["--label", "N"], ["--run", runs["d0"][:8], "--label", "A"]):
        assert main(["analyse", "profile", *s, *sel]) == 2
        assert "no records selected" in _one_line_error(capsys)
    (tmp_path / "bare.json").write_text(json.dumps(recs_from(lambda s_, d, k: 5.0)))
    for opt, col in (("--run", "run_id"), ("--label", "label"), ("--source", "source"), ("--kind", "kind")):
        value = "measured" if opt == "--source" else "abcd"
        assert main(["analyse", "profile", "--input", str(tmp_path / "bare.json"), opt, value]) == 2
        assert f"{opt}: '{tmp_path / 'bare.json'}' has no {col} column" in _one_line_error(capsys)


def test_cli_a_selection_mixing_kinds_is_refused_unless_split_by_kind(two_kinds_store, capsys):
    s = ["--store", str(two_kinds_store)]
    for cmd in ("profile", "stability", "dpm", "calibrate"):
        assert main(["analyse", cmd, *s]) == 2, cmd
        err = _one_line_error(capsys)
        assert "mixes runs of 2 kinds (ingest-perftest, verbs)" in err and "--kind" in err, err
    rows = _json_out(capsys, ["analyse", "profile", *s, "--by", "kind,size_bytes", "--format", "json"])
    assert {r["kind"] for r in rows} == {"ingest-perftest", "verbs"}
    assert {(r["kind"], r["delay_us"]) for r in rows if r["size_bytes"] == 65536} == {
        ("ingest-perftest", 0.0), ("ingest-perftest", 1000.0), ("ingest-perftest", 10000.0), ("verbs", 0.0), ("verbs", 1000.0)}
    assert all(r["n"] == 1 for r in rows if r["kind"] == "verbs")          # not averaged with the measured ones
    assert _json_out(capsys, ["analyse", "profile", *s, "--kind", "verbs", "--format", "json"]) == \
        _json_out(capsys, ["analyse", "profile", *s, "--where", "kind=verbs", "--format", "json"])


def test_cli_where_names_an_empty_value_an_unknown_column_and_a_value_no_record_has(measured_store, capsys):
    s = ["analyse", "profile", "--store", str(measured_store)]
    for where, words in [("size_bytes=", "--where 'size_bytes=': no value; use COLUMN=VALUE[,VALUE...], e.g. size_bytes=2"),
                         ("delay_us=", "--where 'delay_us=': no value; use COLUMN=VALUE[,VALUE...], e.g. delay_us=0"),
                         ("size_bytes=65536,", "--where 'size_bytes=65536,': empty item"),
                         ("nope=1", "--where 'nope=1': column 'nope' is in no selected record (columns present: "),
                         ("size_bytes=99", ("--where 'size_bytes=99': no selected record has size_bytes = 99 "
                                           "(values present: 2, 1024, 65536, 1048576, 8388608)")),
                         # one value of several no record has (a typo) dropped its records without a word
                         ("size_bytes=65536,6553", ("--where 'size_bytes=65536,6553': no selected record has "
                                                   "size_bytes = 6553 (values present: "))]:
        assert main([*s, "--where", where]) == 2, where
        err = _one_line_error(capsys)
        assert words in err, err


@pytest.mark.parametrize("by, words", [
    ("", "--by: empty; give a comma list of columns"),                 # pooled every size into one series
    ("size_bytes,size_bytes", "--by: size_bytes given twice"),         # printed the column twice
])
def test_cli_by_refuses_an_empty_list_and_a_column_twice(measured_store, capsys, by, words):
    assert main(["analyse", "stability", "--store", str(measured_store), "--by", by]) == 2
    assert words in _one_line_error(capsys)


def test_cli_names_that_look_like_numbers_select_by_their_text(tmp_path, capsys):
    """A label '007' or a run id of digits is a name: csv reads it as the text json and the store carry."""
    recs = [{"run_id": "000123456789", "source": "measured", "label": "007", **r}
            for r in recs_from(lambda s_, d, k: 5.0)]
    import csv
    with open(tmp_path / "n.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(recs[0]))
        w.writeheader()
        w.writerows(recs)
    (tmp_path / "n.json").write_text(json.dumps(recs))
    for name in ("n.csv", "n.json"):
        for sel in (["--run", "0001", "--label", "007"], ["--where", "label=007"], ["--where", "run_id=000123456789"]):
            rows = _json_out(capsys, ["analyse", "profile", "--input", str(tmp_path / name), *sel, "--format", "json"])
            assert len(rows) == len(DELAYS), (name, sel)


def test_cli_value_error_lists_every_numeric_column_present(measured_store, capsys):
    s = ["--store", str(measured_store)]
    for cmd in ("profile", "stability", "dpm", "calibrate"):
        assert main(["analyse", cmd, *s, "--value", "nope"]) == 2
        err = _one_line_error(capsys)
        listed = err.split("numeric columns present: ")[1].rstrip(")\n").split(", ")
        assert listed == ["bw_MBps", "bw_peak_MBps", "bw_reported", "delay_us", "distance_km", "iterations",
                          "msg_rate_Mps", "mtu_bytes", "qps", "size_bytes", "tx_depth"], (cmd, err)
    # every column listed is one --value takes
    for col in listed:
        assert main(["analyse", "profile", *s, "--value", col, "--format", "csv"]) == 0, col
        capsys.readouterr()


def test_cli_balance_csv_is_one_document_with_the_summary(tmp_path, capsys):
    store = tmp_path / "res"
    for label in ("intra", "inter"):
        assert main(["ingest", str(FIX / "osu_bw.txt"), str(FIX / "osu_latency.txt"), "--tool", "osu",
                     "--label", label, "--store", str(store), "--format", "csv"]) == 0
    s = ["analyse", "balance", "--store", str(store), "--intra-label", "intra", "--inter-label", "inter"]
    doc = _json_out(capsys, [*s, "--format", "json"])
    capsys.readouterr()
    assert main([*s, "--format", "csv"]) == 0
    import csv
    import io
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["row"] for r in rows] == ["per_size"] * len(doc["per_size"]) + ["summary"] * len(doc["summary"])
    for r, want in zip(rows, doc["per_size"] + doc["summary"]):
        assert r["metric"] == want["metric"] and int(r["size_bytes"]) == want["size_bytes"]
        assert float(r["ratio"]) == pytest.approx(want["ratio"])
        assert r["balanced_within_10pct"] == str(want.get("balanced_within_10pct", ""))


def test_cli_by_left_out_splits_by_size_only_when_records_have_sizes(cli, tmp_path):
    # NFS records have no message size: the default --by then splits nothing (it used to fail with
    # "--by column 'size_bytes' is in no record").
    store = str(tmp_path / "st")
    grid = '{"transport": ["rdma"], "delay_us": [0, 1000], "simulated_bytes": 1048576}'
    cli("sweep", "nfs", "--grid", grid, "--store", store, check=True)
    rows = json.loads(cli("analyse", "profile", "--store", store, "--format", "json", check=True).stdout)
    assert [r["delay_us"] for r in rows] == [0, 1000] and "size_bytes" not in rows[0]
    by = json.loads(cli("analyse", "profile", "--store", store, "--by", "transport", "--format", "json",
                        check=True).stdout)
    assert {r["transport"] for r in by} == {"rdma"}


def test_cli_records_of_different_configurations_are_never_averaged_as_repeats(cli, tmp_path):
    # An RC and a UD bandwidth at one size and delay are two measurements: the profile averaged them
    # (n = 2) and `stability` called their difference a 30-120% spread over repeated runs.
    store = str(tmp_path / "st")
    grid = '{"transport": ["rc", "ud"], "size_bytes": [1024, 2048], "delay_us": [0, 100], "iterations": [20]}'
    cli("sweep", "verbs", "--grid", grid, "--store", store, check=True)
    runs = json.loads(cli("analyse", "profile", "--store", store, "--format", "json", check=True).stdout)
    assert sorted((r["transport"], r["size_bytes"], r["delay_us"], r["n"]) for r in runs) == [
        (t, s, d, 1) for t in ("rc", "ud") for s in (1024, 2048) for d in (0, 100)]
    for cmd in ("profile", "stability", "dpm"):
        p = cli("analyse", cmd, "--store", store, "--by", "size_bytes")
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr
        assert "different transport (rc, ud) would be averaged together in the series size_bytes=1024" in p.stderr
        assert "--by transport,size_bytes" in p.stderr and "--where transport=rc" in p.stderr, p.stderr
    split = json.loads(cli("analyse", "stability", "--store", store, "--by", "transport,size_bytes",
                           "--format", "json", check=True).stdout)
    assert all(r["n"] == 1 and r["bw_MBps_std"] is None for r in split)   # one run each: no spread
    one = json.loads(cli("analyse", "stability", "--store", store, "--by", "size_bytes", "--where", "transport=ud",
                         "--format", "json", check=True).stdout)
    assert [r["n"] for r in one] == [1, 1, 1, 1]
    # One fit is one configuration too: the window model does not take the transport as a variable.
    p = cli("analyse", "calibrate", "--store", store)
    assert p.returncode == 2 and p.stderr == ("longhaul: error: calibrate: the records mix transport rc, ud, different "
                                              "measurements the window model does not take as a variable; fit one at a "
                                              "time (--where transport=rc)\n"), p.stderr
    cli("analyse", "calibrate", "--store", store, "--where", "transport=rc", check=True)


def test_cli_balance_of_the_simulators_own_mpi_runs(cli, tmp_path):
    # The simulator's MPI records name the benchmark `bench` (OSU output: `test`): balance found
    # "no (test, size_bytes)" in a store of `sweep mpi` runs.
    store = str(tmp_path / "st")
    for label, layout in (("intra", ', "nodes": [1], "ppn": [2]'), ("inter", "")):
        for bench, size in (("bw", 4194304), ("latency", 4)):
            grid = f'{{"osu": {{"bench": "{bench}", "size_bytes": {size}}}, "delay_us": [0]{layout}}}'
            cli("sweep", "mpi", "--grid", grid, "--store", store, "--label", label, check=True)
    out = json.loads(cli("analyse", "balance", "--store", store, "--intra-label", "intra", "--inter-label", "inter",
                         "--format", "json", check=True).stdout)
    ratio = {r["metric"]: r["ratio"] for r in out["summary"]}
    # s1: two ranks copying through one node's memory (1500 MB/s) against 4x SDR's ~987 MB/s; a
    # shared-memory hop against the adapters and switch for latency.
    assert set(ratio) == {"bandwidth", "latency"}
    assert 1.3 < ratio["bandwidth"] < 1.7 and ratio["latency"] < 1, ratio


def test_cli_ingested_iperf3_repeats_are_averaged_per_direction_not_split_by_their_measured_rate(cli, tmp_path):
    # iperf3's records carry rate_gbps = the rate it measured: as a configuration column it made every
    # record its own series (n = 1 everywhere) and refused any --by. Its sender and receiver counts of
    # one transfer are not two repeats either.
    store = str(tmp_path / "st")
    for label, fixture in (("a", "iperf3_single.txt"), ("b", "iperf3_tcp.json")):
        for delay in ("0", "1000"):
            cli("ingest", str(FIX / fixture), "--tool", "iperf3", "--delay-us", delay, "--label", label,
                "--store", store, check=True)
    rows = json.loads(cli("analyse", "stability", "--store", store, "--format", "json", check=True).stdout)
    assert sorted((r["direction"], r["delay_us"], r["n"]) for r in rows) == [
        (d, x, 2) for d in ("receiver", "sender") for x in (0, 1000)]
    by = json.loads(cli("analyse", "profile", "--store", store, "--by", "direction", "--format", "json",
                        check=True).stdout)
    assert [r["n"] for r in by] == [2, 2, 2, 2]
    p = cli("analyse", "profile", "--store", store, "--by", "label")
    assert p.returncode == 2 and "different direction (receiver, sender) would be averaged" in p.stderr, p.stderr


def test_cli_a_configuration_that_changes_only_with_the_delay_stays_one_series(cli, tmp_path):
    # --algo auto picks binomial near and hierarchical far: the records' algo changes with the delay.
    # That is one measurement over distance, not two averaged together: it was split into two half
    # series (and refused with --by size_bytes, "would be averaged together").
    store = str(tmp_path / "st")
    cli("sweep", "mpi", "--grid", '{"osu": {"bench": "bcast", "size_bytes": 1024}, "algo": ["auto"], '
                                  '"delay_us": [0, 10, 1000, 10000]}', "--store", store, check=True)
    for by in ([], ["--by", "size_bytes"]):
        rows = json.loads(cli("analyse", "profile", "--store", store, "--value", "lat_us", *by, "--format", "json",
                              check=True).stdout)
        assert [(r["size_bytes"], r["delay_us"]) for r in rows] == [(1024, d) for d in (0, 10, 1000, 10000)], rows
        assert "algo" not in rows[0]


def test_dpm_of_a_latency_is_in_its_unit_per_mile(tmp_path, capsys):
    # The columns said D_MBps_per_mile and bound_MBps (and the table "MB = 10^6 bytes") for lat_us.
    f = tmp_path / "lat.json"
    f.write_text(json.dumps([{"size_bytes": 8, "delay_us": d, "lat_us": 5.0 + 2 * d} for d in (0.0, 1000.0)]))
    assert main(["analyse", "dpm", "--input", str(f), "--value", "lat_us", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["D_us_per_mile"] == pytest.approx(-2000 / miles_from_delay_us(1000.0))   # grows with distance
    assert rows[0]["bound_us"] == 2005.0 and not any("MBps" in k for r in rows for k in r)
    assert main(["analyse", "dpm", "--input", str(f), "--value", "lat_us"]) == 0
    table = capsys.readouterr().out
    assert "D_us_per_mile" in table and "MB" not in table


def test_cli_balance_refuses_to_average_other_delays_or_tools_under_one_label(tmp_path, capsys):
    # osu_bw at 0 and 10000 us and a perftest ib_write_bw, all labelled inter, were averaged into one
    # inter-node bandwidth per size.
    store = tmp_path / "res"
    s = ["--store", str(store), "--format", "csv"]
    assert main(["ingest", str(FIX / "osu_bw.txt"), "--tool", "osu", "--label", "intra", "--delay-us", "0", *s]) == 0
    for d in ("0", "10000"):
        assert main(["ingest", str(FIX / "osu_bw.txt"), "--tool", "osu", "--label", "inter", "--delay-us", d, *s]) == 0
    capsys.readouterr()
    pair = ["analyse", "balance", "--store", str(store), "--intra-label", "intra", "--inter-label", "inter"]
    assert main(pair) == 2
    err = capsys.readouterr().err
    assert err.startswith("longhaul: error: balance: the inter-node records of bandwidth at ") and \
        "differ in delay_us (0, 10000)" in err and "--where delay_us=0" in err and err.count("\n") == 1, err
    assert main([*pair, "--where", "delay_us=0", "--format", "json"]) == 0
    assert all(r["ratio"] == 1 for r in json.loads(capsys.readouterr().out)["per_size"])
    assert main(["ingest", str(FIX / "perftest_write_bw_mb.txt"), "--tool", "perftest", "--label", "inter",
                 "--delay-us", "0", *s]) == 0
    capsys.readouterr()
    assert main([*pair, "--where", "delay_us=0"]) == 2
    assert "the inter-node records of bandwidth at 2 bytes differ in tool (osu, perftest)" in capsys.readouterr().err


def test_fit_says_which_parameters_the_points_tie_together():
    # Two parameters the points see only as a product are not "unconstrained because nothing is
    # limited by them" (calibrate said so of tcp-stack's window and base RTT at one window-limited delay).
    x = np.arange(1.0, 9.0)
    res = fit(lambda p, x: p["a"] * p["b"] * x + 0 * p["unused"], {"a": 2.0, "b": 1.0, "unused": 1.0}, x, 3.0 * x)
    assert res.tied == {"a": ["b"], "b": ["a"], "unused": []}
    assert not math.isfinite(res.stderr["a"]) and not math.isfinite(res.stderr["unused"])


def test_one_run_has_no_spread_to_report():
    # n = 1 gave std 0 and cv 0, which reads as perfectly stable.
    [one] = stability_profile(recs_from(lambda s, d, k: 900.0, delays=[10.0]))
    assert (one["n"], one["bw_MBps_std"], one["cv_pct"], one["bw_MBps_mean"]) == (1, None, None, 900.0)
