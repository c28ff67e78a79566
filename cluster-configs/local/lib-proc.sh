#!/usr/bin/env bash
# lib-proc.sh — naming a process for good, for the scripts that start and
# stop servers and namespace holders (nfs-server.sh, ../virtual/vcluster.sh):
# a PID together with its start time can never be mistaken for a later
# process that reuses the PID. Source it; it defines functions only.

# proc_start PID: the start time (clock ticks since boot, /proc/PID/stat
# field 22) of a live process; fails for no process or a zombie (dead,
# not yet reaped by its parent).
proc_start() {
    local s
    s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    s=${s##*) }
    # shellcheck disable=SC2086 # split the fields
    set -- $s
    [ "$1" != Z ] || return 1
    printf '%s\n' "${20}"
}
