"""Real Open MPI across the emulated link vs the simulator (longhaul compare mpi).

Point to point runs on the simulator's MPI-over-TCP model with this machine's host stack,
calibrated from 0-delay emulator runs; collectives on the verbs model (profile s1). The emulated
link runs at s1's WAN rate (8 Gb/s). Where the two disagree beyond the issue's tolerance the test
is marked xfail with the numbers and the mechanism that still differs (the disagreement is a
finding, not something to tune away). Needs root and Open MPI; skipped otherwise."""

from __future__ import annotations

import shutil

import pytest

from test_emu_helpers import leaves_nothing, needs_root  # noqa: F401

pytestmark = [pytest.mark.root, needs_root,
              pytest.mark.skipif(shutil.which("mpirun.openmpi") is None,
                                 reason="needs Open MPI's mpirun.openmpi (Debian package openmpi-bin)")]

MIB = 1 << 20


def test_hierarchical_bcast_at_10ms_4_ranks_per_cluster(leaves_nothing):
    from longhaul.compare.mpi import compare_mpi, gains

    recs = compare_mpi("bcast", [MIB], [10_000], ranks_per_cluster=4, algos=("default", "hierarchical"))
    lat = {(r["source"], r["algo"]): r["lat_us"] for r in recs}
    wan = {r["algo"]: r["wan_bytes_ab"] for r in recs if r["source"] == "emu"}
    # What the hierarchical algorithm is for holds regardless of timing: one WAN crossing per
    # message instead of several (Open MPI's default tree crosses several times).
    assert wan["hierarchical"] < 0.5 * wan["default"], wan
    (g,) = gains(recs)
    numbers = (f"emu default {lat['emu', 'default']:.0f} us, hierarchical {lat['emu', 'hierarchical']:.0f} us "
               f"(gain {g['emu_gain_pct']}%); sim default {lat['sim', 'default']:.0f} us, hierarchical "
               f"{lat['sim', 'hierarchical']:.0f} us (gain {g['sim_gain_pct']}%)")
    # Since HierComm.Bcast sends eager-sized pieces across the WAN it is faster than Open MPI's own.
    assert lat["emu", "hierarchical"] < lat["emu", "default"], numbers
    if abs(g["diff_pp"]) > 15:
        pytest.xfail(f"measured gain more than 15 points from the model's: {numbers}")


BW_SIZES = (64 << 10, MIB, 4 * MIB)
BW_DELAYS_US = (1000, 10_000)
#: Why points miss when they do (measured 2026-11-22 on this 2-vCPU VM under other jobs' load;
#: README, "Real MPI across the emulated link", has the numbers of three runs: 6, 2 and 5 of the
#: 6 points within 20%).
BW_GAP = ("the stack is calibrated at 0 delay, where this loaded VM's Open MPI bandwidth for 1-4 MiB moves by "
          "+-30% between runs (two ranks, the data plane and softirqs share 2 vCPUs and wake each other per "
          "ACK), and real bandwidth at 1-10 ms is not tied to it by a fixed per-segment cost (with delay, "
          "segments arrive in larger bursts: fewer wake-ups, larger GRO/GSO batches), so the model lands "
          "above or below by as much as the calibration run was off")
@pytest.fixture(scope="module")
def bw_rows():
    from longhaul.compare.mpi import compare_mpi, side_by_side

    recs = compare_mpi("bw", list(BW_SIZES), list(BW_DELAYS_US))
    sims = [r for r in recs if r["source"] == "sim"]
    assert sims and all(r["transport"] == "tcp" and r["stack_per_seg_us"] + r["stack_per_byte_ns"] > 0 for r in sims)
    return {(r["delay_us"], r["size_bytes"]): r for r in side_by_side(recs)}


@pytest.mark.parametrize("delay_us", BW_DELAYS_US)
@pytest.mark.parametrize("size", BW_SIZES)
def test_bandwidth_real_vs_simulated_at_1_and_10_ms(bw_rows, leaves_nothing, delay_us, size):
    r = bw_rows[(delay_us, size)]
    print(f"{size} B at {delay_us} us: sim {r['sim_bw_MBps']:.0f} vs emu {r['emu_bw_MBps']:.0f} MB/s "
          f"({100 * r['rel_diff']:+.0f}%)")
    assert r["emu_bw_MBps"] and r["emu_bw_MBps"] > 0 and r["sim_bw_MBps"] > 0, r
    if abs(r["rel_diff"]) > 0.20:
        pytest.xfail(f"{size} B at {delay_us} us: sim {r['sim_bw_MBps']:.0f} vs emu {r['emu_bw_MBps']:.0f} MB/s "
                     f"({100 * r['rel_diff']:+.0f}%): {BW_GAP}")
