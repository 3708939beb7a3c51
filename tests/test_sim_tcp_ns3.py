"""longhaul's TCP side by side with ns-3 (issue 3): bulk transfer on a 1 Gb/s link, NewReno and
CUBIC, 5 simulated seconds. Goodput within 10% and cwnd trajectories alike in shape, with
longhaul's loss recovery switched to ns-3 3.37's rules (``tcp_ns3.NS3_RECOVERY``). Skipped with
the reason when ns-3 (Debian ns3 + libns3-dev) is not installed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import tcp_ns3  # noqa: E402

REASON = tcp_ns3.ns3_available()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")

# CUBIC at 70 ms: a known ns-3 3.37 defect, not a modelling difference (README, "Simulating TCP",
# "ns-3 comparison"). TcpPrrRecovery::DoRecovery multiplies prr_delivered by ssthresh (both bytes)
# in 32-bit unsigned arithmetic (an imul in libns3.37-internet.so); from the 6th segment delivered in
# the first recovery (ssthresh 363 segments) the product wraps and the proportional quota collapses,
# so ns-3 sends far less in the first round of fast recovery than RFC 6937 allows. That shifts what
# is in flight when the RFC 6582 timer fires; the burst after the timeout then loses new data in
# ns-3 (a second fast recovery: 2.26 MB/s) and none in longhaul (4.50 MB/s, +99%). ns-3 with the
# same PRR step computed in 64 bits gives 4.67 MB/s (-3.6% to longhaul); NewReno's smaller
# ssthresh wraps too, but its run after the timeout does not depend on it (+3.7%).
KNOWN_CUBIC_70MS = pytest.mark.xfail(strict=True, reason="ns-3 3.37's TcpPrrRecovery::DoRecovery overflows 32 bits "
                                     "(prr_delivered x ssthresh), which changes its CUBIC run after the 70 ms timeout; "
                                     "longhaul is within 4% of ns-3 with the product in 64 bits")


def _shape_alike(a: list[float], b: list[float]) -> float:
    """Pearson correlation of the two cwnd series over their common length."""
    n = min(len(a), len(b))
    a, b = a[:n], b[:n]
    ma, mb = sum(a) / n, sum(b) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    va = sum((x - ma) ** 2 for x in a) ** 0.5
    vb = sum((y - mb) ** 2 for y in b) ** 0.5
    return cov / (va * vb) if va and vb else 1.0


@pytest.mark.parametrize("cc, delay_ms", [("reno", 1), ("reno", 10), ("reno", 70), ("cubic", 1), ("cubic", 10),
                                          pytest.param("cubic", 70, marks=KNOWN_CUBIC_70MS)])
def test_goodput_and_cwnd_match_ns3(cc, delay_ms):
    ns = tcp_ns3.run_ns3(cc, delay_ms)
    lh = tcp_ns3.run_longhaul(cc, delay_ms)
    err = (lh["bw_MBps"] - ns["bw_MBps"]) / ns["bw_MBps"]
    assert abs(err) <= 0.10, f"{cc} {delay_ms} ms: longhaul {lh['bw_MBps']:.1f} vs ns-3 {ns['bw_MBps']:.1f} MB/s ({err:+.1%})"
    if delay_ms == 10:
        # A clear trajectory (slow start, then growth): the two must rise and fall together.
        r = _shape_alike(lh["cwnd_trace_segs"][5:], ns["cwnd_trace_segs"][5:])
        assert r >= 0.8, f"cwnd trajectories differ in shape (correlation {r:.2f})"
