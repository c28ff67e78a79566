"""What herd itself writes outside the target follows one safe-output rule
(src/lib/safeout.h): the results file (-o), the --json summary and a lost
phase's CSV are made under a private name (O_EXCL, no link followed) in a
directory opened once, then renamed into place: only where nothing is,
or, with --force, only over the very file the checks allowed. These tests
plant what another user of a shared results directory could plant, as
that user (nobody) where it matters, and check that nothing but herd's own
files changes.

1. -o: a link planted after the check (the window is held open by
   delaying the run directory's mkdir): not followed, the run refused.
2. --force: the checked results file swapped for a link meanwhile: the
   link is not replaced, its target untouched.
3. --json refuses an existing file, replaces with --force only an earlier
   herd summary, never the results file.
4. Planted names beside the summary (the old fixed FILE.tmp: a hard link,
   a FIFO, a device) are never written, opened or removed.
5. Outputs inside the run directory (even through a link) are refused.
6. A summary that cannot be written: exit 4, "NOT written", and no older
   summary left under the name.
7. A lost phase's CSV never goes through a planted link.
"""

import contextlib
import os
import pwd
import shutil
import stat
import tempfile
import time
from pathlib import Path

import pytest

from conftest import (Background, as_user, describe, herd_run, load_results, other_user,
                      require_root, tree, write_job)

USER = "nobody"


def small_job(tmp_path, target, **extra):
    g = {"target": target, "file_size": "64K", "block_size": "16K", **extra}
    return write_job(tmp_path / "job.ini", g,
                     [("w", {"kind": "write"}), ("r", {"kind": "read", "verify": "yes"})])


def herd_lines(proc):
    return [l for l in proc.stderr.splitlines() if l.startswith("herd:")]


def one_line_error(proc):
    lines = herd_lines(proc)
    assert len(lines) == 1, describe(proc)
    return lines[0]


def private_names(directory):
    """herd's private names (".NAME.herd-XXXXXXXX") left in directory."""
    return [p.name for p in Path(directory).iterdir() if ".herd-" in p.name]


@pytest.fixture
def shared_dir():
    """A results directory every user may write (0777, no sticky bit), as
    on a careless shared file system; removed afterwards."""
    d = Path(tempfile.mkdtemp(prefix="herd-shared-", dir="/tmp"))
    d.chmod(0o777)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def as_other_user(*args):
    """args as user nobody (no groups, no capabilities): the other user."""
    user = other_user(USER, "to act as another user")
    proc = as_user(user.pw_uid, user.pw_gid, args, env=None, cwd=None, timeout=30)
    assert proc.returncode == 0, describe(proc)


VICTIM_TEXT = "precious data of another user\n"


@pytest.fixture
def victim():
    """A file of root's outside the results directory that the other user
    can reach (its directory 0755), but herd must never write."""
    d = Path(tempfile.mkdtemp(prefix="herd-victim-", dir="/tmp"))
    d.chmod(0o755)
    v = d / "victim.txt"
    v.write_text(VICTIM_TEXT)
    try:
        yield v
    finally:
        shutil.rmtree(d, ignore_errors=True)


def slow_mkdir_run(herd_bin, job, *herd_args, seconds=3.0):
    """herd run with its first mkdirat (the run directory's) held for
    `seconds` after it made the directory: the window between the outputs'
    checks and the results file's creation, as a slow server opens it.
    Returns the Background run."""
    if not shutil.which("strace"):
        pytest.skip("strace is needed to hold the window open")
    strace = ["strace", "-qq", "-f", "-o", "/dev/null", "-e", "trace=mkdirat",
              "-e", f"inject=mkdirat:delay_exit={int(seconds * 1e6)}:when=1"]
    args = ["mpirun", "-np", "1", *strace, herd_bin, "run", str(job), *map(str, herd_args)]
    return Background(args)


def wait_for_rundir(target, run, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(p.name.startswith("herd-") for p in Path(target).iterdir()):
            return
        if run.proc.poll() is not None:
            pytest.fail(f"herd ended before it made its run directory:\n{run.err.rest(5)}")
        time.sleep(0.01)
    pytest.fail("herd never made its run directory")


# ---------------------------------------------------------------- 1. -o race


def test_results_link_planted_after_the_check_is_not_followed(herd_bin, tmp_path, shared_dir, victim):
    require_root()
    target = tmp_path / "target"
    target.mkdir()
    job = small_job(tmp_path, target)
    out = shared_dir / "run.h5"
    with slow_mkdir_run(herd_bin, job, "-o", out) as run:
        wait_for_rundir(target, run)
        as_other_user("ln", "-s", victim, out)  # in the window: checked, not yet made
        done, _ = run.wait()
    err = done.stderr
    assert victim.read_text() == VICTIM_TEXT, "herd wrote through the link"
    assert out.is_symlink(), "herd replaced another user's entry"
    assert done.returncode != 0, err
    said = [l for l in err.splitlines() if l.startswith("herd:") and "not replaced" in l]
    assert len(said) == 1 and str(out) in said[0], err
    assert private_names(shared_dir) == []
    assert tree(target) == []


# ---------------------------------------------------------------- 2. --force race


def test_force_replaces_only_the_checked_file(herd_bin, tmp_path, shared_dir, victim):
    require_root()
    target = tmp_path / "target"
    target.mkdir()
    job = small_job(tmp_path, target)
    out = shared_dir / "run.h5"
    first = herd_run(herd_bin, 2, job, out)
    assert first.returncode == 0, describe(first)
    with slow_mkdir_run(herd_bin, job, "-o", out, "--force") as run:
        wait_for_rundir(target, run)
        # The checked results file is swapped for a link to the victim.
        as_other_user("sh", "-c", f'mv "{out}" "{out}.moved" && ln -s "{victim}" "{out}"')
        done, _ = run.wait()
    err = done.stderr
    assert victim.read_text() == VICTIM_TEXT
    assert out.is_symlink() and Path(f"{out}.moved").exists()
    assert done.returncode != 0 and "not replaced" in err, err
    assert private_names(shared_dir) == []
    # Undisturbed, --force replaces the earlier results file in place.
    os.unlink(out)
    os.rename(f"{out}.moved", out)
    again = herd_run(herd_bin, 2, job, out, "--force")
    assert again.returncode == 0, describe(again)
    assert load_results(out).attrs["status"] == "complete"


def test_force_refuses_a_hard_linked_or_foreign_results_file(herd_bin, tmp_path, shared_dir):
    require_root()
    target = tmp_path / "target"
    target.mkdir()
    job = small_job(tmp_path, target)
    theirs = shared_dir / "theirs.h5"
    assert herd_run(herd_bin, 2, job, theirs).returncode == 0
    before = theirs.read_bytes()
    link = shared_dir / "mine.h5"
    os.link(theirs, link)  # another name of someone's results file
    proc = herd_run(herd_bin, 2, job, link, "--force", quiet=True)
    assert proc.returncode == 2 and "hard links" in one_line_error(proc), describe(proc)
    os.unlink(link)
    user = pwd.getpwnam(USER)
    os.chown(theirs, user.pw_uid, user.pw_gid)
    proc = herd_run(herd_bin, 2, job, theirs, "--force", quiet=True)
    assert proc.returncode == 2 and "not to this user" in one_line_error(proc), describe(proc)
    assert theirs.read_bytes() == before
    assert tree(target) == []


# ---------------------------------------------------------------- 3. --json rules


def test_json_refuses_what_is_not_an_earlier_summary(herd_bin, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    job = small_job(tmp_path, target)
    precious = tmp_path / "precious.txt"
    precious.write_text("my notes\n")
    job_text = job.read_text()
    for path in (precious, job):
        for extra in ((), ("--force",)):
            proc = herd_run(herd_bin, 2, job, tmp_path / "r.h5", "--json", path, *extra,
                            quiet=True)
            assert proc.returncode == 2, describe(proc)
            line = one_line_error(proc)
            assert "--json" in line and str(path) in line, line
            assert not (tmp_path / "r.h5").exists()
    assert precious.read_text() == "my notes\n" and job.read_text() == job_text
    # -o c.h5 --json c.h5: the results file is never the summary.
    both = tmp_path / "c.h5"
    first = herd_run(herd_bin, 2, job, both)
    assert first.returncode == 0
    before = both.read_bytes()
    proc = herd_run(herd_bin, 2, job, both, "--force", "--json", both, quiet=True)
    assert proc.returncode == 2 and "names the results file" in one_line_error(proc)
    assert both.read_bytes() == before
    # An earlier summary is replaced with --force, and only then.
    js = tmp_path / "s.json"
    assert herd_run(herd_bin, 2, job, tmp_path / "a.h5", "--json", js).returncode == 0
    earlier = js.read_text()
    proc = herd_run(herd_bin, 2, job, tmp_path / "b.h5", "--json", js, quiet=True)
    assert proc.returncode == 2 and "exists" in one_line_error(proc)
    proc = herd_run(herd_bin, 2, job, tmp_path / "b.h5", "--json", js, "--force")
    assert proc.returncode == 0, describe(proc)
    assert js.read_text() != earlier and '"results_file":"' + str(tmp_path / "b.h5") in \
        js.read_text()
    assert private_names(tmp_path) == []
    assert tree(target) == []


# ---------------------------------------------------------------- 4. planted FILE.tmp


def test_planted_names_beside_the_summary_are_never_touched(herd_bin, tmp_path, shared_dir, victim):
    require_root()
    target = tmp_path / "target"
    target.mkdir()
    job = small_job(tmp_path, target)
    victim.chmod(0o666)  # root's, but nobody may link it (protected_hardlinks)
    js = shared_dir / "x.json"
    # What herd wrote before a summary was complete: x.json.tmp. Another
    # user plants a hard link there, then a FIFO, then a device node.
    as_other_user("ln", victim, f"{js}.tmp")
    proc = herd_run(herd_bin, 2, job, tmp_path / "1.h5", "--json", js, timeout=120)
    assert proc.returncode == 0, describe(proc)
    assert victim.read_text() == VICTIM_TEXT
    assert os.stat(f"{js}.tmp").st_ino == victim.stat().st_ino
    os.unlink(f"{js}.tmp")
    os.unlink(js)
    as_other_user("mkfifo", f"{js}.tmp")
    proc = herd_run(herd_bin, 2, job, tmp_path / "2.h5", "--json", js, timeout=120)
    assert proc.returncode == 0, describe(proc)
    assert stat.S_ISFIFO(os.lstat(f"{js}.tmp").st_mode)
    os.unlink(f"{js}.tmp")
    os.unlink(js)
    os.mknod(f"{js}.tmp", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    proc = herd_run(herd_bin, 2, job, tmp_path / "3.h5", "--json", js, timeout=120)
    assert proc.returncode == 0, describe(proc)
    assert stat.S_ISCHR(os.lstat(f"{js}.tmp").st_mode), "herd removed a device node it did not make"
    assert js.read_text().startswith('{"schema_version":')
    assert private_names(shared_dir) == []


# ---------------------------------------------------------------- 5. inside the run dir


def test_outputs_inside_the_run_directory_are_refused(herd_bin, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    job = small_job(tmp_path, target, run_id="fixed", keep="yes")
    assert herd_run(herd_bin, 2, job, tmp_path / "first.h5").returncode == 0
    rundir = target / "herd-fixed"
    data = sorted(p for p in rundir.rglob("*") if p.is_file() and p.suffix == ".dat")
    assert data, tree(target)
    data[0].unlink()  # the name the next run's write phase will use
    before = {p: p.read_bytes() for p in data[1:]}
    alias = tmp_path / "alias"
    alias.symlink_to(rundir)  # the same directory by another path
    for opt, where in (("-o", data[0]), ("-o", rundir / "new.h5"), ("-o", alias / "new.h5"),
                       ("--json", rundir / "s.json"), ("--json", alias / "s.json")):
        out = where if opt == "-o" else tmp_path / "r.h5"
        extra = ("--json", where) if opt == "--json" else ()
        proc = herd_run(herd_bin, 2, job, out, *extra, quiet=True)
        assert proc.returncode == 2, describe(proc)
        line = one_line_error(proc)
        assert "inside the run directory" in line and opt in line, line
        assert not data[0].exists(), "the results file was made in the run directory"
        assert not (rundir / "new.h5").exists() and not (rundir / "s.json").exists()
        assert not (tmp_path / "r.h5").exists()
    assert {p: p.read_bytes() for p in data[1:]} == before
    # The target itself is no results file either.
    proc = herd_run(herd_bin, 2, job, target, quiet=True)
    assert proc.returncode == 2 and "a directory" in one_line_error(proc), describe(proc)


# ---------------------------------------------------------------- 6. --json failure


def test_summary_that_cannot_be_written_fails_the_run(herd_bin, tmp_path, mount_fs):
    require_root()
    small = mount_fs("tmpfs", size="64k")
    target = tmp_path / "target"
    target.mkdir()
    job = small_job(tmp_path, target)
    js = small.path / "x.json"
    assert herd_run(herd_bin, 2, job, tmp_path / "a.h5", "--json", js).returncode == 0
    fd = os.open(small.path / "fill", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    with contextlib.suppress(OSError):  # the rest of the file system
        while os.write(fd, b"\0" * 4096):
            pass
    os.close(fd)
    proc = herd_run(herd_bin, 2, job, tmp_path / "b.h5", "--json", js, "--force")
    assert proc.returncode == 4, describe(proc)
    assert "summary: NOT written" in proc.stdout, proc.stdout
    assert any("--json" in l and "No space left" in l for l in herd_lines(proc)), proc.stderr
    assert not js.exists(), "the earlier run's summary is still under the name"
    assert private_names(small.path) == []
    assert load_results(tmp_path / "b.h5").attrs["status"] == "complete"


# ---------------------------------------------------------------- 7. lost CSVs


def test_lost_phase_csv_never_goes_through_a_link(herd_bin, tmp_path, mount_fs, victim):
    require_root()
    small = mount_fs("tmpfs", size="1100k")
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "job.ini",
                    {"target": target, "file_size": "64K", "block_size": "4K",
                     "iterations": 200},
                    [("w", {"kind": "write"})])
    out = small.path / "run.h5"
    Path(f"{out}.w.lost.csv").symlink_to(victim)
    proc = herd_run(herd_bin, 2, job, out)
    assert proc.returncode == 4, describe(proc)
    assert victim.read_text() == VICTIM_TEXT
    assert Path(f"{out}.w.lost.csv").is_symlink()
    lost = [l for l in proc.stderr.splitlines() if l.startswith("herd-lost,")]
    assert len([l for l in lost if l[10:11].isdigit()]) == 2 * 200, proc.stderr[-2000:]
    assert private_names(small.path) == []
