#!/usr/bin/env bash
# Every test: set up (idempotently), then the lints (rustfmt, clippy, ruff, mypy, lint-imports: configured in
# pyproject.toml and rustfmt.toml), the Rust tests and the Python suite. A lint that fails stops here.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
echo "== cargo fmt --check =="
if cargo fmt --version >/dev/null 2>&1; then
  cargo fmt --check >/dev/null || { echo "Rust code is not formatted: run cargo fmt"; exit 1; }
else
  echo "skipped: rustfmt is not installed (rustup component add rustfmt)"
fi
echo "== cargo clippy --all-targets (warnings are errors) =="
if cargo clippy --version >/dev/null 2>&1; then
  cargo clippy -q --workspace --all-targets -- -D warnings \
    || { echo "clippy: the warnings above fail the tests; fix them (cargo clippy --fix fixes some)"; exit 1; }
else
  echo "skipped: clippy is not installed (rustup component add clippy)"
fi
echo "== cargo doc -p longhaul-sim (warnings are errors: broken links, bad markup) =="
RUSTDOCFLAGS="-D warnings" cargo doc -q -p longhaul-sim --no-deps \
  || { echo "cargo doc: the warnings above fail the tests; fix the doc comments they name"; exit 1; }
echo "== ruff check python tests bench =="
ruff check -q python tests bench \
  || { echo "ruff: the problems above fail the tests; fix them (ruff check --fix fixes some)"; exit 1; }
echo "== mypy python/longhaul =="
mypy python/longhaul || { echo "mypy: the type errors above fail the tests; fix them"; exit 1; }
echo "== lint-imports (the package's layering) =="
layering="$(lint-imports --no-cache 2>&1)" || { printf '%s\n' "$layering" | sed -n '/^Broken contracts/,$p'
  echo "lint-imports: a contract above is broken (pyproject.toml [tool.importlinter]); fix the import"; exit 1; }
echo "== cargo test (optimised, profile test-opt) =="
set +e
cargo test --profile test-opt --workspace > .venv/cargo-test.log 2>&1
rc=$?
set -e
grep -E '^test result|FAILED|panicked' .venv/cargo-test.log || true
if [[ $rc -ne 0 ]]; then cat .venv/cargo-test.log; echo "cargo test failed"; exit 1; fi
# The simulator, CLI, store and analysis tests on parallel workers; then the emulator's tests alone,
# one at a time, since they time real traffic (pyproject.toml's `emu` marker, tests/conftest.py).
# A marker expression of the caller's (-m) replaces the phases' own, so then one run, one at a time.
phases=("not emu" "emu")
for a in "$@"; do [[ "$a" == -m* ]] && phases=("")  ; done
status=0
ran=0
for phase in "${phases[@]}"; do
  if [[ -z "$phase" ]]; then
    echo "== pytest (your -m, one test at a time) =="
    select=()
  elif [[ "$phase" == "emu" ]]; then
    echo "== pytest: the emulator (alone, one test at a time) =="
    select=(-m emu)
  else
    echo "== pytest: simulator, CLI, store, analysis (parallel workers) =="
    select=(-m "not emu" -n auto --maxprocesses 4 --dist loadgroup)
  fi
  set +e
  python -m pytest -q "${select[@]}" "$@"
  rc=$?
  set -e
  # 2: interrupted (Ctrl-C), 3: internal error, 4: usage error: stop here, do not start the next phase.
  if [[ $rc -ge 2 && $rc -le 4 ]]; then exit $rc; fi
  if [[ $rc -eq 0 ]]; then ran=1; elif [[ $rc -ne 5 ]]; then status=$rc; fi
done
[[ $status -eq 0 && $ran -eq 0 ]] && { echo "pytest collected no tests"; exit 1; }
exit $status
