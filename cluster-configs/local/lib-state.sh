# lib-state.sh — the shell side of statedir.py, for nfs-server.sh and
# ../virtual/vcluster.sh: whether a state directory may be used, and its
# lock. Source it; it defines functions only. They use the caller's STATE,
# SELF (the script's path), ARGV (the command's arguments), LOCK_WAIT
# (seconds) and die.
# shellcheck shell=bash

STATEDIR_PY=$(dirname "${BASH_SOURCE[0]}")/statedir.py

# state_check MARKER: die with statedir.py's line unless STATE may be used
# (another user's directory, or one below a directory another user could
# swap, is refused; a STATE that does not exist yet is checked by what is
# above it).
state_check() {
    local why
    why=$(python3 "$STATEDIR_PY" check --state "$STATE" --marker "$1" --new 2>&1) || die "$why"
}

# state_lock: the rest of this command with the lock of STATE (flock(1) on
# the directory), so that two commands never start, stop or change one
# state directory's servers at the same time: the command runs again
# under `flock -o`, which keeps the lock out of every process it starts
# (a supervisor, a namespace holder outlive it), after waiting up to
# LOCK_WAIT s for another holder. STATE must exist.
state_lock() {
    ((${STATE_LOCKED:-0})) && return 0
    if [ "${HERD_STATE_LOCKED:-}" = "$STATE" ]; then
        STATE_LOCKED=1
        unset HERD_STATE_LOCKED
        return 0
    fi
    local rc=0
    HERD_STATE_LOCKED=$STATE flock -o -w "$LOCK_WAIT" -E 75 "$STATE" bash "$SELF" "${ARGV[@]}" || rc=$?
    ((rc != 75)) || die "another command has held $STATE for $LOCK_WAIT s"
    exit "$rc"
}
