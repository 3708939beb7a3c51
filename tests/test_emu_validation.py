"""Validation of the emulator against what it promises (issue 5): delay accuracy at light
load and under 1 Gb/s, rate accuracy, random loss, a bandwidth-delay-product workload.
Short runs (a few seconds each) to keep the suite quick on a 2-core machine. Needs root."""

from __future__ import annotations

import math

import pytest

from test_emu_helpers import cli_json, needs_root

pytestmark = [pytest.mark.root, needs_root]

DELAY_TOLERANCE_US = 40.0  # issue 5's target
PROBES = 100


def _by_delay(records: list[dict]) -> dict[float, dict]:
    return {r["delay_us"]: r for r in records}


def _rtt_points(cross_gbps: int) -> dict[float, dict]:
    # MTU 9000 so 1 Gb/s of UDP cross traffic is ~14 k packets/s (the TUN path is packet-bound).
    # Probes 25 ms apart, longer than the longest round trip (20 ms): the stop-and-wait client
    # then sleeps before every probe at every delay, as it does for the 0-delay baseline. At a
    # 300 us interval it sent back to back at 10 ms (never asleep) and the device-to-device RTT
    # read +11..+19 us here and +44 us on a CI machine against a baseline taken asleep, while the
    # delay line released on time (lateness p50 1 us); 25 ms apart, -4..-1 us
    # (docs/models/emulator.md, "Limits").
    return _by_delay(cli_json("emu", "bench", "ping", "--delay-us", "0,100,1000,10000", "--count", str(PROBES),
                              "--interval-us", "25000", "--mtu", "9000", "--cross-gbps", str(cross_gbps),
                              "--no-store", timeout=120))


def _median_of_runs(runs: list[dict[float, dict]]) -> dict[float, dict]:
    """Per delay, the run whose median RTT is the median of the runs' medians."""
    out = {}
    for d in runs[0]:
        ordered = sorted((r[d] for r in runs), key=lambda rec: rec["rtt_p50_us"])
        out[d] = ordered[len(ordered) // 2]
    return out


def _rtt_errors(pts: dict[float, dict]) -> dict[float, float]:
    """Per delay, the median RTT less the configured round trip and the 0-delay baseline (us)."""
    base = pts[0.0]["rtt_p50_us"]
    return {d: pts[d]["rtt_p50_us"] - (2 * d + base) for d in (100.0, 1000.0, 10000.0)}


@pytest.mark.parametrize("cross_gbps", [0, 1])
def test_rtt_median_is_configured_rtt_plus_baseline(cross_gbps, leaves_nothing):
    # 100 pings per delay; each delay, the 0-delay baseline included, is its own emulator
    # instance, and on this 2-vCPU VM one run's median can move by ~20 us when other work lands
    # on the CPUs. A run with a delay outside the tolerance is measured twice more, and the
    # median of the three runs' medians counts. The RTT is device to device (kernel transmit and
    # receive stamps, the server's residence from its follow-up), with each end pinned next to
    # the data-plane thread that reads what it sends.
    runs = [_rtt_points(cross_gbps)]
    if any(abs(e) > DELAY_TOLERANCE_US for e in _rtt_errors(runs[0]).values()):
        runs += [_rtt_points(cross_gbps) for _ in range(2)]
    pts = _median_of_runs(runs)
    errors = _rtt_errors(pts)
    for delay, error in errors.items():
        r = pts[delay]
        assert r["received"] >= PROBES - 3 and r["kernel_stamped"] == r["received"], r
        assert r["tx_stamped"] >= 0.95 * r["received"], r
        print(f"cross {cross_gbps} Gb/s delay {delay:g} us ({len(runs)} run(s)): p50 {r['rtt_p50_us']:.1f} us "
              f"(error {error:+.1f}), p99 {r['rtt_p99_us']:.1f} us, application p50 {r['app_rtt_p50_us']:.1f} us, "
              f"lateness p99 {r['lateness_p99_us']} us")
        assert abs(error) <= DELAY_TOLERANCE_US, r
        if cross_gbps:
            sent, got = r["cross_packets_sent"], r["cross_packets_received"]
            # The link must really carry ~1 Gb/s; the receiving host may drop a few % itself.
            assert sent > 0 and got / sent > 0.8, "the cross traffic did not flow"


def _tcp_at(rates: str) -> list[dict]:
    return cli_json("emu", "bench", "tcp", "--delay-us", "1000", "--rate-gbps", rates, "--mtu", "9000",
                    "--cc", "cubic", "--window", "16M", "--duration-s", "2", timeout=120)


def _tcp_line(r: dict) -> str:
    return (f"{r['throughput_gbps']} Gb/s, utilization {r['utilization']}, retransmits {r.get('retransmits')}, "
            f"queue drops {r.get('drops_queue')}, emulator CPU {r.get('emu_cpu_pct')}%")


def test_saturating_tcp_gets_the_configured_rate(leaves_nothing):
    recs = _tcp_at("0.1,1,2")
    assert [r["rate_gbps"] for r in recs] == [0.1, 1.0, 2.0]
    for r in recs:
        print(f"rate {r['rate_gbps']} Gb/s: {_tcp_line(r)}")
        for _ in range(5):
            if r["utilization"] >= 0.95:
                break
            # Up to five re-measurements, keeping the best: the end hosts share the VM's two cores with
            # the data plane, and a burst of other work there can stall the sender for tens of
            # milliseconds (a fresh clone's CI run once got 92% and then 92% again); and a 2 s run
            # with ~150 drops at the one-round-trip queue now and then loses a retransmission and
            # waits for a timeout (this VM, 2026-12-07: 1 Gb/s read 49% and 89% in a row, then the
            # next runs 97-99%; CI 84%, 83% and 58% of 2 Gb/s). A shaper that could not reach its
            # rate would fall short every time; one that exceeded it is caught by the upper bound
            # whichever run is kept.
            again = _tcp_at(f"{r['rate_gbps']:g}")[0]
            print(f"  re-measured: {_tcp_line(again)}")
            r = max(r, again, key=lambda x: x["utilization"])  # noqa: PLW2901 - the best run is the point
        if r["utilization"] < 0.95:
            # Whether these hosts can fill the rate at all: the same flow with no shaper. A machine
            # whose end hosts and TUN path move less than 1.25x the rate cannot test the shaper there
            # (a CI run got 83-90% of 2 Gb/s three times); one that can, and still falls short, fails.
            free = _tcp_at("0")[0]
            print(f"  unshaped: {free['throughput_gbps']} Gb/s, emulator CPU {free.get('emu_cpu_pct')}%")
            if free["throughput_gbps"] < 1.25 * r["rate_gbps"]:
                pytest.skip(f"these hosts move {free['throughput_gbps']} Gb/s unshaped: too little to test a "
                            f"{r['rate_gbps']:g} Gb/s shaper")
        # Goodput cannot exceed the rate minus 52 header bytes per 9000-byte packet (99.4%).
        assert 0.95 <= r["utilization"] <= 1.0, r


def test_random_loss_is_within_binomial_bounds(leaves_nothing):
    # Counted at the emulator (packets that entered the A->B link vs. dropped by its random
    # loss): the end hosts of a 2-core VM add their own socket-buffer drops to what the
    # receiver sees, so end-to-end loss is only checked to be at least the link's.
    p = 1e-3
    recs = cli_json("emu", "bench", "ping", "--loss", str(p), "--mtu", "9000", "--count", "300",
                    "--interval-us", "1000", "--cross-gbps", "0.6", timeout=120)
    r = recs[0]
    n, lost = r["segments_ab"], r["drops_loss"]
    mean, sigma = n * p, math.sqrt(n * p * (1 - p))
    e2e_lost = r["cross_packets_sent"] - r["cross_packets_received"]
    print(f"link: {n} packets, {lost} lost, expected {mean:.1f} +- {sigma:.1f}; end to end lost {e2e_lost}")
    assert n > 10_000
    assert abs(lost - mean) <= 5 * sigma, r
    assert e2e_lost >= lost * 0.9 and r["drops_queue"] == 0


def test_loss_is_per_wire_packet_inside_tcp_super_packets(leaves_nothing):
    # TCP hands the link 64 KB GSO super-packets of ~44 wire packets each: loss 1e-3 must
    # take single wire packets (counted at the link, within 5 sigma of the binomial mean over
    # the wire packets), and the rest of a super-packet must arrive intact, so TCP
    # retransmits about what was lost rather than whole super-packets (unlimited rate: no
    # queue drops).
    p = 1e-3
    r = cli_json("emu", "bench", "tcp", "--loss", str(p), "--delay-us", "1000", "--mtu", "1500", "--cc", "cubic",
                 "--duration-s", "3", "--no-store", timeout=120)[0]
    n, lost, frames = r["segments_ab"], r["drops_loss"], r["packets_ab"]
    mean, sigma = n * p, math.sqrt(n * p * (1 - p))
    print(f"TCP: {n} wire packets in {frames} frames, {lost} lost (expected {mean:.1f} +- {sigma:.1f}), "
          f"{r['retransmits']} retransmits, {r['throughput_gbps']} Gb/s")
    assert n > 20_000 and n / frames > 4, r  # the data plane saw super-packets
    assert abs(lost - mean) <= 5 * sigma, r
    assert r["drops_queue"] == 0 and r["retransmits"] <= 2 * lost + 20, r


def test_bandwidth_delay_product_4_streams_fill_1_gbps_at_25_ms(leaves_nothing):
    recs = cli_json("emu", "bench", "tcp", "--delay-us", "25000", "--rate-gbps", "1", "--streams", "4",
                    "--cc", "cubic", "--window", "64M", "--mtu", "9000", "--duration-s", "4", timeout=120)
    r = recs[0]
    print(f"BDP: {r['throughput_gbps']} Gb/s of 1, retransmits {r['retransmits']}")
    assert r["utilization"] >= 0.90, r
