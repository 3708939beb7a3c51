"""Ingest of real measurements from the tools users already run: perftest, OSU, iperf3.

Each parser turns one tool's text output into records with explicit units (``size_bytes``,
``bw_MBps`` with MB = 10^6 bytes, ``lat_us``, ``msg_rate_Mps``, ``rate_gbps``). A file in another
format stops with ``IngestError`` naming the tool, the file and the line (exit status 2); so does a
value no measurement can have (not a finite number, negative, or above the physical ``Bound`` of
its quantity) and a table that does not match its title.

Where the formats come from (looked up, not guessed; see docs/reference/ingest-formats.md):
  * perftest (linux-rdma/perftest, src/perftest_parameters.h RESULT_FMT / RESULT_FMT_G /
    RESULT_FMT_LAT / REPORT_FMT*, and print_report_bw in src/perftest_parameters.c, whose
    ``format_factor`` is 0x100000 for "MB/sec" (so perftest's MB is 2^20 bytes, printed as
    MiB/sec by newer versions) and 125000000 for "Gb/sec" (10^9 bit/s)).
  * OSU micro-benchmarks (c/util/osu_util.c print_header / print_data; osu_bw.c computes
    ``size / 1e6 * iterations * window / t``, so OSU's MB/s is 10^6 bytes/s).
  * iperf3 (esnet/iperf: the ``-J`` JSON keys start.test_start, end.sum_sent, end.sum_received,
    end.sum; text rows from iperf_locale.c; src/units.c: byte units are powers of 1024, bit
    rates powers of 1000).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from longhaul import safeio
from longhaul.errors import UserError
from longhaul.units import km_from_delay_us

TOOLS = ("perftest", "osu", "iperf3")


class IngestError(UserError):
    """A file that is not in the named tool's format: names the tool, the file and the line."""

    def __init__(self, tool: str, name: str, line: int, problem: str):
        super().__init__(f"{tool}: {name} line {line}: {problem}")
        self.tool, self.name, self.line, self.problem = tool, name, line, problem


@dataclass(frozen=True)
class Bound:
    """The largest value a measured quantity can physically have (the smallest is 0), and why."""

    upper: float
    unit: str
    why: str


# A measured value outside [0, upper], or not a finite number, is a corrupt or mismatched file,
# never a measurement: it is rejected. 0 itself is kept: the tools print 2 decimals, so osu_bw
# prints 0.00 MB/s for 1-byte messages over a WAN, and perftest prints 0.00 bandwidth for a run
# that moved nothing (stored as printed, as before).
BANDWIDTH = Bound(1e7, "MB/s", "10^7 MB/s = 80 Tb/s, 100 times an 800 Gb/s NIC port")
LATENCY = Bound(1e9, "us", "1000 s per operation; the far side of the Earth is 0.1 s away in fibre")
MSG_RATE = Bound(1e4, "Mpps", "10^10 messages/s, 30 times the fastest NIC's ~3*10^8")
SIZE = Bound(2**48, "bytes", "2^48 bytes = 256 TiB, the x86-64 virtual address space (4-level paging)")
COUNT = Bound(2**53, "", "2^53, the largest count a float holds exactly")
DURATION = Bound(1e6, "s", "11.6 days; iperf3 caps a test at 86400 s (MAX_TIME in iperf.h)")
PERCENT = Bound(100, "%", "a share of the whole (all CPUs, all packets)")


def check_value(tool: str, name: str, line: int, what: str, value, bound: Bound,
                per_unit: float = 1.0, unit: str | None = None):
    """Return ``value`` if it is a number from 0 to the bound, else raise IngestError naming it and
    the valid range. ``value`` is in ``unit`` (default: the bound's), one of which is ``per_unit``
    of the bound's unit (perftest's MB/sec: 1.048576 MB/s)."""
    upper = bound.upper / per_unit
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if is_number and 0 <= value <= upper:  # false for nan, inf and negatives
        return value
    shown = f"{value:g}" if isinstance(value, float) else json.dumps(value)  # JSON's spelling: null, "abc"
    shown = shown if len(shown) <= 40 else f"{shown[:30]}... ({len(shown)} characters)"
    valid = f"{upper:.6g} {unit or bound.unit}".rstrip()
    raise IngestError(tool, name, line, f"{what} {shown} is not a possible value "
                                        f"(valid: a number from 0 to {valid}; {bound.why})")


def parse_text(text: str, tool: str, name: str = "<text>") -> list[dict]:
    """Parse one tool's output (already read) into records."""
    if tool == "perftest":
        from longhaul.ingest.perftest import parse
    elif tool == "osu":
        from longhaul.ingest.osu import parse
    elif tool == "iperf3":
        from longhaul.ingest.iperf3 import parse
    else:
        raise UserError(f"--tool '{tool}' is not one of {', '.join(TOOLS)}")
    return parse(text, name)


def decode_output(data: bytes, tool: str, name: str) -> str:
    """A tool's printed output as text; bytes that are not UTF-8 are an IngestError at their line."""
    try:
        # utf-8-sig: a byte-order mark (Windows editors write one) is not part of the output.
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise IngestError(tool, name, line, "not text (binary data); expected the tool's printed output") from None


def read_bytes(path: str | os.PathLike, tool: str) -> bytes:
    """A file's bytes, through ``safeio``: a regular file of at most TOOL_OUTPUT_BYTES (a FIFO
    blocked forever, /dev/zero was read until memory ran out); anything else is a one-line UserError."""
    return safeio.read_file(path, "ingest", safeio.TOOL_OUTPUT_BYTES, f"a file of {tool} output")


#: Point-to-point latency tests: how many times each latency they report crosses the WAN delay at
#: least. Half a ping-pong (osu_latency and its multi-pair, multi-threaded, multi-process and
#: persistent variants; ib_write_lat, ib_send_lat) is one way; an RDMA read (ib_read_lat) is a
#: request and its response. Collectives' latencies are averages over ranks on both sides: none.
_ONE_WAY_TESTS = ("latency", "latency_persistent", "multi_lat", "latency_mt", "latency_mp")


def _crossings(r: dict) -> int:
    if r.get("tool") == "perftest" and r.get("test") == "lat":
        return 2 if r.get("op") == "read" else 1
    return 1 if r.get("tool") == "osu" and r.get("test") in _ONE_WAY_TESTS else 0


def check_latency_against_delay(records: list[dict], delay_us: float | None, tool: str, name: str) -> None:
    """A point-to-point latency shorter than the declared WAN delay (once, or twice for a round
    trip) cannot have been measured through it: the delay given with the file is wrong."""
    if not delay_us:
        return
    for r in records:
        trips = _crossings(r)
        lats = [v for v in (r.get("lat_min_us"), r.get("lat_us")) if isinstance(v, (int, float))]
        if trips and lats and min(lats) < trips * delay_us:
            way = "a round trip" if trips == 2 else "one way"
            test = r.get("benchmark") or r["test"]
            raise UserError(f"{tool}: {name}: {test} with {r.get('size_bytes')}-byte messages took {min(lats):g} us, "
                            f"less than the {trips * delay_us:g} us {way} through the declared delay of {delay_us:g} us "
                            "takes; no latency through that link is shorter: check --delay-us (or --distance-km, "
                            "5 us per km)")


def ingest_output(data: bytes, tool: str, name: str, delay_us: float | None = None, label: str = "",
                  command: str | None = None) -> tuple[dict, list[dict]]:
    """Parse one tool's printed output -> (scenario, records); ``name`` names it in errors. The
    scenario is the run's cache key: (tool, file name, SHA-256 of the bytes, delay, label) for a file,
    (tool, command, SHA-256 of what it printed, delay, label) for the output of ``command``
    (``longhaul measure``, whose records carry the command too). The same output with the same
    facts twice is one run: replaced, never duplicated."""
    records = parse_text(decode_output(data, tool, name), tool, name)
    check_latency_against_delay(records, delay_us, tool, name)
    common: dict[str, object] = {"delay_us": delay_us, "distance_km": km_from_delay_us(delay_us) if delay_us is not None else None}
    digest = hashlib.sha256(data).hexdigest()
    if command is None:
        origin = {"file_name": name, "file_sha256": digest}
    else:
        common["command"] = command
        origin = {"command": command, "output_sha256": digest}
    out = [{**r, **{k: v for k, v in common.items() if k not in r}} for r in records]
    # The same kind for a file and a command's output: one measurement, however it reached the store.
    scenario = {"kind": f"ingest-{tool}", "tool": tool, **origin, "delay_us": delay_us, "label": label}
    return scenario, out


def ingest_file(path: str | os.PathLike, tool: str, delay_us: float | None = None, label: str = "") -> tuple[dict, list[dict]]:
    """Parse a file -> (scenario, records). The scenario (tool, file hash, delay, label) is the run's
    cache key, so ingesting the same file with the same facts twice replaces, never duplicates."""
    return ingest_output(read_bytes(path, tool), tool, Path(path).name, delay_us=delay_us, label=label)
