"""iperf3 output (``-J`` JSON or the default text) -> records.

JSON (esnet/iperf, iperf_api.c): ``start.test_start`` {protocol, num_streams, blksize,
duration, reverse}, ``start.tcp_mss_default``/``sock_bufsize``, and in ``end``:
``sum_sent`` and ``sum_received`` (TCP: bytes, seconds, bits_per_second, retransmits; UDP in 3.x
releases such as 3.12: also jitter_ms, lost_packets, packets, lost_percent, beside an ``end.sum``)
or, in older releases, only ``sum`` for UDP (bits_per_second, jitter_ms, lost_packets, packets,
lost_percent). ``--bidir`` adds ``sum_sent_bidir_reverse`` / ``sum_received_bidir_reverse`` (UDP
also ``sum_bidir_reverse``): the server-to-client flow. A failed or interrupted run has a
top-level ``error`` string. A server's own ``-J`` output (``start.accepted_connection``) writes
zeros for the client's half, which a server never learns: those placeholders are skipped.

Text (iperf_locale.c report formats): a header ``[ ID] Interval  Transfer  Bitrate ...`` (older
versions: ``Bandwidth``; ``[ ID][Role] Interval ...`` with ``--bidir``, rows ``[  5][TX-C] ...``),
interval rows ``[  5]   0.00-1.00   sec   112 MBytes   941 Mbits/sec ...`` and, after a ``- - -``
line, summary rows ending in ``sender`` / ``receiver`` (``[SUM]`` rows with ``-P``; UDP rows
carry ``<jitter> ms  <lost>/<total> (<percent>%)``, zeros on the sender's row, which measures
neither). Units (src/units.c): byte sizes are powers of 1024 (KBytes, MBytes, GBytes), bit rates
powers of 1000 (Kbits/sec, Mbits/sec, Gbits/sec). iperf3's own errors are lines ``iperf3: ...``
(``iperf3: interrupt - the client has terminated``, on stderr).

Records: one per direction (``direction`` = sender | receiver: which end counted) with ``bw_MBps``
(10^6 bytes/s), ``rate_gbps`` (10^9 bit/s), ``bytes``, ``duration_s``, ``streams``,
``retransmits``; UDP adds ``packets`` (datagrams the end counted) and, on the receiver's record,
``jitter_ms``, ``lost_packets``, ``lost_percent``. ``--bidir`` gives four: ``direction`` =
forward-sender | forward-receiver (client to server) | reverse-sender | reverse-receiver (server
to client, the way ``-R`` sends), ``reverse`` false | true and ``bidir`` true.
"""

from __future__ import annotations

import json
import math
import re

from longhaul import safeio
from longhaul.ingest import BANDWIDTH, COUNT, DURATION, LATENCY, PERCENT, SIZE, Bound, IngestError, check_value

TOOL = "iperf3"
_BYTE_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
_BIT_UNITS = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_ROW = re.compile(
    r"^\[\s*(?P<id>\d+|SUM)\](?:\[(?P<role>[TR]X-[CS])\])?\s+(?P<t0>\d+(?:\.\d+)?)-\s*(?P<t1>\d+(?:\.\d+)?)\s+sec\s+"
    r"(?P<bytes>\d+(?:\.\d+)?)\s+(?P<bu>[KMGT]?)Bytes\s+(?P<rate>\d+(?:\.\d+)?)\s+(?P<ru>[KMGT]?)bits/sec"
    r"(?P<rest>.*)$"
)
_HEADER = re.compile(r"^\[\s*ID\](?P<role>\[Role\])?\s+Interval\s+Transfer\s+(Bitrate|Bandwidth)")
# A UDP summary row after the bit rate (iperf_locale.c report_bw_udp_format: "%5.3f ms  %d/%d (%.2g%%)").
_UDP_REST = re.compile(r"^(?P<jitter>\d+(?:\.\d+)?)\s+ms\s+(?P<lost>-?\d+)/(?P<total>\d+)\s+"
                       r"\((?P<pct>-?(?:\d+(?:\.\d*)?(?:e[-+]?\d+)?|nan|inf))%\)\s+(?P<dir>sender|receiver)$")
# iperf3's error lines (iperf_err / iperf_errexit: "iperf3: %s"), e.g. after Ctrl-C:
# "iperf3: interrupt - the client has terminated".
_FAILED = re.compile(r"^iperf3: (?P<what>.+)$")
# Which way a --bidir row's data went: TX-C (client sends) and RX-S (server receives) are one flow.
_FLOW = {"TX-C": "forward", "RX-S": "forward", "RX-C": "reverse", "TX-S": "reverse", None: "forward"}
BIT_PER_S = 1 / 8e6  # MB/s (10^6 bytes/s) in one bit/s
_REFUSE_ZERO = ("what iperf3 prints for the far end's figures when they never arrived (a run interrupted "
                "before the two ends exchanged results) or a path that delivered nothing; "
                "not a measurement of the link")


def _record(direction: str, bits_per_second: float, nbytes: float, seconds: float, /, **extra) -> dict:
    rec = {
        "tool": TOOL,
        "direction": direction,
        "bw_MBps": bits_per_second / 8 / 1e6,
        "rate_gbps": bits_per_second / 1e9,
        "bytes": round(nbytes),
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


def _shown(value) -> str:
    """A JSON value as the file spells it (null, "abc", {...}), cut to 40 characters."""
    shown = f"{value:g}" if isinstance(value, float) else json.dumps(value)
    return shown if len(shown) <= 40 else f"{shown[:30]}... ({len(shown)} characters)"


def _optional(text: str, name: str, obj: dict, path: tuple[str, ...], field: str, bound: Bound,
              whole: bool = False, **unit):
    """``obj[field]`` if absent or null (None) or a possible value (with ``whole``, a whole number,
    as an int); else IngestError naming it."""
    value = obj.get(field)
    if value is None:
        return None
    where = ".".join((*path, field))
    line = _json_line(text, *path, field=field)
    value = check_value(TOOL, name, line, where, value, bound, **unit)
    return _whole(value, name, line, where) if whole else value


def _whole(value, name: str, line: int, where: str) -> int:
    """A count iperf3 writes as an integer (cJSON prints a large one as 1.2e+15, still whole)."""
    if isinstance(value, float) and not value.is_integer():
        raise IngestError(TOOL, name, line,
                          f"{where} {value:g} is not a whole number (iperf3 writes counts as integers)")
    return int(value)


def _typed(text: str, name: str, obj: dict, path: tuple[str, ...], field: str, kinds: tuple, what: str):
    """``obj[field]`` if absent or of one of the JSON ``kinds``; else IngestError naming the key."""
    value = obj.get(field)
    if field not in obj or (isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)):
        return value
    raise IngestError(TOOL, name, _json_line(text, *path, field=field),
                      f"{'.'.join((*path, field))} {_shown(value)} is not {what}")


def _flag(text: str, name: str, obj: dict, path: tuple[str, ...], field: str) -> bool | None:
    """A 0/1 (or true/false) option iperf3 writes in test_start; None if absent."""
    value = obj.get(field)
    if field not in obj:
        return None
    if (value in (0, 1) and not isinstance(value, float)) or isinstance(value, bool):
        return bool(value)
    raise IngestError(TOOL, name, _json_line(text, *path, field=field),
                      f"{'.'.join((*path, field))} {_shown(value)} is not 0 or 1 (iperf3 writes the option as 0 or 1)")


def _json_summary(s: dict, key: str, text: str, name: str) -> tuple[float, float, float]:
    """end.<key>'s (bits_per_second, bytes, seconds), each a possible measurement."""
    def check(field, value, bound, **unit):
        line = _json_line(text, "end", key, field=field)
        return check_value(TOOL, name, line, f"end.{key}.{field}", value, bound, **unit)
    if "bits_per_second" not in s:
        raise IngestError(TOOL, name, _json_line(text, "end", key), f"end.{key} has no bits_per_second")
    nbytes = check("bytes", s.get("bytes", 0), COUNT, unit="bytes")
    out = (float(check("bits_per_second", s["bits_per_second"], BANDWIDTH, per_unit=BIT_PER_S, unit="bit/s")),
           float(_whole(nbytes, name, _json_line(text, "end", key, field="bytes"), f"end.{key}.bytes")),
           float(check("seconds", s.get("seconds", s.get("end", 0.0)), DURATION)))
    if out[2] <= 0:
        raise IngestError(TOOL, name, _json_line(text, "end", key, field="seconds"),
                          f"end.{key}.seconds: a summary over {out[2]:g} s measured nothing (give a run's own output)")
    # iperf3 computes the rate from the two (iperf_api.c: bytes * 8 / seconds); another rate is an edited file.
    if "bytes" in s and not math.isclose(out[0], out[1] * 8 / out[2], rel_tol=0.01):
        raise IngestError(TOOL, name, _json_line(text, "end", key, field="bits_per_second"),
                          f"end.{key}: bits_per_second {out[0]:g} is not bytes x 8 / seconds "
                          f"({out[1] * 8 / out[2]:g}), as iperf3 computes it")
    return out


def _json_object(end: dict, key: str, text: str, name: str) -> dict | None:
    s = end.get(key)
    if s is not None and not isinstance(s, dict):
        raise IngestError(TOOL, name, _json_line(text, "end", field=key),
                          f"end.{key} {_shown(s)} is not an object (iperf3 writes a summary there)")
    return s


def parse_json(text: str, name: str) -> list[dict]:
    try:   # bounded: a document nested thousands deep was a RecursionError traceback
        doc = safeio.parse_json(text, name, finite=False)
    except safeio.DocumentError as err:
        raise IngestError(TOOL, name, err.line, f"not iperf3 -J JSON ({err.problem})") from None
    if not isinstance(doc, dict):
        raise IngestError(TOOL, name, 1, "JSON is not an object; expected iperf3 -J output")
    if doc.get("error"):  # also with an 'end': an interrupted run writes its partial sums
        raise IngestError(TOOL, name, 1, f"the iperf3 run failed: {doc['error']}")
    start, end = doc.get("start"), doc.get("end")
    if not isinstance(start, dict) or not isinstance(end, dict):
        missing = "start" if not isinstance(start, dict) else "end"
        raise IngestError(TOOL, name, 1, f"JSON has no '{missing}' object; expected iperf3 -J output")
    common = _json_common(start, end, text, name)
    bidir = common.pop("bidir")
    server = "accepted_connection" in start  # a server's own -J output: zeros for what only the client counts
    records = []
    for suffix, flow in (("", "forward"), ("_bidir_reverse", "reverse")) if bidir else (("", "forward"),):
        flow_records = _json_flow(end, suffix, common, server, text, name)
        for r in flow_records:
            if bidir:
                r.update(direction=f"{flow}-{r['direction']}", reverse=flow == "reverse", bidir=True)
        records += flow_records
    if not records:
        raise IngestError(TOOL, name, _json_line(text, "end"),
                          "'end' has no sum_sent/sum_received/sum with bits_per_second")
    return records


def _json_flow(end: dict, suffix: str, common: dict, server: bool, text: str, name: str) -> list[dict]:
    """The records of one flow: end.sum_sent<suffix> and end.sum_received<suffix>, or (older UDP
    output) end.sum<suffix> alone."""
    udp = common["test"] == "udp"
    pair = []
    for key, direction in ((f"sum_sent{suffix}", "sender"), (f"sum_received{suffix}", "receiver")):
        s = _json_object(end, key, text, name)
        if s is None:
            continue
        where = ("end", key)
        extra = {"retransmits": _optional(text, name, s, where, "retransmits", COUNT, whole=True)}
        if udp:
            # The sender's jitter and loss are iperf3's zeros (only the receiver measures them).
            extra.update(_json_udp(s, key, text, name) if direction == "receiver" else
                         {"packets": _optional(text, name, s, where, "packets", COUNT, whole=True)})
        pair.append((key, direction, _json_summary(s, key, text, name), extra))
    if len(pair) == 2:
        zero = [p for p in pair if p[2][0] == 0 and p[2][1] == 0]
        if len(zero) == 1:
            (key, _, _, _), (other, _, (_, counted, _), _) = zero[0], next(p for p in pair if p is not zero[0])
            if server:
                pair.remove(zero[0])  # the client's half, which the server never learns
            else:
                raise IngestError(TOOL, name, _json_line(text, "end", key, field="bytes"), f"end.{key} counted 0 bytes "
                                  f"while end.{other} counted {counted:.0f}: {_REFUSE_ZERO}")
    if not pair:
        key = f"sum{suffix}"
        s = _json_object(end, key, text, name)
        if s is None or "bits_per_second" not in s:
            return []
        sender = _typed(text, name, s, ("end", key), "sender", (bool,), "true or false")
        direction = "receiver" if sender is False else "sender"
        return [_record(direction, *_json_summary(s, key, text, name), **_json_udp(s, key, text, name), **common)]
    return [_record(direction, *summary, **extra, **common) for _, direction, summary, extra in pair]


def _streams(n, text: str, name: str):
    """num_streams: iperf3 runs at least one (-P 1..128)."""
    if n is not None and n < 1:
        raise IngestError(TOOL, name, _json_line(text, "start", "test_start", field="num_streams"),
                          f"start.test_start.num_streams: {n} streams ran nothing (iperf3 runs 1..128)")
    return n


def _json_common(start: dict, end: dict, text: str, name: str) -> dict:
    """What ``start`` says about the test, for every record (and ``bidir``, for the caller)."""
    ts = start.get("test_start")
    test_start = ("start", "test_start")
    if ts is not None and not isinstance(ts, dict):
        raise IngestError(TOOL, name, _json_line(text, "start", field="test_start"),
                          f"start.test_start {_shown(ts)} is not an object (iperf3 writes the test's options there)")
    ts = ts or {}
    protocol = _typed(text, name, ts, test_start, "protocol", (str,),
                      "a protocol name (iperf3 writes TCP, UDP or SCTP)")
    if protocol is None:  # not written: UDP summaries are the ones with a jitter
        protocol = "UDP" if any("jitter_ms" in s for s in end.values() if isinstance(s, dict)) else "TCP"
    reverse = _flag(text, name, ts, test_start, "reverse")
    bidir_keys = [k for k in ("sum_sent_bidir_reverse", "sum_received_bidir_reverse", "sum_bidir_reverse") if k in end]
    bidir = _flag(text, name, ts, test_start, "bidir")  # written by releases after 3.12
    if bidir and not bidir_keys:
        raise IngestError(TOOL, name, _json_line(text, *test_start, field="bidir"),
                          "start.test_start.bidir is 1 but 'end' has no sum_sent_bidir_reverse/"
                          "sum_received_bidir_reverse: the server-to-client half of the --bidir run is missing")
    if bidir is False and bidir_keys:
        raise IngestError(TOOL, name, _json_line(text, "end", field=bidir_keys[0]),
                          f"end.{bidir_keys[0]} in a run whose start.test_start.bidir is 0")
    if reverse and bidir_keys:
        raise IngestError(TOOL, name, _json_line(text, *test_start, field="reverse"),
                          f"start.test_start.reverse 1 beside end.{bidir_keys[0]}: iperf3 refuses -R with --bidir")
    version = _typed(text, name, start, ("start",), "version", (str,), "a version string (iperf3 writes 'iperf 3.x')")
    return {
        "test": protocol.lower(),
        "streams": _streams(_optional(text, name, ts, test_start, "num_streams", COUNT, whole=True), text, name),
        "blksize_bytes": _optional(text, name, ts, test_start, "blksize", SIZE, whole=True),
        "reverse": reverse,
        "tcp_mss_bytes": _optional(text, name, start, ("start",), "tcp_mss_default", SIZE, whole=True),
        "sock_bufsize_bytes": _optional(text, name, start, ("start",), "sock_bufsize", SIZE, whole=True),
        "iperf_version": version,
        "bidir": bool(bidir or bidir_keys),
    }


def _json_udp(s: dict, key: str, text: str, name: str) -> dict:
    """end.<key>'s UDP figures: jitter, lost and sent packets."""
    where = ("end", key)
    return {"jitter_ms": _optional(text, name, s, where, "jitter_ms", LATENCY, per_unit=1000, unit="ms"),
            "lost_packets": _optional(text, name, s, where, "lost_packets", COUNT, whole=True),
            "packets": _optional(text, name, s, where, "packets", COUNT, whole=True),
            "lost_percent": _optional(text, name, s, where, "lost_percent", PERCENT)}


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


def _text_udp(u: re.Match, direction: str, name: str, lineno: int) -> dict:
    """A UDP summary row's datagram figures; the sender's row has zeros for what only the receiver measures."""
    def check(what, value, bound, **unit):
        return check_value(TOOL, name, lineno, what, value, bound, **unit)
    total = check("datagrams (total)", int(u.group("total")), COUNT)
    if direction == "sender":
        return {"packets": total}
    lost = check("datagrams lost", int(u.group("lost")), COUNT)
    # iperf3 prints the percentage with 2 digits (%.2g); it computes it as 100 x lost / total, as here.
    percent = check("lost percent", 100.0 * lost / total if total else 0.0, PERCENT)
    printed = float(u.group("pct"))
    if not math.isclose(printed, percent, rel_tol=0.06, abs_tol=1e-9):
        raise IngestError(TOOL, name, lineno, f"({u.group('pct')}%) lost is not {lost}/{total} = {percent:.3g}%, "
                                              "as iperf3 computes it")
    return {"jitter_ms": check("jitter", float(u.group("jitter")), LATENCY, per_unit=1000, unit="ms"),
            "lost_packets": lost, "packets": total, "lost_percent": percent}


def parse_text(text: str, name: str) -> list[dict]:
    header = 0
    bidir = False
    summaries: list[tuple[int, str, str, dict]] = []  # (line, flow, stream id, record)
    ids: dict[str, set] = {"forward": set(), "reverse": set()}
    first_content = 0
    client = reverse_mode = False
    for lineno, raw in enumerate(text.splitlines(), start=1):
        s = raw.strip()
        if not s:
            continue
        first_content = first_content or lineno
        failed = _FAILED.match(s)
        if failed:  # iperf3's own error line (on stderr, kept when the file has both): the run did not finish
            raise IngestError(TOOL, name, lineno, f"the iperf3 run failed: {failed.group('what')}")
        hm = _HEADER.match(s)
        if hm:
            header = header or lineno
            bidir = bidir or bool(hm.group("role"))
            continue
        if s.startswith("Connecting to host "):
            client = True
        if s.startswith("Reverse mode, remote host "):
            reverse_mode = True
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
        if bool(m.group("role")) != bidir:
            raise IngestError(TOOL, name, lineno, "a row with a [Role] (--bidir) under a header without one"
                              if m.group("role") else "a row without its [Role] (TX-C, RX-C) under a --bidir header")
        flow = _FLOW[m.group("role")]
        rest = m.group("rest").strip()
        tokens = rest.split()
        direction = tokens[-1] if tokens and tokens[-1] in ("sender", "receiver") else None
        if m.group("id") != "SUM":
            ids[flow].add(m.group("id"))
        if direction is None:
            continue  # an interval row
        if " ms " in f" {rest} ":  # UDP: jitter and datagrams
            u = _UDP_REST.match(rest)
            if not u:
                raise IngestError(TOOL, name, lineno, "UDP summary row does not end as '<jitter> ms  <lost>/<total> "
                                                      "(<percent>%)  sender|receiver'")
            extra = {"test": "udp", **_text_udp(u, direction, name, lineno)}
        else:
            retr = int(tokens[0]) if direction == "sender" and len(tokens) >= 2 and tokens[0].isdigit() else None
            extra = {"test": "tcp", "retransmits": retr}
        summaries.append((lineno, flow, m.group("id"), _record(direction, *_text_summary(m, name, lineno), **extra)))
    if not header:
        raise IngestError(TOOL, name, first_content or 1,
                          "no '[ ID] Interval Transfer Bitrate' header: not iperf3 text output (or use -J JSON)")
    if not summaries:
        raise IngestError(TOOL, name, header, "no sender/receiver summary rows (did the run finish?)")
    _refuse_zero_halves(summaries, name)
    out = []
    for flow in ("forward", "reverse"):
        rows = [r for _, f, _, r in summaries if f == flow]
        sums = [r for _, f, i, r in summaries if f == flow and i == "SUM"]
        for r in sums or rows:
            r["streams"] = max(1, len(ids[flow]))
            if bidir:
                r.update(direction=f"{flow}-{r['direction']}", reverse=flow == "reverse", bidir=True)
            elif client:  # a client says when it ran -R; a server's output does not
                r["reverse"] = reverse_mode
            out.append(r)
    return out


def _refuse_zero_halves(summaries: list[tuple[int, str, str, dict]], name: str) -> None:
    """An interrupted client prints the far end's row as '0.00 Bytes  0.00 bits/sec' (its figures
    never arrived) beside its own count: refused, at the first such row."""
    rows: dict[tuple[str, str], dict[str, tuple[int, dict]]] = {}
    for lineno, flow, sid, rec in summaries:
        rows.setdefault((flow, sid), {})[rec["direction"]] = (lineno, rec)
    bad = []
    for pair in rows.values():
        if len(pair) != 2:
            continue
        for direction, other in (("sender", "receiver"), ("receiver", "sender")):
            (line, rec), (_, orec) = pair[direction], pair[other]
            if rec["bytes"] == 0 and rec["bw_MBps"] == 0 and orec["bytes"] > 0:
                bad.append((line, (f"the {direction} row counted 0.00 Bytes while the {other} row counted "
                                  f"{orec['bytes']} bytes: {_REFUSE_ZERO}")))
    if bad:
        raise IngestError(TOOL, name, *min(bad))


def _is_json(text: str) -> bool:
    """Text output's rows start with '[' too ('[  5] 0.00-1.00 sec ...')."""
    try:
        json.loads(text)
    except RecursionError:   # JSON nested too deep: parse_json says so
        return True
    except ValueError:
        return False
    return True


def parse(text: str, name: str = "<text>") -> list[dict]:
    head = text.lstrip()
    if head.startswith("{") or (head.startswith("[") and _is_json(head)):  # a JSON array: not -J output, said so
        return parse_json(text, name)
    return parse_text(text, name)
