"""OSU micro-benchmarks output (osu_latency, osu_bw, osu_bibw, osu_mbw_mr, collectives) -> records.

Format (OSU micro-benchmarks, c/util/osu_util.c print_header/print_data and the pt2pt sources):
a title ``# OSU MPI Bandwidth Test v7.3`` (also ``# OSU MPI-CUDA ...``), optional comment lines
(``# [ pairs: 1 ] [ window size: 64 ]``, ``# Datatype: MPI_CHAR.``), a column header starting
``# Size`` followed by one of

* ``Bandwidth (MB/s)`` (osu_bw, osu_bibw; MB = 10^6 bytes: ``size / 1e6 * iterations * window / t``)
* ``Latency (us)`` (osu_latency, osu_multi_lat, one-sided latency tests)
* ``MB/s  Messages/s`` (osu_mbw_mr; ``MB/s`` alone without ``-r``)
* ``Avg Latency(us)`` and, with ``-f``, ``Min Latency(us)  Max Latency(us)  Iterations``
  (collectives: osu_bcast, osu_allreduce, osu_alltoall, ...)

then rows ``<size> <value> ...``. Lines before the title (MPI launcher noise) are skipped. A header
that does not fit the title (``Bandwidth (MB/s)`` under a ``Latency Test`` title) is rejected, and so
is a value without the two decimals OSU prints (a row cut short, ``1048576  12``).
"""

from __future__ import annotations

import re

from longhaul.ingest import BANDWIDTH, COUNT, LATENCY, MSG_RATE, SIZE, Bound, IngestError, check_value

TOOL = "osu"

_TITLE = re.compile(r"^#\s*OSU\s+(?:MPI|OpenSHMEM|UPC\+?\+?|NCCL|RCCL)?(?:-\w+)?\s+(.*?)\s+Test(?:\s+v(\S+))?\s*$", re.I)
_PAIRS = re.compile(r"pairs:\s*(\d+)")
_WINDOW = re.compile(r"window size:\s*(\d+)")
_COLUMN = re.compile(
    r"Bandwidth \(MB/s\)|Avg Latency ?\(us\)|Min Latency ?\(us\)|Max Latency ?\(us\)|Latency \(us\)"
    r"|Messages/s|MB/s|Iterations|P50 Tail Lat\(us\)|P90 Tail Lat\(us\)|P99 Tail Lat\(us\)"
)
_KEYS = {
    "Bandwidth (MB/s)": "bw_MBps", "MB/s": "bw_MBps", "Messages/s": "msg_rate_per_s",
    "Latency (us)": "lat_us", "Avg Latency(us)": "lat_us", "Avg Latency (us)": "lat_us",
    "Min Latency(us)": "lat_min_us", "Min Latency (us)": "lat_min_us",
    "Max Latency(us)": "lat_max_us", "Max Latency (us)": "lat_max_us", "Iterations": "iterations",
    "P50 Tail Lat(us)": "lat_p50_us", "P90 Tail Lat(us)": "lat_p90_us", "P99 Tail Lat(us)": "lat_p99_us",
}
_TESTS = [  # title (lower case) contains -> test name
    ("bi-directional bandwidth", "bibw"), ("multiple bandwidth", "mbw_mr"), ("bandwidth", "bw"),
    ("multi-threaded latency", "latency_mt"), ("multiple latency", "multi_lat"),
    ("broadcast", "bcast"), ("non-blocking", None), ("allreduce", "allreduce"), ("reduce-scatter", "reduce_scatter"),
    ("reduce scatter", "reduce_scatter"), ("reduce", "reduce"), ("allgatherv", "allgatherv"),
    ("allgather", "allgather"), ("gatherv", "gatherv"), ("gather", "gather"), ("all-to-allv", "alltoallv"),
    ("all-to-all", "alltoall"), ("alltoall", "alltoall"), ("scatterv", "scatterv"), ("scatter", "scatter"),
    ("barrier", "barrier"), ("latency", "latency"),
]
_ROW_START = re.compile(r"^-?\.?\d")  # a row (a negative size is a row, and rejected); not MPI's '----' lines
# a word in the title -> the column its header must have, and the headers OSU prints for it
_HEADER_OF = {
    "bandwidth": ("bw_MBps", "'Bandwidth (MB/s)' or 'MB/s  Messages/s'"),
    "latency": ("lat_us", "'Latency (us)' or 'Avg Latency(us)' (+ 'Min Latency(us)  Max Latency(us)  Iterations')"),
}
# record key -> (bound, how many of the bound's unit one printed unit is, printed unit)
_BOUNDS: dict[str, tuple[Bound, float, str | None]] = {
    "size_bytes": (SIZE, 1.0, None), "iterations": (COUNT, 1.0, None), "bw_MBps": (BANDWIDTH, 1.0, None),
    "msg_rate_per_s": (MSG_RATE, 1e-6, "messages/s"),
}
# OSU prints the size and the collectives' Iterations as integers (``%-*d``, ``%*d``/``%*lu``) and every
# other value with ``%*.*f`` and FLOAT_PRECISION decimals. OMB 7.x: c/util/osu_util.h has ``#ifndef
# FLOAT_PRECISION`` / ``#define FLOAT_PRECISION 2`` (OMB 5.x the same in mpi/pt2pt/osu_pt2pt.h);
# print_data (c/util/osu_util.c) and print_stats (c/util/osu_util_mpi.c) print latencies and tail
# latencies that way, the pt2pt sources latency and bandwidth, and osu_mbw_mr.c both MB/s and Messages/s
# (5.x and 7.x). A value with fewer decimals is a row cut while it was written (the end of a copied or
# interrupted file): '12' of '12345.67' passes every bound. More decimals are kept: the precision is a
# build-time default, so a build with -DFLOAT_PRECISION=3 prints 3.
_OSU_DECIMALS = 2
_PRINTED_VALUE = re.compile(rf"-?\d+\.\d{{{_OSU_DECIMALS},}}")
_INTEGER_COLUMNS = ("size_bytes", "iterations")
_COLLECTIVES = {"bcast", "allreduce", "reduce_scatter", "reduce", "allgatherv", "allgather", "gatherv", "gather",
                "alltoallv", "alltoall", "scatterv", "scatter", "barrier"}


def _test_of(title: str) -> str:
    t = title.lower()
    for key, name in _TESTS:
        if key in t and name:
            return name
    return re.sub(r"[^a-z0-9]+", "_", t).strip("_")


def _header_columns(body: str, name: str, lineno: int) -> tuple[list[str], list[str]]:
    """A '# Size ...' (or '# Avg Latency(us)') header -> (record keys, the header's column names)."""
    size = body.startswith("Size")
    cols, labels = (["size_bytes"], ["Size"]) if size else ([], [])
    rest = body[4:] if size else body
    pos = 0
    for cm in _COLUMN.finditer(rest):
        gap = rest[pos:cm.start()].strip()
        if gap:
            raise IngestError(TOOL, name, lineno, f"unknown column '{gap}' in the header")
        cols.append(_KEYS[cm.group(0)])
        labels.append(cm.group(0))
        pos = cm.end()
    if rest[pos:].strip():
        raise IngestError(TOOL, name, lineno, f"unknown column '{rest[pos:].strip()}' in the header")
    if len(cols) < 2 and cols != ["lat_us"]:
        raise IngestError(TOOL, name, lineno, "column header names no value column")
    return cols, labels


def _check_header_matches_title(title: tuple[int, str], cols: list[str], name: str, lineno: int) -> None:
    """A bandwidth test's header has a bandwidth column, a latency test's a latency column."""
    for word, (col, headers) in _HEADER_OF.items():
        if word in title[1].lower() and col not in cols:
            raise IngestError(TOOL, name, lineno, f"column header does not match the title '{title[1]}' on line "
                                                  f"{title[0]}: a {word} test's header has {headers}")


def _check_row(row: dict, toks: list[str], labels: list[str], name: str, lineno: int) -> None:
    for (col, value), label in zip(row.items(), labels):
        bound, per_unit, unit = _BOUNDS.get(col, (LATENCY, 1.0, None))  # the other columns are latencies
        check_value(TOOL, name, lineno, label, value, bound, per_unit=per_unit, unit=unit)
    # After the bounds, so that an impossible value (nan, -3) is named as that, not as its decimals.
    for col, tok, label in zip(row, toks, labels):
        if col not in _INTEGER_COLUMNS and not _PRINTED_VALUE.fullmatch(tok):
            raise IngestError(TOOL, name, lineno, f"{label} '{tok}' does not have the {_OSU_DECIMALS} decimals OSU "
                                                  f"prints every value with (like {float(tok):.{_OSU_DECIMALS}f}); "
                                                  "is the row cut short?")


def parse(text: str, name: str = "<text>") -> list[dict]:
    ctx: dict = {"tool": TOOL}
    records: list[dict] = []
    cols: list[str] | None = None
    labels: list[str] = []
    title_at = (0, "")
    header_line = 0
    first_content = 0
    seen_sizes: dict = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        s = raw.strip()
        if not s:
            continue
        first_content = first_content or lineno
        if s.startswith("#"):
            m = _TITLE.match(s)
            if m:
                if title_at[0]:
                    # One run is one benchmark at one delay: a second block (another benchmark, or
                    # `sim mpi osu --format osu` with several delays) would merge into it.
                    raise IngestError(TOOL, name, lineno, f"a second '# OSU ... Test' block (the first starts on line "
                                                          f"{title_at[0]}): ingest one benchmark run, at one delay, "
                                                          "per file (split the file)")
                test = _test_of(m.group(1))
                ctx.update(benchmark=f"OSU {m.group(1)}", test=test,
                           pattern="collective" if test in _COLLECTIVES else "pt2pt")
                if m.group(2):
                    ctx["osu_version"] = m.group(2)
                cols, title_at = None, (lineno, s.lstrip("#").strip())
                continue
            if (pm := _PAIRS.search(s)):
                ctx["pairs"] = int(pm.group(1))
            if (wm := _WINDOW.search(s)):
                ctx["window"] = int(wm.group(1))
            body = s.lstrip("#").strip()
            if body.startswith("Size") or body.startswith("Avg Latency"):
                if "benchmark" not in ctx:
                    raise IngestError(TOOL, name, lineno, "column header before any '# OSU ... Test' title line")
                cols, labels = _header_columns(body, name, lineno)
                _check_header_matches_title(title_at, cols, name, lineno)
                header_line = lineno
            continue
        if cols is None:
            continue  # launcher noise before the table
        if not _ROW_START.match(s):
            continue  # warnings interleaved by the MPI library
        toks = s.split()
        if len(toks) != len(cols):
            raise IngestError(TOOL, name, lineno,
                              f"row has {len(toks)} fields, the header on line {header_line} has {len(cols)}")
        try:
            vals = [int(t) if c in _INTEGER_COLUMNS else float(t) for c, t in zip(cols, toks)]
        except ValueError:
            raise IngestError(TOOL, name, lineno, f"row '{s}' has a field that is not a number") from None
        row = dict(zip(cols, vals))
        _check_row(row, toks, labels, name, lineno)
        if (first := seen_sizes.setdefault(row.get("size_bytes"), lineno)) != lineno:
            raise IngestError(TOOL, name, lineno, f"size {row['size_bytes']} again (first on line {first}): "
                                                  "OSU prints each size once per run")
        rec = {**ctx, **row}
        if "msg_rate_per_s" in rec:
            rec["msg_rate_Mps"] = rec.pop("msg_rate_per_s") / 1e6
        if "bw_MBps" in rec:
            rec["unit_note"] = "OSU MB/s is 10^6 bytes/s (size / 1e6 * iterations / time); used as is"
            if rec.get("test") == "bibw":
                rec["unit_note"] += "; bibw is the sum of both directions"
        records.append(rec)
    if "benchmark" not in ctx:
        raise IngestError(TOOL, name, first_content or 1,
                          "no '# OSU MPI ... Test' title line found; is this OSU micro-benchmarks output?")
    if header_line == 0:
        raise IngestError(TOOL, name, first_content or 1, "no '# Size ...' column header found")
    if not records:
        raise IngestError(TOOL, name, header_line, "column header with no result rows under it")
    return records
