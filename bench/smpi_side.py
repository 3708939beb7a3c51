"""SimGrid SMPI's side of ``bench/mpi_bench.py scale``: the same cases on SMPI (SimGrid 3.32,
Debian's ``libsimgrid-dev``, which ships smpicc and smpirun), on a platform file that mirrors
longhaul's two-cluster S1 platform, with the collective algorithms longhaul runs.

The platform (``platform_xml``) from longhaul's own profile (crates/longhaul-sim/src/topology.rs
builds it from the `s1` testbed of crates/longhaul-sim/src/scenario.rs):

    host -- switch A -- extender A ==== WAN ==== extender B -- switch B -- host

- host link: the slower of the adapter's port (InfiniHost III, 4x DDR: ib/hca.rs) and the
  switch's (InfiniScale III, 4x DDR: net/devices.rs), 16 Gb/s of data (20 Gb/s signal, 8b/10b)
  = 2e9 B/s each way; 5 ns of cable (topology.rs CABLE_NS). A SimGrid <cluster>'s private link
  per host, split-duplex.
- switch: 200 ns port to port (InfiniScale III), non-blocking: the cluster's backbone, a fat pipe
  (every flow gets the whole rate, none shares it) of the host links' rate with 200 ns latency.
- the long-haul path: switch to extender at the slower of the extender's 4x SDR port and the
  switch's (8 Gb/s of data, 1e9 B/s; 5 ns of cable), the extender's 1 us store-and-forward
  (Longbow XR: ExtenderParams::rated), the WAN at 4x SDR (1e9 B/s) with the one-way delay
  (longhaul's `--delay-us`, 0 by default), and the same on the far side. All at 1e9 B/s in
  series, so one link per direction with their latencies summed: 2 x (5 ns + 1 us) + delay.
- one rank per node, ranks 0..N/2-1 in cluster A (longhaul's block placement; the hostfile's
  order).

What SimGrid's flow model does not have and longhaul does (so the simulated times differ by
them, and the benchmark prints both): packets (2 KiB MTU, headers, store-and-forward per hop),
link-level credits, the adapters' and MPI library's per-message costs (SMPI's smpi/os, smpi/or
are left at 0), the extenders' per-packet engine (280 ns), MVAPICH2's RDMA rendezvous
handshake. SimGrid's CM02 network model is used (latency + size / rate, max-min sharing;
latency and bandwidth factors 1, SimGrid's network_cm02.cpp) rather than SMPI's default, whose
factors were fitted on TACC's Stampede, and cross-traffic (a 5% reverse flow per flow) is off.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent / "smpi"
INSTALL_HINT = "SMPI skipped: install SimGrid 3.32's SMPI with `apt-get install -y libsimgrid-dev` (smpicc, smpirun)"

# Bytes per second of the links (see the module's docstring for where each comes from).
HOST_LINK_BPS = 2_000_000_000  # 4x DDR data rate, adapter and switch
WAN_PATH_BPS = 1_000_000_000  # 4x SDR: extender ports and WAN
CABLE_NS = 5.0
SWITCH_NS = 200.0
EXTENDER_NS = 1000.0
# smpi_execute_flops in nas_cg.c counts 1000 flops per microsecond of compute.
HOST_SPEED = "1Gf"

# longhaul's collective algorithms for these cases (MPICH2 1.0's rules, mpi/coll_rules.rs, as
# MVAPICH2 1.0 ran them), by SimGrid 3.32's names: bcast of 1 MiB is a binomial scatter then a
# ring allgather (MPICH's scatter_ring_allgather; SimGrid's scatter_LR_allgather); alltoall of
# 64 KiB on a power-of-two job is the pairwise exchange with partner rank ^ k (SimGrid's pair);
# the barrier after each call is the dissemination barrier (coll_flat::barrier; SimGrid's
# ompi_bruck). SimGrid's own `mpich` selector is not used: for one rank per node it runs
# bcast__SMP_binomial and, on an even job, the ring alltoall (smpi_mpich_selector.cpp).
COLLECTIVES = {"bcast": "scatter_LR_allgather", "alltoall": "pair", "barrier": "ompi_bruck"}


def eager_threshold_bytes(ranks: int) -> int:
    """MVAPICH2 1.0's eager threshold for a job of `ranks` (longhaul's MpiParams::for_job_size,
    mpi/params.rs: 9 KiB buffers up to 64 processes, 4 KiB below 256, 2 KiB from 256 on; the
    threshold is the buffer size, 8 KiB at the default)."""
    return 8192 if ranks <= 64 else 4096 if ranks < 256 else 2048


def available() -> str | None:
    """None if smpicc and smpirun can be used (installing SimGrid when root and missing), else why not."""
    if shutil.which("smpirun") is None and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["apt-get", "-o", "DPkg::Lock::Timeout=600", "install", "-y", "libsimgrid-dev"], capture_output=True,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}, check=False)
    if shutil.which("smpirun") is None or shutil.which("smpicc") is None:
        return INSTALL_HINT
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        return "SMPI skipped: smpicc needs a C compiler (apt-get install -y gcc)"
    return None


def build(out: Path) -> dict[str, Path]:
    """Compile the SMPI programs into `out` (a temporary directory: never committed)."""
    programs = {}
    for name in ("osu_coll", "nas_cg"):
        exe = out / name
        subprocess.run(["smpicc", "-O2", "-o", str(exe), str(HERE / f"{name}.c")], check=True, capture_output=True)
        programs[name] = exe
    return programs


def platform_xml(nodes_per_cluster: int, delay_us: float) -> str:
    """Two clusters of `nodes_per_cluster` hosts joined by the long-haul path (see the docstring)."""
    wan_ns = 2 * (CABLE_NS + EXTENDER_NS) + delay_us * 1000.0
    cluster = (
        '  <cluster id="{c}" prefix="{c}-" suffix="" radical="0-{last}" speed="{speed}" '
        'bw="{host}Bps" lat="{cable}ns" sharing_policy="SPLITDUPLEX" '
        'bb_bw="{host}Bps" bb_lat="{switch}ns" bb_sharing_policy="FATPIPE" router_id="router-{c}"/>\n'
    )
    clusters = "".join(cluster.format(c=c, last=nodes_per_cluster - 1, speed=HOST_SPEED, host=HOST_LINK_BPS,
                                      cable=CABLE_NS, switch=SWITCH_NS) for c in "ab")
    # One link per direction; SimGrid's DTD wants every link before the routes.
    ways = (("a", "b"), ("b", "a"))
    links = "".join(f'  <link id="wan-{s}{d}" bandwidth="{WAN_PATH_BPS}Bps" latency="{wan_ns}ns"/>\n' for s, d in ways)
    routes = links + "".join(
        f'  <zoneRoute src="{s}" dst="{d}" gw_src="router-{s}" gw_dst="router-{d}" symmetrical="NO">'
        f'<link_ctn id="wan-{s}{d}"/></zoneRoute>\n'
        for s, d in ways
    )
    return ("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
            '<platform version="4.1">\n<zone id="world" routing="Full">\n' + clusters + routes + "</zone>\n</platform>\n")


def command(exe: Path, args: list[str], ranks: int, delay_us: float, work: Path) -> list[str]:
    """smpirun's command line for `exe ARGS` on `ranks` ranks, one per node; writes the platform
    and hostfile into `work`."""
    nodes = ranks // 2
    platform = work / f"platform-{nodes}.xml"
    platform.write_text(platform_xml(nodes, delay_us))
    hosts = work / f"hosts-{nodes}"
    hosts.write_text("".join(f"{c}-{i}\n" for c in "ab" for i in range(nodes)))
    # Messages below this go detached (eager: the sender does not wait for the receiver);
    # longhaul's go eagerly up to the threshold with their 64-byte MPI header included.
    detached = eager_threshold_bytes(ranks) - 64 + 1
    cfg = [
        "network/model:CM02", "network/crosstraffic:0", f"smpi/host-speed:{HOST_SPEED}",
        # Compute is what the program asks for (smpi_execute_flops), not this machine's CPU time.
        "smpi/simulate-computation:no", f"smpi/send-is-detached-thresh:{detached}",
        *(f"smpi/{c}:{a}" for c, a in COLLECTIVES.items()),
        # SMPI_SHARED_MALLOC maps one block of a file over and over to fill a buffer, a mapping per
        # block: with the default 1 MiB blocks, 1,024 ranks' alltoall buffers of 64 MiB need 131,072,
        # beyond Linux's vm.max_map_count (65,530). One sparse 1 GiB block maps any buffer at once.
        "smpi/shared-malloc-blocksize:1073741824",
    ]
    # Global variables are not privatized per rank: the programs keep none (thousands of
    # copies of the binary otherwise, SimGrid's dlopen privatization).
    return ["smpirun", "-no-privatize", "-np", str(ranks), "-platform", str(platform), "-hostfile", str(hosts),
            *(f"--cfg={c}" for c in cfg), "--log=root.thres:warning", str(exe), *args]


def version() -> str:
    """SimGrid's version as smpirun prints it (e.g. "3.32")."""
    out = subprocess.run(["smpirun", "-version"], capture_output=True, text=True, check=False).stdout.split()
    return out[-1] if out else "?"
