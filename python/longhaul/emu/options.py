"""Link parameters of the emulator, with units in their names, and their validation.

Every out-of-range value is a ``UserError`` naming the option and the valid range. The same
``LinkOptions`` drives the CLI, the scenario files and ``longhaul.emu.bench``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace

from longhaul import units
from longhaul.errors import UserError
from longhaul.units import MAX_DELAY_US, parse_size

MAX_RATE_GBPS = 100.0
MIN_RATE_GBPS = 0.001  # 1 Mb/s; 0 means "no rate limit"
MAX_LOSS = 0.5
MAX_JITTER_US = 100_000.0
MIN_MTU = 576  # IPv4 minimum datagram; the maximum is what the kernel's devices accept (65535 here)
QUEUE_BYTES_RANGE = (65_536, 1 << 30)  # >= one 64 KB super-packet
QUEUE_PACKETS_RANGE = (8, 1_000_000)
WINDOW_RANGE = (65_536, 1 << 30)
MAX_HOSTS = 16
#: Parallel WAN links, as the simulator's path.wan_links (1..16).
MAX_LINKS = 16
#: Longest failure detection time (a minute: far above BFD's or a subnet manager's sweep).
MAX_DETECT_MS = 60_000.0
MAX_FRAME_BYTES = 256  # well above any real link layer's per-packet framing
MAX_INITCWND_SEGS = 1000
RTO_MIN_MS_RANGE = (1.0, 60_000.0)
UNLIMITED_RATE_FOR_BDP_GBPS = 10.0  # rate assumed to size buffers when the link is unlimited
MAX_SEED = (1 << 64) - 2  # the data plane's seeds are u64, and B->A uses seed + 1

_QUEUE_PACKETS_RE = re.compile(r"^\s*(\d+)\s*(p|pkt|pkts|packets)\s*$", re.IGNORECASE)


RATE_RANGE_TEXT = f"0 (unlimited) or [{MIN_RATE_GBPS:g}, {MAX_RATE_GBPS:g}] Gb/s"


def parse_rates(text, option: str = "--rate-gbps") -> list[float]:
    """Link rates in Gb/s from a comma list: 0 = unlimited, else MIN_RATE_GBPS..MAX_RATE_GBPS."""
    rates = []
    for part in units.list_items(text, option, RATE_RANGE_TEXT):
        try:
            r = float(part)
        except ValueError:
            r = math.nan
        if not (r == 0 or MIN_RATE_GBPS <= r <= MAX_RATE_GBPS):  # also NaN
            raise UserError(f"{option}: '{part}' is not a rate: give {RATE_RANGE_TEXT}")
        rates.append(r)
    if not rates:
        raise UserError(f"{option}: empty list (give {RATE_RANGE_TEXT})")
    return units.unique(rates, option)


def _check(value: float, option: str, lo: float, hi: float, unit: str = "") -> float:
    if not isinstance(value, (int, float)) or not math.isfinite(value) or not lo <= value <= hi:
        raise UserError(f"{option}: {value} is out of range [{lo:g}, {hi:g}]{unit}")
    return float(value)


@dataclass(frozen=True)
class Queue:
    """Drop-tail bottleneck queue: a byte limit or a packet limit (exactly one is set)."""

    bytes: int | None = None
    packets: int | None = None

    @staticmethod
    def parse(text: str | int, option: str = "--queue") -> Queue:
        """'4MB', '512K', '65536' (bytes, binary suffixes) or '1000p' / '1000pkts' (packets)."""
        m = _QUEUE_PACKETS_RE.match(str(text))
        if m:
            n = int(m.group(1))
            lo, hi = QUEUE_PACKETS_RANGE
            if not lo <= n <= hi:
                raise UserError(f"{option}: {n} packets is out of range [{lo}, {hi}]")
            return Queue(packets=n)
        try:
            b = parse_size(str(text), option)
        except UserError:
            raise UserError(f"{option}: '{text}' is not a queue size (bytes like 4MB, 512K, or packets like 1000p)") from None
        lo, hi = QUEUE_BYTES_RANGE
        if not lo <= b <= hi:
            raise UserError(f"{option}: {b} bytes is out of range [{lo}, {hi}] (64K .. 1G)")
        return Queue(bytes=b)

    def bytes_at(self, mtu: int) -> int:
        """The limit in bytes: a packet limit holds that many packets of `mtu` bytes."""
        if self.bytes is not None:
            return self.bytes
        assert self.packets is not None  # exactly one is set
        return self.packets * mtu

    def spec(self) -> str:
        return f"queue_packets={self.packets}" if self.packets is not None else f"queue_bytes={self.bytes}"

    def record(self) -> dict:
        return {"queue_bytes": self.bytes, "queue_packets": self.packets}


@dataclass(frozen=True)
class Direction:
    """One direction of the link. delay_us: one-way propagation delay (us); rate_gbps: link
    rate at the IP layer (Gb/s, 0 = unlimited); loss: probability a wire packet is lost;
    jitter_us: extra delay uniform in [-jitter, +jitter] (us, never reorders); queue: the
    bottleneck queue (None = one round-trip's worth of bytes at the rate, at least
    ``min_queue_bytes``: 256 KB, or a scenario file's 100 packets as the simulator sizes it);
    frame_bytes: link-layer bytes each wire packet costs on the link beyond its IP bytes (0..256;
    e.g. 38 for Ethernet), which take link time but no queue room."""

    delay_us: float = 0.0
    rate_gbps: float = 0.0
    loss: float = 0.0
    jitter_us: float = 0.0
    queue: Queue | None = None
    frame_bytes: int = 0
    min_queue_bytes: int = 256 * 1024

    def validated(self, prefix: str = "--") -> Direction:
        _check(self.delay_us, f"{prefix}delay-us", 0, MAX_DELAY_US, " us")
        if self.rate_gbps != 0:
            _check(self.rate_gbps, f"{prefix}rate-gbps", MIN_RATE_GBPS, MAX_RATE_GBPS, " Gb/s (or 0 = unlimited)")
        _check(self.loss, f"{prefix}loss", 0, MAX_LOSS, " (probability per packet)")
        _check(self.jitter_us, f"{prefix}jitter-us", 0, MAX_JITTER_US, " us")
        _check(self.frame_bytes, "frame_bytes", 0, MAX_FRAME_BYTES, " bytes per packet")
        return self

    def effective_queue(self) -> Queue:
        if self.queue is not None:
            return self.queue
        rate = self.rate_gbps or UNLIMITED_RATE_FOR_BDP_GBPS
        bdp = int(rate * 1e9 / 8 * 2 * self.delay_us * 1e-6)
        return Queue(bytes=min(max(bdp, self.min_queue_bytes), QUEUE_BYTES_RANGE[1]))

    def spec(self, seed: int) -> str:
        """The data plane's per-direction spec (integer nanoseconds and bits per second)."""
        return ",".join([
            f"delay_ns={round(self.delay_us * 1000)}",
            f"jitter_ns={round(self.jitter_us * 1000)}",
            f"rate_bps={round(self.rate_gbps * 1e9)}",
            self.effective_queue().spec(),
            f"loss={self.loss!r}",
            f"frame_bytes={self.frame_bytes}",
            f"seed={seed}",
        ])


@dataclass(frozen=True)
class LinkOptions:
    """Everything that defines an emulated pair of clusters.

    ab / ba: the two directions (A->B, B->A); mtu: bytes, on every interface (>= 576, up to
    what the kernel accepts: 65535 for TUN and veth; 65520 mimics IPoIB connected mode);
    hosts: hosts per cluster (1..16); window: maximum TCP socket buffer in bytes set in every
    namespace (tcp_rmem maximum, and tcp_wmem maximum unless wmem_max is given; None = 4 x the
    bandwidth-delay product, >= 4 MiB); seed: of the loss and jitter random streams.
    TCP of the hosts, per namespace: sack (net.ipv4.tcp_sack), rack (RACK loss detection,
    net.ipv4.tcp_recovery = 1; off = 0, as before Linux 4.18); and on the route across the
    link: initcwnd_segs (initial congestion window, segments; None = the kernel's 10),
    rto_min_ms (minimum retransmission time-out; None = the kernel's 200 ms), quickack
    (True = acknowledge every segment at once, no delayed ACKs).
    links: parallel WAN links (1..16), each with the directions ab/ba, devices wan0 .. wan<N-1>,
    flows spread over them by the hosts' multipath routes (``longhaul.emu.topology``);
    detect_ms: how long after a link is cut the hosts' routes stop using it (its devices lose
    carrier; 0 = at once, as when a host's own port goes dark).
    """

    ab: Direction = field(default_factory=Direction)
    ba: Direction = field(default_factory=Direction)
    mtu: int = 1500
    hosts: int = 1
    window: int | None = None
    wmem_max: int | None = None
    seed: int = 1
    sack: bool = True
    rack: bool = True
    initcwnd_segs: int | None = None
    rto_min_ms: float | None = None
    quickack: bool = False
    links: int = 1
    detect_ms: float = 0.0

    @staticmethod
    def symmetric(delay_us: float = 0.0, rate_gbps: float = 0.0, loss: float = 0.0, jitter_us: float = 0.0,
                  queue: str | int | Queue | None = None, mtu: int = 1500, hosts: int = 1,
                  window: str | int | None = None, seed: int = 1) -> LinkOptions:
        q = queue if isinstance(queue, Queue) or queue is None else Queue.parse(queue)
        d = Direction(delay_us=delay_us, rate_gbps=rate_gbps, loss=loss, jitter_us=jitter_us, queue=q)
        w = parse_size(str(window), "--window") if window is not None and not isinstance(window, int) else window
        return LinkOptions(ab=d, ba=d, mtu=mtu, hosts=hosts, window=w, seed=seed).validated()

    def validated(self) -> LinkOptions:
        self.ab.validated()
        self.ba.validated()
        if not isinstance(self.mtu, int) or self.mtu < MIN_MTU:
            raise UserError(f"--mtu: {self.mtu} is below the minimum of {MIN_MTU} bytes")
        if not isinstance(self.seed, int) or not 0 <= self.seed <= MAX_SEED:
            raise UserError(f"--seed: {self.seed} is out of range [0, {MAX_SEED}]")
        if not isinstance(self.hosts, int) or not 1 <= self.hosts <= MAX_HOSTS:
            raise UserError(f"--hosts: {self.hosts} is out of range [1, {MAX_HOSTS}]")
        if isinstance(self.links, bool) or not isinstance(self.links, int) or not 1 <= self.links <= MAX_LINKS:
            raise UserError(f"--wan-links: {self.links} is out of range [1, {MAX_LINKS}]")
        _check(self.detect_ms, "--detect-ms", 0, MAX_DETECT_MS, " ms")
        for option, value in (("--window", self.window), ("wmem_max_bytes", self.wmem_max)):
            if value is not None and not WINDOW_RANGE[0] <= value <= WINDOW_RANGE[1]:
                raise UserError(f"{option}: {value} bytes is out of range [{WINDOW_RANGE[0]}, {WINDOW_RANGE[1]}] (64K .. 1G)")
        if self.initcwnd_segs is not None:
            _check(self.initcwnd_segs, "initial_cwnd_segs", 1, MAX_INITCWND_SEGS, " segments")
        if self.rto_min_ms is not None:
            _check(self.rto_min_ms, "min_rto_ms", *RTO_MIN_MS_RANGE, " ms")
        return self

    def at(self, delay_us: float, rate_gbps: float) -> LinkOptions:
        """The same link with this delay and rate in both directions (a point of a grid)."""
        return replace(self, ab=replace(self.ab, delay_us=delay_us, rate_gbps=rate_gbps),
                       ba=replace(self.ba, delay_us=delay_us, rate_gbps=rate_gbps)).validated()

    def route_options(self) -> list[str]:
        """`ip route` attributes of the route across the link (initcwnd, rto_min, quickack)."""
        out = []
        if self.initcwnd_segs is not None:
            out += ["initcwnd", str(self.initcwnd_segs)]
        if self.rto_min_ms is not None:
            out += ["rto_min", f"{self.rto_min_ms:g}ms"]
        if self.quickack:
            out += ["quickack", "1"]
        return out

    def effective_window(self) -> int:
        if self.window is not None:
            return self.window
        worst = max((d.rate_gbps or UNLIMITED_RATE_FOR_BDP_GBPS) * self.links * 1e9 / 8
                    * (self.ab.delay_us + self.ba.delay_us) * 1e-6 for d in (self.ab, self.ba))
        return int(min(max(4 * worst, 4 << 20), WINDOW_RANGE[1]))

    def with_window(self, window: int | None) -> LinkOptions:
        return replace(self, window=window).validated()

    def record(self) -> dict:
        """Flat description for result records (A->B direction; B->A if it differs)."""
        r = {
            "delay_us": self.ab.delay_us,
            "rate_gbps": self.ab.rate_gbps,
            "loss": self.ab.loss,
            "jitter_us": self.ab.jitter_us,
            **self.ab.effective_queue().record(),
            "mtu_bytes": self.mtu,
            "window_bytes": self.effective_window(),
            "wmem_max_bytes": self.wmem_max or self.effective_window(),
        }
        if self.ab.frame_bytes:
            r["frame_bytes"] = self.ab.frame_bytes
        if self.links > 1:
            r.update({"wan_links": self.links, "detect_ms": self.detect_ms})
        if (self.sack, self.rack, self.initcwnd_segs, self.rto_min_ms, self.quickack) != (True, True, None, None, False):
            r.update({"sack": self.sack, "rack": self.rack, "initcwnd_segs": self.initcwnd_segs,
                      "rto_min_ms": self.rto_min_ms, "quickack": self.quickack})
        if self.ba != self.ab:
            r.update({"ba_delay_us": self.ba.delay_us, "ba_rate_gbps": self.ba.rate_gbps, "ba_loss": self.ba.loss})
        return r
