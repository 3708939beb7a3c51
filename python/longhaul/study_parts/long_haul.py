"""The whole long-haul range (issue 22), when the site asks for it (a ``long-haul`` workload): RC,
UC and UD verbs, MPI over RC and UD, IPoIB and 10GigE TCP (1 and 16 streams, BIC and HTCP) on the
UltraScience Net profile (``usn``) at its loops, 0.2, 1,400, 6,600 and 8,600 miles, and at 20,000
km. Three views: the distance profile (throughput vs distance and message size), the stability
profile (repeats with different seeds on a WAN that corrupts one packet in 10^5: the model is
deterministic on a clean path, so a seed only changes which packets a lossy one loses) and the
decrease per mile with its Hoeffding bound (``longhaul.analysis``). Durations are short (a second
or two of simulated time, TCP's ramp included): the figures show where each transport stands, not
a long test's steady state."""

from __future__ import annotations

from longhaul.analysis.dpm import decrease_per_mile
from longhaul.analysis.profiles import distance_profile, stability_profile
from longhaul.sim import mpi, tcp, verbs
from longhaul.study import Figure, PartResult, SkipPart, StudyContext, StudyPart, SummaryRow, Table, sweep
from longhaul.study_parts._common import size_text
from longhaul.units import FIBRE_DELAY_US_PER_KM, KM_PER_MILE

PROFILE = "usn"
#: The UltraScience Net's loops (Rao et al., SC08: 0.2 miles at ORNL, then 1,400 to 8,600 miles),
#: then 20,000 km, half the Earth's circumference: fibre km, one way (the loop length).
DISTANCES_KM = (0.2 * KM_PER_MILE, 1400 * KM_PER_MILE, 6600 * KM_PER_MILE, 8600 * KM_PER_MILE, 20_000.0)
#: 4x SDR's 8 Gb/s of data: the most any verbs or MPI measurement can be (the bound of the
#: decrease per mile); TCP's is its WAN's payload rate.
SDR_4X_MBPS = 1000.0
#: A WAN corrupting one packet in 10^5 for the stability profile: each seed draws other losses.
STABILITY_LOSS = 1e-5
#: The 10GigE TCP runs: the USN's Force10 E300s carried 10GigE WAN PHY.
TEN_GIGE = "10gige-wan"


def _verbs(fibre_km: float, transport: str, size: int, quick: bool, **extra) -> dict:
    op = "send" if transport == "ud" else "write"
    # enough messages for ~2 round trips of the benchmark's window at 20,000 km, and at least 64 MiB
    iterations = max(20, (16 if quick else 64) * (1 << 20) // size)
    return verbs.scenario(testbed=PROFILE, transport=transport, op=op, test="bw", size_bytes=size,
                          iterations=iterations, fibre_km=fibre_km, **extra)


def _points(quick: bool, repeats: int) -> list[dict]:
    """The sweep points: (model, label, scenarios) with the label a configuration's name."""
    verbs_sizes = (1 << 20, 8 << 20) if quick else (65536, 1 << 20, 8 << 20)
    tcp_s = 1.0 if quick else 2.0
    pts: list[dict] = []

    def add(model: str, label: str, scs: list[dict]) -> None:
        pts.append({"model": model, "workload": label, "scenarios": scs})

    for km in DISTANCES_KM:
        for t in ("rc", "uc"):
            add("verbs", f"verbs {t.upper()} write", [_verbs(km, t, s, quick) for s in verbs_sizes])
        add("verbs", "verbs UD send", [_verbs(km, "ud", 2048, quick)])
        for t in ("rc", "ud"):
            for s in ((1 << 20,) if quick else (65536, 1 << 20)):
                add("mpi", f"MPI over {t.upper()} (osu_bw)",
                    [mpi.scenario(testbed=PROFILE, transport=t, fibre_km=km, osu={"bench": "bw", "size_bytes": s})])
        add("tcp", "IPoIB (connected mode)", [tcp.scenario(link="ipoib-cm", testbed=PROFILE, fibre_km=km,
                                                            duration_s=tcp_s)])
        for cc in ("bic", "htcp"):
            for n in (1, 16):
                add("tcp", f"10GigE TCP {cc.upper()}", [tcp.scenario(link=TEN_GIGE, testbed=PROFILE, cc=cc, streams=n,
                                                                    fibre_km=km, duration_s=tcp_s)])
        for seed in range(1, repeats + 1):
            add("verbs", "stability: verbs RC write 8 MiB",
                [_verbs(km, "rc", 8 << 20, quick, loss=STABILITY_LOSS, seed=seed)])
            add("tcp", "stability: 10GigE TCP HTCP", [tcp.scenario(link=TEN_GIGE, testbed=PROFILE, cc="htcp", fibre_km=km,
                                                                   duration_s=tcp_s, loss=STABILITY_LOSS, seed=seed)])
    return pts


def _configuration(r: dict) -> str:
    """A record's configuration in words: its workload, and what varies within it."""
    label = r["site_workload"]
    if "stability" in label:
        return label.removeprefix("stability: ")
    if r.get("streams") is not None and label.startswith("10GigE"):
        return f"{label}, {int(r['streams'])} stream{'s' if int(r['streams']) > 1 else ''}"
    if r.get("size_bytes") is not None and not label.startswith(("IPoIB", "10GigE")):
        return f"{label}, {size_text(int(r['size_bytes']))}"
    return label


def _rows(recs: list[dict]) -> list[dict]:
    """The records as the profiles read them: the whole one-way delay as ``delay_us`` (the models
    record an extender's setting there), the distance in km and miles, the configuration named."""
    out = []
    for r in recs:
        if r.get("bw_MBps") is None:
            continue
        d = float(r["one_way_delay_us"])
        out.append({"configuration": _configuration(r), "family": r["site_workload"].split(" ")[0],
                    "delay_us": d, "distance_km": d / FIBRE_DELAY_US_PER_KM,
                    "distance_miles": d / FIBRE_DELAY_US_PER_KM / KM_PER_MILE, "bw_MBps": float(r["bw_MBps"]),
                    "seed": r.get("seed"), "stability": r["site_workload"].startswith("stability"),
                    "wan_gbps": r.get("wan_gbps")})
    return out


def run(ctx: StudyContext) -> PartResult:
    from longhaul import plots

    ws = ctx.site.of("long-haul")
    if not ws:
        raise SkipPart("the site asks for no long-haul range (a workload with layer = \"long-haul\")")
    repeats = 2 if ctx.quick else int(ws[0].params["repeats"])
    res = sweep(ctx, _points(ctx.quick, repeats), "long-haul", "study-long-haul")
    out = PartResult(records=res.records, computed=res.computed, cached=res.cached)
    rows = _rows(res.records)
    clean = [r for r in rows if not r["stability"]]
    prof = distance_profile(clean, by=("family", "configuration"))
    for family, title in (("verbs", "Verbs (perftest)"), ("MPI", "MPI (osu_bw)"), ("IPoIB", "TCP over IPoIB"),
                          ("10GigE", "10GigE TCP (WAN PHY)")):
        sel = [r for r in prof if r["family"] == family]
        if not sel:
            continue
        fig = plots.bandwidth_vs_delay(sel, series="configuration", x="distance_km",
                                       title=f"{title} on the usn profile: bandwidth vs distance")
        out.figures.append(Figure(f"long_haul_{family.lower()}_vs_distance",
                                  f"{title}: bandwidth vs distance, one curve per configuration (model; usn "
                                  f"profile, clean WAN). {plots.coincide_note(fig)}".strip(), fig))
    out.tables.append(Table("Distance profile: mean bandwidth (MB/s) per configuration and distance (model, usn profile)",
                            [{k: r[k] for k in ("configuration", "distance_miles", "distance_km", "bw_MBps")}
                             for r in prof], ["configuration", "distance_miles", "distance_km", "bw_MBps"]))
    stab = stability_profile([r for r in rows if r["stability"]], by=("configuration",))
    if stab:
        fig = plots.bandwidth_vs_delay(stab, value="cv_pct", series="configuration", x="distance_km",
                                       title=f"Stability over {repeats} seeds, 1 packet in 10^5 corrupted")
        out.figures.append(Figure("long_haul_stability", "Stability profile: spread of bandwidth over runs with "
                                  f"different seeds ({repeats} each) on a WAN corrupting one packet in 10^5 "
                                  "(coefficient of variation; model, usn profile).", fig))
        out.tables.append(Table(f"Stability profile: bandwidth over {repeats} seeds per distance, one packet in 10^5 "
                                "corrupted (MB/s)", stab,
                                ["configuration", "distance_km", "bw_MBps_mean", "bw_MBps_std", "bw_MBps_min",
                                 "bw_MBps_max", "cv_pct", "n"]))
    out.tables.append(Table("Decrease per mile (MB/s per mile) from the shortest loop, with its 95% Hoeffding bound "
                            "(bound: the link's data rate; model, usn profile)", _dpm(clean),
                            ["configuration", "estimate", "distance_miles", "D_MBps_per_mile", "D_lo_MBps_per_mile",
                             "D_hi_MBps_per_mile", "bound_MBps"]))
    out.summary.append(_summary(prof))
    loops = "--distance-miles 0.2,1400,6600,8600"
    out.commands += [f"longhaul sim verbs --profile {PROFILE} --transport rc --sizes 8M {loops}",
                     f"longhaul sim tcp --profile {PROFILE} --link {TEN_GIGE} --cc htcp --streams 1,16 {loops} --duration-s 2"]
    return out


def _dpm(rows: list[dict]) -> list[dict]:
    """The decrease per mile of every configuration, bounded by its link's data rate."""
    out = []
    for conf in sorted({r["configuration"] for r in rows}):
        sel = [r for r in rows if r["configuration"] == conf]
        wan = next((r["wan_gbps"] for r in sel if r.get("wan_gbps")), None)
        bound = max(wan * 125.0 if wan else SDR_4X_MBPS, *(r["bw_MBps"] for r in sel))
        out += decrease_per_mile(sel, by=("configuration",), bound=bound)
    return out


def _summary(prof: list[dict]) -> SummaryRow:
    def bw(conf: str, km: float) -> float | None:
        return next((r["bw_MBps"] for r in prof if r["configuration"] == conf and abs(r["distance_km"] - km) < 1e-6),
                    None)

    rc = "verbs RC write, 8 MiB"
    far, edge = 8600 * KM_PER_MILE, 20_000.0
    got = [f"{c}: {v:,.0f} MB/s" for c, v in ((rc, bw(rc, far)), ("10GigE TCP HTCP, 16 streams",
                                                                  bw("10GigE TCP HTCP, 16 streams", far))) if v]
    at_edge = bw(rc, edge)
    gets = "; ".join(got) + " at 8,600 miles" + (f" ({at_edge:,.0f} MB/s RC at 20,000 km)" if at_edge else "")
    return SummaryRow("Long haul (usn profile)", gets,
                      "RC: the benchmark's window of messages over the round trip; UC/UD: the WAN rate (the "
                      "extenders' credits span 20,000 km); TCP: its window's ramp over the round trip",
                      command=f"longhaul sim verbs --profile {PROFILE} --transport rc --sizes 8M --distance-miles 8600")


PART = StudyPart("long-haul", "The whole long-haul range: UltraScience Net loops to 20,000 km (simulator)", run,
                 order=60)
