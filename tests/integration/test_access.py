"""Access patterns (issue 17 item 4): `access = sequential | random |
strided`, `rwmix_read` and `files_per_rank` on the write, read and md5
phases (src/workload/access.c, src/workload/workload_io.c).

1. Exact bytes: random, strided and sequential writes of files_per_rank
   files leave byte for byte the files a plain sequential write leaves
   (a block written twice or never would differ: tmpfs reads a hole as
   zeros); verifying reads in every order, md5, and a 70 % read mix are
   clean, with exact bytes and op counts in every row.
2. The order the system calls saw (strace -P on the data file): every
   block once, random not in file order and different per iteration,
   strided in passes of every 16th block, a mix reading and writing each
   block once.
3. A corrupted block: one byte flipped in rank 2's kept file between a
   write run and a read run; the random-order verify finds it in rank 2's
   row only, and stderr names the rank, the file and the byte's offset.
   k blocks corrupted in two files: a verifying read counts k (each bad
   block once, whatever the order), md5 one per file; no call failed, so
   the phases' status is verify, not errors.
4. files_per_rank clean-up: keep = no removes every file the run created;
   files an earlier run kept under the same run_id stay.
5. direct = yes with random order on xfs (O_DIRECT), and once over NFSv3
   (libnfs) against the embedded server.

Targets are a private tmpfs when root (a directory in pytest's tmp_path
otherwise). Run: /usr/bin/python3 -m pytest -q -rs tests/integration/test_access.py
"""

import os
import re
import shutil
import subprocess

import numpy as np
import pytest

from conftest import (KIB, MIB, describe, herd_run, load_results, mounted_fs, mpi_env,
                      mpirun_args, run_cmd, tree, write_job)

BS = 4 * KIB


@pytest.fixture
def target(tmp_path):
    """A private tmpfs when root, else a plain directory."""
    if os.geteuid() == 0:
        with mounted_fs("tmpfs", tmp_path, size="256m") as m:
            yield m.path
    else:
        d = tmp_path / "target"
        d.mkdir()
        yield d


def latency_count(ph, op):
    return int(ph.latency[op]["count"]) if op in ph.latency else 0


def data_files(rundir):
    return sorted(p.relative_to(rundir).as_posix() for p in rundir.rglob("*.dat"))


def expected_names(nranks, nfiles):
    return sorted(f"r{r:06d}.dat" if f == 0 else f"r{r:06d}.{f}.dat"
                  for r in range(nranks) for f in range(nfiles))


# ------------------------------------------------------------ 1. exact bytes


@pytest.mark.parametrize("access,nfiles", [("random", 1), ("random", 3), ("strided", 2),
                                           ("sequential", 3)])
def test_orders_move_exact_bytes(herd_bin, tmp_path, target, access, nfiles):
    nranks = 2
    fsize = 256 * BS + 1000  # a short last block
    nblocks = 257
    fileset = "acc"
    common = {"file_size": fsize, "block_size": BS, "fileset": fileset, "keep": "yes",
              "seed": 7, "files_per_rank": nfiles}
    phases = [
        ("w", {"kind": "write", "access": access}),
        ("r", {"kind": "read", "access": access, "verify": "yes", "iterations": 2}),
        ("m", {"kind": "md5"}),
        ("mix", {"kind": "read", "access": access, "rwmix_read": 70, "verify": "yes"}),
        ("m2", {"kind": "md5"}),
    ]
    job = write_job(tmp_path / "a.ini", {"target": target, "run_id": "acc", **common}, phases)
    out = tmp_path / "a.h5"
    proc = herd_run(herd_bin, nranks, job, out)
    assert proc.returncode == 0, describe(proc)
    res = load_results(out)
    nb = nranks * nfiles * nblocks
    for name, keys in phases:
        ph = res.phases[name]
        rows = ph.ranks
        iters = int(keys.get("iterations", 1))
        assert len(rows) == nranks * iters, name
        assert (rows["completed"] == 1).all(), (name, rows)
        assert (rows["errors"] == 0).all() and len(ph.errors) == 0, (name, ph.error_rows())
        assert (rows["verify_failures"] == 0).all(), (name, rows)
        assert (rows["bytes"] == nfiles * fsize).all(), (name, rows["bytes"])
        calls = {"write": nblocks + 3, "read": nblocks + 2}
        if name != "m" and name != "m2":  # md5 reads in 1 MiB slots of whole blocks
            want = calls[keys["kind"]] * nfiles
            assert (rows["ops"] == want).all(), (name, rows["ops"], want)
    assert latency_count(res.phases["w"], "write") == nb
    assert latency_count(res.phases["r"], "read") == 2 * nb
    mix = res.phases["mix"]
    reads, writes = latency_count(mix, "read"), latency_count(mix, "write")
    assert reads + writes == nb, (reads, writes)
    assert 0.6 < reads / nb < 0.8, f"rwmix_read 70: {reads} of {nb} blocks read"
    assert writes > 0

    # The reference: the same files written in file order by another run.
    ref_target = tmp_path / "ref"
    ref_target.mkdir()
    ref = write_job(tmp_path / "ref.ini", {"target": ref_target, "run_id": "acc", **common},
                    [("w", {"kind": "write"})])
    proc = herd_run(herd_bin, nranks, ref, tmp_path / "ref.h5")
    assert proc.returncode == 0, describe(proc)
    got_dir, ref_dir = target / "herd-acc" / fileset, ref_target / "herd-acc" / fileset
    names = expected_names(nranks, nfiles)
    assert data_files(got_dir) == names
    assert data_files(ref_dir) == names
    for n in names:
        a, b = (got_dir / n).read_bytes(), (ref_dir / n).read_bytes()
        assert len(a) == fsize, n
        assert a == b, f"{access}: {n} differs from the sequential write's"
    assert len({(got_dir / n).read_bytes()[:64] for n in names}) == len(names), \
        "two files hold the same data: files_per_rank files must have their own keys"


# ------------------------------------------------------------ 2. syscall order


def strace_offsets(log, size=BS):
    """[(call, offset)] of the pread64/pwrite64 calls of `size` bytes in an
    strace -o log."""
    calls = []
    for line in log.read_text().splitlines():
        m = re.search(r"(pread64|pwrite64)\(\d+(?:<[^>]*>)?, .*, (\d+), (\d+)\) = (\d+)", line)
        if m and int(m.group(2)) == size:
            calls.append((m.group(1), int(m.group(3))))
    return calls


def strided_order(nblocks, stride=16):
    s = min(stride, nblocks)
    return [p + j * s for p in range(s) for j in range(nblocks) if p + j * s < nblocks]


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_order_seen_by_the_system_calls(herd_bin, tmp_path, target):
    nblocks = 100
    phases = [("w", {"kind": "write", "access": "random"}),
              ("r", {"kind": "read", "access": "random", "iterations": 2}),
              ("s", {"kind": "read", "access": "strided"}),
              ("mix", {"kind": "read", "access": "random", "rwmix_read": 40})]
    gl = {"target": target, "file_size": nblocks * BS, "block_size": BS, "run_id": "st",
          "keep": "yes", "fileset": "st"}
    calls = {}
    data = target / "herd-st" / "st" / "r000000.dat"
    for name, keys in phases:
        # One run per phase: strace -P needs the file's path, and separate
        # logs keep the phases apart.
        job = write_job(tmp_path / f"{name}.ini", gl, [(name, keys)])
        log = tmp_path / f"{name}.strace"
        args = ["strace", "-f", "-qq", "-e", "trace=pread64,pwrite64", "-P", str(data),
                "-o", str(log)] + mpirun_args(herd_bin, 1, "run", job, "-o",
                                              tmp_path / f"{name}.h5")
        proc = run_cmd(args)
        if proc.returncode != 0 and "ptrace" in proc.stderr:
            pytest.skip(f"strace cannot trace here: {proc.stderr.strip()[:200]}")
        assert proc.returncode == 0, describe(proc)
        calls[name] = strace_offsets(log)
    every = [b * BS for b in range(nblocks)]

    w = [off for call, off in calls["w"]]
    assert all(call == "pwrite64" for call, _ in calls["w"])
    assert sorted(w) == every, "random write: not every block exactly once"
    assert w != every, "random write went in file order"
    in_place = sum(a == b for a, b in zip(w, every))
    assert in_place < nblocks // 8, f"random write: {in_place} blocks in file position"

    r = [off for _, off in calls["r"]]
    assert len(r) == 2 * nblocks
    first, second = r[:nblocks], r[nblocks:]
    assert sorted(first) == every and sorted(second) == every
    assert first != every and first != second, "each iteration must get its own order"
    assert first == w, "same seed, file and iteration: the read follows the write's order"

    s = [off for _, off in calls["s"]]
    assert s == [b * BS for b in strided_order(nblocks)]

    mix = calls["mix"]
    assert sorted(off for _, off in mix) == every
    reads = sum(call == "pread64" for call, _ in mix)
    assert 0 < reads < nblocks, f"rwmix_read 40: {reads} of {nblocks} read"
    print(f"\nrandom write order starts {[o // BS for o in w[:10]]}; "
          f"mix read {reads} of {nblocks}")


# ------------------------------------------------------------ 3. corruption


def test_corrupt_block_found_by_random_read(herd_bin, tmp_path, target):
    nranks, fsize, run_id = 4, MIB, "corrupt"
    common = {"target": target, "file_size": fsize, "block_size": BS, "run_id": run_id,
              "fileset": "c"}
    job1 = write_job(tmp_path / "w.ini", {**common, "keep": "yes"},
                     [("w", {"kind": "write", "access": "random"})])
    proc = herd_run(herd_bin, nranks, job1, tmp_path / "w.h5")
    assert proc.returncode == 0, describe(proc)
    victim = target / f"herd-{run_id}" / "c" / "r000002.dat"
    offset = 123 * BS + 77
    with open(victim, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0x5A]))

    phases = [("r_random", {"kind": "read", "access": "random", "verify": "yes"}),
              ("r_strided", {"kind": "read", "access": "strided", "verify": "yes"}),
              ("m", {"kind": "md5"})]
    job2 = write_job(tmp_path / "r.ini", {**common, "keep": "yes"}, phases)
    out = tmp_path / "r.h5"
    proc = herd_run(herd_bin, nranks, job2, out, quiet=True)
    assert proc.returncode == 3, describe(proc)
    res = load_results(out)
    for name, _ in phases:
        rows = res.phases[name].ranks
        hit = rows["rank"] == 2
        assert (rows["verify_failures"][hit] == 1).all(), (name, rows)
        assert (rows["verify_failures"][~hit] == 0).all(), (name, rows)
        assert (rows["file_rank"][hit] == 2).all()
        assert (rows["bytes"] == fsize).all(), name
        assert int(res.phases[name].attrs["summary_verify_failures"]) == 1, name
    for name in ("r_random", "r_strided"):
        pat = (rf"herd: rank 2: phase {name}: verify: \S*r000002\.dat differs from the "
               rf"pattern at offset {offset} \(iteration 0\)")
        assert re.search(pat, proc.stderr), f"no /{pat}/ in:\n{proc.stderr}"
    assert not re.search(r"rank [013]: phase \S+: verify", proc.stderr), proc.stderr


def test_verify_counts_the_corrupted_blocks(herd_bin, tmp_path, target):
    nranks, fsize, run_id = 4, MIB, "blocks"
    common = {"target": target, "file_size": fsize, "block_size": BS, "run_id": run_id,
              "fileset": "k", "keep": "yes"}
    job1 = write_job(tmp_path / "w.ini", common, [("w", {"kind": "write"})])
    proc = herd_run(herd_bin, nranks, job1, tmp_path / "w.h5")
    assert proc.returncode == 0, describe(proc)
    bad = {1: [0, 7, 255], 3: [100, 101]}  # rank: corrupted blocks of its file
    for rank, blocks in bad.items():
        with open(target / f"herd-{run_id}" / "k" / f"r{rank:06d}.dat", "r+b") as f:
            for b in blocks:  # two bytes of each block: still one block
                for off in (b * BS + 5, b * BS + BS - 1):
                    f.seek(off)
                    byte = f.read(1)
                    f.seek(off)
                    f.write(bytes([byte[0] ^ 0xFF]))
    phases = [("seq", {"kind": "read", "verify": "yes"}),
              ("rand", {"kind": "read", "verify": "yes", "access": "random"}),
              ("m", {"kind": "md5"})]
    out = tmp_path / "r.h5"
    proc = herd_run(herd_bin, nranks, write_job(tmp_path / "r.ini", common, phases), out,
                    quiet=True)
    assert proc.returncode == 3, describe(proc)
    res = load_results(out)
    for name, keys in phases:
        ph = res.phases[name]
        per_rank = dict(zip(ph.ranks["rank"].tolist(), ph.ranks["verify_failures"].tolist()))
        want = {r: (1 if keys["kind"] == "md5" else len(bad[r])) if r in bad else 0
                for r in range(nranks)}
        assert per_rank == want, (name, per_rank)
        assert int(ph.attrs["summary_verify_failures"]) == sum(want.values()), name
        assert int(ph.attrs["summary_errors"]) == 0 and len(ph.errors) == 0, name
        assert ph.attrs["status"] == "verify", (name, ph.attrs["status"])


# ------------------------------------------------------------ 4. clean-up


def test_files_per_rank_cleanup(herd_bin, tmp_path, target):
    nranks = 3
    gl = {"target": target, "file_size": 64 * KIB, "block_size": BS, "fileset": "f",
          "files_per_rank": 4}
    phases = [("w", {"kind": "write", "access": "random"}),
              ("r", {"kind": "read", "verify": "yes", "access": "strided"}),
              ("m", {"kind": "md5"})]
    job = write_job(tmp_path / "a.ini", gl, phases)
    proc = herd_run(herd_bin, nranks, job, tmp_path / "a.h5")
    assert proc.returncode == 0, describe(proc)
    res = load_results(tmp_path / "a.h5")
    assert (res.phases["w"].ranks["bytes"] == 4 * 64 * KIB).all()
    assert tree(target) == [] or tree(target) == ["lost+found"], tree(target)

    # An earlier run kept 2 files per rank under run_id k; a run with 4
    # files per rank and keep = no must leave the kept ones.
    kept = {**gl, "run_id": "k", "files_per_rank": 2, "keep": "yes"}
    job = write_job(tmp_path / "k1.ini", kept, [("w", {"kind": "write"})])
    proc = herd_run(herd_bin, nranks, job, tmp_path / "k1.h5")
    assert proc.returncode == 0, describe(proc)
    rundir = target / "herd-k"
    before = {n: (rundir / "f" / n).read_bytes() for n in expected_names(nranks, 2)}
    job = write_job(tmp_path / "k2.ini", {**kept, "files_per_rank": 4, "keep": "no"},
                    [("w", {"kind": "write", "access": "random"})])
    proc = herd_run(herd_bin, nranks, job, tmp_path / "k2.h5")
    assert proc.returncode == 0, describe(proc)
    for n, data in before.items():
        assert (rundir / "f" / n).read_bytes() == data, f"kept file {n} removed or changed"


# ------------------------------------------------------------ 5. direct, NFS


def test_random_direct_on_xfs(herd_bin, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root for an xfs loop mount")
    nranks = 2
    with mounted_fs("xfs", tmp_path) as m:
        gl = {"target": m.path, "file_size": 2 * MIB, "block_size": 16 * KIB,
              "direct": "yes", "files_per_rank": 2}
        phases = [("w", {"kind": "write", "access": "random"}),
                  ("r", {"kind": "read", "access": "random", "verify": "yes"}),
                  # verify is refused on write phases (job.c), even mixed ones
                  ("mix", {"kind": "write", "access": "strided", "rwmix_read": 50}),
                  ("r2", {"kind": "read", "access": "strided", "verify": "yes"}),
                  ("m", {"kind": "md5"})]
        job = write_job(tmp_path / "d.ini", gl, phases)
        out = tmp_path / "d.h5"
        proc = herd_run(herd_bin, nranks, job, out)
        assert proc.returncode == 0, describe(proc)
        res = load_results(out)
        for name, _ in phases:
            rows = res.phases[name].ranks
            assert (rows["errors"] == 0).all() and (rows["verify_failures"] == 0).all(), name
            assert (rows["bytes"] == 2 * 2 * MIB).all(), name
            assert res.phases[name].attrs["direct"], name
        mix = res.phases["mix"]
        n = nranks * 2 * 128
        assert latency_count(mix, "read") + latency_count(mix, "write") == n
        assert 0 < latency_count(mix, "read") < n


def _why_no_nfs():
    try:
        from test_nfs_server import _why_skip
    except Exception as e:  # pragma: no cover - import trouble is a skip reason
        return f"test_nfs_server not importable: {e}"
    return _why_skip()


def test_random_mix_over_nfs(herd_bin, tmp_path):
    why = _why_no_nfs()
    if why:
        pytest.skip(why)
    from test_nfs import herd_run_nfs
    from test_nfs_server import Server
    nranks, fsize, nfiles = 4, 2 * MIB, 2
    s = Server(tmp_path / "nfs")
    try:
        s.start("--fs", "tmpfs", "--size", "256M")
        gl = {"target": s.url, "backend": "libnfs", "file_size": fsize, "block_size": 64 * KIB,
              "files_per_rank": nfiles}
        phases = [("w", {"kind": "write", "access": "random"}),
                  ("r", {"kind": "read", "access": "strided", "verify": "yes"}),
                  ("mix", {"kind": "read", "access": "random", "rwmix_read": 70,
                           "verify": "yes"}),
                  ("m", {"kind": "md5"})]
        job = write_job(tmp_path / "n.ini", gl, phases)
        out = tmp_path / "n.h5"
        proc = herd_run_nfs(s, herd_bin, nranks, job, out)
        assert proc.returncode == 0, describe(proc)
        res = load_results(out)
        for name, _ in phases:
            rows = res.phases[name].ranks
            assert (rows["errors"] == 0).all(), (name, res.phases[name].error_rows())
            assert (rows["verify_failures"] == 0).all(), name
            assert (rows["bytes"] == nfiles * fsize).all(), name
        nb = nranks * nfiles * (fsize // (64 * KIB))
        mix = res.phases["mix"]
        reads = latency_count(mix, "read")
        assert reads + latency_count(mix, "write") == nb
        assert 0.5 < reads / nb < 0.9, reads
    finally:
        s.stop(check=False)
    s.assert_clean()
