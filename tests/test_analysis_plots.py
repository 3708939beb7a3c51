"""Figures: every plot function writes PNG + SVG, deterministically, from record lists."""

from __future__ import annotations

import pytest

from longhaul import plots
from longhaul.errors import UserError

BW = [{"size_bytes": 2**k, "delay_us": d, "streams": st, "bw_MBps": min(960.0, 2**k / (1 + d / 100)) * st / 4}
      for k in range(1, 24, 2) for d in (0.0, 100.0, 1000.0) for st in (1, 4)]


def _check(fig, tmp_path, name):
    paths = plots.save(fig, tmp_path / name)
    assert [p.suffix for p in paths] == [".png", ".svg"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and paths[0].stat().st_size > 5000
    svg = paths[1].read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    plots.close(fig)
    return paths


def test_bandwidth_vs_size_one_curve_per_delay(tmp_path):
    fig = plots.bandwidth_vs_size([r for r in BW if r["streams"] == 4])
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert labels == ["0 us (0 km)", "100 us (20 km)", "1000 us (200 km)"]
    assert fig.axes[0].get_xscale() == "log"
    _check(fig, tmp_path, "bws")


def test_bandwidth_vs_delay_per_stream_count_log_x(tmp_path):
    fig = plots.bandwidth_vs_delay([r for r in BW if r["size_bytes"] == 2**21], series="streams")
    ax = fig.axes[0]
    assert ax.get_xscale() == "symlog" and [ln.get_label() for ln in ax.get_lines()] == ["1 stream", "4 streams"]
    _check(fig, tmp_path, "bwd")


def test_other_published_figure_kinds(tmp_path):
    before = [{"size_bytes": 2**k, "bw_MBps": 100.0 * k} for k in range(10, 20)]
    after = [{"size_bytes": 2**k, "bw_MBps": 120.0 * k} for k in range(10, 20)]
    _check(plots.mpi_threshold_tuning(before, after), tmp_path, "mpi")
    lat = [{"size_bytes": 2**k, "lat_us": 10.0 * k} for k in range(4, 18)]
    bcast = plots.bcast_latency(lat, [{**r, "lat_us": r["lat_us"] / 2} for r in lat], where="1 ms one way, 128 ranks")
    assert bcast.axes[0].get_yscale() == "log" and "1 ms one way, 128 ranks" in bcast.axes[0].get_title()
    _check(bcast, tmp_path, "bcast")
    nas = [{"benchmark": b, "delay_us": d, "time_s": t * (1 + d / f)} for b, t, f in (("IS", 10.0, 1e5), ("CG", 20.0, 1e3))
           for d in (0.0, 10.0, 100.0, 1000.0, 10000.0)]
    fig = plots.normalised_time_vs_delay(nas)
    ys = fig.axes[0].get_lines()[0].get_ydata()
    assert ys[0] == 1.0                                   # normalised to the 0 us run
    _check(fig, tmp_path, "nas")
    nfs = [{"transport": t, "delay_us": d, "bw_MBps": v} for t, vals in (("rdma", (700, 700, 500, 100)), ("ipoib-rc", (500, 490, 450, 300)))
           for d, v in zip((0.0, 10.0, 100.0, 1000.0), vals)]
    _check(plots.nfs_throughput_vs_delay(nfs), tmp_path, "nfs")


def test_svg_is_deterministic(tmp_path):
    a = _check(plots.bandwidth_vs_size(BW), tmp_path / "a", "f")[1].read_bytes()
    b = _check(plots.bandwidth_vs_size(BW), tmp_path / "b", "f")[1].read_bytes()
    assert a == b


def test_missing_columns_is_a_user_error():
    with pytest.raises(UserError, match="no record has numeric 'size_bytes' and 'lat_us'"):
        plots.bandwidth_vs_size(BW, value="lat_us")


def test_cli_plot_refuses_a_missing_directory_and_draws_every_by_series(cli, tmp_path):
    from test_analysis_core import FIX

    store = str(tmp_path / "res")
    for d in ("0", "1000"):
        cli("ingest", str(FIX / "perftest_write_bw_mb.txt"), "--tool", "perftest", "--delay-us", d,
            "--store", store, check=True)
    cli("ingest", str(FIX / "perftest_send_bw_mib.txt"), "--tool", "perftest", "--delay-us", "0", "--store", store,
        check=True)
    for plot, words in [(tmp_path / "nodir" / "p", (f"--plot: cannot write '{tmp_path / 'nodir' / 'p'}': "
                                                   f"directory '{tmp_path / 'nodir'}' does not exist")),
                        (tmp_path, f"--plot: cannot write '{tmp_path}': it is a directory")]:
        proc = cli("analyse", "profile", "--store", store, "--plot", str(plot))
        assert proc.returncode == 2 and proc.stdout == "", proc.stderr
        assert proc.stderr.count("\n") == 1 and words in proc.stderr, proc.stderr
    assert not (tmp_path / "nodir").exists()
    # Two --by columns: one curve per pair, as the table has one series per pair.
    proc = cli("analyse", "profile", "--store", store, "--by", "op,size_bytes", "--where", "size_bytes=2048,65536",
               "--plot", str(tmp_path / "p"), "--format", "csv", check=True)
    assert proc.stdout.count("\n") == 1 + 3   # send at 0 us, write at 0 and 1000 us
    svg = (tmp_path / "p.svg").read_text()
    assert "op/size_bytes=send/2048" in svg and "op/size_bytes=write/65536" in svg
