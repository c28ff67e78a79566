#!/usr/bin/env bash
# vcluster.sh — a virtual cluster on one machine, to run herd's batch jobs
# the way they run on real nodes: every host is a network namespace with
# its own host name (UTS namespace) and address on a private bridge, one of
# them the NFS server (the embedded nfs-ganesha of cluster-configs/local/,
# exporting a loop-mounted file system), and OpenMPI starts ranks into the
# client hosts through vc-agent (its plm_rsh_agent) instead of ssh. mpirun
# itself runs in a "head" host that is not in the hostfile.
#
#   vcluster.sh up --state DIR [--clients 4] [--slots 5] [--server-fs xfs|ext4|dir]
#                  [--server-size 2G] [--server-workers N] [--sync|--async] [--slurm]
#                  [--link delay=20ms,jitter=2ms,rate=8mbit]
#                  [--kernel-client [--mount-opts OPTS] [--share DIR]]
#                  [--server ganesha|knfsd] [--reach none|host]
#       stdout: the export's nfs:// URL as the clients reach it; with
#       --reach host a second line, its URL from the machine's own network
#       namespace (nfs-server.sh start --reach host: a veth pair from the
#       machine to the server host only, see ../local/reach.py)
#       --server knfsd: the server host runs the Linux kernel's nfsd (in a
#       User-Mode Linux guest of its own, nfs-server.sh --server knfsd) on
#       the routed subnet 10.77.1.0/30 behind the server host, which
#       forwards: every host has the route, the export is exported to the
#       cluster's 10.77.0.0/24
#       --kernel-client: every client host is a User-Mode Linux guest with
#       the Linux kernel's NFS client, the export mounted at DIR/mnt with
#       `mount -t nfs -o OPTS` (default vers=3), results written in
#       the share directory, read-write in every guest: --share DIR (an
#       existing directory, kept at down) or DIR/share (goes with down)
#   vcluster.sh mount --state DIR --mount-opts OPTS [--read-ahead-kb KB]
#       (--kernel-client) unmount the export on every client host and mount
#       it again with these options; --read-ahead-kb: then set the mount's
#       read-ahead window (its bdi's read_ahead_kb; the kernel's default
#       is 128)
#       --link: a slow, distant link between the clients and the server host
#       (any of delay, jitter, rate; see nfs-server.sh's "link"): delay on
#       the server host's NFS ports (each direction once), tbf on its eth0
#       (server -> clients) and on the switch port towards it (clients ->
#       server)
#       --slurm: a real Slurm too (vc-slurm.sh): slurmctld on the head host,
#       a slurmd on every client (--slots CPUs) and on the server (1 CPU)
#   vcluster.sh exec --state DIR -- COMMAND [ARG...]
#       runs COMMAND on the head host with HERD_HOSTFILE (unless set, even
#       empty: Slurm jobs under mpirun take their nodes from Slurm), HERD_MPIRUN_ARGS,
#       VC_URL, VC_SERVER (the server's host name), VC_STATE, HERD_LINK (the
#       --link spec, or none), the cluster's
#       OMPI_MCA_* settings, with --kernel-client VC_MOUNT (the mount point)
#       and VC_SHARE (a directory every host writes), and, with --slurm,
#       SLURM_CONF set: what
#       jobs/herd-batch.sh and jobs/slurm/herd.sbatch need to use mpirun,
#       sbatch or srun here
#   vcluster.sh status --state DIR
#   vcluster.sh down --state DIR
#
# Addresses are 10.77.0.0/24 and exist only inside the cluster's own
# namespaces (the bridge lives in a "switch" namespace); nothing is added to
# the machine's own network but, with --reach host, nfs-server.sh's veth
# pair to the server host (and a kernel nfsd's route). Everything is recorded in DIR and `down`
# removes it by PID. Needs root, util-linux (unshare, nsenter), iproute2,
# OpenMPI and what cluster-configs/local/nfs-server.sh needs; --slurm needs
# Debian's slurmctld, slurmd, slurm-client and munge (not started as services).
set -euo pipefail
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

SELF=$(readlink -f "${BASH_SOURCE[0]}")
HERE=$(dirname "$SELF")
NFS_SERVER=$(readlink -f "$HERE/../local/nfs-server.sh")
AGENT=$HERE/vc-agent
GUEST_PY=$HERE/vc-guest.py
UML_INIT_SRC=$(readlink -f "$HERE/../local/uml-init.c")
UML_XSTATE_SRC=$(readlink -f "$HERE/../local/uml-xstate.c")
UMLVIEW_PY=$(readlink -f "$HERE/../local/umlview.py")
GUEST_MEM_MB=512
GUEST_BOOT=60 # seconds a client guest may take to boot (2 CPUs, many guests)
MOUNT_WAIT=60 # seconds a mount may take (a slow link)
MARKER=.herd-vcluster
NET=10.77.0
KNFSD_NET=10.77.1 # --server knfsd: its guest's /30, routed through the server host
SERVER_NAME=${VC_SERVER_NAME:-srv}
LOCK_WAIT=${VC_LOCK_WAIT:-600} # seconds a command waits for another that holds STATE

log() { printf 'vcluster.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
usage() {
    sed -n '/^#   vcluster.sh up/,/^#   vcluster.sh down/p' "$SELF" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

# tools_need WHAT HINT TOOL...: die naming the first TOOL not on PATH.
tools_need() {
    local what=$1 hint=$2 t
    shift 2
    for t in "$@"; do
        command -v "$t" >/dev/null || die "$what: $t not found ($hint)"
    done
}

# A process named for good by its PID and start time, stopped alone or with
# every process of its network namespaces: procinfo.py (its top comment).
# proc_start PID: its start time; alive_pid PID START: that very process runs.
PROCINFO=$(readlink -f "$HERE/../local/procinfo.py")
procinfo() { python3 "$PROCINFO" "$@" </dev/null; }
proc_start() { procinfo start "$1"; }
alive_pid() { procinfo alive "$1" "$2"; }

# state_check MARKER: die with statedir.py's line unless STATE may be used
# (another user's directory, or one below a directory another user could
# swap, is refused; a STATE that does not exist yet is checked by what is
# above it).
STATEDIR_PY=$(readlink -f "$HERE/../local/statedir.py")
state_check() {
    local why
    why=$(python3 "$STATEDIR_PY" check --state "$STATE" --marker "$1" --new 2>&1) || die "$why"
}

# state_lock: the rest of this command with the lock of STATE (flock(1) on
# the directory; up, down and mount hold it), so that two commands never
# change one cluster at the same time: the command runs again under
# `flock -o`, which keeps the lock out of every process it starts (the
# namespace holders outlive it), after waiting up to LOCK_WAIT s for
# another holder. STATE must exist.
state_lock() {
    ((${STATE_LOCKED:-0})) && return 0
    if [ "${HERD_STATE_LOCKED:-}" = "$STATE" ]; then
        STATE_LOCKED=1
        unset HERD_STATE_LOCKED
        return 0
    fi
    local rc=0
    HERD_STATE_LOCKED=$STATE flock -o -w "$LOCK_WAIT" -E 75 "$STATE" bash "$SELF" "${ARGV[@]}" || rc=$?
    ((rc != 75)) || die "another command has held $STATE for $LOCK_WAIT s"
    exit "$rc"
}
# shellcheck source=cluster-configs/virtual/vc-slurm.sh
. "$HERE/vc-slurm.sh"
# shellcheck source=cluster-configs/virtual/vc-guests.sh
. "$HERE/vc-guests.sh"

# hosts file: NAME PID START ADDRESS ROLE (switch, head, client, server)
host_field() { awk -v h="$1" -v f="$2" '$1 == h { print $f }' "$STATE/hosts"; }

# set_state DIR: the absolute STATE, which must be a directory this script
# may use (statedir.py: not another user's, nor below one another user
# could swap; a DIR that does not exist yet is checked by what is above).
set_state() {
    [ -n "$1" ] || die "--state needs a directory"
    STATE=$(readlink -m "$1")
    state_check "$MARKER"
}

parse_state_only() {
    while (($#)); do
        case "$1" in
            --state) set_state "${2:-}"; shift 2 ;;
            --state=*) set_state "${1#*=}"; shift ;;
            --) shift; REST=("$@"); return 0 ;;
            *) log "unknown argument $1"; usage ;;
        esac
    done
    REST=()
}

# in_host NAME COMMAND...: run COMMAND in that host's network namespace.
in_host() {
    local pid
    pid=$(host_field "$1" 2)
    shift
    nsenter -t "$pid" --net -- "$@"
}

# start_host NAME ROLE: a holder process owning a new network and UTS
# namespace with host name NAME.
start_host() {
    local name=$1 role=$2 pid start i
    setsid unshare --net --uts -- bash -c 'hostname "$1"; ip link set lo up; exec sleep infinity' \
        _ "$name" </dev/null >/dev/null 2>&1 &
    pid=$!
    for ((i = 0; i < 100; i++)); do
        [ "$(nsenter -t "$pid" --uts -- hostname 2>/dev/null)" = "$name" ] && break
        sleep 0.02
    done
    start=$(proc_start "$pid") || die "host $name did not start"
    printf '%s %s %s - %s\n' "$name" "$pid" "$start" "$role" >>"$STATE/hosts"
}

# connect NAME ADDRESS: a veth pair from the switch's bridge to host NAME.
connect() {
    local name=$1 addr=$2 pid port
    pid=$(host_field "$name" 2)
    port="v-$name"
    in_host switch ip link add "$port" type veth peer name eth0 netns "/proc/$pid/ns/net"
    in_host switch ip link set "$port" master br0 up
    nsenter -t "$pid" --net -- ip addr add "$addr/24" dev eth0
    nsenter -t "$pid" --net -- ip link set eth0 up
    awk -v h="$name" -v a="$addr" '$1 == h { $4 = a } { print }' "$STATE/hosts" >"$STATE/hosts.new"
    mv "$STATE/hosts.new" "$STATE/hosts"
}

cmd_up() {
    local clients=4 slots=5 fs=xfs size=2G workers="" mode=--sync slurm=0 link="" link_opt=0
    local link_rtt_us=0 kclient=0 mount_opts=vers=3 share="" server=ganesha reach=none
    while (($#)); do
        case "$1" in
            --state) set_state "${2:-}"; shift 2 ;;
            --clients) clients=${2:-}; shift 2 ;;
            --slots) slots=${2:-}; shift 2 ;;
            --server-fs) fs=${2:-}; shift 2 ;;
            --server-size) size=${2:-}; shift 2 ;;
            --server-workers) workers=${2:-}; shift 2 ;;
            --sync | --async) mode=$1; shift ;;
            --slurm) slurm=1; shift ;;
            --link) [ $# -ge 2 ] || die "up: --link needs a SPEC"; link=$2 link_opt=1; shift 2 ;;
            --link=*) link=${1#*=} link_opt=1; shift ;;
            --kernel-client) kclient=1; shift ;;
            --mount-opts) [ $# -ge 2 ] || die "up: --mount-opts needs OPTS"; mount_opts=$2; shift 2 ;;
            --mount-opts=*) mount_opts=${1#*=}; shift ;;
            --share) [ $# -ge 2 ] || die "up: --share needs a DIR"; share=$2; shift 2 ;;
            --share=*) share=${1#*=}; shift ;;
            --server) server=${2:-}; shift 2 ;;
            --server=*) server=${1#*=}; shift ;;
            --reach) reach=${2:-}; shift 2 ;;
            --reach=*) reach=${1#*=}; shift ;;
            *) log "up: unknown argument $1"; usage ;;
        esac
    done
    [ -n "${STATE:-}" ] || die "up: --state DIR is required"
    [[ "$clients" =~ ^[1-9][0-9]*$ ]] && ((clients <= 200)) || die "up: --clients must be 1..200"
    [[ "$slots" =~ ^[1-9][0-9]*$ ]] || die "up: --slots must be a positive number"
    case "$server" in
        ganesha) ;;
        knfsd) ((slurm == 0)) || die "up: --slurm and --server knfsd do not go together (no slurmd in its guest)" ;;
        *) die "up: --server must be ganesha or knfsd" ;;
    esac
    case "$reach" in
        none) ;;
        host) ((link_opt == 0)) || die "up: --link and --reach host do not go together (the machine's path to the server does not cross the switch, where the link is)" ;;
        *) die "up: --reach must be none or host" ;;
    esac
    [ "$(id -u)" -eq 0 ] || die "up: needs root (namespaces)"
    tools_need up "see cluster-configs/local/install.sh" unshare nsenter ip mpirun
    ((slurm == 0)) || slurm_check_tools
    if ((kclient)); then
        ((slurm == 0)) || die "up: --slurm and --kernel-client do not go together (no slurmd in the guests)"
        guests_check_tools
        if [ -n "$share" ]; then
            [ -d "$share" ] && [ ! -L "$share" ] || die "up: --share $share is not a directory"
            share=$(readlink -f "$share")
        fi
    fi
    if ((link_opt)); then
        # (line 1 the normalized spec, line 2 what it adds to a round trip, us)
        link=$(bash "$NFS_SERVER" _link_check "$link" 2>&1) || die "up: ${link#nfs-server.sh: }"
        link_rtt_us=${link#*$'\n'} link=${link%%$'\n'*}
    fi
    # The directory (checked again now that it exists), then its lock: a
    # second up waits here, then finds the first one's cluster.
    mkdir -p -- "$STATE"
    set_state "$STATE"
    state_lock
    if [ -n "$(ls -A "$STATE" 2>/dev/null)" ]; then
        [ -f "$STATE/$MARKER" ] || die "up: $STATE exists, is not empty and is not a vcluster state"
        die "up: a cluster already uses $STATE (vcluster.sh down --state $STATE first)"
    fi
    : >"$STATE/$MARKER"
    : >"$STATE/hosts"
    # (a failed step, die's or a command's, takes down what up made)
    trap 'log "up failed (line $LINENO: $BASH_COMMAND)"; exit 1' ERR
    trap 'st=$?; ((st == 0)) || { do_down || true; rm -rf "$STATE"; }' EXIT

    start_host switch switch
    in_host switch ip link add br0 type bridge
    in_host switch ip link set br0 up
    start_host head head
    connect head "$NET.1"

    # The NFS server is a host too: nfs-server.sh's own namespaces, named.
    local server_args=(start --state "$STATE/server" --fs "$fs" --size "$size" "$mode"
                       --hostname "$SERVER_NAME")
    [ -n "$workers" ] && server_args+=(--workers "$workers")
    [ "$reach" = host ] && server_args+=(--reach host)
    if [ "$server" = knfsd ]; then
        server_args+=(--server knfsd --guest-net "$KNFSD_NET" --export-to "$NET.0/24")
        printf '%s\n' "$KNFSD_NET.0/30,$NET.2" >"$STATE/server-route"
    fi
    local url
    url=$(bash "$NFS_SERVER" "${server_args[@]}") # line 1 the URL, line 2 ganesha's PID
    url=${url%%$'\n'*}
    [ "$reach" = host ] && printf '%s\n' "$url" >"$STATE/host-url"
    local sup sup_start
    # (status exits non-zero while the server is not answering yet: the
    # supervisor line is what counts here)
    sup=$({ bash "$NFS_SERVER" status --state "$STATE/server" || true; } |
        sed -n 's/^supervisor=\([0-9]*\) running$/\1/p')
    [ -n "$sup" ] || die "up: the NFS server has no running supervisor"
    sup_start=$(proc_start "$sup")
    printf '%s %s %s - server\n' "$SERVER_NAME" "$sup" "$sup_start" >>"$STATE/hosts"
    connect "$SERVER_NAME" "$NET.2"
    if [ -s "$STATE/server-route" ]; then
        # The kernel nfsd's guest sits behind the server host: it forwards,
        # and every host routes the guest's subnet through it.
        in_host "$SERVER_NAME" sysctl -qw net.ipv4.ip_forward=1
        route_add head
    fi
    if [ -n "$link" ]; then
        link_up "$link"
    fi

    local i name
    : >"$STATE/hostfile"
    if ((kclient)); then
        guests_build_init "$share"
    fi
    for ((i = 1; i <= clients; i++)); do
        name=$(printf 'c%02d' "$i")
        if ((kclient)); then
            guest_start "$name" "$NET.$((10 + i))"
        else
            start_host "$name" client
            connect "$name" "$NET.$((10 + i))"
            route_add "$name"
        fi
        printf '%s slots=%s\n' "$name" "$slots" >>"$STATE/hostfile"
    done
    # The server last, one slot: the monitor rank (monitor_host = srv).
    printf '%s slots=1\n' "$SERVER_NAME" >>"$STATE/hostfile"
    # (ganesha's URL names its namespace's address, 127.0.0.1 or with
    # --reach host the veth pair's: the clients use the server host's; a
    # kernel nfsd's names its guest, routed from everywhere)
    [ "$server" = knfsd ] || url=$(sed -E "s|^nfs://[0-9.]+/|nfs://$NET.2/|" <<<"$url")
    printf '%s\n' "$url" >"$STATE/url"

    # Every client must reach the server's NFS port before we say ready
    # (10 s, and the one round trip of the connect over the link).
    local reach=$((10 + (link_rtt_us + 999999) / 1000000))
    if ((kclient)); then
        guests_wait
        guests_mount "$mount_opts"
    fi
    for ((i = 1; i <= clients && !kclient; i++)); do
        name=$(printf 'c%02d' "$i")
        in_host "$name" timeout "$reach" bash -c "exec 3<>/dev/tcp/$(url_host)/2049" ||
            die "up: $name cannot reach $(url_host):2049"
    done
    ((slurm == 0)) || slurm_up "$clients" "$slots"
    trap - ERR EXIT
    log "up: $clients $( ((kclient)) && echo "kernel-client guests (mount -o $mount_opts)" || echo clients) x $slots slots, server $SERVER_NAME ($server, $fs), head $NET.1, link $(vc_link)$(
        ((slurm == 0)) || printf ', Slurm (SLURM_CONF=%s)' "$(slurm_dir)/slurm.conf")"
    cat "$STATE/url"
    [ ! -s "$STATE/host-url" ] || cat "$STATE/host-url"
}

# url_host: the host of the export's URL (the server host's address, or
# with --server knfsd its guest's).
url_host() { sed -e 's|^nfs://||' -e 's|[/:?].*||' "$STATE/url"; }

# server_routes ip|guest: the route to the kernel nfsd's subnet, for
# `ip route add` (ip) or uml-init's routes setting (guest); nothing for
# ganesha.
server_routes() {
    [ -s "$STATE/server-route" ] || return 0
    local route
    route=$(cat "$STATE/server-route")
    if [ "$1" = ip ]; then echo "${route%,*} via ${route#*,}"; else echo "$route"; fi
}

# route_add NAME: host NAME's route to the kernel nfsd's subnet (none for
# ganesha).
route_add() {
    local route
    read -r -a route <<<"$(server_routes ip)"
    ((${#route[@]} == 0)) || in_host "$1" ip route add "${route[@]}"
}

# link_up SPEC: the link between the clients and the server host, made by
# nfs-server.sh's link: tbf (and netem where the kernel has it) on the
# server's eth0 (server -> clients) and on the switch port towards it
# (clients -> server); without netem the delay rules and herd-linkdelay sit
# in the switch's FORWARD chain (every packet to or from the server's
# ports is bridged there once, and no longer belongs to its sender's
# socket: see nfs-server.sh). The server's stop ends the delayer; the
# rules and qdiscs go with their namespaces at down.
link_up() {
    # Bridged packets pass the switch's iptables (per namespace; default on).
    in_host switch sh -c 'echo 1 >/proc/sys/net/bridge/bridge-nf-call-iptables'
    bash "$NFS_SERVER" link --state "$STATE/server" --set "$1" --dev eth0 \
        --netns-pid "$(host_field switch 2)" --chain FORWARD --addr "$NET.2" >&2
    bash "$NFS_SERVER" _qdisc --netns-pid "$(host_field switch 2)" --dev "v-$SERVER_NAME" --set "$1" >&2
    printf '%s\n' "$1" >"$STATE/link"
}

vc_link() {
    if [ -s "$STATE/link" ]; then cat "$STATE/link"; else echo none; fi
}

# link_applied: what is in place between the clients and the server, read
# back by nfs-server.sh from tc and the delayer (its status's link_applied),
# with the switch port towards the server.
link_applied() {
    local port=()
    [ -d "$STATE/server" ] || { echo none; return 0; }
    alive_pid "$(host_field switch 2)" "$(host_field switch 3)" &&
        port=(--netns-pid "$(host_field switch 2)" --dev "v-$SERVER_NAME")
    bash "$NFS_SERVER" _link_applied --state "$STATE/server" "${port[@]}"
}

# mpirun's settings for this cluster, without the hostfile (HERD_HOSTFILE
# carries that: herd-batch.sh passes it with --hostfile).
mpirun_args() {
    printf '%s' "--mca plm_rsh_agent $AGENT --mca plm_rsh_no_tree_spawn 1 -x VC_STATE"
    [ "$(id -u)" -eq 0 ] && printf '%s' " -x OMPI_ALLOW_RUN_AS_ROOT -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"
    printf '\n'
}

# OpenMPI's settings for every launch here, mpirun's or srun's: TCP on the
# bridge only, and waiting ranks yield the CPU. Every "host" shares this
# machine's CPUs, which OpenMPI cannot see through the slots: spinning
# ranks starve the one that has work (100 ranks on 2 CPUs: minutes instead
# of seconds for the clock sync).
mca_env() {
    printf '%s\n' "OMPI_MCA_oob_tcp_if_include=$NET.0/24" "OMPI_MCA_btl_tcp_if_include=$NET.0/24" \
        "OMPI_MCA_btl=tcp,vader,self" "OMPI_MCA_mpi_yield_when_idle=1"
    # (a UML guest has no cross-memory attach between its processes)
    [ -f "$STATE/mount-opts" ] && printf '%s\n' "OMPI_MCA_btl_vader_single_copy_mechanism=none"
    return 0
}

cmd_exec() {
    parse_state_only "$@"
    [ -n "${STATE:-}" ] && [ -f "$STATE/$MARKER" ] || die "exec: no cluster at --state"
    ((${#REST[@]})) || die "exec: no command (vcluster.sh exec --state DIR -- COMMAND)"
    local pid
    pid=$(host_field head 2)
    alive_pid "$pid" "$(host_field head 3)" || die "exec: the head host is not running"
    local env=()
    mapfile -t env < <(mca_env)
    [ -f "$(slurm_dir)/slurm.conf" ] && env+=("SLURM_CONF=$(slurm_dir)/slurm.conf")
    [ -f "$STATE/mount-opts" ] && env+=("VC_MOUNT=$STATE/mnt" "VC_SHARE=$(cat "$STATE/share-dir")"
        "VC_MOUNT_OPTS=$(cat "$STATE/mount-opts")")
    env VC_STATE="$STATE" VC_URL="$(cat "$STATE/url")" VC_SERVER="$SERVER_NAME" HERD_LINK="$(vc_link)" \
        HERD_HOSTFILE="${HERD_HOSTFILE-$STATE/hostfile}" HERD_MPIRUN_ARGS="$(mpirun_args)" \
        OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "${env[@]}" \
        nsenter -t "$pid" --net --uts -- "${REST[@]}"
}

# sweep_hosts: stop what still runs in the namespaces of the client and
# head hosts (an orted or a job task whose launcher died): those
# namespaces are this cluster's own, so is everything in them (procinfo.py
# ns-stop: SIGTERM, 1 s, SIGKILL; the live holders keep each namespace, and so its
# number, theirs meanwhile). Says which processes needed SIGKILL. The
# server host's are nfs-server.sh's to clean.
sweep_hosts() {
    local name pid start addr role ino inos=() holders=() killed st=0
    while read -r name pid start addr role; do
        # (a guest's linux.uml is no holder: it lives in the switch's
        # namespace, and goes with what else runs there)
        [ "$role" = server ] || [ "$role" = guest ] && continue
        alive_pid "$pid" "$start" || continue
        ino=$(stat -L -c %i "/proc/$pid/ns/net" 2>/dev/null) || continue
        inos+=("$ino") holders+=("$pid")
    done <"$STATE/hosts"
    ((${#inos[@]})) || return 0
    killed=$(procinfo ns-stop 1 "${inos[@]}" -- "${holders[@]}") || st=1
    [ -z "$killed" ] || log "down: SIGKILL was needed for: $(paste -sd , <<<"$killed" | sed "s/,/, /g")"
    ((st)) || return 0
    log "down: processes still run in the cluster's hosts: $(procinfo ns-pids "${inos[@]}" | paste -sd ' ')"
    return 1
}

# Stop Slurm, what runs on the hosts, every holder we started (by PID and
# start time), then the server.
do_down() {
    local name pid start addr role killed problems=0
    [ -f "$STATE/hosts" ] || return 0
    slurm_down || problems=1
    guests_poweroff
    sweep_hosts || problems=1
    while read -r name pid start addr role; do
        [ "$role" = server ] && continue
        killed=$(procinfo stop "$pid" "$start") || { log "down: $name ($pid) still runs"; problems=1; }
        [ -z "$killed" ] || log "down: SIGKILL was needed for host $name: $killed"
    done <"$STATE/hosts"
    # (its stderr says what it had to SIGKILL in the server host)
    if [ -d "$STATE/server" ]; then
        bash "$NFS_SERVER" stop --state "$STATE/server" --purge >/dev/null ||
            { log "down: the NFS server did not stop cleanly"; problems=1; }
    fi
    return $problems
}

cmd_down() {
    parse_state_only "$@"
    [ -n "${STATE:-}" ] || die "down: --state DIR is required"
    [ -e "$STATE" ] || return 0
    [ -f "$STATE/$MARKER" ] || die "down: $STATE is not a vcluster state directory"
    state_lock
    do_down || die "down: something could not be removed (see above)"
    rm -rf "$STATE"
}

cmd_mount() {
    local opts="" ra="" args=()
    while (($#)); do
        case "$1" in
            --mount-opts) [ $# -ge 2 ] || die "mount: --mount-opts needs OPTS"; opts=$2; shift 2 ;;
            --mount-opts=*) opts=${1#*=}; shift ;;
            --read-ahead-kb) [ $# -ge 2 ] || die "mount: --read-ahead-kb needs KB"; ra=$2; shift 2 ;;
            --read-ahead-kb=*) ra=${1#*=}; shift ;;
            *) args+=("$1"); shift ;;
        esac
    done
    parse_state_only "${args[@]}"
    [ -n "${STATE:-}" ] && [ -f "$STATE/$MARKER" ] || die "mount: no cluster at --state"
    [ -f "$STATE/mount-opts" ] || die "mount: the cluster has no kernel-client guests (up --kernel-client)"
    state_lock
    [ -n "$opts" ] || die "mount: --mount-opts OPTS is required"
    guests_mount "$opts" "$ra"
    log "mount: every client host has the export with -o $opts$([ -z "$ra" ] || echo ", read-ahead $ra KiB")"
}

cmd_status() {
    parse_state_only "$@"
    [ -n "${STATE:-}" ] && [ -f "$STATE/$MARKER" ] || { echo "state=down"; return 3; }
    local name pid start addr role up=0 down=0
    while read -r name pid start addr role; do
        if alive_pid "$pid" "$start"; then
            printf '%s %s %s running (pid %s)\n' "$name" "$role" "$addr" "$pid"
            up=$((up + 1))
        else
            printf '%s %s %s gone\n' "$name" "$role" "$addr"
            down=$((down + 1))
        fi
    done <"$STATE/hosts"
    if [ -f "$STATE/daemons" ]; then
        while read -r name pid start; do
            if alive_pid "$pid" "$start"; then
                printf '%s daemon - running (pid %s)\n' "$name" "$pid"
            else
                printf '%s daemon - gone\n' "$name"
                down=$((down + 1))
            fi
        done <"$STATE/daemons"
    fi
    [ -r "$STATE/url" ] && printf 'url=%s\n' "$(cat "$STATE/url")"
    [ -r "$STATE/host-url" ] && printf 'host_url=%s\n' "$(cat "$STATE/host-url")"
    printf 'server=%s\n' "$([ -s "$STATE/server-route" ] && echo knfsd || echo ganesha)"
    [ -r "$STATE/mount-opts" ] && printf 'mount_opts=%s\n' "$(cat "$STATE/mount-opts")"
    [ -r "$STATE/read-ahead-kb" ] && printf 'read_ahead_kb=%s\n' "$(cat "$STATE/read-ahead-kb")"
    printf 'link=%s\nlink_applied=%s\n' "$(vc_link)" "$(link_applied)"
    if ((down == 0)); then echo "state=up"; return 0; fi
    echo "state=degraded"
    return 1
}

main() {
    (($#)) || usage
    ARGV=("$@")
    local cmd=$1
    shift
    case "$cmd" in
        up) cmd_up "$@" ;;
        exec) cmd_exec "$@" ;;
        down) cmd_down "$@" ;;
        status) cmd_status "$@" ;;
        mount) cmd_mount "$@" ;;
        -h | --help | help) usage ;;
        *) log "unknown command $cmd"; usage ;;
    esac
}

main "$@"
