"""MPI: OSU-style benchmarks with real Open MPI through the emulator vs the simulator's MPI models.

Point to point (latency, bw, bibw) is compared like with like: real Open MPI runs its TCP BTL
over the emulated link, and the simulator runs its MPI model over TCP (``longhaul.sim.mpi`` with
``transport = "tcp"``: ob1 eager/rendezvous on one TCP connection per rank pair, over the TCP model) on a plain WAN
link of the emulator's rate, delay and queue, with the emulator namespaces' TCP settings
(congestion control, tcp_rmem/tcp_wmem maxima). The hosts' stack is not a profile but this
machine's, calibrated first from 0-delay emulator runs (``calibrate_stack``: latency at 8 B and
1 KiB, bw at 64 KiB, 1 MiB, 4 MiB, fitted with ``longhaul.analysis.calibrate.fit``).

osu_bcast runs on the same MPI-over-TCP model with the emulated run's ranks per cluster: Open
MPI 4.1's own broadcast as its coll/tuned fixed rules pick it, or ``HierComm.Bcast`` (32 KiB
eager pieces across the WAN, Open MPI's broadcast inside each cluster), with the same calibrated
stack; traffic inside a cluster takes the hosts' links through the cluster's switch, as the
emulator's veth + bridge. allreduce, alltoall and mbw_mr have no TCP model: they are compared
with the MPI model over InfiniBand verbs (a hardware profile such as ``s1``) at the profile's WAN
data rate, so what differs there is also the transport's flow control (RC's send queue per QP vs TCP's window). Gains (hierarchical vs
default collectives, a larger eager limit vs the first one) are compared as percentages.

Records: one per point and source (``source`` = sim | emu); ``side_by_side`` pairs them with
``rel_diff`` = (sim - emu) / emu; ``gains`` gives predicted vs measured gains.
"""

from __future__ import annotations

import argparse
import math

from longhaul import units
from longhaul.errors import UserError
from longhaul.output import FORMATS, emit

PROFILE_WAN_GBPS = {"s1": 8.0, "s1-connectx": 8.0, "s3": 8.0}  # 4x SDR data rate (8b/10b) of their WAN links
LIMIT = ("the simulator runs allreduce, alltoall and mbw_mr over InfiniBand verbs (profile {profile}), not TCP; "
         "the emulated link runs at the profile's WAN rate ({rate:g} Gb/s) with real Open MPI over TCP")
TCP_NOTE = ("sim: Open MPI ob1 over the TCP model at {rate:g} Gb/s, cc {cc}, host stack {source}: "
            "{per_seg_us:.2f} us/segment + {per_byte_ns:.3f} ns/byte at each end, {per_msg_us:.1f} us per MPI "
            "protocol frame")


def over_tcp(bench: str, ranks_per_cluster: int | None) -> bool:
    """Whether the comparison's model is MPI over TCP (one rank pair, or bcast) rather than the
    profile's verbs model: bcast with any ranks per cluster."""
    # The benchmarks compared over TCP (their emulator runs and model points are checked); the
    # model runs every benchmark over TCP, the others are still compared with the verbs model.
    return bench in ("latency", "bw", "bibw", "bcast") and (bench == "bcast" or ranks_per_cluster in (None, 1))


#: 0-delay points the stack is calibrated from: small-message latency (per-message and per-segment
#: costs) and large-message bandwidth (per-segment plus per-byte cost).
CALIBRATION = (("latency", 8), ("latency", 1024), ("bw", 64 << 10), ("bw", 1 << 20), ("bw", 4 << 20))
METRIC = {"latency": "lat_us", "bw": "bw_MBps", "bibw": "bw_MBps", "mbw_mr": "bw_MBps", "bcast": "lat_us",
          "allreduce": "lat_us", "alltoall": "lat_us"}
KEYS = ("bench", "algo", "eager_limit_bytes", "delay_us", "size_bytes")


def _point(source: str, bench: str, algo: str, eager: int | None, rec: dict) -> dict:
    out = {"source": source, "bench": bench, "algo": algo, "eager_limit_bytes": eager, "delay_us": rec["delay_us"],
           "size_bytes": rec["size_bytes"]}
    for k in ("lat_us", "bw_MBps", "msg_rate_Mps", "lat_us_runs", "bw_MBps_runs", "iterations", "warmup",
              "rate_gbps", "ranks_per_cluster", "wan_bytes_ab", "status"):
        if rec.get(k) is not None:
            out[k] = rec[k]
    return out


def namespace_tcp(rate_gbps: float, delay_us: float) -> dict:
    """The TCP settings of the emulator's host namespaces at this link, as simulator parameters:
    congestion control (new namespaces inherit the machine's default), the tcp_rmem/tcp_wmem
    maxima the emulator sets, and its bottleneck queue."""
    from longhaul.emu.bench import _default_cc
    from longhaul.emu.options import LinkOptions

    opts = LinkOptions.symmetric(delay_us=delay_us, rate_gbps=rate_gbps)
    q = opts.ab.effective_queue()
    window = opts.effective_window()
    return {"cc": _default_cc(), "rmem_max_bytes": window, "wmem_max_bytes": window,
            "queue_bytes": q.bytes, "queue_packets": q.packets}


def _zero_delay_model(base: list[float]):
    """Latency (us) or bandwidth (MB/s) at 0 delay given the stack costs, on top of what the
    simulator gives with an ideal stack (``base``: the same points with zero costs). x rows are
    (is_bw, size_bytes). As in the simulator, a rank and its kernel's TCP stack share one core:
    each protocol frame costs ``per_msg_us`` where it is written and where it is received, each
    segment ``per_seg_us + bytes x per_byte_ns`` at both ends. Latency: one frame and one segment
    at each end. Bandwidth: the busier core handles per message its frames (1 eager; 3 for a
    rendezvous: RTS, ACK, rest) and its segments back to back; the slower of that and the
    ideal-stack rate holds."""
    import numpy as np  # here, not at the top: every `longhaul` command imports this module

    ideal = np.asarray(base, dtype=float)

    def model(p: dict, x) -> np.ndarray:
        x = np.asarray(x, dtype=float).reshape(-1, 2)
        is_bw, size = x[:, 0] > 0, x[:, 1]
        frame = size + 24  # ob1 match header + TCP BTL header
        lat = ideal + 2 * p["per_msg_us"] + 2 * (p["per_seg_us"] + frame * p["per_byte_ns"] / 1000)
        frames = np.where(size + 16 <= EAGER_LIMIT_BYTES, 1.0, 3.0)
        busy_us = frames * p["per_msg_us"] + frame / MSS_BYTES * (p["per_seg_us"] + MSS_BYTES * p["per_byte_ns"] / 1000)
        bw = np.minimum(ideal, size / np.maximum(busy_us, 1e-9))
        return np.where(is_bw, bw, lat)
    return model


#: Open MPI 4.1's btl_tcp_eager_limit (ompi_info), which the calibration runs leave at its default.
EAGER_LIMIT_BYTES = 65536
#: The emulator's 1500-byte MTU less IP and TCP headers with timestamps.
MSS_BYTES = 1448


def calibration_runs(rate_gbps: float, repeats: int = 1) -> dict[str, list[list[dict]]]:
    """``repeats`` 0-delay emulator runs of the ``CALIBRATION`` points, per benchmark, as measured
    (``calibrate_stack(runs=...)`` takes their median; more runs can be pooled with them later)."""
    from longhaul.emu import mpi_bench

    runs: dict[str, list[list[dict]]] = {"latency": [], "bw": []}
    for _ in range(repeats):
        for bench in runs:
            sizes = [s for b, s in CALIBRATION if b == bench]
            runs[bench].append(mpi_bench.osu(bench, sizes, [0.0], link={"rate_gbps": rate_gbps}))
    return runs


def calibrate_stack(rate_gbps: float, emu_records: list[dict] | None = None, repeats: int = 1,
                    runs: dict[str, list[list[dict]]] | None = None) -> dict:
    """Fit this machine's stack costs (per_seg_us, per_byte_ns, per_msg_us) to 0-delay emulator
    runs of the ``CALIBRATION`` points: ``emu_records`` (one per point), else the median of
    ``runs`` (``calibration_runs``), else of ``repeats`` runs made now. Returns the costs, their
    standard errors, the points with the measured and fitted values, and the runs (``runs``;
    None when ``emu_records`` were given)."""
    from longhaul.analysis import calibrate
    from longhaul.sim import mpi

    if emu_records is None:
        runs = runs if runs is not None else calibration_runs(rate_gbps, repeats)
        emu_records = [rec for bench, rs in runs.items() for rec in median_of_runs(rs, METRIC[bench])]
    emu = {(r.get("test"), r["size_bytes"]): r for r in emu_records}
    points = [(b, s) for b, s in CALIBRATION if (b, s) in emu]
    if len(points) < 4:
        raise UserError(f"calibration: need the 0-delay points {CALIBRATION}, got {sorted(emu)}")
    tcp = namespace_tcp(rate_gbps, 0.0)
    ideal = [mpi.run(mpi.scenario(osu={"bench": b, "size_bytes": s, "iterations": 3, "warmup": 1}, transport="tcp",
                                  delay_us=0.0, rate_gbps=rate_gbps, stack="ideal", **tcp))[METRIC[b]]
             for b, s in points]
    x = [(1.0 if b == "bw" else 0.0, float(s)) for b, s in points]
    y = [emu[p][METRIC[p[0]]] for p in points]
    fit = calibrate.fit(_zero_delay_model(ideal), {"per_seg_us": 2.0, "per_byte_ns": 0.3, "per_msg_us": 5.0}, x, y,
                        # Relative errors as measured here: small-message latency varies +-50% between
                        # runs on this VM (vCPU wake-ups), bandwidth about 10%.
                        sigma=[(0.1 if b == "bw" else 0.5) * v for (b, _), v in zip(points, y)],
                        bounds={"per_seg_us": (0.0, 1e3), "per_byte_ns": (0.0, 100.0), "per_msg_us": (0.0, 1e4)})
    costs = {k: round(v, 4) for k, v in fit.values.items()}
    fitted = fit.predict(x)[0]
    return {**costs, "stderr": {k: (round(v, 4) if math.isfinite(v) else None) for k, v in fit.stderr.items()},
            "cc": tcp["cc"], "rate_gbps": rate_gbps, "runs": runs,
            "points": [{"bench": b, "size_bytes": s, "metric": METRIC[b], "emu": y[i], "fit": round(float(fitted[i]), 2)}
                       for i, (b, s) in enumerate(points)]}


def simulate_point(bench: str, e: dict, stack: dict, eager=None, window: int = 64, algo: str = "default") -> dict:
    """The emulated point ``e`` on the MPI-over-TCP model; bcast with the emulated run's ranks per
    cluster and algorithm (hierarchical: HierComm's default 32 KiB WAN pieces, as osu_mpi.py runs it)."""
    from longhaul.sim import mpi

    tcp = namespace_tcp(e["rate_gbps"], e["delay_us"])
    coll = {"nodes": e["ranks_per_cluster"], "algo": algo} if bench == "bcast" else {}
    return mpi.osu_sweep(
        bench, [e["size_bytes"]], [e["delay_us"]], show_progress=False, iterations=e["iterations"],
        warmup=e["warmup"], window=window if bench in ("bw", "bibw") else None, rate_gbps=e["rate_gbps"],
        stack=mpi.stack_costs(stack["per_seg_us"], stack["per_byte_ns"]), per_msg_us=stack["per_msg_us"],
        eager_limit_bytes=eager, transport="tcp", **coll, **tcp)[0]


def median_of_runs(runs: list[list[dict]], metric: str) -> list[dict]:
    """One record per point from repeated runs (same points, same order): the run whose
    ``metric`` is the median (the lower middle one for an even count), with every run's value
    in ``<metric>_runs``."""
    out = []
    for recs in zip(*runs):
        ok = sorted((r for r in recs if r.get(metric) is not None), key=lambda r: r[metric])
        pick = dict(ok[(len(ok) - 1) // 2] if ok else recs[0])
        pick[f"{metric}_runs"] = [r.get(metric) for r in recs]
        out.append(pick)
    return out


def compare_mpi(bench: str, sizes, delays_us, ranks_per_cluster: int | None = None, algos=("default",),
                eager_limits=(None,), profile: str = "s1", rate_gbps: float | None = None,
                iterations: int | None = None, warmup: int | None = None, window: int = 64,
                pairs: int = 0, stack: dict | None = None, repeats: int = 1) -> list[dict]:
    """Emulated then simulated records, one per (algo, eager limit, delay, size) and source.
    ``eager_limits`` entries set Open MPI's btl_tcp_eager_limit and btl_tcp_rndv_eager_limit and
    the model's eager threshold (None = each library's default). latency/bw/bibw (one rank pair)
    and bcast run on the MPI-over-TCP model with ``stack`` (a ``calibrate_stack`` result; None =
    calibrate now); sim records then carry ``stack_per_seg_us``, ``stack_per_byte_ns``,
    ``per_msg_us``. With ``repeats`` > 1 every emulated point is measured that many times, the
    algorithms and eager limits interleaved within each repetition (so a slow spell of this
    shared machine hits all of them alike), and the median run is kept (``<metric>_runs``)."""
    from longhaul.emu import mpi_bench
    from longhaul.sim import mpi as sim

    if profile not in PROFILE_WAN_GBPS:
        raise UserError(f"--profile: '{profile}' has no known WAN rate here; choose one of {', '.join(PROFILE_WAN_GBPS)}")
    if not 1 <= repeats <= 20:
        raise UserError(f"--repeats: {repeats} is out of range [1, 20]")
    rate = PROFILE_WAN_GBPS[profile] if rate_gbps is None else rate_gbps
    tcp_model = over_tcp(bench, ranks_per_cluster)
    if tcp_model and stack is None:
        stack = calibrate_stack(rate, repeats=repeats)
    runs: dict[tuple, list[list[dict]]] = {}
    for _ in range(repeats):
        for algo in algos:
            for eager in eager_limits:
                # btl_tcp_eager_limit: largest message sent eagerly, header included; btl_tcp_rndv_eager_limit:
                # the first fragment of a larger one, sent with the rendezvous request (must be <= eager limit).
                # Source: ompi_info --param btl tcp --level 9 (Open MPI 4.1.4), defaults 65536 and 65536.
                mca = {"btl_tcp_eager_limit": eager, "btl_tcp_rndv_eager_limit": eager} if eager else {}
                runs.setdefault((algo, eager), []).append(mpi_bench.osu(
                    bench, sizes, delays_us, ranks_per_cluster=ranks_per_cluster, link={"rate_gbps": rate}, algo=algo,
                    iterations=iterations, warmup=warmup, window=window, pairs=pairs, mca=mca))
    out = []
    for (algo, eager), emu_runs in runs.items():
        for e in median_of_runs(emu_runs, METRIC[bench]):
            out.append(_point("emu", bench, algo, eager, e))
            if tcp_model and stack is not None:  # the stack is given or calibrated above
                s = simulate_point(bench, e, stack, eager, window, algo)
                out.append({**_point("sim", bench, algo, eager, {**s, "iterations": e["iterations"],
                                                                  "warmup": e["warmup"]}),
                            "transport": "tcp", "stack_per_seg_us": stack["per_seg_us"],
                            "stack_per_byte_ns": stack["per_byte_ns"], "per_msg_us": stack["per_msg_us"],
                            "cc": namespace_tcp(e["rate_gbps"], e["delay_us"])["cc"]})
                continue
            sim_params = {"nodes": e["ranks_per_cluster"], "ppn": 1, "testbed": profile}
            if bench in mpi_bench.COLLECTIVES:
                sim_params["algo"] = algo
            if eager:
                sim_params["eager_threshold_bytes"] = eager
            s = sim.osu_sweep(bench, [e["size_bytes"]], [e["delay_us"]], show_progress=False,
                              iterations=e["iterations"], warmup=e["warmup"],
                              window=window if bench in mpi_bench.STREAMING else None,
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
    p.add_argument("--repeats", help="emulated runs of every point (and of the calibration), 1..20, interleaved "
                                     "across algorithms and eager limits; the median is kept (default 1)")
    p.add_argument("--stack", metavar="SEG_US,BYTE_NS,MSG_US",
                   help="latency/bw/bibw: the host stack's costs for the simulator (per segment us, per byte ns, "
                        "per MPI message us) instead of calibrating them from 0-delay emulator runs first")
    p.add_argument("--format", choices=FORMATS, default="table")
    p.set_defaults(func=_run)


def _stack_option(text: str) -> dict:
    try:
        seg, byte, msg = (float(x) for x in text.split(","))
    except ValueError:
        raise UserError(f"--stack: '{text}' is not 'per-segment us,per-byte ns,per-message us' (e.g. 3,0.4,10)") from None
    for name, v, hi in (("per-segment", seg, 1e3), ("per-byte", byte, 100.0), ("per-message", msg, 1e4)):
        if not 0 <= v <= hi:
            raise UserError(f"--stack: {name} cost {v:g} is out of range [0, {hi:g}]")
    return {"per_seg_us": seg, "per_byte_ns": byte, "per_msg_us": msg}


def _run(args) -> int:
    from longhaul.emu import mpi_bench

    if args.bench not in METRIC:
        raise UserError(f"--bench: '{args.bench}' is not one of {', '.join(METRIC)}")
    algos = units.parse_name_list(args.algo, "--algo", mpi_bench.ALGOS)
    eager = units.parse_sizes(args.eager_limit, "--eager-limit", 1024, 64 << 20) if args.eager_limit is not None else [None]
    rate = units.parse_one_float(args.rate_gbps, "--rate-gbps", 0.001, 100) if args.rate_gbps is not None else None
    if args.profile not in PROFILE_WAN_GBPS:
        raise UserError(f"--profile: '{args.profile}' has no known WAN rate here; choose one of {', '.join(PROFILE_WAN_GBPS)}")
    rpc = units.parse_one_int(args.ranks_per_cluster, "--ranks-per-cluster", 1, 16) if args.ranks_per_cluster is not None else None
    sizes = units.parse_sizes(args.sizes, "--sizes", 1, 64 << 20)
    delays = units.parse_float_list(args.delay_us, "--delay-us", 0, units.MAX_DELAY_US)
    iterations = units.parse_one_int(args.iterations, "--iterations", 1, 100000) if args.iterations is not None else None
    warmup = units.parse_one_int(args.warmup, "--warmup", 0, 10000) if args.warmup is not None else None
    stack = _stack_option(args.stack) if args.stack is not None else None
    repeats = units.parse_one_int(args.repeats, "--repeats", 1, 20) if args.repeats is not None else 1
    tcp_model = over_tcp(args.bench, rpc)
    if stack is not None and not tcp_model:
        raise UserError(f"--stack: only where the model is MPI over TCP (latency, bw, bibw with one rank per cluster, "
                        f"and bcast); {args.bench}{f' with {rpc} ranks per cluster' if rpc else ''} runs on the "
                        f"'{args.profile}' profile's verbs model")
    if args.bench not in mpi_bench.COLLECTIVES and algos != ["default"]:
        raise UserError(f"--algo: only for the collectives ({', '.join(mpi_bench.COLLECTIVES)}), not {args.bench}")
    if args.bench in mpi_bench.PT2PT and rpc not in (None, 1):
        raise UserError(f"--ranks-per-cluster: {args.bench} runs one rank pair (1 per cluster); mbw_mr and the "
                        "collectives take more")
    # Every option is checked above, before the calibration runs the emulator.
    if tcp_model and stack is None:
        stack = calibrate_stack(rate if rate is not None else PROFILE_WAN_GBPS[args.profile], repeats=repeats)
        if args.format == "table":
            emit(stack["points"], "table", ["bench", "size_bytes", "metric", "emu", "fit"],
                 title="host stack calibration at 0 delay (emu: measured; fit: the fitted costs)")
    records = compare_mpi(args.bench, sizes, delays, ranks_per_cluster=rpc, algos=algos, eager_limits=eager,
                          profile=args.profile, rate_gbps=rate, stack=stack, iterations=iterations, warmup=warmup,
                          repeats=repeats)
    if args.format != "table":
        emit(records, args.format)
        return 0
    rate_used = rate if rate is not None else PROFILE_WAN_GBPS[args.profile]
    sim_tcp = next((r for r in records if r.get("transport") == "tcp"), None)
    note = (TCP_NOTE.format(rate=rate_used, cc=sim_tcp["cc"], per_seg_us=stack["per_seg_us"],
                            source="given by --stack" if args.stack is not None else "calibrated at 0 delay",
                            per_byte_ns=stack["per_byte_ns"], per_msg_us=stack["per_msg_us"])
            if sim_tcp and stack is not None else LIMIT.format(profile=args.profile, rate=rate_used))
    metric = METRIC[args.bench]
    emit(side_by_side(records), "table", [*KEYS, f"sim_{metric}", f"emu_{metric}", "rel_diff"],
         title=f"longhaul compare mpi {args.bench} (rel_diff = (sim - emu) / emu)")
    g = gains(records)
    if g:
        emit(g, "table", ["bench", "what", "delay_us", "size_bytes", "sim_gain_pct", "emu_gain_pct", "diff_pp"],
             title="predicted (sim) vs measured (emu) gain, percent")
    print(f"note: {note}")
    return 0
