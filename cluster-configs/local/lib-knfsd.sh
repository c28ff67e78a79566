# lib-knfsd.sh — nfs-server.sh's verbs and checks for --server knfsd: the
# Linux kernel's nfsd, run in a User-Mode Linux guest (Debian's
# user-mode-linux) that the supervisor boots in the server's network
# namespace (knfsd.py: addresses, the guest's command line; uml-init.c: the
# guest's PID 1 and its agent). Sourced by nfs-server.sh, which sets STATE,
# HERE, log, die, alive, recorded, in_netns and load_settings.
# shellcheck shell=bash

KNFSD_PY=$HERE/knfsd.py
UML_INIT_SRC=$HERE/uml-init.c
KNFSD_THREADS_MAX=1024 # nfsd threads in a 512 MiB guest

knfsd_url() { python3 "$KNFSD_PY" url; }

# knfsd_modules: the guest kernel's module directory (the release of the
# installed linux.uml), empty when there is none.
knfsd_modules() {
    local d
    for d in /usr/lib/uml/modules/*/kernel/fs/nfsd; do
        [ -d "$d" ] && { dirname "$(dirname "$(dirname "$d")")"; return 0; }
    done
}

# knfsd_check_start FS MODE SMB THREADS LINK WORKERS: refuse what the
# kernel nfsd server cannot do, and missing tools, before anything starts.
knfsd_check_start() {
    local fs=$1 mode=$2 smb=$3 threads=$4 link=$5 workers=$6 tool
    case "$fs" in xfs | ext4 | btrfs) ;;
        *) die "start: --server knfsd exports a disk image: --fs xfs, ext4 or btrfs" ;;
    esac
    [ "$mode" != sync-writes ] ||
        die "start: --sync-writes is ganesha's; kernel nfsd has --sync and --async exports"
    ((smb == 0)) || die "start: --smb runs beside ganesha only"
    ((link == 0)) || die "start: --link is not yet there for --server knfsd"
    [ -z "$workers" ] || die "start: --workers is ganesha's; kernel nfsd has --threads N"
    if [ -n "$threads" ]; then
        if ! [[ "$threads" =~ ^[0-9]+$ ]] || ((threads < 1 || threads > KNFSD_THREADS_MAX)); then
            die "start: --threads must be 1..$KNFSD_THREADS_MAX"
        fi
    fi
    for tool in linux.uml cc rpc.nfsd rpc.mountd exportfs rpcbind prometheus-node-exporter; do
        command -v "$tool" >/dev/null ||
            die "start: --server knfsd: $tool not found (see cluster-configs/local/install.sh)"
    done
    [ -n "$(knfsd_modules)" ] || die "start: --server knfsd: no nfsd.ko under /usr/lib/uml/modules"
    [ -r "$UML_INIT_SRC" ] || die "start: $UML_INIT_SRC is missing"
    [ -r "$KNFSD_PY" ] || die "start: $KNFSD_PY is missing"
}

# knfsd_build_init: compile uml-init.c (static: it runs before the guest
# has mounted anything) into STATE/bin/uml-init.
knfsd_build_init() {
    if ! cc -static -std=gnu11 -O2 -Wall -Wextra -o "$STATE/bin/uml-init" "$UML_INIT_SRC" \
        2>"$STATE/log/uml-init-cc.log"; then
        log "start: cc -static $UML_INIT_SRC failed (libc6-dev has the static libc):"
        cat "$STATE/log/uml-init-cc.log" >&2
        return 1
    fi
}

# knfsd_clean: what stop removes of a knfsd server besides the common
# directories (the guest's logs stay in STATE/guest/log until --purge).
knfsd_clean() { rm -f -- "$STATE/guest/config" "$STATE/guest/statd-owner"; }

# knfsd_args NAME ARGS...: --state DIR and the rest (KNFSD_REST); the
# server must be a running knfsd one.
knfsd_args() {
    local name=$1
    shift
    KNFSD_REST=()
    while (($#)); do
        case "$1" in
            --state) set_state "${2:-}"; shift 2 ;;
            --state=*) set_state "${1#*=}"; shift ;;
            --) shift; KNFSD_REST+=("$@"); break ;;
            *) KNFSD_REST+=("$1"); shift ;;
        esac
    done
    [ -n "${STATE:-}" ] || die "$name: --state DIR is required"
    if ! is_ours || ! alive supervisor; then die "$name: no server running with state $STATE"; fi
    load_settings
    [ "$SERVER" = knfsd ] || die "$name: the server is ganesha (this is for --server knfsd)"
    alive uml || die "$name: the guest (linux.uml) is not running"
}

# knfsd_agent COMMAND...: one command to the guest's agent; its output on
# stdout.
knfsd_agent() { in_netns python3 "$KNFSD_PY" agent "$@"; }

# threads --state DIR N: nfsd's thread count in the guest, live (what
# `rpc.nfsd N` does); also the count for later restarts.
cmd_threads() {
    knfsd_args threads "$@"
    local n=${KNFSD_REST[0]:-}
    ((${#KNFSD_REST[@]} == 1)) && [[ "$n" =~ ^[0-9]+$ ]] && ((n >= 1 && n <= KNFSD_THREADS_MAX)) ||
        die "threads: give a count 1..$KNFSD_THREADS_MAX"
    knfsd_agent threads "$n" >/dev/null || die "threads: the guest refused"
    THREADS=$n
    save_settings
    log "threads: nfsd runs $(knfsd_agent read /proc/fs/nfsd/threads | tr -d '\n') threads"
}

# export-mode --state DIR sync|async: re-export /export with that option
# (exportfs flushes the kernel's export cache: the next request sees it).
cmd_export_mode() {
    knfsd_args export-mode "$@"
    local mode=${KNFSD_REST[0]:-}
    ((${#KNFSD_REST[@]} == 1)) && [[ "$mode" =~ ^(sync|async)$ ]] || die "export-mode: sync or async"
    knfsd_agent export "$mode" >/dev/null || die "export-mode: the guest could not re-export"
    MODE=$mode
    save_settings
    log "export-mode: /export is exported $mode"
}

# guest --state DIR -- COMMAND...: a command of the guest's agent (read
# PATH, exec ARG..., threads N, end-grace; see uml-init.c), its reply on
# stdout.
cmd_guest() {
    knfsd_args guest "$@"
    ((${#KNFSD_REST[@]})) || die "guest: no command given (guest --state DIR -- read /proc/fs/nfsd/threads)"
    knfsd_agent "${KNFSD_REST[@]}"
}

# knfsd_restart GRACE LEASE: nfsd stops (threads 0: every client's state
# goes) and starts again in the guest with that grace period (0: none),
# lease and the saved thread count; prints the guest's PID once it serves.
knfsd_restart() {
    knfsd_agent restart "$1" "$2" "$THREADS" >/dev/null ||
        { log "restart-server: the guest refused"; return 1; }
    wait_ready "$START_TIMEOUT" || return 1
    log "kernel nfsd restarted (grace $1 s)"
    recorded uml
}

# knfsd_status: status's lines of a knfsd server.
knfsd_status() {
    printf 'server=knfsd\nthreads=%s\n' "$THREADS"
    if alive uml; then
        printf 'threads_running=%s\n' "$(knfsd_agent read /proc/fs/nfsd/threads 2>/dev/null | tr -d '\n')"
        printf 'metrics_url=%s\n' "$(python3 "$KNFSD_PY" metrics-url)"
    fi
}
