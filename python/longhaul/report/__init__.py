"""The study report: one self-contained static HTML page (figures embedded as base64 PNG, no
external files, scripts or fonts) and a Markdown summary for the terminal."""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Sequence

CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;
color:#1d1d1f;background:#fff;line-height:1.45}
h1{font-size:1.7em;margin-bottom:.2em}h2{border-bottom:2px solid #d0d7de;padding-bottom:.2em;margin-top:2em}
h3{margin-top:1.4em}.meta{color:#57606a;font-size:.92em}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.86em}
th,td{border:1px solid #d0d7de;padding:.25em .55em;text-align:right;vertical-align:top;overflow-wrap:anywhere}
th{background:#f3f5f7}td.t{text-align:left;max-width:420px}
table.summary-layers{width:100%;font-size:.9em}table.summary-layers td,table.summary-layers th{text-align:left}
th{overflow-wrap:normal}
table.summary-layers td:last-child{max-width:300px}code{font-size:.92em;overflow-wrap:anywhere}
ol.refs li{margin:.3em 0}
.ok{color:#116329;font-weight:600}.skipped{color:#7d4e00;font-weight:600}.failed{color:#a40e26;font-weight:600}
tr.pass td.v{background:#dafbe1}tr.fail td.v{background:#ffebe9}tr.na td.v{background:#f6f8fa}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #eaeef2}figcaption{color:#57606a;font-size:.9em}
pre{background:#f6f8fa;padding:.7em;overflow-x:auto;font-size:.88em}
.summary td{text-align:left}
details summary{cursor:pointer;color:#57606a}details[open] summary{display:none}
"""


def _fmt(v) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        if v.is_integer() and abs(v) < 1e15:
            return f"{int(v):,}" if abs(v) >= 10000 else str(int(v))
        return f"{v:.4g}" if abs(v) < 1e5 else f"{v:,.0f}"
    if isinstance(v, int):
        return f"{v:,}" if abs(v) >= 10000 else str(v)
    return str(v)


def _pct(v) -> str:
    return "—" if v is None else f"{100 * v:+.1f}%"


def _is_text(v) -> bool:
    return isinstance(v, str)


def html_table(rows: Sequence[dict], columns: Sequence[str] | None = None, max_rows: int = 400) -> str:
    if not rows:
        return "<p class='meta'>(no rows)</p>"
    cols = list(columns) if columns else list(dict.fromkeys(k for r in rows for k in r))
    out = ["<table><thead><tr>", *(f"<th>{html.escape(c)}</th>" for c in cols), "</tr></thead><tbody>"]
    for r in rows[:max_rows]:
        out.append("<tr>")
        for c in cols:
            v = r.get(c)
            text = _pct(v) if c.endswith("rel_err") and isinstance(v, (int, float)) else _fmt(v)
            out.append(f"<td{' class=t' if _is_text(v) else ''}>{html.escape(text)}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    if len(rows) > max_rows:
        out.append(f"<p class='meta'>{len(rows) - max_rows} more rows in records.csv</p>")
    return "".join(out)


#: A validation detail longer than this (a known gap's whole explanation) is folded behind its
#: beginning, so one row does not fill the page.
DETAIL_SHOWN_CHARS = 240


def _folded(text: str) -> str:
    """``text`` as a <details> element whose summary is its beginning, cut at a word."""
    head = text[:DETAIL_SHOWN_CHARS].rsplit(" ", 1)[0]
    return f"<details><summary>{html.escape(head)} …</summary>{html.escape(text)}</details>"


def verdict(row: dict, unchecked: str) -> str:
    """PASS, FAIL, FAIL (known gap) for a point the model is known not to reproduce yet, or
    ``unchecked``."""
    passed = row.get("passed")
    if passed is None:
        return unchecked
    return "PASS" if passed else "FAIL (known gap)" if row.get("known_gap") else "FAIL"


def validation_table(rows: Sequence[dict]) -> str:
    cols = ("id", "source", "what", "expected", "model", "rel_err", "passed", "detail")
    out = ["<table class='validation'><thead><tr>", *(f"<th>{c}</th>" for c in cols), "</tr></thead><tbody>"]
    for r in rows:
        passed = r.get("passed")
        cls = "pass" if passed is True else "fail" if passed is False else "na"
        out.append(f"<tr class='{cls}'>")
        for c in cols:
            v = r.get(c)
            if c == "passed":
                out.append(f"<td class='v'>{verdict(r, 'not checked')}</td>")
            elif c == "rel_err":
                out.append(f"<td>{html.escape(_pct(v) if isinstance(v, (int, float)) else _fmt(v))}</td>")
            elif c == "source" and reference_key(v):
                out.append(f"<td class=t><a href='#ref-{reference_key(v)}'>{html.escape(str(v))}</a></td>")
            elif c == "detail" and isinstance(v, str) and len(v) > DETAIL_SHOWN_CHARS:
                out.append(f"<td class=t>{_folded(v)}</td>")
            else:
                out.append(f"<td{' class=t' if _is_text(v) else ''}>{html.escape(_fmt(v))}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _figure(fig) -> str:
    from longhaul.plots import png_bytes

    data = base64.b64encode(fig.png or png_bytes(fig.fig)).decode("ascii")
    return (f"<figure><img alt='{html.escape(fig.caption)}' src='data:image/png;base64,{data}'>"
            f"<figcaption>{html.escape(fig.caption)} (also figures/{html.escape(fig.name)}.png and .svg)</figcaption></figure>")


def _references() -> dict[str, dict]:
    import tomllib
    from pathlib import Path

    with (Path(__file__).parent / "references.toml").open("rb") as f:
        return tomllib.load(f)


def reference_key(source: object) -> str | None:
    """The published source a validation row cites ('S1 section 3.2, Fig 2(a)' -> 'S1')."""
    head = str(source or "").split(" ", 1)[0].strip("[],")
    return head if head in _references() else None


def references_html() -> str:
    """Every published source the validation compares with, in full."""
    refs = _references()
    items = "".join(f"<li id='ref-{k}'><b>[{k}]</b> {html.escape(refs[k]['authors'])}, "
                    f"&ldquo;{html.escape(refs[k]['title'])}&rdquo;, {html.escape(refs[k]['venue'])}. "
                    f"<span class='meta'>{html.escape(refs[k]['testbed'])}</span></li>" for k in refs)
    return f"<h3>References</h3><ol class='refs'>{items}</ol>"


def _gain(v) -> str:
    return "—" if v is None else f"{v:+.0f}%"


def summary_html(study) -> str:
    """The site in two sentences, then one row per layer: what it gets at the planned distance,
    what limits it, the change that helps, its predicted gain and the command to reproduce it."""
    site = study.ctx.site
    a, b = site.clusters
    link = (f"IP routers ({site.link['routers']}" + (f" at {site.link['rate_gbps']:g} Gb/s" if "rate_gbps" in site.link
                                                     else "") + ")" if site.ip else
            f"{site.link.get('wan_links', 1)} x {site.link['extender']} range extender link(s)")
    out = [f"<h2>Summary for the site</h2><p>{html.escape(site.description)}" if site.description else
           "<h2>Summary for the site</h2><p>"]
    out.append(f" {html.escape(a.name)} ({a.nodes} nodes x {a.cores_per_node} cores) and {html.escape(b.name)} "
               f"({b.nodes} nodes x {b.cores_per_node} cores), joined by {html.escape(link)}, planned at "
               f"<b>{site.planned_km:,.6g} km</b> ({site.planned_delay_us:,.6g} us one way); hardware profile "
               f"<code>{html.escape(site.profile)}</code> (site file <code>{html.escape(site.path)}</code>).</p>")
    rows = [r for o in study.outcomes for r in o.result.summary]
    if not rows:
        out.append("<p class='meta'>No layer ran (see the appendix for each part's status).</p>")
        return "".join(out)
    out.append("<table class='summary-layers'><thead><tr><th>layer</th><th>at the planned distance</th>"
               "<th>limited by</th><th>change that helps</th><th>predicted gain</th><th>reproduce</th></tr></thead><tbody>")
    for r in rows:
        out.append(f"<tr><td class=t>{html.escape(r.layer)}</td><td class=t>{html.escape(r.gets)}</td>"
                   f"<td class=t>{html.escape(r.limited_by)}</td><td class=t>{html.escape(r.change or '—')}</td>"
                   f"<td>{_gain(r.gain_pct)}</td><td class=t><code>{html.escape(r.command)}</code></td></tr>")
    out.append("</tbody></table>")
    return "".join(out)


def render_html(study) -> str:
    o_all = study.outcomes
    site = study.ctx.site
    parts = []
    parts.append("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
                 "<meta name='viewport' content='width=device-width, initial-scale=1'>"
                 f"<title>longhaul study — {html.escape(site.name)}</title><style>{CSS}</style></head><body>")
    parts.append(f"<h1>{html.escape(site.name)}</h1>")
    parts.append(f"<p class='meta'>longhaul study · {html.escape(study.started_utc)} · {html.escape(study.version)} · "
                 f"host {html.escape(str(study.host.get('hostname')))} ({html.escape(str(study.host.get('cpus')))} cores) · "
                 f"{study.seconds:.1f} s · {html.escape(_scope(study))} · "
                 "bandwidths in MB/s with MB = 10<sup>6</sup> bytes; delays are one way, 5 us per km of fibre</p>")
    parts.append(summary_html(study))
    advice = [a for o in o_all for a in o.result.advice]
    if advice:
        parts.append("<h3>More advice from the model</h3><ul>" + "".join(f"<li>{html.escape(a)}</li>" for a in advice)
                     + "</ul>")
    # figures, part by part
    parts.append("<h2>Figures</h2>")
    for o in o_all:
        if not o.result.figures:
            continue
        parts.append(f"<h3>{html.escape(o.part.title)}</h3>")
        for f in o.result.figures:
            parts.append(_figure(f))
    # validation
    vrows = [r for o in o_all for r in o.result.validation]
    parts.append("<h2>Validation: every published point</h2>")
    if vrows:
        n_pass = sum(1 for r in vrows if r.get("passed") is True)
        n_fail = sum(1 for r in vrows if r.get("passed") is False)
        parts.append(f"<p>{n_pass} pass, {n_fail} fail, {len(vrows) - n_pass - n_fail} not checked yet "
                     f"(of {len(vrows)} points). Sources are cited in full below the table.</p>")
        parts.append(validation_table(vrows))
        parts.append(references_html())
    else:
        parts.append("<p class='meta'>No validation rows (the validation part was skipped; see the appendix).</p>")
        parts.append(references_html())
    # appendix
    parts.append("<h2>Appendix</h2><h3>Parts</h3><table class='summary'><thead><tr><th>part</th><th>status</th>"
                 "<th>time</th><th>points</th><th>reason / notes</th></tr></thead><tbody>")
    for o in o_all:
        pts = f"{o.result.computed} computed, {o.result.cached} cached" if (o.result.computed or o.result.cached) else ""
        notes = o.reason or "; ".join(o.result.notes)
        parts.append(f"<tr><td class=t>{html.escape(o.part.title)} <span class='meta'>({html.escape(o.part.name)})</span></td>"
                     f"<td class='{o.status}'>{o.status}</td><td>{o.seconds:.1f} s</td><td>{pts}</td>"
                     f"<td class=t>{html.escape(notes)}</td></tr>")
    parts.append("</tbody></table>")
    for o in o_all:
        if o.status != "ok":
            parts.append(f"<h3>{html.escape(o.part.title)} <span class='{o.status}'>[{o.status}]</span></h3>")
            parts.append(f"<p><b>{'Skipped' if o.status == 'skipped' else 'Failed'}:</b> {html.escape(o.reason)}</p>")
            if o.status == "failed" or not o.result.tables:
                continue
        for t in o.result.tables:
            parts.append(f"<h3>{html.escape(t.caption)}</h3>")
            parts.append(html_table(t.rows, t.columns))
        for n in o.result.notes:
            parts.append(f"<p class='meta'>{html.escape(n)}</p>")
    # reproduce
    cmds = [study.command] + [c for o in o_all for c in o.result.commands if c != study.command]
    cmds += [r.command for o in o_all for r in o.result.summary if r.command]
    parts.append("<h3>Reproduce</h3><p>From the repository root (scripts/bootstrap.sh sets up the environment):</p>")
    parts.append("<pre>" + html.escape("source scripts/bootstrap.sh\n" + "\n".join(dict.fromkeys(cmds))) + "</pre>")
    parts.append("</body></html>\n")
    return "".join(parts)


def _md_table(rows: Sequence[dict], columns: Sequence[str] | None = None, max_rows: int = 30) -> str:
    if not rows:
        return ""
    cols = list(columns) if columns else list(dict.fromkeys(k for r in rows for k in r))
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for r in rows[:max_rows]:
        cells = []
        for c in cols:
            v = r.get(c)
            cells.append(_pct(v) if c.endswith("rel_err") and isinstance(v, (int, float)) else _fmt(v))
        lines.append("| " + " | ".join(s.replace("|", "/") for s in cells) + " |")
    if len(rows) > max_rows:
        lines.append(f"\n({len(rows) - max_rows} more rows in the HTML report)")
    return "\n".join(lines)


def _scope(study) -> str:
    """'quick matrix' or 'full matrix', and the parts run when not all were."""
    from longhaul.study import all_parts

    matrix = "quick matrix" if study.ctx.quick else "full matrix"
    names = [o.part.name for o in study.outcomes]
    return matrix if len(names) == len(all_parts()) else f"{matrix}, parts {', '.join(names)}"


def summary_markdown(study) -> list[str]:
    """The report's summary as Markdown lines: one bullet per layer."""
    site = study.ctx.site
    lines = [f"## Summary for {site.name} (planned: {site.planned_km:,.6g} km, {site.planned_delay_us:,.6g} us one way)",
             ""]
    rows = [r for o in study.outcomes for r in o.result.summary]
    for r in rows:
        change = f" Change: {r.change} ({_gain(r.gain_pct)})." if r.change else ""
        lines.append(f"- **{r.layer}**: {r.gets}; limited by {r.limited_by}.{change} `{r.command}`")
    if not rows:
        lines.append("- no layer ran")
    return lines


def render_markdown(study) -> str:
    o_all = study.outcomes
    lines = [f"# longhaul study ({study.started_utc}, {_scope(study)}, {study.seconds:.1f} s)", ""]
    lines += summary_markdown(study)
    lines += ["", "## Parts"]
    for o in o_all:
        extra = o.reason or "; ".join(o.result.notes)
        pts = f" — {o.result.computed} computed, {o.result.cached} cached" if (o.result.computed or o.result.cached) else ""
        lines.append(f"- **{o.part.name}**: {o.status}{pts}{(' — ' + extra) if extra else ''}")
    vrows = [r for o in o_all for r in o.result.validation]
    if vrows:
        n_pass = sum(1 for r in vrows if r.get("passed") is True)
        n_fail = sum(1 for r in vrows if r.get("passed") is False)
        n_gaps = sum(1 for r in vrows if r.get("passed") is False and r.get("known_gap"))
        gaps = f" ({n_gaps} known gap{'s' if n_gaps > 1 else ''})" if n_gaps else ""
        lines += ["", f"## Validation: {n_pass} pass, {n_fail} fail{gaps}, {len(vrows) - n_pass - n_fail} not checked",
                  ""]
        lines.append(_md_table([{**r, "passed": verdict(r, "-")} for r in vrows],
                               ("id", "expected", "model", "rel_err", "passed")))
    for o in o_all:
        for t in o.result.tables:
            if "vs published" in t.caption:
                lines += ["", f"## {t.caption}", "", _md_table(t.rows, t.columns)]
    advice = [a for o in o_all for a in o.result.advice]
    if advice:
        lines += ["", "## Tuning advice", ""] + [f"- {a}" for a in advice]
    return "\n".join(lines) + "\n"
