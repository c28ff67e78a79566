#!/usr/bin/env bash
# demo.sh — the README's first command: install what is missing, build,
# then run the seed-001 matrix (unique and same file x 16M and 32M x write,
# read, md5) with 8 ranks over NFS (libnfs, NFSv3) against the embedded
# userspace server, once on an xfs export and once on an ext4 export, and
# print the two runs side by side, as the seed compared xfs with reiserfs,
# with the server's CPU per phase from a monitor rank.
# Without root (no loop mounts, no namespaces) it runs on a local directory
# instead and says so. jobs/demo.sh --check prints the job it runs (herd
# check: phases, iterations, bytes) and runs nothing.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${HERD_BUILD_DIR:-$repo/build}
ranks=${HERD_DEMO_RANKS:-8}
server=$repo/cluster-configs/local/nfs-server.sh
# One pass over a 16M or 32M file takes 0.1 to 1 s against the embedded
# server on a 2-CPU machine, too short to mean anything, so each phase
# repeats its file (iterations) until it lasts about 1 to 5 s: the whole
# demo takes about 2 minutes after the install (README's quick start).
iterations=(
  write-unique-16M=4 read-unique-16M=16 md5-unique-16M=4
  write-same-16M=8 read-same-16M=20 md5-same-16M=5
  write-unique-32M=3 read-unique-32M=8 md5-unique-32M=3
  write-same-32M=3 read-same-32M=12 md5-same-32M=3
)
sets=()
for p in "${iterations[@]}"; do sets+=(--set "${p%%=*}.iterations=${p#*=}"); done
case "${1:-}" in
  "") ;;
  --check) exec "$build/herd" check "$repo/jobs/seed001.ini" "${sets[@]}" -n "$ranks" ;;
  *) echo "demo: unknown argument '$1' (usage: jobs/demo.sh [--check])" >&2; exit 2 ;;
esac
"$repo/cluster-configs/local/install.sh"

out=$repo/results/demo-$(date -u +%Y%m%dT%H%M%S)
mkdir -p "$out"
mpirun_args=(--oversubscribe -np "$ranks")
if [ "$(id -u)" -ne 0 ]; then
  echo "demo: not root, so no embedded NFS server: running on the local directory $out/target" >&2
  mkdir -p "$out/target"
  mpirun "${mpirun_args[@]}" "$build/herd" run "$repo/jobs/seed001.ini" "${sets[@]}" \
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
    "$repo/jobs/seed001.ini" "${sets[@]}" --set backend=libnfs --set target="$url" \
    --set monitor_rank=last --set monitor_interval=200ms \
    --set monitor_disks="${loopdev##*/}" -o "$out/$fs.h5" || rc=$?
  [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || { echo "demo: herd failed on $fs ($rc)" >&2; exit "$rc"; }
done

echo
echo "seed-001 matrix, $ranks ranks over NFS: xfs export vs ext4 export (ratio = MiB/s vs xfs)"
echo "one run per export: each ratio is one sample (n=1), which the verdict below marks within noise;"
echo "run the demo again, then analysis/herd-compare results/demo-*/xfs.h5 results/demo-*/ext4.h5"
echo "--label fstype tells a difference from noise (the runs' spread per export)"
/usr/bin/python3 "$repo/analysis/herd-compare" "$out/xfs.h5" "$out/ext4.h5" --label file
echo
echo "demo: results in $out/xfs.h5 and $out/ext4.h5" >&2
echo "demo: the seed's locks and open storm, xfs vs ext4 over NLM: jobs/seed001-locks.sh [--grace N]" >&2
