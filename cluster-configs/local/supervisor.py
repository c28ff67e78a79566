#!/usr/bin/env python3
"""supervisor.py — the process that holds the embedded NFS server's
namespaces (nfs-server.sh start, nfsserver.py, runs it under `setsid unshare --net
--mount --propagation private`): it sets the namespaces up, starts rpcbind,
rpc.statd, ganesha.nfsd and smbd as its own children, reaps them, and tears
everything down on SIGTERM, SIGINT or SIGHUP. It restarts nothing on its
own; the verbs of nfs-server.sh ask it to, over a UNIX socket.

  supervisor.py run --state DIR [--statd-port N] [--ganesha-stop-timeout S]
  supervisor.py send --state DIR COMMAND      (a client: prints the reply)

Commands: STATE/run/supervisor.sock (mode 0600), one JSON object a line in,
one JSON reply a line out:
  {"cmd": "start-ganesha"} {"cmd": "start-statd"} {"cmd": "start-smbd"}
      -> {"ok": true, "pid": N} or {"ok": false, "error": "ganesha 12 is running"}
  {"cmd": "status"} -> {"ok": true, "pid": N, "children": {"ganesha":
      {"pid": N, "alive": true}, ...}}
  {"cmd": "stop"}   -> {"ok": true}, then the same tear-down as SIGTERM.
Records (STATE/pid/NAME: "PID START"), stopping, the socket's client and
the stop bounds are serverstate.py's, shared with nfsserver.py (the verbs).
Log: stdout, which start points at STATE/log/supervisor.log, lines
"%F %T supervisor: ...".
Standard library only (Debian 12's python3)."""

import argparse
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import knfsd
import reach
import serverstate as ss
from procinfo import KILL_WAIT, proc_name, proc_stat, running, wait_until
from serverstate import (SMBD_LEFTOVER_STOP, SMBD_STOP, SOCKET_NAME, STATD_STOP, RPCBIND_STOP,
                         UML_STOP, netns_of, record, smbd_leftovers, write_atomically)
from statedir import Untrusted, settings_load

MAX_LINE = 4096          # bytes of one command line, newline included
TICK = 0.1               # seconds between two looks at the children
CLIENT_TIMEOUT = 1.0     # seconds a client may take to take its reply
GUEST_BOOT = 60          # seconds a knfsd guest gets to serve
CONSOLE_RESERVE = 4 << 20  # bytes kept allocated past the guest console log's end
REAP_WAIT = 5            # seconds an exited child's threads get to finish
UMOUNT_TRIES, UMOUNT_PAUSE = 40, 0.25


# ------------------------------------------------------------------ log, records


log = ss.Logger("supervisor", fd=1, stamp=True)  # its stdout: STATE/log/supervisor.log


def exit_status(returncode):
    """A Popen returncode as bash's wait reports it (128 + signal)."""
    return 128 - returncode if returncode < 0 else returncode


def sh(*argv):
    """Run a one-shot command (ip, mount, losetup, ...); True on success.
    Its stderr goes to the log."""
    try:
        return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              check=False).returncode == 0
    except OSError as e:
        log(f"{argv[0]}: {e}")
        return False


class SetupFailed(Exception):
    pass


def console_reserve(path, end):
    """CONSOLE_RESERVE bytes allocated past end, the end of the guest's
    console log, its length unchanged (fallocate --keep-size): the guest's
    appends then need no new blocks, and its last words (why it powered
    off) reach the log even when its file system has filled up (checked on
    tmpfs, ext4 and xfs)."""
    if not sh("fallocate", "--keep-size", "--offset", str(end), "--length",
              str(CONSOLE_RESERVE), str(path)):
        log(f"fallocate of {path} failed: a full file system may cut the guest's console log")


def console_failure(path, start):
    """The last line in which uml-init says FAILED (why it powered off) in
    the console log from byte start on (this boot's), or ''."""
    try:
        with open(path, "rb") as f:
            f.seek(max(start, os.fstat(f.fileno()).st_size - 65536))
            lines = f.read().decode(errors="replace").splitlines()
    except OSError:
        return ""
    return next((line.strip() for line in reversed(lines)
                 if line.startswith("uml-init:") and "FAILED" in line), "")


# ------------------------------------------------------------------ stopping


def stop_pid(state, label, pid, start, seconds):
    """serverstate.stop_pid into this log."""
    ss.stop_pid(log, state, label, pid, start, seconds)


def stop_child(state, label, child, seconds):
    """The same for a child of ours: while Popen has not reaped it, its PID
    is ours; it is reaped here."""
    if child is None or child.poll() is not None:
        return
    log(f"stopping {label} (pid {child.pid})")
    child.send_signal(signal.SIGTERM)
    child.send_signal(signal.SIGCONT)
    try:
        child.wait(seconds)
        return
    except subprocess.TimeoutExpired:
        pass
    name = proc_name(child.pid)
    child.kill()
    log(f"{label} (pid {child.pid}) did not stop within {seconds} s of SIGTERM: SIGKILL")
    ss.note_killed(state, f"{child.pid} ({name})")
    try:
        child.wait(KILL_WAIT)
    except subprocess.TimeoutExpired:
        log(f"{label} (pid {child.pid}) is still there after SIGTERM, {seconds} s and SIGKILL")


# ------------------------------------------------------------------ the supervisor


class Supervisor:
    def __init__(self, state, statd_port, ganesha_stop_timeout):
        self.state = Path(state)
        self.settings = settings_load(self.state)
        self.statd_port = statd_port
        self.ganesha_stop_timeout = ganesha_stop_timeout
        self.export = self.state / "export"
        self.children = {}          # name -> Popen, until reaped
        self.loopdev = None
        self.stopping = False
        self.smbd_started = False
        self.guest = None           # knfsd.Guest with --server knfsd
        self.netns = netns_of("self")
        self.listener = None
        self.selector = selectors.DefaultSelector()
        self.buffers = {}           # connection -> bytes read, not yet a line

    # ---- children

    def spawn(self, name, argv, logfile):
        """Start argv as our child NAME, stdin /dev/null, stdout and stderr
        appended to STATE/log/LOGFILE, and record it."""
        with open(self.state / "log" / logfile, "ab") as out:
            child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                     stderr=subprocess.STDOUT)
        self.children[name] = child
        # /proc/PID/stat exists as soon as fork returns; record it at once.
        record(self.state, name, child.pid)
        return child

    def live(self, name):
        """Our child NAME, if it runs (reaping it if it has exited)."""
        self.reap(name)
        return self.children.get(name)

    def reap(self, name):
        """When child NAME has exited, collect its status and log it."""
        child = self.children.get(name)
        if child is None:
            return
        if child.poll() is None:
            # A killed multi-threaded child (ganesha) shows as a zombie in
            # /proc while its other threads still exit, and waitpid cannot
            # collect it until they have: wait for that moment.
            if running(child.pid):
                return
            try:
                child.wait(timeout=REAP_WAIT)
            except subprocess.TimeoutExpired:
                return
        del self.children[name]
        label = "rpc.statd" if name == "statd" else name
        log(f"{label} {child.pid} exited (status {exit_status(child.returncode)})")

    def reap_all(self):
        for name in list(self.children):
            self.reap(name)

    def start_ganesha(self):
        s = self.state
        argv = ["ganesha.nfsd", "-F", "-p", f"{s}/run/ganesha.pid", "-L", f"{s}/log/ganesha.log",
                "-f", f"{s}/conf/ganesha.conf"]
        if self.settings["MODE"] == "async":
            argv.insert(0, f"{s}/bin/nosync")
        (s / "run" / "ganesha.pid").unlink(missing_ok=True)
        child = self.spawn("ganesha", argv, "ganesha.stderr")
        log(f"started ganesha.nfsd pid {child.pid}")
        return child.pid

    def statd_registered(self):
        return subprocess.run(["rpcinfo", "-T", "tcp", "127.0.0.1", "100024", "1"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, check=False).returncode == 0

    def start_statd(self):
        """rpc.statd in the foreground, its state (sm/, sm.bak/, state) in
        STATE/statd, no SM_NOTIFY at start (-L), a fixed port; then wait
        until it is registered with rpcbind (ganesha's NLM finds it there).
        The directory stays root's, so statd runs as root: as user statd it
        could not reach a state directory below a 0700 one (pytest's tmp).
        Returns its PID, or None if it does not come up."""
        statd_dir = self.state / "statd"
        (statd_dir / "sm").mkdir(parents=True, exist_ok=True)
        (statd_dir / "sm.bak").mkdir(parents=True, exist_ok=True)
        child = self.spawn("statd", ["rpc.statd", "-F", "-d", "-L", "-P", str(statd_dir),
                                     "-p", str(self.statd_port)], "statd.log")
        log(f"started rpc.statd pid {child.pid}")
        for _ in range(200):
            if child.poll() is not None:
                log("rpc.statd exited")
                self.reap("statd")
                return None
            if self.statd_registered():
                return child.pid
            time.sleep(0.025)
        log("rpc.statd did not register with rpcbind within 5 s")
        return None

    def start_smbd(self):
        """smbd in the foreground (so we are its parent and reap it), logging
        to stdout. It makes a process group of its own: on SIGTERM it
        signals its whole group, which with --no-process-group would include
        the supervisor. Its per-connection children and helpers
        (smbd-notifyd, cleanupd) are in that group; they exit when it does."""
        (self.state / "smb" / "pid" / "smbd.pid").unlink(missing_ok=True)
        child = self.spawn("smbd", ["smbd", "--foreground", "--debug-stdout", "-s",
                                    f"{self.state}/conf/smb.conf"], "smbd.stdout")
        self.smbd_started = True
        log(f"started smbd pid {child.pid}")
        return child.pid

    def start_rpcbind(self):
        child = self.spawn("rpcbind", ["rpcbind", "-f"], "rpcbind.log")
        for _ in range(200):
            if os.path.exists("/run/rpcbind.sock"):
                return
            if child.poll() is not None:
                raise SetupFailed("rpcbind exited")
            time.sleep(0.025)
        if not os.path.exists("/run/rpcbind.sock"):
            raise SetupFailed("rpcbind did not come up")

    # ---- set-up and tear-down

    def must(self, what, *argv):
        if not sh(*argv):
            raise SetupFailed(what)

    def mount_export(self):
        fs, size, export = self.settings["FS"], self.settings["SIZE"], str(self.export)
        if fs == "tmpfs":
            # RAM: no disk's writeback in what clients measure (benchmarks of
            # the client side); gone with the namespace's mount at stop.
            self.must(f"mount tmpfs on {export}", "mount", "-t", "tmpfs", "-o",
                      f"size={size},mode=0777", "tmpfs", export)
            log(f"mounted tmpfs (size {size}) on {export}")
            return
        if fs == "dir":
            return
        image = str(self.state / "image.img")
        out = subprocess.run(["losetup", "--find", "--show", image], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, text=True, check=False)
        if out.returncode != 0 or not out.stdout.strip():
            raise SetupFailed(f"losetup {image}")
        self.loopdev = out.stdout.strip()
        write_atomically(self.state / "run" / "loopdev", f"{self.loopdev}\n")
        # --sync and --sync-writes: dirsync, so that CREATE, REMOVE, RENAME,
        # MKDIR, RMDIR (and LINK, SYMLINK) reach stable storage before
        # ganesha replies, as a kernel nfsd `sync` export does with its
        # commit_metadata (ganesha's FSAL VFS never fsyncs a directory).
        # xfs and ext4 then commit the transaction (log force / jbd2 commit)
        # inside the system call. --async: no dirsync.
        opts = [] if self.settings["MODE"] == "async" else ["-o", "dirsync"]
        self.must(f"mount -t {fs} {self.loopdev} {export}", "mount", "-t", fs, *opts,
                  self.loopdev, export)
        try:
            os.chmod(export, 0o777)
        except OSError as e:
            raise SetupFailed(f"chmod {export}") from e
        log(f"mounted {fs} {self.loopdev} on {export}" + (f" ({' '.join(opts)})" if opts else ""))

    def set_up(self):
        st = self.settings
        record(self.state, "supervisor", os.getpid())
        # The namespace, for finding smbd's unrecorded children (smbd_leftovers).
        write_atomically(self.state / "pid" / "netns", f"{self.netns}\n")
        log(f"pid {os.getpid()}, fs {st['FS']}, mode {st['MODE']}, workers {st['WORKERS']},"
            f" nlm {st['NLM']}, grace {st['GRACE']}, lease {st['LEASE']}, smb {st['SMB']}"
            f" (sendfile {st['SMB_SENDFILE']}, aio max threads {st['SMB_WORKERS']})")
        self.open_socket()
        self.must("ip link set lo up", "ip", "link", "set", "lo", "up")
        if st["HOST_NAME"]:
            try:
                socket.sethostname(st["HOST_NAME"])
            except OSError as e:
                raise SetupFailed(f"hostname {st['HOST_NAME']}") from e
        if st["SERVER"] == "knfsd":
            self.start_guest()
            return
        # Private /run (rpcbind's socket and lock, ganesha's files) and
        # /var/lib/nfs: nothing of the host's is touched.
        self.must(f"bind {self.state}/run over /run", "mount", "--bind", f"{self.state}/run", "/run")
        if os.path.isdir("/var/lib/nfs"):
            self.must("bind over /var/lib/nfs", "mount", "--bind", f"{self.state}/lib-nfs",
                      "/var/lib/nfs")
        self.mount_export()
        self.start_rpcbind()
        if st["NLM"] == "1" and self.start_statd() is None:
            raise SetupFailed("rpc.statd did not come up (see log/statd.log)")
        self.start_ganesha()
        if st["SMB"] == "1":
            self.start_smbd()

    def start_guest(self):
        """--server knfsd: the User-Mode Linux guest that runs the kernel's
        nfsd (knfsd.py), our child "uml"; it serves when this returns."""
        self.guest = knfsd.Guest(self.state, self.settings)
        try:
            self.guest.prepare()
        except (OSError, subprocess.CalledProcessError) as e:
            raise SetupFailed(f"the guest's tap or configuration: {e}") from e
        console = self.state / "log" / "guest-console.log"
        with open(console, "ab") as out:
            booted_at = os.fstat(out.fileno()).st_size
            console_reserve(console, booted_at)
            child = subprocess.Popen(self.guest.argv(), stdin=subprocess.DEVNULL, stdout=out,
                                     stderr=subprocess.STDOUT)
        self.children["uml"] = child
        record(self.state, "uml", child.pid)
        log(f"started linux.uml pid {child.pid} (kernel nfsd, {self.settings['THREADS']} threads)")
        t0 = time.monotonic()
        if not self.guest.wait_ready(child, GUEST_BOOT, lambda: self.stopping):
            if self.stopping:
                raise SetupFailed("stopped while the knfsd guest booted")
            why = console_failure(console, booted_at)
            raise SetupFailed(f"the knfsd guest did not serve: {why}" if why else
                              "the knfsd guest did not serve (see log/guest-console.log)")
        log(f"kernel nfsd serves after {time.monotonic() - t0:.1f} s")

    def stop_guest(self):
        """The agent's poweroff (nfsd stops, the export is unmounted), then
        SIGTERM and SIGKILL as for any child."""
        child = self.children.pop("uml", None)
        if child is None:
            return
        log(f"stopping linux.uml (pid {child.pid})")
        if not self.guest.poweroff(child):
            log("the guest did not power off: SIGTERM")
            stop_child(self.state, "linux.uml", child, UML_STOP)

    def stop_smbd_group(self):
        """The recorded smbd (SIGTERM: its children follow it), then any smbd
        left in the namespace, each by PID and start time."""
        stop_child(self.state, "smbd", self.children.get("smbd"), SMBD_STOP)
        self.children.pop("smbd", None)
        # Its children notice the parent's exit within a moment.
        if wait_until(lambda: not smbd_leftovers(self.netns), 2.0):
            return
        for pid in smbd_leftovers(self.netns):
            st = proc_stat(pid)
            if st:
                stop_pid(self.state, "leftover smbd", pid, st[1], SMBD_LEFTOVER_STOP)
        left = smbd_leftovers(self.netns)
        if left:
            log(f"smbd processes left: {' '.join(map(str, left))}")

    def unmount_export(self):
        export = str(self.export)
        if self.settings["FS"] == "dir" or not sh("mountpoint", "-q", export):
            return
        subprocess.run(["sync", "-f", export], stderr=subprocess.DEVNULL, check=False)
        for _ in range(UMOUNT_TRIES):
            if subprocess.run(["umount", export], stderr=subprocess.DEVNULL,
                              check=False).returncode == 0:
                break
            time.sleep(UMOUNT_PAUSE)
        if sh("mountpoint", "-q", export):
            log(f"umount {export} busy; lazy")
            sh("umount", "-l", export)

    def tear_down(self):
        """smbd and its children first, then ganesha (it unmonitors its NLM
        clients with statd on the way out), then statd, then rpcbind; the
        export's mount and loop device; last --reach host's veth pair (both
        ends go with the one here, and the host's routes through it)."""
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, lambda *_: None)
        self.close_socket()
        if self.smbd_started:
            self.stop_smbd_group()
        if self.guest is not None:
            self.stop_guest()
        stop_child(self.state, "ganesha", self.children.pop("ganesha", None),
                   self.ganesha_stop_timeout)
        stop_child(self.state, "statd", self.children.pop("statd", None), STATD_STOP)
        stop_child(self.state, "rpcbind", self.children.pop("rpcbind", None), RPCBIND_STOP)
        self.unmount_export()
        if self.loopdev and subprocess.run(["losetup", "-d", self.loopdev],
                                           stderr=subprocess.DEVNULL, check=False).returncode:
            log(f"losetup -d {self.loopdev} failed")
        if self.settings["REACH"] == "host":
            reach.ns_tear_down()
        log("stopped")

    # ---- commands

    def not_knfsd(self):
        """The refusal of a ganesha-side command on a kernel nfsd server
        (its statd runs in the guest), or None."""
        if self.settings["SERVER"] == "knfsd":
            return {"ok": False, "error": "the server is kernel nfsd (--server knfsd)"}
        return None

    def cmd_start_ganesha(self, _req):
        refused = self.not_knfsd()
        if refused:
            return refused
        child = self.live("ganesha")
        if child:
            return {"ok": False, "error": f"ganesha {child.pid} is running"}
        return {"ok": True, "pid": self.start_ganesha()}

    def cmd_start_statd(self, _req):
        refused = self.not_knfsd()
        if refused:
            return refused
        if self.settings["NLM"] != "1":
            return {"ok": False, "error": "NLM is off"}
        child = self.live("statd")
        if child:
            return {"ok": False, "error": f"rpc.statd {child.pid} is running"}
        pid = self.start_statd()
        if pid is None:
            return {"ok": False, "error": "rpc.statd did not come up (see log/statd.log)"}
        return {"ok": True, "pid": pid}

    def cmd_start_smbd(self, _req):
        if self.settings["SMB"] != "1":
            return {"ok": False, "error": "the server runs without --smb"}
        child = self.live("smbd")
        if child:
            return {"ok": False, "error": f"smbd {child.pid} is running"}
        left = smbd_leftovers(self.netns)
        if left:
            return {"ok": False,
                    "error": f"smbd processes are left: {' '.join(map(str, left))}"}
        return {"ok": True, "pid": self.start_smbd()}

    def cmd_status(self, _req):
        self.reap_all()
        children = {name: {"pid": c.pid, "alive": running(c.pid)}
                    for name, c in self.children.items()}
        return {"ok": True, "pid": os.getpid(), "children": children}

    def cmd_stop(self, _req):
        self.stopping = True
        return {"ok": True}

    COMMANDS = {"start-ganesha": cmd_start_ganesha, "start-statd": cmd_start_statd,
                "start-smbd": cmd_start_smbd, "status": cmd_status, "stop": cmd_stop}

    def answer(self, line):
        """The reply to one command line (bytes, without its newline)."""
        try:
            req = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            return {"ok": False, "error": f"not a JSON line: {e}"}
        if not isinstance(req, dict) or not isinstance(req.get("cmd"), str):
            return {"ok": False, "error": 'want an object with "cmd"'}
        handler = self.COMMANDS.get(req["cmd"])
        if handler is None:
            return {"ok": False, "error": f"unknown command {req['cmd']!r}"
                                          f" (known: {', '.join(self.COMMANDS)})"}
        reply = handler(self, req)
        if not reply["ok"]:
            log(f"{req['cmd']} refused: {reply['error']}")
        return reply

    # ---- the socket

    def open_socket(self):
        """Listen on STATE/run/supervisor.sock, mode 0600 (bound relative to
        its directory: a long state path would not fit sun_path)."""
        rundir = self.state / "run"
        (rundir / SOCKET_NAME).unlink(missing_ok=True)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask, old_cwd = os.umask(0o177), os.getcwd()
        try:
            os.chdir(rundir)
            self.listener.bind(SOCKET_NAME)
        finally:
            os.chdir(old_cwd)
            os.umask(old_umask)
        os.chmod(rundir / SOCKET_NAME, 0o600)
        self.listener.listen(8)
        self.listener.setblocking(False)
        self.selector.register(self.listener, selectors.EVENT_READ, self.accept)

    def close_socket(self):
        for conn in list(self.buffers):
            self.drop(conn)
        if self.listener is not None:
            self.selector.unregister(self.listener)
            self.listener.close()
            self.listener = None
            (self.state / "run" / SOCKET_NAME).unlink(missing_ok=True)

    def accept(self, listener):
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        conn.settimeout(CLIENT_TIMEOUT)
        self.buffers[conn] = b""
        self.selector.register(conn, selectors.EVENT_READ, self.read)

    def drop(self, conn):
        self.selector.unregister(conn)
        self.buffers.pop(conn, None)
        conn.close()

    def send(self, conn, reply):
        try:
            conn.sendall(json.dumps(reply).encode() + b"\n")
            return True
        except OSError:
            self.drop(conn)
            return False

    def read(self, conn):
        """Answer each complete line from conn; a line over MAX_LINE gets an
        error and the connection is closed."""
        try:
            data = conn.recv(MAX_LINE)
        except OSError:
            data = b""
        if not data:
            self.drop(conn)
            return
        buf = self.buffers[conn] + data
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if not self.send(conn, self.answer(line)):
                return
        if len(buf) >= MAX_LINE:
            if self.send(conn, {"ok": False, "error": f"line longer than {MAX_LINE} bytes"}):
                self.drop(conn)
            return
        self.buffers[conn] = buf

    # ---- the loop

    def on_signal(self, _signum, _frame):
        self.stopping = True

    def serve(self):
        """Until SIGTERM/SIGINT/SIGHUP or a stop command: reap children,
        answer commands. The signal handler only sets a flag; the wake-up
        fd cuts the select short."""
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        self.selector.register(wake_r, selectors.EVENT_READ, lambda fd: os.read(fd, 512))
        while not self.stopping:
            self.reap_all()
            for key, _ in self.selector.select(TICK):
                key.data(key.fileobj)
                if self.stopping:
                    break

    def run(self):
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self.on_signal)
        try:
            self.set_up()
        except SetupFailed as e:
            return self.fail(str(e))
        except Exception as e:  # noqa: BLE001 (anything: undo what was made)
            return self.fail(f"internal error: {e!r}")
        self.serve()
        self.tear_down()
        return 0

    def fail(self, why):
        log(f"FAILED: {why}")
        try:
            write_atomically(self.state / "run" / "failed", f"{why}\n")
        except OSError as e:
            log(f"run/failed: {e}")
        self.tear_down()
        return 1


# ------------------------------------------------------------------ the client


def main_send(args):
    try:
        reply = ss.supervisor_send(args.state, args.command, args.timeout)
    except (OSError, ValueError) as e:
        print(f"supervisor: cannot reach it at {args.state}/run/{SOCKET_NAME}: {e}",
              file=sys.stderr)
        return 1
    print(json.dumps(reply))
    if not reply.get("ok"):
        print(f"supervisor: {reply.get('error')}", file=sys.stderr)
        return 1
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description="the embedded NFS server's supervisor")
    sub = ap.add_subparsers(dest="mode", required=True)
    run = sub.add_parser("run", help="hold the namespaces and run the servers")
    run.add_argument("--state", required=True)
    run.add_argument("--statd-port", type=int, default=32765)
    run.add_argument("--ganesha-stop-timeout", type=int, default=10)
    send = sub.add_parser("send", help="send one command, print the reply")
    send.add_argument("--state", required=True)
    send.add_argument("--timeout", type=float, default=60.0)
    send.add_argument("command")
    args = ap.parse_args(argv)
    if args.mode == "send":
        return main_send(args)
    try:
        supervisor = Supervisor(args.state, args.statd_port, args.ganesha_stop_timeout)
    except Untrusted as e:
        log(f"FAILED: {e}")
        return 1
    return supervisor.run()


if __name__ == "__main__":
    sys.exit(main())
