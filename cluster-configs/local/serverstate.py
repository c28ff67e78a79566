"""serverstate.py — the embedded NFS server's state directory as both of
its programs see it: nfsserver.py (the verbs of nfs-server.sh) and
supervisor.py (the process that holds the server's namespaces). The fixed
ports, the bounds of every stop, the records of the processes they start
(STATE/pid/NAME: "PID START", START from /proc/PID/stat, so that a reused
PID is never mistaken for ours), and stopping them with a note of what
needed SIGKILL (STATE/run/killed, for stop's report). Standard library
only (Debian 12's python3)."""

import json
import os
import shutil
import socket
import sys
import time
from pathlib import Path

import procinfo

MARKER = ".herd-nfs-server"  # in a state directory that nfs-server.sh made


def env_seconds(name, default):
    text = os.environ.get(name, "")
    if not text:
        return default
    if not text.isdigit() or int(text) > 86400:
        sys.exit(f"nfs-server.sh: {name} must be a number of seconds, 0..86400")
    return int(text)


# Fixed ports inside the namespace (only its lo exists, so they never clash
# with the host's): NFS 2049 and MOUNT 20048 are in ganesha.conf.in; the NLM
# port (ganesha's NLM_Port, otherwise random at every start) and statd's;
# smbd's, the standard SMB port. The Samba user clients log in as (the
# unix account root, see smb.conf.in).
NLM_PORT = 32803
STATD_PORT = 32765
SMB_PORT = 445
SMB_USER = "herd"

# Seconds from SIGTERM to SIGKILL.
STOP_TIMEOUT = env_seconds("NFS_SERVER_STOP_TIMEOUT", 10)  # the servers, by default
# ganesha 4.3 with NLM: once it has monitored a lock client with statd, its
# shutdown calls SM_UNMON after it has already shut its RPC event channels,
# which times out (3 s), and then hangs ~9 s more: about 12 s instead of
# 0.1 s. With NLM on, ganesha gets this long after SIGTERM, then SIGKILL
# (everything it wrote is in the kernel already; nothing is lost).
NLM_STOP_TIMEOUT = env_seconds("NFS_SERVER_NLM_STOP_TIMEOUT", 1)
STATD_STOP, RPCBIND_STOP, SMBD_STOP, SMBD_LEFTOVER_STOP, UML_STOP = 5, 5, 5, 2, 5
UMOUNT_BOUND = 10  # seconds the supervisor's umount of the export may take


def ganesha_stop_timeout(nlm):
    """Seconds ganesha gets from SIGTERM to SIGKILL."""
    return NLM_STOP_TIMEOUT if nlm and NLM_STOP_TIMEOUT < STOP_TIMEOUT else STOP_TIMEOUT


def supervisor_stop_timeout(nlm):
    """Seconds the supervisor gets from SIGTERM to SIGKILL: its clean-up
    with every step at its bound (smbd and smbd's leftovers, ganesha, statd,
    rpcbind, each with KILL_WAIT after a SIGKILL; the export's umount). Cut
    short, it would leave what it was running (a umount, a sync) in the
    namespace."""
    kill = int(procinfo.KILL_WAIT)
    return ((SMBD_STOP + kill) + SMBD_LEFTOVER_STOP + (ganesha_stop_timeout(nlm) + kill)
            + (STATD_STOP + kill) + (RPCBIND_STOP + kill) + UMOUNT_BOUND)


class Logger:
    """One line a message: "PREFIX: MSG" on stderr (nfsserver.py), or with
    a time stamp on stdout (supervisor.py's log file). A line a full file
    system cannot take is lost; the program goes on."""

    def __init__(self, prefix, fd=2, stamp=False):
        self.prefix, self.fd, self.stamp = prefix, fd, stamp

    def __call__(self, msg):
        stamp = time.strftime("%Y-%m-%d %H:%M:%S ") if self.stamp else ""
        try:
            os.write(self.fd, f"{stamp}{self.prefix}: {msg}\n".encode(errors="replace"))
        except OSError:
            pass


def write_atomically(path, text):
    tmp = Path(f"{path}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def record(state, name, pid):
    """Remember pid (and its start time) as STATE/pid/NAME."""
    write_atomically(Path(state) / "pid" / name, f"{pid} {procinfo.proc_start(pid) or 0}\n")


def recorded(state, name):
    """(pid, start) recorded as NAME, or None: read as data (two numbers)."""
    try:
        words = (Path(state) / "pid" / name).read_text().split()
    except (OSError, UnicodeDecodeError):
        return None
    if not words or not words[0].isdigit() or len(words[0]) > 9:
        return None
    start = int(words[1]) if len(words) > 1 and words[1].isdigit() else -1
    return int(words[0]), start


def alive(state, name):
    """The process recorded as NAME exists (same PID and start time) and is
    not a zombie."""
    rec = recorded(state, name)
    return rec is not None and procinfo.running(*rec)


def note_killed(state, entry):
    """STATE/run/killed gets "PID (NAME)": a process that needed SIGKILL."""
    try:
        with open(Path(state) / "run" / "killed", "a") as f:
            f.write(f"{entry}\n")
    except OSError:
        pass


def stop_pid(log, state, label, pid, start, seconds):
    """procinfo.stop of that very process, saying so in log, and noting a
    SIGKILL it needed. Callers check alive afterwards."""
    log(f"stopping {label} (pid {pid})")
    gone, killed = procinfo.stop(pid, start, seconds)
    if killed:
        log(f"{label} (pid {pid}) did not stop within {seconds} s of SIGTERM: SIGKILL")
        note_killed(state, killed)
    if not gone:
        log(f"{label} (pid {pid}) is still there after SIGTERM, {seconds} s and SIGKILL")


def terminate(log, state, name, seconds=STOP_TIMEOUT):
    """stop_pid of the process recorded as NAME, if it runs."""
    rec = recorded(state, name)
    if rec is not None and procinfo.running(*rec):
        stop_pid(log, state, name, rec[0], rec[1], seconds)


def netns_of(pid):
    """What /proc/PID/ns/net links to ("net:[N]"), or None."""
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def smbd_leftovers(netns):
    """PIDs of live smbd processes in network namespace netns ("net:[N]"):
    smbd forks a child per client connection plus smbd-notifyd and
    cleanupd, which nobody recorded."""
    exe = shutil.which("smbd")
    if not exe or not netns:
        return []
    exe = os.path.realpath(exe)
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            if os.readlink(p / "exe") != exe or os.readlink(p / "ns" / "net") != netns:
                continue
        except OSError:
            continue
        if procinfo.running(int(p.name)):
            found.append(int(p.name))
    return found


# ------------------------------------------------------------------ the supervisor's socket

SOCKET_NAME = "supervisor.sock"  # in STATE/run, mode 0600


def supervisor_connect(state, timeout):
    """A connection to the supervisor of state (connected relative to its
    directory: a long state path would not fit sun_path)."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(timeout)
    old_cwd = os.getcwd()
    try:
        os.chdir(Path(state) / "run")
        conn.connect(SOCKET_NAME)
    except OSError:
        conn.close()
        raise
    finally:
        os.chdir(old_cwd)
    return conn


def supervisor_send(state, cmd, timeout=60.0):
    """Send {"cmd": cmd} to the supervisor of state; the reply (a dict).
    OSError when it cannot be reached, ValueError for a reply not JSON."""
    with supervisor_connect(state, timeout) as conn:
        conn.sendall(json.dumps({"cmd": cmd}).encode() + b"\n")
        reply = b""
        while not reply.endswith(b"\n"):
            data = conn.recv(65536)
            if not data:
                break
            reply += data
    return json.loads(reply.decode())
