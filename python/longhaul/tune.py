"""Tuning advice on the knobs that dominate at distance, each searched by simulating.

Verbs: message size, the send queue depth (perftest's tx-depth) and queue pairs. TCP: the socket
buffer (iperf -w, capped by net.core.rmem_max/wmem_max), the auto-tuning ceiling
(net.ipv4.tcp_rmem/tcp_wmem's maximum) and parallel streams. MPI: the eager threshold, process
pairs, and over UD/UC the library's reliability window and retry timeout (MVAPICH2's
MV2_UD_SENDWINDOW_SIZE, MV2_UD_RETRY_TIMEOUT).

Each knob is searched alone from the defaults (the MPI pairs with the best threshold, everything
after the UD retry timeout when one was chosen): a climb from the default by a factor (4, or 2 for
pairs) while a step gains at least ``GAIN_PCT``, then one point between the best and the value
below it (coarse to fine), so one knob costs a handful of simulations. The advice is the smallest
value within ``GAIN_PCT`` of the fastest (a bigger buffer, queue or job costs memory and cores for
nothing), and says when it sits at the edge of the range searched. ``run`` (kind, scenarios,
description) -> records lets the study pass its cached runner; the default simulates here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from longhaul.errors import UserError
from longhaul.sim import mpi, tcp, verbs

#: A step gaining less than this (percent) ends a climb; values within it of the best count as equal.
GAIN_PCT = 2.0
#: More pairs cost two cores each: one must gain this much (percent) to be advised.
PAIRS_GAIN_PCT = 5.0
#: The tops of the ranges searched, and why each is the top.
VERBS_SIZE_MAX = 8 << 20      # perftest -a's largest message
VERBS_QPS_MAX = 16           # each QP to the top moves 1000 messages: the costliest points
TCP_WINDOW_MAX = 1 << 30      # Linux caps a socket buffer near INT_MAX / 2 (sock_setsockopt doubles it)
TCP_STREAMS_MAX = 64
MPI_PAIRS_MAX = 32           # the costliest points: every pair runs its own messages
MPI_UD_WINDOW_MAX = 65536     # the model's range for MV2_UD_SENDWINDOW_SIZE
MPI_SEND_WQES_MAX = 16384     # the model's range for the library's send queue
MPI_EAGER_CREDITS_MAX = 4096  # the model's range for eager buffers per peer

Run = Callable[[str, Sequence[dict], str], list[dict]]
MODULES = {"verbs": verbs, "tcp": tcp, "mpi": mpi}


def simulate(workers: int | None = None, show_progress: bool = True) -> Run:
    """A runner that simulates here, ``workers`` points at a time."""
    def run(kind: str, scs: Sequence[dict], description: str) -> list[dict]:
        return MODULES[kind].run_many(scs, workers=workers, show_progress=show_progress, description=description)
    return run


@dataclass
class Knob:
    """One knob searched: every value tried with its bandwidth (MB/s), and what the advice is."""
    layer: str
    knob: str                 # in words
    setting: str              # the option or library variable that sets it
    default: float
    tried: dict = field(default_factory=dict)
    top: float | None = None  # the top of the range that could be searched
    top_why: str = ""
    prefer: str = "smallest"  # which of the values within GAIN_PCT of the fastest is advised
    default_text: str | None = None   # the default in words when it is not a value (auto-tuning)
    why: str = ""             # the mechanism, one clause
    within: float = GAIN_PCT  # values this close (percent) to the fastest count as equal
    how: str = ""             # how the values were chosen, when not by the climb (replaces the edge note)

    @property
    def best(self) -> float:
        fastest = max(self.tried.values())
        near = [v for v, bw in self.tried.items() if bw >= fastest / (1 + self.within / 100)]
        return min(near) if self.prefer == "smallest" else max(near)

    @property
    def gain_pct(self) -> float | None:
        base = self.tried[self.default]
        return 100.0 * (self.tried[self.best] / base - 1.0) if base else None

    @property
    def note(self) -> str:
        best, lo, hi = self.best, min(self.tried), max(self.tried)
        if self.how:
            return self.how
        if best == self.default:
            return f"the default is within {self.within:g}% of the best found"
        if best == hi and self.top is not None and best >= self.top:
            return f"at the top of the range searched ({_text(hi)}, {self.top_why}): more may help, it is not offered"
        if best == hi:
            return f"at the top of the values tried ({_text(hi)}): larger ones were not simulated"
        if best == lo:
            return f"at the bottom of the range searched ({_text(lo)}, {self.top_why})"
        return ""

    def row(self, where: dict) -> dict:
        best = self.best
        return {"layer": self.layer, "knob": self.knob, "setting": self.setting, **where,
                "default": self.default_text or _text(self.default), "best": _text(best),
                "default_bw_MBps": self.tried[self.default], "best_bw_MBps": self.tried[best],
                "gain_pct": self.gain_pct, "searched": f"{_text(min(self.tried))}..{_text(max(self.tried))}",
                "note": self.note, "why": self.why, "default_value": self.default, "best_value": best,
                "bw_by_value_MBps": {_text(v): bw for v, bw in sorted(self.tried.items())}}


def _text(v: float) -> str:
    return f"{v:g}" if isinstance(v, float) and not v.is_integer() else str(int(v))


def _bw(rec: dict) -> float:
    return float(rec.get("bw_MBps") or 0.0)


def _up(x: float, factor: float, top: float) -> float:
    """The next value of a climb: ``x`` x ``factor`` rounded up to a power of two, at most ``top``."""
    return min(top, 2 ** math.ceil(math.log2(max(1.0, x * factor)) - 1e-9))


def climb(knob: Knob, evaluate: Callable[[float], float], factor: float = 4.0) -> Knob:
    """Fill ``knob.tried``: up from the default by ``factor`` while a step gains ``knob.within`` %,
    up to ``knob.top``; then the power of two between the best and the value below it."""
    if knob.default not in knob.tried:
        knob.tried[knob.default] = evaluate(knob.default)
    x, fastest = knob.default, knob.tried[knob.default]
    while knob.top is None or x < knob.top:
        x = _up(x, factor, knob.top if knob.top is not None else math.inf)
        knob.tried[x] = evaluate(x)
        if knob.tried[x] < fastest * (1 + knob.within / 100):
            break
        fastest = knob.tried[x]
    best = knob.best
    below = max((v for v in knob.tried if v < best), default=None)
    if below is not None:
        mid = 2 ** round(math.log2(math.sqrt(best * below)))
        if below < mid < best:
            knob.tried[mid] = evaluate(mid)
    return knob


def _where(rec: dict) -> dict:
    """Where a tune ran, in the records' own names (delay_us is what the extender adds)."""
    return {k: rec.get(k) for k in ("delay_us", "distance_km", "one_way_delay_us")}


def _evaluator(run: Run, kind: str, make: Callable[..., dict], base: dict, description: str,
               fixed: dict | None = None) -> Callable[[str], Callable[[float], float]]:
    """evaluate(key)(value): the bandwidth of the scenario ``base`` with ``key`` = value, cached."""
    cache: dict = {}

    def of(key: str) -> Callable[[float], float]:
        def evaluate(value: float) -> float:
            params = {**base, **(fixed or {}), key: int(value) if float(value).is_integer() else value}
            ident = repr(sorted(params.items(), key=lambda kv: kv[0]))
            if ident not in cache:
                cache[ident] = _bw(run(kind, [make(**params)], f"{description}: {key} {_text(value)}")[0])
            return cache[ident]
        return evaluate
    return of


# -- verbs -----------------------------------------------------------------------------------

#: The knobs of each layer, by the name the command line uses (``--knobs``).
VERBS_KNOBS = {"size": "size_bytes", "tx-depth": "tx_depth", "qps": "qps"}
TCP_KNOBS = {"window": "window_bytes", "tcp-rmem": "rmem_max_bytes", "streams": "streams"}


def verbs_knobs(run: Run, only: Sequence[str] = tuple(VERBS_KNOBS), **params) -> tuple[dict, list[Knob]]:
    """perftest-like bandwidth (``params``: any verbs scenario parameter; ``size_bytes`` given):
    message size, send queue depth and queue pairs (``only`` those named). Returns where it ran
    and the knobs."""
    params = {"transport": "rc", "op": "write", "test": "bw", **params}
    if params["test"] != "bw":
        raise UserError(f"test: tune maximises bandwidth (bw), not {params['test']}")
    res = verbs.validate(verbs.scenario(**params))
    base_rec = run("verbs", [verbs.scenario(**params)], "tune: the defaults")[0]
    base = {**params, "tx_depth": res["tx_depth"], "qps": res["qps"], "size_bytes": res["size_bytes"]}
    ev = _evaluator(run, "verbs", verbs.scenario, base, "tune verbs")
    knobs = []
    max_wr = int(res["hca"]["max_qp_wr"])
    specs = [
        ("size_bytes", "message size (bytes)", "--size (perftest -s)", VERBS_SIZE_MAX, "perftest -a's largest",
         "a larger message puts more bytes in flight per work request"),
        ("tx_depth", "send queue depth (work requests in flight per QP)", "--tx-depth (perftest -t)", max_wr,
         f"the {res['hca']['name']} adapter's max_qp_wr", "the window: data in flight = depth x QPs x size"),
        ("qps", "queue pairs", "--qps (perftest -q)", VERBS_QPS_MAX, "the range offered",
         "each QP has its own send queue"),
    ]
    specs = [s for s in specs if s[0] in {VERBS_KNOBS[n] for n in only}]
    if params["transport"] == "ud":
        specs = [s for s in specs if s[0] != "size_bytes"]   # one datagram, at most the MTU
    for key, name, setting, top, why_top, why in specs:
        k = Knob("verbs", name, setting, base[key], top=max(top, base[key]), top_why=why_top, why=why)
        k.tried[base[key]] = _bw(base_rec)
        knobs.append(climb(k, ev(key)))
    return _where(base_rec), knobs


# -- TCP -------------------------------------------------------------------------------------

def tcp_duration_s(one_way_delay_us: float) -> float:
    """A test long enough for slow start and a few congestion epochs: 50 round trips, 1 to 10 s."""
    return min(10.0, max(1.0, 50 * 2 * one_way_delay_us / 1e6))


def tcp_knobs(run: Run, only: Sequence[str] = tuple(TCP_KNOBS), **params) -> tuple[dict, list[Knob]]:
    """iperf-like streams (``params``: any TCP scenario parameter): the socket buffer, the
    auto-tuning ceiling (at twice the best buffer, so with the buffer's climb) and the number of
    streams (``only`` those named)."""
    streams = int(params.pop("streams", None) or 1)
    window = params.pop("window_bytes", None)
    base = {**params, "streams": streams, "window_bytes": window}
    probe = tcp.run(tcp.scenario(**{**base, "duration_s": 0.001}))   # where it runs, before the test's length
    if params.get("duration_s") is None:
        base["duration_s"] = tcp_duration_s(float(probe["one_way_delay_us"]))
    base_rec = run("tcp", [tcp.scenario(**base)], "tune: the defaults")[0]
    ev = _evaluator(run, "tcp", tcp.scenario, base, "tune tcp")
    bw0 = _bw(base_rec)
    ceiling = int(base_rec.get("rmem_max_bytes") or 6291456)   # tcp_rmem[2], ip-sysctl.rst (Linux 4.x on)
    knobs = []
    buf = Knob("tcp", "socket buffer per stream (bytes)", "--window (iperf -w; raise net.core.rmem_max/wmem_max "
               "to it)", float(window or ceiling), top=TCP_WINDOW_MAX, top_why="Linux's largest socket buffer",
               default_text=None if window else f"auto (up to {ceiling})",
               why="a stream's window = its buffer; it must hold rate x round trip")
    buf.tried[buf.default] = bw0
    if {"window", "tcp-rmem"} & set(only):
        climb(buf, ev("window_bytes"))
    if "window" in only:
        knobs.append(buf)
    if window is None and "tcp-rmem" in only:
        # Auto-tuning grows each buffer up to tcp_rmem[2] / tcp_wmem[2] and advertises half of it
        # (tcp_adv_win_scale = 1, the model's TcpParams): the ceiling at twice the best buffer found
        # holds the same window (one more point, not a climb of its own).
        auto = Knob("tcp", "auto-tuning ceiling (bytes)", "net.ipv4.tcp_rmem / tcp_wmem maximum (and "
                    "net.core.rmem_max/wmem_max)", float(ceiling), top=TCP_WINDOW_MAX,
                    top_why="Linux's largest socket buffer", why="auto-tuning grows each buffer up to it",
                    how="tried at twice the best socket buffer found: auto-tuning advertises half its buffer")
        auto.tried[auto.default] = bw0
        target = min(float(TCP_WINDOW_MAX), max(2 * buf.best, float(ceiling)))
        if target not in auto.tried:
            auto.tried[target] = _evaluator(run, "tcp", _tcp_ceiling, base, "tune tcp")("rmem_max_bytes")(target)
        knobs.append(auto)
    more = Knob("tcp", "parallel streams", "--streams (iperf -P)", float(streams), top=TCP_STREAMS_MAX,
                top_why="the range offered", why="each stream has its own window and congestion control")
    more.tried[more.default] = bw0
    if "streams" in only:
        knobs.append(climb(more, ev("streams")))
    return _where(base_rec), knobs


def _tcp_ceiling(rmem_max_bytes: int, **params) -> dict:
    """A TCP scenario whose auto-tuning ceilings (receive and send) are both ``rmem_max_bytes``."""
    return tcp.scenario(**params, rmem_max_bytes=rmem_max_bytes, wmem_max_bytes=rmem_max_bytes)


# -- MPI -------------------------------------------------------------------------------------

def mpi_knobs(run: Run, size_bytes: int, **params) -> tuple[dict, list[Knob]]:
    """osu_bw / osu_mbw_mr for one message size (``params``: any MPI scenario parameter but the
    job's size): over UD/UC with loss the retry timeout first, then the eager threshold, over RC
    the library's send queue and eager credits, over UD/UC its reliability window, and the
    process pairs (with the best threshold and UD window). Over TCP (Open MPI's ob1): the eager limit
    and the process pairs."""
    lib = mpi.validate(mpi.scenario(osu={"bench": "bw", "size_bytes": size_bytes}, **params))
    osu = {"bench": "bw", "size_bytes": size_bytes}
    base_rec = run("mpi", [mpi.scenario(osu=osu, **params)], "tune: the defaults")[0]
    where = _where(base_rec)
    if params.get("transport") == "tcp":
        return where, _mpi_tcp_knobs(run, size_bytes, base_rec, params)
    ud = params.get("transport") in ("ud", "uc")
    knobs = []
    fixed: dict = {}
    if ud and params.get("loss"):
        k = _ud_retry(run, osu, params, float(lib["ud_retry_timeout_us"]), 2 * float(where["one_way_delay_us"]) + 20)
        knobs.append(k)
        fixed["ud_retry_timeout_us"] = k.best
    ev = _evaluator(run, "mpi", lambda **p: mpi.scenario(osu=osu, **p), params, "tune mpi", fixed)
    first = ev("eager_threshold_bytes")
    default_t = int(lib["eager_threshold_bytes"])
    # Only a threshold above the message changes its protocol: the default, the power of two
    # above the message (eager) and four times that.
    eager = eager_threshold_for(size_bytes)
    thr = Knob("mpi", "eager threshold (bytes)", "--rndv-threshold (MV2_IBA_EAGER_THRESHOLD, MV2_VBUF_TOTAL_SIZE)",
               float(default_t), top=float(max(default_t, 4 * eager)), top_why="4 x the message size rounded up",
               why="below it a message goes eagerly, without the rendezvous round trip")
    bw0 = None if fixed else _bw(base_rec)   # the defaults' run, unless the retry timeout changed
    for t in sorted({default_t, eager, 4 * eager}):
        thr.tried[float(t)] = bw0 if t == default_t and bw0 is not None else first(t)
    knobs.append(thr)
    best_t = int(thr.best)
    if not ud:
        # Over RC the library's own windows, each data in flight over the round trip: the send work
        # requests a connection may have posted (MVAPICH2 1.0's 180, MV2_DEFAULT_MAX_SEND_WQE from
        # 1.4) and the eager buffers per peer (RDMA fast path, MV2_NUM_RDMA_BUFFER).
        for key, name, setting, top, why in (
                ("send_wqes", "send work requests per connection", "--send-wqes (MV2_DEFAULT_MAX_SEND_WQE)",
                 MPI_SEND_WQES_MAX, "posted and not completed: past it messages wait in the library's queue"),
                ("eager_credits", "eager buffers per peer (credits)", "--eager-credits (MV2_NUM_RDMA_BUFFER)",
                 MPI_EAGER_CREDITS_MAX, "eager messages in flight per peer before the sender waits for credits")):
            k = Knob("mpi", name, setting, float(lib["max_send_wqe" if key == "send_wqes" else key]), top=top,
                     top_why="the model's range", why=why)
            if bw0 is not None:
                k.tried[k.default] = bw0
            knobs.append(climb(k, ev(key)))
    if ud:
        w = Knob("mpi", "UD reliability window (frames)", "MV2_UD_SENDWINDOW_SIZE (--ud-window)",
                 float(lib["ud_window"]), top=MPI_UD_WINDOW_MAX, top_why="the model's range",
                 why="frames unacknowledged per peer: the window over the round trip")
        if bw0 is not None:
            w.tried[w.default] = bw0
        knobs.append(climb(w, ev("ud_window")))
        fixed["ud_window"] = int(w.best)
    pev = _evaluator(run, "mpi", lambda pairs, **p: mpi.scenario(osu={"bench": "mbw_mr", "size_bytes": size_bytes,
                                                                      "pairs": pairs}, **p),
                     {**params, "eager_threshold_bytes": best_t}, "tune mpi", fixed)("pairs")
    best_found = ", ".join([f"eager_threshold_bytes {best_t}", *(f"{k} {_text(v)}" for k, v in fixed.items())])
    pairs = Knob("mpi", "process pairs across the link", "ranks per node x nodes (osu_mbw_mr pairs)", 1.0,
                 top=MPI_PAIRS_MAX, top_why="the range offered", within=PAIRS_GAIN_PCT,
                 why=f"each pair has its own connection and window (with the best {best_found})")
    knobs.append(climb(pairs, pev, factor=2))
    return where, knobs


def _mpi_tcp_knobs(run: Run, size_bytes: int, base_rec: dict, params: dict) -> list[Knob]:
    """MPI over TCP: Open MPI's TCP BTL eager limit (the record's ``eager_threshold_bytes``), then
    the process pairs with the best limit."""
    osu = {"bench": "bw", "size_bytes": size_bytes}
    ev = _evaluator(run, "mpi", lambda **p: mpi.scenario(osu=osu, **p), params, "tune mpi")("eager_limit_bytes")
    default = int(base_rec["eager_threshold_bytes"])
    # The limit includes ob1's match header: the power of two above the message is eager unless the
    # message is within 16 bytes below it; four times that is eager for certain.
    eager = eager_threshold_for(size_bytes)
    limit = Knob("mpi", "eager limit (bytes, header included)",
                 "--eager-limit (btl_tcp_eager_limit = btl_tcp_rndv_eager_limit)", float(default),
                 top=float(max(default, 4 * eager)), top_why="4 x the message size rounded up",
                 why="below it a message goes eagerly, without the rendezvous round trip (RTS, ACK)")
    for t in sorted({default, eager, 4 * eager}):
        limit.tried[float(t)] = _bw(base_rec) if t == default else ev(t)
    best = int(limit.best)
    pev = _evaluator(run, "mpi", lambda pairs, **p: mpi.scenario(osu={"bench": "mbw_mr", "size_bytes": size_bytes,
                                                                      "pairs": pairs}, **p),
                     {**params, "eager_limit_bytes": best}, "tune mpi")("pairs")
    pairs = Knob("mpi", "process pairs across the link", "ranks per node x nodes (osu_mbw_mr pairs)", 1.0,
                 top=MPI_PAIRS_MAX, top_why="the range offered", within=PAIRS_GAIN_PCT,
                 why=f"each pair has its own TCP connection and window (with the eager limit {best})")
    return [limit, climb(pairs, pev, factor=2)]


def eager_threshold_for(size_bytes: int) -> int:
    """The smallest power-of-two eager threshold that sends a ``size_bytes`` message eagerly (a
    message goes eagerly below the threshold)."""
    return 1 << size_bytes.bit_length()


def _ud_retry(run: Run, osu: dict, params: dict, now: float, rtt_us: float) -> Knob:
    """MPI over UD/UC on a lossy path: the retry timeout, down from the one in use to two round
    trips: a lost frame costs a timeout, and one much below the round trip plus queueing resends
    frames that were not lost. The longest within 5% of the best is advised (fewer needless
    resends when the path varies)."""
    rest = {k: v for k, v in params.items() if k != "ud_retry_timeout_us"}
    cands = sorted({c for c in (100_000.0, 20_000.0, 5_000.0, 2_000.0, 1_000.0) if 2 * rtt_us <= c < now}
                   | {min(now, 2 * rtt_us), min(now, 4 * rtt_us), now}, reverse=True)
    recs = run("mpi", [mpi.scenario(osu=osu, ud_retry_timeout_us=c, **rest) for c in cands], "tune: UD retry timeout")
    k = Knob("mpi", "UD retry timeout (us)", "MV2_UD_RETRY_TIMEOUT (--ud-retry-timeout-us)", now,
             top=min(cands), top_why="two round trips", prefer="largest", within=5.0,
             why="a lost frame waits this long before it goes again")
    k.tried = {c: _bw(r) for c, r in zip(cands, recs)}
    return k


def rows(where: dict, knobs: Sequence[Knob], **context) -> list[dict]:
    """The records of a tune: one per knob, with where it ran and ``context`` (size, link ...)."""
    return [k.row({**context, **where}) for k in knobs]


def sentence(row: dict) -> str:
    """A knob's advice in words."""
    if row["best"] == row["default"] or not row["gain_pct"]:
        return f"{row['knob']}: keep {row['default']} ({row['best_bw_MBps']:,.0f} MB/s; searched {row['searched']})."
    edge = f" Note: {row['note']}." if row["note"] else ""
    return (f"{row['knob']}: {row['best']} instead of {row['default']} gives {row['best_bw_MBps']:,.0f} MB/s "
            f"({row['gain_pct']:+.0f}%), set with {row['setting']}; searched {row['searched']}.{edge}")
