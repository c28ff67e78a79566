#!/usr/bin/env bash
# nfs_vs_nfscp.sh — herd's libnfs backend against nfs-cp (libnfs-utils) on
# the same embedded NFS server (ganesha; FS=tmpfs or xfs export), same file size, in one
# run: sequential write then read of one file, 1 MiB calls (herd with its
# default nfs_inflight: 16 RPCs in flight). Also herd's
# POSIX backend on the exported directory itself (no NFS in the path), to
# show what the NFS layer costs. REPEAT rounds, herd and nfs-cp alternate,
# medians, ratio herd/nfs-cp. Needs root (the server uses namespaces and a
# loop device). Exits 0 whatever the numbers; 2 when a tool is missing.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
REPEAT=${REPEAT:-5}
SIZE_MB=${SIZE_MB:-256}           # MiB per file
# The export: tmpfs (nfs-server.sh --fs tmpfs: the clients and the server's
# CPU are measured, not the disk's writeback, which made single 256 MiB
# writes range 180-1150 MiB/s on a loop xfs) or xfs (a loop image).
FS=${FS:-tmpfs}
TARGET=${TARGET:-1.0}             # herd must be >= nfs-cp
OUT=${OUT:-./bench-results}
HERD=${HERD:-$ROOT/build/herd}
SERVER=$ROOT/cluster-configs/local/nfs-server.sh
PY=/usr/bin/python3

if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: nfs_vs_nfscp.sh needs root (network namespace, loop-mounted xfs)."
    exit 0
fi
for t in nfs-cp ganesha.nfsd mpirun; do
    command -v "$t" >/dev/null 2>&1 || { echo "nfs_vs_nfscp: $t is missing (cluster-configs/local/install.sh installs it)" >&2; exit 2; }
done
[ -x "$HERD" ] || { echo "nfs_vs_nfscp: $HERD not built" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

mkdir -p "$OUT"
case $FS in
tmpfs | xfs) ;;
*) echo "nfs_vs_nfscp: FS=$FS: tmpfs or xfs" >&2; exit 2 ;;
esac
work=$(mktemp -d /tmp/herd-bench-nfs.XXXXXX)
state=$work/server
cleanup() { "$SERVER" stop --state "$state" --purge >/dev/null 2>&1; rm -rf "$work"; }
trap cleanup EXIT INT TERM

# tmpfs: room for the files ganesha still holds open after their unlink
# (its fd cache keeps deleted files' space until it closes them).
size=2G
[ "$FS" = tmpfs ] && size=8G
"$SERVER" start --state "$state" --fs "$FS" --size "$size" >"$work/start" || exit 1
url=$(sed -n 1p "$work/start")
export_dir=${url#nfs://127.0.0.1}
export_dir=${export_dir%%\?*}
bytes=$((SIZE_MB * 1048576))
head -c "$bytes" /dev/urandom >"$work/src.dat"   # nfs-cp's source, in page cache

job() { # job BACKEND TARGET
    cat <<EOF
[global]
backend = $1
target = $2
file_size = ${SIZE_MB}M
block_size = 1M
fsync = no
sharing = shared
fileset = bench
[write]
kind = write
[read]
kind = read
EOF
}
job libnfs "$url" >"$work/libnfs.ini"
job posix "$export_dir" >"$work/posix.ini"

herd_run() { # herd_run NAME INI [--server-fs]: prints write and read MiB/s
    local name=$1 ini=$2 extra=${3:-}
    "$SERVER" exec --state "$state" $extra -- mpirun -np 1 "$HERD" run "$ini" \
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

raw=$OUT/nfs_vs_nfscp_raw.csv
echo "config,tool,round,mib_s" >"$raw"
for round in $(seq 1 "$REPEAT"); do
    if [ $((round % 2)) -eq 1 ]; then order="herd nfscp posix"; else order="nfscp herd posix"; fi
    for who in $order; do
        # Start every measurement from an empty export and no dirty pages:
        # a write otherwise lands in the previous tool's writeback (rates
        # 5x apart depending on who went first).
        "$SERVER" exec --state "$state" --server-fs -- bash -c 'rm -f "$1"/nfscp-*.dat; rm -rf "$1"/herd-*' _ "$export_dir"
        sync
        case $who in
        herd) read -r w r < <(herd_run libnfs "$work/libnfs.ini") || exit 1
              echo "write-${SIZE_MB}M,herd,$round,$w" >>"$raw"; echo "read-${SIZE_MB}M,herd,$round,$r" >>"$raw" ;;
        nfscp) read -r w r < <(nfscp_run) || { echo "nfs_vs_nfscp: nfs-cp failed" >&2; exit 1; }
              echo "write-${SIZE_MB}M,nfs-cp,$round,$w" >>"$raw"; echo "read-${SIZE_MB}M,nfs-cp,$round,$r" >>"$raw" ;;
        posix) read -r w r < <(herd_run posix "$work/posix.ini" --server-fs) || exit 1
              echo "posix-write-${SIZE_MB}M,herd,$round,$w" >>"$raw"; echo "posix-read-${SIZE_MB}M,herd,$round,$r" >>"$raw" ;;
        esac
    done
done

echo "herd (libnfs) vs nfs-cp, same ganesha server, $FS export, ${SIZE_MB} MiB file, 1 MiB calls, median of $REPEAT"
"$PY" "$HERE/bench_util.py" table "$raw" "$OUT/nfs_vs_nfscp.csv" "$TARGET"
echo "(posix-* rows: herd's POSIX backend on the exported xfs directory itself, no NFS;"
echo " nfs-cp's time includes its start-up and mount, herd's excludes its mount, done before the phase)"
exit 0
