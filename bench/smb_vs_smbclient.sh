#!/usr/bin/env bash
# smb_vs_smbclient.sh — herd's smb backend (libsmbclient) against Debian's
# smbclient and against a plain libsmbclient copy loop (bench/
# smb_copy_peer.c, compiled here with cc), on the same embedded server
# (cluster-configs/local/nfs-server.sh --smb: smbd on a tmpfs (FS=tmpfs, the default) or loop xfs
# export, in its own network namespace), the same SIZE_MB file, in one run:
# sequential write, then read, of one file by one process.
#
#   * smbclient `put` / `get` (to /dev/null) inside the namespace, logged in
#     with the server's authentication file (-A; the password is never on a
#     command line). Its request size cannot be set for SMB2/3 (`iosize`
#     is SMB1's): it sends 8 MiB READ/WRITE requests, two READs in flight
#     (measured with strace: sendfile and pwrite calls of 8 MiB on smbd,
#     two writev calls before the first reply on smbclient).
#     Its rate is the one it prints itself (open to close, after login).
#     A get to /dev/null drops the bytes in the kernel; herd's read (any
#     reader's: fio, IOR, dd) puts them in its memory with one copy out of
#     libsmbclient's reply. A second smbclient row, smbclient-file, gets
#     the file into a tmpfs file (/dev/shm): the bytes land in memory with
#     one copy, as herd's do (raw-smbclient-file.csv, smb_vs_smbclient_file.csv).
#   * herd: 1 rank, backend = smb, block_size = BS (default 8M: what
#     smbclient uses), fsync = no; the rate is the phase's (open to close;
#     the login is before the phase).
#   * the loop: smb_copy_peer with the same BS, timed open to close.
# A second pair of rows compares herd and the loop at SMALL_BS (default 64K,
# the seed's dd bs=64k), and a third herd under mpirun -np 1 (every herd
# row; MPIRUN_ARGS, default --bind-to none) with the same SMALL_BS job
# started without mpirun (a singleton MPI start) and under mpirun with its
# default binding of a rank to a core: what the MPI runtime and the
# binding cost (raw-runtime.csv / smb_runtime.csv, raw-bound.csv /
# smb_bound.csv). REPEAT rounds, the order alternating; before every
# measurement the export is emptied and dirty pages written (sync). Medians,
# ratio herd/peer, PASS/FAIL against TARGET (1.0) for smbclient and
# LOOP_TARGET (0.9) for the loop, through bench_util.py table.
# CLIENT_CPUS (e.g. 0): every client (herd, smbclient, the loop) runs
# under `taskset -c CLIENT_CPUS`, so that where the scheduler puts the
# client next to smbd is the same for all of them (docs/performance.md,
# "SMB, the MPI runtime and binding").
# Needs root (namespaces, loop device; as another user: SKIP, exit 0),
# samba + smbclient, libsmbclient-dev and cc, nfs-ganesha (the server
# script starts it too), and a herd built with libsmbclient. Exits 0
# whatever the numbers; 2 when a tool is missing or a setting is wrong.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
REPEAT=${REPEAT:-5}               # measured rounds (>= 5 for the acceptance figures)
SIZE_MB=${SIZE_MB:-256}           # MiB per file
BS=${BS:-8M}                      # herd's and the loop's call size against smbclient
SMALL_BS=${SMALL_BS-64K}          # herd vs the loop only; empty: skip these rows
TARGET=${TARGET:-1.0}             # herd / smbclient
LOOP_TARGET=${LOOP_TARGET:-0.9}   # herd / loop
OUT=${OUT:-./bench-results/smb}
HERD=${HERD:-$ROOT/build/herd}
MPIRUN_ARGS=${MPIRUN_ARGS---bind-to none} # herd's batch script does not bind either
CLIENT_CPUS=${CLIENT_CPUS:-}      # empty: clients unpinned; else taskset -c's CPU list
SERVER=$ROOT/cluster-configs/local/nfs-server.sh

# shellcheck disable=SC2034 # read by lib.sh
BENCH=smb_vs_smbclient
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

bench_require_root "the embedded server uses a network namespace and a loop-mounted xfs."
bench_require mpirun:openmpi-bin smbd:samba smbclient:smbclient smbpasswd:samba \
    ganesha.nfsd:nfs-ganesha cc:gcc pkg-config:pkg-config
pkg-config --exists smbclient || { warn "libsmbclient-dev is missing (pkg-config smbclient)"; exit 2; }
[[ "$("$HERD" keys 2>/dev/null)" == *smb_user* ]] || { warn "$HERD has no smb backend (build with libsmbclient-dev)"; exit 2; }
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || { warn "REPEAT must be a positive integer"; exit 2; }
[[ $SIZE_MB =~ ^[1-9][0-9]*$ ]] || { warn "SIZE_MB must be a positive integer"; exit 2; }
pin=()
if [ -n "$CLIENT_CPUS" ]; then
    [[ $CLIENT_CPUS =~ ^[0-9]+([,-][0-9]+)*$ ]] || { warn "CLIENT_CPUS must be a CPU list (0, 0-1, 0,2)"; exit 2; }
    bench_require taskset:util-linux
    taskset -c "$CLIENT_CPUS" true 2>/dev/null || { warn "CLIENT_CPUS=$CLIENT_CPUS: no such CPU here"; exit 2; }
    pin=(taskset -c "$CLIENT_CPUS")
fi
bs_bytes=$(to_bytes "$BS")
small_bytes=
[ -z "$SMALL_BS" ] || small_bytes=$(to_bytes "$SMALL_BS")
bytes=$((SIZE_MB * 1048576))
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

bench_workspace
state=$WORK/server
# shellcheck disable=SC2317 # reached through the traps
smb_cleanup() {
    "$SERVER" stop --state "$state" --purge >/dev/null 2>&1 || warn "stopping the server at $state failed"
    [ -z "${shm:-}" ] || rm -rf -- "$shm"
    bench_cleanup
}
trap smb_cleanup EXIT

# shellcheck disable=SC2046 # pkg-config prints separate words
cc -std=gnu11 -O2 -Wall -o "$WORK/smb_copy_peer" "$HERE/smb_copy_peer.c" \
    $(pkg-config --cflags --libs smbclient) >"$LOGS/peer-cc.log" 2>&1 ||
    { warn "cc smb_copy_peer.c failed, see $LOGS/peer-cc.log"; exit 2; }
# FS=tmpfs (default): a RAM export, so the clients are compared, not the
# disk's writeback (as bench/nfs_vs_nfscp.sh); FS=xfs: a loop image.
FS=${FS:-tmpfs}
case $FS in tmpfs) size=8G ;; xfs) size=2G ;; *) warn "FS=$FS: tmpfs or xfs"; exit 2 ;; esac
"$SERVER" start --state "$state" --fs "$FS" --size "$size" --smb >"$WORK/start" 2>"$LOGS/server-start.log" ||
    { warn "nfs-server.sh start --smb failed, see $LOGS/server-start.log"; exit 1; }
smb_url=$(sed -n 3p "$WORK/start")
[[ $smb_url == smb://* ]] || { warn "nfs-server.sh printed no smb URL"; exit 1; }
export_dir=$state/export
pass=$state/smb/password creds=$state/smb/credentials
head -c "$bytes" /dev/urandom >"$WORK/src.dat" # smbclient's put source, in page cache
shm=$(mktemp -d /dev/shm/herd-bench-smb.XXXXXX) || { warn "cannot make a directory in /dev/shm"; exit 2; }

job() { # job BLOCK_SIZE
    cat <<EOF
[global]
backend = smb
target = $smb_url
smb_user = herd
smb_password_file = $pass
file_size = ${SIZE_MB}M
block_size = $1
fsync = no
sharing = shared
fileset = bench
[write]
kind = write
[read]
kind = read
EOF
}

inside() { "$SERVER" exec --state "$state" -- "${pin[@]}" "$@"; } # the clients' side
on_server() { "$SERVER" exec --state "$state" --server-fs -- "$@"; } # sees the mounted export

herd_run() { # herd_run BLOCK_SIZE [NAME]: prints write and read MiB/s
    local name=${2:-herd}-$1-$round
    job "$1" >"$WORK/$name.ini"
    # shellcheck disable=SC2086 # LAUNCH: words by design ("" = a singleton start)
    inside ${LAUNCH-mpirun -np 1 $MPIRUN_ARGS} "$HERD" run "$WORK/$name.ini" -o "$LOGS/$name.h5" --force \
        >"$LOGS/$name.log" 2>&1 || { warn "herd failed, see $LOGS/$name.log"; return 1; }
    echo "$("$PY" "$HERE/bench_util.py" herd "$LOGS/$name.h5" write "$bytes" 2>>"$LOGS/$name.log")" \
        "$("$PY" "$HERE/bench_util.py" herd "$LOGS/$name.h5" read "$bytes" 2>>"$LOGS/$name.log")"
}

peer_run() { # peer_run BLOCK_BYTES: prints write and read MiB/s of the loop
    local log=$LOGS/loop-$1-$round.log w r
    w=$(inside "$WORK/smb_copy_peer" write "$smb_url/loop.dat" "$1" "$bytes" herd "$pass" 2>"$log") &&
        r=$(inside "$WORK/smb_copy_peer" read "$smb_url/loop.dat" "$1" "$bytes" herd "$pass" 2>>"$log") ||
        { warn "smb_copy_peer failed, see $log"; return 1; }
    echo "${w%% *} ${r%% *}"
}

smbclient_run() { # smbclient_run SINK NAME: prints write and read MiB/s as smbclient reports them (KiB/s)
    local log=$LOGS/$2-$round.log
    inside smbclient "//127.0.0.1/export" -A "$creds" \
        -c "put $WORK/src.dat smbclient.dat; get smbclient.dat $1" >"$log" 2>&1 ||
        { warn "smbclient failed, see $log"; return 1; }
    [ "$1" = /dev/null ] || { [ "$(stat -c %s "$1")" = "$bytes" ] && rm -f -- "$1"; } ||
        { warn "smbclient got a file of the wrong size"; return 1; }
    [ "$(on_server stat -c %s "$export_dir/smbclient.dat")" = "$bytes" ] ||
        { warn "smbclient put a file of the wrong size"; return 1; }
    local w r
    w=$(sed -n 's/^putting file .* (\([0-9.]*\) kb\/s).*/\1/p' "$log")
    r=$(sed -n 's/^getting file .* (\([0-9.]*\) KiloBytes\/sec).*/\1/p' "$log")
    awk -v w="$w" -v r="$r" 'BEGIN { if (w > 0 && r > 0) printf "%.1f %.1f\n", w / 1024, r / 1024; else exit 1 }' ||
        { warn "no rates in smbclient's output, see $log"; return 1; }
}

{
    echo "date: $(date -Is)"; uname -a; nproc
    smbd --version; smbclient --version; "$HERD" --version 2>&1 | head -n 1
    echo "SIZE_MB=$SIZE_MB BS=$BS SMALL_BS=$SMALL_BS REPEAT=$REPEAT CLIENT_CPUS=$CLIENT_CPUS"
} >"$OUT/env.txt" 2>&1

raw_sc=$OUT/raw-smbclient.csv raw_scf=$OUT/raw-smbclient-file.csv raw_loop=$OUT/raw-loop.csv
raw_rt=$OUT/raw-runtime.csv raw_bound=$OUT/raw-bound.csv
for f in "$raw_sc" "$raw_scf" "$raw_loop" "$raw_rt" "$raw_bound"; do echo "config,tool,round,mib_s" >"$f"; done
tools="herd smbclient smbclient-file loop"
[ -z "$small_bytes" ] || tools="$tools herd-small loop-small singleton-small bound-small"
for round in $(seq 1 "$REPEAT"); do
    order=$tools
    [ $((round % 2)) -eq 1 ] || order=$(tr ' ' '\n' <<<"$tools" | tac | tr '\n' ' ')
    line="round $round:"
    for who in $order; do
        # Every measurement starts from an empty export and no dirty pages:
        # a write otherwise lands in the previous tool's writeback.
        on_server bash -c 'rm -rf -- "$1"/*' _ "$export_dir"
        sync
        case $who in
        herd) read -r w r < <(herd_run "$BS") || exit 1
            for f in "$raw_sc" "$raw_loop"; do
                echo "write-${SIZE_MB}M-$BS,herd,$round,$w" >>"$f"
                echo "read-${SIZE_MB}M-$BS,herd,$round,$r" >>"$f"
            done
            echo "read-${SIZE_MB}M-$BS,herd,$round,$r" >>"$raw_scf" ;;
        smbclient) read -r w r < <(smbclient_run /dev/null smbclient) || exit 1
            echo "write-${SIZE_MB}M-$BS,smbclient,$round,$w" >>"$raw_sc"
            echo "read-${SIZE_MB}M-$BS,smbclient,$round,$r" >>"$raw_sc" ;;
        smbclient-file) read -r w r < <(smbclient_run "$shm/get.dat" smbclient-file) || exit 1
            echo "read-${SIZE_MB}M-$BS,smbclient-file,$round,$r" >>"$raw_scf" ;;
        loop) read -r w r < <(peer_run "$bs_bytes") || exit 1
            echo "write-${SIZE_MB}M-$BS,loop,$round,$w" >>"$raw_loop"
            echo "read-${SIZE_MB}M-$BS,loop,$round,$r" >>"$raw_loop" ;;
        herd-small) read -r w r < <(herd_run "$SMALL_BS") || exit 1
            for f in "$raw_loop" "$raw_rt" "$raw_bound"; do
                echo "write-${SIZE_MB}M-$SMALL_BS,herd,$round,$w" >>"$f"
                echo "read-${SIZE_MB}M-$SMALL_BS,herd,$round,$r" >>"$f"
            done ;;
        singleton-small) read -r w r < <(LAUNCH="" herd_run "$SMALL_BS" singleton) || exit 1
            echo "write-${SIZE_MB}M-$SMALL_BS,singleton,$round,$w" >>"$raw_rt"
            echo "read-${SIZE_MB}M-$SMALL_BS,singleton,$round,$r" >>"$raw_rt" ;;
        bound-small) read -r w r < <(LAUNCH="mpirun -np 1 --bind-to core" herd_run "$SMALL_BS" bound) ||
            exit 1
            echo "write-${SIZE_MB}M-$SMALL_BS,bound,$round,$w" >>"$raw_bound"
            echo "read-${SIZE_MB}M-$SMALL_BS,bound,$round,$r" >>"$raw_bound" ;;
        loop-small) read -r w r < <(peer_run "$small_bytes") || exit 1
            echo "write-${SIZE_MB}M-$SMALL_BS,loop,$round,$w" >>"$raw_loop"
            echo "read-${SIZE_MB}M-$SMALL_BS,loop,$round,$r" >>"$raw_loop" ;;
        esac
        line="$line $who $w/$r"
    done
    say "$line (write/read MiB/s)"
done

say ""
say "herd (smb backend) vs smbclient put/get, same smbd, $FS export, ${SIZE_MB} MiB file, median of $REPEAT"
"$PY" "$HERE/bench_util.py" table "$raw_sc" "$OUT/smb_vs_smbclient.csv" "$TARGET"
say ""
say "the same read vs smbclient get into a tmpfs file (/dev/shm): the bytes land in memory, as herd's"
"$PY" "$HERE/bench_util.py" table "$raw_scf" "$OUT/smb_vs_smbclient_file.csv" "$TARGET"
say ""
say "herd (smb backend) vs a plain libsmbclient loop (smb_copy_peer), same calls, median of $REPEAT"
"$PY" "$HERE/bench_util.py" table "$raw_loop" "$OUT/smb_vs_loop.csv" "$LOOP_TARGET"
if [ -n "$small_bytes" ]; then
    say ""
    say "herd under mpirun -np 1 $MPIRUN_ARGS vs the same job as a singleton start (no mpirun), $SMALL_BS calls, median of $REPEAT"
    "$PY" "$HERE/bench_util.py" table "$raw_rt" "$OUT/smb_runtime.csv" "$LOOP_TARGET"
    say ""
    say "the same vs herd bound to a core (--bind-to core, Open MPI's default at np <= cores)"
    "$PY" "$HERE/bench_util.py" table "$raw_bound" "$OUT/smb_bound.csv" "$LOOP_TARGET"
fi
say "(rates from open to close, login excluded, on every side; smbclient's are the ones it prints;"
say " results in $OUT)"
exit 0
