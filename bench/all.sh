#!/usr/bin/env bash
# all.sh — one command for the quick version of every herd-vs-plain-peer
# benchmark, and one table at the end. Each script runs with its own OUT,
# $OUT/all/<script> (replaced on every run), and small quick settings
# (QUICK=1, see quick() below; QUICK=0: the scripts' own defaults). Rows:
#   posix          core_vs_fio.sh: write and read np=1,2 vs fio (psync);
#                  md5 np=1 vs openssl speed
#   libnfs         nfs_vs_nfscp.sh: write and read vs nfs-cp; at in-flight
#                  1/16/64 vs bench/nfs_async_peer.c; herd's default vs the
#                  loop's best window (the one with the best median)
#   smb            smb_vs_smbclient.sh, twice: BS=8M SMALL_BS=64K (8M vs
#                  smbclient; 8M and 64K vs bench/smb_copy_peer.c) and
#                  BS=1M SMALL_BS= (1M vs the loop; its smbclient rows,
#                  8M requests against herd's 1M, are left out), and the
#                  same with CLIENT_CPUS=0 (herd and the loop on one CPU:
#                  the scheduler's placement next to smbd taken out)
#   meta           meta_vs_mdtest.sh: create/stat/removal np=1,2 vs mdtest
#                  (SKIP with the reason when there is no mdtest);
#                  meta_vs_fio.sh: tmpfs and xfs create/stat/unlink np=1,2
#                  vs fio's filecreate/filestat/filedelete
#   libnfs meta    nfs_meta_vs_peer.sh: create/stat/removal over NFSv3 and
#                  NFSv4 at one rank vs bench/nfs_meta_peer.c (plain
#                  libnfs calls by path)
#   lock (libnfs)  locks.sh NFS=only: NLM (v3) and NFSv4 lock/unlock pairs,
#                  1 lock rank alone (one process, no monitor rank) vs
#                  bench/nfs_lock_peer.c; and herd with its monitor rank
#                  vs alone (what the monitor costs on the same CPUs)
# Every row: herd median (min-max), the peer's, unit, herd/peer and a
# verdict against FLOOR (0.95) and GOAL (1.0): "ok" >= GOAL, "within floor"
# >= FLOOR, "BELOW" under it. A script that skips (a tool missing, exit 2)
# or fails gives a SKIP or FAILED row with its reason and the others still
# run. The table (bench_util.py all) is also written as $OUT/all/summary.csv
# and $OUT/all/summary.md. ~11 minutes on 2 CPUs with QUICK=1. Needs root
# (as another user it says SKIP and exits 0); exits 0 unless a run failed
# (exit 1), whatever the numbers: it is a benchmark, not a test. See
# bench/README.md.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")

QUICK=${QUICK:-1}               # 1: the quick settings below; 0: the scripts' defaults
FLOOR=${FLOOR:-0.95}            # herd/peer under this: BELOW
GOAL=${GOAL:-1.0}               # herd/peer at or above this: ok
SCRIPTS=${SCRIPTS:-"core_vs_fio nfs_vs_nfscp smb_vs_smbclient meta_vs_mdtest meta_vs_fio nfs_meta_vs_peer locks"}
OUT=${OUT:-./bench-results}
HERD=${HERD:-$ROOT/build/herd}

# shellcheck disable=SC2034 # read by lib.sh
BENCH=all
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

bench_require_root "the scripts it runs mount file systems and start servers in namespaces."
bench_require # a python3 with h5py (PY) and the herd binary; each script checks its own tools
case $QUICK in 0 | 1) ;; *) warn "QUICK must be 0 or 1"; exit 2 ;; esac
for v in "$FLOOR" "$GOAL"; do
    [[ $v =~ ^[0-9]+([.][0-9]+)?$ ]] || { warn "FLOOR and GOAL must be numbers"; exit 2; }
done
for s in $SCRIPTS; do
    case $s in
    core_vs_fio | nfs_vs_nfscp | smb_vs_smbclient | meta_vs_mdtest | meta_vs_fio | nfs_meta_vs_peer | locks) ;;
    *) warn "SCRIPTS: unknown script '$s'"; exit 2 ;;
    esac
done

mkdir -p "$OUT/all" || { warn "cannot create $OUT/all"; exit 2; }
ALL=$(cd "$OUT/all" && pwd)
STATUS=$ALL/status.tsv
: >"$STATUS"
trap 'warn interrupted; exit 130' INT
trap 'warn terminated; exit 143' TERM

# quick SCRIPT: its quick settings, one VAR=VALUE a line. REPEAT >= 5
# rounds everywhere (alternating, medians, ranges), small sizes; 7 for
# the NFS and SMB transfers, whose single 256 MiB runs range over 1.5-2x
# on 2 CPUs shared with the server, and 2 s lock runs.
quick() {
    case $1 in
    core_vs_fio) printf '%s\n' REPEAT=5 WARMUP=1 SIZE=256M READ_LOOPS=2 MD5_SIZE=256M \
        OPENSSL_SECONDS=1 ;;
    nfs_vs_nfscp) printf '%s\n' REPEAT=7 SIZE_MB=256 ;;
    smb_vs_smbclient) printf '%s\n' REPEAT=7 SIZE_MB=256 ;;
    meta_vs_mdtest) printf '%s\n' REPEAT=5 WARMUP=1 FILES=50000 ;;
    meta_vs_fio) printf '%s\n' REPEAT=5 WARMUP=1 FILES=20000 XFS_SIZE=1G ;;
    nfs_meta_vs_peer) printf '%s\n' REPEAT=5 FILES=2000 ;;
    locks) printf '%s\n' REPEAT=5 NFS_RANKS=1 NFS_SECONDS=2 ;;
    esac
}

# run NAME SCRIPT PART [VAR=VALUE...]: bench/SCRIPT.sh with OUT=$ALL/NAME,
# the given settings (always: they say what the run is), and with QUICK=1
# the quick settings that the environment does not set (REPEAT=3
# bench/all.sh runs every script with 3 rounds). PART tells the collector
# which of the results to take (empty: all). Appends a line to STATUS,
# with the settings the run got (the quick knobs that came from the
# environment marked "(env)").
run() {
    local name=$1 script=$2 part=$3 dir=$ALL/$1 kv var t0 rc
    shift 3
    local settings=("$@") noted=("$@")
    while IFS= read -r kv; do
        var=${kv%%=*}
        if [ -n "${!var+x}" ]; then # set in the environment: it wins
            noted+=("$var=${!var}(env)")
        elif [ "$QUICK" = 1 ]; then
            settings+=("$kv")
            noted+=("$kv")
        fi
    done < <(quick "$script")
    rm -rf "${dir:?}"
    mkdir -p "$dir"
    say ""
    say "=== $script.sh ($name): ${noted[*]:-defaults}, OUT=$dir"
    t0=$(date +%s)
    env "${settings[@]}" OUT="$dir" "$HERE/$script.sh" 2>&1 | tee "$dir/run.log"
    rc=${PIPESTATUS[0]}
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$script" "$dir" "$rc" \
        $(($(date +%s) - t0)) "$part" "${noted[*]}" >>"$STATUS"
    say "=== $script.sh ($name): exit $rc after $(($(date +%s) - t0)) s"
}

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "kernel: $(uname -r)"
    echo "nproc: $(nproc)"
    echo "cpu: $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
    echo "git: $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)"
    echo "quick: $QUICK"
    echo "scripts: $SCRIPTS"
} >"$ALL/env.txt"
cat "$ALL/env.txt"

for s in $SCRIPTS; do
    case $s in
    smb_vs_smbclient)
        run "$s/bs8M" "$s" "" BS=8M SMALL_BS=64K
        run "$s/bs1M" "$s" loop BS=1M SMALL_BS=
        run "$s/bs1M-pinned" "$s" pinned BS=1M SMALL_BS= CLIENT_CPUS=0 ;;
    locks) run "$s" "$s" "" NFS=only ;;
    *) run "$s" "$s" "" ;;
    esac
done

say ""
"$PY" "$HERE/bench_util.py" all "$ALL" "$FLOOR" "$GOAL"
