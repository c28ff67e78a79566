"""procinfo.py — naming a process for good from /proc, for supervisor.py
beside it and for the tests of the embedded servers: a PID together with
its start time (clock ticks since boot, /proc/PID/stat field 22) can never
be mistaken for a later process that reuses the PID. The Python side of
lib-proc.sh's proc_start / proc_alive. Standard library only."""

import time
from pathlib import Path


def proc_stat(pid):
    """(state, start time) of pid, or None if there is no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[19])


def running(pid, start=None):
    """pid exists, is not a zombie and (if given) started at start."""
    st = proc_stat(pid)
    if st is None or st[0] in ("Z", "X"):
        return False
    return start is None or st[1] == start


def proc_name(pid):
    """The command name of pid (/proc/PID/comm), or "?"."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def wait_until(predicate, timeout=10.0, step=0.05):
    """Call predicate every step seconds until it is true (True) or timeout
    seconds have passed (False)."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(step)
