#!/usr/bin/env python3
"""statedir.py — the state directory of an embedded server (nfs-server.sh)
or a virtual cluster (../virtual/vcluster.sh), held to the rules of code
that runs as root: a state directory is trusted only when no other user
could have written it or what it holds, and its settings are data.

A state directory is trusted when
  - it is a real directory (not a symbolic link) owned by the user who runs
    the script, writable by no one else (no group or other write bit);
  - every directory above it, up to /, is owned by root or that user and
    is writable by no one else, or has the sticky bit (like /tmp): nobody
    else can rename, replace or remove anything on the way to it;
  - the subdirectories the scripts read (conf, pid, run, log, bin) and
    every file in conf and pid are the same: real, that user's, writable
    by no one else; a guest's directories may also belong to the guests'
    user (herd-guest), who owns what User-Mode Linux writes.
Each rule that fails is refused with one line that names the path and why.

Settings (conf/settings.json) are one JSON object of strings under the
names the shell scripts use (FS, MODE, GRACE...); every value is checked
against its pattern when saved and when loaded, so a settings file is
never code, whoever wrote it.

  statedir.py check --state DIR [--marker NAME] [--new]
      exit 0 if DIR may be used (--new: DIR need not exist yet; its parent
      is checked), 1 and one line on stderr if not
  statedir.py settings --state DIR
      the settings, NAME=VALUE records each ended by a NUL byte, then the
      record "OK" (shells read them as data, never as code); for a state
      directory or settings file that may not be used, the one record
      "ERR=WHY" and exit 1
  statedir.py save --state DIR NAME=VALUE...
      check the values and write conf/settings.json atomically

Standard library only (Debian 12's python3)."""

import json
import os
import pwd
import re
import stat
import sys
from pathlib import Path

SETTINGS_FILE = "conf/settings.json"
GUEST_USER = "herd-guest"
# The subdirectories a script reads (settings, records, its own files) and
# those that hold files of the guests' user (User-Mode Linux's).
OWN_DIRS = ("conf", "pid", "run", "log", "bin")
GUEST_DIRS = ("guest", "guests")
FILES_IN = ("conf", "pid")
MAX_SETTINGS = 64 << 10   # bytes of a settings file

_OCTET = r"(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
# name -> (default, pattern of a valid value)
SETTINGS = {
    "FS": ("dir", r"dir|tmpfs|xfs|ext4|btrfs"),
    "SIZE": ("2G", r"[0-9]{1,15}[KMGT]?"),
    "MODE": ("sync", r"sync|async|sync-writes"),
    "WORKERS": ("200", r"[0-9]{1,6}"),
    "HOST_NAME": ("", r"([A-Za-z0-9][A-Za-z0-9.-]{0,62})?"),
    "NLM": ("1", r"[01]"),
    "GRACE": ("0", r"[0-9]{1,3}"),
    "LEASE": ("60", r"[0-9]{1,3}"),
    "SMB": ("0", r"[01]"),
    "SMB_SENDFILE": ("yes", r"yes|no"),
    "SMB_WORKERS": ("100", r"[0-9]{1,5}"),
    "SERVER": ("ganesha", r"ganesha|knfsd"),
    "THREADS": ("8", r"[0-9]{1,4}"),
    "GUEST_NET": ("10.77.0", rf"{_OCTET}\.{_OCTET}\.{_OCTET}"),
    "EXPORT_TO": ("", rf"({_OCTET}\.{_OCTET}\.{_OCTET}\.{_OCTET}/([1-9]|[12][0-9]|3[0-2]))?"),
    "REACH": ("none", r"none|host"),
    "REACH_NET": ("", rf"({_OCTET}\.{_OCTET}\.{_OCTET})?"),
    # (disklatency.py's normalized spec)
    "DISK_LATENCY": ("none", r"none|read=[0-9]{1,5}ms,write=[0-9]{1,5}ms,flush=[0-9]{1,5}ms"),
}


class Untrusted(Exception):
    """A state directory, or something in it, that may not be used."""


def guest_uid():
    """The uid of the guests' user, or None when there is none."""
    try:
        return pwd.getpwnam(GUEST_USER).pw_uid
    except KeyError:
        return None


def _who(uid):
    try:
        return f"{pwd.getpwuid(uid).pw_name} ({uid})"
    except KeyError:
        return f"uid {uid}"


def _check_node(path, st, owners, kind):
    """path (lstat st) must be of kind ("directory", "file"), owned by one
    of owners and writable by no one else."""
    if stat.S_ISLNK(st.st_mode):
        raise Untrusted(f"{path} is a symbolic link")
    want = stat.S_ISDIR if kind == "directory" else stat.S_ISREG
    if not want(st.st_mode):
        raise Untrusted(f"{path} is not a {kind}")
    if st.st_uid not in owners:
        raise Untrusted(f"{path} belongs to {_who(st.st_uid)}, not to {_who(owners[0])}")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise Untrusted(f"{path} is writable by others (mode {stat.S_IMODE(st.st_mode):04o})")


def check_ancestors(path, uid):
    """Every directory above path (absolute) up to / is owned by root or uid
    and writable by no one else unless sticky. The check ends at the first
    one that does not exist: the caller makes it and what is below."""
    for parent in reversed(Path(path).parents):
        try:
            st = os.lstat(parent)
        except FileNotFoundError:
            return
        except OSError as e:
            raise Untrusted(f"{parent}: {e.strerror}") from e
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
            raise Untrusted(f"{parent} (above the state directory) is not a directory")
        if st.st_uid not in (0, uid):
            raise Untrusted(f"{parent} (above the state directory) belongs to "
                            f"{_who(st.st_uid)}: another user could replace what is below it")
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
            raise Untrusted(f"{parent} (above the state directory) is writable by others "
                            f"and not sticky (mode {stat.S_IMODE(st.st_mode):04o})")


def check_dir(state, uid=None, marker=None, new=False):
    """Raise Untrusted unless state may be used by uid (default: ours)."""
    uid = os.geteuid() if uid is None else uid
    state = Path(state)
    if not state.is_absolute():
        raise Untrusted(f"{state}: not an absolute path")
    check_ancestors(state, uid)
    try:
        st = os.lstat(state)
    except FileNotFoundError:
        if new:
            return
        raise Untrusted(f"{state} does not exist") from None
    _check_node(state, st, (uid,), "directory")
    guest = guest_uid()
    for name in OWN_DIRS + GUEST_DIRS:
        owners = (uid,) if name in OWN_DIRS or guest is None else (uid, guest)
        sub = state / name
        try:
            sub_st = os.lstat(sub)
        except FileNotFoundError:
            continue
        _check_node(sub, sub_st, owners, "directory")
        if name in FILES_IN:
            try:
                entries = list(os.scandir(sub))
            except FileNotFoundError:  # removed since its lstat, as a stop does
                continue
            for entry in entries:
                try:  # a record written meanwhile: its NAME.tmp renamed away
                    entry_st = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                _check_node(Path(entry.path), entry_st, (uid,), "file")
    if marker and (state / marker).exists():
        try:
            marker_st = os.lstat(state / marker)
        except FileNotFoundError:  # removed since, as a stop does
            return
        _check_node(state / marker, marker_st, (uid,), "file")


def _valid(name, value):
    if name not in SETTINGS:
        raise Untrusted(f"unknown setting {name!r}")
    if not isinstance(value, str) or not re.fullmatch(SETTINGS[name][1], value):
        raise Untrusted(f"setting {name}: {value!r} is not valid")
    return value


def settings_load(state):
    """The settings of state (defaults where not set); Untrusted when the
    file is not ours or not valid."""
    settings = {name: default for name, (default, _) in SETTINGS.items()}
    path = Path(state) / SETTINGS_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return settings
    except OSError as e:
        raise Untrusted(f"{path}: {e.strerror}") from e
    with os.fdopen(fd, "rb") as f:
        _check_node(path, os.fstat(f.fileno()), (os.geteuid(),), "file")
        data = f.read(MAX_SETTINGS + 1)
    if len(data) > MAX_SETTINGS:
        raise Untrusted(f"{path} is larger than {MAX_SETTINGS} bytes")
    try:
        loaded = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise Untrusted(f"{path} is not JSON: {e}") from e
    if not isinstance(loaded, dict):
        raise Untrusted(f"{path} is not a JSON object")
    try:
        for name, value in loaded.items():
            settings[name] = _valid(name, value)
    except Untrusted as e:
        raise Untrusted(f"{path}: {e}") from None
    return settings


def settings_save(state, changes):
    """Merge changes (name -> value strings) into state's settings and write
    them atomically (a private name in conf/, renamed over the file)."""
    settings = settings_load(state)
    for name, value in changes.items():
        settings[name] = _valid(name, value)
    path = Path(state) / SETTINGS_FILE
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(settings, f, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return settings


def lock(state, wait):
    """Hold the lock of state (flock on the directory) for the rest of this
    process, so that two commands never start, stop or change one state
    directory's servers at the same time: waits up to wait seconds for
    another holder, then raises TimeoutError. The descriptor is not inherited
    (Python's are close-on-exec): a supervisor or a namespace holder the
    command starts does not hold the lock after it. Returns the descriptor
    (closing it releases the lock)."""
    import fcntl
    import time
    fd = os.open(state, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                raise TimeoutError(f"another command has held {state} for {wait} s") from None
            time.sleep(0.05)


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="statedir.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    check = sub.add_parser("check")
    check.add_argument("--state", required=True)
    check.add_argument("--marker")
    check.add_argument("--new", action="store_true")
    show = sub.add_parser("settings")
    show.add_argument("--state", required=True)
    save = sub.add_parser("save")
    save.add_argument("--state", required=True)
    save.add_argument("pairs", nargs="*")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "check":
            check_dir(args.state, marker=args.marker, new=args.new)
        elif args.cmd == "settings":
            try:
                check_dir(args.state)
                settings = settings_load(args.state)
            except Untrusted as e:
                sys.stdout.write(f"ERR=state directory: {e}\0")
                return 1
            sys.stdout.write("".join(f"{k}={v}\0" for k, v in settings.items()) + "OK\0")
        else:
            check_dir(args.state)
            changes = {}
            for pair in args.pairs:
                name, sep, value = pair.partition("=")
                if not sep:
                    raise Untrusted(f"{pair!r} is not NAME=VALUE")
                changes[name] = value
            settings_save(args.state, changes)
    except Untrusted as e:
        print(f"state directory: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"state directory {args.state}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
