#!/usr/bin/env bash
# The main job: set up (idempotently), then run `longhaul study` on the embedded simulator.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
exec longhaul study "$@"
