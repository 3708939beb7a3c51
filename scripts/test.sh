#!/usr/bin/env bash
# Every test: set up (idempotently), then the Rust tests and the Python suite.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
echo "== cargo fmt --check =="
if cargo fmt --version >/dev/null 2>&1; then
  cargo fmt --check >/dev/null || { echo "Rust code is not formatted: run cargo fmt"; exit 1; }
else
  echo "skipped: rustfmt is not installed (rustup component add rustfmt)"
fi
echo "== cargo test (optimised, profile test-opt) =="
set +e
cargo test --profile test-opt --workspace > .venv/cargo-test.log 2>&1
rc=$?
set -e
grep -E '^test result|FAILED|panicked' .venv/cargo-test.log || true
if [[ $rc -ne 0 ]]; then cat .venv/cargo-test.log; echo "cargo test failed"; exit 1; fi
echo "== pytest =="
set +e
python -m pytest -q "$@"
rc=$?
set -e
[[ $rc -eq 5 ]] && { echo "pytest collected no tests"; exit 1; }
exit $rc
