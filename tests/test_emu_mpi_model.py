"""Real Open MPI across the emulated link vs the simulator (longhaul compare mpi).

Point to point and osu_bcast run on the simulator's MPI-over-TCP model with this machine's host
stack, calibrated once per module from 0-delay emulator runs (three interleaved repetitions, the
median of each point). Every emulated point is the median of three interleaved runs, as one
run on this shared 2-vCPU VM moves by 10-30%. The emulated link runs at s1's WAN rate (8 Gb/s).
Where the two disagree beyond the issue's tolerance the test is marked xfail with the numbers
and the mechanism that still differs (the disagreement is a finding, not something to tune
away). Needs root and Open MPI; skipped otherwise."""

from __future__ import annotations

import shutil

import pytest

from test_emu_helpers import leaves_nothing, needs_root  # noqa: F401

pytestmark = [pytest.mark.root, needs_root,
              pytest.mark.skipif(shutil.which("mpirun.openmpi") is None,
                                 reason="needs Open MPI's mpirun.openmpi (Debian package openmpi-bin)")]

MIB = 1 << 20
REPEATS = 3


@pytest.fixture(scope="module")
def stack():
    from longhaul.compare.mpi import calibrate_stack

    cal = calibrate_stack(8.0, repeats=REPEATS)
    print("stack:", {k: cal[k] for k in ("per_seg_us", "per_byte_ns", "per_msg_us")},
          [(p["bench"], p["size_bytes"], p["emu"], p["fit"]) for p in cal["points"]])
    return cal


def test_hierarchical_bcast_at_10ms_4_ranks_per_cluster(stack, leaves_nothing):
    from longhaul.compare.mpi import compare_mpi, gains

    recs = compare_mpi("bcast", [MIB], [10_000], ranks_per_cluster=4, algos=("default", "hierarchical"),
                       stack=stack, repeats=REPEATS)
    lat = {(r["source"], r["algo"]): r["lat_us"] for r in recs}
    runs = {r["algo"]: r["lat_us_runs"] for r in recs if r["source"] == "emu"}
    wan = {r["algo"]: r["wan_bytes_ab"] for r in recs if r["source"] == "emu"}
    assert {r["transport"] for r in recs if r["source"] == "sim"} == {"tcp"}
    # What the hierarchical algorithm is for holds regardless of timing: one WAN crossing per
    # message instead of Open MPI's basic_linear sending 1 MiB to each of the 4 remote ranks.
    assert wan["hierarchical"] < 0.5 * wan["default"], wan
    (g,) = gains(recs)
    numbers = (f"emu default {lat['emu', 'default']:.0f} us {runs['default']}, hierarchical "
               f"{lat['emu', 'hierarchical']:.0f} us {runs['hierarchical']} (gain {g['emu_gain_pct']}%); sim default "
               f"{lat['sim', 'default']:.0f} us, hierarchical {lat['sim', 'hierarchical']:.0f} us (gain {g['sim_gain_pct']}%)")
    print(numbers)
    assert lat["emu", "hierarchical"] < lat["emu", "default"], numbers
    assert lat["sim", "hierarchical"] < lat["sim", "default"], numbers
    assert abs(g["diff_pp"]) <= 15, f"measured gain more than 15 points from the model's: {numbers}"


BW_SIZES = (64 << 10, MIB, 4 * MIB)
BW_DELAYS_US = (1000, 10_000)
#: Why points miss when they do (measured 2026-11-22 on this 2-vCPU VM; README, "Real MPI across
#: the emulated link", has the numbers of each run).
BW_GAP = ("the stack is calibrated at 0 delay (median of three runs), where real Open MPI moves 1-4 MiB at 550-730 "
          "MB/s, while at 1 ms it reaches 600-790 MB/s and at 10 ms streams ~880 MB/s inside each window: with "
          "delay the per-byte cost of this VM's stack falls (segments arrive in bursts: fewer wake-ups, larger GRO "
          "batches), which a fixed per-segment cost does not follow; 64 KiB at 1 ms (two round trips and 192 "
          "protocol frames per window) rests on the per-frame cost fitted to 0-delay latencies that move +-50% "
          "between runs; and when that fit lands above ~30 us per frame the model's BBR at 1 ms stays at ~380 MB/s "
          "for 1-4 MiB (cubic: 557): inflight is held at the auto-tuned receive window (543 segments), below "
          "BBR's 1.25 x BDP probe, so ProbeBW never leaves its 1.25 phase")


@pytest.fixture(scope="module")
def bw_rows(stack):
    from longhaul.compare.mpi import compare_mpi, side_by_side

    recs = compare_mpi("bw", list(BW_SIZES), list(BW_DELAYS_US), stack=stack, repeats=REPEATS)
    sims = [r for r in recs if r["source"] == "sim"]
    assert sims and all(r["transport"] == "tcp" and r["stack_per_seg_us"] + r["stack_per_byte_ns"] > 0 for r in sims)
    runs = {(r["delay_us"], r["size_bytes"]): r["bw_MBps_runs"] for r in recs if r["source"] == "emu"}
    return {(r["delay_us"], r["size_bytes"]): {**r, "runs": runs[(r["delay_us"], r["size_bytes"])]}
            for r in side_by_side(recs)}


@pytest.mark.parametrize("delay_us", BW_DELAYS_US)
@pytest.mark.parametrize("size", BW_SIZES)
def test_bandwidth_real_vs_simulated_at_1_and_10_ms(bw_rows, leaves_nothing, delay_us, size):
    r = bw_rows[(delay_us, size)]
    line = (f"{size} B at {delay_us} us: sim {r['sim_bw_MBps']:.0f} vs emu {r['emu_bw_MBps']:.0f} MB/s "
            f"(median of {r['runs']}; {100 * r['rel_diff']:+.0f}%)")
    print(line)
    assert r["emu_bw_MBps"] and r["emu_bw_MBps"] > 0 and r["sim_bw_MBps"] > 0, r
    if abs(r["rel_diff"]) > 0.20:
        pytest.xfail(f"{line}: {BW_GAP}")
