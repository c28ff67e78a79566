#!/usr/bin/env bash
# mkfs-and-mount.sh — make an xfs or ext4 file system on a block device of
# the NFS server and mount it at /srv/<fs>-<mode>, the paths that
# exports.xfs / exports.ext4 export. This is the server side of seed 001
# (the same dd/md5 matrix against an xfs and a reiserfs server; ext4 stands
# in for reiserfs here) and of seed 003 (sync vs async exports).
#
#   mkfs-and-mount.sh [--yes] [--force] xfs|ext4 DEVICE [sync|async|sync-nowdelay]
#
#   DEVICE   a block device (/dev/sdb, /dev/nvme1n1p2, /dev/vg0/herd-xfs...)
#            whose contents you are willing to lose.
#   MODE     only names the mount point (default sync): /srv/xfs-sync,
#            /srv/xfs-async, /srv/xfs-sync-nowdelay. sync/async are export
#            options (exports.*), not mount options; the file system is
#            mounted the same way for every mode.
#   --yes    actually do it. Without it the script only prints the commands
#            it would run and exits with status 2: nothing is touched.
#   --force  also when DEVICE already holds a file system, a partition table
#            or partitions (their contents are destroyed).
#
# Mount options:
#   xfs   noatime,inode64,logbufs=8,logbsize=256k
#         noatime: reads do not turn into inode writes; inode64: inodes
#         anywhere on the device (the default since Linux 3.7, explicit for
#         older kernels); logbufs=8,logbsize=256k: the largest in-memory log
#         buffers, fewer log writes under metadata load (seed 003's mv).
#   ext4  noatime,data=ordered
#         data=ordered (the default, explicit here): file data is written
#         before the journal commits the metadata that points at it.
#   Write barriers/flushes stay on (the default): turning them off makes
#   `sync` exports lie like `async` ones.
# mkfs: `mkfs.xfs -f` with its defaults; `mkfs.ext4 -F -E
# lazy_itable_init=0,lazy_journal_init=0`, so that no background
# initialisation disturbs the first runs (as cluster-configs/local does).
# After mounting, the mount point is made mode 1777 (like /tmp) so that herd,
# running as an ordinary user on the clients, can create its run directory;
# change owner/mode to your policy. Nothing is added to /etc/fstab or
# /etc/exports: the script prints the lines to add.
#
# Needs root (with --yes), util-linux (blkid, lsblk, findmnt, mountpoint) and
# xfsprogs or e2fsprogs. Sourcing the file runs nothing.

# Where the mount points go (HERD_MOUNT_BASE overrides, e.g. for a trial
# run on a loop device).
MOUNT_BASE=${HERD_MOUNT_BASE:-/srv}

log() { printf 'mkfs-and-mount.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

usage() {
    sed -n '/^#   mkfs-and-mount.sh \[/,/^#            or partitions/p' "${BASH_SOURCE[0]}" |
        sed 's/^# \{0,1\}//' >&2
    exit 2
}

# quote ARGS: print the arguments as one shell command line (arguments made
# only of safe characters as they are, others quoted by printf %q).
quote() {
    local out="" a
    for a in "$@"; do
        if [[ "$a" =~ ^[A-Za-z0-9_./=,:@+-]+$ ]]; then
            out+="$a "
        else
            out+="$(printf '%q' "$a") "
        fi
    done
    printf '%s\n' "${out% }"
}

main() {
    local yes=0 force=0 args=()
    while (($#)); do
        case "$1" in
            --yes) yes=1; shift ;;
            --force) force=1; shift ;;
            -h | --help) usage ;;
            --) shift; args+=("$@"); break ;;
            -*) log "unknown option $1"; usage ;;
            *) args+=("$1"); shift ;;
        esac
    done
    ((${#args[@]} >= 2 && ${#args[@]} <= 3)) || usage
    local fs=${args[0]} dev=${args[1]} mode=${args[2]:-sync}
    case "$fs" in xfs | ext4) ;; *) die "file system must be xfs or ext4, not '$fs'" ;; esac
    case "$mode" in sync | async | sync-nowdelay) ;; *) die "mode must be sync, async or sync-nowdelay, not '$mode'" ;; esac
    [[ "$dev" == /dev/* ]] || die "DEVICE must be a path under /dev, not '$dev'"

    local mnt="$MOUNT_BASE/$fs-$mode" opts
    local -a mkfs
    case "$fs" in
        xfs)
            mkfs=(mkfs.xfs -f "$dev")
            opts=noatime,inode64,logbufs=8,logbsize=256k
            ;;
        ext4)
            # shellcheck disable=SC2054  # the commas belong to the -E value
            mkfs=(mkfs.ext4 -F -E lazy_itable_init=0,lazy_journal_init=0 "$dev")
            opts=noatime,data=ordered
            ;;
    esac
    local -a mkdir_cmd=(mkdir -p "$mnt") mount_cmd=(mount -t "$fs" -o "$opts" "$dev" "$mnt") chmod_cmd=(chmod 1777 "$mnt")

    printf '# %s on %s, mounted at %s\n' "$fs" "$dev" "$mnt"
    quote "${mkfs[@]}"
    quote "${mkdir_cmd[@]}"
    quote "${mount_cmd[@]}"
    quote "${chmod_cmd[@]}"
    if ((!yes)); then
        log "dry run: nothing done. Add --yes to run the commands above (this DESTROYS everything on $dev)."
        exit 2
    fi

    # ---- checks, then the real thing
    [ "$(id -u)" -eq 0 ] || die "needs root"
    export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
    local tool
    for tool in "mkfs.$fs" blkid lsblk findmnt mountpoint; do
        command -v "$tool" >/dev/null 2>&1 || die "$tool not found (install util-linux and $([ "$fs" = xfs ] && echo xfsprogs || echo e2fsprogs))"
    done
    [ -b "$dev" ] || die "$dev is not a block device"
    local real
    real=$(readlink -f "$dev")
    # Mounted, itself or any partition or holder below it?
    if [ -n "$(lsblk -nro MOUNTPOINT "$real" 2>/dev/null | grep -v '^$' || true)" ] ||
        findmnt -rn -S "$real" >/dev/null 2>&1; then
        die "$dev (or a partition on it) is mounted: $(lsblk -nro NAME,MOUNTPOINT "$real" | awk '$2 != ""' | tr '\n' ' ')"
    fi
    if awk -v d="$real" 'NR > 1 && $1 == d { found = 1 } END { exit !found }' /proc/swaps; then
        die "$dev is in use as swap"
    fi
    local parts sig
    parts=$(lsblk -nro NAME "$real" | wc -l)
    sig=$(blkid -p -o value -s TYPE "$real" 2>/dev/null || true)
    [ -n "$sig" ] || sig=$(blkid -p -o value -s PTTYPE "$real" 2>/dev/null || true)
    if { [ -n "$sig" ] || ((parts > 1)); } && ((!force)); then
        die "$dev already holds ${sig:-partitions} ($(lsblk -nro NAME,FSTYPE,SIZE "$real" | tr '\n' ';')); add --force to destroy it"
    fi
    if mountpoint -q "$mnt" 2>/dev/null; then
        die "$mnt is already a mount point ($(findmnt -rn -o SOURCE,FSTYPE "$mnt")); unmount it first"
    fi
    if [ -d "$mnt" ] && [ -n "$(ls -A "$mnt")" ]; then
        die "$mnt exists and is not empty; not mounting over it"
    fi

    log "making $fs on $dev"
    "${mkfs[@]}" >&2
    "${mkdir_cmd[@]}"
    "${mount_cmd[@]}"
    "${chmod_cmd[@]}"
    log "mounted: $(findmnt -rn -o SOURCE,TARGET,FSTYPE,OPTIONS "$mnt")"

    local uuid
    uuid=$(blkid -o value -s UUID "$real" || true)
    cat <<EOF

# To mount it at boot, add to /etc/fstab:
UUID=${uuid:-<uuid>}  $mnt  $fs  $opts  0 2
# To export it, copy the $mnt line of cluster-configs/nfs-server/exports.$fs
# into /etc/exports (or /etc/exports.d/herd.exports), then: exportfs -ra
EOF
}

# Run only when executed, not when sourced (and leave a sourcing shell's
# options alone).
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    set -euo pipefail
    main "$@"
fi
