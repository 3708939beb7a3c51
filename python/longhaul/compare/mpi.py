"""MPI: OSU-style benchmarks with real Open MPI through the emulator vs the simulator's MPI model.

What is compared, and its limit: the simulator's MPI model runs over InfiniBand verbs (RC/UD/UC
queue pairs, a hardware profile such as ``s1``); it has no TCP transport, so it cannot be given
a host/stack profile of this machine's TCP path. Real Open MPI here runs its TCP BTL over the
emulated link. The comparison therefore sets the emulated link rate to the profile's WAN data
rate (``s1``: 4x SDR = 8 Gb/s) and puts the same benchmark (iterations, warm-up, window, ranks
per cluster, algorithm, eager limit) on both; what differs is the transport's flow control
(RC's 16 messages in flight per QP vs TCP's window), which is what the relative difference
shows. Gains (hierarchical vs default collectives, a larger eager limit vs the first one) are
compared as percentages, which the transport affects less than absolute numbers.

Records: one per point and source (``source`` = sim | emu); ``side_by_side`` pairs them with
``rel_diff`` = (sim - emu) / emu; ``gains`` gives predicted vs measured gains.
"""

from __future__ import annotations

import argparse

from longhaul import units
from longhaul.errors import UserError
from longhaul.output import FORMATS, emit

PROFILE_WAN_GBPS = {"s1": 8.0, "s1-connectx": 8.0, "s3": 8.0}  # 4x SDR data rate (8b/10b) of their WAN links
LIMIT = ("the simulator's MPI model runs over InfiniBand verbs (profile {profile}), not TCP; the emulated link "
         "runs at the profile's WAN rate ({rate:g} Gb/s) with real Open MPI over TCP")
METRIC = {"latency": "lat_us", "bw": "bw_MBps", "bibw": "bw_MBps", "mbw_mr": "bw_MBps", "bcast": "lat_us",
          "allreduce": "lat_us", "alltoall": "lat_us"}
KEYS = ("bench", "algo", "eager_limit_bytes", "delay_us", "size_bytes")


def _point(source: str, bench: str, algo: str, eager: int | None, rec: dict) -> dict:
    out = {"source": source, "bench": bench, "algo": algo, "eager_limit_bytes": eager, "delay_us": rec["delay_us"],
           "size_bytes": rec["size_bytes"]}
    for k in ("lat_us", "bw_MBps", "msg_rate_Mps", "iterations", "warmup", "wan_bytes_ab", "status"):
        if rec.get(k) is not None:
            out[k] = rec[k]
    return out


def compare_mpi(bench: str, sizes, delays_us, ranks_per_cluster: int | None = None, algos=("default",),
                eager_limits=(None,), profile: str = "s1", rate_gbps: float | None = None,
                iterations: int | None = None, warmup: int | None = None, window: int = 64,
                pairs: int = 0) -> list[dict]:
    """Emulated then simulated records, one per (algo, eager limit, delay, size) and source.
    ``eager_limits`` entries set Open MPI's btl_tcp_eager_limit and btl_tcp_rndv_eager_limit and
    the model's eager threshold (None = each library's default)."""
    from longhaul.emu import mpi_bench
    from longhaul.sim import mpi as sim

    if profile not in PROFILE_WAN_GBPS:
        raise UserError(f"--profile: '{profile}' has no known WAN rate here; choose one of {', '.join(PROFILE_WAN_GBPS)}")
    rate = PROFILE_WAN_GBPS[profile] if rate_gbps is None else rate_gbps
    out = []
    for algo in algos:
        for eager in eager_limits:
            # btl_tcp_eager_limit: largest message sent eagerly, header included; btl_tcp_rndv_eager_limit:
            # the first fragment of a larger one, sent with the rendezvous request (must be <= eager limit).
            # Source: ompi_info --param btl tcp --level 9 (Open MPI 4.1.4), defaults 65536 and 65536.
            mca = {"btl_tcp_eager_limit": eager, "btl_tcp_rndv_eager_limit": eager} if eager else {}
            emu = mpi_bench.osu(bench, sizes, delays_us, ranks_per_cluster=ranks_per_cluster, link={"rate_gbps": rate},
                                algo=algo, iterations=iterations, warmup=warmup, window=window, pairs=pairs, mca=mca)
            for e in emu:
                out.append(_point("emu", bench, algo, eager, e))
                sim_params = {"nodes": e["ranks_per_cluster"], "ppn": 1, "testbed": profile}
                if bench in ("bcast", "allreduce", "alltoall"):
                    sim_params["algo"] = algo
                if eager:
                    sim_params["eager_threshold_bytes"] = eager
                s = sim.osu_sweep(bench, [e["size_bytes"]], [e["delay_us"]], show_progress=False,
                                  iterations=e["iterations"], warmup=e["warmup"],
                                  window=window if bench in ("bw", "bibw", "mbw_mr") else None,
                                  pairs=(pairs or e["ranks_per_cluster"]) if bench == "mbw_mr" else None, **sim_params)[0]
                out.append({**_point("sim", bench, algo, eager, {**s, "iterations": e["iterations"],
                                                                  "warmup": e["warmup"]}), "profile": profile})
    return out


def side_by_side(records: list[dict]) -> list[dict]:
    """One row per point: sim and emu value of the benchmark's metric and (sim - emu) / emu."""
    rows: dict[tuple, dict] = {}
    for r in records:
        metric = METRIC[r["bench"]]
        row = rows.setdefault(tuple(r.get(k) for k in KEYS), {k: r.get(k) for k in KEYS})
        row[f"{r['source']}_{metric}"] = r.get(metric)
    for row in rows.values():
        metric = METRIC[row["bench"]]
        s, e = row.get(f"sim_{metric}"), row.get(f"emu_{metric}")
        row["rel_diff"] = round((s - e) / e, 4) if s is not None and e else None
    return list(rows.values())


def gains(records: list[dict]) -> list[dict]:
    """Predicted (sim) vs measured (emu) gain in percent: hierarchical over default (collectives,
    lower latency is better) or each eager limit over the first one given (higher bandwidth is better)."""
    by = {(r["source"], *(r.get(k) for k in KEYS)): r for r in records}
    rows = []
    for r in records:
        if r["source"] != "emu":
            continue
        metric = METRIC[r["bench"]]
        if r["algo"] == "hierarchical":
            base_key = ("default", r["eager_limit_bytes"])
            what = "hierarchical vs default"
        elif r["eager_limit_bytes"] is not None and r["eager_limit_bytes"] != _first_eager(records):
            base_key = (r["algo"], _first_eager(records))
            what = f"eager {r['eager_limit_bytes']} vs {_first_eager(records)}"
        else:
            continue
        point = (r["bench"], *base_key, r["delay_us"], r["size_bytes"])
        row = {"bench": r["bench"], "what": what, "delay_us": r["delay_us"], "size_bytes": r["size_bytes"]}
        for src in ("sim", "emu"):
            new = by.get((src, *(r.get(k) for k in KEYS)))
            old = by.get((src, *point))
            if not new or not old or not new.get(metric) or not old.get(metric):
                row[f"{src}_gain_pct"] = None
                continue
            a, b = old[metric], new[metric]
            row[f"{src}_gain_pct"] = round(100 * ((a - b) / a if metric == "lat_us" else (b - a) / a), 1)
        s, e = row["sim_gain_pct"], row["emu_gain_pct"]
        row["diff_pp"] = round(s - e, 1) if s is not None and e is not None else None
        rows.append(row)
    return rows


def _first_eager(records: list[dict]):
    return next((r["eager_limit_bytes"] for r in records), None)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("mpi", help="MPI: the simulator's MPI model vs real Open MPI through the emulator",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", default="bw", help="latency | bw | bibw | mbw_mr | bcast | allreduce | alltoall (default bw)")
    p.add_argument("--sizes", default="64K,1M,4M",
                   help="message sizes, bytes: comma list or power-of-two range (default 64K,1M,4M)")
    p.add_argument("--delay-us", default="1000,10000", metavar="LIST",
                   help="one-way delays, us, 0..200000 (default 1000,10000)")
    p.add_argument("--algo", default="default", metavar="LIST",
                   help="collectives: default, hierarchical or both (comma list; gains are printed with both)")
    p.add_argument("--eager-limit", metavar="LIST",
                   help="eager limits to compare, bytes (e.g. 64K,1M): Open MPI btl_tcp_eager_limit = "
                        "btl_tcp_rndv_eager_limit and the model's eager threshold; gains vs the first")
    p.add_argument("--ranks-per-cluster", help="1..16 (default 1 for latency/bw/bibw, 4 for collectives)")
    p.add_argument("--profile", default="s1", help=f"simulator hardware profile: {', '.join(PROFILE_WAN_GBPS)} (default s1)")
    p.add_argument("--rate-gbps", help="emulated link rate, Gb/s, 0.001..100 (default: the profile's WAN rate, s1: 8)")
    p.add_argument("--iterations", help="measured iterations, 1..100000 (default: OSU's, cut to ~0.5 s per point)")
    p.add_argument("--warmup", help="warm-up iterations, 0..10000 (default iterations/10)")
    p.add_argument("--format", choices=FORMATS, default="table")
    p.set_defaults(func=_run)


def _one_int(text, option, lo, hi):
    v = units.parse_int_list(str(text), option, lo, hi)
    if len(v) != 1:
        raise UserError(f"{option}: give one whole number in [{lo}, {hi}]")
    return v[0]


def _run(args) -> int:
    from longhaul.emu import mpi_bench

    if args.bench not in METRIC:
        raise UserError(f"--bench: '{args.bench}' is not one of {', '.join(METRIC)}")
    algos = [a.strip() for a in args.algo.split(",") if a.strip()]
    for a in algos:
        if a not in mpi_bench.ALGOS:
            raise UserError(f"--algo: '{a}' is not one of {', '.join(mpi_bench.ALGOS)}")
    eager = [units.parse_size(x.strip(), "--eager-limit") for x in args.eager_limit.split(",")] if args.eager_limit else [None]
    for e in eager:
        if e is not None and not 1024 <= e <= 64 << 20:
            raise UserError(f"--eager-limit: {e} is out of range [1024, 67108864] bytes")
    rate = units.parse_float_list(args.rate_gbps, "--rate-gbps", 0.001, 100)[0] if args.rate_gbps else None
    records = compare_mpi(
        args.bench, units.parse_sizes(args.sizes, "--sizes", 1, 64 << 20),
        units.parse_float_list(args.delay_us, "--delay-us", 0, units.MAX_DELAY_US),
        ranks_per_cluster=_one_int(args.ranks_per_cluster, "--ranks-per-cluster", 1, 16) if args.ranks_per_cluster else None,
        algos=algos, eager_limits=eager, profile=args.profile, rate_gbps=rate,
        iterations=_one_int(args.iterations, "--iterations", 1, 100000) if args.iterations else None,
        warmup=_one_int(args.warmup, "--warmup", 0, 10000) if args.warmup else None)
    if args.format != "table":
        emit(records, args.format)
        return 0
    rate_used = rate if rate is not None else PROFILE_WAN_GBPS[args.profile]
    note = LIMIT.format(profile=args.profile, rate=rate_used)
    metric = METRIC[args.bench]
    emit(side_by_side(records), "table", [*KEYS, f"sim_{metric}", f"emu_{metric}", "rel_diff"],
         title=f"longhaul compare mpi {args.bench} (rel_diff = (sim - emu) / emu)")
    g = gains(records)
    if g:
        emit(g, "table", ["bench", "what", "delay_us", "size_bytes", "sim_gain_pct", "emu_gain_pct", "diff_pp"],
             title="predicted (sim) vs measured (emu) gain, percent")
    print(f"note: {note}")
    return 0
