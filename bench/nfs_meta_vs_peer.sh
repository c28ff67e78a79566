#!/usr/bin/env bash
# nfs_meta_vs_peer.sh — herd's metadata rates over libnfs against a plain
# libnfs program's, per step, on the embedded NFS server (ganesha, tmpfs
# export; cluster-configs/local/nfs-server.sh, started here and stopped
# at the end, also on ^C): one herd meta phase (backend = libnfs,
# meta_ops = create, stat, unlink, rmdir, one rank; the items/s of each
# step in op_summary) against bench/nfs_meta_peer.c (nfs_create + close,
# nfs_lstat64, nfs_unlink by path, each step timed, in a tree as deep as
# herd's), FILES files, for each NFS version in VERSIONS. LINK: a
# nfs-server.sh --link setting (e.g. delay=5ms) for a distant server.
# Each configuration runs REPEAT times, herd and the peer alternating (the
# order flips every round); the table shows medians, herd/peer and
# PASS/FAIL against TARGET. Needs root (the server uses namespaces; as
# another user it says SKIP and exits 0); exits 0 whatever the results, 2
# when a tool is missing or a setting is wrong. See bench/README.md.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")

REPEAT=${REPEAT:-5}       # measured rounds per configuration
FILES=${FILES:-2000}      # files per step
VERSIONS=${VERSIONS:-"3 4"}
LINK=${LINK:-}            # nfs-server.sh --link (empty: loopback)
TARGET=${TARGET:-0.9}     # herd/peer must be >= TARGET
OUT=${OUT:-./bench-results/nfs_meta}
HERD=${HERD:-$ROOT/build/herd}
SERVER=$ROOT/cluster-configs/local/nfs-server.sh

BENCH=nfs_meta_vs_peer
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

bench_require_root "the NFS server uses namespaces."
bench_require mpirun:openmpi-bin cc:gcc ganesha.nfsd:nfs-ganesha
pkg-config --exists libnfs || { warn "libnfs-dev (pkg-config libnfs) is missing"; exit 2; }
[ -x "$HERD" ] || { warn "$HERD not built"; exit 2; }
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || { warn "REPEAT must be a positive integer"; exit 2; }
if ! [[ $FILES =~ ^[1-9][0-9]*$ ]] || [ "$FILES" -gt 999999 ]; then
    warn "FILES must be 1..999999"
    exit 2
fi
for v in $VERSIONS; do
    case $v in 3 | 4) ;; *) warn "bad VERSIONS entry '$v' (3 or 4)"; exit 2 ;; esac
done

bench_workspace # OUT, LOGS, RAW, CSV, WORK; bench_cleanup at exit
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
U() { PYTHONPATH="$HERE" "$PY" "$HERE/meta_util.py" "$@"; }
STATE=$WORK/server
# shellcheck disable=SC2317 # called by the EXIT trap
server_stop() { [ -e "$STATE" ] && "$SERVER" stop --state "$STATE" --purge >>"$LOGS/server.log" 2>&1; }
trap 'server_stop; bench_cleanup' EXIT

PEER=$WORK/nfs_meta_peer
# shellcheck disable=SC2046 # pkg-config's words are separate arguments
cc -std=gnu11 -O2 -Wall -o "$PEER" "$HERE/nfs_meta_peer.c" $(pkg-config --cflags --libs libnfs) \
    2>"$LOGS/peer-cc.log" || { warn "cc nfs_meta_peer.c failed, see $LOGS/peer-cc.log"; exit 2; }
"$SERVER" start --state "$STATE" --fs tmpfs --size 1G ${LINK:+--link "$LINK"} >"$WORK/start" \
    2>"$LOGS/server.log" || { warn "nfs-server.sh start failed, see $LOGS/server.log"; exit 2; }
BASE=$(grep -m1 '^nfs://' "$WORK/start" | sed 's/?.*//')

# herd: one meta phase at one rank; prints "create stat removal" items/s.
# shellcheck disable=SC2317 # herd_steps and peer_steps: called as ${who}_steps
herd_steps() { # VERSION LABEL
    local job=$WORK/meta-v$1.ini h5=$WORK/meta.h5 log=$LOGS/herd-v$1-$2.log
    printf '[global]\nbackend = libnfs\ntarget = %s?version=%s\nfileset = m\nsharing = unique\n' \
        "$BASE" "$1" >"$job"
    printf 'file_size = 0\nfsync = no\ndirs = 1\nfiles = %s\n[meta]\nkind = meta\n' "$FILES" >>"$job"
    printf 'meta_ops = create,stat,unlink,rmdir\n' >>"$job"
    if ! "$SERVER" exec --state "$STATE" -- mpirun -np 1 --bind-to none "$HERD" run "$job" \
        -o "$h5" --force >"$log" 2>&1; then
        warn "herd failed (NFSv$1), see $log"
        return
    fi
    U steps "$h5" meta "$FILES" 2>>"$log" || warn "herd results unusable (NFSv$1), see $log"
}

# the peer: prints "create stat removal" calls/s.
# shellcheck disable=SC2317
peer_steps() { # VERSION LABEL
    local log=$LOGS/peer-v$1-$2.log
    if ! "$SERVER" exec --state "$STATE" -- "$PEER" "$BASE?version=$1" "peer-$2" "$FILES" \
        >"$log" 2>&1; then
        warn "nfs_meta_peer failed (NFSv$1), see $log"
        return
    fi
    awk '/^steps / { print $2, $3, $4 }' "$log"
}

echo "config,tool,round,ops_s,load1" >"$RAW"
record() { echo "$1,$2,$3,$4,$(cut -d' ' -f1 /proc/loadavg)" >>"$RAW"; }
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -n) kernel $(uname -r), $(nproc) cpus"
    echo "herd: $HERD ($("$HERD" --version 2>&1 | head -1))"
    echo "server: $(grep -m1 'started' "$LOGS/server.log")"
    echo "params: REPEAT=$REPEAT FILES=$FILES VERSIONS='$VERSIONS' LINK='$LINK' TARGET=$TARGET"
} >"$OUT/env.txt"
cat "$OUT/env.txt"
say ""

for ((round = 1; round <= REPEAT; round++)); do
    if ((round % 2)); then order="herd peer"; else order="peer herd"; fi
    for v in $VERSIONS; do
        line="round $round NFSv$v:"
        for who in $order; do
            tool=$who
            [ "$who" = peer ] && tool=nfs_meta_peer
            bench_meta_steps "$who" "$v" "$round" "v$v" "$tool"
        done
        say "$line"
    done
done

say ""
say "medians of $REPEAT rounds (calls/s, one rank; ${LINK:-loopback}):"
U table "$RAW" "$CSV" "$TARGET" || warn "could not build the table from $RAW"
say ""
say "herd: op_summary items_per_s of its meta phase (create = open with create; removal = unlink)."
say "nfs_meta_peer: files / the step's time, every call by path through libnfs's synchronous API."
say "results: $CSV (raw samples: $RAW, logs: $LOGS)"
exit 0
