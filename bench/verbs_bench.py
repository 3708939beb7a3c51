#!/usr/bin/env python3
"""Simulator performance (issue 2 targets), on one core. Each measurement runs in a fresh
process so its peak memory is its own. Prints numbers and the ratio to each target.

    .venv/bin/python bench/verbs_bench.py [--quick] [--instructions]

--instructions also counts the engine's instructions per event under valgrind (cachegrind), a
figure that other jobs on a shared machine do not distort (this VM exposes no hardware
counters to `perf stat`): a fixed set of RC write runs, minus the same process without them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
from longhaul import _core
from longhaul.sim import verbs
job = json.loads(sys.argv[1])
t0, c0 = time.perf_counter(), time.process_time()
events = 0
if job["kind"] == "count":
    for d in (0, 100, 1000, 10000) if job["run"] else ():
        for s in (65536, 1 << 20):
            sc = verbs.scenario(transport="rc", op="write", test="bw", size_bytes=s, delay_us=d, iterations=100)
            events += json.loads(_core.run_verbs(json.dumps(sc)))["sim_events"]
    rec = {}
elif job["kind"] == "sweep":
    sizes = [2 ** k for k in range(1, 24)]
    for transport, op in (("rc", "write"), ("ud", "send")):
        for d in (0, 10, 100, 1000, 10000):
            for s in sizes:
                if transport == "ud" and s > 2048:
                    continue
                sc = verbs.scenario(transport=transport, op=op, test="bw", size_bytes=s, delay_us=d,
                                    iterations=job.get("iterations"))
                events += json.loads(_core.run_verbs(json.dumps(sc)))["sim_events"]
    rec = {}
else:
    sc = verbs.scenario(**job["scenario"])
    rec = json.loads(_core.run_verbs(json.dumps(sc), job["seconds"]))
    events = rec["sim_events"]
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({"wall_s": wall, "cpu_s": cpu, "events": events, "maxrss_MiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "bw_MBps": rec.get("bw_MBps"), "sim_time_us": rec.get("sim_time_us")}))
"""


def measure(job: dict) -> dict:
    # taskset pins the child to one core, as the targets are stated.
    out = subprocess.run(["taskset", "-c", "0", sys.executable, "-c", CHILD, json.dumps(job)],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def instructions(job: dict) -> tuple[int, int]:
    """(instructions, events) of one child run under cachegrind."""
    with tempfile.NamedTemporaryFile(suffix=".cachegrind") as out:
        proc = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out.name}",
                               sys.executable, "-c", CHILD, json.dumps(job)], capture_output=True, text=True, check=True)
        summary = next(line for line in Path(out.name).read_text().splitlines() if line.startswith("summary:"))
    return int(summary.split()[1]), json.loads(proc.stdout)["events"]


def main() -> None:
    quick = "--quick" in sys.argv
    print("longhaul verbs simulator benchmark (one core; MiB = 2^20 bytes for memory)")
    sweep = measure({"kind": "sweep", "iterations": 100 if quick else None})
    rate = sweep["events"] / sweep["wall_s"] / 1e6
    print(f"S1 Fig 2 sweep (RC+UD x 5 delays x 23 sizes, {'100' if quick else 'perftest default 1000'} iterations): "
          f"{sweep['wall_s']:.1f} s wall (target 20 s: ratio {sweep['wall_s'] / 20:.2f}), "
          f"{sweep['events'] / 1e6:.0f} M events, {rate:.1f} M events/s (target 20: ratio {rate / 20:.2f}; "
          f"{sweep['events'] / sweep['cpu_s'] / 1e6:.1f} per CPU second, the figure to read on a loaded machine), "
          f"peak memory {sweep['maxrss_MiB']:.0f} MiB")
    streams = [
        ("4x SDR RC stream, 10,000 km, 1 simulated s", dict(testbed="s1", fibre_km=10000, transport="rc", op="write", test="bw",
                                                           size_bytes=8 << 20, iterations=10**6), 1.0, 1.0),
        ("4x SDR RC stream, 100 km, 1 simulated s", dict(testbed="s1", fibre_km=100, transport="rc", op="write", test="bw",
                                                         size_bytes=8 << 20, iterations=10**6), 1.0, 1.0),
        ("4x NDR RC stream, 100 km, 1 simulated s", dict(testbed="ndr", fibre_km=100, transport="rc", op="write", test="bw",
                                                         size_bytes=8 << 20, iterations=10**6, mtu_bytes=4096), 0.1 if quick else 1.0, 10.0),
    ]
    # Issue 22: the UltraScience Net's longest loop and 20,000 km (4x SDR over OC-192, the usn
    # profile), and the 13,840 km loop shared with 4 Gb/s of UDP cross traffic on the WAN switches.
    usn = dict(testbed="usn", transport="rc", op="write", test="bw", size_bytes=8 << 20, iterations=10**6)
    streams += [
        ("4x SDR RC 8 MiB (usn), 13,840 km, 1 simulated s", dict(usn, fibre_km=13840), 1.0, 1.0),
        ("4x SDR RC 8 MiB (usn), 20,000 km, 1 simulated s", dict(usn, fibre_km=20000), 1.0, 1.0),
        ("4x SDR RC 8 MiB (usn), 13,840 km, 4 Gb/s cross traffic, 1 simulated s",
         dict(usn, fibre_km=13840, cross_gbps=4.0), 1.0, 1.0),
    ]
    per_sim_s = {}
    for name, scenario, seconds, target in streams:
        m = measure({"kind": "stream", "scenario": scenario, "seconds": seconds})
        wall = m["wall_s"] / seconds  # per simulated second
        per_sim_s[name] = m["events"] / seconds
        print(f"{name}: {wall:.2f} s wall per simulated s (target {target:g} s: ratio {wall / target:.2f}), "
              f"{m['events'] / m['wall_s'] / 1e6:.1f} M events/s, {m['events'] / seconds / 1e6:.2f} M events per "
              f"simulated s, {m['bw_MBps']:.0f} MB/s delivered, peak memory {m['maxrss_MiB']:.0f} MiB")
    crossed, clean = per_sim_s[streams[-1][0]], per_sim_s[streams[-3][0]]
    print(f"cross traffic at 4 Gb/s, 13,840 km: {crossed / clean:.2f}x the events per simulated second without it "
          f"(target at most 2x)")
    if "--instructions" in sys.argv:
        if not shutil.which("valgrind"):
            print("instructions per event: valgrind not installed")
            return
        total, events = instructions({"kind": "count", "run": True})
        idle, _ = instructions({"kind": "count", "run": False})
        print(f"engine instructions per event (cachegrind; RC write 64 KiB + 1 MiB x 4 delays, {events / 1e6:.2f} M events): "
              f"{(total - idle) / events:.0f}")


if __name__ == "__main__":
    main()
