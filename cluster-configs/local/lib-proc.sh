#!/usr/bin/env bash
# lib-proc.sh — naming a process for good, and stopping it, for the scripts
# that start and stop servers, daemons and namespace holders (nfs-server.sh,
# ../virtual/vcluster.sh, ../virtual/vc-slurm.sh):
# a PID together with its start time can never be mistaken for a later
# process that reuses the PID. Source it; it defines functions only.

# proc_start PID [VAR]: the start time (clock ticks since boot, /proc/PID/stat
# field 22) of a live process, printed or, with VAR, put in that variable;
# fails for no process, a zombie (dead, not yet reaped by its parent) or
# one being torn down (state X). No subshell and no command substitution:
# a trap that runs while bash 5.2 parses a $(...) can break its parser
# ("trap: unexpected EOF while looking for matching `)'", seen in the
# supervisor when restart-ganesha's SIGKILL and USR1 met its alive check).
proc_start() {
    local s var=${2:-}
    { IFS= read -r s <"/proc/$1/stat"; } 2>/dev/null || return 1
    s=${s##*) }
    # shellcheck disable=SC2086 # split the fields
    set -- $s
    [ "$1" != Z ] && [ "$1" != X ] || return 1
    if [ -n "$var" ]; then
        printf -v "$var" '%s' "${20}"
    else
        printf '%s\n' "${20}"
    fi
}

# proc_alive PID START: that very process (same PID, same start time) is
# alive and not a zombie.
proc_alive() {
    local now
    [ -n "$1" ] && proc_start "$1" now && [ "$now" = "$2" ]
}

# proc_stop PID START [SECONDS]: stop that very process: SIGTERM and
# SIGCONT (a stopped process would not see the SIGTERM), up to SECONDS
# (default 1) for it to go, then SIGKILL and up to 5 s more. Succeeds at
# once when it is already gone; fails if it still runs.
proc_stop() {
    local pid=$1 start=$2 tries i
    tries=$(( ${3:-1} * 50 ))
    proc_alive "$pid" "$start" || return 0
    kill -TERM "$pid" 2>/dev/null || true
    kill -CONT "$pid" 2>/dev/null || true
    for ((i = 0; i < tries; i++)); do
        proc_alive "$pid" "$start" || return 0
        sleep 0.02
    done
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 250; i++)); do
        proc_alive "$pid" "$start" || return 0
        sleep 0.02
    done
    return 1
}
