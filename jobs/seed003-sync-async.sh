#!/usr/bin/env bash
# seed003-sync-async.sh — seed 003 on this machine: what does a `sync`
# export cost a metadata-heavy job? (The seed: `mv` of the Python 2.5.4
# tree, about 4200 files and directories, into an NFS home took 5 minutes
# with a `sync` export and 8 seconds with `async`; reading was fast either
# way, the creates and unlinks were slow.)
#
# The embedded userspace server (cluster-configs/local/nfs-server.sh,
# nfs-ganesha on a loop-mounted xfs) is started twice: --sync (ganesha's
# normal behaviour: metadata and COMMITs reach stable storage before the
# reply) and --async (every fsync in ganesha made a no-op, as the kernel's
# `async` export replies before anything is on disk). Each time
# jobs/seed003.ini (create the tree, stat it, mv every file into a second
# tree, remove it) runs over libnfs inside the server's network namespace
# with jobs/herd-batch.sh, RANKS ranks (the seed had one user) plus one
# monitor rank (ganesha.nfsd's CPU and the loop disk every 200 ms). The
# server is stopped after each run, also on error or ^C. Then herd-compare
# prints sync and async side by side (labels sync, async).
#
#   jobs/seed003-sync-async.sh
#
# Environment:
#   RANKS       ranks doing the metadata work (default 1); one more is the monitor
#   FILES       files per rank (default 4000, the seed's tree)
#   MODES       server modes in order (default "sync async"; sync-writes too)
#   OUT         output directory (default ${HERD_RESULTS:-<repo>/results}/seed003-<date>)
#   HERD, HERD_MPIRUN_ARGS (added after --oversubscribe), HERD_PYTHON: as herd-batch.sh
# Output in OUT: runs/<date>-seed003-<np>r-<mode>/ (herd-batch.sh's
# directories), sync.h5 and async.h5 (links to their results), compare/
# (herd-compare -o) and summary.txt (the table printed at the end).
# Needs root (namespaces, loop devices), nfs-ganesha (see
# cluster-configs/local/install.sh), /usr/bin/python3 (for --async) and a
# herd built with libnfs.
# Exit code: 0 when every run exited 0 or 3 and the comparison worked,
# 1 otherwise, 2 for bad settings or missing prerequisites.
set -euo pipefail

ME=seed003-sync-async.sh
log() { printf '%s: %s\n' "$ME" "$*" >&2; }
bad() { log "$*"; exit 2; }

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HERD=${HERD:-$REPO/build/herd}
SERVER=$REPO/cluster-configs/local/nfs-server.sh
JOB=$REPO/jobs/seed003.ini
RANKS=${RANKS:-1}
FILES=${FILES:-4000}
MODES=${MODES:-sync async}
python=${HERD_PYTHON:-/usr/bin/python3}
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

case "${1:-}" in -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
(($# == 0)) || bad "takes no arguments (settings are environment variables; see --help)"
[[ "$RANKS" =~ ^[1-9][0-9]*$ ]] || bad "RANKS: '$RANKS' is not a positive integer"
[[ "$FILES" =~ ^[1-9][0-9]*$ ]] || bad "FILES: '$FILES' is not a positive integer"
read -r -a modes <<<"$MODES"
((${#modes[@]})) || bad "MODES is empty"
for m in "${modes[@]}"; do
    case "$m" in sync | async | sync-writes) ;; *) bad "MODES: '$m' is not sync, async or sync-writes" ;; esac
done
[ "$(id -u)" -eq 0 ] || bad "needs root (the embedded NFS server uses namespaces and loop devices)"
command -v ganesha.nfsd >/dev/null || bad "ganesha.nfsd not found (cluster-configs/local/install.sh installs it)"
[ -x "$HERD" ] || bad "herd binary $HERD not found (build it, or set HERD)"
[[ "$("$HERD" keys 2>/dev/null)" == *libnfs* ]] || bad "$HERD has no libnfs backend"

# The tree is FILES x 20K per rank; 1G of xfs holds the seed's tree many
# times over. Bigger only for big trees.
image_mb=$((RANKS * FILES * 40 / 1024 + 512))
((image_mb >= 1024)) || image_mb=1024
tmp=${TMPDIR:-/tmp}

# shellcheck source=jobs/lib-embedded.sh
. "$REPO/jobs/lib-embedded.sh"
embedded_begin seed003

log "seed 003: $RANKS rank(s) x $FILES files, exports: ${modes[*]}; results in $out"
for m in "${modes[@]}"; do
    embedded_run "$m" "--$m" --set files="$FILES"
done

embedded_finish "seed 003, $RANKS rank(s) x $FILES files over libnfs: ${modes[*]} export (ratio = ops/s vs ${modes[0]}; the seed: sync 5 min, async 8 s)"
