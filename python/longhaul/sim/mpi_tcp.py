"""MPI over TCP across the simulated long-haul path: Open MPI's ob1 PML on the TCP BTL (eager up
to ``btl_tcp_eager_limit``, rendezvous above it), one TCP connection per rank pair, running the
OSU latency, bw and bibw benchmarks (one rank pair) and osu_bcast (``ranks_per_cluster`` ranks
in each cluster; ``algo`` = default: Open MPI 4.1's own broadcast, or hierarchical:
``longhaul.mpi.HierComm.Bcast`` with ``wan_chunk_bytes`` pieces) on the simulator's TCP model (sender, receiver, host stack
costs, Linux buffer auto-tuning, congestion control) over a plain WAN link of a given rate and
delay - the shape of the link emulator's path.

``scenario()`` builds the plain-data scenario the Rust core validates and runs; ``run()`` runs
one; ``osu_sweep()`` runs every (delay, size) point. Records have the keys of ``longhaul.sim.mpi``
records (``transport = "tcp"``; ``bw_MBps`` with MB = 10^6 bytes, ``lat_us``).

The host stack is a profile name (``modern``, ``s1``, ``s3``, ``ideal``) or measured costs
``{"per_seg_us": ..., "per_byte_ns": ...}`` (see ``stack_costs``), e.g. fitted from a 0-delay
emulator run (``longhaul.compare.mpi.calibrate_stack``).
"""

from __future__ import annotations

from collections.abc import Sequence

from longhaul import _core
from longhaul.errors import UserError
from longhaul.sim import core

BENCHES = core.names("mpi_tcp.osu.bench")
STACK_PROFILES = core.names("mpi_tcp.stack")

_PATH_KEYS = ("delay_us", "fibre_km", "rate_gbps", "queue_bytes", "queue_packets", "loss")
_TCP_KEYS = ("cc", "mtu_bytes", "window_bytes", "rmem_max_bytes", "wmem_max_bytes", "initial_cwnd_segs", "sack",
             "hystart", "rack", "rto_formula", "rto_restart", "rto_ssthresh", "cwnd_growth",
             "delayed_ack", "min_rto_ms")
_MPI_KEYS = ("eager_limit_bytes", "rndv_eager_limit_bytes", "max_send_size_bytes", "per_msg_us")
_COLL_KEYS = ("ranks_per_cluster", "algo", "wan_chunk_bytes")
_TOP_KEYS = ("seed", "stack")
#: a parameter's key in a scenario file, for messages about the file's values
FILE_KEYS = core.file_keys({"path": _PATH_KEYS, "tcp": _TCP_KEYS, "mpi": _MPI_KEYS, "coll": _COLL_KEYS})


def stack_costs(per_seg_us: float, per_byte_ns: float, ack_us: float | None = None, cores: int | None = None) -> dict:
    """The explicit form of a host stack: CPU per segment and per payload byte at each end."""
    out = {"per_seg_us": float(per_seg_us), "per_byte_ns": float(per_byte_ns)}
    if ack_us is not None:
        out["ack_us"] = float(ack_us)
    if cores is not None:
        out["cores"] = int(cores)
    return out


def scenario(base: dict | None = None, osu: dict | None = None, **params) -> dict:
    """An MPI-over-TCP scenario dict: ``base`` updated with the OSU table and ``params`` (None = unset)."""
    sc = core.base_copy(base, ("path", "tcp", "mpi", "coll"))
    if osu is not None:
        sc["osu"] = core.workload_table("osu", osu, '{"bench": "bw", "size_bytes": 65536}')
    for key, value in params.items():
        if value is None:
            continue
        table = ("path" if key in _PATH_KEYS else "tcp" if key in _TCP_KEYS else "mpi" if key in _MPI_KEYS
                 else "coll" if key in _COLL_KEYS else None if key in _TOP_KEYS else "?")
        if table == "?":
            raise core.unknown_parameter("MPI-over-TCP ", key, [*FILE_KEYS, *_TOP_KEYS])
        (sc[table] if table else sc)[key] = value
    return sc


def validate(sc: dict) -> None:
    core.call(_core.run_mpi_tcp, sc, True)


def run(sc: dict) -> dict:
    return core.call(_core.run_mpi_tcp, sc)


def osu_sweep(bench: str, sizes: Sequence[int], delays_us: Sequence[float] = (0.0,), workers: int | None = None,
              show_progress: bool = True, base: dict | None = None, iterations: int | None = None,
              warmup: int | None = None, window: int | None = None, where: Sequence[dict] | None = None,
              **params) -> list[dict]:
    """Every (delay, size) point of one OSU benchmark (latency, bw, bibw, bcast). ``where`` replaces
    ``delays_us`` with path dicts; ``params`` take any scenario parameter."""
    if bench not in BENCHES:
        raise UserError(f"--bench: '{bench}' does not run over the TCP transport (valid: {', '.join(BENCHES)})")
    points = list(where) if where is not None else [{"delay_us": d} for d in delays_us]
    scs = [scenario(base, osu={"bench": bench, "size_bytes": s, "iterations": iterations, "warmup": warmup,
                               "window": window}, **{**params, **w})
           for w in points for s in sizes]
    return core.run_parallel(run, validate, scs, workers, show_progress, f"osu {bench} over tcp")
