#!/usr/bin/env bash
# herd-batch.sh — one herd run the way a batch job does it: validate the job
# (herd check, fail fast), launch herd under srun or mpirun, keep everything
# about the run in one dated directory, then write the report. The Slurm and
# PBS scripts (jobs/slurm/herd.sbatch, jobs/pbs/herd.pbs) and jobs/sweep.sh
# run it; it works as well outside any scheduler (plain bash and mpirun).
#
#   herd-batch.sh JOB.ini [--set key=value]...
#
# makes $HERD_RESULTS/<YYYYmmdd-HHMMSS>-<job>-<np>r[-TAG]/ with
#   results.h5   herd's results file
#   herd.log     herd's stdout and stderr (also shown on stdout)
#   launch.txt   the exact command, launcher, hosts (hostfile contents,
#                SLURM_JOB_NODELIST or the PBS nodes), date, herd --version,
#                and what `herd check` resolved
#   job.ini      a copy of the job file
#   report/      analysis/herd-report output (index.html); a report that
#                fails is a warning, not a failure (report.log says why)
#   herd-<jobid>.out  under Slurm: the job's output file (sbatch --output;
#                --error too when it is another file), moved here at the
#                end under its own name (renamed on the same file system, so
#                Slurm's last lines land here too; copied from another one,
#                where the file stays); a name the directory has is left
# and prints that directory as its last line on stdout. Exit code: herd's
# (through the launcher); 2 for bad usage or a job `herd check` refuses (then
# no directory is made).
#
# Environment (all optional):
#   HERD              herd binary (default <repo>/build/herd, else the herd
#                     on PATH: an installed herd)
#   HERD_REPO         the herd tree: a checkout, or PREFIX/share/herd when
#                     installed (default: this script's ../)
#   HERD_RESULTS      base results directory (default <repo>/results in a
#                     checkout, ./results when installed)
#   HERD_LAUNCHER     srun | mpirun (default srun when SLURM_JOB_ID is set, else mpirun)
#   HERD_HOSTFILE     mpirun --hostfile (default $PBS_NODEFILE when set; set
#                     but empty: no hostfile)
#   HERD_NP           ranks (default SLURM_NTASKS, else the line count of
#                     PBS_NODEFILE, else the hostfile's slots (`host slots=N`;
#                     a line without slots= counts 1), else 1)
#   HERD_MPIRUN_ARGS  extra mpirun arguments, split on white space
#                     (e.g. "--map-by node --oversubscribe"). Ranks are not
#                     bound to cores (OMPI_MCA_hwloc_base_binding_policy=none
#                     unless set; "--bind-to core" here binds them)
#   HERD_SRUN_ARGS    extra srun arguments, split on white space (Slurm's own
#                     binding applies; "--cpu-bind=none" leaves ranks free)
#   HERD_STOP_GRACE   seconds mpirun waits, after passing on a signal, before
#                     it SIGKILLs the ranks (Open MPI's odls_base_sigkill_timeout,
#                     1 s by its default). Default 10: time for the ranks to
#                     write a big cut phase; Open MPI 4 waits it in full, also
#                     twice after any non-zero exit (exit 3 costs 20 s more)
#   HERD_TAG          extra part of the directory name (letters, digits, ._+-)
#   HERD_PYTHON       Python for herd-report (default in a checkout
#                     /usr/bin/python3, else python3; installed: python3)
set -euo pipefail

ME=herd-batch.sh
log() { printf '%s: %s\n' "$ME" "$*" >&2; }
die() { log "$*"; exit 1; }
bad() { log "$*"; exit 2; }   # bad usage or input: one line, exit 2

SELF_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=${HERD_REPO:-$(cd "$SELF_DIR/.." && pwd)}
# A checkout has analysis/; an installed tree (PREFIX/share/herd) has the
# same jobs/ but takes herd and herd-report from PREFIX/bin (or PATH).
checkout=""
[ -f "$REPO/analysis/herd-report" ] && checkout=1
if [ -z "${HERD:-}" ]; then
    HERD=$REPO/build/herd
    [ -x "$HERD" ] || HERD=$(command -v herd 2>/dev/null) || HERD=$REPO/build/herd
fi
RESULTS=${HERD_RESULTS:-${checkout:+$REPO/results}}
RESULTS=${RESULTS:-$PWD/results}

# ---------------------------------------------------------------- arguments

(($#)) || bad "usage: $ME JOB.ini [--set key=value]..."
case "$1" in -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
job=$1
shift
[[ -f "$job" && -r "$job" ]] || bad "job file $job: not a readable file"
job=$(realpath -- "$job")
sets=()
while (($#)); do
    case "$1" in
        --set)
            [[ "${2:-}" == ?*=* ]] || bad "--set needs key=value (got '${2:-}')"
            sets+=(--set "$2"); shift 2 ;;
        --set=?*=*) sets+=(--set "${1#--set=}"); shift ;;
        *) bad "unknown argument '$1' (usage: $ME JOB.ini [--set key=value]...)" ;;
    esac
done

[[ -x "$HERD" && -f "$HERD" ]] || bad "herd binary $HERD not found or not executable (build it, put an installed herd on PATH, or set HERD)"

launcher=${HERD_LAUNCHER:-}
if [ -z "$launcher" ]; then
    if [ -n "${SLURM_JOB_ID:-}" ]; then launcher=srun; else launcher=mpirun; fi
fi
case "$launcher" in srun | mpirun) ;; *) bad "HERD_LAUNCHER must be srun or mpirun (got '$launcher')" ;; esac
command -v "$launcher" >/dev/null || bad "$launcher not found on PATH"

hostfile=${HERD_HOSTFILE-${PBS_NODEFILE:-}}
if [ -n "$hostfile" ]; then
    [[ -f "$hostfile" && -r "$hostfile" ]] || bad "hostfile $hostfile: not a readable file"
fi

# hostfile_slots FILE: total slots of an Open MPI hostfile ("host slots=N",
# "host" alone counts 1; comments and blank lines skipped).
hostfile_slots() {
    awk '{ sub(/#.*/, "") } NF == 0 { next }
         { n = 1; for (i = 2; i <= NF; i++) if ($i ~ /^slots=[0-9]+$/) n = substr($i, 7) + 0; t += n }
         END { print t + 0 }' "$1"
}

if [ -n "${HERD_NP:-}" ]; then
    np=$HERD_NP
elif [ -n "${SLURM_NTASKS:-}" ]; then
    np=$SLURM_NTASKS
elif [ -n "${PBS_NODEFILE:-}" ] && [ -r "$PBS_NODEFILE" ]; then
    np=$(grep -c . "$PBS_NODEFILE" || true)
elif [ -n "$hostfile" ]; then
    np=$(hostfile_slots "$hostfile")
else
    np=1
fi
[[ "$np" =~ ^[1-9][0-9]*$ ]] || bad "rank count '$np' is not a positive integer (HERD_NP, SLURM_NTASKS or the hostfile)"

tag=${HERD_TAG:-}
[[ -z "$tag" || "$tag" =~ ^[A-Za-z0-9._+-]+$ ]] || bad "HERD_TAG '$tag': use only letters, digits and ._+-"

# ---------------------------------------------------------------- check

# Fail fast, before any node is used: herd check prints one line naming the
# file, line and key.
check_out=$("$HERD" check "$job" -n "$np" "${sets[@]}" 2>&1) || {
    rc=$?
    msg=$(printf '%s\n' "$check_out" | grep -v '^[[:space:]]*$' | tail -n 1)
    log "herd check refused the job: ${msg:-exit code $rc}"
    exit 2
}

# ---------------------------------------------------------------- directory

name=$(basename -- "$job")
name=${name%.ini}
stamp=$(date +%Y%m%d-%H%M%S)
base="$stamp-$name-${np}r${tag:+-$tag}"
mkdir -p -- "$RESULTS" || die "cannot create $RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
dir=$RESULTS/$base
n=1
# Two runs of the same job in the same second get -2, -3...
until mkdir -- "$dir" 2>/dev/null; do
    [ -d "$RESULTS" ] || die "cannot create a directory in $RESULTS"
    n=$((n + 1))
    ((n < 100)) || die "cannot create $dir (or 99 others like it)"
    dir=$RESULTS/$base-$n
done
cp -- "$job" "$dir/job.ini"

# ---------------------------------------------------------------- command

if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1}
    export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
fi
cmd=()
# A stop (scancel, ^C, a time limit) is passed on to the ranks; Open MPI
# SIGKILLs them 1 s later by default, which on a busy node can be before
# they have written the cut phase (herd records the run's outcome before
# its clean-up, so a kill during the clean-up only leaves files in the
# target). Slurm's equivalent for srun is KillWait (slurm.conf).
grace=${HERD_STOP_GRACE:-10}
[[ "$grace" =~ ^[0-9]+$ ]] || bad "HERD_STOP_GRACE must be a number of seconds (got '$grace')"
export OMPI_MCA_odls_base_sigkill_timeout=${OMPI_MCA_odls_base_sigkill_timeout:-$grace}
# Open MPI binds each rank to one core when np <= cores (to a socket
# otherwise). A herd rank is an I/O client with helper threads (md5's
# read-ahead, the monitor) that often shares its node with a server or
# other clients; pinned, its threads share one core (md5 of a 512 MiB
# tmpfs file: 497-534 MiB/s bound, 597-608 unbound, docs/performance.md).
# Unbound, unless the environment or HERD_MPIRUN_ARGS (--bind-to) binds.
export OMPI_MCA_hwloc_base_binding_policy=${OMPI_MCA_hwloc_base_binding_policy:-none}
if [ "$launcher" = mpirun ]; then
    cmd=(mpirun)
    [ -n "$hostfile" ] && cmd+=(--hostfile "$hostfile")
    cmd+=(-np "$np")
    if [ "$(id -u)" -eq 0 ]; then
        cmd+=(-x OMPI_ALLOW_RUN_AS_ROOT -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM)
    fi
    read -r -a extra <<<"${HERD_MPIRUN_ARGS:-}"
else
    cmd=(srun -n "$np")
    read -r -a extra <<<"${HERD_SRUN_ARGS:-}"
fi
cmd+=("${extra[@]}" "$HERD" run "$job" "${sets[@]}" -o "$dir/results.h5")

{
    printf 'date:      %s\n' "$(date '+%Y-%m-%d %H:%M:%S %z')"
    printf 'command:   %s\n' "$(printf '%q ' "${cmd[@]}" | sed 's/ $//')"
    printf 'launcher:  %s (%s)\n' "$launcher" "$("$launcher" --version 2>&1 | head -n 1 || true)"
    printf 'np:        %s\n' "$np"
    printf 'mpi env:   %s\n' "$(env | grep '^OMPI_MCA_' | sort | tr '\n' ' ' | sed 's/ $//')"
    printf 'job:       %s\n' "$job"
    printf 'job_name:  %s\n' "$name"
    printf 'sets:      %s\n' "${sets[*]:-}"
    printf 'tag:       %s\n' "$tag"
    printf 'herd:      %s (%s)\n' "$HERD" "$("$HERD" --version 2>&1 | head -n 1 || true)"
    printf 'repo:      %s (%s)\n' "$REPO" "$(git -C "$REPO" describe --always --dirty 2>/dev/null || echo 'not a git checkout')"
    printf 'cwd:       %s\n' "$PWD"
    printf 'user:      %s\n' "$(id -un 2>/dev/null || id -u)"
    printf 'host:      %s\n' "$(hostname)"
    if [ -n "${SLURM_JOB_ID:-}" ]; then
        printf 'slurm:     job %s, SLURM_JOB_NODELIST=%s, SLURM_NTASKS=%s\n' \
            "$SLURM_JOB_ID" "${SLURM_JOB_NODELIST:-}" "${SLURM_NTASKS:-}"
    fi
    if [ -n "${PBS_JOBID:-}" ] || [ -n "${PBS_NODEFILE:-}" ]; then
        printf 'pbs:       job %s, PBS_NODEFILE=%s\n' "${PBS_JOBID:-}" "${PBS_NODEFILE:-}"
        if [ -r "${PBS_NODEFILE:-}" ]; then
            printf 'pbs nodes (slots host):\n'
            sort "$PBS_NODEFILE" | uniq -c | sed 's/^/    /'
        fi
    fi
    if [ "$launcher" = mpirun ] && [ -n "$hostfile" ]; then
        printf 'hostfile:  %s\n' "$hostfile"
        sed 's/^/    /' "$hostfile"
    fi
    printf 'herd check:\n'
    printf '%s\n' "$check_out" | sed 's/^/    /'
} >"$dir/launch.txt"

log "$np ranks via $launcher: $name -> $dir"

# ---------------------------------------------------------------- run

# A signal (scancel, the time limit, ^C) reaches herd through the launcher:
# herd writes the finished phases and exits 128+N; the report still runs.
interrupted=""
trap 'interrupted=1' INT TERM HUP
set +e
# tee ignores the signal, so that what herd prints while it stops (the
# phases it finished, the summary) still reaches herd.log and the screen.
"${cmd[@]}" 2>&1 </dev/null | (trap '' INT TERM HUP; exec tee "$dir/herd.log")
rc=${PIPESTATUS[0]}
set -e
trap - INT TERM HUP
[ -n "$interrupted" ] && log "interrupted by a signal"

python=${HERD_PYTHON:-}
if [ -z "$python" ]; then
    python=python3
    [ -n "$checkout" ] && [ -x /usr/bin/python3 ] && python=/usr/bin/python3
fi
report=$REPO/analysis/herd-report
if [ -z "$checkout" ]; then
    # installed: bin/herd-report beside herd (a link into libexec/herd)
    report=$(dirname -- "$HERD")/herd-report
    [ -f "$report" ] || report=$(command -v herd-report 2>/dev/null) || report=herd-report
fi
# mpirun answers a signal with its own exit code (1); herd's is in the file
# once herd closed it (-1 while it was never closed).
recorded=$("$python" -c 'import sys, h5py
print(int(h5py.File(sys.argv[1], "r").attrs["exit_code"]))' "$dir/results.h5" 2>/dev/null || echo -1)
if [ "$recorded" -ge 0 ] 2>/dev/null && [ "$recorded" != "$rc" ]; then
    log "launcher exit code $rc; herd recorded $recorded in results.h5"
    rc=$recorded
fi
printf 'exit code: %s\n' "$rc" >>"$dir/launch.txt"
case "$rc" in
    0) ;;
    3) log "herd exit code 3: the run completed with I/O errors or verify failures" ;;
    *) log "herd exit code $rc (see $dir/herd.log)" ;;
esac

# ---------------------------------------------------------------- report

if [ -s "$dir/results.h5" ]; then
    if "$python" "$report" "$dir/results.h5" -o "$dir/report" \
        >"$dir/report.log" 2>&1; then
        log "report: $dir/report/index.html"
    else
        log "warning: herd-report failed: $(grep -v '^[[:space:]]*$' "$dir/report.log" | tail -n 1) (see $dir/report.log)"
    fi
else
    log "warning: no results.h5, so no report"
fi

# ---------------------------------------------------------------- Slurm output

# Under Slurm, the job's output file (sbatch --output, and --error when it
# is another file: this script's standard output and error) goes beside
# launch.txt, so that the directory holds all the job printed and the
# submit directory keeps no stray herd-<jobid>.out. On the same file system
# it is renamed (Slurm's open descriptor follows it: the directory's name,
# printed last, lands in it too); from another one it is copied (all but
# that last line) and stays where Slurm put it. A name the directory
# already has is left alone, and neither mv nor cp writes through a link.
move_slurm_output() {
    local fd src dest seen=""
    for fd in 1 2; do
        src=$(readlink -- "/proc/$$/fd/$fd" 2>/dev/null) || continue
        [[ "$src" == /* && -f "$src" && ! -L "$src" ]] || continue # a terminal, a pipe, a deleted file
        [ -n "$seen" ] && [ "$src" -ef "$seen" ] && continue
        seen=$src
        dest=$dir/$(basename -- "$src")
        [ "$src" -ef "$dest" ] && continue # Slurm writes it into the directory itself
        if [ -e "$dest" ] || [ -L "$dest" ]; then # a dangling link too: never written through
            log "warning: Slurm output $src left where it is: $dest exists"
        elif [ "$(stat -c %d -- "$src")" = "$(stat -c %d -- "$dir")" ]; then
            # (mv -n skips a name made meanwhile: then src is still there)
            if mv -n -T -- "$src" "$dest" && [ ! -e "$src" ]; then
                printf 'slurm out: moved here from %s at the end\n' "$src" >>"$dir/launch.txt"
            else
                log "warning: Slurm output $src could not be moved to $dir"
            fi
        elif cp -- "$src" "$dest"; then
            printf 'slurm out: %s (copied here at the end)\n' "$src" >>"$dir/launch.txt"
        else
            log "warning: Slurm output $src could not be copied to $dir"
        fi
    done
}
if [ -n "${SLURM_JOB_ID:-}" ]; then
    move_slurm_output
fi

printf '%s\n' "$dir"
exit "$rc"
