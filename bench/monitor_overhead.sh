#!/usr/bin/env bash
# monitor_overhead.sh — what the server monitor costs the I/O ranks: the
# same write and read phases (RANKS I/O ranks, FILE_SIZE each, on a private
# tmpfs) with a monitor rank sampling every INTERVAL (monitor_rank = last,
# one more MPI rank, on this same machine, with the default process list
# plus herd's own ranks) and without one, alternating, REPEAT times each.
# The table gives the median MiB/s of both and the ratio monitored /
# unmonitored (target >= 0.95: within noise). Needs root for the tmpfs (as
# another user it says SKIP and exits 0); exits 0 whatever the results, 2
# when a tool is missing or a setting is wrong.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")

REPEAT=${REPEAT:-11}           # measured runs per variant (tmpfs writes on few cores are noisy)
RANKS=${RANKS:-2}              # I/O ranks
FILE_SIZE=${FILE_SIZE:-1G}     # per rank
INTERVAL=${INTERVAL:-100ms}    # monitor_interval
OUT=${OUT:-./bench-results/monitor_overhead}
HERD=${HERD:-$ROOT/build/herd}
MPIRUN_ARGS=${MPIRUN_ARGS-"--bind-to none"}

BENCH=monitor_overhead
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

bench_require_root "it mounts (and unmounts) a private tmpfs."
bench_require mpirun:openmpi-bin mount:mount umount:mount
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || { warn "REPEAT must be a positive integer"; exit 2; }
[[ $RANKS =~ ^[1-9][0-9]*$ ]] || { warn "RANKS must be a positive integer"; exit 2; }
BYTES=$(to_bytes "$FILE_SIZE")

bench_workspace
bench_tmpfs "size=$(( (BYTES * RANKS) / 1048576 + 256 ))M,mode=0755"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

job() { # job FILE MONITOR(yes|no)
    {
        echo "[global]"
        echo "target = $MNT"
        echo "file_size = $FILE_SIZE"
        if [ "$2" = yes ]; then
            echo "monitor_rank = last"
            echo "monitor_interval = $INTERVAL"
            echo "monitor_processes = ganesha.nfsd,nfsd,herd"
        fi
        echo "[write]"
        echo "kind = write"
        echo "[read]"
        echo "kind = read"
    } >"$1"
}
job "$WORK/plain.ini" no
job "$WORK/monitored.ini" yes

echo "config,tool,round,mib_s" >"$RAW"
say "monitor overhead: $RANKS I/O ranks x $FILE_SIZE on tmpfs, monitor every $INTERVAL, REPEAT=$REPEAT"
for round in $(seq 1 "$REPEAT"); do
    # Alternate which variant goes first, so drift hits both alike.
    if [ $((round % 2)) = 1 ]; then order="monitored plain"; else order="plain monitored"; fi
    for v in $order; do
        np=$RANKS
        [ "$v" = monitored ] && np=$((RANKS + 1))
        res=$WORK/$v-$round.h5
        # shellcheck disable=SC2086
        if ! mpirun --oversubscribe $MPIRUN_ARGS -np "$np" "$HERD" run "$WORK/$v.ini" -o "$res" \
            >"$LOGS/$v-$round.log" 2>&1; then
            warn "herd failed ($v, round $round); see $LOGS/$v-$round.log"
            exit 2
        fi
        tool=herd
        [ "$v" = plain ] && tool=no-monitor
        for phase in write read; do
            mib=$("$PY" "$HERE/bench_util.py" herd "$res" "$phase" $((BYTES * RANKS)) 2>>"$LOGS/$v-$round.log") ||
                { warn "bad result ($v, $phase, round $round)"; exit 2; }
            echo "$phase np$RANKS,$tool,$round,$mib" >>"$RAW"
        done
        if [ "$v" = monitored ]; then
            "$PY" -c 'import h5py,sys; f=h5py.File(sys.argv[1]); print("samples", len(f["monitor/samples"]))' \
                "$res" >>"$LOGS/$v-$round.log"
        fi
        rm -f "$res"
    done
done
say "herd = with a monitor rank; peer = the same run without one"
"$PY" "$HERE/bench_util.py" table "$RAW" "$CSV" 0.95
