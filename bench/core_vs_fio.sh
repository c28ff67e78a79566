#!/usr/bin/env bash
# core_vs_fio.sh — herd's core data path against reference tools, side by
# side on a private tmpfs:
#   * sequential write then read, 64 KiB blocks, file per process, 1 and 2
#     ranks: herd vs fio (psync engine, numjobs = ranks, group_reporting);
#   * herd's md5 phase (1 rank, file in page cache) vs `openssl speed
#     -elapsed -evp md5` on one core.
# Both sides move the same bytes with the same calls; each configuration
# runs REPEAT times (herd and its peer alternate, and the order flips every
# round); the table shows medians, herd/peer and PASS/FAIL against TARGET.
# See bench/README.md for the method. Needs root (it mounts a tmpfs; as
# another user it says SKIP and exits 0); exits 0 whatever the results, 2
# when a tool is missing or a setting is wrong.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")

REPEAT=${REPEAT:-5}             # measured rounds per configuration
WARMUP=${WARMUP:-1}             # unmeasured rounds first (page allocator, caches)
SIZE=${SIZE:-2G}                # bytes per rank/job for write and read
READ_LOOPS=${READ_LOOPS:-4}     # times each rank/job reads its file (>= ~1 s)
MD5_SIZE=${MD5_SIZE:-1G}        # file digested by the md5 phase
BS=${BS:-64K}                   # block size of every read/write call
RANKS=${RANKS:-"1 2"}           # rank (fio job) counts for write/read
FSYNC=${FSYNC:-yes}             # herd fsync = yes <=> fio --end_fsync=1
OPENSSL_SECONDS=${OPENSSL_SECONDS:-3}
OPENSSL_BYTES=${OPENSSL_BYTES:-16384} # openssl speed buffer size (its largest default)
TARGET=${TARGET:-0.9}           # herd/peer must be >= TARGET
OUT=${OUT:-./bench-results}
HERD=${HERD:-$ROOT/build/herd}
MPIRUN_ARGS=${MPIRUN_ARGS:---bind-to none} # fio is not pinned either; herd md5 reads ahead in a 2nd thread
SETTLE=${SETTLE:-1}             # seconds to wait after deleting files, before a write
PRIME=${PRIME:-yes}             # touch and free the memory a write run will get first

BENCH=core_vs_fio
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

# ---- preconditions --------------------------------------------------------
bench_require_root "it mounts (and unmounts) a private tmpfs."
bench_require fio:fio openssl:openssl mpirun:openmpi-bin mount:mount umount:mount
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || { warn "REPEAT must be a positive integer"; exit 2; }
[[ $WARMUP =~ ^[0-9]+$ ]] || { warn "WARMUP must be a non-negative integer"; exit 2; }
[[ $OPENSSL_BYTES =~ ^[1-9][0-9]*$ ]] || { warn "OPENSSL_BYTES must be a positive integer"; exit 2; }
[[ $SETTLE =~ ^[0-9]+$ ]] || { warn "SETTLE must be a non-negative integer"; exit 2; }
[[ $READ_LOOPS =~ ^[1-9][0-9]*$ ]] || { warn "READ_LOOPS must be a positive integer"; exit 2; }
case $FSYNC in yes | no) ;; *) warn "FSYNC must be yes or no"; exit 2 ;; esac
case $PRIME in yes | no) ;; *) warn "PRIME must be yes or no"; exit 2 ;; esac

SIZE_B=$(to_bytes "$SIZE")
MD5_B=$(to_bytes "$MD5_SIZE")
BS_B=$(to_bytes "$BS")
UTIL="$PY $HERE/bench_util.py"
MAXR=1
for n in $RANKS; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || { warn "bad RANKS entry '$n'"; exit 2; }
    [ "$n" -gt "$MAXR" ] && MAXR=$n
done

# The tmpfs holds one run's files at a time (files are deleted between runs).
need=$((MAXR * SIZE_B > MD5_B ? MAXR * SIZE_B : MD5_B))
TMPFS_B=$((need + 256 * 1048576))
avail_b=$(($(awk '/^MemAvailable:/ {print $2}' /proc/meminfo) * 1024))
if [ "$TMPFS_B" -gt $((avail_b * 8 / 10)) ]; then
    warn "tmpfs of $((TMPFS_B >> 20)) MiB would not fit in 80% of available memory" \
        "($((avail_b >> 20)) MiB); lower SIZE or RANKS"
    exit 2
fi

bench_workspace
bench_tmpfs "size=$TMPFS_B,mode=0755"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

wipe() { rm -rf "${MNT:?}"/* 2>/dev/null; }

# Prepare the memory a write run will get, and note when it was ready.
#
# Writing new files to tmpfs allocates pages, and on a VM what that costs
# depends on the history of the guest memory the allocator hands out: on a
# VM whose balloon hands freed memory back to the host (free page
# reporting), memory freed a while ago costs a host fault when it is
# touched again. Measured here: 5.5 GiB/s right after a delete, 2.6-3.3
# GiB/s 1.3-4 s later, 1.5-2.5 GiB/s 8 s later; and a run's speed depended
# on how much the run before it had just freed (herd/fio swung from 0.3 to
# 1.45 between identical invocations). So, before every write run:
#   1. delete the last run's files, let its teardown finish (SETTLE);
#   2. PRIME=yes: write a ballast file as large as the run will write and
#      delete it, so the allocator's free lists start with that much
#      just-touched memory, the same for herd and fio;
#   3. note the time (FRESH_AT). herd's write phase starts ~0.3 s later
#      (mpirun, MPI start, clock sync, results file), fio in ~0.05 s; each
#      herd run records its delay and fio waits as long (see fio_rw), so
#      both start writing equally long after the memory was freed.
fresh() {
    local bytes=$1
    wipe
    sync
    sleep "$SETTLE"
    if [ "$PRIME" = yes ] && [ "$bytes" -gt 0 ]; then
        dd if=/dev/zero of="$MNT/.prime" bs=1M count=$(((bytes + 1048575) >> 20)) \
            status=none 2>/dev/null
        rm -f "$MNT/.prime"
    fi
    FRESH_AT=$(date +%s.%N)
}

# ---- one measurement of each tool ------------------------------------------
# Each prints "MIB_S[ MIB_S]" on stdout, or nothing on failure (logged).

# herd write+read of SIZE per rank with N ranks: prints "write_mib read_mib".
herd_rw() {
    local n=$1 job=$WORK/rw.ini h5=$WORK/rw.h5 log=$LOGS/herd-rw-np$1-$2.log
    cat >"$job" <<EOF
[global]
target = $MNT
sharing = unique
pattern = random
file_size = $SIZE_B
block_size = $BS_B

[write]
kind = write
fsync = $FSYNC

[read]
kind = read
iterations = $READ_LOOPS
EOF
    fresh $((n * SIZE_B))
    # shellcheck disable=SC2086
    if ! mpirun --oversubscribe -np "$n" $MPIRUN_ARGS "$HERD" run "$job" -o "$h5" --force \
        >"$log" 2>&1; then
        warn "herd failed (np=$n), see $log"
        wipe
        return
    fi
    local w r started
    if started=$($UTIL herd-start "$h5" write 2>>"$log"); then
        awk -v a="$started" -v b="$FRESH_AT" 'BEGIN { printf "%.3f\n", a - b }' \
            >"$WORK/delay-np$n"
        echo "bench: herd write phase started $(cat "$WORK/delay-np$n") s after FRESH_AT" >>"$log"
    fi
    cp "$h5" "$LOGS/herd-rw-np$n-$2.h5" 2>/dev/null
    if w=$($UTIL herd "$h5" write $((n * SIZE_B)) 2>>"$log") &&
        r=$($UTIL herd "$h5" read $((n * SIZE_B * READ_LOOPS)) 2>>"$log"); then
        echo "$w $r"
    else
        warn "herd results unusable (np=$n), see $log"
    fi
    wipe
}

# fio write then read of SIZE per job with N jobs: prints "write_mib read_mib".
fio_rw() {
    local n=$1 log=$LOGS/fio-rw-np$1-$2
    local common=(--name=bench --directory="$MNT" --ioengine=psync --bs="$BS_B"
        --size="$SIZE_B" --numjobs="$n" --group_reporting --fallocate=none
        --invalidate=0 --output-format=json)
    local sync=()
    [ "$FSYNC" = yes ] && sync=(--end_fsync=1)
    local delay=1.5 # before any herd run has measured its own
    [ -s "$WORK/delay-np$n" ] && delay=$(cat "$WORK/delay-np$n")
    fresh $((n * SIZE_B))
    sleep "$delay"
    echo "bench: fio write started after a ${delay} s pause after FRESH_AT" >"$log-write.err"
    if ! fio "${common[@]}" --rw=write "${sync[@]}" --output="$log-write.json" \
        >>"$log-write.err" 2>&1; then
        warn "fio write failed (np=$n), see $log-write.*"
        wipe
        return
    fi
    if ! fio "${common[@]}" --rw=read --loops="$READ_LOOPS" --output="$log-read.json" \
        >"$log-read.err" 2>&1; then
        warn "fio read failed (np=$n), see $log-read.*"
        wipe
        return
    fi
    local w r
    if w=$($UTIL fio "$log-write.json" write $((n * SIZE_B)) 2>>"$log-write.err") &&
        r=$($UTIL fio "$log-read.json" read $((n * SIZE_B * READ_LOOPS)) 2>>"$log-read.err"); then
        echo "$w $r"
    else
        warn "fio results unusable (np=$n), see $log-*"
    fi
    wipe
}

# herd md5 phase, 1 rank, over a file a write phase of the same run made
# (so it is in tmpfs's page cache); the expected digest is computed in the
# phase's untimed prepare step.
herd_md5() {
    local job=$WORK/md5.ini h5=$WORK/md5.h5 log=$LOGS/herd-md5-$1.log
    cat >"$job" <<EOF
[global]
target = $MNT
sharing = unique
pattern = random
file_size = $MD5_B
block_size = $BS_B

[write]
kind = write
fsync = no

[md5]
kind = md5
EOF
    wipe
    # shellcheck disable=SC2086
    if ! mpirun --oversubscribe -np 1 $MPIRUN_ARGS "$HERD" run "$job" -o "$h5" --force \
        >"$log" 2>&1; then
        warn "herd md5 failed, see $log"
        wipe
        return
    fi
    cp "$h5" "$LOGS/herd-md5-$1.h5" 2>/dev/null
    $UTIL herd "$h5" md5 "$MD5_B" 2>>"$log" || warn "herd md5 results unusable, see $log"
    wipe
}

# openssl speed on one core. -elapsed divides by wall-clock time like herd
# does (by default openssl speed divides by its user CPU time, which leaves
# out time the process was preempted or in the kernel and so flatters it on
# a busy machine); -bytes runs only the one buffer size the table uses
# (3 s instead of 6 sizes x 3 s).
openssl_md5() {
    local log=$LOGS/openssl-md5-$1.txt
    if ! openssl speed -elapsed -bytes "$OPENSSL_BYTES" -seconds "$OPENSSL_SECONDS" \
        -evp md5 >"$log" 2>"$log.err"; then
        warn "openssl speed failed, see $log.err"
        return
    fi
    $UTIL openssl "$log" md5 2>>"$log.err" || warn "openssl output unusable, see $log"
}

# ---- the rounds -------------------------------------------------------------
echo "config,tool,round,mib_s,load1" >"$RAW"
# load1: the 1-minute load average after the run, to spot a busy machine.
record() { echo "$1,$2,$3,$4,$(cut -d' ' -f1 /proc/loadavg)" >>"$RAW"; }

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -n) kernel $(uname -r)"
    echo "cpu: $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), $(nproc) online"
    echo "mem: $(awk '/^MemTotal:/ {print $2 " kB"}' /proc/meminfo)"
    echo "herd: $HERD ($("$HERD" --version 2>&1 | head -1))"
    echo "fio: $(fio --version)"
    echo "openssl: $(openssl version)"
    echo "mpirun: $(mpirun --version 2>&1 | head -1)"
    echo "params: REPEAT=$REPEAT WARMUP=$WARMUP SIZE=$SIZE_B READ_LOOPS=$READ_LOOPS" \
        "MD5_SIZE=$MD5_B BS=$BS_B RANKS='$RANKS' FSYNC=$FSYNC TARGET=$TARGET" \
        "SETTLE=$SETTLE PRIME=$PRIME OPENSSL_SECONDS=$OPENSSL_SECONDS OPENSSL_BYTES=$OPENSSL_BYTES" \
        "MPIRUN_ARGS='$MPIRUN_ARGS'"
    echo "tmpfs: $MNT size=$TMPFS_B"
} >"$OUT/env.txt"
cat "$OUT/env.txt"
say ""
say "write/read: $((SIZE_B >> 20)) MiB per rank, ${BS_B}-byte blocks, fsync=$FSYNC," \
    "read $READ_LOOPS x from page cache; md5: $((MD5_B >> 20)) MiB file"
say "rounds: $WARMUP warm-up + $REPEAT measured; herd and peer alternate, order flips per round"
say ""

total=$((WARMUP + REPEAT))
for ((round = 1; round <= total; round++)); do
    if [ "$round" -le "$WARMUP" ]; then
        label=warmup$round
        rec=0
    else
        label=$((round - WARMUP))
        rec=1
    fi
    # Odd rounds herd first, even rounds the peer first.
    if ((round % 2)); then order="herd peer"; else order="peer herd"; fi
    line="round $label:"
    for n in $RANKS; do
        for who in $order; do
            if [ "$who" = herd ]; then
                res=$(herd_rw "$n" "$label")
                tool=herd
            else
                res=$(fio_rw "$n" "$label")
                tool=fio
            fi
            w=${res%% *}
            r=${res##* }
            [ -n "$res" ] || { w=; r=; }
            if [ "$rec" = 1 ]; then
                record "write np=$n" "$tool" "$label" "$w"
                record "read np=$n" "$tool" "$label" "$r"
            fi
            line+=" $tool np=$n w=${w:-ERR} r=${r:-ERR};"
        done
    done
    for who in $order; do
        if [ "$who" = herd ]; then
            m=$(herd_md5 "$label")
            tool=herd
        else
            m=$(openssl_md5 "$label")
            tool=openssl
        fi
        [ "$rec" = 1 ] && record "md5 np=1" "$tool" "$label" "$m"
        line+=" $tool md5=${m:-ERR};"
    done
    say "$line"
done

say ""
say "medians of $REPEAT rounds (MiB/s = 2^20 bytes/s):"
$UTIL table "$RAW" "$CSV" "$TARGET" || warn "could not build the table from $RAW"
say ""
say "herd: sum(bytes) / (last rank's end - common phase start); fio: io_bytes / group"
say "runtime (slowest job). Both include open, every write/read, fsync (write) and close."
say "Reads are served from tmpfs page cache in both. openssl: speed -elapsed, $OPENSSL_BYTES-byte"
say "buffers, k = 1000 B; herd md5 = pread of each block + digest (expected digest untimed)."
say "results: $CSV (raw samples: $RAW, logs: $LOGS)"
exit 0
