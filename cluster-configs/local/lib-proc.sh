#!/usr/bin/env bash
# lib-proc.sh — naming a process for good, and stopping it, or every
# process of a network namespace, for the scripts that start and stop
# servers, daemons and namespace holders (nfs-server.sh,
# ../virtual/vcluster.sh, ../virtual/vc-slurm.sh; procinfo.py is the same
# for Python, supervisor.py and the tests):
# a PID together with its start time can never be mistaken for a later
# process that reuses the PID. Source it; it defines functions only.

# proc_start PID [VAR]: the start time (clock ticks since boot, /proc/PID/stat
# field 22) of a live process, printed or, with VAR, put in that variable;
# fails for no process, a zombie (dead, not yet reaped by its parent) or
# one being torn down (state X). With VAR it forks nothing: the stop loops
# call it for every process, 50 times a second.
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

# proc_name PID VAR: the command name of a process (/proc/PID/comm), or
# "?", put in VAR.
proc_name() {
    local proc_name_comm # (a name no caller's VAR has: printf -v sets the innermost)
    { IFS= read -r proc_name_comm <"/proc/$1/comm"; } 2>/dev/null || proc_name_comm="?"
    printf -v "$2" '%s' "$proc_name_comm"
}

# proc_stop PID START [SECONDS]: stop that very process: SIGTERM and
# SIGCONT (a stopped process would not see the SIGTERM), up to SECONDS
# (default 1) for it to go, then SIGKILL and up to 5 s more. Succeeds at
# once when it is already gone; fails if it still runs. Sets PROC_KILLED to
# "PID (NAME)" when it had to SIGKILL, to "" otherwise.
proc_stop() {
    local pid=$1 start=$2 tries i name
    tries=$(( ${3:-1} * 50 ))
    PROC_KILLED=""
    proc_alive "$pid" "$start" || return 0
    kill -TERM "$pid" 2>/dev/null || true
    kill -CONT "$pid" 2>/dev/null || true
    for ((i = 0; i < tries; i++)); do
        proc_alive "$pid" "$start" || return 0
        sleep 0.02
    done
    proc_name "$pid" name
    kill -KILL "$pid" 2>/dev/null || true
    # shellcheck disable=SC2034 # for the callers
    PROC_KILLED="$pid ($name)"
    for ((i = 0; i < 250; i++)); do
        proc_alive "$pid" "$start" || return 0
        sleep 0.02
    done
    return 1
}

# ns_pids INODE...: the PIDs of live processes whose network namespace is
# one of these (the N of "net:[N]", the inode of /proc/PID/ns/net), one a
# line. A zombie has left its namespaces: it is not listed.
ns_pids() {
    local want=" $* " ino path pid start
    while read -r ino path; do
        [[ "$want" == *" $ino "* ]] || continue
        pid=${path#/proc/}
        pid=${pid%%/*}
        proc_start "$pid" start && printf '%s\n' "$pid"
    done < <(stat -L -c '%i %n' /proc/[0-9]*/ns/net 2>/dev/null)
    return 0
}

# ns_stop SECONDS INODE... [-- PID...]: stop every process in those network
# namespaces but the PIDs after --: SIGTERM and SIGCONT (once to each
# process, also to those that appear meanwhile), up to SECONDS for them to
# go, then SIGKILL to the rest and up to 5 s more. Prints "PID (NAME)" of
# each process it had to SIGKILL, one a line; fails if any still runs then.
# The caller keeps the namespaces alive meanwhile (a process in them, or an
# open /proc/PID/ns/net): once a namespace is gone, its number is reused.
ns_stop() {
    local tries=$(( $1 * 50 )) inos=() skip=" " left p start name sig=TERM i
    local -A sent=()
    shift
    while (($#)) && [ "$1" != -- ]; do
        inos+=("$1")
        shift
    done
    (($#)) && shift
    skip+="$* "
    for ((i = 0; i <= tries + 250; i++)); do
        left=()
        for p in $(ns_pids "${inos[@]}"); do
            [[ "$skip" == *" $p "* ]] || left+=("$p")
        done
        ((${#left[@]})) || return 0
        ((i < tries)) || sig=KILL
        for p in "${left[@]}"; do
            proc_start "$p" start || continue
            [ "${sent[$p]:-}" != "$start $sig" ] || continue
            sent[$p]="$start $sig"
            if [ "$sig" = KILL ]; then
                proc_name "$p" name
                kill -KILL "$p" 2>/dev/null && printf '%s (%s)\n' "$p" "$name"
            else
                kill -TERM "$p" 2>/dev/null || true
                kill -CONT "$p" 2>/dev/null || true
            fi
        done
        sleep 0.02
    done
    return 1
}
