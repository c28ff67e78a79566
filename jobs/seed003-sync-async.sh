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
# modes alternate ROUNDS times (sync, async, sync, async...), each run on
# a fresh server, stopped after the run, also on error or ^C. Then
# herd-compare prints the modes side by side (labels sync, async; the
# rounds of a mode are its repeats), then a table per step: per mode the
# time per item (median of the rounds and their lowest-highest) and the
# disk's writes and flushes per item, the sync/async time ratio with the
# range of the rounds' own ratios, the mechanism named (docs/seed003.md),
# and a mark of what the data can carry: "no measured difference" when
# sync added no flushes per item (stat: nothing to commit) or the modes'
# ranges overlap, "not judged (1 round: no spread)" with ROUNDS=1 (a
# single ratio is no finding), else "sync slower" or "sync faster".
# With NFS_SERVER=knfsd the server is the Linux kernel's nfsd (nfs-server.sh
# --server knfsd: a User-Mode Linux guest with one CPU) exporting its xfs
# disk `sync` or `async`, the real export options of the seed; the monitor
# is the guest's node_exporter (its disk ubda), no monitor rank. With
# DISK_LATENCY (knfsd only) the guest's disk takes time (nfs-server.sh
# --disk-latency: flush=8ms is a spinning disk's cache flush), so that
# the flushes cost what they cost on the seed's server. The defaults (500
# files, 3 rounds: six runs) took 4.6 minutes on a busy 2-CPU machine
# against ganesha (docs/seed003.md); FILES=4000 is the seed's tree.
#
#   jobs/seed003-sync-async.sh
#   NFS_SERVER=knfsd DISK_LATENCY=flush=8ms ROUNDS=3 jobs/seed003-sync-async.sh
#
# Environment:
#   RANKS       ranks doing the metadata work (default 1); one more is the monitor
#   FILES       files per rank (default 500; 4000 is the seed's tree)
#   MODES       server modes in order (default "sync async"; sync-writes too,
#               ganesha only)
#   NFS_SERVER  ganesha (default) or knfsd
#   DISK_LATENCY  knfsd's disk: none (default) or read=T,write=T,flush=T
#               (nfs-server.sh --disk-latency)
#   ROUNDS      times each mode runs, alternating (default 3; 1 gives no
#               spread, so no step is marked sync slower or faster)
#   OUT         output directory (default ${HERD_RESULTS:-<repo>/results}/seed003-<date>)
#   HERD, HERD_MPIRUN_ARGS (added after --oversubscribe), HERD_PYTHON: as herd-batch.sh
# Output in OUT: runs/<date>-seed003-<np>r-<mode>/ (herd-batch.sh's
# directories), sync.1.h5, async.1.h5, sync.2.h5... (links to their
# results; sync.h5 and async.h5 with ROUNDS=1), compare/ (herd-compare -o),
# steps.csv (the per-step table: MODE_s, MODE_ms_per_item and its _min,
# _max, MODE_wr_per_item, MODE_fl_per_item, sync_over_async, rounds (each
# round's ratio), ratio_min, ratio_max, mark) and summary.txt (the tables
# printed at the end).
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
FILES=${FILES:-500}
MODES=${MODES:-sync async}
NFS_SERVER=${NFS_SERVER:-ganesha}
DISK_LATENCY=${DISK_LATENCY:-none}
ROUNDS=${ROUNDS:-3}
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

# Per step and mode: the time per item (file) as the median of the rounds
# and their lowest-highest, the disk's writes and flushes per item (the
# monitor's disks table: under --sync every CREATE/RENAME/REMOVE/MKDIR/
# RMDIR forces the file system's log to the disk before the reply, a
# write and a cache flush each; under --async nothing is written while the
# step runs), sync/async (time ratio of the medians, > 1 = sync slower)
# with the range of each round's own ratio, and the mark: what the data
# can carry. "no measured difference" when sync added fewer than 0.5
# flushes (else writes) per item over async (no mechanism at work: stat)
# or the two modes' ranges overlap; "not judged" with one round (no
# spread) unless the flush rule marks it; else sync slower or faster.
# shellcheck disable=SC2317,SC2154 # called by embedded_finish; out, links: lib-embedded.sh
steps_per_mode() {
    echo
    echo "per step: ms/item = time per file or directory, median of the rounds (lowest-highest); wr/item and fl/item = the export disk's writes and flushes per item (medians); sync/async = time ratio of the medians (> 1: sync slower), (the rounds' own ratios, lowest-highest)"
    echo "mark: no measured difference = sync added under 0.5 flushes (else writes) per item over async, or the modes' ranges overlap; not judged = 1 round, no spread to judge a time ratio by"
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
from herd_compare_groups import Spread, overlap
ADDED_FLUSHES = 0.5  # per item: the mechanism is at least one per namespace op
nan = float("nan")
runs = {}  # phase -> mode -> [(seconds, writes, flushes, files) per round]
for path in sys.argv[2:]:
    mode = os.path.basename(path)[:-3].partition(".")[0]
    with herd_results.load(path) as run:
        disks = run.disks()
        for _, ph in run.phases.iterrows():
            a = run.phase_attrs(ph["phase"])
            t0, t1 = a["t_start"], a["t_end"]
            d = herd_results.meeting(disks, t0, t1) if len(disks) else disks
            # (a sample counts by the share of its interval inside the
            # step: a step shorter than a sample takes no whole sample of
            # its neighbours' flushes)
            share = ((d["t"].clip(upper=t1) - (d["t"] - d["dt"]).clip(lower=t0)) / d["dt"]
                     if len(d) else None)
            wr = float((d["writes"] * share).sum()) if len(d) else nan
            fl = float((d["flushes"] * share).sum()) if len(d) and "flushes" in d else nan
            files = int(a.get("files", 0)) * int(a.get("summary_ranks", 1))
            runs.setdefault(ph["phase"], {}).setdefault(mode, []).append((t1 - t0, wr, fl, files))
modes = list(dict.fromkeys(os.path.basename(p)[:-3].partition(".")[0] for p in sys.argv[2:]))

def spread(rounds, i, per_item=1.0):
    """Spread of column i over the rounds, divided by each round's files times per_item."""
    return Spread([r[i] / r[3] * per_item for r in rounds if r[3] and r[i] == r[i]])

def cell(v, fmt="{:.2f}"):
    return fmt.format(v) if v == v else "-"

def disk_added(per):
    """Flushes (else writes) per item sync added over async, by each
    mode's fewest over its rounds; NaN when unknown. A step shorter than a
    sample shares samples with its neighbours, whose flushes can only add
    to its own: the round with the fewest is the one least mixed with
    them (a sync step that commits does so in every round)."""
    for i in (2, 1):
        s, a = spread(per.get("sync", []), i).lo, spread(per.get("async", []), i).lo
        if s == s and a == a:
            return s - a
    return nan

def mark(per, ms):
    """The finding a step's data can carry (docs/seed003.md)."""
    if "sync" not in ms or "async" not in ms or not ms["sync"].n or not ms["async"].n:
        return "-"
    added = disk_added(per)
    if added == added and added < ADDED_FLUSHES:
        return "no measured difference (sync added no flushes)"
    if min(ms["sync"].n, ms["async"].n) < 2:
        return "not judged (1 round: no spread)"
    if overlap(ms["sync"], ms["async"]):
        return "no measured difference (rounds overlap)"
    return "sync slower" if ms["sync"].lo > ms["async"].hi else "sync faster"

rows = []
for phase, per in runs.items():
    r = {"phase": phase}
    ms = {}
    for m in modes:
        rounds = per.get(m, [])
        ms[m] = spread(rounds, 0, 1000.0)
        r[f"{m}_s"] = cell(Spread([x[0] for x in rounds]).median)
        r[f"{m}_wr_per_item"] = cell(spread(rounds, 1).median)
        r[f"{m}_fl_per_item"] = cell(spread(rounds, 2).median)
        r[f"{m}_ms_per_item"] = cell(ms[m].median)
        r[f"{m}_ms_per_item_min"] = cell(ms[m].lo)
        r[f"{m}_ms_per_item_max"] = cell(ms[m].hi)
    sync, asyn = per.get("sync", []), per.get("async", [])
    # (each round's sync over the same round's async)
    each = Spread([s[0] / a[0] for s, a in zip(sync, asyn) if a[0] > 0])
    both = "sync" in ms and "async" in ms and ms["async"].median > 0
    r["sync_over_async"] = cell(ms["sync"].median / ms["async"].median) if both else "-"
    r["rounds"] = " ".join(f"{v:.2f}" for v in each.values) if each.n else "-"
    r["ratio_min"], r["ratio_max"] = (cell(each.lo), cell(each.hi)) if each.n else ("-", "-")
    r["mark"] = mark(per, ms)
    rows.append(r)
with open(sys.argv[1], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)

def ms_cell(r, m):
    lo, hi = r[f"{m}_ms_per_item_min"], r[f"{m}_ms_per_item_max"]
    return r[f"{m}_ms_per_item"] + ("" if lo == hi else f" ({lo}-{hi})")

def ratio_cell(r):
    if r["sync_over_async"] == "-":
        return "-"
    if len(r["rounds"].split()) < 2:
        return f"{r['sync_over_async']} (1 round: no spread)"
    return f"{r['sync_over_async']} ({r['ratio_min']}-{r['ratio_max']})"

print(f"{'step':8}" + "".join(f" {m + ' ms/item':>24} {m + ' wr/item':>14} {m + ' fl/item':>14}"
                              for m in modes) + f" {'sync/async':>26}  mark")
for r in rows:
    print(f"{r['phase']:8}" + "".join(f" {ms_cell(r, m):>24} {r[m + '_wr_per_item']:>14}"
                                      f" {r[m + '_fl_per_item']:>14}" for m in modes)
          + f" {ratio_cell(r):>26}  {r['mark']}")
PY
}

embedded_finish "seed 003, $RANKS rank(s) x $FILES files over libnfs, $NFS_SERVER: ${modes[*]} export (ratio = ops/s vs ${modes[0]}; the seed: sync 5 min, async 8 s)" \
    steps_per_mode
