#!/usr/bin/env bash
# client_memory.sh — herd's estimate of what one virtual client holds
# (the figure on `herd check`'s memory line, which the per-host memory
# rule of clients_per_rank uses: src/backend/libnfs/libnfs_budget.c) against the
# RSS of real runs, for write, read+verify and meta jobs at several block
# sizes, windows, file sizes and client counts. One rank of K clients
# against the embedded ganesha (tmpfs); measured per client: the rank's
# peak RSS (/usage max_rss_bytes, the median of ROUNDS runs) less that of
# a rank with one idle client (MPI and herd themselves), over K. Ratio:
# estimate / measured; the estimate is meant to lie within 1.5x of it.
# Output: the table on stdout and in OUT/client_memory.txt. Needs root (the
# server's namespaces); exits 0 whatever the numbers, 2 when a tool is
# missing.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
OUT=${OUT:-./bench-results/client_memory}
HERD=${HERD:-$ROOT/build/herd}
SERVER=$ROOT/cluster-configs/local/nfs-server.sh
ROUNDS=${ROUNDS:-3}
# kind block nfs_inflight file_size K... (kind: write, readv = a write then
# a verified read, meta = 100 empty files a client)
CASES=${CASES:-"write 1M 0 16M 16 64
write 1M 0 64M 16 48
write 1M 1 16M 16 64
write 64K 4 16M 32 128
readv 1M 0 16M 16 64
readv 1M 0 64M 16 48
readv 1M 4 16M 16 64
readv 64K 4 16M 32 128
meta 1M 0 0 16 128"}

BENCH=client_memory
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

bench_require_root "the server uses namespaces."
bench_require mpirun:openmpi-bin ganesha.nfsd:nfs-ganesha
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d /tmp/herd-bench-client-memory.XXXXXX)
cleanup() {
    "$SERVER" stop --state "$work/srv" --purge >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
"$SERVER" start --state "$work/srv" --fs tmpfs --size 8G > "$work/start" ||
    { warn "nfs-server.sh start failed"; exit 1; }
url=$(sed -n 1p "$work/start")

job() { # job FILE KIND BLOCK INFLIGHT FILE_SIZE K
    {
        printf '[global]\nbackend = libnfs\ntarget = %s\nclients_per_rank = %s\n' "$url" "$6"
        printf 'block_size = %s\nnfs_inflight = %s\nop_timeout = 120s\n' "$3" "$4"
        case $2 in
        write) printf '[w]\nkind = write\nfile_size = %s\n' "$5" ;;
        readv) printf '[w]\nkind = write\nfile_size = %s\n[r]\nkind = read\nfile_size = %s\nverify = yes\n' "$5" "$5" ;;
        meta) printf '[m]\nkind = meta\nfiles = 100\n' ;;
        idle) printf '[i]\nkind = idle\nduration = 1s\n' ;;
        esac
    } > "$1"
}

rss_mib() { # rss_mib NAME...: the median of the ranks' peak RSS in MiB, or nothing
    "$PY" -c 'import h5py, statistics, sys
rss = []
for path in sys.argv[1:]:
    try:
        rss.append(max(h5py.File(path)["usage"]["max_rss_bytes"]) / 2**20)
    except (OSError, KeyError):
        pass
print("%.1f" % statistics.median(rss) if rss else "")' "${@/%/.h5}"
}

measure() { # measure NAME: ROUNDS runs of OUT/NAME.ini; the median peak RSS
    local i names=()
    for i in $(seq "$ROUNDS"); do
        cp "$OUT/$1.ini" "$OUT/$1-$i.ini"
        run "$1-$i"
        names+=("$OUT/$1-$i")
    done
    rss_mib "${names[@]}"
}

run() { # run NAME: herd in the server's namespace, one rank
    "$SERVER" exec --state "$work/srv" -- mpirun -n 1 "$HERD" run "$OUT/$1.ini" \
        -o "$OUT/$1.h5" --force < /dev/null > "$OUT/$1.log" 2>&1 || warn "$1: herd exited $? (see $OUT/$1.log)"
}

estimate_mib() { # estimate_mib INI: herd check's figure per client, in MiB
    "$HERD" check "$1" | sed -n 's/^memory: \([0-9.]*\) \([KMG]\)iB per client.*/\1 \2/p' |
        awk '{ print $1 * ($2 == "K" ? 1 / 1024 : $2 == "G" ? 1024 : 1) }'
}

table=$OUT/client_memory.txt
job "$OUT/base.ini" idle 1M 0 0 1
base=$(measure base)
say "one rank with one idle client: ${base:-?} MiB ($ROUNDS rounds, median)" | tee "$table"
printf '%-6s %6s %9s %6s %5s %9s %13s %8s %6s\n' kind block inflight file K RSS \
    "measured/cl" "est/cl" ratio | tee -a "$table"
while read -r kind block inflight size ks; do
    [ -n "$kind" ] || continue
    for k in $ks; do
        name=$kind-$block-$inflight-$size-$k
        job "$OUT/$name.ini" "$kind" "$block" "$inflight" "$size" "$k"
        rss=$(measure "$name") est=$(estimate_mib "$OUT/$name.ini")
        awk -v kd="$kind" -v b="$block" -v i="$inflight" -v f="$size" -v k="$k" \
            -v rss="${rss:-0}" -v base="${base:-0}" -v e="${est:-0}" 'BEGIN {
            m = (rss - base) / k
            printf "%-6s %6s %9s %6s %5s %9.1f %9.2f MiB %8.2f %6s\n", kd, b,
                (i == 0 ? "auto" : i), f, k, rss, m, e, (m > 0 ? sprintf("%.2f", e / m) : "-")
        }' | tee -a "$table"
    done
done <<<"$CASES"
