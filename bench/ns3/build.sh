#!/usr/bin/env bash
# Build the ns-3 comparison scenario (Debian's ns3 + libns3-dev; their pkg-config files are
# broken, so headers and libraries are named directly). Prints the binary's path.
# Safe to run concurrently (parallel test workers): one builds under a lock, the binary appears by
# rename, so nobody executes a half-written file (ETXTBSY) or compiles it twice.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${NS3_BUILD_DIR:-$here/build}"
mkdir -p "$out"
bin="$out/tcp_bulk"
exec 9>"$out/.build.lock"
flock 9
if [[ ! -x "$bin" || "$here/tcp_bulk.cc" -nt "$bin" ]]; then
  libs=""
  for m in core network internet point-to-point applications traffic-control stats mobility bridge; do
    libs="$libs -lns3-$m"
  done
  g++ -O2 -std=c++17 -I/usr/include "$here/tcp_bulk.cc" -o "$bin.tmp" $libs >&2
  mv -f "$bin.tmp" "$bin"
fi
echo "$bin"
