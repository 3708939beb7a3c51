"""iperf3 output (``-J`` JSON or the default text) -> records.

JSON (esnet/iperf, iperf_api.c): ``start.test_start`` {protocol, num_streams, blksize,
duration, reverse}, ``start.tcp_mss_default``/``sock_bufsize``, and in ``end``:
``sum_sent`` and ``sum_received`` (TCP: bytes, seconds, bits_per_second, retransmits) or
``sum`` (UDP: bits_per_second, jitter_ms, lost_packets, packets, lost_percent). A failed run has
a top-level ``error`` string.

Text (iperf_locale.c report formats): a header ``[ ID] Interval  Transfer  Bitrate ...`` (older
versions: ``Bandwidth``), interval rows ``[  5]   0.00-1.00   sec   112 MBytes   941 Mbits/sec ...``
and, after a ``- - -`` line, summary rows ending in ``sender`` / ``receiver`` (``[SUM]`` rows with
``-P``). Units (src/units.c): byte sizes are powers of 1024 (KBytes, MBytes, GBytes), bit rates
powers of 1000 (Kbits/sec, Mbits/sec, Gbits/sec).

Records: one per direction (``direction`` = sender | receiver) with ``bw_MBps`` (10^6 bytes/s),
``rate_gbps`` (10^9 bit/s), ``bytes``, ``duration_s``, ``streams``, ``retransmits``.
"""

from __future__ import annotations

import json
import math
import re

from longhaul.ingest import BANDWIDTH, COUNT, DURATION, LATENCY, PERCENT, SIZE, Bound, IngestError, check_value

TOOL = "iperf3"
_BYTE_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
_BIT_UNITS = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_ROW = re.compile(
    r"^\[\s*(?P<id>\d+|SUM)\]\s+(?P<t0>\d+(?:\.\d+)?)-\s*(?P<t1>\d+(?:\.\d+)?)\s+sec\s+"
    r"(?P<bytes>\d+(?:\.\d+)?)\s+(?P<bu>[KMGT]?)Bytes\s+(?P<rate>\d+(?:\.\d+)?)\s+(?P<ru>[KMGT]?)bits/sec"
    r"(?P<rest>.*)$"
)
_HEADER = re.compile(r"^\[\s*ID\]\s+Interval\s+Transfer\s+(Bitrate|Bandwidth)")
BIT_PER_S = 1 / 8e6  # MB/s (10^6 bytes/s) in one bit/s


def _record(direction: str, bits_per_second: float, nbytes: float, seconds: float, **extra) -> dict:
    rec = {
        "tool": TOOL,
        "direction": direction,
        "bw_MBps": bits_per_second / 8 / 1e6,
        "rate_gbps": bits_per_second / 1e9,
        "bytes": int(round(nbytes)),
        "duration_s": seconds,
    }
    rec.update({k: v for k, v in extra.items() if v is not None})
    return rec


def _json_line(text: str, *objects: str, field: str | None = None) -> int:
    """The line of ``field`` in the nested JSON ``objects`` (``"end": {`` ... ``"sum_sent": {``), or of the
    innermost of them found; 1 if none. Intervals come before ``end`` and have numeric ``"end"`` keys."""
    pos = 0
    patterns = [rf'"{re.escape(key)}"\s*:\s*\{{' for key in objects]
    patterns += [rf'"{re.escape(field)}"\s*:'] if field else []
    for pattern in patterns:
        m = re.compile(pattern).search(text, pos)
        if not m:
            break
        pos = m.start()
    return text.count("\n", 0, pos) + 1


def _optional(text: str, name: str, obj: dict, path: tuple[str, ...], field: str, bound: Bound, **unit):
    """``obj[field]`` if absent or null (None) or a possible value; else IngestError naming it."""
    value = obj.get(field)
    if value is None:
        return None
    where = ".".join((*path, field))
    return check_value(TOOL, name, _json_line(text, *path, field=field), where, value, bound, **unit)


def _json_summary(s: dict, key: str, text: str, name: str) -> tuple[float, float, float]:
    """end.<key>'s (bits_per_second, bytes, seconds), each a possible measurement."""
    def check(field, value, bound, **unit):
        line = _json_line(text, "end", key, field=field)
        return float(check_value(TOOL, name, line, f"end.{key}.{field}", value, bound, **unit))
    if "bits_per_second" not in s:
        raise IngestError(TOOL, name, _json_line(text, "end", key), f"end.{key} has no bits_per_second")
    out = (check("bits_per_second", s["bits_per_second"], BANDWIDTH, per_unit=BIT_PER_S, unit="bit/s"),
           check("bytes", s.get("bytes", 0), COUNT, unit="bytes"),
           check("seconds", s.get("seconds", s.get("end", 0.0)), DURATION))
    if out[2] <= 0:
        raise IngestError(TOOL, name, _json_line(text, "end", key, field="seconds"),
                          f"end.{key}.seconds: a summary over {out[2]:g} s measured nothing (give a run's own output)")
    # iperf3 computes the rate from the two (iperf_api.c: bytes * 8 / seconds); another rate is an edited file.
    if "bytes" in s and not math.isclose(out[0], out[1] * 8 / out[2], rel_tol=0.01):
        raise IngestError(TOOL, name, _json_line(text, "end", key, field="bits_per_second"),
                          f"end.{key}: bits_per_second {out[0]:g} is not bytes x 8 / seconds "
                          f"({out[1] * 8 / out[2]:g}), as iperf3 computes it")
    return out


def parse_json(text: str, name: str) -> list[dict]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise IngestError(TOOL, name, err.lineno, f"not iperf3 -J JSON ({err.msg})") from None
    except ValueError:  # json's only other complaint: an integer of more than 4300 digits
        raise IngestError(TOOL, name, 1, "not iperf3 -J JSON (a number too long to read)") from None
    if not isinstance(doc, dict):
        raise IngestError(TOOL, name, 1, "JSON is not an object; expected iperf3 -J output")
    if doc.get("error"):  # also with an 'end': an interrupted run writes its partial sums
        raise IngestError(TOOL, name, 1, f"the iperf3 run failed: {doc['error']}")
    start, end = doc.get("start"), doc.get("end")
    if not isinstance(start, dict) or not isinstance(end, dict):
        missing = "start" if not isinstance(start, dict) else "end"
        raise IngestError(TOOL, name, 1, f"JSON has no '{missing}' object; expected iperf3 -J output")
    common = _json_common(start, text, name)
    records = []
    for key, direction in (("sum_sent", "sender"), ("sum_received", "receiver")):
        s = end.get(key)
        if isinstance(s, dict):
            retransmits = _optional(text, name, s, ("end", key), "retransmits", COUNT)
            records.append(_record(direction, *_json_summary(s, key, text, name), retransmits=retransmits, **common))
    if not records and isinstance(end.get("sum"), dict) and "bits_per_second" in end["sum"]:
        s = end["sum"]  # UDP
        direction = "receiver" if s.get("sender") is False else "sender"
        records.append(_record(direction, *_json_summary(s, "sum", text, name), **_json_udp(s, text, name),
                               **common))
    if not records:
        raise IngestError(TOOL, name, _json_line(text, "end"),
                          "'end' has no sum_sent/sum_received/sum with bits_per_second")
    return records


def _streams(n, text: str, name: str):
    """num_streams: iperf3 runs at least one (-P 1..128)."""
    if n is not None and n < 1:
        raise IngestError(TOOL, name, _json_line(text, "start", "test_start", field="num_streams"),
                          f"start.test_start.num_streams: {n} streams ran nothing (iperf3 runs 1..128)")
    return n


def _json_common(start: dict, text: str, name: str) -> dict:
    """What ``start`` says about the test, for every record."""
    ts = start.get("test_start")
    ts = ts if isinstance(ts, dict) else {}
    test_start = ("start", "test_start")
    return {
        "test": str(ts.get("protocol", "TCP")).lower(),
        "streams": _streams(_optional(text, name, ts, test_start, "num_streams", COUNT), text, name),
        "blksize_bytes": _optional(text, name, ts, test_start, "blksize", SIZE),
        "reverse": bool(ts.get("reverse")) if "reverse" in ts else None,
        "tcp_mss_bytes": _optional(text, name, start, ("start",), "tcp_mss_default", SIZE),
        "sock_bufsize_bytes": _optional(text, name, start, ("start",), "sock_bufsize", SIZE),
        "iperf_version": start.get("version"),
    }


def _json_udp(s: dict, text: str, name: str) -> dict:
    """end.sum's UDP figures: jitter, lost and sent packets."""
    where = ("end", "sum")
    return {"jitter_ms": _optional(text, name, s, where, "jitter_ms", LATENCY, per_unit=1000, unit="ms"),
            "lost_packets": _optional(text, name, s, where, "lost_packets", COUNT),
            "packets": _optional(text, name, s, where, "packets", COUNT),
            "lost_pct": _optional(text, name, s, where, "lost_percent", PERCENT)}


def _text_summary(m: re.Match, name: str, lineno: int) -> tuple[float, float, float]:
    """A summary row's (bits per second, bytes, seconds), each a possible measurement."""
    def check(what, value, bound, **unit):
        return check_value(TOOL, name, lineno, what, value, bound, **unit)
    bits = float(m.group("rate")) * _BIT_UNITS[m.group("ru")]
    nbytes = float(m.group("bytes")) * _BYTE_UNITS[m.group("bu")]
    seconds = float(m.group("t1")) - float(m.group("t0"))
    return (check("bitrate", bits, BANDWIDTH, per_unit=BIT_PER_S, unit="bit/s"),
            check("transfer", nbytes, COUNT, unit="bytes"),
            check(f"interval {m.group('t0')}-{m.group('t1')} sec: length", seconds, DURATION))


def parse_text(text: str, name: str) -> list[dict]:
    header = 0
    summaries: list[tuple[int, dict]] = []
    ids = set()
    first_content = 0
    for lineno, raw in enumerate(text.splitlines(), start=1):
        s = raw.strip()
        if not s:
            continue
        first_content = first_content or lineno
        if _HEADER.match(s):
            header = header or lineno
            continue
        if not s.startswith("["):
            continue  # "Connecting to host", "iperf Done.", "- - -" separators
        if " connected to " in s:
            continue
        m = _ROW.match(s)
        if not m:
            if header and " sec " in f" {s} ":
                raise IngestError(TOOL, name, lineno, "row does not read as '[ID] t0-t1 sec <n> <unit>Bytes "
                                                      "<rate> <unit>bits/sec ...'")
            continue
        if not header:
            raise IngestError(TOOL, name, lineno, "result row before the '[ ID] Interval Transfer Bitrate' header")
        rest = m.group("rest").split()
        direction = rest[-1] if rest and rest[-1] in ("sender", "receiver") else None
        if m.group("id") != "SUM":
            ids.add(m.group("id"))
        if direction is None:
            continue  # an interval row
        retr = int(rest[0]) if direction == "sender" and len(rest) >= 2 and rest[0].isdigit() else None
        rec = _record(direction, *_text_summary(m, name, lineno), retransmits=retr,
                      test="tcp" if "ms" not in rest else "udp")
        rec["stream"] = m.group("id")
        summaries.append((lineno, rec))
    if not header:
        raise IngestError(TOOL, name, first_content or 1,
                          "no '[ ID] Interval Transfer Bitrate' header: not iperf3 text output (or use -J JSON)")
    if not summaries:
        raise IngestError(TOOL, name, header, "no sender/receiver summary rows (did the run finish?)")
    sums = [r for _, r in summaries if r["stream"] == "SUM"]
    chosen = sums or [r for _, r in summaries]
    out = []
    for r in chosen:
        r["streams"] = max(1, len(ids))
        r.pop("stream")
        out.append(r)
    return out


def _is_json(text: str) -> bool:
    """Text output's rows start with '[' too ('[  5] 0.00-1.00 sec ...')."""
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def parse(text: str, name: str = "<text>") -> list[dict]:
    head = text.lstrip()
    if head.startswith("{") or head.startswith("[") and _is_json(head):  # a JSON array: not -J output, said so
        return parse_json(text, name)
    return parse_text(text, name)
