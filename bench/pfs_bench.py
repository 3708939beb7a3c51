"""Parallel file system model benchmark (not a timed test): wall time of [S3]'s 10-minute GPFS
failure drill (2 clients x 6 threads over 4 SDR links, three unplugs and a replug;
python/longhaul/validation/s3_gpfs_drill.toml) against the 30 s target, the least of a few
runs (the least disturbed by other work), with the simulated events per wall second; and a 2 TB
migration estimate (``longhaul sim pfs migrate``, flow level, with its what-if table) against
its 5 s target. Run: ``python bench/pfs_bench.py``."""

from __future__ import annotations

import time

from longhaul.validation import storage

TARGET_S = 30.0
RUNS = 3
MIGRATION_TARGET_S = 5.0


def main() -> None:
    walls = []
    for _ in range(RUNS):
        start = time.perf_counter()
        rec = storage.drill_record()
        walls.append(time.perf_counter() - start)
    wall = min(walls)
    print(f"10-minute drill ({rec['duration_s']:.0f} s simulated, {rec['sim_events']:,} events, "
          f"{rec['acked_blocks']:,} blocks acknowledged): {wall:.2f} s wall (least of {RUNS}), "
          f"target < {TARGET_S:.0f} s: {wall / TARGET_S:.1%} of it, {rec['sim_events'] / wall:,.0f} events/s")
    for ph in rec["phases"]:
        print(f"  {ph['event'] or 'start':<12} {ph['links_plugged']} links  {ph['bw_MBps']:7.1f} MBps  "
              f"dip {ph['min_MBps']:7.1f}  recovery {ph['recovery_s']}")

    migration()


def migration() -> None:
    """[S3]'s 2 TB move (restripe, 6 NSDs, four links), what-if table included."""
    point = {"data_bytes": 2_000_000_000_000, "files": 5050, "nsds": 6}
    walls = []
    for _ in range(RUNS):
        start = time.perf_counter()
        rec = storage.migration_record(point, point["nsds"])
        walls.append(time.perf_counter() - start)
    wall = min(walls)
    print(f"2 TB migration estimate ({rec['method']}, {rec['time_min']:.0f} min predicted, bottleneck "
          f"{rec['bottleneck']}, {len(rec['what_if'])} what-if cases): {wall * 1e3:.1f} ms wall (least of {RUNS}), "
          f"target < {MIGRATION_TARGET_S:.0f} s: {wall / MIGRATION_TARGET_S:.2%} of it")


if __name__ == "__main__":
    main()
