#!/usr/bin/env bash
# seed002-nfs-smb.sh — seed 002 on this machine: one large file read with
# 64 KiB calls over NFS with 2, 4 and 8 server worker threads and over SMB
# with sendfile on and off, from the same kind of server. (The seed: a NAS
# with one nfsd thread, dd bs=64k of a >1 GB file over NFS at 17 MB/s with
# one core pinned; `rpc.nfsd 4`: 27 MB/s; Samba with `use sendfile = yes`
# 58 MB/s at under 20 % CPU, and crawling like NFS with sendfile off.)
#
# For each variant: start the embedded server (cluster-configs/local/
# nfs-server.sh, an xfs image; SMB variants also run smbd on the same
# export with --smb), run jobs/seed002.ini inside the server's network
# namespace with jobs/herd-batch.sh: RANKS I/O ranks plus one monitor rank
# (monitor_rank = last) sampling ganesha.nfsd's and smbd's CPU, their
# busiest thread and the loop disk every 200 ms. The file (FILE_SIZE, all
# ranks' segments together) is written once per server start and read
# three times. The server is stopped after each run, also on error or ^C.
# Then herd-compare prints the runs side by side (ratio = MiB/s against
# the first variant; its plot is compare/compare.png) and a second table
# gives, per variant and phase, the CPU of the server process that served
# it: ganesha.nfsd for nfs-*, smbd (all its processes) for smb-*.
#
# Variants: nfs-wN (backend libnfs, nfs-server.sh --workers N, ganesha's
# worker pool; ganesha refuses N = 1, also with RPC_Ioq_ThrdMin = 1, so
# the seed's single thread cannot be made: 2 is the fewest; confining
# ganesha to one CPU changed nothing measurable either, see docs/seed002.md)
# and smb-sendfile / smb-nosendfile (backend
# smb, --smb-sendfile yes|no; see cluster-configs/local/README.md).
#
#   jobs/seed002-nfs-smb.sh
#
# Environment:
#   NFS_WORKERS ganesha worker pool sizes, each >= 2 (default "2 4 8";
#               empty: no NFS runs)
#   SMB_SENDFILE  smbd variants, of yes and no (default "yes no"; empty: no SMB runs)
#   RANKS       I/O ranks (default 4); one more rank is the monitor
#   FILE_SIZE   bytes of the one file, all ranks together (default 1G; a
#               multiple of RANKS x 64K)
#   OUT         output directory (default ${HERD_RESULTS:-<repo>/results}/seed002-<date>)
#   HERD, HERD_MPIRUN_ARGS (added after --oversubscribe), HERD_PYTHON: as herd-batch.sh
# Output in OUT: runs/<date>-seed002-<np>r-<variant>/ (herd-batch.sh's
# directories: results.h5, herd.log, launch.txt, report/), <variant>.h5
# (links to them), compare/ (compare.csv, compare.md, compare.png from
# herd-compare -o), server-cpu.csv (the second table) and summary.txt
# (what was printed at the end).
# Needs root (namespaces, loop devices), nfs-ganesha, samba and smbclient
# for the SMB variants (see cluster-configs/local/install.sh) and a herd
# built with libnfs (NFS variants) and libsmbclient (SMB variants).
# Exit code: 0 when every run exited 0 or 3 and the comparison worked,
# 1 otherwise, 2 for bad settings or missing prerequisites.
set -euo pipefail

ME=seed002-nfs-smb.sh
log() { printf '%s: %s\n' "$ME" "$*" >&2; }
bad() { log "$*"; exit 2; }

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HERD=${HERD:-$REPO/build/herd}
SERVER=$REPO/cluster-configs/local/nfs-server.sh
JOB=$REPO/jobs/seed002.ini
NFS_WORKERS=${NFS_WORKERS-2 4 8}
SMB_SENDFILE=${SMB_SENDFILE-yes no}
RANKS=${RANKS:-4}
FILE_SIZE=${FILE_SIZE:-1G}
python=${HERD_PYTHON:-/usr/bin/python3}
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

case "${1:-}" in -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
(($# == 0)) || bad "takes no arguments (settings are environment variables; see --help)"
read -r -a workers <<<"$NFS_WORKERS"
read -r -a sendfiles <<<"$SMB_SENDFILE"
((${#workers[@]} + ${#sendfiles[@]})) || bad "NFS_WORKERS and SMB_SENDFILE are both empty: nothing to run"
for w in "${workers[@]}"; do
    if ! [[ "$w" =~ ^[0-9]+$ ]] || ((w < 2)); then
        bad "NFS_WORKERS: '$w' is not a number >= 2 (ganesha refuses fewer)"
    fi
done
for s in "${sendfiles[@]}"; do
    [[ "$s" == yes || "$s" == no ]] || bad "SMB_SENDFILE: '$s' is not yes or no"
done
[[ "$RANKS" =~ ^[1-9][0-9]*$ ]] || bad "RANKS: '$RANKS' is not a positive integer"
[[ "$FILE_SIZE" =~ ^([1-9][0-9]*)([KMGT]?)$ ]] || bad "FILE_SIZE: '$FILE_SIZE' is not a size like 256M or 1G"
case "${BASH_REMATCH[2]}" in
    "") file_bytes=${BASH_REMATCH[1]} ;;
    K) file_bytes=$((BASH_REMATCH[1] << 10)) ;;
    M) file_bytes=$((BASH_REMATCH[1] << 20)) ;;
    G) file_bytes=$((BASH_REMATCH[1] << 30)) ;;
    T) file_bytes=$((BASH_REMATCH[1] << 40)) ;;
esac
# Every rank's segment is a whole number of 64K calls.
((file_bytes % (RANKS * 65536) == 0)) ||
    bad "FILE_SIZE: $FILE_SIZE is not a multiple of RANKS x 64K ($RANKS x 65536 bytes)"
segment=$((file_bytes / RANKS))
[ "$(id -u)" -eq 0 ] || bad "needs root (the embedded server uses namespaces and loop devices)"
command -v ganesha.nfsd >/dev/null || bad "ganesha.nfsd not found (cluster-configs/local/install.sh installs it)"
[ -x "$HERD" ] || bad "herd binary $HERD not found (build it, or set HERD)"
keys=$("$HERD" keys 2>/dev/null) || bad "$HERD keys failed"
if ((${#workers[@]})); then
    [[ "$keys" == *libnfs* ]] || bad "$HERD has no libnfs backend (NFS variants; NFS_WORKERS= skips them)"
fi
if ((${#sendfiles[@]})); then
    [[ "$keys" == *smb_user* ]] || bad "$HERD has no smb backend (SMB variants; SMB_SENDFILE= skips them)"
    for t in smbd smbclient smbpasswd; do
        command -v "$t" >/dev/null || bad "$t not found (apt-get install samba smbclient; SMB_SENDFILE= skips SMB)"
    done
fi

# The xfs image: the file plus a quarter and 512M for xfs itself, at
# least 1G. It is sparse, but the data lands on TMPDIR's file system.
image_mb=$((file_bytes * 5 / 4 / 1048576 + 512))
((image_mb >= 1024)) || image_mb=1024
tmp=${TMPDIR:-/tmp}
avail_mb=$(($(df --output=avail -B1 "$tmp" | tail -n 1) / 1048576))
((avail_mb > image_mb)) || bad "$tmp has ${avail_mb}M free, the server's image needs ${image_mb}M (smaller FILE_SIZE, or another TMPDIR)"

# smbd keeps unix sockets under STATE/smb (ncalrpc/...), whose paths must fit
# sun_path (108 bytes): measured, a 92-character state directory makes smbd
# exit 1 without a word, 79 works.
if ((${#sendfiles[@]})) && ((${#tmp} + 19 > 80)); then
    bad "TMPDIR $tmp is too long for smbd's sockets under the server's state directory (at most 61 characters)"
fi

# shellcheck source=jobs/lib-embedded.sh
. "$REPO/jobs/lib-embedded.sh"
embedded_begin seed002

# seed002_run NAME PROTO "SERVER START OPTIONS": as lib-embedded.sh's
# embedded_run, for either protocol: PROTO nfs runs over libnfs on the
# URL of line 1, smb over libsmbclient on line 3 as user herd with the
# server's password file (never on a command line). The results become
# $out/NAME.h5 (added to links); a failure sets failed=1.
# shellcheck disable=SC2154,SC2034 # out, state, links, failed: lib-embedded.sh's
seed002_run() {
    local name=$1 proto=$2 server_opts=$3 started loopdev
    local sets=()
    # A short name: Samba's sockets live under the state directory (see below).
    state=$(mktemp -d "$tmp/herd-seed002.XXXXXX")
    # shellcheck disable=SC2086 # server_opts are separate words
    started=$("$SERVER" start --state "$state" --fs xfs --size "${image_mb}M" $server_opts) ||
        { log "nfs-server.sh start $server_opts failed"; exit 1; }
    if [ "$proto" = nfs ]; then
        sets=(--set backend=libnfs --set target="$(sed -n 1p <<<"$started")")
    else
        sets=(--set backend=smb --set target="$(sed -n 3p <<<"$started")"
            --set smb_user=herd --set smb_password_file="$state/smb/password")
    fi
    [[ "${sets[3]}" == target=?* ]] || { log "nfs-server.sh start printed no $proto URL"; exit 1; }
    loopdev=$(losetup -j "$state/image.img" | cut -d: -f1 | sed -n 1p)
    [ -z "$loopdev" ] || sets+=(--set monitor_disks="${loopdev##*/}")
    log "$name: ${sets[3]#target=}"
    embedded_batch "$name" "${sets[@]}" --set file_size="$segment" \
        --set monitor_processes=ganesha.nfsd,smbd
}

variants=()
for w in "${workers[@]}"; do variants+=("nfs-w$w"); done
for s in "${sendfiles[@]}"; do
    if [ "$s" = yes ]; then variants+=(smb-sendfile); else variants+=(smb-nosendfile); fi
done
log "seed 002: one ${FILE_SIZE} file, $RANKS ranks x $((segment >> 20))M segments, 64K calls;" \
    "variants ${variants[*]}; results in $out"
for w in "${workers[@]}"; do
    seed002_run "nfs-w$w" nfs "--workers $w"
done
for s in "${sendfiles[@]}"; do
    name=smb-sendfile
    [ "$s" = yes ] || name=smb-nosendfile
    seed002_run "$name" smb "--smb --smb-sendfile $s"
done

# Per variant and phase: MiB/s, ratio to the first variant, and the CPU of
# the process that served it (embedded_finish calls it).
# shellcheck disable=SC2317
server_per_variant() {
    echo
    echo "server CPU per variant (cpu: cores busy, mean over the phase; busiest: its busiest thread, max, 1.0 = a core pinned; procs: processes)"
    REPO=$REPO "$python" - "$out/server-cpu.csv" "${links[@]}" <<'EOF'
import csv, os, sys
sys.path.insert(0, os.path.join(os.environ["REPO"], "analysis"))
import herd_results
SERVES = {"libnfs": "ganesha.nfsd", "smb": "smbd"}
rows, ref = [], {}
for path in sys.argv[2:]:
    label = os.path.basename(path)[:-3]
    with herd_results.load(path) as run:
        procs = run.processes()
        for _, ph in run.phases.iterrows():
            backend = run.phase_attrs(ph["phase"]).get("backend", "")
            backend = backend.decode() if isinstance(backend, bytes) else str(backend)
            name = SERVES.get(backend, "?")
            p = procs[procs["name"] == name] if len(procs) else procs
            p = herd_results.meeting(p, ph["t_start"], ph["t_end"]) if len(p) else p
            mib = float(ph["mib_per_s"])
            base = ref.setdefault(ph["phase"], mib)
            rows.append({"variant": label, "phase": ph["phase"], "server": name,
                         "mib_per_s": f"{mib:.1f}", "ratio": f"{mib / base:.2f}" if base else "-",
                         "cpu": f"{p['cpu'].mean():.2f}" if len(p) else "-",
                         "busiest": f"{p['cpu_max_thread'].max():.2f}" if len(p) else "-",
                         "procs": f"{p['processes'].max():.0f}" if len(p) else "-",
                         "threads": f"{p['threads'].max():.0f}" if len(p) else "-"})
with open(sys.argv[1], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
print(f"{'variant':16} {'phase':6} {'server':13} {'MiB/s':>9} {'ratio':>6} {'cpu':>6} {'busiest':>8} {'procs':>6} {'threads':>8}")
for r in sorted(rows, key=lambda r: r["phase"] != "read"):
    print(f"{r['variant']:16} {r['phase']:6} {r['server']:13} {r['mib_per_s']:>9} {r['ratio']:>6} "
          f"{r['cpu']:>6} {r['busiest']:>8} {r['procs']:>6} {r['threads']:>8}")
EOF
}

embedded_finish "seed 002, one $FILE_SIZE file read by $RANKS ranks with 64K calls: ${variants[*]} (ratio = MiB/s vs ${variants[0]})" \
    server_per_variant
