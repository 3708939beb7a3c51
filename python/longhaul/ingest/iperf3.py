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
import re

from longhaul.ingest import IngestError

TOOL = "iperf3"
_BYTE_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
_BIT_UNITS = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_ROW = re.compile(
    r"^\[\s*(?P<id>\d+|SUM)\]\s+(?P<t0>\d+(?:\.\d+)?)-\s*(?P<t1>\d+(?:\.\d+)?)\s+sec\s+"
    r"(?P<bytes>\d+(?:\.\d+)?)\s+(?P<bu>[KMGT]?)Bytes\s+(?P<rate>\d+(?:\.\d+)?)\s+(?P<ru>[KMGT]?)bits/sec"
    r"(?P<rest>.*)$"
)
_HEADER = re.compile(r"^\[\s*ID\]\s+Interval\s+Transfer\s+(Bitrate|Bandwidth)")


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


def parse_json(text: str, name: str) -> list[dict]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise IngestError(TOOL, name, err.lineno, f"not iperf3 -J JSON ({err.msg})") from None
    if not isinstance(doc, dict):
        raise IngestError(TOOL, name, 1, "JSON is not an object; expected iperf3 -J output")
    if doc.get("error") and not doc.get("end"):
        raise IngestError(TOOL, name, 1, f"the iperf3 run failed: {doc['error']}")
    start, end = doc.get("start"), doc.get("end")
    if not isinstance(start, dict) or not isinstance(end, dict):
        missing = "start" if not isinstance(start, dict) else "end"
        raise IngestError(TOOL, name, 1, f"JSON has no '{missing}' object; expected iperf3 -J output")
    ts = start.get("test_start", {}) or {}
    protocol = str(ts.get("protocol", "TCP")).lower()
    common = {
        "test": protocol,
        "streams": ts.get("num_streams"),
        "blksize_bytes": ts.get("blksize"),
        "reverse": bool(ts.get("reverse")) if "reverse" in ts else None,
        "tcp_mss_bytes": start.get("tcp_mss_default"),
        "sock_bufsize_bytes": start.get("sock_bufsize"),
        "iperf_version": start.get("version"),
    }
    records = []
    for key, direction in (("sum_sent", "sender"), ("sum_received", "receiver")):
        s = end.get(key)
        if isinstance(s, dict) and "bits_per_second" in s:
            records.append(_record(direction, float(s["bits_per_second"]), float(s.get("bytes", 0)),
                                   float(s.get("seconds", s.get("end", 0.0))),
                                   retransmits=s.get("retransmits"), **common))
    if not records and isinstance(end.get("sum"), dict) and "bits_per_second" in end["sum"]:
        s = end["sum"]  # UDP
        records.append(_record("receiver" if s.get("sender") is False else "sender", float(s["bits_per_second"]),
                               float(s.get("bytes", 0)), float(s.get("seconds", s.get("end", 0.0))),
                               jitter_ms=s.get("jitter_ms"), lost_packets=s.get("lost_packets"),
                               packets=s.get("packets"), lost_pct=s.get("lost_percent"), **common))
    if not records:
        line = text[: text.find('"end"')].count("\n") + 1 if '"end"' in text else 1
        raise IngestError(TOOL, name, line, "'end' has no sum_sent/sum_received/sum with bits_per_second")
    return records


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
        bits = float(m.group("rate")) * _BIT_UNITS[m.group("ru")]
        nbytes = float(m.group("bytes")) * _BYTE_UNITS[m.group("bu")]
        t0, t1 = float(m.group("t0")), float(m.group("t1"))
        retr = int(rest[0]) if direction == "sender" and len(rest) >= 2 and rest[0].isdigit() else None
        rec = _record(direction, bits, nbytes, t1 - t0, retransmits=retr, test="tcp" if "ms" not in rest else "udp")
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


def parse(text: str, name: str = "<text>") -> list[dict]:
    if text.lstrip().startswith("{"):
        return parse_json(text, name)
    return parse_text(text, name)
