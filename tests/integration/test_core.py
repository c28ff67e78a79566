"""A clean run on real file systems: write, read (verify) and md5 of unique
files, of a shared same-content file and of a segmented shared file, with
read_from = neighbor and more than one iteration, for 4 and 20 ranks on
tmpfs, xfs and ext4. Every number in results.h5 is checked against what the
job file asks for, and the target must be left empty.
"""

import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import (MIB, assert_mount_gone, describe, herd_cmd, herd_run, load_results,
                      mounted_fs, parse_size, phase_attr_order, tree, write_job)

FILE_SIZE = "1M"
BLOCK_SIZE = "256K"

# (name, keys): the phases in order. Keys not given come from GLOBAL.
PHASES = [
    ("w_unique", {"kind": "write", "iterations": 2}),
    ("r_unique", {"kind": "read", "verify": "yes", "iterations": 2,
                  "block_size": "384K"}),  # 1M / 384K: the last block is short
    ("m_unique", {"kind": "md5"}),
    ("r_neighbor", {"kind": "read", "verify": "yes", "read_from": "neighbor"}),
    ("m_neighbor", {"kind": "md5", "read_from": "neighbor", "iterations": 2}),
    ("w_same", {"kind": "write", "sharing": "shared", "shared_mode": "same-content",
                "fileset": "same"}),
    ("r_same", {"kind": "read", "sharing": "shared", "shared_mode": "same-content",
                "fileset": "same", "verify": "yes", "iterations": 2}),
    ("m_same", {"kind": "md5", "sharing": "shared", "shared_mode": "same-content",
                "fileset": "same"}),
    ("w_seg", {"kind": "write", "sharing": "shared", "shared_mode": "segmented",
               "fileset": "seg", "pattern": "compressible:50", "iterations": 2}),
    ("r_seg", {"kind": "read", "sharing": "shared", "shared_mode": "segmented",
               "fileset": "seg", "pattern": "compressible:50", "verify": "yes"}),
    ("m_seg", {"kind": "md5", "sharing": "shared", "shared_mode": "segmented",
               "fileset": "seg", "pattern": "compressible:50"}),
    ("r_seg_neighbor", {"kind": "read", "sharing": "shared", "shared_mode": "segmented",
                        "fileset": "seg", "pattern": "compressible:50", "verify": "yes",
                        "read_from": "neighbor", "iterations": 2}),
]

# docs/results-format.md: phase attributes in this order, status last

GLOBAL = {"file_size": FILE_SIZE, "block_size": BLOCK_SIZE, "fsync": "yes"}


def resolved(keys):
    """A phase's keys with the global values and herd's defaults filled in."""
    k = {"sharing": "unique", "shared_mode": "same-content", "iterations": 1,
         "verify": "no", "read_from": "self"}
    k.update(GLOBAL)
    k.update(keys)
    k["file_size"] = parse_size(k["file_size"])
    k["block_size"] = parse_size(k["block_size"])
    k["iterations"] = int(k["iterations"])
    return k


def expected_file_rank(k, rank, nranks):
    owner = (rank + 1) % nranks if k["read_from"] == "neighbor" else rank
    if k["sharing"] == "shared" and k["shared_mode"] == "same-content":
        return -1  # the one shared file: nobody's
    return owner


RPC_OPS = ("rpc_read", "rpc_write")  # a backend's own RPCs (libnfs), checked by its tests


def check_phase(name, k, ph, nranks, attr_order, where=None, rpc_ops=False):
    rows = ph.ranks
    iters = k["iterations"]
    fsize, bsize = k["file_size"], k["block_size"]
    where = where or f"phase {name}"

    assert ph.attrs["kind"] == k["kind"], where
    assert ph.attrs["status"] == "ok", f"{where}: errors {ph.error_rows()}"
    assert ph.attrs["file_size"] == fsize, where
    assert ph.attrs["block_size"] == bsize, where
    assert ph.attrs["iterations"] == iters, where
    assert ph.attrs["sharing"] == k["sharing"], where
    assert ph.attrs["read_from"] == k["read_from"], where
    # Every rank starts at or after the announced instant, on its corrected
    # clock, and its achieved start (from which start_skew is computed) lies
    # between that instant and its iteration 0's start: the recorded skew
    # cannot exceed the latest of those. (test_clock.py checks the clocks.)
    late = rows["t_start"][rows["iteration"] == 0] - ph.attrs["t_start"]
    assert (late >= 0).all(), f"{where}: a rank started before t_start: {late}"
    assert 0 <= ph.attrs["start_skew"] <= late.max(), (where, ph.attrs["start_skew"], late)
    assert ph.attrs["elapsed"] == pytest.approx(ph.attrs["t_end"] - ph.attrs["t_start"])
    assert ph.attr_order == attr_order, where

    # ranks x iterations rows, each (rank, iteration) exactly once, ordered
    # by rank, then iteration (docs/results-format.md)
    assert len(rows) == nranks * iters, where
    pairs = list(zip(rows["rank"].tolist(), rows["iteration"].tolist()))
    assert sorted(pairs) == [(r, i) for r in range(nranks) for i in range(iters)], where
    assert pairs == sorted(pairs), f"{where}: rows not ordered by rank, iteration"

    assert (rows["completed"] == 1).all(), f"{where}: rows not completed: {rows}"
    assert (rows["errors"] == 0).all(), where
    assert (rows["verify_failures"] == 0).all(), where
    assert len(ph.errors) == 0, f"{where}: errors table {ph.error_rows()}"

    # every iteration moved exactly one file's (or region's) bytes
    assert (rows["bytes"] == fsize).all(), f"{where}: bytes {rows['bytes'].tolist()}"
    assert int(rows["bytes"].sum()) == nranks * iters * fsize, where

    # ops per iteration: open, one per block, fsync (write phases), close
    nblocks = math.ceil(fsize / bsize)
    do_fsync = k["kind"] == "write" and str(k.get("fsync", "yes")) == "yes"
    assert (rows["ops"] == 1 + nblocks + int(do_fsync) + 1).all(), \
        f"{where}: ops {rows['ops'].tolist()}"
    assert (rows["t_end"] >= rows["t_start"]).all(), where

    for row in rows:
        want = expected_file_rank(k, int(row["rank"]), nranks)
        assert row["file_rank"] == want, \
            f"{where}: rank {row['rank']} worked on file_rank {row['file_rank']}, want {want}"
    if k["read_from"] == "neighbor":
        assert (rows["file_rank"] != rows["rank"]).all(), where

    # latency histograms count every call
    n = nranks * iters
    io_op = "write" if k["kind"] == "write" else "read"
    want_counts = {"open": n, "close": n, io_op: n * nblocks}
    if do_fsync:
        want_counts["fsync"] = n
    if k["kind"] == "md5":
        want_counts["md5"] = n
    got_counts = {op: int(h["count"]) for op, h in ph.latency.items() if op not in RPC_OPS}
    assert got_counts == want_counts, where
    for op, h in ph.latency.items():
        if op in RPC_OPS:
            assert rpc_ops, f"{where}: {op} from a backend without RPCs"
            continue
        assert int(np.sum(h["counts"])) == want_counts[op], f"{where}: latency/{op}"


def check_host_row(hosts, mount_point, fs):
    """/hosts: the one host's mount of the target, and its read-ahead window
    as the kernel has it (the bdi of the mount's device; tmpfs has none
    that reads ahead: its bdi says 0 or it has none, -1)."""
    assert len(hosts) == 1
    h = hosts[0]
    assert h["fstype"].decode() == fs
    assert h["mount_point"].decode() == os.path.realpath(mount_point)
    dev = os.stat(mount_point).st_dev
    bdi = Path(f"/sys/class/bdi/{os.major(dev)}:{os.minor(dev)}/read_ahead_kb")
    want = int(bdi.read_text()) if bdi.exists() else -1
    assert int(h["read_ahead_kb"]) == want, (h, bdi)


@pytest.mark.parametrize("fs", ["tmpfs", "xfs", "ext4"])
@pytest.mark.parametrize("nranks", [4, 20])
def test_clean_run(herd_bin, tmp_path, fs, nranks):
    with mounted_fs(fs, tmp_path) as m:
        target = m.path / "target"  # ext4 has lost+found at its root
        target.mkdir()
        job = write_job(tmp_path / "core.ini", {"target": target, **GLOBAL}, PHASES)
        out = tmp_path / "results.h5"

        proc = herd_run(herd_bin, nranks, job, out)
        assert proc.returncode == 0, describe(proc)

        res = load_results(out)
        assert res.attrs["status"] == "complete"
        assert res.attrs["nranks"] == nranks
        assert res.attrs["nhosts"] == 1
        assert res.attrs["exit_code"] == 0
        assert res.attrs["target"] == str(target)
        assert len(res.rank_table) == nranks
        assert sorted(res.rank_table["rank"].tolist()) == list(range(nranks))
        assert res.phase_names == [name for name, _ in PHASES]  # job order
        assert res.attrs["end_utc"] != ""
        assert res.attrs["tool"] == "herd"

        for name, keys in PHASES:
            check_phase(name, resolved(keys), res.phases[name], nranks, phase_attr_order(herd_bin))
        check_host_row(res.hosts, m.path, fs)

        # Nothing of the run is left in the target.
        run_id = res.attrs["run_id"]
        assert re.fullmatch(r"[A-Za-z0-9_.-]+", run_id)
        assert not (target / f"herd-{run_id}").exists()
        assert tree(target) == [], f"herd left files in the target: {tree(target)}"
        for line in proc.stderr.splitlines():
            assert "cannot remove" not in line, describe(proc)
    assert_mount_gone(m)


def test_phase_names_in_job_order(herd_bin, tmp_path):
    """Phases are listed in results.h5 in the order they ran (creation order)."""
    target = tmp_path / "target"
    target.mkdir()
    phases = [("zz", {"kind": "write"}), ("aa", {"kind": "read", "verify": "yes"}),
              ("mm", {"kind": "md5"})]
    job = write_job(tmp_path / "order.ini",
                    {"target": target, "file_size": "256K", "block_size": "64K",
                     "fsync": "no"}, phases)
    out = tmp_path / "order.h5"
    proc = herd_run(herd_bin, 2, job, out)
    assert proc.returncode == 0, describe(proc)
    res = load_results(out)
    assert [res.phases[n].attrs["index"] for n in ("zz", "aa", "mm")] == [0, 1, 2]
    assert tree(target) == []


def resident_bytes(path):
    """Bytes of path in the page cache (util-linux fincore)."""
    out = subprocess.run(["fincore", "--noheadings", "--bytes", "--output", "RES", str(path)],
                         capture_output=True, text=True, check=True).stdout
    return int(out.strip())


@pytest.mark.parametrize("fs", ["xfs", "ext4"])
def test_direct_io(herd_bin, tmp_path, fs):
    """direct = yes: write, read with verify and md5 through O_DIRECT are
    clean and the data is right; and O_DIRECT was really used: the files
    it wrote and read are not in the page cache afterwards, while the same
    job without direct leaves them there (the control shows the check can
    fail). herd check refuses direct with a block_size that O_DIRECT cannot
    take (not a multiple of 4K), naming the key, so such a run never starts."""
    if shutil.which("fincore") is None:
        pytest.skip("needs util-linux fincore")
    nranks, fsize = 4, 4 * MIB
    phases = [("w", {"kind": "write"}), ("r", {"kind": "read", "verify": "yes"}),
              ("m", {"kind": "md5"})]
    with mounted_fs(fs, tmp_path) as m:
        cached = {}
        for direct in ("yes", "no"):
            target = m.path / f"target-{direct}"
            target.mkdir()
            gl = {"target": target, "file_size": "4M", "block_size": "64K", "fsync": "yes",
                  "direct": direct, "keep": "yes", "run_id": f"direct-{direct}"}
            job = write_job(tmp_path / f"direct-{direct}.ini", gl, phases)
            out = tmp_path / f"direct-{direct}.h5"
            proc = herd_run(herd_bin, nranks, job, out)
            assert proc.returncode == 0, describe(proc)
            res = load_results(out)
            for name, k in phases:
                ph = res.phases[name]
                assert ph.attrs["direct"] == (direct == "yes"), name
                check_phase(name, resolved({**k, "file_size": "4M", "block_size": "64K"}),
                            ph, nranks, phase_attr_order(herd_bin), f"{fs} direct={direct} {name}")
            files = sorted((target / f"herd-direct-{direct}").rglob("*.dat"))
            assert len(files) == nranks, files
            assert all(f.stat().st_size == fsize for f in files)
            cached[direct] = sum(resident_bytes(f) for f in files)
        print(f"\n{fs}: page cache after the run: direct {cached['yes']} B, "
              f"buffered {cached['no']} B of {nranks * fsize}")
        assert cached["yes"] == 0, cached
        assert cached["no"] >= nranks * fsize // 2, cached  # the control

        for bs in ("1000", "6K"):
            job = write_job(tmp_path / "bad.ini",
                            {"target": m.path, "file_size": "1M", "block_size": bs,
                             "direct": "yes"}, [("w", {"kind": "write"})])
            chk = herd_cmd(herd_bin, "check", job, "-n", 4)
            assert chk.returncode == 2, describe(chk)
            assert "direct" in chk.stderr and "4K" in chk.stderr, describe(chk)
    assert_mount_gone(m)


def test_neighbor_on_one_host_is_warned(herd_bin, tmp_path):
    """read_from = neighbor with every rank on one host has no other host's
    file to read: rank 0 says so once, before the first phase (naming the
    first such phase and how many more), and the run goes on; a job that
    reads its own files is not warned."""
    target = tmp_path / "target"
    target.mkdir()
    phases = [("w", {"kind": "write"}),
              ("r", {"kind": "read", "read_from": "neighbor"}),
              ("m", {"kind": "md5", "read_from": "neighbor"}),
              ("own", {"kind": "read"})]
    job = write_job(tmp_path / "n.ini", {"target": target, "file_size": "64K",
                                         "block_size": "64K"}, phases)
    proc = herd_run(herd_bin, 2, job, tmp_path / "n.h5")
    assert proc.returncode == 0, describe(proc)
    warned = [l for l in proc.stderr.splitlines() if "read_from = neighbor" in l]
    assert warned == ["herd: warning: read_from = neighbor (phase r and 1 more) with all 2 ranks "
                      "on one host: no other host's file to read, so each rank reads a file "
                      "this host wrote, which its page cache may serve; run on two hosts or "
                      "more, or set direct = yes"], proc.stderr
    lines = proc.stderr.splitlines()
    assert lines.index(warned[0]) < next(i for i, l in enumerate(lines)
                                         if l.startswith("herd: phase w:")), proc.stderr
    job = write_job(tmp_path / "own.ini", {"target": target, "file_size": "64K",
                                           "block_size": "64K"}, [phases[0], phases[3]])
    proc = herd_run(herd_bin, 2, job, tmp_path / "own.h5")
    assert proc.returncode == 0, describe(proc)
    assert "read_from" not in proc.stderr, proc.stderr
