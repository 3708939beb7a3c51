"""Checks of the TCP model against the S1 IPoIB and S3 iperf points (``points_tcp.toml``)."""

from __future__ import annotations

from collections.abc import Callable

from longhaul.sim import tcp, verbs

# Long enough for slow start and auto-tuning to matter little at 10 ms (5 simulated seconds).
DURATION_S = 5.0


def _row(p: dict, expected, model, passed: bool, detail: str, rel_err: float | None = None) -> dict:
    return {"id": p["id"], "source": p["source"], "what": p["what"], "expected": expected, "model": model,
            "rel_err": rel_err, "passed": bool(passed), "detail": detail}


def _bw(link: str, delays, streams, quiet: bool, **kw) -> dict[tuple[float, int], float]:
    recs = tcp.sweep(link, delays_us=delays, streams=streams, testbed="s1", duration_s=DURATION_S,
                     show_progress=not quiet, **kw)
    return {(r["delay_us"], r["streams"]): r["bw_MBps"] for r in recs}


def check_ud_streams(p: dict, quiet: bool = True) -> dict:
    delays, streams = p["delays_us"], p["streams"]
    bw = _bw("ipoib-ud", delays, streams, quiet, windows=[p["assumed_window_bytes"]])
    verbs_ud = verbs.run(verbs.scenario(testbed="s1", transport="ud", op="send", test="bw", size_bytes=2048))["bw_MBps"]
    peak = max(bw.values())
    one = [bw[(d, 1)] for d in delays]
    best_multi_1ms = max(bw[(1000.0, n)] for n in streams if n > 1)
    gain = best_multi_1ms / bw[(1000.0, 1)] - 1
    degrades = all(bw[(delays[-1], n)] < bw[(delays[0], n)] for n in streams)
    below = peak / verbs_ud
    ok = below <= p["ud_peak_below_verbs_ud_at_most"] and gain >= p["streams_gain_at_1000us_at_least"] and degrades
    return _row(p, f"peak <= {p['ud_peak_below_verbs_ud_at_most']:.0%} of verbs UD; 2+ streams >= +{p['streams_gain_at_1000us_at_least']:.0%} at 1000 us",
                f"peak {peak:.0f} MBps ({below:.0%} of verbs UD {verbs_ud:.0f}); +{gain:.0%} at 1000 us", ok,
                f"one stream per delay {[round(x) for x in one]} MBps; best of 2-8 streams at 1000 us {best_multi_1ms:.0f} MBps; "
                f"window {p['assumed_window_bytes'] >> 10} KiB; every stream count lower at {delays[-1]:g} us: {degrades}")


def check_cm_64k(p: dict, quiet: bool = True) -> dict:
    delays = p["delays_us"]
    w = p["assumed_window_bytes"]
    by_mtu = {m: _bw("ipoib-cm", delays, [1, 2], quiet, windows=[w], mtu_bytes=m) for m in p["mtus_bytes"]}
    big = by_mtu[65520]
    peak = max(big[(d, 1)] for d in delays if d <= 100)
    err = (peak - p["value_MBps"]) / p["value_MBps"]
    best_mtu = all(big[(d, 1)] > by_mtu[m][(d, 1)] for m in p["mtus_bytes"] if m != 65520 for d in delays if d <= 100)
    ud_peak = max(_bw("ipoib-ud", [0], [1], quiet, windows=[w]).values())
    drop = 1 - big[(1000.0, 1)] / big[(100.0, 1)]
    wider = big[(1000.0, 2)] > big[(1000.0, 1)] * 1.3
    ok = abs(err) <= p["tolerance"] and best_mtu and peak > 2 * ud_peak and drop >= p["sharp_drop_at_1000us_at_least"] and wider
    return _row(p, p["value_MBps"], round(peak, 1), ok,
                f"64K MTU one stream per delay {[round(big[(d, 1)]) for d in delays]} MBps, two streams "
                f"{[round(big[(d, 2)]) for d in delays]}; at <=100 us 4K {by_mtu[4092][(0.0, 1)]:.0f}, 16K {by_mtu[16380][(0.0, 1)]:.0f}, "
                f"64K {big[(0.0, 1)]:.0f} MBps; IPoIB-UD {ud_peak:.0f}; drop at 1000 us {drop:.0%}", err)


def check_s3_iperf(p: dict, quiet: bool = True) -> dict:
    r = tcp.run(tcp.scenario(link=p["assumed_link"], testbed="s3", fibre_km=10, streams=p["streams"], duration_s=DURATION_S))
    gbps = r["bw_MBps"] * 8 / 1000
    err = (gbps - p["value_Gbps_wan"]) / p["value_Gbps_wan"]
    return _row(p, p["value_Gbps_wan"], round(gbps, 3), abs(err) <= p["tolerance"],
                f"iperf -P{p['streams']} over {p['assumed_link']}, 10 km: {gbps:.3f} Gb/s "
                f"(streams {[round(x * 8 / 1000, 2) for x in r['stream_bw_MBps']]} Gb/s)", err)


CHECKS: dict[str, Callable[[dict, bool], dict]] = {
    "S1-ipoib-ud-streams": check_ud_streams,
    "S1-ipoib-rc-64k-peak": check_cm_64k,
    "S3-iperf-10km": check_s3_iperf,
}
