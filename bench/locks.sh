#!/usr/bin/env bash
# locks.sh — herd's lock workload (kind = lock) on a private tmpfs: how many
# exclusive whole-file locks all ranks together get per second, with 2, 8
# and 20 ranks (RANKS), and how that scales with the rank count:
#   * blocking:    lock_wait = blocking (F_SETLKW), every attempt a grant;
#   * nonblocking: lock_wait = nonblocking (F_SETLK) for NB_DURATION; a
#     refused attempt counts as contention, so the contention ratio is
#     refused / attempts. (By time, not count: a rank that is refused burns
#     a count in milliseconds and leaves the others to lock alone.)
# Exclusive, whole file, lock_hold = 0 (the smallest allowed). Every grant
# also writes and reads back herd's 16-byte token (the mutual-exclusion
# check). No peer tool for this exists in Debian, so there is no ratio and
# no PASS/FAIL: the table shows the medians of REPEAT runs and the scaling
# against the smallest rank count. See bench/README.md. Needs root (it
# mounts a tmpfs; as another user it says SKIP and exits 0); exits 0
# whatever the results, 2 when a tool is missing or a setting is wrong.
#
# NFS=yes (after the tmpfs part) or NFS=only (instead of it): the same
# exclusive whole-file blocking locks over NFS with backend = libnfs, on
# the embedded server (cluster-configs/local/nfs-server.sh, started here
# and stopped at the end, also on ^C): NLM (NFSv3) and NFSv4 LOCK/LOCKU,
# at NFS_RANKS lock ranks for NFS_SECONDS each, plus a monitor rank
# (monitor_rank = last, monitor_processes = ganesha.nfsd) whose
# summary_cpu_mean is the server's CPU during the phase; and the peer,
# bench/nfs_lock_peer.c (one process, plain libnfs, the calls of one
# herd grant), on the same server for NFS_SECONDS: herd/peer with herd
# as one process too (1 lock rank and no monitor rank, row "alone"),
# target >= NFS_TARGET (0.9); the monitored 1-rank row over the alone
# row is what the monitor rank costs on the same CPUs. Over NLM the peer also runs holding one more
# lock (its `anchor` mode, row "peer+held"): the server then keeps the
# host monitored, so the pairs no longer pay rpc.statd's SM_MON and
# SM_UNMON each; the two peer rows show what that monitor costs. Needs also nfs-ganesha, rpcbind, nfs-common,
# libnfs-dev (pkg-config libnfs), cc, and a herd built with libnfs.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")

REPEAT=${REPEAT:-5}             # measured runs per rank count
WARMUP=${WARMUP:-1}             # unmeasured runs first; they also size COUNT (see MIN_SECONDS)
RANKS=${RANKS:-"2 8 20"}        # rank counts
GRANTS=${GRANTS:-20000}         # blocking: grants, all ranks together (count = GRANTS / ranks)
MIN_SECONDS=${MIN_SECONDS:-1}   # after the warm-up, raise the count so it lasts >= 1.5 x this
NB_DURATION=${NB_DURATION:-2}   # nonblocking: seconds every rank keeps trying
LOCK_HOLD=${LOCK_HOLD:-0}       # herd lock_hold
OUT=${OUT:-./bench-results/locks}
HERD=${HERD:-$ROOT/build/herd}
MPIRUN_ARGS=${MPIRUN_ARGS-"--bind-to none"} # mpirun pins ranks only when np <= cores: never pin
NFS=${NFS:-no}                  # no | yes (tmpfs, then NFS) | only (NFS alone)
NFS_RANKS=${NFS_RANKS:-"1 8 20"} # lock ranks over NFS (a monitor rank comes on top)
NFS_SECONDS=${NFS_SECONDS:-3}   # seconds per NFS run (herd phase duration, the peer's loop)
NFS_TARGET=${NFS_TARGET:-0.9}   # herd/peer at 1 rank should be at least this

BENCH=locks
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

# ---- preconditions --------------------------------------------------------
bench_require_root "it mounts (and unmounts) a private tmpfs."
bench_require mpirun:openmpi-bin mount:mount umount:mount
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || { warn "REPEAT must be a positive integer"; exit 2; }
[[ $WARMUP =~ ^[0-9]+$ ]] || { warn "WARMUP must be a non-negative integer"; exit 2; }
[[ $GRANTS =~ ^[1-9][0-9]*$ ]] || { warn "GRANTS must be a positive integer"; exit 2; }
[[ $MIN_SECONDS =~ ^[0-9]+([.][0-9]+)?$ ]] || { warn "MIN_SECONDS must be a number"; exit 2; }
[[ $NB_DURATION =~ ^[0-9]+([.][0-9]+)?$ ]] || { warn "NB_DURATION must be a number"; exit 2; }
for n in $RANKS; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || { warn "bad RANKS entry '$n'"; exit 2; }
done
case $NFS in no | yes | only) ;; *) warn "NFS must be no, yes or only"; exit 2 ;; esac
if [ "$NFS" != no ]; then
    bench_require ganesha.nfsd:nfs-ganesha rpcbind:rpcbind rpc.statd:nfs-common \
        pkg-config:pkg-config cc:gcc
    pkg-config --exists libnfs || { warn "libnfs-dev (pkg-config libnfs) is missing"; exit 2; }
    [[ $NFS_SECONDS =~ ^[0-9]+([.][0-9]+)?$ ]] || { warn "NFS_SECONDS must be a number"; exit 2; }
    for n in $NFS_RANKS; do
        [[ $n =~ ^[1-9][0-9]*$ ]] || { warn "bad NFS_RANKS entry '$n'"; exit 2; }
    done
fi

bench_workspace
bench_tmpfs "size=64M,mode=0755"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

UTIL=$HERE/lock_util.py # its herd, cpu, table and nfs-table commands
U() { PYTHONPATH="$HERE" "$PY" "$UTIL" "$@"; }

# One herd run with N ranks: a blocking phase of BC attempts per rank, then
# a nonblocking one of NB_DURATION. Prints "BLOCKING_FIELDS|NONBLOCKING_FIELDS".
herd_locks() {
    local n=$1 bc=$2 job=$WORK/locks.ini h5=$WORK/locks.h5
    local log=$LOGS/herd-np$1-$3.log b nb
    cat >"$job" <<EOF
[global]
target = $MNT
run_id = bench
sharing = shared
file_size = 4K
block_size = 4K
lock_mode = exclusive
lock_range = whole
lock_hold = $LOCK_HOLD

[blocking]
kind = lock
lock_wait = blocking
count = $bc

[nonblocking]
kind = lock
lock_wait = nonblocking
duration = $NB_DURATION
EOF
    rm -rf "${MNT:?}"/* 2>/dev/null
    # shellcheck disable=SC2086
    if ! mpirun --oversubscribe -np "$n" $MPIRUN_ARGS "$HERD" run "$job" -o "$h5" --force \
        >"$log" 2>&1; then
        warn "herd failed (np=$n), see $log"
        return
    fi
    b=$(U herd "$h5" blocking "$n" "$bc" 2>>"$log") &&
        nb=$(U herd "$h5" nonblocking "$n" 0 2>>"$log") &&
        echo "$b|$nb" || warn "herd results unusable (np=$n), see $log"
}

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -n) kernel $(uname -r)"
    echo "cpu: $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), $(nproc) online"
    echo "mem: $(awk '/^MemTotal:/ {print $2 " kB"}' /proc/meminfo)"
    echo "herd: $HERD ($("$HERD" --version 2>&1 | head -1))"
    echo "mpirun: $(mpirun --version 2>&1 | head -1)"
    echo "params: REPEAT=$REPEAT WARMUP=$WARMUP RANKS='$RANKS' GRANTS=$GRANTS" \
        "MIN_SECONDS=$MIN_SECONDS NB_DURATION=$NB_DURATION LOCK_HOLD=$LOCK_HOLD MPIRUN_ARGS='$MPIRUN_ARGS'"
    echo "tmpfs: $MNT"
    echo "load at start: $(cat /proc/loadavg)"
} >"$OUT/env.txt"
cat "$OUT/env.txt"
say ""
say "exclusive whole-file locks on one shared file, lock_hold = $LOCK_HOLD;" \
    "blocking then nonblocking phase per run"
say "runs: $WARMUP warm-up + $REPEAT measured per rank count"
say ""

echo "ranks,round,count,blk_grants_s,blk_seconds,blk_hold_us,blk_lock_us,nb_grants_s,nb_attempts_s,nb_contention,nb_seconds,nb_hold_us,load1" >"$RAW"

declare -A BC
for n in $RANKS; do
    BC[$n]=$(((GRANTS + n - 1) / n))
done

# Count for a phase that took SECS with COUNT attempts per rank: at least
# 1.5 x MIN_SECONDS long, never smaller than before.
resize() {
    awk -v c="$1" -v s="$2" -v m="$MIN_SECONDS" 'BEGIN {
        want = (s > 0 && s < 1.5 * m) ? int(c * 1.5 * m / s) + 1 : c
        print (want > c ? want : c) }'
}

# ---- NFS (NFS=yes|only) ---------------------------------------------------
SERVER=$ROOT/cluster-configs/local/nfs-server.sh
NFS_STATE=$WORK/nfs-server

# The embedded server goes with the workspace: stopped first, at any exit
# (^C too: the INT/TERM traps exit, which runs this).
# shellcheck disable=SC2317 # reached through the trap
nfs_cleanup() {
    [ -e "$NFS_STATE" ] && "$SERVER" stop --state "$NFS_STATE" >>"$LOGS/nfs-server.log" 2>&1
    bench_cleanup
}

# herd_nfs V N LABEL [alone]: one herd run over NFSv V with N lock ranks
# and a monitor rank; prints "grants_s cpu_mean cpu_max lock_us" or
# nothing. alone: no monitor rank (one process per lock rank, as the peer
# is one process); prints "grants_s nan nan lock_us".
herd_nfs() {
    local v=$1 n=$2 alone=${4:-} job=$WORK/nfs-locks.ini h5=$WORK/nfs-locks.h5
    local log=$LOGS/herd-nfs-v$1-np$2${4:+-$4}-$3.log r c np=$(($2 + 1))
    local monitor=$'monitor_rank = last\nmonitor_processes = ganesha.nfsd'
    [ -n "$alone" ] && np=$n monitor=
    cat >"$job" <<JOB
[global]
backend = libnfs
target = $NFS_URL?version=$v
run_id = bench-nfs
sharing = shared
fileset = locks
file_size = 4K
block_size = 4K
op_timeout = 10
lock_mode = exclusive
lock_range = whole
lock_hold = $LOCK_HOLD
$monitor

[blocking]
kind = lock
lock_wait = blocking
duration = $NFS_SECONDS
JOB
    # shellcheck disable=SC2086
    if ! "$SERVER" exec --state "$NFS_STATE" -- mpirun --oversubscribe -np "$np" \
        $MPIRUN_ARGS "$HERD" run "$job" -o "$h5" --force >"$log" 2>&1; then
        warn "herd over NFSv$v failed (np=$n), see $log"
        return
    fi
    c="nan nan"
    r=$(U herd "$h5" blocking "$n" 0 2>>"$log") &&
        { [ -n "$alone" ] || c=$(U cpu "$h5" blocking 2>>"$log"); } &&
        read -r g _ _ _ _ l <<<"$r" && echo "$g $c $l" ||
        warn "herd results unusable (NFSv$v np=$n), see $log"
}

# peer_nfs V LABEL [anchor]: the peer for NFS_SECONDS; prints its pairs/s or nothing.
peer_nfs() {
    local log=$LOGS/peer-nfs-v$1-$2${3:+-$3}.log
    if "$SERVER" exec --state "$NFS_STATE" -- "$WORK/nfs_lock_peer" "$NFS_BASE" "$1" \
        peer.dat "$NFS_SECONDS" ${3:+"$3"} >"$log" 2>&1; then
        awk '/^pairs / { print $6 }' "$log"
    else
        warn "nfs_lock_peer over NFSv$1 failed, see $log"
    fi
}

# nfs_peers, nfs_alone: one round's peer runs and herd's 1 lock rank
# without a monitor rank (one process, as the peer is: the row with the
# ratio), on nfs_section's v, round, raw and line.
nfs_peers() {
    p=$(peer_nfs "$v" "$round")
    echo "v$v,peer,$round,,,,,$p" >>"$raw"
    line+=" peer ${p%.*}/s;"
    if [ "$v" = 3 ]; then # the same with one more lock held: no monitor per pair
        p=$(peer_nfs "$v" "$round" anchor)
        echo "v$v,peer-anchor,$round,,,,,$p" >>"$raw"
        line+=" peer+held ${p%.*}/s;"
    fi
}
nfs_alone() {
    read -r g cm cx l <<<"$(herd_nfs "$v" 1 "$round" alone)"
    echo "v$v,alone,$round,${g:-},,,${l:-}," >>"$raw"
    line+=" alone ${g%.*}/s;"
}

nfs_section() {
    local v n round res g cm cx l p raw=$OUT/nfs-raw.csv csv=$OUT/nfs-results.csv
    # shellcheck disable=SC2046 # pkg-config's words are separate arguments
    cc -std=gnu11 -O2 -Wall -o "$WORK/nfs_lock_peer" "$HERE/nfs_lock_peer.c" \
        $(pkg-config --cflags --libs libnfs) 2>"$LOGS/peer-cc.log" ||
        { warn "cc nfs_lock_peer.c failed, see $LOGS/peer-cc.log"; return 1; }
    trap nfs_cleanup EXIT
    "$SERVER" start --state "$NFS_STATE" >"$WORK/nfs-start" 2>"$LOGS/nfs-server.log" ||
        { warn "nfs-server.sh start failed, see $LOGS/nfs-server.log"; return 1; }
    NFS_URL=$(sed -n '1s/?.*//p' "$WORK/nfs-start")   # nfs://127.0.0.1/.../export
    NFS_BASE=$NFS_URL
    say ""
    say "NFS: embedded ganesha (pid $(sed -n 2p "$WORK/nfs-start")), $NFS_URL;" \
        "$NFS_SECONDS s per run, lock_hold = $LOCK_HOLD, + 1 monitor rank (but \"alone\"); peer: nfs_lock_peer"
    echo "proto,lock_ranks,round,herd_pairs_s,host_busy,ganesha_cores,lock_us,peer_pairs_s" >"$raw"
    for ((round = 1; round <= REPEAT; round++)); do
        for v in 3 4; do
            local line="round $round NFSv$v:"
            # the peer and herd alone (the ratio's pair) swap places every round
            if ((round % 2)); then nfs_peers; nfs_alone; else nfs_alone; nfs_peers; fi
            for n in $NFS_RANKS; do
                res=$(herd_nfs "$v" "$n" "$round")
                read -r g cm cx l <<<"$res"
                echo "v$v,$n,$round,${g:-},${cm:-},${cx:-},${l:-}," >>"$raw"
                line+=" np=$n ${g%.*}/s (ganesha ${cx:--} cores, host busy ${cm:--});"
            done
            say "$line"
        done
    done
    U nfs-table "$raw" "$csv" "$NFS_TARGET"
    say "pairs/s: lock/unlock pairs per second, all lock ranks together (medians of $REPEAT);"
    say "lock us: mean lock call (whole wait); ganesha: its CPU in cores (/monitor/processes);"
    say "host busy: the phase's summary_cpu_mean (whole host, herd's ranks included)."
    say "results: $csv (raw: $raw, logs: $LOGS)"
    "$SERVER" stop --state "$NFS_STATE" >>"$LOGS/nfs-server.log" 2>&1 ||
        warn "nfs-server.sh stop failed, see $LOGS/nfs-server.log"
}

if [ "$NFS" = only ]; then
    nfs_section
    exit 0
fi

total=$((WARMUP + REPEAT))
for ((round = 1; round <= total; round++)); do
    if [ "$round" -le "$WARMUP" ]; then label=warmup$round; else label=$((round - WARMUP)); fi
    line="round $label:"
    for n in $RANKS; do
        res=$(herd_locks "$n" "${BC[$n]}" "$label")
        if [ -z "$res" ]; then
            line+=" np=$n ERR;"
            [ "$round" -gt "$WARMUP" ] && echo "$n,$label,${BC[$n]},,,,,,,,,,$(cut -d' ' -f1 /proc/loadavg)" >>"$RAW"
            continue
        fi
        read -r bg _ _ bs bh bl <<<"${res%%|*}"
        read -r ng na nr ns nh _ <<<"${res##*|}"
        line+=" np=$n ${bg%.*} grants/s (nb ${ng%.*}/s, contention $nr);"
        if [ "$round" -le "$WARMUP" ]; then
            # The warm-up sizes the measured runs (>= 1.5 x MIN_SECONDS each).
            BC[$n]=$(resize "${BC[$n]}" "$bs")
        else
            echo "$n,$label,${BC[$n]},$bg,$bs,$bh,$bl,$ng,$na,$nr,$ns,$nh,$(cut -d' ' -f1 /proc/loadavg)" >>"$RAW"
        fi
    done
    say "$line"
    if [ "$round" -eq "$WARMUP" ]; then
        c=""
        for n in $RANKS; do c+=" np=$n ${BC[$n]}"; done
        say "blocking count per rank after the warm-up:$c"
    fi
done

say ""
say "medians of $REPEAT runs (grants/s: all ranks together):"
U table "$RAW" "$CSV" || warn "could not build the table from $RAW"
say ""
say "grants/s = sum(grants) / (last rank's end - common phase start); x np: against the first rank"
say "count. hold us: mean time from grant to release (token write, sleep lock_hold, token read)."
say "Nonblocking (every rank tries for $NB_DURATION s): tries/s = attempts / time, contention ="
say "refused attempts / attempts; nb hold us as hold us, for the nonblocking grants."
say "results: $CSV (raw samples: $RAW, logs: $LOGS)"
[ "$NFS" = yes ] && nfs_section
exit 0
