"""Which ranks share a cluster.

Sources, in order: an explicit map (a list with one cluster id per rank); the environment
variable ``LONGHAUL_CLUSTER`` that ``longhaul emu`` sets in each emulated cluster; a regular
expression whose first group, applied to the host name, names the cluster (e.g.
``r"^(site-[ab])-node\\d+$"`` for hostfiles like site-a-node01); else the host name itself
(each host its own cluster: right when one host stands for one site).
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mpi4py import MPI

ENV_CLUSTER = "LONGHAUL_CLUSTER"


def local_cluster_label(pattern: str | None = None, hostname: str | None = None) -> str:
    """This process's cluster label (before agreement across ranks). Needs no MPI: the host name
    is the one MPI_Get_processor_name reports on Linux."""
    env = os.environ.get(ENV_CLUSTER)
    if env:
        return env
    host = hostname or socket.gethostname()
    if pattern:
        m = re.match(pattern, host)
        if not m or not m.groups():
            raise ValueError(f"cluster pattern {pattern!r} does not match host name {host!r} with a group")
        return m.group(1)
    return host


def cluster_of_ranks(comm: MPI.Comm, cluster_map: Sequence[int | str] | None = None, pattern: str | None = None) -> list[int]:
    """Cluster index of every rank of ``comm`` (0, 1, ... in order of first appearance).

    Collective: every rank must call it. ``cluster_map`` (one entry per rank) wins if given.
    """
    size = comm.Get_size()
    if cluster_map is not None:
        if len(cluster_map) != size:
            raise ValueError(f"cluster_map has {len(cluster_map)} entries for {size} ranks")
        labels = [str(c) for c in cluster_map]
    else:
        labels = comm.allgather(local_cluster_label(pattern))
    index: dict[str, int] = {}
    return [index.setdefault(label, len(index)) for label in labels]
