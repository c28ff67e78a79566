"""herd as a batch job on a virtual cluster (cluster-configs/virtual/):
4 client hosts and 1 server host on this machine, each its own network and
UTS namespace; OpenMPI starts ranks into them through vc-agent; the server
host runs the embedded nfs-ganesha; the job is the batch script a user
submits (jobs/slurm/herd.sbatch, run outside Slurm with mpirun and the
cluster's hostfile).

1. 20 I/O ranks over c01..c04 and the monitor rank on srv: results.h5 has
   the 4 client host names and 20 ranks, 5 per host; with read_from =
   neighbor every rank reads a file written on another host, and verifies
   it; the monitor samples srv (its own host name) with ganesha.nfsd's CPU
   above 0; the batch script's report is there. Nothing of the cluster is
   left afterwards (holders, server, loop device, state directory).
2. Opt-in scale runs (HERD_SCALE_RANKS="100 300"): the same job at that many
   I/O ranks over 4 hosts; prints herd's own cost (start-up, clock sync,
   gather and write per phase, file size, memory per rank) and checks that
   writing a phase takes under a second.

Needs root, nfs-ganesha, libnfs and OpenMPI; skips with a message otherwise.
Run: /usr/bin/python3 -m pytest -q -rs -s tests/integration/test_virtual_cluster.py
"""
import os
import subprocess

import h5py
import numpy as np
import pytest

from conftest import REPO_DIR, describe, write_job
from test_nfs import _WHY

VCLUSTER = REPO_DIR / "cluster-configs" / "virtual" / "vcluster.sh"
SBATCH = REPO_DIR / "jobs" / "slurm" / "herd.sbatch"
CLIENTS = 4

pytestmark = pytest.mark.skipif(_WHY is not None, reason=_WHY or "")


def text(v):
    return v.decode() if isinstance(v, bytes) else v


class Cluster:
    def __init__(self, state, slots):
        self.state = state
        self.slots = slots
        proc = subprocess.run(["bash", str(VCLUSTER), "up", "--state", str(state), "--clients",
                               str(CLIENTS), "--slots", str(slots), "--server-size", "2G"],
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            self.down()
            pytest.fail(f"vcluster up failed:\n{proc.stderr}")
        self.url = proc.stdout.strip().splitlines()[-1]
        self.hosts = [line.split() for line in (state / "hosts").read_text().splitlines()]

    def batch(self, herd_bin, job, nranks, results, timeout):
        """The user's batch script, on the head host, with the cluster's
        hostfile and mpirun settings."""
        env = dict(os.environ, HERD=str(herd_bin), HERD_NP=str(nranks),
                   HERD_RESULTS=str(results))
        cmd = ["bash", str(VCLUSTER), "exec", "--state", str(self.state), "--",
               "bash", str(SBATCH), str(job), "--set", f"target={self.url}"]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)

    def down(self):
        return subprocess.run(["bash", str(VCLUSTER), "down", "--state", str(self.state)],
                              capture_output=True, text=True, timeout=120)

    def assert_gone(self):
        for name, pid, start, _addr, _role in self.hosts:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                assert fields[0] == "Z" or fields[19] != start, f"host {name} ({pid}) still runs"
            except FileNotFoundError:
                pass
        assert not self.state.exists(), f"{self.state} was left behind"
        loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
        assert str(self.state) not in loops, loops


@pytest.fixture
def cluster_factory(tmp_path):
    made = []

    def make(slots):
        c = Cluster(tmp_path / f"vc{len(made)}", slots)
        made.append(c)
        return c
    yield make
    for c in made:
        proc = c.down()
        assert proc.returncode == 0, proc.stderr
        c.assert_gone()


def virtual_job(path, file_size):
    return write_job(path, {"backend": "libnfs", "monitor_host": "srv",
                            "monitor_interval": "200ms", "monitor_processes": "ganesha.nfsd"},
                     [("write", {"kind": "write", "file_size": file_size}),
                      ("read", {"kind": "read", "file_size": file_size,
                                "read_from": "neighbor", "verify": "yes"}),
                      ("md5", {"kind": "md5", "file_size": file_size,
                               "read_from": "neighbor"})])


def results_of(proc):
    """The batch script prints its results directory last."""
    assert proc.returncode == 0, describe(proc)
    rundir = proc.stdout.strip().splitlines()[-1]
    return rundir, os.path.join(rundir, "results.h5")


def test_virtual_cluster_20_ranks(herd_bin, tmp_path, cluster_factory):
    cluster = cluster_factory(slots=5)
    job = virtual_job(tmp_path / "virtual.ini", "16M")
    proc = cluster.batch(herd_bin, job, CLIENTS * 5 + 1, tmp_path / "results", timeout=600)
    rundir, path = results_of(proc)
    with h5py.File(path, "r") as f:
        assert text(f.attrs["status"]) == "complete" and f.attrs["exit_code"] == 0
        hostnames = [text(h) for h in f["hosts"]["hostname"]]
        assert hostnames == ["c01", "c02", "c03", "c04"]
        assert f.attrs["nranks"] == 20
        assert list(np.bincount(f["ranks"]["host"])) == [5, 5, 5, 5]
        for phase in ("read", "md5"):
            rows = f["phases"][phase]["ranks"][()]
            host_of = {int(r["rank"]): int(r["host"]) for r in rows}
            assert all(host_of[int(r["file_rank"])] != int(r["host"]) for r in rows), phase
            assert rows["verify_failures"].sum() == 0 and rows["errors"].sum() == 0
            assert rows["bytes"].sum() == 20 * 16 * 2**20
        mon = dict(f["monitor"].attrs)
        assert text(mon["host"]) == "srv" and mon["rank"] == 20
        samples = f["monitor/samples"][()]
        assert len(samples) > 0 and {text(h) for h in samples["host"]} == {"srv"}
        procs = f["monitor/processes"][()]
        ganesha = procs[[text(n) == "ganesha.nfsd" for n in procs["name"]]]
        assert len(ganesha) > 0 and ganesha["cpu"].max() > 0.05, ganesha["cpu"]
    assert os.path.getsize(os.path.join(rundir, "report", "index.html")) > 1000


def scale_ranks():
    return [int(n) for n in os.environ.get("HERD_SCALE_RANKS", "").split()]


@pytest.mark.parametrize("nranks", scale_ranks() or [pytest.param(0, marks=pytest.mark.skip(
    reason="scale runs are opt-in: HERD_SCALE_RANKS='100 300'"))])
def test_virtual_cluster_scale(herd_bin, tmp_path, cluster_factory, nranks):
    cluster = cluster_factory(slots=(nranks + CLIENTS - 1) // CLIENTS)
    job = virtual_job(tmp_path / "scale.ini", "1M")
    proc = cluster.batch(herd_bin, job, nranks + 1, tmp_path / "results", timeout=3600)
    _, path = results_of(proc)
    with h5py.File(path, "r") as f:
        assert f.attrs["nranks"] == nranks
        usage = f["usage"][()]
        print(f"\nscale {nranks} I/O ranks on {CLIENTS} virtual hosts:"
              f" startup {f.attrs['startup_seconds']:.2f} s,"
              f" clock sync {f.attrs['clock_sync_seconds']:.3f} s,"
              f" file {os.path.getsize(path) / 2**20:.2f} MiB,"
              f" max RSS per rank {usage['max_rss_bytes'].max() / 2**20:.1f} MiB"
              f" (median {np.median(usage['max_rss_bytes']) / 2**20:.1f})")
        for name in f["phases"]:
            a = f["phases"][name].attrs
            print(f"  {name}: gather {a['gather_seconds']:.3f} s, write {a['write_seconds']:.3f} s")
            assert a["write_seconds"] < 1.0, (name, a["write_seconds"])
