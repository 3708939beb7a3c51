"""NFS reads across the site's link (NFS/RDMA, NFS over IPoIB-RC and -UD): throughput vs distance,
and the summary at the planned distance: RPCs in flight over the round trip, and the transport
that moves most there."""

from __future__ import annotations

from longhaul.study import Figure, PartResult, StudyContext, StudyPart, SummaryRow, Table
from longhaul.study_parts._common import at_planned, gain_pct, of, per_rtt_MBps, size_text, start, summarise, x_key


def run(ctx: StudyContext) -> PartResult:
    from longhaul import plots

    site = ctx.site
    ws, out = start(ctx, "nfs", ("nfs",))
    recs = out.records
    for w in ws:
        sel = of(recs, w)
        if len({r["one_way_delay_us"] for r in sel}) > 1:
            fig = plots.nfs_throughput_vs_delay(sel, x=x_key(site))
            out.figures.append(Figure(f"nfs_{w.index}_throughput_vs_distance",
                                      "NFS read throughput vs distance: one curve per transport (IOzone, "
                                      f"{sel[0]['threads']} threads, rsize {size_text(sel[0]['rsize_bytes'])}; model). "
                                      f"{plots.coincide_note(fig)}".strip(), fig))
        out.tables.append(Table("NFS read throughput, MB/s (model; part of the file simulated, measured after its "
                                "first quarter)",
                                [{k: r.get(k) for k in ("transport", "one_way_delay_us", "threads", "rsize_bytes",
                                                        "slots", "bw_MBps")} for r in sel]))
        out.summary.append(summarise(w.name, _summary, ctx, w, sel))
    return out


def _summary(ctx: StudyContext, w, recs: list[dict]) -> SummaryRow:
    site, d, records = at_planned(ctx, recs)
    here = {r["transport"]: r for r in records}
    first = w.params["transports"][0]
    r = here.get(first) or next(iter(here.values()))
    bw = float(r["bw_MBps"])
    limited = _what_limits(r, d, bw)
    best = max(here.values(), key=lambda x: x["bw_MBps"])
    change, gain = "", None
    if best["transport"] != r["transport"]:
        change = f"NFS over {best['transport']}: {best['bw_MBps']:,.0f} MB/s"
        gain = gain_pct(bw, best["bw_MBps"])
    return SummaryRow(f"NFS reads over {r['transport']}", f"{bw:,.0f} MB/s", limited, change, gain,
                      f"longhaul sim nfs --transport {','.join(here)} {site.options('nfs')}")


def _what_limits(r: dict, d: float, bw: float) -> str:
    """What holds the reads at one-way delay ``d``: the RPC slots or the client's readahead (the READs in
    flight over the round trip), or else the transport's per-RPC work."""
    read = int(r.get("read_bytes") or r["rsize_bytes"])
    threads, reads = int(r["threads"]), int(r.get("readahead_reads") or 0)
    slots_text = f"{r['slots']} RPC slots x {size_text(read)} reads"
    ahead_text = (f"{threads} threads x {reads} readahead READs of {size_text(read)} (raise the mount's "
                  "read_ahead_kb)" if reads else f"{threads} O_DIRECT threads x {size_text(int(r['record_bytes']))}")
    ahead = threads * (reads * read if reads else int(r["record_bytes"]))
    window, text = min((int(r["slots"]) * read, slots_text), (ahead, ahead_text))
    bound = per_rtt_MBps(window, d)
    if bw > 0.7 * bound:
        return f"RPCs in flight / round trip: {text} over a {2 * d:,.0f} us round trip allow {bound:,.0f} MB/s"
    return f"the transport's per-RPC work (below the {bound:,.0f} MB/s that {text} allow over the round trip)"


PART = StudyPart("nfs", "NFS reads across the link (simulator)", run, order=40)
