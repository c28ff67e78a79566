"""herd's posix backend on real kernel NFS mounts: the virtual cluster with
kernel-client hosts (vcluster.sh up --kernel-client), 4 User-Mode Linux
guests with the Linux kernel's NFS client, each mounting the embedded
ganesha's export; herd's ranks run inside the guests as MPI ranks started
by mpirun on the head host (vc-agent through the guests' agents), the
monitor rank on the server host.

1. up and down: every guest boots and mounts with the options asked (the
   results' /hosts has them, as the kernel reports them); nothing is left
   after down (guests, their helpers, holders, server, state directory).
2. A 4-host write/read/md5 matrix over NFSv3 and NFSv4.2 (unique and
   shared files, read_from = neighbor, verify): exact bytes, no error, no
   verify failure; the kernel's mountstats deltas (/monitor/clients) equal
   what herd moved, host by host, by the page-cache rules of
   docs/results-format.md: a write sends every byte (fsync), a read of a
   file written on another host fetches every byte, a read of what this
   host wrote or read before fetches none.
3. The neighbour-read proof: after each host wrote its file, a same-host
   read is served from the page cache (0 bytes READ from the server) and a
   neighbour's read goes to the server (all of it); direct = yes reads
   every byte from the server even on the same host.
4. A lock phase through fcntl over the kernel's NLM (v3) and NFSv4 LOCK
   (v4.2): grants on every host, 0 violations, 0 errors.
5. A server restart mid-phase: with `hard`, ganesha restarted in the middle
   of a write: the kernel client retries, the phase ends with every byte
   and no error; with `soft,timeo=5,retrans=1`, ganesha frozen (SIGSTOP)
   for 4 s: the calls fail with EIO or ETIMEDOUT, counted by errno, the
   run still ends with its results (exit 3), and the mount works again
   once the server is back.

Needs root, user-mode-linux, nfs-ganesha, nfs-common and OpenMPI; skips
with a message otherwise. Run: ctest -R kclient, or
/usr/bin/python3 -m pytest -q -rs -s tests/integration/test_kclient.py
"""
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

from conftest import MIB, REPO_DIR, describe, write_job
from test_virtual_cluster import VCLUSTER, Cluster, pytestmark  # noqa: F401

sys.path.insert(0, str(REPO_DIR / "analysis"))
import herd_results  # noqa: E402

NFS_SERVER = REPO_DIR / "cluster-configs" / "local" / "nfs-server.sh"
CLIENTS = 4
FILE = 8 * MIB
_MISSING = [t for t in ("linux.uml", "mount.nfs", "rpc.statd")
            if shutil.which(t, path=os.environ["PATH"] + ":/usr/sbin:/sbin") is None]
needs_uml = pytest.mark.skipif(
    bool(_MISSING), reason=f"{', '.join(_MISSING)} missing: cluster-configs/local/install.sh "
    "installs user-mode-linux and nfs-kernel-server")
pytestmark = [pytestmark, needs_uml]


class KernelCluster(Cluster):
    """4 kernel-client guests, 1 slot each, and the server host."""

    def __init__(self, state, mount_opts="vers=3"):
        self.share = state.parent / "share"
        self.share.mkdir(exist_ok=True)
        super().__init__(state, 1, clients=CLIENTS,
                         up_args=["--kernel-client", "--mount-opts", mount_opts,
                                  "--share", str(self.share)])

    def mount(self, opts):
        proc = subprocess.run(["bash", str(VCLUSTER), "mount", "--state", str(self.state),
                               "--mount-opts", opts], capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, describe(proc)

    def herd(self, herd_bin, job, name, timeout=300, expect=0):
        """herd over the guests' mounts: 4 I/O ranks and the monitor rank."""
        out = self.share / f"{name}.h5"
        cmd = (f"mpirun --hostfile $HERD_HOSTFILE $HERD_MPIRUN_ARGS -np {CLIENTS + 1} "
               f"{herd_bin} run {job} --set target=$VC_MOUNT --set monitor_host=srv "
               f"--set monitor_interval=500ms -o {out}")
        proc = self.run("bash", "-c", cmd, timeout=timeout)
        assert proc.returncode == expect, describe(proc)
        return herd_results.Run(str(out))

    def server(self, *args, timeout=120):
        proc = subprocess.run(["bash", str(NFS_SERVER), *args, "--state",
                               str(self.state / "server")], capture_output=True, text=True,
                              timeout=timeout)
        assert proc.returncode == 0, describe(proc)
        return proc.stdout


@pytest.fixture(scope="module")
def kcluster(tmp_path_factory):
    c = KernelCluster(tmp_path_factory.mktemp("kclient") / "vc")
    yield c
    proc = c.down()
    assert proc.returncode == 0, proc.stderr
    c.assert_gone()


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


def test_up_down_leaves_nothing(tmp_path, herd_bin):
    c = KernelCluster(tmp_path / "vc", mount_opts="vers=3,rsize=12288,wsize=12288")
    try:
        guests = [h for h in c.hosts if h[4] == "guest"]
        assert [h[0] for h in guests] == [f"c{i:02d}" for i in range(1, CLIENTS + 1)]
        status = subprocess.run(["bash", str(VCLUSTER), "status", "--state", str(c.state)],
                                capture_output=True, text=True)
        assert status.returncode == 0 and "state=up" in status.stdout, describe(status)
        assert "mount_opts=vers=3,rsize=12288,wsize=12288" in status.stdout
        job = write_job(tmp_path / "w.ini", {"block_size": "64K"},
                        [("w", {"kind": "write", "file_size": "1M"})])
        run = c.herd(herd_bin, job, "opts")
        hosts = run.hosts.set_index("hostname")
        for name, *_ in guests:
            opts = hosts.loc[name, "mount_options"]
            assert hosts.loc[name, "fstype"] == "nfs", opts
            assert "vers=3" in opts and "rsize=12288" in opts and "wsize=12288" in opts, opts
        boot = dict(line.split() for line in (c.state / "boot-times").read_text().splitlines())
        print(f"\n  boot to agent, seconds after the first start: {boot}")
    finally:
        proc = c.down()
    assert proc.returncode == 0, proc.stderr
    c.assert_gone()
    left = [p for p in os.listdir("/proc") if p.isdigit()
            and str(c.state).encode() in open(f"/proc/{p}/cmdline", "rb").read()]
    assert not left, f"processes of the cluster left: {left}"


@pytest.mark.parametrize("vers", ["3", "4.2"])
def test_matrix_exact_bytes(kcluster, herd_bin, tmp_path, vers):
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
    assert set(run.hosts["fstype"]) == {fstype}
    assert all(f"vers={vers}" in o for o in run.hosts["mount_options"])
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
    none, every = dict.fromkeys(range(CLIENTS), 0), {h: FILE for h in range(CLIENTS)}
    assert per_host(client_rows(run, "read-self"), "server_read_bytes") == none
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


def while_writing(cluster, action, done, nbytes=8 * MIB):
    """action() in a thread, once some file in the export has nbytes (the
    write phase is under way); the unix time it began in done[]. (The
    export is a loop mount in the server's mount namespace: seen through
    ganesha's /proc/PID/root.)"""
    export = f"/proc/{ganesha_pid(cluster)}/root{cluster.state / 'server' / 'export'}"

    def wait_then_act():
        end = time.monotonic() + 60
        while time.monotonic() < end:
            sizes = [os.stat(os.path.join(d, f)).st_size for d, _, fs in os.walk(export)
                     for f in fs if os.path.exists(os.path.join(d, f))]
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


def test_server_restart_hard_mount_waits(kcluster, herd_bin, tmp_path):
    kcluster.mount("vers=3,hard")
    size = str(64 * MIB)
    job = write_job(tmp_path / "restart.ini", {"block_size": "1M", "fsync": "yes"},
                    [("w", {"kind": "write", "file_size": size}),
                     ("r", {"kind": "read", "file_size": size, "read_from": "neighbor",
                            "verify": "yes"})])
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
