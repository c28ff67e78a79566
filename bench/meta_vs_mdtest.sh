#!/usr/bin/env bash
# meta_vs_mdtest.sh — herd's metadata rates per step against mdtest's, side
# by side on a private tmpfs: one herd meta phase (meta_ops = create, stat,
# unlink, rmdir; the items/s of each step in op_summary, as mdtest times
# its steps) against `mdtest -n N -F -C -T -r -u` (file creation, stat,
# removal; each task in its own directory) with the same files per rank
# and rank counts. mdtest is not packaged in Debian 12: set MDTEST= to its
# binary, or have it on PATH (build it from github.com/hpc/ior:
# ./bootstrap && ./configure && make; it is src/mdtest). Each configuration
# runs REPEAT times, herd and mdtest alternating (the order flips every
# round); the table shows medians, herd/mdtest and PASS/FAIL against
# TARGET. Needs root (a private tmpfs; as another user it says SKIP and
# exits 0); exits 0 whatever the results, 2 when a tool is missing or a
# setting is wrong. See bench/README.md.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")

REPEAT=${REPEAT:-5}    # measured rounds per configuration
WARMUP=${WARMUP:-1}    # unmeasured rounds first
FILES=${FILES:-100000} # files per configuration, all ranks together
RANKS=${RANKS:-"1 2"}  # rank (mdtest task) counts
TARGET=${TARGET:-0.9}  # herd/mdtest must be >= TARGET
OUT=${OUT:-./bench-results/mdtest}
HERD=${HERD:-$ROOT/build/herd}
MDTEST=${MDTEST:-$(command -v mdtest || true)}
MPIRUN_ARGS=${MPIRUN_ARGS-"--bind-to none"}
SETTLE=${SETTLE:-1} # seconds to wait after deleting a run's files

BENCH=meta_vs_mdtest
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

bench_require_root "it mounts a private tmpfs."
bench_require mpirun:openmpi-bin mount:mount umount:mount
if [ -z "$MDTEST" ] || [ ! -x "$MDTEST" ]; then
    warn "mdtest not found: set MDTEST=/path/to/mdtest (Debian 12 has no package; build it from" \
        "github.com/hpc/ior: ./bootstrap && ./configure && make, then src/mdtest)"
    exit 2
fi
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || { warn "REPEAT must be a positive integer"; exit 2; }
[[ $WARMUP =~ ^[0-9]+$ ]] || { warn "WARMUP must be a non-negative integer"; exit 2; }
[[ $FILES =~ ^[1-9][0-9]*$ ]] || { warn "FILES must be a positive integer"; exit 2; }
[[ $SETTLE =~ ^[0-9]+$ ]] || { warn "SETTLE must be a non-negative integer"; exit 2; }
for n in $RANKS; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || { warn "bad RANKS entry '$n'"; exit 2; }
    [ $((FILES / n)) -ge 1 ] && [ $((FILES / n)) -le 999999 ] ||
        { warn "FILES / ranks must be 1..999999 (herd names files f%06d)"; exit 2; }
done

bench_workspace # OUT, LOGS, RAW, CSV, WORK, MNT; bench_cleanup at exit
bench_tmpfs "size=256M,nr_inodes=$((2 * FILES + 10000)),mode=0755"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
U() { PYTHONPATH="$HERE" "$PY" "$HERE/meta_util.py" "$@"; }

fresh() {
    find "$MNT" -mindepth 1 -maxdepth 1 -exec rm -rf {} + 2>/dev/null
    sleep "$SETTLE"
}

# herd: one meta phase; prints "create stat removal" items/s (op_summary's
# items_per_s of open, stat, unlink).
herd_steps() {
    local n=$1 job=$WORK/meta.ini h5=$WORK/meta.h5 log=$LOGS/herd-np$1-$2.log
    cat >"$job" <<EOF
[global]
target = $MNT
fileset = m
sharing = unique
file_size = 0
fsync = no
dirs = 1
files = $((FILES / n))

[meta]
kind = meta
meta_ops = create,stat,unlink,rmdir
EOF
    fresh
    # shellcheck disable=SC2086
    if ! mpirun --oversubscribe -np "$n" $MPIRUN_ARGS "$HERD" run "$job" -o "$h5" --force \
        >"$log" 2>&1; then
        warn "herd failed (np=$n), see $log"
        return
    fi
    U steps "$h5" meta $((FILES / n * n)) 2>>"$log" || warn "herd results unusable (np=$n), see $log"
}

# mdtest: files only (-F), create, stat, remove (-C -T -r), one directory
# per task (-u); prints "create stat removal" from its SUMMARY rate table.
mdtest_steps() {
    local n=$1 log=$LOGS/mdtest-np$1-$2.log
    fresh
    # shellcheck disable=SC2086
    if ! mpirun --oversubscribe -np "$n" $MPIRUN_ARGS "$MDTEST" -n $((FILES / n)) -F -C -T -r -u \
        -d "$MNT/mdtest" >"$log" 2>&1; then
        warn "mdtest failed (np=$n), see $log"
        return
    fi
    U mdtest "$log" 2>>"$log" || warn "mdtest results unusable (np=$n), see $log"
}

echo "config,tool,round,ops_s,load1" >"$RAW"
record() { # config tool round rate
    echo "$1,$2,$3,$4,$(cut -d' ' -f1 /proc/loadavg)" >>"$RAW"
}
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -n) kernel $(uname -r), $(nproc) cpus"
    echo "herd: $HERD ($("$HERD" --version 2>&1 | head -1))"
    echo "mdtest: $MDTEST ($(mpirun --oversubscribe -np 1 "$MDTEST" --version 2>&1 | head -1))"
    echo "params: REPEAT=$REPEAT WARMUP=$WARMUP FILES=$FILES RANKS='$RANKS' TARGET=$TARGET" \
        "MPIRUN_ARGS='$MPIRUN_ARGS'"
    echo "tmpfs: $(findmnt -n -o SOURCE,FSTYPE,OPTIONS "$MNT")"
} >"$OUT/env.txt"
cat "$OUT/env.txt"
say ""

for ((round = 1; round <= WARMUP + REPEAT; round++)); do
    label=$((round - WARMUP))
    [ "$round" -le "$WARMUP" ] && label=warmup$round
    if ((round % 2)); then order="herd mdtest"; else order="mdtest herd"; fi
    for n in $RANKS; do
        line="round $label np=$n:"
        for who in $order; do
            bench_meta_steps "$who" "$n" "$label" "np=$n"
        done
        say "$line"
    done
done

sorted=$WORK/raw-sorted.csv
{
    head -1 "$RAW"
    for n in $RANKS; do
        for op in create stat removal; do grep "^$op np=$n," "$RAW"; done
    done
} >"$sorted"
say ""
say "medians of $REPEAT rounds (items/s, all ranks / tasks together):"
U table "$sorted" "$CSV" "$TARGET" || warn "could not build the table from $RAW"
say ""
say "herd: op_summary items_per_s (a step's successful calls of all ranks / the first rank's start"
say "to the last rank's end of that step; create includes making the rank's 4 directories)."
say "mdtest: its SUMMARY rate Mean (one iteration: items / the step's time between barriers)."
say "results: $CSV (raw samples: $RAW, logs: $LOGS)"
exit 0
