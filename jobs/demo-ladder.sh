#!/usr/bin/env bash
# demo-ladder.sh — the second demo: "how many clients before it stalls",
# in one run. The seed-001 matrix as load ladders (jobs/seed001-ladder.ini:
# every phase with 1, 2, 4, ... ranks up to all) over NFS (libnfs, NFSv3)
# against the embedded userspace server on an xfs export, a monitor rank
# sampling the server every 200 ms, then herd-report: per ladder a load
# curve (throughput and p99 against active ranks, server CPU) and its knee.
# Without root it runs on a local directory instead and says so.
#   jobs/demo-ladder.sh            (HERD_DEMO_RANKS=8 by default)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${HERD_BUILD_DIR:-$repo/build}
ranks=${HERD_DEMO_RANKS:-8}
[[ "$ranks" =~ ^[1-9][0-9]*$ ]] || { echo "demo-ladder: HERD_DEMO_RANKS: '$ranks' is not a positive integer" >&2; exit 2; }
server=$repo/cluster-configs/local/nfs-server.sh
job=$repo/jobs/seed001-ladder.ini
[ -x "$build/herd" ] || "$repo/cluster-configs/local/install.sh"

out=${OUT:-$repo/results/demo-ladder-$(date -u +%Y%m%dT%H%M%S)}
mkdir -p "$out"
if [ "$(id -u)" -ne 0 ]; then
  echo "demo-ladder: not root, so no embedded NFS server: running on the local directory $out/target" >&2
  mkdir -p "$out/target"
  mpirun --oversubscribe -np "$ranks" "$build/herd" run "$job" --set target="$out/target" \
    -o "$out/ladder.h5"
  rmdir "$out/target" 2>/dev/null || true
else
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  state=$(mktemp -d /tmp/herd-demo-ladder.XXXXXX)
  trap '"$server" stop --state "$state" --purge >/dev/null 2>&1 || true' EXIT INT TERM
  "$server" start --state "$state" --fs xfs --size 2G >"$state.start"
  url=$(sed -n 1p "$state.start")
  rm -f "$state.start"
  echo "demo-ladder: xfs export at $url; ladders up to $ranks ranks, one more rank monitoring" >&2
  rc=0
  "$server" exec --state "$state" -- mpirun --oversubscribe -np $((ranks + 1)) "$build/herd" run \
    "$job" --set backend=libnfs --set target="$url" --set monitor_rank=last \
    --set monitor_interval=200ms -o "$out/ladder.h5" || rc=$?
  [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || { echo "demo-ladder: herd failed ($rc)" >&2; exit "$rc"; }
fi
/usr/bin/python3 "$repo/analysis/herd-report" "$out/ladder.h5" -o "$out/report"
echo "demo-ladder: results in $out/ladder.h5, report (load curves, knees) in $out/report/index.html" >&2
