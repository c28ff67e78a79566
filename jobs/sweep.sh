#!/usr/bin/env bash
# sweep.sh — the seed's scaling question ("how many nodes before the server
# stalls?") as one command: every job file at every node count, all results
# in one sweep directory, and a comparison per job file at the end
# (jobs/compare-sweep.sh: herd-compare --label nranks, scaling.png).
#
#   sweep.sh --scheduler slurm|pbs|local --nodes "20 100 300" [--ppn N]
#            [--set key=value]... JOB.ini...
#
#   --scheduler slurm  one `sbatch jobs/slurm/herd.sbatch` per (job, node
#                      count) with --nodes=N --ntasks-per-node=PPN, then one
#                      job with --dependency=afterany:<all of them> that runs
#                      jobs/compare-sweep.sh SWEEPDIR
#   --scheduler pbs    the same with qsub jobs/pbs/herd.pbs,
#                      -l select=N:ncpus=PPN:mpiprocs=PPN (Torque:
#                      HERD_PBS_TORQUE=1 gives -l nodes=N:ppn=PPN) and a
#                      final job with -W depend=afterany:<ids>
#   --scheduler local  runs jobs/herd-batch.sh itself, one run after the
#                      other, with HERD_NP = N x PPN (one machine, or a
#                      virtual cluster: HERD_HOSTFILE and HERD_MPIRUN_ARGS
#                      pass through to mpirun), then compare-sweep.sh
#   --nodes LIST       node counts, separated by spaces or commas
#   --ppn N            ranks per node (default 1)
#   --set key=value    passed to every run (herd run --set)
#
# The sweep directory is $OUT if set, else
# ${HERD_RESULTS:-<repo>/results}/sweep-<YYYYmmdd-HHMMSS>/ (./results when
# installed); every run's
# directory goes in it (it is HERD_RESULTS for the runs), with sweep.tsv
# (what was submitted or run), sweep.log (what this script printed) and the
# scheduler's output files (under Slurm each run's is copied into its run
# directory at the end too: herd-batch.sh). Every (job, node count) is checked with
# `herd check` before anything is submitted.
#
# Environment: OUT, HERD_RESULTS, HERD, HERD_REPO (as herd-batch.sh);
# HERD_SBATCH_ARGS / HERD_QSUB_ARGS: extra sbatch / qsub arguments for every
# submission (partition, account, walltime), split on white space;
# HERD_PBS_TORQUE=1: Torque's -l nodes= instead of PBS Pro's select.
# Exit code: 2 for bad usage (one line on stderr); slurm/pbs: 0 once all is
# submitted; local: 0 if every run exited 0, 3 if the worst was herd's 3
# (I/O errors recorded), 1 otherwise.
set -euo pipefail

ME=sweep.sh
log() { printf '%s: %s\n' "$ME" "$*" >&2; }
die() { log "$*"; exit 1; }
bad() { log "$*"; exit 2; }

SELF_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=${HERD_REPO:-$(cd "$SELF_DIR/.." && pwd)}
# REPO: a checkout, or PREFIX/share/herd when installed (herd then from PATH).
if [ -z "${HERD:-}" ]; then
    HERD=$REPO/build/herd
    [ -x "$HERD" ] || HERD=$(command -v herd 2>/dev/null) || HERD=$REPO/build/herd
fi
USAGE="usage: $ME --scheduler slurm|pbs|local --nodes \"20 100 300\" [--ppn N] [--set key=value]... JOB.ini..."

# ---------------------------------------------------------------- arguments

scheduler="" nodes_arg="" ppn=1
sets=() jobs=()
while (($#)); do
    case "$1" in
        --scheduler) [ $# -ge 2 ] || bad "--scheduler needs a value"; scheduler=$2; shift 2 ;;
        --scheduler=*) scheduler=${1#*=}; shift ;;
        --nodes) [ $# -ge 2 ] || bad "--nodes needs a value"; nodes_arg=$2; shift 2 ;;
        --nodes=*) nodes_arg=${1#*=}; shift ;;
        --ppn) [ $# -ge 2 ] || bad "--ppn needs a value"; ppn=$2; shift 2 ;;
        --ppn=*) ppn=${1#*=}; shift ;;
        --set)
            [[ "${2:-}" == ?*=* ]] || bad "--set needs key=value (got '${2:-}')"
            sets+=("$2"); shift 2 ;;
        --set=?*=*) sets+=("${1#--set=}"); shift ;;
        -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        --) shift; jobs+=("$@"); break ;;
        -*) bad "unknown option '$1' ($USAGE)" ;;
        *) jobs+=("$1"); shift ;;
    esac
done

case "$scheduler" in
    slurm | pbs | local) ;;
    "") bad "--scheduler is required ($USAGE)" ;;
    *) bad "--scheduler must be slurm, pbs or local (got '$scheduler')" ;;
esac
[ -n "$nodes_arg" ] || bad "--nodes is required, e.g. --nodes \"20 100 300\""
read -r -a nodes <<<"${nodes_arg//,/ }"
((${#nodes[@]})) || bad "--nodes: no node counts given"
for n in "${nodes[@]}"; do
    [[ "$n" =~ ^[1-9][0-9]*$ ]] || bad "--nodes: '$n' is not a positive integer"
done
[[ "$ppn" =~ ^[1-9][0-9]*$ ]] || bad "--ppn: '$ppn' is not a positive integer"
((${#jobs[@]})) || bad "no job file given ($USAGE)"
declare -A seen=()
for i in "${!jobs[@]}"; do
    [[ -f "${jobs[$i]}" && -r "${jobs[$i]}" ]] || bad "job file ${jobs[$i]}: not a readable file"
    jobs[i]=$(realpath -- "${jobs[$i]}")
    name=$(basename -- "${jobs[$i]}" .ini)
    [ -z "${seen[$name]:-}" ] || bad "two job files named $name: the sweep tells jobs apart by file name"
    seen[$name]=1
done
case "$scheduler" in
    slurm) command -v sbatch >/dev/null || bad "--scheduler slurm: sbatch not found on PATH" ;;
    pbs) command -v qsub >/dev/null || bad "--scheduler pbs: qsub not found on PATH" ;;
esac
[[ -x "$HERD" && -f "$HERD" ]] || bad "herd binary $HERD not found or not executable (build it, or set HERD)"

# Every (job, rank count) must pass herd check before anything is queued.
set_args=()
for s in "${sets[@]}"; do set_args+=(--set "$s"); done
for job in "${jobs[@]}"; do
    for n in "${nodes[@]}"; do
        if ! msg=$("$HERD" check "$job" -n $((n * ppn)) "${set_args[@]}" 2>&1); then
            bad "herd check refused $(basename -- "$job") at $((n * ppn)) ranks: $(printf '%s\n' "$msg" | grep -v '^[[:space:]]*$' | tail -n 1)"
        fi
    done
done

# ---------------------------------------------------------------- sweep dir

if [ -n "${OUT:-}" ]; then
    sweep=$OUT
    mkdir -p -- "$sweep" || die "cannot create $sweep"
else
    base=$REPO/results
    [ -f "$REPO/analysis/herd-report" ] || base=$PWD/results # installed
    base=${HERD_RESULTS:-$base}
    mkdir -p -- "$base" || die "cannot create $base"
    sweep=$base/sweep-$(date +%Y%m%d-%H%M%S)
    n=1 stem=$sweep
    until mkdir -- "$sweep" 2>/dev/null; do
        n=$((n + 1))
        ((n < 100)) || die "cannot create $stem (or 99 others like it)"
        sweep=$stem-$n
    done
fi
sweep=$(cd "$sweep" && pwd)
[[ "$sweep" != *,* ]] || bad "the sweep directory $sweep has a comma (sbatch --export and qsub -v split on commas)"
manifest=$sweep/sweep.tsv
[ -e "$manifest" ] || printf 'job\tnodes\tppn\tranks\tscheduler\tid\n' >"$manifest"
say() { printf '%s\n' "$*" | tee -a "$sweep/sweep.log"; }
say "$ME: sweep $sweep: scheduler $scheduler, nodes ${nodes[*]}, $ppn rank(s) per node, jobs: $(for j in "${jobs[@]}"; do basename -- "$j"; done | tr '\n' ' ')"
if ((${#sets[@]})); then
    printf '%s\n' "${sets[@]}" >"$sweep/sets.txt"
fi

quote() { printf '%q ' "$@" | sed 's/ $//'; }

# ---------------------------------------------------------------- slurm

if [ "$scheduler" = slurm ]; then
    read -r -a sbatch_extra <<<"${HERD_SBATCH_ARGS:-}"
    ids=()
    for job in "${jobs[@]}"; do
        name=$(basename -- "$job" .ini)
        for n in "${nodes[@]}"; do
            # HERD_NP= (empty): the rank count comes from SLURM_NTASKS even if
            # this shell has a HERD_NP exported.
            cmd=(sbatch --parsable --nodes="$n" --ntasks-per-node="$ppn"
                --job-name="herd-$name-$n" --output="$sweep/slurm-%j.out"
                --export="ALL,HERD_RESULTS=$sweep,HERD_REPO=$REPO,HERD_NP="
                "${sbatch_extra[@]}" "$REPO/jobs/slurm/herd.sbatch" "$job" "${set_args[@]}")
            out=$("${cmd[@]}") || die "sbatch failed for $name on $n nodes: $(quote "${cmd[@]}")"
            id=${out%%;*}
            [ -n "$id" ] || die "sbatch printed no job id for $name on $n nodes"
            ids+=("$id")
            printf '%s\t%s\t%s\t%s\tslurm\t%s\n' "$name" "$n" "$ppn" $((n * ppn)) "$id" >>"$manifest"
            say "submitted $id: $name on $n nodes x $ppn = $((n * ppn)) ranks: $(quote "${cmd[@]}")"
        done
    done
    dep=$(IFS=:; echo "${ids[*]}")
    cmd=(sbatch --parsable --dependency="afterany:$dep" --job-name=herd-compare
        --nodes=1 --ntasks=1 --time=00:30:00 --output="$sweep/compare-%j.out"
        --export="ALL,HERD_REPO=$REPO" "${sbatch_extra[@]}"
        "$REPO/jobs/compare-sweep.sh" "$sweep")
    out=$("${cmd[@]}") || die "sbatch of the comparison job failed: $(quote "${cmd[@]}")"
    say "submitted ${out%%;*}: compare-sweep.sh after $dep: $(quote "${cmd[@]}")"
    say "$ME: results will be in $sweep (compare-<job>/ when the comparison job has run)"
    printf '%s\n' "$sweep"
    exit 0
fi

# ---------------------------------------------------------------- pbs

if [ "$scheduler" = pbs ]; then
    read -r -a qsub_extra <<<"${HERD_QSUB_ARGS:-}"
    vset=""
    [ -e "$sweep/sets.txt" ] && vset=",HERD_SET_FILE=$sweep/sets.txt"
    ids=()
    for job in "${jobs[@]}"; do
        [[ "$job" != *,* ]] || bad "job file path $job has a comma (qsub -v splits on commas)"
        name=$(basename -- "$job" .ini)
        for n in "${nodes[@]}"; do
            if [ "${HERD_PBS_TORQUE:-0}" = 1 ]; then
                res="nodes=$n:ppn=$ppn"
            else
                res="select=$n:ncpus=$ppn:mpiprocs=$ppn"
            fi
            cmd=(qsub -N "herd-$n" -l "$res" -j oe -o "$sweep/pbs-$name-$n.out"
                -v "HERD_RESULTS=$sweep,HERD_REPO=$REPO,HERD_JOB_FILE=$job$vset"
                "${qsub_extra[@]}" "$REPO/jobs/pbs/herd.pbs")
            out=$("${cmd[@]}") || die "qsub failed for $name on $n nodes: $(quote "${cmd[@]}")"
            id=$(printf '%s\n' "$out" | grep -v '^[[:space:]]*$' | tail -n 1 | tr -d '[:space:]')
            [ -n "$id" ] || die "qsub printed no job id for $name on $n nodes"
            ids+=("$id")
            printf '%s\t%s\t%s\t%s\tpbs\t%s\n' "$name" "$n" "$ppn" $((n * ppn)) "$id" >>"$manifest"
            say "submitted $id: $name on $n nodes x $ppn = $((n * ppn)) ranks: $(quote "${cmd[@]}")"
        done
    done
    dep=$(IFS=:; echo "${ids[*]}")
    cmd=(qsub -N herd-compare -j oe -o "$sweep/compare.out" -W "depend=afterany:$dep"
        -v "HERD_REPO=$REPO,HERD_SWEEP_DIR=$sweep" "${qsub_extra[@]}"
        "$REPO/jobs/compare-sweep.sh")
    out=$("${cmd[@]}") || die "qsub of the comparison job failed: $(quote "${cmd[@]}")"
    say "submitted $(printf '%s\n' "$out" | tail -n 1): compare-sweep.sh after $dep: $(quote "${cmd[@]}")"
    say "$ME: results will be in $sweep (compare-<job>/ when the comparison job has run)"
    printf '%s\n' "$sweep"
    exit 0
fi

# ---------------------------------------------------------------- local

worst=0
runout=$(mktemp "$sweep/.run.XXXXXX")
trap 'rm -f "$runout"' EXIT
for job in "${jobs[@]}"; do
    name=$(basename -- "$job" .ini)
    for n in "${nodes[@]}"; do
        np=$((n * ppn))
        say "running $name with $np ranks ($n x $ppn)"
        set +e
        HERD_NP=$np HERD_RESULTS=$sweep HERD_REPO=$REPO HERD=$HERD \
            bash "$REPO/jobs/herd-batch.sh" "$job" "${set_args[@]}" | tee "$runout"
        rc=${PIPESTATUS[0]}
        set -e
        dir=$(tail -n 1 "$runout")
        [ -d "$dir" ] || dir=-
        printf '%s\t%s\t%s\t%s\tlocal\t%s\n' "$name" "$n" "$ppn" "$np" "$dir" >>"$manifest"
        say "ran $name with $np ranks: exit code $rc, $dir"
        if ((rc != 0)); then
            if ((rc == 3 && worst == 0)); then worst=3; elif ((rc != 3)); then worst=1; fi
        fi
    done
done
rm -f "$runout"

say "comparing: compare-sweep.sh $sweep"
crc=0
HERD_REPO=$REPO bash "$REPO/jobs/compare-sweep.sh" "$sweep" || crc=$?
((crc == 0)) || { log "compare-sweep.sh exit code $crc"; worst=1; }
say "$ME: sweep done: $sweep (exit code $worst)"
printf '%s\n' "$sweep"
exit "$worst"
