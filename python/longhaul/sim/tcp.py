"""iperf-like TCP benchmarks on the simulated long-haul path.

``scenario()`` builds the plain-data scenario the Rust core validates and runs; ``run()`` runs
one; ``run_many()`` runs several on local cores with a progress bar; ``sweep()`` runs the
cross-product of delays, streams and windows. Records are flat dicts whose keys carry their unit
(``bw_MBps`` with MB = 10^6 bytes; per-stream lists ``stream_bw_MBps``, ``stream_retransmits``).
"""

from __future__ import annotations

from collections.abc import Sequence

from longhaul import _core
from longhaul.sim import core

LINKS = core.names("tcp.link")
CCS = core.names("tcp.cc")
TESTBEDS = core.names("tcp.testbed")
STACKS = core.names("tcp.stack")
EXTENDERS = core.names("tcp.extender")
#: Loss-recovery variants (``TcpParams`` in the Rust core; the first of each is the default).
RTO_FORMULAS = core.names("tcp.rto_formula")
RTO_RESTARTS = core.names("tcp.rto_restart")
RTO_SSTHRESHES = core.names("tcp.rto_ssthresh")
CWND_GROWTHS = core.names("tcp.cwnd_growth")

#: Stock Linux (ip-sysctl.rst) and iperf defaults the model uses when a parameter is unset.
LINUX_DEFAULTS = {"cc": "cubic", "tcp_rmem_max_bytes": 6291456, "tcp_wmem_max_bytes": 4194304,
                  "initial_cwnd_segs": 10, "delayed_ack_ms": 40, "min_rto_ms": 200, "duration_s": 10.0}

_PATH_KEYS = ("delay_us", "fibre_km", "extender", "wan_framing", "rate_gbps", "queue_bytes", "queue_packets",
              "loss", "ib_mtu_bytes")
_TCP_KEYS = ("cc", "mtu_bytes", "streams", "window_bytes", "rmem_max_bytes", "wmem_max_bytes", "initial_cwnd_segs",
             "sack", "hystart", "rack", "rto_formula", "rto_restart", "rto_ssthresh", "cwnd_growth",
             "delayed_ack", "min_rto_ms", "duration_s", "interval_s", "cwnd_trace")
_CROSS_KEYS = core.CROSS_KEYS
#: a parameter's key in a scenario file, for messages about the file's values
FILE_KEYS = core.file_keys({"path": _PATH_KEYS, "tcp": _TCP_KEYS},
                           {k: f"cross.{v}" for k, v in _CROSS_KEYS.items()})


def scenario(base: dict | None = None, **params) -> dict:
    """A scenario dict: ``base`` (e.g. read from a file) updated with ``params`` (None = unset).
    ``cross_gbps`` = 0 means no cross traffic. ``window_bytes``: a fixed socket buffer replaces
    the base's auto-tuning ceilings, and "auto" its fixed buffer (a file's window can be overridden
    either way)."""
    sc = core.base_copy(base, ("path", "tcp"))
    core.check_cross_table(sc)
    for key, value in params.items():
        if value is None:
            continue
        if key == "window_bytes":
            if value == "auto":
                sc["tcp"].pop("window_bytes", None)
            else:
                sc["tcp"].pop("rmem_max_bytes", None)
                sc["tcp"].pop("wmem_max_bytes", None)
                sc["tcp"]["window_bytes"] = value
        elif key in _PATH_KEYS:
            sc["path"][key] = value
        elif key in _TCP_KEYS:
            sc["tcp"][key] = value
        elif key in _CROSS_KEYS:
            core.set_cross(sc, key, value)
        elif key in ("seed", "testbed", "stack", "link"):
            sc[key] = value
        else:
            raise core.unknown_parameter("", key, [*FILE_KEYS, "seed", "testbed", "stack", "link"])
    core.check_cross_rate(sc)
    sc.setdefault("link", "10gige-lan")
    return sc


def validate(sc: dict) -> dict:
    """Resolve a scenario (every parameter in range) or raise UserError with the core's message."""
    return core.call(_core.run_tcp, sc, validate_only=True)


def run(sc: dict) -> dict:
    """Run one scenario; returns its record."""
    return core.call(_core.run_tcp, sc)


def run_many(scenarios: Sequence[dict], workers: int | None = None, show_progress: bool = True,
             description: str = "simulating tcp") -> list[dict]:
    """Validate all, then run in parallel threads (the core releases the GIL); input order kept."""
    return core.run_parallel(run, validate, scenarios, workers, show_progress, description)


def sweep(link: str = "10gige-lan", delays_us: Sequence[float] = (0.0,), streams: Sequence[int] = (1,),
          windows: Sequence[int | None] = (None,), cc: str | None = None, mtu_bytes: int | None = None,
          duration_s: float | None = None, testbed: str | None = None, seed: int = 1, base: dict | None = None,
          workers: int | None = None, show_progress: bool = True, **params) -> list[dict]:
    """Every (delay, streams, window) point of one link; a window of None means the base's (Linux
    auto-tuning without a base), "auto" auto-tuning whatever the base says.
    ``params`` takes any other scenario parameter (``loss``, ``cross_gbps``, ``stack``, ``fibre_km`` ...)."""
    scenarios = [
        scenario(base, link=link, testbed=testbed, seed=seed, cc=cc, mtu_bytes=mtu_bytes, duration_s=duration_s,
                 delay_us=d, streams=n, window_bytes=w, **params)
        for d in delays_us for n in streams for w in windows
    ]
    return run_many(scenarios, workers=workers, show_progress=show_progress, description=f"tcp {link}")

