"""``longhaul study [--site FILE]``: study a site (the default: S1's testbed) and write
study/<timestamp>/report.html."""

from __future__ import annotations

import contextlib
import sys
import tempfile
from pathlib import Path

from longhaul import units
from longhaul.results import add_store_option, store_from_args
from longhaul.sweep import EXECUTORS


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "study", help="study a site (your clusters and link; default S1's) and write the report",
        description="Reads the site file (two clusters, the link between them, the workloads that matter, the "
                    "distances to explore; default examples/sites/s1-2008.toml, S1's testbed), runs every study "
                    "part (verbs, TCP, MPI and NFS on the simulator, the validation against every published "
                    "point, your ingested measurements, the emulator), each skipped with a stated reason when it "
                    "cannot run, and writes a self-contained report.html (a summary per layer first) plus a "
                    "Markdown summary. Results are cached in the store by scenario hash: a re-run reuses them, "
                    "and an interrupted run resumes.")
    p.add_argument("--site", metavar="FILE", default=None,
                   help="the site file (TOML, or JSON by its .json name; docs/reference/site-file.md); "
                        "default: examples/sites/s1-2008.toml")
    p.add_argument("--quick", action="store_true", help="a smaller matrix (fewer sizes, delays and transports)")
    p.add_argument("--out", metavar="DIR", help="write the report here (default: study/<UTC timestamp>/)")
    add_store_option(p)
    p.add_argument("--no-cache", action="store_true", help="recompute every point (still saved to the store)")
    p.add_argument("--executor", choices=EXECUTORS, default=None,
                   help="threads (default), mpi (under `mpirun ... python -m mpi4py.futures -m longhaul.cli study`), serial")
    p.add_argument("--workers", type=units.whole(1, 65536), default=None, help="parallel workers (default: os.cpu_count())")
    p.add_argument("--parts", help="comma list of parts to run (default: all; see --list-parts)")
    p.add_argument("--list-parts", action="store_true", help="list the study parts and exit")
    p.add_argument("--no-summary", action="store_true", help="do not print the Markdown summary")
    p.set_defaults(func=cmd_study)


def _check_out_dir(out_dir: Path) -> None:
    """A one-line error when the report cannot be written to ``out_dir``; the directories this
    check creates are removed again (the report's are made when it is written)."""
    from longhaul.errors import UserError

    created = []
    d = out_dir
    while not d.exists() and d != d.parent:
        created.append(d)
        d = d.parent
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out_dir):
            pass
    except OSError as err:
        raise UserError(f"--out: cannot write the report to '{out_dir}' ({err.strerror or err})") from None
    finally:
        for made in created:  # deepest first
            with contextlib.suppress(OSError):
                made.rmdir()


def cmd_study(args) -> int:
    from longhaul import site as site_mod
    from longhaul.errors import UserError
    from longhaul.study import StudyContext, all_parts, default_out_dir, run_study, write_outputs

    if args.list_parts:
        for p in all_parts():
            print(f"{p.name:<12} {p.title}")
        return 0
    # The site is read and checked before anything is made (no store, no report directory).
    site = site_mod.load(args.site)
    # An empty --parts is a list that lost its names (a variable that expanded to nothing), not "all":
    # refused, before the minutes a full study takes.
    only = None
    if args.parts is not None:
        only = units.list_items(args.parts, "--parts", "a part name")
        if not only:
            raise UserError(f"--parts: empty list (give part names: {', '.join(p.name for p in all_parts())})")
    out_dir = Path(args.out) if args.out else default_out_dir()
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"--out '{out_dir}' is a file; give a directory")
    argv = []
    if args.site:
        argv += ["--site", args.site]
    if args.quick:
        argv.append("--quick")
    if args.store:
        argv += ["--store", args.store]
    if only:
        argv += ["--parts", args.parts]
    if args.executor == "serial" and args.workers is not None:
        raise UserError("--workers: not used with --executor serial (one point at a time)")
    # Where the results and the report go is checked before the minutes of the study, not after them.
    _check_out_dir(out_dir)
    store = store_from_args(args).check_writable()
    ctx = StudyContext(site=site, quick=args.quick, store=store, out_dir=out_dir, executor=args.executor,
                       workers=args.workers, use_cache=not args.no_cache, argv=argv)
    study = run_study(ctx, only=only)
    paths = write_outputs(study, out_dir)
    if not args.no_summary:
        from longhaul.report import render_markdown

        sys.stdout.write(render_markdown(study))
    print(f"\nreport: {paths['report']}", file=sys.stderr)
    return 0
