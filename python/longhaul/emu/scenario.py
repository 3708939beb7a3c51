"""The simulator's TCP scenario file (``longhaul sim tcp --scenario FILE``) driving the emulator,
and turning option values (from such a file and the command line) into ``LinkOptions``.

The file is read and resolved by the simulator's own parser (``longhaul.sim.tcp.validate``,
the Rust core), so it means what it means to the simulator, defaults included, and then mapped:

- link type and rate: the WAN payload rate the simulator resolves (``path.rate_gbps``, or the
  link type's: 10gige-lan 10, 10gige-wan 9.29, oc192 9.58, 25gige to 100gige their MAC rates;
  200gige and 400gige are above what the emulator carries and refused; IPoIB: the testbed's WAN rate),
  with the link type's framing bytes per wire packet (Ethernet/SONET) taking link time;
- ``path.delay_us`` + 5 us per ``path.fibre_km``: the one-way delay; ``path.loss``: per wire
  packet, each direction; ``tcp.mtu_bytes`` (default the link type's): every interface;
- queue: Ethernet/SONET ``queue_bytes`` or ``queue_packets`` (default one bandwidth-delay
  product, >= 100 packets, as the simulator); IPoIB is credit flow-controlled, i.e. lossless:
  a queue of the emulator's maximum (1 GiB) that TCP's windows never fill;
- TCP: ``rmem_max_bytes``/``wmem_max_bytes`` (default stock Linux, 6 MiB / 4 MiB) as the
  namespaces' tcp_rmem/tcp_wmem maxima, ``sack`` as net.ipv4.tcp_sack, ``rack`` as
  net.ipv4.tcp_recovery, ``initial_cwnd_segs``, ``min_rto_ms`` and ``delayed_ack = false`` on the route across the link (initcwnd, rto_min,
  quickack); ``cc``, ``streams``, ``window_bytes`` (socket buffer, iperf -w) and
  ``duration_s`` for ``bench tcp``; ``cross.gbps`` / ``cross.packet_bytes``: UDP
  constant-bit-rate cross traffic; ``seed``.

Link failover (docs/reference/scenario-files.md, "Link failover"): ``path.wan_links`` parallel
links (the simulator's name), ``path.detect_ms`` the time from a cut to the hosts' routes leaving
the link, and the ``[[events]]`` list (``longhaul.failover``) are taken out of the file before the
simulator's TCP parser reads the rest; ``emu drill`` checks the events against its run.

What the emulator cannot honour is refused with one line naming the parameter: the simulated
hosts' costs (``stack``; ``testbed`` on Ethernet/SONET, where it only picks the hosts),
Ethernet/SONET ``extender`` boxes, the IPoIB extender's credit buffer (``queue_bytes``),
``hystart`` (a module parameter of the whole machine), the recovery variants Linux does not
have (``rto_formula = "rfc6298"``, ``rto_restart = "first-partial-ack"``, ``rto_ssthresh =
"every-timeout"``, ``cwnd_growth = "cumulative"``), cross traffic that starts late or comes in bursts, and the
simulator's time series (``interval_s``, ``cwnd_trace``). Every value, the workload's too, is
checked against the emulator's ranges (those of its options) when the file is read, whichever
verb reads it, and named by its key in the file.
"""

from __future__ import annotations

from typing import Any

from longhaul.emu.bench import check_duration_s, check_socket_buffer, check_streams
from longhaul.emu.options import (
    MAX_DETECT_MS,
    MAX_HOSTS,
    MAX_JITTER_US,
    MAX_LINKS,
    MAX_LOSS,
    MAX_RATE_GBPS,
    MAX_SEED,
    MIN_MTU,
    QUEUE_BYTES_RANGE,
    Direction,
    LinkOptions,
    Queue,
    parse_rates,
)
from longhaul.emu.system import check_congestion_control
from longhaul.errors import UserError, in_scenario_file
from longhaul.units import FIBRE_DELAY_US_PER_KM, delays_from_options, parse_one_float, parse_one_int, parse_size

#: The link `longhaul sim tcp --scenario FILE` assumes when the file names none.
DEFAULT_LINK = "ipoib-ud"
#: UDP + IPv4 header bytes: a cross-traffic datagram of IP size N carries N - 28 bytes.
UDP_IP_HEADER_BYTES = 28
PS_PER_S = 1e12


def _refuse_what_cannot_be_honoured(sc: dict, r: dict) -> None:
    path, tcp_, cross = sc["path"], sc["tcp"], sc.get("cross") or {}
    ipoib = r["link"].startswith("ipoib")
    host_only = "the emulator's hosts run this machine's Linux TCP, not the simulated hosts"
    refusals = [
        ("stack" in sc, f"stack: sets the simulated hosts' costs; {host_only}"),
        (not ipoib and sc.get("testbed") not in (None, "modern"),
         f"testbed: on {r['link']} it only picks the simulated hosts; {host_only}"),
        (not ipoib and path.get("extender") not in (None, "none"),
         "extender: the emulator has no extender boxes at the WAN ends (use 'none')"),
        (ipoib and "queue_bytes" in path,
         "queue_bytes: on IPoIB it is the extender's credit buffer; the emulator does not model credit flow control"),
        (tcp_.get("hystart") is False, ("hystart: tcp_cubic's hystart is a module parameter of the whole machine, "
                                       "not settable per emulated host")),
        *((tcp_.get(key, linux) != linux, f"{key}: Linux TCP has only '{linux}'; '{tcp_.get(key)}' is a simulator variant")
          for key, linux in (("rto_formula", "linux"), ("rto_restart", "every-ack"),
                             ("rto_ssthresh", "once-per-episode"), ("cwnd_growth", "in-order"))),
        (bool(cross.get("start_s")), "cross.start_s: the emulator's cross traffic runs from the start"),
        (bool(cross.get("on_ms") or cross.get("off_ms")), ("cross.on_ms, cross.off_ms: the emulator's cross traffic "
                                                           "is constant-rate, not bursts")),
        ("interval_s" in tcp_, "interval_s: the emulator reports one throughput per run, no time series"),
        (bool(tcp_.get("cwnd_trace")), "cwnd_trace: the emulator reports no congestion-window trace"),
    ]
    for refused, message in refusals:
        if refused:
            raise UserError(message)


#: The simulator's smallest default queue, in packets of the MTU plus framing (MIN_QUEUE_PACKETS in
#: crates/longhaul-sim/src/tcp/scenario.rs): a file that sets no queue gets the simulator's rule.
SIM_MIN_QUEUE_PACKETS = 100


def _queue(path: dict, r: dict) -> Queue | None:
    """The file's queue; None where it sets none on Ethernet/SONET: then the link sizes it as the
    simulator does (one bandwidth-delay product, at least SIM_MIN_QUEUE_PACKETS) from the delay,
    rate and MTU in force, which the command line may change (a queue fixed here was the file's
    delay's, whatever --delay-us said)."""
    if r["eth"] is None:
        return Queue(bytes=QUEUE_BYTES_RANGE[1])  # lossless IPoIB: never full
    if "queue_packets" in path:
        return Queue.parse(f"{path['queue_packets']}p", "path.queue_packets")
    if "queue_bytes" in path:
        return Queue.parse(str(r["eth"]["queue_limit_bytes"]), "path.queue_bytes")
    return None


def load(path: str) -> dict:
    """The emulator's settings from a simulator TCP scenario file: ``link`` (values for
    ``build_link``) and ``bench`` (streams, cc, duration_s, socket_buffer_bytes, cross_gbps,
    cross_size_bytes for ``bench tcp``). Bad or unsupported content: UserError naming the file."""
    from longhaul.scenario_file import load_scenario_file
    from longhaul.sim import tcp

    base = load_scenario_file(path)
    failover_values, events = _take_failover(base)
    try:
        has_link = isinstance(base, dict) and "link" in base
        sc = tcp.scenario(base, link=None if has_link else DEFAULT_LINK)
        r = tcp.validate(sc)
        if r["wan_gbps"] > MAX_RATE_GBPS:
            raise UserError(f"link: {r['link']} runs at {r['wan_gbps']:g} Gb/s, above the emulator's "
                            f"{MAX_RATE_GBPS:g} Gb/s (valid: a link, or path.rate_gbps, up to {MAX_RATE_GBPS:g} Gb/s)")
        _refuse_what_cannot_be_honoured(sc, r)
        window = r["params"]["window"]
        auto = window["mode"] == "auto"
        cross = r.get("cross")
        link = {
            "delay_us": r["delay_us"] + r["fibre_km"] * FIBRE_DELAY_US_PER_KM,
            "rate_gbps": r["wan_gbps"],
            "frame_bytes": r["eth"]["wan_frame_overhead_bytes"] if r["eth"] else 0,
            "loss": r["loss"],
            "queue": _queue(sc["path"], r),
            "min_queue_packets": SIM_MIN_QUEUE_PACKETS,
            "mtu": r["mtu_bytes"],
            "window": window["rmem_max_bytes"] if auto else None,
            "wmem_max": window["wmem_max_bytes"] if auto else None,
            "seed": r["seed"],
            "sack": r["params"]["sack"],
            "rack": r["params"]["rack"],
            "initcwnd_segs": sc["tcp"].get("initial_cwnd_segs"),
            "rto_min_ms": sc["tcp"].get("min_rto_ms"),
            "quickack": r["params"]["ack_every_segs"] == 1,
            **failover_values,
        }
        bench = {
            "streams": r["streams"], "cc": r["cc"], "duration_s": r["duration"] / PS_PER_S,
            "socket_buffer_bytes": None if auto else window["bytes"],
            "cross_gbps": cross["gbps"] if cross else 0.0,
            "cross_size_bytes": cross["ip_bytes"] - UDP_IP_HEADER_BYTES if cross else None,
        }
        build_link(link)  # every value in the emulator's ranges
    except UserError as e:  # a value out of the simulator's or the emulator's range: name its key in the file
        raise in_scenario_file(e, path, {**tcp.FILE_KEYS, **_LINK_KEY}) from None
    _check_bench(bench, path)
    return {"link": link, "bench": bench, "events": events}


def _take_failover(base: dict) -> tuple[dict, list | None]:
    """``path.wan_links``, ``path.detect_ms`` (as link values) and the raw ``events`` out of the
    file's data: the simulator's TCP parser knows none of them."""
    path = base.get("path")
    values = {}
    if isinstance(path, dict):
        for key, name in (("wan_links", "links"), ("detect_ms", "detect_ms")):
            if key in path:
                values[name] = path.pop(key)
    return values, base.pop("events", None)


def key_name(path: str, key: str) -> str:
    """How a message names the value of ``key`` in the scenario file ``path``."""
    return f"scenario {path}: {key}"


def _check_bench(bench: dict, path: str) -> None:
    """The workload in the ranges of `bench tcp`'s options, each named by its key in the file.
    Cross traffic is in range already: the simulator holds it to the file's line rate, which is
    in the emulator's range; ``longhaul.emu.bench`` holds it to a rate the command line sets."""
    check_streams(bench["streams"], key_name(path, "tcp.streams"))
    check_duration_s(bench["duration_s"], key_name(path, "tcp.duration_s"))
    check_socket_buffer(bench["socket_buffer_bytes"], key_name(path, "tcp.window_bytes"))
    check_congestion_control(bench["cc"], key_name(path, "tcp.cc"))


#: The emulator's link options and the scenario keys that set them.
_LINK_KEY = {"--delay-us": "path.delay_us + 5 us x path.fibre_km", "--rate-gbps": "the path's WAN rate (path.rate_gbps)",
             "--loss": "path.loss", "--mtu": "tcp.mtu_bytes", "--window": "tcp.rmem_max_bytes",
             "wmem_max_bytes": "tcp.wmem_max_bytes", "--seed": "seed", "--queue": "path.queue_bytes / queue_packets",
             "--wan-links": "path.wan_links", "--detect-ms": "path.detect_ms"}


#: The emulator's whole-number link options and their ranges (the largest MTU is the TUN device's).
_WHOLE = {"--mtu": (MIN_MTU, 65535), "--hosts": (1, MAX_HOSTS), "--seed": (0, MAX_SEED),
          "--wan-links": (1, MAX_LINKS)}


def _int(value, option: str) -> int:
    """One whole number in the option's range: '1,2' or 'abc' say so with the range."""
    return parse_one_int(value, option, *_WHOLE[option])


def _size(value, option: str) -> int:
    """One size ('1M,2M' is a list, refused as such, not 'not a size')."""
    if len(str(value).split(",")) > 1:
        raise UserError(f"{option}: give one value here, not a list")
    return parse_size(str(value), option)


def _direction(values: dict) -> Direction:
    kw: dict[str, Any] = {}
    dist = [values.get(k) for k in ("delay_us", "distance_km", "distance_miles")]
    if any(v is not None for v in dist):
        delays = delays_from_options(*[None if v is None else str(v) for v in dist])
        if len(delays) != 1:
            raise UserError("--delay-us: give one value here, not a list")
        kw["delay_us"] = delays[0]
    if values.get("rate_gbps") is not None:
        rates = parse_rates(values["rate_gbps"])
        if len(rates) != 1:
            raise UserError("--rate-gbps: give one value here, not a list")
        kw["rate_gbps"] = rates[0]
    for key, option, hi in (("loss", "--loss", MAX_LOSS), ("jitter_us", "--jitter-us", MAX_JITTER_US)):
        if values.get(key) is not None:
            kw[key] = parse_one_float(values[key], option, 0.0, hi)
    if values.get("queue") is not None:
        q = values["queue"]
        kw["queue"] = q if isinstance(q, Queue) else Queue.parse(q)
    kw["frame_bytes"] = values.get("frame_bytes") or 0
    if values.get("min_queue_packets"):   # a scenario file's link: the simulator's smallest default queue
        mtu = _int(values["mtu"], "--mtu") if values.get("mtu") is not None else 1500
        kw["min_queue_bytes"] = values["min_queue_packets"] * (mtu + kw["frame_bytes"])
    return Direction(**kw).validated()


def build_link(values: dict) -> LinkOptions:
    """LinkOptions from a mapping of option names to values (numbers or text, None = unset)."""
    d = _direction(values)
    window, wmem = values.get("window"), values.get("wmem_max")
    return LinkOptions(
        ab=d, ba=d,
        mtu=_int(values["mtu"], "--mtu") if values.get("mtu") is not None else 1500,
        hosts=_int(values["hosts"], "--hosts") if values.get("hosts") is not None else 1,
        window=_size(window, "--window") if window is not None else None,
        wmem_max=int(wmem) if wmem is not None else None,
        seed=_int(values["seed"], "--seed") if values.get("seed") is not None else 1,
        sack=values.get("sack", True),
        rack=values.get("rack", True),
        initcwnd_segs=values.get("initcwnd_segs"),
        rto_min_ms=values.get("rto_min_ms"),
        quickack=bool(values.get("quickack")),
        links=_int(values["links"], "--wan-links") if values.get("links") is not None else 1,
        detect_ms=(parse_one_float(values["detect_ms"], "--detect-ms", 0.0, MAX_DETECT_MS)
                   if values.get("detect_ms") is not None else 0.0),
    ).validated()


def merged(file_values: dict, cli_values: dict) -> dict:
    """Command-line values (those given) override the file's."""
    out = dict(file_values)
    given = {k: v for k, v in cli_values.items() if v is not None}
    if given.keys() & {"delay_us", "distance_km", "distance_miles"}:
        for k in ("delay_us", "distance_km", "distance_miles"):
            out.pop(k, None)
    if "window" in given:
        out.pop("wmem_max", None)  # --window sets both maxima
    out.update(given)
    return out
