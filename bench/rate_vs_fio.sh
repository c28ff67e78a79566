#!/usr/bin/env bash
# rate_vs_fio.sh — herd's open-loop schedule (`rate`, `arrivals = poisson`)
# against fio's `rate_iops` with `rate_process=poisson`, side by side on a
# private tmpfs: one process (herd 1 rank, fio 1 job) reads a SIZE file in
# page cache with BS pread calls (psync), ACCESS order (random: herd
# `access = random`, fio `--rw=randread`; sequential: `--rw=read`), offering
# each rate of RATES calls/s for DURATION s (herd: `deadline`, enough
# `iterations` to fill it; fio: `--time_based --runtime`). Compared per
# rate: the achieved rate (herd's pace.achieved_per_s, fio's read.iops),
# and the call's latency percentiles p50/p99 (herd's service: from the
# call's send to its end; fio's clat: from the I/O's submission to its
# completion, which for psync is the same pread); herd's lag and response
# (from the intended instant, which fio does not measure) beside.
# The file is written once by herd (keep = yes). Rounds alternate herd and
# fio (the order flips every round); the table shows medians of REPEAT
# rounds, their min-max and herd/fio. Beside every run a probe, the timer of
# bench/pace_peer.c alone at PROBE_RATE/s, records the machine's own
# wake-up delays in the same seconds. See bench/README.md. Needs root (it
# mounts a tmpfs; as another user it says SKIP and exits 0); exits 0
# whatever the numbers, 2 when a tool is missing or a setting is wrong.
#
# Settings: REPEAT (3) WARMUP (0) RATES ("500 2000") DURATION (10) SIZE
# (64M) BS (4K) ACCESS (random) PROBE_RATE (1000) OUT
# (./bench-results-rate-fio) HERD (build/herd) HERD_REV (what env.txt says the
# binary was built from) MPIRUN_ARGS (--bind-to none).
# shellcheck disable=SC2317 # herd_read and fio_read are called by name ("${who}_read")
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")

REPEAT=${REPEAT:-3}          # measured rounds
WARMUP=${WARMUP:-0}          # unmeasured rounds first
RATES=${RATES:-"500 2000"}   # calls/s offered
DURATION=${DURATION:-10}     # seconds per run
SIZE=${SIZE:-64M}            # the file (in page cache)
BS=${BS:-4K}                 # bytes per call
ACCESS=${ACCESS:-random}     # random or sequential
OUT=${OUT:-./bench-results-rate-fio}
HERD=${HERD:-$ROOT/build/herd}
MPIRUN_ARGS=${MPIRUN_ARGS:---bind-to none} # fio is not pinned either
PROBE_RATE=${PROBE_RATE:-1000} # the timer probe beside every run (0: none)

BENCH=rate_vs_fio
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

bench_require_root "it mounts (and unmounts) a private tmpfs."
bench_require fio:fio mpirun:openmpi-bin cc:gcc mount:mount umount:mount
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || { warn "REPEAT must be a positive integer"; exit 2; }
[[ $WARMUP =~ ^[0-9]+$ ]] || { warn "WARMUP must be a non-negative integer"; exit 2; }
[[ $DURATION =~ ^[1-9][0-9]*$ ]] || { warn "DURATION must be a positive integer (seconds)"; exit 2; }
for r in $RATES; do
    [[ $r =~ ^[1-9][0-9]*$ ]] || { warn "RATES must be positive integers (fio's rate_iops), not '$r'"; exit 2; }
done
case $ACCESS in
random) FIO_RW="randread" ;;
sequential) FIO_RW="read" ;;
*) warn "ACCESS must be random or sequential"; exit 2 ;;
esac
SIZE_B=$(to_bytes "$SIZE")
BS_B=$(to_bytes "$BS")
if [ "$BS_B" -eq 0 ] || [ $((SIZE_B % BS_B)) -ne 0 ] || [ "$SIZE_B" -lt "$BS_B" ]; then
    warn "SIZE must be a non-zero multiple of BS"
    exit 2
fi
UTIL="$PY $HERE/rate_util.py"
TMPFS_B=$((SIZE_B + 64 * 1048576))
avail_b=$(($(awk '/^MemAvailable:/ {print $2}' /proc/meminfo) * 1024))
if [ "$TMPFS_B" -gt $((avail_b * 8 / 10)) ]; then
    warn "tmpfs of $((TMPFS_B >> 20)) MiB would not fit in 80% of available memory"
    exit 2
fi

bench_workspace
bench_tmpfs "size=$TMPFS_B,mode=0755"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
bench_pace_peer

RUN_ID=bench
FILE=$MNT/herd-$RUN_ID/rate/r000000.dat # herd's name for rank 0's file

# herd_job KIND EXTRA...: the job file for one phase on the kept file.
herd_job() {
    local kind=$1
    shift
    cat <<EOF
[global]
target = $MNT
run_id = $RUN_ID
keep = yes
sharing = unique
fileset = rate
pattern = random
file_size = $SIZE_B
block_size = $BS_B

[$kind]
kind = $kind
EOF
    printf '%s\n' "$@"
}

herd_job write "fsync = no" >"$WORK/write.ini"
# shellcheck disable=SC2086
if ! mpirun --oversubscribe -np 1 $MPIRUN_ARGS "$HERD" run "$WORK/write.ini" -o "$WORK/write.h5" \
    --force >"$LOGS/herd-write.log" 2>&1; then
    warn "herd could not write the file, see $LOGS/herd-write.log"
    exit 2
fi
[ "$(stat -c %s "$FILE" 2>/dev/null)" = "$SIZE_B" ] || { warn "no $SIZE_B-byte $FILE"; exit 2; }

# iterations that fill DURATION at RATE, and one more
iters() { awk -v r="$1" -v d="$DURATION" -v b=$((SIZE_B / BS_B)) \
    'BEGIN { n = r * d / b; printf "%d\n", (n == int(n) ? n : int(n) + 1) + 1 }'; }

# Each prints a rate_util sample row, or nothing on failure (logged).
# herd_read RATE LABEL SEED
herd_read() {
    local r=$1 log=$LOGS/herd-read-$1ps-$2 job=$WORK/read.ini
    herd_job read "access = $ACCESS" "verify = no" "seed = $3" "rate = $r" "arrivals = poisson" \
        "iterations = $(iters "$r")" "deadline = ${DURATION}s" >"$job"
    cp "$job" "$log.ini"
    local ok=1 row=''
    bench_probe_start "$log.probe" $((DURATION + 120))
    # shellcheck disable=SC2086
    mpirun --oversubscribe -np 1 $MPIRUN_ARGS "$HERD" run "$job" -o "$log.h5" --force \
        --json "$log.json" -q >"$log.log" 2>&1 || ok=0
    bench_probe_stop
    if [ "$ok" = 0 ]; then
        warn "herd failed ($r/s), see $log.log"
    else
        row=$($UTIL herd "$log.json" read 2>>"$log.log") || warn "herd results unusable, see $log.log"
    fi
    [ -z "$row" ] || echo "$row,$PROBE"
}

# fio_read RATE LABEL SEED
fio_read() {
    local r=$1 log=$LOGS/fio-read-$1ps-$2 ok=1 row=''
    bench_probe_start "$log.probe" $((DURATION + 120))
    fio --name=bench --filename="$FILE" --ioengine=psync --rw="$FIO_RW" --bs="$BS_B" \
        --size="$SIZE_B" --numjobs=1 --invalidate=0 --rate_iops="$r" --rate_process=poisson \
        --time_based --runtime="$DURATION" --randseed="$3" --output-format=json \
        --output="$log.json" >"$log.err" 2>&1 || ok=0
    bench_probe_stop
    if [ "$ok" = 0 ]; then
        warn "fio failed ($r/s), see $log.*"
    else
        row=$($UTIL fio "$log.json" 2>>"$log.err") || warn "fio results unusable, see $log.*"
    fi
    [ -z "$row" ] || echo "$row,$PROBE"
}

cols="offered_per_s,achieved_per_s,achieved_over_offered,achieved_share,calls,due,late"
cols+=",lag_p50_us,lag_p99_us,lag_max_us,service_p50_us,service_p99_us,response_p50_us"
cols+=",response_p99_us,herd_limited,call_p50_us,call_p99_us,probe_lag_p99_us,probe_lag_max_us"
echo "config,tool,round,$cols,load1" >"$RAW"
record() {
    local row=$4
    [ -n "$row" ] || row=$(printf '%*s' "$(tr -cd , <<<"$cols" | wc -c)" '' | tr ' ' ',')
    echo "$1,$2,$3,$row,$(cut -d' ' -f1 /proc/loadavg)" >>"$RAW"
}
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -n) kernel $(uname -r)"
    echo "cpu: $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), $(nproc) online"
    echo "herd: $HERD ($("$HERD" --version 2>&1 | head -1)), built from ${HERD_REV:-the checkout, $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)}"
    echo "fio: $(fio --version)"
    echo "params: REPEAT=$REPEAT WARMUP=$WARMUP RATES='$RATES' DURATION=$DURATION SIZE=$SIZE_B" \
        "BS=$BS_B ACCESS=$ACCESS PROBE_RATE=$PROBE_RATE MPIRUN_ARGS='$MPIRUN_ARGS'"
    echo "file: $FILE on tmpfs $MNT size=$TMPFS_B"
    echo "load before: $(cat /proc/loadavg)"
} >"$OUT/env.txt"
cat "$OUT/env.txt"
say ""
say "$ACCESS ${BS_B}-byte preads of a $((SIZE_B >> 20)) MiB file in page cache, 1 process," \
    "Poisson arrivals at $RATES calls/s, ${DURATION} s each"
say "rounds: $WARMUP warm-up + $REPEAT measured; herd and fio alternate, order flips per round"
say ""

total=$((WARMUP + REPEAT))
for ((round = 1; round <= total; round++)); do
    if [ "$round" -le "$WARMUP" ]; then label=warmup$round; rec=0; else label=$((round - WARMUP)); rec=1; fi
    if ((round % 2)); then order="herd fio"; else order="fio herd"; fi
    line="round $label:"
    for r in $RATES; do
        for who in $order; do
            row=$("${who}_read" "$r" "$label" "$round")
            [ "$rec" = 1 ] && record "$FIO_RW ${BS} ${r}/s" "$who" "$label" "$row"
            IFS=, read -r _ ach _ _ _ _ _ _ _ _ p50 p99 _ <<<"$row"
            line+=" $who ${r}/s ${ach:-ERR}/s p50=${p50:-ERR}us p99=${p99:-ERR}us;"
        done
    done
    say "$line"
done

say ""
say "medians of $REPEAT rounds (min-max); calls/s and microseconds:"
$UTIL vsfio "$RAW" "$CSV" || warn "could not build the table from $RAW"
say ""
say "achieved: herd pace.achieved_per_s (calls / the client's time), fio read.iops (ios / runtime)."
say "service p50/p99: herd from a call's send to its end; fio clat: submission to completion (psync:"
say "the same pread). herd's lag (its own delay after the intended instant) and response (from the"
say "intended instant: what the caller waits) have no fio counterpart. Both use histogram buckets."
say "probe: the lag p99/max of a timer at ${PROBE_RATE}/s beside each run (the machine's own wake-ups)."
say "results: $CSV (raw samples: $RAW, logs: $LOGS)"
exit 0
