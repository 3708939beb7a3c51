"""Real Open MPI across the emulated link vs the simulator (longhaul compare mpi).

Point to point and osu_bcast run on the simulator's MPI-over-TCP model with this machine's host
stack, calibrated once per module from 0-delay emulator runs (three interleaved repetitions, the
median of each point). Every emulated point is the median of three interleaved runs, as one
run on this shared 2-vCPU VM moves by 10-30%. The emulated link runs at s1's WAN rate (8 Gb/s).
Bandwidth must agree within the issue's 20% at every point; where the first look (three runs
each) disagrees, a second look pools four more calibration runs and four more runs of each
missed point with the first ones before the assertion (seven: an odd count, so that each value
is its middle run's, not the lower of two middle ones, which biased a pooled six low). Needs root and Open MPI; skipped
otherwise."""

from __future__ import annotations

import shutil

import pytest

from test_emu_helpers import needs_root

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
TOLERANCE = 0.20
#: What moves the comparison when it moves (measured 2026-11-22..24 on this 2-vCPU VM; bench/results/emu_mpi_compare.md,
#: "Real MPI across the emulated link"): single runs of real Open MPI move by 10-30% here, at 0
#: delay as at 1 and 10 ms (1 MiB at 0 delay: 610-890 MB/s between runs of one afternoon), and a
#: calibration that lands low or high moves every simulated point with it.
BW_NOISE = ("real Open MPI on this shared 2-vCPU VM moves by 10-30% between runs, at 0 delay (the calibration) "
            "as at 1 and 10 ms")


def _rows(recs: list[dict]) -> dict:
    from longhaul.compare.mpi import side_by_side

    runs = {(r["delay_us"], r["size_bytes"]): r["bw_MBps_runs"] for r in recs if r["source"] == "emu"}
    return {(r["delay_us"], r["size_bytes"]): {**r, "runs": runs[(r["delay_us"], r["size_bytes"])]}
            for r in side_by_side(recs)}


def _second_look(stack: dict, first: list[dict], missed: list[tuple]) -> list[dict]:
    """More data where the first look disagrees: four more calibration runs pooled with the
    first three, four more runs of each missed point pooled with its first three, and every
    point simulated again with the pooled stack. Nothing measured is dropped: each value is the
    median of all its runs, seven of them (``median_of_runs`` keeps a run, the lower middle one
    of an even count: a 2026-12-07 fresh-clone run failed 1 MiB at 1 ms on the lower middle of six,
    697 MB/s, +21% from the model, where the middle of the two middle runs, 725 MB/s, was +17%)."""
    from longhaul.compare.mpi import calibrate_stack, calibration_runs, compare_mpi, median_of_runs, simulate_point

    more = calibration_runs(8.0, REPEATS + 1)
    pooled = calibrate_stack(8.0, runs={b: stack["runs"][b] + more[b] for b in more})
    print("pooled stack:", {k: pooled[k] for k in ("per_seg_us", "per_byte_ns", "per_msg_us")},
          [(p["bench"], p["size_bytes"], p["emu"], p["fit"]) for p in pooled["points"]])
    emu = {(r["delay_us"], r["size_bytes"]): r for r in first if r["source"] == "emu"}
    for delay_us, size in missed:
        again = compare_mpi("bw", [size], [delay_us], stack=pooled, repeats=REPEATS + 1)
        new = next(r for r in again if r["source"] == "emu")
        old = emu[(delay_us, size)]
        runs = [[{**old, "bw_MBps": v}] for v in old["bw_MBps_runs"]] + [[{**new, "bw_MBps": v}] for v in new["bw_MBps_runs"]]
        emu[(delay_us, size)] = median_of_runs(runs, "bw_MBps")[0]
    out = []
    for e in emu.values():
        s = simulate_point("bw", e, pooled)
        out += [e, {**e, **{k: s[k] for k in ("bw_MBps", "lat_us") if k in s}, "source": "sim"}]
    return out


@pytest.fixture(scope="module")
def bw_rows(stack):
    from longhaul.compare.mpi import compare_mpi

    recs = compare_mpi("bw", list(BW_SIZES), list(BW_DELAYS_US), stack=stack, repeats=REPEATS)
    sims = [r for r in recs if r["source"] == "sim"]
    assert sims and all(r["transport"] == "tcp" and r["stack_per_seg_us"] + r["stack_per_byte_ns"] > 0 for r in sims)
    rows = _rows(recs)
    missed = [k for k, r in rows.items() if abs(r["rel_diff"]) > TOLERANCE]
    if missed:
        print("first look outside the tolerance:", {k: rows[k]["rel_diff"] for k in missed})
        rows = _rows(_second_look(stack, recs, missed))
    return rows


@pytest.mark.parametrize("delay_us", BW_DELAYS_US)
@pytest.mark.parametrize("size", BW_SIZES)
def test_bandwidth_real_vs_simulated_at_1_and_10_ms(bw_rows, leaves_nothing, delay_us, size):
    r = bw_rows[(delay_us, size)]
    line = (f"{size} B at {delay_us} us: sim {r['sim_bw_MBps']:.0f} vs emu {r['emu_bw_MBps']:.0f} MB/s "
            f"(median of {r['runs']}; {100 * r['rel_diff']:+.0f}%)")
    print(line)
    assert r["emu_bw_MBps"] and r["emu_bw_MBps"] > 0 and r["sim_bw_MBps"] > 0, r
    assert abs(r["rel_diff"]) <= TOLERANCE, f"{line}: {BW_NOISE}"
