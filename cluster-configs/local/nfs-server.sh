#!/usr/bin/env bash
# nfs-server.sh — a throwaway userspace NFS server for herd's tests and
# local runs: nfs-ganesha (FSAL VFS) plus rpcbind and rpc.statd (for the NLM
# lock manager), inside a private network
# and mount namespace, exporting a plain directory or a loop-mounted xfs,
# ext4 or btrfs image. Everything it makes lives in one state directory;
# `stop` removes every process, mount and loop device it made. No kernel
# NFS is needed: clients reach the server with libnfs (nfs:// URLs) from
# inside the namespace (`exec`). See README.md beside this file.
#
#   nfs-server.sh start --state DIR [--fs dir|xfs|ext4|btrfs] [--size 2G]
#                       [--workers N] [--sync|--async|--sync-writes]
#                       [--hostname NAME]   (own UTS namespace: a host of
#                                            cluster-configs/virtual/)
#                       [--no-nlm]          (no NLM lock manager, no statd)
#                       [--grace SECONDS]   (start in a grace period; 0: none)
#                       [--lease SECONDS]   (NFSv4 lease; default 60, or the
#                                            grace if shorter)
#                       [--link delay=20ms,jitter=2ms,rate=8mbit]  (any of them:
#                                            a slow, distant link; see "link")
#       stdout: line 1 the nfs:// URL of the export (NFSv3), line 2 ganesha's PID
#   nfs-server.sh exec --state DIR [--server-fs] -- COMMAND [ARG...]
#       (HERD_LINK=the link's spec, or none, in COMMAND's environment)
#   nfs-server.sh link --state DIR --set SPEC [--dev DEV]... | --clear
#       (replaces the running server's link; --dev: the devices in its
#        namespace for tbf/netem, default lo)
#   nfs-server.sh restart-ganesha --state DIR [--grace SECONDS] [--lease SECONDS]
#                                                  stdout: the new PID
#   nfs-server.sh stop-statd --state DIR           (NLM then answers NOLOCKS)
#   nfs-server.sh start-statd --state DIR          stdout: statd's PID
#   nfs-server.sh status --state DIR
#   nfs-server.sh stop --state DIR [--purge]
#
# Needs root, util-linux (unshare, nsenter, losetup), iproute2, rpcbind,
# nfs-ganesha, nfs-ganesha-vfs, nfs-common (rpc.statd, rpcinfo; a dependency
# of nfs-ganesha), libnfs-utils (nfs-ls, to see the server
# answer), xfsprogs/e2fsprogs/btrfs-progs for those file systems, a C
# compiler (cc) for --async, and for --link tc (iproute2) and, where the
# kernel has no netem, iptables and herd-linkdelay (src/linkdelay.c, built
# by CMake with libnetfilter-queue; $HERD_LINKDELAY, default build/).
set -euo pipefail
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

SELF=$(readlink -f "${BASH_SOURCE[0]}")
HERE=$(dirname "$SELF")
TEMPLATE=$HERE/ganesha.conf.in
MARKER=.herd-nfs-server
NOSYNC_SRC=$HERE/nosync.c

# --async runs ganesha under nosync (nosync.c beside this script: a seccomp
# filter that makes the sync family of system calls return 0 untouched, see
# its top comment). start compiles it with cc into STATE/bin: this script
# runs from a plain checkout (tests, jobs/, ../virtual/vcluster.sh) with no
# build directory it could know of, and so the helper always matches the
# source beside the script.

START_TIMEOUT=${NFS_SERVER_START_TIMEOUT:-30}   # seconds until the server must answer
STOP_TIMEOUT=${NFS_SERVER_STOP_TIMEOUT:-10}     # seconds from SIGTERM to SIGKILL
# ganesha 4.3 with NLM: once it has monitored a lock client with statd, its
# shutdown calls SM_UNMON after it has already shut its RPC event channels,
# which times out (3 s), and then hangs ~9 s more: about 12 s instead of
# 0.1 s. With NLM on, ganesha gets this long after SIGTERM, then SIGKILL
# (everything it wrote is in the kernel already; nothing is lost).
NLM_STOP_TIMEOUT=${NFS_SERVER_NLM_STOP_TIMEOUT:-1}

# Fixed ports inside the namespace (only its lo exists, so they never clash
# with the host's): NFS 2049 and MOUNT 20048 are in ganesha.conf.in; the NLM
# port (ganesha's NLM_Port, otherwise random at every start) and statd's.
NLM_PORT=32803
STATD_PORT=32765

log() { printf 'nfs-server.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
usage() {
    sed -n '/^#   nfs-server.sh start/,/^#   nfs-server.sh stop --state/p' "$SELF" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

# ------------------------------------------------------------------ processes

# proc_start PID: with the PID it names one process for good;
# proc_alive PID START; proc_stop PID START SECONDS.
# shellcheck source=cluster-configs/local/lib-proc.sh
. "$HERE/lib-proc.sh"

# record NAME PID: remember PID (and its start time) as STATE/pid/NAME.
record() {
    local start
    start=$(proc_start "$2") || start=0
    printf '%s %s\n' "$2" "$start" >"$STATE/pid/$1.tmp"
    mv -f "$STATE/pid/$1.tmp" "$STATE/pid/$1"
}

# recorded NAME: print the PID recorded as NAME (empty if none).
recorded() {
    local pid start
    [ -r "$STATE/pid/$1" ] || return 0
    read -r pid start <"$STATE/pid/$1" || true
    printf '%s\n' "${pid:-}"
}

# alive NAME: the process recorded as NAME exists (same PID and start time)
# and is not a zombie.
alive() {
    local pid start
    [ -r "$STATE/pid/$1" ] || return 1
    read -r pid start <"$STATE/pid/$1" || return 1
    proc_alive "${pid:-}" "${start:-}"
}

# terminate NAME [SECONDS]: SIGTERM (and SIGCONT, in case a test stopped
# it), then SIGKILL after SECONDS (default STOP_TIMEOUT); only the process
# recorded as NAME. Returns 0 even when it could not be stopped (that is
# logged): callers check alive afterwards.
terminate() {
    local pid start secs=${2:-$STOP_TIMEOUT}
    alive "$1" || return 0
    read -r pid start <"$STATE/pid/$1"
    log "stopping $1 (pid $pid)"
    proc_stop "$pid" "$start" "$secs" && return 0
    log "$1 (pid $pid) is still there after SIGTERM, ${secs}s and SIGKILL"
}

# ganesha_stop_timeout: seconds ganesha gets from SIGTERM to SIGKILL.
ganesha_stop_timeout() {
    if [ "${NLM:-1}" = 1 ] && ((NLM_STOP_TIMEOUT < STOP_TIMEOUT)); then
        echo "$NLM_STOP_TIMEOUT"
    else
        echo "$STOP_TIMEOUT"
    fi
}

# ------------------------------------------------------------------ state dir

# set_state DIR: absolute, canonical STATE; refuse odd characters (the path
# goes into ganesha.conf and into the URL).
set_state() {
    [ -n "${1:-}" ] || die "--state DIR is required"
    STATE=$(realpath -m -- "$1")
    case "$STATE" in
        / | /bin* | /boot* | /dev* | /etc* | /lib* | /proc* | /run | /sbin* | /sys* | /usr* | /var)
            die "refusing state directory $STATE" ;;
    esac
    [[ "$STATE" =~ ^/[A-Za-z0-9._/+-]+$ ]] ||
        die "state directory $STATE: use only letters, digits and ._/+- in its path"
    EXPORT=$STATE/export
    IMAGE=$STATE/image.img
    STATD_DIR=$STATE/statd
}

is_ours() { [ -f "$STATE/$MARKER" ]; }

load_settings() {
    FS=dir SIZE=2G MODE=sync WORKERS=200 HOST_NAME="" NLM=1 GRACE=0 LEASE=60
    # shellcheck disable=SC1091
    [ -r "$STATE/conf/settings" ] && . "$STATE/conf/settings"
    return 0
}

# save_settings: write the settings variables to STATE/conf/settings
# (atomically: the supervisor and status read it).
save_settings() {
    cat >"$STATE/conf/settings.tmp" <<EOF
FS=$FS
SIZE=$SIZE
WORKERS=$WORKERS
MODE=$MODE
HOST_NAME=$HOST_NAME
NLM=$NLM
GRACE=$GRACE
LEASE=$LEASE
EOF
    mv -f "$STATE/conf/settings.tmp" "$STATE/conf/settings"
}

# write_conf: STATE/conf/ganesha.conf from the template and the settings.
# GRACE 0 is Graceless = true; Grace_Period then equals the lease, which
# keeps ganesha from warning that the grace is shorter than the lease.
write_conf() {
    local commit=false nlm=false graceless=true grace=$LEASE
    [ "$MODE" = sync-writes ] && commit=true
    [ "$NLM" = 1 ] && nlm=true
    if ((GRACE > 0)); then
        graceless=false grace=$GRACE
    fi
    sed -e "s|@STATE@|$STATE|g" -e "s|@EXPORT@|$EXPORT|g" \
        -e "s|@WORKERS@|$WORKERS|g" -e "s|@NFS_COMMIT@|$commit|g" \
        -e "s|@NLM@|$nlm|g" -e "s|@NLM_PORT@|$NLM_PORT|g" \
        -e "s|@GRACELESS@|$graceless|g" -e "s|@GRACE@|$grace|g" \
        -e "s|@LEASE@|$LEASE|g" \
        "$TEMPLATE" >"$STATE/conf/ganesha.conf.tmp"
    mv -f "$STATE/conf/ganesha.conf.tmp" "$STATE/conf/ganesha.conf"
}

# default_lease GRACE LEASE: the lease to use when none is given: LEASE, or
# GRACE when that is shorter. ganesha wants Grace_Period >= Lease_Lifetime
# (it warns otherwise), and its reaper, which ends the grace, runs every
# lease/2 s or so (at most every 10 s): grace 5 with lease 60 ended after
# 10 s, grace 3 with lease 3 after 3 s.
default_lease() {
    if (($1 > 0 && $1 < $2)); then echo "$1"; else echo "$2"; fi
}

# check_seconds OPTION VALUE MIN: VALUE is an integer in MIN..180 (ganesha's
# range for Grace_Period and Lease_Lifetime).
check_seconds() {
    if ! [[ "$2" =~ ^[0-9]+$ ]] || (($2 < $3 || $2 > 180)); then
        die "$1 must be a number of seconds, $3..180"
    fi
}

url() { printf 'nfs://127.0.0.1%s?version=3\n' "$EXPORT"; }

# mounts_under DIR: mount points at or below DIR in this mount namespace,
# deepest first.
mounts_under() {
    awk -v d="$1" '{ mp = $5; gsub(/\\040/, " ", mp);
                     if (mp == d || index(mp, d "/") == 1) print length(mp), mp }' \
        /proc/self/mountinfo | sort -rn | cut -d' ' -f2-
}

loops_of() { losetup -j "$1" 2>/dev/null | cut -d: -f1; }

log_tail() {
    local f
    for f in "$STATE/log/supervisor.log" "$STATE/log/ganesha.stderr" "$STATE/log/ganesha.log" \
        "$STATE/log/statd.log"; do
        [ -s "$f" ] || continue
        printf -- '--- last lines of %s\n' "$f" >&2
        tail -n 25 "$f" >&2
    done
}

# build_nosync: compile nosync.c into STATE/bin/nosync and check that this
# kernel takes its filter.
build_nosync() {
    if ! cc -std=gnu11 -O2 -Wall -Wextra -o "$STATE/bin/nosync" "$NOSYNC_SRC" \
        2>"$STATE/log/nosync-cc.log"; then
        log "start: --async: cc $NOSYNC_SRC failed:"
        cat "$STATE/log/nosync-cc.log" >&2
        return 1
    fi
    "$STATE/bin/nosync" true || { log "start: --async: cannot install the seccomp filter here"; return 1; }
}

# ------------------------------------------------------------------ client side

# in_netns COMMAND...: run COMMAND in the server's network namespace.
in_netns() {
    local sup
    sup=$(recorded supervisor)
    nsenter --net="/proc/$sup/ns/net" -- "$@"
}

# wait_ready SECONDS: until nfs-ls of the export answers; fails early when
# ganesha or the supervisor dies.
wait_ready() {
    local deadline=$((SECONDS + $1))
    while ((SECONDS < deadline)); do
        alive supervisor || { log "the namespace supervisor died"; return 1; }
        alive ganesha || { log "ganesha.nfsd exited"; return 1; }
        if in_netns timeout 5 nfs-ls "$(url)" >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.05
    done
    log "the server did not answer within $1 s"
    return 1
}

# ------------------------------------------------------------------ link

# --link SPEC: a slow, distant link between the clients and the server,
# SPEC = any of delay=T,jitter=T,rate=R (T: a number with us, ms or s; R: a
# number with kbit, mbit or gbit). Each direction is delayed once by delay
# (+ uniform jitter in [-jitter, jitter], clipped at 0), so a round trip
# takes about 2 x delay. How, inside the server's network namespace:
# - rate: tc tbf on the link devices (lo here; eth0 on a vcluster host).
#   lo's MTU is 64 KiB: a burst under 256 KB stalls the link.
# - delay/jitter with netem (probed: `tc qdisc add ... netem` in a
#   throwaway namespace; HERD_LINK_NETEM=0 skips it): netem on the devices,
#   tbf as its child. On lo both directions pass the device once each.
# - delay/jitter without netem (this kernel): iptables rules send the
#   server's packets to NFQUEUE LINK_QUEUE (--queue-bypass: they pass
#   undelayed if no program listens), where herd-linkdelay (src/linkdelay.c)
#   holds them. Packets are held where they *arrive*: in INPUT (on lo every
#   packet passes it once: to the server's ports, and from them back to the
#   client), or in FORWARD of another namespace (vcluster.sh: the switch,
#   which every packet crosses once, bridged). Not in OUTPUT: a packet held
#   there still belongs to its sending socket, and TCP small queues then
#   throttle the sender to a few packets per delay (measured: 16 MiB over
#   5 ms each way 15.7 s from OUTPUT, rate-bound from the receiving side).
#   The rules live in that namespace's own tables and go with it.
# Ports: portmapper 111 (clients look up ports there), NFS 2049, MOUNT
# 20048, NLM. Not statd's: only ganesha and statd, both inside the server,
# talk to it. IPv4 only (the URLs are IPv4).
LINK_QUEUE=0
LINK_PORTS=111,2049,20048,$NLM_PORT
LINK_MAX_US=10000000 # delay and jitter: at most 10 s
REPO=$(cd "$HERE/../.." && pwd)
LINKDELAY=${HERD_LINKDELAY:-$REPO/build/herd-linkdelay}

# link_time_us OPTION VALUE: print VALUE (us, ms or s) in microseconds.
link_time_us() {
    [[ "$2" =~ ^([0-9]+(\.[0-9]+)?)(us|ms|s)$ ]] ||
        { log "$1: '$2' is not a time (a number with us, ms or s: 20ms)"; return 1; }
    local us
    us=$(awk -v v="${BASH_REMATCH[1]}" -v u="${BASH_REMATCH[3]}" \
        'BEGIN { m = (u == "us") ? 1 : (u == "ms") ? 1000 : 1000000; printf "%d\n", v * m + 0.5 }')
    ((us <= LINK_MAX_US)) || { log "$1: '$2' is longer than 10 s"; return 1; }
    printf '%s\n' "$us"
}

# link_rate_bit OPTION VALUE: print VALUE (kbit, mbit or gbit) in bit/s.
link_rate_bit() {
    [[ "$2" =~ ^([0-9]+(\.[0-9]+)?)(kbit|mbit|gbit)$ ]] ||
        { log "$1: '$2' is not a rate (a number with kbit, mbit or gbit: 8mbit)"; return 1; }
    local bit
    bit=$(awk -v v="${BASH_REMATCH[1]}" -v u="${BASH_REMATCH[3]}" \
        'BEGIN { m = (u == "kbit") ? 1e3 : (u == "mbit") ? 1e6 : 1e9; printf "%d\n", v * m + 0.5 }')
    ((bit >= 8000 && bit <= 100000000000)) || { log "$1: '$2' is outside 8kbit..100gbit"; return 1; }
    printf '%s\n' "$bit"
}

# parse_link SPEC: check SPEC; set LINK_SPEC (normalized: lower case, keys
# in the order delay, jitter, rate), LINK_DELAY_US, LINK_JITTER_US,
# LINK_RATE_BIT (0: not given). Returns 1 after one line on stderr.
parse_link() {
    local spec=${1,,} item key val items=() delay="" jitter="" rate=""
    LINK_DELAY_US=0 LINK_JITTER_US=0 LINK_RATE_BIT=0 LINK_SPEC=""
    [ -n "$spec" ] || { log "--link: empty (delay=T,jitter=T,rate=R, any of them)"; return 1; }
    IFS=, read -ra items <<<"$spec"
    for item in "${items[@]}"; do
        key=${item%%=*} val=${item#*=}
        if [ "$key" = "$item" ] || [ -z "$val" ]; then
            log "--link: '$item' is not KEY=VALUE (delay=T,jitter=T,rate=R)"
            return 1
        fi
        case "$key" in
            delay)
                [ -z "$delay" ] || { log "--link: delay given twice"; return 1; }
                LINK_DELAY_US=$(link_time_us "--link delay" "$val") || return 1
                delay=$val ;;
            jitter)
                [ -z "$jitter" ] || { log "--link: jitter given twice"; return 1; }
                LINK_JITTER_US=$(link_time_us "--link jitter" "$val") || return 1
                jitter=$val ;;
            rate)
                [ -z "$rate" ] || { log "--link: rate given twice"; return 1; }
                LINK_RATE_BIT=$(link_rate_bit "--link rate" "$val") || return 1
                rate=$val ;;
            *) log "--link: unknown key '$key' (delay, jitter, rate)"; return 1 ;;
        esac
    done
    ((${#items[@]})) && [[ "$spec" != *, ]] || { log "--link: empty item in '$1'"; return 1; }
    LINK_SPEC=""
    [ -n "$delay" ] && LINK_SPEC+=",delay=$delay"
    [ -n "$jitter" ] && LINK_SPEC+=",jitter=$jitter"
    [ -n "$rate" ] && LINK_SPEC+=",rate=$rate"
    LINK_SPEC=${LINK_SPEC#,}
}

# link_wants_delay: the parsed link delays packets.
link_wants_delay() { ((LINK_DELAY_US > 0 || LINK_JITTER_US > 0)); }

# netem_works: tc can make a netem qdisc here (probed once, in a throwaway
# network namespace; HERD_LINK_NETEM=0 says no without probing).
netem_works() {
    if [ -z "${NETEM_WORKS:-}" ]; then
        NETEM_WORKS=0
        if [ "${HERD_LINK_NETEM:-1}" != 0 ] &&
            unshare --net -- tc qdisc add dev lo root netem delay 1ms >/dev/null 2>&1; then
            NETEM_WORKS=1
        fi
    fi
    [ "$NETEM_WORKS" = 1 ]
}

# check_link_tools: what the parsed link needs is there; one line and 1
# otherwise. Run before anything starts.
check_link_tools() {
    if ((LINK_RATE_BIT > 0)) || link_wants_delay; then
        command -v tc >/dev/null || { log "--link: tc not found (package iproute2)"; return 1; }
    fi
    link_wants_delay || return 0
    netem_works && return 0
    command -v iptables >/dev/null ||
        { log "--link: no netem in this kernel and iptables not found (package iptables)"; return 1; }
    [ -x "$LINKDELAY" ] || {
        log "--link: no netem in this kernel and $LINKDELAY is missing: build it" \
            "(libnetfilter-queue-dev; cmake -DHERD_REQUIRE_NFQUEUE=ON, target herd-linkdelay)" \
            "or set HERD_LINKDELAY"
        return 1
    }
}

# qdisc_set NSPID DEV: the parsed link's qdisc on DEV in the network
# namespace of process NSPID (replacing whatever was there): netem (when
# delaying and netem works) with tbf below it, or tbf alone, or nothing.
# tbf: burst max(256 KB, 10 ms of the rate), at most 100 ms of queue.
qdisc_set() {
    local ns=(nsenter --net="/proc/$1/ns/net" --) dev=$2 burst tbf=() parent=(root)
    qdisc_clear "$1" "$dev"
    if ((LINK_RATE_BIT > 0)); then
        burst=$((LINK_RATE_BIT / 8 / 100))
        ((burst >= 262144)) || burst=262144
        tbf=(tbf rate "${LINK_RATE_BIT}bit" burst "$burst" latency 100ms)
    fi
    if link_wants_delay && netem_works; then
        "${ns[@]}" tc qdisc add dev "$dev" root handle 1: netem \
            delay "${LINK_DELAY_US}us" "${LINK_JITTER_US}us" || return 1
        parent=(parent 1:1 handle 10:)
    fi
    if ((${#tbf[@]})); then
        "${ns[@]}" tc qdisc add dev "$dev" "${parent[@]}" "${tbf[@]}" || return 1
    fi
    return 0
}

# qdisc_clear NSPID DEV: back to the device's default qdisc.
qdisc_clear() {
    nsenter --net="/proc/$1/ns/net" -- tc qdisc del dev "$2" root >/dev/null 2>&1 || true
}

# link_where: "PID START CHAIN ADDR" of where the delay rules go
# (STATE/conf/link-where, from `link --netns-pid --chain --addr`): default
# the server's namespace, INPUT, any address.
link_where() {
    if [ -s "$STATE/conf/link-where" ]; then
        cat "$STATE/conf/link-where"
    else
        printf '%s %s INPUT -\n' "$(recorded supervisor)" "$(proc_start "$(recorded supervisor)" 2>/dev/null || echo 0)"
    fi
}

# link_devs: the devices in the server's namespace the link's qdiscs go on
# (STATE/conf/link-devs: lo, or what `link --dev` named).
link_devs() {
    if [ -s "$STATE/conf/link-devs" ]; then cat "$STATE/conf/link-devs"; else echo lo; fi
}

# iptables_link ACTION: add or remove (del) our chain HERD_LINK, hooked
# into link_where's chain of its namespace: packets to the server's ports
# (client -> server) and from them (server -> client) go to the queue.
# Removing succeeds when it is already gone (or the namespace is).
iptables_link() {
    local pid start chain addr proto to=() from=()
    read -r pid start chain addr < <(link_where)
    proc_alive "$pid" "$start" || return "$([ "$1" = add ] && echo 1 || echo 0)"
    local ipt=(nsenter --net="/proc/$pid/ns/net" -- iptables -w)
    if [ "$1" = add ]; then
        [ "$addr" = - ] || to=(-d "$addr") from=(-s "$addr")
        "${ipt[@]}" -N HERD_LINK || return 1
        for proto in tcp udp; do
            "${ipt[@]}" -A HERD_LINK "${to[@]}" -p "$proto" -m multiport --dports "$LINK_PORTS" \
                -j NFQUEUE --queue-num "$LINK_QUEUE" --queue-bypass || return 1
            "${ipt[@]}" -A HERD_LINK "${from[@]}" -p "$proto" -m multiport --sports "$LINK_PORTS" \
                -j NFQUEUE --queue-num "$LINK_QUEUE" --queue-bypass || return 1
        done
        "${ipt[@]}" -I "$chain" 1 -j HERD_LINK
        return
    fi
    while "${ipt[@]}" -D "$chain" -j HERD_LINK 2>/dev/null; do :; done
    "${ipt[@]}" -F HERD_LINK 2>/dev/null || true
    "${ipt[@]}" -X HERD_LINK 2>/dev/null || true
}

# start_linkdelay: herd-linkdelay in link_where's namespace, recorded as
# linkdelay; returns once it has bound the queue (its pidfile names it).
start_linkdelay() {
    local sup start chain addr pid i secs jit
    read -r sup start chain addr < <(link_where)
    secs=$(awk -v u="$LINK_DELAY_US" 'BEGIN { printf "%.6f", u / 1e6 }')
    jit=$(awk -v u="$LINK_JITTER_US" 'BEGIN { printf "%.6f", u / 1e6 }')
    rm -f "$STATE/run/linkdelay.pid"
    # (setsid does not fork here, and nsenter execs: $! is the delayer)
    setsid nsenter --net="/proc/$sup/ns/net" -- "$LINKDELAY" --queue "$LINK_QUEUE" \
        --delay "$secs" --jitter "$jit" --pidfile "$STATE/run/linkdelay.pid" \
        </dev/null >>"$STATE/log/linkdelay.log" 2>&1 &
    pid=$!
    record linkdelay "$pid"
    for ((i = 0; i < 250; i++)); do
        [ "$(cat "$STATE/run/linkdelay.pid" 2>/dev/null)" = "$pid" ] && return 0
        alive linkdelay || break
        sleep 0.02
    done
    log "link: herd-linkdelay did not start (see $STATE/log/linkdelay.log):"
    tail -n 5 "$STATE/log/linkdelay.log" >&2 || true
    terminate linkdelay 2
    return 1
}

# link_clear: remove the whole link (rules, delayer, qdiscs); tolerates
# parts that are already gone. Returns 1 if the delayer survives.
link_clear() {
    local dev sup
    command -v iptables >/dev/null && iptables_link del
    if alive supervisor; then
        sup=$(recorded supervisor)
        for dev in $(link_devs); do qdisc_clear "$sup" "$dev"; done
    fi
    terminate linkdelay 2
    alive linkdelay && return 1
    rm -f "$STATE/link" "$STATE/run/linkdelay.pid" "$STATE/pid/linkdelay"
}

# link_apply: replace the server's link with the parsed one (LINK_*).
# Returns 1 (after one line) if any part fails; then no link is left.
link_apply() {
    local dev sup
    sup=$(recorded supervisor)
    link_clear || return 1
    for dev in $(link_devs); do
        qdisc_set "$sup" "$dev" || { log "link: tc on $dev failed"; link_clear; return 1; }
    done
    if link_wants_delay && ! netem_works; then
        start_linkdelay || { link_clear; return 1; }
        iptables_link add || { log "link: iptables in the namespace failed"; link_clear; return 1; }
    fi
    printf '%s\n' "$LINK_SPEC" >"$STATE/link.tmp"
    mv -f "$STATE/link.tmp" "$STATE/link"
    log "link: $LINK_SPEC ($(if link_wants_delay; then
        netem_works && echo "netem" || echo "herd-linkdelay pid $(recorded linkdelay)"
    else echo "no delay"; fi)$( ((LINK_RATE_BIT > 0)) && echo ", tbf") on $(link_devs | paste -sd ' '))"
}

# current_link: the running server's link spec, or "none".
current_link() {
    if [ -s "$STATE/link" ]; then cat "$STATE/link"; else echo none; fi
}

# ------------------------------------------------------------------ supervisor

# Runs as `unshare --net --mount --propagation private -- nfs-server.sh
# _supervise --state DIR`: the process that holds the namespaces, starts and
# reaps rpcbind, rpc.statd and ganesha, and tears everything down on SIGTERM.
# SIGUSR1 asks it to start ganesha again (restart-ganesha), SIGUSR2 to start
# statd again (start-statd).
supervise() {
    load_settings
    local want_stop="" want_start="" want_statd="" ganesha_pid="" rpcbind_pid=""
    local statd_pid="" loopdev="" cmd st i
    trap 'want_stop=1' TERM INT HUP
    trap 'want_start=1' USR1
    trap 'want_statd=1' USR2

    sup_log() { printf '%s supervisor: %s\n' "$(date '+%F %T')" "$*"; }

    sup_cleanup() {
        local i
        trap '' TERM INT HUP USR1 USR2
        # By the recorded PID + start time, not kill -0: bash reaps its
        # children at once, so a bare PID could already belong to someone
        # else. ganesha first (it unmonitors its NLM clients with statd on
        # the way out), then statd, then rpcbind.
        if [ -n "$ganesha_pid" ]; then
            terminate ganesha "$(ganesha_stop_timeout)"
            wait "$ganesha_pid" 2>/dev/null || true
        fi
        if [ -n "$statd_pid" ]; then
            terminate statd 5
            wait "$statd_pid" 2>/dev/null || true
        fi
        if [ -n "$rpcbind_pid" ]; then
            terminate rpcbind 5
            wait "$rpcbind_pid" 2>/dev/null || true
        fi
        if [ "$FS" != dir ] && mountpoint -q "$EXPORT"; then
            sync -f "$EXPORT" 2>/dev/null || true
            for ((i = 0; i < 40; i++)); do
                umount "$EXPORT" 2>/dev/null && break
                sleep 0.25
            done
            mountpoint -q "$EXPORT" && { sup_log "umount $EXPORT busy; lazy"; umount -l "$EXPORT" || true; }
        fi
        if [ -n "$loopdev" ]; then
            losetup -d "$loopdev" 2>/dev/null || sup_log "losetup -d $loopdev failed"
        fi
        sup_log "stopped"
    }

    start_ganesha() {
        local i
        rm -f "$STATE/run/ganesha.pid"
        if [ "$MODE" = async ]; then
            "$STATE/bin/nosync" ganesha.nfsd -F -p "$STATE/run/ganesha.pid" \
                -L "$STATE/log/ganesha.log" -f "$STATE/conf/ganesha.conf" \
                </dev/null >>"$STATE/log/ganesha.stderr" 2>&1 &
        else
            ganesha.nfsd -F -p "$STATE/run/ganesha.pid" \
                -L "$STATE/log/ganesha.log" -f "$STATE/conf/ganesha.conf" \
                </dev/null >>"$STATE/log/ganesha.stderr" 2>&1 &
        fi
        ganesha_pid=$!
        # /proc/PID/stat exists as soon as fork returns; record it at once.
        record ganesha "$ganesha_pid"
        sup_log "started ganesha.nfsd pid $ganesha_pid"
    }

    # start_statd: rpc.statd in the foreground, its state (sm/, sm.bak/,
    # state) in STATE/statd, no SM_NOTIFY at start (-L), a fixed port; then
    # wait until it is registered with rpcbind (ganesha's NLM finds it there).
    # The directory stays root's, so statd runs as root: as user statd it
    # could not reach a state directory below a 0700 one (pytest's tmp).
    # Returns 1 if it does not come up.
    start_statd() {
        local i
        mkdir -p "$STATD_DIR/sm" "$STATD_DIR/sm.bak"
        rpc.statd -F -d -L -P "$STATD_DIR" -p "$STATD_PORT" \
            </dev/null >>"$STATE/log/statd.log" 2>&1 &
        statd_pid=$!
        record statd "$statd_pid"
        sup_log "started rpc.statd pid $statd_pid"
        for ((i = 0; i < 200; i++)); do
            alive statd || { sup_log "rpc.statd exited"; statd_pid=""; return 1; }
            rpcinfo -T tcp 127.0.0.1 100024 1 >/dev/null 2>&1 && return 0
            sleep 0.025
        done
        sup_log "rpc.statd did not register with rpcbind within 5 s"
        return 1
    }

    fail() { sup_log "FAILED: $*"; printf '%s\n' "$*" >"$STATE/run/failed"; sup_cleanup; exit 1; }

    record supervisor "$$"
    sup_log "pid $$, fs $FS, mode $MODE, workers $WORKERS, nlm $NLM, grace $GRACE, lease $LEASE"
    ip link set lo up || fail "ip link set lo up"
    if [ -n "$HOST_NAME" ]; then
        hostname "$HOST_NAME" || fail "hostname $HOST_NAME"
    fi
    # Private /run (rpcbind's socket and lock, ganesha's files) and
    # /var/lib/nfs: nothing of the host's is touched.
    mount --bind "$STATE/run" /run || fail "bind $STATE/run over /run"
    if [ -d /var/lib/nfs ]; then
        mount --bind "$STATE/lib-nfs" /var/lib/nfs || fail "bind over /var/lib/nfs"
    fi
    if [ "$FS" != dir ]; then
        loopdev=$(losetup --find --show "$IMAGE") || fail "losetup $IMAGE"
        printf '%s\n' "$loopdev" >"$STATE/run/loopdev"
        mount -t "$FS" "$loopdev" "$EXPORT" || fail "mount -t $FS $loopdev $EXPORT"
        chmod 0777 "$EXPORT" || fail "chmod $EXPORT"
        sup_log "mounted $FS $loopdev on $EXPORT"
    fi
    rpcbind -f </dev/null >>"$STATE/log/rpcbind.log" 2>&1 &
    rpcbind_pid=$!
    record rpcbind "$rpcbind_pid"
    for ((i = 0; i < 200; i++)); do
        [ -S /run/rpcbind.sock ] && break
        alive rpcbind || fail "rpcbind exited"
        sleep 0.025
    done
    [ -S /run/rpcbind.sock ] || fail "rpcbind did not come up"
    if [ "$NLM" = 1 ]; then
        start_statd || fail "rpc.statd did not come up (see log/statd.log)"
    fi
    start_ganesha

    # A FIFO nobody writes: read -t is a fork-free sleep that trapped
    # signals cut short.
    mkfifo "$STATE/run/tick"
    exec 3<>"$STATE/run/tick"
    while [ -z "$want_stop" ]; do
        # bash reaps its children itself: a dead ganesha is simply gone.
        if [ -n "$ganesha_pid" ] && ! alive ganesha; then
            st=0
            wait "$ganesha_pid" 2>/dev/null || st=$?
            sup_log "ganesha $ganesha_pid exited (status $st)"
            ganesha_pid=""
        fi
        if [ -n "$statd_pid" ] && ! alive statd; then
            st=0
            wait "$statd_pid" 2>/dev/null || st=$?
            sup_log "rpc.statd $statd_pid exited (status $st)"
            statd_pid=""
        fi
        if [ -n "$want_statd" ]; then
            want_statd=""
            if [ "$NLM" != 1 ]; then
                sup_log "statd start requested but NLM is off"
            elif [ -n "$statd_pid" ]; then
                sup_log "statd start requested but rpc.statd $statd_pid is running"
            else
                start_statd || true
            fi
        fi
        if [ -n "$want_start" ]; then
            want_start=""
            if [ -n "$ganesha_pid" ]; then
                sup_log "start requested but ganesha $ganesha_pid is running"
            else
                start_ganesha
            fi
        fi
        read -r -t 0.1 -u 3 cmd || true
    done
    sup_cleanup
    exit 0
}

# ------------------------------------------------------------------ commands

cmd_start() {
    local fs=dir size=2G workers="" mode=sync host_name="" nlm=1 grace=0 lease="" link="" link_opt=0
    while (($#)); do
        case "$1" in
            --state) set_state "${2:-}"; shift 2 ;;
            --state=*) set_state "${1#*=}"; shift ;;
            --fs) fs=${2:-}; shift 2 ;;
            --fs=*) fs=${1#*=}; shift ;;
            --size) size=${2:-}; shift 2 ;;
            --size=*) size=${1#*=}; shift ;;
            --workers) workers=${2:-}; shift 2 ;;
            --workers=*) workers=${1#*=}; shift ;;
            --sync) mode=sync; shift ;;
            --async) mode=async; shift ;;
            --sync-writes) mode=sync-writes; shift ;;
            --hostname) host_name=${2:-}; shift 2 ;;
            --hostname=*) host_name=${1#*=}; shift ;;
            --nlm) nlm=1; shift ;;
            --no-nlm) nlm=0; shift ;;
            --grace) grace=${2:-}; shift 2 ;;
            --grace=*) grace=${1#*=}; shift ;;
            --lease) lease=${2:-}; shift 2 ;;
            --lease=*) lease=${1#*=}; shift ;;
            --link) [ $# -ge 2 ] || die "start: --link needs a SPEC"; link=$2 link_opt=1; shift 2 ;;
            --link=*) link=${1#*=} link_opt=1; shift ;;
            -h | --help) usage ;;
            *) log "start: unknown argument $1"; usage ;;
        esac
    done
    [ -n "${STATE:-}" ] || die "start: --state DIR is required"
    case "$fs" in dir | xfs | ext4 | btrfs) ;; *) die "start: --fs must be dir, xfs, ext4 or btrfs" ;; esac
    [[ "$size" =~ ^[0-9]+[KMGT]?$ ]] || die "start: --size: a number with an optional K, M, G or T"
    if [ -n "$host_name" ] && ! [[ "$host_name" =~ ^[A-Za-z0-9][A-Za-z0-9.-]{0,62}$ ]]; then
        die "start: --hostname: letters, digits, '.' and '-', at most 63"
    fi
    check_seconds "start: --grace" "$grace" 0
    [ -n "$lease" ] || lease=$(default_lease "$grace" 60)
    check_seconds "start: --lease" "$lease" 1
    if [ -n "$workers" ]; then
        if ! [[ "$workers" =~ ^[0-9]+$ ]] || ((workers < 2 || workers > 131072)); then
            die "start: --workers must be 2..131072 (ganesha refuses 1)"
        fi
    else
        workers=200
    fi
    [ "$(id -u)" -eq 0 ] || die "start: needs root (namespaces, mounts, loop devices)"
    local tool
    for tool in unshare nsenter ip losetup ganesha.nfsd rpcbind nfs-ls timeout; do
        command -v "$tool" >/dev/null || die "start: $tool not found (see cluster-configs/local/install.sh)"
    done
    if [ "$nlm" = 1 ]; then
        for tool in rpc.statd rpcinfo; do
            command -v "$tool" >/dev/null ||
                die "start: $tool not found (package nfs-common; or start --no-nlm)"
        done
    fi
    [ -r "$TEMPLATE" ] || die "start: $TEMPLATE is missing"
    if ((link_opt)); then
        parse_link "$link" || exit 1
        check_link_tools || exit 1
    fi
    [ "$fs" = dir ] || command -v "mkfs.$fs" >/dev/null || die "start: mkfs.$fs not found"
    if [ "$mode" = async ]; then
        [ -r "$NOSYNC_SRC" ] || die "start: $NOSYNC_SRC is missing"
        command -v cc >/dev/null || die "start: --async needs a C compiler (cc) to build $NOSYNC_SRC"
    fi

    if [ -e "$STATE" ]; then
        if is_ours; then
            if alive supervisor || alive ganesha; then
                die "start: a server is already running with state $STATE (stop it first)"
            fi
            log "cleaning up what an earlier server left in $STATE"
            do_stop 0 || die "start: could not clean up $STATE"
        elif [ -n "$(ls -A "$STATE")" ]; then
            die "start: $STATE exists, is not empty and is not a nfs-server.sh state directory"
        fi
    fi

    local t0=$SECONDS
    mkdir -p "$STATE"
    : >"$STATE/$MARKER"
    mkdir -p "$STATE"/{bin,conf,run,lib-nfs,recovery,statd,export,log,pid}
    chmod 0777 "$EXPORT"
    FS=$fs SIZE=$size WORKERS=$workers MODE=$mode HOST_NAME=$host_name
    NLM=$nlm GRACE=$grace LEASE=$lease
    save_settings
    write_conf

    # From here on a failure undoes everything.
    trap 'log "start failed"; log_tail; do_stop 0 || true; exit 1' ERR
    if [ "$mode" = async ] && ! build_nosync; then
        do_stop 0 || true
        exit 1
    fi
    if [ "$fs" != dir ]; then
        truncate -s "$size" "$IMAGE"
        case "$fs" in
            xfs) mkfs.xfs -q -f "$IMAGE" >&2 ;;
            ext4) mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$IMAGE" >&2 ;;
            btrfs) mkfs.btrfs -q -f "$IMAGE" >&2 ;;
        esac
    fi
    trap - ERR

    local uts=()
    [ -n "$host_name" ] && uts=(--uts)
    setsid unshare --net --mount "${uts[@]}" --propagation private -- \
        bash "$SELF" _supervise --state "$STATE" \
        </dev/null >>"$STATE/log/supervisor.log" 2>&1 &
    local launcher=$!
    record launcher "$launcher"

    local ok=1 i
    for ((i = 0; i < START_TIMEOUT * 20; i++)); do
        [ -e "$STATE/run/failed" ] && { ok=0; break; }
        # (setsid does not fork here, so the launcher is the supervisor)
        if ! alive launcher && ! alive supervisor; then ok=0; break; fi
        alive supervisor && alive ganesha && break
        sleep 0.05
    done
    if ((ok)) && [ -n "$link" ] && alive supervisor && ! link_apply; then
        ok=0
    fi
    if ((ok)) && alive supervisor && alive ganesha && wait_ready "$START_TIMEOUT"; then
        log "started in $((SECONDS - t0)) s: fs $fs, mode $mode, workers $workers, export $EXPORT," \
            "nlm $( ((nlm)) && echo "on (port $NLM_PORT, statd port $STATD_PORT)" || echo off)," \
            "grace $grace s, lease $lease s, link $(current_link)"
        url
        recorded ganesha
        return 0
    fi
    log "start failed"
    [ -e "$STATE/run/failed" ] && log "supervisor: $(cat "$STATE/run/failed")"
    log_tail
    do_stop 0 || true
    exit 1
}

# do_stop PURGE: stop and remove everything; returns non-zero if something
# could not be removed.
do_stop() {
    local purge=$1 problems=0 name mp dev i
    load_settings
    # The link first: its rules and qdiscs live in the namespace (and go
    # with it), the delayer is ours to stop (its packets then pass).
    link_clear || true
    # The supervisor stops ganesha, statd and rpcbind, unmounts and detaches.
    if alive supervisor; then
        if alive ganesha; then kill -CONT "$(recorded ganesha)" 2>/dev/null || true; fi
        terminate supervisor
    fi
    # Whatever is left (the supervisor was killed, or hung): by recorded PID.
    terminate ganesha "$(ganesha_stop_timeout)"
    for name in statd rpcbind supervisor launcher linkdelay; do
        terminate "$name"
    done
    for name in ganesha statd rpcbind supervisor launcher linkdelay; do
        if alive "$name"; then
            log "$name (pid $(recorded "$name")) is still running"
            problems=1
        fi
    done
    # The namespace's mounts went with its last process. Loop devices of our
    # image: detach what is left (losetup -d on a busy device detaches it
    # when it is released).
    if [ -e "$IMAGE" ]; then
        for ((i = 0; i < 100; i++)); do
            dev=$(loops_of "$IMAGE")
            [ -z "$dev" ] && break
            for d in $dev; do losetup -d "$d" 2>/dev/null || true; done
            sleep 0.1
        done
        dev=$(loops_of "$IMAGE")
        [ -z "$dev" ] || { log "loop device(s) still attached to $IMAGE: $dev"; problems=1; }
    fi
    # Nothing should be mounted under STATE in the caller's namespace; if
    # something is (a hand-made mount), take it away before deleting.
    while read -r mp; do
        [ -n "$mp" ] || continue
        log "unmounting $mp"
        umount "$mp" 2>/dev/null || umount -l "$mp" 2>/dev/null || true
    done < <(mounts_under "$STATE")
    if [ -n "$(mounts_under "$STATE")" ]; then
        log "still mounted under $STATE: $(mounts_under "$STATE" | tr '\n' ' ')"
        return 1
    fi
    ((problems)) && return 1
    if [ "$purge" = 1 ]; then
        rm -rf --one-file-system -- "$STATE"
    else
        rm -rf --one-file-system -- "${STATE:?}"/{bin,conf,run,lib-nfs,recovery,statd,export,pid} "$IMAGE"
    fi
    return 0
}

cmd_stop() {
    local purge=0
    while (($#)); do
        case "$1" in
            --state) set_state "${2:-}"; shift 2 ;;
            --state=*) set_state "${1#*=}"; shift ;;
            --purge) purge=1; shift ;;
            *) log "stop: unknown argument $1"; usage ;;
        esac
    done
    [ -n "${STATE:-}" ] || die "stop: --state DIR is required"
    if [ ! -e "$STATE" ]; then
        log "nothing to stop: $STATE does not exist"
        return 0
    fi
    is_ours || die "stop: $STATE is not a nfs-server.sh state directory; not touching it"
    local t0=$SECONDS
    if do_stop "$purge"; then
        log "stopped in $((SECONDS - t0)) s"
        return 0
    fi
    die "stop: something is left (see above)"
}

cmd_exec() {
    local server_fs=0
    while (($#)); do
        case "$1" in
            --state) set_state "${2:-}"; shift 2 ;;
            --state=*) set_state "${1#*=}"; shift ;;
            --server-fs) server_fs=1; shift ;;
            --) shift; break ;;
            *) log "exec: unknown argument $1"; usage ;;
        esac
    done
    [ -n "${STATE:-}" ] || die "exec: --state DIR is required"
    (($#)) || die "exec: no command given (exec --state DIR -- COMMAND...)"
    if ! is_ours || ! alive supervisor; then die "exec: no server running with state $STATE"; fi
    local sup
    sup=$(recorded supervisor)
    HERD_LINK=$(current_link)
    export HERD_LINK
    if ((server_fs)); then
        # Also the server's mount namespace: the export as the server sees it.
        exec nsenter --net="/proc/$sup/ns/net" --mount="/proc/$sup/ns/mnt" --wd="$PWD" -- "$@"
    fi
    exec nsenter --net="/proc/$sup/ns/net" -- "$@"
}

cmd_restart_ganesha() {
    local grace="" lease=""
    while (($#)); do
        case "$1" in
            --state) set_state "${2:-}"; shift 2 ;;
            --state=*) set_state "${1#*=}"; shift ;;
            --grace) grace=${2:-}; shift 2 ;;
            --grace=*) grace=${1#*=}; shift ;;
            --lease) lease=${2:-}; shift 2 ;;
            --lease=*) lease=${1#*=}; shift ;;
            *) log "restart-ganesha: unknown argument $1"; usage ;;
        esac
    done
    [ -n "${STATE:-}" ] || die "restart-ganesha: --state DIR is required"
    [ -z "$grace" ] || check_seconds "restart-ganesha: --grace" "$grace" 0
    [ -z "$lease" ] || check_seconds "restart-ganesha: --lease" "$lease" 1
    if ! is_ours || ! alive supervisor; then
        die "restart-ganesha: no server namespace with state $STATE (start it)"
    fi
    load_settings
    # --grace / --lease change the grace period (0: none) and the lease of
    # this and later starts; a grace shorter than the lease lowers the lease
    # to it unless --lease is given. Without them ganesha starts again as
    # configured.
    if [ -n "$grace" ] || [ -n "$lease" ]; then
        GRACE=${grace:-$GRACE}
        LEASE=${lease:-$(default_lease "$GRACE" "$LEASE")}
        save_settings
        write_conf
    fi
    local old i
    # What pid/ganesha said before (PID and start time): the new record differs.
    old=$(cat "$STATE/pid/ganesha" 2>/dev/null || true)
    terminate ganesha "$(ganesha_stop_timeout)"
    kill -USR1 "$(recorded supervisor)"
    for ((i = 0; i < START_TIMEOUT * 20; i++)); do
        if [ "$(cat "$STATE/pid/ganesha" 2>/dev/null || true)" != "$old" ] && alive ganesha; then
            break
        fi
        alive supervisor || break
        sleep 0.05
    done
    if alive ganesha && [ "$(cat "$STATE/pid/ganesha")" != "$old" ] && wait_ready "$START_TIMEOUT"; then
        log "ganesha restarted"
        recorded ganesha
        return 0
    fi
    log "restart-ganesha failed"
    log_tail
    exit 1
}

# state_only_args NAME ARGS...: the arguments of a command that takes only
# --state DIR (required).
state_only_args() {
    local name=$1
    shift
    while (($#)); do
        case "$1" in
            --state) set_state "${2:-}"; shift 2 ;;
            --state=*) set_state "${1#*=}"; shift ;;
            *) log "$name: unknown argument $1"; usage ;;
        esac
    done
    [ -n "${STATE:-}" ] || die "$name: --state DIR is required"
}

# statd_args NAME ARGS...: parse --state for stop-statd / start-statd and
# check there is a server with NLM.
statd_args() {
    state_only_args "$@"
    local name=$1
    if ! is_ours || ! alive supervisor; then die "$name: no server running with state $STATE"; fi
    load_settings
    [ "$NLM" = 1 ] || die "$name: the server runs without NLM (started with --no-nlm)"
}

# stop-statd: stop rpc.statd only (SIGTERM: it unregisters from rpcbind).
# ganesha keeps serving NLM, and answers every new lock NLM4_DENIED_NOLOCKS
# because it cannot monitor the client.
cmd_stop_statd() {
    statd_args stop-statd "$@"
    terminate statd 5
    alive statd && die "stop-statd: rpc.statd (pid $(recorded statd)) is still running"
    log "rpc.statd stopped"
}

# start-statd: have the supervisor start rpc.statd again (same state
# directory and port); prints its PID once it is registered with rpcbind.
cmd_start_statd() {
    statd_args start-statd "$@"
    local old i
    old=$(cat "$STATE/pid/statd" 2>/dev/null || true)
    if alive statd; then
        recorded statd
        return 0
    fi
    kill -USR2 "$(recorded supervisor)"
    for ((i = 0; i < START_TIMEOUT * 20; i++)); do
        if [ "$(cat "$STATE/pid/statd" 2>/dev/null || true)" != "$old" ] && alive statd &&
            in_netns rpcinfo -T tcp 127.0.0.1 100024 1 >/dev/null 2>&1; then
            log "rpc.statd started"
            recorded statd
            return 0
        fi
        alive supervisor || break
        sleep 0.05
    done
    log "start-statd failed"
    log_tail
    exit 1
}

# grace_now: "yes" while ganesha's log says its latest start is in grace,
# "no" otherwise (ganesha logs "NFS Server Now IN GRACE, duration N" and
# "NFS Server Now NOT IN GRACE" at EVENT level).
grace_now() {
    [ -r "$STATE/log/ganesha.log" ] || { echo no; return 0; }
    awk '/ganesha.nfsd Starting:/ { g = "no" }
         /NFS Server Now IN GRACE/ { g = "yes" }
         /NFS Server Now NOT IN GRACE/ { g = "no" }
         END { print (g == "yes" ? "yes" : "no") }' "$STATE/log/ganesha.log"
}

cmd_status() {
    state_only_args status "$@"
    if [ ! -e "$STATE" ] || ! is_ours || ! [ -e "$STATE/pid/supervisor" ]; then
        echo "state=stopped"
        return 3
    fi
    load_settings
    local name answers=no rc
    printf 'url=%s\nexport=%s\nfs=%s\nmode=%s\nworkers=%s\n' "$(url)" "$EXPORT" "$FS" "$MODE" "$WORKERS"
    [ -r "$STATE/run/loopdev" ] && printf 'loopdev=%s\n' "$(cat "$STATE/run/loopdev")"
    if [ "$NLM" = 1 ]; then
        printf 'nlm=on\nnlm_port=%s\nstatd_port=%s\nstatd_dir=%s\n' "$NLM_PORT" "$STATD_PORT" "$STATD_DIR"
    else
        printf 'nlm=off\n'
    fi
    printf 'grace=%s\nlease=%s\nin_grace=%s\n' "$GRACE" "$LEASE" "$(grace_now)"
    printf 'link=%s\n' "$(current_link)"
    local names=(supervisor rpcbind)
    [ "$NLM" = 1 ] && names+=(statd)
    names+=(ganesha)
    [ -e "$STATE/pid/linkdelay" ] && names+=(linkdelay)
    for name in "${names[@]}"; do
        if alive "$name"; then
            printf '%s=%s running\n' "$name" "$(recorded "$name")"
        else
            printf '%s=%s dead\n' "$name" "$(recorded "$name")"
        fi
    done
    if alive supervisor && alive ganesha &&
        in_netns timeout 5 nfs-ls "$(url)" >/dev/null 2>&1; then
        answers=yes
    fi
    printf 'answers=%s\n' "$answers"
    local st=stopped
    rc=3
    # running: NFS answers and, with NLM, statd is there (without it every
    # NLM lock is refused).
    if [ "$answers" = yes ] && { [ "$NLM" != 1 ] || alive statd; }; then
        st=running rc=0
    elif alive supervisor || alive ganesha || alive rpcbind || alive statd; then
        st=degraded rc=1
    fi
    printf 'state=%s\n' "$st"
    return $rc
}

# link --state DIR --set SPEC [--dev DEV]... | --clear: change the running
# server's link; each change replaces the previous link completely.
cmd_link() {
    local spec="" set=0 clear=0 devs=() nspid="" chain=INPUT addr=-
    while (($#)); do
        case "$1" in
            --state) set_state "${2:-}"; shift 2 ;;
            --state=*) set_state "${1#*=}"; shift ;;
            --set) [ $# -ge 2 ] || die "link: --set needs a SPEC"; spec=$2 set=1; shift 2 ;;
            --set=*) spec=${1#*=} set=1; shift ;;
            --clear) clear=1; shift ;;
            --dev) [[ "${2:-}" =~ ^[A-Za-z0-9._-]{1,15}$ ]] || die "link: --dev needs a device name"
                devs+=("$2"); shift 2 ;;
            # (for vcluster.sh: the delay rules and delayer in another
            # namespace's chain, for packets of the server's address)
            --netns-pid) [[ "${2:-}" =~ ^[0-9]+$ ]] || die "link: --netns-pid needs a PID"
                nspid=$2; shift 2 ;;
            --chain) [[ "${2:-}" =~ ^(INPUT|FORWARD|PREROUTING)$ ]] || die "link: --chain: INPUT or FORWARD"
                chain=$2; shift 2 ;;
            --addr) [[ "${2:-}" =~ ^[0-9.]+$ ]] || die "link: --addr needs an IPv4 address"
                addr=$2; shift 2 ;;
            *) log "link: unknown argument $1"; usage ;;
        esac
    done
    [ -n "${STATE:-}" ] || die "link: --state DIR is required"
    ((set + clear == 1)) || die "link: give one of --set SPEC or --clear"
    ((set)) && { parse_link "$spec" || exit 1; check_link_tools || exit 1; }
    if ! is_ours || ! alive supervisor; then die "link: no server running with state $STATE"; fi
    load_settings
    if ((clear)); then
        link_clear || die "link: herd-linkdelay (pid $(recorded linkdelay)) is still running"
        log "link: cleared"
        return 0
    fi
    if ((${#devs[@]})) || [ -n "$nspid" ]; then
        link_clear || die "link: herd-linkdelay (pid $(recorded linkdelay)) is still running"
    fi
    ((${#devs[@]} == 0)) || printf '%s\n' "${devs[@]}" >"$STATE/conf/link-devs"
    if [ -n "$nspid" ]; then
        local nsstart
        nsstart=$(proc_start "$nspid") || die "link: --netns-pid $nspid: no such process"
        printf '%s %s %s %s\n' "$nspid" "$nsstart" "$chain" "$addr" >"$STATE/conf/link-where"
    fi
    link_apply || exit 1
}

# _qdisc --netns-pid PID --dev DEV --set SPEC | --clear: the link's qdisc
# part (tbf, and netem where the kernel has it) on a device of another
# namespace (vcluster.sh: the switch port towards the server host).
cmd_qdisc() {
    local pid="" dev="" spec="" clear=0
    while (($#)); do
        case "$1" in
            --netns-pid) pid=${2:-}; shift 2 ;;
            --dev) dev=${2:-}; shift 2 ;;
            --set) spec=${2:-}; shift 2 ;;
            --clear) clear=1; shift ;;
            *) die "_qdisc: unknown argument $1" ;;
        esac
    done
    [[ "$pid" =~ ^[0-9]+$ ]] && [ -e "/proc/$pid/ns/net" ] || die "_qdisc: --netns-pid: no such process"
    [[ "$dev" =~ ^[A-Za-z0-9._-]{1,15}$ ]] || die "_qdisc: --dev needs a device name"
    if ((clear)); then qdisc_clear "$pid" "$dev"; return 0; fi
    parse_link "$spec" || exit 1
    check_link_tools || exit 1
    qdisc_set "$pid" "$dev" || die "_qdisc: tc on $dev failed"
}

main() {
    (($#)) || usage
    local cmd=$1
    shift
    case "$cmd" in
        start) cmd_start "$@" ;;
        stop) cmd_stop "$@" ;;
        exec) cmd_exec "$@" ;;
        restart-ganesha | start-ganesha) cmd_restart_ganesha "$@" ;;
        stop-statd) cmd_stop_statd "$@" ;;
        start-statd) cmd_start_statd "$@" ;;
        status) cmd_status "$@" ;;
        link) cmd_link "$@" ;;
        _qdisc) cmd_qdisc "$@" ;;
        _link_check)
            # vcluster.sh up: check SPEC and what it needs before anything
            # starts; stdout the normalized spec.
            parse_link "${1-}" && check_link_tools || exit 1
            printf '%s\n' "$LINK_SPEC"
            ;;
        _supervise)
            [ "${1:-}" = --state ] || exit 2
            set_state "$2"
            load_settings
            supervise
            ;;
        -h | --help | help) usage ;;
        *) log "unknown command $cmd"; usage ;;
    esac
}

main "$@"
