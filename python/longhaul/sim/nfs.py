"""NFS read throughput (IOzone, NFSv3 READs from T client threads) on the simulated long-haul path,
over NFS/RDMA or NFS over TCP on IPoIB connected (``ipoib-rc``) or datagram (``ipoib-ud``) mode.

``scenario()`` builds the plain-data scenario the Rust core validates and runs; ``run()`` runs one;
``run_many()`` runs several on local cores; ``sweep()`` runs transports x delays. Records are flat
dicts whose keys carry their unit (``bw_MBps`` with MB = 10^6 bytes).
"""

from __future__ import annotations

from collections.abc import Sequence

from longhaul import _core
from longhaul.sim import core

TRANSPORTS = core.names("nfs.transport")
TESTBEDS = core.names("nfs.testbed")
_PATH_KEYS = ("delay_us", "fibre_km", "extender")
_NFS_KEYS = ("threads", "record_bytes", "file_bytes", "simulated_bytes", "rsize_bytes", "direct_io", "slots",
             "readahead_bytes", "server_rpc_ns", "client_rpc_ns")
#: a parameter's key in a scenario file, for messages about the file's values
FILE_KEYS = core.file_keys({"path": _PATH_KEYS, "nfs": _NFS_KEYS})


def scenario(base: dict | None = None, **params) -> dict:
    """A scenario dict: ``base`` (e.g. read from a file) updated with ``params`` (None = unset)."""
    sc = core.base_copy(base, ("path", "nfs"))
    for key, value in params.items():
        if value is None:
            continue
        if key in _PATH_KEYS:
            sc["path"][key] = value
        elif key in _NFS_KEYS:
            sc["nfs"][key] = value
        elif key in ("seed", "testbed", "transport"):
            sc[key] = value
        else:
            raise core.unknown_parameter("", key, [*FILE_KEYS, "seed", "testbed", "transport"])
    sc.setdefault("transport", "rdma")
    return sc


def validate(sc: dict) -> dict:
    """Resolve a scenario (every parameter in range) or raise UserError with the core's message."""
    return core.call(_core.run_nfs, sc, validate_only=True)


def run(sc: dict) -> dict:
    """Run one scenario; returns its record."""
    return core.call(_core.run_nfs, sc)


def run_many(scenarios: Sequence[dict], workers: int | None = None, show_progress: bool = True,
             description: str = "simulating nfs") -> list[dict]:
    """Validate all, then run in parallel threads (the core releases the GIL); input order kept."""
    return core.run_parallel(run, validate, scenarios, workers, show_progress, description)


def sweep(transports: Sequence[str] = TRANSPORTS, delays_us: Sequence[float] = (0.0,), seed: int = 1,
          base: dict | None = None, workers: int | None = None, show_progress: bool = True, **params) -> list[dict]:
    """Every (transport, delay) point; ``params`` takes any other scenario parameter (``threads``,
    ``rsize_bytes``, ``fibre_km`` ...)."""
    scenarios = [scenario(base, transport=t, delay_us=d, seed=seed, **params) for t in transports for d in delays_us]
    return run_many(scenarios, workers=workers, show_progress=show_progress, description="nfs")

