#!/usr/bin/env python3
"""procinfo.py — naming a process for good from /proc, and stopping it, or
every process of a network namespace, for the embedded servers
(nfsserver.py, supervisor.py), the virtual cluster's scripts and the
tests: a PID together with its start time (clock ticks since boot,
/proc/PID/stat field 22) can never be mistaken for a later process that
reuses the PID. Standard library only.

For shell scripts (../virtual/):
  procinfo.py start PID             its start time; exit 1: no such live process
  procinfo.py alive PID START       exit 0 when that very process runs
  procinfo.py stop PID START [SECONDS]
                                    stop(): "PID (NAME)" on stdout when it
                                    needed SIGKILL; exit 1 if it still runs
  procinfo.py ns-stop SECONDS INODE... [-- PID...]
                                    ns_stop(), sparing the PIDs after --:
                                    what needed SIGKILL, a line each; exit 1
                                    if any still runs
  procinfo.py ns-pids INODE...      ns_pids(), a line each"""

import os
import signal
import sys
import time
from pathlib import Path

KILL_WAIT = 5.0  # seconds a SIGKILLed process gets to go


def proc_stat(pid):
    """(state, start time) of pid, or None if there is no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[19])


def proc_start(pid):
    """The start time of a live process; None for no process, a zombie
    (dead, not yet reaped) or one being torn down (state X)."""
    st = proc_stat(pid)
    if st is None or st[0] in ("Z", "X"):
        return None
    return st[1]


def running(pid, start=None):
    """pid exists, is not a zombie and (if given) started at start."""
    now = proc_start(pid)
    return now is not None and (start is None or now == start)


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


def signal_pid(pid, start, sig):
    """sig to that very process (same PID and start time) only."""
    if running(pid, start):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def stop(pid, start, seconds=1.0):
    """Stop that very process: SIGTERM and SIGCONT (a stopped process would
    not see the SIGTERM), up to seconds for it to go, then SIGKILL and up to
    KILL_WAIT s more. Returns (gone, killed): killed is "PID (NAME)" when it
    needed SIGKILL, else None."""
    if not running(pid, start):
        return True, None
    signal_pid(pid, start, signal.SIGTERM)
    signal_pid(pid, start, signal.SIGCONT)
    if wait_until(lambda: not running(pid, start), seconds, 0.02):
        return True, None
    killed = f"{pid} ({proc_name(pid)})"
    signal_pid(pid, start, signal.SIGKILL)
    return wait_until(lambda: not running(pid, start), KILL_WAIT, 0.02), killed


def netns_inode(pid):
    """The N of net:[N] of pid's network namespace, or None."""
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def ns_pids(inodes):
    """PIDs of live processes whose network namespace is one of inodes. A
    zombie has left its namespaces: it is not listed."""
    found = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit() and netns_inode(p.name) in inodes and running(int(p.name)):
            found.append(int(p.name))
    return found


def ns_stop(seconds, inodes, skip=()):
    """Stop every process in those network namespaces but the PIDs in skip:
    SIGTERM and SIGCONT (once to each process, also to those that appear
    meanwhile), up to seconds for them to go, then SIGKILL to the rest and
    up to KILL_WAIT s more. Returns (ok, killed): killed lists "PID (NAME)"
    of each process that needed SIGKILL; ok is False if any still runs. The
    caller keeps the namespaces alive meanwhile (a process in them, or an
    open /proc/PID/ns/net): once a namespace is gone, its number is reused."""
    sent, killed = {}, []
    deadline = time.monotonic() + seconds
    kill_deadline = deadline + KILL_WAIT
    while True:
        left = [p for p in ns_pids(inodes) if p not in skip]
        if not left:
            return True, killed
        now = time.monotonic()
        if now > kill_deadline:
            return False, killed
        sig = signal.SIGTERM if now < deadline else signal.SIGKILL
        for p in left:
            start = proc_start(p)
            if start is None or sent.get(p) == (start, sig):
                continue
            sent[p] = (start, sig)
            if sig == signal.SIGKILL:
                name = proc_name(p)
                signal_pid(p, start, signal.SIGKILL)
                killed.append(f"{p} ({name})")
            else:
                signal_pid(p, start, signal.SIGTERM)
                signal_pid(p, start, signal.SIGCONT)
        time.sleep(0.02)


def _numbers(words):
    if not words or not all(w.isdigit() and len(w) < 20 for w in words):
        raise ValueError("numbers expected")
    return [int(w) for w in words]


def main(argv):
    cmd, args = (argv[0], argv[1:]) if argv else ("", [])
    try:
        if cmd == "start" and len(args) == 1:
            start = proc_start(_numbers(args)[0])
            if start is None:
                return 1
            print(start)
            return 0
        if cmd == "alive" and len(args) == 2:
            return 0 if running(*_numbers(args)) else 1
        if cmd == "stop" and len(args) in (2, 3):
            pid, start, *seconds = _numbers(args)
            gone, killed = stop(pid, start, seconds[0] if seconds else 1.0)
            if killed:
                print(killed)
            return 0 if gone else 1
        if cmd == "ns-stop" and len(args) >= 2:
            words, spare = args[1:], []
            if "--" in words:
                cut = words.index("--")
                spare = _numbers(words[cut + 1:]) if words[cut + 1:] else []
                words = words[:cut]
            ok, killed = ns_stop(_numbers(args[:1])[0], set(_numbers(words)), set(spare))
            print("".join(f"{k}\n" for k in killed), end="")
            return 0 if ok else 1
        if cmd == "ns-pids" and args:
            print("".join(f"{p}\n" for p in ns_pids(set(_numbers(args)))), end="")
            return 0
    except ValueError:
        pass
    print(__doc__.split("For shell scripts (../virtual/):\n", 1)[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
