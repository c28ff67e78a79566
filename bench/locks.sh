#!/usr/bin/env bash
# locks.sh — herd's lock workload (kind = lock) on a private tmpfs: how many
# exclusive whole-file locks all ranks together get per second, with 2, 8
# and 20 ranks (RANKS), and how that scales with the rank count:
#   * blocking:    lock_wait = blocking (F_SETLKW), every attempt a grant;
#   * nonblocking: lock_wait = nonblocking (F_SETLK) for NB_DURATION; a
#     refused attempt counts as contention, so the contention ratio is
#     refused / attempts. (By time, not count: a rank that is refused burns
#     a count in milliseconds and leaves the others to lock alone.)
# Exclusive, whole file, lock_hold = 0 (the smallest allowed). Every grant
# also writes and reads back herd's 16-byte token (the mutual-exclusion
# check). No peer tool for this exists in Debian, so there is no ratio and
# no PASS/FAIL: the table shows the medians of REPEAT runs and the scaling
# against the smallest rank count. See bench/README.md. Needs root (it
# mounts a tmpfs; as another user it says SKIP and exits 0); exits 0
# whatever the results, 2 when a tool is missing or a setting is wrong.
#
# NFS=yes (after the tmpfs part) or NFS=only (instead of it): the same
# exclusive whole-file blocking locks over NFS with backend = libnfs, on
# the embedded server (cluster-configs/local/nfs-server.sh, started here
# and stopped at the end, also on ^C): NLM (NFSv3) and NFSv4 LOCK/LOCKU,
# at NFS_RANKS lock ranks for NFS_SECONDS each, plus a monitor rank
# (monitor_rank = last, monitor_processes = ganesha.nfsd) whose
# summary_cpu_mean is the server's CPU during the phase; and the peer,
# bench/nfs_lock_peer.c (one process, plain libnfs, the calls of one
# herd grant), on the same server for NFS_SECONDS: herd/peer at 1 rank,
# target >= NFS_TARGET (0.9). Needs also nfs-ganesha, rpcbind, nfs-common,
# libnfs-dev (pkg-config libnfs), cc, and a herd built with libnfs.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")

REPEAT=${REPEAT:-5}             # measured runs per rank count
WARMUP=${WARMUP:-1}             # unmeasured runs first; they also size COUNT (see MIN_SECONDS)
RANKS=${RANKS:-"2 8 20"}        # rank counts
GRANTS=${GRANTS:-20000}         # blocking: grants, all ranks together (count = GRANTS / ranks)
MIN_SECONDS=${MIN_SECONDS:-1}   # after the warm-up, raise the count so it lasts >= 1.5 x this
NB_DURATION=${NB_DURATION:-2}   # nonblocking: seconds every rank keeps trying
LOCK_HOLD=${LOCK_HOLD:-0}       # herd lock_hold
OUT=${OUT:-./bench-results/locks}
HERD=${HERD:-$ROOT/build/herd}
MPIRUN_ARGS=${MPIRUN_ARGS-"--bind-to none"} # mpirun pins ranks only when np <= cores: never pin
NFS=${NFS:-no}                  # no | yes (tmpfs, then NFS) | only (NFS alone)
NFS_RANKS=${NFS_RANKS:-"1 8 20"} # lock ranks over NFS (a monitor rank comes on top)
NFS_SECONDS=${NFS_SECONDS:-3}   # seconds per NFS run (herd phase duration, the peer's loop)
NFS_TARGET=${NFS_TARGET:-0.9}   # herd/peer at 1 rank should be at least this

BENCH=locks
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

# ---- preconditions --------------------------------------------------------
bench_require_root "it mounts (and unmounts) a private tmpfs."
bench_require mpirun:openmpi-bin mount:mount umount:mount
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || { warn "REPEAT must be a positive integer"; exit 2; }
[[ $WARMUP =~ ^[0-9]+$ ]] || { warn "WARMUP must be a non-negative integer"; exit 2; }
[[ $GRANTS =~ ^[1-9][0-9]*$ ]] || { warn "GRANTS must be a positive integer"; exit 2; }
[[ $MIN_SECONDS =~ ^[0-9]+([.][0-9]+)?$ ]] || { warn "MIN_SECONDS must be a number"; exit 2; }
[[ $NB_DURATION =~ ^[0-9]+([.][0-9]+)?$ ]] || { warn "NB_DURATION must be a number"; exit 2; }
for n in $RANKS; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || { warn "bad RANKS entry '$n'"; exit 2; }
done
case $NFS in no | yes | only) ;; *) warn "NFS must be no, yes or only"; exit 2 ;; esac
if [ "$NFS" != no ]; then
    bench_require ganesha.nfsd:nfs-ganesha rpcbind:rpcbind rpc.statd:nfs-common \
        pkg-config:pkg-config cc:gcc
    pkg-config --exists libnfs || { warn "libnfs-dev (pkg-config libnfs) is missing"; exit 2; }
    [[ $NFS_SECONDS =~ ^[0-9]+([.][0-9]+)?$ ]] || { warn "NFS_SECONDS must be a number"; exit 2; }
    for n in $NFS_RANKS; do
        [[ $n =~ ^[1-9][0-9]*$ ]] || { warn "bad NFS_RANKS entry '$n'"; exit 2; }
    done
fi

bench_workspace
bench_tmpfs "size=64M,mode=0755"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

UTIL=$WORK/lock_util.py
cat >"$UTIL" <<'PYEOF'
"""Helpers for locks.sh."""
import csv
import statistics
import sys


def die(msg):
    sys.stderr.write("lock_util: %s\n" % msg)
    sys.exit(1)


def s(v):
    return v.decode() if isinstance(v, bytes) else str(v)


# herd RESULTS.h5 PHASE NRANKS COUNT: prints
#   grants_s attempts_s contention seconds hold_us lock_us
# grants_s = sum(grants) / (max(t_end) - phase t_start); contention =
# refused / attempts; hold_us = mean of the holds table's released -
# granted; lock_us = mean seconds per lock/unlock call (ops table).
def cmd_herd(path, phase, nranks, count):
    import h5py
    nranks, count = int(nranks), int(count)
    with h5py.File(path, "r") as f:
        g = f.get("/phases/%s" % phase)
        if g is None:
            die("%s: no phase %s" % (path, phase))
        status = s(g.attrs.get("status", ""))
        rows = g["ranks"][()]
        errors, viol = int(rows["errors"].sum()), int(rows["violations"].sum())
        if status != "ok" or errors or viol:
            die("%s: %s: status %s, %d errors, %d violations" % (path, phase, status, errors,
                                                                 viol))
        if len(rows) != nranks:
            die("%s: %s: %d rows, expected %d" % (path, phase, len(rows), nranks))
        t0 = float(g.attrs["t_start"])
        secs = float(rows["t_end"].max()) - t0
        grants = int(rows["grants"].sum())
        contended = int(rows["contended"].sum())
        attempts = grants + contended
        if count and attempts != nranks * count:
            die("%s: %s: %d attempts, expected %d" % (path, phase, attempts, nranks * count))
        if secs <= 0 or grants == 0:
            die("%s: %s: no grants or non-positive duration" % (path, phase))
        holds = g["holds"][()]
        hold = float((holds["released"] - holds["granted"]).mean()) if len(holds) else 0.0
        lk_n, lk_s = 0, 0.0
        for r in g["ops"][()]:
            if s(r["op"]) == "lock":
                lk_n += int(r["count"])
                lk_s += float(r["seconds"])
        ends = sorted(float(x) - t0 for x in rows["t_end"])
        sys.stderr.write("lock_util: %s: %d grants, %d refused, %.4f s; rank ends +%.4f .. +%.4f"
                         " (median %.4f); mean hold %.1f us; %d lock calls, mean %.1f us;"
                         " max_holders %s\n" % (
                             phase, grants, contended, secs, ends[0], ends[-1],
                             statistics.median(ends), hold * 1e6, lk_n,
                             lk_s / lk_n * 1e6 if lk_n else 0, g.attrs.get("max_holders", "?")))
        print("%.1f %.1f %.4f %.4f %.1f %.1f" % (
            grants / secs, attempts / secs, contended / attempts, secs, hold * 1e6,
            lk_s / lk_n * 1e6 if lk_n else 0.0))


# cpu RESULTS.h5 PHASE: the phase's summary_cpu_mean (the monitored
# host's busy fraction, herd's own ranks included on one machine) and the
# mean CPU of ganesha.nfsd in cores over the monitor's samples inside the
# phase (/monitor/processes); nan when missing.
def cmd_cpu(path, phase):
    import h5py
    with h5py.File(path, "r") as f:
        g = f["/phases/%s" % phase]
        t0, t1 = float(g.attrs["t_start"]), float(g["ranks"][()]["t_end"].max())
        host = float(g.attrs.get("summary_cpu_mean", float("nan")))
        cores = [float(r["cpu"]) for r in (f["/monitor/processes"][()] if
                                          "/monitor/processes" in f else [])
                 if s(r["name"]) == "ganesha.nfsd" and t0 <= float(r["t"]) <= t1]
        print("%.3f %.3f" % (host, sum(cores) / len(cores) if cores else float("nan")))


def med(xs):
    return statistics.median(xs) if xs else None


def cmd_table(raw, out):
    order, data = [], {}
    with open(raw) as fh:
        for r in csv.DictReader(fh):
            n = int(r["ranks"])
            if n not in data:
                order.append(n)
                data[n] = {}
            for k, v in r.items():
                if k in ("ranks", "round", "count") or v == "":
                    continue
                try:
                    data[n].setdefault(k, []).append(float(v))
                except ValueError:
                    pass
            data[n]["count"] = r["count"]
    base = None
    rows = []
    for n in order:
        d = data[n]
        g = med(d.get("blk_grants_s", []))
        if base is None and g:
            base = (n, g)
        row = {
            "ranks": n,
            "count_per_rank": d.get("count", ""),
            "blocking_grants_s": "" if g is None else "%.0f" % g,
            "scaling_vs_np%d" % order[0]: "" if not (g and base) else "%.2f" % (g / base[1]),
            "blocking_seconds": "%.3f" % med(d["blk_seconds"]) if d.get("blk_seconds") else "",
            "blocking_hold_us": "%.1f" % med(d["blk_hold_us"]) if d.get("blk_hold_us") else "",
            "blocking_range": "" if not d.get("blk_grants_s") else "%.0f-%.0f" % (
                min(d["blk_grants_s"]), max(d["blk_grants_s"])),
            "nonblocking_grants_s": "%.0f" % med(d["nb_grants_s"]) if d.get("nb_grants_s") else "",
            "nonblocking_attempts_s": "%.0f" % med(d["nb_attempts_s"])
            if d.get("nb_attempts_s") else "",
            "contention_ratio": "%.3f" % med(d["nb_contention"]) if d.get("nb_contention") else "",
            "nonblocking_seconds": "%.3f" % med(d["nb_seconds"]) if d.get("nb_seconds") else "",
            "nonblocking_hold_us": "%.1f" % med(d["nb_hold_us"]) if d.get("nb_hold_us") else "",
            "n": len(d.get("blk_grants_s", [])),
        }
        rows.append(row)
    fields = list(rows[0].keys()) if rows else ["ranks"]
    with open(out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    sc = "scaling_vs_np%d" % order[0] if order else ""
    fmt = "%5s %7s | %10s %7s %6s %8s %13s | %10s %11s %10s %8s %6s | %s"
    print(fmt % ("ranks", "count", "grants/s", "x np%s" % (order[0] if order else ""),
                 "secs", "hold us", "range", "nb grant/s", "nb tries/s", "contention",
                 "nb hold us", "nb s", "n"))
    print("-" * 120)
    for r in rows:
        print(fmt % (r["ranks"], r["count_per_rank"], r["blocking_grants_s"] or "-",
                     r[sc] or "-", r["blocking_seconds"] or "-", r["blocking_hold_us"] or "-",
                     r["blocking_range"] or "-", r["nonblocking_grants_s"] or "-",
                     r["nonblocking_attempts_s"] or "-", r["contention_ratio"] or "-",
                     r["nonblocking_hold_us"] or "-", r["nonblocking_seconds"] or "-", r["n"]))


def main(argv):
    cmds = {"herd": (cmd_herd, 4), "table": (cmd_table, 2), "cpu": (cmd_cpu, 2)}
    if len(argv) < 2 or argv[1] not in cmds or len(argv) - 2 != cmds[argv[1]][1]:
        die("usage: herd H5 PHASE NRANKS COUNT | table RAW OUT | cpu H5 PHASE")
    try:
        cmds[argv[1]][0](*argv[2:])
    except (KeyError, OSError, ValueError) as e:
        die("%s: %s" % (argv[1], e))


if __name__ == "__main__":
    main(sys.argv)
PYEOF
U() { "$PY" "$UTIL" "$@"; }

# One herd run with N ranks: a blocking phase of BC attempts per rank, then
# a nonblocking one of NB_DURATION. Prints "BLOCKING_FIELDS|NONBLOCKING_FIELDS".
herd_locks() {
    local n=$1 bc=$2 job=$WORK/locks.ini h5=$WORK/locks.h5
    local log=$LOGS/herd-np$1-$3.log b nb
    cat >"$job" <<EOF
[global]
target = $MNT
run_id = bench
sharing = shared
file_size = 4K
block_size = 4K
lock_mode = exclusive
lock_range = whole
lock_hold = $LOCK_HOLD

[blocking]
kind = lock
lock_wait = blocking
count = $bc

[nonblocking]
kind = lock
lock_wait = nonblocking
duration = $NB_DURATION
EOF
    rm -rf "${MNT:?}"/* 2>/dev/null
    # shellcheck disable=SC2086
    if ! mpirun --oversubscribe -np "$n" $MPIRUN_ARGS "$HERD" run "$job" -o "$h5" --force \
        >"$log" 2>&1; then
        warn "herd failed (np=$n), see $log"
        return
    fi
    b=$(U herd "$h5" blocking "$n" "$bc" 2>>"$log") &&
        nb=$(U herd "$h5" nonblocking "$n" 0 2>>"$log") &&
        echo "$b|$nb" || warn "herd results unusable (np=$n), see $log"
}

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -n) kernel $(uname -r)"
    echo "cpu: $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), $(nproc) online"
    echo "mem: $(awk '/^MemTotal:/ {print $2 " kB"}' /proc/meminfo)"
    echo "herd: $HERD ($("$HERD" --version 2>&1 | head -1))"
    echo "mpirun: $(mpirun --version 2>&1 | head -1)"
    echo "params: REPEAT=$REPEAT WARMUP=$WARMUP RANKS='$RANKS' GRANTS=$GRANTS" \
        "MIN_SECONDS=$MIN_SECONDS NB_DURATION=$NB_DURATION LOCK_HOLD=$LOCK_HOLD MPIRUN_ARGS='$MPIRUN_ARGS'"
    echo "tmpfs: $MNT"
    echo "load at start: $(cat /proc/loadavg)"
} >"$OUT/env.txt"
cat "$OUT/env.txt"
say ""
say "exclusive whole-file locks on one shared file, lock_hold = $LOCK_HOLD;" \
    "blocking then nonblocking phase per run"
say "runs: $WARMUP warm-up + $REPEAT measured per rank count"
say ""

echo "ranks,round,count,blk_grants_s,blk_seconds,blk_hold_us,blk_lock_us,nb_grants_s,nb_attempts_s,nb_contention,nb_seconds,nb_hold_us,load1" >"$RAW"

declare -A BC
for n in $RANKS; do
    BC[$n]=$(((GRANTS + n - 1) / n))
done

# Count for a phase that took SECS with COUNT attempts per rank: at least
# 1.5 x MIN_SECONDS long, never smaller than before.
resize() {
    awk -v c="$1" -v s="$2" -v m="$MIN_SECONDS" 'BEGIN {
        want = (s > 0 && s < 1.5 * m) ? int(c * 1.5 * m / s) + 1 : c
        print (want > c ? want : c) }'
}

# ---- NFS (NFS=yes|only) ---------------------------------------------------
SERVER=$ROOT/cluster-configs/local/nfs-server.sh
NFS_STATE=$WORK/nfs-server

# The embedded server goes with the workspace: stopped first, at any exit
# (^C too: the INT/TERM traps exit, which runs this).
# shellcheck disable=SC2317 # reached through the trap
nfs_cleanup() {
    [ -e "$NFS_STATE" ] && "$SERVER" stop --state "$NFS_STATE" >>"$LOGS/nfs-server.log" 2>&1
    bench_cleanup
}

# herd_nfs V N LABEL: one herd run over NFSv V with N lock ranks and a
# monitor rank; prints "grants_s cpu_mean cpu_max lock_us" or nothing.
herd_nfs() {
    local v=$1 n=$2 job=$WORK/nfs-locks.ini h5=$WORK/nfs-locks.h5
    local log=$LOGS/herd-nfs-v$1-np$2-$3.log r c
    cat >"$job" <<JOB
[global]
backend = libnfs
target = $NFS_URL?version=$v
run_id = bench-nfs
sharing = shared
fileset = locks
file_size = 4K
block_size = 4K
op_timeout = 10
lock_mode = exclusive
lock_range = whole
lock_hold = $LOCK_HOLD
monitor_rank = last
monitor_processes = ganesha.nfsd

[blocking]
kind = lock
lock_wait = blocking
duration = $NFS_SECONDS
JOB
    # shellcheck disable=SC2086
    if ! "$SERVER" exec --state "$NFS_STATE" -- mpirun --oversubscribe -np $((n + 1)) \
        $MPIRUN_ARGS "$HERD" run "$job" -o "$h5" --force >"$log" 2>&1; then
        warn "herd over NFSv$v failed (np=$n), see $log"
        return
    fi
    r=$(U herd "$h5" blocking "$n" 0 2>>"$log") && c=$(U cpu "$h5" blocking 2>>"$log") &&
        read -r g _ _ _ _ l <<<"$r" && echo "$g $c $l" ||
        warn "herd results unusable (NFSv$v np=$n), see $log"
}

# peer_nfs V LABEL: the peer for NFS_SECONDS; prints its pairs/s or nothing.
peer_nfs() {
    local log=$LOGS/peer-nfs-v$1-$2.log
    if "$SERVER" exec --state "$NFS_STATE" -- "$WORK/nfs_lock_peer" "$NFS_BASE" "$1" \
        peer.dat "$NFS_SECONDS" >"$log" 2>&1; then
        awk '/^pairs / { print $6 }' "$log"
    else
        warn "nfs_lock_peer over NFSv$1 failed, see $log"
    fi
}

nfs_section() {
    local v n round res g cm cx l p raw=$OUT/nfs-raw.csv csv=$OUT/nfs-results.csv
    # shellcheck disable=SC2046 # pkg-config's words are separate arguments
    cc -std=gnu11 -O2 -Wall -o "$WORK/nfs_lock_peer" "$HERE/nfs_lock_peer.c" \
        $(pkg-config --cflags --libs libnfs) 2>"$LOGS/peer-cc.log" ||
        { warn "cc nfs_lock_peer.c failed, see $LOGS/peer-cc.log"; return 1; }
    trap nfs_cleanup EXIT
    "$SERVER" start --state "$NFS_STATE" >"$WORK/nfs-start" 2>"$LOGS/nfs-server.log" ||
        { warn "nfs-server.sh start failed, see $LOGS/nfs-server.log"; return 1; }
    NFS_URL=$(sed -n '1s/?.*//p' "$WORK/nfs-start")   # nfs://127.0.0.1/.../export
    NFS_BASE=$NFS_URL
    say ""
    say "NFS: embedded ganesha (pid $(sed -n 2p "$WORK/nfs-start")), $NFS_URL;" \
        "$NFS_SECONDS s per run, lock_hold = $LOCK_HOLD, + 1 monitor rank; peer: nfs_lock_peer"
    echo "proto,lock_ranks,round,herd_pairs_s,host_busy,ganesha_cores,lock_us,peer_pairs_s" >"$raw"
    for ((round = 1; round <= REPEAT; round++)); do
        for v in 3 4; do
            local line="round $round NFSv$v:"
            p=$(peer_nfs "$v" "$round")
            echo "v$v,peer,$round,,,,,$p" >>"$raw"
            line+=" peer ${p%.*}/s;"
            for n in $NFS_RANKS; do
                res=$(herd_nfs "$v" "$n" "$round")
                read -r g cm cx l <<<"$res"
                echo "v$v,$n,$round,${g:-},${cm:-},${cx:-},${l:-}," >>"$raw"
                line+=" np=$n ${g%.*}/s (ganesha ${cx:--} cores, host busy ${cm:--});"
            done
            say "$line"
        done
    done
    "$PY" - "$raw" "$csv" "$NFS_TARGET" <<'PYEOF'
import csv, statistics, sys
raw, out, target = sys.argv[1], sys.argv[2], float(sys.argv[3])
d = {}
for r in csv.DictReader(open(raw)):
    for k in ("herd_pairs_s", "host_busy", "ganesha_cores", "lock_us", "peer_pairs_s"):
        if r[k] not in ("", "nan"):
            d.setdefault((r["proto"], r["lock_ranks"], k), []).append(float(r[k]))
med = lambda p, n, k: statistics.median(d[(p, n, k)]) if (p, n, k) in d else None
rows, ok = [], True
print("%-5s %10s | %12s %9s %7s %9s %13s %8s | %s" % ("proto", "lock ranks", "pairs/s",
      "lock us", "ganesha", "host busy", "(range)", "herd/peer", "n"))
print("-" * 90)
for proto, label in (("v3", "NLM"), ("v4", "NFSv4")):
    peer = med(proto, "peer", "peer_pairs_s")
    print("%-5s %10s | %12s %9s %7s %9s %13s %8s | %d" % (
        proto, "peer (1)", "-" if peer is None else "%.0f" % peer, "-", "-", "-", "-", "-",
        len(d.get((proto, "peer", "peer_pairs_s"), []))))
    for n in sorted({k[1] for k in d if k[0] == proto and k[1] != "peer"}, key=int):
        g, cpu, gan, lk = (med(proto, n, k) for k in ("herd_pairs_s", "host_busy", "ganesha_cores",
                                                      "lock_us"))
        xs = d.get((proto, n, "herd_pairs_s"), [])
        ratio = g / peer if g and peer and n == "1" else None
        if n == "1":
            ok = ok and ratio is not None and ratio >= target
        rows.append({"proto": proto, "lock_ranks": n, "herd_pairs_s": "%.0f" % g if g else "",
                     "lock_us": "%.0f" % lk if lk else "",
                     "host_busy": "%.3f" % cpu if cpu is not None else "",
                     "ganesha_cores": "%.3f" % gan if gan is not None else "",
                     "peer_pairs_s": "%.0f" % peer if peer else "",
                     "herd_over_peer": "%.2f" % ratio if ratio else "", "n": len(xs)})
        print("%-5s %10s | %12s %9s %7s %9s %13s %8s | %d" % (
            proto, n, "%.0f" % g if g else "-", "%.0f" % lk if lk else "-",
            "%.2f" % gan if gan is not None else "-", "%.2f" % cpu if cpu is not None else "-",
            "%.0f-%.0f" % (min(xs), max(xs)) if xs else "-",
            "%.2f" % ratio if ratio else "-", len(xs)))
with open(out, "w", newline="") as fh:
    w = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else ["proto"])
    w.writeheader()
    w.writerows(rows)
print("herd/peer at 1 lock rank %s target %.2f: %s" % (">=" if ok else "below", target,
                                                      "PASS" if ok else "FAIL"))
PYEOF
    say "pairs/s: lock/unlock pairs per second, all lock ranks together (medians of $REPEAT);"
    say "lock us: mean lock call (whole wait); ganesha: its CPU in cores (/monitor/processes);"
    say "host busy: the phase's summary_cpu_mean (whole host, herd's ranks included)."
    say "results: $csv (raw: $raw, logs: $LOGS)"
    "$SERVER" stop --state "$NFS_STATE" >>"$LOGS/nfs-server.log" 2>&1 ||
        warn "nfs-server.sh stop failed, see $LOGS/nfs-server.log"
}

if [ "$NFS" = only ]; then
    nfs_section
    exit 0
fi

total=$((WARMUP + REPEAT))
for ((round = 1; round <= total; round++)); do
    if [ "$round" -le "$WARMUP" ]; then label=warmup$round; else label=$((round - WARMUP)); fi
    line="round $label:"
    for n in $RANKS; do
        res=$(herd_locks "$n" "${BC[$n]}" "$label")
        if [ -z "$res" ]; then
            line+=" np=$n ERR;"
            [ "$round" -gt "$WARMUP" ] && echo "$n,$label,${BC[$n]},,,,,,,,,,$(cut -d' ' -f1 /proc/loadavg)" >>"$RAW"
            continue
        fi
        read -r bg _ _ bs bh bl <<<"${res%%|*}"
        read -r ng na nr ns nh _ <<<"${res##*|}"
        line+=" np=$n ${bg%.*} grants/s (nb ${ng%.*}/s, contention $nr);"
        if [ "$round" -le "$WARMUP" ]; then
            # The warm-up sizes the measured runs (>= 1.5 x MIN_SECONDS each).
            BC[$n]=$(resize "${BC[$n]}" "$bs")
        else
            echo "$n,$label,${BC[$n]},$bg,$bs,$bh,$bl,$ng,$na,$nr,$ns,$nh,$(cut -d' ' -f1 /proc/loadavg)" >>"$RAW"
        fi
    done
    say "$line"
    if [ "$round" -eq "$WARMUP" ]; then
        c=""
        for n in $RANKS; do c+=" np=$n ${BC[$n]}"; done
        say "blocking count per rank after the warm-up:$c"
    fi
done

say ""
say "medians of $REPEAT runs (grants/s: all ranks together):"
U table "$RAW" "$CSV" || warn "could not build the table from $RAW"
say ""
say "grants/s = sum(grants) / (last rank's end - common phase start); x np: against the first rank"
say "count. hold us: mean time from grant to release (token write, sleep lock_hold, token read)."
say "Nonblocking (every rank tries for $NB_DURATION s): tries/s = attempts / time, contention ="
say "refused attempts / attempts; nb hold us as hold us, for the nonblocking grants."
say "results: $CSV (raw samples: $RAW, logs: $LOGS)"
[ "$NFS" = yes ] && nfs_section
exit 0
