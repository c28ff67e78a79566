#!/usr/bin/env bash
# meta_vs_fio.sh — herd's metadata workload (kind = meta) against fio's
# filecreate / filestat / filedelete ioengines, side by side, on a private
# tmpfs and on a loop-mounted xfs the script makes:
#   * create: herd meta_ops = create (open O_CREAT + close of empty files)
#     vs fio ioengine=filecreate (open O_CREAT + close);
#   * stat:   herd meta_ops = stat vs fio ioengine=filestat (stat(2));
#   * unlink: herd meta_ops = unlink,rmdir vs fio ioengine=filedelete;
#   * rename: herd meta_ops = rename (fio has no engine for it: herd alone).
# Same files (FILES in all, split evenly over the ranks / fio jobs), each
# process in its own directory at the same depth below the mount, paths
# resolved relative to the mount by both. Each configuration runs REPEAT
# times (herd and fio alternate, the order flips every round); the table
# shows medians, herd/fio and PASS/FAIL against TARGET. See bench/README.md. Needs root (mounts; as another user
# it says SKIP and exits 0); exits 0 whatever the results, 2 when a tool is
# missing or a setting is wrong.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")

REPEAT=${REPEAT:-5}             # measured rounds per configuration
WARMUP=${WARMUP:-1}             # unmeasured rounds first
FILES=${FILES:-500000}          # files per configuration, all ranks / fio jobs together
STAT_PASSES=${STAT_PASSES:-3}   # stat every file this many times (>= 1 s of stats)
PRELOOKUP=${PRELOOKUP:-yes}     # look herd's names up before its run, as fio's setup does (see herd_meta)
RANKS=${RANKS:-"1 2"}           # rank (fio job) counts
FSES=${FSES:-"tmpfs xfs"}       # file systems to run on
XFS_SIZE=${XFS_SIZE:-8G}        # sparse xfs image
XFS_IMAGE_DIR=${XFS_IMAGE_DIR:-} # where the image lives; empty = a private tmpfs (memory-backed)
TARGET=${TARGET:-0.9}           # herd/fio must be >= TARGET
OUT=${OUT:-./bench-results/meta}
HERD=${HERD:-$ROOT/build/herd}
MPIRUN_ARGS=${MPIRUN_ARGS-"--bind-to none"} # mpirun pins ranks when np <= cores, fio does not pin
SETTLE=${SETTLE:-1}             # seconds to wait after deleting a run's files

BENCH=meta_vs_fio
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

# ---- preconditions --------------------------------------------------------
bench_require_root "it mounts a private tmpfs and a loop-mounted xfs."
bench_require fio:fio mpirun:openmpi-bin mount:mount umount:mount losetup:mount mkfs.xfs:xfsprogs
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || { warn "REPEAT must be a positive integer"; exit 2; }
[[ $WARMUP =~ ^[0-9]+$ ]] || { warn "WARMUP must be a non-negative integer"; exit 2; }
[[ $FILES =~ ^[1-9][0-9]*$ ]] || { warn "FILES must be a positive integer"; exit 2; }
[[ $STAT_PASSES =~ ^[1-9][0-9]*$ ]] || { warn "STAT_PASSES must be a positive integer"; exit 2; }
case $PRELOOKUP in yes | no) ;; *) warn "PRELOOKUP must be yes or no"; exit 2 ;; esac
for n in $RANKS; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || { warn "bad RANKS entry '$n'"; exit 2; }
    [ $((FILES / n)) -ge 1 ] && [ $((FILES / n)) -le 999999 ] ||
        { warn "FILES / ranks must be 1..999999 (herd names files f%06d)"; exit 2; }
done
[[ $SETTLE =~ ^[0-9]+$ ]] || { warn "SETTLE must be a non-negative integer"; exit 2; }
for fs in $FSES; do
    case $fs in tmpfs | xfs) ;; *) warn "FSES: unknown file system '$fs' (tmpfs, xfs)"; exit 2 ;; esac
done
XFS_B=$(to_bytes "$XFS_SIZE")

# Kernel memory per empty file (inode + dentry, tmpfs or xfs) is ~1-2 KiB;
# a run holds FILES files at a time. Ask for 4 KiB each, within 60% of what
# is available.
need=$((FILES * 4096))
avail_b=$(($(awk '/^MemAvailable:/ {print $2}' /proc/meminfo) * 1024))
if [ "$need" -gt $((avail_b * 6 / 10)) ]; then
    warn "$FILES files at a time need about $((need >> 20)) MiB of kernel memory;" \
        "only $((avail_b >> 20)) MiB available: lower FILES"
    exit 2
fi

bench_workspace # OUT, LOGS, RAW, CSV, WORK; the traps are replaced below
MNT_TMPFS=$WORK/tmpfs      # the tmpfs under test
MNT_XFS=$WORK/xfs          # the xfs under test
IMGDIR=$WORK/img           # private tmpfs holding the xfs image (XFS_IMAGE_DIR empty)
mkdir -p "$MNT_TMPFS" "$MNT_XFS" "$IMGDIR"
IMG=
LOOP=
declare -A MOUNTED=()

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    cd / || true
    unmount() {
        [ -n "${MOUNTED[$1]:-}" ] || return 0
        if ! umount "$1" 2>/dev/null; then
            sleep 1
            umount "$1" 2>/dev/null || umount -l "$1" || warn "could not unmount $1"
        fi
        unset "MOUNTED[$1]"
    }
    unmount "$MNT_XFS"
    if [ -n "$LOOP" ]; then
        losetup -d "$LOOP" 2>/dev/null || warn "could not detach $LOOP"
    fi
    [ -n "$IMG" ] && rm -f "$IMG"
    unmount "$IMGDIR"
    unmount "$MNT_TMPFS"
    rm -rf "$WORK"
    exit $rc
}
trap cleanup EXIT
trap 'warn interrupted; exit 130' INT
trap 'warn terminated; exit 143' TERM

# The tmpfs under test: empty files need no blocks, only inodes (FILES at
# a time, plus directories; rename moves, it does not copy).
if [[ " $FSES " == *" tmpfs "* ]]; then
    mount -t tmpfs -o "size=256M,nr_inodes=$((2 * FILES + 10000)),mode=0755" \
        herd-bench-meta "$MNT_TMPFS" || { warn "mount of tmpfs on $MNT_TMPFS failed"; exit 2; }
    MOUNTED[$MNT_TMPFS]=1
fi
if [[ " $FSES " == *" xfs "* ]]; then
    if [ -n "$XFS_IMAGE_DIR" ]; then
        IMG=$(mktemp "$XFS_IMAGE_DIR/herd-bench-xfs.XXXXXX.img") ||
            { warn "cannot create an image in $XFS_IMAGE_DIR"; exit 2; }
    else
        mount -t tmpfs -o "size=$XFS_B,mode=0700" herd-bench-img "$IMGDIR" ||
            { warn "mount of tmpfs on $IMGDIR failed"; exit 2; }
        MOUNTED[$IMGDIR]=1
        IMG=$IMGDIR/xfs.img
    fi
    truncate -s "$XFS_B" "$IMG" || { warn "cannot make sparse image $IMG"; exit 2; }
    mkfs.xfs -q -f "$IMG" >"$LOGS/mkfs.xfs.log" 2>&1 ||
        { warn "mkfs.xfs failed, see $LOGS/mkfs.xfs.log"; exit 2; }
    LOOP=$(losetup --find --show "$IMG") || { warn "losetup failed"; exit 2; }
    mount -t xfs "$LOOP" "$MNT_XFS" || { warn "mount of $LOOP on $MNT_XFS failed"; exit 2; }
    MOUNTED[$MNT_XFS]=1
fi

mnt_of() { if [ "$1" = xfs ]; then echo "$MNT_XFS"; else echo "$MNT_TMPFS"; fi; }

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# ---- result parsing (h5py / json) ---------------------------------------------
UTIL=$HERE/meta_util.py # its herd, fio, table and prelookup commands
U() { PYTHONPATH="$HERE" "$PY" "$UTIL" "$@"; }

# Remove everything on a mount, let the file system settle (xfs: log and
# inode writeback; dentries of removed directories are freed by rmdir).
wipe() {
    local m=$1
    find "$m" -mindepth 1 -maxdepth 1 -exec rm -rf {} + 2>/dev/null
    sync -f "$m" 2>/dev/null || sync
}
fresh() {
    wipe "$1"
    sleep "$SETTLE"
}

# ---- one measurement of each tool ------------------------------------------
# herd: one run of meta phases, each timed alone: create, stat1..statN
# (STAT_PASSES), rename, unlink+rmdir. FILES / n empty files per rank,
# in one directory per rank: <mnt>/herd-bench/m/r00000R/{a,b}/d0000/fNNNNNN.
#
# PRELOOKUP=yes: fio's job setup stat()s every file name before its clock
# starts (to learn the file's type), so when its filecreate run begins the
# kernel already holds a negative dentry for each name and the timed
# open(O_CREAT) skips the directory lookup that proves the name is free.
# On xfs that lookup is a directory B-tree search, ~2 us of a ~18 us
# create (measured here: the same C loop creates 48.5k files/s without the
# pass and 55.8k/s with it). herd's create phase pays for the lookup in its
# timed calls. To compare the same calls, the script makes herd's
# directories (herd's mkdirs then see EEXIST, which herd accepts) and stats
# herd's names the same way before starting it, untimed.
# Prints "create stat rename unlink", each "rate:seconds:in_op".
herd_meta() {
    local fs=$1 n=$2 mnt job=$WORK/meta.ini h5=$WORK/meta.h5 per=$((FILES / $2))
    local log=$LOGS/herd-$1-np$2-$3.log
    : >"$log"
    mnt=$(mnt_of "$fs")
    cat >"$job" <<EOF
[global]
target = $mnt
run_id = bench
fileset = m
sharing = unique
file_size = 0
fsync = no
dirs = 1
files = $per

[create]
kind = meta
meta_ops = create
$(for ((i = 1; i <= STAT_PASSES; i++)); do printf '\n[stat%d]\nkind = meta\nmeta_ops = stat\n' "$i"; done)

[rename]
kind = meta
meta_ops = rename

[unlink]
kind = meta
meta_ops = unlink,rmdir
EOF
    fresh "$mnt"
    if [ "$PRELOOKUP" = yes ]; then
        local j
        for ((j = 0; j < n; j++)); do mkdir -p "$(printf '%s/herd-bench/m/r%06d/a/d0000' "$mnt" "$j")"; done
        U prelookup "$mnt" "$n" "$per" 2>>"$log" || warn "prelookup failed ($fs np=$n), see $log"
    fi
    # shellcheck disable=SC2086
    if ! mpirun --oversubscribe -np "$n" $MPIRUN_ARGS "$HERD" run "$job" -o "$h5" --force \
        >>"$log" 2>&1; then
        warn "herd failed ($fs np=$n), see $log"
        wipe "$mnt"
        return
    fi
    U herd "$h5" "$n" "$per" "$STAT_PASSES" 2>>"$log" || warn "herd results unusable ($fs np=$n), see $log"
    wipe "$mnt"
}

# fio: three runs (filecreate, filestat with loops = STAT_PASSES,
# filedelete) over the same FILES / n files per job. fio runs in the mount
# point with relative file names, one directory per job at herd's depth:
# fio-bench/m/rJ/a/d0000/fN. fio does not make the directories of a
# filename_format, so the script makes them first, untimed (herd's are
# made by PRELOOKUP, or else by herd's timed create phase: 5 mkdirs per
# rank). One file = one 4 KiB "block", so one I/O per file: the engine's
# open hook (open O_CREAT / stat / unlink) is the only real call.
#   file_service_type=sequential: fio's default (roundrobin) rescans the
#     file list for each new file (O(files^2): 4k creates/s at 20000 files,
#     user-CPU bound in fio), which would handicap the peer;
#   create_on_open=1: files are made by the timed open, not by the setup;
#     for filestat/filedelete it also stops the setup from extending the
#     empty files to filesize;
#   fadvise_hint=0: no posix_fadvise(-1) (EBADF) call per file.
# Prints "create stat unlink", each "rate:seconds:in_op".
fio_meta() {
    local fs=$1 n=$2 mnt log=$LOGS/fio-$1-np$2-$3 j res=() r step eng ddir loops
    local per=$((FILES / $2))
    mnt=$(mnt_of "$fs")
    fresh "$mnt"
    for ((j = 0; j < n; j++)); do mkdir -p "$mnt/fio-bench/m/r$j/a/d0000"; done
    local common=(--name=m "--filename_format=fio-bench/m/r\$jobnum/a/d0000/f\$filenum"
        --nrfiles="$per" --filesize=4k --bs=4k --openfiles=1 --numjobs="$n"
        --file_service_type=sequential --create_on_open=1 --unlink=0 --fadvise_hint=0
        --fallocate=none --group_reporting --output-format=json)
    for step in filecreate:write:1 filestat:read:$STAT_PASSES filedelete:write:1; do
        IFS=: read -r eng ddir loops <<<"$step"
        if ! (cd "$mnt" && fio "${common[@]}" --ioengine="$eng" --rw="$ddir" --loops="$loops" \
            --output="$log-$eng.json") >"$log-$eng.err" 2>&1; then
            warn "fio $eng failed ($fs np=$n), see $log-$eng.*"
            wipe "$mnt"
            return
        fi
        r=$(U fio "$log-$eng.json" "$ddir" $((loops * n * per)) "$n" 2>>"$log-$eng.err") || {
            warn "fio $eng results unusable ($fs np=$n), see $log-$eng.*"
            wipe "$mnt"
            return
        }
        res+=("$r")
    done
    echo "${res[*]}"
    wipe "$mnt"
}

# ---- the rounds -------------------------------------------------------------
echo "config,tool,round,ops_s,seconds,in_op_s,load1" >"$RAW"
# seconds: the timed span; in_op_s: per rank/job, seconds inside the op's
# calls (what the rest of the span costs is the tool's own overhead).
record() { # config tool round "rate:seconds:in_op"
    local v=$4 rate='' secs='' inop=
    if [ -n "$v" ]; then IFS=: read -r rate secs inop <<<"$v"; fi
    echo "$1,$2,$3,$rate,$secs,$inop,$(cut -d' ' -f1 /proc/loadavg)" >>"$RAW"
}

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -n) kernel $(uname -r)"
    echo "cpu: $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), $(nproc) online"
    echo "mem: $(awk '/^MemTotal:/ {print $2 " kB"}' /proc/meminfo)"
    echo "herd: $HERD ($("$HERD" --version 2>&1 | head -1))"
    echo "fio: $(fio --version)"
    echo "mkfs.xfs: $(mkfs.xfs -V 2>&1 | head -1)"
    echo "mpirun: $(mpirun --version 2>&1 | head -1)"
    echo "params: REPEAT=$REPEAT WARMUP=$WARMUP FILES=$FILES STAT_PASSES=$STAT_PASSES PRELOOKUP=$PRELOOKUP RANKS='$RANKS' FSES='$FSES'" \
        "XFS_SIZE=$XFS_B XFS_IMAGE_DIR='$XFS_IMAGE_DIR' TARGET=$TARGET SETTLE=$SETTLE" \
        "MPIRUN_ARGS='$MPIRUN_ARGS'"
    for fs in $FSES; do
        echo "$fs: $(findmnt -n -o SOURCE,FSTYPE,OPTIONS "$(mnt_of "$fs")")"
    done
    [ -n "$LOOP" ] && echo "xfs image: $IMG on $LOOP ($(findmnt -n -o FSTYPE -T "$IMG"))"
    echo "load at start: $(cat /proc/loadavg)"
} >"$OUT/env.txt"
cat "$OUT/env.txt"
say ""
say "$FILES empty files per configuration, split over the ranks / fio jobs, one directory each;" \
    "steps create, stat, rename (herd only), unlink"
say "rounds: $WARMUP warm-up + $REPEAT measured; herd and fio alternate, order flips per round"
say ""

v() { if [ -n "$1" ]; then printf '%.0f' "${1%%:*}"; else echo ERR; fi; }

total=$((WARMUP + REPEAT))
for ((round = 1; round <= total; round++)); do
    if [ "$round" -le "$WARMUP" ]; then
        label=warmup$round
        rec=0
    else
        label=$((round - WARMUP))
        rec=1
    fi
    if ((round % 2)); then order="herd fio"; else order="fio herd"; fi
    for fs in $FSES; do
        for n in $RANKS; do
            line="round $label $fs np=$n:"
            for who in $order; do
                if [ "$who" = herd ]; then
                    out=$(herd_meta "$fs" "$n" "$label")
                    read -r c s r u <<<"$out"
                    if [ "$rec" = 1 ]; then
                        record "$fs create np=$n" herd "$label" "${c:-}"
                        record "$fs stat np=$n" herd "$label" "${s:-}"
                        record "$fs rename np=$n" herd "$label" "${r:-}"
                        record "$fs unlink np=$n" herd "$label" "${u:-}"
                    fi
                    line+=" herd c=$(v "${c:-}") s=$(v "${s:-}") r=$(v "${r:-}") u=$(v "${u:-}");"
                else
                    out=$(fio_meta "$fs" "$n" "$label")
                    read -r c s u <<<"$out"
                    if [ "$rec" = 1 ]; then
                        record "$fs create np=$n" fio-filecreate "$label" "${c:-}"
                        record "$fs stat np=$n" fio-filestat "$label" "${s:-}"
                        record "$fs unlink np=$n" fio-filedelete "$label" "${u:-}"
                    fi
                    line+=" fio c=$(v "${c:-}") s=$(v "${s:-}") u=$(v "${u:-}");"
                fi
                unset c s r u
            done
            say "$line"
        done
    done
done

# Group the rows of one configuration together (create, stat, rename,
# unlink per file system and rank count) for the table.
sorted=$WORK/raw-sorted.csv
{
    head -1 "$RAW"
    for fs in $FSES; do
        for n in $RANKS; do
            for op in create stat unlink rename; do
                grep "^$fs $op np=$n," "$RAW"
            done
        done
    done
} >"$sorted"

say ""
say "medians of $REPEAT rounds (op/s = files per second, all ranks / jobs together):"
U table "$sorted" "$CSV" "$TARGET" || warn "could not build the table from $RAW"
say ""
say "herd: count of the op's calls (ops table: open / stat / rename / unlink) / (last rank's end -"
say "common phase start). fio: total_ios / group runtime (slowest job); one I/O per file, whose only"
say "real call is the engine's open / stat / unlink. rename: fio has no engine for it (herd only)."
say "results: $CSV (raw samples: $RAW, logs: $LOGS)"
exit 0
