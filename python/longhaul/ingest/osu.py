"""OSU micro-benchmarks output (osu_latency, osu_bw, osu_bibw, osu_mbw_mr, collectives) -> records.

Format (OSU micro-benchmarks, c/util/osu_util.c print_header/print_data and the pt2pt sources):
a title ``# OSU MPI Bandwidth Test v7.3`` (also ``# OSU MPI-CUDA ...``), optional comment lines
(``# [ pairs: 1 ] [ window size: 64 ]``, ``# Datatype: MPI_CHAR.``), a column header starting
``# Size`` followed by one of

* ``Bandwidth (MB/s)`` (osu_bw, osu_bibw; MB = 10^6 bytes: ``size / 1e6 * iterations * window / t``)
* ``Latency (us)`` (osu_latency, osu_multi_lat, osu_latency_mt, osu_latency_mp)
* ``MB/s  Messages/s`` (osu_mbw_mr; ``MB/s`` alone without ``-r``)
* ``Avg Latency(us)`` and, with ``-f``, ``Min Latency(us)  Max Latency(us)  Iterations``
  (collectives: osu_bcast, osu_allreduce, osu_alltoall, ...)

then rows ``<size> <value> ...``. Lines before the title (MPI launcher noise) are skipped. A header
that does not fit the title (``Bandwidth (MB/s)`` under a ``Latency Test`` title) is rejected, and so
is a value without the two decimals OSU prints (a row cut short, ``1048576  12``). One file is one run:
a second title, header (but a later -T datatype's), datatype table, -D preamble or size is refused. The
one-sided tests (``# OSU MPI_Put Latency Test``) are refused as not supported (see _ONE_SIDED).

What real OMB versions print besides that (sources read, cited where the rule is):

* ``-c`` (validation, OMB 6.x/7.x) adds a last ``Validation`` column of ``Pass``/``Fail``
  (``VALIDATION_STATUS`` in c/util/osu_util_mpi.h); kept as ``validation_passed``. A ``Fail`` row
  is refused: OMB stops the sweep at that size and exits 1 (``DATA VALIDATION ERROR``).
* osu_mbw_mr prints its title twice in the 2020+ sources (``HEADER`` and then ``print_header``), the
  second time followed by an empty line in 6.x/7.x; the identical mbw_mr title again before any
  column header is that, not a second block.
* osu_mbw_mr ``-V`` (window varied) prints no ``# Size`` header but one table per quantity,
  ``# Uni-directional Bandwidth (MB/sec)`` and ``# Message Rate Profile``, each headed by the
  window sizes (``#      ``, then ``  %10d`` per window) and rows ``%-7d`` + ``  %10.2f`` per window;
  one record per size and window (``window_msgs``).
* ``-T``/``--type`` (OMB 7.x; ``all`` = MPI_CHAR, MPI_INT, MPI_FLOAT) runs the sweep once per datatype,
  each table after ``# Datatype: <name>.``; kept per record as ``datatype``. See _DATATYPE below.
* ``-D``/``--ddt`` (derived datatypes, OMB 7.x) adds a last ``Transmit Size`` column, kept as
  ``ddt_transmit_size_bytes``; see _TRANSMIT below.
* The title's version is ``vX.Y`` (``"# " BENCHMARK " v" PACKAGE_VERSION``; none when built without
  PACKAGE_VERSION; ``v3.1.2`` from OMB_VERSION in 3.x) or, from ``longhaul.osu_text``,
  ``(longhaul <version> model of OMB)``; either is kept as ``osu_version``.
"""

from __future__ import annotations

import re

from longhaul.ingest import BANDWIDTH, COUNT, LATENCY, MSG_RATE, SIZE, Bound, IngestError, check_value

TOOL = "osu"

# The version after "Test": OMB's "vX.Y" (``HEADER`` = "# " BENCHMARK " v" PACKAGE_VERSION), or the
# "(longhaul <version> <what> of OMB)" of longhaul.osu_text's own OSU-style text.
_TITLE = re.compile(r"^#\s*OSU\s+(?:MPI|OpenSHMEM|UPC\+?\+?|NCCL|RCCL)?(?:-\w+)?\s+(.*?)\s+Test"
                    r"(?:\s+v(\S+)|\s+\((longhaul [^()]+ of OMB)\))?\s*$", re.I)
_PAIRS = re.compile(r"pairs:\s*(\d+)")
_WINDOW = re.compile(r"window size:\s*(\d+)")
_COLUMN = re.compile(
    r"Bandwidth \(MB/s\)|Avg Latency ?\(us\)|Min Latency ?\(us\)|Max Latency ?\(us\)|Latency \(us\)"
    r"|Messages/s|MB/s|Iterations|P50 Tail Lat\(us\)|P90 Tail Lat\(us\)|P99 Tail Lat\(us\)|Validation"
    r"|Transmit Size"
)
_KEYS = {
    "Bandwidth (MB/s)": "bw_MBps", "MB/s": "bw_MBps", "Messages/s": "msg_rate_per_s",
    "Latency (us)": "lat_us", "Avg Latency(us)": "lat_us", "Avg Latency (us)": "lat_us",
    "Min Latency(us)": "lat_min_us", "Min Latency (us)": "lat_min_us",
    "Max Latency(us)": "lat_max_us", "Max Latency (us)": "lat_max_us", "Iterations": "iterations",
    "P50 Tail Lat(us)": "lat_p50_us", "P90 Tail Lat(us)": "lat_p90_us", "P99 Tail Lat(us)": "lat_p99_us",
    "Validation": "validation_passed", "Transmit Size": "ddt_transmit_size_bytes",
}
# OMB 6.x/7.x with -c: a "Validation" column after the numbers, ``%*s`` of VALIDATION_STATUS(errors),
# defined in c/util/osu_util_mpi.h as (error > 0) ? "Fail" : "Pass" (yqin/osu-micro-benchmarks,
# c/util/osu_util_mpi.h; printed by c/mpi/pt2pt/standard/osu_latency.c, osu_bw.c, osu_mbw_mr.c and
# print_stats_validate in c/util/osu_util_mpi.c). After a Fail the benchmark stops ("if (0 != errors)
# break;") and exits 1 with "DATA VALIDATION ERROR: ... on message size N.": a failed run.
_VALIDATION = "validation_passed"
_VALIDATION_VALUES = {"Pass": True, "Fail": False}
# OMB 7.x -T/--type and -D/--ddt. Sources read (layout only, nothing copied): yqin/osu-micro-benchmarks at
# commit b7fc8c5 (OMB 7.x sources, copyright 2002-2023): c/mpi/pt2pt/standard/osu_bw.c, osu_latency.c,
# osu_mbw_mr.c, c/mpi/collective/blocking/osu_bcast.c, osu_allreduce.c, c/util/osu_util.c (print_header,
# process_options) and c/util/osu_util_mpi.c (print_only_header, print_preamble, print_stats,
# omb_ddt_append_stats, omb_ddt_assign); johnpzh/osu-micro-benchmarks-7.4-ext at commit 6a641d0 (OMB 7.4)
# c/util/osu_util.c and c/util/osu_util_mpi.c for what 7.4 changed.
# * -T: the benchmark loops over the datatypes; each table starts with "# Datatype: %s." (the name from
#   MPI_Type_get_name: MPI_CHAR, MPI_INT, MPI_FLOAT). pt2pt benchmarks print the "# Size" header once
#   before the first "# Datatype:" line and call print_only_header after the later ones; collectives call
#   print_only_header after every one. Sizes stay in bytes, and a size smaller than one element of the
#   datatype is skipped (num_elements == 0), so MPI_INT's table starts at 4. In the b7fc8c5 sources
#   print_only_header heads every later table "# Size  Avg Latency(us)" (+ Validation, + Transmit Size),
#   even osu_bw's and osu_mbw_mr's bandwidth tables, whose rows stay those of the first header; the 7.4
#   sources print the benchmark's own columns there. So a later table's header must name the first
#   table's columns, or be that mislabel.
_DATATYPE = re.compile(r"^#\s*Datatype:\s*(.*?)\.?\s*$")
_MPI_TYPE_NAME = re.compile(r"MPI_[A-Z0-9_]+")
# * -D cont|vect:STRIDE:BLOCK|indx:FILE: the message is one derived datatype built over size/type_size
#   elements; a last column "Transmit Size" (header "%*s", rows "%*zu", an integer) holds the bytes it
#   actually moves: omb_ddt_assign's element count x the type size (cont: all of them; vect:
#   (count / stride) x block_length, so it can be 0; indx: the block lengths in the file, whatever the
#   size). osu_bw then computes MB/s from it (transmit / 1e6 * iterations * window / time) and
#   osu_mbw_mr its rate (1e6 * MB/s / transmit), not from "Size"; latencies are time and unchanged. OMB
#   refuses -c with -D ("Derived data type does not support validation"), so no header has both.
_TRANSMIT = "ddt_transmit_size_bytes"
# * -T skips a size that holds no whole element of the datatype ("num_elements = size / mpi_type_size; if (0 ==
#   num_elements) continue;" in osu_latency.c, osu_bw.c, osu_multi_lat.c, osu_mbw_mr.c), so no table has a row
#   below one element: MPI_INT's starts at 4 and even MPI_CHAR's has no size 0. The element sizes of the
#   datatypes -T takes (mpi_char, mpi_int, mpi_float; MPI_Type_size):
_ELEMENT_BYTES = {"MPI_CHAR": 1, "MPI_INT": 4, "MPI_FLOAT": 4}
# * -D in OMB 7.0-7.3: print_header (c/util/osu_util.c) starts a pt2pt benchmark's output (osu_mbw_mr's: between
#   its two titles) with "# Set Derived DataTypes block_length to %zu, stride to %zu", the vect parameters (for
#   cont and indx the defaults OMB_DDT_BLOCK_LENGTH_DEFAULT 4 and OMB_DDT_STRIDE_DEFAULT 8: the line does not name
#   the type). Collectives print no such line, nor does OMB 7.4 (its print_header has none); there the
#   "Transmit Size" column is the only sign of -D. Every record keeps ``ddt``, a configuration column: "none",
#   "derived" (a Transmit Size column, no preamble) or "derived:block_length=B:stride=S" (the preamble), so a
#   run with -D is never averaged with one without, nor with one of other parameters.
_DDT_PREAMBLE = re.compile(r"^#\s*Set Derived DataTypes\b\s*(.*?)\s*$", re.I)
_DDT_PARAMETERS = re.compile(r"block_length to (\d+), stride to (\d+)")
# One-sided (MPI RMA) benchmarks, "# OSU MPI_Put Latency Test" (BENCHMARK "OSU MPI_Put%s Latency Test" in
# c/mpi/one-sided/osu_put_latency.c; MPI_Get, MPI_Accumulate, MPI_Get_accumulate, MPI_Compare_and_swap,
# MPI_Fetch_and_op): print_header_one_sided adds the window creation and synchronization (-w, -s), which set
# what is measured. Not ingested: those would have to be configuration columns, or a put_latency with a fence
# per operation would be averaged with one that flushes.
_ONE_SIDED = re.compile(r"^#\s*OSU\s+MPI_([A-Za-z_]+?)(?:-\w+)?\s+(.*?)\s*Test\b", re.I)
# The test name says which benchmark measured the records: records with different names are never averaged
# as repeats (``test`` is a configuration column), so each OMB benchmark has its own. Titles (the BENCHMARK
# string of each source): "Multi Latency" (osu_multi_lat, several pairs at once), "Multi-threaded Latency"
# (osu_latency_mt), "Multi-process Latency" (osu_latency_mp) are not osu_latency.
_TESTS = [  # title (lower case) contains -> test name
    ("bi-directional bandwidth", "bibw"), ("multiple bandwidth", "mbw_mr"), ("bandwidth", "bw"),
    ("multi-threaded latency", "latency_mt"), ("multi-process latency", "latency_mp"),
    ("multiple latency", "multi_lat"), ("multi latency", "multi_lat"),
    ("broadcast", "bcast"), ("allreduce", "allreduce"), ("reduce-scatter", "reduce_scatter"),
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
    "msg_rate_per_s": (MSG_RATE, 1e-6, "messages/s"), _TRANSMIT: (SIZE, 1.0, None),
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
_INTEGER_COLUMNS = ("size_bytes", "iterations", _TRANSMIT)
# osu_mbw_mr -V ("[ window size: varied ]"): no "# Size" header; a table per quantity, each after its
# title line and headed by the window sizes ("#      " then "  %10d" per window), rows "%-7d" then
# "  %10.*f" (bandwidth) or "  %10.2f" (rate) per window. Sources: yqin/osu-micro-benchmarks
# c/mpi/pt2pt/standard/osu_mbw_mr.c (7.x) and c/mpi/pt2pt/osu_mbw_mr.c (6.x), qzan9/osu-micro-benchmarks
# mpi/pt2pt/osu_mbw_mr.c (5.x), grondo/mvapich-cce osu_benchmarks/osu_mbw_mr.c (3.x, MVAPICH's copy).
_VARIED = re.compile(r"window size:\s*varied")
_MATRIX_TABLES = {"Uni-directional Bandwidth (MB/sec)": "bw_MBps", "Message Rate Profile": "msg_rate_per_s"}
_WINDOW_HEADER = re.compile(r"\d+(?:\s+\d+)*")
_COLLECTIVES = {"bcast", "allreduce", "reduce_scatter", "reduce", "allgatherv", "allgather", "gatherv", "gather",
                "alltoallv", "alltoall", "scatterv", "scatter", "barrier"}


# Words of a title that make another benchmark of the same operation, and how OMB names it: osu_ibcast
# ("Non-blocking Broadcast"), osu_neighbor_alltoall ("Neighbor Alltoall"), osu_latency_persistent ("Latency
# Persistent"). Without them a non-blocking or persistent run would be filed, and averaged, as the blocking one.
_QUALIFIERS = (("non-blocking", "i", ""), ("neighbor", "neighbor_", ""), ("persistent", "", "_persistent"))


def _test_of(title: str) -> tuple[str, bool]:
    """A title's test name (OMB's program name without osu_) and whether it is a collective."""
    t = title.lower()
    base = next((name for key, name in _TESTS if key in t), None)
    if base is None:
        return re.sub(r"[^a-z0-9]+", "_", t).strip("_"), False
    prefix = "".join(p for word, p, _ in _QUALIFIERS if word in t)
    suffix = "".join(x for word, _, x in _QUALIFIERS if word in t)
    return f"{prefix}{base}{suffix}", base in _COLLECTIVES


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
    if not [c for c in cols if c not in ("size_bytes", _VALIDATION)]:
        raise IngestError(TOOL, name, lineno, "column header names no value column")
    for col, label in ((_VALIDATION, "Validation"), (_TRANSMIT, "Transmit Size")):
        if cols.count(col) > 1:
            raise IngestError(TOOL, name, lineno, f"column header names '{label}' twice")
    if _VALIDATION in cols and _TRANSMIT in cols:
        raise IngestError(TOOL, name, lineno, "column header names both 'Validation' (-c) and 'Transmit Size' (-D): "
                                              "OSU refuses -c with -D (derived datatypes are not validated)")
    return cols, labels


def _later_table_columns(first: tuple[int, list[str], list[str]], cols: list[str], labels: list[str],
                         pattern: str, name: str, lineno: int) -> tuple[list[str], list[str]]:
    """The columns of a later datatype's table (-T), headed by OMB's print_only_header: the first
    table's columns, or (pt2pt, OMB 7.x before 7.4) 'Avg Latency(us)' in place of a bandwidth test's values."""
    first_line, first_cols, first_labels = first
    if cols == first_cols:
        return cols, labels
    values = ("bw_MBps", "msg_rate_per_s")
    if pattern == "pt2pt" and "bw_MBps" in first_cols and "lat_us" in cols \
            and [c for c in cols if c != "lat_us"] == [c for c in first_cols if c not in values]:
        return first_cols, first_labels  # the rows are printed as under the first header
    raise IngestError(TOOL, name, lineno, f"column header ({', '.join(labels)}) is not the one of the first "
                                          f"datatype's table on line {first_line} ({', '.join(first_labels)}): "
                                          "one OSU run prints every datatype's table with the same columns")


def _check_header_matches_title(title: tuple[int, str], cols: list[str], name: str, lineno: int) -> None:
    """A bandwidth test's header has a bandwidth column, a latency test's a latency column."""
    for word, (col, headers) in _HEADER_OF.items():
        if word in title[1].lower() and col not in cols:
            raise IngestError(TOOL, name, lineno, f"column header does not match the title '{title[1]}' on line "
                                                  f"{title[0]}: a {word} test's header has {headers}")


def _check_row(row: dict, toks: list[str], labels: list[str], name: str, lineno: int) -> None:
    numbers = [(col, tok, label) for col, tok, label in zip(row, toks, labels) if col != _VALIDATION]
    for col, _tok, label in numbers:
        bound, per_unit, unit = _BOUNDS.get(col, (LATENCY, 1.0, None))  # the other columns are latencies
        check_value(TOOL, name, lineno, label, row[col], bound, per_unit=per_unit, unit=unit)
    # After the bounds, so that an impossible value (nan, -3) is named as that, not as its decimals.
    for col, tok, label in numbers:
        if col not in _INTEGER_COLUMNS and not _PRINTED_VALUE.fullmatch(tok):
            raise IngestError(TOOL, name, lineno, f"{label} '{tok}' does not have the {_OSU_DECIMALS} decimals OSU "
                                                  f"prints every value with (like {float(tok):.{_OSU_DECIMALS}f}); "
                                                  "is the row cut short?")
    if _VALIDATION in row:
        _check_validation(row, name, lineno)


def _row_values(s: str, toks: list[str], cols: list[str], labels: list[str], name: str, lineno: int) -> list:
    try:
        return [t if c == _VALIDATION else int(t) if c in _INTEGER_COLUMNS else float(t) for c, t in zip(cols, toks)]
    except ValueError:
        pass
    for col, tok, _label in zip(cols, toks, labels):
        if col == _TRANSMIT and re.fullmatch(r"-?\d+\.\d*|-?\.\d+", tok):
            raise IngestError(TOOL, name, lineno, f"Transmit Size '{tok}' is not a whole number of bytes "
                                                  "(OSU prints it as an integer, %zu)")
    raise IngestError(TOOL, name, lineno, f"row '{s}' has a field that is not a number")


def _check_validation(row: dict, name: str, lineno: int) -> None:
    """``Pass`` -> True; anything but Pass or Fail is refused, and so is Fail (a failed run)."""
    word = row[_VALIDATION]
    if word not in _VALIDATION_VALUES:
        shown = word if len(word) <= 40 else f"{word[:30]}... ({len(word)} characters)"
        raise IngestError(TOOL, name, lineno, f"Validation '{shown}' is not a validation result "
                                              "(valid: Pass, Fail, as OSU's -c prints them)")
    if not _VALIDATION_VALUES[word]:
        size = f" at size {row['size_bytes']}" if "size_bytes" in row else ""
        raise IngestError(TOOL, name, lineno, f"Validation 'Fail'{size}: the data OSU received was corrupt, so the "
                                              "run failed there (OSU stops and exits 1); a failed run is not "
                                              "ingested (remove this row to keep the sizes that passed)")
    row[_VALIDATION] = True


class _Matrix:
    """osu_mbw_mr -V: the windows of the table being read, its quantity, and the records by (size, window)."""

    def __init__(self) -> None:
        self.quantity: str | None = None  # set by the table's title line
        self.title_line = 0
        self.windows: list[int] = []
        self.by_point: dict[tuple[int, int], tuple[dict, int]] = {}  # (size, window) -> (record, line)


def _matrix_header(body: str, matrix: _Matrix, name: str, lineno: int) -> None:
    if matrix.quantity is None:
        raise IngestError(TOOL, name, lineno, "window sizes with no '# Uni-directional Bandwidth (MB/sec)' or "
                                              "'# Message Rate Profile' line before them (osu_mbw_mr -V)")
    windows = [int(w) for w in body.split()]
    if 0 in windows or len(set(windows)) != len(windows):
        raise IngestError(TOOL, name, lineno, f"window sizes {' '.join(map(str, windows))}: each osu_mbw_mr -V "
                                              "window is a different number of messages, at least 1")
    matrix.windows = windows


def _matrix_row(s: str, matrix: _Matrix, ctx: dict, header_line: int, name: str, lineno: int) -> list[dict]:
    """One row of an osu_mbw_mr -V table: new records (bandwidth table) or rates added to them."""
    toks = s.split()
    if len(toks) != 1 + len(matrix.windows):
        raise IngestError(TOOL, name, lineno, f"row has {len(toks)} fields, the header on line {header_line} has "
                                              f"{1 + len(matrix.windows)} (the size and {len(matrix.windows)} windows)")
    try:
        size, values = int(toks[0]), [float(t) for t in toks[1:]]
    except ValueError:
        raise IngestError(TOOL, name, lineno, f"row '{s}' has a field that is not a number") from None
    check_value(TOOL, name, lineno, "Size", size, SIZE)
    _check_size_in_datatype(ctx, size, name, lineno)
    rate = matrix.quantity == "msg_rate_per_s"
    for w, value, tok in zip(matrix.windows, values, toks[1:]):
        label = f"{'Messages/s' if rate else 'MB/s'} (window {w})"
        if rate:
            check_value(TOOL, name, lineno, label, value, MSG_RATE, per_unit=1e-6, unit="messages/s")
        else:
            check_value(TOOL, name, lineno, label, value, BANDWIDTH)
        if not _PRINTED_VALUE.fullmatch(tok):
            raise IngestError(TOOL, name, lineno, f"{label} '{tok}' does not have the {_OSU_DECIMALS} decimals OSU "
                                                  f"prints every value with (like {value:.{_OSU_DECIMALS}f}); "
                                                  "is the row cut short?")
    new = []
    for w, value in zip(matrix.windows, values):
        point = matrix.by_point.get((size, w))
        if not rate:
            if point:
                raise IngestError(TOOL, name, lineno, f"size {size} at window {w} again (first on line {point[1]}): "
                                                      "OSU prints each size once per table")
            rec = {**ctx, "size_bytes": size, "window_msgs": w, "bw_MBps": value,
                   "unit_note": "OSU MB/s is 10^6 bytes/s (size / 1e6 * iterations / time); used as is"}
            matrix.by_point[(size, w)] = (rec, lineno)
            new.append(rec)
        elif point is None:
            raise IngestError(TOOL, name, lineno, f"size {size} at window {w} under '# Message Rate Profile' (line "
                                                  f"{matrix.title_line}) has no bandwidth above it: OSU derives the "
                                                  "rate from the Uni-directional Bandwidth table")
        elif "msg_rate_Mps" in point[0]:
            raise IngestError(TOOL, name, lineno, f"size {size} at window {w} again in the Message Rate Profile: "
                                                  "OSU prints each size once per table")
        else:
            point[0]["msg_rate_Mps"] = value / 1e6
    return new


def _check_size_in_datatype(ctx: dict, size, name: str, lineno: int) -> None:
    """A row of a -T table has at least one element of its datatype (OSU skips smaller sizes)."""
    dtype = ctx.get("datatype")
    element = _ELEMENT_BYTES.get(dtype or "")
    if element and isinstance(size, int) and size < element:
        raise IngestError(TOOL, name, lineno, f"size {size} in the {dtype} table is less than one {dtype} element "
                                              f"({element} byte{'s' if element > 1 else ''}): OSU skips a size that "
                                              "holds no whole element, so it prints no such row")


def _ddt_preamble(rest: str, ctx: dict, first_line: int, header_line: int, name: str, lineno: int) -> None:
    """'# Set Derived DataTypes block_length to B, stride to S' (-D, OMB 7.0-7.3): ``ddt`` of every record."""
    if header_line:
        raise IngestError(TOOL, name, lineno, f"'# Set Derived DataTypes' line after the column header on line "
                                              f"{header_line}: OSU prints it before its table, so it belongs to a "
                                              "second run; ingest one run per file (split the file)")
    if first_line:
        raise IngestError(TOOL, name, lineno, f"a second '# Set Derived DataTypes' line (the first on line "
                                              f"{first_line}): OSU prints it once per run; ingest one run per file "
                                              "(split the file)")
    m = _DDT_PARAMETERS.fullmatch(rest)
    if not m:
        shown = rest if len(rest) <= 40 else f"{rest[:30]}... ({len(rest)} characters)"
        raise IngestError(TOOL, name, lineno, f"'# Set Derived DataTypes {shown}' gives no block length and stride "
                                              "(OSU prints 'block_length to B, stride to S')")
    ctx["ddt"] = f"derived:block_length={m.group(1)}:stride={m.group(2)}"


def _one_sided(m: re.Match, line: str, name: str, lineno: int) -> IngestError:
    """The error for a one-sided benchmark's title line (not supported; see _ONE_SIDED)."""
    test = f"{m.group(1).lower()}_{_test_of(m.group(2))[0]}"
    title = line.lstrip("#").strip()
    return IngestError(TOOL, name, lineno, f"'{title}' is a one-sided (MPI RMA) test ({test}), which ingest does not "
                                           "support: its window creation and synchronization (-w, -s) would not be "
                                           "kept, so runs that differ in them would be averaged as repeats")


def _datatype(shown: str, ctx: dict, records: list[dict], matrix: _Matrix | None, seen: dict[str, int], name: str,
              lineno: int) -> None:
    """A '# Datatype: X.' line (-T): the rows after it are measured with datatype X. ``seen``: datatype -> the
    line of its table."""
    if "benchmark" not in ctx:
        raise IngestError(TOOL, name, lineno, "'# Datatype:' line before any '# OSU ... Test' title line")
    if not _MPI_TYPE_NAME.fullmatch(shown):
        shown = shown if len(shown) <= 40 else f"{shown[:30]}... ({len(shown)} characters)"
        raise IngestError(TOOL, name, lineno, f"'# Datatype: {shown}' names no MPI datatype (OSU prints the "
                                              "name MPI gives it, such as MPI_CHAR, MPI_INT or MPI_FLOAT)")
    if shown in seen:
        # One sweep per datatype: the rows of a second MPI_CHAR table would merge into the first's.
        raise IngestError(TOOL, name, lineno, f"'# Datatype: {shown}.' again (the first on line {seen[shown]}): OSU "
                                              "prints one table per datatype in a run; ingest one run per file "
                                              "(split the file)")
    seen[shown] = lineno
    if records and "datatype" not in records[0]:
        raise IngestError(TOOL, name, lineno, "'# Datatype:' line after result rows that had none: OSU prints it "
                                              "before each datatype's rows")
    if matrix is not None and "datatype" in ctx:
        raise IngestError(TOOL, name, lineno, "osu_mbw_mr -V with several datatypes (-T) is not ingested: "
                                              "run one datatype per file")
    ctx["datatype"] = shown


def parse(text: str, name: str = "<text>") -> list[dict]:
    ctx: dict = {"tool": TOOL}
    records: list[dict] = []
    cols: list[str] | None = None
    labels: list[str] = []
    title_at = (0, "")
    header_line = 0
    first_content = 0
    seen_sizes: dict = {}
    matrix: _Matrix | None = None  # osu_mbw_mr -V, from its "[ window size: varied ]" line
    first_header: tuple[int, list[str], list[str]] | None = None  # (line, keys, labels) of the first table's
    datatype_line = 0  # the last "# Datatype: X." line (-T prints one per table)
    datatypes: dict[str, int] = {}  # datatype -> the line of its "# Datatype:" line
    # Which table a header heads: pt2pt benchmarks print the first header before the first "# Datatype:" line
    # (spare until that line), the collectives after it; either way one header per datatype's table.
    spare_header = table_has_header = False
    ddt_line = 0  # the "# Set Derived DataTypes ..." line (-D, OMB 7.0-7.3)
    for lineno, raw in enumerate(text.splitlines(), start=1):
        s = raw.strip()
        if not s:
            continue
        first_content = first_content or lineno
        if s.startswith("#"):
            if (om := _ONE_SIDED.match(s)):
                raise _one_sided(om, s, name, lineno)
            if (dd := _DDT_PREAMBLE.match(s)):
                _ddt_preamble(dd.group(1), ctx, ddt_line, header_line, name, lineno)
                ddt_line = lineno
                continue
            m = _TITLE.match(s)
            if m:
                title = s.lstrip("#").strip()
                if title_at[0] and title == title_at[1] and header_line == 0 and ctx["test"] == "mbw_mr":
                    # osu_mbw_mr in the 2020+ sources (late 5.x, 6.x, 7.x) prints its title twice:
                    # fprintf(HEADER), then print_header(), which for MBW_MR prints benchmark_header
                    # again and no column header (yqin/osu-micro-benchmarks c/util/osu_util.c
                    # print_header and c/mpi/pt2pt/standard/osu_mbw_mr.c; nicelhc13/osu-micro-benchmarks
                    # util/osu_util.c and mpi/pt2pt/osu_mbw_mr.c). The 2016/2018 copies print it once,
                    # and the other benchmarks print it once in every version.
                    continue
                if title_at[0]:
                    # One run is one benchmark at one delay: a second block (another benchmark, or
                    # `sim mpi osu --format osu` with several delays) would merge into it.
                    raise IngestError(TOOL, name, lineno, f"a second '# OSU ... Test' block (the first starts on line "
                                                          f"{title_at[0]}): ingest one benchmark run, at one delay, "
                                                          "per file (split the file)")
                test, collective = _test_of(m.group(1))
                ctx.update(benchmark=f"OSU {m.group(1)}", test=test, pattern="collective" if collective else "pt2pt")
                if m.group(2) or m.group(3):
                    ctx["osu_version"] = m.group(2) or m.group(3)
                cols, title_at = None, (lineno, title)
                continue
            if (dm := _DATATYPE.match(s)):
                _datatype(dm.group(1), ctx, records, matrix, datatypes, name, lineno)
                datatype_line = lineno
                table_has_header, spare_header = spare_header, False
                continue
            if (pm := _PAIRS.search(s)):
                ctx["pairs"] = int(pm.group(1))
            if (wm := _WINDOW.search(s)):
                ctx["window_msgs"] = int(wm.group(1))
            body = s.lstrip("#").strip()
            if _VARIED.search(s) and "benchmark" in ctx:
                if ctx["test"] != "mbw_mr":
                    raise IngestError(TOOL, name, lineno, f"'window size: varied' under the title '{title_at[1]}' on "
                                                          f"line {title_at[0]}: only osu_mbw_mr -V varies the window")
                matrix, cols = _Matrix(), None
            elif matrix is not None and body in _MATRIX_TABLES:
                matrix.quantity, matrix.title_line, matrix.windows, cols = _MATRIX_TABLES[body], lineno, [], None
            elif matrix is not None and _WINDOW_HEADER.fullmatch(body):
                _matrix_header(body, matrix, name, lineno)
                header_line = lineno
            elif body.startswith(("Size", "Avg Latency")):
                if "benchmark" not in ctx:
                    raise IngestError(TOOL, name, lineno, "column header before any '# OSU ... Test' title line")
                cols, labels = _header_columns(body, name, lineno)
                if first_header is not None and datatype_line > header_line and not table_has_header:
                    # -T: the header OMB prints again for a later datatype's table
                    cols, labels = _later_table_columns(first_header, cols, labels, ctx["pattern"], name, lineno)
                    table_has_header = True
                elif first_header is not None:
                    # A header that starts no new datatype's table starts no table OSU prints: the rows under it
                    # would merge into the table above (a second run pasted in without its title).
                    raise IngestError(TOOL, name, lineno, f"a second column header for the table headed on line "
                                                          f"{header_line}: OSU prints one header per table, and a new "
                                                          "table only after the next datatype's '# Datatype:' line "
                                                          "(-T); ingest one run per file (split the file)")
                else:
                    _check_header_matches_title(title_at, cols, name, lineno)
                    first_header = (lineno, cols, labels)
                    table_has_header, spare_header = bool(datatype_line), not datatype_line
                header_line, matrix = lineno, None
            continue
        if matrix is not None and matrix.windows:
            if _ROW_START.match(s):
                records += _matrix_row(s, matrix, ctx, header_line, name, lineno)
            continue
        if cols is None:
            continue  # launcher noise before the table
        if not _ROW_START.match(s):
            continue  # warnings interleaved by the MPI library
        toks = s.split()
        if len(toks) != len(cols):
            raise IngestError(TOOL, name, lineno,
                              f"row has {len(toks)} fields, the header on line {header_line} has {len(cols)}")
        vals = _row_values(s, toks, cols, labels, name, lineno)
        row = dict(zip(cols, vals))
        _check_row(row, toks, labels, name, lineno)
        _check_size_in_datatype(ctx, row.get("size_bytes"), name, lineno)
        dtype = ctx.get("datatype")
        if (first := seen_sizes.setdefault((dtype, row.get("size_bytes")), lineno)) != lineno:
            if dtype:
                raise IngestError(TOOL, name, lineno, f"size {row['size_bytes']} again in the {dtype} table (first on "
                                                      f"line {first}): OSU prints each size once per datatype")
            raise IngestError(TOOL, name, lineno, f"size {row['size_bytes']} again (first on line {first}): "
                                                  "OSU prints each size once per run")
        rec = {**ctx, **row}
        if "msg_rate_per_s" in rec:
            rec["msg_rate_Mps"] = rec.pop("msg_rate_per_s") / 1e6
        if "bw_MBps" in rec:
            rec["unit_note"] = "OSU MB/s is 10^6 bytes/s (size / 1e6 * iterations / time); used as is"
            if _TRANSMIT in rec:  # -D: OSU's MB/s and Messages/s count the bytes the derived datatype moved
                rec["unit_note"] = ("OSU MB/s is 10^6 bytes/s; with -D it is ddt_transmit_size_bytes / 1e6 * "
                                    "iterations / time (the bytes the derived datatype moved, not size_bytes); "
                                    "used as is")
            if rec.get("test", "").startswith("bibw"):
                rec["unit_note"] += "; bibw is the sum of both directions"
        records.append(rec)
    if "benchmark" not in ctx:
        raise IngestError(TOOL, name, first_content or 1,
                          "no '# OSU MPI ... Test' title line found; is this OSU micro-benchmarks output?")
    if header_line == 0:
        raise IngestError(TOOL, name, first_content or 1, "no '# Size ...' column header found")
    if not records:
        raise IngestError(TOOL, name, header_line, "column header with no result rows under it")
    for rec in records:  # -D: the preamble's parameters (in ctx), else a Transmit Size column says "derived"
        rec.setdefault("ddt", "derived" if _TRANSMIT in rec else "none")
    return records
