"""``longhaul emu mpi run|osu``: argument parsing and printing for real MPI programs across the
emulated link (the work is in longhaul.emu.mpi and longhaul.emu.mpi_bench)."""

from __future__ import annotations

import sys

from longhaul.commands.emuverbs.link import add_store_options, bench_link, check_store, link_of, save
from longhaul.errors import UserError
from longhaul.output import FORMATS, emit
from longhaul.units import parse_one_int

OSU_COLUMNS = ["test", "algo", "delay_us", "size_bytes", "lat_us", "lat_min_us", "lat_max_us", "bw_MBps",
               "msg_rate_Mps", "ranks", "iterations", "wan_bytes_ab", "wan_bytes_ba"]


def _job_options(p, ranks_default: str | None) -> None:
    p.add_argument("--ranks-per-cluster", default=ranks_default,
                   help="MPI ranks in each cluster, one per emulated host, 1..16"
                        + (f" (default {ranks_default})" if ranks_default else " (default: what the benchmark needs)"))
    p.add_argument("--placement", choices=["block", "cyclic"], default="block",
                   help="rank order: block = A0..A{N-1} then B0.. (default); cyclic = A0, B0, A1, B1, ...")
    p.add_argument("--mpi", choices=["openmpi", "mpich", "mpich-ofi"], default="openmpi",
                   help="MPI library: openmpi (default; Debian openmpi-bin), mpich (Debian mpich, ch4:ucx) or "
                        "mpich-ofi (MPICH 5.0.2 from PyPI over libfabric tcp; scripts/bootstrap.sh installs it)")
    p.add_argument("--mca", action="append", default=[], metavar="NAME=VALUE",
                   help="extra Open MPI MCA parameter, e.g. btl_tcp_eager_limit=1048576 (repeatable; Open MPI only)")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="environment variable for every rank, e.g. UCX_RNDV_THRESH=1M for MPICH (repeatable)")
    p.add_argument("--timeout-s", default="600", help="stop the MPI job after this, 1..86400 s (default 600)")


def register(emu_subparsers, link_args) -> None:
    """Add ``mpi`` to ``longhaul emu``; ``link_args(parser, lists)`` adds the link options."""
    p = emu_subparsers.add_parser("mpi", help="real MPI programs (Open MPI or MPICH) with ranks in both emulated clusters")
    sub = p.add_subparsers(dest="mpi_command", metavar="VERB", parser_class=type(p))
    sub.required = True

    run = sub.add_parser("run", help="run an MPI program: -- PROGRAM ARGS",
                         description="Run an MPI program on 2 x N ranks, one per emulated host; ranks in "
                                     "different clusters talk across the emulated link only. Each rank has "
                                     "$LONGHAUL_CLUSTER = a|b (longhaul.mpi.HierComm uses it).")
    link_args(run)
    run.add_argument("--hosts", help="hosts per cluster, 1..16 (default: --ranks-per-cluster)")
    _job_options(run, "1")
    run.add_argument("--format", choices=FORMATS, default="table")
    run.add_argument("command", nargs="...", help="-- PROGRAM ARGS")
    run.set_defaults(func=_run)

    o = sub.add_parser("osu", help="OSU-style benchmarks (mpi4py) across the link, saved to the results store")
    link_args(o, lists=True)
    o.add_argument("--bench", required=True, help="latency | bw | bibw | mbw_mr | bcast | allreduce | alltoall")
    o.add_argument("--sizes", default="1:4M",
                   help="message sizes, bytes: comma list or power-of-two range, 1..64M (default 1:4M)")
    o.add_argument("--algo", default="default", help="collectives: default (the MPI library's) or hierarchical "
                                                     "(longhaul.mpi, one WAN crossing per message)")
    o.add_argument("--iterations", help="measured iterations, 1..100000 (default: OSU's, cut to ~0.5 s per point)")
    o.add_argument("--warmup", help="warm-up iterations left out, 0..10000 (default iterations/10)")
    o.add_argument("--window-msgs", help="bw/bibw/mbw_mr: OSU window, messages in flight, 1..4096 (default 64)")
    o.add_argument("--pairs", help="mbw_mr: communicating pairs, 1..16 (default --ranks-per-cluster)")
    _job_options(o, None)
    o.add_argument("--format", choices=FORMATS, default="table")
    add_store_options(o)
    o.set_defaults(func=_osu)


def _pairs(items: list[str], option: str = "--mca", example: str = "btl_tcp_eager_limit=1048576") -> dict[str, str]:
    """NAME=VALUE items; a NAME that is not an MCA parameter name (--mca) or an environment
    variable name (--env) is refused here, before any emulator is built (run and osu alike)."""
    from longhaul.emu.mpi import check_env_name, check_mca_name
    check = check_env_name if option == "--env" else check_mca_name
    out = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name.strip() or not value.strip():
            raise UserError(f"{option}: '{item}' is not NAME=VALUE (e.g. {example})")
        out[check(name.strip())] = value.strip()
    return out


def _env(items: list[str]) -> dict[str, str]:
    return _pairs(items, "--env", "UCX_RNDV_THRESH=1M")


def _warn_mpich(library: str, ranks_per_cluster: int) -> None:
    if library == "mpich" and ranks_per_cluster > 1:
        sys.stderr.write("longhaul emu mpi: warning: MPICH 4.0 over UCX/TCP sometimes hangs in MPI_Finalize with more "
                         "than one rank per cluster (docs/models/emulator.md: Real MPI: limits); --timeout-s bounds the run, "
                         "--mpi mpich-ofi avoids it\n")


def _run(args) -> int:
    from longhaul.emu import mpi
    ranks = parse_one_int(args.ranks_per_cluster, "--ranks-per-cluster", 1, mpi.MAX_RANKS_PER_CLUSTER)
    if args.hosts is None:
        args.hosts = ranks
    link = link_of(args)
    argv = args.command[1:] if args.command[:1] == ["--"] else args.command
    job = mpi.MpiJob(argv=argv, ranks_per_cluster=ranks, placement=args.placement, library=args.mpi,
                     mca=_pairs(args.mca), env=_env(args.env),
                     timeout_s=float(parse_one_int(args.timeout_s, "--timeout-s", 1, 86400))).validated(link.hosts)
    mpi.launcher(job.library)
    _warn_mpich(job.library, job.ranks_per_cluster)
    mpi.resolve_program(job.argv)
    with mpi.emulator(link, name=args.name) as emu:
        record = mpi.run(emu, job)
    if args.format == "table":
        sys.stdout.write(record["stdout"])
        sys.stderr.write(record["stderr"])
        sys.stderr.write(f"longhaul emu mpi: {record['ranks']} ranks ({record['placement']}), {record['seconds']} s; "
                         f"link carried {record['wan_bytes_ab']} bytes A->B, {record['wan_bytes_ba']} bytes B->A\n")
    else:
        emit([record], args.format)
    return 0


def _osu(args) -> int:
    from longhaul.emu import mpi, mpi_bench
    from longhaul.results import now_utc
    from longhaul.units import parse_sizes
    started = now_utc()
    check_store(args)
    base, delays, rates, _ = bench_link(args)
    if len(rates) != 1:
        raise UserError("--rate-gbps: give one rate for emu mpi osu")
    link = base.at(delays[0], rates[0])
    ranks = (parse_one_int(args.ranks_per_cluster, "--ranks-per-cluster", 1, mpi.MAX_RANKS_PER_CLUSTER)
             if args.ranks_per_cluster is not None else None)
    if args.window_msgs is not None and args.bench not in mpi_bench.STREAMING:
        *first, last = mpi_bench.STREAMING
        raise UserError(f"--window-msgs: only for {', '.join(first)} and {last}, not {args.bench}")
    _warn_mpich(args.mpi, ranks or (1 if args.bench in mpi_bench.PT2PT else 2))
    records = mpi_bench.osu(
        args.bench, parse_sizes(args.sizes, "--sizes", 1, 64 << 20), delays, ranks_per_cluster=ranks,
        link=link, name=args.name, algo=args.algo,
        iterations=parse_one_int(args.iterations, "--iterations", 1, 100000) if args.iterations is not None else None,
        warmup=parse_one_int(args.warmup, "--warmup", 0, 10000) if args.warmup is not None else None,
        window=parse_one_int(args.window_msgs, "--window-msgs", 1, 4096) if args.window_msgs is not None else mpi_bench.WINDOW,
        pairs=parse_one_int(args.pairs, "--pairs", 1, mpi.MAX_RANKS_PER_CLUSTER) if args.pairs is not None else 0,
        placement=args.placement, library=args.mpi, mca=_pairs(args.mca), env=_env(args.env),
        timeout_s=float(parse_one_int(args.timeout_s, "--timeout-s", 1, 86400)))
    save(args, "emu-mpi-osu", records, started)
    cols = [c for c in OSU_COLUMNS if any(c in r for r in records)]
    emit(records, args.format, columns=cols if args.format == "table" else None, title=f"longhaul emu mpi osu {args.bench}")
    return 0
