#!/usr/bin/env bash
# demo.sh — the README's first command: install what is missing, build,
# and run the seed-001 matrix (unique and same file x 16M and 32M x write,
# read, md5) with 8 ranks on a local directory, then print the summary and
# where results.h5 is.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${HERD_BUILD_DIR:-$repo/build}
ranks=${HERD_DEMO_RANKS:-8}
"$repo/cluster-configs/local/install.sh"

out=$repo/results/demo-$(date -u +%Y%m%dT%H%M%S)
mkdir -p "$out/target"
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
echo "demo: $ranks ranks, seed-001 matrix on the local directory $out/target" >&2
mpirun --oversubscribe -np "$ranks" "$build/herd" run "$repo/jobs/seed001.ini" \
  --set target="$out/target" -o "$out/seed001.h5"
rmdir "$out/target" 2>/dev/null || true
echo "demo: results in $out/seed001.h5" >&2
