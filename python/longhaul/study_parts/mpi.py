"""MPI across the site's link: the site's OSU benchmarks, NAS-like skeletons and traces at their
distances; figures; and the summary of point-to-point, collectives and applications at the planned
distance: the mechanism that limits each (rendezvous round trips, eager credits, data in flight,
WAN crossings) and the change that helps, simulated."""

from __future__ import annotations

from longhaul import tune
from longhaul.study import Figure, PartResult, StudyContext, StudyPart, SummaryRow, Table
from longhaul.study_parts._common import (
    at,
    at_planned,
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

P2P = ("latency", "bw", "bibw", "mbw_mr")


def run(ctx: StudyContext) -> PartResult:
    site = ctx.site
    ws, out = start(ctx, "mpi", ("mpi", "nas", "trace"))
    recs = out.records
    for w in ws:
        sel = of(recs, w)
        if w.layer == "mpi":
            _osu_figures(site, w, sel, out)
        elif w.layer == "nas":
            _nas(site, w, sel, out)
        else:
            out.tables.append(Table(f"{w.name}: run time per distance (model)",
                                    [{k: r.get(k) for k in ("one_way_delay_us", "ranks", "run_time_s")} for r in sel]))
    p2p = next((w for w in site.of("mpi") if w.params["bench"] in P2P), None)
    if p2p is not None:
        out.summary.append(summarise(f"MPI point-to-point ({p2p.params['bench']})", _p2p_summary, ctx, p2p,
                                     of(recs, p2p)))
    coll = next((w for w in site.of("mpi") if w.params["bench"] not in P2P), None)
    if coll is not None:
        out.summary.append(summarise(f"MPI collectives ({coll.params['bench']})", _coll_summary, ctx, coll,
                                     of(recs, coll)))
    for w in site.of("nas"):
        out.summary.append(summarise(w.name, _nas_summary, ctx, w, of(recs, w)))
    return out


def _osu_figures(site, w, sel: list[dict], out: PartResult) -> None:
    from longhaul import plots

    value = "bw_MBps" if w.params["bench"] in ("bw", "bibw", "mbw_mr") else "lat_us"
    sel = [r for r in sel if r.get(value) is not None]
    if not sel:
        return
    stem = w.name.lower().replace(" ", "_").replace(",", "").replace("/", "-")
    x = x_key(site)
    sizes = {r["size_bytes"] for r in sel}
    compare = ("algo" if len(w.params.get("algo") or []) > 1 else
               "eager_threshold_bytes" if len(w.params.get("eager_threshold_bytes") or []) > 1 else None)
    if compare == "algo":   # records name the algorithm that ran (scatter-rd, ...): classify it
        sel = [dict(r, algo="hierarchical" if "hier" in str(r["algo"]) else "default") for r in sel]
    series = compare or x
    for d in sorted({r["one_way_delay_us"] for r in sel}) if compare else [None]:
        cur = [r for r in sel if d is None or r["one_way_delay_us"] == d]
        where = f" at {d:g} us one way" if d is not None else ""
        if len(sizes) > 1:
            fig = plots.bandwidth_vs_size(cur, value=value, series=series, title=f"{w.name}{where}")
        elif compare and len({r["one_way_delay_us"] for r in sel}) > 1:
            if d != max(r["one_way_delay_us"] for r in sel):
                continue
            fig = plots.bandwidth_vs_delay(sel, value=value, series=series, x=x, title=w.name)
            where = ""
        else:
            continue
        out.figures.append(Figure(f"{stem}{'_' + str(int(d)) if where and d is not None else ''}",
                                  f"{w.name}{where}, one curve per {plots.words(series).split(' (')[0]} (model). "
                                  f"{plots.coincide_note(fig)}".strip(), fig))
    cols = ["bench", "size_bytes", "one_way_delay_us", "algo", "eager_threshold_bytes", "ranks", value]
    out.tables.append(Table(f"{w.name} (model)", [{k: r.get(k) for k in cols} for r in sel], cols))


def _nas(site, w, sel: list[dict], out: PartResult) -> None:
    from longhaul import plots

    nas = [dict(r, benchmark=str(r["app"]).upper()) for r in sel if r.get("run_time_s") is not None]
    if len({r["one_way_delay_us"] for r in nas}) > 1:
        fig = plots.normalised_time_vs_delay(nas, value="run_time_s", series="benchmark", x=x_key(site),
                                             title=f"{w.name}: run time relative to the shortest distance")
        out.figures.append(Figure(f"nas_{w.index}_normalised", f"{w.name}: run time normalised to the shortest distance "
                                  f"(model). {plots.coincide_note(fig)}".strip(), fig))
    out.tables.append(Table(f"{w.name}: run time vs distance (model)",
                            [{k: r.get(k) for k in ("benchmark", "one_way_delay_us", "ranks", "run_time_s")}
                             for r in nas]))


def _opts(site) -> str:
    return site.options("mpi")


def _p2p_summary(ctx: StudyContext, w, recs: list[dict]) -> SummaryRow:
    bench = w.params["bench"]
    value = "lat_us" if bench == "latency" else "bw_MBps"
    site, d, here = at_planned(ctx, recs, value)
    layer = f"MPI point-to-point ({bench})"
    # the library's own threshold (the first one listed when the workload compares thresholds)
    t0 = (w.params.get("eager_threshold_bytes") or [None])[0]
    mine = [r for r in here if t0 is None or r.get("eager_threshold_bytes") == t0]
    # the message that suffers most from the rendezvous, else the largest
    rndv = [r for r in mine if r.get("rendezvous_messages")]
    r = min(rndv, key=lambda r: r["size_bytes"]) if rndv else max(mine, key=lambda r: r["size_bytes"])
    size, v = int(r["size_bytes"]), float(r[value])
    unit = "us" if value == "lat_us" else "MB/s"
    gets = f"{v:,.0f} {unit} with {size_text(size)} messages"
    thr = int(r.get("eager_threshold_bytes") or 0)
    cmd = f"longhaul sim mpi osu --bench {bench} --sizes {size} {_opts(site)}"
    change, gain = "", None
    if r.get("rendezvous_messages"):
        limited = (f"protocol round trips: {size_text(size)} is not below the eager threshold ({size_text(thr)}), so each "
                   f"message waits for the rendezvous handshake, a {2 * d:,.0f} us round trip")
        # the workload's own higher threshold when it compares some, else the next power of two above the message
        higher = sorted((x for x in here if int(x.get("eager_threshold_bytes") or 0) > size
                         and x["size_bytes"] == size), key=lambda x: x["eager_threshold_bytes"])
        new = int(higher[0]["eager_threshold_bytes"]) if higher else tune.eager_threshold_for(size)
        key = "eager_limit_bytes" if site.ip else "eager_threshold_bytes"
        if higher:
            tuned = higher[0]
        else:
            sc = (site.mpi_tcp(site.planned, osu={"bench": bench, "size_bytes": size}, eager_limit_bytes=new) if site.ip
                  else site.mpi(site.planned, osu={"bench": bench, "size_bytes": size}, eager_threshold_bytes=new))
            tuned = simulate(ctx, "mpi-tcp" if site.ip else "mpi", [sc], f"{w.name} threshold")[0]
        gain = gain_pct(v, tuned[value]) if value == "bw_MBps" else gain_pct(tuned[value], v)
        change = f"eager threshold {size_text(new)} ({key}): {tuned[value]:,.0f} {unit}"
        cmd = (f"longhaul sim mpi osu --bench {bench} --sizes {size} {_opts(site)} "
               + (f"--eager-limit {new}" if site.ip else f"--rndv-threshold {new}"))
    elif value == "bw_MBps":
        window = int(r.get("window_msgs") or 1)
        bound = per_rtt_MBps(window * size, d)
        if r.get("credit_stalls"):
            limited = f"eager credits: {r['credit_stalls']} waits for the receiver's credits over the round trip"
        else:
            limited = (f"data in flight / round trip: osu_bw's window of {window} x {size_text(size)} over a "
                       f"{2 * d:,.0f} us round trip allows {bound:,.0f} MB/s")
        if not site.ip:
            sc = site.mpi(site.planned, osu={"bench": "mbw_mr", "size_bytes": size, "pairs": 4})
            tuned = simulate(ctx, "mpi", [sc], f"{w.name} pairs")[0]
            gain = gain_pct(v, tuned["bw_MBps"])
            change = f"4 process pairs across the WAN: {tuned['bw_MBps']:,.0f} MB/s together"
            cmd = f"longhaul sim mpi osu --bench mbw_mr --pairs 4 --sizes {size} {_opts(site)}"
            change, gain = helps(change, gain)
    else:
        limited = f"the one-way delay: {v:,.0f} us is {v / d:.2f} x the {d:,.0f} us one way" if d else "the host and adapter"
    return SummaryRow(layer, gets, limited, change, gain, cmd)


def _coll_summary(ctx: StudyContext, w, recs: list[dict]) -> SummaryRow:
    site, d, here = at_planned(ctx, recs, "lat_us")
    bench = w.params["bench"]
    layer = f"MPI collectives ({bench})"
    size = max(r["size_bytes"] for r in here)
    cur = [r for r in here if r["size_bytes"] == size]
    default = next((r for r in cur if "hier" not in str(r["algo"])), cur[0])
    hier = next((r for r in cur if "hier" in str(r["algo"])), None)
    lat = float(default["lat_us"])
    ranks = default.get("ranks")
    gets = f"{lat:,.0f} us for {size_text(size)} over {ranks} ranks ({default['algo']})"
    limited = (f"WAN crossings: {lat / d:.1f} one-way delays of {d:,.0f} us (the algorithm's rounds that cross the "
               "WAN, each waiting for the far side)" if d else "the fabrics inside the clusters")
    opts = (f"--bench {bench} --sizes {size} --nodes {w.params['nodes']} --ppn {w.params['ppn']} {_opts(site)}")
    change, gain = "", None
    if hier is not None:
        cut = 100.0 * (1 - float(hier["lat_us"]) / lat)
        change, gain = f"hierarchical {bench} (one WAN crossing; longhaul.mpi.HierComm): {hier['lat_us']:,.0f} us", cut
        return SummaryRow(layer, gets, limited, change + " (gain = time cut)", gain,
                          f"longhaul sim mpi osu {opts} --algo hierarchical")
    return SummaryRow(layer, gets, limited, change, gain, f"longhaul sim mpi osu {opts}")


def _nas_summary(ctx: StudyContext, w, recs: list[dict]) -> SummaryRow:
    site, _d, here = at_planned(ctx, recs, "run_time_s")
    zero = {r["app"]: r for r in at(recs, 0.0) if r.get("run_time_s") is not None}
    parts, worst = [], None
    for r in here:
        z = zero.get(r["app"])
        slow = r["run_time_s"] / z["run_time_s"] if z and z["run_time_s"] else None
        parts.append(f"{str(r['app']).upper()} {r['run_time_s']:.3g} s" + (f" ({slow:.2f} x 0 km)" if slow else ""))
        if slow and (worst is None or slow > worst[0]):
            worst = (slow, r)
    limited = "the apps' messages crossing the WAN"
    if worst:
        r = worst[1]
        share = r.get("large_msg_share")
        limited = (f"messages crossing the WAN: {str(r['app']).upper()} slows most ({worst[0]:.2f} x)"
                   + (f"; {share:.0%} of its bytes travel in large messages" if share is not None else ""))
    apps = ",".join(w.params["apps"])
    return SummaryRow(w.name, "; ".join(parts), limited, "", None,
                      f"longhaul sim mpi app --app {apps} --class {w.params['class']} --nodes {w.params['nodes']} "
                      f"--ppn {w.params['ppn']} {_opts(site)}")


PART = StudyPart("mpi", "MPI across the clusters (simulator)", run, order=30)
