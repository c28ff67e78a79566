#!/usr/bin/env bash
# knfsd_vs_ganesha.sh — the two embedded NFS servers side by side on the
# same job and the same kind of disk: nfs-ganesha (FSAL VFS on a
# loop-mounted xfs image, on the host's CPUs) against the Linux kernel's
# nfsd (nfs-server.sh --server knfsd: a User-Mode Linux guest with one CPU
# and an xfs image as its disk), both `--sync`, 8 threads/workers... as
# each server's own defaults are (ganesha 200 workers, nfsd 8 threads).
# The job, over libnfs NFSv3 with RANKS ranks: write, read and md5 of a
# file per rank (1 MiB calls), then a meta phase (create, stat, rename,
# unlink of FILES files per rank). Both servers run the whole time;
# REPEAT rounds alternate them (the order flips every round). The table:
# medians of MiB/s (write, read, md5) and of mdtest-style items/s per meta
# step, knfsd/ganesha. This is a comparison of two servers, not a target:
# one guest CPU bounds every knfsd figure (docs/architecture.md), so the
# ratios say how far these stand-ins are apart here, not which server is
# faster on a real machine. Needs root; exits 0 whatever the numbers, 2
# when a tool is missing.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
REPEAT=${REPEAT:-3}
RANKS=${RANKS:-4}
SIZE_MB=${SIZE_MB:-32}  # MiB per rank
FILES=${FILES:-200}     # meta files per rank
OUT=${OUT:-./bench-results/knfsd}
HERD=${HERD:-$ROOT/build/herd}
SERVER=$ROOT/cluster-configs/local/nfs-server.sh
PY=/usr/bin/python3

BENCH=knfsd_vs_ganesha
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

bench_require_root "the servers use namespaces and loop devices."
bench_require mpirun:openmpi-bin ganesha.nfsd:nfs-ganesha linux.uml:user-mode-linux \
    rpc.nfsd:nfs-kernel-server
[ -x "$HERD" ] || { warn "$HERD not built"; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$OUT"
work=$(mktemp -d /tmp/herd-bench-knfsd.XXXXXX)
cleanup() {
    for s in ganesha knfsd; do "$SERVER" stop --state "$work/$s" --purge >/dev/null 2>&1; done
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

declare -A url
for s in ganesha knfsd; do
    opts=(--fs xfs --size 2G)
    [ "$s" = knfsd ] && opts+=(--server knfsd)
    url[$s]=$("$SERVER" start --state "$work/$s" "${opts[@]}" | sed -n 1p) ||
        { warn "nfs-server.sh start ${opts[*]} failed"; exit 1; }
done

job() { # job URL
    cat <<EOF
[global]
backend = libnfs
target = $1
file_size = ${SIZE_MB}M
block_size = 1M
sharing = unique
[write]
kind = write
[read]
kind = read
[md5]
kind = md5
[meta]
kind = meta
files = $FILES
file_size = 0
meta_ops = create,stat,rename,unlink,rmdir
EOF
}

raw=$OUT/raw.csv
echo "round,server,figure,value" >"$raw"
for ((round = 1; round <= REPEAT; round++)); do
    order=(ganesha knfsd)
    ((round % 2)) || order=(knfsd ganesha)
    for s in "${order[@]}"; do
        job "${url[$s]}" >"$work/$s.ini"
        h5=$OUT/$s-$round.h5
        if ! "$SERVER" exec --state "$work/$s" -- mpirun --oversubscribe -np "$RANKS" "$HERD" run \
            "$work/$s.ini" -o "$h5" --force >"$OUT/$s-$round.out" 2>&1; then
            warn "$s round $round failed (see $OUT/$s-$round.out)"
            continue
        fi
        REPO=$ROOT "$PY" - "$h5" "$round" "$s" >>"$raw" <<'PY'
import os, sys
sys.path.insert(0, os.path.join(os.environ["REPO"], "analysis"))
import herd_results
path, rnd, server = sys.argv[1:]
with herd_results.load(path) as run:
    for _, ph in run.phases.iterrows():
        if ph["kind"] in ("write", "read", "md5"):
            print(f"{rnd},{server},{ph['phase']} MiB/s,{ph['mib_per_s']:.2f}")
    ops = run.op_summary("meta")
    for _, o in ops.iterrows():
        if o["items"] > 0:
            step = "create" if o["op"] == "open" else o["op"]  # the create step's call
            print(f"{rnd},{server},meta {step} items/s,{o['items_per_s']:.1f}")
PY
        say "round $round: $s done"
    done
done

"$PY" - "$raw" "$OUT/results.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
figures = list(dict.fromkeys(r["figure"] for r in rows))
out = []
print(f"{'figure':24} {'ganesha':>10} {'knfsd':>10} {'knfsd/ganesha':>14}  n")
for fig in figures:
    med = {}
    for s in ("ganesha", "knfsd"):
        v = [float(r["value"]) for r in rows if r["figure"] == fig and r["server"] == s]
        med[s] = (statistics.median(v) if v else float("nan"), len(v))
    ratio = med["knfsd"][0] / med["ganesha"][0] if med["ganesha"][0] else float("nan")
    out.append({"figure": fig, "ganesha": med["ganesha"][0], "knfsd": med["knfsd"][0],
                "ratio": ratio})
    print(f"{fig:24} {med['ganesha'][0]:10.1f} {med['knfsd'][0]:10.1f} {ratio:14.2f}  "
          f"{med['ganesha'][1]}/{med['knfsd'][1]}")
with open(sys.argv[2], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(out[0]))
    w.writeheader()
    w.writerows(out)
PY
say "results in $OUT"
exit 0
