# shellcheck shell=bash disable=SC2034 # RAW, CSV, LOGS are for the sourcing script
# lib.sh — what the bench/ scripts share: messages, sizes, preconditions.
# Source it after setting BENCH (the script's name) and HERD.

say() { printf '%s\n' "$*"; }
warn() { printf '%s: %s\n' "$BENCH" "$*" >&2; }

# Bytes of a size with an optional K/M/G/T suffix (powers of 1024, as herd
# and fio, whose kb_base defaults to 1024, both read them).
to_bytes() {
    local v=${1^^} mult=1
    case $v in
    *K) mult=1024 ;; *M) mult=1048576 ;; *G) mult=1073741824 ;; *T) mult=1099511627776 ;;
    esac
    v=${v%[KMGT]}
    [[ $v =~ ^[0-9]+$ ]] || { warn "bad size '$1'"; exit 2; }
    echo $((v * mult))
}

# bench_require_root WHY: not root -> say SKIP and exit 0 (a benchmark, not a test).
bench_require_root() {
    if [ "$(id -u)" -ne 0 ]; then
        say "SKIP: $BENCH.sh needs root: $1"
        say "      Run it as root, e.g.: sudo REPEAT=5 bench/$BENCH.sh"
        exit 0
    fi
}

# bench_require TOOL:PACKAGE...: every tool, a python3 with h5py (sets PY)
# and the herd binary must exist; otherwise list what is missing, exit 2.
bench_require() {
    local missing=() t p
    for t in "$@"; do
        command -v "${t%%:*}" >/dev/null 2>&1 || missing+=("${t%%:*} (apt install ${t#*:})")
    done
    PY=
    for p in ${PYTHON:-} /usr/bin/python3 python3; do
        if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import h5py' >/dev/null 2>&1; then
            PY=$p
            break
        fi
    done
    [ -n "$PY" ] || missing+=("python3 with h5py (apt install python3-h5py; set PYTHON= to pick an interpreter)")
    [ -x "$HERD" ] || missing+=("herd binary $HERD (build: cmake -S . -B build && cmake --build build; or set HERD=)")
    if [ ${#missing[@]} -gt 0 ]; then
        warn "cannot run, missing:"
        for t in "${missing[@]}"; do warn "  - $t"; done
        exit 2
    fi
}

# bench_workspace: make OUT absolute and create it with LOGS; set RAW and
# CSV; make a private WORK directory. At exit (or INT/TERM) the tmpfs of
# bench_tmpfs is emptied and unmounted and WORK removed.
bench_workspace() {
    mkdir -p "$OUT" || { warn "cannot create $OUT"; exit 2; }
    OUT=$(cd "$OUT" && pwd)
    LOGS=$OUT/logs
    mkdir -p "$LOGS"
    RAW=$OUT/raw.csv
    CSV=$OUT/results.csv
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/herd-bench-$BENCH.XXXXXX")
    MNT=$WORK/mnt
    MOUNTED=0
    trap bench_cleanup EXIT
    trap 'warn interrupted; exit 130' INT
    trap 'warn terminated; exit 143' TERM
}

# shellcheck disable=SC2317 # reached through the traps
bench_cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [ "$MOUNTED" = 1 ]; then
        rm -rf "${MNT:?}"/* 2>/dev/null
        if ! umount "$MNT" 2>/dev/null; then
            sleep 1
            umount "$MNT" 2>/dev/null || umount -l "$MNT" || warn "could not unmount $MNT"
        fi
    fi
    rm -rf "$WORK"
    exit "$rc"
}

# bench_tmpfs OPTIONS: mount a private tmpfs on MNT (-o OPTIONS, e.g.
# size=1G,mode=0755); bench_cleanup unmounts it.
bench_tmpfs() {
    mkdir -p "$MNT"
    mount -t tmpfs -o "$1" "herd-bench-$BENCH" "$MNT" ||
        { warn "mount of tmpfs on $MNT failed"; exit 2; }
    MOUNTED=1
}

# bench_meta_steps WHO ARG LABEL CONFIG [TOOL]: one metadata run of WHO
# (its function WHO_steps ARG LABEL prints "create stat removal" rates,
# or nothing when it failed): appended to the caller's `line`, and unless
# LABEL is a warm-up (warmup*) recorded with the caller's `record` as
# configs "create CONFIG", "stat CONFIG", "removal CONFIG" of TOOL (WHO).
bench_meta_steps() {
    local who=$1 arg=$2 label=$3 config=$4 tool=${5:-$1} c s u
    read -r c s u <<<"$("${who}_steps" "$arg" "$label")"
    line+=" $who create ${c:-ERR} stat ${s:-ERR} removal ${u:-ERR};"
    [[ $label == warmup* ]] && return 0
    record "create $config" "$tool" "$label" "${c:-}"
    record "stat $config" "$tool" "$label" "${s:-}"
    record "removal $config" "$tool" "$label" "${u:-}"
}

# bench_pace_peer: build bench/pace_peer.c (the plain open-loop client and
# timer probe of rate_accuracy.sh and rate_vs_fio.sh) as PEER in WORK;
# exit 2 when it does not build.
bench_pace_peer() {
    PEER=$WORK/pace_peer
    cc -std=gnu11 -O2 -Wall -o "$PEER" "$(dirname "${BASH_SOURCE[0]}")/pace_peer.c" -lm \
        2>"$LOGS/peer-cc.log" || { warn "cc pace_peer.c failed, see $LOGS/peer-cc.log"; exit 2; }
}

# bench_probe_start LOG SECONDS / bench_probe_stop: beside a measured run,
# PEER's timer alone at PROBE_RATE/s (fixed), a probe of the machine's own
# wake-up delays in the same seconds (at most SECONDS); stop sets PROBE to
# "LAG_P99_US,LAG_MAX_US" (empty fields when PROBE_RATE is 0 or the probe
# failed). Call both in the same shell, not in $(...): stop waits for the
# probe, which only the shell that started it can.
bench_probe_start() {
    PROBE_PID=
    PROBE_LOG=$1
    [ "${PROBE_RATE:-0}" != 0 ] || return 0
    "$PEER" "$PROBE_RATE" fixed "$2" - 4096 >"$PROBE_LOG" 2>&1 &
    PROBE_PID=$!
}
bench_probe_stop() {
    PROBE=,
    [ -n "$PROBE_PID" ] || return 0
    kill -TERM "$PROBE_PID" 2>/dev/null
    wait "$PROBE_PID" 2>/dev/null
    PROBE_PID=
    PROBE=$(awk '/lag_p99_s=/ { for (i = 1; i <= NF; i++) { split($i, kv, "=");
        v[kv[1]] = kv[2] } }
        END { if ("lag_p99_s" in v) printf "%.1f,%.1f\n", v["lag_p99_s"] * 1e6, v["lag_max_s"] * 1e6;
              else print "," }' "$PROBE_LOG")
}
