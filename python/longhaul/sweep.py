"""Sweeps: the cross-product of parameter lists run through a point function, cached and resumable.

A point function takes one scenario (a dict of JSON values) and returns a list of records
(flat dicts whose keys carry their unit). ``run`` computes every scenario not already in the
store, in parallel, and saves each finished point at once (atomically), so Ctrl-C loses only
the points in flight: running the same sweep again computes just the missing ones. Saving a point
costs the same in a sweep of 100 points as in one of 100,000 (``Store.put`` appends the point's
index entry to a journal); the journal is folded into the store's manifest.json when the sweep
ends, however it ends.

Executors:
  * ``threads`` (default): a ThreadPoolExecutor with ``os.cpu_count()`` workers. The Rust core
    releases the GIL while it simulates, so threads use every core without pickling.
  * ``mpi``: ``mpi4py.futures.MPIPoolExecutor`` to spread points over the ranks of an MPI job,
    started as ``mpirun -n N python -m mpi4py.futures -m longhaul.sweep ...`` (or
    ``... -m longhaul.cli study --executor mpi``). Rank 0 runs the sweep and alone writes the
    store; the other ranks only compute. The point function must be importable (module level).
  * ``serial``: in the calling thread (debugging, deterministic order).

As a module (for MPI jobs)::

    python -m longhaul.sweep --fn longhaul.sweep:demo_point --grid '{"x": [1, 2, 3]}' \\
        --kind demo --store results [--executor threads|mpi|serial]
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import importlib
import itertools
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from longhaul import safeio, units
from longhaul.errors import UserError
from longhaul.output import progress
from longhaul.results import Store, now_utc
from longhaul.sim.core import cancel_on_interrupt, runs_progress

EXECUTORS = ("threads", "mpi", "serial")
ENV_EXECUTOR = "LONGHAUL_EXECUTOR"

PointFn = Callable[[dict], list]


#: A grid's keys may be the names the output uses or the options the CLI takes (``--distance-km``,
#: ``distance-km`` and ``distance_km`` alike): each is the scenario parameter it sets.
GRID_NAMES = {"distance_km": "fibre_km", "profile": "testbed", "sizes": "size_bytes", "size": "size_bytes",
              "mtu": "mtu_bytes", "window": "window_bytes", "qp_timeout": "timeout_exp",
              "extender_buffer": "extender_buffer_bytes", "switch_buffer": "switch_buffer_bytes",
              "rndv_threshold": "eager_threshold_bytes", "cross_packet": "cross_packet_bytes"}


def scenario_names(params: Mapping[str, object]) -> dict:
    """A grid with every key the scenario parameter it names (``GRID_NAMES``; ``distance_miles``
    becomes ``fibre_km``, its values converted; a size given as text, "64K", becomes bytes). Two
    keys that name one parameter are refused, naming both."""
    out: dict = {}
    given: dict[str, str] = {}
    for key, raw in params.items():
        name = GRID_NAMES.get(key.lstrip("-").replace("-", "_"), key.lstrip("-").replace("-", "_"))
        value = _values_of(name, key, raw)
        if name == "distance_miles":
            name = "fibre_km"
        if name in out:
            raise UserError(f"sweep parameter '{key}': names the same parameter as '{given[name]}' ({name}); give one")
        out[name], given[name] = value, key
    return out


def _values_of(name: str, key: str, value: object) -> object:
    """A grid entry's values in the parameter's unit: miles as km, sizes given as text as bytes."""
    if name == "distance_miles":
        return _each(value, lambda m: float(m) * units.KM_PER_MILE if isinstance(m, (int, float)) and _number(m) else m)
    if name.endswith("_bytes"):
        return _each(value, lambda v: units.parse_size(v, f"sweep parameter '{key}'") if isinstance(v, str) else v)
    return value


def _each(value: object, f: Callable[[object], object]) -> object:
    return [f(v) for v in value] if isinstance(value, (list, tuple)) else f(value)


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def grid(params: Mapping[str, object]) -> list[dict]:
    """Cross-product of parameter lists, in the order the keys are given (last key varies fastest).

    A scalar value is a list of one; a value repeated in a list is one point (with a note on stderr).
    ``grid({"a": [1, 2], "b": "x"})`` ->
    ``[{"a": 1, "b": "x"}, {"a": 2, "b": "x"}]``.
    """
    keys = list(params)
    lists = []
    for k in keys:
        v = params[k]
        values = list(v) if isinstance(v, (list, tuple)) else [v]
        if not values:
            raise UserError(f"sweep parameter '{k}': empty list (give at least one value)")
        if any(x is None for x in values):   # a model reads None as "not given" and ran its default
            raise UserError(f"sweep parameter '{k}': null is not a value (leave the parameter out of the grid for "
                            "its default)")
        lists.append(units.unique(values, f"sweep parameter '{k}'") if isinstance(v, (list, tuple)) else values)
    check_points(math.prod(len(values) for values in lists), "the grid")
    return [dict(zip(keys, combo)) for combo in itertools.product(*lists)]


#: The most points one sweep runs: each is a run file in the store, and its scenario and records
#: are held until the sweep prints them. An 18-million-point grid grew to 3.6 GB in 60 s before
#: computing anything; the count is known before one point is built.
MAX_POINTS = 100_000


def check_points(n: int, what: str) -> None:
    """Refuse a sweep of more than MAX_POINTS points, before any is built."""
    if n > MAX_POINTS:
        raise UserError(f"--grid: {what} has {n:,} points, over the limit of {MAX_POINTS:,} a sweep "
                        "(split it into several sweeps; each point is one run in the store)")


@dataclass
class SweepResult:
    records: list[dict] = field(default_factory=list)
    computed: int = 0
    cached: int = 0
    run_ids: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _make_executor(kind: str, workers: int | None):
    if kind == "threads":
        return cf.ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1)
    if kind == "mpi":
        try:
            from mpi4py.futures import MPIPoolExecutor
        except ImportError as err:
            raise UserError(f"--executor mpi needs mpi4py and an MPI library ({err}); "
                            "install Open MPI (openmpi-bin) and pip mpi4py") from None
        return MPIPoolExecutor(max_workers=workers) if workers else MPIPoolExecutor()
    raise UserError(f"--executor '{kind}' is not one of {', '.join(EXECUTORS)}")


def _full(kind: str, scenario: dict) -> dict:
    return {"kind": kind, **scenario} if "kind" not in scenario else dict(scenario)


def run(fn: PointFn, scenarios: Iterable[dict], *, kind: str, store: Store | None = None,
        source: str = "sim", label: str = "", workers: int | None = None, use_cache: bool = True,
        executor: str | None = None, description: str | None = None) -> SweepResult:
    """Run ``fn`` on every scenario; return all records in scenario order.

    ``kind`` names what ``fn`` computes and is part of the cache key (``{"kind": kind, **scenario}``).
    Without a store nothing is cached or saved. Points already stored (same scenario, same
    software version) are read back instead of computed. Each computed point is saved as soon
    as it finishes; on an error or Ctrl-C the finished points stay saved and the first error is
    raised after the points in flight end.
    """
    started = time.perf_counter()
    executor = executor or os.environ.get(ENV_EXECUTOR) or "threads"
    if executor not in EXECUTORS:
        raise UserError(f"--executor '{executor}' is not one of {', '.join(EXECUTORS)}")
    scenarios = [dict(s) for s in scenarios]
    results: list[list[dict] | None] = [None] * len(scenarios)
    run_ids: list[str] = [""] * len(scenarios)
    todo = []
    res = SweepResult()
    for i, sc in enumerate(scenarios):
        full = _full(kind, sc)
        if store is not None and use_cache:
            cached = store.get_cached(full)
            if cached is not None:
                results[i] = cached
                res.cached += 1
                continue
        todo.append(i)

    def finish(i: int, records: list, t0: str) -> None:
        records = [dict(r) for r in records]
        results[i] = records
        if store is not None:
            run_ids[i] = store.put(_full(kind, scenarios[i]), records, source=source, label=label,
                                   seed=scenarios[i].get("seed"), started_utc=t0, finished_utc=now_utc())
        res.computed += 1

    desc = description or f"{kind}: {len(todo)} points ({res.cached} cached)"
    try:
        first_error = _compute(fn, scenarios, todo, finish, executor, workers, desc)
    except BaseException:
        # Ctrl-C or a store error: the saved points are indexed too, but a failing fold must not
        # hide the error (the journal stays, and the next read of the store folds it).
        if store is not None and res.computed:
            with contextlib.suppress(Exception):
                store.fold_journal()
        raise
    if store is not None and res.computed:
        store.fold_journal()   # the manifest.json of the store lists every point of the sweep
    if first_error is not None:
        raise first_error
    for recs in results:
        res.records.extend(recs or [])
    res.run_ids = [r for r in run_ids if r]
    res.seconds = time.perf_counter() - started
    return res


def _compute(fn: PointFn, scenarios: list[dict], todo: list[int], finish, executor: str, workers: int | None,
             desc: str) -> BaseException | None:
    """Compute the points ``todo`` and ``finish`` each; the first point error (raised by the caller
    once the others have ended), or None."""
    first_error: BaseException | None = None
    if executor == "serial" or not todo:
        # The point runs in this thread, and the core (which lets go of the GIL while it runs)
        # reports its share done.
        for i in progress(iter(todo), total=len(todo), description=desc, partial=runs_progress):
            t0 = now_utc()
            finish(i, fn(scenarios[i]), t0)
    else:
        pool = _make_executor(executor, workers)
        t0s = {}
        futures = {}
        try:
            with cancel_on_interrupt():
                for i in todo:
                    t0s[i] = now_utc()
                    futures[pool.submit(fn, scenarios[i])] = i
                partial = runs_progress if executor == "threads" else None  # other processes' runs are not seen here
                for fut in progress(cf.as_completed(futures), total=len(futures), description=desc, partial=partial):
                    i = futures[fut]
                    try:
                        records = fut.result()
                    except Exception as err:  # noqa: BLE001 - keep going: finished points are saved, error raised at the end
                        if first_error is None:
                            first_error = err
                        continue
                    finish(i, records, t0s[i])
        except BaseException:
            # Ctrl-C (or a store error): drop queued points, keep the saved ones, let running ones
            # end (after Ctrl-C the simulator's end at once: cancel_on_interrupt cancels them).
            for fut in futures:
                fut.cancel()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
    return first_error


# --------------------------------------------------------------------------- module entry
def demo_point(scenario: dict) -> list[dict]:
    """A cheap point function for tests and MPI smoke runs: y = x^2 (records the worker pid;
    ``sleep_s`` makes it slow enough to interrupt)."""
    x = float(scenario["x"])
    if scenario.get("sleep_s"):
        time.sleep(float(scenario["sleep_s"]))
    return [{"x": x, "y": x * x, "delay_us": float(scenario.get("delay_us", 0.0)), "worker_pid": os.getpid()}]


def load_fn(spec: str) -> PointFn:
    """'package.module:function' -> the function."""
    mod, _, name = spec.partition(":")
    if not mod or not name:
        raise UserError(f"--fn '{spec}': give MODULE:FUNCTION, e.g. longhaul.sweep:demo_point")
    try:
        return getattr(importlib.import_module(mod), name)
    except (ImportError, AttributeError) as err:
        raise UserError(f"--fn '{spec}': cannot load it ({err})") from None


def main(argv: Sequence[str] | None = None) -> int:
    from longhaul.output import FORMATS, emit
    from longhaul.parser import Parser, say_error  # one-line errors, as the longhaul command's

    p = Parser(prog="python -m longhaul.sweep",
               description="Run a parameter grid through a point function (MPI-ready).")
    p.add_argument("--fn", required=True, help="MODULE:FUNCTION taking a scenario dict, returning records")
    p.add_argument("--grid", required=True, help='JSON object of parameter lists, e.g. \'{"x": [1, 2]}\'')
    p.add_argument("--kind", required=True, help="what the function computes (part of the cache key)")
    p.add_argument("--store", default=None, help="results directory (default $LONGHAUL_STORE or ./results)")
    p.add_argument("--no-store", action="store_true", help="neither read nor write the store")
    p.add_argument("--source", default="sim", choices=("sim", "emu", "measured"))
    p.add_argument("--label", default="")
    p.add_argument("--executor", choices=EXECUTORS, default=None)
    p.add_argument("--workers", type=units.whole(1, 65536), default=None)
    p.add_argument("--format", choices=FORMATS, default="table")
    args = p.parse_args(argv)
    try:
        params = safeio.parse_json(args.grid, "--grid")
        if not isinstance(params, dict):
            raise UserError('--grid: give a JSON object of lists, e.g. {"x": [1, 2]}')
        fn = load_fn(args.fn)
        store = None if args.no_store else Store(args.store).check_writable()
        res = run(fn, grid(params), kind=args.kind, store=store, source=args.source, label=args.label,
                  executor=args.executor, workers=args.workers)
    except UserError as err:
        say_error(str(err))
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("longhaul: interrupted (completed points are kept; re-run to resume)\n")
        return 130
    emit(res.records, args.format)
    sys.stderr.write(f"{res.computed} computed, {res.cached} cached, {res.seconds:.2f} s\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
