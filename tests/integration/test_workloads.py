"""The workload layer's promises, through herd under mpirun:

1. Every failed call is counted once in the row (ranks table `errors`) and
   once in the errors table, for every phase kind, also for errors outside
   any iteration (prepare, finish: iteration 0's row), with faults injected
   by the fault backend.
2. A lock phase leaves the bytes it locks as they were: write a shared file,
   lock it (exclusive, whole/block/overlap, several ranks), read it with
   verify = yes, md5: no verify failure, exit 0. A broken lock (fault
   backend, lock=noop) still shows violations. A fresh lock file keeps the
   token (nothing was there to restore).
3. Loops stop: SIGTERM during an md5 phase's prepare (the expected digest
   of a 1 TiB region) ends the run, with the phase not run; a meta phase
   with 10^7 files and a deadline ends.
4. The clean-up (keep = no) removes only what this run created: files and
   trees an earlier run kept (same run_id) stay, so does a stranger's file.

Run: HERD_BIN=build/herd /usr/bin/python3 -m pytest -q tests/integration/test_workloads.py
"""

import os
import re
import shutil
import signal
import time
from collections import defaultdict
from pathlib import Path

import h5py
import pytest

from conftest import (RUN_TIMEOUT, describe, herd_background, herd_run, load_results, rank_pids,
                      run_cmd, signal_ranks, tree, write_job)


def errors_per_rank(ph):
    """({rank: sum of the errors table's counts}, {rank: sum of rows' errors})"""
    table, rows = defaultdict(int), defaultdict(int)
    for e in ph.error_rows():
        table[int(e["rank"])] += int(e["count"])
    for row in ph.ranks:
        rows[int(row["rank"])] += int(row["errors"])
    return dict(table), dict(rows)


# ------------------------------------------------------------ 1. error accounting


# Phase name -> (keys, whether errors are certain). Probabilities are high
# enough that each faulty phase fails somewhere on some rank.
ACCOUNTING_PHASES = [
    ("w_mkdir", {"kind": "write", "fileset": "mk", "faults": "mkdir=EIO"}, True),
    ("w", {"kind": "write", "fileset": "u", "iterations": 3,
           "faults": "write=EIO@0.1,fsync=EIO@0.3,close=EIO@0.3"}, True),
    ("w_clean", {"kind": "write", "fileset": "c"}, False),
    ("r", {"kind": "read", "fileset": "u", "verify": "yes", "iterations": 3,
           "faults": "read=EIO@0.1,open=EIO@0.3"}, True),
    ("m", {"kind": "md5", "fileset": "c", "iterations": 2, "faults": "read=EIO@0.2"}, True),
    ("w_sh", {"kind": "write", "fileset": "sh", "sharing": "shared"}, False),
    ("storm", {"kind": "storm", "fileset": "sh", "sharing": "shared", "count": 30,
               "faults": "stat=EIO@0.2,open=EIO@0.2,read=EIO@0.2,close=EIO@0.2"}, True),
    ("lock", {"kind": "lock", "fileset": "lk", "sharing": "shared", "count": 30,
              "lock_hold": "0", "faults": "lock=EIO@0.2,read=EIO@0.1,write=EIO@0.1"}, True),
    # prepare's open fails: iteration 0's row carries it
    ("lock_open", {"kind": "lock", "fileset": "lo", "sharing": "shared", "count": 5,
                   "faults": "open=EIO"}, True),
    # finish's close fails: iteration 0's row carries it
    ("lock_close", {"kind": "lock", "fileset": "lc", "sharing": "shared", "count": 5,
                    "iterations": 2, "faults": "close=EIO"}, True),
    ("meta", {"kind": "meta", "fileset": "mt", "files": 40, "dirs": 4, "file_size": "128K",
              "faults": "mkdir=EIO@0.1,open=EIO@0.1,write=EIO@0.1,close=EIO@0.1,"
                        "stat=EIO@0.2,rename=EIO@0.1,unlink=EIO@0.1,rmdir=EIO@0.3"}, True),
    ("idle", {"kind": "idle", "duration": "100ms"}, False),
]


def test_error_rows_match_error_table(herd_bin, tmp_path):
    nranks = 3
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "acct.ini",
                    {"target": target, "backend": "fault", "file_size": "128K",
                     "block_size": "16K", "fsync": "yes"},
                    [(name, keys) for name, keys, _ in ACCOUNTING_PHASES])
    out = tmp_path / "acct.h5"
    proc = herd_run(herd_bin, nranks, job, out)
    assert proc.returncode == 3, describe(proc)
    res = load_results(out)
    assert res.attrs["status"] == "complete"
    for name, keys, faulty in ACCOUNTING_PHASES:
        ph = res.phases[name]
        table, rows = errors_per_rank(ph)
        for rank in range(nranks):
            assert table.get(rank, 0) == rows.get(rank, 0), \
                f"{name} rank {rank}: table {table} rows {rows}\n{ph.error_rows()}\n{ph.ranks}"
        total = sum(rows.values())
        if faulty:
            assert total > 0, f"{name}: the faults {keys['faults']} caused no error"
        else:
            assert total == 0, f"{name}: {ph.error_rows()}"
    # errors outside any iteration land in iteration 0's row
    for name in ("lock_open", "lock_close"):
        rows = res.phases[name].ranks
        for rank in range(nranks):
            mine = rows[rows["rank"] == rank]
            first = mine[mine["iteration"] == 0]
            assert int(first["errors"][0]) >= 1, f"{name}: {rows}"
    rows = res.phases["lock_close"].ranks
    assert (rows[rows["iteration"] == 1]["errors"] == 0).all(), rows
    errs = res.phases["lock_close"].error_rows()
    assert {(int(e["rank"]), e["op"], int(e["count"])) for e in errs} == \
        {(rank, "close", 1) for rank in range(nranks)}, errs


# ------------------------------------------------------------ 2. locks keep data


def test_lock_leaves_data_intact(herd_bin, tmp_path):
    """write shared -> lock (several ways) -> read verify -> md5: exit 0."""
    nranks, count = 4, 15
    target = tmp_path / "target"
    target.mkdir()
    common = {"target": target, "sharing": "shared", "fileset": "data", "file_size": "256K",
              "block_size": "16K"}
    locks = [
        ("l_whole", {"kind": "lock", "lock_range": "whole", "count": count}),
        ("l_block", {"kind": "lock", "lock_range": "block", "count": count}),
        ("l_overlap", {"kind": "lock", "lock_range": "overlap", "lock_mode": "mixed",
                       "count": count}),
        ("l_nonblock", {"kind": "lock", "lock_range": "whole", "lock_wait": "nonblocking",
                        "count": count}),
    ]
    phases = [("w", {"kind": "write"})] + locks + [
        ("r", {"kind": "read", "verify": "yes"}),
        ("m", {"kind": "md5"}),
    ]
    job = write_job(tmp_path / "keep.ini", common, phases)
    out = tmp_path / "keep.h5"
    proc = herd_run(herd_bin, nranks, job, out)
    assert proc.returncode == 0, describe(proc)
    res = load_results(out)
    for name, _ in phases:
        rows = res.phases[name].ranks
        assert (rows["errors"] == 0).all(), f"{name}: {rows}"
        assert (rows["verify_failures"] == 0).all(), f"{name}: {rows}"
        assert (rows["violations"] == 0).all(), f"{name}: {rows}"
    for name, keys in locks:
        rows = res.phases[name].ranks
        if keys.get("lock_wait") != "nonblocking":
            assert rows["grants"].tolist() == [count] * nranks, f"{name}: {rows}"
        assert int(rows["grants"].sum()) > 0, name
    assert (res.phases["r"].ranks["bytes"] == 256 << 10).all()


def test_lock_noop_still_violates(herd_bin, tmp_path):
    """A lock that does not lock: the token check sees other ranks' tokens."""
    nranks, count = 4, 20
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "noop.ini",
                    {"target": target, "backend": "fault", "sharing": "shared",
                     "fileset": "data", "file_size": "64K", "block_size": "16K"},
                    [("w", {"kind": "write"}),
                     ("noop", {"kind": "lock", "count": count, "lock_hold": "2ms",
                               "faults": "lock=noop"})])
    out = tmp_path / "noop.h5"
    proc = herd_run(herd_bin, nranks, job, out)
    assert proc.returncode == 3, describe(proc)
    rows = load_results(out).phases["noop"].ranks
    assert rows["grants"].tolist() == [count] * nranks
    assert int(rows["violations"].sum()) > 0, rows


def test_fresh_lock_file_is_restored_too(herd_bin, tmp_path):
    """A fresh lock file gets zeros under the token range in prepare, so
    every hold saves and restores 16 bytes: afterwards the file is one
    token range of zeros, whoever held last."""
    nranks, count = 2, 5
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "fresh.ini",
                    {"target": target, "run_id": "fresh", "keep": "yes", "sharing": "shared",
                     "fileset": "lk", "file_size": "4K", "block_size": "4K"},
                    [("l", {"kind": "lock", "count": count})])
    proc = herd_run(herd_bin, nranks, job, tmp_path / "fresh.h5")
    assert proc.returncode == 0, describe(proc)
    data = (target / "herd-fresh" / "lk" / "shared.dat").read_bytes()
    assert data == bytes(16), data
    ops = load_results(tmp_path / "fresh.h5").phases["l"].ranks
    assert ops["bytes"].tolist() == [4 * 16 * count] * nranks


# ------------------------------------------------------------ 3. loops stop


def busy_seconds(pid):
    """CPU seconds (user + system) process pid has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_md5_prepare_stops_on_sigterm(herd_bin, tmp_path):
    """The expected digest of 1 TiB takes many minutes: SIGTERM while the
    ranks compute it ends the run (the run's wait is a hang guard far
    shorter than the digest), with the phase never run."""
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "big.ini",
                    {"target": target, "file_size": "1T", "block_size": "1M"},
                    [("m", {"kind": "md5"})])
    out = tmp_path / "big.h5"
    with herd_background(herd_bin, 2, "run", job, "-o", out) as run:
        run.wait_line("^herd: run ", RUN_TIMEOUT)
        ranks = rank_pids(run.pid, 2)
        # Into the digest: after the header, every rank has computed for a
        # CPU second (start-up costs far less).
        used = {r: busy_seconds(pid) for r, pid in ranks.items()}
        deadline = time.monotonic() + RUN_TIMEOUT
        while any(busy_seconds(pid) < used[r] + 1 for r, pid in ranks.items()):
            assert time.monotonic() < deadline and run.proc.poll() is None, \
                f"the ranks never computed the digest:\n{run.err.rest(5)}"
            time.sleep(0.1)
        signal_ranks(run.pid, signal.SIGTERM)
        done, _ = run.wait()
    assert done.returncode != 0, done.stderr
    res = load_results(out)
    assert res.attrs["status"] == "interrupted" and res.attrs["exit_code"] == 143, done.stderr
    ph = res.phases["m"]
    assert ph.attrs["status"] == "interrupted", done.stderr
    assert (ph.ranks["bytes"] == 0).all() and (ph.ranks["ops"] == 0).all(), ph.ranks


def test_meta_huge_files_obeys_deadline(herd_bin, tmp_path):
    """files = 10^7 (the most a job may ask): every step and the clean-up
    stop at their deadline instead of visiting every name (the run's
    timeout is a hang guard)."""
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "huge.ini",
                    {"target": target, "file_size": "0", "block_size": "4K",
                     "fsync": "no"},
                    [("meta", {"kind": "meta", "files": 10**7, "dirs": 2,
                               "deadline": "2s"})])
    proc = herd_run(herd_bin, 2, job, tmp_path / "huge.h5", timeout=RUN_TIMEOUT)
    res = load_results(tmp_path / "huge.h5")
    assert res.attrs["status"] == "complete", describe(proc)
    ph = res.phases["meta"]
    assert ph.attrs["status"] == "deadline", describe(proc)
    rows = ph.ranks
    assert (rows["completed"] == 0).all(), rows  # stopped by the deadline
    # the clean-up visits only the names this run used, so it finishes
    # (its own cap would say "clean-up stopped")
    assert "clean-up stopped" not in proc.stderr, describe(proc)
    assert tree(target) == [], describe(proc)


# ------------------------------------------------------------ 4. clean-up claims


def _claims_phases(meta_ops):
    return [
        ("wu", {"kind": "write", "fileset": "u"}),
        ("ws", {"kind": "write", "fileset": "s", "sharing": "shared"}),
        ("lk", {"kind": "lock", "fileset": "lk", "sharing": "shared", "count": 3}),
        ("mu", {"kind": "meta", "fileset": "mu", "meta_ops": meta_ops}),
        ("ms", {"kind": "meta", "fileset": "ms", "sharing": "shared", "meta_ops": meta_ops}),
    ]


def test_cleanup_keeps_what_earlier_run_kept(herd_bin, tmp_path):
    """Run 1 (keep = yes) makes files and trees; run 2 (same run_id,
    keep = no) writes, locks and stats them: none of it is removed, nor a
    file someone else put there."""
    nranks = 2
    target = tmp_path / "target"
    target.mkdir()
    common = {"target": target, "run_id": "kept", "file_size": "16K", "block_size": "4K",
              "fsync": "no", "files": 6, "dirs": 2}
    job1 = write_job(tmp_path / "one.ini", {**common, "keep": "yes"}, _claims_phases("create"))
    proc = herd_run(herd_bin, nranks, job1, tmp_path / "one.h5")
    assert proc.returncode == 0, describe(proc)
    stranger = target / "herd-kept" / "u" / "notes.txt"
    stranger.write_text("not herd's\n")
    before = tree(target)
    assert "herd-kept/u/r000001.dat" in before and "herd-kept/ms/shared/a" in before, before

    job2 = write_job(tmp_path / "two.ini", common, _claims_phases("stat"))
    proc = herd_run(herd_bin, nranks, job2, tmp_path / "two.h5")
    assert proc.returncode == 0, describe(proc)
    assert tree(target) == before, describe(proc)
    assert stranger.read_text() == "not herd's\n"


def test_cleanup_removes_only_this_runs_files(herd_bin, tmp_path):
    """Same run_id: run 2 writes the kept fileset u again and a new
    fileset v (and a new meta tree): it removes v and its tree, not u."""
    nranks = 2
    target = tmp_path / "target"
    target.mkdir()
    common = {"target": target, "run_id": "mix", "file_size": "16K", "block_size": "4K",
              "fsync": "no", "files": 4, "dirs": 2}
    job1 = write_job(tmp_path / "one.ini", {**common, "keep": "yes"},
                     [("wu", {"kind": "write", "fileset": "u"})])
    proc = herd_run(herd_bin, nranks, job1, tmp_path / "one.h5")
    assert proc.returncode == 0, describe(proc)
    before = tree(target)
    job2 = write_job(tmp_path / "two.ini", common,
                     [("wu", {"kind": "write", "fileset": "u"}),
                      ("wv", {"kind": "write", "fileset": "v"}),
                      ("lv", {"kind": "lock", "fileset": "lv", "sharing": "shared",
                              "count": 3}),
                      ("mv", {"kind": "meta", "fileset": "mv", "meta_ops": "create,stat"})])
    proc = herd_run(herd_bin, nranks, job2, tmp_path / "two.h5")
    assert proc.returncode == 0, describe(proc)
    assert tree(target) == before, describe(proc)
    assert "cannot remove" not in proc.stderr, describe(proc)


def test_cleanup_fresh_run_leaves_nothing(herd_bin, tmp_path):
    """A run of its own (keep = no) removes all it made, meta trees left
    half-done (create only) included."""
    nranks = 3
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "fresh.ini",
                    {"target": target, "file_size": "16K", "block_size": "4K", "fsync": "no",
                     "files": 5, "dirs": 2},
                    _claims_phases("create,stat"))
    proc = herd_run(herd_bin, nranks, job, tmp_path / "fresh.h5")
    assert proc.returncode == 0, describe(proc)
    assert tree(target) == [], describe(proc)


def test_think_time_paces_a_rank(herd_bin, tmp_path):
    """think_time: each rank pauses after every timed call (so it offers a
    fixed load); the calls' latencies do not include the pause, the
    iteration's time does. Counted, not timed: rank 1 runs under strace,
    which sees one 50 ms sleep per call; and each rank's time holds its
    calls' times plus every pause side by side (a pause inside a call's
    latency would count twice and overflow it)."""
    if not shutil.which("strace"):
        pytest.skip("strace is needed to count the pauses")
    target = tmp_path / "t"
    target.mkdir()
    gl = {"target": target, "file_size": "64K", "block_size": "16K", "fsync": "yes"}
    job = write_job(tmp_path / "think.ini", {**gl, "think_time": "50ms"},
                    [("w", {"kind": "write", "iterations": 2})])
    out = tmp_path / "think.h5"
    sleeps = tmp_path / "rank1.strace"
    herd = [herd_bin, "run", str(job), "-o", str(out)]
    trace = ["strace", "-f", "-o", str(sleeps), "-e", "trace=nanosleep,clock_nanosleep"]
    proc = run_cmd(["mpirun", "--oversubscribe", "-np", "1", *herd, ":", "-np", "1", *trace,
                    *herd])
    assert proc.returncode == 0, describe(proc)
    res = load_results(out)
    ph = res.phases["w"]
    calls = 2 * (1 + 4 + 1 + 1)  # per rank: 2 x (open, 4 writes, fsync, close)
    pauses = len(re.findall(r"tv_sec=0, tv_nsec=50000000\b", sleeps.read_text()))
    assert pauses == calls, f"rank 1 paused {pauses} times for {calls} calls"
    rows = ph.ranks
    with h5py.File(out, "r") as f:
        ops = f["phases/w/ops"][()]
    for r in (0, 1):
        mine = rows[rows["rank"] == r]
        span = float(mine["t_end"].max() - mine["t_start"].min())
        in_calls = float(ops[ops["rank"] == r]["seconds"].sum())
        assert int(ops[ops["rank"] == r]["count"].sum()) == calls, ops
        print(f"\nthink_time 50ms, rank {r}: {calls} calls in {in_calls:.3f} s, "
              f"all in {span:.3f} s")
        assert in_calls + calls * 0.05 <= span, (r, in_calls, span)
    assert int(ph.latency["write"]["count"]) == 2 * 2 * 4
