"""Real Open MPI across the emulated link vs the simulator's MPI model (longhaul compare mpi).

The model runs over InfiniBand verbs (profile s1) and has no TCP transport; the emulated link
runs at s1's WAN rate (8 Gb/s). Where the two disagree beyond the issue's tolerance the test is
marked xfail with the numbers (the disagreement is a finding, not something to tune away).
Needs root and Open MPI; skipped otherwise."""

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


def test_bandwidth_real_vs_simulated_at_1_and_10_ms(leaves_nothing):
    from longhaul.compare.mpi import compare_mpi, side_by_side

    rows = side_by_side(compare_mpi("bw", [64 << 10, MIB, 4 * MIB], [1000, 10_000]))
    assert all(r["emu_bw_MBps"] and r["emu_bw_MBps"] > 0 and r["sim_bw_MBps"] > 0 for r in rows), rows
    off = [f"{r['size_bytes']} B at {r['delay_us']:g} us: sim {r['sim_bw_MBps']:.0f} vs emu {r['emu_bw_MBps']:.0f} MB/s "
           f"({100 * r['rel_diff']:+.0f}%)" for r in rows if abs(r["rel_diff"]) > 0.20]
    if off:
        pytest.xfail(f"{len(off)} of {len(rows)} points differ by more than 20%: " + "; ".join(off))
