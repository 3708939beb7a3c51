"""A failover drill: real programs move data from cluster A to cluster B over ``wan_links``
emulated links while links are unplugged and plugged back at given times (the scenario's
``[[events]]``, ``longhaul.failover``).

Workload, both from host A0 to host B0 at once:
- ``iperf3 -P streams`` for ``duration_s`` (whole seconds, as iperf3 reads -t);
- a file transfer: ``transfer_workers`` workers, each pushing its own file of ``transfer_bytes``
  random bytes with ``rsync`` to an rsync daemon on B0, again and again until the run ends; every
  copy that arrives is compared with its source by SHA-256, then deleted (the last copy in flight
  at the end is waited for). rsync (Debian package rsync) runs as it does between two sites:
  a daemon in B's namespace, TCP across the links, whole files.

Measured: every ``interval_s`` the data plane's counters (IP bytes delivered A->B on each link,
its own clock), so ``bw_MBps`` per link and in total over time; per phase (the run cut at its
events) the level reached, the dip after the event, and how long it took to reach 90% of the
level. The transfer's files and the rsync daemon live in ``$TMPDIR/longhaul-NAME-drill`` and the
run's namespaces, which every teardown (the run's, its reaper's, ``emu clean``) removes.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from longhaul import failover
from longhaul.emu import links as linkctl, state, system
from longhaul.emu.bench import iperf3_seconds, listening
from longhaul.emu.options import LinkOptions
from longhaul.emu.topology import Emulator
from longhaul.errors import UserError
from longhaul.failover import Event

MAX_STREAMS = 128
DEFAULT_DURATION_S = 10
#: iperf3 -P: with 16 flows hashed over 4 links, a link gets none about 4% of the time (8 flows: 38%).
DEFAULT_STREAMS = 16
MAX_WORKERS = 16
TRANSFER_BYTES_RANGE = (4096, 1 << 30)
INTERVAL_S_RANGE = (0.05, 10.0)
DURATION_S_RANGE = (2, 3600)
#: The level a phase's recovery is measured against: this share of its steady level.
RECOVERED_SHARE = 0.9
#: How long the copies in flight at the end may take to arrive.
TRANSFER_FINISH_S = 60.0
IPERF3_PORT = 5201
#: iperf3 --cport: its streams' client ports are this and up, so the flows' hashes (and with the
#: run's hash seed, the links they take) are the same in every run.
IPERF3_CLIENT_PORT = 40000
#: iperf3's reporting interval: a stream's stall is the longest run of intervals it sent nothing in.
IPERF3_INTERVAL_S = 0.1
RSYNC_PORT = 8730
MB = 1e6


def check(streams: int, workers: int, transfer_bytes: int, interval_s: float, duration_s: float) -> None:
    """The drill's own options in range (before any namespace is built)."""
    for name, value, (lo, hi) in (("--streams", streams, (1, MAX_STREAMS)), ("--transfer-workers", workers, (0, MAX_WORKERS)),
                                  ("--transfer-bytes", transfer_bytes, TRANSFER_BYTES_RANGE),
                                  ("--interval-s", interval_s, INTERVAL_S_RANGE),
                                  ("--duration-s", duration_s, DURATION_S_RANGE)):
        if not lo <= value <= hi:  # also NaN
            raise UserError(f"{name}: {value:g} is out of range [{lo:g}, {hi:g}]")
    for program, package in (("iperf3", "iperf3"), ("rsync", "rsync")):
        if (program != "rsync" or workers) and shutil.which(program) is None:
            raise UserError(f"emu drill needs {program} (Debian package {package}; scripts/apt-packages.txt)")


def plan(file: dict, link: LinkOptions, duration_s: str | None, streams: str | None,
         path: str | None) -> tuple[list[Event], int, int]:
    """(events, duration_s, streams) of a drill: the options given (text), else the scenario file's
    values (``longhaul.emu.scenario.load``: tcp.duration_s, tcp.streams, [[events]]), else the
    defaults; the events checked against the link count and the duration. ``path``: the file."""
    from longhaul.units import parse_one_float, parse_one_int
    bench = file.get("bench", {})
    duration = (parse_one_float(duration_s, "--duration-s", *DURATION_S_RANGE) if duration_s is not None
                else bench.get("duration_s") or DEFAULT_DURATION_S)
    if duration != int(duration):
        raise UserError(f"--duration-s: {duration:g} is not whole seconds (iperf3 -t takes whole seconds; "
                        f"{DURATION_S_RANGE[0]}..{DURATION_S_RANGE[1]})")
    n = (parse_one_int(streams, "--streams", 1, MAX_STREAMS) if streams is not None
         else bench.get("streams") or DEFAULT_STREAMS)
    where = f"scenario {path}: events" if path else "events"
    return failover.parse(file.get("events"), link.links, float(duration), where), int(duration), n


def summary_text(s: dict) -> str:
    """The workload's outcome in one line (below the phases table)."""
    if "iperf3_bw_MBps" in s:
        stall = max((st["stall_s"] for st in s["iperf3_streams"]), default=0.0)
        iperf = (f"iperf3 -P {s['streams']}: {s['iperf3_bw_MBps']} MB/s, {s['iperf3_retransmits']} retransmits, "
                 f"streams per link {s['streams_per_link']}, longest stall of a stream {stall:g} s")
    else:
        iperf = f"iperf3 -P {s['streams']}: {s.get('iperf3_error')}"
    if not s["transfer_workers"]:
        return iperf
    return (f"{iperf}; rsync: {s['copies_arrived']} copies of {s['transfer_bytes']} bytes arrived, "
            f"{s['copies_arrived'] - s['copies_corrupt']} with the source's SHA-256, {s['copies_corrupt']} corrupt, "
            f"{s['copies_failed']} failed")


def drill_dir(name: str) -> Path:
    """Where a run's transfer keeps its files (``state.teardown`` removes it by this name)."""
    return Path(tempfile.gettempdir()) / f"longhaul-{name}-drill"


class _Transfer:
    """The rsync daemon on B0 and the workers pushing files from A0 (threads)."""

    def __init__(self, emu: Emulator, workers: int, size: int, seed: int):
        self.emu = emu
        self.root = drill_dir(emu.name)
        self.src, self.dst = self.root / "a", self.root / "b"
        self.src.mkdir(parents=True)
        self.dst.mkdir()
        self.digests = []
        for w in range(workers):
            data = random.Random(seed * 1000 + w).randbytes(size)
            (self.src / f"w{w}.bin").write_bytes(data)
            self.digests.append(hashlib.sha256(data).hexdigest())
        conf = self.root / "rsyncd.conf"
        conf.write_text(f"[drill]\n path = {self.dst}\n read only = false\n use chroot = false\n"
                        f" uid = 0\n gid = 0\nlog file = {self.root / 'rsyncd.log'}\n")
        self.daemon = emu.popen("b", 0, ["rsync", "--daemon", "--no-detach", f"--config={conf}",
                                         f"--address={emu.address('b')}", f"--port={RSYNC_PORT}"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.stop = threading.Event()
        self.copies: list[dict] = []
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._work, args=(w,), daemon=True) for w in range(workers)]

    def wait_listening(self, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not listening(self.daemon.pid, self.emu.address("b"), RSYNC_PORT):
            if self.daemon.poll() is not None or time.monotonic() > deadline:
                said = (self.daemon.stderr.read() if self.daemon.stderr else "").strip() if self.daemon.poll() is not None \
                    else "no answer"
                raise UserError(f"emu drill: the rsync daemon did not start: {said[-200:] or 'no message'}")
            time.sleep(0.01)

    def start(self, t0: float) -> None:
        self.t0 = t0
        for t in self.threads:
            t.start()

    def _work(self, w: int) -> None:
        j = 0
        while not self.stop.is_set():
            name = f"w{w}-{j}.bin"
            started = time.monotonic() - self.t0
            p = self.emu.popen("a", 0, ["rsync", "--whole-file", "--timeout=0", str(self.src / f"w{w}.bin"),
                                        f"rsync://{self.emu.address('b')}:{RSYNC_PORT}/drill/{name}"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            err = p.communicate()[1]
            if self.stop.is_set() and p.returncode != 0:
                return   # stopped with the run: not a copy that failed
            ended = time.monotonic() - self.t0
            copy = self.dst / name
            record = {"worker": w, "copy": j, "start_s": round(started, 3), "end_s": round(ended, 3),
                      "rsync_exit": p.returncode}
            try:
                data = copy.read_bytes() if p.returncode == 0 else None
                copy.unlink(missing_ok=True)
            except OSError:
                data = None
            if data is not None:
                record["sha256_ok"] = hashlib.sha256(data).hexdigest() == self.digests[w]
                record["bytes"] = len(data)
            else:
                record["sha256_ok"] = None   # did not arrive (stopped at the end, or rsync failed)
                record["error"] = " ".join(err.split())[-200:]
            with self.lock:
                self.copies.append(record)
            j += 1

    def finish(self, timeout_s: float) -> list[dict]:
        self.stop.set()
        deadline = time.monotonic() + timeout_s
        for t in self.threads:
            t.join(max(0.0, deadline - time.monotonic()))
        with self.lock:
            return sorted(self.copies, key=lambda c: (c["worker"], c["copy"]))


def _iperf3(emu: Emulator, streams: int, seconds: int) -> tuple[subprocess.Popen, subprocess.Popen]:
    server = emu.popen("b", 0, ["iperf3", "-s", "-1", "-B", emu.address("b"), "-p", str(IPERF3_PORT)],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    while not listening(server.pid, emu.address("b"), IPERF3_PORT):
        if server.poll() is not None or time.monotonic() > deadline:
            raise UserError("emu drill: iperf3's server did not start listening")
        time.sleep(0.01)
    client = emu.popen("a", 0, ["iperf3", "-c", emu.address("b"), "-B", emu.address("a"), "-p", str(IPERF3_PORT),
                                "-P", str(streams), "-t", str(seconds), "--cport", str(IPERF3_CLIENT_PORT),
                                "-i", str(IPERF3_INTERVAL_S), "-J"],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # iperf3's clock (its intervals, the streams' stalls) starts once every stream is connected: so
    # does the drill's, within a few milliseconds.
    deadline = time.monotonic() + 10
    while _connections(client.pid, IPERF3_PORT) < streams + 1:   # + its control connection
        if client.poll() is not None or time.monotonic() > deadline:
            raise UserError("emu drill: iperf3's streams did not connect")
        time.sleep(0.005)
    return server, client


def _connections(pid: int, port: int) -> int:
    """Established TCP connections to ``port`` in the network namespace of process ``pid``."""
    try:
        lines = Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return 0
    remote = f":{port:04X}"
    return sum(1 for f in (line.split() for line in lines) if len(f) > 3 and f[2].endswith(remote) and f[3] == "01")


def _iperf3_result(client: subprocess.Popen, timeout_s: float) -> dict:
    try:
        out, err = client.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        client.kill()
        client.communicate()
        return {"iperf3_error": f"did not finish within {timeout_s:.0f} s"}
    try:
        report = json.loads(out)
        end = report["end"]
        return {"iperf3_bw_MBps": round(end["sum_received"]["bits_per_second"] / 8 / MB, 3),
                "iperf3_bytes_sent": end["sum_sent"]["bytes"], "iperf3_bytes_received": end["sum_received"]["bytes"],
                "iperf3_retransmits": end["sum_sent"].get("retransmits"),
                "iperf3_streams": stalls(report)}
    except (ValueError, KeyError, TypeError):
        return {"iperf3_error": " ".join((err or out).split())[-200:] or "no report"}


def link_of_flow(emu: Emulator, client_port: int) -> int:
    """The link the hosts' multipath route puts the flow A0:client_port -> B0:iperf3 on (A->B, the
    data): ``ip route get`` with its addresses and ports, hashed as the kernel hashes a packet."""
    text = system.ip("-n", emu.hosts["a"][0], "route", "get", emu.address("b"), "from", emu.address("a"),
                     "ipproto", "tcp", "sport", str(client_port), "dport", str(IPERF3_PORT))
    return emu.link_devices.index(text.split(" dev ", 1)[1].split()[0])


def stalls(report: dict) -> list[dict]:
    """Per iperf3 stream: its client port, the longest time it sent nothing (``stall_s``) and every
    such stretch (``stalls``: [start_s, length_s], from iperf3's start) of at least two reporting
    intervals: what one TCP flow on a cut link sees, detection and then retransmission time-outs
    that back off, until its packets take another link."""
    ports = {c["socket"]: c["local_port"] for c in report["start"]["connected"]}
    runs: dict[int, list[list[float]]] = {}
    for interval in report["intervals"]:
        for s in interval["streams"]:
            mine = runs.setdefault(s["socket"], [])
            if s["bytes"] != 0:
                continue
            if mine and abs(mine[-1][0] + mine[-1][1] - s["start"]) < 1e-3:
                mine[-1][1] += s["seconds"]
            else:
                mine.append([s["start"], s["seconds"]])
    out = []
    for sock in sorted(runs, key=lambda k: ports.get(k, 0)):
        long = [[round(a, 2), round(b, 2)] for a, b in runs[sock] if b > 1.5 * IPERF3_INTERVAL_S]
        out.append({"local_port": ports.get(sock), "stall_s": max((b for _, b in long), default=0.0), "stalls": long})
    return out


def stalls_in(streams: list[dict], from_s: float, to_s: float) -> tuple[int, float]:
    """(streams that began a stall in [from_s, to_s), the longest of those stalls)."""
    longest = [max(hits) for st in streams if (hits := [b for a, b in st.get("stalls", []) if from_s <= a < to_s])]
    return len(longest), max(longest, default=0.0)


def _sample(emu: Emulator) -> dict:
    s = emu.stats()
    return {"elapsed_s": s.get("elapsed_s", 0.0),
            "bytes": [link["ab"]["bytes_out"] for link in s.get("links", [])],
            "up": [link["up"] for link in s.get("links", [])]}


def series(samples: list[dict], t0: float) -> list[dict]:
    """Throughput A->B between consecutive samples, per link and in total (MB/s of IP bytes)."""
    out = []
    for prev, cur in itertools.pairwise(samples):
        dt = cur["elapsed_s"] - prev["elapsed_s"]
        if dt <= 0:
            continue
        per = [round((b1 - b0) / dt / MB, 3) for b0, b1 in zip(prev["bytes"], cur["bytes"])]
        out.append({"t_s": round(cur["elapsed_s"] - t0, 3), "bw_MBps": round(sum(per), 3), "link_bw_MBps": per,
                    "links_up": sum(cur["up"])})
    return out


def phase_records(rows: list[dict], phases: list[failover.Phase], link_MBps: float) -> list[dict]:
    """Per phase: the level (mean total over its second half), per-link level, the lowest total in
    its first half, and the time from its start to the first sample at RECOVERED_SHARE of the level."""
    out = []
    for ph in phases:
        mid = (ph.from_s + ph.to_s) / 2
        inside = [r for r in rows if ph.from_s < r["t_s"] <= ph.to_s]
        late = [r for r in inside if r["t_s"] > mid] or inside
        level = sum(r["bw_MBps"] for r in late) / len(late) if late else None
        per_link = ([round(sum(r["link_bw_MBps"][k] for r in late) / len(late), 2) for k in range(len(late[0]["link_bw_MBps"]))]
                    if late else None)
        early = [r["bw_MBps"] for r in inside if r["t_s"] <= mid]
        rec = {"phase": ph.index, "from_s": ph.from_s, "to_s": ph.to_s,
               "event": f"link {ph.event.link} {ph.event.action}" if ph.event else "start",
               "links_up": len(ph.links_up), "capacity_MBps": round(len(ph.links_up) * link_MBps, 3) if link_MBps else None,
               "bw_MBps": round(level, 3) if level is not None else None, "link_bw_MBps": per_link,
               "dip_MBps": round(min(early), 3) if early else None, "recovery_s": None}
        if ph.event is not None and level:
            reached = [r["t_s"] for r in inside if r["bw_MBps"] >= RECOVERED_SHARE * level]
            rec["recovery_s"] = round(reached[0] - ph.from_s, 3) if reached else None
        out.append(rec)
    return out


def run(link: LinkOptions, events: list[Event], duration_s: float, streams: int = DEFAULT_STREAMS, transfer_workers: int = 4,
        transfer_bytes: int = 8 << 20, interval_s: float = 0.2, name: str | None = None,
        progress=None) -> dict:
    """The drill on ``link`` (its ``links`` parallel links): ``{"phases", "series", "transfer", "summary"}``.
    ``events`` must have been checked against the link count and the duration (``failover.parse``);
    ``progress(text)`` is told of each event as it is applied."""
    seconds, _ = iperf3_seconds(duration_s, 0)
    check(streams, transfer_workers, transfer_bytes, interval_s, seconds)
    failover.check_sequence(events, link.links)
    with Emulator(link, name=name) as emu:
        transfer = _Transfer(emu, transfer_workers, transfer_bytes, link.seed) if transfer_workers else None
        try:
            if transfer:
                transfer.wait_listening()
            flow_links = {port: link_of_flow(emu, port)
                          for port in range(IPERF3_CLIENT_PORT, IPERF3_CLIENT_PORT + streams)}
            server, client = _iperf3(emu, streams, seconds)
            start = _sample(emu)
            t0, wall0 = start["elapsed_s"], time.monotonic()
            if transfer:
                transfer.start(wall0)
            samples, applied = [start], []
            run_state = state.RunState(emu.name).load()
            pending = list(events)
            next_sample = wall0 + interval_s
            while True:
                while pending and wall0 + pending[0].at_s <= time.monotonic():
                    e = pending.pop(0)
                    rec = linkctl.set_link(run_state, e.link, e.action == "up")
                    applied.append({**e.record(), "applied_s": round((rec["changed_s"] or 0.0) - t0, 4)})
                    if progress:
                        progress(f"{time.monotonic() - wall0:6.2f} s: link {e.link} {e.action}")
                now = time.monotonic()
                if now >= wall0 + seconds:
                    break
                if now >= next_sample:
                    samples.append(_sample(emu))
                    next_sample += interval_s
                wake = min([next_sample, wall0 + seconds] + ([wall0 + pending[0].at_s] if pending else []))
                time.sleep(max(0.0, wake - time.monotonic()))
            samples.append(_sample(emu))
            iperf = _iperf3_result(client, 60)
            server.kill()
            server.communicate()
            copies = transfer.finish(TRANSFER_FINISH_S) if transfer else []
        finally:
            if transfer:
                transfer.stop.set()
    for stream in iperf.get("iperf3_streams", []):
        stream["link"] = flow_links.get(stream["local_port"])
    per_link = [sum(1 for k in flow_links.values() if k == link_k) for link_k in range(link.links)]
    rows = series(samples, t0)
    link_MBps = link.ab.rate_gbps * 1e9 / 8 / MB
    phase_list = failover.phases(events, link.links, seconds)
    arrived = [c for c in copies if c["sha256_ok"] is not None]
    summary = {
        "wan_links": link.links, "duration_s": seconds, "streams": streams, "streams_per_link": per_link,
        "events": applied, **iperf,
        "transfer_workers": transfer_workers, "transfer_bytes": transfer_bytes,
        "copies_arrived": len(arrived), "copies_corrupt": sum(1 for c in arrived if not c["sha256_ok"]),
        "copies_failed": sum(1 for c in copies if c["sha256_ok"] is None),
        "bytes_verified": sum(c["bytes"] for c in arrived if c["sha256_ok"]),
    }
    phase_rows = phase_records(rows, phase_list, link_MBps)
    for row in phase_rows:
        row["streams_stalled"], row["stall_max_s"] = stalls_in(iperf.get("iperf3_streams", []), row["from_s"], row["to_s"])
    return {"phases": phase_rows, "series": rows, "transfer": copies,
            "summary": summary}
