"""herd's posix backend on real kernel NFS mounts: the virtual cluster with
kernel-client hosts (vcluster.sh up --kernel-client), 4 User-Mode Linux
guests with the Linux kernel's NFS client, each mounting the embedded
ganesha's export; herd's ranks run inside the guests as MPI ranks started
by mpirun on the head host (vc-agent through the guests' agents), the
monitor rank on the server host.

1. up and down: every guest boots and mounts with the options asked (the
   results' /hosts has them, as the kernel reports them); nothing is left
   after down (guests, their helpers, holders, server, state directory),
   of either cluster of this file.
2. A 4-host write/read/md5 matrix over NFSv3 and NFSv4.2 (unique and
   shared files, read_from = neighbor, verify): exact bytes, no error, no
   verify failure; the kernel's mountstats deltas (/monitor/clients) equal
   what herd moved, host by host, by the page-cache rules of
   docs/results-format.md: a write sends every byte (fsync), a read of a
   file written on another host fetches every byte, a read of what this
   host wrote or read before fetches none.
3. The neighbour-read proof: after each host wrote its file, a same-host
   read fetches it at most once and on at least one host is served from
   the page cache (0 bytes READ from the server), a neighbour's read goes
   to the server (all of it) on every host; direct = yes reads every byte
   from the server even on the same host.
4. A lock phase through fcntl over the kernel's NLM (v3) and NFSv4 LOCK
   (v4.2): grants on every host, 0 violations, 0 errors.
5. A server restart mid-phase: with `hard`, ganesha restarted in the middle
   of a write: the kernel client retries, the phase ends with every byte
   and no error; with `soft,timeo=5,retrans=1`, ganesha frozen (SIGSTOP)
   for 4 s: the calls fail with EIO or ETIMEDOUT, counted by errno, the
   run still ends with its results (exit 3), and the mount works again
   once the server is back. A symbolic link and a FIFO planted in a kept
   run directory: errors (ELOOP, ENXIO), nothing touched, no hang. SIGTERM
   to the rank in one guest: every rank stops, results interrupted, 143.
   A run directory every guest has just found missing (a miss its
   kernel client caches) is still seen by every rank at the start.
   The guest agent kills a command whose caller hung up (SIGKILL after 5 s).
7. The kernel's nfsd as the server (up --server knfsd, its guest on a
   routed subnet): the neighbour-read proof by nfsd's own read counter
   (equal to the clients' mountstats), locks through the kernel's NLM and
   NFSv4 on both sides, and the export re-exported with another fsid under
   a read: ESTALE on every reader, counted, exit 3, clean after a remount.
8. jobs/seed000.sh CLIENT=kernel, quick (opt-in, HERD_SEED000_KERNEL=1):
   the rsize sweep over the kernel mount (herd-compare --x opt:rsize),
   with the READ size, RPCs in flight and read-ahead window per point;
   nothing left behind.

Needs root, user-mode-linux, nfs-ganesha, nfs-common and OpenMPI; skips
with a message otherwise. Run: ctest -R kclient, or
/usr/bin/python3 -m pytest -q -rs -s tests/integration/test_kclient.py
"""
import contextlib
import csv
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import MIB, REPO_DIR, describe, proc_cmdlines, write_job
from test_virtual_cluster import VCLUSTER, Cluster, pytestmark  # noqa: F401

sys.path.insert(0, str(REPO_DIR / "analysis"))
import herd_results  # noqa: E402

NFS_SERVER = REPO_DIR / "cluster-configs" / "local" / "nfs-server.sh"
CLIENTS = 4
# A guest agent's client: `python3 VC_GUEST sh GUEST LINE` runs LINE in that guest.
VC_GUEST = str(REPO_DIR / "cluster-configs" / "virtual" / "vc-guest.py")
FILE = 8 * MIB
_MISSING = [t for t in ("linux.uml", "mount.nfs", "rpc.statd")
            if shutil.which(t, path=os.environ["PATH"] + ":/usr/sbin:/sbin") is None]
needs_uml = pytest.mark.skipif(
    bool(_MISSING), reason=f"{', '.join(_MISSING)} missing: cluster-configs/local/install.sh "
    "installs user-mode-linux and nfs-kernel-server")
pytestmark = [pytestmark, needs_uml]


class KernelCluster(Cluster):
    """4 kernel-client guests, 1 slot each, and the server host."""

    def __init__(self, state, mount_opts="vers=3", server_args=()):
        self.share = state.parent / "share"
        self.share.mkdir(exist_ok=True)
        super().__init__(state, 1, clients=CLIENTS,
                         up_args=["--kernel-client", "--mount-opts", mount_opts,
                                  "--share", str(self.share), *server_args])

    def mount(self, opts):
        proc = subprocess.run(["bash", str(VCLUSTER), "mount", "--state", str(self.state),
                               "--mount-opts", opts], capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, describe(proc)

    def herd(self, herd_bin, job, name, timeout=600, expect=0):
        """herd over the guests' mounts: 4 I/O ranks and the monitor rank
        (a 4-host matrix took over 300 s beside another test and two busy
        loops: the guests get what the machine leaves them)."""
        out = self.share / f"{name}.h5"
        cmd = (f"mpirun --hostfile $HERD_HOSTFILE $HERD_MPIRUN_ARGS -np {CLIENTS + 1} "
               f"{herd_bin} run {job} --set target=$VC_MOUNT --set monitor_host=srv "
               f"--set monitor_interval=500ms -o {out}")
        proc = self.run("bash", "-c", cmd, timeout=timeout)
        assert proc.returncode == expect, describe(proc)
        return herd_results.Run(str(out))

    def hang_report(self):
        """Each client guest's herd ranks (state, kernel wait channel and
        stack) and the kernel's last words (an NFS server not responding)."""
        line = ("for p in $(pgrep -x herd); do echo \"rank $p: $(cut -d' ' -f3 /proc/$p/stat) "
                "$(cat /proc/$p/wchan)\"; cat /proc/$p/stack; done; dmesg | tail -n 8")
        said = []
        for n in range(1, CLIENTS + 1):
            guest = self.state / "guests" / f"c{n:02d}"
            with contextlib.suppress(subprocess.SubprocessError):
                proc = subprocess.run(["bash", str(VCLUSTER), "exec", "--state", str(self.state),
                                       "--", "python3", VC_GUEST, "sh", str(guest), line],
                                      capture_output=True, text=True, timeout=60)
                said.append(f"guest c{n:02d}:\n{proc.stdout}{proc.stderr}")
        return "\n".join(said)

    def server(self, *args, timeout=120):
        proc = subprocess.run(["bash", str(NFS_SERVER), *args, "--state",
                               str(self.state / "server")], capture_output=True, text=True,
                              timeout=timeout)
        assert proc.returncode == 0, describe(proc)
        return proc.stdout


def down_leaves_nothing(c):
    """vcluster.sh down: exit 0, and nothing of the cluster is left
    (guests, their helpers, holders, server, state directory, processes
    naming it)."""
    proc = c.down()
    assert proc.returncode == 0, proc.stderr
    c.assert_gone()
    left = [pid for pid, cmd in proc_cmdlines().items() if str(c.state).encode() in cmd]
    assert not left, f"processes of the cluster left: {left}"


# The cluster's first mount has the options test_up_mounts_as_asked looks
# for; every other test mounts with its own.
UP_MOUNT_OPTS = "vers=3,rsize=12288,wsize=12288"


@pytest.fixture(scope="module")
def kcluster(tmp_path_factory):
    c = KernelCluster(tmp_path_factory.mktemp("kclient") / "vc", mount_opts=UP_MOUNT_OPTS)
    yield c
    down_leaves_nothing(c)


def per_host(frame, column):
    """{hostname: column summed over the host's rows}."""
    return frame.groupby("host")[column].sum().to_dict()


def client_rows(run, phase):
    rows = run.clients()
    return rows[rows["phase"] == phase]


def assert_clean(run, phases):
    for name in phases:
        p = run.phases.set_index("phase").loc[name]
        assert p["status"] == "ok", (name, p["status"])
        assert p["errors"] == 0 and p["verify_failures"] == 0, name


def test_up_mounts_as_asked(kcluster):
    """The module's cluster as up left it (this test runs first on it):
    every guest booted, and status says the mount options asked. The
    next test's first run (the NFSv3 matrix, on this mount) finds them in
    the results' /hosts as the kernel reports them. Its teardown is the
    down half: nothing is left (down_leaves_nothing)."""
    c = kcluster
    guests = [h for h in c.hosts if h[4] == "guest"]
    assert [h[0] for h in guests] == [f"c{i:02d}" for i in range(1, CLIENTS + 1)]
    status = subprocess.run(["bash", str(VCLUSTER), "status", "--state", str(c.state)],
                            capture_output=True, text=True)
    assert status.returncode == 0 and "state=up" in status.stdout, describe(status)
    assert f"mount_opts={UP_MOUNT_OPTS}" in status.stdout
    boot = dict(line.split() for line in (c.state / "boot-times").read_text().splitlines())
    print(f"\n  boot to agent, seconds after the first start: {boot}")


@pytest.mark.parametrize("vers", ["3", "4.2"])
def test_matrix_exact_bytes(kcluster, herd_bin, tmp_path, vers):
    """The matrix over NFSv3 on the mount up made (UP_MOUNT_OPTS: the
    first run on the cluster, right after test_up_mounts_as_asked: /hosts
    has those options, as the kernel reports them), then over NFSv4.2."""
    if vers != "3":
        kcluster.mount(f"vers={vers},hard")
    size = str(FILE)
    job = write_job(tmp_path / "matrix.ini", {"block_size": "1M", "fsync": "yes"},
                    [("write-unique", {"kind": "write", "sharing": "unique", "file_size": size}),
                     ("read-unique", {"kind": "read", "sharing": "unique", "file_size": size,
                                      "read_from": "neighbor", "verify": "yes"}),
                     ("md5-unique", {"kind": "md5", "sharing": "unique", "file_size": size,
                                     "read_from": "neighbor"}),
                     ("write-same", {"kind": "write", "sharing": "shared", "file_size": size}),
                     ("read-same", {"kind": "read", "sharing": "shared", "file_size": size,
                                    "verify": "yes"}),
                     ("md5-same", {"kind": "md5", "sharing": "shared", "file_size": size})])
    run = kcluster.herd(herd_bin, job, f"matrix-v{vers}")
    names = list(run.phase_names)
    assert_clean(run, names)
    phases = run.phases.set_index("phase")
    for name in names:
        assert phases.loc[name, "bytes"] == CLIENTS * FILE, name
    fstype = "nfs" if vers == "3" else "nfs4"
    guests = run.hosts[run.hosts["hostname"].str.match(r"c\d\d$")]
    assert len(guests) == CLIENTS and set(guests["fstype"]) == {fstype}, run.hosts
    for opts in guests["mount_options"]:
        assert f"vers={vers}" in opts, opts
        if vers == "3":  # the options up was asked for
            assert "rsize=12288" in opts and "wsize=12288" in opts, opts
    every = {h: FILE for h in range(CLIENTS)}
    # Every byte written goes to the server (fsync); a neighbour's file is
    # fetched whole; md5 reads the same neighbour's file the read phase
    # left in this host's cache: nothing fetched.
    assert per_host(client_rows(run, "write-unique"), "server_write_bytes") == every
    assert per_host(client_rows(run, "read-unique"), "server_read_bytes") == every
    assert per_host(client_rows(run, "md5-unique"), "server_read_bytes") == dict.fromkeys(
        range(CLIENTS), 0)
    # A shared file every host wrote whole: each sent all of it.
    assert per_host(client_rows(run, "write-same"), "server_write_bytes") == every
    ops = run.client_ops()
    writes = ops[(ops["phase"] == "write-unique") & (ops["op"] == "WRITE")]
    assert (writes.groupby("host")["bytes_sent"].sum() > FILE).all()
    assert (writes.groupby("host")["rtt_ms"].sum() > 0).all()
    print(f"\n  v{vers}: " + ", ".join(f"{n} {phases.loc[n, 'mib_per_s']:.1f} MiB/s"
                                       for n in names))


def test_neighbor_read_defeats_the_cache(kcluster, herd_bin, tmp_path):
    kcluster.mount("vers=3,hard")
    size = str(FILE)
    job = write_job(tmp_path / "cache.ini", {"block_size": "1M", "fsync": "yes"},
                    [("write", {"kind": "write", "file_size": size}),
                     ("read-self", {"kind": "read", "file_size": size, "verify": "yes"}),
                     ("read-neighbor", {"kind": "read", "file_size": size,
                                        "read_from": "neighbor", "verify": "yes"}),
                     ("read-direct", {"kind": "read", "file_size": size, "direct": "yes",
                                      "verify": "yes"})])
    run = kcluster.herd(herd_bin, job, "cache")
    assert_clean(run, run.phase_names)
    every = {h: FILE for h in range(CLIENTS)}
    # A host reading the file it wrote reads its own page cache, unless the
    # kernel dropped that cache at open: it does when its WRITEs' replies
    # came back out of order and the file's attributes then look changed
    # by someone else (seen on 1 host of 4 in a quiet run, on 2 of 4 on a
    # busy machine; as in the knfsd proof). Either way a host fetches the
    # file at most once, and at least one host reads from its cache.
    own = per_host(client_rows(run, "read-self"), "server_read_bytes")
    assert all(0 <= v <= FILE for v in own.values()), own
    assert any(v == 0 for v in own.values()), own
    assert per_host(client_rows(run, "read-neighbor"), "server_read_bytes") == every
    direct = client_rows(run, "read-direct")
    assert per_host(direct, "server_read_bytes") == every
    assert per_host(direct, "direct_read_bytes") == every
    phases = run.phases.set_index("phase")
    print("\n  " + ", ".join(f"{n} {phases.loc[n, 'mib_per_s']:.1f} MiB/s"
                             for n in ("read-self", "read-neighbor", "read-direct")))


@pytest.mark.parametrize("vers", ["3", "4.2"])
def test_locks_over_kernel_nfs(kcluster, herd_bin, tmp_path, vers):
    kcluster.mount(f"vers={vers},hard")
    job = write_job(tmp_path / "lock.ini", {"monitor_interval": "500ms"},
                    [("lk", {"kind": "lock", "count": "40"})])
    run = kcluster.herd(herd_bin, job, f"lock-v{vers}")
    ranks = run.ranks("lk")
    assert int(ranks["violations"].sum()) == 0
    assert int(ranks["errors"].sum()) == 0
    assert (ranks.groupby("host")["grants"].sum() > 0).all(), ranks
    ops = run.client_ops()
    lock_op = "LOCK" if vers == "4.2" else None
    if lock_op:
        assert ops[(ops["phase"] == "lk") & (ops["op"] == lock_op)]["ops"].sum() > 0
    print(f"\n  v{vers}: {int(ranks['grants'].sum())} grants, "
          f"{run.phases.set_index('phase').loc['lk', 'ops_per_s']:.0f} calls/s")


def ganesha_pid(cluster):
    for line in cluster.server("status").splitlines():
        if line.startswith("ganesha="):
            return int(line.split("=")[1].split()[0])
    pytest.fail("no ganesha pid in nfs-server.sh status")


def size_or_0(path):
    """A file's size; 0 once it is gone (removed since its directory was listed)."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def while_writing(cluster, action, done, nbytes=8 * MIB):
    """action() in a thread, once some file in the export has nbytes (the
    write phase is under way); the unix time it began in done[]. (The
    export is a loop mount in the server's mount namespace: seen through
    ganesha's /proc/PID/root.)"""
    export = f"/proc/{ganesha_pid(cluster)}/root{cluster.state / 'server' / 'export'}"

    def wait_then_act():
        end = time.monotonic() + 60
        while time.monotonic() < end:
            sizes = [size_or_0(os.path.join(d, f)) for d, _, fs in os.walk(export) for f in fs]
            if sizes and max(sizes) >= nbytes:
                done.append(time.time())
                action()
                return
            time.sleep(0.02)
    t = threading.Thread(target=wait_then_act)
    t.start()
    return t


def assert_within(run, phase, when):
    """The action at unix time `when` fell inside the phase."""
    a = run.phase_attrs(phase)
    epoch = float(run.attrs["epoch_unix"])
    assert epoch + a["t_start"] - 0.5 <= when <= epoch + a["t_end"], (when, epoch, a["t_start"],
                                                                       a["t_end"])


def write_then_read_job(path, size, **read_keys):
    """Phase w writes a file of size per rank (1M calls, fsync), phase r
    reads a neighbour's with read_keys."""
    return write_job(path, {"block_size": "1M", "fsync": "yes"},
                     [("w", {"kind": "write", "file_size": str(size)}),
                      ("r", {"kind": "read", "file_size": str(size), "read_from": "neighbor",
                             **read_keys})])


def test_server_restart_hard_mount_waits(kcluster, herd_bin, tmp_path):
    kcluster.mount("vers=3,hard")
    job = write_then_read_job(tmp_path / "restart.ini", 64 * MIB, verify="yes")
    before, when = ganesha_pid(kcluster), []
    t = while_writing(kcluster, lambda: kcluster.server("restart-ganesha"), when)
    run = kcluster.herd(herd_bin, job, "restart-hard")
    t.join()
    assert when and ganesha_pid(kcluster) != before
    assert_within(run, "w", when[0])
    assert_clean(run, ["w", "r"])
    phases = run.phases.set_index("phase")
    assert phases.loc["w", "bytes"] == CLIENTS * 64 * MIB
    print(f"\n  write across the restart: {phases.loc['w', 'elapsed']:.1f} s, "
          f"{phases.loc['w', 'mib_per_s']:.1f} MiB/s")


def test_server_frozen_soft_mount_fails_calls(kcluster, herd_bin, tmp_path):
    kcluster.mount("vers=3,soft,timeo=5,retrans=1")
    pid = ganesha_pid(kcluster)

    def freeze():
        os.kill(pid, signal.SIGSTOP)
        time.sleep(4)
        os.kill(pid, signal.SIGCONT)
    job = write_job(tmp_path / "soft.ini", {"block_size": "1M", "fsync": "yes"},
                    [("w", {"kind": "write", "file_size": str(64 * MIB)})])
    when = []
    t = while_writing(kcluster, freeze, when)
    try:
        run = kcluster.herd(herd_bin, job, "soft", expect=3)
    finally:
        t.join()
        os.kill(pid, signal.SIGCONT)
    assert when
    assert_within(run, "w", when[0])
    errors = run.errors("w")
    assert len(errors), "no call failed while the server was frozen"
    assert set(errors["errno_name"]) <= {"EIO", "ETIMEDOUT"}, errors
    assert run.status == "complete" and int(run.attrs["exit_code"]) == 3
    # The server back: the same mount works again.
    after = write_job(tmp_path / "after.ini", {"block_size": "1M"},
                      [("after", {"kind": "write", "file_size": "1M"})])
    assert_clean(kcluster.herd(herd_bin, after, "soft-after"), ["after"])
    print(f"\n  soft mount, server frozen 4 s: "
          f"{errors.groupby('errno_name')['count'].sum().to_dict()}")


def test_seed000_kernel_sweep(herd_bin, tmp_path):
    """jobs/seed000.sh CLIENT=kernel, quick: a 4 ms round trip x 2 rsizes,
    one fresh mount each, read-ahead set to 256 KiB; the table has the
    link's column and a row per rsize, each point's READs carry at most rsize
    (the kernel asked for it) and its mount had the read-ahead asked for;
    nothing is left. Opt-in (about a minute): HERD_SEED000_KERNEL=1."""
    if os.environ.get("HERD_SEED000_KERNEL") != "1":
        pytest.skip("the kernel-client seed-000 driver run is opt-in: HERD_SEED000_KERNEL=1")
    from test_link import _linkdelay, _why_skip_link
    why = _why_skip_link()
    if why:
        pytest.skip(why)
    out, tmp = tmp_path / "out", tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, HERD=herd_bin, HERD_LINKDELAY=str(_linkdelay()), OUT=str(out),
               TMPDIR=str(tmp), CLIENT="kernel", RTTS="4", RSIZES="4096 16384",
               ITERATIONS="1", FILE_SIZE="2M", READ_AHEAD_KB="256")
    env["PATH"] += ":/usr/sbin:/sbin"
    proc = subprocess.run(["bash", str(REPO_DIR / "jobs" / "seed000.sh")], env=env,
                          capture_output=True, text=True, timeout=400)
    try:
        assert proc.returncode == 0, describe(proc)
        lines = proc.stdout.splitlines()
        head = lines.index("MiB/s per opt:rsize (rows) and run (columns)")
        assert lines[head + 1].split() == ["opt:rsize", "delay=2ms,mtu=1500"]
        assert [l.split()[0] for l in lines[head + 3:head + 6]] == ["4K", "16K", "best"]
        with open(out / "sweep" / "sweep.csv", newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        assert len(rows) == 2, rows
        for row in rows:
            rsize = {"4K": 4096, "16K": 16384}[row["opt:rsize"]]
            assert 0.5 * rsize <= float(row["bytes_per_rpc"]) <= rsize, row
            assert float(row["rpcs"]) * float(row["bytes_per_rpc"]) == pytest.approx(2 * MIB)
            assert int(row["read_ahead_kb"]) == 256 and float(row["rtt_ms"]) > 0, row
            assert float(row["rtt_ms"]) >= 4, row
        for name in ("rtt4ms-rsize4096-1", "rtt4ms-rsize16384-1"):
            run = herd_results.Run(str(out / f"{name}.h5"))
            assert all(f"rsize={name.split('rsize')[1][:-2]}," in o
                       for o in run.hosts["mount_options"]), run.hosts
    finally:
        left = [pid for pid, cmd in proc_cmdlines().items() if str(tmp).encode() in cmd]
        assert not left and not list(tmp.iterdir()), (left, list(tmp.iterdir()))


# ---------------------------------------------------------------- the kernel's nfsd


def nfsd_io(cluster):
    """(bytes read, bytes written) by the kernel nfsd so far: the io line of
    /proc/net/rpc/nfsd in its guest."""
    proc = subprocess.run(["bash", str(NFS_SERVER), "guest", "--state",
                           str(cluster.state / "server"), "--", "read", "/proc/net/rpc/nfsd"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, describe(proc)
    text = proc.stdout
    for line in text.splitlines():
        if line.startswith("io "):
            return tuple(int(v) for v in line.split()[1:3])
    pytest.fail(f"no io line in /proc/net/rpc/nfsd:\n{text}")


@pytest.fixture(scope="module")
def kncluster(tmp_path_factory):
    c = KernelCluster(tmp_path_factory.mktemp("kclient-knfsd") / "vc",
                      server_args=["--server", "knfsd"])
    yield c
    down_leaves_nothing(c)


def test_knfsd_server_read_counter(kncluster, herd_bin, tmp_path):
    """Kernel clients on a kernel nfsd (the seeds' own pair): the server's
    read counter says which reads reached it, and agrees with the clients'
    mountstats. Run 1 writes and reads back on each host: nfsd wrote every
    byte (and the run's lock file); the reads were the page cache's, except
    on a host whose open found other attributes than it cached at close
    (it then re-reads the file whole: seen on one host of four against
    nfsd; docs/results-format.md); beyond the phases nfsd read only the
    lock file (each other rank's check that it sees the run directory).
    Run 2, a neighbour's file: nfsd read all
    of it, and md5 of the same file right after fetched nothing (cached);
    run 3, direct = yes on the writing host: all of it. Exact bytes and
    verify in every run."""
    status = subprocess.run(["bash", str(VCLUSTER), "status", "--state", str(kncluster.state)],
                            capture_output=True, text=True)
    assert "server=knfsd" in status.stdout and "url=nfs://10.77.1.2/" in status.stdout, \
        describe(status)
    kncluster.mount("vers=3,hard")
    base = {"block_size": "1M", "fsync": "yes", "run_id": "knfsd-proof", "keep": "yes",
            "file_size": str(FILE)}
    runs = [("self", [("write", {"kind": "write"}),
                      ("read-self", {"kind": "read", "verify": "yes"})]),
            ("neighbor", [("read-neighbor", {"kind": "read", "read_from": "neighbor",
                                             "verify": "yes"}),
                          ("md5-neighbor", {"kind": "md5", "read_from": "neighbor"})]),
            ("direct", [("read-direct", {"kind": "read", "direct": "yes", "verify": "yes"})])]
    counts, fetched = {}, {}
    for name, phases in runs:
        job = write_job(tmp_path / f"{name}.ini", base, phases)
        before = nfsd_io(kncluster)
        run = kncluster.herd(herd_bin, job, f"knfsd-{name}")
        after = nfsd_io(kncluster)
        assert_clean(run, [p for p, _ in phases])
        for p, _ in phases:
            assert run.phases.set_index("phase").loc[p, "bytes"] == CLIENTS * FILE, p
        counts[name] = (after[0] - before[0], after[1] - before[1])
        for p, _ in phases:
            fetched[p] = per_host(client_rows(run, p), "server_read_bytes")
        # (nfsd's count for the run = what the clients' mountstats fetched in
        # it, and the other ranks' read-back of the run's lock file at the
        # start: a line or two each)
        beyond = counts[name][0] - sum(sum(fetched[p].values()) for p, _ in phases)
        assert 0 <= beyond < 4096, (name, fetched, counts)
    every = CLIENTS * FILE
    # (what nfsd wrote beyond the files: the run's lock file, a line per run)
    assert every <= counts["self"][1] < every + 4096, counts
    assert set(fetched["read-self"].values()) <= {0, FILE} and counts["self"][0] < every, fetched
    assert every <= counts["neighbor"][0] < every + 4096, counts
    assert sum(fetched["md5-neighbor"].values()) == 0, fetched
    assert every <= counts["direct"][0] < every + 4096, counts
    print(f"\n  nfsd io (read, written) bytes per run: {counts}; same-host read fetched, "
          f"per host: {fetched['read-self']}")


def test_knfsd_server_locks(kncluster, herd_bin, tmp_path):
    """fcntl locks from 4 kernel clients through the kernel's NLM on both
    sides (v3) and NFSv4 LOCK (v4.2): grants on every host, none broken."""
    for vers in ("3", "4.2"):
        kncluster.mount(f"vers={vers},hard")
        job = write_job(tmp_path / f"lock{vers}.ini", {"monitor_interval": "500ms"},
                        [("lk", {"kind": "lock", "count": "20"})])
        run = kncluster.herd(herd_bin, job, f"knfsd-lock-v{vers}")
        ranks = run.ranks("lk")
        assert int(ranks["violations"].sum()) == 0 and int(ranks["errors"].sum()) == 0, vers
        assert (ranks.groupby("host")["grants"].sum() > 0).all(), ranks
        print(f"\n  v{vers} locks on knfsd: {int(ranks['grants'].sum())} grants")


def test_guest_command_killed_after_hang_up(kcluster):
    """The guest agent's `sh LINE` whose caller hangs up: its process group
    gets SIGTERM, and SIGKILL 5 s later when it ignores that (an orted
    whose mpirun died must not outlive it in the guest)."""
    guest = kcluster.state / "guests" / "c01"
    caller = subprocess.Popen(["bash", str(VCLUSTER), "exec", "--state", str(kcluster.state),
                               "--", "python3", VC_GUEST, "sh", guest,
                               "trap '' TERM; exec sleep 7777"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)

    def sleepers():
        proc = kcluster.run("python3", VC_GUEST, "sh", guest,
                            "pgrep -cfx 'sleep 7777' || true", timeout=30)
        return proc.stdout.strip()
    kill_after = 5  # the agent's SIGKILL after its SIGTERM
    try:
        end = time.monotonic() + 60
        while sleepers() != "1":
            assert time.monotonic() < end, "the command never started in the guest"
            time.sleep(0.2)
    finally:
        os.killpg(caller.pid, signal.SIGKILL)
        caller.wait()
    hung_up = time.monotonic()
    # Polled until gone, for up to 10 times the agent's own wait: a bound
    # for a hang, not for how quick the agent is.
    while sleepers() != "0":
        assert time.monotonic() - hung_up < 10 * kill_after, "the command outlived its caller"
        time.sleep(0.5)
    took = time.monotonic() - hung_up
    # Never sooner than that wait (less the agent's own lag in noticing the
    # hang-up): the SIGTERM it ignores cannot have killed it, the SIGKILL did.
    assert took >= kill_after - 2, f"gone after {took:.1f} s: killed by the SIGTERM it ignores?"
    print(f"\n  a command ignoring SIGTERM: gone {took:.1f} s after its caller hung up")


def test_guest_agent_obeys_only_the_host_side(kcluster):
    """A process on the cluster's bridge (the head host, as nobody: it
    cannot read the guest's secret) sends a guest's agent a shell command
    in the old one-line form, as netstrings without the secret, with a
    wrong and a short one, and nothing at all: each gets exactly "error:
    not authorized" and the command (a touch in the share directory, which
    the host sees) never runs. The host side's own commands work, and
    `read` stays beneath /proc; from outside the cluster's network the
    host side refuses to connect at all."""
    guest = kcluster.state / "guests" / "c01"
    addr = next(h[3] for h in kcluster.hosts if h[0] == "c01")
    marker = kcluster.share / "forged"
    probe = REPO_DIR / "tests" / "integration" / "agent_probe.py"
    proc = kcluster.run("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                        "/usr/bin/python3", probe, "forge", addr, guest / "secret",
                        "sh", f"touch {marker}", timeout=120)
    assert proc.returncode == 0, describe(proc)
    got = json.loads(proc.stdout)
    print(f"\n  as nobody on the bridge: {got}")
    assert got.pop("secret") == "PermissionError", "nobody could read the guest's secret"
    assert got == {way: "error: not authorized\n" for way in got}, got
    assert not marker.exists(), "a forged command ran in the guest"
    proc = kcluster.run("python3", VC_GUEST, "sh", guest, "printf '%s|' \"A B\" C")
    assert proc.returncode == 0 and proc.stdout == "A B|C|", describe(proc)
    proc = kcluster.run("python3", VC_GUEST, "send", guest, "read", "/proc/self/root/etc/hostname")
    assert proc.returncode == 1 and "not beneath /proc or /sys" in proc.stdout, describe(proc)
    # Outside the cluster's network the guest's address would leave by the
    # default route: refused before any connect (tried from an empty
    # namespace of this test's, where nothing could leave had it tried).
    proc = subprocess.run(["unshare", "--net", "python3", VC_GUEST, "sh", str(guest), "true"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 255 and "not inside the cluster's network" in proc.stderr, \
        describe(proc)


def proc_ids(pid):
    """(uid, effective capabilities) of a host process, from /proc/PID/status."""
    status = Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines())
    return int(fields["Uid"].split()[1]), int(fields["CapEff"].strip(), 16)


def test_guest_cannot_write_the_host(kcluster, tmp_path):
    """A client guest's root, whatever it does, writes on the host only its
    logs and the share: the host's tree it sees is read-only from the
    host's side (a remount read-write inside changes nothing), a hostfs
    mount of any path, /.. included, lands in that read-only view, and the
    host's /proc, /sys and /dev are not in it. linux.uml runs as root with
    only CAP_DAC_READ_SEARCH and CAP_DAC_OVERRIDE (umlview.py)."""
    c01 = next(h for h in kcluster.hosts if h[0] == "c01")
    marks = [Path("/herd-guest-escape"), Path("/etc/herd-guest-escape"),
             tmp_path / "herd-guest-escape"]
    script = "; ".join([
        "mount -o remount,rw / && echo remounted",
        *[f"echo x > {m} 2>/dev/null && echo wrote {m}" for m in marks],
        "mkdir -p /run/h && mount -t hostfs none /run/h -o /../../..",
        "echo PROC $(ls /run/h/proc) DEV $(ls /run/h/dev) SYS $(ls /run/h/sys | wc -l) END",
        "echo x > /run/h/herd-guest-escape 2>/dev/null && echo wrote via hostfs",
        "umount /run/h",
        f"echo shared > {kcluster.share}/from-the-guest && echo wrote the share",
    ])
    proc = kcluster.run("python3", VC_GUEST, "sh",
                        kcluster.state / "guests" / "c01", script, timeout=60)
    out = proc.stdout
    assert "remounted" in out, describe(proc)   # the guest's own view of its root
    assert "wrote /" not in out and "wrote via hostfs" not in out, describe(proc)
    assert "wrote the share" in out, describe(proc)
    for m in marks:
        assert not m.exists(), f"a guest wrote {m} on the host"
    # the view's /proc and /dev hold only what linux.uml needs, /sys nothing
    assert "PROC cpuinfo DEV net null SYS 0 END" in out, out
    shared = kcluster.share / "from-the-guest"
    assert shared.read_text() == "shared\n" and shared.stat().st_uid == 0
    uid, caps = proc_ids(c01[1])
    assert uid == 0
    assert caps == (1 << 1) | (1 << 2), f"linux.uml's effective capabilities: {caps:#x}"


def export_dir(cluster):
    return Path(f"/proc/{ganesha_pid(cluster)}/root{cluster.state / 'server' / 'export'}")


def test_hostile_files_on_the_export(kcluster, herd_bin, tmp_path):
    """What another client (or the server's admin) planted in a kept run
    directory, seen through a fresh kernel mount: a data file replaced by a
    symbolic link to a file herd did not make (the open fails, ELOOP; the
    file and the link stay as they were) and one replaced by a FIFO (an
    error, not a hang). The other ranks' files work; the run ends, exit 3."""
    kcluster.mount("vers=3,hard")
    base = {"block_size": "64K", "file_size": "1M", "run_id": "hostile", "keep": "yes",
            "fileset": "fs", "deadline": "20s"}
    write = write_job(tmp_path / "w.ini", base, [("w", {"kind": "write"})])
    assert_clean(kcluster.herd(herd_bin, write, "hostile-1"), ["w"])
    export = export_dir(kcluster)
    canary = export / "canary.dat"
    canary.write_bytes(b"not herd's\n")
    fs = export / "herd-hostile" / "fs"
    (fs / "r000001.dat").unlink()
    (fs / "r000001.dat").symlink_to("../../canary.dat")
    (fs / "r000002.dat").unlink()
    os.mkfifo(fs / "r000002.dat")
    # A fresh mount: what the server has now, not the names and attributes
    # the clients cached (another client's change shows only when they
    # expire: acdirmin).
    kcluster.mount("vers=3,hard")
    both = write_job(tmp_path / "wr.ini", base, [("w", {"kind": "write"}),
                                                 ("r", {"kind": "read", "verify": "yes"})])
    # a FIFO that made the open wait would be cut by the deadline (20 s):
    # the phase's status would be "deadline", the errno not the ones below
    run = kcluster.herd(herd_bin, both, "hostile-2", timeout=180, expect=3)
    assert canary.read_bytes() == b"not herd's\n"
    assert (fs / "r000001.dat").is_symlink() and os.readlink(fs / "r000001.dat") == \
        "../../canary.dat"
    assert stat.S_ISFIFO(os.lstat(fs / "r000002.dat").st_mode)
    for phase in ("w", "r"):
        errors = run.errors(phase)
        by_rank = errors.groupby("rank")["errno_name"].apply(set).to_dict()
        assert by_rank.get(1) == {"ELOOP"}, (phase, errors)
        assert by_rank.get(2) and by_rank[2] <= {"ENXIO", "ENOTSUP", "EOPNOTSUPP"}, \
            (phase, errors)
        assert set(by_rank) == {1, 2}, (phase, errors)
        assert run.phases.set_index("phase").loc[phase, "verify_failures"] == 0
        assert run.phase_attrs(phase)["status"] == "errors", (phase, run.phase_attrs(phase))
    canary.unlink()
    print(f"\n  planted link and FIFO: {run.errors('w')[['rank', 'op', 'errno_name']].values}")


def test_signal_to_one_rank_in_a_guest(kcluster, herd_bin, tmp_path):
    """SIGTERM to the herd rank in one guest, mid-write on the kernel
    mount: every rank stops in the middle of its file (a pause of 1 s
    after each of its 67 calls leaves a minute of them), the results file
    says interrupted with exit code 143, and the clean-up removed what
    the run made on the export."""
    kcluster.mount("vers=3,hard")
    job = write_job(tmp_path / "sig.ini", {"block_size": "1M", "run_id": "sig"},
                    [("w", {"kind": "write", "file_size": str(64 * MIB), "fileset": "sig",
                            "think_time": "1s"}),
                     ("after", {"kind": "write", "file_size": "1M"})])
    guest = kcluster.state / "guests" / "c02"
    # In c02 itself: once its rank's file has 4 MiB (what the client's page
    # cache holds: the server sees it only at write-back), SIGTERM to it.
    mine = kcluster.state / "mnt" / "herd-sig" / "sig" / "r000001.dat"
    line = (f"timeout 120 sh -c 'while [ $(stat -c %s {mine} 2>/dev/null || echo 0) -lt "
            f"{4 * MIB} ]; do sleep 0.05; done; pkill -TERM -x herd'")
    when = []

    def signal_when_written():
        if kcluster.run("python3", VC_GUEST, "sh", guest, line, timeout=150).returncode == 0:
            when.append(time.time())
    t = threading.Thread(target=signal_when_written)
    t.start()
    try:
        out = kcluster.share / "sig.h5"
        cmd = (f"mpirun --hostfile $HERD_HOSTFILE $HERD_MPIRUN_ARGS -np {CLIENTS + 1} "
               f"{herd_bin} run {job} --set target=$VC_MOUNT --set monitor_host=srv -o {out}")
        proc = kcluster.run("bash", "-c", cmd, timeout=180)
    finally:
        t.join()
    assert when, "the write never got under way\n" + describe(proc)
    assert proc.returncode != 0, describe(proc)
    run = herd_results.Run(str(out))
    assert run.status == "interrupted" and int(run.attrs["exit_code"]) == 143, describe(proc)
    assert list(run.phase_names) == ["w"]
    a = run.phase_attrs("w")
    assert a["status"] == "interrupted"
    rows = run.ranks("w")
    assert (rows["completed"] == 0).all() and (rows["bytes"] < 64 * MIB).all(), \
        f"ranks went on after the signal:\n{rows}"
    assert not (export_dir(kcluster) / "herd-sig").exists(), "the clean-up left the run directory"


def guest_sh(cluster, n, line):
    """LINE in client guest n (1..CLIENTS): its CompletedProcess."""
    guest = cluster.state / "guests" / f"c{n:02d}"
    return cluster.run("python3", VC_GUEST, "sh", guest, line, timeout=120)


def test_run_directory_seen_through_a_cached_miss(kcluster, herd_bin, tmp_path):
    """Every guest has just looked for the run directory and found it
    missing, a miss its kernel client keeps (until the target's attributes
    expire, acdirmin: 30 s) after rank 0 made it. Each rank's check that
    it sees the run directory refreshes the target first, so every rank
    finds it, reads its lock file's token back, and the run ends clean.
    (Printed: whether a guest's plain stat still missed a directory
    another guest had just made, the case this test sets up.)"""
    kcluster.mount("vers=3,hard")
    mnt = kcluster.state / "mnt"
    probe = mnt / "herd-probe"
    assert guest_sh(kcluster, 2, f"! stat {probe}").returncode == 0
    assert guest_sh(kcluster, 1, f"mkdir {probe}").returncode == 0
    cached = guest_sh(kcluster, 2, f"! stat {probe}").returncode == 0
    assert guest_sh(kcluster, 1, f"rmdir {probe}").returncode == 0
    for n in range(1, CLIENTS + 1):
        assert guest_sh(kcluster, n, f"! stat {mnt / 'herd-miss'}").returncode == 0
    job = write_job(tmp_path / "miss.ini", {"block_size": "1M", "run_id": "miss"},
                    [("w", {"kind": "write", "file_size": "1M"}),
                     ("r", {"kind": "read", "file_size": "1M", "verify": "yes"})])
    run = kcluster.herd(herd_bin, job, "miss")
    assert_clean(run, ["w", "r"])
    assert not (export_dir(kcluster) / "herd-miss").exists(), "the clean-up left the run directory"
    print(f"\n  a guest's stat after another's mkdir: {'missed (cached)' if cached else 'found'}")


def knfsd_export(cluster, fsid):
    """Re-export the kernel nfsd's /export with this fsid, live, to the
    cluster's subnet and the server host's side of its link (what
    uml-init's export does, fsid=1): the file handles of the old fsid go
    stale at once."""
    opts = f"rw,sync,no_root_squash,no_subtree_check,insecure,fsid={fsid}"
    for client in ("10.77.0.0/24", "10.77.1.1"):
        proc = subprocess.run(["bash", str(NFS_SERVER), "guest", "--state",
                               str(cluster.state / "server"), "--", "exec", "exportfs", "-o",
                               opts, f"{client}:/export"],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0 and "exit 0" in proc.stdout, describe(proc)


def hold_guest_ranks(cluster, held):
    """SIGSTOP (held) or SIGCONT the herd rank in every client guest, all
    guests at once (each rank runs in its own guest's kernel: the host
    cannot signal it). A held rank makes no call."""
    sig = "STOP" if held else "CONT"
    guests = [cluster.state / "guests" / f"c{n:02d}" for n in range(1, CLIENTS + 1)]
    procs = [subprocess.Popen(["bash", str(VCLUSTER), "exec", "--state", str(cluster.state), "--",
                               "python3", VC_GUEST, "sh", str(guest), f"pkill -{sig} -x herd"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for guest in guests]
    said = [p.communicate(timeout=120)[0] for p in procs]
    if held:  # pkill exits 1 when no herd runs there any more
        codes = [p.returncode for p in procs]
        assert codes == [0] * len(procs), \
            f"no herd rank to hold in some guest (pkill exit codes {codes}): {said}"


def test_export_change_gives_estale(kncluster, herd_bin, tmp_path):
    """The export changed under a read (re-exported with another fsid, as
    after a fail-over to a server that numbers it differently): every file
    handle the clients hold is stale, the kernel client's READs fail with
    ESTALE on every reader, counted by errno, and the run ends with its
    results (exit 3). After a remount a fresh run is clean. No step races
    a clock: once phase r reads, every rank is held (SIGSTOP) until the
    new export is in place, and each has seconds of paced reads left (19 s
    in all: holding the ranks of 4 guests takes seconds on a busy machine).
    64 MiB files: tried with 16 MiB in 256K blocks, the kernel's read-ahead
    (15 x rsize on NFS) had each file cached before the export changed,
    and no READ was left to fail."""
    kncluster.mount("vers=3,hard")
    job = write_then_read_job(tmp_path / "stale.ini", 64 * MIB, think_time="300ms")
    out = kncluster.share / "stale.h5"
    cmd = (f"mpirun --hostfile $HERD_HOSTFILE $HERD_MPIRUN_ARGS -np {CLIENTS + 1} "
           f"{herd_bin} run {job} --set target=$VC_MOUNT --set monitor_host=srv -o {out}")
    proc = subprocess.Popen(["bash", str(VCLUSTER), "exec", "--state", str(kncluster.state),
                             "--", "bash", "-c", cmd], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    when, lines = [], []
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("herd: phase w:"):
                # Once phase r reads (nfsd's read bytes grow: the next
                # phase may start seconds after this line on a busy
                # machine), its ranks are held with up to 19 s of paced
                # reads ahead of them while the export changes.
                read0, deadline = nfsd_io(kncluster)[0], time.monotonic() + 60
                while nfsd_io(kncluster)[0] == read0 and time.monotonic() < deadline:
                    time.sleep(0.1)
                hold_guest_ranks(kncluster, True)
                try:
                    when.append(time.time())
                    knfsd_export(kncluster, 2)
                finally:
                    hold_guest_ranks(kncluster, False)
        proc.wait(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
        knfsd_export(kncluster, 1)
    assert when, "".join(lines)
    assert proc.returncode == 3, "".join(lines)
    run = herd_results.Run(str(out))
    assert_within(run, "r", when[0])
    assert_clean(run, ["w"])
    errors = run.errors("r")
    assert set(errors["errno_name"]) == {"ESTALE"}, errors
    # (each reader had seconds of think time left: every I/O rank saw it)
    assert errors["rank"].nunique() == CLIENTS, errors
    assert run.status == "complete" and int(run.attrs["exit_code"]) == 3
    kncluster.mount("vers=3,hard")
    fresh = write_job(tmp_path / "fresh.ini", {"block_size": "1M"},
                      [("w", {"kind": "write", "file_size": "4M"}),
                       ("r", {"kind": "read", "file_size": "4M", "read_from": "neighbor",
                              "verify": "yes"})])
    assert_clean(kncluster.herd(herd_bin, fresh, "stale-after"), ["w", "r"])
    print(f"\n  export re-exported with another fsid mid-read: "
          f"{errors.groupby('errno_name')['count'].sum().to_dict()} on "
          f"{errors['rank'].nunique()} ranks")


def test_meta_and_storm_over_kernel_nfs(kcluster, herd_bin, tmp_path):
    """The other workload kinds on the kernel mount: an mdtest-like meta
    phase (unique and shared trees: create, stat, rename, unlink, rmdir)
    and an open storm on one shared file, from 4 hosts: every item done,
    no error, and the metadata RPCs seen in each host's mountstats (the
    creates reached the server, not only the client's caches)."""
    kcluster.mount("vers=3,hard")
    meta = {"kind": "meta", "dirs": "4", "files": "40", "file_size": "4K", "block_size": "4K"}
    job = write_job(tmp_path / "meta.ini", {"fsync": "no"},
                    [("meta-unique", dict(meta, fileset="mu")),
                     ("meta-shared", dict(meta, sharing="shared", fileset="ms")),
                     ("w", {"kind": "write", "sharing": "shared", "fileset": "st",
                            "file_size": "64K", "block_size": "16K"}),
                     ("storm", {"kind": "storm", "sharing": "shared", "fileset": "st",
                                "file_size": "64K", "block_size": "16K", "count": "25"})])
    run = kcluster.herd(herd_bin, job, "meta-storm")
    assert_clean(run, run.phase_names)
    for name in ("meta-unique", "meta-shared"):
        steps = run.meta_steps(name)
        items = steps.groupby("step")["items"].sum().to_dict()
        # (files per rank: 40 each, whether each rank has a tree or all share one)
        assert items["create"] == items["stat"] == items["rename"] == items["unlink"] == \
            CLIENTS * 40, (name, items)
        ops = run.client_ops()
        creates = ops[(ops["phase"] == name) & (ops["op"] == "CREATE")]
        assert (creates.groupby("host")["ops"].sum() >= 40).all(), (name, creates)
    storm = run.ranks("storm")
    assert (storm["bytes"] == 25 * 16 * 1024).all() and (storm["errors"] == 0).all(), storm
    phases = run.phases.set_index("phase")
    print("\n  " + ", ".join(f"{n} {phases.loc[n, 'ops_per_s']:.0f} calls/s"
                             for n in ("meta-unique", "meta-shared", "storm")))


def guest_mountstats(cluster, n=1):
    """/proc/self/mountstats as the kernel of client guest cNN shows it."""
    guest = cluster.state / "guests" / f"c{n:02d}"
    proc = subprocess.run(["bash", str(VCLUSTER), "exec", "--state", str(cluster.state), "--",
                           "python3", VC_GUEST, "sh", str(guest), "cat /proc/self/mountstats"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "per-op statistics" in proc.stdout, describe(proc)
    return proc.stdout


MIX_MAP = {"GETATTR": "getattr", "SETATTR": "setattr", "LOOKUP": "lookup", "ACCESS": "access",
           "READ": "read", "WRITE": "write", "COMMIT": "fsync", "CREATE": "create",
           "REMOVE": "unlink", "RENAME": "rename", "MKDIR": "mkdir", "RMDIR": "rmdir",
           "READDIR": "readdir", "READDIRPLUS": "readdir"}


def op_shares(counts):
    """{mix op: share} of {NFS op: calls}, by herd mix-from's map (LOOKUP
    as one: its failures are not split)."""
    mapped = {}
    for op, n in counts.items():
        if op in MIX_MAP:
            mapped[MIX_MAP[op]] = mapped.get(MIX_MAP[op], 0) + n
    total = sum(mapped.values())
    return {k: v / total for k, v in mapped.items()} if total else {}


def nfs_op_counts(text):
    """{NFS op: calls} of the NFS mount in a mountstats text."""
    counts, in_nfs, in_ops = {}, False, False
    for line in text.splitlines():
        if line.startswith("device "):
            in_nfs = " with fstype nfs" in line
            in_ops = False
        elif in_nfs and "per-op statistics" in line:
            in_ops = True
        elif in_nfs and in_ops and ":" in line:
            name, _, nums = line.strip().partition(":")
            counts[name] = counts.get(name, 0) + int(nums.split()[0])
    return counts


def mix_from(herd_bin, before, after, *extra):
    """herd mix-from's job lines for two snapshot files, and its
    key = value pairs."""
    proc = subprocess.run([herd_bin, "mix-from", str(before), str(after), "--section", "like",
                           "--seconds", "60", *extra], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, describe(proc)
    return proc.stdout, dict(line.split(" = ", 1) for line in proc.stdout.splitlines()
                             if " = " in line)


def test_mix_and_mix_from_over_kernel_nfs(kcluster, herd_bin, tmp_path):
    """A mix over posix on the kernel mount (actimeo=0: every getattr asks
    the server) from 4 hosts: herd's own counts follow the weights, no
    error, every read verified. Then the mix a real client ran, taken back
    from that client's mountstats by herd mix-from, is run through the
    same client, and read back from its mountstats. The kernel adds calls
    of its own and serves others from its caches, so the first replay's
    shares differ from the client's; herd mix-from --replay scales each
    weight by its share wanted / its share replayed, and the corrected
    mix, run through the same client, makes it send the shares the client
    sent for every call the kernel sends one for one for herd's (GETATTR
    under actimeo=0, CREATE, REMOVE, RENAME, WRITE): each within 10 %
    (half a point for shares under 5 %). The others are printed: ACCESS
    (an open's), LOOKUP (before a create, or the dentry cache's), SETATTR
    (after an exclusive CREATE), MKDIR and RMDIR (herd's untimed tree)
    come mostly from calls the kernel makes on its own, which herd's
    weights cannot set."""
    kcluster.mount("vers=3,hard,actimeo=0")
    weights = {"getattr": 40, "lookup": 15, "read": 20, "write": 10, "readdir": 5,
               "create": 4, "unlink": 3, "rename": 3}
    common = {"count": 600, "files": 4, "verify": "yes"}
    known = write_job(tmp_path / "known.ini", {"seed": 59},
                      [("known", {"kind": "mix", **common,
                                  "mix": ",".join(f"{k}:{v}" for k, v in weights.items())})])
    before = guest_mountstats(kcluster)
    run = kcluster.herd(herd_bin, known, "mix-known")
    after = guest_mountstats(kcluster)
    assert_clean(run, ["known"])
    ph = run.phases.set_index("phase").loc["known"]
    assert int(ph["units"]) == CLIENTS * 600
    opsum = run.op_summary("known").set_index("op")["calls"]
    for op, w in weights.items():
        want = CLIENTS * 600 * w / 100
        assert abs(opsum[op] - want) <= 0.1 * want, (op, opsum[op], want)
    # herd mix-from on the client's own snapshots: its weights are the
    # shares of the calls the kernel sent between them, by the map
    (tmp_path / "before").write_text(before)
    (tmp_path / "after").write_text(after)
    text, keys = mix_from(herd_bin, tmp_path / "before", tmp_path / "after")
    seen = {k: float(v) / 100 for k, v in (i.split(":") for i in keys["mix"].split(","))}
    b, a = nfs_op_counts(before), nfs_op_counts(after)
    delta = {op: a[op] - b.get(op, 0) for op in a}
    sent = op_shares(delta)
    seen["lookup"] = seen.get("lookup", 0) + seen.pop("lookup_missing", 0)
    assert set(seen) == set(k for k, v in sent.items() if v > 0), (seen, sent)
    for op, share in sent.items():
        assert abs(seen.get(op, 0) - share) <= 1e-4 + 1e-3 * share, (op, seen, sent)
    assert float(keys["rate"]) == pytest.approx(
        sum(n for op, n in delta.items() if op in MIX_MAP) / 60, rel=1e-3)

    def replay(text, name):
        """The printed job through the same clients (at full speed: count
        calls per client); c01's snapshots around it (files) and the
        shares its kernel sent over the run."""
        job = tmp_path / f"{name}.ini"
        job.write_text(text.replace("rate = ", "; rate = ") +
                       "".join(f"{k} = {v}\n" for k, v in common.items()))
        rb = guest_mountstats(kcluster)
        again = kcluster.herd(herd_bin, job, name)
        ra = guest_mountstats(kcluster)
        assert_clean(again, ["like"])
        (tmp_path / f"{name}-before").write_text(rb)
        (tmp_path / f"{name}-after").write_text(ra)
        rbn, ran = nfs_op_counts(rb), nfs_op_counts(ra)
        return op_shares({op: ran[op] - rbn.get(op, 0) for op in ran})

    first = replay(text, "mix-like")
    corrected, ckeys = mix_from(herd_bin, tmp_path / "before", tmp_path / "after", "--replay",
                                f"{tmp_path / 'mix-like-before'},{tmp_path / 'mix-like-after'}")
    assert "; corrected by a replay of mix = " in corrected, corrected
    second = replay(corrected, "mix-corrected")
    print("\n  op        weight  client sent  1st replay  mix --replay  2nd replay")
    fixed = {k: float(v) / 100 for k, v in (i.split(":") for i in ckeys["mix"].split(","))}
    for op in sorted(set(sent) | set(first) | set(second)):
        print(f"  {op:<9} {weights.get(op, 0):5}%  {100 * sent.get(op, 0):10.1f}%  "
              f"{100 * first.get(op, 0):9.1f}%  {100 * fixed.get(op, 0):11.1f}%  "
              f"{100 * second.get(op, 0):9.1f}%")
    for op in ("getattr", "create", "unlink", "rename", "write", "read"):
        want, got = sent.get(op, 0), second.get(op, 0)
        assert abs(got - want) <= max(0.1 * want, 0.005), (op, got, want, sent, second)
