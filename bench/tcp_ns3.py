"""Shared by the ns-3 comparison test and ``bench/tcp_bench.py``: build the ns-3 scenario
(``bench/ns3/``), run the same bulk-transfer point on ns-3 and on longhaul, and time both.

The point: one TCP flow over a 1 Gb/s (or 10 Gb/s) Ethernet link with a one-way delay, drop-tail
queue of ``queue_packets``, MSS 1448 (MTU 1500 with timestamps), SACK, initial window 10, min RTO
200 ms, socket buffers of ``buffer_bytes``, plain slow start (``tcp_bulk.cc`` turns ns-3's CUBIC
HyStart off, so longhaul runs without it too), an ACK for every segment (ns-3 grows the window per
ACK, Linux and longhaul per acknowledged segment: they agree only without delayed ACKs), and
longhaul's loss recovery switched to what ns-3 3.37's TcpSocketBase does (``NS3_RECOVERY``). ns-3's
device rate is scaled so that a 1500-byte packet with PPP framing takes as long as with
Ethernet's 38 bytes of framing in longhaul (``ETHERNET_FRAME_OVERHEAD_BYTES``).

What the benchmark compares, the same on both sides: ``link_packets`` counts the packets sent on
the bottleneck link in both directions (data, ACKs and the handshake; queue drops are not sent),
which for longhaul is its WAN link (it also simulates the two host links at each end, ns-3 has
none); ``cpu_s`` is the CPU time of building and running the simulation: for ns-3 as its process
measures it (without start-up and without compiling the scenario), for longhaul the time of
``tcp.run`` in this process (its Python wrapper included).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
NS3_CC = {"reno": "NewReno", "cubic": "Cubic"}
# Preamble + SFD 8, header 14, FCS 4, inter-frame gap 12 (IEEE 802.3): longhaul's 10gige-lan framing.
ETHERNET_FRAME_OVERHEAD_BYTES = 38
# ns-3 3.37's loss recovery as longhaul's TcpParams switches (src/internet/model/tcp-socket-base.cc):
# RTO = max(SRTT + max(G, 4 RTTVAR), MinRto) (EstimateRtt, NewAck); in fast recovery only the first
# partial ACK restarts the timer (ProcessAck: NewAck(ack, m_isFirstPartialAck), RFC 6582); every
# timeout outside CA_LOSS lowers ssthresh (ReTxTimeout, RFC 5681 eq. 4); the window grows only on
# cumulative ACKs, by all they cover (IncreaseWindow(segsAcked)). Like Linux (longhaul's defaults),
# ns-3 takes RTT samples only from segments not SACKed or retransmitted before (EstimateRtt's
# m_history) and with SACK counts an ACK as a duplicate only if it SACKs new data (ProcessAck:
# isDupack = scoreboardUpdated, RFC 6675).
NS3_RECOVERY = {"rto_formula": "rfc6298", "rto_restart": "first-partial-ack", "rto_ssthresh": "every-timeout",
                "cwnd_growth": "cumulative"}


def ns3_available() -> str | None:
    """None if ns-3 can be used here, else the reason it cannot."""
    if not Path("/usr/include/ns3/core-module.h").exists():
        return "ns-3 headers not installed (Debian packages ns3 libns3-dev)"
    if shutil.which("g++") is None:
        return "no C++ compiler (g++)"
    return None


def ns3_binary() -> str:
    return subprocess.run([str(HERE / "ns3" / "build.sh")], check=True, capture_output=True, text=True).stdout.strip()


def run_ns3(cc: str, delay_ms: float, rate_gbps: float = 1.0, duration_s: float = 5.0, queue_packets: int = 100,
            buffer_bytes: int = 64 << 20, interval_s: float = 0.1, wide_prr: bool = True) -> dict:
    """One ns-3 run; ``wide_prr``: its PRR with the proportional step in 64 bits (tcp_bulk.cc's
    WidePrrRecovery), else ns-3 3.37's own, whose 32-bit product wraps in long recoveries."""
    out = subprocess.run([ns3_binary(), f"--cc={NS3_CC[cc]}", f"--wide_prr={int(wide_prr)}", f"--delay_ms={delay_ms}", f"--rate_gbps={rate_gbps}",
                          f"--duration_s={duration_s}", f"--queue_packets={queue_packets}",
                          f"--buffer_bytes={buffer_bytes}", f"--interval_s={interval_s}", "--delack_count=1",
                          f"--frame_overhead_bytes={ETHERNET_FRAME_OVERHEAD_BYTES}"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def run_longhaul(cc: str, delay_ms: float, rate_gbps: float = 1.0, duration_s: float = 5.0, queue_packets: int = 100,
                 buffer_bytes: int = 64 << 20, interval_s: float = 0.1, streams: int = 1) -> dict:
    from longhaul.sim import tcp

    # Like with like: tcp_bulk.cc turns ns-3's HyStart off, ns-3 3.37 has no RACK, and recovers as
    # NS3_RECOVERY says.
    sc = tcp.scenario(link="10gige-lan", stack="ideal", rate_gbps=rate_gbps, delay_us=delay_ms * 1000,
                      queue_packets=queue_packets, window_bytes=buffer_bytes, cc=cc, duration_s=duration_s,
                      interval_s=interval_s, delayed_ack=False, hystart=False, rack=False, cwnd_trace=True,
                      streams=streams, **NS3_RECOVERY)
    t = time.process_time()
    rec = tcp.run(sc)
    rec["cpu_s"] = time.process_time() - t
    rec["cwnd_trace_segs"] = [row[0] for row in rec["cwnd_trace_segs"]]
    return rec
