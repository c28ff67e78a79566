#!/usr/bin/env bash
# seed002-threads.sh — seed 002 on this machine: does the file server's
# thread count limit one client's large sequential read? (The seed: a NAS
# with one nfsd thread, dd bs=64k of a >1 GB file at 17 MB/s with one core
# pinned at 100 %; `rpc.nfsd 4`: 27 MB/s.)
#
# The embedded userspace server (cluster-configs/local/nfs-server.sh,
# nfs-ganesha) has no nfsd threads: what it has instead is ganesha's worker
# pool (RPC_Ioq_ThrdMax, nfs-server.sh start --workers N), whose threads
# decode and execute every request. ganesha refuses a pool of 1, so the
# minimum is 2, and (cluster-configs/local/README.md) below 7 the pool still
# has 7 threads: the seed's single thread cannot be reproduced exactly;
# 2 and 4 are the closest.
#
# For each W in $WORKERS: start the server (xfs image, --workers W), run
# jobs/seed002.ini over libnfs inside the server's network namespace with
# jobs/herd-batch.sh (RANKS I/O ranks plus one monitor rank that samples
# ganesha.nfsd's CPU, its busiest thread and the loop disk every 200 ms),
# stop the server (always, also on error or ^C), then compare the runs with
# herd-compare (labels w2, w4, ...) and print ganesha's CPU per phase.
#
#   jobs/seed002-threads.sh
#
# Environment:
#   WORKERS     worker pool sizes, each >= 2 (default "2 4 8 16")
#   RANKS       I/O ranks (default 4); one more rank is the monitor
#   FILE_SIZE   bytes per rank's file (default 256M; the job's own is 1G)
#   OUT         output directory (default ${HERD_RESULTS:-<repo>/results}/seed002-<date>)
#   HERD, HERD_MPIRUN_ARGS (added after --oversubscribe), HERD_PYTHON: as herd-batch.sh
# Output in OUT: runs/<date>-seed002-<np>r-wW/ (herd-batch.sh's directories:
# results.h5, herd.log, launch.txt, report/), wW.h5 (links to them),
# compare/ (compare.csv, compare.md, compare.png, scaling.png... from
# herd-compare -o) and summary.txt (what was printed at the end).
# Needs root (namespaces, loop devices), nfs-ganesha (see
# cluster-configs/local/install.sh) and a herd built with libnfs.
# Exit code: 0 when every run exited 0 or 3 and the comparison worked,
# 1 otherwise, 2 for bad settings or missing prerequisites.
set -euo pipefail

ME=seed002-threads.sh
log() { printf '%s: %s\n' "$ME" "$*" >&2; }
bad() { log "$*"; exit 2; }

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HERD=${HERD:-$REPO/build/herd}
SERVER=$REPO/cluster-configs/local/nfs-server.sh
JOB=$REPO/jobs/seed002.ini
WORKERS=${WORKERS:-2 4 8 16}
RANKS=${RANKS:-4}
FILE_SIZE=${FILE_SIZE:-256M}
python=${HERD_PYTHON:-/usr/bin/python3}
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

case "${1:-}" in -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
(($# == 0)) || bad "takes no arguments (settings are environment variables; see --help)"
read -r -a workers <<<"$WORKERS"
((${#workers[@]})) || bad "WORKERS is empty"
for w in "${workers[@]}"; do
    if ! [[ "$w" =~ ^[0-9]+$ ]] || ((w < 2)); then
        bad "WORKERS: '$w' is not a number >= 2 (ganesha refuses fewer)"
    fi
done
[[ "$RANKS" =~ ^[1-9][0-9]*$ ]] || bad "RANKS: '$RANKS' is not a positive integer"
[[ "$FILE_SIZE" =~ ^([1-9][0-9]*)([KMGT]?)$ ]] || bad "FILE_SIZE: '$FILE_SIZE' is not a size like 256M or 1G"
case "${BASH_REMATCH[2]}" in
    "") file_bytes=${BASH_REMATCH[1]} ;;
    K) file_bytes=$((BASH_REMATCH[1] << 10)) ;;
    M) file_bytes=$((BASH_REMATCH[1] << 20)) ;;
    G) file_bytes=$((BASH_REMATCH[1] << 30)) ;;
    T) file_bytes=$((BASH_REMATCH[1] << 40)) ;;
esac
[ "$(id -u)" -eq 0 ] || bad "needs root (the embedded NFS server uses namespaces and loop devices)"
command -v ganesha.nfsd >/dev/null || bad "ganesha.nfsd not found (cluster-configs/local/install.sh installs it)"
[ -x "$HERD" ] || bad "herd binary $HERD not found (build it, or set HERD)"
[[ "$("$HERD" keys 2>/dev/null)" == *libnfs* ]] || bad "$HERD has no libnfs backend"

# The xfs image: every rank's file plus a quarter and 512M for xfs itself,
# at least 1G. It is sparse, but the data lands on TMPDIR's file system.
image_mb=$((RANKS * file_bytes * 5 / 4 / 1048576 + 512))
((image_mb >= 1024)) || image_mb=1024
tmp=${TMPDIR:-/tmp}
avail_mb=$(($(df --output=avail -B1 "$tmp" | tail -n 1) / 1048576))
((avail_mb > image_mb)) || bad "$tmp has ${avail_mb}M free, the server's image needs ${image_mb}M (smaller FILE_SIZE or RANKS, or another TMPDIR)"

# shellcheck source=jobs/lib-embedded.sh
. "$REPO/jobs/lib-embedded.sh"
embedded_begin seed002

log "seed 002: $RANKS ranks x $FILE_SIZE, 64K calls, ganesha workers ${workers[*]}; results in $out"
for w in "${workers[@]}"; do
    embedded_run "w$w" "--workers $w" --set file_size="$FILE_SIZE"
done

# ganesha's CPU and its busiest thread per run and phase (embedded_finish calls it).
# shellcheck disable=SC2317
ganesha_per_phase() {
    echo
    echo "ganesha.nfsd per phase (cpu: cores busy, mean; busiest thread: max, 1.0 = a core pinned)"
    REPO=$REPO "$python" - "${links[@]}" <<'EOF'
import os, sys
sys.path.insert(0, os.path.join(os.environ["REPO"], "analysis"))
import herd_results
print(f"{'run':8} {'phase':8} {'MiB/s':>9} {'cpu':>6} {'busiest':>8} {'threads':>8}")
for path in sys.argv[1:]:
    with herd_results.load(path) as run:
        procs = run.processes()
        procs = procs[procs["name"] == "ganesha.nfsd"]
        for _, ph in run.phases.iterrows():
            p = herd_results.meeting(procs, ph["t_start"], ph["t_end"])
            if len(p):
                cpu, top, th = p["cpu"].mean(), p["cpu_max_thread"].max(), p["threads"].max()
                print(f"{run.label:8} {ph['phase']:8} {ph['mib_per_s']:9.1f} {cpu:6.2f} {top:8.2f} {th:8.0f}")
            else:
                print(f"{run.label:8} {ph['phase']:8} {ph['mib_per_s']:9.1f}      -        -        -")
EOF
}

embedded_finish "seed 002, $RANKS ranks x $FILE_SIZE over libnfs: ganesha worker pool ${workers[*]} (ratio = MiB/s vs w${workers[0]})" \
    ganesha_per_phase
