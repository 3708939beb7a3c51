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
th,td{border:1px solid #d0d7de;padding:.25em .55em;text-align:right;vertical-align:top}
th{background:#f3f5f7}td.t{text-align:left;max-width:420px}
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


def render_html(study) -> str:
    o_all = study.outcomes
    parts = []
    parts.append("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
                 "<meta name='viewport' content='width=device-width, initial-scale=1'>"
                 f"<title>longhaul study — {html.escape(study.started_utc)}</title><style>{CSS}</style></head><body>")
    parts.append("<h1>longhaul study: HPC communication between clusters over long-haul links</h1>")
    parts.append(f"<p class='meta'>{html.escape(study.started_utc)} · {html.escape(study.version)} · "
                 f"host {html.escape(str(study.host.get('hostname')))} ({html.escape(str(study.host.get('cpus')))} cores) · "
                 f"{study.seconds:.1f} s · {html.escape(_scope(study))} · "
                 "bandwidths in MB/s with MB = 10<sup>6</sup> bytes; delay is one-way, 5 us per km of fibre</p>")
    # summary of parts
    parts.append("<h2>Parts</h2><table class='summary'><thead><tr><th>part</th><th>status</th><th>time</th>"
                 "<th>points</th><th>reason / notes</th></tr></thead><tbody>")
    for o in o_all:
        pts = f"{o.result.computed} computed, {o.result.cached} cached" if (o.result.computed or o.result.cached) else ""
        notes = o.reason or "; ".join(o.result.notes)
        parts.append(f"<tr><td>{html.escape(o.part.title)} <span class='meta'>({html.escape(o.part.name)})</span></td>"
                     f"<td class='{o.status}'>{o.status}</td><td>{o.seconds:.1f} s</td><td>{pts}</td>"
                     f"<td>{html.escape(notes)}</td></tr>")
    parts.append("</tbody></table>")
    # validation
    vrows = [r for o in o_all for r in o.result.validation]
    parts.append("<h2>Validation: every published point</h2>")
    if vrows:
        n_pass = sum(1 for r in vrows if r.get("passed") is True)
        n_fail = sum(1 for r in vrows if r.get("passed") is False)
        parts.append(f"<p>{n_pass} pass, {n_fail} fail, {len(vrows) - n_pass - n_fail} not checked yet "
                     f"(of {len(vrows)} points).</p>")
        parts.append(validation_table(vrows))
    else:
        parts.append("<p class='meta'>No validation rows (the validation part was skipped; see Parts).</p>")
    # tuning advice
    advice = [a for o in o_all for a in o.result.advice]
    parts.append("<h2>Tuning advice</h2>")
    parts.append("<ul>" + "".join(f"<li>{html.escape(a)}</li>" for a in advice) + "</ul>" if advice
                 else "<p class='meta'>No advice: no model part ran.</p>")
    # each part
    for o in o_all:
        parts.append(f"<h2>{html.escape(o.part.title)} <span class='{o.status}'>[{o.status}]</span></h2>")
        if o.status != "ok":
            parts.append(f"<p><b>{'Skipped' if o.status == 'skipped' else 'Failed'}:</b> {html.escape(o.reason)}</p>")
            if o.status == "failed" or not (o.result.figures or o.result.tables):
                continue
        for f in o.result.figures:
            parts.append(_figure(f))
        for t in o.result.tables:
            parts.append(f"<h3>{html.escape(t.caption)}</h3>")
            parts.append(html_table(t.rows, t.columns))
        for n in o.result.notes:
            parts.append(f"<p class='meta'>{html.escape(n)}</p>")
    # reproduce
    cmds = [study.command] + [c for o in o_all for c in o.result.commands if c != study.command]
    parts.append("<h2>Reproduce</h2><p>From the repository root (scripts/bootstrap.sh sets up the environment):</p>")
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
    from longhaul.study import PARTS

    matrix = "quick matrix" if study.ctx.quick else "full matrix"
    names = [o.part.name for o in study.outcomes]
    return matrix if len(names) == len(PARTS) else f"{matrix}, parts {', '.join(names)}"


def render_markdown(study) -> str:
    o_all = study.outcomes
    lines = [f"# longhaul study ({study.started_utc}, {_scope(study)}, {study.seconds:.1f} s)", ""]
    lines.append("## Parts")
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
            if "vs published" in t.caption or "Peak bandwidth" in t.caption:
                lines += ["", f"## {t.caption}", "", _md_table(t.rows, t.columns)]
    advice = [a for o in o_all for a in o.result.advice]
    if advice:
        lines += ["", "## Tuning advice", ""] + [f"- {a}" for a in advice]
    return "\n".join(lines) + "\n"
