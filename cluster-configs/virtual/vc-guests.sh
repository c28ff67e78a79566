#!/usr/bin/env bash
# vc-guests.sh — the client hosts of vcluster.sh up --kernel-client: each a
# User-Mode Linux guest (Debian's user-mode-linux, an ordinary process)
# with the Linux kernel's NFS client, on the cluster's bridge by a tap of
# its own in the switch namespace. The guest's PID 1 is uml-init.c
# (role=client, built by up into STATE/bin/uml-init): the host's / read-only
# as its root (herd, Open MPI, the job files at their host paths), the
# export mounted at STATE/mnt, the share directory read-write (results), and an
# agent that vc-guest.py talks to (vc-agent starts orted through it).
# Sourced by vcluster.sh: functions only; they use its STATE, NET, die,
# log, host_field, in_host, proc_start and alive_pid. Each guest is a line of
# STATE/hosts with role guest; its files are in STATE/guests/NAME (config,
# secret: its agent's, fresh for every boot; console.log; log/: the
# daemons' logs, the only part the guest writes).
#
# linux.uml runs through ../local/umlview.py: chrooted into a view of the
# host (the host's tree read-only, the guest's log/ and the share
# read-write), as root with only the capabilities to read and write files
# in that view.

GUEST_TOOLS=(linux.uml cc rpcbind rpc.statd mount.nfs unshare setpriv)

guests_check_tools() {
    tools_need "up --kernel-client" "see cluster-configs/local/install.sh" "${GUEST_TOOLS[@]}"
    [ -r "$UML_INIT_SRC" ] || die "up --kernel-client: $UML_INIT_SRC is missing"
    [ -r "$UML_XSTATE_SRC" ] || die "up --kernel-client: $UML_XSTATE_SRC is missing"
}

# guests_build_init [SHARE]: uml-init.c, static (it runs before anything is
# mounted); the share directory (SHARE, or STATE/share) in STATE/share-dir.
guests_build_init() {
    mkdir -p "$STATE/bin" "$STATE/run/view" "$STATE/mnt"
    if [ -n "${1:-}" ]; then
        printf '%s\n' "$1" >"$STATE/share-dir"
    else
        mkdir -p "$STATE/share"
        printf '%s\n' "$STATE/share" >"$STATE/share-dir"
    fi
    cc -static -std=gnu11 -O2 -Wall -Wextra -o "$STATE/bin/uml-init" "$UML_INIT_SRC" \
        2>"$STATE/uml-init-cc.log" || die "up: cc -static $UML_INIT_SRC failed: $(head -3 "$STATE/uml-init-cc.log")"
    # (linux.uml 6.1 on a host with a large XSAVE area: see uml-xstate.c)
    cc -shared -fPIC -std=gnu11 -O2 -Wall -Wextra -o "$STATE/bin/uml-xstate.so" "$UML_XSTATE_SRC" \
        -ldl -lpthread 2>"$STATE/uml-xstate-cc.log" ||
        die "up: cc $UML_XSTATE_SRC failed: $(head -3 "$STATE/uml-xstate-cc.log")"
}

# guest_mac ADDR: a locally administered MAC made of the IPv4 address.
guest_mac() {
    local IFS=.
    # shellcheck disable=SC2086
    set -- $1
    printf 'fe:fd:%02x:%02x:%02x:%02x\n' "$1" "$2" "$3" "$4"
}

# guest_start NAME ADDR: boot the guest (not waiting for it).
guest_start() {
    local name=$1 addr=$2 dir=$STATE/guests/$1 tap=t-$1 pid start
    # (made afresh)
    rm -rf --one-file-system -- "$dir"
    mkdir -p "$dir/log"
    printf '%s\n' role=client "addr=$addr" netmask=255.255.255.0 "hostname=$name" \
        "share=$(cat "$STATE/share-dir")" "routes=$(server_routes guest)" >"$dir/config"
    # the agent's secret (uml-init reads it at boot), fresh for every boot
    python3 "$GUEST_PY" secret "$dir" || die "up: cannot write $dir/secret"
    # rpc.statd runs as the owner of its sm/ directories (Debian: statd).
    touch "$dir/statd-owner"
    chown statd "$dir/statd-owner" 2>/dev/null || true
    in_host switch ip tuntap add dev "$tap" mode tap user 0
    in_host switch ip link set "$tap" master br0 up
    # (setsid, nsenter, unshare and umlview.py exec: $! is linux.uml; HERD_STATE
    # names the cluster in its command line, the guest ignores it)
    setsid nsenter -t "$(host_field switch 2)" --net -- unshare --mount --propagation private -- \
        python3 "$UMLVIEW_PY" run --role client --view "$STATE/run/view" --guest-dir "$dir" \
        --init "$STATE/bin/uml-init" --preload "$STATE/bin/uml-xstate.so" \
        --share "$(cat "$STATE/share-dir")" --mem $((GUEST_MEM_MB << 20)) -- \
        "mem=${GUEST_MEM_MB}M" ro "umid=herd-$name" "eth0=tuntap,$tap,$(guest_mac "$addr")" \
        con=null con0=null,fd:1 ssl=null pty.legacy_count=0 "HERD_STATE=$STATE" \
        </dev/null >"$dir/console.log" 2>&1 &
    pid=$!
    start=$(proc_start "$pid") || die "up: the guest $name did not start (see $dir/console.log)"
    printf '%s %s %s %s guest\n' "$name" "$pid" "$start" "$addr" >>"$STATE/hosts"
}

# guests_wait: until every guest's agent answers; says how long each took.
guests_wait() {
    local name pid start addr role t0 took
    t0=$(date +%s.%N)
    while read -r name pid start addr role; do
        [ "$role" = guest ] || continue
        in_host head python3 "$GUEST_PY" wait "$STATE/guests/$name" "$GUEST_BOOT" "$pid" ||
            die "up: the guest $name did not boot in ${GUEST_BOOT} s: $(tail -3 "$STATE/guests/$name/console.log" | tr '\n' ' ')"
        took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
        printf '%s %s\n' "$name" "$took" >>"$STATE/boot-times"
    done <"$STATE/hosts"
}

# guest_sh NAME LINE: LINE through /bin/sh in guest NAME (from the head
# host, which is on the bridge); its exit status.
guest_sh() {
    in_host head python3 "$GUEST_PY" sh "$STATE/guests/$1" "$2"
}

guest_names() { awk '$5 == "guest" { print $1 }' "$STATE/hosts"; }

# guest_mount NAME OPTS SRC [RA]: on guest NAME, in one agent call, the old
# mount of STATE/mnt unmounted (else exit 11), the export mounted with OPTS
# (else 12) and RA set (else 13); any other status is the agent's.
guest_mount() {
    local mnt=$STATE/mnt ra=${4:-}
    guest_sh "$1" "if mountpoint -q $mnt; then umount $mnt || exit 11; fi; \
timeout $MOUNT_WAIT mount -t nfs -o $2 $3 $mnt || exit 12; \
[ -z '$ra' ] || echo '$ra' >/sys/class/bdi/\$(mountpoint -d $mnt)/read_ahead_kb || exit 13"
}

# guests_mount OPTS [RA]: the export on STATE/mnt of every guest with these
# options (what was mounted there before unmounted first); RA: then that
# read-ahead window in KiB (the mount's bdi read_ahead_kb), else the
# kernel's. The guests mount at once (each is its own kernel): one after
# the other, a remount of 4 guests took 12-18 s, most of it agent calls.
guests_mount() {
    local opts=$1 ra=${2:-} name src i status rc=0 failed=""
    local pids=() names=()
    [[ "$opts" =~ ^[A-Za-z0-9_=,.:-]+$ ]] || die "mount: --mount-opts '$opts': letters, digits and _=,.:- only"
    if [ -n "$ra" ] && { ! [[ "$ra" =~ ^[0-9]{1,7}$ ]] || ((ra > 1048576)); }; then
        die "mount: --read-ahead-kb '$ra': KiB from 0 to 1048576"
    fi
    src="$(url_host):$(sed -e 's|^nfs://[^/]*||' -e 's|?.*||' "$STATE/url")"
    for name in $(guest_names); do
        guest_mount "$name" "$opts" "$src" "$ra" &
        pids+=("$!")
        names+=("$name")
    done
    for i in "${!pids[@]}"; do
        status=0
        wait "${pids[$i]}" || status=$?
        if [ "$status" -ne 0 ] && [ -z "$failed" ]; then
            rc=$status
            failed=${names[$i]}
        fi
    done
    case $rc in
        0) ;;
        11) die "mount: $failed: the old mount of $STATE/mnt did not go" ;;
        12) die "mount: $failed: mount -t nfs -o $opts $src failed" ;;
        13) die "mount: $failed: cannot set the read-ahead of $STATE/mnt to $ra KiB" ;;
        *) die "mount: $failed: its agent failed (exit $rc)" ;;
    esac
    printf '%s\n' "$opts" >"$STATE/mount-opts"
    if [ -n "$ra" ]; then printf '%s\n' "$ra" >"$STATE/read-ahead-kb"; else rm -f "$STATE/read-ahead-kb"; fi
}

# guests_poweroff: ask every guest to unmount and power off, then wait
# (10 s) for its linux.uml; what is left is down's to stop by PID.
guests_poweroff() {
    local name pid start addr role i
    while read -r name pid start addr role; do
        [ "$role" = guest ] && alive_pid "$pid" "$start" || continue
        in_host head python3 "$GUEST_PY" send "$STATE/guests/$name" poweroff >/dev/null 2>&1 || true
    done <"$STATE/hosts"
    while read -r name pid start addr role; do
        [ "$role" = guest ] || continue
        for ((i = 0; i < 100; i++)); do
            alive_pid "$pid" "$start" || break
            sleep 0.1
        done
    done <"$STATE/hosts"
}
