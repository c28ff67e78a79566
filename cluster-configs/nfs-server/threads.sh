#!/usr/bin/env bash
# threads.sh — show or change the thread count of the running kernel NFS
# server, for seed 002's sweep (nfsd threads 1, 2, 4, 8: one thread pinned
# at 100 % of a core until `rpc.nfsd 4`). Run it on the file server, as root:
#
#   threads.sh show       threads now, per-pool counters, nfsd thread CPU hint
#   threads.sh set N      rpc.nfsd N (live; lost at the next service restart:
#                         put the value in nfs.conf to keep it)
#
# It only reads /proc (show) or runs `rpc.nfsd N` (set). It does not start
# or stop the NFS service: `set` refuses when nfsd is not running, and
# refuses 0 (which would stop it; use systemctl for that). Sourcing the file
# runs nothing.

NFSD_FS=/proc/fs/nfsd
NFSD_MAX_THREADS=8192   # the kernel's limit (NFSD_MAXSERVS)

log() { printf 'threads.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

usage() {
    sed -n '/^#   threads.sh show/,/^#                         put the value/p' "${BASH_SOURCE[0]}" |
        sed 's/^# \{0,1\}//' >&2
    exit 2
}

need_root() {
    [ "$(id -u)" -eq 0 ] || die "needs root (/proc/fs/nfsd/threads is readable and writable by root only)"
}

need_nfsd_fs() {
    [ -e "$NFSD_FS/threads" ] && return 0
    die "$NFSD_FS/threads not found: the nfsd file system is not mounted (no kernel NFS server here, or it is not started: systemctl start nfs-server)"
}

# Count the nfsd kernel threads by name (kernel threads have no command line;
# /proc/PID/comm is "nfsd").
count_nfsd_tasks() {
    local c n=0
    for c in /proc/[0-9]*/comm; do
        [ "$(cat "$c" 2>/dev/null || true)" = nfsd ] && n=$((n + 1))
    done
    printf '%s\n' "$n"
}

cmd_show() {
    need_root
    need_nfsd_fs
    printf 'threads (%s/threads): %s\n' "$NFSD_FS" "$(cat "$NFSD_FS/threads")"
    printf 'nfsd kernel threads running: %s\n' "$(count_nfsd_tasks)"
    if [ -r "$NFSD_FS/pool_threads" ]; then
        printf 'threads per pool (%s/pool_threads): %s\n' "$NFSD_FS" "$(tr '\n' ' ' <"$NFSD_FS/pool_threads")"
    fi
    if [ -r "$NFSD_FS/pool_stats" ]; then
        printf '\n%s/pool_stats (counters since start; sample twice and subtract):\n' "$NFSD_FS"
        cat "$NFSD_FS/pool_stats"
        cat <<'EOF'
  packets-arrived   times data arrived on the pool's transports
  sockets-enqueued  times a transport with work was queued to wait for a
                    thread; in the classic meaning, no thread was free, and
                    fast growth under load means too few threads
  threads-woken     times an idle thread was woken to take work
  threads-timedout  times an idle thread timed out waiting
  (columns and exact meanings changed between kernel versions: the header
  line names yours; see Documentation/filesystems/nfs/knfsd-stats.rst)
EOF
    fi
    if [ -r /proc/net/rpc/nfsd ]; then
        printf '\n/proc/net/rpc/nfsd th line (first number = threads): %s\n' \
            "$(grep '^th ' /proc/net/rpc/nfsd || echo 'none')"
    fi
    cat <<'EOF'

Per-thread CPU while clients load the server (one thread at ~100 % of a core
is seed 002's symptom):  top -H   (look for nfsd)
herd records the same on the run's clock: monitor_host = this host, and
monitor_processes includes nfsd (the default) -> cpu_max_thread per sample.
EOF
}

cmd_set() {
    (($# == 1)) || usage
    local n=$1 now
    [[ "$n" =~ ^[0-9]+$ ]] || die "set: N must be a number, not '$n'"
    n=$((10#$n))
    ((n >= 1)) || die "set: refusing 0 (it stops the NFS server); use systemctl stop nfs-server for that"
    ((n <= NFSD_MAX_THREADS)) || die "set: N must be at most $NFSD_MAX_THREADS"
    need_root
    need_nfsd_fs
    now=$(cat "$NFSD_FS/threads")
    [ "$now" != 0 ] || die "set: nfsd is not running (threads = 0); start the service first (systemctl start nfs-server)"
    if command -v rpc.nfsd >/dev/null 2>&1; then
        rpc.nfsd "$n"
    else
        # rpc.nfsd N on a running server does exactly this write.
        printf '%s\n' "$n" >"$NFSD_FS/threads"
    fi
    printf 'threads: %s -> %s\n' "$now" "$(cat "$NFSD_FS/threads")"
}

main() {
    (($#)) || usage
    local cmd=$1
    shift
    case "$cmd" in
        show) (($# == 0)) || usage; cmd_show ;;
        set) cmd_set "$@" ;;
        -h | --help | help) usage ;;
        *) log "unknown command '$cmd'"; usage ;;
    esac
}

# Run only when executed, not when sourced (and leave a sourcing shell's
# options alone).
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    set -euo pipefail
    export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
    main "$@"
fi
