"""Checks of the parallel file system model against [S3]'s GPFS failure drill
(``points_storage.toml``), run on the drill's scenario (``s3_gpfs_drill.toml``).

The claims are words, not numbers read to a digit, so each gets the tolerance its wording allows
(kept in the point): "unchanged" within ``unchanged_within`` (the resolution of reading a
bandwidth plot), "~30%" lower within ``drop_range``, "within about a minute" at most
``recovery_at_most_s``, "no data lost" as the ledger (every acknowledged write on a server
exactly once, none lost). The published aggregate (1558 MBps) is not compared: it is set by
S3's servers and disks, which the source does not describe (the model's are the era's typical
ones, not fitted to it).
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path

from longhaul.sim import pfs

DRILL = Path(__file__).with_name("s3_gpfs_drill.toml")


def _row(p: dict, expected: object, model: object, passed: bool, detail: str, rel_err: float | None = None) -> dict:
    return {"id": p["id"], "source": p["source"], "what": p["what"], "expected": expected, "model": model,
            "rel_err": rel_err, "passed": bool(passed), "detail": detail}


def drill_record() -> dict:
    with DRILL.open("rb") as f:
        return pfs.run(pfs.scenario(tomllib.load(f)))


def check_failover(p: dict, quiet: bool = True) -> dict:
    rec = drill_record()
    four, three, two, one, replug = rec["phases"]
    base = four["bw_MBps"]
    unchanged = [abs(ph["bw_MBps"] / base - 1) for ph in (three, two)]
    drop = 1 - one["bw_MBps"] / base
    lo, hi = p["drop_range"]
    recovery = replug["recovery_s"]
    claims = {
        "unchanged after the 1st and 2nd unplug": max(unchanged) <= p["unchanged_within"],
        f"{drop:.0%} lower after the 3rd (~30%)": lo <= drop <= hi,
        "working on one link": one["bw_MBps"] >= 0.5 * rec["link_MBps"],
        "recovered after the replug": recovery is not None and recovery <= p["recovery_at_most_s"],
        "nothing lost": rec["ledger_ok"] and rec["acked_blocks"] > 0,
    }
    model = (f"{base:.0f} / {three['bw_MBps']:.0f} / {two['bw_MBps']:.0f} / {one['bw_MBps']:.0f} MBps on 4/3/2/1 "
             f"links (-{drop:.0%}), recovery {recovery} s, ledger {'ok' if rec['ledger_ok'] else 'violated'}")
    failed = [c for c, ok in claims.items() if not ok]
    detail = "all claims hold" if not failed else "fails: " + "; ".join(failed)
    detail += (f" (link {rec['link_MBps']:.0f} MBps, LUN {rec['lun_MBps']:.0f} MBps x {rec['luns']}; "
               f"{rec['qp_errors']} QP errors, {rec['reconnects']} reconnects, {rec['rewritten_blocks']} blocks rewritten)")
    return _row(p, p["claim"], model, not failed, detail, -drop)


CHECKS: dict[str, Callable[[dict, bool], dict]] = {"S3-gpfs-failover": check_failover}


# ---- the NSD migration ([S3] as issue 24 reports it), with `longhaul sim pfs migrate`


def migration_record(p: dict, move_nsds: int) -> dict:
    """GPFS's restripe of the point's data over the S3 path (four SDR Longbow links, 10 km)."""
    from longhaul.sim import pfs_migrate

    return pfs_migrate.run(pfs_migrate.scenario(wan_links=4, fibre_km=10, method="restripe",
                                                data_bytes=p["data_bytes"], files=p["files"],
                                                source_nsds=p["nsds"], move_nsds=move_nsds))


def check_migration_shape(p: dict, quiet: bool = True) -> dict:
    every, two = migration_record(p, p["nsds"]), migration_record(p, 2)
    ratio = two["time_s"] / every["time_s"]
    model = (f"2 of {p['nsds']} NSDs {two['time_min']:.0f} min, all {every['time_min']:.0f} min "
             f"(x{ratio:.2f}; bottleneck {two['bottleneck']} / {every['bottleneck']})")
    passed = abs(ratio - 1) <= p["same_within"]
    return _row(p, p["claim"], model, passed, "each NSD holds 1/6 of the data and its own LUN moves it", ratio - 1)


def check_migration_time(p: dict, quiet: bool = True) -> dict:
    rec = migration_record(p, p["nsds"])
    rel = rec["time_min"] / p["value_minutes"] - 1
    detail = f"bottleneck {rec['bottleneck']} at {rec['rate_MBps']:.0f} MBps (LUN {rec['lun_MBps']:.0f} MBps)"
    return _row(p, f"{p['value_minutes']} min", f"{rec['time_min']:.0f} min", abs(rel) <= p["within"], detail, rel)


CHECKS |= {"S3-gpfs-migration-shape": check_migration_shape, "S3-gpfs-migration-time": check_migration_time}
