#!/usr/bin/env bash
# scale.sh — herd's own cost as the rank count grows, on this machine:
# for each count in RANKS (default "100 300"), REPEAT runs of a small job
# (write, read with verify, md5 of 1 MiB per rank on a private tmpfs), and
# from each results file: herd's start-up (MPI_Init to the first phase's
# start), the clock-offset estimation, per phase the gather and the HDF5
# write of rank 0, the results file's size and the ranks' peak memory, plus
# mpirun's wall time. The table gives medians and ranges; target: writing a
# phase takes under 1 s at 300 ranks. There is no peer tool for this. Needs
# root for the tmpfs (as another user it says SKIP and exits 0); exits 0
# whatever the results, 2 when a tool is missing or a setting is wrong.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")

REPEAT=${REPEAT:-3}
RANKS=${RANKS:-"100 300"}
OUT=${OUT:-./bench-results/scale}
HERD=${HERD:-$ROOT/build/herd}
MPIRUN_ARGS=${MPIRUN_ARGS-"--bind-to none"}

BENCH=scale
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

bench_require_root "it mounts (and unmounts) a private tmpfs."
bench_require mpirun:openmpi-bin mount:mount umount:mount
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || { warn "REPEAT must be a positive integer"; exit 2; }
for n in $RANKS; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || { warn "bad RANKS entry '$n'"; exit 2; }
done
bench_workspace
bench_tmpfs "size=$(( $(echo "$RANKS" | tr ' ' '\n' | sort -n | tail -1) * 2 + 64 ))M,mode=0755"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

cat >"$WORK/scale.ini" <<JOB
[global]
target = $MNT
file_size = 1M
[write]
kind = write
[read]
kind = read
verify = yes
[md5]
kind = md5
JOB

say "herd's own cost: RANKS=\"$RANKS\", REPEAT=$REPEAT, on $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
echo "ranks,round,wall_s,startup_s,clock_sync_s,gather_max_s,write_max_s,file_bytes,rss_max_bytes,rss_median_bytes,start_skew_max_s" >"$RAW"
for n in $RANKS; do
    for round in $(seq 1 "$REPEAT"); do
        res=$WORK/scale-$n-$round.h5
        t0=$(date +%s%N)
        # shellcheck disable=SC2086
        if ! mpirun --oversubscribe $MPIRUN_ARGS -np "$n" "$HERD" run "$WORK/scale.ini" -o "$res" \
            >"$LOGS/scale-$n-$round.log" 2>&1; then
            warn "herd failed at $n ranks (round $round); see $LOGS/scale-$n-$round.log"
            exit 2
        fi
        ms=$(( ($(date +%s%N) - t0) / 1000000 ))
        wall=$((ms / 1000)).$(printf '%03d' $((ms % 1000)))
        "$PY" - "$res" "$n" "$round" "$wall" >>"$RAW" <<'PY' || { warn "bad results file $res"; exit 2; }
import os, sys
import h5py
import numpy as np
path, n, rnd, wall = sys.argv[1:]
with h5py.File(path, "r") as f:
    ph = [f["phases"][p].attrs for p in f["phases"]]
    rss = f["usage"]["max_rss_bytes"]
    print(",".join(str(x) for x in (
        n, rnd, wall, f.attrs["startup_seconds"], f.attrs["clock_sync_seconds"],
        max(a["gather_seconds"] for a in ph), max(a["write_seconds"] for a in ph),
        os.path.getsize(path), rss.max(), np.median(rss), max(a["start_skew"] for a in ph))))
PY
        rm -f "$res"
        rm -rf "${MNT:?}"/*
    done
done

"$PY" - "$RAW" "$CSV" <<'PY'
import csv, statistics, sys
raw, out = sys.argv[1:]
rows = list(csv.DictReader(open(raw)))
cols = ["wall_s", "startup_s", "clock_sync_s", "gather_max_s", "write_max_s", "file_bytes",
        "rss_max_bytes", "rss_median_bytes", "start_skew_max_s"]
table = []
for n in dict.fromkeys(r["ranks"] for r in rows):
    sub = [r for r in rows if r["ranks"] == n]
    entry = {"ranks": n, "n": len(sub)}
    for c in cols:
        v = [float(r[c]) for r in sub]
        entry[c] = statistics.median(v)
        entry[c + "_range"] = "%.4g-%.4g" % (min(v), max(v))
    entry["write_under_1s"] = "PASS" if max(float(r["write_max_s"]) for r in sub) < 1 else "FAIL"
    table.append(entry)
with open(out, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(table[0]))
    w.writeheader()
    w.writerows(table)
fmt = "%6s %8s %9s %9s %10s %10s %9s %10s %10s %10s %s"
print(fmt % ("ranks", "wall s", "startup s", "clock s", "gather s", "write s", "file KiB",
             "RSS MiB max", "RSS MiB med", "skew s", "write < 1 s"))
for e in table:
    print(fmt % (e["ranks"], "%.1f" % e["wall_s"], "%.3f" % e["startup_s"],
                 "%.3f" % e["clock_sync_s"], "%.4f" % e["gather_max_s"],
                 "%.4f" % e["write_max_s"], "%.0f" % (e["file_bytes"] / 1024),
                 "%.1f" % (e["rss_max_bytes"] / 2**20), "%.1f" % (e["rss_median_bytes"] / 2**20),
                 "%.3f" % e["start_skew_max_s"], e["write_under_1s"]))
print("medians of %s runs; gather/write: the slowest phase of a run" % table[0]["n"])
PY
say "results: $CSV (raw: $RAW, logs: $LOGS)"
