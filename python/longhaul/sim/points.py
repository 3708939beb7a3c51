"""Point functions for ``longhaul.sweep``: one full model scenario in, its records out.
Module-level (importable by name) so MPI workers of a distributed sweep can load them."""

from __future__ import annotations


def verbs_point(sc: dict) -> list[dict]:
    from longhaul.sim import verbs

    return [verbs.run(sc)]


def tcp_point(sc: dict) -> list[dict]:
    from longhaul.sim import tcp

    return [tcp.run(sc)]


def mpi_point(sc: dict) -> list[dict]:
    from longhaul.sim import mpi

    return [mpi.run(sc)]


def nfs_point(sc: dict) -> list[dict]:
    from longhaul.sim import nfs

    return [nfs.run(sc)]


def pfs_point(sc: dict) -> list[dict]:
    from longhaul.sim import pfs

    return [pfs.run(sc)]


def iser_point(sc: dict) -> list[dict]:
    from longhaul.sim import iser

    return [iser.run(sc)]


def pfs_migrate_point(sc: dict) -> list[dict]:
    from longhaul.sim import pfs_migrate

    return [pfs_migrate.run(sc)]


def mpi_tcp_point(sc: dict) -> list[dict]:
    """An MPI scenario over TCP (``mpi.transport`` = tcp unless the scenario says otherwise)."""
    from longhaul.sim import mpi

    return [mpi.run({**sc, "mpi": {"transport": "tcp", **(sc.get("mpi") or {})}})]


#: model name -> point function
MODELS = {"verbs": verbs_point, "tcp": tcp_point, "mpi": mpi_point, "nfs": nfs_point, "iser": iser_point,
          "pfs": pfs_point, "pfs-migrate": pfs_migrate_point, "mpi-tcp": mpi_tcp_point}
