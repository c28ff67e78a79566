#!/usr/bin/env bash
# rate_accuracy.sh — how exactly herd keeps an open-loop schedule (job keys
# `rate`, `arrivals`): the calls it sends against the calls its schedule
# offers, and herd's own lag (its delay from a call's intended instant to
# its send: the schedule's jitter), from each run's `--json` summary
# (`pace`, docs/results-format.md "Offered load"):
#   one   1 client (1 rank, posix) on a private tmpfs, RATE 4 KiB reads/s of
#         a file in page cache for DURATION s (`deadline`), far from
#         saturation, each of ARRIVALS (fixed, poisson); the peer is
#         bench/pace_peer.c: one thread keeping the same schedule with
#         clock_nanosleep and a pread of the same size (the machine's own
#         wake-up jitter, measured the same way).
#   many  CLIENTS clients on one rank (libnfs, clients_per_rank) against the
#         embedded nfs-ganesha on tmpfs, each reading at each of MANY_RATES
#         calls/s (poisson) the small file it wrote in the phase before, for
#         MANY_DURATION s; the peer is pace_peer's timer alone at the
#         aggregate rate (CLIENTS x rate: one thread waking that often).
# Rounds alternate herd and the peer (the order flips every round); the
# table shows per config the medians of REPEAT rounds and their min-max:
# achieved/offered, the share of the calls due that were sent, late calls,
# lag p50/p99/max, service p99, herd_limited, the load average, and the
# verdicts: rate ok within RATE_TOL (2 %), jitter ok under JITTER_US (lag
# p99 < 1000 us). Beside every run (herd's and the peer's) a probe, the
# peer's timer alone at PROBE_RATE/s, records the machine's own wake-up
# delays in the same seconds (its lag p99 and max), so that a stall of the
# machine (CPUs taken by other work) is told from one of herd's. See
# bench/README.md. Needs root (a tmpfs, the server's namespaces; as another
# user it says SKIP and exits 0); exits 0 whatever the numbers, 2 when a
# tool is missing or a setting is wrong.
#
# Settings: REPEAT (3) WARMUP (0) PARTS ("one many") RATE (200) ARRIVALS
# ("fixed poisson") DURATION (10) FILE_SIZE (4M) BS (4K) CLIENTS (1000)
# MANY_RATES ("10 2") MANY_ARRIVALS (poisson) MANY_DURATION (12)
# MANY_FILE_SIZE (64K) RATE_TOL (0.02) JITTER_US (1000) PROBE_RATE (1000) OUT
# (./bench-results-rate) HERD (build/herd) HERD_REV (what env.txt says the
# binary was built from; default: the checkout's git describe) MPIRUN_ARGS
# (--bind-to none).
# shellcheck disable=SC2317 # the parts' functions are called by name ("${who}_one")
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")

REPEAT=${REPEAT:-3}                  # measured rounds
WARMUP=${WARMUP:-0}                  # unmeasured rounds first
PARTS=${PARTS:-"one many"}           # which parts run
RATE=${RATE:-200}                    # one: calls/s of the one client
ARRIVALS=${ARRIVALS:-"fixed poisson"} # one: the arrivals measured
DURATION=${DURATION:-10}             # one: seconds (the read phase's deadline)
FILE_SIZE=${FILE_SIZE:-4M}           # one: the file read (page cache)
BS=${BS:-4K}                         # bytes per call (both parts)
CLIENTS=${CLIENTS:-1000}             # many: clients_per_rank of the one rank
MANY_RATES=${MANY_RATES:-"10 2"}     # many: calls/s of each client
MANY_ARRIVALS=${MANY_ARRIVALS:-poisson}
MANY_DURATION=${MANY_DURATION:-12}   # many: seconds (deadline)
MANY_FILE_SIZE=${MANY_FILE_SIZE:-64K} # many: each client's file
PROBE_RATE=${PROBE_RATE:-1000}       # the timer probe beside every run (0: none)
RATE_TOL=${RATE_TOL:-0.02}           # |achieved/offered - 1| and 1 - share within this
JITTER_US=${JITTER_US:-1000}         # lag p99 under this
OUT=${OUT:-./bench-results-rate}
HERD=${HERD:-$ROOT/build/herd}
MPIRUN_ARGS=${MPIRUN_ARGS:---bind-to none} # the peer is not pinned either
SERVER=$ROOT/cluster-configs/local/nfs-server.sh

BENCH=rate_accuracy
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

bench_require_root "it mounts a private tmpfs and starts an NFS server in namespaces."
need=(mpirun:openmpi-bin cc:gcc mount:mount umount:mount)
[[ " $PARTS " == *" many "* ]] && need+=(ganesha.nfsd:nfs-ganesha)
bench_require "${need[@]}"
int_ok() { [[ $1 =~ ^[0-9]+$ ]]; }
num_ok() { [[ $1 =~ ^[0-9]+([.][0-9]+)?$ ]]; }
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || { warn "REPEAT must be a positive integer"; exit 2; }
int_ok "$WARMUP" || { warn "WARMUP must be a non-negative integer"; exit 2; }
for v in "$RATE" "$DURATION" "$MANY_DURATION" "$RATE_TOL" "$JITTER_US" $MANY_RATES; do
    num_ok "$v" || { warn "'$v' is not a number (RATE, DURATION, MANY_*, RATE_TOL, JITTER_US)"; exit 2; }
done
if ! [[ $CLIENTS =~ ^[1-9][0-9]*$ ]] || [ "$CLIENTS" -gt 1000 ]; then
    warn "CLIENTS must be 1 to 1000 (ganesha refuses connections beyond ~1021)"
    exit 2
fi
for a in $ARRIVALS $MANY_ARRIVALS; do
    case $a in fixed | poisson) ;; *) warn "arrivals must be fixed or poisson, not '$a'"; exit 2 ;; esac
done
for p in $PARTS; do
    case $p in one | many) ;; *) warn "PARTS: one, many; not '$p'"; exit 2 ;; esac
done
FILE_B=$(to_bytes "$FILE_SIZE")
MANY_FILE_B=$(to_bytes "$MANY_FILE_SIZE")
BS_B=$(to_bytes "$BS")
if [ "$BS_B" -eq 0 ] || [ $((FILE_B % BS_B)) -ne 0 ] || [ $((MANY_FILE_B % BS_B)) -ne 0 ] ||
    [ "$FILE_B" -lt "$BS_B" ] || [ "$MANY_FILE_B" -lt "$BS_B" ]; then
    warn "FILE_SIZE and MANY_FILE_SIZE must be non-zero multiples of BS"
    exit 2
fi
UTIL="$PY $HERE/rate_util.py"

bench_workspace
bench_tmpfs "size=$((FILE_B * 2 + 64 * 1048576)),mode=0755"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

bench_pace_peer
# The peer's file: the same size, in the tmpfs's page cache.
dd if=/dev/urandom of="$MNT/peer.dat" bs="$BS_B" count=$((FILE_B / BS_B)) status=none ||
    { warn "cannot write $MNT/peer.dat"; exit 2; }

# The server of part many; stopped at exit whatever happens (bench_cleanup
# runs on EXIT, INT and TERM; this wraps it).
SRV=$WORK/srv
SRV_UP=0
SRV_PID=
stop_server() {
    if [ "$SRV_UP" = 1 ]; then
        "$SERVER" stop --state "$SRV" --purge >"$LOGS/server-stop.log" 2>&1 ||
            warn "nfs-server.sh stop failed, see $LOGS/server-stop.log"
        SRV_UP=0
    fi
}
# shellcheck disable=SC2317 # reached through the trap
cleanup_all() {
    local rc=$?
    stop_server
    (exit "$rc")
    bench_cleanup
}
trap cleanup_all EXIT

# iterations that fill SECONDS at RATE with BLOCKS calls each, and one more
iters() { awk -v r="$1" -v d="$2" -v b="$3" 'BEGIN { n = r * d / b; printf "%d\n", (n == int(n) ? n : int(n) + 1) + 1 }'; }

# ---- one measurement each; prints a rate_util sample row or nothing -------

# herd_one ARRIVALS LABEL SEED
herd_one() {
    local arr=$1 label=$2 seed=$3 job=$WORK/one.ini log=$LOGS/herd-one-$1-$2
    cat >"$job" <<EOF
[global]
target = $MNT
file_size = $FILE_B
block_size = $BS_B
seed = $seed

[write]
kind = write
fsync = no

[read]
kind = read
rate = $RATE
arrivals = $arr
iterations = $(iters "$RATE" "$DURATION" $((FILE_B / BS_B)))
deadline = ${DURATION}s
EOF
    cp "$job" "$log.ini"
    local ok=1 row=''
    bench_probe_start "$log.probe" $((${DURATION%.*} + 120))
    # shellcheck disable=SC2086
    mpirun --oversubscribe -np 1 $MPIRUN_ARGS "$HERD" run "$job" -o "$log.h5" --force \
        --json "$log.json" -q >"$log.log" 2>&1 || ok=0
    bench_probe_stop
    if [ "$ok" = 0 ]; then
        warn "herd failed (one, $arr), see $log.log"
    else
        row=$($UTIL herd "$log.json" read 2>>"$log.log") || warn "herd results unusable, see $log.log"
    fi
    sample "$row" "" "$PROBE"
}

# peer_one ARRIVALS LABEL SEED
peer_one() {
    local log=$LOGS/peer-one-$1-$2.txt ok=1 row=''
    bench_probe_start "$log.probe" $((${DURATION%.*} + 120))
    "$PEER" "$RATE" "$1" "$DURATION" "$MNT/peer.dat" "$BS_B" "$3" >"$log" 2>&1 || ok=0
    bench_probe_stop
    if [ "$ok" = 0 ]; then
        warn "pace_peer failed, see $log"
    else
        row=$($UTIL peer "$log" 2>>"$log.err") || warn "pace_peer output unusable, see $log"
    fi
    sample "$row" "" "$PROBE"
}

# herd_many RATE LABEL SEED: prints the sample row and the server's cores
herd_many() {
    local r=$1 label=$2 seed=$3 job=$WORK/many.ini log=$LOGS/herd-many-$1ps-$2
    cat >"$job" <<EOF
[global]
backend = libnfs
target = $URL
clients_per_rank = $CLIENTS
file_size = $MANY_FILE_B
block_size = $BS_B
seed = $seed
op_timeout = 60s

[write]
kind = write
fsync = no

[read]
kind = read
rate = $r
arrivals = $MANY_ARRIVALS
iterations = $(iters "$r" "$MANY_DURATION" $((MANY_FILE_B / BS_B)))
deadline = ${MANY_DURATION}s
EOF
    cp "$job" "$log.ini"
    local c0 c1 t0 t1 row='' ok=1 cores=''
    c0=$(cpu_ticks)
    t0=$(date +%s.%N)
    bench_probe_start "$log.probe" $((${MANY_DURATION%.*} + 300))
    # The clients connect from ports above 1023, which the export refuses
    # from the host's side of --reach host: herd runs in the server's
    # namespace (nfs-server.sh exec), as bench/clients.sh does.
    # shellcheck disable=SC2086
    "$SERVER" exec --state "$SRV" -- mpirun --oversubscribe -np 1 $MPIRUN_ARGS "$HERD" run \
        "$job" -o "$log.h5" --force --json "$log.json" -q >"$log.log" 2>&1 || ok=0
    bench_probe_stop
    t1=$(date +%s.%N)
    c1=$(cpu_ticks)
    if [ "$ok" = 0 ]; then
        warn "herd failed (many, $r/s), see $log.log"
    elif row=$($UTIL herd "$log.json" read 2>>"$log.log"); then
        cores=$(awk -v a="$c0" -v b="$c1" -v s="$t0" -v e="$t1" -v hz="$(getconf CLK_TCK)" \
            'BEGIN { printf "%.3f\n", (b - a) / hz / (e - s) }')
    else
        warn "herd results unusable, see $log.log"
    fi
    sample "$row" "$cores" "$PROBE"
}

# peer_many RATE LABEL SEED: the timer alone at CLIENTS x RATE
peer_many() {
    local log=$LOGS/peer-many-$1ps-$2.txt total ok=1 row=''
    total=$(awk -v c="$CLIENTS" -v r="$1" 'BEGIN { print c * r }')
    bench_probe_start "$log.probe" $((${MANY_DURATION%.*} + 120))
    "$PEER" "$total" "$MANY_ARRIVALS" "$MANY_DURATION" - "$BS_B" "$3" >"$log" 2>&1 || ok=0
    bench_probe_stop
    if [ "$ok" = 0 ]; then
        warn "pace_peer failed, see $log"
    else
        row=$($UTIL peer "$log" 2>>"$log.err") || warn "pace_peer output unusable, see $log"
    fi
    sample "$row" "" "$PROBE"
}

# sample ROW CORES PROBE: the sample's fields, the server's cores and the
# probe's two, or nothing when the run gave no row
sample() { [ -z "$1" ] || echo "$1,$2,$3"; }

# ganesha's CPU (utime + stime, clock ticks), 0 when unknown
cpu_ticks() { awk '{print $14 + $15}' "/proc/$SRV_PID/stat" 2>/dev/null || echo 0; }

# ---- the rounds ---------------------------------------------------------------
cols="offered_per_s,achieved_per_s,achieved_over_offered,achieved_share,calls,due,late"
cols+=",lag_p50_us,lag_p99_us,lag_max_us,service_p50_us,service_p99_us,response_p50_us"
cols+=",response_p99_us,herd_limited,call_p50_us,call_p99_us,server_cores,probe_lag_p99_us"
cols+=",probe_lag_max_us"
echo "config,tool,round,$cols,load1" >"$RAW"
# record CONFIG TOOL ROUND ROW (ROW: sample's output; empty: a failed run)
record() {
    local row=$4
    [ -n "$row" ] || row=$(printf '%*s' "$(tr -cd , <<<"$cols" | wc -c)" '' | tr ' ' ',')
    echo "$1,$2,$3,$row,$(cut -d' ' -f1 /proc/loadavg)" >>"$RAW"
}

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -n) kernel $(uname -r)"
    echo "cpu: $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), $(nproc) online"
    echo "mem: $(awk '/^MemTotal:/ {print $2 " kB"}' /proc/meminfo)"
    echo "herd: $HERD ($("$HERD" --version 2>&1 | head -1)), built from ${HERD_REV:-the checkout, $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)}"
    echo "ganesha: $(dpkg-query -W -f '${Version}' nfs-ganesha 2>/dev/null || echo unknown)"
    echo "mpirun: $(mpirun --version 2>&1 | head -1)"
    echo "params: REPEAT=$REPEAT WARMUP=$WARMUP PARTS='$PARTS' RATE=$RATE ARRIVALS='$ARRIVALS'" \
        "DURATION=$DURATION FILE_SIZE=$FILE_B BS=$BS_B CLIENTS=$CLIENTS MANY_RATES='$MANY_RATES'" \
        "MANY_ARRIVALS=$MANY_ARRIVALS MANY_DURATION=$MANY_DURATION MANY_FILE_SIZE=$MANY_FILE_B" \
        "RATE_TOL=$RATE_TOL JITTER_US=$JITTER_US PROBE_RATE=$PROBE_RATE MPIRUN_ARGS='$MPIRUN_ARGS'"
    echo "load before: $(cat /proc/loadavg)"
} >"$OUT/env.txt"

URL=
if [[ " $PARTS " == *" many "* ]]; then
    if ! "$SERVER" start --state "$SRV" --fs tmpfs >"$WORK/srv.start" 2>"$LOGS/server-start.log"; then
        warn "nfs-server.sh start failed, see $LOGS/server-start.log"
        exit 2
    fi
    SRV_UP=1
    URL=$(sed -n 1p "$WORK/srv.start")
    SRV_PID=$(sed -n 2p "$WORK/srv.start")
    echo "server: $URL (ganesha pid $SRV_PID), $(tail -1 "$LOGS/server-start.log")" >>"$OUT/env.txt"
fi
cat "$OUT/env.txt"
say ""
say "one: 1 client (posix, tmpfs), $RATE calls/s of ${BS_B}-byte reads, ${DURATION} s, arrivals $ARRIVALS"
say "many: $CLIENTS clients on 1 rank (libnfs, ganesha on tmpfs), rates $MANY_RATES/s each" \
    "($MANY_ARRIVALS), ${MANY_DURATION} s, reads of a ${MANY_FILE_B}-byte file each"
say "rounds: $WARMUP warm-up + $REPEAT measured; herd and the peer alternate, order flips per round"
say ""

total=$((WARMUP + REPEAT))
for ((round = 1; round <= total; round++)); do
    if [ "$round" -le "$WARMUP" ]; then label=warmup$round; rec=0; else label=$((round - WARMUP)); rec=1; fi
    if ((round % 2)); then order="herd peer"; else order="peer herd"; fi
    line="round $label:"
    if [[ " $PARTS " == *" one "* ]]; then
        for arr in $ARRIVALS; do
            for who in $order; do
                row=$("${who}_one" "$arr" "$label" "$round")
                [ "$rec" = 1 ] && record "one 1x${RATE}/s $arr" "$who" "$label" "$row"
                IFS=, read -r _ _ ao sh _ _ _ _ l99 _ <<<"$row"
                line+=" $who $arr a/o=${ao:-ERR} share=${sh:-ERR} lag99=${l99:-ERR}us;"
            done
        done
    fi
    if [[ " $PARTS " == *" many "* ]]; then
        for r in $MANY_RATES; do
            for who in $order; do
                row=$("${who}_many" "$r" "$label" "$round")
                [ "$rec" = 1 ] && record "many ${CLIENTS}x${r}/s $MANY_ARRIVALS" "$who" "$label" "$row"
                IFS=, read -r _ _ ao sh _ _ _ _ l99 _ <<<"$row"
                line+=" $who ${r}/s a/o=${ao:-ERR} share=${sh:-ERR} lag99=${l99:-ERR}us;"
            done
        done
    fi
    say "$line"
done
stop_server

say ""
say "medians of $REPEAT rounds (min-max); times in microseconds:"
RATE_TOL=$RATE_TOL JITTER_US=$JITTER_US $UTIL accuracy "$RAW" "$CSV" ||
    warn "could not build the table from $RAW"
say ""
say "herd: its --json summary's pace (achieved = each client's calls over its own time, summed;"
say "share = calls sent / calls due; lag = send - max(intended instant, client ready); histogram"
say "quantiles). peer (bench/pace_peer.c): one thread, clock_nanosleep to each instant (timer slack"
say "1 ns, as herd), exact quantiles; 'one': a pread of the same size; 'many': the timer alone at"
say "the aggregate rate. probe: the peer's timer alone at ${PROBE_RATE}/s beside each run (the"
say "machine's own wake-up delays in the same seconds). lim = runs herd flagged herd_limited;"
say "load = 1-min load average after."
say "results: $CSV (raw samples: $RAW, logs: $LOGS)"
exit 0
