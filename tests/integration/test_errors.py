"""Runs that go wrong: a run directory herd may not use (a read-only target,
a link or file at its name, a target not the same for every rank), a
corrupted file, broken job files, SIGTERM in the middle of a phase, an
existing results file."""

import os
import re
import signal
import time

import h5py
import numpy as np
import pytest

from conftest import (describe, herd_background, herd_cmd, herd_run, load_results, mpi_env,
                      tree, write_job)

# ------------------------------------------------------------ unusable run directory


def herd_said(proc):
    """herd's lines on stderr (mpirun -q adds none)."""
    return [l for l in proc.stderr.splitlines() if l.strip()]


def test_unusable_run_directory_stops_before_phases(herd_bin, tmp_path, mount_fs):
    """A run directory herd may not use stops the run before its first
    phase: one line saying why, exit code 2, no phase run, no results
    file and no --json summary (as every refusal before the phases), the
    target as it was. Cases: a read-only target (the directory cannot be
    made: EROFS, where the phases used to run and count ENOENT), and for a
    job with a fixed run_id a file at the run directory's name (a link
    there: test_trust.py)."""
    ro = mount_fs("tmpfs", size="16m", read_only=True)
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "herd-file").write_text("not a directory\n")
    cases = [(ro.path, "", r"cannot make herd-[0-9T]+-[0-9a-f]+: Read-only file system"),
             (planted, "file", r"herd-file exists and is not a directory: refused")]
    for target, run_id, why in cases:
        before = tree(target)
        keys = {"target": target, "file_size": "1M", "block_size": "256K"}
        if run_id:
            keys["run_id"] = run_id
        job = write_job(tmp_path / "u.ini", keys,
                        [("w", {"kind": "write", "iterations": 2}), ("r", {"kind": "read"})])
        out, summary = tmp_path / "u.h5", tmp_path / "u.json"
        proc = herd_run(herd_bin, 4, job, out, "--json", summary, quiet=True)
        assert proc.returncode == 2, describe(proc)
        lines = herd_said(proc)
        assert len(lines) == 1 and re.fullmatch(f"herd: target {re.escape(str(target))}: {why}",
                                                lines[0]), describe(proc)
        assert proc.stdout == "", describe(proc)
        assert not out.exists() and not summary.exists()
        assert tree(target) == before


# ------------------------------------------------------------ corruption


def test_corrupted_file_is_found(herd_bin, tmp_path):
    """Run 1 writes and keeps unique files; the test flips one byte of rank
    2's file; run 2 (same run_id) reads and digests them: only the rows that
    worked on rank 2's file report a verify failure."""
    nranks, file_size, run_id = 4, 4 << 20, "corrupt-test"
    target = tmp_path / "target"
    target.mkdir()
    rundir = target / f"herd-{run_id}"
    common = {"target": target, "file_size": "4M", "block_size": "1M", "run_id": run_id}
    try:
        job1 = write_job(tmp_path / "write.ini", {**common, "keep": "yes"},
                         [("w", {"kind": "write"})])
        proc = herd_run(herd_bin, nranks, job1, tmp_path / "write.h5")
        assert proc.returncode == 0, describe(proc)
        fileset = rundir / "unique-4M"  # default fileset: <sharing>-<file_size>
        files = sorted(p.name for p in fileset.iterdir())
        assert files == [f"r{r:06d}.dat" for r in range(nranks)]
        for name in files:
            assert (fileset / name).stat().st_size == file_size

        victim = fileset / "r000002.dat"
        offset = 3 * (1 << 20) + 12345
        with open(victim, "r+b") as f:
            f.seek(offset)
            b = f.read(1)
            f.seek(offset)
            f.write(bytes([b[0] ^ 0xFF]))

        phases = [
            ("m_self", {"kind": "md5"}),
            ("r_self", {"kind": "read", "verify": "yes", "iterations": 2}),
            ("m_neighbor", {"kind": "md5", "read_from": "neighbor"}),
            ("r_neighbor", {"kind": "read", "verify": "yes", "read_from": "neighbor"}),
        ]
        job2 = write_job(tmp_path / "read.ini", common, phases)
        out = tmp_path / "read.h5"
        proc = herd_run(herd_bin, nranks, job2, out)
        assert proc.returncode == 3, describe(proc)

        res = load_results(out)
        assert res.attrs["status"] == "complete"
        assert res.attrs["exit_code"] == 3
        assert res.attrs["run_id"] == run_id
        for name, keys in phases:
            ph = res.phases[name]
            rows = ph.ranks
            iters = int(keys.get("iterations", 1))
            assert len(rows) == nranks * iters, name
            hit = rows["file_rank"] == 2
            assert hit.sum() == iters, f"{name}: rows on file 2: {rows}"
            assert (rows["verify_failures"][hit] == 1).all(), f"{name}: {rows}"
            assert (rows["verify_failures"][~hit] == 0).all(), f"{name}: {rows}"
            assert (rows["errors"] == 0).all(), name
            assert len(ph.errors) == 0, f"{name}: {ph.error_rows()}"
            assert (rows["bytes"] == file_size).all(), name
            assert ph.attrs["status"] == "verify", name  # no call failed: the data did
            # the row is rank 2's own with read_from = self, rank 1's with neighbor
            want_rank = 1 if keys.get("read_from") == "neighbor" else 2
            assert set(rows["rank"][hit].tolist()) == {want_rank}, name

        # Run 2 wrote nothing, so it removed nothing: run 1's files stay.
        assert sorted(p.name for p in fileset.iterdir()) == files
    finally:
        # The test asked for the kept directory; the test removes it.
        if rundir.exists():
            for p in sorted(rundir.rglob("*"), reverse=True):
                p.rmdir() if p.is_dir() else p.unlink()
            rundir.rmdir()
    assert tree(target) == []


# ------------------------------------------------------------ bad job files

# (id, job file text or None for a missing file or bytes, extra args,
#  expected line or None, text the message must hold)
BAD_JOBS = [
    ("unknown-key", "[global]\ntarget = {target}\n\n[w]\nkind = write\nbogus = 1\n",
     [], 6, "bogus"),
    ("bad-size", "[global]\ntarget = {target}\n[w]\nkind = write\nfile_size = 16Q\n",
     [], 5, "16Q"),
    ("kind-missing", "[global]\ntarget = {target}\n\n[w]\n# size only\nfile_size = 1M\n", [],
     4, "kind"),
    ("duplicate-key", "[global]\ntarget = {target}\n[w]\nkind = write\nfile_size = 1M\n"
     "file_size = 2M\n", [], 6, "file_size"),
    ("block-larger-than-file", "[global]\ntarget = {target}\nfile_size = 1M\n\n[w]\n"
     "kind = write\nblock_size = 2M\n", [], 7, "block_size"),
    ("block-larger-than-file-global", "[global]\ntarget = {target}\nblock_size = 2M\n"
     "[w]\nkind = write\nfile_size = 1M\n", [], 3, "block_size"),
    ("verify-on-write", "[global]\ntarget = {target}\n[w]\nkind = write\nverify = yes\n",
     [], 5, "verify"),
    ("syntax-error", "[global]\ntarget = {target}\n[w]\nkind = write\nthis is not ini\n",
     [], 5, "syntax"),
    ("empty-file", "", [], None, "no phases"),
    ("nonexistent-file", None, [], None, "No such file"),
    ("binary-file", b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00[w]\nkind=write\n", [], None,
     "cannot read job file"),
    ("target-in-phase", "[global]\ntarget = {target}\n[w]\nkind = write\ntarget = /tmp\n",
     [], 5, "target"),
    ("set-unknown-key", "[global]\ntarget = {target}\n[w]\nkind = write\n",
     ["--set", "bogus=1"], None, "bogus"),
    ("bad-kind", "[global]\ntarget = {target}\n[w]\nkind = append\n", [], 4, "append"),
    ("key-before-section", "target = {target}\n[w]\nkind = write\n", [], 1, "target"),
]

# Known herd bugs: (id, why). Reported to the lead engineer.
# Regression cases for bugs fixed while these tests were written: the line
# of a phase is that of its [section] header, and a section without keys is
# an error, not silently dropped.
BAD_JOBS += [
    ("empty-section-last", "[global]\ntarget = {target}\n\n[w]\nkind = write\n\n[r]\n", [],
     7, "kind"),
    ("empty-section-middle", "[global]\ntarget = {target}\n[a]\n[w]\nkind = write\n", [], 3,
     "kind"),
    ("duplicate-section", "[global]\ntarget = {target}\n[w]\nkind = write\n[r]\nkind = read\n"
     "[w]\nseed = 2\n", [], 7, "twice"),
    ("duplicate-global", "[global]\ntarget = {target}\n[w]\nkind = write\n[global]\n"
     "seed = 2\n", [], 5, "twice"),
    ("duplicate-section-adjacent", "[global]\ntarget = {target}\n[w]\nkind = write\n[w]\n"
     "seed = 2\n", [], 5, "twice"),
    ("bad-section-name", "[global]\ntarget = {target}\n[bad name]\nkind = write\n", [], 3,
     "bad name"),
]


def _bad_params():
    for case in BAD_JOBS:
        yield pytest.param(*case, id=case[0])


def _make_job(tmp_path, text):
    path = tmp_path / "bad.ini"
    target = tmp_path / "target"
    target.mkdir(exist_ok=True)
    if text is None:
        return tmp_path / "does-not-exist.ini", target
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text.format(target=target))
    return path, target


def _check_message(stderr, job, line, needle, extra):
    lines = stderr.splitlines()
    assert len(lines) == 1, f"stderr is not one line: {stderr!r}"
    msg = lines[0]
    assert msg.startswith("herd: "), msg
    if extra:  # a command-line error names the job and the option at fault
        key = extra[-1].split("=", 1)[0]
        assert msg.startswith(f"herd: {job}: {extra[0]} {key}: "), msg
    elif line is not None:
        assert msg.startswith(f"herd: {job}:{line}: "), msg
    else:
        assert msg.startswith(f"herd: {job}: "), msg
    assert needle in msg, msg


@pytest.mark.parametrize("case,text,extra,line,needle", list(_bad_params()))
def test_bad_job_check(herd_bin, tmp_path, case, text, extra, line, needle):
    job, target = _make_job(tmp_path, text)
    proc = herd_cmd(herd_bin, "check", job, *extra)
    assert proc.returncode == 2, describe(proc)
    assert proc.stdout == "", describe(proc)
    _check_message(proc.stderr, job, line, needle, extra)


@pytest.mark.parametrize("case,text,extra,line,needle", list(_bad_params()))
def test_bad_job_run(herd_bin, tmp_path, case, text, extra, line, needle):
    job, target = _make_job(tmp_path, text)
    out = tmp_path / "bad.h5"
    proc = herd_run(herd_bin, 2, job, out, *extra, quiet=True)
    assert proc.returncode == 2, describe(proc)
    _check_message(proc.stderr, job, line, needle, extra)
    assert not out.exists(), "a results file was made for a bad job"
    assert tree(target) == []
    if case != "binary-file":  # see test_binary_job_same_message
        check = herd_cmd(herd_bin, "check", job, *extra)
        assert check.stderr == proc.stderr, "check and run disagree"


@pytest.mark.parametrize("command", ["check", "run"])
def test_kind_missing(herd_bin, tmp_path, command):
    """Whatever line it names , a phase without kind is
    one line naming file, a line, the key and the section."""
    job, target = _make_job(tmp_path, "[global]\ntarget = {target}\n\n[w]\nfile_size = 1M\n")
    if command == "check":
        proc = herd_cmd(herd_bin, "check", job)
    else:
        proc = herd_run(herd_bin, 2, job, tmp_path / "x.h5", quiet=True)
    assert proc.returncode == 2, describe(proc)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, describe(proc)
    assert re.fullmatch(rf"herd: {re.escape(str(job))}:\d+: key 'kind': missing in \[w\].*",
                        lines[0]), lines[0]
    assert tree(target) == []


def test_binary_job_same_message(herd_bin, tmp_path):
    job, target = _make_job(tmp_path, b"\x7fELF\x02\x01\x01\x00\x00[w]\nkind=write\n")
    run = herd_run(herd_bin, 2, job, tmp_path / "x.h5", quiet=True)
    check = herd_cmd(herd_bin, "check", job)
    assert run.returncode == check.returncode == 2
    assert check.stderr == run.stderr


# ------------------------------------------------------------ SIGTERM


def test_sigterm_interrupts(herd_bin, tmp_path):
    """SIGTERM to mpirun during a long phase: the results file says
    interrupted, keeps the finished phase whole and the cut one."""
    nranks = 4
    target = tmp_path / "target"
    target.mkdir()
    file_size = 4 << 20
    job = write_job(tmp_path / "long.ini",
                    {"target": target, "file_size": "4M", "block_size": "4K",
                     "fsync": "no"},
                    [("first", {"kind": "write"}),
                     ("second", {"kind": "write", "iterations": 100000})])
    out = tmp_path / "long.h5"
    # mpirun passes the signal on, then SIGKILLs the ranks: give them the
    # time to write 400,000 rows on a busy machine (conftest.STOP_GRACE).
    with herd_background(herd_bin, nranks, "run", job, "-o", out,
                         env=mpi_env(stop_grace=True)) as run:
        seen = run.wait_line("^herd: phase first:", timeout=120)
        assert seen.startswith("herd: phase first: ok"), seen
        time.sleep(0.5)  # well inside 'second'
        assert run.proc.poll() is None, "the run ended before it could be interrupted"
        run.proc.send_signal(signal.SIGTERM)
        done, _ = run.wait(timeout=120)
    rc, stderr, stdout = done.returncode, done.stderr, done.stdout
    info = f"mpirun exit code {rc}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    assert rc != 0, info  # mpirun's own code (Open MPI: 1), not herd's 143

    with h5py.File(out, "r") as f:  # opens cleanly
        assert "phases" in f
    res = load_results(out)
    assert res.attrs["status"] == "interrupted", info
    assert res.attrs["exit_code"] == 128 + signal.SIGTERM, info
    assert set(res.phase_names) == {"first", "second"}, info

    first = res.phases["first"]
    assert first.attrs["status"] == "ok"
    assert len(first.ranks) == nranks
    assert (first.ranks["completed"] == 1).all()
    assert (first.ranks["bytes"] == file_size).all()

    second = res.phases["second"]
    rows = second.ranks
    assert second.attrs["status"] == "interrupted", info
    assert len(rows) == nranks * 100000
    assert (rows["completed"] == 0).any()
    assert not (rows["completed"] == 1).all()
    done = rows["completed"] == 1
    assert (rows["bytes"][done] == file_size).all()
    assert (rows["bytes"][~done] < file_size).all()
    for rank in range(nranks):
        # per rank: finished iterations, at most one cut short, then ones
        # that never began (no ops, no bytes)
        mine = rows[rows["rank"] == rank]
        assert (mine["iteration"] == np.arange(100000)).all()
        ndone = int(mine["completed"].sum())
        assert (mine["completed"][:ndone] == 1).all(), f"rank {rank}"
        assert (mine["ops"][ndone + 1:] == 0).all(), f"rank {rank}"
        assert (mine["bytes"][ndone + 1:] == 0).all(), f"rank {rank}"
    assert (rows["errors"] == 0).all()
    assert len(second.errors) == 0, second.error_rows()
    assert "interrupted" in stdout, info
    assert tree(target) == [], f"left in the target: {tree(target)}"


# ------------------------------------------------------------ existing output


def test_existing_output_kept(herd_bin, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "job.ini",
                    {"target": target, "file_size": "256K", "block_size": "64K"},
                    [("w", {"kind": "write"})])
    out = tmp_path / "exists.h5"
    content = b"results of an earlier run: do not overwrite\n" * 10
    out.write_bytes(content)
    os.utime(out, (1_000_000_000, 1_000_000_000))
    before = out.stat()

    proc = herd_run(herd_bin, 2, job, out, quiet=True)
    assert proc.returncode == 2, describe(proc)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and str(out) in lines[0] and "--force" in lines[0], describe(proc)
    assert out.read_bytes() == content
    after = out.stat()
    assert (after.st_mtime_ns, after.st_size, after.st_ino) == \
        (before.st_mtime_ns, before.st_size, before.st_ino)
    assert tree(target) == []

    # --force replaces only a results file (test_trust.py has the rest):
    # this text file stays; an earlier run's results file is replaced.
    proc = herd_run(herd_bin, 2, job, out, "--force", quiet=True)
    assert proc.returncode == 2 and "not an HDF5 file" in proc.stderr, describe(proc)
    assert out.read_bytes() == content
    earlier = tmp_path / "earlier.h5"
    assert herd_run(herd_bin, 2, job, earlier).returncode == 0
    proc = herd_run(herd_bin, 2, job, earlier, "--force")
    assert proc.returncode == 0, describe(proc)
    assert load_results(earlier).attrs["status"] == "complete"
    assert tree(target) == []


# ------------------------------------------------------------ --set values

SET_JOB = "[global]\ntarget = {target}\nfile_size = 1M\n\n[w]\nkind = write\n"


@pytest.mark.parametrize("setting,needle", [
    pytest.param("file_size=16Q", "16Q", id="bad-size"),
    pytest.param("keep=maybe", "maybe", id="bad-bool"),
    pytest.param("run_id=a/b", "a/b", id="bad-run-id"),
    pytest.param("block_size=32M", "block_size", id="block-larger-than-file"),
])
@pytest.mark.parametrize("command", ["check", "run"])
def test_bad_set_value(herd_bin, tmp_path, command, setting, needle):
    """A bad value from the command line: exit 2, one line naming the key and
    value, and no line of the job file is blamed for it."""
    job, target = _make_job(tmp_path, SET_JOB)
    if command == "check":
        proc = herd_cmd(herd_bin, "check", job, "--set", setting)
    else:
        proc = herd_run(herd_bin, 2, job, tmp_path / "x.h5", "--set", setting, quiet=True)
    assert proc.returncode == 2, describe(proc)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, describe(proc)
    key = setting.split("=")[0]
    assert needle in lines[0] and key in lines[0], lines[0]
    assert not re.match(rf"herd: {re.escape(str(job))}:\d+:", lines[0]), lines[0]
    assert tree(target) == []


# ------------------------------------------------------------ unusable paths


def test_missing_target(herd_bin, tmp_path):
    job = write_job(tmp_path / "job.ini", {"target": tmp_path / "no-such-dir"},
                    [("w", {"kind": "write", "file_size": "256K", "block_size": "64K"})])
    out = tmp_path / "x.h5"
    proc = herd_run(herd_bin, 2, job, out, quiet=True)
    assert proc.returncode == 2, describe(proc)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, describe(proc)
    assert str(tmp_path / "no-such-dir") in lines[0] and "No such file" in lines[0], lines[0]
    assert not out.exists()
    assert not (tmp_path / "no-such-dir").exists()


def _unwritable_output_run(herd_bin, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "job.ini", {"target": target},
                    [("w", {"kind": "write", "file_size": "256K", "block_size": "64K"})])
    out = tmp_path / "no-such-dir" / "x.h5"
    return herd_run(herd_bin, 2, job, out, quiet=True), out, target


def test_unwritable_output(herd_bin, tmp_path):
    proc, out, target = _unwritable_output_run(herd_bin, tmp_path)
    assert proc.returncode == 2, describe(proc)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, describe(proc)
    assert lines[0].startswith(f"herd: {out}: "), lines[0]
    assert tree(target) == []


def test_unwritable_output_names_path_once(herd_bin, tmp_path):
    proc, out, target = _unwritable_output_run(herd_bin, tmp_path)
    assert proc.returncode == 2, describe(proc)
    assert proc.stderr.count(f"{out}:") == 1, proc.stderr
