#!/usr/bin/env bash
# seed001-locks.sh — the lock half of seed 001 on this machine: the open
# storm and the lock phases of jobs/seed001-locks.ini over NFS, an xfs
# export against an ext4 export (ext4 stands in for the seed's reiserfs, as
# in jobs/demo.sh). The seed asked "how well the nemo nodes can lock a file
# on the nfs node" and saw "no file or directory" errors on one server only.
#
# For each file system in $FSES: start the embedded userspace server
# (cluster-configs/local/nfs-server.sh: nfs-ganesha with its NLM lock
# manager and rpc.statd, on a loop-mounted image of that file system), run
# jobs/seed001-locks.ini over libnfs inside the server's network namespace
# with jobs/herd-batch.sh (RANKS ranks plus one monitor rank sampling
# ganesha.nfsd's CPU and the loop disk every 200 ms), stop the server
# (always, also on error or ^C). Then print herd-compare of the runs
# (labels xfs, ext4), a lock table per run and phase (grants, grants/s,
# contention, errors, ganesha's CPU) and the errors by op, errno and the
# protocol's status (NLM4_DENIED_GRACE_PERIOD, NFS4ERR_GRACE, ...).
#
# NFSv3 only, locks through NLM.
#
#   jobs/seed001-locks.sh [--grace SECONDS] [--server ganesha|knfsd]
#
#   --server knfsd  the Linux kernel's nfsd and lockd instead of ganesha
#               (nfs-server.sh --server knfsd: a User-Mode Linux guest with
#               the image as its disk, rpc.statd in the guest); the
#               monitor is the guest's node_exporter, and the lock table's
#               server column is the guest's CPU (busy share) instead of
#               ganesha's cores. lockd's grace is a multiple of 3 s.
#
#   --grace N   start every server in a grace period of N seconds (1..180),
#               as after a server reboot, and run a copy of the job
#               ($OUT/<job name>.ini) with an idle phase `wait-out-grace`
#               of N + N/2 + 2 s after its first lock phase: that phase is
#               refused (NLM4_DENIED_GRACE_PERIOD, counted as ENOLCK errors
#               on every rank; herd exits 3, which counts as success here)
#               and the errors table shows it; the lock phases after the
#               wait are granted again. (ganesha ends the grace a little
#               after N s: its reaper runs about every N/2 s.)
#
# Environment:
#   RANKS       ranks doing the locking (default 8); one more is the monitor
#   FSES        file systems in order (default "xfs ext4"; also btrfs)
#   JOB         job file (default jobs/seed001-locks.ini; a smaller job with
#               the same shape for quick runs)
#   OUT         output directory (default ${HERD_RESULTS:-<repo>/results}/seed001-locks-<date>)
#   HERD, HERD_MPIRUN_ARGS (added after --oversubscribe), HERD_PYTHON: as herd-batch.sh
# Output in OUT: runs/<date>-seed001-locks-<np>r-<fs>/ (herd-batch.sh's
# directories), xfs.h5 and ext4.h5 (links to their results), compare/
# (herd-compare -o) and summary.txt (everything printed at the end).
# Needs root (namespaces, loop devices), nfs-ganesha with rpc.statd (see
# cluster-configs/local/install.sh), /usr/bin/python3 and a herd built
# with libnfs.
# Exit code: 0 when every run exited 0 or 3 (3: lock errors, e.g. with
# --grace; they are in the tables) and the comparison worked, 1 otherwise,
# 2 for bad settings or missing prerequisites.
set -euo pipefail

ME=seed001-locks.sh
log() { printf '%s: %s\n' "$ME" "$*" >&2; }
bad() { log "$*"; exit 2; }

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HERD=${HERD:-$REPO/build/herd}
SERVER=$REPO/cluster-configs/local/nfs-server.sh
JOB=${JOB:-$REPO/jobs/seed001-locks.ini}
RANKS=${RANKS:-8}
FSES=${FSES:-xfs ext4}
python=${HERD_PYTHON:-/usr/bin/python3}
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

grace=0 nfs_server=ganesha
while (($#)); do
    case "$1" in
        --server) (($# >= 2)) || bad "--server needs ganesha or knfsd"; nfs_server=$2; shift 2 ;;
        --server=*) nfs_server=${1#*=}; shift ;;
        -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        --grace) (($# >= 2)) || bad "--grace needs a number of seconds"; grace=$2; shift 2 ;;
        --grace=*) grace=${1#*=}; shift ;;
        *) bad "unknown argument '$1' (see --help)" ;;
    esac
done
if ! [[ "$grace" =~ ^[0-9]+$ ]] || ((grace > 180)); then
    bad "--grace: '$grace' is not a number of seconds, 0..180 (0: none)"
fi
[[ "$RANKS" =~ ^[1-9][0-9]*$ ]] || bad "RANKS: '$RANKS' is not a positive integer"
read -r -a fses <<<"$FSES"
((${#fses[@]})) || bad "FSES is empty"
for f in "${fses[@]}"; do
    case "$f" in xfs | ext4 | btrfs) ;; *) bad "FSES: '$f' is not xfs, ext4 or btrfs" ;; esac
done
[[ -f "$JOB" && -r "$JOB" ]] || bad "JOB: $JOB is not a readable file"
[ "$(id -u)" -eq 0 ] || bad "needs root (the embedded NFS server uses namespaces and loop devices)"
case "$nfs_server" in
    ganesha) command -v ganesha.nfsd >/dev/null ||
        bad "ganesha.nfsd not found (cluster-configs/local/install.sh installs it)" ;;
    knfsd) command -v linux.uml >/dev/null ||
        bad "linux.uml not found (cluster-configs/local/install.sh installs user-mode-linux)" ;;
    *) bad "--server: '$nfs_server' is not ganesha or knfsd" ;;
esac
command -v rpc.statd >/dev/null || bad "rpc.statd not found (nfs-common; the NLM lock manager needs it)"
[ -x "$HERD" ] || bad "herd binary $HERD not found (build it, or set HERD)"
[[ "$("$HERD" keys 2>/dev/null)" == *libnfs* ]] || bad "$HERD has no libnfs backend"

# The job's one shared file is 1M: the smallest image each file system takes.
image_mb=1024
tmp=${TMPDIR:-/tmp}

# shellcheck source=jobs/lib-embedded.sh
. "$REPO/jobs/lib-embedded.sh"
embedded_begin seed001-locks

# grace_job SRC DST WAIT: SRC with an idle phase of WAIT seconds inserted
# after its first lock phase (the first section with kind = lock), as DST.
# Fails when SRC has no lock phase.
grace_job() {
    awk -v wait="$3" '
        function idle() { printf "[wait-out-grace]\nkind = idle\nduration = %ds\n\n", wait; done = 1 }
        /^[ \t]*\[/ { if (inlock && !done) idle(); inlock = 0 }
        /^[ \t]*kind[ \t]*=[ \t]*lock[ \t]*([;#].*)?$/ { inlock = 1 }
        { print }
        END { if (inlock && !done) { print ""; idle() } exit !done }
    ' "$1" >"$2"
}

server_extra=" --server $nfs_server"
if ((grace > 0)); then
    server_extra+=" --grace $grace"
    grace_ini=$out/$(basename -- "$JOB")
    grace_job "$JOB" "$grace_ini" $((grace + grace / 2 + 2)) || bad "JOB: $JOB has no lock phase for --grace"
    JOB=$grace_ini
fi

log "seed 001 locks: $RANKS ranks, NFSv3, $nfs_server exports: ${fses[*]}$([ "$grace" = 0 ] || echo ", grace ${grace}s"); results in $out"
for f in "${fses[@]}"; do
    # embedded_run starts an xfs image; a later --fs wins.
    embedded_run "$f" "--fs $f$server_extra"
done

# Per run and lock/storm phase: grants, contention, errors and ganesha's
# CPU; then every error row by op, errno and the protocol's status
# (embedded_finish calls it).
# shellcheck disable=SC2317
locks_tables() {
    REPO=$REPO NFS_SERVER=$nfs_server "$python" - "${links[@]}" <<'EOF'
import os, sys
sys.path.insert(0, os.path.join(os.environ["REPO"], "analysis"))
import herd_results

def num(v, width, spec, unit=""):
    """v formatted, or "-" for a NaN, right-aligned in width."""
    return format("-" if v != v else format(v, spec) + unit, f">{width}")

runs = []
print()
knfsd = os.environ["NFS_SERVER"] == "knfsd"
print("lock and storm phases (grants/s over the phase; contention = refused / tried, "
      "non-blocking; " + ("server: the guest's CPU, busy share, mean)" if knfsd
                         else "ganesha: its cores busy, mean)"))
print(f"{'run':6} {'phase':22} {'status':8} {'grants':>7} {'grants/s':>9} {'contention':>10} "
      f"{'errors':>7} {'server' if knfsd else 'ganesha':>8}")
for path in sys.argv[1:]:
    with herd_results.load(path) as run:
        procs = run.processes()
        if len(procs):
            procs = procs[procs["name"] == "ganesha.nfsd"]
        for _, ph in run.phases.iterrows():
            if ph["kind"] not in ("lock", "storm"):
                continue
            p = herd_results.meeting(procs, ph["t_start"], ph["t_end"]) if len(procs) else procs
            cpu = p["cpu"].mean() if len(p) else float("nan")
            if knfsd:
                cpu = ph["cpu_mean"]
            rate = ph["grants"] / ph["elapsed"] if ph["kind"] == "lock" and ph["elapsed"] else float("nan")
            grants = f"{ph['grants']:.0f}" if ph["kind"] == "lock" else "-"
            print(f"{run.label:6} {ph['phase']:22} {ph['status']:8} {grants:>7} {num(rate, 9, '.1f')} "
                  f"{num(100 * ph['contention'], 10, '.1f', '%')} {ph['errors']:7.0f} {num(cpu, 8, '.2f')}")
        runs.append((run.label, run.all_errors()))
print()
print("errors by op, errno and protocol status (ranks: how many saw it)")
print(f"{'run':6} {'phase':22} {'op':8} {'errno':10} {'status':28} {'count':>7} {'ranks':>5}")
for label, errs in runs:
    if not len(errs):
        print(f"{label:6} (none)")
        continue
    errs = errs.fillna({"status": ""})
    for key, g in errs.groupby(["phase", "op", "errno_name", "status"], sort=False):
        phase, op, name, status = key
        print(f"{label:6} {phase:22} {op:8} {name:10} {status or '-':28} "
              f"{g['count'].sum():7d} {g['rank'].nunique():5d}")
EOF
}

embedded_finish "seed 001 locks, $RANKS ranks over libnfs NFSv3, $nfs_server: ${fses[*]} exports$([ "$grace" = 0 ] || echo ", servers started in a ${grace}s grace period") (ratio = ops/s vs ${fses[0]})" \
    locks_tables
