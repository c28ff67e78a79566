# lib-knfsd.sh — nfs-server.sh's verbs and checks for --server knfsd: the
# Linux kernel's nfsd, run in a User-Mode Linux guest (Debian's
# user-mode-linux) that the supervisor boots in the server's network
# namespace (knfsd.py: addresses, the guest's command line; uml-init.c: the
# guest's PID 1 and its agent). Sourced by nfs-server.sh, which sets STATE,
# HERE, log, die, alive, recorded, in_netns and load_settings.
# shellcheck shell=bash

KNFSD_PY=$HERE/knfsd.py
UML_INIT_SRC=$HERE/uml-init.c
UML_XSTATE_SRC=$HERE/uml-xstate.c
KNFSD_THREADS_MAX=1024 # nfsd threads in a 512 MiB guest
# (knfsd.py passes the cap on to the guest's agent in its config)
export HERD_KNFSD_THREADS_MAX=$KNFSD_THREADS_MAX
KNFSD_HOST_FREE_MIN_KB=1024 # less free beside the disk image: the guest's writes fail

knfsd_url() { python3 "$KNFSD_PY" url; }

# knfsd_modules: the guest kernel's module directory (the release of the
# installed linux.uml), empty when there is none.
knfsd_modules() {
    local d
    for d in /usr/lib/uml/modules/*/kernel/fs/nfsd; do
        [ -d "$d" ] && { dirname "$(dirname "$(dirname "$d")")"; return 0; }
    done
}

# knfsd_check_start FS MODE SMB THREADS WORKERS: refuse what the
# kernel nfsd server cannot do, and missing tools, before anything starts.
knfsd_check_start() {
    local fs=$1 mode=$2 smb=$3 threads=$4 workers=$5 tool
    case "$fs" in xfs | ext4 | btrfs) ;;
        *) die "start: --server knfsd exports a disk image: --fs xfs, ext4 or btrfs" ;;
    esac
    [ "$mode" != sync-writes ] ||
        die "start: --sync-writes is ganesha's; kernel nfsd has --sync and --async exports"
    ((smb == 0)) || die "start: --smb runs beside ganesha only"
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
    [ -r "$UML_XSTATE_SRC" ] || die "start: $UML_XSTATE_SRC is missing"
    getent passwd herd-guest >/dev/null ||
        die "start: --server knfsd: user herd-guest is missing (cluster-configs/local/install.sh makes it)"
    [ -r "$KNFSD_PY" ] || die "start: $KNFSD_PY is missing"
}

# knfsd_check_net SERVER GUEST_NET EXPORT_TO: --guest-net A.B.C (the
# guest's /30: A.B.C.0-3) and --export-to NET/PREFIX (a subnet that
# reaches the guest through the server's namespace, e.g. a virtual
# cluster's) are kernel nfsd's, and well formed.
knfsd_check_net() {
    local server=$1 net=$2 to=$3 octet='(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])'
    [ -n "$net$to" ] || return 0
    [ "$server" = knfsd ] || die "start: --guest-net and --export-to are kernel nfsd's (--server knfsd)"
    [ -z "$net" ] || [[ "$net" =~ ^$octet\.$octet\.$octet$ ]] ||
        die "start: --guest-net: three numbers like 10.77.0 (the guest's /30)"
    if [ -n "$to" ] && ! [[ "$to" =~ ^$octet\.$octet\.$octet\.$octet/([1-9]|[12][0-9]|3[0-2])$ ]]; then
        die "start: --export-to: a subnet like 10.77.0.0/24"
    fi
}

# knfsd_build_init: compile uml-init.c (static: it runs before the guest
# has mounted anything) into STATE/bin/uml-init, and uml-xstate.c (the
# shim linux.uml needs on hosts with a large XSAVE area) into
# STATE/bin/uml-xstate.so.
knfsd_build_init() {
    if ! cc -static -std=gnu11 -O2 -Wall -Wextra -o "$STATE/bin/uml-init" "$UML_INIT_SRC" \
        2>"$STATE/log/uml-init-cc.log"; then
        log "start: cc -static $UML_INIT_SRC failed (libc6-dev has the static libc):"
        cat "$STATE/log/uml-init-cc.log" >&2
        return 1
    fi
    if ! cc -shared -fPIC -std=gnu11 -O2 -Wall -Wextra -o "$STATE/bin/uml-xstate.so" \
        "$UML_XSTATE_SRC" -ldl -lpthread 2>"$STATE/log/uml-xstate-cc.log"; then
        log "start: cc $UML_XSTATE_SRC failed:"
        cat "$STATE/log/uml-xstate-cc.log" >&2
        return 1
    fi
}

# knfsd_clean: what stop removes of a knfsd server besides the common
# directories (the guest's logs stay in STATE/guest/log until --purge).
knfsd_clean() { rm -f -- "$STATE/guest/config" "$STATE/guest/secret" "$STATE/guest/statd-owner"; }

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

# knfsd_agent COMMAND [ARG...]: one command to the guest's agent, each
# word as it is, with the guest's secret (STATE/guest/secret, fresh for
# every boot); its output on stdout. Exit 1: the agent refused (its
# reason on stderr); 3: it did not answer (knfsd.py).
knfsd_agent() { in_netns python3 "$KNFSD_PY" agent "$STATE/guest/secret" "$@"; }

# knfsd_ready: the guest's agent answers, with nfsd running (the agent
# listens once nfsd is up and, with grace 0, lockd's grace is over).
knfsd_ready() {
    local n
    n=$(knfsd_agent read /proc/fs/nfsd/threads 2>/dev/null) && [ -n "$n" ] && [ "$n" != 0 ]
}

# threads --state DIR N: nfsd's thread count in the guest, live (what
# `rpc.nfsd N` does); also the count for later restarts.
cmd_threads() {
    knfsd_args threads "$@"
    state_lock
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
    state_lock
    local mode=${KNFSD_REST[0]:-}
    ((${#KNFSD_REST[@]} == 1)) && [[ "$mode" =~ ^(sync|async)$ ]] || die "export-mode: sync or async"
    knfsd_agent export "$mode" >/dev/null || die "export-mode: the guest could not re-export"
    # shellcheck disable=SC2034 # save_settings writes it
    MODE=$mode
    save_settings
    log "export-mode: /export is exported $mode"
}

# guest --state DIR -- COMMAND [ARG...]: a command of the guest's agent
# (read PATH, exec [--timeout=S] PROG ARG..., threads N, export-check,
# end-grace; see uml-init.c), each word passed on as it is; its reply on
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

# knfsd_export_problem: why the export cannot take writes now, nothing
# when it can; fails when the agent does not answer. The host file system
# that holds the disk image is full (a write to a new block of the image
# fails in the guest), or the guest's /export is read-only or has shut
# down (the agent's export-check, which writes nothing).
knfsd_export_problem() {
    local free_kb why rc=0
    # (free blocks, the root-reserved ones too: linux.uml runs as root)
    free_kb=$(stat -f -c '%f %S' -- "$IMAGE" 2>/dev/null | awk '{ printf "%d", $1 * $2 / 1024 }') || free_kb=""
    if [ -n "$free_kb" ] && ((free_kb < KNFSD_HOST_FREE_MIN_KB)); then
        printf 'the file system of %s has %s KiB free: the guest cannot write new blocks of its disk\n' \
            "$IMAGE" "$free_kb"
        return 0
    fi
    why=$(knfsd_agent export-check 2>&1 >/dev/null) || rc=$?
    case $rc in
        0) ;;
        1) printf '%s\n' "${why#knfsd.py: }" ;;
        *) return 1 ;;
    esac
}

# knfsd_status: status's lines of a knfsd server; KNFSD_EXPORT_WRITABLE
# yes, no (status is then degraded: export_problem says why) or unknown
# (the agent did not answer).
knfsd_status() {
    local problem=""
    printf 'server=knfsd\nthreads=%s\n' "$THREADS"
    KNFSD_EXPORT_WRITABLE=unknown
    if alive uml; then
        printf 'threads_running=%s\n' "$(knfsd_agent read /proc/fs/nfsd/threads 2>/dev/null | tr -d '\n')"
        printf 'metrics_url=%s\n' "$(python3 "$KNFSD_PY" metrics-url)"
        if problem=$(knfsd_export_problem); then
            KNFSD_EXPORT_WRITABLE=$([ -z "$problem" ] && echo yes || echo no)
        fi
    fi
    printf 'export_writable=%s\n' "$KNFSD_EXPORT_WRITABLE"
    [ -z "$problem" ] || printf 'export_problem=%s\n' "$problem"
}

# ------------------------------------------------------------------ link

# The link of a knfsd server lives in the guest, whose kernel has netem:
# what the guest sends passes netem (delay, jitter) and tbf (rate) on
# eth0, what it receives is redirected at eth0's ingress to ifb0 and
# passes the same qdiscs there, so each direction is delayed once, as on
# ganesha's lo. Every packet to and from the guest crosses it (the
# agent's commands and the metrics scrapes too, as on a remote server).

# knfsd_tc ARG...: tc in the guest; fails when tc does.
knfsd_tc() {
    local out
    out=$(knfsd_agent exec tc "$@") || return 1
    [ "$(tail -n 1 <<<"$out")" = "exit 0" ]
}

# knfsd_link_wait: until the guest's agent answers (start applies the
# link while the guest may still boot).
knfsd_link_wait() {
    local i
    for ((i = 0; i < START_TIMEOUT * 10; i++)); do
        knfsd_ready && return 0
        alive uml || return 1
        sleep 0.1
    done
    return 1
}

# knfsd_qdiscs DEV: netem (with a delay) and tbf (with a rate) on DEV.
knfsd_qdiscs() {
    local tbf=() parent=(root)
    read -r -a tbf < <(link_tbf)
    if link_wants_delay; then
        knfsd_tc qdisc add dev "$1" root handle 1: netem \
            delay "${LINK_DELAY_US}us" "${LINK_JITTER_US}us" limit 100000 || return 1
        parent=(parent 1:1 handle 10:)
    fi
    if ((${#tbf[@]})); then
        knfsd_tc qdisc add dev "$1" "${parent[@]}" "${tbf[@]}" || return 1
    fi
}

knfsd_link_apply() {
    knfsd_link_wait || { log "link: the guest's agent does not answer"; return 1; }
    knfsd_link_clear
    if ! knfsd_agent exec ip link set ifb0 up >/dev/null || ! knfsd_qdiscs eth0 ||
        ! knfsd_tc qdisc add dev eth0 handle ffff: ingress ||
        ! knfsd_tc filter add dev eth0 parent ffff: matchall action mirred egress redirect dev ifb0 ||
        ! knfsd_qdiscs ifb0; then
        log "link: tc in the guest failed"
        knfsd_link_clear
        return 1
    fi
    printf '%s\n' "$LINK_SPEC" >"$STATE/link.tmp"
    mv -f "$STATE/link.tmp" "$STATE/link"
    log "link: $LINK_SPEC; applied: $(knfsd_link_applied)"
}

knfsd_link_clear() {
    rm -f "$STATE/link"
    alive uml || return 0
    knfsd_tc qdisc del dev eth0 root 2>/dev/null || true
    knfsd_tc qdisc del dev eth0 ingress 2>/dev/null || true
    knfsd_tc qdisc del dev ifb0 root 2>/dev/null || true
    return 0
}

# knfsd_link_applied: the guest's qdiscs of the link, "none" without.
knfsd_link_applied() {
    local out="" dev line
    if alive uml; then
        for dev in eth0 ifb0; do
            while read -r line; do
                case "$line" in
                    qdisc\ netem* | qdisc\ tbf*) out+="${out:+; }$dev: ${line#qdisc }" ;;
                esac
            done < <(knfsd_agent exec tc qdisc show dev "$dev" 2>/dev/null)
        done
    fi
    printf '%s\n' "${out:-none}"
}
