"""WAN-aware collectives for MPI programs (mpi4py): ranks are grouped by cluster, and every
collective crosses the long-haul link once per message instead of once per rank pair.

    from mpi4py import MPI
    from longhaul.mpi import HierComm
    h = HierComm(MPI.COMM_WORLD)            # clusters from $LONGHAUL_CLUSTER, else by hostname
    h.Bcast(buf, root=0)
    h.Allreduce(sendbuf, recvbuf, op=MPI.SUM)

Buffers are numpy arrays (or anything exposing the buffer protocol with a numpy view).
Reductions must use commutative operations (all of MPI's built-in ones are): the hierarchical
order combines values cluster by cluster, so floating-point sums may differ from the flat
algorithm in the last bits, exactly as they do between MPI's own algorithm choices.
"""

from typing import Any

__all__ = ["HierComm", "cluster_of_ranks"]


def __getattr__(name: str) -> Any:  # HierComm (a class) or cluster_of_ranks (a function)
    # Imported on first use: importing mpi4py.MPI initialises MPI, which a process that only
    # launches MPI jobs (the emulator's controller, a test runner) must not do.
    if name == "HierComm":
        from longhaul.mpi.hier import HierComm

        return HierComm
    if name == "cluster_of_ranks":
        from longhaul.mpi.topology import cluster_of_ranks

        return cluster_of_ranks
    raise AttributeError(f"module 'longhaul.mpi' has no attribute {name!r}")
