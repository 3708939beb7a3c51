"""Ingest of real measurements from the tools users already run: perftest, OSU, iperf3.

Each parser turns one tool's text output into records with explicit units (``size_bytes``,
``bw_MBps`` with MB = 10^6 bytes, ``lat_us``, ``msg_rate_Mps``, ``rate_gbps``). A file in another
format stops with ``IngestError`` naming the tool, the file and the line (exit status 2).

Where the formats come from (looked up, not guessed; see README, "Results store, ingest, analysis and the study"):
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
import os
from pathlib import Path

from longhaul.errors import UserError
from longhaul.units import km_from_delay_us

TOOLS = ("perftest", "osu", "iperf3")


class IngestError(UserError):
    """A file that is not in the named tool's format: names the tool, the file and the line."""

    def __init__(self, tool: str, name: str, line: int, problem: str):
        super().__init__(f"{tool}: {name} line {line}: {problem}")
        self.tool, self.name, self.line, self.problem = tool, name, line, problem


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


def read_text(path: str | os.PathLike, tool: str) -> tuple[str, bytes]:
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise UserError(f"ingest: file '{p}' does not exist") from None
    except IsADirectoryError:
        raise UserError(f"ingest: '{p}' is a directory; give a file of {tool} output") from None
    except OSError as err:
        raise UserError(f"ingest: cannot read '{p}' ({err.strerror})") from None
    try:
        return data.decode("utf-8"), data
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise IngestError(tool, p.name, line, "not text (binary data); expected the tool's printed output") from None


def ingest_file(path: str | os.PathLike, tool: str, delay_us: float | None = None, label: str = "") -> tuple[dict, list[dict]]:
    """Parse a file -> (scenario, records). The scenario (tool, file hash, delay, label) is the run's
    cache key, so ingesting the same file with the same facts twice replaces, never duplicates."""
    text, data = read_text(path, tool)
    records = parse_text(text, tool, Path(path).name)
    common = {"delay_us": delay_us, "distance_km": km_from_delay_us(delay_us) if delay_us is not None else None}
    out = [{**r, **{k: v for k, v in common.items() if k not in r}} for r in records]
    scenario = {
        "kind": f"ingest-{tool}",
        "tool": tool,
        "file_name": Path(path).name,
        "file_sha256": hashlib.sha256(data).hexdigest(),
        "delay_us": delay_us,
        "label": label,
    }
    return scenario, out
