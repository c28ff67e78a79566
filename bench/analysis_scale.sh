#!/usr/bin/env bash
# analysis_scale.sh — how herd-report and herd-compare scale with the number
# of rank rows in a results file. For each count in ROWS (default
# "1e4 1e5 3e5 1e6 3e6") herd itself writes a file (KIND=write: 2 ranks each
# writing a 4 KiB file ROWS/2 times, fsync off, in a private temp directory;
# KIND=idle: 1 rank, an idle phase of ROWS iterations), then herd-report and
# herd-compare (-o, the file against itself) run on it under /usr/bin/time:
# wall seconds and peak RSS (the child's maxrss), printed as a table.
# Targets (docs/analysis.md, "Scale"): 3e5 rows under 10 s and 1 GB,
# 3e6 rows under 60 s and 2 GB. Exits 0 whatever the figures, 2 when a tool
# is missing; removes its temp directory at the end.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")

ROWS=${ROWS:-"1e4 1e5 3e5 1e6 3e6"}
KIND=${KIND:-write}
HERD=${HERD:-$ROOT/build/herd}
MPIRUN_ARGS=${MPIRUN_ARGS-"--bind-to none"}

BENCH=analysis_scale
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

bench_require mpirun:openmpi-bin
[ -x /usr/bin/time ] || { warn "/usr/bin/time is missing (apt install time)"; exit 2; }
case $KIND in write | idle) ;; *) warn "KIND must be write or idle"; exit 2 ;; esac

WORK=$(mktemp -d "${TMPDIR:-/tmp}/herd-analysis-scale.XXXXXX") || exit 2
trap 'rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# measure LABEL CMD...: "seconds peak_kB" of CMD (its output to the log).
measure() {
    local label=$1
    shift
    if ! /usr/bin/time -f "%e %M" -o "$WORK/time" "$@" >"$WORK/$label.log" 2>&1; then
        warn "$label failed: $(tail -n 3 "$WORK/$label.log")"
        echo "- -"
        return
    fi
    cat "$WORK/time"
}

printf '%-9s %10s %8s %11s %12s %12s %12s\n' rows "file KB" "herd s" "report s" "report MB" \
    "compare s" "compare MB"
for spec in $ROWS; do
    n=$(printf '%.0f' "$spec")
    mkdir -p "$WORK/target"
    if [ "$KIND" = idle ]; then
        np=1
        keys=$'kind = idle\nduration = 1us\niterations = '$n
    else
        np=2
        keys=$'kind = write\nfile_size = 4K\nblock_size = 4K\nfsync = no\niterations = '$((n / 2))
    fi
    printf '[global]\ntarget = %s\n\n[p]\n%s\n' "$WORK/target" "$keys" >"$WORK/job.ini"
    h5=$WORK/r$n.h5
    # shellcheck disable=SC2086 # MPIRUN_ARGS is a list of words
    read -r herd_s _ < <(measure "herd$n" mpirun $MPIRUN_ARGS -np $np "$HERD" run "$WORK/job.ini" -o "$h5")
    [ -f "$h5" ] || { warn "herd wrote no file for $n rows (see above)"; continue; }
    read -r rep_s rep_kb < <(measure "report$n" /usr/bin/python3 "$ROOT/analysis/herd-report" "$h5" \
        -o "$WORK/report$n")
    read -r cmp_s cmp_kb < <(measure "compare$n" /usr/bin/python3 "$ROOT/analysis/herd-compare" "$h5" \
        "$h5" -o "$WORK/compare$n")
    mb() { [ "$1" = - ] && echo - || echo $(($1 / 1024)); }
    printf '%-9s %10s %8s %11s %12s %12s %12s\n' "$n" $(($(stat -c %s "$h5") / 1024)) "$herd_s" \
        "$rep_s" "$(mb "$rep_kb")" "$cmp_s" "$(mb "$cmp_kb")"
    rm -rf "$h5" "$WORK/report$n" "$WORK/compare$n" "$WORK/target"
done
exit 0
