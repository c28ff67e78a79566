"""Byte-range locks over NFS without a mount: the lock phase
(src/workload_lock.c) with backend = libnfs against the embedded server
(cluster-configs/local/nfs-server.sh), NFSv3 through NLM (src/libnfs_nlm.c)
and NFSv4 through LOCK/LOCKU (src/backend_libnfs.c).

1. 8 and 20 ranks, NFSv3 and NFSv4: exclusive whole-file locks (blocking
   and non-blocking), exclusive block ranges (non-blocking, never
   contended), shared whole-file locks (held together), mixed modes on
   overlapping ranges. Blocking: grants = ranks x count; every phase: no
   violation (the token is written and read back over NFS), no error,
   exclusive holds never overlap on the common clock; non-blocking whole
   file: contention counted apart from errors, grants + contended = count.
2. No lock manager (server --no-nlm; statd stopped): every lock attempt
   is ENOLCK with the protocol's reason, on every rank, no hang, exit 3.
3. Grace: the server restarted with a grace period during a lock phase:
   grace refusals (NLM4_DENIED_GRACE_PERIOD / NFS4ERR_GRACE, ENOLCK)
   counted on every rank, exit 3; a lock phase after the grace is clean.

Not here: the fault backend wraps posix only, so lock=noop (a lock that
does not lock, the negative control of test_workloads.py) cannot run over
libnfs; the negative control here is the non-blocking whole-file phase,
whose refusals show the server really excluded. A rank SIGKILLed while
holding a v4 lock is not tested (the lease is 60 s here; see the report).

Needs root, nfs-ganesha with NLM (rpc.statd) and a herd built with libnfs;
skips with a message otherwise. Run:
/usr/bin/python3 -m pytest -q -rsx tests/integration/test_nfs_locks.py
"""

import errno
import time

import h5py
import numpy as np
import pytest

from conftest import describe, load_results, write_job
from test_nfs import Background, herd_run_nfs
from test_nfs_server import Server, _why_skip, running, wait_until

_WHY = _why_skip()
pytestmark = pytest.mark.skipif(_WHY is not None, reason=_WHY or "")

GRACE_NAMES = {3: "NLM4_DENIED_GRACE_PERIOD", 4: "NFS4ERR_GRACE"}


@pytest.fixture
def nfs_server(tmp_path):
    """Factory: nfs_server(*start options) -> a started Server exporting a
    plain directory. Teardown stops it and checks nothing is left."""
    made = []

    def make(*opts):
        s = Server(tmp_path / f"nfs{len(made)}")
        made.append(s)
        s.start("--fs", "dir", *opts)
        s.ganeshas = [s.procs["ganesha"]]
        return s

    try:
        yield make
    finally:
        for s in made:
            s.stop(check=False)
    for s in made:
        s.assert_clean()
        for pid, start in s.ganeshas:
            assert wait_until(lambda: not running(pid, start), 5), f"ganesha {pid} still runs"


def lock_global(s, version, **extra):
    g = {"backend": "libnfs", "target": f"{s.base}?version={version}", "op_timeout": 10,
         "sharing": "shared", "fileset": "locks", "file_size": "64K", "block_size": "4K"}
    g.update(extra)
    return g


def holds_of(path):
    with h5py.File(path, "r") as f:
        return {name: g["holds"][()] for name, g in f["phases"].items() if "holds" in g}


def slack(res):
    return 2 * float(np.max(res.rank_table["clock_error"]))


def assert_no_exclusive_overlap(holds, res, where):
    """No exclusive hold meets another hold of an overlapping range."""
    h = holds[np.argsort(holds["granted"])]
    eps = slack(res)
    for i in range(len(h)):
        for j in range(i + 1, len(h)):
            if h["granted"][j] >= h["released"][i] - eps:
                break
            if not (h["exclusive"][i] or h["exclusive"][j]) or h["rank"][i] == h["rank"][j]:
                continue
            a0, a1 = int(h["start"][i]), int(h["start"][i]) + (int(h["len"][i]) or 1 << 62)
            b0, b1 = int(h["start"][j]), int(h["start"][j]) + (int(h["len"][j]) or 1 << 62)
            assert a1 <= b0 or b1 <= a0, f"{where}: exclusive holds overlap: {h[i]} {h[j]}"


# ---------------------------------------------------------------- 1. modes


@pytest.mark.parametrize("version", [3, 4])
@pytest.mark.parametrize("nranks", [8, 20])
def test_lock_modes(nfs_server, herd_bin, tmp_path, version, nranks):
    s = nfs_server()
    n = 10 if nranks <= 8 else 4
    phases = [
        ("excl", {"kind": "lock", "count": n, "lock_hold": "1ms"}),
        ("excl_nb", {"kind": "lock", "count": n, "lock_wait": "nonblocking",
                     "lock_hold": "2ms"}),
        ("block_nb", {"kind": "lock", "count": n, "lock_range": "block",
                      "lock_wait": "nonblocking"}),
        ("shared", {"kind": "lock", "count": n, "lock_mode": "shared", "lock_hold": "30ms"}),
        ("mixed", {"kind": "lock", "count": n, "lock_mode": "mixed", "lock_range": "overlap",
                   "lock_hold": "1ms"}),
    ]
    job = write_job(tmp_path / "modes.ini", lock_global(s, version), phases)
    out = tmp_path / "modes.h5"
    t0 = time.monotonic()
    proc = herd_run_nfs(s, herd_bin, nranks, job, out)
    took = time.monotonic() - t0
    assert proc.returncode == 0, describe(proc)
    res = load_results(out)
    holds = holds_of(out)
    print(f"\nNFSv{version} {nranks} ranks: {took:.1f} s")
    for name, keys in phases:
        ph = res.phases[name]
        rows = ph.ranks
        assert ph.attrs["status"] == "ok", (name, ph.attrs["status"], ph.error_rows())
        assert rows["errors"].tolist() == [0] * nranks, (name, ph.error_rows())
        assert rows["violations"].tolist() == [0] * nranks, name
        assert len(holds[name]) == int(rows["grants"].sum()), name
        assert_no_exclusive_overlap(holds[name], res, name)
        nb = keys.get("lock_wait") == "nonblocking"
        if nb:
            assert (rows["grants"] + rows["contended"]).tolist() == [n] * nranks, name
        else:
            assert rows["grants"].tolist() == [n] * nranks, name
            assert rows["contended"].tolist() == [0] * nranks, name
        exclusive_grants = int((holds[name]["exclusive"] == 1).sum())
        # 2 reads + 2 writes of 16 bytes per exclusive hold, over NFS
        assert int(rows["bytes"].sum()) == 64 * exclusive_grants, name
        print(f"  {name:9s} grants {int(rows['grants'].sum()):4d} "
              f"contended {int(rows['contended'].sum()):4d} max_holders "
              f"{ph.attrs['max_holders']} {ph.attrs['elapsed']:.2f} s")
    # the negative control: a lock that excludes refuses non-blocking tries
    assert int(res.phases["excl_nb"].ranks["contended"].sum()) > 0
    assert res.phases["excl_nb"].attrs["exclusive_overlap_seconds"] == 0
    # block ranges are disjoint: never refused
    assert res.phases["block_nb"].ranks["contended"].tolist() == [0] * nranks
    # shared holders hold together
    assert res.phases["shared"].attrs["max_holders"] > 1
    assert res.phases["excl"].attrs["max_holders"] == 1


# ---------------------------------------------------------------- 2. no NLM


def lock_errors(ph):
    """{rank: [(op, errno name, status, count)]} of a phase's errors table."""
    out = {}
    for row in ph.error_rows():
        out.setdefault(int(row["rank"]), []).append(
            (row["op"], row["errno_name"], row.get("status", ""), int(row["count"])))
    return out


@pytest.mark.parametrize("how", ["no-nlm", "no-statd"])
def test_no_lock_manager(nfs_server, herd_bin, tmp_path, how):
    nranks, n = 4, 3
    if how == "no-nlm":
        s = nfs_server("--no-nlm")
        status = "NLM_UNREACHABLE"
    else:
        s = nfs_server()
        proc = s.cmd("stop-statd", "--state", s.state)
        assert proc.returncode == 0, proc.stderr
        status = "NLM4_DENIED_NOLOCKS"
    job = write_job(tmp_path / "nolm.ini", lock_global(s, 3),
                    [("lk", {"kind": "lock", "count": n, "lock_timeout": "5s"})])
    out = tmp_path / "nolm.h5"
    t0 = time.monotonic()
    proc = herd_run_nfs(s, herd_bin, nranks, job, out, timeout=60)
    assert time.monotonic() - t0 < 30, "a lock without a lock manager hung"
    assert proc.returncode == 3, describe(proc)
    ph = load_results(out).phases["lk"]
    assert ph.ranks["grants"].tolist() == [0] * nranks
    errs = lock_errors(ph)
    assert sorted(errs) == list(range(nranks)), errs
    for rank, rows in errs.items():
        assert rows == [("lock", "ENOLCK", status, n)], (rank, rows)


# ---------------------------------------------------------------- 3. grace


@pytest.mark.parametrize("version", [3, 4])
def test_grace_after_restart(nfs_server, herd_bin, tmp_path, version):
    nranks, grace = 4, 6
    s = nfs_server()
    job = write_job(tmp_path / "grace.ini", lock_global(s, version),
                    [("before", {"kind": "lock", "duration": 6, "lock_hold": "5ms",
                                 "lock_wait": "nonblocking"}),
                     ("wait", {"kind": "idle", "duration": grace + 2}),
                     ("after", {"kind": "lock", "count": 5, "lock_hold": "1ms"})])
    out = tmp_path / "grace.h5"
    bg = Background(s, herd_bin, nranks, job, out)
    try:
        bg.wait_line(r"phase before|run .*ranks", timeout=60)
        time.sleep(2.0)
        proc = s.cmd("restart-ganesha", "--state", s.state, "--grace", str(grace))
        assert proc.returncode == 0, proc.stderr
        s.pid = int(proc.stdout)
        s.refresh()
        s.ganeshas.append(s.procs["ganesha"])
        done, _ = bg.wait(timeout=120)
    finally:
        bg.kill()
    assert done.returncode == 3, describe(done)
    res = load_results(out)
    before, after = res.phases["before"], res.phases["after"]
    errs = lock_errors(before)
    name = GRACE_NAMES[version]
    per_rank = {r: sum(c for op, en, st, c in rows if op == "lock" and st == name
                       and en == "ENOLCK") for r, rows in errs.items()}
    print(f"\nNFSv{version} grace refusals per rank: {per_rank}; all rows: {errs}")
    assert sorted(per_rank) == list(range(nranks)), errs
    assert all(v > 0 for v in per_rank.values()), errs
    assert before.attrs["status"] == "errors"
    assert int(before.ranks["violations"].sum()) == 0
    assert after.attrs["status"] == "ok", after.error_rows()
    assert after.ranks["grants"].tolist() == [5] * nranks
    assert int(after.ranks["violations"].sum()) == 0
