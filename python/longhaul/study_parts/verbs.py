"""Verbs across the site's link: the site's perftest-style workloads at every explored distance,
figures per workload, the peaks, the S1 comparison, and the summary of RC and UD at the planned
distance: what limits them (line rate, PCIe, per-message costs, data in flight over the round
trip, extender credits) and the change that helps, simulated."""

from __future__ import annotations

import math
from collections.abc import Sequence

from longhaul import tune
from longhaul.errors import UserError
from longhaul.results import Store
from longhaul.study import Figure, PartResult, StudyContext, StudyPart, SummaryRow, Table
from longhaul.study_parts._common import (
    at,
    at_planned,
    ceilings_MBps,
    gain_pct,
    helps,
    of,
    per_rtt_MBps,
    simulate,
    size_text,
    start,
    summarise,
    x_key,
)

UD_MTU_BYTES = 2048   # S1's UD messages: one IB MTU


def run(ctx: StudyContext) -> PartResult:
    from longhaul import plots

    site = ctx.site
    ws, out = start(ctx, "verbs", ("verbs",))
    recs = out.records
    x = x_key(site)
    for w in ws:
        sel = of(recs, w)
        value = "lat_us" if w.params["test"] == "lat" else "bw_MBps"
        sel = [r for r in sel if r.get(value) is not None]
        if not sel:
            continue
        stem = w.name.lower().replace(" ", "_")
        fig = plots.bandwidth_vs_size(sel, value=value, series=x, title=f"{w.name}: {plots.words(value).split(' (')[0]} "
                                      "vs message size")
        out.figures.append(Figure(f"{stem}_vs_size", f"{w.name} vs message size, one curve per distance (model). "
                                  f"{plots.coincide_note(fig)}".strip(), fig))
    rc = _first(ws, "rc", "bw")
    if rc is not None:
        sel = [r for r in of(recs, rc) if r.get("bw_MBps") is not None]
        sizes = sorted({int(r["size_bytes"]) for r in sel})
        shown = [s for s in sizes if s in (2048, 8192, 65536, 1 << 19, 1 << 20, 1 << 21, 1 << 23)] or sizes[-4:]
        if len({r[x] for r in sel}) > 1:
            fig = plots.bandwidth_vs_delay([r for r in sel if int(r["size_bytes"]) in shown], series="size_bytes", x=x,
                                           title=f"{rc.name}: bandwidth vs distance")
            out.figures.append(Figure(f"{rc.name.lower().replace(' ', '_')}_vs_distance",
                                      f"{rc.name} bandwidth vs distance, one curve per message size (model). "
                                      f"{plots.coincide_note(fig)}".strip(), fig))
    out.tables.append(Table("Peak bandwidth per workload and distance (model)", _peak_rows(recs),
                            ["site_workload", "one_way_delay_us", "distance_km", "peak_bw_MBps", "at_size_bytes"]))
    if rc is not None:
        rows = half_peak_sizes(of(recs, rc))
        if rows:
            out.tables.append(Table(f"Smallest {rc.name} message reaching 90% of its peak, per distance (model)", rows))
        out.summary.append(summarise(rc.name, _rc_summary, ctx, rc, of(recs, rc)))
    ud = _first(ws, "ud", "bw")
    if ud is not None:
        out.summary.append(summarise(ud.name, _ud_summary, ctx, ud, of(recs, ud)))
    if site.profile == "s1":
        _s1_comparison(ctx, recs, ws, out)
    out.commands.append(f"longhaul results ls --kind verbs{' --store ' + str(ctx.store.root) if ctx.store else ''}")
    return out


def _first(ws, transport: str, test: str):
    return next((w for w in ws if w.params["transport"] == transport and w.params["test"] == test), None)


def _peak_rows(records: Sequence[dict]) -> list[dict]:
    peaks: dict[tuple, dict] = {}
    for r in records:
        if r.get("test") != "bw" or r.get("bw_MBps") is None:
            continue
        key = (r["site_workload"], float(r["one_way_delay_us"]))
        if key not in peaks or r["bw_MBps"] > peaks[key]["peak_bw_MBps"]:
            peaks[key] = {"site_workload": r["site_workload"], "one_way_delay_us": float(r["one_way_delay_us"]),
                          "distance_km": r.get("distance_km"), "peak_bw_MBps": float(r["bw_MBps"]),
                          "at_size_bytes": int(r["size_bytes"]), "transport": r["transport"], "op": r["op"]}
    return [peaks[k] for k in sorted(peaks)]


def half_peak_sizes(records: Sequence[dict], fraction: float = 0.9) -> list[dict]:
    """Smallest message size reaching ``fraction`` of the peak bandwidth, per distance."""
    rows = []
    sel = [r for r in records if r.get("bw_MBps") is not None]
    for d in sorted({float(r["one_way_delay_us"]) for r in sel}):
        pts = sorted((int(r["size_bytes"]), float(r["bw_MBps"])) for r in sel if float(r["one_way_delay_us"]) == d)
        peak = max(v for _, v in pts)
        size = next((s for s, v in pts if v >= fraction * peak), None)
        rows.append({"one_way_delay_us": d, "peak_bw_MBps": peak, f"size_for_{int(fraction * 100)}pct_bytes": size})
    return rows


def _rc_summary(ctx: StudyContext, w, recs: list[dict]) -> SummaryRow:
    """RC at the planned distance with the workload's largest message: the bound that binds."""
    site, d, here = at_planned(ctx, recs, "bw_MBps")
    # The largest message the distance still hurts (below 90% of its bandwidth at 0 km), else the largest.
    zero = {int(x["size_bytes"]): float(x["bw_MBps"]) for x in at(recs, 0.0) if x.get("bw_MBps")}
    hurt = [x for x in here if zero.get(int(x["size_bytes"])) and x["bw_MBps"] < 0.9 * zero[int(x["size_bytes"])]]
    r = max(hurt or here, key=lambda r: int(r["size_bytes"]))
    size, bw, depth, qps = int(r["size_bytes"]), float(r["bw_MBps"]), int(r["tx_depth"]), int(r["qps"])
    bw0 = zero.get(size)
    gets = f"{bw:,.0f} MB/s with {size_text(size)} messages" + (f" ({bw / bw0:.0%} of its {bw0:,.0f} MB/s at 0 km)"
                                                                 if bw0 else "")
    hw = site.hardware
    bounds = {"data in flight / round trip": (per_rtt_MBps(depth * qps * size, d),
                                              (f"{depth} work requests x {qps} QP x {size_text(size)} in flight over a "
                                              f"{2 * d:,.0f} us round trip"))}
    ext = hw.get("extender")
    if ext:
        bounds["extender credits"] = (per_rtt_MBps(ext["buffer_bytes"], d),
                                      (f"the {ext['name']} extenders' {size_text(ext['buffer_bytes'])} of buffer "
                                      f"(credits) over a {2 * d:,.0f} us round trip"))
    bounds.update(ceilings_MBps(hw))
    mech, (limit, why) = min(bounds.items(), key=lambda kv: kv[1][0])
    if bw < 0.8 * limit:   # no bound is met: the adapter's and host's per-message work
        mech, why = "per-message costs", (f"the adapter and host handle {r['msg_rate_Mps']:.3g} M messages/s of "
                                          f"{size_text(size)} (below every rate bound, the lowest being {limit:,.0f} "
                                          "MB/s)")
    limited = f"{mech}: {why}" + (f" allows {limit:,.0f} MB/s" if mech != "per-message costs" else "")
    opts = f"--transport rc --op {r['op']} --sizes {size} {site.options('verbs')}"
    change, gain, cmd = "", None, f"longhaul sim verbs {opts}"
    if mech == "data in flight / round trip":
        # the send queue depth, searched as `longhaul tune verbs` searches it (one search, longhaul.tune)
        knob = tune.Knob("verbs", "send queue depth", "--tx-depth", depth, top=max(depth, int(hw["hca"]["max_qp_wr"])),
                         top_why=f"the {hw['hca']['name']} adapter's max_qp_wr")
        knob.tried[depth] = bw
        tune.climb(knob, lambda v: float(simulate(ctx, "verbs", [site.verbs(
            site.planned, transport="rc", op=r["op"], test="bw", size_bytes=size, qps=qps, tx_depth=int(v))],
            f"{w.name} tx-depth")[0]["bw_MBps"] or 0.0))
        need = int(knob.best)
        if need > depth:
            gain = knob.gain_pct
            edge = f"; {knob.note}" if knob.note.startswith("at the") else ""
            change = (f"--tx-depth {need} (a send queue deep enough for the round trip{edge}): "
                      f"{knob.tried[need]:,.0f} MB/s")
            cmd = f"longhaul sim verbs {opts} --tx-depth {need}"
    elif mech == "extender credits":
        buf = 2 ** math.ceil(math.log2(2 * bounds["line rate"][0] * 2 * d))
        tuned = simulate(ctx, "verbs", [site.verbs(site.planned, transport="rc", op=r["op"], test="bw", size_bytes=size,
                                                   qps=qps, tx_depth=depth, extender_buffer_bytes=buf)],
                         f"{w.name} buffer")
        gain = gain_pct(bw, tuned[0]["bw_MBps"])
        change = f"extenders with {size_text(buf)} of buffer: {tuned[0]['bw_MBps']:,.0f} MB/s"
        cmd = f"longhaul sim verbs {opts} --extender-buffer {buf}"
    elif mech == "line rate" and ext and hw["wan_links"] < 16:
        links = hw["wan_links"] * 2
        tuned = simulate(ctx, "verbs", [site.verbs({**site.planned}, transport="rc", op=r["op"], test="bw",
                                                   size_bytes=size, qps=max(qps, links), tx_depth=depth,
                                                   wan_links=links)], f"{w.name} links")
        gain = gain_pct(bw, tuned[0]["bw_MBps"])
        change = f"{links} parallel WAN links and {max(qps, links)} QPs: {tuned[0]['bw_MBps']:,.0f} MB/s"
        plain = opts.replace(f" --wan-links {hw['wan_links']}", "")
        cmd = f"longhaul sim verbs {plain} --wan-links {links} --qps {max(qps, links)}"
    elif mech == "PCIe":
        change = "none on the link: the adapter's PCIe slot is the ceiling"
    change, gain = helps(change, gain)
    return SummaryRow(w.name, gets, limited, change, gain, cmd)


def _ud_summary(ctx: StudyContext, w, recs: list[dict]) -> SummaryRow:
    site, _d, here = at_planned(ctx, recs, "bw_MBps")
    r = max(here, key=lambda r: int(r["size_bytes"]))
    size, bw = int(r["size_bytes"]), float(r["bw_MBps"])
    bounds = ceilings_MBps(site.hardware)
    mech, (limit, why) = min(bounds.items(), key=lambda kv: kv[1][0])
    if bw < 0.8 * limit:
        limited = (f"per-message costs: {r['msg_rate_Mps']:.3g} M messages/s of {size_text(size)} (no acknowledgements: "
                   "the distance does not limit UD)")
    else:
        limited = f"{mech}: {why} allows {limit:,.0f} MB/s (no acknowledgements: the distance does not limit UD)"
    return SummaryRow(w.name, f"{bw:,.0f} MB/s with {size_text(size)} messages", limited, "", None,
                      f"longhaul sim verbs --transport ud --op send --sizes {size} {site.options('verbs')}")


def _measured_peak(store: Store | None, transport: str, op: str, delay_us: float) -> float | None:
    """The highest bandwidth of the ingested perftest runs of this transport and op measured at
    this delay (a peak measured at 10 us is no measurement at 10,000 us)."""
    if store is None:
        return None
    try:
        recs = store.records(source="measured", kind="ingest-perftest")
    except UserError:
        return None
    vals = [float(r["bw_MBps"]) for r in recs
            if r.get("transport") == transport and r.get("op") == op and r.get("bw_MBps") is not None
            and abs(float(r.get("one_way_delay_us", r.get("delay_us", -1))) - delay_us) < 1e-6]
    return max(vals) if vals else None


def _s1_comparison(ctx: StudyContext, recs: list[dict], ws, out: PartResult) -> None:
    """Model vs published vs measured for S1's scalar verbs points, per delay."""
    from longhaul.analysis import comparison_table, load_published

    try:
        points = {p["id"]: p for p in load_published()}
    except UserError:
        return
    rows = []
    for pid, transport, op, size in (("S1-verbs-rc-peak", "rc", "write", None),
                                     ("S1-verbs-ud-peak", "ud", "send", UD_MTU_BYTES)):
        w = _first(ws, transport, "bw")
        if pid not in points or w is None or w.params["op"] != op:
            continue
        sel = [r for r in of(recs, w) if r.get("bw_MBps") is not None]
        for d in sorted({float(r["one_way_delay_us"]) for r in sel}):
            here = [r for r in sel if float(r["one_way_delay_us"]) == d and (size is None or int(r["size_bytes"]) == size)]
            if not here:
                continue
            rows.append({"id": pid, "one_way_delay_us": d, "published": float(points[pid]["value_MBps"]),
                         "model": max(float(r["bw_MBps"]) for r in here),
                         "measured": _measured_peak(ctx.store, transport, op, d)})
    if rows:
        out.tables.append(Table("Model vs published vs measured (MB/s; measured = peak of the ingested perftest runs "
                                "at that delay)", comparison_table(rows),
                                ["id", "one_way_delay_us", "published", "model", "measured", "model_rel_err",
                                 "measured_rel_err"]))


PART = StudyPart("verbs", "Verbs RC, UC and UD across the link (simulator)", run, order=10)
