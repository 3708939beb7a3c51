"""Migration planning for a parallel file system across the long-haul link: moving D bytes in F
files from one site's NSD servers to the other's, by GPFS's restripe (new NSDs added, the old
ones emptied by mmrestripefs / mmdeldisk on the -N nodes) or by a parallel copy (cp/rsync
streams).

``scenario()`` builds the plain-data scenario the Rust core validates; ``run()`` estimates it
(a flow-level model: the max-min fair rates of the disks, servers, adapters and WAN links
every moved block uses) and returns its record: predicted time, rate, the bottleneck, each
resource's load and the what-if table (links and servers added or lost).
"""

from __future__ import annotations

from longhaul import _core
from longhaul.sim import core

METHODS = core.names("pfs.migrate.method")
NODES_AT = core.names("pfs.migrate.nodes_at")
TESTBEDS = core.names("pfs.testbed")
_PATH_KEYS = ("delay_us", "fibre_km", "extender", "wan_links")
_MIGRATE_KEYS = ("method", "data_bytes", "files", "source_nsds", "move_nsds", "target_nsds", "source_servers",
                 "target_servers", "nodes", "nodes_at", "threads", "streams", "data_disks", "disk_MBps", "block_bytes")
#: a parameter's key in a scenario file, for messages about the file's values
FILE_KEYS = core.file_keys({"path": _PATH_KEYS, "migrate": _MIGRATE_KEYS})


def scenario(base: dict | None = None, **params) -> dict:
    """A scenario dict: ``base`` (e.g. read from a file) updated with ``params`` (None = unset)."""
    sc = core.base_copy(base, ("path", "migrate"))
    for key, value in params.items():
        if value is None:
            continue
        if key in _PATH_KEYS:
            sc["path"][key] = value
        elif key in _MIGRATE_KEYS:
            sc["migrate"][key] = value
        elif key in ("seed", "testbed"):
            sc[key] = value
        else:
            raise core.unknown_parameter("pfs migrate ", key, [*FILE_KEYS, "seed", "testbed"])
    return sc


def validate(sc: dict) -> dict:
    """Resolve a scenario (every parameter in range) or raise UserError with the core's message."""
    return core.call(_core.run_pfs_migrate, sc, validate_only=True)


def run(sc: dict) -> dict:
    """Estimate one migration; returns its record."""
    return core.call(_core.run_pfs_migrate, sc)
