#!/usr/bin/env bash
# inflight_phases.sh — herd's default nfs_inflight (0: tries windows once
# per run and direction, job-file.md) against fixed windows, on a run of
# short phases as the seeds' matrices have: PAIRS write/read pairs of
# SIZE files (fsync = yes), one rank, CHUNK-byte RPCs, against the embedded
# ganesha (tmpfs export), over LINK (nfs-server.sh --link; default
# delay=5ms; none: loopback as it is). Each round runs the job with the default and
# with each window of FIXED, in turn (the default first in odd rounds,
# last in even ones). Rows, per direction:
#   DIR-first-ifN / -later-ifN   herd at nfs_inflight = N (no ratio)
#   DIR-first-vs-fixed-best      the default's first phase vs the fixed
#                                window with the highest median
#   DIR-later-vs-fixed-best      the default's later phases (each round's
#                                median over phases 2..PAIRS) vs the same
# The first phase pays for the tries; the later ones go on with the
# window it kept. MiB/s per phase: its bytes / (t_end - t_start).
# Medians of REPEAT rounds, ratios default/best fixed. Needs root (the
# server's namespaces); exits 0 whatever the numbers, 2 when a tool is
# missing.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
REPEAT=${REPEAT:-5}
PAIRS=${PAIRS:-4}
SIZE=${SIZE:-16M}
CHUNK=${CHUNK:-64K}
LINK=${LINK-delay=5ms}              # none or empty: no link emulation
[ "$LINK" = none ] && LINK=""
FIXED=${FIXED:-1 4 16}
OUT=${OUT:-./bench-results}
HERD=${HERD:-$ROOT/build/herd}
SERVER=$ROOT/cluster-configs/local/nfs-server.sh
# shellcheck disable=SC2034 # read by lib.sh
BENCH=inflight_phases
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

bench_require_root "the NFS server runs in a network namespace."
bench_require mpirun:openmpi-bin ganesha.nfsd:nfs-ganesha
[ "$PAIRS" -ge 2 ] 2>/dev/null || { warn "PAIRS must be 2 or more (one first phase, later ones)"; exit 2; }
bench_workspace
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
state=$WORK/server
# shellcheck disable=SC2317 # reached through the trap
stop_server() { "$SERVER" stop --state "$state" --purge >/dev/null 2>&1; }
trap 'stop_server; bench_cleanup' EXIT
link=()
[ -n "$LINK" ] && link=(--link "$LINK")
HERD_LINKDELAY=${HERD_LINKDELAY:-$ROOT/build/herd-linkdelay} \
    "$SERVER" start --state "$state" --fs tmpfs --size 4G "${link[@]}" >"$WORK/start" ||
    { warn "the NFS server did not start (see above)"; exit 2; }
url=$(sed -n 1p "$WORK/start")

job() { # job [nfs_inflight]: PAIRS write/read pairs, one file set each
    printf '[global]\nbackend = libnfs\ntarget = %s\nfile_size = %s\nblock_size = %s\n' \
        "$url" "$SIZE" "$CHUNK"
    printf 'nfs_rsize = %s\nnfs_wsize = %s\nfsync = yes\nsharing = shared\nlink = %s\n' \
        "$CHUNK" "$CHUNK" "${LINK:-none}"
    [ -n "${1:-}" ] && printf 'nfs_inflight = %s\n' "$1"
    for p in $(seq 1 "$PAIRS"); do
        printf '[write%s]\nkind = write\nfileset = f%s\n[read%s]\nkind = read\nfileset = f%s\n' \
            "$p" "$p" "$p" "$p"
    done
}
job >"$WORK/default.ini"
for n in $FIXED; do job "$n" >"$WORK/if$n.ini"; done

# run NAME: prints "write-first W", "write-later W", "read-first R", ...
run() {
    "$SERVER" exec --state "$state" -- mpirun -np 1 --bind-to none "$HERD" run \
        "$WORK/$1.ini" -o "$WORK/$1.h5" --force >"$LOGS/$1.out" 2>&1 ||
        { warn "herd failed ($1): see $LOGS/$1.out"; return 1; }
    "$PY" - "$WORK/$1.h5" "$PAIRS" <<'EOF'
import statistics, sys
import h5py
f, pairs = h5py.File(sys.argv[1], "r"), int(sys.argv[2])
for d in ("write", "read"):
    rates = []
    for p in range(1, pairs + 1):
        g = f["phases"]["%s%d" % (d, p)]
        rates.append(sum(int(b) for b in g["ranks"]["bytes"]) / 1048576.0
                     / (g.attrs["t_end"] - g.attrs["t_start"]))
    print("%s-first %.2f" % (d, rates[0]))
    print("%s-later %.2f" % (d, statistics.median(rates[1:])))
EOF
}

echo "config,tool,round,mib_s" >"$RAW"
for round in $(seq 1 "$REPEAT"); do
    order="default"
    for n in $FIXED; do order+=" if$n"; done
    [ $((round % 2)) -eq 0 ] && order="$(echo "$order" | tr ' ' '\n' | tac | tr '\n' ' ')"
    for who in $order; do
        out=$(run "$who") || exit 1
        while read -r config v; do
            if [ "$who" = default ]; then
                echo "$config-vs-fixed-best,herd,$round,$v" >>"$RAW"
            else
                echo "$config-$who,fixed-${who#if},$round,$v" >>"$RAW"
            fi
        done <<<"$out"
    done
done
for c in write-first write-later read-first read-later; do
    "$PY" "$HERE/bench_util.py" best "$RAW" "$c-if[0-9]+" "$c-vs-fixed-best" || exit 1
done
say "herd's default nfs_inflight vs fixed windows: $PAIRS write/read pairs of $SIZE, $CHUNK RPCs, link ${LINK:-none}, median of $REPEAT"
"$PY" "$HERE/bench_util.py" table "$RAW" "$CSV" 1.0
exit 0
