"""A longer fuzz run of every `longhaul` command: hostile arguments and files, as tests/test_fuzz_cli.py
draws them, many more of them. Prints the number of invocations, the slowest, and every finding
(an exit status other than 0 or 2, a refusal that is not one `longhaul: error:` line, a traceback,
a control character echoed, or an invocation past its time) with the command line to reproduce it.

    python bench/fuzz_cli.py [--count 2000] [--seed 1] [--timeout-s 20]

Exit status 1 when there are findings. Nothing long or privileged runs (see tests/cli_fuzzing.py).
"""

from __future__ import annotations

import argparse
import random
import shlex
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import cli_fuzzing as fz


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=2000, help="invocations (default 2000)")
    ap.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    ap.add_argument("--timeout-s", type=float, default=20.0, help="longest an invocation may take (default 20)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    commands = fz.commands()
    found: dict[str, list[str]] = {}
    slowest: list[tuple[float, list[str]]] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        values = [*fz.HOSTILE_TEXT, *fz.hostile_files(Path(tmp) / "files")]
        import os
        os.chdir(tmp)
        os.environ["LONGHAUL_STORE"] = str(Path(tmp) / "results")
        with fz.no_real_work():
            for _ in range(args.count):
                path, parser = rng.choice(commands)
                argv = fz.argv_for(path, parser, lambda seq: rng.choice(list(seq)), values)
                try:
                    status, _out, err, seconds = fz.run(argv, args.timeout_s)
                    problems = fz.findings(status, err)
                except fz.TookTooLong:
                    problems, seconds = [f"still running after {args.timeout_s:g} s"], args.timeout_s
                except Exception as exc:  # noqa: BLE001 - a finding, reported with where it came from
                    problems, seconds = [f"{type(exc).__name__} escaped: {traceback.format_exc(limit=-1).strip()[-300:]}"], 0.0
                slowest = sorted([*slowest, (seconds, argv)], key=lambda s: -s[0])[:5]
                for problem in problems:
                    found.setdefault(problem.split(":")[0], []).append(shlex.join(["longhaul", *argv])[:300])
    print(f"{args.count} invocations of {len(commands)} commands in {time.monotonic() - started:.0f} s "
          f"(seed {args.seed}); {sum(len(v) for v in found.values())} findings of {len(found)} kinds")
    for seconds, argv in slowest:
        print(f"  slowest: {seconds:.1f} s  {shlex.join(['longhaul', *argv])[:200]}")
    for kind, lines in sorted(found.items()):
        print(f"- {kind}: {len(lines)}, e.g.")
        for line in lines[:3]:
            print(f"    {line}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
