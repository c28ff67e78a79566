#!/usr/bin/env bash
# holds_overlap.sh — how long rank 0's check of a lock phase's holds takes
# (holds_overlap, src/workload/holds.c): bench/holds_overlap.c built twice,
# against the working tree's check (after) and against BEFORE's (a commit,
# default HEAD), each timed REPEAT times on the same made-up holds (see
# holds_overlap.c: "block", CLIENTS clients each holding a block of its
# own at once; "whole", CLIENTS clients queueing for one lock):
#   block  at N holds after, and at BEFORE_N holds both before and after;
#          before at N is extrapolated (x N / BEFORE_N: the old check costs
#          in proportion to the holds at a fixed number of holders, and at
#          N it would take minutes to hours);
#   whole  at N holds both.
# Prints a table of medians (wall and CPU seconds) and checks that before
# and after give the same figures where both ran. Writes $OUT/results.csv
# and the raw lines in $OUT/logs/. No root; needs cc and git. Exits 0
# whatever the times (a benchmark), 1 when the figures differ, 2 when it
# cannot build or run. See bench/README.md.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
N=${N:-100000}
CLIENTS=${CLIENTS:-1000}
REPEAT=${REPEAT:-5}
BEFORE=${BEFORE:-HEAD}
BEFORE_N=${BEFORE_N:-2000}
BEFORE_REPEAT=${BEFORE_REPEAT:-3}
OUT=${OUT:-./bench-results}

# shellcheck disable=SC2034 # read by lib.sh
BENCH=holds_overlap
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

for v in N CLIENTS REPEAT BEFORE_N BEFORE_REPEAT; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { warn "$v must be a positive integer, not '${!v}'"; exit 2; }
done
for t in cc git; do
    command -v "$t" >/dev/null || { warn "cannot run, missing: $t"; exit 2; }
done
bench_workspace

# build WHO DIR: the bench against the check's sources in DIR (holds*.c
# and, where the check uses it, signals.c).
build() {
    local srcs=("$2"/holds*.c)
    [ -f "$2/signals.c" ] && srcs+=("$2/signals.c")
    cc -std=gnu11 -O2 -D_GNU_SOURCE -I"$2" -o "$WORK/$1.bin" "$HERE/holds_overlap.c" "${srcs[@]}" -lm \
        2>"$LOGS/cc-$1.log" || { warn "cc of the $1 check failed, see $LOGS/cc-$1.log"; exit 2; }
}

mkdir -p "$WORK/before" "$WORK/after"
cp "$ROOT"/src/workload/hold*.[ch] "$ROOT"/src/lib/signals.[ch] "$WORK/after/"
files=$(git -C "$ROOT" ls-tree --name-only "$BEFORE" src/workload/ src/lib/) ||
    { warn "no commit $BEFORE"; exit 2; }
for f in $(grep -E '^src/(workload/hold[^/]*|lib/signals)\.[ch]$' <<<"$files"); do
    git -C "$ROOT" show "$BEFORE:$f" >"$WORK/before/${f##*/}" || exit 2
done
build before "$WORK/before"
build after "$WORK/after"
BEFORE_ID=$(git -C "$ROOT" rev-parse --short "$BEFORE")

# run WHO CASE N REPEAT: one line of holds_overlap.c, kept in the logs.
run() {
    local line
    line=$("$WORK/$1.bin" "$2" "$3" "$CLIENTS" "$4") || { warn "$1 $2 $3 failed"; exit 2; }
    say "$1 $line" >>"$LOGS/runs.txt"
    say "$1 $line" >&2
    echo "$line"
}
field() { sed -E "s/.* $1=([^ ]+).*/\1/" <<<"$2"; }
figures() { sed -E 's/.* (together=.*)/\1/' <<<"$1"; }

say "holds_overlap: before $BEFORE_ID, after the working tree; $CLIENTS clients, medians of" \
    "$REPEAT runs (before at block $BEFORE_N: $BEFORE_REPEAT); load1 $(cut -d' ' -f1 /proc/loadavg)" >&2
b_small=$(run before block "$BEFORE_N" "$BEFORE_REPEAT")
a_small=$(run after block "$BEFORE_N" "$REPEAT")
a_block=$(run after block "$N" "$REPEAT")
b_whole=$(run before whole "$N" "$REPEAT")
a_whole=$(run after whole "$N" "$REPEAT")

same=ok
[ "$(figures "$b_small")" = "$(figures "$a_small")" ] || same=DIFFER
[ "$(figures "$b_whole")" = "$(figures "$a_whole")" ] || same=DIFFER
scale() { awk -v s="$1" -v n="$N" -v m="$BEFORE_N" 'BEGIN { printf "%.1f", s * n / m }'; }

{
    echo "case,holds,clients,before_wall_s,before_cpu_s,after_wall_s,after_cpu_s,note"
    echo "block,$BEFORE_N,$CLIENTS,$(field median_s "$b_small"),$(field cpu_s "$b_small"),$(field median_s "$a_small"),$(field cpu_s "$a_small"),measured"
    echo "block,$N,$CLIENTS,$(scale "$(field median_s "$b_small")"),$(scale "$(field cpu_s "$b_small")"),$(field median_s "$a_block"),$(field cpu_s "$a_block"),before extrapolated from $BEFORE_N"
    echo "whole,$N,$CLIENTS,$(field median_s "$b_whole"),$(field cpu_s "$b_whole"),$(field median_s "$a_whole"),$(field cpu_s "$a_whole"),measured"
} >"$OUT/results.csv"
column -s, -t <"$OUT/results.csv"
say "figures before = after: $same (results: $OUT/results.csv, runs: $LOGS/runs.txt)"
[ "$same" = ok ]
