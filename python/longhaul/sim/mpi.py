"""MPI across the simulated long-haul path: OSU-style benchmarks, NAS skeletons, trace replay,
and threshold advice.

``scenario()`` builds the plain-data MPI scenario the Rust core validates and runs; ``run()`` runs
one; ``run_many()`` runs several on local cores; ``osu_sweep()`` / ``app_sweep()`` run the
cross-product of sizes (or apps) and delays; ``tune()`` searches the eager threshold and the
number of process pairs with the simulator itself. Records are flat dicts whose keys carry their
unit (``bw_MBps`` with MB = 10^6 bytes, ``lat_us``, ``msg_rate_Mps``, ``run_time_s``).
"""

from __future__ import annotations

from collections.abc import Sequence

from longhaul import _core
from longhaul.sim import core

BENCHES = core.names("mpi.osu.bench")
ALGOS = core.names("mpi.algo")
RNDV = core.names("mpi.rndv_protocol")
TRANSPORTS = core.names("mpi.transport")
APPS = core.names("mpi.app.name")
CLASSES = core.names("mpi.app.class")
TESTBEDS = core.names("mpi.testbed")
NODES = core.names("mpi.node")
PLACEMENTS = core.names("mpi.placement")
FABRICS = core.names("mpi.fabric")
LIBRARIES = core.names("mpi.library")

_PATH_KEYS = ("delay_us", "fibre_km", "extender", "wan_links", "loss", "mtu_bytes", "extender_buffer_bytes",
              "switch_buffer_bytes")
_CLUSTER_KEYS = ("nodes", "ppn", "placement", "rank_map", "fabric", "switch_latency_ns")
_MPI_KEYS = ("library", "transport", "eager_threshold_bytes", "rndv_protocol", "eager_credits", "send_wqes", "algo", "ud_window",
             "ud_retry_timeout_us", "ud_progress_timeout_us")
_TOP_KEYS = ("seed", "testbed", "hca", "node")
_NODE_KEYS = ("copy_MBps", "mem_MBps", "shm_latency_ns", "core_mops")
#: a parameter's key in a scenario file, for messages about the file's values
FILE_KEYS = core.file_keys({"path": _PATH_KEYS, "cluster": _CLUSTER_KEYS, "mpi": _MPI_KEYS,
                            "node_params": _NODE_KEYS})


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


#: Eager thresholds tried by ``tune`` (bytes), with the library's default: powers of two from MVAPICH2's 8 KiB.
TUNE_THRESHOLDS = (8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576)
TUNE_PAIRS = (1, 2, 4, 8, 16)


def tune(size_bytes: int, delay_us: float, thresholds: Sequence[int] = TUNE_THRESHOLDS,
         pairs: Sequence[int] = TUNE_PAIRS, workers: int | None = None, show_progress: bool = True,
         **params) -> dict:
    """Advice for one message size on one path: the eager threshold maximising osu_bw bandwidth,
    the number of process pairs maximising osu_mbw_mr aggregate bandwidth (with the best
    threshold), and the predicted gains over the library's defaults (its eager threshold, one pair). Every
    number comes from simulating the candidates, so the advice follows the model's mechanisms
    (rendezvous round trips, eager credits, the library's send queue per connection, the WAN rate).
    Over UD/UC with loss the library's retry timeout is chosen first (``_tune_ud_retry``) and the
    rest is searched with it."""
    # The library's defaults as the core resolves them (MVAPICH2's 8 KiB threshold, 500 ms retry).
    lib = validate(scenario(None, osu={"bench": "bw", "size_bytes": size_bytes}, delay_us=delay_us, **params))
    default_t = int(lib["eager_threshold_bytes"])
    retry = _tune_ud_retry(size_bytes, delay_us, workers, show_progress, params, float(lib["ud_retry_timeout_us"]))
    if retry["best_ud_retry_timeout_us"] is not None:
        params = {**params, "ud_retry_timeout_us": retry["best_ud_retry_timeout_us"]}
    cands = sorted({t for t in thresholds if t >= 0} | {default_t})
    scs = [scenario(None, osu={"bench": "bw", "size_bytes": size_bytes}, delay_us=delay_us,
                    eager_threshold_bytes=t, **params) for t in cands]
    recs = run_many(scs, workers=workers, show_progress=show_progress, description="tune: threshold")
    by_t = {t: r["bw_MBps"] or 0.0 for t, r in zip(cands, recs)}
    best_t = max(cands, key=lambda t: (by_t[t], -t))
    pscs = [scenario(None, osu={"bench": "mbw_mr", "size_bytes": size_bytes, "pairs": k}, delay_us=delay_us,
                     eager_threshold_bytes=best_t, **params) for k in pairs]
    precs = run_many(pscs, workers=workers, show_progress=show_progress, description="tune: pairs")
    by_k = {k: r["bw_MBps"] or 0.0 for k, r in zip(pairs, precs)}
    top = max(by_k.values())
    # The fewest pairs within 5% of the best: more processes cost cores for little gain.
    best_k = min(k for k in pairs if by_k[k] >= 0.95 * top)
    base_bw = by_t[default_t]
    return {**retry, "size_bytes": size_bytes, "delay_us": delay_us,
            "default_threshold_bytes": default_t, "default_bw_MBps": base_bw,
            "best_threshold_bytes": best_t, "best_threshold_bw_MBps": by_t[best_t],
            "threshold_gain_pct": 100.0 * (by_t[best_t] / base_bw - 1.0) if base_bw else None,
            "best_pairs": best_k, "best_pairs_bw_MBps": by_k[best_k],
            "pairs_gain_pct": 100.0 * (by_k[best_k] / by_t[best_t] - 1.0) if by_t[best_t] else None,
            "bw_by_threshold_MBps": {str(t): by_t[t] for t in cands},
            "bw_by_pairs_MBps": {str(k): by_k[k] for k in pairs}}


def _tune_ud_retry(size_bytes: int, delay_us: float, workers: int | None, show_progress: bool, params: dict,
                   now: float) -> dict:
    """MPI over UD/UC on a lossy path: the library's retry timeout that maximises osu_bw, against
    the one in use, ``now`` (MVAPICH2's 500 ms unless set). Candidates go down from it to two round trips:
    a lost frame costs one timeout, and one much shorter than the round trip plus queueing
    resends frames that were not lost."""
    if params.get("transport") not in ("ud", "uc") or not params.get("loss"):
        return {"ud_retry_timeout_us": None, "best_ud_retry_timeout_us": None, "ud_retry_gain_pct": None}
    rtt = 2.0 * delay_us + 20.0
    cands = sorted({c for c in (100_000.0, 20_000.0, 5_000.0, 2_000.0, 1_000.0) if 2 * rtt <= c < now}
                   | {min(now, 2 * rtt), min(now, 4 * rtt), now}, reverse=True)
    rest = {k: v for k, v in params.items() if k != "ud_retry_timeout_us"}
    scs = [scenario(None, osu={"bench": "bw", "size_bytes": size_bytes}, delay_us=delay_us, ud_retry_timeout_us=c,
                    **rest) for c in cands]
    recs = run_many(scs, workers=workers, show_progress=show_progress, description="tune: UD retry timeout")
    by_c = {c: r["bw_MBps"] or 0.0 for c, r in zip(cands, recs)}
    top = max(by_c.values())
    # The longest timeout within 5% of the best: fewer needless resends when the path varies.
    best = max(c for c in cands if by_c[c] >= 0.95 * top)
    return {"ud_retry_timeout_us": now, "best_ud_retry_timeout_us": best,
            "ud_retry_gain_pct": 100.0 * (by_c[best] / by_c[now] - 1.0) if by_c[now] else None}
