#!/usr/bin/env bash
# seed000.sh — seed 000 on this machine: which rsize reads a file fastest
# over a slow, distant link? (The seed: NFS through an OpenVPN tunnel,
# tens of ms round trip, a few Mbit/s; `dd bs=16k` of a 16 MB file on a
# fresh mount per rsize, night and day; 12288 came out best, 16384 slower.)
#
# The embedded userspace server (cluster-configs/local/nfs-server.sh,
# nfs-ganesha on a loop-mounted xfs) is started once. For each round trip
# in RTTS its link is set to delay = RTT/2 each way (0: no link), and for
# each value in INFLIGHT herd runs jobs/seed000.ini over libnfs inside the
# server's network namespace (RANKS ranks; the seed had one client): write
# the file once, then read it with 16K calls at nfs_rsize 1K..64K, each
# phase 3 times, cut short after 20 s (throughput = bytes moved / phase
# time). nfs_inflight = READ RPCs in flight per rank: 1 waits for each RPC
# (throughput ~ rsize / RTT), 16 is a kernel client's read-ahead. The
# server is stopped at the end, also on error or ^C. Then herd-compare
# --x nfs_rsize prints MiB/s per rsize (rows) for each RTT and in-flight
# (columns), the best rsize of each column marked with *, and plots it.
#
# With CLIENT=kernel the reader is the Linux kernel's NFS client instead:
# a one-host virtual cluster (cluster-configs/virtual/vcluster.sh up
# --kernel-client, a User-Mode Linux guest) per round trip, the link
# between guest and server set at up; herd writes the file once
# (jobs/seed000-kernel.ini), then for each rsize in RSIZES the guest
# mounts the export afresh with -o MOUNT_OPTS,rsize=R (the seed's fresh
# mount: an empty page cache) and herd reads the file with 16K calls,
# ITERATIONS mounts per rsize. herd-compare --x opt:rsize prints MiB/s per
# rsize and round trip, and what the kernel's read-ahead made of each
# rsize: READ RPCs in flight, RTT and execute time (mountstats).
#
#   jobs/seed000.sh
#   RTTS="0 5" INFLIGHT="1 4" FILE_SIZE=1M ITERATIONS=1 DEADLINE=3s jobs/seed000.sh
#   CLIENT=kernel RTTS="0 20" RSIZES="12288 16384" jobs/seed000.sh
#
# Environment:
#   CLIENT      libnfs (default: herd's libnfs backend) | kernel (the kernel
#               NFS client in a UML guest, herd's posix backend on its mount)
#   RTTS        round trips in ms, in order (default "0 5 20 50"; 0 = no link,
#               at most 20000; decimals allowed)
#   INFLIGHT    libnfs: nfs_inflight values, in order (default "1 16"; 1..256)
#   RSIZES      kernel: rsize mount options in bytes, in order (default
#               "1024 2048 4096 8192 12288 16384 32768 65536")
#   MOUNT_OPTS  kernel: the other mount options (default vers=3)
#   READ_AHEAD_KB  kernel: the mount's read-ahead window in KiB, set after
#               each mount (default: the kernel's, 128)
#   RANKS       ranks reading the one shared file (default 1)
#   RATE        also limit the link's rate, e.g. 8mbit (default: none)
#   MTU         libnfs: the server namespace's lo MTU (default 1500, an
#               Ethernet or VPN path's; 65536 is lo's own, where a READ reply
#               under 64K is one TCP segment); kernel: always 1500 (the
#               virtual cluster's Ethernet)
#   FILE_SIZE   file size (default: the job's 16M), e.g. 1M for a quick look
#   ITERATIONS  repeats of each read phase (default: the job's 3); kernel:
#               fresh mounts per rsize, one read each (default 3)
#   DEADLINE    each read phase stops after this long (default: the job's 20s)
#   OUT         output directory (default ${HERD_RESULTS:-<repo>/results}/seed000-<date>)
#   HERD        the herd program (default <repo>/build/herd)
#   HERD_LINKDELAY  herd-linkdelay (default: beside HERD, else <repo>/build/)
#   HERD_MPIRUN_ARGS (added after --oversubscribe), HERD_PYTHON (default /usr/bin/python3)
# Output in OUT: rtt<R>ms-if<N>.h5 and .log per run (herd's results and
# output; kernel: rtt<R>ms-write and rtt<R>ms-rsize<S>-<i>), sweep/
# (herd-compare -o: sweep.png, sweep.csv, sweep.md, compare.*) and
# summary.txt (the table printed at the end).
# Needs root (namespaces, loop devices), nfs-ganesha (see
# cluster-configs/local/install.sh), a herd built with libnfs, and for
# RTTs above 0 tc, iptables and herd-linkdelay (CMake target, with
# libnetfilter-queue-dev) unless the kernel has netem. CLIENT=kernel also
# needs what vcluster.sh up --kernel-client does (user-mode-linux, its
# README).
# Exit code: 0 when every run exited 0 or 3 and the comparison worked,
# 1 otherwise, 2 for bad settings or missing prerequisites.
set -euo pipefail

ME=seed000.sh
log() { printf '%s: %s\n' "$ME" "$*" >&2; }
bad() { log "$*"; exit 2; }

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HERD=${HERD:-$REPO/build/herd}
SERVER=$REPO/cluster-configs/local/nfs-server.sh
JOB=$REPO/jobs/seed000.ini
KJOB=$REPO/jobs/seed000-kernel.ini
VCLUSTER=$REPO/cluster-configs/virtual/vcluster.sh
CLIENT=${CLIENT:-libnfs}
RTTS=${RTTS:-0 5 20 50}
INFLIGHT_SET=${INFLIGHT+set}
INFLIGHT=${INFLIGHT:-1 16}
RSIZES_SET=${RSIZES+set}
RSIZES=${RSIZES:-1024 2048 4096 8192 12288 16384 32768 65536}
MOUNT_OPTS_SET=${MOUNT_OPTS+set}
MOUNT_OPTS=${MOUNT_OPTS:-vers=3}
READ_AHEAD_KB=${READ_AHEAD_KB:-}
MTU_SET=${MTU+set}
RANKS=${RANKS:-1}
RATE=${RATE:-}
MTU=${MTU:-1500}
FILE_SIZE=${FILE_SIZE:-}
ITERATIONS=${ITERATIONS:-}
DEADLINE=${DEADLINE:-}
python=${HERD_PYTHON:-/usr/bin/python3}
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

case "${1:-}" in -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
(($# == 0)) || bad "takes no arguments (settings are environment variables; see --help)"
case "$CLIENT" in
    libnfs) [ -z "$RSIZES_SET$MOUNT_OPTS_SET$READ_AHEAD_KB" ] || bad "RSIZES, MOUNT_OPTS and READ_AHEAD_KB are for CLIENT=kernel (libnfs sweeps nfs_rsize in jobs/seed000.ini)" ;;
    kernel)
        [ -z "$INFLIGHT_SET" ] || bad "INFLIGHT is for CLIENT=libnfs (the kernel's read-ahead decides what is in flight)"
        [ -z "$MTU_SET" ] || [ "$MTU" = 1500 ] || bad "MTU: CLIENT=kernel runs over the virtual cluster's Ethernet, MTU 1500"
        read -r -a rsizes <<<"$RSIZES"
        ((${#rsizes[@]})) || bad "RSIZES is empty"
        for n in "${rsizes[@]}"; do
            if ! [[ "$n" =~ ^[1-9][0-9]{2,7}$ ]] || ((n < 1024 || n > 1048576)); then
                bad "RSIZES: '$n' is not an rsize in bytes from 1024 to 1048576"
            fi
        done
        [[ "$MOUNT_OPTS" =~ ^[A-Za-z0-9_.=,:-]+$ ]] || bad "MOUNT_OPTS: '$MOUNT_OPTS' is not a list of mount options (letters, digits, = , . _ : -)"
        [[ ",$MOUNT_OPTS," != *,rsize=* ]] || bad "MOUNT_OPTS: leave rsize out (RSIZES sweeps it)"
        if [ -n "$READ_AHEAD_KB" ] && { ! [[ "$READ_AHEAD_KB" =~ ^[0-9]{1,7}$ ]] || ((READ_AHEAD_KB > 1048576)); }; then
            bad "READ_AHEAD_KB: '$READ_AHEAD_KB' is not a size in KiB from 0 to 1048576"
        fi
        ;;
    *) bad "CLIENT: '$CLIENT' is neither libnfs nor kernel" ;;
esac
read -r -a rtts <<<"$RTTS"
((${#rtts[@]})) || bad "RTTS is empty"
for r in "${rtts[@]}"; do
    [[ "$r" =~ ^[0-9]+(\.[0-9]+)?$ ]] || bad "RTTS: '$r' is not a round trip in ms (a number >= 0)"
    awk -v r="$r" 'BEGIN { exit !(r <= 20000) }' || bad "RTTS: '$r' ms is more than 20000 (10 s each way)"
done
read -r -a inflights <<<"$INFLIGHT"
((${#inflights[@]})) || bad "INFLIGHT is empty"
for n in "${inflights[@]}"; do
    if ! [[ "$n" =~ ^[1-9][0-9]{0,2}$ ]] || ((n > 256)); then
        bad "INFLIGHT: '$n' is not an integer from 1 to 256"
    fi
done
[[ "$RANKS" =~ ^[1-9][0-9]{0,3}$ ]] || bad "RANKS: '$RANKS' is not a positive integer"
[ -z "$RATE" ] || [[ "$RATE" =~ ^[0-9]+(\.[0-9]+)?[kmg]bit$ ]] || bad "RATE: '$RATE' is not a rate like 8mbit (kbit, mbit, gbit)"
if ! [[ "$MTU" =~ ^[1-9][0-9]{2,4}$ ]] || ((MTU < 576 || MTU > 65536)); then
    bad "MTU: '$MTU' is not an MTU from 576 to 65536"
fi
[ -z "$FILE_SIZE" ] || [[ "$FILE_SIZE" =~ ^[1-9][0-9]*([KMG](iB)?)?$ ]] || bad "FILE_SIZE: '$FILE_SIZE' is not a size like 16M"
[ -z "$ITERATIONS" ] || [[ "$ITERATIONS" =~ ^[1-9][0-9]{0,3}$ ]] || bad "ITERATIONS: '$ITERATIONS' is not a positive integer"
if [ -n "$DEADLINE" ] && ! [[ "$DEADLINE" =~ ^[0-9]+(\.[0-9]+)?(us|ms|s|m|h)?$ && "$DEADLINE" =~ [1-9] ]]; then
    bad "DEADLINE: '$DEADLINE' is not a positive duration like 20s"
fi
[ "$(id -u)" -eq 0 ] || bad "needs root (the embedded NFS server uses namespaces and loop devices)"
command -v ganesha.nfsd >/dev/null || bad "ganesha.nfsd not found (cluster-configs/local/install.sh installs it)"
[ -x "$HERD" ] || bad "herd binary $HERD not found (build it, or set HERD)"
[ "$CLIENT" = kernel ] || [[ "$("$HERD" keys 2>/dev/null)" == *nfs_inflight* ]] ||
    bad "$HERD has no libnfs backend with nfs_inflight"
[ "$CLIENT" = libnfs ] || command -v linux.uml >/dev/null ||
    bad "linux.uml not found (CLIENT=kernel: apt-get install user-mode-linux)"
[ -x "$python" ] || bad "python $python not found (set HERD_PYTHON)"
if [ -z "${HERD_LINKDELAY:-}" ]; then
    HERD_LINKDELAY=$(dirname -- "$HERD")/herd-linkdelay
    [ -x "$HERD_LINKDELAY" ] || HERD_LINKDELAY=$REPO/build/herd-linkdelay
fi
export HERD_LINKDELAY
linked=0
for r in "${rtts[@]}"; do awk -v r="$r" 'BEGIN { exit !(r > 0) }' && linked=1; done
[ -z "$RATE" ] || linked=1
if ((linked)); then
    command -v tc >/dev/null || bad "tc not found (apt-get install iproute2)"
    command -v iptables >/dev/null || bad "iptables not found (apt-get install iptables)"
    [ -x "$HERD_LINKDELAY" ] || log "warning: $HERD_LINKDELAY not built: delays need netem then"
fi

out=${OUT:-${HERD_RESULTS:-$REPO/results}/seed000-$(date +%Y%m%d-%H%M%S)}
mkdir -p -- "$out" || { log "cannot create $out"; exit 1; }
out=$(cd "$out" && pwd)
compgen -G "$out/rtt*.h5" >/dev/null && bad "$out already holds results (rtt*.h5): use another OUT"

state="" vcstate=""
stop_server() {
    if [ -n "$state" ]; then
        "$SERVER" stop --state "$state" --purge >/dev/null 2>&1 ||
            log "warning: nfs-server.sh stop --state $state failed; stop it by hand"
        state=""
    fi
    if [ -n "$vcstate" ]; then
        bash "$VCLUSTER" down --state "$vcstate" >/dev/null 2>&1 ||
            log "warning: vcluster.sh down --state $vcstate failed; take it down by hand"
        rmdir -- "${vcstate%/vc}" 2>/dev/null || true
        vcstate=""
    fi
}
trap stop_server EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# link_spec RTT: the link for a round trip of RTT ms (RATE too), or none.
link_spec() {
    local spec
    spec=$(awk -v r="$1" 'BEGIN { if (r > 0) printf "delay=%gms", r / 2 }')
    [ -z "$RATE" ] || spec=${spec:+$spec,}rate=$RATE
    echo "${spec:-none}"
}

sets=()
[ -z "$FILE_SIZE" ] || sets+=(--set "file_size=$FILE_SIZE")
[ -z "$DEADLINE" ] || sets+=(--set "deadline=$DEADLINE")
failed=0
files=()

# run_done NAME RC [POINT]: herd's exit code RC of run NAME judged (0 and
# 3 are runs; 3 counted errors), its results file added to the comparison
# unless POINT is "no".
run_done() {
    if [ "$2" -eq 3 ]; then
        log "$1: herd exit code 3 (errors counted; see $out/$1.log)"
    elif [ "$2" -ne 0 ]; then
        log "$1: herd exit code $2; last lines of $out/$1.log:"
        tail -n 5 "$out/$1.log" >&2
        failed=1
    fi
    if [ ! -s "$out/$1.h5" ]; then
        log "$1: no results"
        failed=1
    elif [ "${3:-yes}" != no ]; then
        files+=("$out/$1.h5")
    fi
}

# run_libnfs: jobs/seed000.ini over libnfs in the embedded server's
# namespace, once per RTT and nfs_inflight.
run_libnfs() {
    [ -z "$ITERATIONS" ] || sets+=(--set "iterations=$ITERATIONS")
    # The write phase keeps its own iterations = 1 and no deadline (jobs/seed000.ini).
    "$HERD" check "$JOB" -n "$RANKS" --set target=nfs://127.0.0.1/x "${sets[@]}" >/dev/null ||
        bad "jobs/seed000.ini does not check with these settings"
    state=$(mktemp -d "${TMPDIR:-/tmp}/herd-seed000.XXXXXX")
    url=$("$SERVER" start --state "$state" --fs xfs --size 512M | sed -n 1p) ||
        { log "nfs-server.sh start failed"; exit 1; }
    [ -n "$url" ] || { log "nfs-server.sh start printed no URL"; exit 1; }
    # Clients and server meet on the namespace's lo: its MTU is the path's.
    "$SERVER" exec --state "$state" -- ip link set dev lo mtu "$MTU" ||
        { log "cannot set the MTU of lo to $MTU in the server's namespace"; exit 1; }
    log "seed 000: RTT ${rtts[*]} ms x nfs_inflight ${inflights[*]}, $RANKS rank(s), MTU $MTU; export $url; results in $out"
    local r n name spec label rc
    for r in "${rtts[@]}"; do
        spec=$(link_spec "$r")
        if [ "$spec" = none ]; then
            "$SERVER" link --state "$state" --clear >/dev/null || { log "link --clear failed"; exit 1; }
        else
            "$SERVER" link --state "$state" --set "$spec" >/dev/null || { log "link --set $spec failed"; exit 1; }
        fi
        for n in "${inflights[@]}"; do
            name=rtt${r}ms-if$n
            # herd records the link as run: the spec and the MTU.
            label=${spec#none}
            label=${label:+$label,}mtu=$MTU
            log "$name: link $label, nfs_inflight $n"
            set +e
            # shellcheck disable=SC2086 # HERD_MPIRUN_ARGS are separate words
            "$SERVER" exec --state "$state" -- mpirun -np "$RANKS" --oversubscribe ${HERD_MPIRUN_ARGS:-} \
                "$HERD" run "$JOB" --set target="$url" --set nfs_inflight="$n" --set link="$label" \
                "${sets[@]}" -o "$out/$name.h5" >"$out/$name.log" 2>&1
            rc=$?
            set -e
            run_done "$name" "$rc"
        done
    done
    stop_server
}

# vc_herd NAME POINT ARGS...: herd run jobs/seed000-kernel.ini on the
# guest's mount (RANKS ranks on the one client host) with the settings'
# --set's, then ARGS; results NAME.h5 in OUT (the guests' share); judged
# by run_done NAME RC POINT.
vc_herd() {
    local name=$1 point=$2 rc
    shift 2
    set +e
    # shellcheck disable=SC2016 # expanded by the shell inside the cluster
    bash "$VCLUSTER" exec --state "$vcstate" -- bash -c \
        'n=$1 out=$2; shift 2; exec mpirun --hostfile "$HERD_HOSTFILE" $HERD_MPIRUN_ARGS -np "$n" \
            "$@" --set target="$VC_MOUNT" -o "$out"' \
        vc "$RANKS" "$out/$name.h5" "$HERD" run "$KJOB" "${sets[@]}" "$@" >"$out/$name.log" 2>&1
    rc=$?
    set -e
    run_done "$name" "$rc" "$point"
}

# run_kernel: per RTT a one-host kernel-client cluster with that link; the
# file written once, then read on a fresh mount per rsize and repeat.
run_kernel() {
    local iters=${ITERATIONS:-3} r rs i spec label ra=()
    [ -z "$READ_AHEAD_KB" ] || ra=(--read-ahead-kb "$READ_AHEAD_KB")
    "$HERD" check "$KJOB" -n "$RANKS" "${sets[@]}" >/dev/null ||
        bad "jobs/seed000-kernel.ini does not check with these settings"
    log "seed 000, kernel client: RTT ${rtts[*]} ms x rsize ${rsizes[*]}, $iters mount(s) each, -o $MOUNT_OPTS${READ_AHEAD_KB:+, read-ahead $READ_AHEAD_KB KiB}, $RANKS rank(s); results in $out"
    for r in "${rtts[@]}"; do
        spec=$(link_spec "$r")
        label=${spec#none}
        label=${label:+$label,}mtu=1500
        vcstate=$(mktemp -d "${TMPDIR:-/tmp}/herd-seed000.XXXXXX")/vc
        local link=()
        [ "$spec" = none ] || link=(--link "$spec")
        bash "$VCLUSTER" up --state "$vcstate" --clients 1 --slots "$RANKS" --kernel-client \
            --mount-opts "$MOUNT_OPTS" --share "$out" "${link[@]}" >"$out/rtt${r}ms-up.log" 2>&1 ||
            { log "vcluster.sh up failed; see $out/rtt${r}ms-up.log"; exit 1; }
        log "rtt${r}ms: guest up, link $label; writing the file"
        vc_herd "rtt${r}ms-write" no --set kind=write --set block_size=1M --set deadline=0 \
            --set link="$label"
        for rs in "${rsizes[@]}"; do
            for ((i = 1; i <= iters; i++)); do
                bash "$VCLUSTER" mount --state "$vcstate" --mount-opts "$MOUNT_OPTS,rsize=$rs" \
                    "${ra[@]}" >>"$out/rtt${r}ms-up.log" 2>&1 ||
                    { log "mount -o $MOUNT_OPTS,rsize=$rs failed; see $out/rtt${r}ms-up.log"; exit 1; }
                vc_herd "rtt${r}ms-rsize$rs-$i" yes --set link="$label"
            done
            log "rtt${r}ms: rsize $rs read $iters time(s)"
        done
        stop_server
    done
}

if [ "$CLIENT" = kernel ]; then run_kernel; else run_libnfs; fi

((${#files[@]})) || { log "no run produced results"; exit 1; }
{
    echo
    if [ "$CLIENT" = kernel ]; then
        echo "seed 000, kernel client (-o $MOUNT_OPTS${READ_AHEAD_KB:+, read-ahead $READ_AHEAD_KB KiB}): MiB/s reading a ${FILE_SIZE:-16M} file with" \
            "16K calls on a fresh mount, per rsize (rows) and link (columns), $RANKS rank(s)"
        "$python" "$REPO/analysis/herd-compare" "${files[@]}" --label link --x opt:rsize --kind read \
            -o "$out/sweep" || failed=1
    else
        echo "seed 000: MiB/s reading a ${FILE_SIZE:-16M} file with 16K calls, per nfs_rsize (rows) and" \
            "RTT / nfs_inflight (columns: rtt<ms>-if<in flight>), $RANKS rank(s), MTU $MTU${RATE:+, rate $RATE}"
        "$python" "$REPO/analysis/herd-compare" "${files[@]}" --label file --x nfs_rsize --kind read \
            -o "$out/sweep" || failed=1
    fi
} >"$out/summary.txt" 2>&1
cat "$out/summary.txt"
log "results in $out"
exit "$failed"
