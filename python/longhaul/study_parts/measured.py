"""Your measurements: real (and emulated) runs found in the store (``longhaul ingest``), one curve
per configuration that varies (never an average of two benchmarks)."""

from __future__ import annotations

from longhaul.errors import UserError
from longhaul.study import Figure, PartResult, SkipPart, StudyContext, StudyPart, Table


def run(ctx: StudyContext) -> PartResult:
    from longhaul import plots

    if ctx.store is None:
        raise SkipPart("no results store given")
    runs = [e for e in ctx.store.runs() if e["source"] in ("measured", "emu")]
    if not runs:
        raise SkipPart(f"no measured or emulated runs in store '{ctx.store.root}' "
                       "(add some with `longhaul ingest FILE --tool perftest --delay-us D --label SITE`)")
    recs = ctx.store.records([e["run_id"] for e in runs])
    out = PartResult(records=recs)
    out.tables.append(Table(f"{len(runs)} measured/emulated runs in the store",
                            [{k: e[k] for k in ("run_id", "kind", "source", "label", "n_records")} for e in runs]))
    bw = [r for r in recs if r.get("bw_MBps") is not None and r.get("size_bytes") is not None and r.get("delay_us") is not None]
    from longhaul.analysis.profiles import varying_configuration

    # One figure per tool and per configuration that varies (op, test, device, QPs, source,
    # streams, ...), one curve per delay in it: a write and a read bandwidth are never averaged
    # into one curve, nor an emulated run with a measured one.
    varying = tuple(c for c in varying_configuration(bw, "bw_MBps") if c != "tool")
    groups: dict[tuple, list[dict]] = {}
    for r in bw:
        groups.setdefault((str(r.get("tool")), *(str(r.get(c)) for c in varying)), []).append(r)
    for key, sel in sorted(groups.items()):
        tool, conf = key[0], ", ".join(f"{c} {v}" for c, v in zip(varying, key[1:]))
        stem = "_".join(x.replace("/", "-").replace(" ", "-") for x in key)
        fig = plots.bandwidth_vs_size(sel, title=f"Measured ({tool}{': ' + conf if conf else ''}): bandwidth vs size")
        out.figures.append(Figure(f"measured_{stem}_bw_vs_size", f"Measured {tool} bandwidth vs message size, one curve "
                                  f"per delay{' (' + conf + ')' if conf else ''}. {plots.coincide_note(fig)}".strip(), fig))
    delays = {float(r["delay_us"]) for r in bw}
    if len(delays) >= 2:
        from longhaul.analysis import decrease_per_mile

        try:
            rows = decrease_per_mile(bw, by=("tool", *varying, "size_bytes"))
            out.tables.append(Table("Decrease per mile of measured bandwidth (Hoeffding 95% bound, B = observed max)",
                                    [r for r in rows if r["estimate"] == "mean D"]))
        except UserError as err:
            out.notes.append(f"decrease per mile not computed: {err}")
    else:
        out.notes.append("decrease per mile needs measurements at two or more delays")
    out.commands.append("longhaul results ls --source measured")
    # The records of the table above: measured and emulated (a column that varies only among the
    # emulated ones is in the --by too, so --source measured alone named a column no record had).
    sources = ",".join(sorted({str(r.get("source")) for r in bw} or {"measured"}))
    out.commands.append(f"longhaul analyse dpm --where source={sources} "
                        f"--by {','.join(('kind', *varying, 'size_bytes'))} --bound-MBps 1000")
    return out


PART = StudyPart("measured", "Your measurements (ingested)", run, order=90)
