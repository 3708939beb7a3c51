#!/usr/bin/env python3
"""Benchmark of the emulator (not a test): raw veth throughput between two namespaces (the
limit of this machine), then the emulator at 0, 1 and 10 ms one-way delay, 1 and 4 streams,
MTU 1500 and 65520, unlimited rate, with ratios to raw veth, the data plane's CPU use and
its release-lateness percentiles; then release lateness while carrying 1 Gb/s; then delay
accuracy: the median RTT of the network path against 2 x delay + the 0-delay baseline at
100 us, 1 ms and 10 ms, at light load and with 1 Gb/s of UDP cross traffic (issue 5's
target: within 40 us), with the application's view beside it.

Run as root after `cargo build --release -p longhaul-wan`:
    PYTHONPATH=python .venv/bin/python bench/emu_bench.py [--duration-s 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from longhaul.emu import bench, system
from longhaul.output import emit

RAW = ("lhbenchva", "lhbenchvb")  # namespaces of the raw veth pair, removed at the end


def raw_veth_gbps(mtu: int, streams: int, duration_s: float) -> float:
    """TCP through a plain veth pair between two namespaces, same load generator."""
    wan = system.dataplane_binary()
    a, b = RAW
    try:
        for ns in RAW:
            system.ip("netns", "add", ns)
            system.ip("-n", ns, "link", "set", "lo", "up")
            system.sysctl(ns, "net.ipv4.tcp_rmem", "4096 131072 268435456")
            system.sysctl(ns, "net.ipv4.tcp_wmem", "4096 16384 268435456")
        system.ip("-n", a, "link", "add", "v0", "type", "veth", "peer", "name", "v0", "netns", b)
        for ns, addr in ((a, "10.77.9.1/24"), (b, "10.77.9.2/24")):
            system.ip("-n", ns, "link", "set", "v0", "mtu", str(mtu), "up")
            system.ip("-n", ns, "addr", "add", addr, "dev", "v0")
        sink = subprocess.Popen(["ip", "netns", "exec", b, wan, "tcp-sink", "--bind", "10.77.9.2:5001", "--streams",
                                 str(streams), "--timeout-s", str(duration_s + 30)], stdout=subprocess.PIPE, text=True)
        sink.stdout.readline()
        out = subprocess.run(["ip", "netns", "exec", a, wan, "tcp-source", "--connect", "10.77.9.2:5001", "--streams",
                              str(streams), "--duration-s", str(duration_s), "--omit-s", "0.5"],
                             capture_output=True, text=True, timeout=duration_s + 60).stdout
        sink.wait(timeout=30)
        return json.loads(out.splitlines()[-1])["throughput_bps"] / 1e9
    finally:
        for ns in RAW:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration-s", type=float, default=3.0)
    ap.add_argument("--format", default="table", choices=["table", "csv", "json"])
    args = ap.parse_args()
    system.require_privileges()
    rows = []
    for mtu in (1500, 65520):
        for streams in (1, 4):
            raw = raw_veth_gbps(mtu, streams, args.duration_s)
            for delay in (0, 1000, 10000):
                r = bench.tcp(delay_us=delay, rate_gbps=0, mtu=mtu, streams=streams, window="256M",
                              duration_s=args.duration_s, omit_s=min(2.0, 0.5 + delay * 2e-5), cc="cubic")[0]
                rows.append({"mtu_bytes": mtu, "streams": streams, "delay_us": delay, "raw_veth_gbps": round(raw, 3),
                             "emu_gbps": r["throughput_gbps"], "ratio": round(r["throughput_gbps"] / raw, 3),
                             "emu_cpu_pct": r["emu_cpu_pct"], "lateness_p50_us": r["lateness_p50_us"],
                             "lateness_p99_us": r["lateness_p99_us"], "retransmits": r["retransmits"]})
                print(json.dumps(rows[-1]), file=sys.stderr)
    emit(rows, args.format, title="emulator vs raw veth (unlimited rate, cubic, 256M buffers)")
    loaded = bench.tcp(delay_us=1000, rate_gbps=1, mtu=9000, streams=1, window="64M", duration_s=args.duration_s,
                       cc="cubic")[0]
    emit([{k: loaded[k] for k in ("delay_us", "rate_gbps", "throughput_gbps", "emu_cpu_pct", "lateness_p50_us",
                                  "lateness_p99_us", "lateness_max_us")}], args.format,
         title="release lateness while carrying 1 Gb/s (1 ms, MTU 9000)")
    accuracy = []
    for cross in (0.0, 1.0):
        pts = bench.ping(delay_us=[0, 100, 1000, 10000], mtu=9000, count=200, interval_us=300, cross_gbps=cross)
        base, app_base = pts[0]["rtt_p50_us"], pts[0]["app_rtt_p50_us"]
        accuracy += [{"cross_gbps": cross, "delay_us": r["delay_us"], "rtt_p50_us": r["rtt_p50_us"],
                      "error_us": round(r["rtt_p50_us"] - 2 * r["delay_us"] - base, 1), "rtt_p99_us": r["rtt_p99_us"],
                      "app_error_us": round(r["app_rtt_p50_us"] - 2 * r["delay_us"] - app_base, 1),
                      "lateness_p99_us": r["lateness_p99_us"]} for r in pts]
    emit(accuracy, args.format, title="delay accuracy: median RTT error against 2 x delay + 0-delay baseline (MTU 9000)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
