#!/usr/bin/env bash
# seed003-sync-async.sh — seed 003 on this machine: what does a `sync`
# export cost a metadata-heavy job? (The seed: `mv` of the Python 2.5.4
# tree, about 4200 files and directories, into an NFS home took 5 minutes
# with a `sync` export and 8 seconds with `async`; reading was fast either
# way, the creates and unlinks were slow.)
#
# The embedded userspace server (cluster-configs/local/nfs-server.sh,
# nfs-ganesha on a loop-mounted xfs) is started twice: --sync (COMMITs
# fsynced, and the export mounted with dirsync so that every CREATE,
# RENAME, REMOVE, MKDIR, RMDIR is on the disk before the reply, as a kernel
# nfsd `sync` export's commit_metadata does) and --async (no dirsync,
# every fsync in ganesha made a no-op, as the kernel's `async` export
# replies before anything is on disk). Each time
# jobs/seed003.ini (create the tree, stat it, mv every file into a second
# tree, remove it) runs over libnfs inside the server's network namespace
# with jobs/herd-batch.sh, RANKS ranks (the seed had one user) plus one
# monitor rank (ganesha.nfsd's CPU and the loop disk every 200 ms). The
# server is stopped after each run, also on error or ^C. Then herd-compare
# prints sync and async side by side (labels sync, async), then a table
# per step: seconds per mode, the disk's writes and flushes per file, and
# the sync/async time ratio, with the mechanism named (docs/seed003.md).
# With NFS_SERVER=knfsd the server is the Linux kernel's nfsd (nfs-server.sh
# --server knfsd: a User-Mode Linux guest with one CPU) exporting its xfs
# disk `sync` or `async`, the real export options of the seed; the monitor
# is the guest's node_exporter (its disk ubda), no monitor rank. With
# DISK_LATENCY (knfsd only) the guest's disk takes time (nfs-server.sh
# --disk-latency: flush=8ms is a spinning disk's cache flush), so that
# the flushes cost what they cost on the seed's server. With ROUNDS > 1
# the modes alternate ROUNDS times (sync, async, sync, async...) and the
# per-step table gives medians, with every round's sync/async ratio.
#
#   jobs/seed003-sync-async.sh
#   NFS_SERVER=knfsd DISK_LATENCY=flush=8ms ROUNDS=3 jobs/seed003-sync-async.sh
#
# Environment:
#   RANKS       ranks doing the metadata work (default 1); one more is the monitor
#   FILES       files per rank (default 4000, the seed's tree)
#   MODES       server modes in order (default "sync async"; sync-writes too,
#               ganesha only)
#   NFS_SERVER  ganesha (default) or knfsd
#   DISK_LATENCY  knfsd's disk: none (default) or read=T,write=T,flush=T
#               (nfs-server.sh --disk-latency)
#   ROUNDS      times each mode runs, alternating (default 1)
#   OUT         output directory (default ${HERD_RESULTS:-<repo>/results}/seed003-<date>)
#   HERD, HERD_MPIRUN_ARGS (added after --oversubscribe), HERD_PYTHON: as herd-batch.sh
# Output in OUT: runs/<date>-seed003-<np>r-<mode>/ (herd-batch.sh's
# directories), sync.h5 and async.h5 (links to their results; with ROUNDS
# > 1 sync.1.h5, async.1.h5, sync.2.h5...), compare/
# (herd-compare -o), steps.csv (the per-step table) and summary.txt (the
# tables printed at the end).
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
NFS_SERVER=${NFS_SERVER:-ganesha}
DISK_LATENCY=${DISK_LATENCY:-none}
ROUNDS=${ROUNDS:-1}
python=${HERD_PYTHON:-/usr/bin/python3}
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

case "${1:-}" in -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
(($# == 0)) || bad "takes no arguments (settings are environment variables; see --help)"
[[ "$RANKS" =~ ^[1-9][0-9]*$ ]] || bad "RANKS: '$RANKS' is not a positive integer"
[[ "$FILES" =~ ^[1-9][0-9]*$ ]] || bad "FILES: '$FILES' is not a positive integer"
[[ "$ROUNDS" =~ ^[1-9][0-9]?$ ]] || bad "ROUNDS: '$ROUNDS' is not a count 1..99"
disk_spec=$(python3 "$REPO/cluster-configs/local/disklatency.py" check "$DISK_LATENCY") || exit 2
read -r -a modes <<<"$MODES"
((${#modes[@]})) || bad "MODES is empty"
case "$NFS_SERVER" in
    ganesha) server_opts="" ;;
    knfsd) server_opts="--server knfsd --disk-latency $disk_spec" ;;
    *) bad "NFS_SERVER: '$NFS_SERVER' is not ganesha or knfsd" ;;
esac
[ "$disk_spec" = none ] || [ "$NFS_SERVER" = knfsd ] ||
    bad "DISK_LATENCY is kernel nfsd's (NFS_SERVER=knfsd): ganesha's disk has no delay"
for m in "${modes[@]}"; do
    case "$m" in sync | async) ;;
        sync-writes) [ "$NFS_SERVER" = ganesha ] || bad "MODES: sync-writes is ganesha's" ;;
        *) bad "MODES: '$m' is not sync, async or sync-writes" ;;
    esac
done
[ "$(id -u)" -eq 0 ] || bad "needs root (the embedded NFS server uses namespaces and loop devices)"
if [ "$NFS_SERVER" = ganesha ]; then
    command -v ganesha.nfsd >/dev/null || bad "ganesha.nfsd not found (cluster-configs/local/install.sh installs it)"
else
    command -v linux.uml >/dev/null || bad "linux.uml not found (cluster-configs/local/install.sh installs user-mode-linux)"
fi
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

log "seed 003: $RANKS rank(s) x $FILES files, $NFS_SERVER exports: ${modes[*]}, disk latency $disk_spec, $ROUNDS round(s); results in $out"
for ((r = 1; r <= ROUNDS; r++)); do
    for m in "${modes[@]}"; do
        name=$m
        ((ROUNDS == 1)) || name=$m.$r
        # (the mode is the run's label: herd-compare takes the rounds of
        # a mode as repeats, their median and spread)
        embedded_run "$name" "$server_opts --$m" --set files="$FILES" --set label="$m"
    done
done

# Per step: seconds under each mode, sync/async (time ratio: > 1 = sync
# slower) and the disk's writes and flushes per item in the step (the
# monitor's disks table): under --sync every CREATE/RENAME/REMOVE/MKDIR/
# RMDIR forces the file system's log to the disk before the reply (the
# mechanism: a write and a cache flush each), under --async nothing is
# written while the step runs.
# shellcheck disable=SC2317,SC2154 # called by embedded_finish; out, links: lib-embedded.sh
steps_per_mode() {
    echo
    echo "per step: seconds, sync/async = time ratio (> 1: sync slower), wr/item and fl/item = the export disk's writes and flushes per file or directory"
    if [ "$NFS_SERVER" = knfsd ]; then
        echo "mechanism: kernel nfsd, export option sync: commit_metadata forces xfs's log to the disk after each namespace op, before the reply; async: the reply comes first"
        echo "disk latency: $disk_spec$( ((ROUNDS == 1)) || echo "; medians of $ROUNDS rounds, then each round's sync/async")"
    else
        echo "mechanism: --sync mounts the export with dirsync (each namespace op commits the fs log before ganesha replies, as kernel nfsd's commit_metadata); --async: no dirsync, ganesha's fsyncs are no-ops"
    fi
    REPO=$REPO "$python" - "$out/steps.csv" "${links[@]}" <<'PY'
import csv, os, sys
sys.path.insert(0, os.path.join(os.environ["REPO"], "analysis"))
import herd_results
import statistics
runs = {}  # phase -> mode -> [(seconds, writes, flushes, files) per round]
for path in sys.argv[2:]:
    mode = os.path.basename(path)[:-3].partition(".")[0]
    with herd_results.load(path) as run:
        disks = run.disks()
        for _, ph in run.phases.iterrows():
            a = run.phase_attrs(ph["phase"])
            t0, t1 = a["t_start"], a["t_end"]
            d = herd_results.meeting(disks, t0, t1) if len(disks) else disks
            wr = float(d["writes"].sum()) if len(d) else float("nan")
            fl = float(d["flushes"].sum()) if len(d) and "flushes" in d else float("nan")
            files = int(a.get("files", 0)) * int(a.get("summary_ranks", 1))
            runs.setdefault(ph["phase"], {}).setdefault(mode, []).append((t1 - t0, wr, fl, files))
modes = list(dict.fromkeys(os.path.basename(p)[:-3].partition(".")[0] for p in sys.argv[2:]))
def median(rounds, i):
    return statistics.median(r[i] for r in rounds) if rounds else float("nan")
rows = []
for phase, per in runs.items():
    r = {"phase": phase}
    for m in modes:
        rounds = per.get(m, [])
        sec, wr, fl = median(rounds, 0), median(rounds, 1), median(rounds, 2)
        files = rounds[0][3] if rounds else 0
        r[f"{m}_s"] = f"{sec:.2f}"
        r[f"{m}_wr_per_item"] = f"{wr / files:.2f}" if files and wr == wr else "-"
        r[f"{m}_fl_per_item"] = f"{fl / files:.2f}" if files and fl == fl else "-"
    sync, asyn = per.get("sync", []), per.get("async", [])
    if sync and asyn and median(asyn, 0) > 0:
        r["sync_over_async"] = f"{median(sync, 0) / median(asyn, 0):.2f}"
        # (each round's sync over the same round's async)
        r["rounds"] = " ".join(f"{s[0] / a[0]:.2f}" for s, a in zip(sync, asyn) if a[0] > 0)
    else:
        r["sync_over_async"] = r["rounds"] = "-"
    rows.append(r)
with open(sys.argv[1], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
head = f"{'step':8}" + "".join(f" {m + ' s':>12} {m + ' wr/item':>16} {m + ' fl/item':>16}"
                               for m in modes) + f" {'sync/async':>10}  rounds"
print(head)
for r in rows:
    print(f"{r['phase']:8}" + "".join(f" {r[m + '_s']:>12} {r[m + '_wr_per_item']:>16}"
                                      f" {r[m + '_fl_per_item']:>16}" for m in modes)
          + f" {r['sync_over_async']:>10}  {r['rounds']}")
PY
}

embedded_finish "seed 003, $RANKS rank(s) x $FILES files over libnfs, $NFS_SERVER: ${modes[*]} export (ratio = ops/s vs ${modes[0]}; the seed: sync 5 min, async 8 s)" \
    steps_per_mode
