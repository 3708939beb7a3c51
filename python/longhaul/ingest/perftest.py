"""perftest (ib_write_bw, ib_read_bw, ib_send_bw, ib_*_lat) text output -> records.

Format (linux-rdma/perftest, src/perftest_parameters.h): a title line such as
``RDMA_Write BW Test`` or ``Send Latency Test``, parameter lines (``Connection type : RC``,
``Number of qps : 1``, ``Mtu : 4096[B]``), then one result table:

* bandwidth: `` #bytes  #iterations  BW peak[U]  BW average[U]  MsgRate[Mpps]`` with U one of
  ``MB/sec`` (older perftest; MB = 2^20 bytes per print_report_bw's format_factor 0x100000),
  ``MiB/sec`` (newer perftest; same 2^20) or ``Gb/sec`` (``--report_gbits``, 10^9 bit/s);
  optional extra columns (``#sl``, per-port BW/MsgRate, ``CPU_Util[%]``).
* latency: `` #bytes #iterations t_min[usec] t_max[usec] t_typical[usec]`` and, in newer
  versions, ``t_avg[usec] t_stdev[usec] 99% percentile[usec] 99.9% percentile[usec]``; with
  ``-D`` (duration): `` #bytes #iterations t_avg[usec]``.

Warnings printed inside the table (``Conflicting CPU frequency values detected ...``) are skipped.
A title line naming another test (``Foo BW Test``), a table with no title before it (the title is
the only place the operation is named) and a table of the other kind than the title's (a latency
table under ``... BW Test``) are rejected. One file is one run: a second test title after a result header (a
``RDMA_Write BW`` block followed by an ``RDMA_Read BW`` one) and a size printed twice are refused, as OSU's are.
Bandwidths are converted to ``bw_MBps`` with MB = 10^6 bytes; the record keeps what the tool
printed (``bw_reported``, ``bw_reported_unit``) and says how it was converted (``unit_note``).
"""

from __future__ import annotations

import re

from longhaul import safeio
from longhaul.ingest import BANDWIDTH, COUNT, LATENCY, MSG_RATE, PERCENT, SIZE, Bound, IngestError, check_value

TOOL = "perftest"
MIB = 1048576

_TITLE = re.compile(r"^\s*(Send|RDMA_Write|RDMA_Read|Atomic)\b(.*?)\b(BW|Latency)\s+Test\s*$", re.I)
_ROW_START = re.compile(r"^-?\d", re.ASCII)  # a result row (a negative size is a row, and rejected); not a '----' line
_ANY_TITLE = re.compile(r"^\s*(.*?)\b(BW|Latency)\s+Test\s*$", re.I)  # a title line, known or not
_VALID_TITLES = "Send, RDMA_Write, RDMA_Read or Atomic, then 'BW Test' or 'Latency Test'"
_OPS = {"send": "send", "rdma_write": "write", "rdma_read": "read", "atomic": "atomic"}
_PARAMS = {
    "transport": re.compile(r"Connection type\s*:\s*([A-Za-z]+)"),
    "qps": re.compile(r"Number of qps\s*:\s*(\d+)", re.ASCII),
    # "Mtu : 4096[B]", or "Mtu : 2048B" with the unit bare (the older layout of perftest_send_lat_old.txt)
    "mtu_bytes": re.compile(r"\bMtu\s*:\s*(\d+)\s*(?:\[B\]|B\b)", re.ASCII),
    "tx_depth": re.compile(r"TX depth\s*:\s*(\d+)", re.ASCII),
    "device": re.compile(r"\bDevice\s*:\s*(\S+)"),
}
#: the header's whole numbers, as perftest names them
_HEADER_COUNTS = {"qps": "Number of qps", "mtu_bytes": "Mtu", "tx_depth": "TX depth"}
# column name in the header -> record key; {u} is the bandwidth unit in brackets
_COLUMN = re.compile(
    r"#bytes|#iterations|#sl|BW peak\[(?P<u1>[^\]]+)\]|BW average\[(?P<u2>[^\]]+)\]|MsgRate\[Mpps\]"
    r"|BW Port(?P<p1>\d)\[[^\]]+\]|MsgRate Port(?P<p2>\d)\[Mpps\]|CPU_Util\[%\]"
    r"|t_min\[usec\]|t_max\[usec\]|t_typical\[usec\]|t_avg\[usec\]|t_stdev\[usec\]"
    r"|99% percentile\[usec\]|99\.9% percentile\[usec\]"
)
_KEYS = {
    "#bytes": "size_bytes", "#iterations": "iterations", "#sl": "sl", "MsgRate[Mpps]": "msg_rate_Mps",
    "CPU_Util[%]": "cpu_util_pct", "t_min[usec]": "lat_min_us", "t_max[usec]": "lat_max_us",
    "t_typical[usec]": "lat_typical_us", "t_avg[usec]": "lat_avg_us", "t_stdev[usec]": "lat_stdev_us",
    "99% percentile[usec]": "lat_p99_us", "99.9% percentile[usec]": "lat_p999_us",
}
# bytes per second of one printed unit
_UNIT_BYTES = {"MB/sec": MIB, "MiB/sec": MIB, "Gb/sec": 125_000_000}
SERVICE_LEVEL = Bound(15, "", "InfiniBand service levels are 0-15")
# the columns a title's test needs in its table, and the headers perftest prints for it
_BW_TABLE = ("bandwidth", ("bw_avg",), "'BW average[MB/sec|MiB/sec|Gb/sec]'")
_TABLE_OF = {
    "bw": _BW_TABLE, "bibw": _BW_TABLE,
    "lat": ("latency", ("lat_typical_us", "lat_avg_us"), "'t_min[usec] t_max[usec] t_typical[usec]' or 't_avg[usec]'"),
}
_UNIT_NOTE = {
    "MB/sec": "perftest prints MB/sec meaning 2^20 bytes/s (MiB/s); bw_MBps = value * 1.048576 (MB = 10^6)",
    "MiB/sec": "perftest prints MiB/sec (2^20 bytes/s); bw_MBps = value * 1.048576 (MB = 10^6)",
    "Gb/sec": "perftest --report_gbits prints Gb/sec (10^9 bit/s); bw_MBps = value * 125 (MB = 10^6)",
}


def _header_columns(line: str, name: str, lineno: int) -> tuple[list[str], list[str], str | None]:
    """-> (record keys, the header's column names, bandwidth unit)."""
    cols, labels, unit, pos = [], [], None, 0
    text = line.strip()
    for m in _COLUMN.finditer(text):
        gap = text[pos:m.start()].strip()
        if gap:
            raise IngestError(TOOL, name, lineno, f"unknown column '{gap}' in the result header")
        pos = m.end()
        tok = m.group(0)
        labels.append(tok)
        if m.group("u1") or m.group("u2"):
            u = m.group("u1") or m.group("u2")
            if u not in _UNIT_BYTES:
                raise IngestError(TOOL, name, lineno, f"unknown bandwidth unit '[{u}]' (known: MB/sec, MiB/sec, Gb/sec)")
            if unit is not None and u != unit:  # perftest prints every bandwidth in one unit
                raise IngestError(TOOL, name, lineno, f"bandwidth columns in two units ([{unit}] and [{u}]); "
                                                      "perftest prints them all in one")
            unit = u
            cols.append("bw_peak" if tok.startswith("BW peak") else "bw_avg")
        elif m.group("p1"):
            cols.append(f"bw_port{m.group('p1')}")
        elif m.group("p2"):
            cols.append(f"msg_rate_port{m.group('p2')}_Mps")
        else:
            cols.append(_KEYS[tok])
    rest = text[pos:].strip()
    if rest:
        raise IngestError(TOOL, name, lineno, f"unknown column '{rest}' in the result header")
    if cols[:1] != ["size_bytes"]:
        raise IngestError(TOOL, name, lineno, "result header does not start with #bytes")
    return cols, labels, unit


def _title(line: str, name: str, lineno: int) -> dict | None:
    """The test a title line names (op, test, benchmark); None if the line is not a title."""
    m = _TITLE.match(line)
    if not m:
        if _ANY_TITLE.match(line):
            raise IngestError(TOOL, name, lineno, f"unknown test title '{line}' (perftest titles: {_VALID_TITLES})")
        return None
    op = _OPS[m.group(1).lower()]
    test = "bw" if m.group(3).upper() == "BW" else "lat"
    if test == "bw" and "bidirectional" in line.lower():
        test = "bibw"
    return {"op": op, "test": test, "benchmark": f"ib_{op}_{'lat' if test == 'lat' else 'bw'}"}


def _check_table_matches_title(test: str | None, title: tuple[int, str], cols: list[str], name: str,
                               lineno: int) -> None:
    kind, needed, headers = _TABLE_OF.get(test or "", ("", (), ""))
    if needed and not any(c in cols for c in needed):
        raise IngestError(TOOL, name, lineno, f"result header does not match the title '{title[1]}' on line "
                                              f"{title[0]}: a {kind} test's table has {headers}")


def _bound(col: str) -> Bound:
    if col.startswith("bw_"):
        return BANDWIDTH
    if col.startswith("msg_rate"):
        return MSG_RATE
    if col.startswith("lat_"):
        return LATENCY
    return {"size_bytes": SIZE, "iterations": COUNT, "sl": SERVICE_LEVEL, "cpu_util_pct": PERCENT}[col]


def _check_row(row: dict, labels: list[str], unit: str | None, name: str, lineno: int) -> None:
    """Every value of a result row is a possible measurement (bandwidths checked in the printed unit)."""
    for (col, value), label in zip(row.items(), labels):
        in_unit = col.startswith("bw_") and unit is not None
        check_value(TOOL, name, lineno, label, value, _bound(col),
                    per_unit=_UNIT_BYTES[unit] / 1e6 if in_unit and unit else 1.0, unit=unit if in_unit else None)


def parse(text: str, name: str = "<text>") -> list[dict]:
    ctx: dict = {"tool": TOOL}
    records: list[dict] = []
    cols: list[str] | None = None
    labels: list[str] = []
    unit: str | None = None
    title_at = (0, "")
    header_line = 0
    rows_in_table = 0
    first_content = 0
    seen_sizes: dict[int, int] = {}  # size -> the line of its row
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        s = line.strip()
        if not s:
            continue
        first_content = first_content or lineno
        title = _title(s, name, lineno)
        if title:
            if header_line:
                # One run is one test at one delay: a second block's rows (another operation, or the same
                # test again) would merge into the first's run, ops and sizes mixed.
                raise IngestError(TOOL, name, lineno, f"a second test title '{s}' (the first, '{title_at[1]}', on "
                                                      f"line {title_at[0]}, has its result table on line "
                                                      f"{header_line}): ingest one perftest run per file (split "
                                                      "the file)")
            ctx.update(title)
            title_at = (lineno, s)
            continue
        for key, rx in _PARAMS.items():
            pm = rx.search(s)
            if pm:
                v = pm.group(1)
                if key in _HEADER_COUNTS:   # 2^64 was stored as is: OverflowError in Parquet
                    # ASCII digits (the pattern's); a number of thousands of digits is shown as text
                    ctx[key] = check_value(TOOL, name, lineno, _HEADER_COUNTS[key], int(v) if len(v) <= 40 else v, COUNT)
                else:
                    ctx[key] = v.lower() if key == "transport" else v
        if s.startswith("#bytes"):
            # a header may repeat (seen: printed twice in a row); the table under the last one counts
            cols, labels, unit = _header_columns(s, name, lineno)
            if "op" not in ctx:  # the title is the only place perftest names the operation
                raise IngestError(TOOL, name, lineno, "result header with no test title before it, so the operation "
                                                      f"is unknown (perftest prints one such as 'RDMA_Write BW Test': "
                                                      f"{_VALID_TITLES})")
            _check_table_matches_title(ctx.get("test"), title_at, cols, name, lineno)
            header_line, rows_in_table = lineno, 0
            continue
        if cols is None or not _ROW_START.match(s):
            continue  # banner, parameters, addresses, dashed lines, warnings
        toks = s.split()
        if len(toks) != len(cols):
            raise IngestError(TOOL, name, lineno,
                              f"result row has {len(toks)} fields, the header on line {header_line} has {len(cols)}")
        try:
            if not safeio.is_ascii_number(s):   # int() and float() read '٣' as 3
                raise ValueError(s)
            values = [int(t) if c in ("size_bytes", "iterations", "sl") else float(t) for c, t in zip(cols, toks)]
        except ValueError:
            raise IngestError(TOOL, name, lineno, f"result row '{s}' has a field that is not a number") from None
        row = dict(zip(cols, values))
        _check_row(row, labels, unit, name, lineno)
        if (first := seen_sizes.setdefault(int(row["size_bytes"]), lineno)) != lineno:
            raise IngestError(TOOL, name, lineno, f"size {row['size_bytes']} again (first on line {first}): perftest "
                                                  "prints each size once per run; ingest one run per file (split "
                                                  "the file)")
        # Not checked: BW average above BW peak. perftest_parameters.c print_report_bw computes the peak as
        # !(noPeak) * ..., so a run with -N (--noPeak) prints a peak of 0.00 next to a real average.
        if row.get("iterations") == 0 and any(v > 0 for k, v in row.items() if k.startswith(("bw_", "msg_rate"))):
            raise IngestError(TOOL, name, lineno, "0 iterations with a non-zero result: nothing was measured")
        rec = dict(ctx.items())
        rec.setdefault("test", "lat" if "lat_min_us" in row or "lat_avg_us" in row else "bw")
        rec.update({k: v for k, v in row.items() if not k.startswith(("bw_peak", "bw_avg", "bw_port"))})
        if unit is not None:
            factor = _UNIT_BYTES[unit] / 1e6
            if "bw_avg" in row:
                rec["bw_MBps"] = row["bw_avg"] * factor
                rec["bw_reported"] = row["bw_avg"]
            if "bw_peak" in row:
                rec["bw_peak_MBps"] = row["bw_peak"] * factor
            for p in ("1", "2"):
                if f"bw_port{p}" in row:
                    rec[f"bw_port{p}_MBps"] = row[f"bw_port{p}"] * factor
            rec["bw_reported_unit"] = unit
            rec["unit_note"] = _UNIT_NOTE[unit]
        if "lat_avg_us" in row or "lat_typical_us" in row:
            rec["lat_us"] = row.get("lat_avg_us", row.get("lat_typical_us"))
        records.append(rec)
        rows_in_table += 1
    if cols is None:
        raise IngestError(TOOL, name, first_content or 1,
                          "no perftest result header found (expected a line starting '#bytes #iterations' "
                          "with BW average[MB/sec|MiB/sec|Gb/sec] or t_min[usec] columns)")
    if not records:
        raise IngestError(TOOL, name, header_line, "result header with no result rows under it")
    return records
