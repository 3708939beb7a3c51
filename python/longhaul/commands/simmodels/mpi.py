"""``longhaul sim mpi``: MPI across the simulated long-haul path (osu, app, replay, tune)."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from longhaul import admission, osu_text, safeio, tune, units
from longhaul.errors import UserError
from longhaul.helpformat import DefaultsHelpFormatter
from longhaul.output import FORMATS, emit
from longhaul.sim import mpi

P2P_COLUMNS = ["bench", "size_bytes", "delay_us", "distance_km", "lat_us", "bw_MBps", "msg_rate_Mps", "status"]
COLL_COLUMNS = ["bench", "algo", "size_bytes", "delay_us", "distance_km", "ranks", "lat_us", "lat_min_us", "lat_max_us",
                "status"]
APP_COLUMNS = ["app", "class", "ranks", "delay_us", "distance_km", "run_time_s", "compute_s", "large_msg_share",
               "messages", "status"]


OSU_NODES = "what the benchmark needs: one rank pair for point-to-point, --pairs for mbw_mr, 4 for collectives"


def _common(p: argparse.ArgumentParser, where: bool = True, formats: tuple[str, ...] = FORMATS,
            nodes_default: str = OSU_NODES) -> None:
    if where:
        g = p.add_mutually_exclusive_group()
        g.add_argument("--delay-us", default=None, metavar="LIST",
                       help="range-extender delay setting, one way, us (comma list; 0..200000; default 0)")
        g.add_argument("--distance-km", default=None, metavar="LIST", help="fibre length in km instead (5 us/km)")
        g.add_argument("--distance-miles", default=None, metavar="LIST", help="fibre length in miles instead")
    p.add_argument("--nodes", type=units.whole(1, 4096), default=None, metavar="N",
                   help=f"nodes per cluster (1..4096; default: {nodes_default})")
    p.add_argument("--ppn", type=units.whole(1, 256), default=None, metavar="P", help="processes per node (1..256; default 1)")
    p.add_argument("--placement", choices=mpi.PLACEMENTS, default=None,
                   help="rank placement: block (ranks 0..NP-1 in cluster A) or cyclic (default block)")
    p.add_argument("--fabric", choices=mpi.FABRICS, default=None,
                   help="intra-cluster switches' IB generation, 4x (default: the profile's; a host link runs at "
                        "the slower of adapter and switch)")
    p.add_argument("--switch-latency-ns", type=units.real(0, 100000), default=None, metavar="NS",
                   help="intra-cluster switch port-to-port latency (0..100000; default: the profile's, 200 on s1)")
    p.add_argument("--algo", choices=mpi.ALGOS, default=None,
                   help="collective algorithm: default (the library's choice by ranks and size: MPICH2 1.0's for "
                        "mvapich2-*, Open MPI 4.1's coll/tuned rules for openmpi-ucx), hierarchical (one WAN "
                        "crossing), auto (hierarchical from 50 us one-way or 64 KiB), or one flat algorithm pinned: "
                        "bcast binomial|scatter-ring|scatter-rd|linear|chain|binary-tree|knomial, allreduce "
                        "recursive-doubling|rabenseifner, alltoall pairwise|scattered|bruck|linear, scatter "
                        "binomial|linear (apps and traces: where it fits)")
    p.add_argument("--mpi-library", choices=mpi.LIBRARIES, default=None,
                   help="the MPI library whose parameters apply (default: mvapich2-1.0 on the published testbeds, "
                        "mvapich2-2.3 on fdr..xdr); the options below override them")
    p.add_argument("--rndv-threshold", default=None, metavar="SIZE",
                   help="eager/rendezvous threshold in bytes (K/M suffixes; 0..1G; default: the library's, 8K in "
                        "MVAPICH2 1.0, 16K in 2.3, 8K with openmpi-ucx)")
    p.add_argument("--network", choices=mpi.NETWORKS, default=None,
                   help="packet (default: every packet through adapters, switches, extenders), fluid (messages as "
                        "flows sharing the path max-min: 1,000s of ranks in seconds; --transport rc only) or auto "
                        "(fluid over rc above 256 ranks, packet otherwise); the record's network column says which")
    p.add_argument("--rndv-protocol", choices=mpi.RNDV, default=None,
                   help="rendezvous: rput, rget, r3 (default: the library's, rput in MVAPICH2 1.0, rget in 2.3 and UCX)")
    p.add_argument("--transport", choices=mpi.TRANSPORTS, default=None,
                   help="the channel: an IB transport under MVAPICH2 (rc, uc, ud; default rc), or tcp: Open MPI's "
                        "ob1 on the TCP BTL over the TCP model (options under 'MPI over TCP'; one TCP connection per "
                        "pair of ranks on different nodes that talk, opened on their first message)")
    p.add_argument("--eager-credits", type=units.whole(1, 4096), default=None, metavar="N",
                   help="eager buffers per peer (1..4096; default: the library's, 16 in MVAPICH2's RDMA fast path, "
                        "512 in UCX's flow-control window)")
    p.add_argument("--send-wqes", type=units.whole(1, 16384), default=None, metavar="N",
                   help="send work requests a connection may have posted and not completed; more wait in the "
                        "library's queue (1..16384; default: the library's, 180 in MVAPICH2 1.0 (200 less 20), 64 in "
                        "2.3, 256 in UCX)")
    p.add_argument("--profile", choices=mpi.TESTBEDS, default=None,
                   help="hardware profile (default s1: the S1 testbed; s2-* = S2's platforms)")
    p.add_argument("--node", choices=mpi.NODES, default=None, help="override the profile's node (CPU/memory)")
    n = p.add_argument_group("node parameters (over the profile's; intra-node messages and compute)")
    n.add_argument("--copy-MBps", dest="copy_MBps", type=units.real(1, 1e6), default=None, metavar="MBPS",
                   help="one core's memory copy rate for large buffers, MB/s (1..1e6)")
    n.add_argument("--mem-MBps", dest="mem_MBps", type=units.real(1, 1e7), default=None, metavar="MBPS",
                   help="the node's sustained memory bandwidth (STREAM-like), MB/s, shared by its copies (1..1e7)")
    n.add_argument("--shm-latency-ns", type=units.real(0, 1e6), default=None, metavar="NS",
                   help="one-way latency of the shared-memory channel, ns (0..1e6)")
    n.add_argument("--core-mops", type=units.real(0.001, 1e7), default=None, metavar="MOPS",
                   help="one core's compute rate on the NAS kernels, Mop/s as NPB counts them (0.001..1e7)")
    p.add_argument("--loss", type=units.real(0, 0.5), default=None, metavar="P",
                   help="WAN packet corruption probability (0..0.5): RC resends in the adapter; over UD/UC the "
                        "library resends after --ud-retry-timeout-us")
    p.add_argument("--ud-retry-timeout-us", type=units.real(1, 1e8), default=None, metavar="US",
                   help="UD/UC: resend a frame unacknowledged this long (1..1e8; default 500000, MVAPICH2's "
                        "MV2_UD_RETRY_TIMEOUT; acknowledgements owed go at a tenth of it)")
    p.add_argument("--ud-window", type=units.whole(1, 65536), default=None, metavar="FRAMES",
                   help="UD/UC: frames a sender may have unacknowledged per peer (1..65536; default 400, MVAPICH2's "
                        "MV2_UD_SENDWINDOW_SIZE)")
    p.add_argument("--ud-recv-window", type=units.whole(1, 65536), default=None, metavar="FRAMES",
                   help="UD/UC: frames a receiver keeps that arrive ahead of a missing one, per peer (1..65536; "
                        "default 2501, MVAPICH2's MV2_UD_RECVWINDOW_SIZE); later ones are dropped and resent")
    p.add_argument("--ud-max-retries", type=units.whole(1, 65535), default=None, metavar="N",
                   help="UD/UC: resends of one frame before the job ends with a reliability error (1..65535; "
                        "default 1000, MVAPICH2's MV2_UD_RETRY_COUNT)")
    t = p.add_argument_group("MPI over TCP (--transport tcp)")
    t.add_argument("--rate-gbps", default=None, metavar="G", help="WAN link rate, Gb/s (0.001..400; default 10)")
    t.add_argument("--stack", default=None, metavar="NAME|SEG_US,BYTE_NS",
                   help="host stack: a profile (modern, s1, s3, ideal; default modern) or measured costs "
                        "'per-segment us,per-byte ns' charged at each end")
    t.add_argument("--eager-limit", default=None, metavar="SIZE",
                   help="btl_tcp_eager_limit = btl_tcp_rndv_eager_limit, bytes, header included (1K..1G; default 64K)")
    t.add_argument("--per-msg-us", type=units.real(0, 10000), default=None, metavar="US",
                   help="MPI library CPU time per message at each end, us (0..10000; default 0)")
    t.add_argument("--cc", default=None, help="congestion control (default cubic)")
    t.add_argument("--socket-buffer-max", default=None, metavar="SIZE",
                   help="tcp_rmem/tcp_wmem maxima, bytes (auto-tuning limit; default 6M / 4M, Linux's)")
    p.add_argument("--seed", type=units.whole(0, units.SEED_MAX), default=1, help="random seed (same seed, same result)")
    p.add_argument("--workers", type=units.whole(1, 65536), default=None, metavar="N", help="parallel points (default: all cores)")
    p.add_argument("--format", choices=formats, default="table",
                   help="output format" + ("; osu: the OSU micro-benchmarks' own text, one block per delay, which "
                                           "'longhaul ingest --tool osu' reads" if "osu" in formats else ""))


def register(models: argparse._SubParsersAction) -> None:
    p = models.add_parser("mpi", help="MPI across clusters: OSU benchmarks, NAS skeletons, trace replay, tuning",
                          description="MPI (MVAPICH2-like) across two clusters joined by the simulated long-haul path.")
    sub = p.add_subparsers(dest="mpi_cmd", metavar="COMMAND", required=True)
    fmt = DefaultsHelpFormatter

    o = sub.add_parser("osu", help="OSU micro-benchmarks", formatter_class=fmt,
                       description="OSU-style benchmarks. MB = 10^6 bytes. Columns follow OSU: size, latency "
                                   "(us) or bandwidth (MB/s) and message rate (M/s).")
    o.add_argument("--bench", required=True, choices=mpi.BENCHES, help="benchmark")
    o.add_argument("--sizes", default=None, metavar="LIST",
                   help="message sizes: comma list or power-of-two range (1:1M); default 1:4M (latency 1:1M, "
                        "collectives 1:1M); 0..1G")
    o.add_argument("--pairs", type=units.whole(1, 2048), default=None, metavar="K",
                   help="process pairs for mbw_mr (1..2048: a job has at most 4096 ranks; default 1)")
    o.add_argument("--iterations", type=units.whole(1, 10**6), default=None, metavar="N",
                   help="measured iterations (1..1e6; default 10)")
    o.add_argument("--window", type=units.whole(1, 65536), default=None, metavar="N", help="messages per window for bw/bibw/mbw_mr (1..65536; default 64)")
    _common(o, formats=(*FORMATS, "osu"))
    admission.add_option(o)
    o.set_defaults(func=run_osu)

    a = sub.add_parser("app", help="NAS skeletons: run time vs delay", formatter_class=fmt,
                       description="NAS IS/FT/CG/MG/LU skeletons; run time scaled to the class's iterations.")
    a.add_argument("--app", required=True, default=None, metavar="LIST",
                   help="comma list of is, ft, cg, mg, lu")
    a.add_argument("--class", dest="klass", choices=mpi.CLASSES, default="B", help="NAS class")
    a.add_argument("--compute-us", type=units.real(0, 1e8), default=None, metavar="US",
                   help="compute time per iteration (us, 0..1e8; default from NAS operation counts and the node)")
    a.add_argument("--iterations", type=units.whole(1, 100000), default=None, metavar="N",
                   help="iterations to simulate and report (default: the class's, at most 10 simulated)")
    _common(a, nodes_default="1")
    admission.add_option(a)
    a.set_defaults(func=run_app)

    r = sub.add_parser("replay", help="replay a text trace", formatter_class=fmt,
                       description="Replay a trace (format: docs/reference/trace-format.md; 'ranks N' then 'RANK EVENT ...' lines).")
    r.add_argument("trace", metavar="TRACE", help="trace file")
    _common(r, nodes_default="enough for the trace's ranks, half in each cluster, --ppn per node")
    admission.add_option(r)
    r.set_defaults(func=run_replay)

    add_tune(sub)


def add_tune(sub: argparse._SubParsersAction, name: str = "tune") -> None:
    """The MPI tune command, as ``sim mpi tune`` and ``tune mpi`` (one parser, one run)."""
    t = sub.add_parser(name, help="MPI knobs at distance: eager threshold, UD window and retry timeout, process "
                       "pairs", formatter_class=DefaultsHelpFormatter,
                       description="Simulate candidate eager thresholds, UD/UC reliability windows and retry "
                                   "timeouts and numbers of process pairs for one message size and print, for each, "
                                   "the default, the best value with its predicted bandwidth and gain, the range "
                                   "searched and whether the best sits at its edge (docs/how-to/tune.md).")
    t.add_argument("--size", required=True, metavar="SIZE", help="message size (bytes, K/M suffixes)")
    _common(t)
    # tune sizes the job and searches the threshold itself: these are still parsed, to be refused with
    # the reason (run_tune), but its help does not offer them.
    for action in t._actions:
        if set(action.option_strings) & set(TUNE_REFUSES):
            action.help = argparse.SUPPRESS
    t.set_defaults(func=run_tune)


def _points(args) -> list[dict]:
    if args.distance_km is None and args.distance_miles is None:
        return [{"delay_us": d} for d in units.parse_float_list("0" if args.delay_us is None else args.delay_us, "--delay-us", 0, units.MAX_DELAY_US)]
    km = [d / units.FIBRE_DELAY_US_PER_KM for d in units.delays_from_options(None, args.distance_km, args.distance_miles)]
    return [{"fibre_km": k} for k in km]


def _params(args) -> dict:
    tcp = args.transport == "tcp"
    for attr, opt in _IB_ONLY if tcp else _TCP_ONLY:
        if getattr(args, attr, None) is not None:
            raise UserError(f"{opt}: not used with --transport tcp (Open MPI's TCP BTL: see 'MPI over TCP')" if tcp
                            else f"{opt}: only with --transport tcp")
    for value, option in ((args.ud_retry_timeout_us, "--ud-retry-timeout-us"), (args.ud_window, "--ud-window"),
                          (args.ud_recv_window, "--ud-recv-window"), (args.ud_max_retries, "--ud-max-retries")):
        if value is not None and args.transport not in ("ud", "uc"):
            raise UserError(f"{option}: only for --transport ud or uc (over rc the adapter retransmits, "
                            "not the library)")
    thr = None
    if args.rndv_threshold is not None:
        text = str(args.rndv_threshold).strip()
        thr = None if text.startswith("-") else units.parse_size(text, "--rndv-threshold")
        if thr is None or thr > 1 << 30:
            raise UserError(f"--rndv-threshold: {text} is out of range [0, 1G] bytes")
    common = dict(node=args.node, seed=args.seed, nodes=args.nodes, ppn=args.ppn, placement=args.placement,
                  copy_MBps=args.copy_MBps, mem_MBps=args.mem_MBps, shm_latency_ns=args.shm_latency_ns,
                  core_mops=args.core_mops, algo=args.algo, transport=args.transport, loss=args.loss,
                  network=args.network)
    if tcp:
        return {**common, **_tcp_params(args)}
    return dict(common, testbed=args.profile, library=args.mpi_library, fabric=args.fabric,
                switch_latency_ns=args.switch_latency_ns, eager_threshold_bytes=thr, rndv_protocol=args.rndv_protocol,
                eager_credits=args.eager_credits, send_wqes=args.send_wqes,
                ud_retry_timeout_us=args.ud_retry_timeout_us, ud_window=args.ud_window,
                ud_recv_window=args.ud_recv_window, ud_max_retries=args.ud_max_retries)


def _tcp_params(args) -> dict:
    """The 'MPI over TCP' options as scenario parameters."""
    eager = _size_in(args.eager_limit, "--eager-limit", 1024, 1 << 30)
    buf = _size_in(args.socket_buffer_max, "--socket-buffer-max", 65536, 1 << 32)
    rate = None
    if args.rate_gbps is not None:
        rates = units.parse_float_list(args.rate_gbps, "--rate-gbps", 0.001, 400)
        if len(rates) > 1:  # one link per run: a list would run its first value alone
            raise UserError(f"--rate-gbps: one rate, not a list ('{args.rate_gbps}'; valid range [0.001, 400])")
        rate = rates[0]
    return dict(stack=_stack(args.stack) if args.stack is not None else None, rate_gbps=rate,
                eager_limit_bytes=eager, per_msg_us=args.per_msg_us, cc=args.cc, rmem_max_bytes=buf,
                wmem_max_bytes=buf)


#: the MVAPICH2-over-verbs options, not used over TCP (and the TCP ones, not used over verbs)
_IB_ONLY = (("rndv_threshold", "--rndv-threshold"), ("rndv_protocol", "--rndv-protocol"),
            ("mpi_library", "--mpi-library"), ("eager_credits", "--eager-credits"), ("send_wqes", "--send-wqes"),
            ("profile", "--profile"), ("fabric", "--fabric"), ("switch_latency_ns", "--switch-latency-ns"))
_TCP_ONLY = (("rate_gbps", "--rate-gbps"), ("stack", "--stack"), ("eager_limit", "--eager-limit"),
             ("per_msg_us", "--per-msg-us"), ("cc", "--cc"), ("socket_buffer_max", "--socket-buffer-max"))


def _size_in(text: str | None, option: str, lo: int, hi: int) -> int | None:
    v = units.parse_optional_size(text, option)
    if v is None:
        return None
    if not lo <= v <= hi:
        raise UserError(f"{option}: {v} bytes is out of range [{lo}, {hi}]")
    return v


def _stack(text: str):
    """A profile name, or 'SEG_US,BYTE_NS' measured costs."""
    if text in mpi.STACK_PROFILES:
        return text
    parts = text.split(",")
    try:
        seg, byte = (float(x) for x in parts)
    except ValueError:
        raise UserError(f"--stack: '{text}' is neither a profile ({', '.join(mpi.STACK_PROFILES)}) nor "
                        "'per-segment us,per-byte ns' (e.g. 2.5,0.3)") from None
    # The core's ranges (tcp/scenario.rs), checked here to name the option, not the scenario's key.
    for value, what, hi in ((seg, "per-segment cost", 10_000), (byte, "per-byte cost", 1_000)):
        if not (math.isfinite(value) and 0 <= value <= hi):
            unit = "us" if what == "per-segment cost" else "ns"
            raise UserError(f"--stack: {what} {value:g} {unit} is out of range [0, {hi}] {unit}")
    return mpi.stack_costs(seg, byte)


def _window_only_for_streams(args: argparse.Namespace) -> None:
    """--window is the message window of osu_bw, osu_bibw and osu_mbw_mr; osu_latency (ping-pong)
    and the collectives have none, so there it would change nothing and is refused."""
    if args.window is not None and args.bench not in ("bw", "bibw", "mbw_mr"):
        raise UserError(f"--window: only for --bench bw, bibw, mbw_mr (osu_{args.bench} sends no window of messages)")


def _algos(recs: list[dict]) -> str:
    """'algo binomial', or per run of sizes when the choice changes with the size
    ('algo binomial 1-8192 B, scatter-rd 16384-1048576 B')."""
    runs: list[list] = []
    for r in recs:
        algo = r.get("algo", "p2p")
        if runs and runs[-1][0] == algo:
            runs[-1][2] = r["size_bytes"]
        else:
            runs.append([algo, r["size_bytes"], r["size_bytes"]])
    if len(runs) == 1:
        return f"algo {runs[0][0]}"
    return "algo " + ", ".join(f"{a} {lo} B" if lo == hi else f"{a} {lo}-{hi} B" for a, lo, hi in runs)


def _emit_osu(recs: list[dict], args: argparse.Namespace) -> None:
    """``--format osu``: per delay, the text the OSU benchmark prints (``longhaul.osu_text``),
    with a comment line saying where it ran."""
    blocks = []
    for delay in dict.fromkeys(r["one_way_delay_us"] for r in recs):
        here = [r for r in recs if r["one_way_delay_us"] == delay]
        r0 = here[0]
        where = (f"longhaul simulator, profile {r0['testbed']}, {r0.get('transport', 'tcp')}, {delay:g} us one way "
                 f"({delay / units.FIBRE_DELAY_US_PER_KM:g} km), ranks {r0.get('ranks', 2)}, {_algos(here)}")
        lines = osu_text.header(args.bench, [where], r0.get("pairs"), args.window or 64)
        for r in here:
            values: tuple[float | None, ...]
            if args.bench == "latency":
                values = (r["lat_us"],)
            elif args.bench == "mbw_mr":
                values = (r["bw_MBps"], r["msg_rate_Mps"] * 1e6)
            elif args.bench in ("bw", "bibw"):
                values = (r["bw_MBps"],)
            else:
                values = (r["lat_us"], r["lat_min_us"], r["lat_max_us"])
            if any(v is None for v in values):  # a point that did not finish: OSU prints nothing either
                lines.append(f"# {r['size_bytes']}: {r['status']}")
                continue
            lines.append(osu_text.row(r["size_bytes"], *values,
                                      iterations=r["iterations"] if len(values) == 3 else None))
        blocks.append("\n".join(lines))
    print("\n\n".join(blocks))


_FEWER = "give fewer --nodes or --ppn, fewer --workers (points simulated at once), or a larger --max-memory"


def _admit(args: argparse.Namespace, ranks: int, points: int, kind: str, what: str) -> None:
    """Refuse a job whose memory estimate (``admission.mpi_bytes``) is over --max-memory, before it starts."""
    if ranks <= admission.MAX_MPI_RANKS:  # more is the core's to refuse, with its own message
        at_once = admission.at_once(points, args.workers)
        admission.admit(admission.mpi_bytes(ranks, kind, at_once, args.network), args.max_memory,
                        f"{what} ({ranks} ranks, {at_once} point(s) at once)", _FEWER)


def run_osu(args: argparse.Namespace) -> int:
    coll = args.bench in ("bcast", "scatter", "alltoall", "allreduce")
    _window_only_for_streams(args)
    # Options that would change nothing here are refused rather than ignored (1 pair and the
    # default algorithm are what a point-to-point benchmark runs anyway).
    if args.pairs not in (None, 1) and args.bench != "mbw_mr":
        raise UserError(f"--pairs: only for --bench mbw_mr (osu_{args.bench} runs one pair)")
    if args.algo not in (None, "default") and not coll:
        raise UserError(f"--algo: only for the collectives (bcast, scatter, alltoall, allreduce), not {args.bench}")
    default = "1:1M" if coll or args.bench == "latency" else "1:4M"
    sizes = units.parse_sizes(default if args.sizes is None else args.sizes, "--sizes", 0, 1 << 30)
    ranks = 2 * (args.nodes or (4 if coll else 1)) * (args.ppn or 1)
    ranks = max(ranks, 2 * (args.pairs or 1)) if args.bench == "mbw_mr" else ranks
    _admit(args, ranks, len(sizes) * len(_points(args)), "alltoall" if args.bench == "alltoall" else "other",
           f"osu_{args.bench}")
    recs = mpi.osu_sweep(args.bench, sizes, where=_points(args), workers=args.workers, pairs=args.pairs,
                         iterations=args.iterations, window=args.window, **_params(args))
    if args.format == "osu":
        _emit_osu(recs, args)
        return 0
    cols = COLL_COLUMNS if coll else P2P_COLUMNS
    if args.loss:  # what the loss cost: resends by the adapters (RC) or by the library (UD/UC)
        cols = cols[:-1] + ["retransmitted_packets", "resent_frames"] + cols[-1:]
    over = f" --transport {args.transport}" if args.transport else ""
    emit(recs, args.format, cols, title=f"longhaul sim mpi osu --bench {args.bench}{over} ({recs[0]['testbed']})")
    if any(not r["crosses_wan"] and r["one_way_delay_us"] > 0 for r in recs):
        r = recs[0]
        # Block placement keeps a point-to-point pair in cluster A once it has two slots there; cyclic
        # placement keeps osu_mbw_mr's pairs (rank i with i + pairs) in one cluster when pairs is even.
        fix = ("--placement block puts every sender in cluster A and its receiver in B" if args.placement == "cyclic"
               else "--placement cyclic or --nodes 1 --ppn 1 puts them in different clusters")
        sys.stderr.write(f"longhaul: note: the measured ranks do not cross the long-haul link ({args.placement or 'block'} "
                         f"placement on {r['nodes']} node(s) x {r['ppn']} per cluster), so the delay is not on their path; "
                         f"{fix}\n")
    return 0


def run_app(args: argparse.Namespace) -> int:
    apps = units.parse_name_list(args.app, "--app", mpi.APPS)
    _admit(args, 2 * (args.nodes or 1) * (args.ppn or 1), len(apps) * len(_points(args)),
           admission.app_kind(apps), "the NAS skeletons")
    recs = mpi.app_sweep(apps, args.klass, where=_points(args), compute_us_per_iter=args.compute_us,
                         iterations=args.iterations, workers=args.workers, **_params(args))
    emit(recs, args.format, APP_COLUMNS, title=f"longhaul sim mpi app (class {args.klass})")
    return 0


def run_replay(args: argparse.Namespace) -> int:
    path = Path(args.trace)
    # bounded: /dev/zero was read until memory ran out, a FIFO blocked
    text = safeio.read_text(args.trace, "TRACE", safeio.TRACE_BYTES,
                            "the trace file to replay (format: docs/reference/trace-format.md)")
    ranks = max(admission.trace_ranks(text), 2 * (args.nodes or 0) * (args.ppn or 1))
    _admit(args, ranks, len(_points(args)), "trace", f"the replay of {safeio.printable(path.name)}")
    recs = mpi.replay(text, str(path), where=_points(args), workers=args.workers, **_params(args))
    emit(recs, args.format, ["ranks", "delay_us", "distance_km", "run_time_s", "messages", "status"],
         title=f"longhaul sim mpi replay {path.name}")
    return 0


#: Options of the other verbs that tune refuses (run_tune says why).
TUNE_REFUSES = ("--nodes", "--ppn", "--placement", "--rndv-threshold", "--eager-limit", "--algo")


def run_tune(args: argparse.Namespace) -> int:
    size = units.parse_size(args.size, "--size")
    if not 1 <= size <= 1 << 30:
        raise UserError(f"--size: {size} bytes is out of range [1, 1073741824]")
    for value, option in ((args.nodes, "--nodes"), (args.ppn, "--ppn"), (args.placement, "--placement")):
        if value is not None:
            raise UserError(f"{option}: tune sizes the job itself (one pair for the threshold, 1..{tune.MPI_PAIRS_MAX} "
                            "pairs for the pair count, a node per process, each pair across the long-haul link)")
    if args.rndv_threshold is not None:
        raise UserError("--rndv-threshold: tune searches the eager threshold itself (the library's default, the "
                        "power of two above the message and 4 x that)")
    if args.eager_limit is not None:
        raise UserError("--eager-limit: tune searches the eager limit itself (Open MPI's default, the power of two "
                        "above the message and 4 x that)")
    if args.algo is not None:
        raise UserError("--algo: tune runs point-to-point benchmarks (osu_bw, osu_mbw_mr), which use no collective")
    params = {k: v for k, v in _params(args).items() if k not in ("eager_threshold_bytes", "nodes", "ppn")}
    run = tune.simulate(args.workers)
    rows = []
    for w in _points(args):
        where, knobs = tune.mpi_knobs(run, size, **params, **w)
        rows += tune.rows(where, knobs, size_bytes=size, transport=args.transport or "rc")
    tune_emit(rows, args.format, f"longhaul {args.command} mpi" if args.command == "tune" else "longhaul sim mpi tune")
    return 0


def tune_emit(rows: list[dict], fmt: str, title: str) -> None:
    """A tune's knobs: the table (or csv/json), then each knob's advice in words."""
    where = ["distance_km", "delay_us"] if len({(r["distance_km"], r["delay_us"]) for r in rows}) > 1 else []
    emit(rows, fmt, [*where, "knob", "default", "best", "default_bw_MBps", "best_bw_MBps", "gain_pct", "searched"],
         title=title + _at(rows[0]) if not where and rows else title)
    if fmt == "table":
        for r in rows:
            print(tune.sentence(r))


def _at(r: dict) -> str:
    """Where a tune ran, for its title: the distance, the delay added and the whole one way."""
    km = f"{r['distance_km']:g} km, " if r.get("distance_km") else ""
    return f" at {km}delay_us {r['delay_us']:g} (one way {r['one_way_delay_us']:g} us)"
