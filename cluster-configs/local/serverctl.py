"""serverctl.py — an embedded NFS server as the verbs of nfs-server.sh
(nfsserver.py, knfsdctl.py) see it: its state directory (checked, locked,
its settings read as data), the records of its processes, the ways into
its network namespace, whether it answers, its configuration files, and
stopping it whole. Also the ctx that netlink.py changes its link through.
Standard library only (Debian 12's python3)."""

import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import netlink
import procinfo
import reach
import serverstate as ss
import statedir

HERE = Path(__file__).resolve().parent
TEMPLATE = HERE / "ganesha.conf.in"
SMB_TEMPLATE = HERE / "smb.conf.in"
NOSYNC_SRC = HERE / "nosync.c"
SUPERVISOR = HERE / "supervisor.py"
KNFSD_PY = HERE / "knfsd.py"
UML_INIT_SRC = HERE / "uml-init.c"
UML_XSTATE_SRC = HERE / "uml-xstate.c"
PATH_EXTRA = "/usr/local/sbin:/usr/sbin:/sbin"

LOCK_WAIT = ss.env_seconds("NFS_SERVER_LOCK_WAIT", 300)  # for another command on STATE
START_TIMEOUT = ss.env_seconds("NFS_SERVER_START_TIMEOUT", 30)  # until the server answers
# What stop finds in the server's network namespace once the supervisor
# and the recorded processes are gone (smbd's children, commands run with
# exec, what the supervisor ran) gets this long from SIGTERM to SIGKILL.
SWEEP_TIMEOUT = 2
KNFSD_THREADS_MAX = 1024  # nfsd threads in a 512 MiB guest (passed on to its agent)
KNFSD_HOST_FREE_MIN_KB = 1024  # less free beside the disk image: the guest's writes fail
# Records stop takes down, in this order after the supervisor.
RECORDS = ("uml", "smbd", "statd", "rpcbind", "supervisor", "launcher", "linkdelay")
UNSAFE_STATE = re.compile(r"/|/(bin|boot|dev|etc|lib|proc|sbin|sys|usr).*|/run|/var")

log = ss.Logger("nfs-server.sh")


class Die(Exception):
    """One line on stderr, exit 1."""


class BadValue(Exception):
    """A value the command cannot take: one line on stderr, exit 2."""


class Usage(Exception):
    """A line (may be empty), then the usage on stderr, exit 2."""


def run_quiet(argv, timeout=None, **kw):
    """argv's exit status, its output dropped (127: it could not run)."""
    try:
        return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=timeout, **kw).returncode
    except subprocess.TimeoutExpired:
        return 124
    except OSError:
        return 127


def run_text(argv, timeout=60):
    """(status, stdout, stderr) of argv."""
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           errors="replace", timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return 124, "", f"{argv[0]}: timed out after {timeout} s"
    except OSError as e:
        return 127, "", f"{argv[0]}: {e.strerror}"


def have(tool):
    return shutil.which(tool) is not None

class Args:
    """A verb's words: options with a value (--name V or --name=V), flags,
    and what follows "--"."""

    def __init__(self, verb, words, values=(), flags=(), rest_after_dashes=False,
                 free=False):
        self.values, self.flags, self.rest, self.free = {}, set(), [], []
        i = 0
        while i < len(words):
            w = words[i]
            name, eq, joined = w.partition("=")
            if w == "--" and rest_after_dashes:
                self.rest = words[i + 1:]
                break
            if name in values:
                if eq:
                    self.values.setdefault(name, []).append(joined)
                    i += 1
                else:
                    self.values.setdefault(name, []).append(words[i + 1] if i + 1 < len(words)
                                                           else None)
                    i += 2
            elif w in flags:
                self.flags.add(w)
                i += 1
            elif w in ("-h", "--help"):
                raise Usage("")
            elif free:
                self.free.append(w)
                i += 1
            else:
                raise Usage(f"{verb}: unknown argument {w}")

    def get(self, name, default=""):
        """The last value given for name (None: given without a value)."""
        return self.values[name][-1] if name in self.values else default

    def all(self, name):
        return self.values.get(name, [])


class Server:
    """One state directory's server: its paths, settings, records, and the
    ways into its namespace. Also the ctx netlink.py works with."""

    def __init__(self, state, verb):
        if not state:
            raise Die(f"{verb}: --state DIR is required")
        self.state = Path(os.path.realpath(state))
        text = str(self.state)
        if UNSAFE_STATE.fullmatch(text):
            raise Die(f"refusing state directory {text}")
        if not re.fullmatch(r"/[A-Za-z0-9._/+-]+", text):
            raise Die(f"state directory {text}: use only letters, digits and ._/+- in its path")
        self.trust()
        self.export = self.state / "export"
        self.image = self.state / "image.img"
        self.statd_dir = self.state / "statd"
        self.smb_dir = self.state / "smb"
        self.settings = {name: default for name, (default, _) in statedir.SETTINGS.items()}
        self.start_timeout = START_TIMEOUT
        self.lock_fd = None
        self.netns_fd = None

    def trust(self):
        """A state directory this program may use (statedir.py: not another
        user's, nor below one another user could swap; one that does not
        exist yet is checked by its parents)."""
        try:
            statedir.check_dir(self.state, marker=ss.MARKER, new=True)
        except statedir.Untrusted as e:
            raise Die(f"state directory: {e}") from None

    @property
    def server(self):
        return self.settings["SERVER"]

    @property
    def nlm(self):
        return self.settings["NLM"] == "1"

    @property
    def smb(self):
        return self.settings["SMB"] == "1"

    @property
    def reach_net(self):
        """The block A.B.N of --reach host's veth pair (reach.py), or ''."""
        return self.settings["REACH_NET"] if self.settings["REACH"] == "host" else ""

    def addr(self):
        """ganesha's (and smbd's) address in the URLs: the namespace's end
        of the veth pair with --reach host (reachable from the host and
        from inside), else 127.0.0.1 (from inside only)."""
        return reach.addresses(self.reach_net)[1] if self.reach_net else "127.0.0.1"

    def smb_url(self):
        return f"smb://{self.addr()}/export"

    def is_ours(self):
        return (self.state / ss.MARKER).is_file()

    def lock(self):
        """The rest of this command with the lock of the state directory."""
        if self.lock_fd is None:
            try:
                self.lock_fd = statedir.lock(self.state, LOCK_WAIT)
            except (TimeoutError, OSError) as e:
                raise Die(str(e)) from None

    def load_settings(self):
        try:
            statedir.check_dir(self.state)
            self.settings = statedir.settings_load(self.state)
        except statedir.Untrusted as e:
            raise Die(f"state directory: {e}") from None
        self.child_env()

    def save_settings(self, **changes):
        try:
            self.settings = statedir.settings_save(self.state, changes)
        except (statedir.Untrusted, OSError) as e:
            raise Die(f"cannot save the settings of {self.state}: {e}") from None

    def child_env(self):
        """What knfsd.py (imported by the supervisor, or run for the agent)
        reads from the environment: the guest's network and the thread cap."""
        os.environ["HERD_KNFSD_NET"] = self.settings["GUEST_NET"]
        os.environ["HERD_KNFSD_THREADS_MAX"] = str(KNFSD_THREADS_MAX)

    # -- records (serverstate.py)

    def log(self, msg):
        log(msg)

    def recorded(self, name):
        rec = ss.recorded(self.state, name)
        return rec[0] if rec else None

    def record_text(self, name):
        """The record's text ("PID START"), to tell a new one from it."""
        try:
            return (self.state / "pid" / name).read_text()
        except OSError:
            return ""

    def alive(self, name):
        return ss.alive(self.state, name)

    def record(self, name, pid):
        ss.record(self.state, name, pid)

    def terminate(self, name, seconds=ss.STOP_TIMEOUT):
        ss.terminate(log, self.state, name, seconds)

    def server_proc(self):
        """The name the NFS server's process is recorded as: ganesha, or
        uml (linux.uml, the guest that runs kernel nfsd)."""
        return "uml" if self.server == "knfsd" else "ganesha"

    def running(self):
        """A supervisor runs for this state directory."""
        return self.is_ours() and self.alive("supervisor")

    # -- the namespace

    def in_netns(self, argv):
        return ["nsenter", f"--net=/proc/{self.recorded('supervisor')}/ns/net", "--"] + argv

    def knfsd_agent(self, *argv, timeout=60):
        """One command to the guest's agent, each word as it is, with the
        guest's secret (fresh for every boot): (rc, stdout, stderr). rc 1:
        the agent refused (its reason on stderr); 3: it did not answer."""
        return run_text(self.in_netns([sys.executable, str(KNFSD_PY), "agent",
                                       str(self.state / "guest" / "secret"), *argv]),
                        timeout=timeout)

    def knfsd_ready(self):
        """The guest's agent answers, with nfsd running (the agent listens
        once nfsd is up and, with grace 0, lockd's grace is over)."""
        rc, out, _ = self.knfsd_agent("read", "/proc/fs/nfsd/threads")
        return rc == 0 and out.strip() not in ("", "0")

    def url(self):
        if self.server == "knfsd":
            return f"nfs://{self.settings['GUEST_NET']}.2/export?version=3"
        return f"nfs://{self.addr()}{self.export}?version=3"

    def nfs_answers(self, seconds):
        """nfs-ls of the export answers within seconds: from inside, or with
        --reach host from the host (over the veth pair, and for a kernel
        nfsd through the namespace to its guest)."""
        argv = ["timeout", str(seconds), "nfs-ls", self.url()]
        return run_quiet(argv if self.reach_net else self.in_netns(argv)) == 0

    def nlm_answers(self, seconds):
        """ganesha's NLM (v4) is registered with rpcbind and answers its NULL
        call; true when ganesha runs without NLM. ganesha answers NFS before
        it has registered NLM: with both CPUs busy a client's locks met no
        NLM for the 4 s after a restart."""
        if not self.nlm or self.server == "knfsd":
            return True
        return run_quiet(self.in_netns(["timeout", str(seconds), "rpcinfo", "-T", "tcp",
                                        "127.0.0.1", "100021", "4"])) == 0

    def smb_answers(self, seconds):
        """smbclient logs in as herd and lists the share, from inside."""
        return run_quiet(self.in_netns(["timeout", str(seconds), "smbclient", f"//{self.addr()}/export",
                                        "-A", str(self.smb_dir / "credentials"), "-m", "SMB3",
                                        "-c", "ls"])) == 0

    def wait_ready(self, seconds):
        """Until the server answers (NFS, NLM, kernel nfsd's agent), seconds
        more the time of one probe over the link; False early when the
        server or the supervisor dies."""
        probe = netlink.probe_timeout(self)
        deadline = time.monotonic() + seconds + probe
        while time.monotonic() < deadline:
            if not self.alive("supervisor"):
                log("the namespace supervisor died")
                return False
            if not self.alive(self.server_proc()):
                log(f"the NFS server ({self.server_proc()}) exited")
                return False
            if self.nfs_answers(probe) and self.nlm_answers(probe) and (
                    self.server != "knfsd" or self.knfsd_ready()):
                return True
            time.sleep(0.05)
        log(f"the server did not answer within {seconds + probe} s")
        return False

    def wait_smb_ready(self, seconds):
        probe = netlink.probe_timeout(self)
        deadline = time.monotonic() + seconds + probe
        while time.monotonic() < deadline:
            if not self.alive("smbd"):
                log(f"smbd exited (see {self.state}/log/smbd.stdout)")
                return False
            if self.smb_answers(probe):
                return True
            time.sleep(0.05)
        log(f"smbd did not answer within {seconds + probe} s")
        return False

    def wait_new_record(self, name, old, ready=lambda: True):
        """Until NAME's record differs from old and that process runs (and
        ready()); False when the supervisor dies or START_TIMEOUT passes."""
        for _ in range(START_TIMEOUT * 20):
            if self.record_text(name) != old and self.alive(name) and ready():
                return True
            if not self.alive("supervisor"):
                return False
            time.sleep(0.05)
        return False

    def sup_send(self, verb, cmd):
        """A command to the supervisor (start-ganesha, start-statd,
        start-smbd); False after one line when refused or unanswered."""
        try:
            reply = ss.supervisor_send(self.state, cmd)
        except (OSError, ValueError) as e:
            log(f"{verb}: supervisor: cannot reach it at {self.state}/run/{ss.SOCKET_NAME}: {e}")
            return False
        if not reply.get("ok"):
            log(f"{verb}: supervisor: {reply.get('error')}")
            return False
        return True

    def log_tail(self):
        """The last lines of every log, on stderr. The knfsd guest's own logs
        are its user's files: read without following a link it may have put
        there, and only the last 64 KiB."""
        names = ["supervisor.log", "ganesha.stderr", "ganesha.log", "statd.log", "smbd.stdout",
                 "guest-console.log"]
        paths = [self.state / "log" / n for n in names]
        paths += sorted((self.state / "guest" / "log").glob("*.log"))
        for path in paths:
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError:
                continue
            with os.fdopen(fd, "rb") as f:
                st = os.fstat(fd)
                if not st.st_size or not (st.st_mode & 0o170000) == 0o100000:
                    continue
                f.seek(max(0, st.st_size - 65536))
                lines = f.read().decode(errors="replace").splitlines()[-25:]
            sys.stderr.write(f"--- last lines of {path}\n" + "".join(f"{x}\n" for x in lines))

    # -- configuration files

    def write_conf(self):
        """conf/ganesha.conf from the template and the settings. GRACE 0 is
        Graceless = true; Grace_Period then equals the lease, which keeps
        ganesha from warning that the grace is shorter than the lease."""
        st = self.settings
        graceful = int(st["GRACE"]) > 0
        subst = {"@STATE@": str(self.state), "@EXPORT@": str(self.export),
                 "@WORKERS@": st["WORKERS"],
                 "@NFS_COMMIT@": "true" if st["MODE"] == "sync-writes" else "false",
                 "@NLM@": "true" if self.nlm else "false", "@NLM_PORT@": str(ss.NLM_PORT),
                 "@GRACELESS@": "false" if graceful else "true",
                 "@GRACE@": st["GRACE"] if graceful else st["LEASE"], "@LEASE@": st["LEASE"],
                 "@REACH_CLIENT@": ""}
        if self.reach_net:
            subst["@REACH_CLIENT@"] = (f"    CLIENT {{\n        Clients = {reach.addresses(self.reach_net)[0]};"
                                       "\n        PrivilegedPort = true;\n    }")
        self.write_template(TEMPLATE, "ganesha.conf", subst)

    def write_smb_conf(self):
        """conf/smb.conf from smb.conf.in and the settings. --smb-sendfile
        yes also sets aio read size 0: smbd only sendfiles reads it does
        synchronously (see smb.conf.in)."""
        st = self.settings
        subst = {"@SMB@": str(self.smb_dir), "@LOG@": str(self.state / "log"),
                 "@EXPORT@": str(self.export), "@SENDFILE@": st["SMB_SENDFILE"],
                 "@AIO_READ_SIZE@": "0" if st["SMB_SENDFILE"] == "yes" else "1",
                 "@WORKERS@": st["SMB_WORKERS"]}
        self.write_template(SMB_TEMPLATE, "smb.conf", subst)

    def write_template(self, template, name, subst):
        text = template.read_text()
        for key, value in subst.items():
            text = text.replace(key, value)
        ss.write_atomically(self.state / "conf" / name, text)

    def smb_setup(self):
        """--smb: Samba's directories (smb.conf.in points private, lock,
        state, cache, pid, ncalrpc, binddns and usershare dirs into
        STATE/smb: nothing is written under /var/lib/samba, /var/cache/samba,
        /run/samba or /var/log/samba), a random password for user herd (the
        passdb entry is for the unix account root, which the username map
        names herd; no account is added to the host), the credentials file
        for `smbclient -A`."""
        for d in ("private", "lock", "state", "cache", "pid", "ncalrpc", "binddns", "usershares"):
            (self.smb_dir / d).mkdir(parents=True, exist_ok=True)
        os.chmod(self.smb_dir, 0o700)
        os.chmod(self.smb_dir / "private", 0o700)
        self.write_smb_conf()
        (self.smb_dir / "users.map").write_text(f"root = {ss.SMB_USER}\n")
        password = secrets.token_urlsafe(18).replace("-", "").replace("_", "")
        old = os.umask(0o077)
        try:
            (self.smb_dir / "password").write_text(f"{password}\n")
            (self.smb_dir / "credentials").write_text(
                f"username = {ss.SMB_USER}\npassword = {password}\n")
        finally:
            os.umask(old)
        with open(self.state / "log" / "smbpasswd.log", "ab") as out:
            p = subprocess.run(["smbpasswd", "-c", str(self.state / "conf" / "smb.conf"), "-a",
                                "-s", "root"], input=f"{password}\n{password}\n".encode(),
                               stdout=out, stderr=out, timeout=60, check=False)
        if p.returncode != 0:
            raise Die(f"start: smbpasswd failed (see {self.state}/log/smbpasswd.log)")

    def cc(self, what, argv, logname):
        """Compile with cc; False after the compiler's messages."""
        with open(self.state / "log" / logname, "wb") as err:
            ok = subprocess.run(["cc", *argv], stdin=subprocess.DEVNULL, stderr=err,
                                timeout=300, check=False).returncode == 0
        if not ok:
            log(what)
            sys.stderr.write((self.state / "log" / logname).read_text(errors="replace"))
        return ok

    def build_nosync(self):
        """--async runs ganesha under nosync (nosync.c beside this file: a
        seccomp filter that makes the sync family of system calls return 0
        untouched, see its top comment), compiled here into STATE/bin: this
        program runs from a plain checkout (tests, jobs/, the virtual
        cluster) with no build directory it could know of, and so the helper
        always matches its source. Also checks that this kernel takes it."""
        nosync = self.state / "bin" / "nosync"
        if not self.cc(f"start: --async: cc {NOSYNC_SRC} failed:",
                       ["-std=gnu11", "-O2", "-Wall", "-Wextra", "-o", str(nosync),
                        str(NOSYNC_SRC)], "nosync-cc.log"):
            return False
        if run_quiet([str(nosync), "true"]) != 0:
            log("start: --async: cannot install the seccomp filter here")
            return False
        return True

    def knfsd_build_init(self):
        """uml-init.c (static: it runs before the guest has mounted anything)
        into STATE/bin/uml-init, and uml-xstate.c (the shim linux.uml needs
        on hosts with a large XSAVE area) into STATE/bin/uml-xstate.so."""
        bin_dir = self.state / "bin"
        return self.cc(f"start: cc -static {UML_INIT_SRC} failed (libc6-dev has the static libc):",
                       ["-static", "-std=gnu11", "-O2", "-Wall", "-Wextra", "-o",
                        str(bin_dir / "uml-init"), str(UML_INIT_SRC)], "uml-init-cc.log") and \
            self.cc(f"start: cc {UML_XSTATE_SRC} failed:",
                    ["-shared", "-fPIC", "-std=gnu11", "-O2", "-Wall", "-Wextra", "-o",
                     str(bin_dir / "uml-xstate.so"), str(UML_XSTATE_SRC), "-ldl", "-lpthread"],
                    "uml-xstate-cc.log")

    def make_image(self):
        fs, size = self.settings["FS"], self.settings["SIZE"]
        if fs in ("dir", "tmpfs"):
            return
        with open(self.image, "wb") as f:
            f.truncate(parse_size(size))
        mkfs = {"xfs": ["mkfs.xfs", "-q", "-f"],
                "ext4": ["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"],
                "btrfs": ["mkfs.btrfs", "-q", "-f"]}[fs]
        if subprocess.run(mkfs + [str(self.image)], stdin=subprocess.DEVNULL,
                          stdout=sys.stderr, timeout=600, check=False).returncode != 0:
            raise Die(f"start: {mkfs[0]} failed")

    # -- stopping

    def netns_pin(self):
        """Open a descriptor on the server's network namespace
        (STATE/pid/netns) through a recorded process that is alive and in
        it, and return the namespace's inode. While the descriptor is open
        the namespace stays, and so its number, which the kernel hands to a
        new namespace once this one is gone. None when no recorded process
        is there to prove it."""
        try:
            want = (self.state / "pid" / "netns").read_text().strip()
        except OSError:
            return None
        for name in ("supervisor", "ganesha", "uml", "rpcbind", "statd", "smbd", "linkdelay"):
            rec = ss.recorded(self.state, name)
            if rec is None or not procinfo.running(*rec):
                continue
            try:
                fd = os.open(f"/proc/{rec[0]}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                continue
            # (that very process, still alive after the open, still in it)
            if procinfo.running(*rec) and os.readlink(f"/proc/self/fd/{fd}") == want:
                self.netns_fd = fd
                return os.fstat(fd).st_ino
            os.close(fd)
        return None

    def netns_sweep(self, inode):
        """Stop every process left in the pinned namespace, noting those
        that needed SIGKILL; False after one line if any is still there."""
        ok, killed = procinfo.ns_stop(SWEEP_TIMEOUT, {inode})
        for entry in killed:
            ss.note_killed(self.state, entry)
        if not ok:
            left = " ".join(str(p) for p in procinfo.ns_pids({inode}))
            log(f"still in the server's network namespace after SIGKILL: {left}")
        return ok

    def report_killed(self):
        try:
            lines = (self.state / "run" / "killed").read_text().split("\n")
        except OSError:
            return
        killed = [line for line in lines if line]
        if killed:
            log(f"SIGKILL was needed for: {', '.join(killed)}")

    def smbd_stop_all(self):
        """The recorded smbd (SIGTERM: its children follow it), then any
        smbd left in the namespace, each by PID and start time. False if
        one survives."""
        self.terminate("smbd", ss.SMBD_STOP)
        netns = self.netns_record()
        # Its children notice the parent's exit within a moment.
        if procinfo.wait_until(lambda: not ss.smbd_leftovers(netns), 2.0, 0.05):
            return True
        for pid in ss.smbd_leftovers(netns):
            start = procinfo.proc_start(pid)
            if start is not None:
                ss.stop_pid(log, self.state, "leftover smbd", pid, start, ss.SMBD_LEFTOVER_STOP)
        return not ss.smbd_leftovers(netns)

    def netns_record(self):
        try:
            return (self.state / "pid" / "netns").read_text().strip()
        except OSError:
            return None

    def do_stop(self, purge):
        """Stop and remove everything; False if something could not be
        removed."""
        self.load_settings()
        (self.state / "run").mkdir(parents=True, exist_ok=True)
        (self.state / "run" / "killed").write_text("")
        inode = self.netns_pin()
        # The link first: its rules and qdiscs live in the namespace (and go
        # with it), the delayer is ours to stop (its packets then pass).
        netlink.clear(self)
        # The supervisor stops smbd, ganesha, statd and rpcbind, unmounts and
        # detaches.
        if self.alive("supervisor"):
            rec = ss.recorded(self.state, "ganesha")
            if rec and procinfo.running(*rec):
                procinfo.signal_pid(rec[0], rec[1], 18)  # SIGCONT: a stopped one sees SIGTERM
            self.terminate("supervisor", ss.supervisor_stop_timeout(self.nlm))
        # Whatever is left (the supervisor was killed, or hung): by recorded
        # PID, then everything else in the server's namespace.
        self.terminate("ganesha", ss.ganesha_stop_timeout(self.nlm))
        for name in RECORDS:
            self.terminate(name)
        problems = False
        if inode is not None:
            problems = not self.netns_sweep(inode)
        # --reach host: the veth pair, from inside while the namespace is
        # pinned (so it is this server's), and what is left of it outside.
        problems = not reach.tear_down(self.state, self.reach_net, self.netns_fd, log) or problems
        if inode is not None:
            os.close(self.netns_fd)
            self.netns_fd = None
        self.report_killed()
        for name in ("uml", "smbd", "ganesha", "statd", "rpcbind", "supervisor", "launcher",
                     "linkdelay"):
            if self.alive(name):
                log(f"{name} (pid {self.recorded(name)}) is still running")
                problems = True
        problems = not self.detach_loops() or problems
        if not self.unmount_leftovers():
            return False
        if problems:
            return False
        if purge:
            remove = [self.state]
        else:
            remove = [self.state / d for d in ("bin", "conf", "run", "lib-nfs", "recovery",
                                               "statd", "smb", "export", "pid")] + [self.image]
            remove += [self.state / "guest" / f for f in ("config", "secret", "statd-owner")]
        subprocess.run(["rm", "-rf", "--one-file-system", "--", *map(str, remove)],
                       stdin=subprocess.DEVNULL, timeout=600, check=False)
        return True

    def detach_loops(self):
        """The namespace's mounts went with its last process. Loop devices
        of our image: detach what is left (losetup -d on a busy device
        detaches it when it is released)."""
        if not self.image.exists():
            return True
        for _ in range(100):
            devs = loops_of(self.image)
            if not devs:
                return True
            for dev in devs:
                run_quiet(["losetup", "-d", dev])
            time.sleep(0.1)
        devs = loops_of(self.image)
        if devs:
            log(f"loop device(s) still attached to {self.image}: {' '.join(devs)}")
            return False
        return True

    def unmount_leftovers(self):
        """Nothing should be mounted under STATE in the caller's namespace;
        if something is (a hand-made mount), take it away before deleting."""
        for mp in mounts_under(self.state):
            log(f"unmounting {mp}")
            if run_quiet(["umount", mp]) != 0:
                run_quiet(["umount", "-l", mp])
        left = mounts_under(self.state)
        if left:
            log(f"still mounted under {self.state}: {' '.join(left)}")
            return False
        return True


def parse_size(text):
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    return int(text.rstrip("KMGT")) * units[text[-1] if text[-1] in "KMGT" else ""]


def loops_of(image):
    rc, out, _ = run_text(["losetup", "-j", str(image)])
    return [line.split(":", 1)[0] for line in out.splitlines() if ":" in line]


def mounts_under(top):
    """Mount points at or below top in this mount namespace, deepest first."""
    found = []
    top = str(top)
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        fields = line.split(" ")
        if len(fields) < 5:
            continue
        mp = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
        if mp == top or mp.startswith(top + "/"):
            found.append(mp)
    return sorted(found, key=len, reverse=True)
