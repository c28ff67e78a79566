#!/usr/bin/env bash
# nfs_vs_nfscp.sh — herd's libnfs backend against the plain libnfs
# programs on the same embedded NFS server (ganesha, FS=tmpfs or xfs
# export; or NFS_SERVER=knfsd, the kernel's nfsd, xfs), same file size,
# in one run: sequential write then read of one
# file, 1 MiB calls (CHUNK: also herd's nfs_rsize/wsize and the loop's RPC
# size). Rows:
#   write-/read-SIZE         herd with its default nfs_inflight (0: tries 1, 2, 4
#                            at 1M and back down, keeps the largest window
#                            within 10% of the fastest) vs
#                            nfs-cp (libnfs-utils: synchronous 1 MiB calls)
#   ...-ifN (N in INFLIGHTS) herd nfs_inflight=N vs bench/nfs_async_peer.c
#                            keeping N async RPCs in flight with libnfs's API
#   ...-default-vs-loop-best herd's default vs the loop's best window (the
#                            INFLIGHTS value with the highest median)
#   ...-mpirun-vs-singleton  herd's default under mpirun -np 1 MPIRUN_ARGS
#                            (default --bind-to none; every herd
#                            row) vs the same job started without mpirun
#                            (a singleton MPI start): the runtime's share
#   ...-v4-vs-v3             herd over NFSv4 (its own OPEN, WRITEs, COMMITs;
#                            V4=yes, the default) vs herd over NFSv3, both
#                            with the default window; ...-v4-if16-vs-v3-if16
#                            both with nfs_inflight=16 (when 16 is in INFLIGHTS)
#   posix-*                  herd's POSIX backend on the export itself (no NFS;
#                            ganesha only: knfsd's export lives in its guest)
# REPEAT rounds, herd first in odd rounds and the peers first in even ones,
# medians, ratio herd/peer with ranges. Every herd write has fsync = yes and
# the loop's write time its COMMIT; herd's time is IOR's -e (open and close
# inside), nfs-cp's includes its start-up and mount. Needs root (the
# server uses namespaces and a loop device). Exits 0 whatever the numbers;
# 2 when a tool is missing.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
REPEAT=${REPEAT:-5}
SIZE_MB=${SIZE_MB:-256}           # MiB per file
# The server: ganesha (the embedded nfs-ganesha) or knfsd (the kernel's
# nfsd in a User-Mode Linux guest with one CPU; nfs-server.sh --server).
NFS_SERVER=${NFS_SERVER:-ganesha}
# The export: tmpfs (nfs-server.sh --fs tmpfs: the clients and the server's
# CPU are measured, not the disk's writeback, which made single 256 MiB
# writes range 180-1150 MiB/s on a loop xfs) or xfs (a loop image; knfsd's
# default, as it exports a disk image).
[ "$NFS_SERVER" = knfsd ] && FS=${FS:-xfs}
FS=${FS:-tmpfs}
TARGET=${TARGET:-1.0}             # herd must be >= its peer
CHUNK=${CHUNK:-1048576}           # bytes per call and per RPC
INFLIGHTS=${INFLIGHTS:-1 16 64}   # the in-flight windows compared with the loop
V4=${V4:-yes}                     # also herd over NFSv4 against herd over NFSv3
OUT=${OUT:-./bench-results}
HERD=${HERD:-$ROOT/build/herd}
MPIRUN_ARGS=${MPIRUN_ARGS---bind-to none} # herd's batch script does not bind either
SERVER_ARGS=${SERVER_ARGS:-}       # more nfs-server.sh start options (e.g. --workers 4)
SERVER=$ROOT/cluster-configs/local/nfs-server.sh
PY=/usr/bin/python3

if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: nfs_vs_nfscp.sh needs root (network namespace, loop-mounted xfs)."
    exit 0
fi
tools="nfs-cp ganesha.nfsd mpirun cc"
[ "$NFS_SERVER" = knfsd ] && tools="nfs-cp linux.uml rpc.nfsd mpirun cc"
for t in $tools; do
    command -v "$t" >/dev/null 2>&1 || { echo "nfs_vs_nfscp: $t is missing (cluster-configs/local/install.sh installs it)" >&2; exit 2; }
done
[ -x "$HERD" ] || { echo "nfs_vs_nfscp: $HERD not built" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

mkdir -p "$OUT"
case $NFS_SERVER:$FS in
ganesha:tmpfs | ganesha:xfs | knfsd:xfs) ;;
*) echo "nfs_vs_nfscp: NFS_SERVER=$NFS_SERVER FS=$FS: ganesha with tmpfs or xfs, knfsd with xfs" >&2; exit 2 ;;
esac
work=$(mktemp -d /tmp/herd-bench-nfs.XXXXXX)
state=$work/server
cleanup() { "$SERVER" stop --state "$state" --purge >/dev/null 2>&1; rm -rf "$work"; }
trap cleanup EXIT INT TERM

# tmpfs: room for the files ganesha still holds open after their unlink
# (its fd cache keeps deleted files' space until it closes them).
size=2G
[ "$FS" = tmpfs ] && size=8G
# shellcheck disable=SC2086 # SERVER_ARGS: words by design
"$SERVER" start --state "$state" --server "$NFS_SERVER" --fs "$FS" --size "$size" $SERVER_ARGS >"$work/start" || exit 1
url=$(sed -n 1p "$work/start")
export_dir=${url#nfs://127.0.0.1}
export_dir=${export_dir%%\?*}
bytes=$((SIZE_MB * 1048576))
head -c "$bytes" /dev/urandom >"$work/src.dat"   # nfs-cp's source, in page cache

job() { # job BACKEND TARGET [KEY=VALUE...]
    local backend=$1 target=$2 kv
    shift 2
    printf '[global]\nbackend = %s\ntarget = %s\nfile_size = %sM\nblock_size = %s\n' \
        "$backend" "$target" "$SIZE_MB" "$CHUNK"
    printf 'fsync = yes\nsharing = shared\nfileset = bench\n'
    for kv in "$@"; do printf '%s = %s\n' "${kv%%=*}" "${kv#*=}"; done
    printf '[write]\nkind = write\n[read]\nkind = read\n'
}
nfsk=("nfs_rsize=$CHUNK" "nfs_wsize=$CHUNK")
job libnfs "$url" "${nfsk[@]}" >"$work/libnfs.ini"
for n in $INFLIGHTS; do job libnfs "$url" "${nfsk[@]}" "nfs_inflight=$n" >"$work/libnfs-if$n.ini"; done
url4=${url/version=3/version=4}
job libnfs "$url4" "${nfsk[@]}" >"$work/libnfs-v4.ini"
job libnfs "$url4" "${nfsk[@]}" "nfs_inflight=16" >"$work/libnfs-v4-if16.ini"
v4s=""
if [ "$V4" = yes ]; then
    v4s="herd-v4"
    case " $INFLIGHTS " in *" 16 "*) v4s+=" herd-v4-if16" ;; esac
fi
job posix "$export_dir" >"$work/posix.ini"
peer=$work/nfs_async_peer
cc -O2 -o "$peer" "$HERE/nfs_async_peer.c" -lnfs ||
    { echo "nfs_vs_nfscp: cannot build nfs_async_peer.c (libnfs-dev)" >&2; exit 2; }

herd_run() { # herd_run NAME INI [--server-fs]: prints write and read MiB/s
    local name=$1 ini=$2 extra=${3:-}
    # shellcheck disable=SC2086 # LAUNCH: words by design ("" = a singleton start)
    "$SERVER" exec --state "$state" $extra -- ${LAUNCH-mpirun -np 1 $MPIRUN_ARGS} "$HERD" run "$ini" \
        -o "$work/$name.h5" --force >"$work/$name.out" 2>"$work/$name.err" ||
        { cat "$work/$name.err" "$work/$name.out" >&2; return 1; }
    echo "$("$PY" "$HERE/bench_util.py" herd "$work/$name.h5" write "$bytes" 2>/dev/null)" \
         "$("$PY" "$HERE/bench_util.py" herd "$work/$name.h5" read "$bytes" 2>/dev/null)"
}

nfscp_run() { # prints write and read MiB/s of nfs-cp, timed inside the namespace
    "$SERVER" exec --state "$state" -- bash -c '
        src=$1 url=$2 dst=$3 bytes=$4
        name="nfscp-$RANDOM$RANDOM.dat"
        base=${url%%\?*}; opts=${url#*\?}
        t0=$(date +%s.%N); nfs-cp "$src" "$base/$name?$opts" >/dev/null || exit 1; t1=$(date +%s.%N)
        rm -f "$dst"
        t2=$(date +%s.%N); nfs-cp "$base/$name?$opts" "$dst" >/dev/null || exit 1; t3=$(date +%s.%N)
        [ "$(stat -c %s "$dst")" -eq "$bytes" ] || exit 1
        rm -f "$dst"
        echo "$t0 $t1 $t2 $t3" | awk -v b="$bytes" "{printf \"%.1f %.1f\n\", b/1048576/(\$2-\$1), b/1048576/(\$4-\$3)}"
    ' _ "$work/src.dat" "$url" "/dev/shm/herd-bench-nfscp.$$" "$bytes"
}

loop_run() { # loop_run N: prints write and read MiB/s of the async loop
    "$SERVER" exec --state "$state" -- "$peer" "$url" "/nfsloop-$RANDOM.dat" "$bytes" "$CHUNK" "$1"
}

# Start every measurement from an empty export and no dirty pages: a
# write otherwise lands in the previous tool's writeback (rates 5x apart
# depending on who went first). knfsd's export is the guest's /export,
# a disk image this run made and fills with nothing else.
empty_export() {
    if [ "$NFS_SERVER" = knfsd ]; then
        "$SERVER" guest --state "$state" -- exec find /export -mindepth 1 -delete >/dev/null
    else
        "$SERVER" exec --state "$state" --server-fs -- bash -c 'rm -f "$1"/nfscp-*.dat "$1"/nfsloop-*.dat; rm -rf "$1"/herd-*' _ "$export_dir"
    fi
    sync
}

raw=$OUT/nfs_vs_nfscp_raw.csv
echo "config,tool,round,mib_s" >"$raw"
add() { echo "$1,$2,$round,$3" >>"$raw"; }
for round in $(seq 1 "$REPEAT"); do
    herds="herd $v4s" peers="nfscp singleton"
    for n in $INFLIGHTS; do herds+=" herd-if$n"; peers+=" loop-if$n"; done
    posix=posix
    [ "$NFS_SERVER" = knfsd ] && posix=""
    if [ $((round % 2)) -eq 1 ]; then order="$herds $peers $posix"; else order="$peers $herds $posix"; fi
    for who in $order; do
        empty_export
        case $who in
        herd) read -r w r < <(herd_run libnfs "$work/libnfs.ini") || exit 1
              add "write-${SIZE_MB}M" herd "$w"; add "read-${SIZE_MB}M" herd "$r"
              add "write-${SIZE_MB}M-default-vs-loop-best" herd "$w"
              add "read-${SIZE_MB}M-default-vs-loop-best" herd "$r"
              add "write-${SIZE_MB}M-mpirun-vs-singleton" herd "$w"
              add "read-${SIZE_MB}M-mpirun-vs-singleton" herd "$r"
              add "write-${SIZE_MB}M-v4-vs-v3" herd-v3 "$w"; add "read-${SIZE_MB}M-v4-vs-v3" herd-v3 "$r" ;;
        herd-if*) n=${who#herd-if}
              read -r w r < <(herd_run "libnfs-if$n" "$work/libnfs-if$n.ini") || exit 1
              add "write-${SIZE_MB}M-if$n" herd "$w"; add "read-${SIZE_MB}M-if$n" herd "$r"
              if [ "$n" = 16 ]; then
                  add "write-${SIZE_MB}M-v4-if16-vs-v3-if16" herd-v3 "$w"
                  add "read-${SIZE_MB}M-v4-if16-vs-v3-if16" herd-v3 "$r"
              fi ;;
        herd-v4) read -r w r < <(herd_run libnfs-v4 "$work/libnfs-v4.ini") || exit 1
              add "write-${SIZE_MB}M-v4-vs-v3" herd "$w"; add "read-${SIZE_MB}M-v4-vs-v3" herd "$r" ;;
        herd-v4-if16) read -r w r < <(herd_run libnfs-v4-if16 "$work/libnfs-v4-if16.ini") || exit 1
              add "write-${SIZE_MB}M-v4-if16-vs-v3-if16" herd "$w"
              add "read-${SIZE_MB}M-v4-if16-vs-v3-if16" herd "$r" ;;
        nfscp) read -r w r < <(nfscp_run) || { echo "nfs_vs_nfscp: nfs-cp failed" >&2; exit 1; }
              add "write-${SIZE_MB}M" nfs-cp "$w"; add "read-${SIZE_MB}M" nfs-cp "$r" ;;
        loop-if*) n=${who#loop-if}
              read -r w r < <(loop_run "$n") || { echo "nfs_vs_nfscp: nfs_async_peer failed" >&2; exit 1; }
              add "write-${SIZE_MB}M-if$n" "loop-if$n" "$w"; add "read-${SIZE_MB}M-if$n" "loop-if$n" "$r" ;;
        singleton) read -r w r < <(LAUNCH="" herd_run singleton "$work/libnfs.ini") || exit 1
              add "write-${SIZE_MB}M-mpirun-vs-singleton" singleton "$w"
              add "read-${SIZE_MB}M-mpirun-vs-singleton" singleton "$r" ;;
        posix) read -r w r < <(herd_run posix "$work/posix.ini" --server-fs) || exit 1
              add "posix-write-${SIZE_MB}M" herd "$w"; add "posix-read-${SIZE_MB}M" herd "$r" ;;
        esac
    done
done
for rw in write read; do
    "$PY" "$HERE/bench_util.py" best "$raw" "$rw-${SIZE_MB}M-if[0-9]+" "$rw-${SIZE_MB}M-default-vs-loop-best" || exit 1
done

echo "herd (libnfs) vs nfs-cp and the async loop, same $NFS_SERVER server, $FS export, ${SIZE_MB} MiB file, $CHUNK-byte calls and RPCs, median of $REPEAT"
"$PY" "$HERE/bench_util.py" table "$raw" "$OUT/nfs_vs_nfscp.csv" "$TARGET"
echo "(posix-* rows: herd's POSIX backend on the exported xfs directory itself, no NFS;"
echo " nfs-cp's time includes its start-up and mount, herd's excludes its mount, done before the phase)"
exit 0
