"""Whether many clients a rank (clients_per_rank) fit where they run
(src/plugins/clientfit.c), checked by `herd check` and at the run's start,
before any client connects:

1. Descriptors: 400 clients under a hard limit of 256 (prlimit) are
   refused in one line that names the limit and `ulimit -n`, by `herd
   check` and by the run (exit 2, no client tried the server, no results
   file); the clients_per_rank it offers passes the check under that limit.
   Under a soft limit of 256 and a hard one of 4096 the check says the run
   raises it, and a run of 300 clients against the embedded ganesha
   completes with every client's row.
2. Memory, per host: clients that fit half the host's memory for one rank
   but not for two are refused for two ranks on one host, by `herd check -n
   2` (and passed with --ranks-per-host 1) and by a run of 2 ranks on this
   host, naming both ranks.
3. A memory refusal names the nearest settings that fit (nfs_inflight,
   block_size, clients_per_rank), and each one, tried with --set, passes
   the check.

No test needs a server but the run of 1., which skips without root and
nfs-ganesha. Run:
/usr/bin/python3 -m pytest -q -rsx tests/integration/test_client_limits.py
"""

import os
import re
import shutil

import h5py
import pytest

from conftest import describe, herd_cmd, mpirun_args, parse_size, run_cmd, write_job
from test_clients import ganesha  # noqa: F401 (a fixture: an embedded ganesha, --fs dir)
from test_nfs import ns_args, ns_env
from test_nfs_server import _why_skip

# A target nothing answers at: a refusal must come before any connect.
NOWHERE = "nfs://127.0.0.1:9/export"


@pytest.fixture(autouse=True)
def needs_libnfs(herd_bin):
    if shutil.which("prlimit") is None:
        pytest.skip("prlimit (util-linux) not installed")
    keys = herd_cmd(herd_bin, "keys")
    if "nfs_inflight" not in keys.stdout:
        pytest.skip("herd built without libnfs (clients_per_rank needs it)")


def host_memory():
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def per_client(herd_bin, job, *args):
    """The bytes per client on `herd check`'s memory line."""
    proc = herd_cmd(herd_bin, "check", job, *args)
    assert proc.returncode == 0, describe(proc)
    m = re.search(r"^memory: ([0-9.]+) ([KMG])iB per client", proc.stdout, re.M)
    assert m, describe(proc)
    return float(m.group(1)) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)]


def one_refusal(proc):
    """The refusal's one line on stderr (exit 2)."""
    assert proc.returncode == 2, describe(proc)
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("herd: ")]
    assert len(lines) == 1, describe(proc)
    return lines[0]


def test_descriptors_past_the_hard_limit_are_refused(herd_bin, tmp_path):
    job = write_job(tmp_path / "j.ini", {"backend": "libnfs", "target": NOWHERE,
                                         "clients_per_rank": 400},
                    [("w", {"kind": "write", "file_size": "64k", "block_size": "64k"})])
    tight = ["prlimit", "--nofile=256:256"]
    line = one_refusal(run_cmd(tight + [herd_bin, "check", str(job)]))
    assert "key 'clients_per_rank'" in line and "ulimit -n" in line, line
    assert "hard limit 256" in line, line
    fewer = re.search(r"clients_per_rank = (\d+) at most", line)
    assert fewer, line
    proc = run_cmd(tight + [herd_bin, "check", str(job), "--set",
                            f"clients_per_rank={fewer.group(1)}"])
    assert proc.returncode == 0, describe(proc)
    # The run: refused at its start, before any client tried the server.
    out = tmp_path / "r.h5"
    proc = run_cmd(tight + mpirun_args(herd_bin, 1, "run", job, "-o", out, quiet=True))
    line = one_refusal(proc)
    assert "ulimit -n" in line and "rank 0 on " in line, line
    assert "refused" not in proc.stderr and "could not connect" not in proc.stderr, describe(proc)
    assert not out.exists()
    # A soft limit below the need and a hard one above it: the run raises it.
    proc = run_cmd(["prlimit", "--nofile=256:4096", herd_bin, "check", str(job)])
    assert proc.returncode == 0, describe(proc)
    assert re.search(r"^descriptors: \d+ per rank .*limit 256 .*hard limit 4096: the run raises it",
                     proc.stdout, re.M), describe(proc)


@pytest.mark.skipif(_why_skip() is not None, reason=_why_skip() or "")
def test_soft_limit_raised_for_the_clients(herd_bin, tmp_path, ganesha):
    """300 clients under a soft limit of 256 (hard 4096) against ganesha:
    the soft limit is raised, every client writes its file."""
    job = write_job(tmp_path / "j.ini", {"backend": "libnfs", "target": ganesha.url,
                                         "clients_per_rank": 300, "op_timeout": "120s"},
                    [("w", {"kind": "write", "file_size": "64k", "block_size": "64k"})])
    out = tmp_path / "r.h5"
    args = ns_args(ganesha, "prlimit", "--nofile=256:4096",
                   *mpirun_args(herd_bin, 1, "run", job, "-o", out))
    proc = run_cmd(args, env=ns_env())
    assert proc.returncode == 0, describe(proc)
    with h5py.File(out) as f:
        rows = f["phases/w/ranks"][:]
    assert len(rows) == 300 and int(rows["errors"].sum()) == 0
    assert sorted(rows["client"]) == list(range(300))


def fat_job(path, clients, inflight=32):
    """A job whose clients each hold tens of MiB: 1 MiB WRITEs, a fixed
    window of `inflight`, 64 MiB files."""
    return write_job(path, {"backend": "libnfs", "target": NOWHERE, "clients_per_rank": clients,
                            "block_size": "1M", "nfs_inflight": inflight},
                     [("w", {"kind": "write", "file_size": "64M"})])


def test_memory_counts_every_rank_on_the_host(herd_bin, tmp_path):
    each = per_client(herd_bin, fat_job(tmp_path / "probe.ini", 2))
    half = host_memory() / 2
    clients = int(0.75 * half / each)  # one rank fits, two do not
    if not 2 <= clients <= 4096:
        pytest.skip(f"this host's memory needs {clients} clients a rank")
    job = fat_job(tmp_path / "j.ini", clients)
    line = one_refusal(herd_cmd(herd_bin, "check", job, "-n", "2"))
    assert "x 2 ranks on this host" in line and "more than half" in line, line
    proc = herd_cmd(herd_bin, "check", job, "-n", "2", "--ranks-per-host", "1")
    assert proc.returncode == 0, describe(proc)
    out = tmp_path / "r.h5"
    proc = run_cmd(mpirun_args(herd_bin, 2, "run", job, "-o", out, quiet=True))
    line = one_refusal(proc)
    assert re.search(r"x 2 ranks on host \S+ = .*more than half", line), line
    assert "refused" not in proc.stderr, describe(proc)
    assert not out.exists()


def test_memory_refusal_names_settings_that_fit(herd_bin, tmp_path):
    probe = fat_job(tmp_path / "probe.ini", 2, inflight=16)
    each = per_client(herd_bin, probe)
    at_four = per_client(herd_bin, probe, "--set", "nfs_inflight=4")
    # Clients that fit at a window of 4, not 16, on enough ranks a host to
    # keep clients_per_rank within its bound.
    budget = host_memory() / 2 / ((each + at_four) / 2)
    ranks = max(1, int(budget // 4000) + 1)
    clients = int(budget / ranks)
    job = fat_job(tmp_path / "j.ini", clients, inflight=16)
    where = ["-n", str(ranks)]
    line = one_refusal(herd_cmd(herd_bin, "check", job, *where))
    assert "more than half" in line and "fits with " in line, line
    offers = dict(re.findall(r"(nfs_inflight|block_size|clients_per_rank) = (\w+)", line))
    assert set(offers) == {"nfs_inflight", "block_size", "clients_per_rank"}, line
    assert 4 <= int(offers["nfs_inflight"]) < 16, line
    assert parse_size(offers["block_size"]) < 1 << 20, line
    assert int(offers["clients_per_rank"]) < clients, line
    for key, value in offers.items():
        proc = herd_cmd(herd_bin, "check", job, *where, "--set", f"{key}={value}")
        assert proc.returncode == 0, f"{key} = {value}\n" + describe(proc)
