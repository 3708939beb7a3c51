"""longhaul's TCP side by side with ns-3 (issue 3): bulk transfer on a 1 Gb/s link, NewReno and
CUBIC, 5 simulated seconds. Goodput within 10% and cwnd trajectories alike in shape. Skipped
with the reason when ns-3 (Debian ns3 + libns3-dev) is not installed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import tcp_ns3  # noqa: E402

REASON = tcp_ns3.ns3_available()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")

# 70 ms: a known ns-3 difference (README, "Simulating TCP", "ns-3 comparison"). Both runs overshoot
# in slow start into the 100-packet queue, lose about 160 segments and set the same ssthresh. ns-3
# sends its first fast retransmission into the still-full queue, where it is dropped; ns-3 3.37 has
# no RACK (its recovery ops are classic and PRR only), so only the RTO recovers it, and its RTO is
# RFC 6298's max(SRTT + 4 RTTVAR, MinRto) = 200 ms at a 140 ms RTT (tcp-socket-base.cc,
# TcpSocketBase::ReTxTimeout), which also lowers ssthresh a second time (ReTxTimeout calls
# GetSsThresh unless the state is already CA_LOSS): 258 -> 128 segments, cwnd 1. longhaul's fast
# retransmission is not dropped (its result is the same without RACK, as this test runs it), so its
# window stays near 260-500 segments and its goodput is ~70% above ns-3's.
KNOWN_70MS = pytest.mark.xfail(strict=True, reason="ns-3 3.37 drops its first fast retransmission in the full queue "
                               "and, without RACK, waits for an RTO that halves ssthresh again "
                               "(TcpSocketBase::ReTxTimeout); longhaul's retransmission gets through")


def _shape_alike(a: list[float], b: list[float]) -> float:
    """Pearson correlation of the two cwnd series over their common length."""
    n = min(len(a), len(b))
    a, b = a[:n], b[:n]
    ma, mb = sum(a) / n, sum(b) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    va = sum((x - ma) ** 2 for x in a) ** 0.5
    vb = sum((y - mb) ** 2 for y in b) ** 0.5
    return cov / (va * vb) if va and vb else 1.0


@pytest.mark.parametrize("cc", ["reno", "cubic"])
@pytest.mark.parametrize("delay_ms", [1, 10, pytest.param(70, marks=KNOWN_70MS)])
def test_goodput_and_cwnd_match_ns3(cc, delay_ms):
    ns = tcp_ns3.run_ns3(cc, delay_ms)
    lh = tcp_ns3.run_longhaul(cc, delay_ms)
    err = (lh["bw_MBps"] - ns["bw_MBps"]) / ns["bw_MBps"]
    assert abs(err) <= 0.10, f"{cc} {delay_ms} ms: longhaul {lh['bw_MBps']:.1f} vs ns-3 {ns['bw_MBps']:.1f} MB/s ({err:+.1%})"
    if delay_ms == 10:
        # A clear trajectory (slow start, then growth): the two must rise and fall together.
        r = _shape_alike(lh["cwnd_trace_segs"][5:], ns["cwnd_trace_segs"][5:])
        assert r >= 0.8, f"cwnd trajectories differ in shape (correlation {r:.2f})"
