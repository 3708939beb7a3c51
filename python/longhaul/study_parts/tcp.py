"""TCP across the site's link (IPoIB over the extenders, or Ethernet between IP routers): bandwidth
vs distance per stream count, and the summary at the planned distance: the bound that binds (the
link's rate, the window over the round trip, the host stack) and the change that helps, simulated."""

from __future__ import annotations

import math

from longhaul.study import Figure, PartResult, StudyContext, StudyPart, SummaryRow, Table
from longhaul.study_parts._common import (
    at,
    at_planned,
    gain_pct,
    helps,
    of,
    simulate,
    size_text,
    start,
    summarise,
    x_key,
)


def run(ctx: StudyContext) -> PartResult:
    ws, out = start(ctx, "tcp", ("tcp",))
    # one figure per link and socket buffer, one curve per stream count
    groups: dict[tuple, list[dict]] = {}
    for r in out.records:
        groups.setdefault((r["link"], r.get("window_bytes") or 0), []).append(r)
    for (link, win), cur in sorted(groups.items()):
        _figure(ctx, link, win, cur, out)
    out.tables.append(Table("TCP, aggregate MB/s (model)",
                            [{k: r.get(k) for k in ("link", "streams", "window_bytes", "one_way_delay_us", "bw_MBps",
                                                    "retransmits")} for r in out.records]))
    for w in ws:
        out.summary.append(summarise(f"TCP ({w.name})", _summary, ctx, w, of(out.records, w)))
    out.commands += [r.command for r in out.summary]
    return out


def _figure(ctx: StudyContext, link: str, win: int, recs: list[dict], out: PartResult) -> None:
    from longhaul import plots

    x = x_key(ctx.site)
    if len({r[x] for r in recs}) < 2:
        return
    wtext = f"{size_text(win)} socket buffer" if win else "Linux buffer auto-tuning"
    fig = plots.bandwidth_vs_delay(recs, series="streams", x=x, title=f"TCP over {link} ({wtext})")
    out.figures.append(Figure(f"tcp_{link}_{win}_bw_vs_distance", f"TCP over {link}, {wtext}: bandwidth vs distance, "
                              f"one curve per stream count (model). {plots.coincide_note(fig)}".strip(), fig))


def _summary(ctx: StudyContext, w, recs: list[dict]) -> SummaryRow:
    site, d, here = at_planned(ctx, recs)
    r = min(here, key=lambda r: (r["streams"], r.get("window_bytes") or 0))   # the plainest configuration
    link, streams, win, bw = r["link"], int(r["streams"]), r.get("window_bytes"), float(r["bw_MBps"])
    rtt = float(r.get("min_rtt_us") or 2 * d)
    rate = float(r["wan_gbps"]) * 125.0 if r.get("wan_gbps") else None
    base = [x for x in at(recs, 0.0) if x["streams"] == streams and x.get("window_bytes") == win]
    bw0 = float(base[0]["bw_MBps"]) if base else None
    layer = f"TCP over {link}"
    gets = f"{bw:,.0f} MB/s with {streams} stream{'s' if streams > 1 else ''}" + (
        f" and {size_text(win)} socket buffers" if win else " (buffer auto-tuning)")
    bounds = {}
    if rate:
        bounds["line rate"] = (rate, f"the {link} WAN link at {rate / 125:g} Gb/s")
    window = win or int(r.get("rmem_max_bytes") or 6291456)
    bounds["data in flight / round trip"] = (streams * window / rtt, (f"{streams} x {size_text(window)} of window over "
                                                                   f"a {rtt:,.0f} us round trip"))
    if bw0:
        bounds["host stack"] = (bw0, f"the hosts' TCP/IP stack, {bw0:,.0f} MB/s at 0 km")
    mech, (limit, why) = min(bounds.items(), key=lambda kv: kv[1][0])
    limited = f"{mech}: {why}" + (f" allows {limit:,.0f} MB/s" if mech != "host stack" else "")
    if r.get("retransmits"):
        limited += f"; {r['retransmits']} retransmissions"
    opts = f"--link {link} {site.options('tcp')}" + (f" --window {win}" if win else "")
    cmd = f"longhaul sim tcp {opts} --streams {streams} --duration-s {r['duration_s']:g}"
    change, gain = "", None
    if mech == "data in flight / round trip":
        top = min(v for k, (v, _) in bounds.items() if k != mech) if len(bounds) > 1 else bw0 or bw
        need = 2 ** math.ceil(math.log2(max(1.0, top * rtt / streams * 1.25)))
        # more streams: the workload's own most-streams run when it has one, else 8 x as many
        more = [x for x in here if x["link"] == link and x.get("window_bytes") == win and x["streams"] > streams]
        scs = [site.tcp(site.planned, link=link, streams=streams, window_bytes=need, duration_s=r["duration_s"])]
        if not more:
            scs.append(site.tcp(site.planned, link=link, streams=streams * 8, window_bytes=win,
                                duration_s=r["duration_s"]))
        tuned = simulate(ctx, "tcp", scs, f"{w.name} window") + more
        best = max(tuned, key=lambda t: t["bw_MBps"])
        gain = gain_pct(bw, best["bw_MBps"])
        if best is tuned[0]:
            change = (f"socket buffers of {size_text(need)} (window >= rate x round trip; raise net.core.rmem_max/"
                      f"wmem_max to match): {best['bw_MBps']:,.0f} MB/s")
            cmd = (f"longhaul sim tcp --link {link} {site.options('tcp')} --window {need} --streams {streams} "
                   f"--duration-s {r['duration_s']:g}")
        else:
            change = f"{best['streams']} parallel streams: {best['bw_MBps']:,.0f} MB/s"
            cmd = f"longhaul sim tcp {opts} --streams {best['streams']} --duration-s {r['duration_s']:g}"
    elif mech == "host stack" and streams < 8:
        tuned = simulate(ctx, "tcp", [site.tcp(site.planned, link=link, streams=streams * 4, window_bytes=win,
                                               duration_s=r["duration_s"])], f"{w.name} streams")
        gain = gain_pct(bw, tuned[0]["bw_MBps"])
        change = f"{streams * 4} streams (more cores for the stack): {tuned[0]['bw_MBps']:,.0f} MB/s"
        cmd = f"longhaul sim tcp {opts} --streams {streams * 4} --duration-s {r['duration_s']:g}"
    change, gain = helps(change, gain)
    return SummaryRow(layer, gets, limited, change, gain, cmd)


PART = StudyPart("tcp", "TCP across the link (simulator)", run, order=20)
