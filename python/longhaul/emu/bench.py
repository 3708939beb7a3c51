"""Benchmarks of real TCP/UDP traffic through the emulator, as flat records.

``tcp()`` and ``ping()`` take the link options (scalars, or lists for a grid) and return one
record per point, with ``source`` = "emu", so ``longhaul compare`` can put them beside the
simulator's. The traffic comes from the project's load generator (``longhaul-wan``
tcp-source/tcp-sink, ping-client/ping-server, cbr-source/cbr-sink) or from iperf3 when asked
(``tool="iperf3"``, Debian package iperf3). Throughput is the data acknowledged by the
receiver in ``duration_s`` seconds after a warm-up of ``omit_s``; ``bw_MBps`` uses MB = 10^6 bytes.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import select
import shutil
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

from longhaul.emu import system
from longhaul.emu.options import LinkOptions, Queue
from longhaul.emu.topology import Emulator
from longhaul.errors import UserError

TOOLS = ("builtin", "iperf3")
MAX_STREAMS = 128
MIN_DURATION_S = 0.1
MAX_DURATION_S = 3600.0
SOCKET_BUFFER_RANGE = (4096, 1 << 30)
#: iperf3's own ceiling on -w (MAX_TCP_BUFFER in iperf_api.h): it refuses more before it starts.
IPERF3_MAX_SOCKET_BUFFER = 512 << 20
#: How long iperf3's server may take to listen before the run is given up.
IPERF3_SERVER_START_S = 10.0
MAX_CROSS_GBPS = 100.0
#: The data plane's threads wake at least this often during a ping run (~20% of a core when
#: idle): a thread that sleeps for the whole 10 ms of a long delay lets its vCPU halt, and the
#: wake-up when the next probe arrives added 50-150 us to the median RTT here; waking every
#: 200 us roughly halved that (docs/models/emulator.md, "Limits").
PING_IDLE_WAKE_US = 200


def ping_cpus() -> tuple[int, int] | None:
    """(CPU of the client and the A->B thread, CPU of the server and the B->A thread), or None
    on one CPU. Each end sits with the data-plane thread that reads what it sends, so the
    thread is woken on its own CPU; woken from the other CPU it waits for an inter-processor
    interrupt, 15-70 us on this VM (ftrace of sched_waking -> sched_switch), which is what
    made the median RTT at 10 ms 40-100 us high. Which CPU each process happened to be on
    changed from run to run, and so did that error."""
    n = os.cpu_count() or 1
    return (n - 1, 0) if n >= 2 else None
_port = itertools.count(20000)


def _list(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _link_points(link: LinkOptions | None, delay_us, rate_gbps, **symmetric) -> list[LinkOptions]:
    """The grid delay_us x rate_gbps (None = the base link's) on `link`, or on a symmetric link
    built from the keyword arguments."""
    base = link or LinkOptions.symmetric(**symmetric)
    delays = _list(delay_us) if delay_us is not None else [base.ab.delay_us]
    rates = _list(rate_gbps) if rate_gbps is not None else [base.ab.rate_gbps]
    return [base.at(d, r) for d, r in itertools.product(delays, rates)]


def check_streams(streams: int, name: str = "--streams") -> int:
    """Parallel TCP streams in [1, MAX_STREAMS]; ``name``: the option or file key that gave them."""
    if not 1 <= streams <= MAX_STREAMS:
        raise UserError(f"{name}: {streams} is out of range [1, {MAX_STREAMS}]")
    return streams


def check_duration_s(duration_s: float, name: str = "--duration-s") -> float:
    if not MIN_DURATION_S <= duration_s <= MAX_DURATION_S:
        raise UserError(f"{name}: {duration_s:g} is out of range [{MIN_DURATION_S:g}, {MAX_DURATION_S:g}]")
    return duration_s


def check_socket_buffer(socket_buffer_bytes: int | None, name: str = "--socket-buffer") -> int | None:
    lo, hi = SOCKET_BUFFER_RANGE
    if socket_buffer_bytes is not None and not lo <= socket_buffer_bytes <= hi:
        raise UserError(f"{name}: {socket_buffer_bytes} bytes is out of range [{lo}, {hi}] (4K .. 1G)")
    return socket_buffer_bytes


def socket_buffer_cap() -> int | None:
    """The largest SO_SNDBUF/SO_RCVBUF a process may ask for without CAP_NET_ADMIN's *FORCE
    options: min(net.core.wmem_max, net.core.rmem_max), or None if unreadable. Linux caps a larger
    request there (the socket then holds 2 x the cap, not 2 x the request). These two are not per
    namespace: on kernel 6.18 a namespace shows the host's values read-only (`ip netns exec NS
    sysctl -w net.core.rmem_max=...` is refused), on older kernels it has no such file, so the
    emulator cannot raise them for its hosts alone; they are read here, on the host."""
    try:
        return min(int(open(f"/proc/sys/net/core/{k}").read()) for k in ("wmem_max", "rmem_max"))
    except (OSError, ValueError):
        return None


def check_iperf3_socket_buffer(socket_buffer_bytes: int | None, name: str = "--socket-buffer") -> int | None:
    """A fixed buffer iperf3 can set: iperf3 -w uses plain SO_SNDBUF/SO_RCVBUF (the builtin tool
    forces them past the cap as root), so above net.core.wmem_max/rmem_max iperf3 either stops
    with "socket buffer size not set correctly" or (up to 2 x the cap) runs on smaller buffers
    than asked; and iperf3 refuses more than 512 MiB itself. Refused with one line, before any
    namespace is built; the machine's settings are left alone."""
    if not socket_buffer_bytes:
        return socket_buffer_bytes
    if socket_buffer_bytes > IPERF3_MAX_SOCKET_BUFFER:
        raise UserError(f"{name}: {socket_buffer_bytes} bytes is more than iperf3 takes (at most "
                        f"{IPERF3_MAX_SOCKET_BUFFER} bytes, 512M); use --tool builtin for larger buffers")
    cap = socket_buffer_cap()
    if cap is not None and socket_buffer_bytes > cap:
        v = socket_buffer_bytes
        raise UserError(f"{name}: {v} bytes is more than iperf3 can set here: its SO_SNDBUF/SO_RCVBUF are capped "
                        f"at net.core.wmem_max/rmem_max = {cap} bytes, which are the whole machine's (not per "
                        f"namespace); give at most {cap}, use --tool builtin (it forces the buffers past the cap), "
                        f"or raise both on the host first: sysctl -w net.core.rmem_max={v} net.core.wmem_max={v}")
    return socket_buffer_bytes


def iperf3_seconds(duration_s: float, omit_s: float) -> tuple[int, int]:
    """(-t, -O) that iperf3 runs for duration_s measured seconds after omit_s of warm-up: whole
    seconds, rounded up, -t at least 1. iperf3 3.12 reads both with atoi, so "-t 0.5" is 0 (it
    then runs until stopped) and "-O 0.3" is 0; the record carries these, not the request."""
    return max(1, math.ceil(duration_s - 1e-9)), max(0, math.ceil(omit_s - 1e-9))


def _check_cross(cross_gbps: float, points: list[LinkOptions], name: str) -> None:
    """Cross traffic above the A->B line rate would only fill the queue and drop itself: the
    simulator refuses it too. Checked before any namespace is built, where both the traffic and
    the link's rates (each from a scenario file or the command line) are known; ``name``: the
    option or file key that gave the traffic."""
    if not 0 <= cross_gbps <= MAX_CROSS_GBPS:
        raise UserError(f"{name}: {cross_gbps} is out of range [0, {MAX_CROSS_GBPS:g}]")
    for point in points:
        rate = point.ab.rate_gbps
        if rate and cross_gbps > rate:
            raise UserError(f"{name}: {cross_gbps:g} is above the A->B line rate of {rate:g} Gb/s "
                            f"(valid: 0 for none, up to {rate:g})")


class _Tool:
    """A load-generator process on one host; `ready()` waits for its 'ready' line."""

    def __init__(self, emu: Emulator, side: str, argv: list[str]):
        self.proc = emu.popen(side, 0, argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
        assert self.proc.stdout is not None and self.proc.stderr is not None  # PIPE
        self.stdout, self.stderr = self.proc.stdout, self.proc.stderr

    def ready(self, timeout_s: float = 10.0) -> _Tool:
        r, _, _ = select.select([self.stdout], [], [], timeout_s)
        line = self.stdout.readline() if r else ""
        if not line.startswith("ready"):
            self.proc.kill()
            raise RuntimeError(f"load generator did not start: {self.stderr.read().strip()[-300:]}")
        return self

    def result(self, timeout_s: float) -> dict:
        try:
            out, err = self.proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            raise RuntimeError(f"load generator timed out after {timeout_s:.0f} s") from None
        if self.proc.returncode != 0:
            raise RuntimeError(f"load generator failed: {err.strip()[-300:]}")
        lines = [line for line in out.splitlines() if line.startswith("{")]
        return json.loads(lines[-1]) if lines else {}

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def _cross_traffic(emu: Emulator, gbps: float, seconds: float, size_bytes: int | None) -> tuple[_Tool, _Tool] | None:
    """UDP constant-bit-rate traffic from A0 to B0 at `gbps` for `seconds`."""
    if not gbps:
        return None
    wan = system.dataplane_binary()
    size = size_bytes or min(emu.link.mtu - 28, 8972)
    port = next(_port)
    sink = _Tool(emu, "b", [wan, "cbr-sink", "--bind", f"{emu.address('b')}:{port}", "--timeout-s",
                            str(seconds + 30), "--idle-s", "0.5"]).ready()
    src = _Tool(emu, "a", [wan, "cbr-source", "--connect", f"{emu.address('b')}:{port}", "--rate-bps",
                           str(gbps * 1e9), "--size", str(size), "--duration-s", str(seconds)])
    return src, sink


def _cross_record(cross, timeout_s: float) -> dict:
    if cross is None:
        return {"cross_gbps": 0.0}
    src, sink = cross
    s, r = src.result(timeout_s), sink.result(timeout_s)
    sent = s.get("packets_sent", 0)
    got = r.get("packets_received", 0)
    return {"cross_packets_sent": sent, "cross_packets_received": got,
            "cross_loss": round(1 - got / sent, 6) if sent else None}


def _stats_delta(before: dict, after: dict) -> dict:
    ab0, ab1 = before.get("directions", {}).get("ab", {}), after.get("directions", {}).get("ab", {})
    dt = after.get("elapsed_s", 0) - before.get("elapsed_s", 0)
    cpu = after.get("cpu_s", 0) - before.get("cpu_s", 0)
    return {
        "emu_cpu_pct": round(100 * cpu / dt, 1) if dt > 0 else None,
        "drops_queue": ab1.get("drops_queue", 0) - ab0.get("drops_queue", 0),
        "drops_loss": ab1.get("drops_loss", 0) - ab0.get("drops_loss", 0),
        "packets_ab": ab1.get("packets_in", 0) - ab0.get("packets_in", 0),
        "segments_ab": ab1.get("segments_in", 0) - ab0.get("segments_in", 0),
        "lateness_p50_us": ab1.get("lateness_p50_us"),
        "lateness_p99_us": ab1.get("lateness_p99_us"),
        "lateness_max_us": ab1.get("lateness_max_us"),
        "realtime": ab1.get("realtime"),
    }


def default_omit_s(link: LinkOptions) -> float:
    """Warm-up left out of the measurement: 10 round trips, between 0.2 and 2 s."""
    rtt_s = (link.ab.delay_us + link.ba.delay_us) * 1e-6
    return round(min(2.0, max(0.2, 10 * rtt_s)), 3)


def tcp_once(emu: Emulator, streams: int = 1, cc: str | None = None, duration_s: float = 5.0,
             omit_s: float | None = None, tool: str = "builtin", cross_gbps: float = 0.0,
             cross_size_bytes: int | None = None, socket_buffer_bytes: int | None = None) -> dict:
    """One TCP measurement A0 -> B0 on a running emulator; returns a flat record.
    socket_buffer_bytes: SO_SNDBUF and SO_RCVBUF of every socket at both ends (iperf -w);
    None = Linux auto-tuning up to the namespaces' maxima. With tool="iperf3" the run and the
    record's duration_s/omit_s are whole seconds (``iperf3_seconds``)."""
    omit = default_omit_s(emu.link) if omit_s is None else omit_s
    if tool == "iperf3":
        duration_s, omit = iperf3_seconds(duration_s, omit)
    total = duration_s + omit
    before = emu.stats()
    cross = _cross_traffic(emu, cross_gbps, total + 0.5, cross_size_bytes)
    try:
        if tool == "iperf3":
            result = _iperf3(emu, streams, cc, int(duration_s), int(omit), socket_buffer_bytes)  # whole seconds
        else:
            result = _builtin_tcp(emu, streams, cc, duration_s, omit, socket_buffer_bytes)
        cross_rec = _cross_record(cross, total + 35)
    finally:
        if cross:
            for t in cross:
                t.stop()
    after = emu.stats()
    rate = emu.link.ab.rate_gbps * emu.link.links  # the links together (rate_gbps is each one's)
    gbps = result["throughput_gbps"]
    return {
        "source": "emu", "tool": tool, **emu.link.record(), "streams": streams, "cc": cc or _default_cc(),
        # What ran: iperf3 reports its own -t/-O (whole seconds).
        "duration_s": result.get("duration_s", duration_s), "omit_s": result.get("omit_s", omit),
        "socket_buffer_bytes": socket_buffer_bytes,
        "bw_MBps": round(gbps * 1e9 / 8 / 1e6, 3), "throughput_gbps": round(gbps, 4),
        "utilization": round(gbps / rate, 4) if rate else None,
        "retransmits": result.get("retransmits"), "rtt_us": result.get("rtt_us"),
        "cross_gbps": cross_gbps, **({k: v for k, v in cross_rec.items() if k != "cross_gbps"}),
        **_stats_delta(before, after),
    }


def _default_cc() -> str:
    try:
        return open("/proc/sys/net/ipv4/tcp_congestion_control").read().strip()
    except OSError:
        return "default"


def _builtin_tcp(emu: Emulator, streams: int, cc: str | None, duration_s: float, omit_s: float,
                 socket_buffer_bytes: int | None) -> dict:
    wan = system.dataplane_binary()
    port = next(_port)
    total = duration_s + omit_s
    buffers = ["--socket-buffer-bytes", str(socket_buffer_bytes)] if socket_buffer_bytes else []
    sink = _Tool(emu, "b", [wan, "tcp-sink", "--bind", f"{emu.address('b')}:{port}", "--streams", str(streams),
                            "--omit-s", str(omit_s), "--timeout-s", str(total + 30), *buffers]).ready()
    argv = [wan, "tcp-source", "--connect", f"{emu.address('b')}:{port}", "--streams", str(streams),
            "--duration-s", str(duration_s), "--omit-s", str(omit_s), *buffers]
    if cc:
        argv += ["--cc", cc]
    src = _Tool(emu, "a", argv)
    try:
        s = src.result(total + 40)
        sink.result(40)
    finally:
        src.stop()
        sink.stop()
    # Sender-side: bytes acknowledged by B's TCP in the window (see loadgen_tcp.rs for why).
    return {"throughput_gbps": s.get("throughput_bps", 0.0) / 1e9, "retransmits": s.get("retransmits"),
            "rtt_us": s.get("rtt_us")}


def listening(pid: int, address: str, port: int) -> bool:
    """Whether a TCP socket bound to address:port listens in the network namespace of process
    `pid` (its /proc/PID/net/tcp: the namespace's table, read from the host)."""
    a, b, c, d = (int(x) for x in address.split("."))
    local = f"{d:02X}{c:02X}{b:02X}{a:02X}:{port:04X}"  # /proc/net/tcp: address in host byte order
    try:
        lines = Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return False
    return any(f[1] == local and f[3] == "0A" for f in (line.split() for line in lines) if len(f) > 3)


def _one_line(text: str) -> str:
    return " ".join(text.split())[-300:]


def _iperf3(emu: Emulator, streams: int, cc: str | None, duration_s: int, omit_s: int,
            socket_buffer_bytes: int | None) -> dict:
    """iperf3 -c on A0 against iperf3 -s -1 on B0, -t duration_s -O omit_s (whole seconds). What
    iperf3 reports as its error (its JSON's "error", or its message when it stops before JSON) is
    a UserError naming iperf3's words; no iperf3 process outlives the call."""
    if shutil.which("iperf3") is None:
        raise UserError("--tool iperf3: iperf3 is not installed (Debian package iperf3; scripts/apt-packages.txt)")
    check_iperf3_socket_buffer(socket_buffer_bytes)
    port = next(_port)
    server_argv = ["iperf3", "-s", "-1", "-B", emu.address("b"), "-p", str(port)]
    argv = ["iperf3", "-c", emu.address("b"), "-B", emu.address("a"), "-p", str(port), "-J",
            "-t", str(duration_s), "-O", str(omit_s), "-P", str(streams)]
    if cc:
        argv += ["-C", cc]
    if socket_buffer_bytes:
        argv += ["-w", str(socket_buffer_bytes)]  # the client passes it on: the server sets it on its sockets
    server = emu.popen("b", 0, server_argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    client = None
    try:
        deadline = time.monotonic() + IPERF3_SERVER_START_S
        while not listening(server.pid, emu.address("b"), port):
            if server.poll() is not None:
                raise UserError(f"--tool iperf3: iperf3's server stopped before it listened: "
                                f"{_one_line(server.stderr.read() if server.stderr else '') or f'exit status {server.returncode}'}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"iperf3's server did not listen within {IPERF3_SERVER_START_S:g} s")
            time.sleep(0.01)
        client = emu.popen("a", 0, argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        try:
            out, err = client.communicate(timeout=duration_s + omit_s + 60)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"iperf3 did not finish within {duration_s + omit_s + 60} s") from None
    finally:
        for proc in (client, server):
            if proc is not None and proc.poll() is None:
                proc.kill()
            if proc is not None:
                proc.communicate()
    try:
        report = json.loads(out)
    except ValueError:
        # iperf3 stops before its JSON on a bad parameter ("parameter error - ..." on stderr).
        raise UserError(f"--tool iperf3: iperf3 failed: {_one_line(err) or _one_line(out) or 'no output'}") from None
    if not isinstance(report, dict):
        raise RuntimeError(f"could not read iperf3's JSON output ({_one_line(out)[:80]})")
    if report.get("error"):
        # e.g. "socket buffer size not set correctly"; iperf3 exits 0 with it in -J mode.
        raise UserError(f"--tool iperf3: iperf3 failed: {_one_line(str(report['error']))}")
    try:
        end = report["end"]
        received = end["sum_received"]["bits_per_second"]
        retrans = end["sum_sent"].get("retransmits")
        test = report["start"]["test_start"]
        ran = (test["duration"], test["omit"])
    except (KeyError, TypeError) as e:
        raise RuntimeError(f"could not read iperf3's JSON output (no {e})") from None
    # Mean smoothed RTT of each stream's sender, microseconds (TCP_INFO, as iperf3 reports it on Linux).
    rtts = [s["sender"]["mean_rtt"] for s in end.get("streams", [])
            if isinstance(s.get("sender"), dict) and isinstance(s["sender"].get("mean_rtt"), (int, float))]
    return {"throughput_gbps": received / 1e9, "retransmits": retrans,
            "rtt_us": round(sum(rtts) / len(rtts)) if rtts else None,
            "duration_s": ran[0], "omit_s": ran[1]}


def tcp(*, delay_us: float | Iterable[float] | None = None, rate_gbps: float | Iterable[float] | None = None,
        loss: float = 0.0, jitter_us: float = 0.0, queue: str | Queue | None = None, mtu: int = 1500,
        streams: int | Iterable[int] = 1, window: str | int | None = None, cc: str | Iterable[str] | None = None,
        duration_s: float = 5.0, omit_s: float | None = None, tool: str = "builtin", cross_gbps: float = 0.0,
        cross_size_bytes: int | None = None, socket_buffer_bytes: int | None = None, name: str | None = None,
        link: LinkOptions | None = None, cross_name: str = "--cross-gbps") -> list[dict]:
    """TCP throughput A -> B through the emulator, one record per point of the grid
    delay_us x rate_gbps x streams x cc (lists or scalars). One emulator per link point.

    link: the link (e.g. from a scenario file; delay_us / rate_gbps, when given, make the grid
    on it); without it, a symmetric link of delay_us (one way, us; default 0), rate_gbps (0 =
    unlimited), loss (per wire packet), jitter_us, queue ('4MB' / '1000p'; None = one RTT at
    the rate), mtu (bytes) and window (TCP buffer maximum per namespace, bytes or '64M'; None =
    4 x BDP, >= 4 MiB). cc: congestion control set per socket; duration_s: measured seconds,
    after omit_s warm-up; socket_buffer_bytes: fixed socket buffers (iperf -w); cross_name: what
    gave cross_gbps, for messages (the option, or a scenario file's key)."""
    stream_list = [check_streams(int(s)) for s in _list(streams)]
    check_duration_s(duration_s)
    if tool not in TOOLS:
        raise UserError(f"--tool: '{tool}' is not one of {', '.join(TOOLS)}")
    check_socket_buffer(socket_buffer_bytes)
    if tool == "iperf3":
        check_iperf3_socket_buffer(socket_buffer_bytes)
    cc_list = [system.check_congestion_control(c) for c in _list(cc)] if cc is not None else [None]
    records = []
    points = _link_points(link, delay_us, rate_gbps, loss=loss, jitter_us=jitter_us, queue=queue, mtu=mtu, window=window)
    _check_cross(cross_gbps, points, cross_name)
    for point in points:
        with Emulator(point, name=name) as emu:
            for s, c in itertools.product(stream_list, cc_list):
                records.append(tcp_once(emu, s, c, duration_s, omit_s, tool, cross_gbps, cross_size_bytes,
                                        socket_buffer_bytes))
    return records


#: Longest ping run per point (count x interval): a day.
MAX_PING_SECONDS = 86_400
#: How long the ping client waits for the server's follow-up after a reply (FOLLOW_UP_WAIT in
#: crates/longhaul-wan/src/loadgen_udp.rs).
PING_FOLLOW_UP_WAIT_S = 0.005
#: Time for the hosts on top of the link's own in a reply's longest trip (scheduling of the
#: client, server and data plane on a loaded machine).
PING_HOST_MARGIN_S = 0.05


def ping_reply_timeout_s(link: LinkOptions, size_bytes: int) -> float:
    """How long the ping client waits for a probe's reply before counting it lost (its
    --reply-timeout-s): the longest trip the link allows, in each direction its delay and jitter
    and a full bottleneck queue drained at its rate ahead of the probe, plus PING_HOST_MARGIN_S.
    A reply later than that was lost; every lost probe or reply costs the client this long (it
    was a fixed 1 s: 2000 probes at 10% loss took 6.5 minutes at any distance)."""
    total = PING_HOST_MARGIN_S
    for d in (link.ab, link.ba):
        wait = (d.delay_us + d.jitter_us) * 1e-6
        if d.rate_gbps:
            q = d.effective_queue()
            wait += (q.bytes_at(link.mtu) + size_bytes) * 8 / (d.rate_gbps * 1e9)
        total += wait
    return total


def ping_once(emu: Emulator, count: int = 1000, interval_us: float = 1000.0, size_bytes: int = 64,
              cross_gbps: float = 0.0, cross_size_bytes: int | None = None) -> dict:
    """UDP ping-pong A0 <-> B0 on a running emulator: RTT percentiles in microseconds, of the
    network path (kernel receive stamps, the server's turnaround taken out: see loadgen_udp.rs)
    and as the application sees it (app_rtt_*)."""
    wan = system.dataplane_binary()
    port = next(_port)
    rtt_cfg = emu.link.ab.delay_us + emu.link.ba.delay_us
    seconds = count * (interval_us + rtt_cfg) * 1e-6
    reply_timeout_s = ping_reply_timeout_s(emu.link, size_bytes)
    # The client's longest run: every probe waits out its reply (lost on a lossy link) and follow-up.
    longest = count * (interval_us * 1e-6 + reply_timeout_s + PING_FOLLOW_UP_WAIT_S)
    before = emu.stats()
    cpus = emu.dataplane_cpus or (-1, -1)
    server = _Tool(emu, "b", [wan, "ping-server", "--bind", f"{emu.address('b')}:{port}", "--cpu", str(cpus[1]),
                              "--timeout-s", str(longest + 30)]).ready()
    cross = _cross_traffic(emu, cross_gbps, seconds + 1.5, cross_size_bytes)
    try:
        if cross:
            time.sleep(0.5)  # the ping should see the loaded link, not its start
        client = _Tool(emu, "a", [wan, "ping-client", "--connect", f"{emu.address('b')}:{port}", "--count", str(count),
                                  "--interval-us", str(int(interval_us)), "--size", str(size_bytes),
                                  "--reply-timeout-s", str(reply_timeout_s), "--cpu", str(cpus[0])])
        r = client.result(longest + 30)
        cross_rec = _cross_record(cross, seconds + 40)
    finally:
        server.stop()
        if cross:
            for t in cross:
                t.stop()
    after = emu.stats()
    if not r.get("received"):  # no RTT was measured: the client's zeros are not times
        r = {**r, **{k: None for k in r if k.startswith(("rtt_", "app_rtt_"))}}
    return {
        "source": "emu", **emu.link.record(), "size_bytes": size_bytes, "count": count, "received": r.get("received"),
        "rtt_configured_us": rtt_cfg,
        **{k: r.get(k) for k in ("rtt_min_us", "rtt_p50_us", "rtt_p90_us", "rtt_p99_us", "rtt_max_us", "rtt_mean_us",
                                 "app_rtt_p50_us", "app_rtt_p99_us", "kernel_stamped", "tx_stamped")},
        "cross_gbps": cross_gbps, **{k: v for k, v in cross_rec.items() if k != "cross_gbps"},
        **_stats_delta(before, after),
    }


def ping(*, delay_us: float | Iterable[float] | None = None, rate_gbps: float | Iterable[float] | None = None,
         loss: float = 0.0, jitter_us: float = 0.0, queue: str | Queue | None = None, mtu: int = 1500,
         count: int = 1000, interval_us: float = 1000.0, size_bytes: int = 64, cross_gbps: float = 0.0,
         cross_size_bytes: int | None = None, name: str | None = None, link: LinkOptions | None = None,
         cross_name: str = "--cross-gbps") -> list[dict]:
    """UDP ping-pong RTT through the emulator, one record per (delay_us, rate_gbps) point
    (link options and cross traffic as for ``tcp``)."""
    if not 1 <= count <= 1_000_000:
        raise UserError(f"--count: {count} is out of range [1, 1000000]")
    if not 10 <= interval_us <= 1e7:
        raise UserError(f"--interval-us: {interval_us} is out of range [10, 1e7]")
    if not 24 <= size_bytes <= 65000:
        raise UserError(f"--size: {size_bytes} is out of range [24, 65000] bytes")
    if count * interval_us * 1e-6 > MAX_PING_SECONDS:
        raise UserError(f"--count x --interval-us: {count} probes every {interval_us:g} us take "
                        f"{count * interval_us * 1e-6:.0f} s; at most {MAX_PING_SECONDS} s per point")
    records = []
    points = _link_points(link, delay_us, rate_gbps, loss=loss, jitter_us=jitter_us, queue=queue, mtu=mtu)
    _check_cross(cross_gbps, points, cross_name)
    for point in points:
        with Emulator(point, name=name, idle_wake_us=PING_IDLE_WAKE_US, dataplane_cpus=ping_cpus()) as emu:
            records.append(ping_once(emu, count, interval_us, size_bytes, cross_gbps, cross_size_bytes))
    return records
