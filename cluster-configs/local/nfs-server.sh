#!/usr/bin/env bash
# nfs-server.sh — a throwaway userspace NFS server for herd's tests and
# local runs: nfs-ganesha (FSAL VFS) plus rpcbind and rpc.statd (for the NLM
# lock manager) and, with --smb, smbd (Samba, same export), inside a
# private network and mount namespace, exporting a plain directory or a loop-mounted xfs,
# ext4 or btrfs image. Everything it makes lives in one state directory;
# `stop` removes every process, mount and loop device it made. No kernel
# NFS is needed: clients reach the server with libnfs (nfs:// URLs) from
# inside the namespace (`exec`). The process that holds the namespaces and
# owns the servers is supervisor.py beside this file (python3); the verbs
# here talk to it over its socket. See README.md beside this file.
#
#   nfs-server.sh start --state DIR [--fs dir|tmpfs|xfs|ext4|btrfs] [--size 2G]
#                       [--server ganesha|knfsd] (knfsd: the Linux kernel's
#                                            nfsd in User-Mode Linux, see
#                                            lib-knfsd.sh; --fs xfs, ext4
#                                            or btrfs, --threads N,
#                                            --guest-net A.B.C: the guest's
#                                            /30, default 10.77.0;
#                                            --export-to NET/PREFIX: also
#                                            export to a routed subnet)
#                       [--workers N] [--sync|--async|--sync-writes]
#                       [--hostname NAME]   (own UTS namespace: a host of
#                                            cluster-configs/virtual/)
#                       [--no-nlm]          (no NLM lock manager, no statd)
#                       [--grace SECONDS]   (start in a grace period; 0: none)
#                       [--lease SECONDS]   (NFSv4 lease; default 60, or the
#                                            grace if shorter)
#                       [--link delay=20ms,jitter=2ms,rate=8mbit]  (any of them:
#                                            a slow, distant link; see "link")
#                       [--smb [--smb-sendfile yes|no] [--smb-workers N]]
#                                           (also smbd, Samba, on the same
#                                            export: see smb.conf.in)
#       stdout: line 1 the nfs:// URL of the export (NFSv3), line 2 ganesha's PID
#               (knfsd: linux.uml's), with --smb line 3 smb://127.0.0.1/export
#   nfs-server.sh exec --state DIR [--server-fs] -- COMMAND [ARG...]
#       (HERD_LINK=the link's spec, or none, in COMMAND's environment; with
#        --smb also HERD_SMB_URL, HERD_SMB_USER, HERD_SMB_PASSWORD_FILE)
#   nfs-server.sh link --state DIR --set SPEC [--dev DEV]... | --clear
#       (replaces the running server's link; --dev: the devices in its
#        namespace for tbf/netem, default lo)
#   nfs-server.sh restart-ganesha --state DIR [--grace SECONDS] [--lease SECONDS]
#                                                  stdout: the new PID
#   nfs-server.sh restart-server --state DIR [--grace SECONDS] [--lease SECONDS]
#       (ganesha: restart-ganesha; knfsd: nfsd stops and starts in the guest)
#   nfs-server.sh threads --state DIR N            (knfsd: nfsd threads, live)
#   nfs-server.sh export-mode --state DIR sync|async  (knfsd: re-export, live)
#   nfs-server.sh guest --state DIR -- COMMAND...  (knfsd: the guest's agent)
#   nfs-server.sh stop-statd --state DIR           (NLM then answers NOLOCKS)
#   nfs-server.sh start-statd --state DIR          stdout: statd's PID
#   nfs-server.sh restart-smbd --state DIR         stdout: smbd's new PID
#   nfs-server.sh stop-smbd --state DIR
#   nfs-server.sh status --state DIR
#   nfs-server.sh stop --state DIR [--purge]
#
# Needs root, util-linux (unshare, nsenter, losetup), iproute2, rpcbind,
# nfs-ganesha, nfs-ganesha-vfs, nfs-common (rpc.statd, rpcinfo; a dependency
# of nfs-ganesha), libnfs-utils (nfs-ls, to see the server
# answer), xfsprogs/e2fsprogs/btrfs-progs for those file systems, a C
# compiler (cc) for --async, and for --link tc (iproute2) and, where the
# kernel has no netem, iptables and herd-linkdelay (src/tools/linkdelay.c, built
# by CMake with libnetfilter-queue; $HERD_LINKDELAY, default build/), and
# for --smb samba (smbd, smbpasswd) and smbclient (to see it answer).
set -euo pipefail
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

SELF=$(readlink -f "${BASH_SOURCE[0]}")
HERE=$(dirname "$SELF")
TEMPLATE=$HERE/ganesha.conf.in
SMB_TEMPLATE=$HERE/smb.conf.in
MARKER=.herd-nfs-server
NOSYNC_SRC=$HERE/nosync.c
LOCK_WAIT=${NFS_SERVER_LOCK_WAIT:-300} # seconds a command waits for another that holds STATE

# --async runs ganesha under nosync (nosync.c beside this script: a seccomp
# filter that makes the sync family of system calls return 0 untouched, see
# its top comment). start compiles it with cc into STATE/bin: this script
# runs from a plain checkout (tests, jobs/, ../virtual/vcluster.sh) with no
# build directory it could know of, and so the helper always matches the
# source beside the script.

START_TIMEOUT=${NFS_SERVER_START_TIMEOUT:-30}   # seconds until the server must answer
# A readiness probe (nfs-ls of the export; smbclient's login and ls) gets
# PROBE_TIMEOUT seconds plus PROBE_ROUND_TRIPS round trips of the link
# (--link): each takes 16-17 round trips (measured: 1.6 s over delay=50ms).
PROBE_TIMEOUT=5
PROBE_ROUND_TRIPS=20
STOP_TIMEOUT=${NFS_SERVER_STOP_TIMEOUT:-10}     # seconds from SIGTERM to SIGKILL
# What stop finds in the server's network namespace once the supervisor
# and the recorded processes are gone (smbd's children, commands run with
# exec, what the supervisor ran) gets this long from SIGTERM to SIGKILL.
SWEEP_TIMEOUT=2
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
# smbd (--smb): the standard SMB port, inside the namespace only; the
# Samba user clients log in as (the unix account root, see smb.conf.in).
SMB_PORT=445
SMB_USER=herd

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
# state_check MARKER, state_lock: a state directory this script may use,
# and its lock.
# shellcheck source=cluster-configs/local/lib-state.sh
. "$HERE/lib-state.sh"
# knfsd_* and the verbs of --server knfsd.
# shellcheck source=cluster-configs/local/lib-knfsd.sh
. "$HERE/lib-knfsd.sh"

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
    [[ "${pid:-}" =~ ^[0-9]+$ ]] && printf '%s\n' "$pid"
    return 0
}

# alive NAME: the process recorded as NAME exists (same PID and start time)
# and is not a zombie.
alive() {
    local pid start
    [ -r "$STATE/pid/$1" ] || return 1
    read -r pid start <"$STATE/pid/$1" || return 1
    [[ "${pid:-}" =~ ^[0-9]+$ ]] && proc_alive "$pid" "${start:-}"
}

# note_killed "PID (NAME)"...: remember processes that needed SIGKILL for
# stop's report (STATE/run/killed; the supervisor notes its own there).
note_killed() { printf '%s\n' "$@" >>"$STATE/run/killed" 2>/dev/null || true; }

# stop_pid LABEL PID START SECONDS: proc_stop, saying so on stderr, and
# noting a SIGKILL it needed. Returns 0 even when the process could not be
# stopped (that is logged): callers check alive afterwards.
stop_pid() {
    log "stopping $1 (pid $2)"
    if ! proc_stop "$2" "$3" "$4"; then
        log "$1 (pid $2) is still there after SIGTERM, $4 s and SIGKILL"
    fi
    if [ -n "$PROC_KILLED" ]; then
        log "$1 (pid $2) did not stop within $4 s of SIGTERM: SIGKILL"
        note_killed "$PROC_KILLED"
    fi
    return 0
}

# terminate NAME [SECONDS]: stop_pid of the process recorded as NAME, with
# SECONDS (default STOP_TIMEOUT) from SIGTERM (and SIGCONT, in case a test
# stopped it) to SIGKILL.
terminate() {
    local pid start
    alive "$1" || return 0
    read -r pid start <"$STATE/pid/$1"
    stop_pid "$1" "$pid" "$start" "${2:-$STOP_TIMEOUT}"
}

# ganesha_stop_timeout: seconds ganesha gets from SIGTERM to SIGKILL.
ganesha_stop_timeout() {
    if [ "${NLM:-1}" = 1 ] && ((NLM_STOP_TIMEOUT < STOP_TIMEOUT)); then
        echo "$NLM_STOP_TIMEOUT"
    else
        echo "$STOP_TIMEOUT"
    fi
}

# supervisor_stop_timeout: seconds the supervisor gets from SIGTERM to
# SIGKILL: its clean-up with every step at its bound (smbd 5 s and smbd's
# leftovers 2 s, ganesha, statd 5 s, rpcbind 5 s, each with 5 s after a
# SIGKILL; the export's umount 10 s). Cut short, it would leave what it
# was running (a umount, a sync) in the namespace.
supervisor_stop_timeout() {
    echo $(((5 + 5) + 2 + ($(ganesha_stop_timeout) + 5) + (5 + 5) * 2 + 10))
}

# netns_pin: open NETNS_FD on the server's network namespace (STATE/pid/netns)
# through a recorded process that is alive and in it, and set NETNS_INODE
# (the N of net:[N]). While the descriptor is open the namespace stays, and
# so its number, which the kernel hands to a new namespace once this one
# is gone. False when no recorded process is there to prove it.
netns_pin() {
    local ns name pid start
    [ -r "$STATE/pid/netns" ] && read -r ns <"$STATE/pid/netns" || return 1
    for name in supervisor ganesha uml rpcbind statd smbd linkdelay; do
        [ -r "$STATE/pid/$name" ] && read -r pid start <"$STATE/pid/$name" || continue
        proc_alive "$pid" "$start" || continue
        { exec {NETNS_FD}<"/proc/$pid/ns/net"; } 2>/dev/null || continue
        # (that very process, still alive after the open, still in it)
        if proc_alive "$pid" "$start" && [ "$(readlink "/proc/$$/fd/$NETNS_FD")" = "$ns" ]; then
            NETNS_INODE=${ns//[^0-9]/}
            return 0
        fi
        exec {NETNS_FD}<&-
    done
    return 1
}

netns_unpin() { exec {NETNS_FD}<&-; }

# netns_sweep: stop every process left in the pinned namespace (ns_stop),
# noting those that needed SIGKILL. Returns 1, after one line, if any is
# still there.
netns_sweep() {
    local killed st=0
    killed=$(ns_stop "$SWEEP_TIMEOUT" "$NETNS_INODE") || st=1
    [ -z "$killed" ] || note_killed "$killed"
    ((st)) || return 0
    log "still in the server's network namespace after SIGKILL:" \
        "$(ns_pids "$NETNS_INODE" | paste -sd ' ')"
    return 1
}

# report_killed: one line on stderr naming the processes that needed
# SIGKILL (note_killed), if any.
report_killed() {
    local line out=""
    [ -s "$STATE/run/killed" ] || return 0
    while read -r line; do out+="${out:+, }$line"; done <"$STATE/run/killed"
    log "SIGKILL was needed for: $out"
}

# ------------------------------------------------------------------ state dir

# set_state DIR: absolute, canonical STATE; refuse odd characters (the path
# goes into ganesha.conf and into the URL) and a directory this script may
# not trust (statedir.py: another user's, or below one another user could
# swap; also one that does not exist yet is checked by its parents).
set_state() {
    [ -n "${1:-}" ] || die "--state DIR is required"
    STATE=$(realpath -m -- "$1")
    case "$STATE" in
        / | /bin* | /boot* | /dev* | /etc* | /lib* | /proc* | /run | /sbin* | /sys* | /usr* | /var)
            die "refusing state directory $STATE" ;;
    esac
    [[ "$STATE" =~ ^/[A-Za-z0-9._/+-]+$ ]] ||
        die "state directory $STATE: use only letters, digits and ._/+- in its path"
    state_check "$MARKER"
    EXPORT=$STATE/export
    IMAGE=$STATE/image.img
    STATD_DIR=$STATE/statd
    SMB_DIR=$STATE/smb
}

is_ours() { [ -f "$STATE/$MARKER" ]; }

# The settings of the server (statedir.py keeps them in conf/settings.json,
# checked), in shell variables of these names.
SETTING_NAMES=(FS SIZE MODE WORKERS HOST_NAME NLM GRACE LEASE SMB SMB_SENDFILE SMB_WORKERS SERVER
    THREADS GUEST_NET EXPORT_TO)

# load_settings: the settings into their variables. statedir.py prints
# NAME=VALUE records, each ended by a NUL byte, then OK (or ERR=WHY): read
# as data, only into the names above, never run.
load_settings() {
    local recs=() rec name
    mapfile -d '' -t recs < <(python3 "$STATEDIR_PY" settings --state "$STATE")
    ((${#recs[@]})) || die "cannot read the settings of $STATE"
    [ "${recs[-1]}" = OK ] || die "${recs[-1]#ERR=}"
    for rec in "${recs[@]}"; do
        name=${rec%%=*}
        [[ " ${SETTING_NAMES[*]} " == *" $name "* ]] && printf -v "$name" '%s' "${rec#*=}"
    done
    export HERD_KNFSD_NET=$GUEST_NET # (knfsd.py's addresses)
    return 0
}

# save_settings: the settings variables into conf/settings.json (statedir.py
# checks each value and writes the file atomically).
save_settings() {
    local name pairs=()
    for name in "${SETTING_NAMES[@]}"; do pairs+=("$name=${!name}"); done
    python3 "$STATEDIR_PY" save --state "$STATE" "${pairs[@]}" || die "cannot save the settings of $STATE"
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

url() {
    if [ "${SERVER:-ganesha}" = knfsd ]; then
        knfsd_url
    else
        printf 'nfs://127.0.0.1%s?version=3\n' "$EXPORT"
    fi
}

# nlm_where: where the NLM lock manager listens, for start's log line.
nlm_where() {
    if [ "${SERVER:-ganesha}" = knfsd ]; then
        echo "on (kernel lockd and rpc.statd in the guest)"
    else
        echo "on (port $NLM_PORT, statd port $STATD_PORT)"
    fi
}

# server_proc: the name the NFS server's process is recorded as: ganesha,
# or uml (linux.uml, the guest that runs kernel nfsd).
server_proc() { if [ "${SERVER:-ganesha}" = knfsd ]; then echo uml; else echo ganesha; fi; }

# ------------------------------------------------------------------ smbd

# --smb: smbd (Debian's samba) beside ganesha, in the same network and
# mount namespaces (so it sees the loop-mounted export), serving the same
# export directory as share "export" on port 445 of the namespace's lo.
# STATE/smb holds every Samba directory (smb.conf.in points private, lock,
# state, cache, pid, ncalrpc, binddns and usershare dirs there), the
# password (STATE/smb/password, mode 0600), a credentials file for
# `smbclient -A` and the username map (Samba user herd = unix root).
# Measured: with these settings nothing is written under /var/lib/samba,
# /var/cache/samba, /run/samba or /var/log/samba, neither by smbpasswd
# nor by smbd.

smb_url() { printf 'smb://127.0.0.1/export\n'; }

# write_smb_conf: STATE/conf/smb.conf from smb.conf.in and the settings.
# --smb-sendfile yes also sets aio read size 0: smbd only sendfiles reads
# it does synchronously (see smb.conf.in).
write_smb_conf() {
    local aio_read=1
    [ "$SMB_SENDFILE" = yes ] && aio_read=0
    sed -e "s|@SMB@|$SMB_DIR|g" -e "s|@LOG@|$STATE/log|g" -e "s|@EXPORT@|$EXPORT|g" \
        -e "s|@SENDFILE@|$SMB_SENDFILE|g" -e "s|@AIO_READ_SIZE@|$aio_read|g" \
        -e "s|@WORKERS@|$SMB_WORKERS|g" \
        "$SMB_TEMPLATE" >"$STATE/conf/smb.conf.tmp"
    mv -f "$STATE/conf/smb.conf.tmp" "$STATE/conf/smb.conf"
}

# smb_setup: Samba's directories, a random password for user herd (the
# passdb entry is for the unix account root, which the username map names
# herd; no account is added to the host), the credentials file.
smb_setup() {
    local d pw
    for d in private lock state cache pid ncalrpc binddns usershares; do
        mkdir -p "$SMB_DIR/$d"
    done
    chmod 0700 "$SMB_DIR" "$SMB_DIR/private"
    write_smb_conf
    printf 'root = %s\n' "$SMB_USER" >"$SMB_DIR/users.map"
    pw=$(head -c 18 /dev/urandom | base64 | tr -d '+/=\n')
    (
        umask 077
        printf '%s\n' "$pw" >"$SMB_DIR/password"
        printf 'username = %s\npassword = %s\n' "$SMB_USER" "$pw" >"$SMB_DIR/credentials"
    )
    printf '%s\n%s\n' "$pw" "$pw" |
        smbpasswd -c "$STATE/conf/smb.conf" -a -s root >>"$STATE/log/smbpasswd.log" 2>&1
}

# smbd_exe: the smbd binary as /proc/PID/exe shows it.
smbd_exe() { readlink -f "$(command -v smbd)"; }

# smbd_leftovers: PIDs of live smbd processes in the server's network
# namespace (STATE/pid/netns, recorded at start): smbd forks a child per
# client connection plus smbd-notifyd and cleanupd, which are not recorded.
smbd_leftovers() {
    local ns exe p
    [ -r "$STATE/pid/netns" ] || return 0
    ns=$(cat "$STATE/pid/netns")
    exe=$(smbd_exe 2>/dev/null) || return 0
    [ -n "$ns" ] && [ -n "$exe" ] || return 0
    # Every smbd on the host (one find), then those in our namespace.
    while read -r p; do
        p=${p%/exe}
        [ "$(readlink "$p/ns/net" 2>/dev/null)" = "$ns" ] || continue
        proc_start "${p#/proc/}" >/dev/null 2>&1 && printf '%s\n' "${p#/proc/}"
    done < <(find /proc -mindepth 2 -maxdepth 2 -name exe -lname "$exe" 2>/dev/null)
    return 0
}

# smbd_stop_all: the recorded smbd (SIGTERM: its children follow it), then
# any smbd left in the namespace, each by PID and start time. Returns 1 if
# one survives.
smbd_stop_all() {
    local p st i
    terminate smbd 5
    # Its children notice the parent's exit within a moment.
    for ((i = 0; i < 40; i++)); do
        [ -z "$(smbd_leftovers)" ] && return 0
        sleep 0.05
    done
    for p in $(smbd_leftovers); do
        st=$(proc_start "$p") || continue
        stop_pid "leftover smbd" "$p" "$st" 2
    done
    [ -z "$(smbd_leftovers)" ]
}

# smb_answers SECONDS: smbclient logs in as herd and lists the share, from
# inside, within SECONDS.
smb_answers() {
    in_netns timeout "$1" smbclient "//127.0.0.1/export" -A "$SMB_DIR/credentials" -m SMB3 \
        -c ls >/dev/null 2>&1
}

# wait_smb_ready SECONDS: until smb_answers (SECONDS more the time of one
# probe over the link); fails early when smbd dies.
wait_smb_ready() {
    local probe deadline
    probe=$(probe_timeout)
    deadline=$((SECONDS + $1 + probe))
    while ((SECONDS < deadline)); do
        alive smbd || { log "smbd exited (see $STATE/log/smbd.stdout)"; return 1; }
        smb_answers "$probe" && return 0
        sleep 0.05
    done
    log "smbd did not answer within $(($1 + probe)) s"
    return 1
}

# mounts_under DIR: mount points at or below DIR in this mount namespace,
# deepest first.
mounts_under() {
    awk -v d="$1" '{ mp = $5; gsub(/\\040/, " ", mp);
                     if (mp == d || index(mp, d "/") == 1) print length(mp), mp }' \
        /proc/self/mountinfo | sort -rn | cut -d' ' -f2-
}

loops_of() { losetup -j "$1" 2>/dev/null | cut -d: -f1; }

# log_tail: the last lines of every log, on stderr. The knfsd guest's own
# logs (STATE/guest/log) are its user's files: read without following a
# link it may have put there (dd iflag=nofollow), and only the last 64 KiB.
log_tail() {
    local f
    for f in "$STATE/log/supervisor.log" "$STATE/log/ganesha.stderr" "$STATE/log/ganesha.log" \
        "$STATE/log/statd.log" "$STATE/log/smbd.stdout" "$STATE/log/guest-console.log" \
        "$STATE"/guest/log/*.log; do
        [ -f "$f" ] && [ ! -L "$f" ] && [ -s "$f" ] || continue
        printf -- '--- last lines of %s\n' "$f" >&2
        dd if="$f" iflag=nofollow status=none 2>/dev/null | tail -c 65536 | tail -n 25 >&2
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

# nfs_answers SECONDS: nfs-ls of the export answers, from inside, within
# SECONDS.
nfs_answers() { in_netns timeout "$1" nfs-ls "$(url)" >/dev/null 2>&1; }

# nlm_answers PROBE_SECONDS: ganesha's NLM (v4) is registered with rpcbind
# and answers its NULL call; true when ganesha runs without NLM. ganesha
# answers NFS before it has registered NLM: with both CPUs busy a client's
# locks met no NLM for the 4 s after a restart.
nlm_answers() {
    [ "${NLM:-1}" = 1 ] && [ "${SERVER:-ganesha}" != knfsd ] || return 0
    in_netns timeout "$1" rpcinfo -T tcp 127.0.0.1 100021 4 >/dev/null 2>&1
}

# wait_ready SECONDS: until nfs_answers and nlm_answers (SECONDS more the
# time of one probe over the link); fails early when ganesha or the
# supervisor dies.
wait_ready() {
    local probe deadline
    probe=$(probe_timeout)
    deadline=$((SECONDS + $1 + probe))
    while ((SECONDS < deadline)); do
        alive supervisor || { log "the namespace supervisor died"; return 1; }
        alive "$(server_proc)" || { log "the NFS server ($(server_proc)) exited"; return 1; }
        # (kernel nfsd: also its guest's agent, which answers once nfsd is
        # up and lockd's grace is over)
        nfs_answers "$probe" && nlm_answers "$probe" &&
            { [ "${SERVER:-ganesha}" != knfsd ] || knfsd_ready; } && return 0
        sleep 0.05
    done
    log "the server did not answer within $(($1 + probe)) s"
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
#   undelayed if no program listens), where herd-linkdelay (src/tools/linkdelay.c)
#   holds them. Packets are held where they *arrive*: in INPUT (on lo every
#   packet passes it once: to the server's ports, and from them back to the
#   client), or in FORWARD of another namespace (vcluster.sh: the switch,
#   which every packet crosses once, bridged). Not in OUTPUT: a packet held
#   there still belongs to its sending socket, and TCP small queues then
#   throttle the sender to a few packets per delay (measured: 16 MiB over
#   5 ms each way 15.7 s from OUTPUT, rate-bound from the receiving side).
#   The rules live in that namespace's own tables and go with it.
# Ports: portmapper 111 (clients look up ports there), NFS 2049, MOUNT
# 20048, NLM, SMB 445 (smbd, with --smb). Not statd's: only ganesha and statd, both inside the server,
# talk to it. IPv4 only (the URLs are IPv4).
LINK_QUEUE=0
LINK_PORTS=111,2049,20048,$NLM_PORT,$SMB_PORT
LINK_MAX_US=10000000 # delay and jitter: at most 10 s
LINK_MIN_BIT=8000 LINK_MAX_BIT=100000000000 # rate: 8kbit..100gbit
REPO=$(cd "$HERE/../.." && pwd)
LINKDELAY=${HERD_LINKDELAY:-$REPO/build/herd-linkdelay}

# link_scaled NUMBER DIGITS: NUMBER (digits with an optional fraction:
# 2.5) times 10^DIGITS, rounded to the nearest integer, in bash's 64-bit
# integers (awk's %d stops at 2^31 - 1: 10gbit became 2147 Mbit). Fails
# when the result could reach 10^18, before anything can overflow: callers
# refuse that as out of range.
link_scaled() {
    local int=${1%%.*} frac="" zeros=0000000000
    [[ "$1" == *.* ]] && frac=${1#*.}
    [[ "$int" =~ ^0*([0-9]+)$ ]] && int=${BASH_REMATCH[1]}
    ((${#int} + $2 <= 17)) || return 1
    frac=$frac$zeros
    frac=${frac:0:$2 + 1}
    printf '%s\n' "$(((10#$int * 10 ** ($2 + 1) + 10#$frac + 5) / 10))"
}

# link_time_us OPTION VALUE: print VALUE (us, ms or s) in microseconds.
link_time_us() {
    [[ "$2" =~ ^([0-9]+(\.[0-9]+)?)(us|ms|s)$ ]] ||
        { log "$1: '$2' is not a time (a number with us, ms or s: 20ms)"; return 1; }
    local us digits
    case "${BASH_REMATCH[3]}" in us) digits=0 ;; ms) digits=3 ;; s) digits=6 ;; esac
    if ! us=$(link_scaled "${BASH_REMATCH[1]}" "$digits") || ((us > LINK_MAX_US)); then
        log "$1: '$2' is longer than 10 s"
        return 1
    fi
    printf '%s\n' "$us"
}

# us_seconds US: microseconds as seconds with six decimals (0.200000).
us_seconds() { printf '%d.%06d\n' "$(($1 / 1000000))" "$(($1 % 1000000))"; }

# us_text US: microseconds the way the spec writes them: 10s, 200ms, 2500us.
us_text() {
    if (($1 && $1 % 1000000 == 0)); then
        printf '%ss\n' "$(($1 / 1000000))"
    elif (($1 && $1 % 1000 == 0)); then
        printf '%sms\n' "$(($1 / 1000))"
    else
        printf '%sus\n' "$1"
    fi
}

# link_rate_bit OPTION VALUE: print VALUE (kbit, mbit or gbit) in bit/s.
# 100gbit at most: tbf's queue limit (100 ms of the rate plus the burst, in
# bytes) overflows its 32 bits above about 300gbit.
link_rate_bit() {
    [[ "$2" =~ ^([0-9]+(\.[0-9]+)?)(kbit|mbit|gbit)$ ]] ||
        { log "$1: '$2' is not a rate (a number with kbit, mbit or gbit: 8mbit)"; return 1; }
    local bit digits
    case "${BASH_REMATCH[3]}" in kbit) digits=3 ;; mbit) digits=6 ;; gbit) digits=9 ;; esac
    if ! bit=$(link_scaled "${BASH_REMATCH[1]}" "$digits") ||
        ((bit < LINK_MIN_BIT || bit > LINK_MAX_BIT)); then
        log "$1: '$2' is outside 8kbit..100gbit"
        return 1
    fi
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

# link_tbf: the tbf qdisc arguments for the link's rate, on one line
# (empty without a rate). The burst: 10 ms at the rate, at least 256 KB.
link_tbf() {
    local burst
    ((LINK_RATE_BIT > 0)) || { echo; return 0; }
    burst=$((LINK_RATE_BIT / 8 / 100))
    ((burst >= 262144)) || burst=262144
    echo "tbf rate ${LINK_RATE_BIT}bit burst $burst latency 100ms"
}

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
    # kernel nfsd's guest has netem (lib-knfsd.sh)
    [ "${SERVER:-ganesha}" != knfsd ] || return 0
    netem_works && return 0
    command -v iptables >/dev/null ||
        { log "--link: no netem in this kernel and iptables not found (package iptables)"; return 1; }
    [ -x "$LINKDELAY" ] || {
        log "--link: no netem in this kernel and $LINKDELAY is missing: build it" \
            "(libnetfilter-queue-dev; cmake -DHERD_WITH_NFQUEUE=ON, target herd-linkdelay)" \
            "or set HERD_LINKDELAY"
        return 1
    }
}

# qdisc_set NSPID DEV: the parsed link's qdisc on DEV in the network
# namespace of process NSPID (replacing whatever was there): netem (when
# delaying and netem works) with tbf below it, or tbf alone, or nothing.
# tbf: burst max(256 KB, 10 ms of the rate), at most 100 ms of queue.
qdisc_set() {
    local ns=(nsenter --net="/proc/$1/ns/net" --) dev=$2 tbf=() parent=(root)
    qdisc_clear "$1" "$dev"
    read -r -a tbf < <(link_tbf)
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

# qdisc_applied NSPID DEV: the link's qdiscs tc shows on DEV in the network
# namespace of process NSPID, one a line: "rate 10Gbit (tbf on lo)",
# "delay 10ms jitter 2ms (netem on lo)"; nothing when there are none.
qdisc_applied() {
    local line
    while read -r line; do
        case "$line" in
            "qdisc tbf "*)
                [[ "$line" =~ \ rate\ ([^ ]+) ]] &&
                    printf 'rate %s (tbf on %s)\n' "${BASH_REMATCH[1]}" "$2" ;;
            "qdisc netem "*)
                [[ "$line" =~ \ delay\ ([^ ]+)(\ +([0-9.]+[mun]?s))? ]] &&
                    printf 'delay %s%s (netem on %s)\n' "${BASH_REMATCH[1]}" \
                        "${BASH_REMATCH[3]:+ jitter ${BASH_REMATCH[3]}}" "$2" ;;
        esac
    done < <(nsenter --net="/proc/$1/ns/net" -- tc qdisc show dev "$2" 2>/dev/null)
}

# delayer_applied: the delay and jitter the running herd-linkdelay was
# started with (its command line), "delay 200ms jitter 2ms (herd-linkdelay
# pid N)"; nothing when none runs.
delayer_applied() {
    local pid argv=() i delay="" jitter=0
    alive linkdelay || return 0
    pid=$(recorded linkdelay)
    mapfile -d '' -t argv <"/proc/$pid/cmdline" 2>/dev/null || return 0
    for ((i = 0; i + 1 < ${#argv[@]}; i++)); do
        case "${argv[i]}" in
            --delay) delay=$(link_scaled "${argv[i + 1]}" 6) ;;
            --jitter) jitter=$(link_scaled "${argv[i + 1]}" 6) ;;
        esac
    done
    [ -n "$delay" ] || return 0
    printf 'delay %s%s (herd-linkdelay pid %s)\n' "$(us_text "$delay")" \
        "$( ((jitter == 0)) || printf ' jitter %s' "$(us_text "$jitter")")" "$pid"
}

# link_applied [NSPID DEV]: what is in place of the running server's link,
# read back from tc and the delayer (not from the spec), and the qdiscs on
# DEV of NSPID's namespace (vcluster.sh: the switch port): the parts joined
# by "; ", or "none".
link_applied() {
    [ "${SERVER:-ganesha}" != knfsd ] || { knfsd_link_applied; return; }
    local part out="" dev sup
    while read -r part; do
        out+="${out:+; }$part"
    done < <(
        delayer_applied
        if alive supervisor; then
            sup=$(recorded supervisor)
            for dev in $(link_devs); do qdisc_applied "$sup" "$dev"; done
        fi
        if (($#)); then qdisc_applied "$1" "$2"; fi
    )
    printf '%s\n' "${out:-none}"
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
    local sup start chain addr pid i
    read -r sup start chain addr < <(link_where)
    rm -f "$STATE/run/linkdelay.pid"
    # (setsid does not fork here, and nsenter execs: $! is the delayer)
    setsid nsenter --net="/proc/$sup/ns/net" -- "$LINKDELAY" --queue "$LINK_QUEUE" \
        --delay "$(us_seconds "$LINK_DELAY_US")" --jitter "$(us_seconds "$LINK_JITTER_US")" \
        --pidfile "$STATE/run/linkdelay.pid" \
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
    [ "${SERVER:-ganesha}" != knfsd ] || { knfsd_link_clear; return; }
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
    [ "${SERVER:-ganesha}" != knfsd ] || { knfsd_link_apply; return; }
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
    log "link: $LINK_SPEC; applied: $(link_applied)"
}

# current_link: the running server's link spec, or "none".
current_link() {
    if [ -s "$STATE/link" ]; then cat "$STATE/link"; else echo none; fi
}

# link_round_trip_us: what the parsed link adds to a round trip at most,
# in microseconds: each direction delay + jitter.
link_round_trip_us() { echo $((2 * (LINK_DELAY_US + LINK_JITTER_US))); }

# probe_timeout: seconds one readiness probe may take: PROBE_TIMEOUT plus
# PROBE_ROUND_TRIPS round trips over the running server's link, rounded up.
probe_timeout() {
    local spec rtt=0
    spec=$(current_link)
    if [ "$spec" != none ] && parse_link "$spec"; then rtt=$(link_round_trip_us); fi
    echo $((PROBE_TIMEOUT + (PROBE_ROUND_TRIPS * rtt + 999999) / 1000000))
}

# ------------------------------------------------------------------ supervisor

# supervisor.py beside this script (python3, standard library only) runs as
# `setsid unshare --net --mount [--uts] --propagation private -- python3
# supervisor.py run --state DIR`: the process that holds the namespaces,
# sets them up, starts and reaps rpcbind, rpc.statd, ganesha and smbd
# (--smb), and tears everything down on SIGTERM. It takes commands on
# STATE/run/supervisor.sock, one JSON line each (see its top comment).
SUPERVISOR=$HERE/supervisor.py

# sup_send NAME COMMAND: send COMMAND (start-ganesha, start-statd,
# start-smbd) to the supervisor; on a refusal or no answer, one line
# "NAME: supervisor: WHY" on stderr and 1.
sup_send() {
    local err
    if ! err=$(python3 "$SUPERVISOR" send --state "$STATE" "$2" 2>&1 >/dev/null); then
        log "$1: ${err:-supervisor: no reply}"
        return 1
    fi
}

# ------------------------------------------------------------------ commands

cmd_start() {
    local fs=dir size=2G workers="" mode=sync host_name="" nlm=1 grace=0 lease="" link="" link_opt=0
    local smb=0 smb_sendfile=yes smb_workers=100 server=ganesha threads="" guest_net="" export_to=""
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
            --server) server=${2:-}; shift 2 ;;
            --guest-net) guest_net=${2:-}; shift 2 ;;
            --guest-net=*) guest_net=${1#*=}; shift ;;
            --export-to) export_to=${2:-}; shift 2 ;;
            --export-to=*) export_to=${1#*=}; shift ;;
            --server=*) server=${1#*=}; shift ;;
            --threads) threads=${2:-}; shift 2 ;;
            --threads=*) threads=${1#*=}; shift ;;
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
            --smb) smb=1; shift ;;
            --smb-sendfile) smb_sendfile=${2:-}; shift 2 ;;
            --smb-sendfile=*) smb_sendfile=${1#*=}; shift ;;
            --smb-workers) smb_workers=${2:-}; shift 2 ;;
            --smb-workers=*) smb_workers=${1#*=}; shift ;;
            -h | --help) usage ;;
            *) log "start: unknown argument $1"; usage ;;
        esac
    done
    [ -n "${STATE:-}" ] || die "start: --state DIR is required"
    case "$fs" in dir | tmpfs | xfs | ext4 | btrfs) ;; *) die "start: --fs must be dir, tmpfs, xfs, ext4 or btrfs" ;; esac
    [[ "$size" =~ ^[0-9]+[KMGT]?$ ]] || die "start: --size: a number with an optional K, M, G or T"
    if [ -n "$host_name" ] && ! [[ "$host_name" =~ ^[A-Za-z0-9][A-Za-z0-9.-]{0,62}$ ]]; then
        die "start: --hostname: letters, digits, '.' and '-', at most 63"
    fi
    check_seconds "start: --grace" "$grace" 0
    [ -n "$lease" ] || lease=$(default_lease "$grace" 60)
    check_seconds "start: --lease" "$lease" 1
    case "$server" in
        ganesha) [ -z "$threads" ] || die "start: --threads is kernel nfsd's (--server knfsd); ganesha has --workers" ;;
        knfsd) knfsd_check_start "$fs" "$mode" "$smb" "$threads" "$workers"
            threads=${threads:-8} ;;
        *) die "start: --server must be ganesha or knfsd" ;;
    esac
    knfsd_check_net "$server" "$guest_net" "$export_to"
    SERVER=$server
    if [ -n "$workers" ]; then
        if ! [[ "$workers" =~ ^[0-9]+$ ]] || ((workers < 2 || workers > 131072)); then
            die "start: --workers must be 2..131072 (ganesha refuses 1)"
        fi
    else
        workers=200
    fi
    case "$smb_sendfile" in yes | no) ;; *) die "start: --smb-sendfile must be yes or no" ;; esac
    if ! [[ "$smb_workers" =~ ^[0-9]+$ ]] || ((smb_workers < 1 || smb_workers > 10000)); then
        die "start: --smb-workers must be 1..10000 (smbd's aio max threads)"
    fi
    [ "$(id -u)" -eq 0 ] || die "start: needs root (namespaces, mounts, loop devices)"
    local tool
    if ((smb)); then
        for tool in smbd smbpasswd smbclient; do
            command -v "$tool" >/dev/null ||
                die "start: --smb: $tool not found (apt-get install samba smbclient)"
        done
        [ -r "$SMB_TEMPLATE" ] || die "start: $SMB_TEMPLATE is missing"
    fi
    local tools=(python3 unshare nsenter ip losetup ganesha.nfsd rpcbind nfs-ls timeout)
    [ "$server" = knfsd ] && tools=(python3 unshare nsenter ip nfs-ls timeout)
    for tool in "${tools[@]}"; do
        command -v "$tool" >/dev/null || die "start: $tool not found (see cluster-configs/local/install.sh)"
    done
    if [ "$nlm" = 1 ]; then
        for tool in rpc.statd rpcinfo; do
            command -v "$tool" >/dev/null ||
                die "start: $tool not found (package nfs-common; or start --no-nlm)"
        done
    fi
    [ -r "$TEMPLATE" ] || die "start: $TEMPLATE is missing"
    [ -r "$SUPERVISOR" ] || die "start: $SUPERVISOR is missing"
    if ((link_opt)); then
        parse_link "$link" || exit 1
        check_link_tools || exit 1
    fi
    [ "$fs" = dir ] || [ "$fs" = tmpfs ] || command -v "mkfs.$fs" >/dev/null ||
        die "start: mkfs.$fs not found"
    if [ "$mode" = async ]; then
        [ -r "$NOSYNC_SRC" ] || die "start: $NOSYNC_SRC is missing"
        command -v cc >/dev/null || die "start: --async needs a C compiler (cc) to build $NOSYNC_SRC"
    fi

    # The directory first (set_state checked what is above it), checked again
    # now that it exists, then its lock: a second start waits here, then
    # finds the first one's server running.
    mkdir -p -- "$STATE"
    set_state "$STATE"
    state_lock
    if [ -e "$STATE" ]; then
        if is_ours; then
            if alive supervisor || alive ganesha || alive uml; then
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
    SMB=$smb SMB_SENDFILE=$smb_sendfile SMB_WORKERS=$smb_workers
    SERVER=$server THREADS=${threads:-8} GUEST_NET=${guest_net:-10.77.0} EXPORT_TO=$export_to
    export HERD_KNFSD_NET=$GUEST_NET
    save_settings
    write_conf

    # From here on a failure undoes everything.
    trap 'log "start failed"; log_tail; do_stop 0 || true; exit 1' ERR
    if ((smb)); then smb_setup; fi
    if [ "$mode" = async ] && [ "$server" = ganesha ] && ! build_nosync; then
        do_stop 0 || true
        exit 1
    fi
    if [ "$server" = knfsd ] && ! knfsd_build_init; then
        do_stop 0 || true
        exit 1
    fi
    if [ "$fs" != dir ] && [ "$fs" != tmpfs ]; then
        truncate -s "$size" "$IMAGE"
        case "$fs" in
            xfs) mkfs.xfs -q -f "$IMAGE" >&2 ;;
            ext4) mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$IMAGE" >&2 ;;
            btrfs) mkfs.btrfs -q -f "$IMAGE" >&2 ;;
        esac
    fi
    trap - ERR

    local uts=() ganesha_stop
    [ -n "$host_name" ] && uts=(--uts)
    ganesha_stop=$(ganesha_stop_timeout)
    setsid unshare --net --mount "${uts[@]}" --propagation private -- \
        python3 "$SUPERVISOR" run --state "$STATE" --statd-port "$STATD_PORT" \
        --ganesha-stop-timeout "$ganesha_stop" </dev/null >>"$STATE/log/supervisor.log" 2>&1 &
    local launcher=$!
    record launcher "$launcher"

    local ok=1 i
    for ((i = 0; i < START_TIMEOUT * 20; i++)); do
        [ -e "$STATE/run/failed" ] && { ok=0; break; }
        # (setsid does not fork here, so the launcher is the supervisor)
        if ! alive launcher && ! alive supervisor; then ok=0; break; fi
        alive supervisor && alive "$(server_proc)" && { ((smb == 0)) || alive smbd; } && break
        sleep 0.05
    done
    if ((ok)) && [ -n "$link" ] && alive supervisor && ! link_apply; then
        ok=0
    fi
    if ((ok)) && alive supervisor && alive "$(server_proc)" && wait_ready "$START_TIMEOUT" &&
        { ((smb == 0)) || wait_smb_ready "$START_TIMEOUT"; }; then
        log "started in $((SECONDS - t0)) s: server $server, fs $fs, mode $mode," \
            "$([ "$server" = knfsd ] && echo "threads $THREADS" || echo "workers $workers"), export $EXPORT," \
            "nlm $( ((nlm)) && nlm_where || echo off)," \
            "grace $grace s, lease $lease s, link $(current_link)$( ((smb)) &&
                echo ", smbd pid $(recorded smbd) (sendfile $smb_sendfile, aio max threads $smb_workers)")"
        url
        recorded "$(server_proc)"
        ((smb == 0)) || smb_url
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
    local purge=$1 problems=0 pinned=0 name mp dev i
    load_settings
    mkdir -p "$STATE/run"
    : >"$STATE/run/killed"
    netns_pin && pinned=1
    # The link first: its rules and qdiscs live in the namespace (and go
    # with it), the delayer is ours to stop (its packets then pass).
    link_clear || true
    # The supervisor stops smbd, ganesha, statd and rpcbind, unmounts and detaches.
    if alive supervisor; then
        if alive ganesha; then kill -CONT "$(recorded ganesha)" 2>/dev/null || true; fi
        terminate supervisor "$(supervisor_stop_timeout)"
    fi
    # Whatever is left (the supervisor was killed, or hung): by recorded PID,
    # then everything else in the server's namespace.
    terminate ganesha "$(ganesha_stop_timeout)"
    for name in uml smbd statd rpcbind supervisor launcher linkdelay; do
        terminate "$name"
    done
    if ((pinned)); then
        netns_sweep || problems=1
        netns_unpin
    fi
    report_killed
    for name in uml smbd ganesha statd rpcbind supervisor launcher linkdelay; do
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
        rm -rf --one-file-system -- "${STATE:?}"/{bin,conf,run,lib-nfs,recovery,statd,smb,export,pid} "$IMAGE"
        knfsd_clean
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
    state_lock
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
    load_settings
    if [ "$SMB" = 1 ]; then
        HERD_SMB_URL=$(smb_url) HERD_SMB_USER=$SMB_USER HERD_SMB_PASSWORD_FILE=$SMB_DIR/password
        export HERD_SMB_URL HERD_SMB_USER HERD_SMB_PASSWORD_FILE
    fi
    if ((server_fs)); then
        [ "$SERVER" != knfsd ] ||
            die "exec: --server-fs: a knfsd export lives in its guest (use: guest --state DIR -- exec ...)"
        # Also the server's mount namespace: the export as the server sees it.
        exec nsenter --net="/proc/$sup/ns/net" --mount="/proc/$sup/ns/mnt" --wd="$PWD" -- "$@"
    fi
    exec nsenter --net="/proc/$sup/ns/net" -- "$@"
}

# restart_args NAME ARGS...: --state DIR [--grace S] [--lease S] of a
# restart verb, checked (the lease: 1 s at least for ganesha, 10 s for
# kernel nfsd), against a running server namespace; sets grace and lease
# (empty when not given) in the caller and loads the settings.
restart_args() {
    local name=$1
    shift
    grace="" lease=""
    while (($#)); do
        case "$1" in
            --state) set_state "${2:-}"; shift 2 ;;
            --state=*) set_state "${1#*=}"; shift ;;
            --grace) grace=${2:-}; shift 2 ;;
            --grace=*) grace=${1#*=}; shift ;;
            --lease) lease=${2:-}; shift 2 ;;
            --lease=*) lease=${1#*=}; shift ;;
            *) log "$name: unknown argument $1"; usage ;;
        esac
    done
    [ -n "${STATE:-}" ] || die "$name: --state DIR is required"
    if ! is_ours || ! alive supervisor; then
        die "$name: no server namespace with state $STATE (start it)"
    fi
    state_lock
    load_settings
    [ -z "$grace" ] || check_seconds "$name: --grace" "$grace" 0
    [ -z "$lease" ] || check_seconds "$name: --lease" "$lease" "$([ "$SERVER" = knfsd ] && echo 10 || echo 1)"
}

cmd_restart_ganesha() {
    local grace lease
    restart_args restart-ganesha "$@"
    [ "$SERVER" != knfsd ] || die "restart-ganesha: the server is kernel nfsd (use restart-server)"
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
    sup_send restart-ganesha start-ganesha || { log "restart-ganesha failed"; log_tail; exit 1; }
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

# restart-server: the NFS server restarts, whichever it is: ganesha as
# restart-ganesha does, kernel nfsd inside its guest (knfsd_restart; the
# guest and its disk stay).
cmd_restart_server() {
    local grace lease
    restart_args restart-server "$@"
    [ "$SERVER" = knfsd ] || { cmd_restart_ganesha "$@"; return; }
    GRACE=${grace:-$GRACE} LEASE=${lease:-$LEASE}
    save_settings
    knfsd_restart "$GRACE" "$LEASE" || { log "restart-server failed"; log_tail; exit 1; }
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
    state_lock
    load_settings
    [ "$NLM" = 1 ] || die "$name: the server runs without NLM (started with --no-nlm)"
    [ "$SERVER" != knfsd ] || die "$name: not for --server knfsd (its statd runs in the guest)"
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
    sup_send start-statd start-statd || { log "start-statd failed"; log_tail; exit 1; }
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

# smb_args NAME ARGS...: parse --state for stop-smbd / restart-smbd and
# check there is a server with smbd.
smb_args() {
    state_only_args "$@"
    local name=$1
    if ! is_ours || ! alive supervisor; then die "$name: no server running with state $STATE"; fi
    state_lock
    load_settings
    [ "$SMB" = 1 ] || die "$name: the server runs without smbd (start it with --smb)"
}

# stop-smbd: stop smbd and every smbd process in the namespace (its
# per-connection children); ganesha keeps serving.
cmd_stop_smbd() {
    smb_args stop-smbd "$@"
    smbd_stop_all || die "stop-smbd: smbd processes left: $(smbd_leftovers | paste -sd ' ')"
    log "smbd stopped"
}

# restart-smbd: stop smbd (if it runs) and have the supervisor start it
# again (same config, same password); prints its PID once smbclient can log
# in. Files on the export are untouched.
cmd_restart_smbd() {
    smb_args restart-smbd "$@"
    local old i
    smbd_stop_all || die "restart-smbd: smbd processes left: $(smbd_leftovers | paste -sd ' ')"
    old=$(cat "$STATE/pid/smbd" 2>/dev/null || true)
    sup_send restart-smbd start-smbd || { log "restart-smbd failed"; log_tail; exit 1; }
    for ((i = 0; i < START_TIMEOUT * 20; i++)); do
        [ "$(cat "$STATE/pid/smbd" 2>/dev/null || true)" != "$old" ] && alive smbd && break
        alive supervisor || break
        sleep 0.05
    done
    if alive smbd && [ "$(cat "$STATE/pid/smbd")" != "$old" ] && wait_smb_ready "$START_TIMEOUT"; then
        log "smbd restarted"
        recorded smbd
        return 0
    fi
    log "restart-smbd failed"
    log_tail
    exit 1
}

# grace_now: "yes" while ganesha's log says its latest start is in grace,
# "no" otherwise (ganesha logs "NFS Server Now IN GRACE, duration N" and
# "NFS Server Now NOT IN GRACE" at EVENT level; a start as "nfs-ganesha
# Starting:", "ganesha.nfsd Starting:" before 4.x).
grace_now() {
    [ -r "$STATE/log/ganesha.log" ] || { echo no; return 0; }
    awk '/(nfs-ganesha|ganesha\.nfsd) Starting:/ { g = "no" }
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
    local name answers=no rc probe
    probe=$(probe_timeout)
    printf 'url=%s\nexport=%s\nfs=%s\nmode=%s\nworkers=%s\n' "$(url)" "$EXPORT" "$FS" "$MODE" "$WORKERS"
    [ "$SERVER" != knfsd ] || knfsd_status
    [ -r "$STATE/run/loopdev" ] && printf 'loopdev=%s\n' "$(cat "$STATE/run/loopdev")"
    if [ "$NLM" = 1 ] && [ "$SERVER" = knfsd ]; then
        printf 'nlm=on\n' # lockd and statd in the guest, on ports of rpcbind's choosing
    elif [ "$NLM" = 1 ]; then
        printf 'nlm=on\nnlm_port=%s\nstatd_port=%s\nstatd_dir=%s\n' "$NLM_PORT" "$STATD_PORT" "$STATD_DIR"
    else
        printf 'nlm=off\n'
    fi
    printf 'grace=%s\nlease=%s\n' "$GRACE" "$LEASE"
    [ "$SERVER" = knfsd ] || printf 'in_grace=%s\n' "$(grace_now)"
    printf 'link=%s\nlink_applied=%s\n' "$(current_link)" "$(link_applied)"
    if [ "$SMB" = 1 ]; then
        printf 'smb=on\nsmb_url=%s\nsmb_user=%s\nsmb_password_file=%s\nsmb_conf=%s\n' \
            "$(smb_url)" "$SMB_USER" "$SMB_DIR/password" "$STATE/conf/smb.conf"
        printf 'smb_sendfile=%s\nsmb_workers=%s\n' "$SMB_SENDFILE" "$SMB_WORKERS"
    else
        printf 'smb=off\n'
    fi
    local names=(supervisor rpcbind)
    [ "$NLM" = 1 ] && names+=(statd)
    names+=(ganesha)
    [ "$SERVER" = knfsd ] && names=(supervisor uml)
    [ "$SMB" = 1 ] && names+=(smbd)
    [ -e "$STATE/pid/linkdelay" ] && names+=(linkdelay)
    for name in "${names[@]}"; do
        if alive "$name"; then
            printf '%s=%s running\n' "$name" "$(recorded "$name")"
        else
            printf '%s=%s dead\n' "$name" "$(recorded "$name")"
        fi
    done
    if alive supervisor && alive "$(server_proc)" && nfs_answers "$probe"; then
        answers=yes
    fi
    printf 'answers=%s\n' "$answers"
    local smb_ok=1
    if [ "$SMB" = 1 ]; then
        if alive supervisor && alive smbd && smb_answers "$probe"; then
            printf 'smb_answers=yes\n'
        else
            printf 'smb_answers=no\n'
            smb_ok=0
        fi
    fi
    local st=stopped
    rc=3
    # running: NFS answers and, with NLM, statd is there (without it every
    # NLM lock is refused); with --smb smbd answers too; kernel nfsd's
    # export takes writes (knfsd_status).
    if [ "$answers" = yes ] && { [ "$NLM" != 1 ] || [ "$SERVER" = knfsd ] || alive statd; } &&
        ((smb_ok)) && [ "${KNFSD_EXPORT_WRITABLE:-yes}" != no ]; then
        st=running rc=0
    elif alive supervisor || alive ganesha || alive uml || alive rpcbind || alive statd || alive smbd; then
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
    state_lock
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

# _link_applied --state DIR [--netns-pid PID --dev DEV]: link_applied of
# the server (vcluster.sh status: with the switch port towards it).
cmd_link_applied() {
    local pid="" dev=""
    while (($#)); do
        case "$1" in
            --state) set_state "${2:-}"; shift 2 ;;
            --netns-pid) pid=${2:-}; shift 2 ;;
            --dev) dev=${2:-}; shift 2 ;;
            *) die "_link_applied: unknown argument $1" ;;
        esac
    done
    [ -n "${STATE:-}" ] || die "_link_applied: --state DIR is required"
    if [ -n "$pid" ] && [[ "$pid" =~ ^[0-9]+$ ]] && [ -n "$dev" ]; then
        link_applied "$pid" "$dev"
    else
        link_applied
    fi
}

main() {
    (($#)) || usage
    ARGV=("$@")
    local cmd=$1
    shift
    case "$cmd" in
        start) cmd_start "$@" ;;
        stop) cmd_stop "$@" ;;
        exec) cmd_exec "$@" ;;
        restart-ganesha | start-ganesha) cmd_restart_ganesha "$@" ;;
        restart-server) cmd_restart_server "$@" ;;
        threads) cmd_threads "$@" ;;
        export-mode) cmd_export_mode "$@" ;;
        guest) cmd_guest "$@" ;;
        stop-statd) cmd_stop_statd "$@" ;;
        start-statd) cmd_start_statd "$@" ;;
        restart-smbd | start-smbd) cmd_restart_smbd "$@" ;;
        stop-smbd) cmd_stop_smbd "$@" ;;
        status) cmd_status "$@" ;;
        link) cmd_link "$@" ;;
        _qdisc) cmd_qdisc "$@" ;;
        _link_applied) cmd_link_applied "$@" ;;
        _link_check)
            # vcluster.sh up: check SPEC and what it needs before anything
            # starts; stdout the normalized spec, then what it adds to a
            # round trip (microseconds).
            parse_link "${1-}" && check_link_tools || exit 1
            printf '%s\n%s\n' "$LINK_SPEC" "$(link_round_trip_us)"
            ;;
        -h | --help | help) usage ;;
        *) log "unknown command $cmd"; usage ;;
    esac
}

main "$@"
