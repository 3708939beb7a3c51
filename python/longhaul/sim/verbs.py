"""perftest-like verbs benchmarks on the simulated long-haul path.

``scenario()`` builds the plain-data scenario the Rust core validates and runs; ``run()`` runs
one; ``sweep()`` runs the cross-product of sizes and delays on local cores with a progress bar.
Records are flat dicts whose keys carry their unit (``bw_MBps`` with MB = 10^6 bytes).
"""

from __future__ import annotations

from collections.abc import Sequence

from longhaul import _core
from longhaul.sim import core

TRANSPORTS = core.names("verbs.transport")
OPS = core.names("verbs.op")
TESTS = core.names("verbs.test")
TESTBEDS = core.names("verbs.testbed")
HCAS = core.names("verbs.hca")
EXTENDERS = core.names("verbs.extender")
MTUS = tuple(int(m) for m in core.names("verbs.mtu_bytes"))
WAN_FRAMINGS = core.names("verbs.wan_framing")

_PATH_KEYS = ("delay_us", "fibre_km", "extender", "wan_links", "wan_framing", "wan_width", "wan_generation",
              "extender_buffer_bytes", "extender_packet_ns", "switch_buffer_bytes", "loss", "mtu_bytes", "queue_bytes")
_VERBS_KEYS = ("transport", "op", "test", "size_bytes", "iterations", "tx_depth", "rx_depth", "qps",
               "outstanding_reads", "timeout_exp", "retry_count", "cm", "duration_s", "interval_s")
#: a parameter's key in a scenario file, for messages about the file's values
FILE_KEYS = core.file_keys({"path": _PATH_KEYS, "verbs": _VERBS_KEYS},
                           {k: f"cross.{v}" for k, v in core.CROSS_KEYS.items()})


def scenario(base: dict | None = None, **params) -> dict:
    """A scenario dict: ``base`` (e.g. read from a file) updated with ``params`` (None = unset).
    ``cross_gbps`` (and the other ``cross_*`` keys, as for tcp) adds UDP cross traffic on the WAN
    switches; 0 means none."""
    sc = core.base_copy(base, ("path", "verbs"))
    core.check_cross_table(sc)
    for key, value in params.items():
        if value is None:
            continue
        if key in core.CROSS_KEYS:
            core.set_cross(sc, key, value)
        elif key in _PATH_KEYS:
            sc["path"][key] = value
        elif key in _VERBS_KEYS:
            sc["verbs"][key] = value
        elif key in ("seed", "testbed", "hca"):
            sc[key] = value
        else:
            raise core.unknown_parameter("", key, [*FILE_KEYS, "seed", "testbed", "hca"])
    core.check_cross_rate(sc)
    return sc


def validate(sc: dict) -> dict:
    """Resolve a scenario (every parameter in range) or raise UserError with the core's message."""
    return core.call(_core.resolve_verbs, sc)


def series_rows(record: dict) -> list[dict]:
    """A run with link events, interval by interval: delivered payload (``bw_MBps``) and each WAN
    link's bytes from side A (``link_k_MBps``); [] for a run without."""
    f = record.get("failover")
    if not f:
        return []
    return [{"t_s": t, "bw_MBps": round(bw, 3),
             **{f"link_{k}_MBps": round(link[i], 3) for k, link in enumerate(f["series_link_MBps"])}}
            for i, (t, bw) in enumerate(zip(f["series_t_s"], f["series_bw_MBps"]))]


def run(sc: dict) -> dict:
    """Run one scenario; returns its record."""
    return core.call(_core.run_verbs, sc)


def run_many(scenarios: Sequence[dict], workers: int | None = None, show_progress: bool = True,
             description: str = "simulating") -> list[dict]:
    """Validate all, then run in parallel threads (the core releases the GIL); input order kept."""
    return core.run_parallel(run, validate, scenarios, workers, show_progress, description)


def sweep(transport: str = "rc", op: str = "write", test: str = "bw", sizes: Sequence[int] = (65536,),
          delays_us: Sequence[float] = (0.0,), qps: int = 1, profile: str = "s1", iterations: int | None = None,
          tx_depth: int | None = None, seed: int = 1, base: dict | None = None, workers: int | None = None,
          show_progress: bool = True, **path) -> list[dict]:
    """Every (delay, size) point of one benchmark; ``path`` takes any path parameter
    (``fibre_km``, ``extender``, ``loss``, ``mtu_bytes``, ``wan_links``, ``hca`` ...)."""
    hca = path.pop("hca", None)
    scenarios = [
        scenario(base, testbed=profile, hca=hca, seed=seed, transport=transport, op=op, test=test, size_bytes=size,
                 delay_us=delay, qps=qps, iterations=iterations, tx_depth=tx_depth, **path)
        for delay in delays_us for size in sizes
    ]
    return run_many(scenarios, workers=workers, show_progress=show_progress,
                    description=f"{transport} {op} {test}")
