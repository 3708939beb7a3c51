"""``longhaul sweep MODEL``: the cross-product of any scenario parameters, run in parallel on
local cores (threads) or across nodes (MPI), cached in the results store and resumable.

    longhaul sweep verbs --grid '{"delay_us": [0, 100, 1000], "size_bytes": [2048, 65536], "transport": ["rc"]}'
    mpirun -n 8 python -m mpi4py.futures -m longhaul.cli sweep verbs --grid ... --executor mpi
"""

from __future__ import annotations

import argparse
import importlib
import sys

from longhaul import admission, safeio, sweep as _sweep, units
from longhaul.errors import UserError
from longhaul.output import FORMATS, emit
from longhaul.results import Store, add_store_option
from longhaul.sim.points import MODELS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="run a parameter grid of any simulator model (threads or MPI), cached",
                       description="Run the cross-product of scenario parameters through one simulator model, in "
                                   "parallel (threads on this machine, or MPI ranks under mpirun with --executor mpi). "
                                   "Points already in the results store are reused; an interrupted sweep resumes.")
    p.add_argument("model", choices=sorted(MODELS), help="simulator model")
    p.add_argument("--grid", required=True, metavar="JSON",
                   help='JSON object: parameter -> list of values (any parameter of the model\'s scenario, e.g. '
                        '{"delay_us": [0, 1000], "size_bytes": [65536]}; options left out are those of `longhaul sim '
                        'MODEL`; mpi and mpi-tcp take their workload as an object, e.g. {"osu": {"bench": "bw", '
                        '"size_bytes": 65536}, "delay_us": [0, 1000]})')
    p.add_argument("--base", default=None, metavar="FILE", help="base scenario file (TOML or JSON)")
    add_store_option(p)
    p.add_argument("--no-cache", action="store_true", help="recompute every point (results are still saved)")
    p.add_argument("--executor", choices=_sweep.EXECUTORS, default=None, help="threads (default), mpi or serial")
    p.add_argument("--workers", type=units.whole(1, 65536), default=None, help="parallel points (default: all cores)")
    p.add_argument("--label", default="", help="label stored with the runs")
    admission.add_option(p, "an mpi grid (the model whose memory grows with the ranks)")
    p.add_argument("--format", choices=FORMATS, default="table")
    p.set_defaults(func=_run)


def _cli_defaults(model: str, point: dict, base: dict | None) -> dict:
    """What `longhaul sim MODEL` assumes for an option left out, for the keys neither the grid
    point nor the base file gives, so that a grid means the run the sim command would do."""
    from longhaul.commands.simmodels.tcp import DEFAULT_LINK
    from longhaul.commands.simmodels.verbs import default_workload, table_of

    def given(key: str, table: str) -> bool:
        return key in point or key in (base or {}) or key in table_of(base, table)

    out = {}
    if model == "verbs":
        transport = point.get("transport") or table_of(base, "verbs").get("transport")
        for key, value in default_workload(transport).items():
            if not given(key, "verbs"):
                out[key] = value
    elif model == "tcp" and not given("link", "tcp"):
        out["link"] = DEFAULT_LINK
    elif model == "mpi-tcp" and not given("transport", "mpi"):
        out["transport"] = "tcp"  # the mpi model with its TCP channel
    return out


def _verbs_sizes(points: list[dict], base: dict | None) -> list[dict]:
    """A verbs grid whose points and base file give no message size runs the sizes `sim verbs`
    would at each point (a sweep point is one size, so the point becomes one per size)."""
    from longhaul.commands.simmodels.verbs import default_sizes, table_of

    if "size_bytes" in table_of(base, "verbs") or any("size_bytes" in pt for pt in points):
        return points
    return [{**pt, "size_bytes": s} for pt in points
            for s in default_sizes(base, pt.get("transport"), pt.get("test"), pt.get("mtu_bytes"))]


def _grid(text: str) -> list[dict]:
    spec = safeio.parse_json(text, "--grid")   # bounded: a deep grid was a RecursionError traceback
    if not isinstance(spec, dict) or not spec:
        raise UserError('--grid: give a JSON object of lists, e.g. {"delay_us": [0, 1000]}')
    if any(v == [] for v in spec.values()):
        raise UserError("--grid: every parameter needs at least one value")
    return _sweep.grid(_sweep.scenario_names(spec))


def _table_columns(model: str, records: list[dict], points: list[dict]) -> list[str] | None:
    """The table `longhaul sim MODEL` prints (its columns that hold a value here), then the swept
    parameters it leaves out: every field would make a table some 300 characters wide (csv then
    carries every other single-valued field, as `sim`'s does; json every field)."""
    from longhaul.commands.simmodels import iser, mpi, nfs, pfs, tcp, verbs

    shown = {"verbs": verbs.BW_COLUMNS + verbs.LAT_COLUMNS, "tcp": tcp.COLUMNS, "nfs": nfs.COLUMNS, "iser": iser.COLUMNS,
             "pfs": pfs.COLUMNS,
             "mpi": mpi.P2P_COLUMNS + mpi.COLL_COLUMNS + mpi.APP_COLUMNS}.get(model.replace("-tcp", ""), [])
    swept = [k for pt in points for k in pt]
    cols = [c for c in dict.fromkeys(shown + swept) if any(r.get(c) is not None for r in records)]
    return cols or None


def _admit_mpi(scenarios: list[dict], args) -> None:
    """Refuse an MPI grid whose largest points, simulated --workers at a time, would not fit in memory."""
    jobs = [(*admission.mpi_scenario_ranks(sc), admission.mpi_scenario_network(sc)) for sc in scenarios]
    sizes = sorted((admission.mpi_point_bytes(ranks, kind, network), ranks) for ranks, kind, network in jobs
                   if ranks <= admission.MAX_MPI_RANKS)  # more is the core's to refuse
    at_once = admission.at_once(len(scenarios), args.workers if args.executor != "serial" else 1)
    largest = sizes[-at_once:]
    if largest:
        admission.admit(admission.BASE_BYTES + sum(b for b, _ in largest), args.max_memory,
                        f"the grid (its largest point {largest[-1][1]} ranks, {len(largest)} point(s) at once)",
                        "give fewer nodes or ppn in the grid, fewer --workers, or a larger --max-memory")


def _run(args) -> int:
    from longhaul.commands.simmodels.verbs import naming_the_file, table_of
    from longhaul.scenario_file import load_scenario_file

    # mpi-tcp is the mpi model over TCP (_cli_defaults sets the transport); pfs-migrate is longhaul.sim.pfs_migrate
    module = importlib.import_module(f"longhaul.sim.{'mpi' if args.model == 'mpi-tcp' else args.model.replace('-', '_')}")
    base = load_scenario_file(args.base, "--base") if args.base is not None else None
    points = _grid(args.grid)
    if args.model == "verbs":
        points = _verbs_sizes(points, base)
        _sweep.check_points(len(points), "the grid, one point per message size,")
    tables = ("osu", "app", "trace")
    scenarios = []
    for pt in points:
        workload = {k: pt.pop(k) for k in tables if k in pt} if args.model in ("mpi", "mpi-tcp") else {}
        try:
            sc = module.scenario(base, **workload, **_cli_defaults(args.model, pt, base), **pt)
        except TypeError as err:
            raise UserError(f"--grid: {err}") from None
        try:
            module.validate(sc)
        except UserError as err:
            # The file with the point's workload (an MPI file has none, a verbs file may have no
            # size: the grid gives them) and the defaults, but none of the grid's other values.
            if args.model == "verbs" and "size_bytes" not in table_of(base, "verbs"):
                workload = {"size_bytes": pt["size_bytes"]}
            # Called by naming_the_file just below, before the loop moves on: `workload` is this point's.
            file_alone = lambda: module.validate(  # noqa: E731
                module.scenario(base, **workload, **_cli_defaults(args.model, {}, base)))  # noqa: B023
            raise naming_the_file(err, args.base, file_alone, module.FILE_KEYS) from None
        scenarios.append(sc)
    if args.model == "mpi":
        _admit_mpi(scenarios, args)
    store = Store(args.store).check_writable()
    res = _sweep.run(MODELS[args.model], scenarios, kind=args.model, store=store, source="sim",
                     label=args.label, executor=args.executor, workers=args.workers, use_cache=not args.no_cache,
                     description=f"sweep {args.model} ({len(scenarios)} points)")
    emit(res.records, args.format, _table_columns(args.model, res.records, points), title=f"longhaul sweep {args.model}")
    if args.model == "nfs":
        from longhaul.commands.simmodels.nfs import note_warm_up
        note_warm_up(res.records, "simulated_bytes in the grid")
    damaged = f" ({len(store.skipped)} of them damaged in the store, computed again)" if store.skipped else ""
    sys.stderr.write(f"{res.computed} computed{damaged}, {res.cached} cached, {res.seconds:.2f} s\n")
    return 0
