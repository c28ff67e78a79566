#!/usr/bin/env bash
# analysis_speed.sh — wall time of herd-report and herd-compare on results
# files of many virtual clients, the sizes of issue 60: herd itself writes
# them, over libnfs against the embedded userspace NFS server
# (cluster-configs/local/nfs-server.sh, ganesha on tmpfs, --reach host):
#   ladder  2 ranks x 500 clients (clients_per_rank), 4 iterations of a
#           4 KiB file, a write and a read ladder in clients_active =
#           10,100,500,all: 2 x 4 steps x 1000 clients x 4 = 32,000 rows
#   big     the same 2 x 500 clients, one write ladder of 4 steps, 25
#           iterations: 4 x 1000 x 25 = 100,000 rows
#   compare 10 copies of the ladder file (real herd output, one name each)
# and prints each file's client rows (h5py) and size. Then, REPEAT times
# (default 3) each, herd-report FILE -o DIR on both files and herd-compare
# of the 10 copies -o DIR, wall seconds, by the analysis/ of BEFORE
# (default HEAD; "before": git show BEFORE:analysis/..., into the temp
# directory) and by
# the working tree's ("after"; ANALYSIS=DIR: another copy), and with
# ALSO=DIR by a third copy ("also": a change not yet in the tree),
# alternating; the 1-minute load average beside every run; the medians in
# a table.
# BEFORE=COMMIT: the "before" analysis (default HEAD); KEEP=DIR: copy
# ladder.h5 and big.h5 there.
# Targets (issue 60): report < 3 s on 32,000 client rows, < 5 s on 100,000,
# compare of 10 such files < 10 s. Needs root (the server's namespaces)
# and nfs-ganesha; exits 0 whatever the figures, 2 when a tool is missing;
# stops the server and removes its temp directory at the end.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")

REPEAT=${REPEAT:-3}
HERD=${HERD:-$ROOT/build/herd}
ANALYSIS=${ANALYSIS:-$ROOT/analysis}
ALSO=${ALSO:-}
BEFORE=${BEFORE:-HEAD}
KEEP=${KEEP:-}
VERSIONS="before after${ALSO:+ also}"
MPIRUN_ARGS=${MPIRUN_ARGS-"--bind-to none --oversubscribe"}
SERVER=$ROOT/cluster-configs/local/nfs-server.sh

BENCH=analysis_speed
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

bench_require_root "the embedded NFS server runs in namespaces of its own."
bench_require mpirun:openmpi-bin ganesha.nfsd:nfs-ganesha git:git
for dir in "$ANALYSIS" ${ALSO:+"$ALSO"}; do
    [ -x "$dir/herd-report" ] || { warn "no herd-report in $dir"; exit 2; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/herd-analysis-speed.XXXXXX") || exit 2
# shellcheck disable=SC2317 # reached through the trap
cleanup() {
    "$SERVER" stop --state "$WORK/srv" >/dev/null 2>&1
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'warn interrupted; exit 130' INT
trap 'warn terminated; exit 143' TERM
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# The analysis of BEFORE, beside the working tree's, for "before".
mkdir -p "$WORK/before"
for f in $(git -C "$ROOT" ls-tree --name-only "$BEFORE" analysis/); do
    git -C "$ROOT" show "$BEFORE:$f" >"$WORK/before/$(basename "$f")" ||
        { warn "git show $BEFORE:$f failed"; exit 2; }
done
chmod +x "$WORK/before/herd-report" "$WORK/before/herd-compare"

"$SERVER" start --state "$WORK/srv" --fs tmpfs --reach host >"$WORK/start.out" 2>"$WORK/start.log" ||
    { warn "nfs-server.sh start failed: $(tail -n 3 "$WORK/start.log")"; exit 2; }
URL=$(sed -n 1p "$WORK/start.out")

# herd_job NAME ITERATIONS PHASE...: a job of 2 ranks x 500 clients, 4 KiB
# files in one block, one clients_active ladder per PHASE (a kind).
herd_job() {
    local name=$1 iterations=$2 kind
    shift 2
    {
        printf '[global]\nbackend = libnfs\ntarget = %s\nclients_per_rank = 500\n' "$URL"
        printf 'file_size = 4K\nblock_size = 4K\nfsync = no\niterations = %s\nlabel = %s\n' \
            "$iterations" "$name"
        for kind in "$@"; do
            printf '\n[%s]\nkind = %s\nclients_active = 10,100,500,all\n' "$kind" "$kind"
        done
    } >"$WORK/$name.ini"
    # shellcheck disable=SC2086 # MPIRUN_ARGS is a list of words
    "$SERVER" exec --state "$WORK/srv" -- mpirun $MPIRUN_ARGS -np 2 "$HERD" run -q \
        "$WORK/$name.ini" -o "$WORK/$name.h5" >"$WORK/$name.log" 2>&1 ||
        { warn "herd run $name failed: $(tail -n 3 "$WORK/$name.log")"; exit 1; }
}

say "making the files (herd over libnfs, 2 ranks x 500 clients) ..."
herd_job ladder 4 write read
herd_job big 25 write
mkdir -p "$WORK/cmp"
for i in 01 02 03 04 05 06 07 08 09 10; do cp "$WORK/ladder.h5" "$WORK/cmp/run$i.h5"; done
"$SERVER" stop --state "$WORK/srv" >/dev/null 2>&1
if [ -n "$KEEP" ]; then # the files, for a profile by hand
    mkdir -p "$KEEP" && cp "$WORK/ladder.h5" "$WORK/big.h5" "$KEEP/" ||
        { warn "cannot keep the files in $KEEP"; exit 2; }
fi

rows() { # client rows (every phase's ranks table) of a results file
    "$PY" -c 'import sys, h5py
f = h5py.File(sys.argv[1], "r")
print(sum(g["ranks"].shape[0] for g in f["phases"].values() if "ranks" in g))' "$1"
}
for name in ladder big; do
    say "$name.h5: $(rows "$WORK/$name.h5") client rows, $(($(stat -c %s "$WORK/$name.h5") / 1024)) KB"
done

# wall LABEL CMD...: seconds of CMD (its output to a log); "-" when it failed.
wall() {
    local label=$1 t0 t1
    shift
    rm -rf "$WORK/out"
    t0=$(date +%s.%N)
    if ! "$@" >"$WORK/$label.log" 2>&1; then
        warn "$label failed: $(tail -n 3 "$WORK/$label.log")"
        echo -
        return
    fi
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", b - a }'
}
load1() { cut -d' ' -f1 /proc/loadavg; }

declare -A times
say ""
printf '%-8s %-8s %-11s %2s %8s %6s\n' case version file run seconds load1
for ((r = 1; r <= REPEAT; r++)); do
    for version in $VERSIONS; do
        case $version in before) dir=$WORK/before ;; after) dir=$ANALYSIS ;; also) dir=$ALSO ;; esac
        for case in report report-big compare; do
            case $case in
            report) file=ladder cmd=("$PY" "$dir/herd-report" "$WORK/ladder.h5" -o "$WORK/out") ;;
            report-big) file=big cmd=("$PY" "$dir/herd-report" "$WORK/big.h5" -o "$WORK/out") ;;
            compare) file="10 x ladder" cmd=("$PY" "$dir/herd-compare" "$WORK"/cmp/run*.h5 -o "$WORK/out") ;;
            esac
            s=$(wall "$case-$version" "${cmd[@]}")
            l=$(load1)
            printf '%-8s %-8s %-11s %2s %8s %6s\n' "$case" "$version" "$file" "$r" "$s" "$l"
            times[$case.$version]+="$s/$l "
        done
    done
done

# median of "seconds/load" words (failed runs, "-", left out), with the
# load of that run and the range of loads
median() {
    # shellcheck disable=SC2086 # one word per run
    printf '%s\n' $1 | grep -v '^-' | sort -t/ -k1,1n | awk -F/ '
        { s[NR] = $1; l[NR] = $2; lo = (NR == 1 || $2 < lo) ? $2 : lo; hi = ($2 > hi) ? $2 : hi }
        END { if (NR == 0) { print "- - -"; exit } m = int((NR + 1) / 2)
              printf "%s %s %s-%s\n", s[m], l[m], lo, hi }'
}
say ""
say "medians of $REPEAT runs (load1: of the median run; loads: all runs' range)"
printf '%-11s %-20s' case target
for version in $VERSIONS; do printf ' %8s %6s %10s' "$version" load1 loads; done
printf '\n'
for case in report report-big compare; do
    case $case in
    report) target="< 3 s, 32,000 rows" ;;
    report-big) target="< 5 s, 100,000 rows" ;;
    compare) target="< 10 s, 10 files" ;;
    esac
    printf '%-11s %-20s' "$case" "$target"
    for version in $VERSIONS; do
        read -r s l range <<<"$(median "${times[$case.$version]}")"
        printf ' %8s %6s %10s' "$s" "$l" "$range"
    done
    printf '\n'
done
say "($(nproc) CPUs; $(uptime | sed 's/.*load average/load average/'))"
exit 0
