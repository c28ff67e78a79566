"""Byte-range locks over NFS without a mount: the lock phase
(src/workload/workload_lock.c) with backend = libnfs against the embedded server
(cluster-configs/local/nfs-server.sh), NFSv3 through NLM
(src/backend/libnfs/libnfs_nlm.c) and NFSv4 through LOCK/LOCKU
(src/backend/libnfs/libnfs_lock.c).

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
whose refusals show the server really excluded.
4. A dead client (server lease 10 s): a rank SIGKILLed while the ranks hold
   (3 s each) and wait for an exclusive whole-file lock. Open MPI ends the
   whole job at once, so the other ranks record nothing of their waits:
   the job ends (no rank waits on), the file is partial (exit_code -1)
   with the phases before intact. A new run on the same lock file: NFSv3
   (NLM has no lease) gets lock_timeout ETIMEDOUT (NLM4_DENIED) on every
   rank, no grant, no hang; NFSv4 runs again until the lease frees the
   lock (not before lease - hold after the kill): its first run waits in
   the lock (bounded by lock_timeout) for the lease to free it, and the
   open of the lock file never fails for it.

Needs root, nfs-ganesha with NLM (rpc.statd) and a herd built with libnfs;
skips with a message otherwise. Run:
/usr/bin/python3 -m pytest -q -rsx tests/integration/test_nfs_locks.py
"""

import contextlib
import os
import signal
import sys
import time

import h5py
import numpy as np
import pytest

from conftest import RUN_TIMEOUT, describe, hold_ranks, load_results, rank_pids, write_job
from test_nfs import herd_run_nfs, ns_background
from test_nfs_server import Server, _why_skip, running, stopped_after, wait_until

_WHY = _why_skip()
pytestmark = pytest.mark.skipif(_WHY is not None, reason=_WHY or "")

GRACE_NAMES = {3: "NLM4_DENIED_GRACE_PERIOD", 4: "NFS4ERR_GRACE"}


@pytest.fixture
def nfs_server(tmp_path):
    """Factory: nfs_server(*start options) -> a started Server exporting a
    plain directory. Teardown stops it and checks nothing is left."""
    with stopped_after([]) as made:
        def make(*opts):
            s = Server(tmp_path / f"nfs{len(made)}")
            made.append(s)
            s.start("--fs", "dir", *opts)
            s.ganeshas = [s.procs["ganesha"]]
            return s

        yield make
    for s in made:
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
    # A lock that waited for the missing manager would be cut by
    # lock_timeout: ETIMEDOUT, not the ENOLCK with the reason below.
    job = write_job(tmp_path / "nolm.ini", lock_global(s, 3),
                    [("lk", {"kind": "lock", "count": n, "lock_timeout": "5s"})])
    out = tmp_path / "nolm.h5"
    proc = herd_run_nfs(s, herd_bin, nranks, job, out, timeout=RUN_TIMEOUT)
    assert proc.returncode == 3, describe(proc)
    ph = load_results(out).phases["lk"]
    assert ph.ranks["grants"].tolist() == [0] * nranks
    errs = lock_errors(ph)
    assert sorted(errs) == list(range(nranks)), errs
    for rank, rows in errs.items():
        assert rows == [("lock", "ENOLCK", status, n)], (rank, rows)


def test_nfs_version_wins_over_the_url(nfs_server, herd_bin, tmp_path):
    """nfs_version chooses the protocol of every call, libnfs's own
    included, whatever the URL's version= says. On a server without NLM:
    nfs_version = 4 on a ?version=3 URL locks (NFSv4 locks need no NLM;
    before the fix libnfs mounted NFSv3 and every lock failed), and
    nfs_version = 3 on a ?version=4 URL meets the missing NLM."""
    nranks, n = 2, 5
    s = nfs_server("--no-nlm")
    for key, url in ((4, 3), (3, 4)):
        job = write_job(tmp_path / f"v{key}.ini", lock_global(s, url, nfs_version=key),
                        [("lk", {"kind": "lock", "count": n, "lock_timeout": "5s"})])
        out = tmp_path / f"v{key}.h5"
        proc = herd_run_nfs(s, herd_bin, nranks, job, out, timeout=60)
        ph = load_results(out).phases["lk"]
        if key == 4:
            assert proc.returncode == 0, describe(proc)
            assert ph.ranks["grants"].tolist() == [n] * nranks, ph.error_rows()
        else:
            assert proc.returncode == 3, describe(proc)
            assert ph.ranks["grants"].tolist() == [0] * nranks
            assert {(r["errno_name"], r["status"]) for r in ph.error_rows()} == \
                {("ENOLCK", "NLM_UNREACHABLE")}, ph.error_rows()


# ---------------------------------------------------------------- 3. grace


@pytest.mark.parametrize("version", [3, 4])
def test_grace_after_restart(nfs_server, herd_bin, tmp_path, version):
    """The server restarted into a grace during a lock phase: every rank
    meets the grace (its refusals counted, ENOLCK with the protocol's
    name) and the run exits 3; once the grace is over a lock phase is
    clean. No step waits for a time to pass or races one: the restart
    comes once the ranks lock (a progress line), the grace (20 s) outlasts
    the ranks' reconnection to the restarted server and the phase (30 s)
    outlasts the restart, and the ranks are held (SIGSTOP) between the
    phases until the server's log says the grace is over."""
    nranks, grace = 4, 20
    s = nfs_server()
    job = write_job(tmp_path / "grace.ini", lock_global(s, version),
                    [("before", {"kind": "lock", "duration": 30, "lock_hold": "5ms",
                                 "lock_wait": "nonblocking"}),
                     ("wait", {"kind": "idle", "duration": 5}),
                     ("after", {"kind": "lock", "count": 5, "lock_hold": "1ms"})])
    out = tmp_path / "grace.h5"
    bg = ns_background(s, herd_bin, nranks, job, out)
    pids = {}
    try:
        bg.wait_line(r"^herd: before: ", timeout=RUN_TIMEOUT)  # progress: ranks are locking
        pids = rank_pids(bg.proc.pid)
        proc = s.cmd("restart-ganesha", "--state", s.state, "--grace", str(grace))
        assert proc.returncode == 0, proc.stderr
        s.pid = int(proc.stdout)
        s.refresh()
        s.ganeshas.append(s.procs["ganesha"])
        bg.wait_line(r"^herd: phase before: ", timeout=RUN_TIMEOUT)
        hold_ranks(pids, True)  # in "wait": held there until the grace is over
        try:
            # it ends when ganesha's reaper next runs (every lease/2 s; the
            # lease is the grace here): polled for up to 10 graces
            assert wait_until(lambda: s.status()[1].get("in_grace") == "no", 10 * grace, 0.5), \
                f"the server was still in its {grace} s grace after {10 * grace} s"
        finally:
            hold_ranks(pids, False)
        done, _ = bg.wait(timeout=RUN_TIMEOUT)
    finally:
        hold_ranks(pids, False)
        bg.kill()
    assert done.returncode == 3, describe(done)
    res = load_results(out)
    before, after = res.phases["before"], res.phases["after"]
    errs = lock_errors(before)
    name = GRACE_NAMES[version]
    per_rank = {r: sum(c for op, en, st, c in rows if op == "lock" and st == name
                       and en == "ENOLCK") for r, rows in errs.items()}
    print(f"\nNFSv{version}: grace refusals per rank: {per_rank}; all rows: {errs}")
    assert sorted(per_rank) == list(range(nranks)), errs
    assert all(v > 0 for v in per_rank.values()), errs
    assert before.attrs["status"] == "errors"
    assert int(before.ranks["violations"].sum()) == 0
    assert after.attrs["status"] == "ok", after.error_rows()
    assert after.ranks["grants"].tolist() == [5] * nranks
    assert int(after.ranks["violations"].sum()) == 0


# ---------------------------------------------------------------- 4. dead client

LEASE = 10  # s: the server's NFSv4 lease in the dead-client tests


def kill_ranks(session, pids):
    """SIGKILL whatever of pids is still in mpirun's session (never another
    process that got a recycled PID)."""
    for pid in pids.values():
        with contextlib.suppress(OSError):
            if os.getsid(pid) == session:
                os.kill(pid, signal.SIGKILL)


_UNLINK = """import ctypes, sys
lib = ctypes.CDLL("libnfs.so.13")
lib.nfs_init_context.restype = ctypes.c_void_p
lib.nfs_mount.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
lib.nfs_unlink.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
lib.nfs_get_error.argtypes = [ctypes.c_void_p]
lib.nfs_get_error.restype = ctypes.c_char_p
nfs = lib.nfs_init_context()
if lib.nfs_mount(nfs, b"127.0.0.1", sys.argv[1].encode()) < 0 or \\
        lib.nfs_unlink(nfs, sys.argv[2].encode()) < 0:
    sys.exit(lib.nfs_get_error(nfs).decode())
"""


def nfs_unlink(s, path):
    """Remove export file `path` ("/a/b") over NFSv3 (libnfs through ctypes):
    removed behind ganesha's back on the export directory, its directory
    cache would still show the file for a while."""
    proc = s.exec(sys.executable, "-c", _UNLINK, os.path.realpath(s.state / "export"), path)
    assert proc.returncode == 0, f"unlink {path} over NFS failed:\n{proc.stderr}"


def lock_wait_s(ph):
    """Longest lock call of a phase (latency histogram bucket bound), s."""
    return ph.latency["lock"]["max_ns"] / 1e9 if "lock" in ph.latency else 0.0


@pytest.mark.parametrize("version", [3, 4])
def test_dead_client(nfs_server, herd_bin, tmp_path, version):
    """A rank SIGKILLed while the ranks hold and wait for an exclusive
    whole-file lock. Open MPI ends the whole job when one rank dies, so the
    other ranks cannot record their waits: what is checked is that the job
    ends (no rank waits on), the results file is partial with the write
    phase before intact, and that a NEW run's lock phase on the same file
    meets the dead client's lock: over NFSv4 it waits about the lease and
    then every rank is granted; over NFSv3 (NLM: no lease) the lock stays,
    and the new run's tries end in lock_timeout (ETIMEDOUT) on every rank,
    no grant, no hang."""
    nranks, hold = 4, 3.0
    s = nfs_server("--lease", str(LEASE))
    g = lock_global(s, version, run_id="dead", fileset="data")
    # The phases before the kill: a write and an uncontended lock phase.
    before = [("w", {"kind": "write", "file_size": "64K"})]
    before.append(("warm", {"kind": "lock", "fileset": "locks", "count": 5, "lock_hold": "1ms",
                            "lock_range": "block"}))
    job = write_job(tmp_path / "dead.ini", g, before + [
        ("lk", {"kind": "lock", "fileset": "locks", "count": 20, "lock_hold": f"{hold:g}s",
                "lock_timeout": f"{LEASE + 5}s"}),
    ])
    out = tmp_path / "dead.h5"
    bg = ns_background(s, herd_bin, nranks, job, out)
    pids = {}
    try:
        deadline = time.monotonic() + RUN_TIMEOUT
        while len(pids) < nranks and time.monotonic() < deadline:
            pids = rank_pids(bg.proc.pid)
            time.sleep(0.02)
        assert len(pids) == nranks, f"never saw {nranks} ranks: {pids}"
        # inside the lock phase (its progress line): the holds are back to
        # back (hold s each, a grant at most 10 ms after an unlock), so
        # some rank holds the lock
        bg.wait_line(r"^herd: lk: ", timeout=RUN_TIMEOUT)
        killed, killed_unix = time.monotonic(), time.time()
        os.kill(pids[1], signal.SIGKILL)
        # a hang guard: ranks left waiting would wait lock_timeout per try
        done, ended = bg.wait(timeout=LEASE + 60)
    finally:
        bg.kill()
        kill_ranks(bg.proc.pid, pids)
    took = ended - killed
    print(f"\nNFSv{version}: rank 1 killed; mpirun exit {done.returncode} after {took:.1f} s")
    assert done.returncode not in (0, None), describe(done)
    with h5py.File(out, "r") as f:
        assert f.attrs["status"] in ("partial", b"partial"), dict(f.attrs)
        assert int(f.attrs["exit_code"]) == -1
        names = list(f["phases"].keys())
        assert names[:len(before)] == [n for n, _ in before], names
        assert names[len(before):] in ([], ["lk"]), names
        if "lk" in names:
            assert "status" not in f["phases"]["lk"].attrs
    res = load_results(out)
    for name, _ in before:
        ph = res.phases[name]
        assert ph.attrs["status"] == "ok", (name, ph.error_rows())
        assert sorted(ph.ranks["rank"].tolist()) == list(range(nranks)), name
        assert int(ph.ranks["errors"].sum()) == 0, name
    assert int(res.phases["w"].ranks["bytes"].sum()) == 64 * 1024 * nranks
    assert res.phases["warm"].ranks["grants"].tolist() == [5] * nranks

    # A new run, at once: the same lock file, the same run directory (the
    # killed run left its .herd-run.lock there: removed as the docs say).
    nfs_unlink(s, "/herd-dead/.herd-run.lock")
    timeout = LEASE + 8 if version == 4 else 5
    job2 = write_job(tmp_path / "after.ini", g, [
        ("lk2", {"kind": "lock", "fileset": "locks", "count": 2, "lock_hold": "1ms",
                 "lock_timeout": f"{timeout}s"})])

    def new_run(i):
        out2 = tmp_path / f"after{i}.h5"
        t0 = time.monotonic()
        # a hang guard: each of the 2 tries waits lock_timeout at most
        proc = herd_run_nfs(s, herd_bin, nranks, job2, out2, timeout=120)
        took = time.monotonic() - t0
        assert out2.exists(), describe(proc)
        ph = load_results(out2).phases["lk2"]
        assert int(ph.ranks["violations"].sum()) == 0
        print(f"NFSv{version}: new run {i} at +{t0 - killed:.1f} s took {took:.1f} s, exit "
              f"{proc.returncode}, grants {ph.ranks['grants'].tolist()}, longest lock wait "
              f"{lock_wait_s(ph):.2f} s, errors {lock_errors(ph)}")
        return proc, ph, t0 - killed

    proc, ph, at = new_run(0)
    res0 = load_results(tmp_path / "after0.h5")
    # the lock phase's own start, after the new run's start-up: s after the kill
    lock_at = res0.attrs["epoch_unix"] + ph.attrs["t_start"] - killed_unix
    rows, errs = ph.ranks, lock_errors(ph)
    if version == 3:
        # NLM has no lease: the lock stays, every try ends in lock_timeout.
        assert proc.returncode == 3, describe(proc)
        assert rows["grants"].tolist() == [0] * nranks
        assert sorted(errs) == list(range(nranks)), errs
        for rank, erows in errs.items():
            assert erows == [("lock", "ETIMEDOUT", "NLM4_DENIED", 2)], (rank, erows)
        assert lock_wait_s(ph) >= timeout
        return
    # NFSv4: the dead client's lock should hold the new run up until its
    # lease runs out (counted from its last renewal, before the kill), and
    # then every rank gets every lock.
    # (The open of the lock file must not fail: the rank's lock owner is
    # established by its first lock, which waits like any lock.)
    assert not any(e[0] == "open" for erows in errs.values() for e in erows), errs
    assert proc.returncode == 0, describe(proc)
    assert rows["grants"].tolist() == [2] * nranks, errs
    # it waited for what was left of the dead client's lease (its last
    # renewal at most `hold` s before the kill), counted from the lock
    # phase's start: never less (1 s for the server's whole-second lease clock)
    assert LEASE - lock_at - hold - 1 <= lock_wait_s(ph), (lock_at, lock_wait_s(ph))
    # Until the lease ends a new run meets the lock; after it, none does:
    # new runs, one after the other, until one is clean.
    i = 0
    while proc.returncode != 0 and at < 10 * LEASE:
        i += 1
        proc, ph, at = new_run(i)
    assert proc.returncode == 0, describe(proc)
    assert ph.ranks["grants"].tolist() == [2] * nranks
    print(f"NFSv{version}: the dead client's lock blocked new runs until +{at:.1f} s "
          f"(lease {LEASE} s)")
    if i > 0:
        # the lock outlived its holder by the lease at least
        assert LEASE - hold - 1 <= at, at

