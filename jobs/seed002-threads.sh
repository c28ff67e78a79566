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
# With DISK_LATENCY (e.g. read=5ms: nfs-server.sh --disk-latency) the
# guest's disk takes time, as the seed's did, and the reads must reach
# it: one server for every thread count (changed live with `threads`),
# the files written once (a run of its own, kept), then per thread count
# and ladder step a read run of its own after the guest's page cache is
# dropped (the agent's drop-caches), ranks_active = that step, random
# 64K reads of each block once (access = random, iterations = 1: no read
# finds a block an earlier read brought in; a sequential read would let
# the server's read-ahead hide the disk from the thread count), each step
# STEP_DURATION long at most. Every read then waits for the disk in an
# nfsd thread: the threads bound how many waits overlap.
#
#   jobs/seed002-threads.sh
#   DISK_LATENCY=read=5ms THREADS="1 2 4 8 16" RANKS=16 jobs/seed002-threads.sh
#
# Environment:
#   THREADS     nfsd thread counts (default "1 2 4 8")
#   RANKS       client ranks, the ladder's top (default 8)
#   FILE_SIZE   each rank's file (default 64M)
#   DISK_LATENCY  none (default) or read=T,write=T,flush=T (the guest's disk)
#   STEP_DURATION  with DISK_LATENCY: each read step's deadline (default 10s)
#   OUT         output directory (default ${HERD_RESULTS:-<repo>/results}/seed002-threads-<date>)
#   HERD, HERD_MPIRUN_ARGS (added after --oversubscribe), HERD_PYTHON: as herd-batch.sh
# Output in OUT: runs/<date>-seed002-threads-<np>r-tN/ (herd-batch.sh's
# directories), tN.h5 (links to their results), compare/ (herd-compare
# -o), threads.csv (the table) and summary.txt (what was printed at the
# end). With DISK_LATENCY: runs/<date>-cold-read-<np>r-tN.rK/ and tN.rK.h5
# per thread count N and step K (the write run: write.h5, in no table),
# cold-write.ini and cold-read.ini (the two jobs).
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
DISK_LATENCY=${DISK_LATENCY:-none}
STEP_DURATION=${STEP_DURATION:-10s}
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
[[ "$STEP_DURATION" =~ ^[1-9][0-9]*(ms|s|m)$ ]] || bad "STEP_DURATION: '$STEP_DURATION' is not a duration like 10s"
disk_spec=$(python3 "$REPO/cluster-configs/local/disklatency.py" check "$DISK_LATENCY") || exit 2
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

# cold_jobs: the DISK_LATENCY runs' two jobs in $out: every rank writes its
# file (kept, under a fixed run id), and reads it back, random 64K
# blocks, each once, in one ladder step (ranks_active, set per run).
cold_jobs() {
    local global="[global]
backend = libnfs
target = nfs://nfs-server/export?version=3
sharing = unique
fileset = seed002-cold
file_size = 64M
run_id = seed002-cold-$$
keep = yes"
    printf '; seed002-threads.sh, DISK_LATENCY: the files, written once\n%s\n\n[write]\nkind = write\nblock_size = 1M\n' \
        "$global" >"$out/cold-write.ini"
    printf '; seed002-threads.sh, DISK_LATENCY: one read step from the disk\n%s\n\n[read]\nkind = read\nblock_size = 64K\naccess = random\niterations = 1\nranks_active = 1\n' \
        "$global" >"$out/cold-read.ini"
}

# cold_sweep: DISK_LATENCY's runs on one server (see the top).
cold_sweep() {
    local n k steps=()
    for ((k = 1; k < RANKS; k *= 2)); do steps+=("$k"); done
    steps+=("$RANKS")
    cold_jobs
    embedded_start cold "--server knfsd --threads ${threads[0]} --disk-latency $disk_spec"
    JOB=$out/cold-write.ini
    embedded_herd write "${EMBEDDED_SETS[@]}" --set file_size="$FILE_SIZE"
    ((failed == 0)) || { log "the write run failed: no files to read"; exit 1; }
    links=()  # (the write run belongs to no thread count)
    JOB=$out/cold-read.ini
    for n in "${threads[@]}"; do
        "$SERVER" threads --state "$state" "$n" || { log "threads $n failed"; exit 1; }
        for k in "${steps[@]}"; do
            "$SERVER" guest --state "$state" -- drop-caches >/dev/null ||
                { log "the guest's drop-caches failed"; exit 1; }
            embedded_herd "t$n.r$k" "${EMBEDDED_SETS[@]}" --set file_size="$FILE_SIZE" \
                --set read.ranks_active="$k" --set read.step_duration="$STEP_DURATION"
        done
    done
    stop_server
}

log "seed 002 threads: nfsd threads ${threads[*]}, a read ladder up to $RANKS ranks x $FILE_SIZE, 64K calls, disk latency $disk_spec; results in $out"
if [ "$disk_spec" = none ]; then
    for n in "${threads[@]}"; do
        embedded_run "t$n" "--server knfsd --threads $n" --set file_size="$FILE_SIZE"
    done
else
    cold_sweep
fi

# Per thread count and ladder step: MiB/s, requests/s, woken share, CPU.
# shellcheck disable=SC2317,SC2154 # called by embedded_finish; out, links: lib-embedded.sh
threads_table() {
    echo
    echo "per nfsd thread count and ladder step: MiB/s; pkts/s = requests reaching nfsd's threads per second; woken = their share that found an idle thread; cpu = the guest's one CPU, busy share"
    [ "$disk_spec" = none ] ||
        echo "disk latency $disk_spec: each step a run of its own after the guest's caches were dropped; random 64K reads, each block once, $STEP_DURATION at most"
    REPO=$REPO "$python" - "$out/threads.csv" "${links[@]}" <<'PY'
import csv, math, os, sys
sys.path.insert(0, os.path.join(os.environ["REPO"], "analysis"))
import herd_results
rows = []
for path in sys.argv[2:]:
    # tN.h5, or tN.rK.h5 (one ladder step)
    threads = os.path.basename(path)[1:-3].partition(".")[0]
    with herd_results.load(path) as run:
        steps = run.ladder_steps("read")
        for _, s in steps.iterrows():
            rows.append({"threads": int(threads), "ranks": int(s["active_ranks"]),
                         "mib_per_s": float(s["mib_per_s"]),
                         "pkts_per_s": float(s["nfsd_packets_per_s"]),
                         "woken": float(s["nfsd_woken_share"]),
                         "cpu": float(s["cpu_mean"])})
rows.sort(key=lambda r: (r["threads"], r["ranks"]))
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
