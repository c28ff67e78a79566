#!/usr/bin/env python3
"""knfsd.py — the Linux kernel's nfsd for nfs-server.sh --server knfsd.

The host kernel has no NFS server, so the supervisor boots a User-Mode
Linux guest (Debian's user-mode-linux: linux.uml, an ordinary process, no
KVM) inside the server's network namespace. The guest's PID 1 is
uml-init.c (built by nfs-server.sh start into STATE/bin/uml-init); it
exports its first disk, the image STATE/image.img (ubd0), as /export and
runs rpcbind, rpc.statd, rpc.mountd, nfsd and node_exporter from the
host's /usr. The namespace reaches the guest over a tap device:

    namespace  HOST_ADDR (TAP)  <->  eth0 GUEST_ADDR  guest

HOST_ADDR and GUEST_ADDR are NET.1 and NET.2 of the /30 NET.0 (the
environment's HERD_KNFSD_NET, default 10.77.0: nfs-server.sh start
--guest-net, which a virtual cluster sets to keep it apart from its own
subnet). The guest exports to HOST_ADDR and the settings' EXPORT_TO (a
cluster's subnet, whose hosts reach the guest through the namespace) and
routes that subnet, and nothing else, through HOST_ADDR (a default route
would send its name lookups to a resolver it cannot reach, each one then
waiting for its timeout instead of failing at once).

Clients in the namespace use nfs://GUEST_ADDR/export; herd's monitor
scrapes http://GUEST_ADDR:METRICS_PORT/metrics (node_exporter, plus
pool_stats as node_nfsd_pool_*_total); the guest's agent takes commands
on AGENT_PORT, each a list of words sent as netstrings after the guest's
secret (STATE/guest/secret, fresh for every boot: secret_write; see
uml-init.c's top comment). agent_send and agent_connect are the agent's
clients here and for vcluster.sh's kernel-client guests (vc-guest.py).

  knfsd.py agent SECRET_FILE COMMAND [ARG...]
                                (inside the namespace: the agent's reply
                                 on stdout; exit 0 on "ok", 1 when the
                                 agent refused (its reason on stderr), 2
                                 when SECRET_FILE is no usable secret, 3
                                 when the agent did not answer)
  knfsd.py url | metrics-url    (the export's NFSv3 URL; node_exporter's)

Standard library only (Debian 12's python3)."""

import contextlib
import os
import pwd
import re
import shutil
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import disklatency
import reach
import umlview

def guest_net(text):
    """The A.B.C of a guest network's /30 (NET.0-NET.3); ValueError if
    text is no such triple."""
    parts = text.split(".")
    if len(parts) != 3 or not all(p.isdigit() and len(p) <= 3 and int(p) <= 255 for p in parts):
        raise ValueError(f"HERD_KNFSD_NET '{text}' is not a network prefix like 10.77.0")
    return ".".join(str(int(p)) for p in parts)


NET = guest_net(os.environ.get("HERD_KNFSD_NET", "10.77.0"))
HOST_ADDR, GUEST_ADDR, NETMASK = f"{NET}.1", f"{NET}.2", "255.255.255.252"
PREFIX = 30
TAP = "knfsd0"
AGENT_PORT = 7070
METRICS_PORT = 9100
GUEST_MEM = "512M"
GUEST_MEM_BYTES = 512 << 20
AGENT_TIMEOUT = 30.0       # seconds to wait for the agent's reply
EXEC_TIMEOUT = 60          # seconds: exec's limit in the agent unless --timeout=S
                           # (uml-init.c's EXEC_TIMEOUT_S)
KILL_AFTER = 5             # seconds from a timed-out command's SIGTERM to SIGKILL
SECRET_BYTES = 32          # random bytes of a guest's secret (hex in its file)
READY_PROBE = 0.05         # seconds between two looks at a booting guest
POWEROFF_WAIT = 20         # seconds from the agent's poweroff to the guest's exit
# lockd reads these at its start: the NLM grace period (seconds; lockd
# rounds it up to a multiple of nlm_timeout, 3..20).
NLM_TIMEOUT = 3


def url(version=3):
    return f"nfs://{GUEST_ADDR}/export?version={version}"


def metrics_url():
    return f"http://{GUEST_ADDR}:{METRICS_PORT}/metrics"


def secret_write(path, group=None):
    """A fresh secret for a guest's next boot in path (SECRET_BYTES random
    bytes, hex): its agent takes only requests that carry it. Root's, mode
    0600, or with group (the gid of the guests' user, who reads it when
    linux.uml runs as that user) 0640. Whatever was at path before goes
    first (never written through)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    with os.fdopen(fd, "w") as f:
        if group is not None:
            os.fchown(fd, 0, group)
        os.fchmod(fd, 0o600 if group is None else 0o640)
        f.write(os.urandom(SECRET_BYTES).hex() + "\n")


def secret_read(path):
    """The secret in path (bytes); ValueError unless path is a regular file
    of root's, mode 0600 (or 0640 with the group of the guests' user),
    holding 32-128 hex digits: a file someone else could have written or
    read is no secret."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise ValueError(f"the guest's secret {path}: {e.strerror}") from e
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        mode = stat.S_IMODE(st.st_mode)
        guests = guest_group()
        if not stat.S_ISREG(st.st_mode) or st.st_uid != 0 or not (
                mode == 0o600 or (mode == 0o640 and guests is not None and st.st_gid == guests)):
            raise ValueError(f"the guest's secret {path}: not a regular file of root's "
                             f"with mode 0600 (or 0640 for group {umlview.GUEST_USER})")
        text = f.read(256).removesuffix(b"\n")
    if not re.fullmatch(rb"[0-9a-f]{32,128}", text):
        raise ValueError(f"the guest's secret {path}: not 32-128 hex digits")
    return text


def request(secret, argv):
    """The agent's request: a netstring "LEN:BYTES," of the secret and of
    each word of argv (str as the file system encodes it, or bytes), then
    a newline."""
    words = [secret] + [os.fsencode(w) for w in argv]
    return b"".join(b"%d:%s," % (len(w), w) for w in words) + b"\n"


def reply_timeout(argv):
    """Seconds to wait for the agent's reply to argv: AGENT_TIMEOUT, and
    for exec also the time it may run silent (its --timeout=S or
    EXEC_TIMEOUT, then KILL_AFTER)."""
    if not argv or argv[0] != "exec":
        return AGENT_TIMEOUT
    m = re.fullmatch(r"--timeout=([0-9]{1,9})", str(argv[1]) if len(argv) > 1 else "")
    return AGENT_TIMEOUT + (int(m.group(1)) if m else EXEC_TIMEOUT) + KILL_AFTER


def agent_connect(secret_file, argv, timeout=AGENT_TIMEOUT, addr=GUEST_ADDR):
    """A connection to the agent of the guest at addr with the request
    sent: argv (a command and its arguments, each word as it is) and the
    secret of secret_file. OSError when the agent cannot be reached,
    ValueError when the secret cannot be used."""
    data = request(secret_read(secret_file), argv)
    conn = socket.create_connection((addr, AGENT_PORT), timeout=timeout)
    try:
        conn.sendall(data)
    except OSError:
        conn.close()
        raise
    return conn


def agent_send(secret_file, argv, timeout=None, addr=GUEST_ADDR):
    """One command (argv) to the agent of the guest at addr, with the secret
    of secret_file; (ok, text after the status line). OSError when the
    agent cannot be reached or does not answer within timeout (default
    reply_timeout), ValueError when the secret cannot be used."""
    with agent_connect(secret_file, argv, timeout or reply_timeout(argv), addr) as conn:
        data = b""
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
    status, _, rest = data.decode(errors="replace").partition("\n")
    if status == "ok":
        return True, rest
    return False, status.removeprefix("error: ") or "no reply"


def nlm_grace(grace):
    """lockd's module parameters for an NLM grace of about `grace` seconds
    (0: the shortest lockd allows, NLM_TIMEOUT)."""
    return f"nlm_grace_period={max(int(grace), 1)} nlm_timeout={NLM_TIMEOUT}"


def guest_config(settings):
    """STATE/guest/config, the KEY=VALUE lines uml-init.c reads."""
    # (--reach host: the host's end of the veth pair, routed like a cluster)
    subnets = settings.get("EXPORT_TO", "").split() + reach.guest_subnets(settings)
    disk = disklatency.parse("DISK_LATENCY", disklatency.current(settings))
    lines = {
        "addr": GUEST_ADDR, "netmask": NETMASK,
        "routes": " ".join(f"{net},{HOST_ADDR}" for net in subnets),
        "client": " ".join([HOST_ADDR] + subnets),
        "secure_client": " ".join(reach.guest_subnets(settings)),
        "fs": settings["FS"], "threads": settings["THREADS"],
        "mode": "async" if settings["MODE"] == "async" else "sync",
        "grace": settings["GRACE"], "lease": settings["LEASE"], "nlm": settings["NLM"],
        "hostname": settings["HOST_NAME"] or "knfsd", "agent_port": AGENT_PORT,
        "metrics_port": METRICS_PORT, "lockd_params": nlm_grace(settings["GRACE"]),
        "lockd_grace_min": NLM_TIMEOUT,
        # the agent's cap of `threads`: serverctl.py's KNFSD_THREADS_MAX
        "threads_max": os.environ.get("HERD_KNFSD_THREADS_MAX", ""),
        # the export on dm-delay: read, write and flush delays in ms, or
        # none (disklatency.py)
        "disk_delay": " ".join(disk.guest_words()) if disk else "",
    }
    return "".join(f"{k}={v}\n" for k, v in lines.items())


def guest_group():
    """The gid of the guests' user, or None when there is none."""
    try:
        return pwd.getpwnam(umlview.GUEST_USER).pw_gid
    except KeyError:
        return None


def guest_user():
    """(uid, gid) of the guests' user (umlview.py: linux.uml runs as it)."""
    try:
        pw = pwd.getpwnam(umlview.GUEST_USER)
    except KeyError:
        raise OSError(f"user {umlview.GUEST_USER} is missing (cluster-configs/local/install.sh"
                      " makes it)") from None
    return pw.pw_uid, pw.pw_gid


def guest_dir_make(path, uid, gid):
    """A guest's directory made afresh (whatever an earlier guest left there
    is removed without following a link), root's, with log/ of the guests'
    user: the only part of it the guest writes."""
    if path.is_symlink() or path.exists():
        if path.is_symlink() or not path.is_dir():
            path.unlink()
        else:
            shutil.rmtree(path)
    path.mkdir(mode=0o755)
    (path / "log").mkdir(mode=0o755)
    os.chown(path / "log", uid, gid)


class Guest:
    """The UML guest of one server: its tap, its configuration, its argv."""

    def __init__(self, state, settings):
        self.state = Path(state)
        self.settings = settings
        self.guest_dir = self.state / "guest"
        self.secret = self.guest_dir / "secret"

    def prepare(self):
        """STATE/guest (config, secret, log/, statd-owner), the image and the
        tap for the guests' user; raises OSError or
        subprocess.CalledProcessError."""
        uid, gid = guest_user()
        guest_dir_make(self.guest_dir, uid, gid)
        (self.guest_dir / "config").write_text(guest_config(self.settings))
        # (the guest reads it through hostfs as the guests' user: its group)
        secret_write(self.secret, gid)
        image = self.state / "image.img"
        os.chown(image, uid, gid)
        os.chmod(image, 0o600)
        # rpc.statd in the guest runs as the owner of its sm/ directories:
        # Debian's statd user (uml-init copies this file's owner).
        owner = self.guest_dir / "statd-owner"
        owner.touch()
        try:
            shutil.chown(owner, "statd")
        except (LookupError, OSError):
            pass
        for argv in (["ip", "tuntap", "add", "dev", TAP, "mode", "tap", "user", str(uid)],
                     ["ip", "addr", "add", f"{HOST_ADDR}/{PREFIX}", "dev", TAP],
                     ["ip", "link", "set", TAP, "up"]):
            subprocess.run(argv, stdin=subprocess.DEVNULL, check=True)

    def argv(self):
        """linux.uml in a view of the host of its own (umlview.py), in a mount
        namespace of its own; HERD_STATE names the state directory in its
        command line (for finding it), the guest ignores it."""
        s = self.state
        view = s / "run" / "view"
        view.mkdir(exist_ok=True)
        return ["unshare", "--mount", "--propagation", "private", "--",
                sys.executable, str(Path(umlview.__file__).resolve()), "run", "--role", "server",
                "--view", str(view), "--guest-dir", str(self.guest_dir),
                "--init", f"{s}/bin/uml-init", "--preload", f"{s}/bin/uml-xstate.so",
                "--image", f"{s}/image.img", "--mem", str(GUEST_MEM_BYTES), "--",
                f"mem={GUEST_MEM}", "umid=herd-knfsd", f"eth0=tuntap,{TAP}", "con=null",
                "con0=null,fd:1", "ssl=null", "pty.legacy_count=0", f"HERD_STATE={s}"]

    def wait_ready(self, child, timeout, stopping=lambda: False):
        """Until nfsd in the guest runs (its agent answers with the thread
        count); False when the guest exits first, stopping() says so or
        timeout passes."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if child.poll() is not None or stopping():
                return False
            try:
                ok, text = agent_send(self.secret, ["read", "/proc/fs/nfsd/threads"], 2.0)
                if ok and text.strip() not in ("", "0"):
                    return True
            except (OSError, ValueError):
                pass
            time.sleep(READY_PROBE)
        return False

    def poweroff(self, child):
        """Ask the guest to stop nfsd, unmount and power off; True when it
        has exited within POWEROFF_WAIT s."""
        if child.poll() is not None:
            return True
        try:
            agent_send(self.secret, ["poweroff"], 5.0)
        except (OSError, ValueError):
            return False
        try:
            child.wait(POWEROFF_WAIT)
            return True
        except subprocess.TimeoutExpired:
            return False


def main(argv):
    if argv in (["url"], ["metrics-url"]):
        print(url() if argv[0] == "url" else metrics_url())
        return 0
    if len(argv) >= 3 and argv[0] == "agent":
        try:
            ok, text = agent_send(argv[1], argv[2:])
        except ValueError as e:
            print(f"knfsd.py: {e}", file=sys.stderr)
            return 2
        except OSError as e:
            print(f"knfsd.py: the guest's agent at {GUEST_ADDR}:{AGENT_PORT}: {e}",
                  file=sys.stderr)
            return 3
        if ok:
            sys.stdout.write(text)
            return 0
        print(f"knfsd.py: {text}", file=sys.stderr)
        return 1
    print("usage: knfsd.py agent SECRET_FILE COMMAND [ARG...] | url | metrics-url",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
