#!/usr/bin/env bash
# demo.sh — the README's first command: install what is missing, build,
# then run the seed-001 matrix (unique and same file x 16M and 32M x write,
# read, md5) with 8 ranks over NFS (libnfs, NFSv3) against the embedded
# userspace server, once on an xfs export and once on an ext4 export, and
# print the two runs side by side, as the seed compared xfs with reiserfs,
# with the server's CPU per phase from a monitor rank.
# Without root (no loop mounts, no namespaces) it runs on a local directory
# instead and says so.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${HERD_BUILD_DIR:-$repo/build}
ranks=${HERD_DEMO_RANKS:-8}
server=$repo/cluster-configs/local/nfs-server.sh
"$repo/cluster-configs/local/install.sh"

out=$repo/results/demo-$(date -u +%Y%m%dT%H%M%S)
mkdir -p "$out"
mpirun_args=(--oversubscribe -np "$ranks")
if [ "$(id -u)" -ne 0 ]; then
  echo "demo: not root, so no embedded NFS server: running on the local directory $out/target" >&2
  mkdir -p "$out/target"
  mpirun "${mpirun_args[@]}" "$build/herd" run "$repo/jobs/seed001.ini" \
    --set target="$out/target" -o "$out/local.h5"
  rmdir "$out/target" 2>/dev/null || true
  echo "demo: results in $out/local.h5" >&2
  exit 0
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

states=()
cleanup() {
  for s in "${states[@]}"; do "$server" stop --state "$s" --purge >/dev/null 2>&1 || true; done
}
trap cleanup EXIT INT TERM

for fs in xfs ext4; do
  state=$(mktemp -d "/tmp/herd-demo-$fs.XXXXXX")
  states+=("$state")
  "$server" start --state "$state" --fs "$fs" --size 2G >"$state.start"
  url=$(sed -n 1p "$state.start")
  rm -f "$state.start"
  echo "demo: $fs export at $url; $ranks ranks, seed-001 matrix over libnfs" >&2
  rc=0
  # One more rank samples the server side (this machine: ganesha's CPU,
  # the loop device under the export) every 200 ms; its table follows the
  # summary.
  loopdev=$(losetup -j "$state/image.img" | cut -d: -f1)
  "$server" exec --state "$state" -- mpirun --oversubscribe -np $((ranks + 1)) "$build/herd" run \
    "$repo/jobs/seed001.ini" --set backend=libnfs --set target="$url" \
    --set monitor_rank=last --set monitor_interval=200ms \
    --set monitor_disks="${loopdev##*/}" -o "$out/$fs.h5" || rc=$?
  [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || { echo "demo: herd failed on $fs ($rc)" >&2; exit "$rc"; }
done

echo
echo "seed-001 matrix, $ranks ranks over NFS: xfs export vs ext4 export (ratio = MiB/s vs xfs)"
/usr/bin/python3 "$repo/analysis/herd-compare" "$out/xfs.h5" "$out/ext4.h5" --label file
echo
echo "demo: results in $out/xfs.h5 and $out/ext4.h5" >&2
echo "demo: the seed's locks and open storm, xfs vs ext4 over NLM: jobs/seed001-locks.sh [--grace N]" >&2
