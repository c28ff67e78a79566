"""herd against the Linux kernel's NFS server: cluster-configs/local/nfs-server.sh
--server knfsd boots a User-Mode Linux guest (linux.uml, an ordinary process)
in the server's private network namespace; the guest runs the real kernel
nfsd, lockd, rpc.statd, rpc.mountd and node_exporter and exports its first
disk (ubda, the xfs image STATE/image.img) to the namespace, where clients
reach it at nfs://10.77.0.2/export (see knfsdctl.py, knfsd.py, uml-init.c).

1. start / status / stop: the start prints the URL and linux.uml's PID,
   status says running with 8 nfsd threads, stop leaves nothing: no
   recorded process, no process of the namespace, no mount, no linux.uml
   of the state directory, nothing new in /dev/shm (UML's guest memory
   lives there), status stopped. The same after SIGKILL of linux.uml and
   after SIGKILL of the supervisor (UML's helper processes then still run
   in the namespace; stop's sweep must end them). Start and stop times are
   printed (-s).
2. Data: herd writes unique and segmented shared files over NFSv3 (4
   ranks, keep = yes), reads them with verify and md5s them over NFSv3,
   then over NFSv4; every byte count is exact, no verify failure. A file
   copied in with nfs-cp over v3 reads back identical over v4. Then over
   NFSv4 (herd's own OPEN, WRITEs, COMMITs): unique, same-content shared
   and segmented files written, read with verify and md5ed over v4 and
   read again over v3; by nfsd's own operation counts (proc4ops) the
   WRITEs are the server's maxwrite (64 KiB here) each, fsync is one
   COMMIT per file, a close after unstable WRITEs COMMITs, and direct
   (FILE_SYNC4) WRITEs need no COMMIT.
3. Locks on kernel lockd (NLM, v3) and kernel NFSv4 LOCK: an exclusive
   whole-file blocking phase, 4 ranks x 20: every lock granted, no
   violation, no error, exclusive holds never overlap. restart-server
   --grace 180: NLM4_DENIED_GRACE_PERIOD (ENOLCK) on every rank over v3,
   every rank refused over v4 (the kernel refuses OPEN in grace, nfs-cp
   says NFS4ERR_GRACE); once restart-server --grace 0 has ended it both
   are clean again.
   Kernel lockd has a grace period of at least nlm_timeout (3 s) at every
   start, also with --grace 0: the tests wait for it with a real NLM4 LOCK
   (nlm_wait below: raw ONC RPC, run inside the namespace).
4. Monitor: monitor_url = the guest's node_exporter, scraped by rank 0
   every 200 ms: /monitor/samples has node_exporter rows with
   nfsd_threads 8 and nfsd_write_bytes summing to at least what herd
   wrote (and at most what the guest's /proc/net/rpc/nfsd io line grew);
   pool_packets are checked where herd fills them.
5. Threads: --threads 1 (guest /proc/fs/nfsd/threads, the samples), then
   `threads 8` live (the same two, on a second run).
6. sync vs async exports: a meta phase (4 ranks x 200 empty files:
   create, rename, unlink). Under a sync export nfsd commits every
   namespace change (commit_metadata: an xfs log force, a cache flush on
   the guest disk): at least one flush of ubda per operation; under async
   (at start, and switched live with export-mode) none to speak of. The
   flush counts and the step times are printed, no time is asserted.
7. A vanished server: linux.uml SIGKILLed while 4 ranks write over NFSv3
   (op_timeout 5 s, blocks of 16 WRITEs): the run ends with exit 3, only
   a lost server's errnos, counted per rank, and by every record of a
   call's time in the results no call longer than op_timeout and its
   margin (test_nfs.CALL_MARGIN).

Needs root, user-mode-linux (linux.uml and its modules, with nfsd.ko),
nfs-kernel-server (rpc.nfsd, exportfs, rpc.mountd), prometheus-node-exporter,
a C compiler (cc: the guest's init), libnfs-utils (nfs-cp, nfs-ls) and
mpirun; skips the module with a message otherwise
(cluster-configs/local/install.sh installs them). Run:
HERD_BIN=build/herd /usr/bin/python3 -m pytest -q -s tests/integration/test_knfsd.py
"""

import contextlib
import errno
import filecmp
import json
import os
import pwd
import re
import shutil
import signal
import socket
import struct
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from conftest import MIB, describe, load_results, phase_attr_order, proc_cmdlines, write_job
from test_nfs import (CALL_MARGIN, CONNECTION_ERRNOS, calls_at_least, check_calls_bounded,
                      check_data_phases, check_error_names, common_time,
                      errnos_by_rank, herd_run_nfs, ns_background)
from test_nfs_locks import assert_no_exclusive_overlap, holds_of, lock_global
from test_nfs_server import (CMD_TIMEOUT, SBIN_PATH, Server, _Rpc, _xdr_opaque, NLM4_STATS,
                             describe_pids, running, server_factory, wait_until, write_random)

GUEST_ADDR = "10.77.0.2"
BASE = f"nfs://{GUEST_ADDR}/export"
URL3 = f"{BASE}?version=3"
URL4 = f"{BASE}?version=4"
METRICS_URL = f"http://{GUEST_ADDR}:9100/metrics"
NRANKS = 4
# A vanished server's errnos: a call that got no answer, a reconnect refused
# or unreachable once ARP for the guest failed, a connection lost.
VANISHED_ERRNOS = CONNECTION_ERRNOS | {errno.EHOSTUNREACH}
# What UML leaves in /dev/shm if it dies before unlinking its guest memory
# (arch/um/os-Linux/mem.c names it vm_file-XXXXXX). Only these count: other
# jobs (Open MPI's vader_segment.*, open_mpi.0000, ...) make and remove their
# own entries there at any time.
UML_SHM = re.compile(r"^vm_file-")


def _why_skip_knfsd():
    if os.geteuid() != 0:
        return "nfs-server.sh --server knfsd needs root (namespaces, a tap device)"
    need = {"linux.uml": "user-mode-linux", "rpc.nfsd": "nfs-kernel-server",
            "exportfs": "nfs-kernel-server", "rpc.mountd": "nfs-kernel-server",
            "prometheus-node-exporter": "prometheus-node-exporter", "cc": "gcc",
            "nfs-cp": "libnfs-utils", "nfs-ls": "libnfs-utils", "mpirun": "openmpi-bin"}
    missing = sorted({f"{tool} ({pkg})" for tool, pkg in need.items()
                      if shutil.which(tool, path=SBIN_PATH) is None})
    if missing:
        return ("the kernel NFS server in User-Mode Linux needs: " + ", ".join(missing)
                + " (see cluster-configs/local/install.sh)")
    if not list(Path("/usr/lib/uml/modules").glob("*/kernel/fs/nfsd/nfsd.ko")):
        return "no /usr/lib/uml/modules/*/kernel/fs/nfsd/nfsd.ko (user-mode-linux's nfsd module)"
    return None


_WHY = _why_skip_knfsd()
pytestmark = pytest.mark.skipif(_WHY is not None, reason=_WHY or "")


# ---------------------------------------------------------------- the server


def shm_listing():
    """/dev/shm's entries that UML makes."""
    with contextlib.suppress(OSError):
        return {n for n in os.listdir("/dev/shm") if UML_SHM.match(n)}
    return set()


def uml_processes(state):
    """PIDs of running linux.uml processes whose command line names state
    (the guest and its helpers: every guest process is one)."""
    state = os.path.realpath(state)
    found = []
    for pid, cmd in proc_cmdlines().items():
        argv = cmd.split(b"\0")
        if os.path.basename(argv[0]) == b"linux.uml" and \
                any(state.encode() in a for a in argv) and running(pid):
            found.append(pid)
    return found


class KnfsdServer(Server):
    """nfs-server.sh --server knfsd: the PID start prints is linux.uml's.
    URL: the URL start prints (a pattern)."""

    PROCS = ("supervisor", "uml")
    URL = re.escape(URL3)

    def start(self, *opts):
        opts = [str(o) for o in opts]
        if "--fs" not in opts:
            opts += ["--fs", "xfs"]
        if "--size" not in opts:
            opts += ["--size", "1G"]
        self.shm_before = shm_listing()
        self.start_t0 = time.monotonic()
        proc = self.cmd("start", "--state", self.state, "--server", "knfsd", *opts)
        self.start_seconds = time.monotonic() - self.start_t0
        self.started_at = time.monotonic()
        assert proc.returncode == 0, f"start failed:\n{proc.stderr}"
        lines = proc.stdout.splitlines()
        assert len(lines) == 2, f"start must print exactly 2 lines, got {proc.stdout!r}"
        self.url, pid = lines
        assert re.fullmatch(self.URL, self.url), f"start printed the URL {self.url!r}"
        assert re.fullmatch(r"\d+", pid), f"line 2 is not a PID: {pid!r}"
        self.pid = int(pid)
        self.base = self.url.split("?", 1)[0]
        self.smb_url = None
        self.refresh()
        assert "uml" in self.procs, f"status names no running uml: {self.status()}"
        assert self.procs["uml"][0] == self.pid, \
            f"start printed PID {self.pid}, status says uml={self.procs['uml'][0]}"
        self.pin_netns()
        return self

    def guest(self, *command, timeout=CMD_TIMEOUT):
        return self.cmd("guest", "--state", self.state, "--", *command, timeout=timeout)

    def guest_read(self, path):
        proc = self.guest("read", path)
        assert proc.returncode == 0, f"guest read {path} failed:\n{proc.stdout}{proc.stderr}"
        return proc.stdout

    def guest_exec(self, *argv):
        """(exit status, output) of a program run by the guest's agent."""
        proc = self.guest("exec", *argv)
        assert proc.returncode == 0, f"guest exec {argv} failed:\n{proc.stdout}{proc.stderr}"
        out, _, last = proc.stdout.rstrip("\n").rpartition("\n")
        m = re.fullmatch(r"exit (-?\d+)", last)
        assert m, f"guest exec {argv}: no 'exit N' last line: {proc.stdout!r}"
        return int(m.group(1)), out

    def threads_running(self):
        return int(self.guest_read("/proc/fs/nfsd/threads").strip())

    def disk_stat(self):
        """(sectors written, flush requests completed) of the guest's disk
        ubda (the export): fields 7 and 16 of its /sys/block stat line
        (Documentation/block/stat.rst; field 15 is discard ticks)."""
        f = self.guest_read("/sys/block/ubda/stat").split()
        assert len(f) >= 17, f"ubda stat has no flush fields: {f}"
        return int(f[6]), int(f[15])

    def nfsd_io(self):
        """(bytes read, bytes written) by nfsd since the guest booted: the
        io line of /proc/net/rpc/nfsd."""
        for line in self.guest_read("/proc/net/rpc/nfsd").splitlines():
            if line.startswith("io "):
                return tuple(int(v) for v in line.split()[1:3])
        raise AssertionError("no io line in the guest's /proc/net/rpc/nfsd")

    def kernel_export_flags(self):
        """The flags of /export in the guest kernel's export cache
        (/proc/fs/nfsd/exports: filled when a client used the export)."""
        text = self.guest_read("/proc/fs/nfsd/exports")
        for line in text.splitlines():
            m = re.match(r"^/export\s+\S+?\((.*)\)", line)
            if m:
                return set(m.group(1).split(","))
        raise AssertionError(f"/export not in the kernel's export cache:\n{text}")

    def assert_clean(self):
        """Server's checks (no recorded process, nothing of the namespace,
        no mount under the state directory, status stopped), and: no
        linux.uml of this state directory, nothing UML made in /dev/shm."""
        super().assert_clean()
        left = uml_processes(self.state)
        assert not left, f"linux.uml processes of {self.state} left: {describe_pids(left)}"
        new = shm_listing() - self.shm_before
        assert not new, f"new entries in /dev/shm after stop: {sorted(new)}"


@pytest.fixture
def knfsd(tmp_path):
    """Factory: knfsd(*start options) -> a started KnfsdServer (xfs, 1G
    unless given). Teardown stops every server, also after a failed test,
    and checks that nothing of any is left."""
    with server_factory(tmp_path, KnfsdServer, "knfsd") as make:
        yield make


# ---------------------------------------------------------------- NLM probe


class _GuestRpc(_Rpc):
    """test_nfs_server's ONC RPC client, to the guest's address."""

    def __init__(self, port):
        self.sock = socket.create_connection((GUEST_ADDR, port), timeout=20)
        self.xid = (os.getpid() << 8) & 0x7FFFFFFF


def _rpc(port, prog, vers, proc, args):
    rpc = _GuestRpc(port)
    try:
        return rpc.call(prog, vers, proc, args)
    finally:
        rpc.sock.close()


def _getport(prog, vers):
    """PMAP_GETPORT over TCP from the guest's rpcbind (0: not registered)."""
    res = _rpc(111, 100000, 2, 3, struct.pack(">IIII", prog, vers, 6, 0))
    return struct.unpack(">I", res[:4])[0]


def _guest_fh(name):
    """MOUNT3 MNT of /export, then NFS3 LOOKUP of name: its file handle."""
    res = _rpc(_getport(100005, 3), 100005, 3, 1, _xdr_opaque(b"/export"))
    status, flen = struct.unpack(">II", res[:8])
    assert status == 0, f"MNT /export: mountstat3 {status}"
    root = res[8:8 + flen]
    res = _rpc(2049, 100003, 3, 3, _xdr_opaque(root) + _xdr_opaque(name.encode()))
    status, flen = struct.unpack(">II", res[:8])
    assert status == 0, f"LOOKUP {name}: nfsstat3 {status}"
    return res[8:8 + flen]


def nlm_wait(argv):
    """argv: FILE TIMEOUT. NLM4 LOCK (exclusive, non-blocking) of export
    file FILE, every 0.2 s, until one is GRANTED (then UNLOCK) or TIMEOUT
    s pass; prints JSON: the first status, the count of each status seen,
    granted, the seconds waited. Run inside the server's namespace."""
    name, timeout = argv[0], float(argv[1])
    fh = _guest_fh(name)
    t0 = time.monotonic()
    seen, first, granted, i = {}, None, False, 0
    while True:
        i += 1
        alock = (_xdr_opaque(b"herd-knfsd-probe") + _xdr_opaque(fh)
                 + _xdr_opaque(b"herd-knfsd-probe-owner") + struct.pack(">iQQ", 4242, 0, 1))
        cookie = _xdr_opaque(struct.pack(">I", i))
        try:
            port = _getport(100021, 4)
            res = _rpc(port, 100021, 4, 2,
                       cookie + struct.pack(">II", 0, 1) + alock + struct.pack(">Ii", 0, 0))
            clen = struct.unpack(">I", res[:4])[0]
            (stat,) = struct.unpack(">I", res[4 + clen + (-clen % 4):][:4])
            status = NLM4_STATS[stat] if stat < len(NLM4_STATS) else f"STAT{stat}"
        except OSError as e:
            port, status = 0, f"RPC-ERROR ({e})"
        first = first or status
        seen[status] = seen.get(status, 0) + 1
        if status == "GRANTED":
            _rpc(port, 100021, 4, 4, cookie + alock)
            granted = True
            break
        if time.monotonic() - t0 > timeout:
            break
        time.sleep(0.2)
    print(json.dumps({"first": first, "seen": seen, "granted": granted,
                      "waited": time.monotonic() - t0}))
    return 0


def wait_locks(s, name="probe", timeout=60):
    """nlm_wait in the server's namespace: {first, seen, granted, waited}."""
    proc = s.exec(sys.executable, Path(__file__).resolve(), "nlm-wait", name, timeout,
                  timeout=timeout + 60)
    assert proc.returncode == 0, f"NLM probe failed:\n{proc.stdout}{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def locks_ready(s, tmp_path):
    """Copy the probe file in and wait until kernel lockd grants a lock:
    lockd starts with a grace period of at least nlm_timeout (3 s), also
    with --grace 0, and NFSv4 LOCK is refused while any lock manager of
    the namespace is in grace."""
    probe = tmp_path / "probe.src"
    probe.write_bytes(b"probe\n")
    s.put(probe, "probe")
    got = wait_locks(s)
    assert got["granted"], f"kernel lockd granted no lock within 60 s: {got}"
    since = time.monotonic() - s.started_at
    print(f"\nNLM: first LOCK {got['first']}, granted after {got['waited']:.1f} s "
          f"({since:.1f} s after start returned; tries {got['seen']})")
    return got


# ---------------------------------------------------------------- helpers


def herd_ok(s, herd_bin, job, out, nranks=NRANKS, timeout=120):
    proc = herd_run_nfs(s, herd_bin, nranks, job, out, timeout=timeout)
    assert proc.returncode == 0, describe(proc)
    return load_results(out)


def lock_rows(ph):
    """{rank: [(op, errno name, status, count)]} of a phase's errors table."""
    out = {}
    for row in ph.error_rows():
        out.setdefault(int(row["rank"]), []).append(
            (row["op"], row["errno_name"], row.get("status", ""), int(row["count"])))
    return out


def check_clean_lock_phase(ph, res, holds, count, where):
    rows = ph.ranks
    assert ph.attrs["status"] == "ok", f"{where}: status {ph.attrs['status']}, {ph.error_rows()}"
    assert len(ph.errors) == 0 and rows["errors"].tolist() == [0] * NRANKS, \
        f"{where}: errors {ph.error_rows()}"
    assert rows["grants"].tolist() == [count] * NRANKS, f"{where}: grants {rows['grants']}"
    assert rows["contended"].tolist() == [0] * NRANKS, f"{where}: contended {rows['contended']}"
    assert rows["violations"].tolist() == [0] * NRANKS, \
        f"{where}: lock exclusion broken: violations {rows['violations']}"
    assert len(holds) == NRANKS * count, f"{where}: {len(holds)} holds recorded"
    assert (holds["exclusive"] == 1).all(), where
    assert_no_exclusive_overlap(holds, res, where)
    assert ph.attrs["max_holders"] == 1, f"{where}: max_holders {ph.attrs['max_holders']}"
    # the token: 2 reads + 2 writes of 16 bytes per exclusive hold, over NFS
    assert int(rows["bytes"].sum()) == 64 * NRANKS * count, where


def samples_of(path):
    """(/monitor/samples rows of source node_exporter, the notes' texts,
    /monitor's attributes)."""
    with h5py.File(path, "r") as f:
        mon = f["monitor"]
        attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in mon.attrs.items()}
        rows = mon["samples"][()] if "samples" in mon else None
        notes = []
        if "notes" in mon:
            for n in mon["notes"][()]:
                notes.append(" ".join(v.decode() if isinstance(v, bytes) else str(v)
                                      for v in n.tolist()))
    if rows is not None:
        rows = rows[rows["source"] == b"node_exporter"]
    return rows, notes, attrs


def monitor_job(path, size, run_id):
    """A write phase of NRANKS x size, sampled by rank 0 from the guest's
    node_exporter every 200 ms. The idle phase before it makes the
    baseline reading (taken when sampling starts, at the first phase's
    start) on an idle guest: a scrape stamped at a write phase's start is
    answered while nfsd already writes, and the first phase's bytes
    would be short by what it wrote until the answer. The idle phase
    after it keeps the last reading (at the last phase's end, skipped
    when under 20 ms after the previous one) clear of the writes."""
    return write_job(path, {"backend": "libnfs", "target": URL3, "file_size": size,
                            "block_size": "1M", "run_id": run_id,
                            "monitor_url": METRICS_URL, "monitor_interval": "200ms"},
                     [("settle", {"kind": "idle", "duration": 1}),
                      ("w", {"kind": "write"}),
                      ("after", {"kind": "idle", "duration": "500ms"})])


# ---------------------------------------------------------------- 1. lifecycle


def test_knfsd_start_status_stop(knfsd):
    # Started: start returned 0, which it does only once the guest's nfsd
    # answers (within nfs-server.sh's own readiness limit), and says so.
    s = knfsd()
    rc, kv = s.status()
    assert rc == 0 and kv.get("state") == "running", kv
    assert kv.get("server") == "knfsd" and kv.get("url") == URL3, kv
    assert kv.get("threads") == "8" and kv.get("threads_running") == "8", kv
    assert kv.get("metrics_url") == METRICS_URL, kv
    assert kv.get("uml") == f"{s.pid} running", kv
    assert kv.get("answers") == "yes", kv
    assert s.threads_running() == 8
    # The guest runs in the server's network namespace; only the namespace
    # reaches it.
    assert os.readlink(f"/proc/{s.pid}/ns/net") == s.netns
    helpers = uml_processes(s.state)
    assert s.pid in helpers, helpers
    assert s.exec("nfs-ls", URL3, timeout=30).returncode == 0, "the export does not answer"
    s.stop()
    s.assert_clean()
    print(f"\nknfsd: start {s.start_seconds:.2f} s, stop {s.stop_seconds:.2f} s, "
          f"{len(helpers)} linux.uml processes while it ran")


def test_knfsd_sigkill_uml_then_stop(knfsd):
    s = knfsd()
    os.kill(s.pid, signal.SIGKILL)
    assert wait_until(lambda: not running(*s.procs["uml"]), CMD_TIMEOUT), "linux.uml survived"
    rc, kv = s.status()
    assert rc == 1 and kv.get("state") == "degraded", kv
    assert kv.get("uml") == f"{s.pid} dead", kv
    orphans = uml_processes(s.state)
    s.stop()
    s.assert_clean()
    print(f"\nSIGKILL of linux.uml: {len(orphans)} of its processes still ran; "
          f"stop {s.stop_seconds:.2f} s")


def test_knfsd_sigkill_supervisor_then_stop(knfsd):
    s = knfsd()
    sup = s.procs["supervisor"]
    os.kill(sup[0], signal.SIGKILL)
    assert wait_until(lambda: not running(*sup), CMD_TIMEOUT), "the supervisor survived"
    rc, kv = s.status()
    assert rc != 0 and kv.get("state") == "degraded", kv
    assert kv.get("supervisor", "").endswith(" dead"), kv
    left = uml_processes(s.state)
    s.stop()
    s.assert_clean()
    print(f"\nSIGKILL of the supervisor: {len(left)} linux.uml processes left to stop's "
          f"sweep; stop {s.stop_seconds:.2f} s")


# ---------------------------------------------------------------- 2. data


def test_knfsd_guest_cannot_reach_the_host(knfsd, tmp_path):
    """The kernel nfsd guest's root, whatever it does, reaches of the host
    only its view (umlview.py): a hostfs mount of any path, /.. included,
    shows the view's few entries, all read-only from the host's side (a
    remount inside changes nothing) except its log directory; linux.uml
    runs as herd-guest, without capabilities, chrooted into the view."""
    s = knfsd()
    assert s.guest_exec("/bin/mkdir", "-p", "/tmp/h")[0] == 0
    for source in ("/", "/../../..", "/etc/../.."):
        rc, out = s.guest_exec("/bin/mount", "-t", "hostfs", "none", "/tmp/h", "-o", source)
        assert rc == 0, out
        rc, listing = s.guest_exec("/bin/ls", "-a", "/tmp/h")
        names = set(listing.split())
        assert names <= {".", "..", "bin", "dev", "disk.img", "etc", "init", "lib", "lib64", "mnt",
                         "proc", "run", "sbin", "state", "uml-xstate.so", "usr"}, listing
        assert "root" not in names and "home" not in names
        for target in ("/tmp/h/escape", "/tmp/h/usr/escape", "/tmp/h/etc/escape",
                       "/tmp/h/state/escape", "/tmp/h/mnt/escape"):
            rc, out = s.guest_exec("/bin/touch", target)
            assert rc != 0, f"the guest wrote {target} through hostfs {source}"
        assert s.guest_exec("/bin/umount", "/tmp/h")[0] == 0
    # /usr and /etc of the guest's own root: read-only binds of the host's,
    # still read-only after a remount inside
    assert s.guest_exec("/bin/mount", "-o", "remount,bind,rw", "/usr")[0] == 0
    assert s.guest_exec("/bin/touch", "/usr/herd-guest-escape")[0] != 0
    assert s.guest_exec("/bin/touch", "/state/log/guest-wrote-this")[0] == 0
    for host_path in (Path("/herd-guest-escape"), Path("/usr/herd-guest-escape"),
                      Path("/etc/escape"), s.state / "guest" / "escape"):
        assert not host_path.exists(), f"a guest wrote {host_path} on the host"
    log = s.state / "guest" / "log" / "guest-wrote-this"
    assert log.exists() and log.stat().st_uid == pwd.getpwnam("herd-guest").pw_uid
    status = dict(line.split(":", 1)
                  for line in Path(f"/proc/{s.pid}/status").read_text().splitlines())
    assert int(status["Uid"].split()[1]) == pwd.getpwnam("herd-guest").pw_uid
    assert int(status["CapEff"].strip(), 16) == 0


def test_knfsd_v3_writes_read_over_v3_and_v4(knfsd, herd_bin, tmp_path):
    s = knfsd()
    run_id = "knfsd-data"
    gl = {"backend": "libnfs", "target": URL3, "file_size": "4M", "block_size": "1M",
          "run_id": run_id, "keep": "yes"}
    seg = {"sharing": "shared", "shared_mode": "segmented"}
    writes = [("w", {"kind": "write"}), ("ws", {"kind": "write", **seg})]
    reads = [("r", {"kind": "read", "verify": "yes"}),
             ("rs", {"kind": "read", "verify": "yes", **seg}),
             ("m", {"kind": "md5"}),
             ("ms", {"kind": "md5", **seg})]
    order = phase_attr_order(herd_bin)
    runs = [("v3-write", gl, writes), ("v3-read", gl, reads),
            ("v4-read", {**gl, "target": URL4, "keep": "no"}, reads)]
    for tag, g, phases in runs:
        if tag == "v4-read":
            # Before the v4 run removes them: a herd file over v3 and v4
            # with libnfs's own client.
            f0 = f"herd-{run_id}/unique-4M/r000000.dat"
            s.get(f0, tmp_path / "r0.v3", version=3)
            s.get(f0, tmp_path / "r0.v4", version=4)
            assert (tmp_path / "r0.v3").stat().st_size == 4 * MIB
            assert filecmp.cmp(tmp_path / "r0.v3", tmp_path / "r0.v4", shallow=False), \
                "a herd file reads differently over NFSv3 and NFSv4"
        job = write_job(tmp_path / f"{tag}.ini", g, phases)
        out = tmp_path / f"{tag}.h5"
        proc = herd_run_nfs(s, herd_bin, NRANKS, job, out)
        assert proc.returncode == 0, describe(proc)
        rates = check_data_phases(load_results(out), g, phases, NRANKS, 4 * MIB, order, tag)
        print(f"\n{tag}: {rates}", end="")
    # keep = no removes only what that run made: the v3 run's kept files stay.
    listing = s.exec("nfs-ls", f"{BASE}/herd-{run_id}/unique-4M?version=3", timeout=30)
    assert listing.returncode == 0, listing.stderr
    assert sorted(re.findall(r"r\d{6}\.dat", listing.stdout)) == \
        [f"r{r:06d}.dat" for r in range(NRANKS)], f"kept files:\n{listing.stdout}"

    src = write_random(tmp_path / "src.bin", 3 * MIB + 123)
    s.put(src, "cp-v3")
    s.get("cp-v3", tmp_path / "back.v4", version=4)
    assert filecmp.cmp(src, tmp_path / "back.v4", shallow=False), \
        "nfs-cp: a file written over NFSv3 reads back different over NFSv4"
    print()


# nfsd's NFSv4 operations (RFC 7530's numbers) counted in proc4ops
OP4_COMMIT, OP4_WRITE = 5, 38


def proc4ops(s):
    """nfsd's count of each NFSv4 operation since the guest booted: the
    proc4ops line of /proc/net/rpc/nfsd (its count of ops, then one
    number per op)."""
    for line in s.guest_read("/proc/net/rpc/nfsd").splitlines():
        if line.startswith("proc4ops "):
            return [int(v) for v in line.split()[2:]]
    raise AssertionError("no proc4ops line in the guest's /proc/net/rpc/nfsd")


def test_knfsd_nfsv4_writes(knfsd, herd_bin, tmp_path):
    s = knfsd()
    run_id = "knfsd-v4"
    gl = {"backend": "libnfs", "target": URL4, "file_size": "4M", "block_size": "1M",
          "run_id": run_id, "keep": "yes"}
    same = {"sharing": "shared", "shared_mode": "same-content", "fileset": "same"}
    seg = {"sharing": "shared", "shared_mode": "segmented"}
    v4 = [("w", {"kind": "write"}), ("r", {"kind": "read", "verify": "yes"}),
          ("m", {"kind": "md5"}),
          ("wsame", {"kind": "write", **same}), ("rsame", {"kind": "read", "verify": "yes", **same}),
          ("msame", {"kind": "md5", **same}),
          ("ws", {"kind": "write", **seg}), ("rs", {"kind": "read", "verify": "yes", **seg}),
          ("ms", {"kind": "md5", **seg})]
    v3 = [("r", {"kind": "read", "verify": "yes"}),
          ("rsame", {"kind": "read", "verify": "yes", **same}),
          ("rs", {"kind": "read", "verify": "yes", **seg}), ("ms", {"kind": "md5", **seg})]
    order = phase_attr_order(herd_bin)
    for tag, g, phases in (("v4", gl, v4), ("v3-read", {**gl, "target": URL3}, v3)):
        res = herd_ok(s, herd_bin, write_job(tmp_path / f"{tag}.ini", g, phases),
                      tmp_path / f"{tag}.h5")
        rates = check_data_phases(res, g, phases, NRANKS, 4 * MIB, order, tag)
        print(f"\n{tag}: {rates}", end="")
        if tag == "v4":  # the RPC sizes the server gave (GETATTR maxread, maxwrite)
            opts = {h.decode() for h in res.hosts["mount_options"]}
            assert len(opts) == 1 and "rsize=65536,wsize=65536" in opts.pop(), res.hosts

    # What reached nfsd, one run at a time: 1 MiB files, a file per rank,
    # and the run's lock file (rank 0 writes its owner: one WRITE, whose
    # close COMMITs).
    small = {"backend": "libnfs", "target": URL4, "file_size": "1M", "block_size": "1M"}
    writes_per_file = MIB // (64 << 10)
    for tag, keys, commits in (("fsync", {}, NRANKS),
                               ("no-fsync", {"fsync": "no"}, NRANKS),
                               ("direct", {"direct": "yes", "fsync": "no"}, 0)):
        before = proc4ops(s)
        herd_ok(s, herd_bin, write_job(tmp_path / f"{tag}.ini", small,
                                       [("w", {"kind": "write", **keys})]),
                tmp_path / f"{tag}.h5")
        after = proc4ops(s)
        got = {op: after[op] - before[op] for op in (OP4_COMMIT, OP4_WRITE)}
        print(f"\n{tag}: WRITEs {got[OP4_WRITE]}, COMMITs {got[OP4_COMMIT]}", end="")
        assert got[OP4_WRITE] == NRANKS * writes_per_file + 1, (tag, got)
        assert got[OP4_COMMIT] == commits + 1, (tag, got)
    print()


# ---------------------------------------------------------------- 3. locks


def test_knfsd_locks_nlm_and_nfsv4(knfsd, herd_bin, tmp_path):
    s = knfsd()
    locks_ready(s, tmp_path)
    count = 20
    for version in (3, 4):
        job = write_job(tmp_path / f"locks{version}.ini", lock_global(s, version),
                        [("excl", {"kind": "lock", "count": count, "lock_hold": "1ms"})])
        out = tmp_path / f"locks{version}.h5"
        res = herd_ok(s, herd_bin, job, out)
        ph = res.phases["excl"]
        check_clean_lock_phase(ph, res, holds_of(out)["excl"], count,
                               f"NFSv{version} exclusive whole-file locks")
        print(f"NFSv{version} ({'kernel lockd, NLM4' if version == 3 else 'kernel nfsd LOCK'}):"
              f" {int(ph.ranks['grants'].sum())} grants in {ph.attrs['elapsed']:.2f} s")


def test_knfsd_lock_grace_after_restart(knfsd, herd_bin, tmp_path):
    # The two runs and the NFSv4 probe fall in a grace far longer than they
    # take on a busy machine (15 s once was not); it is then ended on
    # purpose: restart-server --grace 0 (lockd's own grace cannot be cut
    # short, but a restart gives it its shortest, nlm_timeout).
    grace, count = 180, 5
    s = knfsd()
    locks_ready(s, tmp_path)
    t0 = time.monotonic()
    proc = s.cmd("restart-server", "--state", s.state, "--grace", grace)
    restart = time.monotonic() - t0
    assert proc.returncode == 0, f"restart-server failed:\n{proc.stderr}"
    assert proc.stdout.strip() == str(s.pid), \
        f"restart-server printed {proc.stdout!r}: the guest must stay (uml {s.pid})"
    assert running(*s.procs["uml"]), "linux.uml went away in restart-server"
    assert s.threads_running() == 8
    assert s.status()[1].get("grace") == str(grace)

    phases = [("lk", {"kind": "lock", "count": count, "lock_hold": "1ms"})]
    during = {}
    for version in (3, 4):
        job = write_job(tmp_path / f"grace{version}.ini", lock_global(s, version), phases)
        out = tmp_path / f"grace{version}.h5"
        p = herd_run_nfs(s, herd_bin, NRANKS, job, out)
        assert p.returncode == 3, f"NFSv{version} in grace: want exit 3\n{describe(p)}"
        # NFSv4's OPEN of the run's lock file is refused in grace: the run
        # goes on unlocked, and says so (NLM's grace refuses locks only).
        assert ("is not locked against another run" in p.stderr) == (version == 4), describe(p)
        ph = load_results(out).phases["lk"]
        during[version] = lock_rows(ph)
        print(f"\nNFSv{version} in grace: grants {ph.ranks['grants'].tolist()}, "
              f"errors {during[version]}", end="")
        assert ph.attrs["status"] == "errors", ph.attrs["status"]
        assert ph.ranks["grants"].tolist() == [0] * NRANKS, \
            f"NFSv{version}: a lock granted in the grace period: {ph.ranks['grants']}"
        assert int(ph.ranks["violations"].sum()) == 0
        assert sorted(during[version]) == list(range(NRANKS)), \
            f"NFSv{version}: ranks without a refusal: {during[version]}"
    # NLM: every lock of every rank refused for the grace, by name.
    for rank, rows in during[3].items():
        assert rows == [("lock", "ENOLCK", "NLM4_DENIED_GRACE_PERIOD", count)], (rank, rows)
    # NFSv4: kernel nfsd refuses OPEN as well as LOCK in grace; every rank's
    # phase ended at its refused open or lock.
    for rank, rows in during[4].items():
        assert {op for op, *_ in rows} <= {"open", "lock"}, (rank, rows)
    cp = s.exec("nfs-cp", f"{BASE}/probe?version=4", tmp_path / "probe.v4")
    assert cp.returncode != 0 and "NFS4ERR_GRACE" in cp.stdout + cp.stderr, \
        f"NFSv4 OPEN in grace: want NFS4ERR_GRACE:\n{cp.stdout}{cp.stderr}"

    # Still in grace after those runs (a lock is refused), until it is ended.
    got = wait_locks(s, timeout=0)   # one try
    assert got["first"] == "DENIED_GRACE_PERIOD", f"the grace was over before the probe: {got}"
    proc = s.cmd("restart-server", "--state", s.state, "--grace", "0")
    assert proc.returncode == 0, f"restart-server --grace 0 failed:\n{proc.stderr}"
    got = wait_locks(s, timeout=60)
    assert got["granted"], f"the NLM grace did not end: {got}"
    over = time.monotonic() - t0
    assert wait_until(lambda: s.exec("nfs-cp", f"{BASE}/probe?version=4",
                                     tmp_path / "probe.v4").returncode == 0, 60, 0.3), \
        "NFSv4 still refuses OPEN a minute after the grace"
    v4_over = time.monotonic() - t0
    for version in (3, 4):
        job = write_job(tmp_path / f"after{version}.ini", lock_global(s, version), phases)
        out = tmp_path / f"after{version}.h5"
        res = herd_ok(s, herd_bin, job, out)
        check_clean_lock_phase(res.phases["lk"], res, holds_of(out)["lk"], count,
                               f"NFSv{version} after the grace")
    print(f"\nrestart-server --grace {grace}: {restart:.2f} s; NLM granted again "
          f"{over:.1f} s after the restart began, NFSv4 OPEN {v4_over:.1f} s")


# ---------------------------------------------------------------- 4. monitor


def check_samples(path, threads, wrote, io_grew, where):
    rows, notes, attrs = samples_of(path)
    assert attrs.get("url") == METRICS_URL, f"{where}: /monitor url {attrs}"
    assert attrs.get("interval") == pytest.approx(0.2), f"{where}: /monitor interval {attrs}"
    assert rows is not None and len(rows) > 0, f"{where}: no node_exporter samples; notes {notes}"
    assert (rows["nfsd_threads"] == threads).all(), \
        f"{where}: nfsd_threads {rows['nfsd_threads'].tolist()}, want {threads}"
    written = float(np.nansum(rows["nfsd_write_bytes"]))
    assert wrote <= written <= io_grew, \
        (f"{where}: the samples' nfsd_write_bytes sum to {written:.0f}; herd wrote {wrote}, "
         f"the guest's nfsd io counter grew {io_grew}; notes {notes}; "
         f"t {rows['t'].tolist()} dt {rows['dt'].tolist()}")
    pool = None
    # CONDITIONAL: pool_packets (/proc/fs/nfsd/pool_stats via the guest's
    # node_exporter, node_nfsd_pool_packets_arrived_total) is checked only
    # where this herd has the column and fills it from a node_exporter.
    if "pool_packets" in rows.dtype.names and np.isfinite(rows["pool_packets"]).any():
        pool = rows["pool_packets"]
        assert np.isfinite(pool).all() and (pool >= 0).all(), \
            f"{where}: pool_packets {pool.tolist()}"
        assert pool.sum() > 0, f"{where}: no packet arrived at nfsd's pool in the samples"
    return len(rows), written, pool, notes


def test_knfsd_monitor_samples_node_exporter(knfsd, herd_bin, tmp_path):
    s = knfsd()
    assert s.status()[1].get("metrics_url") == METRICS_URL
    job = monitor_job(tmp_path / "mon.ini", "16M", "knfsd-mon")
    out = tmp_path / "mon.h5"
    io0 = s.nfsd_io()[1]
    res = herd_ok(s, herd_bin, job, out)
    io_grew = s.nfsd_io()[1] - io0
    wrote = int(res.phases["w"].ranks["bytes"].sum())
    assert wrote == NRANKS * 16 * MIB, wrote
    assert io_grew >= wrote, f"nfsd's io counter grew {io_grew}, herd wrote {wrote}"
    n, written, pool, notes = check_samples(out, 8, wrote, io_grew, "monitor")
    pool_total = sum(int(line.split()[1]) for line in
                     s.guest_read("/proc/fs/nfsd/pool_stats").splitlines()[1:])
    if pool is not None:
        assert pool.sum() <= pool_total, (pool.sum(), pool_total)
    print(f"\nmonitor: {n} node_exporter samples, nfsd_write_bytes {written / MIB:.2f} MiB "
          f"(herd wrote {wrote / MIB:.0f} MiB, nfsd io +{io_grew / MIB:.2f} MiB); "
          f"pool_packets {'not filled by this herd' if pool is None else int(pool.sum())} "
          f"(guest pool_stats packets {pool_total} since boot); notes {notes}")


# ---------------------------------------------------------------- 5. threads


def test_knfsd_threads_at_start_and_live(knfsd, herd_bin, tmp_path):
    s = knfsd("--threads", 1)
    rc, kv = s.status()
    assert kv.get("threads") == "1" and kv.get("threads_running") == "1", kv
    assert s.threads_running() == 1
    seen = []
    for threads in (1, 8):
        if threads == 8:
            proc = s.cmd("threads", "--state", s.state, threads)
            assert proc.returncode == 0, f"threads 8 failed:\n{proc.stderr}"
            assert s.threads_running() == 8, "the live thread change did not reach nfsd"
            kv = s.status()[1]
            assert kv.get("threads") == "8" and kv.get("threads_running") == "8", kv
        job = monitor_job(tmp_path / f"th{threads}.ini", "4M", f"knfsd-th{threads}")
        out = tmp_path / f"th{threads}.h5"
        io0 = s.nfsd_io()[1]
        res = herd_ok(s, herd_bin, job, out)
        io_grew = s.nfsd_io()[1] - io0
        wrote = int(res.phases["w"].ranks["bytes"].sum())
        n, _, _, _ = check_samples(out, threads, wrote, io_grew, f"--threads {threads}")
        seen.append(f"{threads} thread(s): {n} samples, "
                    f"{res.phases['w'].attrs['summary_mib_per_s']:.0f} MiB/s")
    print("\n" + "; ".join(seen))


# ---------------------------------------------------------------- 6. sync/async


META_FILES = 200


def meta_run(s, herd_bin, tmp_path, tag):
    """A meta phase (create, rename, unlink of NRANKS x META_FILES empty
    files); returns (flushes of ubda over the run, namespace operations,
    {step: seconds})."""
    job = write_job(tmp_path / f"meta-{tag}.ini",
                    {"backend": "libnfs", "target": URL3, "fileset": "meta", "dirs": 4,
                     "files": META_FILES, "file_size": 0, "block_size": "4K", "fsync": "no",
                     "run_id": f"knfsd-meta-{tag}"},
                    [("meta", {"kind": "meta", "meta_ops": "create,rename,unlink"})])
    out = tmp_path / f"meta-{tag}.h5"
    _, f0 = s.disk_stat()
    res = herd_ok(s, herd_bin, job, out, timeout=180)
    _, f1 = s.disk_stat()
    ph = res.phases["meta"]
    assert ph.attrs["status"] == "ok" and len(ph.errors) == 0, (tag, ph.error_rows())
    with h5py.File(out, "r") as f:
        ops = f["phases/meta/ops"][()]
        summary = f["phases/meta/op_summary"][()]
    calls = {}
    for row in ops:
        calls[row["op"].decode()] = calls.get(row["op"].decode(), 0) + int(row["count"])
    want = NRANKS * META_FILES
    assert (calls.get("open"), calls.get("rename"), calls.get("unlink")) == (want,) * 3, \
        f"{tag}: ops {calls}"
    steps = {"create": "open", "rename": "rename", "unlink": "unlink"}
    step_s = {step: float(summary[summary["op"] == op.encode()]["step_s"][0])
              for step, op in steps.items()}
    return f1 - f0, 3 * want, step_s


def test_knfsd_sync_and_async_exports(knfsd, herd_bin, tmp_path):
    """Under a sync export kernel nfsd calls commit_metadata after every
    CREATE, RENAME and REMOVE: xfs forces its log, a cache flush on ubda
    (UML turns it into an fsync of the image). async: nothing until xfs's
    own log work (30 s)."""
    measured = {}
    s = knfsd("--sync", name="sync")
    assert s.status()[1].get("mode") == "sync"
    measured["sync (start)"] = meta_run(s, herd_bin, tmp_path, "sync")
    assert "sync" in s.kernel_export_flags(), s.kernel_export_flags()
    proc = s.cmd("export-mode", "--state", s.state, "async")
    assert proc.returncode == 0, f"export-mode async failed:\n{proc.stderr}"
    assert s.status()[1].get("mode") == "async"
    rc, out = s.guest_exec("/usr/sbin/exportfs", "-v")
    assert rc == 0 and "(async," in out, f"exportfs -v in the guest:\n{out}"
    measured["async (live)"] = meta_run(s, herd_bin, tmp_path, "live-async")
    assert "async" in s.kernel_export_flags(), s.kernel_export_flags()
    s.stop()
    a = knfsd("--async", name="async")
    assert a.status()[1].get("mode") == "async"
    measured["async (start)"] = meta_run(a, herd_bin, tmp_path, "async")
    assert "async" in a.kernel_export_flags(), a.kernel_export_flags()
    proc = a.cmd("export-mode", "--state", a.state, "sync")
    assert proc.returncode == 0, f"export-mode sync failed:\n{proc.stderr}"
    measured["sync (live)"] = meta_run(a, herd_bin, tmp_path, "live-sync")
    assert "sync" in a.kernel_export_flags(), a.kernel_export_flags()

    print()
    for mode, (flushes, ops, steps) in measured.items():
        print(f"{mode:14s}: {flushes:5d} ubda flushes for {ops} namespace ops "
              f"({flushes / ops:.2f} per op); steps " +
              ", ".join(f"{k} {v:.2f} s" for k, v in steps.items()))
    for mode, (flushes, ops, _) in measured.items():
        if mode.startswith("sync"):
            assert flushes >= ops, f"{mode}: {flushes} flushes for {ops} ops: {measured}"
        else:
            assert flushes <= ops // 50, f"{mode}: {flushes} flushes for {ops} ops: {measured}"


# ---------------------------------------------------------------- 7. a vanished server


def test_knfsd_guest_killed_mid_write(knfsd, herd_bin, tmp_path):
    """linux.uml SIGKILLed while 4 ranks write over NFSv3 with op_timeout 5 s:
    the server's machine vanishes. Its tap stays in the namespace with no
    reader, so packets to the guest are lost, no RST ever comes, and ARP
    for its address fails only later (then connects are refused). Each 1
    MiB block is 16 WRITEs of 64K (nfs_wsize; also what this guest
    offers), 4 in flight: a write whose WRITEs kept waiting op_timeout
    each, a new one sent as each old one timed out, took 4 x 5 s.

    The run ends (the phase at its deadline or its errors), exit 3; every
    error is a lost server's (timeout, refused, unreachable), counted in
    the errors table as in the ranks' rows; and no call took longer than
    op_timeout + CALL_MARGIN by any record of it in the results (latency
    histograms, the watchdog's stuck rows, the rows' open/fsync/close
    times). Mechanism, not speed: at most one write per rank waited a
    full op_timeout (the one in flight when the guest died: its
    connection is then dropped, and every later call of the rank starts
    with a reconnect)."""
    op_timeout = 5
    s = knfsd()
    job = write_job(tmp_path / "vanish.ini",
                    {"backend": "libnfs", "target": URL3, "file_size": "64M",
                     "block_size": "1M", "nfs_wsize": "64K", "nfs_inflight": 4,
                     "fsync": "no", "op_timeout": op_timeout, "stuck_after": 2},
                    [("w", {"kind": "write", "iterations": 1000, "deadline": 30})])
    out = tmp_path / "vanish.h5"
    run = ns_background(s, herd_bin, NRANKS, job, out)
    try:
        run.wait_line(rf"^herd: run \S+: {NRANKS} ranks")
        # the phase's first progress line (5 s in): every rank is writing
        # (1000 files of 64M each, until the deadline)
        run.wait_line(rf"^herd: w: {NRANKS} ranks [0-9]+% ", timeout=60)
        kill_unix = time.time()
        os.kill(s.pid, signal.SIGKILL)
        assert wait_until(lambda: not running(*s.procs["uml"]), CMD_TIMEOUT), "linux.uml survived"
        proc, _ = run.wait(timeout=300)  # a hang guard only
    finally:
        run.kill()
    res = load_results(out)
    w = res.phases["w"]
    kill_t = common_time(res, kill_unix)
    rows = w.error_rows()
    print(f"\nguest killed at {kill_t:.2f} s (phase {w.attrs['t_start']:.2f}.."
          f"{w.attrs['t_end']:.2f}, status {w.attrs['status']}); errors:")
    for row in rows:
        print(f"  rank {row['rank']} {row['op']} {row['errno_name']} x{row['count']} "
              f"first at {row['first_time']:.2f} {row['status']}")
    assert proc.returncode == 3, describe(proc)
    assert res.attrs["status"] == "complete", res.attrs["status"]
    assert w.attrs["status"] in ("deadline", "errors"), w.attrs["status"]
    assert w.attrs["t_start"] < kill_t, (w.attrs["t_start"], kill_t)
    check_error_names(w, "w")
    by_rank = errnos_by_rank(w)
    assert sorted(by_rank) == list(range(NRANKS)), f"ranks without errors: {by_rank}"
    for row in rows:
        assert row["errno"] in VANISHED_ERRNOS, f"not a lost server's errno: {row}"
        assert row["first_time"] >= kill_t - 0.05, f"an error before the kill: {row}"
    for r in range(NRANKS):
        mine = w.ranks[w.ranks["rank"] == r]
        assert int(mine["errors"].sum()) == sum(by_rank[r].values()), \
            f"rank {r}: rows vs errors table"
    assert any(op == "write" for ops in by_rank.values() for op, _ in ops), \
        f"the kill met no write: {by_rank}"
    longest = check_calls_bounded(out, "w", op_timeout, "guest killed mid-write")
    full = calls_at_least(out, "w", op_timeout - CALL_MARGIN)
    print(f"longest call {longest:.2f} s (bound {op_timeout + CALL_MARGIN} s); calls of "
          f"at least {op_timeout - CALL_MARGIN} s: {full}")
    assert full.get("write", 0) <= NRANKS, f"writes that waited a full op_timeout: {full}"


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "nlm-wait":
    sys.exit(nlm_wait(sys.argv[2:]))
