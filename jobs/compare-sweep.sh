#!/usr/bin/env bash
# compare-sweep.sh — the end of a sweep (jobs/sweep.sh): for every job file
# in the sweep directory, herd-compare over its runs in order of rank count,
# labelled by rank count, so the table reads 20 -> 100 -> 300 ranks with
# each run's MiB/s and time as ratios to the smallest, and scaling.png plots
# time and throughput against the rank count.
#
#   compare-sweep.sh [SWEEPDIR]          (default $HERD_SWEEP_DIR)
#
# A run is a directory of SWEEPDIR made by jobs/herd-batch.sh (its
# launch.txt names the job and the rank count). For each job name it runs
#   herd-compare RUN.../results.h5 --label nranks -o SWEEPDIR/compare-<job>/
# and prints the table. Runs without a results.h5 (a batch job that failed)
# are listed and skipped, and so are (job, ranks) pairs in SWEEPDIR/sweep.tsv
# that never made a directory; of two runs with the same job and rank count
# the newest is used. Exit code: 0 when every job was compared, 1 when a job
# had no results or herd-compare failed, 2 for bad usage.
# Environment: HERD_REPO (default this script's ../: a checkout, or
# PREFIX/share/herd when installed), HERD_PYTHON (default /usr/bin/python3,
# else python3; installed: python3).
set -euo pipefail

ME=compare-sweep.sh
log() { printf '%s: %s\n' "$ME" "$*" >&2; }
die() { log "$*"; exit 1; }
bad() { log "$*"; exit 2; }

SELF_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=${HERD_REPO:-$(cd "$SELF_DIR/.." && pwd)}
compare=$REPO/analysis/herd-compare
python=${HERD_PYTHON:-}
if [ ! -f "$compare" ]; then
    # installed (REPO is PREFIX/share/herd): PREFIX/bin/herd-compare, else PATH's
    compare=$REPO/../../bin/herd-compare
    [ -f "$compare" ] || compare=$(command -v herd-compare 2>/dev/null) || compare=herd-compare
    python=${python:-python3}
fi
if [ -z "$python" ]; then
    if [ -x /usr/bin/python3 ]; then python=/usr/bin/python3; else python=python3; fi
fi

case "${1:-}" in -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
(($# <= 1)) || bad "usage: $ME [SWEEPDIR]"
sweep=${1:-${HERD_SWEEP_DIR:-}}
[ -n "$sweep" ] || bad "usage: $ME SWEEPDIR (or HERD_SWEEP_DIR)"
[ -d "$sweep" ] || bad "sweep directory $sweep does not exist"
sweep=$(cd "$sweep" && pwd)

field() { sed -n "s/^$1: *//p" "$2" | head -n 1; }

# All runs: "job<TAB>ranks<TAB>dir", in directory-name (= date) order.
runs=()
for launch in "$sweep"/*/launch.txt; do
    [ -f "$launch" ] || continue
    d=$(dirname -- "$launch")
    job=$(field job_name "$launch")
    np=$(field np "$launch")
    [[ -n "$job" && "$np" =~ ^[0-9]+$ ]] || { log "skipping $d: launch.txt names no job or rank count"; continue; }
    runs+=("$job"$'\t'"$np"$'\t'"$d")
done

# Job names: the manifest's order first, then any others.
names=()
add_name() {
    local x
    for x in "${names[@]}"; do [ "$x" = "$1" ] && return 0; done
    names+=("$1")
}
if [ -f "$sweep/sweep.tsv" ]; then
    while IFS=$'\t' read -r job _; do
        [ "$job" = job ] || [ -z "$job" ] || add_name "$job"
    done <"$sweep/sweep.tsv"
fi
for r in "${runs[@]}"; do add_name "${r%%$'\t'*}"; done
((${#names[@]})) || die "no runs in $sweep (no */launch.txt, no sweep.tsv)"

status=0
for job in "${names[@]}"; do
    echo
    echo "=== $job"
    # Rank counts present, ascending; the newest directory per rank count.
    declare -A pick=()
    for r in "${runs[@]}"; do
        IFS=$'\t' read -r j np d <<<"$r"
        [ "$j" = "$job" ] || continue
        if [ -n "${pick[$np]:-}" ]; then
            log "$job at $np ranks: $(basename -- "${pick[$np]}") superseded by $(basename -- "$d")"
        fi
        pick[$np]=$d
    done
    # Expected by the manifest but never started.
    if [ -f "$sweep/sweep.tsv" ]; then
        while IFS=$'\t' read -r j _ _ np sched id; do
            [ "$j" = "$job" ] || continue
            [ -z "${pick[$np]:-}" ] || continue
            echo "missing: $job at $np ranks ($sched ${id:--}): no run directory (the batch job failed before herd started; see its output file)"
        done < <(tail -n +2 "$sweep/sweep.tsv")
    fi
    files=() ranks=()
    for np in $(printf '%s\n' "${!pick[@]}" | sort -n); do
        d=${pick[$np]}
        if [ -s "$d/results.h5" ]; then
            files+=("$d/results.h5")
            ranks+=("$np")
        else
            echo "missing: $job at $np ranks: no results.h5 in $d (see $d/herd.log)"
        fi
    done
    unset pick
    if ((${#files[@]} == 0)); then
        log "$job: no results to compare"
        status=1
        continue
    fi
    echo "runs: ${ranks[*]} ranks"
    out=$sweep/compare-$job
    if ! "$python" "$compare" "${files[@]}" --label nranks -o "$out"; then
        log "$job: herd-compare failed"
        status=1
        continue
    fi
    echo "written: $out/"
done
exit "$status"
