#!/usr/bin/env bash
# random_vs_fio.sh — herd's random-order read path against fio and IOR on a
# private tmpfs: random 4 KiB reads of one 1 GiB file, herd (1 rank, a read
# phase with access = random, verify = no) vs `fio --rw=randread --bs=4k
# --ioengine=psync` (one job) and, when an IOR binary is found (IOR=, or
# `ior` on PATH; IOR is not packaged in Debian 12: build it from
# github.com/hpc/ior), `ior -a POSIX -r -E -z` (one task). All read the same
# file, which herd writes once at the start (keep = yes), from the page
# cache, LOOPS times: herd `iterations`, each a fresh permutation of the
# blocks, fio `--loops`, each with its random map, IOR `-i`, each a shuffle
# of the offsets (every block once per loop, as herd).
# The tools take turns, the order changes every round; the table shows
# medians of REPEAT rounds, herd/peer and PASS/FAIL against TARGET
# (bench_util.py table). Needs root (it mounts a tmpfs; as another user it
# says SKIP and exits 0); exits 0 whatever the results, 2 when a tool is
# missing or a setting is wrong.
#
# Settings: REPEAT (5) WARMUP (1) SIZE (1G) BS (4K) LOOPS (4) TARGET (0.9)
# OUT (./bench-results-random) HERD (build/herd) IOR (ior on PATH, else none)
# MPIRUN_ARGS (--bind-to none).
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")

REPEAT=${REPEAT:-5}   # measured rounds
WARMUP=${WARMUP:-1}   # unmeasured rounds first
SIZE=${SIZE:-1G}      # the file
BS=${BS:-4K}          # bytes per read call
LOOPS=${LOOPS:-4}     # passes over the file per measurement
TARGET=${TARGET:-0.9} # herd/fio must be >= TARGET
OUT=${OUT:-./bench-results-random}
HERD=${HERD:-$ROOT/build/herd}
MPIRUN_ARGS=${MPIRUN_ARGS:---bind-to none} # fio is not pinned either
IOR=${IOR:-$(command -v ior || true)}

BENCH=random_vs_fio
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

bench_require_root "it mounts (and unmounts) a private tmpfs."
bench_require fio:fio mpirun:openmpi-bin mount:mount umount:mount
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || { warn "REPEAT must be a positive integer"; exit 2; }
[[ $WARMUP =~ ^[0-9]+$ ]] || { warn "WARMUP must be a non-negative integer"; exit 2; }
[[ $LOOPS =~ ^[1-9][0-9]*$ ]] || { warn "LOOPS must be a positive integer"; exit 2; }

SIZE_B=$(to_bytes "$SIZE")
BS_B=$(to_bytes "$BS")
[ $((SIZE_B % BS_B)) -eq 0 ] || { warn "SIZE must be a multiple of BS"; exit 2; }
UTIL="$PY $HERE/bench_util.py"
TMPFS_B=$((SIZE_B + 64 * 1048576))
avail_b=$(($(awk '/^MemAvailable:/ {print $2}' /proc/meminfo) * 1024))
if [ "$TMPFS_B" -gt $((avail_b * 8 / 10)) ]; then
    warn "tmpfs of $((TMPFS_B >> 20)) MiB would not fit in 80% of available memory"
    exit 2
fi

bench_workspace
bench_tmpfs "size=$TMPFS_B,mode=0755"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

RUN_ID=bench
FILE=$MNT/herd-$RUN_ID/rand/r000000.dat # herd's name for rank 0's file

# herd_job KIND EXTRA...: the job file for one phase on the shared file.
herd_job() {
    local kind=$1
    shift
    cat <<EOF
[global]
target = $MNT
run_id = $RUN_ID
keep = yes
sharing = unique
fileset = rand
pattern = random
file_size = $SIZE_B
block_size = $BS_B

[$kind]
kind = $kind
EOF
    printf '%s\n' "$@"
}

# The file, written once (sequentially) by herd.
herd_job write "fsync = no" >"$WORK/write.ini"
# shellcheck disable=SC2086
if ! mpirun --oversubscribe -np 1 $MPIRUN_ARGS "$HERD" run "$WORK/write.ini" -o "$WORK/write.h5" \
    --force >"$LOGS/herd-write.log" 2>&1; then
    warn "herd could not write the file, see $LOGS/herd-write.log"
    exit 2
fi
[ "$(stat -c %s "$FILE" 2>/dev/null)" = "$SIZE_B" ] || { warn "no $SIZE_B-byte $FILE"; exit 2; }
herd_job read "access = random" "verify = no" "iterations = $LOOPS" >"$WORK/read.ini"

# Each prints MiB/s on stdout, or nothing on failure (logged).
herd_rand() {
    local h5=$WORK/read.h5 log=$LOGS/herd-read-$1.log
    # shellcheck disable=SC2086
    if ! mpirun --oversubscribe -np 1 $MPIRUN_ARGS "$HERD" run "$WORK/read.ini" -o "$h5" \
        --force >"$log" 2>&1; then
        warn "herd failed, see $log"
        return
    fi
    cp "$h5" "$LOGS/herd-read-$1.h5" 2>/dev/null
    $UTIL herd "$h5" read $((SIZE_B * LOOPS)) 2>>"$log" || warn "herd results unusable, see $log"
}

fio_rand() {
    local log=$LOGS/fio-read-$1
    if ! fio --name=bench --filename="$FILE" --ioengine=psync --rw=randread --bs="$BS_B" \
        --size="$SIZE_B" --loops="$LOOPS" --numjobs=1 --group_reporting --invalidate=0 \
        --output-format=json --output="$log.json" >"$log.err" 2>&1; then
        warn "fio failed, see $log.*"
        return
    fi
    $UTIL fio "$log.json" read $((SIZE_B * LOOPS)) 2>>"$log.err" ||
        warn "fio results unusable, see $log.*"
}

# IOR: one task reads the whole file (-b SIZE, one segment) in random order
# (-z), LOOPS repetitions; MiB/s = bytes per repetition / mean time of one.
ior_rand() {
    local log=$LOGS/ior-read-$1
    # shellcheck disable=SC2086
    if ! mpirun --oversubscribe -np 1 $MPIRUN_ARGS "$IOR" -a POSIX -r -E -k -z -t "$BS_B" \
        -b "$SIZE_B" -s 1 -i "$LOOPS" -o "$FILE" -O summaryFormat=JSON \
        -O summaryFile="$log.json" >"$log.out" 2>&1; then
        warn "ior failed, see $log.*"
        return
    fi
    $PY -c 'import json, sys
s = [t for t in json.load(open(sys.argv[1]))["summary"] if t["operation"] == "read"][0]
print("%.1f" % (s["xsizeMiB"] / s["MeanTime"]))' "$log.json" 2>>"$log.out" ||
        warn "ior results unusable, see $log.*"
}

peers="fio"
if [ -n "$IOR" ] && [ -x "$IOR" ]; then
    peers="fio ior"
else
    IOR=
    say "IOR: not found (set IOR=/path/to/ior; Debian 12 has no package): herd vs fio only"
fi

echo "config,tool,round,mib_s,load1" >"$RAW"
record() { echo "$1,$2,$3,$4,$(cut -d' ' -f1 /proc/loadavg)" >>"$RAW"; }
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -n) kernel $(uname -r)"
    echo "cpu: $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), $(nproc) online"
    echo "herd: $HERD ($("$HERD" --version 2>&1 | head -1))"
    echo "fio: $(fio --version)"
    [ -z "$IOR" ] || echo "ior: $IOR"
    echo "params: REPEAT=$REPEAT WARMUP=$WARMUP SIZE=$SIZE_B BS=$BS_B LOOPS=$LOOPS" \
        "TARGET=$TARGET MPIRUN_ARGS='$MPIRUN_ARGS'"
    echo "file: $FILE on tmpfs $MNT size=$TMPFS_B"
} >"$OUT/env.txt"
cat "$OUT/env.txt"
say ""
say "random ${BS_B}-byte reads of a $((SIZE_B >> 20)) MiB file, $LOOPS pass(es), page cache"
say "rounds: $WARMUP warm-up + $REPEAT measured; herd, $peers take turns, order rotates per round"
say ""

# One table row per peer, each with herd's sample of the same round.
total=$((WARMUP + REPEAT))
tools=(herd $peers)
for ((round = 1; round <= total; round++)); do
    if [ "$round" -le "$WARMUP" ]; then label=warmup$round; rec=0; else label=$((round - WARMUP)); rec=1; fi
    line="round $label:"
    for ((k = 0; k < ${#tools[@]}; k++)); do
        who=${tools[$(((k + round) % ${#tools[@]}))]}
        v=$("${who}_rand" "$label")
        if [ "$rec" = 1 ]; then
            for peer in $peers; do
                if [ "$who" = herd ] || [ "$who" = "$peer" ]; then
                    record "randread bs=$BS np=1 vs $peer" "$who" "$label" "$v"
                fi
            done
        fi
        line+=" $who=${v:-ERR}"
    done
    say "$line"
done

say ""
say "medians of $REPEAT rounds (MiB/s = 2^20 bytes/s):"
$UTIL table "$RAW" "$CSV" "$TARGET" || warn "could not build the table from $RAW"
say ""
say "herd: sum(bytes) / (last rank's end - phase start), open and close included;"
say "fio: io_bytes / runtime; ior: bytes of a repetition / its mean time (open and close in)."
say "All: one process, pread of $BS_B bytes, each block once per pass."
say "results: $CSV (raw samples: $RAW, logs: $LOGS)"
exit 0
