"""MPI across the simulated long-haul path: OSU-style benchmarks, NAS skeletons, trace replay.

``network`` is ``packet`` (default), ``fluid`` (messages as flows sharing the path max-min:
thousands of ranks in seconds; ``transport`` rc only) or ``auto`` (fluid over rc above 256 ranks,
packet otherwise); the record's ``network`` says which ran.

One MPI model with a channel per transport (``transport``): MVAPICH2 over InfiniBand verbs
(``rc``, ``uc``, ``ud``: the verbs model's path, ``testbed``) or Open MPI's ob1 over TCP
(``tcp``: the TCP model's path, ``rate_gbps``, its ``tcp`` table and ``stack``, Open MPI's TCP
BTL limits ``eager_limit_bytes`` ...). The host stack is a profile name (``STACK_PROFILES``) or
measured costs (``stack_costs``), e.g. fitted from a 0-delay emulator run
(``longhaul.compare.mpi.calibrate_stack``).

``scenario()`` builds the plain-data MPI scenario the Rust core validates and runs; ``run()`` runs
one; ``run_many()`` runs several on local cores; ``osu_sweep()`` / ``app_sweep()`` run the
cross-product of sizes (or apps) and delays. Tuning advice is ``longhaul.tune``. Records are flat
dicts whose keys carry their unit (``bw_MBps`` with MB = 10^6 bytes, ``lat_us``, ``msg_rate_Mps``, ``run_time_s``).
"""

from __future__ import annotations

from collections.abc import Sequence

from longhaul import _core
from longhaul.sim import core

BENCHES = core.names("mpi.osu.bench")
ALGOS = core.names("mpi.algo")
RNDV = core.names("mpi.rndv_protocol")
TRANSPORTS = core.names("mpi.transport")
NETWORKS = core.names("mpi.network")
APPS = core.names("mpi.app.name")
CLASSES = core.names("mpi.app.class")
TESTBEDS = core.names("mpi.testbed")
NODES = core.names("mpi.node")
PLACEMENTS = core.names("mpi.placement")
FABRICS = core.names("mpi.fabric")
LIBRARIES = core.names("mpi.library")
STACK_PROFILES = core.names("mpi.stack")

_PATH_KEYS = ("delay_us", "fibre_km", "extender", "wan_links", "loss", "mtu_bytes", "extender_buffer_bytes",
              "switch_buffer_bytes", "rate_gbps", "queue_bytes", "queue_packets")
#: MPI over TCP: the TCP model's ``tcp`` table
_TCP_KEYS = ("cc", "window_bytes", "rmem_max_bytes", "wmem_max_bytes", "initial_cwnd_segs", "sack", "hystart", "rack",
             "rto_formula", "rto_restart", "rto_ssthresh", "cwnd_growth", "delayed_ack", "min_rto_ms")
_CLUSTER_KEYS = ("nodes", "ppn", "placement", "rank_map", "fabric", "switch_latency_ns")
_MPI_KEYS = ("library", "transport", "network", "eager_threshold_bytes", "rndv_protocol", "eager_credits",
             "send_wqes", "algo", "ud_window",
             "ud_recv_window", "ud_max_retries", "ud_retry_timeout_us", "ud_progress_timeout_us",
             "eager_limit_bytes", "rndv_eager_limit_bytes", "max_send_size_bytes", "per_msg_us", "wan_chunk_bytes")
_TOP_KEYS = ("seed", "testbed", "hca", "node", "stack")
_NODE_KEYS = ("copy_MBps", "mem_MBps", "shm_latency_ns", "core_mops")
#: a parameter's key in a scenario file, for messages about the file's values
FILE_KEYS = core.file_keys({"path": _PATH_KEYS, "cluster": _CLUSTER_KEYS, "mpi": _MPI_KEYS,
                            "node_params": _NODE_KEYS, "tcp": _TCP_KEYS})


def stack_costs(per_seg_us: float, per_byte_ns: float, ack_us: float | None = None, cores: int | None = None) -> dict:
    """The explicit form of a host stack (MPI over TCP): CPU per segment and per payload byte at each end."""
    out = {"per_seg_us": float(per_seg_us), "per_byte_ns": float(per_byte_ns)}
    if ack_us is not None:
        out["ack_us"] = float(ack_us)
    if cores is not None:
        out["cores"] = int(cores)
    return out


#: what each workload table looks like, for the message when one is not a table
WORKLOAD_EXAMPLES = {"osu": '{"bench": "bw", "size_bytes": 65536}', "app": '{"name": "cg", "class": "B"}',
                     "trace": '{"name": "app.trace", "text": "ranks 2\\n..."}'}


def scenario(base: dict | None = None, osu: dict | None = None, app: dict | None = None, trace: dict | None = None,
             **params) -> dict:
    """An MPI scenario dict: ``base`` updated with a workload table and ``params`` (None = unset)."""
    sc = core.base_copy(base, ("path", "cluster", "mpi", "node_params"))
    for key, table in (("osu", osu), ("app", app), ("trace", trace)):
        if table is not None:
            sc[key] = core.workload_table(key, table, WORKLOAD_EXAMPLES[key])
    for key, value in params.items():
        if value is None:
            continue
        if key in _PATH_KEYS:
            sc["path"][key] = value
        elif key in _CLUSTER_KEYS:
            sc["cluster"][key] = value
        elif key in _MPI_KEYS:
            sc["mpi"][key] = value
        elif key in _TOP_KEYS:
            sc[key] = value
        elif key in _NODE_KEYS:
            sc["node_params"][key] = value
        elif key in _TCP_KEYS:
            sc.setdefault("tcp", {})[key] = value
        else:
            raise core.unknown_parameter("MPI ", key, [*FILE_KEYS, *_TOP_KEYS])
    return sc


def validate(sc: dict) -> dict:
    """Resolve a scenario (every parameter in range) or raise UserError with the core's message.
    Returns the MPI library's parameters as resolved (``MpiParams``: the core's defaults where
    the scenario is silent, before the eager limits that follow from the job's size)."""
    return core.call(_core.run_mpi, sc, True)


def run(sc: dict) -> dict:
    """Run one scenario; returns its record."""
    return core.call(_core.run_mpi, sc)


def run_many(scenarios: Sequence[dict], workers: int | None = None, show_progress: bool = True,
             description: str = "simulating MPI") -> list[dict]:
    """Validate all, then run in parallel threads (the core releases the GIL); input order kept."""
    return core.run_parallel(run, validate, scenarios, workers, show_progress, description)


def osu_sweep(bench: str, sizes: Sequence[int], delays_us: Sequence[float] = (0.0,), workers: int | None = None,
              show_progress: bool = True, base: dict | None = None, iterations: int | None = None,
              warmup: int | None = None, window: int | None = None, pairs: int | None = None,
              root: int | None = None, where: Sequence[dict] | None = None, **params) -> list[dict]:
    """Every (delay, size) point of one OSU benchmark. ``where`` replaces ``delays_us`` with path
    dicts (e.g. ``[{"fibre_km": 10}]``); ``params`` take any scenario parameter."""
    points = list(where) if where is not None else [{"delay_us": d} for d in delays_us]
    scs = [scenario(base, osu={"bench": bench, "size_bytes": s, "iterations": iterations, "warmup": warmup,
                               "window": window, "pairs": pairs, "root": root}, **{**params, **w})
           for w in points for s in sizes]
    return run_many(scs, workers=workers, show_progress=show_progress, description=f"osu {bench}")


def app_sweep(apps: Sequence[str], klass: str = "B", delays_us: Sequence[float] = (0.0,),
              compute_us_per_iter: float | None = None, iterations: int | None = None, workers: int | None = None,
              show_progress: bool = True, base: dict | None = None, where: Sequence[dict] | None = None,
              **params) -> list[dict]:
    """NAS skeleton run times for every (app, delay)."""
    points = list(where) if where is not None else [{"delay_us": d} for d in delays_us]
    scs = [scenario(base, app={"name": a, "class": klass, "compute_us_per_iter": compute_us_per_iter,
                               "iterations": iterations}, **{**params, **w})
           for a in apps for w in points]
    return run_many(scs, workers=workers, show_progress=show_progress, description="NAS skeletons")


def replay(text: str, name: str, delays_us: Sequence[float] = (0.0,), workers: int | None = None,
           show_progress: bool = True, where: Sequence[dict] | None = None, **params) -> list[dict]:
    """Replay a trace (format: docs/reference/trace-format.md) at every delay."""
    points = list(where) if where is not None else [{"delay_us": d} for d in delays_us]
    scs = [scenario(None, trace={"name": name, "text": text}, **{**params, **w}) for w in points]
    return run_many(scs, workers=workers, show_progress=show_progress, description=f"replay {name}")
