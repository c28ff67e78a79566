"""The embedded userspace NFS server, cluster-configs/local/nfs-server.sh:
nfs-ganesha + rpcbind + rpc.statd in a private network and mount namespace,
exporting a plain directory or a loop-mounted xfs/ext4/btrfs image.

For each file system: start, copy a file in and out with libnfs's nfs-cp from
inside the namespace (`exec`) and compare the bytes, stop, and check that
nothing is left: no process of the recorded PIDs, no process in the server's
namespaces, no mount under the state directory, no loop device of the image.
Also: SIGKILL / SIGSTOP of ganesha and SIGKILL of the namespace holder before
stop, restart-ganesha after SIGKILL, --workers (ganesha's worker pool), and
--sync / --sync-writes / --async (seen in the loop device's flush counters).
The lock manager (NLM, issue 13): registered with rpcbind at its fixed port,
statd with its state in the state directory, real NLM4 LOCK/TEST/UNLOCK
calls (nlm_probe below: raw ONC RPC over TCP, no client library) granted
and denied, NLM4_DENIED_NOLOCKS without statd (stop-statd), no NLM with
--no-nlm, and a grace period (--grace, restart-ganesha --grace):
NLM4_DENIED_GRACE_PERIOD and NFSv4 OPEN refused with NFS4ERR_GRACE until it
ends, then granted. Every test also checks that stop leaves no statd.
stop ends every process of the server's network namespace before it
returns: SIGTERM, and SIGKILL (named on stderr) for what ignores it, such
as a `trap "" TERM` shell run with exec; also with two busy loops on the
CPUs and a client still running. The namespace is held open from start to
that check: a freed namespace's number goes to the next namespace made.

Needs root, nfs-ganesha + nfs-ganesha-vfs, rpcbind and libnfs-utils; skips
with a message otherwise. Run: /usr/bin/python3 -m pytest -q -rs -s
tests/integration/test_nfs_server.py (-s shows the timings it measures).
"""

import contextlib
import filecmp
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

REPO_DIR = Path(__file__).resolve().parent.parent.parent
LOCAL_DIR = REPO_DIR / "cluster-configs" / "local"
SCRIPT = LOCAL_DIR / "nfs-server.sh"
sys.path.insert(0, str(LOCAL_DIR))
from procinfo import proc_stat, running, wait_until  # noqa: E402 (after its path)
MIB = 1 << 20
CMD_TIMEOUT = 120
SBIN_PATH = os.environ.get("PATH", "") + ":/usr/local/sbin:/usr/sbin:/sbin"
NLM_PORT = 32803        # nfs-server.sh's fixed NLM port (ganesha's NLM_Port)
STATD_PORT = 32765


def _why_skip():
    if os.geteuid() != 0:
        return "nfs-server.sh needs root (network/mount namespaces, loop devices)"
    need = {"ganesha.nfsd": "nfs-ganesha", "rpcbind": "rpcbind", "nfs-cp": "libnfs-utils",
            "nfs-ls": "libnfs-utils", "unshare": "util-linux", "nsenter": "util-linux",
            "losetup": "util-linux", "ip": "iproute2", "rpc.statd": "nfs-common",
            "rpcinfo": "nfs-common"}
    missing = sorted({pkg for tool, pkg in need.items()
                      if shutil.which(tool, path=SBIN_PATH) is None})
    if missing:
        return ("userspace NFS server packages not installed: " + " ".join(missing)
                + " (apt-get install nfs-ganesha nfs-ganesha-vfs rpcbind libnfs-utils)")
    if not list(Path("/usr/lib").glob("*/ganesha/libfsalvfs.so")) and \
            not Path("/usr/lib/ganesha/libfsalvfs.so").exists():
        return "nfs-ganesha-vfs (FSAL VFS) not installed"
    return None


pytestmark = pytest.mark.skipif(_why_skip() is not None, reason=_why_skip() or "")


# ---------------------------------------------------------------- helpers


def sh(*args, timeout=CMD_TIMEOUT, check=False):
    env = dict(os.environ, PATH=SBIN_PATH)
    proc = subprocess.run([str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} failed ({proc.returncode}):\n"
                             f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


def mounts_under(path):
    path = os.path.realpath(path)
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4].replace("\\040", " ")
            if mp == path or mp.startswith(path + "/"):
                found.append(mp)
    return found


def loops_of(image):
    out = sh("losetup", "-j", image).stdout
    return [line.split(":", 1)[0] for line in out.splitlines() if line.strip()]


def ns_members(ns_link):
    """PIDs of live processes whose network namespace is ns_link ('net:[N]')."""
    pids = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if os.readlink(p / "ns" / "net") == ns_link and running(int(p.name)):
                pids.append(int(p.name))
    return pids


def describe_pids(pids):
    """'PID (NAME)' of each, for assertion messages."""
    names = []
    for pid in pids:
        try:
            names.append(f"{pid} ({Path(f'/proc/{pid}/comm').read_text().strip()})")
        except OSError:
            names.append(f"{pid} (gone)")
    return ", ".join(names)


def write_random(path, size):
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, 8 * MIB)
            f.write(os.urandom(n))
            left -= n
    return Path(path)


class Server:
    """One nfs-server.sh instance: start() parses its stdout lines (two, or
    three with --smb). URL_HOST: the host line 1 names (a pattern)."""

    URL_HOST = re.escape("127.0.0.1")

    def __init__(self, state):
        self.state = Path(state)
        self.url = self.pid = None
        self.procs = {}       # name -> (pid, start time), from status
        self.netns = self.netns_pin = None
        self.image = self.state / "image.img"
        self.start_seconds = self.stop_seconds = None

    def cmd(self, *args, timeout=CMD_TIMEOUT):
        return sh("bash", SCRIPT, *args, timeout=timeout)

    def start(self, *opts):
        self.start_t0 = time.monotonic()
        proc = self.cmd("start", "--state", self.state, *opts)
        self.start_seconds = time.monotonic() - self.start_t0
        assert proc.returncode == 0, f"start failed:\n{proc.stderr}"
        lines = proc.stdout.splitlines()
        want = 3 if "--smb" in [str(o) for o in opts] else 2  # line 3: the smb:// URL
        assert len(lines) == want, f"start must print exactly {want} lines, got {proc.stdout!r}"
        self.url, pid = lines[:2]
        self.smb_url = lines[2] if want == 3 else None
        assert re.fullmatch(r"\d+", pid), pid
        self.pid = int(pid)
        export = os.path.realpath(self.state / "export")
        assert re.fullmatch(f"nfs://{self.URL_HOST}{re.escape(export)}\\?version=3", self.url), \
            f"start printed the URL {self.url!r}"
        self.base = self.url.split("?", 1)[0]
        self.refresh()
        assert self.procs["ganesha"][0] == self.pid
        self.pin_netns()
        return self

    def pin_netns(self):
        """Remember the server's network namespace and hold it open until
        assert_clean: the kernel hands a freed namespace's number to the
        next one made (by any test on this machine), whose processes would
        then look like the server's."""
        sup = self.procs["supervisor"][0]
        self.netns_pin = open(f"/proc/{sup}/ns/net", "rb")
        self.netns = os.readlink(f"/proc/self/fd/{self.netns_pin.fileno()}")
        assert running(*self.procs["supervisor"]), "the supervisor died while pinned"
        assert self.netns != os.readlink("/proc/self/ns/net")

    def status(self):
        proc = self.cmd("status", "--state", self.state)
        kv = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
        return proc.returncode, kv

    PROCS = ("supervisor", "rpcbind", "statd", "ganesha", "smbd")  # status's names

    def refresh(self):
        """Remember the PIDs (and start times) the server runs as now."""
        rc, kv = self.status()
        for name in self.PROCS:
            if name in kv:
                pid = int(kv[name].split()[0])
                st = proc_stat(pid)
                if st is not None and kv[name].endswith("running"):
                    self.procs[name] = (pid, st[1])
        return rc, kv

    def nfs(self, name, version=3):
        return f"{self.base}/{name}?version={version}"

    def exec(self, *args, timeout=CMD_TIMEOUT):
        return self.cmd("exec", "--state", self.state, "--", *args, timeout=timeout)

    def put(self, local, name):
        proc = self.exec("nfs-cp", local, self.nfs(name))
        assert proc.returncode == 0, f"nfs-cp to the server failed:\n{proc.stdout}{proc.stderr}"

    def get(self, name, local, version=3):
        proc = self.exec("nfs-cp", self.nfs(name, version), local)
        assert proc.returncode == 0, f"nfs-cp from the server failed:\n{proc.stdout}{proc.stderr}"

    def answers(self):
        return self.exec("nfs-ls", self.url, timeout=30).returncode == 0

    def nlm(self, name, *ops, caller="localhost"):
        """NLM4 calls on export file `name` from inside the namespace (see
        nlm_probe): one status name per op, e.g. ["GRANTED", "DENIED"]."""
        proc = self.exec(sys.executable, Path(__file__).resolve(), "nlm-probe", NLM_PORT,
                         os.path.realpath(self.state / "export"), name, caller, *ops,
                         timeout=60)
        assert proc.returncode == 0, f"nlm probe failed:\n{proc.stdout}{proc.stderr}"
        return proc.stdout.split()

    def stop(self, check=True):
        t0 = time.monotonic()
        proc = self.cmd("stop", "--state", self.state)
        self.stop_seconds = time.monotonic() - t0
        if check:
            assert proc.returncode == 0, f"stop failed:\n{proc.stderr}"
        return proc

    def assert_clean(self):
        """Nothing of the server is left, right after stop: stop waits for
        every process of the server's namespace and for the loop device.
        (Orphans are reaped by PID 1 a moment later; a zombie is not a
        running process.)"""
        for name, (pid, start) in self.procs.items():
            assert not running(pid, start), f"{name} (pid {pid}) still running after stop"
        if self.netns_pin is not None:
            left = ns_members(self.netns)
            self.netns_pin.close()
            self.netns_pin = None
            assert not left, f"processes left in the server's namespace: {describe_pids(left)}"
        assert not mounts_under(self.state), f"mounts left: {mounts_under(self.state)}"
        assert not loops_of(self.image), f"loop devices left: {loops_of(self.image)}"
        rc, kv = self.status()
        assert rc == 3 and kv.get("state") == "stopped", kv


@contextlib.contextmanager
def stopped_after(made):
    """The servers of made (a list the block fills) stopped after the
    block, also when it fails, then each checked clean."""
    try:
        yield made
    finally:
        for s in made:
            s.stop(check=False)
    for s in made:
        s.assert_clean()


@contextlib.contextmanager
def server_factory(tmp_path, cls, prefix):
    """make(*start options, name=None) -> a started cls (a Server) in
    tmp_path/name (default PREFIX0, PREFIX1, ...); every one stopped and
    checked clean after the block (stopped_after)."""
    with stopped_after([]) as made:
        def make(*opts, name=None):
            s = cls(tmp_path / (name or f"{prefix}{len(made)}"))
            made.append(s)
            return s.start(*opts)

        yield make


@pytest.fixture
def server(tmp_path):
    """Factory: server(*start options) -> a started Server. Teardown stops
    every server (also after a failed test) and checks nothing is left."""
    with server_factory(tmp_path, Server, "nfs") as make:
        yield make


def have_mkfs(fs):
    return fs == "dir" or shutil.which(f"mkfs.{fs}", path=SBIN_PATH) is not None


# ---------------------------------------------------------------- tests


@pytest.mark.parametrize("fs", ["dir", "xfs", "ext4", "btrfs"])
def test_copy_in_and_out(tmp_path, fs):
    if not have_mkfs(fs):
        pytest.skip(f"mkfs.{fs} not installed")
    s = Server(tmp_path / "state")
    try:
        s.start("--fs", fs, "--size", "1G")
        src = write_random(tmp_path / "src.bin", 32 * MIB)
        s.put(src, "f32")
        s.get("f32", tmp_path / "back.bin")
        assert filecmp.cmp(src, tmp_path / "back.bin", shallow=False), "bytes differ"
        assert running(s.pid), "ganesha died"
        rc, kv = s.status()
        assert rc == 0 and kv["state"] == "running" and kv["fs"] == fs
        if fs != "dir":
            assert kv["loopdev"] in loops_of(s.image)
            # The export is mounted only in the server's mount namespace.
            assert not mounts_under(s.state)
            out = s.cmd("exec", "--state", s.state, "--server-fs", "--",
                        "findmnt", "-n", "-o", "FSTYPE", s.state / "export")
            assert out.stdout.strip() == fs, out
    finally:
        s.stop(check=False)
    s.assert_clean()
    print(f"\n[{fs}] start {s.start_seconds:.2f} s, stop {s.stop_seconds:.2f} s")


def test_exec_exit_code_and_status(server, tmp_path):
    s = server()
    assert s.exec("sh", "-c", "exit 7").returncode == 7
    # exec keeps the caller's mount namespace: the host's files are there.
    marker = tmp_path / "host-file"
    marker.write_text("x")
    assert s.exec("cat", marker).stdout == "x"
    # ... and the server's network namespace: only lo.
    out = s.exec("ip", "-o", "link").stdout
    assert [line.split(":")[1].strip() for line in out.splitlines()] == ["lo"]
    rc, kv = s.status()
    assert rc == 0 and kv["answers"] == "yes"
    # Port options that skip the portmapper work too.
    assert s.exec("nfs-ls", f"{s.base}?version=3&nfsport=2049&mountport=20048").returncode == 0


def test_env_and_exec_name_the_server_and_its_fs(server):
    """`env` prints, and `exec` puts in the environment, HERD_SERVER and
    HERD_SERVER_FS (herd records the latter as server_fs), the URL, the
    link and the disk's latency (none: ganesha has no --disk-latency)."""
    for fs in ("tmpfs", "dir"):
        s = server("--fs", fs)
        want = {"HERD_SERVER": "ganesha", "HERD_SERVER_FS": fs, "HERD_SERVER_URL": s.url,
                "HERD_LINK": "none", "HERD_SERVER_DISK": "none"}
        proc = s.cmd("env", "--state", s.state)
        assert proc.returncode == 0, proc.stderr
        assert dict(line.split("=", 1) for line in proc.stdout.splitlines()) == want, proc.stdout
        seen = s.exec("sh", "-c", 'printf "%s|%s|%s" "$HERD_SERVER" "$HERD_SERVER_FS" '
                      '"$HERD_SERVER_URL"').stdout
        assert seen == f"ganesha|{fs}|{s.url}", seen
        s.stop()
        assert s.cmd("env", "--state", s.state).returncode == 1


def test_nfsv4_reads_the_same_path(server, tmp_path):
    s = server()
    src = write_random(tmp_path / "src.bin", 4 * MIB)
    s.put(src, "v3written")
    s.get("v3written", tmp_path / "back4.bin", version=4)
    assert filecmp.cmp(src, tmp_path / "back4.bin", shallow=False)


def test_sigkill_ganesha_then_stop(server):
    s = server("--fs", "xfs", "--size", "512M")
    os.kill(s.pid, signal.SIGKILL)
    assert wait_until(lambda: not running(s.pid), CMD_TIMEOUT)
    rc, kv = s.status()
    assert rc == 1 and kv["state"] == "degraded", kv
    s.stop()
    s.assert_clean()


def test_sigstop_ganesha_then_stop(server):
    s = server("--fs", "ext4", "--size", "512M")
    os.kill(s.pid, signal.SIGSTOP)
    s.stop()
    s.assert_clean()


def test_killed_namespace_holder_then_stop(server):
    s = server("--fs", "xfs", "--size", "512M")
    os.kill(s.procs["supervisor"][0], signal.SIGKILL)
    s.stop()
    s.assert_clean()


def test_stop_is_idempotent(server):
    s = server()
    s.stop()
    s.stop()
    s.assert_clean()
    assert s.cmd("stop", "--state", s.state / "never-made").returncode == 0


def in_namespace(s, *argv):
    """Start argv in the server's network namespace (exec) in the
    background; returns the Popen (its pid is argv's: exec and nsenter
    exec it) once its first stdout line has come."""
    p = subprocess.Popen(["bash", str(SCRIPT), "exec", "--state", str(s.state), "--", *argv],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         env=dict(os.environ, PATH=SBIN_PATH))
    assert p.stdout.readline(), "the command in the namespace said nothing"
    assert os.readlink(f"/proc/{p.pid}/ns/net") == s.netns
    return p


def test_stop_kills_what_ignores_sigterm(server):
    """A process in the server's namespace that ignores SIGTERM (and its
    child, which inherits that) is SIGKILLed by stop, which names both;
    stop returns only once they are gone."""
    s = server()
    p = in_namespace(s, "sh", "-c", 'trap "" TERM; echo ready; sleep 1000')
    try:
        children = Path(f"/proc/{p.pid}/task/{p.pid}/children")
        assert wait_until(lambda: children.read_text().split(), CMD_TIMEOUT), "no sleep"
        proc = s.stop()
        assert re.search(rf"SIGKILL was needed for: .*\b{p.pid} \(sh\)", proc.stderr), proc.stderr
        assert re.search(r"\d+ \(sleep\)", proc.stderr), proc.stderr
        s.assert_clean()
        assert p.wait(timeout=CMD_TIMEOUT) == -signal.SIGKILL
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_stop_under_load_leaves_nothing(server, tmp_path):
    """Two busy loops on this machine's CPUs, a client still running in
    the namespace, a file just written to xfs: stop ends the client with
    SIGTERM (it needs no SIGKILL) and leaves nothing the moment it returns."""
    hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(2)]
    try:
        s = server("--fs", "xfs", "--size", "512M")
        s.put(write_random(tmp_path / "src.bin", 32 * MIB), "f")
        client = in_namespace(s, "sh", "-c", "echo ready; exec sleep 1000")
        proc = s.stop()
        s.assert_clean()
        assert client.wait(timeout=CMD_TIMEOUT) == -signal.SIGTERM
        assert f"{client.pid} (" not in proc.stderr, proc.stderr
        print(f"\nstop under load: {s.stop_seconds:.2f} s")
    finally:
        for h in hogs:
            h.kill()
            h.wait()


def test_restart_ganesha_after_sigkill(server, tmp_path):
    s = server("--fs", "xfs", "--size", "512M")
    src = write_random(tmp_path / "src.bin", 8 * MIB)
    s.put(src, "before")
    old = s.pid
    os.kill(old, signal.SIGKILL)
    assert wait_until(lambda: not running(old), CMD_TIMEOUT)
    assert not s.answers()
    proc = s.cmd("restart-ganesha", "--state", s.state)
    assert proc.returncode == 0, proc.stderr
    assert re.fullmatch(r"\d+\n", proc.stdout), proc.stdout
    s.pid = int(proc.stdout)
    assert s.pid != old and running(s.pid)
    s.refresh()
    assert s.answers()
    s.get("before", tmp_path / "after.bin")
    assert filecmp.cmp(src, tmp_path / "after.bin", shallow=False)
    # restart-ganesha on a running server restarts it.
    proc = s.cmd("restart-ganesha", "--state", s.state)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) != s.pid and not running(s.pid)
    s.pid = int(proc.stdout)
    s.refresh()
    assert s.answers()


def test_refuses_foreign_or_busy_state_dir(server, tmp_path):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "precious").write_text("keep me")
    r = sh("bash", SCRIPT, "start", "--state", foreign)
    assert r.returncode != 0 and "not a nfs-server.sh state directory" in r.stderr
    r = sh("bash", SCRIPT, "stop", "--state", foreign)
    assert r.returncode != 0
    assert (foreign / "precious").read_text() == "keep me"
    s = server()
    r = sh("bash", SCRIPT, "start", "--state", s.state)
    assert r.returncode != 0 and "already running" in r.stderr
    assert s.answers()


def test_failed_start_leaves_nothing(tmp_path):
    s = Server(tmp_path / "state")
    proc = s.cmd("start", "--state", s.state, "--fs", "xfs", "--size", "64M")  # too small
    assert proc.returncode != 0 and proc.stdout == ""
    assert not loops_of(s.image) and not mounts_under(s.state)
    assert s.status()[0] == 3


def _peak_threads(s, tmp_path, clients=48, size=16 * MIB):
    """Copy `clients` files at once; the most threads ganesha had meanwhile."""
    src = write_random(tmp_path / "load.bin", size)
    peak = [len(os.listdir(f"/proc/{s.pid}/task"))]
    done = threading.Event()

    def sample():
        while not done.is_set():
            with contextlib.suppress(OSError):
                peak[0] = max(peak[0], len(os.listdir(f"/proc/{s.pid}/task")))
            time.sleep(0.005)

    t = threading.Thread(target=sample)
    t.start()
    try:
        procs = [subprocess.Popen(["bash", str(SCRIPT), "exec", "--state", str(s.state), "--",
                                   "nfs-cp", str(src), s.nfs(f"load{i}")],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for i in range(clients)]
        for p in procs:
            assert p.wait(timeout=CMD_TIMEOUT) == 0
    finally:
        done.set()
        t.join()
    return peak[0]


def test_workers_caps_ganesha_worker_pool(server, tmp_path):
    """--workers N is RPC_Ioq_ThrdMax: ntirpc's svc_ worker pool grows on
    demand up to N threads. ganesha has 8 other threads (main + 7)."""
    capped = server("--workers", "16", name="capped")
    conf = (capped.state / "conf" / "ganesha.conf").read_text()
    assert re.search(r"RPC_Ioq_ThrdMax = 16;", conf)
    peak_capped = _peak_threads(capped, tmp_path)
    capped.stop()
    free = server(name="free")          # default: 200
    peak_free = _peak_threads(free, tmp_path)
    print(f"\npeak ganesha threads under 48 clients: --workers 16: {peak_capped}, "
          f"default (200): {peak_free}")
    assert peak_capped <= 16 + 8, peak_capped
    assert peak_free > 16 + 8, f"the load did not need more than 16 workers ({peak_free})"


def _loop_counters(loopdev):
    """(sectors written, flush requests) of a block device."""
    f = Path(f"/sys/block/{Path(loopdev).name}/stat").read_text().split()
    return int(f[6]), int(f[15])


@pytest.mark.parametrize("mode", ["sync", "sync-writes", "async"])
def test_sync_modes_seen_on_the_loop_device(server, tmp_path, mode):
    """--sync: COMMIT fsyncs (the data reaches the device at the end of the
    copy); --sync-writes: every WRITE is made stable (a flush per 1 MiB
    write); --async: COMMIT and stable writes are not flushed at all."""
    s = server("--fs", "xfs", "--size", "1G", f"--{mode}")
    src = write_random(tmp_path / "src.bin", 32 * MIB)
    loopdev = s.status()[1]["loopdev"]
    sectors0, flushes0 = _loop_counters(loopdev)
    s.put(src, "f")
    sectors1, flushes1 = _loop_counters(loopdev)
    written, flushes = (sectors1 - sectors0) * 512, flushes1 - flushes0
    print(f"\n--{mode}: {written / MIB:.1f} MiB written to the device, {flushes} flushes")
    if mode == "sync":
        assert written >= 32 * MIB and 1 <= flushes < 32
    elif mode == "sync-writes":
        assert written >= 32 * MIB and flushes >= 32
    else:
        assert written < 16 * MIB and flushes <= 1
    s.get("f", tmp_path / "back.bin")
    assert filecmp.cmp(src, tmp_path / "back.bin", shallow=False)


def test_throughput_256m_on_xfs(server, tmp_path):
    """Not a benchmark gate: checks the bytes and prints MiB/s."""
    s = server("--fs", "xfs", "--size", "2G")
    src = write_random(tmp_path / "big.bin", 256 * MIB)
    t0 = time.monotonic()
    s.put(src, "big")
    t1 = time.monotonic()
    s.get("big", tmp_path / "big.back")
    t2 = time.monotonic()
    assert filecmp.cmp(src, tmp_path / "big.back", shallow=False)
    print(f"\nxfs, 256 MiB over loopback with nfs-cp (NFSv3): write {256 / (t1 - t0):.0f} MiB/s, "
          f"read {256 / (t2 - t1):.0f} MiB/s (each including nsenter + mount, about 10 ms); "
          f"start {s.start_seconds:.2f} s")


# ---------------------------------------------------------------- NLM (issue 13)

NLM4_STATS = ["GRANTED", "DENIED", "DENIED_NOLOCKS", "BLOCKED", "DENIED_GRACE_PERIOD",
              "DEADLCK", "ROFS", "STALE_FH", "FBIG", "FAILED"]


def _xdr_opaque(data):
    return struct.pack(">I", len(data)) + data + b"\0" * (-len(data) % 4)


class _Rpc:
    """A minimal ONC RPC client over TCP (record marking, AUTH_UNIX as root):
    enough for MOUNT3 MNT, NFS3 LOOKUP and NLM4 calls."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=20)
        self.xid = os.getpid() << 8

    def _read(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("the server closed the connection")
            data += chunk
        return data

    def call(self, prog, vers, proc, args):
        """The procedure's result bytes; raises OSError if not accepted."""
        self.xid += 1
        cred = struct.pack(">I", 0) + _xdr_opaque(b"herd-nlm-probe") + struct.pack(">III", 0, 0, 0)
        msg = (struct.pack(">IIIIII", self.xid, 0, 2, prog, vers, proc)
               + struct.pack(">I", 1) + _xdr_opaque(cred) + struct.pack(">II", 0, 0) + args)
        self.sock.sendall(struct.pack(">I", 0x80000000 | len(msg)) + msg)
        reply = b""
        while True:
            (mark,) = struct.unpack(">I", self._read(4))
            reply += self._read(mark & 0x7FFFFFFF)
            if mark & 0x80000000:
                break
        xid, mtype, rstat = struct.unpack(">III", reply[:12])
        if xid != self.xid or mtype != 1 or rstat != 0:
            raise OSError(f"RPC reply xid {xid} type {mtype} reply_stat {rstat}")
        vlen = struct.unpack(">I", reply[16:20])[0]
        pos = 20 + vlen + (-vlen % 4)
        (astat,) = struct.unpack(">I", reply[pos:pos + 4])
        if astat != 0:
            raise OSError(f"RPC accept_stat {astat} (prog {prog} v{vers} proc {proc})")
        return reply[pos + 4:]


def _nfs3_fh(export, name):
    """MOUNT3 MNT of the export, then NFS3 LOOKUP of name: its file handle."""
    res = _Rpc(20048).call(100005, 3, 1, _xdr_opaque(export.encode()))
    status, flen = struct.unpack(">II", res[:8])
    assert status == 0, f"MNT {export}: mountstat3 {status}"
    root = res[8:8 + flen]
    res = _Rpc(2049).call(100003, 3, 3, _xdr_opaque(root) + _xdr_opaque(name.encode()))
    status, flen = struct.unpack(">II", res[:8])
    assert status == 0, f"LOOKUP {name}: nfsstat3 {status}"
    return res[8:8 + flen]


def nlm_probe(argv):
    """argv: NLM_PORT EXPORT FILE CALLER_NAME OP...; OP is KIND:SVID:OFFSET:LEN
    with KIND lock (exclusive, non-blocking), test or unlock; the owner
    handle is derived from SVID. Prints the NLM4 status of each op, one a
    line, or NO-NLM if nothing listens on the NLM port. Run inside the
    server's network namespace (nfs-server.sh exec)."""
    port, export, name, caller = int(argv[0]), argv[1], argv[2], argv[3]
    fh = _nfs3_fh(export, name)
    try:
        rpc = _Rpc(port)
    except ConnectionRefusedError:
        print("NO-NLM")
        return 0
    procs = {"test": 1, "lock": 2, "unlock": 4}
    for i, op in enumerate(argv[4:]):
        kind, svid, off, length = op.split(":")
        alock = (_xdr_opaque(caller.encode()) + _xdr_opaque(fh)
                 + _xdr_opaque(f"herd-owner-{svid}".encode())
                 + struct.pack(">iQQ", int(svid), int(off), int(length)))
        cookie = _xdr_opaque(struct.pack(">I", i))
        if kind == "lock":      # block false, exclusive true; reclaim false, state 0
            args = cookie + struct.pack(">II", 0, 1) + alock + struct.pack(">Ii", 0, 0)
        elif kind == "test":    # exclusive true
            args = cookie + struct.pack(">I", 1) + alock
        else:
            args = cookie + alock
        res = rpc.call(100021, 4, procs[kind], args)
        clen = struct.unpack(">I", res[:4])[0]
        pos = 4 + clen + (-clen % 4)
        (stat,) = struct.unpack(">I", res[pos:pos + 4])
        print(NLM4_STATS[stat] if stat < len(NLM4_STATS) else f"STAT{stat}", flush=True)
    return 0


def rpc_programs(s):
    """{(program, version, proto): port} registered with the server's rpcbind."""
    out = s.exec("rpcinfo", "-p", "127.0.0.1").stdout
    found = {}
    for line in out.splitlines()[1:]:
        f = line.split()
        if len(f) >= 4 and f[0].isdigit():
            found[(int(f[0]), int(f[1]), f[2])] = int(f[3])
    return found


def in_grace(s):
    return s.status()[1].get("in_grace") == "yes"


def ganesha_sigkill_waits(text):
    """The seconds ganesha had from SIGTERM each time it needed SIGKILL, as
    nfs-server.sh logs it."""
    return re.findall(r"ganesha \(pid \d+\) did not stop within (\d+) s of SIGTERM", text)


def test_nlm_registered_and_locks_granted_and_denied(server):
    """Default start: NLM (100021 v4/TCP) at the fixed port next to statd
    (100024), statd running with its state in STATE/statd; real NLM4 calls:
    a second owner is denied, TEST names the conflict, UNLOCK frees it; the
    lock client is monitored by statd in its state directory."""
    s = server()
    rc, kv = s.status()
    assert rc == 0 and kv["state"] == "running", kv
    assert kv["nlm"] == "on" and kv["nlm_port"] == str(NLM_PORT), kv
    assert kv["grace"] == "0" and kv["in_grace"] == "no", kv
    statd_dir = os.path.realpath(s.state / "statd")
    assert kv["statd_dir"] == statd_dir and kv["statd"].endswith(" running"), kv
    statd = s.procs["statd"][0]
    argv = Path(f"/proc/{statd}/cmdline").read_bytes().split(b"\0")
    assert b"-P" in argv and argv[argv.index(b"-P") + 1].decode() == statd_dir, argv
    assert os.readlink(f"/proc/{statd}/ns/net") == s.netns   # inside the namespace
    progs = rpc_programs(s)
    assert progs.get((100021, 4, "tcp")) == NLM_PORT, progs
    assert progs.get((100024, 1, "tcp")) == STATD_PORT, progs
    assert (Path(statd_dir) / "state").exists()
    assert not list((Path(statd_dir) / "sm").iterdir())

    (s.state / "export" / "locked").write_bytes(b"x" * 4096)
    got = s.nlm("locked", "lock:1:0:100", "lock:2:50:10", "test:2:50:10", "lock:2:100:10",
                "unlock:1:0:100", "lock:2:50:10", "unlock:2:50:10", "unlock:2:100:10")
    assert got == ["GRANTED", "DENIED", "DENIED", "GRANTED",
                   "GRANTED", "GRANTED", "GRANTED", "GRANTED"], got
    # All released: ganesha unmonitored the client. Holding a lock again,
    # it is monitored by statd, which records it in its sm/ directory.
    assert not list((Path(statd_dir) / "sm").iterdir())
    assert s.nlm("locked", "lock:3:0:1") == ["GRANTED"]
    assert [p.name for p in (Path(statd_dir) / "sm").iterdir()], "statd monitors nobody"
    # A lock client held: stop must still be quick (ganesha's shutdown hangs
    # ~12 s in SM_UNMON; nfs-server.sh gives it 1 s, then SIGKILL, and
    # stop names it).
    proc = s.stop()
    waits = ganesha_sigkill_waits((s.state / "log" / "supervisor.log").read_text())
    assert set(waits) <= {"1"}, f"ganesha had {waits} s, not NFS_SERVER_NLM_STOP_TIMEOUT"
    if waits:
        assert f"{s.pid} (ganesha.nfsd)" in proc.stderr, proc.stderr
    s.assert_clean()
    print(f"\nNLM: start {s.start_seconds:.2f} s, stop with a lock held {s.stop_seconds:.2f} s")


def test_no_nlm(server):
    """--no-nlm: Enable_NLM = false, no statd, nothing on the NLM port."""
    s = server("--no-nlm")
    rc, kv = s.status()
    assert rc == 0 and kv["nlm"] == "off" and "statd" not in kv, kv
    assert "statd" not in s.procs
    progs = rpc_programs(s)
    assert (100003, 3, "tcp") in progs, progs
    assert not [k for k in progs if k[0] in (100021, 100024)], progs
    assert "Enable_NLM = false;" in (s.state / "conf" / "ganesha.conf").read_text()
    (s.state / "export" / "f").write_text("x")
    assert s.nlm("f", "lock:1:0:1") == ["NO-NLM"]
    r = s.cmd("stop-statd", "--state", s.state)
    assert r.returncode != 0 and "without NLM" in r.stderr


def test_stop_statd_gives_nolocks_and_start_statd_recovers(server):
    """Without statd ganesha cannot monitor a new lock client: every lock is
    NLM4_DENIED_NOLOCKS (what herd must report as ENOLCK); start-statd
    brings it back, and stop also stops the new statd."""
    s = server()
    (s.state / "export" / "f").write_text("x")
    old = s.procs["statd"]
    r = s.cmd("stop-statd", "--state", s.state)
    assert r.returncode == 0, r.stderr
    assert not running(*old), "stop-statd returned before statd was gone"
    rc, kv = s.status()
    assert rc == 1 and kv["state"] == "degraded" and kv["statd"].endswith(" dead"), kv
    assert (100024, 1, "tcp") not in rpc_programs(s)       # it unregistered
    assert s.nlm("f", "lock:1:0:1", "lock:2:5:1") == ["DENIED_NOLOCKS", "DENIED_NOLOCKS"]
    r = s.cmd("start-statd", "--state", s.state)
    assert r.returncode == 0, r.stderr
    new = int(r.stdout)
    assert new != old[0] and running(new)
    s.refresh()
    assert s.procs["statd"][0] == new
    assert s.status()[0] == 0
    assert s.nlm("f", "lock:1:0:1", "lock:2:0:1", "unlock:1:0:1") == \
        ["GRANTED", "DENIED", "GRANTED"]


def grace_lines(s, what):
    """How many times ganesha's log (kept across restarts) says `what`
    ("IN GRACE, duration S")."""
    log = (s.state / "log" / "ganesha.log").read_text()
    return log.count(f"NFS Server Now {what}")


def started_graceless(s):
    """ganesha's log since its latest start says it skipped the grace, and
    status agrees (in_grace=no, also after a restart out of a grace that
    had not ended)."""
    log = (s.state / "log" / "ganesha.log").read_text()
    latest = log[log.rfind("Starting: Ganesha Version"):]
    return ("skipping GRACE (Graceless is true)" in latest and "Now IN GRACE" not in latest
            and s.status()[1]["in_grace"] == "no")


def test_grace_period_at_start_and_after_restart(server, tmp_path):
    """--grace S: new NLM locks NLM4_DENIED_GRACE_PERIOD, NFSv4 OPEN
    NFS4ERR_GRACE, ganesha logs the grace, status says in_grace=yes; a
    grace ends by itself (the log says NOT IN GRACE) and then everything
    is granted. restart-ganesha --grace S with a lock held puts the
    restarted server in grace again (and is quick: ganesha gets 1 s after
    SIGTERM); restart-ganesha --grace 0 ends a grace at once.

    The graces this test looks into are LONG: no busy machine outruns them
    between the start and the calls that must meet them. They are ended
    explicitly (--grace 0), never waited out; the grace that is waited out
    (SHORT) is only polled for its end, with a bound derived from it."""
    long_grace, short_grace = 120, 3
    s = server("--grace", long_grace)
    (s.state / "export" / "f").write_text("hello")
    rc, kv = s.status()
    assert kv["grace"] == str(long_grace) and kv["lease"] == "60", kv  # the lease's cap
    assert in_grace(s)
    assert grace_lines(s, f"IN GRACE, duration {long_grace}") == 1
    assert s.nlm("f", "lock:1:0:1") == ["DENIED_GRACE_PERIOD"]
    r = s.exec("nfs-cp", s.nfs("f", version=4), tmp_path / "v4-in-grace")
    assert r.returncode != 0 and "NFS4ERR_GRACE" in r.stdout + r.stderr, r
    assert in_grace(s), "the long grace ended while the test looked into it"

    # --grace 0 ends it: graceless at once, everything granted.
    r = s.cmd("restart-ganesha", "--state", s.state, "--grace", "0")
    assert r.returncode == 0, r.stderr
    s.pid = int(r.stdout)
    s.refresh()
    assert s.status()[1]["grace"] == "0" and started_graceless(s)
    assert s.nlm("f", "lock:1:0:1") == ["GRANTED"]  # held from now on
    s.get("f", tmp_path / "v4-graceless", version=4)
    assert (tmp_path / "v4-graceless").read_text() == "hello"

    # A restart into a grace with that lock held: quick, and in grace again.
    t0 = time.monotonic()
    r = s.cmd("restart-ganesha", "--state", s.state, "--grace", long_grace)
    restart = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    assert set(ganesha_sigkill_waits(r.stderr)) <= {"1"}, r.stderr
    s.pid = int(r.stdout)
    s.refresh()
    assert in_grace(s)
    assert grace_lines(s, f"IN GRACE, duration {long_grace}") == 2
    assert s.nlm("f", "lock:2:0:1") == ["DENIED_GRACE_PERIOD"]
    assert in_grace(s), "the long grace ended while the test looked into it"

    # A short grace ends by itself: when ganesha's reaper next runs after
    # it (every lease/2 s; the lease is the grace here). Polled until the
    # log says so, for up to 20 graces and leases; it never ends early.
    t0 = time.monotonic()
    r = s.cmd("restart-ganesha", "--state", s.state, "--grace", short_grace)
    assert r.returncode == 0, r.stderr
    s.pid = int(r.stdout)
    s.refresh()
    assert grace_lines(s, f"IN GRACE, duration {short_grace}") == 1
    bound = 20 * (short_grace + short_grace)
    assert wait_until(lambda: not in_grace(s), bound, 0.2), \
        f"a grace of {short_grace} s had not ended after {bound} s"
    lasted = time.monotonic() - t0
    assert lasted > short_grace - 1, f"a grace of {short_grace} s ended after {lasted:.1f} s"
    assert s.nlm("f", "lock:2:0:1") == ["GRANTED"]
    s.get("f", tmp_path / "v4-after", version=4)
    assert (tmp_path / "v4-after").read_text() == "hello"

    # --grace 0: graceless again.
    r = s.cmd("restart-ganesha", "--state", s.state, "--grace", "0")
    assert r.returncode == 0, r.stderr
    s.refresh()
    assert s.status()[1]["grace"] == "0" and started_graceless(s) and not in_grace(s)
    assert s.nlm("f", "lock:3:10:1") == ["GRANTED"]
    print(f"\ngrace {short_grace} s observed for {lasted:.1f} s from the restart command; "
          f"restart-ganesha with a lock held {restart:.2f} s")


def test_option_checks(tmp_path):
    for opts in (["--grace", "x"], ["--grace", "181"], ["--lease", "0"]):
        r = sh("bash", SCRIPT, "start", "--state", tmp_path / "s", *opts)
        assert r.returncode != 0 and "seconds" in r.stderr, (opts, r.stderr)
        assert not (tmp_path / "s").exists()


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "nlm-probe":
    sys.exit(nlm_probe(sys.argv[2:]))
