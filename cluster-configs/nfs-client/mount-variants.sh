#!/usr/bin/env bash
# mount-variants.sh — the mount commands for seed 000's rsize sweep (the same
# export mounted once per rsize, 1K..1M) on a kernel NFS client: prints them
# for you to paste (the default; nothing is run), or runs them with --apply
# as root. Every mount goes under the directory you name, as
# MOUNTDIR/rsize-<bytes>.
#
#   mount-variants.sh [options] SERVER:/EXPORT MOUNTDIR
#     --vers V       NFS version: 3 (default), 4.0, 4.1 or 4.2
#     --proto P      tcp (default) or udp (NFSv3 only; see fstab.examples)
#     --sizes LIST   rsize values, comma or space separated, in bytes or
#                    with a K or M suffix (default: 1K 2K 4K 8K 12K 16K
#                    32K 64K 128K 256K 512K 1M)
#     --wsize        set wsize to the same value (default: the server's)
#     --opts OPTS    more mount options, appended (e.g. nconnect=4,ro)
#     --umount       the umount commands instead of the mount commands
#     --apply        run the commands instead of printing them (root only);
#                    after mounting, prints each mount's negotiated rsize
#
# NFSv3 mounts need rpc.statd running on the client (rpc-statd.service,
# started by nfs-common / nfs-utils), or mount.nfs refuses; `--opts nolock`
# avoids that but makes locks local (never for lock tests).
#
# Each mount gets vers, proto, hard, noatime and its rsize. The kernel may
# change what you ask for (caps at the server's maximum, rounding: see
# fstab.examples); the effective value is in /proc/mounts, which --apply
# prints and herd records per host.
#
# With herd, one run per mount: the posix backend has no per-phase rsize
# (nfs_rsize is libnfs's), so a run reads with its mount's rsize. Write the
# file once (jobs/seed000-kernel.ini keeps it under a fixed run id), then
# read it once per mount; each mount is fresh (mount right before the run,
# as the seed did), so its page cache is empty and the kernel's read-ahead
# decides what is in flight:
#   herd run jobs/seed000-kernel.ini --set target=MOUNTDIR/rsize-1048576 \
#        --set kind=write --set block_size=1M --set deadline=0 -o write.h5
#   for m in MOUNTDIR/rsize-*; do
#     herd run jobs/seed000-kernel.ini --set target=$m -o "$(basename "$m").h5"
#   done
#   analysis/herd-compare rsize-*.h5 --label fstype --x opt:rsize --kind read
# jobs/seed000.sh CLIENT=kernel does all of it in a virtual cluster, and
# without mounts jobs/seed000.ini sweeps nfs_rsize itself over libnfs.
#
# It contacts nothing unless --apply is given (then only what mount(8)
# itself does). Sourcing the file runs nothing.

DEFAULT_SIZES="1K 2K 4K 8K 12K 16K 32K 64K 128K 256K 512K 1M"

log() { printf 'mount-variants.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

usage() {
    sed -n '/^#   mount-variants.sh \[/,/^#                    after mounting/p' "${BASH_SOURCE[0]}" |
        sed 's/^# \{0,1\}//' >&2
    exit 2
}

# to_bytes SIZE: 12K -> 12288, 1M -> 1048576, 4096 -> 4096.
to_bytes() {
    local s=$1
    case "$s" in
        *[kK]) s=${s%[kK]}; [[ "$s" =~ ^[0-9]+$ ]] || return 1; echo $((10#$s * 1024)) ;;
        *[mM]) s=${s%[mM]}; [[ "$s" =~ ^[0-9]+$ ]] || return 1; echo $((10#$s * 1048576)) ;;
        *) [[ "$s" =~ ^[0-9]+$ ]] || return 1; echo $((10#$s)) ;;
    esac
}

# quote ARGS: one shell command line (safe words as they are).
quote() {
    local out="" a
    for a in "$@"; do
        if [[ "$a" =~ ^[A-Za-z0-9_./=,:@+%-]+$ ]]; then
            out+="$a "
        else
            out+="$(printf '%q' "$a") "
        fi
    done
    printf '%s\n' "${out% }"
}

# mounted_opts DIR: the options field of DIR's line in /proc/self/mounts.
mounted_opts() {
    awk -v d="$1" '$2 == d { o = $4 } END { if (o != "") print o; else exit 1 }' /proc/self/mounts
}

main() {
    local vers=3 proto=tcp sizes=$DEFAULT_SIZES wsize=0 extra="" umount=0 apply=0 args=()
    while (($#)); do
        case "$1" in
            --vers) vers=${2:-}; shift 2 || usage ;;
            --vers=*) vers=${1#*=}; shift ;;
            --proto) proto=${2:-}; shift 2 || usage ;;
            --proto=*) proto=${1#*=}; shift ;;
            --sizes) sizes=${2:-}; shift 2 || usage ;;
            --sizes=*) sizes=${1#*=}; shift ;;
            --wsize) wsize=1; shift ;;
            --opts) extra=${2:-}; shift 2 || usage ;;
            --opts=*) extra=${1#*=}; shift ;;
            --umount) umount=1; shift ;;
            --apply) apply=1; shift ;;
            -h | --help) usage ;;
            --) shift; args+=("$@"); break ;;
            -*) log "unknown option $1"; usage ;;
            *) args+=("$1"); shift ;;
        esac
    done
    ((${#args[@]} == 2)) || usage
    local src=${args[0]} dir=${args[1]}

    [[ "$src" =~ ^([A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\]):/.* ]] ||
        die "SERVER:/EXPORT expected (e.g. fs01:/srv/xfs-sync), not '$src'"
    [[ "$dir" == /* ]] || die "MOUNTDIR must be an absolute path, not '$dir'"
    dir=${dir%/}
    [ -n "$dir" ] || die "MOUNTDIR must not be /"
    [[ "$dir" =~ ^[A-Za-z0-9_./+-]+$ ]] || die "MOUNTDIR: only letters, digits and ._/+- please ('$dir')"
    case "$vers" in 3 | 4.0 | 4.1 | 4.2) ;; *) die "--vers must be 3, 4.0, 4.1 or 4.2" ;; esac
    case "$proto" in tcp | udp) ;; *) die "--proto must be tcp or udp" ;; esac
    [ "$proto" = tcp ] || [ "$vers" = 3 ] || die "NFSv4 runs over TCP only; --proto udp needs --vers 3"
    [[ -z "$extra" || "$extra" =~ ^[A-Za-z0-9_.=,:+-]+$ ]] || die "--opts: a comma-separated option list, not '$extra'"

    local -a bytes=()
    local s b
    for s in ${sizes//,/ }; do
        b=$(to_bytes "$s") || die "--sizes: '$s' is not a size (bytes, or a number with K or M)"
        ((b >= 1024 && b <= 1048576)) || die "--sizes: $s is outside 1K..1M (the Linux client's range)"
        bytes+=("$b")
    done
    ((${#bytes[@]})) || die "--sizes: no sizes given"
    if [ "$proto" = udp ]; then
        for b in "${bytes[@]}"; do
            ((b <= 32768)) || log "note: over UDP the Linux server caps transfers at 32768; rsize=$b will be negotiated down"
        done
    fi

    if ((apply)); then
        [ "$(id -u)" -eq 0 ] || die "--apply needs root (mount/umount)"
        export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
        if ((!umount)); then
            command -v mount.nfs >/dev/null 2>&1 || die "mount.nfs not found: install nfs-common (Debian/Ubuntu) or nfs-utils"
        fi
    else
        printf '# %s %s of %s under %s (paste as root; nothing was run)\n' \
            "$([ "$umount" = 1 ] && echo umount || echo mount)" "rsize sweep" "$src" "$dir"
    fi

    local mp opts rc=0 got made
    for b in "${bytes[@]}"; do
        mp="$dir/rsize-$b"
        opts="vers=$vers,proto=$proto,hard,noatime,rsize=$b"
        ((wsize)) && opts+=",wsize=$b"
        [ -n "$extra" ] && opts+=",$extra"
        if ((umount)); then
            if ((apply)); then
                if mounted_opts "$mp" >/dev/null; then
                    umount "$mp" || { log "umount $mp failed"; rc=1; }
                fi
            else
                quote umount "$mp"
            fi
            continue
        fi
        if ((apply)); then
            if mounted_opts "$mp" >/dev/null; then
                log "$mp is already mounted; left as it is"
            else
                made=0
                [ -d "$mp" ] || made=1
                mkdir -p "$mp" || { rc=1; continue; }
                if ! mount -t nfs -o "$opts" "$src" "$mp"; then
                    log "mount $mp failed"
                    rc=1
                    ((made)) && rmdir "$mp" 2>/dev/null
                    continue
                fi
            fi
            got=$(mounted_opts "$mp" | tr ',' '\n' | sed -n 's/^rsize=//p')
            if [ "$got" = "$b" ]; then
                printf '%s rsize=%s\n' "$mp" "$got"
            else
                printf '%s rsize=%s (asked %s; the kernel or the server changed it)\n' "$mp" "${got:-?}" "$b"
            fi
        else
            quote mkdir -p "$mp"
            quote mount -t nfs -o "$opts" "$src" "$mp"
        fi
    done
    if ((!apply && !umount)); then
        printf "# then check the negotiated sizes:  grep ' %s/' /proc/mounts | grep -o 'rsize=[0-9]*'\n" "$dir"
    fi
    return "$rc"
}

# Run only when executed, not when sourced (and leave a sourcing shell's
# options alone).
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    set -euo pipefail
    main "$@"
fi
