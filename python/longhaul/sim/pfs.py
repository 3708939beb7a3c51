"""A parallel file system (GPFS-like, or Lustre-like) across the long-haul link: client threads
writing or reading blocks to NSD servers and their LUNs over ``wan_links`` parallel WAN links,
with ``[[events]]`` unplugging and replugging links (the schema of ``longhaul.failover``) and the
subnet manager's timing in ``[subnet_manager]`` (as for ``sim verbs``).

``scenario()`` builds the plain-data scenario the Rust core validates and runs (a flow-level
model: minutes of traffic in seconds); ``run()`` runs one and returns its record: the time
series, the run cut into phases at its events, recovery after a replug, RPC latency
percentiles and the ledger (every acknowledged write on a server exactly once).
"""

from __future__ import annotations

from longhaul import _core
from longhaul.sim import core

VARIANTS = core.names("pfs.variant")
TESTBEDS = core.names("pfs.testbed")
OPS = ("write", "read")
NETWORKS = core.names("pfs.network")
TRANSPORTS = core.names("pfs.transport")
_PATH_KEYS = ("delay_us", "fibre_km", "extender", "wan_links")
_PFS_KEYS = ("variant", "op", "clients", "threads", "servers", "luns_per_server", "data_disks", "disk_MBps",
             "block_bytes", "stripe_count", "pagepool_bytes", "file_bytes", "duration_s", "interval_s", "lmc",
             "ack_timeout_exp", "retry_count", "apm", "network", "transport")
#: the subnet manager's timing, the ``[subnet_manager]`` table of ``sim verbs`` too
_SM_KEYS = ("sweep_interval_s", "traps", "reroute_s", "link_training_s")
#: a parameter's key in a scenario file, for messages about the file's values
FILE_KEYS = core.file_keys({"path": _PATH_KEYS, "pfs": _PFS_KEYS, "subnet_manager": _SM_KEYS})


def scenario(base: dict | None = None, events: list[dict] | None = None, **params) -> dict:
    """A scenario dict: ``base`` (e.g. read from a file) updated with ``params`` (None = unset);
    ``events`` (``[{"at_s", "link", "action"}]``) replace the file's when given."""
    sc = core.base_copy(base, ("path", "pfs"))
    for key, value in params.items():
        if value is None:
            continue
        if key in _PATH_KEYS:
            sc["path"][key] = value
        elif key in _PFS_KEYS:
            sc["pfs"][key] = value
        elif key in _SM_KEYS:
            sc.setdefault("subnet_manager", {})[key] = value
        elif key in ("seed", "testbed"):
            sc[key] = value
        else:
            raise core.unknown_parameter("pfs ", key, [*FILE_KEYS, "seed", "testbed"])
    if events is not None:
        sc["events"] = events
    return sc


def validate(sc: dict) -> dict:
    """Resolve a scenario (every parameter in range) or raise UserError with the core's message."""
    return core.call(_core.run_pfs, sc, validate_only=True)


def run(sc: dict) -> dict:
    """Run one scenario; returns its record."""
    return core.call(_core.run_pfs, sc)
