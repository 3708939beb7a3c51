#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian machine: apt packages, Rust toolchain on PATH,
# a Python venv in .venv with pinned packages, and the Rust core built into it.
# Sourced by scripts/study.sh and scripts/test.sh; safe to run again and again.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
log() { printf '[setup] %s\n' "$*" >&2; }

# 1. Debian packages (only the missing ones; apt-get update once when needed).
need_apt=()
while read -r pkg; do
  [[ -z "$pkg" || "$pkg" == \#* ]] && continue
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done < scripts/apt-packages.txt
if ((${#need_apt[@]})); then
  sudo_cmd=""; [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  log "installing Debian packages: ${need_apt[*]}"
  # A fresh machine's boot-time upgrades (or a second set-up) may hold dpkg's lock: wait for it
  # rather than fail (apt >= 1.9.11's DPkg::Lock::Timeout, in seconds).
  wait_lock=(-o DPkg::Lock::Timeout=600)
  $sudo_cmd apt-get "${wait_lock[@]}" update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get "${wait_lock[@]}" install -y -qq "${need_apt[@]}" >/dev/null
fi

# 2. Rust: rustup's cargo if present, Debian's otherwise.
[[ -d "$HOME/.cargo/bin" ]] && export PATH="$HOME/.cargo/bin:$PATH"
if ! command -v cargo >/dev/null 2>&1; then
  log "no cargo found: installing Debian's rustc and cargo"
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq cargo rustc >/dev/null
fi

# 3. Python venv with the pinned packages (re-installed only when pyproject.toml or this file changes).
py=python3
if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "longhaul needs Python >= 3.11; found $("$py" --version)" >&2; exit 2
fi
[[ -x .venv/bin/python ]] || { log "creating .venv"; "$py" -m venv .venv; }
stamp=.venv/.longhaul-deps
want="$(cat pyproject.toml scripts/bootstrap.sh | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
  log "installing pinned Python packages into .venv"
  .venv/bin/pip install -q --upgrade pip >/dev/null
  # The tests' and lints' tools (scripts/test.sh), and the documentation site's (longhaul docs, tests/test_docs.py):
  # Sphinx 9.0 is the last for Python 3.11.
  .venv/bin/pip install -q "maturin==1.16.0" "pytest==9.2.0" "pytest-xdist==3.8.0" "hypothesis==6.170.15" \
    "sphinx==9.0.4" "myst-parser==5.2.0" "furo==2025.12.19" "sphinx-argparse==0.6.1" \
    "ruff==0.17.5" "mypy==2.4.1" "import-linter==2.16" \
    $(.venv/bin/python - <<'PY'
import tomllib
print(" ".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))
PY
    )
  echo "$want" > "$stamp"
fi

# 4. Build the Rust core (and the emulator binary) into the venv; cargo's cache makes re-runs quick.
log "building the Rust core (cargo, release)"
VIRTUAL_ENV="$root/.venv" PATH="$root/.venv/bin:$PATH" .venv/bin/maturin develop --release -q >/dev/null 2>.venv/build.log \
  || { cat .venv/build.log >&2; exit 1; }
cargo build --release -q -p longhaul-wan
# 5. liblonghaul_coll (WAN-aware collectives for C/Fortran codes), when an MPI compiler is installed.
if command -v mpicc >/dev/null 2>&1; then make -s -C c/longhaul_coll >/dev/null; fi
# 6. MPICH with the libfabric (ch4:ofi) network module for `longhaul emu mpi --mpi mpich-ofi`: the
#    PyPI build, in a venv of its own so that its mpicc/mpirun never shadow Debian's Open MPI ones.
if [[ ! -x target/mpich-ofi/bin/mpiexec.hydra ]]; then
  log "installing MPICH 5.0.2 (PyPI mpich, ch4:ofi) into target/mpich-ofi"
  "$py" -m venv target/mpich-ofi && target/mpich-ofi/bin/pip install -q "mpich==5.0.2" \
    || log "MPICH ch4:ofi not installed (--mpi mpich-ofi unavailable)"
fi
export PATH="$root/.venv/bin:$root/target/release:$PATH"
