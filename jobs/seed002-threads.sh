#!/usr/bin/env bash
# seed002-threads.sh — seed 002's thread half on this machine: the Linux
# kernel's nfsd with 1, 2, 4, 8 threads, each read by a load ladder of 1,
# 2, 4, ... RANKS clients. (The seed: one nfsd thread, 17 MB/s with the
# thread pinning a core; `rpc.nfsd 4`: 27 MB/s.)
#
# For each thread count N: start the embedded kernel nfsd
# (cluster-configs/local/nfs-server.sh --server knfsd --threads N: a
# User-Mode Linux guest with one CPU exporting an xfs disk), run
# jobs/seed002-threads.ini inside the server's network namespace with
# jobs/herd-batch.sh (RANKS ranks; rank 0 scrapes the guest's
# node_exporter every 500 ms), stop the server. Then herd-compare prints
# the runs side by side and a table gives, per thread count and ladder
# step (active ranks): MiB/s, kernel nfsd's requests per second and the
# share of them that found an idle thread (pool_stats: "woken"), and the
# guest's CPU: where throughput stops growing, and why.
#
#   jobs/seed002-threads.sh
#
# Environment:
#   THREADS     nfsd thread counts (default "1 2 4 8")
#   RANKS       client ranks, the ladder's top (default 8)
#   FILE_SIZE   each rank's file (default 64M)
#   OUT         output directory (default ${HERD_RESULTS:-<repo>/results}/seed002-threads-<date>)
#   HERD, HERD_MPIRUN_ARGS (added after --oversubscribe), HERD_PYTHON: as herd-batch.sh
# Output in OUT: runs/<date>-seed002-threads-<np>r-tN/ (herd-batch.sh's
# directories), tN.h5 (links to their results), compare/ (herd-compare
# -o), threads.csv (the table) and summary.txt (what was printed at the
# end).
# Needs root (namespaces), user-mode-linux and nfs-kernel-server (see
# cluster-configs/local/install.sh) and a herd built with libnfs and
# libcurl. One guest CPU bounds the absolute figures: the sweep shows the
# shape (where more threads stop paying), not a NAS's MB/s.
# Exit code: 0 when every run exited 0 or 3 and the comparison worked,
# 1 otherwise, 2 for bad settings or missing prerequisites.
set -euo pipefail

ME=seed002-threads.sh
log() { printf '%s: %s\n' "$ME" "$*" >&2; }
bad() { log "$*"; exit 2; }

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HERD=${HERD:-$REPO/build/herd}
SERVER=$REPO/cluster-configs/local/nfs-server.sh
JOB=$REPO/jobs/seed002-threads.ini
THREADS=${THREADS:-1 2 4 8}
RANKS=${RANKS:-8}
FILE_SIZE=${FILE_SIZE:-64M}
python=${HERD_PYTHON:-/usr/bin/python3}
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

case "${1:-}" in -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
(($# == 0)) || bad "takes no arguments (settings are environment variables; see --help)"
read -r -a threads <<<"$THREADS"
((${#threads[@]})) || bad "THREADS is empty"
for n in "${threads[@]}"; do
    [[ "$n" =~ ^[1-9][0-9]*$ ]] && ((n <= 1024)) || bad "THREADS: '$n' is not a count 1..1024"
done
[[ "$RANKS" =~ ^[1-9][0-9]*$ ]] || bad "RANKS: '$RANKS' is not a positive integer"
[[ "$FILE_SIZE" =~ ^[1-9][0-9]*[KMG]$ ]] || bad "FILE_SIZE: '$FILE_SIZE' is not a size like 64M"
[ "$(id -u)" -eq 0 ] || bad "needs root (the embedded server uses namespaces)"
command -v linux.uml >/dev/null || bad "linux.uml not found (cluster-configs/local/install.sh installs user-mode-linux)"
[ -x "$HERD" ] || bad "herd binary $HERD not found (build it, or set HERD)"
keys=$("$HERD" keys 2>/dev/null) || bad "$HERD keys failed"
[[ "$keys" == *libnfs* ]] || bad "$HERD has no libnfs backend"

# The guest's disk: every rank's file and 512M for xfs, at least 1G.
case "$FILE_SIZE" in
    *K) file_mb=1 ;;
    *M) file_mb=${FILE_SIZE%M} ;;
    *G) file_mb=$((${FILE_SIZE%G} * 1024)) ;;
esac
image_mb=$((RANKS * file_mb + 512))
((image_mb >= 1024)) || image_mb=1024
tmp=${TMPDIR:-/tmp}

# shellcheck source=jobs/lib-embedded.sh
. "$REPO/jobs/lib-embedded.sh"
embedded_begin seed002-threads

log "seed 002 threads: nfsd threads ${threads[*]}, a read ladder up to $RANKS ranks x $FILE_SIZE, 64K calls; results in $out"
for n in "${threads[@]}"; do
    embedded_run "t$n" "--server knfsd --threads $n" --set file_size="$FILE_SIZE"
done

# Per thread count and ladder step: MiB/s, requests/s, woken share, CPU.
# shellcheck disable=SC2317,SC2154 # called by embedded_finish; out, links: lib-embedded.sh
threads_table() {
    echo
    echo "per nfsd thread count and ladder step: MiB/s; pkts/s = requests reaching nfsd's threads per second; woken = their share that found an idle thread; cpu = the guest's one CPU, busy share"
    REPO=$REPO "$python" - "$out/threads.csv" "${links[@]}" <<'PY'
import csv, math, os, sys
sys.path.insert(0, os.path.join(os.environ["REPO"], "analysis"))
import herd_results
rows = []
for path in sys.argv[2:]:
    threads = os.path.basename(path)[1:-3]
    with herd_results.load(path) as run:
        steps = run.ladder_steps("read")
        for _, s in steps.iterrows():
            rows.append({"threads": int(threads), "ranks": int(s["active_ranks"]),
                         "mib_per_s": float(s["mib_per_s"]),
                         "pkts_per_s": float(s["nfsd_packets_per_s"]),
                         "woken": float(s["nfsd_woken_share"]),
                         "cpu": float(s["cpu_mean"])})
with open(sys.argv[1], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
def pct(v):
    return "-" if math.isnan(v) else f"{100 * v:.0f}%"
print(f"{'threads':>7} {'ranks':>5} {'MiB/s':>8} {'pkts/s':>8} {'woken':>6} {'cpu':>5}")
for r in rows:
    pk = "-" if math.isnan(r["pkts_per_s"]) else f"{r['pkts_per_s']:.0f}"
    print(f"{r['threads']:>7} {r['ranks']:>5} {r['mib_per_s']:>8.1f} {pk:>8} {pct(r['woken']):>6} {pct(r['cpu']):>5}")
PY
}

embedded_finish "seed 002 threads, kernel nfsd in one guest CPU: read ladder up to $RANKS ranks x $FILE_SIZE per nfsd thread count ${threads[*]} (ratio = MiB/s vs t${threads[0]})" \
    threads_table
