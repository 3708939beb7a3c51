"""Benchmark (not a timed test) of `longhaul study` against its targets on this machine:
the default (S1) full matrix < 120 s, --quick < 20 s, a re-run with a warm cache < 5 s (issue 6),
and `longhaul study --site` on each shipped example under examples/sites/ < 120 s (issue 23).

    python bench/study_bench.py [--skip-full] [--sites] [--only-sites] [--anchor DIR]

--anchor DIR runs the default full study with another checkout's python/ directory too (its built
_core inside, e.g. a `git worktree add` of main), right before this tree's, and prints the ratio:
the S1 default must not become slower than it was.

Each run uses a fresh store under bench/out/ (cold), then the quick study is run again on its
store (warm). Prints one line per case and writes bench/out/study_bench.json. The emulated part
(real traffic) is left out of the site runs: it does not depend on the site.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
TARGETS_S = {"full (cold)": 120.0, "quick (cold)": 20.0, "quick (warm cache)": 5.0}
SITE_TARGET_S = 120.0
SITES = sorted((ROOT / "examples" / "sites").glob("*.toml"))
SIM_PARTS = "verbs,tcp,mpi,nfs,validation"


def run(name: str, args: list[str], store: Path, fresh: bool, target: float | None = None,
        python_dir: Path = ROOT / "python") -> dict:
    if fresh and store.exists():
        shutil.rmtree(store)
    env = {**os.environ, "PYTHONPATH": str(python_dir) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-m", "longhaul.cli", "study", *args, "--store", str(store),
           "--out", str(OUT / "reports" / name.replace(" ", "_").replace("(", "").replace(")", "")), "--no-summary"]
    t = time.perf_counter()
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    seconds = time.perf_counter() - t
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU seconds: what a busy shared machine changes least (wall time waits for other work)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    ok = proc.returncode == 0
    target = target or TARGETS_S[name]
    verdict = "OK" if ok and seconds < target else "MISSED" if ok else "FAILED"
    line = f"{name:<34} {seconds:7.1f} s ({cpu:6.1f} s CPU)   target < {target:g} s   {verdict}"
    print(line, flush=True)
    if not ok:
        print(proc.stderr[-2000:], file=sys.stderr)
    return {"case": name, "seconds": round(seconds, 2), "cpu_s": round(cpu, 2), "target_s": target,
            "returncode": proc.returncode,
            "met": ok and seconds < target}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--skip-full", action="store_true", help="only the quick cases")
    p.add_argument("--sites", action="store_true", help="also each shipped site example (full matrix, cold)")
    p.add_argument("--only-sites", action="store_true", help="only the shipped site examples")
    p.add_argument("--anchor", type=Path, help="another checkout's python/ directory: its default full study too")
    args = p.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    print(f"cpus: {os.cpu_count()}")
    results = []
    if not args.only_sites:
        if args.anchor:
            anchor = run("anchor full (cold)", [], OUT / "store-anchor", fresh=True, target=TARGETS_S["full (cold)"],
                         python_dir=args.anchor.resolve())
            results.append(anchor)
        if not args.skip_full:
            results.append(run("full (cold)", [], OUT / "store-full", fresh=True))
            if args.anchor:
                ratio, cpu_ratio = (results[-1][k] / anchor[k] for k in ("seconds", "cpu_s"))
                print(f"{'full / anchor full':<34} {ratio:7.2f} x ({cpu_ratio:.2f} x CPU)", flush=True)
        results.append(run("quick (cold)", ["--quick"], OUT / "store-quick", fresh=True))
        results.append(run("quick (warm cache)", ["--quick"], OUT / "store-quick", fresh=False))
    if args.sites or args.only_sites:
        for site in SITES:
            results.append(run(f"site {site.stem} (cold)", ["--site", str(site), "--parts", SIM_PARTS],
                               OUT / f"store-{site.stem}", fresh=True, target=SITE_TARGET_S))
    (OUT / "study_bench.json").write_text(json.dumps(results, indent=1) + "\n")
    return 0 if all(r["returncode"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
