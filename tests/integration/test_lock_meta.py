"""The lock, storm and meta workloads (src/workload/workload_lock.c, workload_storm.c,
workload_meta.c) run for real under mpirun on tmpfs and a loop-mounted xfs,
and meta and storm also over the embedded NFS server with the libnfs
backend. Every count in results.h5 is checked against what the job asks
for: the ranks table (grants, contended, violations), the per-phase `ops`
table (rank, op, count, seconds), and for lock phases the `holds` table and
the overlap_seconds, exclusive_overlap_seconds and max_holders attributes.

1. Lock, exclusive, whole file, blocking, 8 ranks: every attempt granted,
   no violation, no contention, no overlap in time.
2. lock_timeout: a rank holding past another's timeout makes it count
   ETIMEDOUT (op lock); grants + timeouts == attempts on every rank.
3. Non-blocking: refusals count as contention, not errors.
4. Shared readers hold together; block ranges never contend; mixed modes on
   overlapping ranges never let an exclusive hold meet another.
5. A broken lock (backend = fault, faults = lock=noop) is caught: violations,
   exclusive overlap, status verify (no call failed), exit code 3.
   Waits: 4 ranks queueing for one exclusive lock wait (waited_grants and
   wait_seconds equal what the holds table's asked/granted/released give by
   their definition), one rank never does; contention is n/a for blocking
   locks and the refused share for non-blocking ones.
   A stop during a lock phase of thousands of holds: rank 0's overlap check
   hears it and ends (the figures it could not finish are left out, said
   on stderr), the phase before and the lock phase with its whole holds
   table are in the file, exit 143.
6. Meta on unique and shared trees (file_size 4K and 0), in one phase and
   split over phases as jobs/seed003.ini; a create-only phase is cleaned up.
7. Storm on a missing file (one ENOENT per rank per attempt) and on a
   written shared file.
8. Meta and storm over libnfs; `herd check` refuses lock with libnfs.
Regressions: lock_range = block/overlap with block_size < 16 (the token) is refused
by herd check, and 16-byte ranges run clean;
lock_timeout holds even when the alarm fires before fcntl blocks, and cuts
a fault-backend delay short; the end-of-run cleanup ignores the last
phase's injected faults.

What meta does per rank (src/workload/workload_meta.c), with F = files, D = dirs:
  create: mkdir rundir, fileset dir, tree root, root/a, then a/d0000..:
          4 + D mkdir (EEXIST is fine and still counted); F open (create),
          F x ceil(file_size / block_size) write (none for file_size 0),
          F close
  stat:   F stat
  rename: mkdir root/b and b/d....: 1 + D mkdir; F rename a -> b
  unlink: F unlink
  rmdir:  unique tree: 2 D (both trees' dNNNN) + 3 (a, b, the root);
          shared tree: rank r takes the dNNNN with NNNN % nranks == r in
          both trees, then rank 0 alone a, b and the root (+3)
The ranks table's `ops` is the sum of the rank's rows in the ops table.

Needs root (mounts); the NFS tests also need nfs-ganesha and a herd built
with libnfs and skip with a message otherwise. Run:
/usr/bin/python3 -m pytest -q -rsx tests/integration/test_lock_meta.py
"""

import errno
import math
import re
import shutil
import signal
import sys
import time
import uuid
from pathlib import Path

import h5py
import numpy as np
import pytest

from conftest import (REPO_DIR, assert_mount_gone, describe, herd_background, herd_cmd, herd_run,
                      load_results, mounted_fs, parse_size, signal_ranks, tree, write_job)
from test_core import RPC_OPS

sys.path.insert(0, str(REPO_DIR / "analysis"))
import herd_results  # noqa: E402
from test_nfs import _why_skip_nfs, export_listing, herd_run_nfs, nfs  # noqa: F401 (fixture)

_WHY_NFS = _why_skip_nfs()
needs_nfs = pytest.mark.skipif(_WHY_NFS is not None, reason=_WHY_NFS or "")


# ---------------------------------------------------------------- helpers


class LockResults:
    """load_results plus what conftest's Phase does not read: each phase's
    ops table as {rank: {op: count}} (and seconds), and the holds table."""

    def __init__(self, path):
        self.res = load_results(path)
        self.ops, self.op_seconds, self.holds = {}, {}, {}
        with h5py.File(path, "r") as f:
            for name, g in f["phases"].items():
                ops, secs = {}, {}
                for row in g["ops"][()]:
                    rank, op = int(row["rank"]), row["op"].decode()
                    if op in RPC_OPS:  # libnfs's RPCs, not the workload's calls
                        continue
                    assert op not in ops.get(rank, {}), f"{name}: two ops rows {rank} {op}"
                    ops.setdefault(rank, {})[op] = int(row["count"])
                    secs.setdefault(rank, {})[op] = float(row["seconds"])
                self.ops[name], self.op_seconds[name] = ops, secs
                self.holds[name] = g["holds"][()] if "holds" in g else None

    def phase(self, name):
        return self.res.phases[name]


def run_ok(herd_bin, nranks, job, out, exit_code=0):
    proc = herd_run(herd_bin, nranks, job, out)
    assert proc.returncode == exit_code, describe(proc)
    r = LockResults(out)
    assert r.res.attrs["status"] == "complete"
    assert r.res.attrs["exit_code"] == exit_code
    assert r.res.attrs["nranks"] == nranks
    return proc, r


def assert_left_nothing(target, proc):
    left = tree(target)
    assert left == [], f"herd left files in the target: {left}\n{describe(proc)}"
    for line in proc.stderr.splitlines():
        assert "cannot remove" not in line, describe(proc)


def errors_by_rank(ph):
    """{rank: {(op, errno): count}}"""
    out = {}
    for row in ph.error_rows():
        key = (row["op"], int(row["errno"]))
        assert key not in out.get(int(row["rank"]), {}), f"duplicate errors row {row}"
        out.setdefault(int(row["rank"]), {})[key] = int(row["count"])
        assert row["errno_name"] == errno.errorcode[int(row["errno"])], row
    return out


def check_rank_rows(ph, nranks, where):
    """One row per rank (iterations = 1), in rank order, with the lock columns."""
    rows = ph.ranks
    for col in ("grants", "contended", "violations"):
        assert col in rows.dtype.names, f"{where}: ranks table has no {col}"
    assert rows["rank"].tolist() == list(range(nranks)), where
    assert (rows["iteration"] == 0).all(), where
    return rows


def check_ops_sum(r, name, nranks):
    """The ranks table's ops == the sum of the rank's ops rows; latency counts
    == the ops table's counts summed over ranks; seconds are sane."""
    ph = r.phase(name)
    ops = r.ops[name]
    assert sorted(ops) == list(range(nranks)), f"{name}: ops table ranks {sorted(ops)}"
    for row in ph.ranks:
        rank = int(row["rank"])
        assert int(row["ops"]) == sum(ops[rank].values()), \
            f"{name}: rank {rank} ops {int(row['ops'])} vs ops table {ops[rank]}"
        for op, s in r.op_seconds[name][rank].items():
            assert 0 <= s <= ph.attrs["elapsed"] + 0.5, f"{name}: rank {rank} {op} {s} s"
    totals = {}
    for per in ops.values():
        for op, n in per.items():
            totals[op] = totals.get(op, 0) + n
    got = {op: int(h["count"]) for op, h in ph.latency.items() if op not in RPC_OPS}
    assert got == totals, f"{name}: latency counts {got} vs ops table {totals}"


def clock_slack(r):
    return 2 * float(np.max(r.res.rank_table["clock_error"]))


# ---------------------------------------------------------------- file systems


@pytest.fixture(scope="module", params=["tmpfs", "xfs"])
def fs(request, tmp_path_factory):
    """A file system mounted for the whole module: tmpfs, and xfs on a loop
    device. Unmounted (and checked gone) at the end."""
    work = tmp_path_factory.mktemp(f"fs-{request.param}")
    with mounted_fs(request.param, work) as m:
        yield m
    assert_mount_gone(m)


@pytest.fixture
def target(fs):
    """A fresh empty directory on fs for one test; removed afterwards."""
    t = Path(fs.path) / f"t-{uuid.uuid4().hex[:8]}"
    t.mkdir()
    try:
        yield t
    finally:
        shutil.rmtree(t, ignore_errors=True)


def lock_global(target, **extra):
    g = {"target": target, "sharing": "shared", "fileset": "locks", "file_size": "1M",
         "block_size": "4K"}
    g.update(extra)
    return g


# ---------------------------------------------------------------- 1. exclusive


def test_lock_exclusive_whole(herd_bin, tmp_path, target):
    nranks, n = 8, 10
    job = write_job(tmp_path / "excl.ini", lock_global(target),
                    [("excl", {"kind": "lock", "count": n, "lock_mode": "exclusive",
                               "lock_range": "whole", "lock_wait": "blocking",
                               "lock_hold": "1ms"})])
    proc, r = run_ok(herd_bin, nranks, job, tmp_path / "excl.h5")
    ph = r.phase("excl")
    a = ph.attrs
    assert a["kind"] == "lock" and a["status"] == "ok", a
    assert (a["count"], a["lock_mode"], a["lock_range"], a["lock_wait"]) == \
        (n, "exclusive", "whole", "blocking")
    assert a["lock_hold"] == pytest.approx(0.001)

    rows = check_rank_rows(ph, nranks, "excl")
    assert rows["grants"].tolist() == [n] * nranks
    assert int(rows["grants"].sum()) == nranks * n
    assert rows["violations"].tolist() == [0] * nranks
    assert rows["contended"].tolist() == [0] * nranks
    assert rows["errors"].tolist() == [0] * nranks
    assert (rows["completed"] == 1).all()
    assert (rows["file_rank"] == -1).all()
    assert len(ph.errors) == 0, ph.error_rows()
    # per grant: the range's 16 bytes saved, the token written and read
    # back, the saved bytes restored (the data under a lock is unchanged)
    assert rows["bytes"].tolist() == [4 * 16 * n] * nranks

    # lock + unlock per attempt; two reads and two writes per exclusive hold
    for rank in range(nranks):
        assert r.ops["excl"][rank] == {"lock": 2 * n, "write": 2 * n, "read": 2 * n}, rank
    check_ops_sum(r, "excl", nranks)

    holds = r.holds["excl"]
    assert len(holds) == nranks * n
    assert sorted(holds["rank"].tolist()) == sorted(list(range(nranks)) * n)
    assert (holds["exclusive"] == 1).all()
    assert (holds["start"] == 0).all() and (holds["len"] == 0).all()
    assert (holds["released"] > holds["granted"]).all()
    assert (holds["released"] - holds["granted"] >= 0.001 - 1e-4).all(), "held < lock_hold"
    assert (holds["granted"] >= a["t_start"] - 0.01).all()
    assert (holds["released"] <= a["t_end"]).all()
    # one holder at a time, seen directly on the common clock
    order = np.argsort(holds["granted"])
    g, rel = holds["granted"][order], holds["released"][order]
    gaps = g[1:] - rel[:-1]
    assert (gaps >= -clock_slack(r)).all(), f"holds overlap: worst {gaps.min()} s"
    assert a["exclusive_overlap_seconds"] == 0
    assert a["overlap_seconds"] == 0
    assert a["max_holders"] == 1
    assert_left_nothing(target, proc)


# ---------------------------------------------------------------- 2. timeout


def test_lock_timeout(herd_bin, tmp_path, target):
    nranks, n, timeout = 3, 3, 0.1
    job = write_job(tmp_path / "timeout.ini", lock_global(target),
                    [("timeout", {"kind": "lock", "count": n, "lock_hold": "300ms",
                                  "lock_timeout": "100ms"})])
    proc, r = run_ok(herd_bin, nranks, job, tmp_path / "timeout.h5", exit_code=3)
    ph = r.phase("timeout")
    assert ph.attrs["status"] == "errors"
    assert ph.attrs["lock_timeout"] == pytest.approx(timeout)
    rows = check_rank_rows(ph, nranks, "timeout")
    errs = errors_by_rank(ph)
    for row in ph.error_rows():
        assert (row["op"], row["errno"], row["errno_name"]) == ("lock", 110, "ETIMEDOUT"), row
    timeouts = {rank: errs.get(rank, {}).get(("lock", errno.ETIMEDOUT), 0)
                for rank in range(nranks)}
    assert sum(timeouts.values()) >= nranks - 1, f"too few timeouts: {timeouts}"
    for rank in range(nranks):
        row = rows[rank]
        grants = int(row["grants"])
        assert grants + timeouts[rank] == n, f"rank {rank}: {grants} + {timeouts[rank]} != {n}"
        assert int(row["errors"]) == timeouts[rank], rank
        assert int(row["contended"]) == 0 and int(row["violations"]) == 0, rank
        # lock+unlock per grant, one lock call per timed-out attempt
        want = {"lock": 2 * grants + timeouts[rank]}
        if grants:
            want.update(write=2 * grants, read=2 * grants)
        assert r.ops["timeout"][rank] == want, rank
    check_ops_sum(r, "timeout", nranks)
    assert int(rows["grants"].sum()) >= 1
    assert len(r.holds["timeout"]) == int(rows["grants"].sum())
    assert ph.attrs["max_holders"] == 1 and ph.attrs["exclusive_overlap_seconds"] == 0
    # a timed-out wait took about lock_timeout (at least: the alarm never
    # fires early). Without the timeout every attempt would end in a grant
    # (grants = n, no ETIMEDOUT): the counts above are what shows it works.
    lock = ph.latency["lock"]
    assert int(lock["max_ns"]) >= timeout * 0.9e9
    assert_left_nothing(target, proc)


# ---------------------------------------------------------------- 3. non-blocking


def test_lock_nonblocking(herd_bin, tmp_path, target):
    nranks, n = 4, 20
    job = write_job(tmp_path / "nb.ini", lock_global(target),
                    [("nb", {"kind": "lock", "count": n, "lock_wait": "nonblocking",
                             "lock_hold": "5ms"})])
    proc, r = run_ok(herd_bin, nranks, job, tmp_path / "nb.h5")
    ph = r.phase("nb")
    assert ph.attrs["status"] == "ok"
    assert len(ph.errors) == 0, f"contention in the errors table: {ph.error_rows()}"
    rows = check_rank_rows(ph, nranks, "nb")
    assert int(rows["contended"].sum()) > 0, rows
    assert int(rows["grants"].sum()) > 0, rows
    for rank in range(nranks):
        row = rows[rank]
        g, c = int(row["grants"]), int(row["contended"])
        assert g + c == n, f"rank {rank}: grants {g} + contended {c} != {n}"
        assert int(row["errors"]) == 0 and int(row["violations"]) == 0
        want = {"lock": 2 * g + c}
        if g:
            want.update(write=2 * g, read=2 * g)
        assert r.ops["nb"][rank] == want, rank
    check_ops_sum(r, "nb", nranks)
    assert len(r.holds["nb"]) == int(rows["grants"].sum())
    assert ph.attrs["exclusive_overlap_seconds"] == 0
    assert ph.attrs["max_holders"] == 1
    assert_left_nothing(target, proc)


# ---------------------------------------------------------------- 4. modes and ranges


def test_lock_modes_and_ranges(herd_bin, tmp_path, target):
    nranks, bs = 4, 4096
    phases = [
        ("shared", {"kind": "lock", "count": 5, "lock_mode": "shared", "lock_hold": "20ms"}),
        ("block", {"kind": "lock", "count": 10, "lock_mode": "exclusive", "lock_range": "block",
                   "lock_wait": "nonblocking", "lock_hold": "2ms"}),
        ("mixed", {"kind": "lock", "count": 10, "lock_mode": "mixed", "lock_range": "overlap",
                   "lock_hold": "2ms"}),
    ]
    job = write_job(tmp_path / "modes.ini", lock_global(target), phases)
    proc, r = run_ok(herd_bin, nranks, job, tmp_path / "modes.h5")

    for name, keys in phases:
        ph = r.phase(name)
        n = keys["count"]
        assert ph.attrs["status"] == "ok", name
        assert len(ph.errors) == 0, f"{name}: {ph.error_rows()}"
        rows = check_rank_rows(ph, nranks, name)
        assert rows["grants"].tolist() == [n] * nranks, name
        assert rows["contended"].tolist() == [0] * nranks, name
        assert rows["violations"].tolist() == [0] * nranks, name
        assert ph.attrs["exclusive_overlap_seconds"] == 0, name
        assert len(r.holds[name]) == nranks * n, name
        check_ops_sum(r, name, nranks)

    # shared: readers hold together; no token writes
    ph, holds = r.phase("shared"), r.holds["shared"]
    assert ph.attrs["overlap_seconds"] > 0
    assert ph.attrs["max_holders"] >= 2
    assert (holds["exclusive"] == 0).all()
    for rank in range(nranks):
        assert r.ops["shared"][rank] == {"lock": 10}, rank

    # block: each rank its own block, never refused (non-blocking would say)
    holds = r.holds["block"]
    assert (holds["exclusive"] == 1).all()
    assert (holds["start"] == holds["rank"].astype(np.uint64) * bs).all()
    assert (holds["len"] == bs).all()
    for rank in range(nranks):
        assert r.ops["block"][rank] == {"lock": 20, "write": 20, "read": 20}, rank

    # mixed on overlapping ranges: exclusive when (rank + attempt) is even
    holds = r.holds["mixed"]
    assert (holds["start"] == holds["rank"].astype(np.uint64) * bs).all()
    assert (holds["len"] == 2 * bs).all()
    for rank in range(nranks):
        mine = holds[holds["rank"] == rank]
        mine = mine[np.argsort(mine["granted"])]
        assert mine["exclusive"].tolist() == [int((rank + i) % 2 == 0) for i in range(10)], rank
        assert r.ops["mixed"][rank] == {"lock": 20, "write": 10, "read": 10}, rank
    assert_left_nothing(target, proc)


# ---------------------------------------------------------------- 5. broken lock


def test_lock_noop_is_caught(herd_bin, tmp_path, target):
    nranks, n = 4, 10
    job = write_job(tmp_path / "noop.ini", lock_global(target, backend="fault"),
                    [("noop", {"kind": "lock", "count": n, "faults": "lock=noop",
                               "lock_hold": "2ms"})])
    proc, r = run_ok(herd_bin, nranks, job, tmp_path / "noop.h5", exit_code=3)
    ph = r.phase("noop")
    assert ph.attrs["backend"] == "fault" and ph.attrs["faults"] == "lock=noop"
    assert ph.attrs["status"] == "verify"  # no call failed: exclusion did
    rows = check_rank_rows(ph, nranks, "noop")
    assert rows["grants"].tolist() == [n] * nranks  # every "lock" succeeds
    assert int(rows["violations"].sum()) > 0, rows
    assert ph.attrs["exclusive_overlap_seconds"] > 0
    assert ph.attrs["overlap_seconds"] >= ph.attrs["exclusive_overlap_seconds"]
    assert ph.attrs["max_holders"] >= 2
    assert len(r.holds["noop"]) == nranks * n
    assert_left_nothing(target, proc)


def test_lock_block_smaller_than_token(herd_bin, tmp_path):
    """A lock range of block_size bytes must hold the 16-byte token that
    proves exclusion. herd check refuses block and overlap ranges with
    block_size < 16, naming the key; whole-file locks (the token goes at
    offset 0 of the file) and block_size = 16 are accepted, and 16-byte
    block locks run clean: every token read back is the holder's own."""
    target = tmp_path / "target"
    target.mkdir()
    for bs in (1, 8, 15):
        for lock_range in ("block", "overlap"):
            job = write_job(tmp_path / "small.ini", lock_global(target, block_size=bs),
                            [("b", {"kind": "lock", "count": 10, "lock_range": lock_range})])
            chk = herd_cmd(herd_bin, "check", job, "-n", 4)
            assert chk.returncode == 2, describe(chk)
            assert "block_size" in chk.stderr and "16" in chk.stderr, describe(chk)
    whole = write_job(tmp_path / "whole8.ini", lock_global(target, block_size=8),
                      [("w", {"kind": "lock", "count": 10, "lock_range": "whole"})])
    chk = herd_cmd(herd_bin, "check", whole, "-n", 4)
    assert chk.returncode == 0, describe(chk)

    nranks, n = 4, 10
    job = write_job(tmp_path / "b16.ini", lock_global(target, block_size=16),
                    [("b16", {"kind": "lock", "count": n, "lock_range": "overlap",
                              "lock_hold": "5ms"})])
    chk = herd_cmd(herd_bin, "check", job, "-n", nranks)
    assert chk.returncode == 0, describe(chk)
    proc, r = run_ok(herd_bin, nranks, job, tmp_path / "b16.h5")
    ph = r.phase("b16")
    assert ph.attrs["block_size"] == 16 and ph.attrs["lock_range"] == "overlap"
    rows = check_rank_rows(ph, nranks, "b16")
    assert rows["grants"].tolist() == [n] * nranks, rows
    assert rows["violations"].tolist() == [0] * nranks, describe(proc)
    assert ph.attrs["exclusive_overlap_seconds"] == 0  # the locks did hold
    # 16-byte ranges of two blocks overlap their neighbours': the holds show it
    holds = r.holds["b16"]
    assert len(holds) == nranks * n
    assert set(holds["len"].tolist()) == {32}, holds["len"]
    assert_left_nothing(target, proc)


def test_lock_timeout_tiny(herd_bin, tmp_path):
    nranks, n = 3, 4
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "tiny.ini", lock_global(target),
                    [("tiny", {"kind": "lock", "count": n, "lock_hold": "100ms",
                               "lock_timeout": "1us"})])
    proc = herd_run(herd_bin, nranks, job, tmp_path / "tiny.h5")
    r = LockResults(tmp_path / "tiny.h5")
    ph = r.phase("tiny")
    errs = errors_by_rank(ph)
    timeouts = {rank: errs.get(rank, {}).get(("lock", errno.ETIMEDOUT), 0)
                for rank in range(nranks)}
    # While one rank holds for 100 ms the others' 1 us waits must give up:
    # waits that ignored the timeout would all end in grants (no ETIMEDOUT).
    assert sum(timeouts.values()) >= nranks - 1, f"timeouts {timeouts}\n{describe(proc)}"
    for rank in range(nranks):
        assert int(ph.ranks["grants"][rank]) + timeouts[rank] == n, rank
    assert proc.returncode == 3, describe(proc)


def test_lock_timeout_cuts_fault_delay(herd_bin, tmp_path):
    n = 2
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "slow.ini", lock_global(target, backend="fault"),
                    [("slow", {"kind": "lock", "count": n, "lock_hold": "1ms",
                               "lock_timeout": "100ms", "faults": "lock=delay:300ms"})])
    proc = herd_run(herd_bin, 1, job, tmp_path / "slow.h5")
    r = LockResults(tmp_path / "slow.h5")
    ph = r.phase("slow")
    assert errors_by_rank(ph) == {0: {("lock", errno.ETIMEDOUT): n}}, describe(proc)
    assert ph.ranks["grants"].tolist() == [0]
    assert proc.returncode == 3, describe(proc)


# ---------------------------------------------------------------- 6. meta


def meta_expect(k, rank, nranks, steps):
    """{op: count} one rank issues for the steps (see the module docstring)."""
    F, D = k["files"], k["dirs"]
    fsize, bsize = parse_size(k["file_size"]), parse_size(k["block_size"])
    shared = k.get("sharing") == "shared"
    ops = {}

    def add(op, n):
        if n:
            ops[op] = ops.get(op, 0) + n

    if "create" in steps:
        add("mkdir", 4 + D)
        add("open", F)
        add("write", F * math.ceil(fsize / bsize))
        add("close", F)
    if "stat" in steps:
        add("stat", F)
    if "rename" in steps:
        add("mkdir", 1 + D)
        add("rename", F)
    if "unlink" in steps:
        add("unlink", F)
    if "rmdir" in steps:
        mine = sum(1 for d in range(D) if d % nranks == rank) if shared else D
        add("rmdir", 2 * mine + (3 if (rank == 0 or not shared) else 0))
    return ops


def check_meta_phase(r, name, k, nranks, steps, backend="posix"):
    ph = r.phase(name)
    where = f"phase {name}"
    assert ph.attrs["kind"] == "meta", where
    assert ph.attrs["backend"] == backend, where
    assert ph.attrs["status"] == "ok", f"{where}: {ph.error_rows()}"
    assert len(ph.errors) == 0, f"{where}: {ph.error_rows()}"
    assert ph.attrs["files"] == k["files"] and ph.attrs["dirs"] == k["dirs"], where
    rows = check_rank_rows(ph, nranks, where)
    assert (rows["errors"] == 0).all() and (rows["completed"] == 1).all(), where
    shared = k.get("sharing") == "shared"
    assert rows["file_rank"].tolist() == ([-1] * nranks if shared else list(range(nranks))), where
    nbytes = k["files"] * parse_size(k["file_size"]) if "create" in steps else 0
    assert rows["bytes"].tolist() == [nbytes] * nranks, where
    for rank in range(nranks):
        want = meta_expect(k, rank, nranks, steps)
        assert r.ops[name].get(rank, {}) == want, f"{where}: rank {rank}"
    check_ops_sum(r, name, nranks)
    assert "holds" not in ph.attrs and r.holds[name] is None, where


META = {"dirs": 5, "files": 50, "block_size": "4K", "fsync": "no"}
FULL = ("create", "stat", "rename", "unlink", "rmdir")


def meta_full_phases():
    out = []
    for sharing in ("unique", "shared"):
        for fsize in ("4K", "0"):
            name = f"{sharing}-{fsize}"
            out.append((name, {"kind": "meta", "sharing": sharing, "file_size": fsize,
                               "fileset": f"m-{name}"}))
    return out


def test_meta_full(herd_bin, tmp_path, target):
    nranks = 4
    phases = meta_full_phases()
    job = write_job(tmp_path / "meta.ini", {"target": target, **META}, phases)
    proc, r = run_ok(herd_bin, nranks, job, tmp_path / "meta.h5")
    for name, keys in phases:
        check_meta_phase(r, name, {**META, **keys}, nranks, FULL)
    assert_left_nothing(target, proc)


SPLIT = [("create", "create"), ("stat", "stat"), ("mv", "rename"), ("rm", "unlink,rmdir")]


def split_phases(sharing):
    return [(f"{sharing}-{name}", {"kind": "meta", "meta_ops": ops, "sharing": sharing,
                                   "fileset": f"split-{sharing}", "file_size": "4K"})
            for name, ops in SPLIT]


def test_meta_split(herd_bin, tmp_path, target):
    """seed003's phases (create / stat / rename / unlink,rmdir): the same
    counts as one full phase, and nothing left."""
    nranks = 4
    phases = split_phases("unique") + split_phases("shared")
    job = write_job(tmp_path / "split.ini", {"target": target, **META}, phases)
    proc, r = run_ok(herd_bin, nranks, job, tmp_path / "split.h5")
    for sharing in ("unique", "shared"):
        total = {}
        for name, keys in split_phases(sharing):
            steps = keys["meta_ops"].split(",")
            k = {**META, **keys}
            check_meta_phase(r, name, k, nranks, steps)
            for rank, per in r.ops[name].items():
                for op, n in per.items():
                    total.setdefault(rank, {}).setdefault(op, 0)
                    total[rank][op] += n
        k = {**META, "sharing": sharing, "file_size": "4K"}
        for rank in range(nranks):
            assert total[rank] == meta_expect(k, rank, nranks, FULL), f"{sharing} rank {rank}"
    assert_left_nothing(target, proc)


def test_meta_create_only_cleaned_up(herd_bin, tmp_path, target):
    """A phase with only meta_ops = create: keep = no removes the trees at
    the end; keep = yes leaves exactly the files and directories made."""
    nranks = 4
    phases = [("c-unique", {"kind": "meta", "meta_ops": "create", "fileset": "cu",
                            "file_size": "4K"}),
              ("c-shared", {"kind": "meta", "meta_ops": "create", "fileset": "cs",
                            "sharing": "shared", "file_size": "4K"})]
    job = write_job(tmp_path / "create.ini", {"target": target, **META}, phases)
    proc, r = run_ok(herd_bin, nranks, job, tmp_path / "create.h5")
    for name, keys in phases:
        check_meta_phase(r, name, {**META, **keys}, nranks, ("create",))
    assert_left_nothing(target, proc)

    # The same with keep = yes: the trees are there (so the check above means
    # something).
    job = write_job(tmp_path / "keep.ini", {"target": target, "keep": "yes", **META}, phases)
    proc, r = run_ok(herd_bin, nranks, job, tmp_path / "keep.h5")
    run_dir = target / f"herd-{r.res.attrs['run_id']}"
    files = sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*") if p.is_file())
    want = [f"cu/r{rank:06d}/a/d{i % 5:04d}/f{i:06d}" for rank in range(nranks)
            for i in range(50)]
    want += [f"cs/shared/a/d{i % 5:04d}/r{rank:06d}-f{i:06d}" for rank in range(nranks)
             for i in range(50)]
    assert files == sorted(want)
    assert all((run_dir / f).stat().st_size == 4096 for f in files)


def test_meta_cleanup_ignores_phase_faults(herd_bin, tmp_path):
    nranks, files = 2, 4
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "faulty.ini",
                    {"target": target, "backend": "fault", "dirs": 1, "files": files,
                     "file_size": "4K", "block_size": "4K", "fsync": "no"},
                    [("meta", {"kind": "meta", "faults": "unlink=EIO"})])
    proc = herd_run(herd_bin, nranks, job, tmp_path / "faulty.h5")
    assert proc.returncode == 3, describe(proc)
    r = LockResults(tmp_path / "faulty.h5")
    errs = errors_by_rank(r.phase("meta"))
    for rank in range(nranks):
        assert errs[rank][("unlink", errno.EIO)] == files, errs
    assert tree(target) == [], f"herd left files in the target: {tree(target)}"


# ---------------------------------------------------------------- 7. storm


def waits_by_definition(holds, slack):
    """(waited grants, wait seconds) from the holds table
    (docs/results-format.md): a grant waited when another rank's conflicting
    hold, granted before it, was released more than slack after it asked."""
    waited = 0
    for g in holds:
        for o in holds:
            if o["rank"] == g["rank"] or not (o["exclusive"] or g["exclusive"]):
                continue
            if o["granted"] < g["granted"] and o["released"] > g["asked"] + slack:
                waited += 1
                break
    return waited, float((holds["granted"] - holds["asked"]).sum())


def test_blocking_waits_are_reported(herd_bin, tmp_path, target):
    job = write_job(tmp_path / "wait.ini", lock_global(target),
                    [("q", {"kind": "lock", "count": 5, "lock_hold": "20ms"}),
                     ("nb", {"kind": "lock", "count": 20, "lock_hold": "5ms",
                             "lock_wait": "nonblocking"})])
    for nranks in (4, 1):
        out = tmp_path / f"wait{nranks}.h5"
        proc, r = run_ok(herd_bin, nranks, job, out)
        a = r.phase("q").attrs
        holds = r.holds["q"]
        assert len(holds) == 5 * nranks and (holds["asked"] <= holds["granted"]).all()
        waited, seconds = waits_by_definition(holds, 0)
        assert int(a["waited_grants"]) <= waited  # herd also discounts the clock error
        assert float(a["wait_seconds"]) == pytest.approx(seconds, rel=1e-9, abs=1e-12)
        second = [l for l in proc.stdout.splitlines() if "excl whole wait" in l][0]
        assert f"waited {int(a['waited_grants'])} of {5 * nranks} grants" in second, second
        with herd_results.load(out) as run:
            row = run.phases.set_index("phase")
            assert math.isnan(row.loc["q", "contention"])  # blocking: n/a
            assert row.loc["nb", "contention"] == pytest.approx(
                row.loc["nb", "contended"] / (row.loc["nb", "contended"] + row.loc["nb", "grants"]))
            assert int(row.loc["q", "waited_grants"]) == int(a["waited_grants"])
        if nranks == 1:  # no one to wait for
            assert waited == 0 and int(a["waited_grants"]) == 0
        else:  # 4 ranks, one lock, 20 ms holds: all but the first rank wait
            assert int(a["waited_grants"]) >= nranks - 1, (a["waited_grants"], waited)
            assert float(a["wait_seconds"]) > 0.02 * 5, a["wait_seconds"]
            assert waited >= int(a["waited_grants"])


def test_stop_cuts_the_overlap_check_short(herd_bin, tmp_path):
    """SIGTERM to both ranks while they lock their blocks at 2500/s each:
    the lock phase ends interrupted with thousands of holds, and rank 0's
    check of them hears the same stop (it polls every 1024 steps) and ends
    at once instead of running on while a launcher's SIGKILL comes. The
    phase before is whole, the lock phase is in the file with every hold,
    wait_seconds (summed before the check) and no figure of the check cut
    short; the run ends as a stopped run does."""
    nranks, rate = 2, 2500
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "stop.ini", lock_global(target, sharing="unique", fileset="w"),
                    [("w", {"kind": "write", "file_size": "64K", "block_size": "16K"}),
                     ("lk", {"kind": "lock", "sharing": "shared", "fileset": "locks",
                             "lock_range": "block", "lock_hold": "0", "rate": rate,
                             "duration": "300s"})])
    out = tmp_path / "stop.h5"

    def enough(line):  # a progress line of lk past 30,000 calls: 5 or 6 calls a hold
        m = re.search(r"lk: 2 ranks \((\d+) calls", line)
        return m is not None and int(m.group(1)) >= 30000

    with herd_background(herd_bin, nranks, "run", job, "-o", out) as run:
        assert run.err.wait_for(enough, timeout=240), run.err.rest(5)
        sent = time.monotonic()
        signal_ranks(run.pid, signal.SIGTERM)
        proc, ended = run.wait(timeout=120)
    print(f"SIGTERM to the end of mpirun: {ended - sent:.3f} s")
    assert proc.returncode == 143, describe(proc)
    r = LockResults(out)
    assert r.res.attrs["status"] == "interrupted"
    w = r.phase("w")
    assert w.attrs["status"] == "ok" and (w.ranks["bytes"] == 64 << 10).all()
    lk = r.phase("lk")
    holds = r.holds["lk"]
    assert lk.attrs["status"] == "interrupted"
    assert len(holds) >= 2048, f"only {len(holds)} holds: too few for the check to poll"
    assert len(holds) == int(lk.ranks["grants"].sum())
    assert float(lk.attrs["wait_seconds"]) == pytest.approx(
        float((holds["granted"] - holds["asked"]).sum()), rel=1e-9, abs=1e-12)
    for cut in ("overlap_seconds", "exclusive_overlap_seconds", "max_holders", "waited_grants"):
        assert cut not in lk.attrs, (cut, describe(proc))
    assert "phase lk: the holds' overlap figures are left out (a stop came while rank 0 " \
           "checked them)" in proc.stderr, describe(proc)
    assert "waited - of" in proc.stdout, describe(proc)


STORM = {"sharing": "shared", "fileset": "storm", "file_size": "64K", "block_size": "16K"}


def check_storm_missing(r, name, nranks, n):
    ph = r.phase(name)
    assert ph.attrs["status"] == "errors"
    errs = errors_by_rank(ph)
    assert errs == {rank: {("stat", errno.ENOENT): n} for rank in range(nranks)}, \
        ph.error_rows()
    rows = check_rank_rows(ph, nranks, name)
    assert rows["errors"].tolist() == [n] * nranks
    assert rows["bytes"].tolist() == [0] * nranks
    for rank in range(nranks):
        assert r.ops[name][rank] == {"stat": n}, rank
    check_ops_sum(r, name, nranks)


def check_storm_ok(r, name, nranks, n, nbytes, backend="posix"):
    ph = r.phase(name)
    assert ph.attrs["backend"] == backend
    assert ph.attrs["status"] == "ok", ph.error_rows()
    assert len(ph.errors) == 0, ph.error_rows()
    rows = check_rank_rows(ph, nranks, name)
    assert rows["errors"].tolist() == [0] * nranks
    assert (rows["file_rank"] == -1).all()
    assert rows["bytes"].tolist() == [n * nbytes] * nranks
    for rank in range(nranks):
        assert r.ops[name][rank] == {"stat": n, "open": n, "read": n, "close": n}, rank
    check_ops_sum(r, name, nranks)


def test_storm_missing_file(herd_bin, tmp_path, target):
    nranks, n = 4, 7
    job = write_job(tmp_path / "missing.ini", {"target": target, **STORM},
                    [("missing", {"kind": "storm", "count": n})])
    proc, r = run_ok(herd_bin, nranks, job, tmp_path / "missing.h5", exit_code=3)
    check_storm_missing(r, "missing", nranks, n)
    assert_left_nothing(target, proc)


def test_storm_shared_file(herd_bin, tmp_path, target):
    nranks, n = 4, 20
    job = write_job(tmp_path / "storm.ini", {"target": target, **STORM},
                    [("make", {"kind": "write"}), ("storm", {"kind": "storm", "count": n})])
    proc, r = run_ok(herd_bin, nranks, job, tmp_path / "storm.h5")
    assert r.phase("make").attrs["status"] == "ok"
    check_storm_ok(r, "storm", nranks, n, 16 * 1024)
    assert_left_nothing(target, proc)


# ---------------------------------------------------------------- 8. NFS (libnfs)


@needs_nfs
def test_meta_over_nfs(nfs, herd_bin, tmp_path):
    nranks = 4
    phases = meta_full_phases() + split_phases("unique") + split_phases("shared")
    job = write_job(tmp_path / "meta-nfs.ini",
                    {"backend": "libnfs", "target": nfs.url, "op_timeout": 10, **META}, phases)
    out = tmp_path / "meta-nfs.h5"
    proc = herd_run_nfs(nfs, herd_bin, nranks, job, out)
    assert proc.returncode == 0, describe(proc)
    r = LockResults(out)
    assert r.res.attrs["exit_code"] == 0 and r.res.attrs["status"] == "complete"
    for name, keys in meta_full_phases():
        check_meta_phase(r, name, {**META, **keys}, nranks, FULL, backend="libnfs")
    for sharing in ("unique", "shared"):
        for name, keys in split_phases(sharing):
            check_meta_phase(r, name, {**META, **keys}, nranks, keys["meta_ops"].split(","),
                             backend="libnfs")
    left = export_listing(nfs)
    assert left == [], f"herd left files on the export: {left}"
    for line in proc.stderr.splitlines():
        assert "cannot remove" not in line, describe(proc)


@needs_nfs
def test_storm_over_nfs(nfs, herd_bin, tmp_path):
    nranks, n = 4, 10
    job = write_job(tmp_path / "storm-nfs.ini",
                    {"backend": "libnfs", "target": nfs.url, "op_timeout": 10, **STORM},
                    [("missing", {"kind": "storm", "count": 5, "fileset": "nothere"}),
                     ("make", {"kind": "write"}),
                     ("storm", {"kind": "storm", "count": n})])
    out = tmp_path / "storm-nfs.h5"
    proc = herd_run_nfs(nfs, herd_bin, nranks, job, out)
    assert proc.returncode == 3, describe(proc)
    r = LockResults(out)
    assert r.res.attrs["exit_code"] == 3 and r.res.attrs["status"] == "complete"
    check_storm_missing(r, "missing", nranks, 5)
    assert r.phase("make").attrs["status"] == "ok"
    check_storm_ok(r, "storm", nranks, n, 16 * 1024, backend="libnfs")
    left = export_listing(nfs)
    assert left == [], f"herd left files on the export: {left}"


def test_check_lock_over_libnfs(herd_bin, tmp_path):
    """Locks go over libnfs now (NLM for v3, LOCK/LOCKU for v4;
    test_nfs_locks.py runs them): herd check accepts a lock phase, and
    names the one setting NFSv4 through libnfs cannot honour (a hold
    longer than the lease libnfs does not renew)."""
    g = {"backend": "libnfs", "sharing": "shared", "file_size": "1M", "block_size": "4K"}
    for url in ("nfs://127.0.0.1/export", "nfs://127.0.0.1/export?version=4"):
        job = write_job(tmp_path / "lock-nfs.ini", {**g, "target": url},
                        [("make", {"kind": "write"}), ("lock", {"kind": "lock", "count": 3})])
        proc = herd_cmd(herd_bin, "check", job)
        assert proc.returncode == 0, describe(proc)
    job = write_job(tmp_path / "long-hold.ini",
                    {**g, "target": "nfs://127.0.0.1/export?version=4"},
                    [("lock", {"kind": "lock", "count": 1, "lock_hold": "40s"})])
    proc = herd_cmd(herd_bin, "check", job)
    assert proc.returncode == 2, describe(proc)
    assert "lock_hold" in proc.stderr, describe(proc)
