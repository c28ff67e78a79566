#!/usr/bin/env bash
# smoke.sh HERD — run every phase kind once with 3 ranks (a sanitizer
# build of herd), then again with a monitor rank sampling every 50 ms: any
# AddressSanitizer or UBSan report fails the test.
# MPI's own allocations are not herd's leaks, so leak detection is off here
# (the unit tests keep it on).
set -euo pipefail
herd=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/herd-smoke.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/target"
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
mpirun -x ASAN_OPTIONS -x UBSAN_OPTIONS --oversubscribe -np 3 "$herd" run "$here/smoke.ini" \
  --set target="$work/target" -o "$work/smoke.h5" >"$work/out" 2>&1 || { cat "$work/out"; exit 1; }
if grep -E "ERROR: AddressSanitizer|runtime error" "$work/out"; then exit 1; fi
[ -z "$(ls -A "$work/target")" ] || { echo "smoke: herd left files in the target"; exit 1; }
mpirun -x ASAN_OPTIONS -x UBSAN_OPTIONS --oversubscribe -np 4 "$herd" run "$here/smoke.ini" \
  --set target="$work/target" --set monitor_rank=last --set monitor_interval=50ms \
  --set monitor_processes=herd,nfsd --set monitor_disks=/,loop0 \
  -o "$work/monitor.h5" >"$work/out" 2>&1 || { cat "$work/out"; exit 1; }
if grep -E "ERROR: AddressSanitizer|runtime error" "$work/out"; then exit 1; fi
echo "smoke: every phase kind ran clean under the sanitizers, with and without a monitor"
