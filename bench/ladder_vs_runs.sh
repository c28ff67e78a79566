#!/usr/bin/env bash
# ladder_vs_runs.sh — does a load ladder cost no more than the separate
# runs it replaces? On the virtual cluster (cluster-configs/virtual:
# CLIENTS hosts x SLOTS ranks, libnfs to its embedded server), one run with
# `ranks_active = STEPS` (default 1,5,10,20) against one run per step count
# (mpirun -np N of the same phase): wall time of everything (mpirun start
# to end, the ladder once vs the sum of the separate runs; ratio expected
# well under 1: MPI starts once) and each step's MiB/s beside the separate
# run's, REPEAT rounds alternating, medians. Needs root (namespaces); exits
# 0 whatever the numbers, 2 when a tool or setting is missing.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
REPEAT=${REPEAT:-3}
STEPS=${STEPS:-1,5,10,20}
CLIENTS=${CLIENTS:-4}
SLOTS=${SLOTS:-5}
SIZE=${SIZE:-16M}
ITER=${ITER:-4}
OUT=${OUT:-./bench-results/ladder}
HERD=${HERD:-$ROOT/build/herd}
VCLUSTER=$ROOT/cluster-configs/virtual/vcluster.sh

BENCH=ladder_vs_runs
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
bench_require_root "the virtual cluster uses network namespaces and a loop device."
bench_require mpirun:openmpi-bin ganesha.nfsd:nfs-ganesha
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || { warn "REPEAT must be a positive integer"; exit 2; }
[[ $STEPS =~ ^[0-9]+(,[0-9]+)*$ ]] || { warn "STEPS must be rising rank counts, e.g. 1,5,10,20"; exit 2; }
total=$((CLIENTS * SLOTS))
bench_workspace
state=$WORK/vc
cleanup() { bash "$VCLUSTER" down --state "$state" >/dev/null 2>&1; bench_cleanup; }
trap cleanup EXIT INT TERM
bash "$VCLUSTER" up --state "$state" --clients "$CLIENTS" --slots "$SLOTS" --server-size 2G \
    >"$WORK/up" 2>"$LOGS/up.log" || { warn "vcluster up failed, see $LOGS/up.log"; exit 2; }
url=$(tail -1 "$WORK/up")

job() { # job FILE EXTRA_READ_KEY
    cat >"$1" <<JOB
[global]
backend = libnfs
target = $url
file_size = $SIZE
block_size = 1M
fsync = no
[write]
kind = write
[read]
kind = read
iterations = $ITER
$2
JOB
}
job "$WORK/ladder.ini" "ranks_active = $STEPS"
job "$WORK/single.ini" ""
run() { # run NP INI OUT: mpirun on the cluster's hostfile; prints wall seconds
    local t0 t1
    t0=$(date +%s%N)
    bash "$VCLUSTER" exec --state "$state" -- bash -c \
        'mpirun $HERD_MPIRUN_ARGS --hostfile "$HERD_HOSTFILE" -np "$1" "$2" run "$3" -o "$4"' \
        _ "$1" "$HERD" "$2" "$3" >"$3.log" 2>&1 || { warn "herd failed: $3.log"; return 1; }
    t1=$(date +%s%N)
    echo "scale=3; ($t1 - $t0) / 1000000000" | bc
}
mibs() { "$PY" -c '
import h5py, sys
with h5py.File(sys.argv[1], "r") as f:
    print(float(f["phases"][sys.argv[2]].attrs["summary_mib_per_s"]))' "$1" "$2"; }

echo "config,round,seconds" >"$RAW"
IFS=, read -r -a counts <<<"$STEPS"
for n in "${counts[@]}"; do
    ((n <= total)) || { warn "step $n > the cluster's $total ranks"; exit 2; }
done
say "ladder $STEPS in one run vs ${#counts[@]} runs, $CLIENTS hosts x $SLOTS ranks, $SIZE x $ITER reads, REPEAT=$REPEAT"
for round in $(seq 1 "$REPEAT"); do
    order=(ladder separate)
    ((round % 2 == 0)) && order=(separate ladder)
    for who in "${order[@]}"; do
        if [ "$who" = ladder ]; then
            s=$(run "$total" "$WORK/ladder.ini" "$WORK/ladder-$round.h5") || exit 1
            echo "wall-all-steps,ladder,$round,$s" >>"$RAW.wall"
            for n in "${counts[@]}"; do
                echo "step-${n}r,ladder,$round,$(mibs "$WORK/ladder-$round.h5" "read.${n}r")" >>"$RAW.mib"
            done
        else
            sum=0
            for n in "${counts[@]}"; do
                s=$(run "$n" "$WORK/single.ini" "$WORK/single-$n-$round.h5") || exit 1
                sum=$(echo "$sum + $s" | bc)
                echo "step-${n}r,separate,$round,$(mibs "$WORK/single-$n-$round.h5" read)" >>"$RAW.mib"
            done
            echo "wall-all-steps,separate,$round,$sum" >>"$RAW.wall"
        fi
    done
done
"$PY" - "$RAW.wall" "$RAW.mib" <<'PY'
import csv, statistics, sys
def load(p):
    d = {}
    for cfg, who, rnd, v in csv.reader(open(p)):
        d.setdefault(cfg, {}).setdefault(who, []).append(float(v))
    return d
wall = load(sys.argv[1])["wall-all-steps"]
l, s = statistics.median(wall["ladder"]), statistics.median(wall["separate"])
print(f"wall time of all steps: ladder {l:.1f} s, separate runs {s:.1f} s, ratio {l / s:.2f} "
      f"(target < 1)")
print(f"{'step':10} {'ladder MiB/s':>13} {'separate MiB/s':>15} {'ratio':>6}   ranges")
for cfg, d in load(sys.argv[2]).items():
    a, b = statistics.median(d["ladder"]), statistics.median(d["separate"])
    print(f"{cfg:10} {a:13.1f} {b:15.1f} {a / b:6.2f}   "
          f"{min(d['ladder']):.0f}-{max(d['ladder']):.0f} / {min(d['separate']):.0f}-{max(d['separate']):.0f}")
PY
exit 0
