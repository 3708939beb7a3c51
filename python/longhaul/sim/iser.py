"""iSER (iSCSI over RDMA) READ and WRITE throughput on the simulated long-haul path: an initiator
issuing SCSI commands to one target over one RC queue pair (commands and responses as Sends, READ
data by RDMA Write, WRITE data by RDMA Read).

``scenario()`` builds the plain-data scenario the Rust core validates and runs; ``run()`` runs one;
``run_many()`` runs several on local cores; ``sweep()`` runs operations x delays. Records are flat
dicts whose keys carry their unit (``bw_MBps`` with MB = 10^6 bytes).
"""

from __future__ import annotations

from collections.abc import Sequence

from longhaul import _core
from longhaul.sim import core

OPS = core.names("iser.op")
TESTBEDS = core.names("iser.testbed")
_PATH_KEYS = ("delay_us", "fibre_km", "extender")
_ISER_KEYS = ("block_bytes", "total_bytes", "queue_depth", "max_command_bytes", "max_burst_bytes",
              "first_burst_bytes", "immediate_data", "initial_r2t", "max_outstanding_r2t",
              "target_recv_segment_bytes", "backing_MBps", "target_cmd_ns", "initiator_cmd_ns")
#: a parameter's key in a scenario file, for messages about the file's values
FILE_KEYS = core.file_keys({"path": _PATH_KEYS, "iser": _ISER_KEYS})


def scenario(base: dict | None = None, **params) -> dict:
    """A scenario dict: ``base`` (e.g. read from a file) updated with ``params`` (None = unset)."""
    sc = core.base_copy(base, ("path", "iser"))
    for key, value in params.items():
        if value is None:
            continue
        if key in _PATH_KEYS:
            sc["path"][key] = value
        elif key in _ISER_KEYS:
            sc["iser"][key] = value
        elif key in ("seed", "testbed", "op"):
            sc[key] = value
        else:
            raise core.unknown_parameter("", key, [*FILE_KEYS, "seed", "testbed", "op"])
    sc.setdefault("op", "read")
    return sc


def validate(sc: dict) -> dict:
    """Resolve a scenario (every parameter in range) or raise UserError with the core's message."""
    return core.call(_core.run_iser, sc, validate_only=True)


def run(sc: dict) -> dict:
    """Run one scenario; returns its record."""
    return core.call(_core.run_iser, sc)


def run_many(scenarios: Sequence[dict], workers: int | None = None, show_progress: bool = True,
             description: str = "simulating iser") -> list[dict]:
    """Validate all, then run in parallel threads (the core releases the GIL); input order kept."""
    return core.run_parallel(run, validate, scenarios, workers, show_progress, description)


def sweep(ops: Sequence[str] = OPS, delays_us: Sequence[float] = (0.0,), seed: int = 1, base: dict | None = None,
          workers: int | None = None, show_progress: bool = True, **params) -> list[dict]:
    """Every (op, delay) point; ``params`` takes any other scenario parameter (``queue_depth``,
    ``block_bytes``, ``fibre_km`` ...)."""
    scenarios = [scenario(base, op=o, delay_us=d, seed=seed, **params) for o in ops for d in delays_us]
    return run_many(scenarios, workers=workers, show_progress=show_progress, description="iser")
