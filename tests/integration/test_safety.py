"""Path safety: herd never reads, writes or deletes outside its run directory,
whatever symbolic links are planted under the target (src/backend/safepath.c, the
POSIX and libnfs backends). Every test plants links in a target it made and
keeps a canary tree outside the target; the canary is hashed (sha256 of every
file, plus the listing with link targets) before and after and must not
change.

a. A data file planted as a link to a canary file (fixed run_id, keep = yes,
   then keep = no): the canary is unchanged, ELOOP is counted on the open of
   the rank whose file it is, and the link survives the clean-up.
b. The fileset directory planted as a link to an outside directory holding a
   canary tree (with files named as herd's own): nothing written or removed
   there, ELOOP counted on every rank.
c. A race: a thread swaps the fileset directory for a link to the canary
   directory and back (rename dance) while 4 ranks write small files many
   times and run a meta phase: the canary tree is identical afterwards, and
   the ranks met the swap (ELOOP/EXDEV at the link or ENOENT at the slot).
d. (a) and (b) run by an unprivileged user (nobody) owning the target, with a
   canary that user could write.
e. Over libnfs against the embedded ganesha server: a data file and the
   fileset directory planted as links inside the export, over NFSv3 and
   NFSv4 (whose directory checks and opens differ; NFSv4 writes go through
   herd's own OPEN and WRITEs): ELOOP counted, the canary in the export
   untouched; and, where herd keeps its directories open by handle, the
   fileset directory swapped for a link again and again during the run:
   the canary untouched.

Run: /usr/bin/python3 -m pytest -q -rs tests/integration/test_safety.py
"""

import contextlib
import errno
import hashlib
import os
import pwd
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from conftest import (Background, describe, herd_run, load_results, mpi_env, mpirun_args,
                      run_cmd, write_job)

CANARY = b"canary: herd must never touch this\n"


def snapshot(top):
    """{relative path: what it is} for everything under top: a file's sha256
    and mode, a link's target, a directory."""
    top = Path(top)
    out = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(top))
            st = p.lstat()
            if p.is_symlink():
                out[rel] = ("link", os.readlink(p))
            elif p.is_dir():
                out[rel] = ("dir", st.st_mode)
            else:
                out[rel] = ("file", hashlib.sha256(p.read_bytes()).hexdigest(), st.st_mode,
                            st.st_size)
    return out


def make_canary(outside, owner=None):
    """An outside directory with files named like herd's (so a followed link
    would hit them) and a subtree."""
    outside = Path(outside)
    (outside / "sub").mkdir(parents=True)
    for name in ("canary", "r000000.dat", "r000001.dat", "shared.dat", "sub/keep"):
        (outside / name).write_bytes(CANARY)
        os.chmod(outside / name, 0o666)  # writable: only herd's refusal protects it
    if owner is not None:
        for p in [outside, outside / "sub"] + [outside / n for n in
                                               ("canary", "r000000.dat", "r000001.dat",
                                                "shared.dat", "sub/keep")]:
            os.chown(p, owner, -1)
    return snapshot(outside)


def errors_of(res, phase):
    """{(rank, op, errno name): count} of a phase."""
    return {(int(r["rank"]), r["op"], r["errno_name"]): int(r["count"])
            for r in res.phases[phase].error_rows()}


def io_job(path, target, run_id, keep, iterations=1):
    gl = {"target": target, "run_id": run_id, "keep": keep, "fileset": "fs",
          "file_size": "64K", "block_size": "16K", "iterations": iterations}
    phases = [("w", {"kind": "write"}), ("r", {"kind": "read", "verify": "yes"})]
    return write_job(path, gl, phases)


# ---------------------------------------------------------------- a, b (and d)


def plant_data_file(base, run_id, uid=None):
    """target/herd-<id>/fs/r000000.dat -> base/outside/r000000.dat (absolute)."""
    target, outside = base / "target", base / "outside"
    fs = target / f"herd-{run_id}" / "fs"
    fs.mkdir(parents=True)
    before = make_canary(outside, uid)
    (fs / "r000000.dat").symlink_to(outside / "r000000.dat")
    if uid is not None:
        for p in (target, fs.parent, fs):
            os.chown(p, uid, -1)
        os.lchown(fs / "r000000.dat", uid, -1)
    return target, outside, fs, before


def plant_fileset_dir(base, run_id, uid=None):
    """target/herd-<id>/fs -> base/outside (absolute)."""
    target, outside = base / "target", base / "outside"
    rundir = target / f"herd-{run_id}"
    rundir.mkdir(parents=True)
    before = make_canary(outside, uid)
    (rundir / "fs").symlink_to(outside)
    if uid is not None:
        for p in (target, rundir):
            os.chown(p, uid, -1)
        os.lchown(rundir / "fs", uid, -1)
    return target, outside, rundir / "fs", before


def check_data_file_case(run, base, uid=None):
    run_id = "safety-a"
    target, outside, fs, before = plant_data_file(base, run_id, uid)
    for keep in ("yes", "no"):
        job = io_job(base / f"a-{keep}.ini", target, run_id, keep)
        out = base / f"a-{keep}.h5"
        proc = run(job, out)
        assert snapshot(outside) == before, f"keep={keep}: the canary changed\n" + describe(proc)
        assert (fs / "r000000.dat").is_symlink(), f"keep={keep}: the planted link was removed"
        assert proc.returncode == 3, describe(proc)
        res = load_results(out)
        w = errors_of(res, "w")
        assert w.get((0, "open", "ELOOP"), 0) >= 1, f"keep={keep}: {w}\n{describe(proc)}"
        assert not [k for k in w if k[0] != 0], f"keep={keep}: rank 1 failed: {w}"
        r = errors_of(res, "r")
        assert r.get((0, "open", "ELOOP"), 0) >= 1, f"keep={keep}: {r}"
        if keep == "yes":
            # rank 1's own file was written where it belongs
            assert (fs / "r000001.dat").stat().st_size == 64 << 10


def check_fileset_dir_case(run, base, uid=None):
    run_id = "safety-b"
    target, outside, fs, before = plant_fileset_dir(base, run_id, uid)
    for keep in ("yes", "no"):
        job = io_job(base / f"b-{keep}.ini", target, run_id, keep)
        out = base / f"b-{keep}.h5"
        proc = run(job, out)
        assert snapshot(outside) == before, f"keep={keep}: the canary changed\n" + describe(proc)
        assert fs.is_symlink(), f"keep={keep}: the planted link was removed"
        assert proc.returncode == 3, describe(proc)
        res = load_results(out)
        for ph in ("w", "r"):
            e = errors_of(res, ph)
            for rank in (0, 1):
                n = sum(v for (rk, op, name), v in e.items()
                        if rk == rank and name in ("ELOOP", "EXDEV"))
                assert n >= 1, f"keep={keep} phase {ph} rank {rank}: {e}\n{describe(proc)}"


def root_runner(herd_bin):
    def run(job, out):
        return herd_run(herd_bin, 2, job, out)
    return run


def test_planted_data_file(herd_bin, tmp_path):
    check_data_file_case(root_runner(herd_bin), tmp_path)


def test_planted_fileset_dir(herd_bin, tmp_path):
    check_fileset_dir_case(root_runner(herd_bin), tmp_path)


# ---------------------------------------------------------------- c. race


class Swapper:
    """Swaps dir for a symbolic link to outside and back, again and again:
    link made aside, dir renamed away, link renamed in, held a moment, link
    renamed out, dir renamed back. Never touches outside."""

    def __init__(self, dir_, outside):
        self.dir, self.outside = Path(dir_), Path(outside)
        self.aside = self.dir.with_name("fs.aside")
        self.link = self.dir.with_name("fs.link")
        self.stop = threading.Event()
        self.swaps = self.failures = 0
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _restore(self):
        """Back to: dir a real directory, no link, nothing aside."""
        if self.link.is_symlink():
            self.link.unlink()
        if self.dir.is_symlink():
            self.dir.unlink()
        if self.aside.exists():
            if self.dir.exists():  # a rank made a new one meanwhile: keep both
                self.aside.rename(self.dir.with_name(f"fs.old-{self.failures}"))
            else:
                self.aside.rename(self.dir)

    def _loop(self):
        while not self.stop.is_set():
            try:
                os.symlink(self.outside, self.link)
                os.rename(self.dir, self.aside)
                os.rename(self.link, self.dir)
                self.swaps += 1
                time.sleep(0.0005)
                os.rename(self.dir, self.link)
                os.unlink(self.link)
                os.rename(self.aside, self.dir)
            except OSError:
                self.failures += 1
                with contextlib.suppress(OSError):
                    self._restore()
            time.sleep(0.0005)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(30)
        with contextlib.suppress(OSError):
            self._restore()


def test_fileset_dir_swapped_during_run(herd_bin, tmp_path):
    run_id = "safety-c"
    target, outside = tmp_path / "target", tmp_path / "outside"
    fs = target / f"herd-{run_id}" / "fs"
    fs.mkdir(parents=True)
    before = make_canary(outside)
    gl = {"target": target, "run_id": run_id, "keep": "no", "fileset": "fs"}
    phases = [("w", {"kind": "write", "file_size": "4K", "block_size": "4K",
                     "iterations": 400}),
              ("m", {"kind": "meta", "dirs": 4, "files": 200}),
              ("w2", {"kind": "write", "file_size": "4K", "block_size": "4K",
                      "iterations": 400})]
    job = write_job(tmp_path / "race.ini", gl, phases)
    out = tmp_path / "race.h5"
    with Swapper(fs, outside) as sw:
        proc = herd_run(herd_bin, 4, job, out)
    after = snapshot(outside)
    assert after == before, (f"the canary tree changed: added {set(after) - set(before)}, "
                             f"removed {set(before) - set(after)}\n{describe(proc)}")
    assert sw.swaps >= 20, f"only {sw.swaps} swaps: the race was not run"
    res = load_results(out)
    # A rank meets the swap either as the planted link (ELOOP, EXDEV) or as the
    # empty slot while the directory is renamed aside (ENOENT, ENOTDIR); which
    # one is timing (ranks keep a safely opened fileset directory, so on a
    # loaded machine they may only ever see the slot). Either proves the race
    # ran against herd's calls.
    met = {name: 0 for name in ("ELOOP", "EXDEV", "ENOENT", "ENOTDIR")}
    for ph in res.phase_names:
        for (_, _, name), v in errors_of(res, ph).items():
            if name in met:
                met[name] += v
    print(f"\nswaps {sw.swaps} (failed {sw.failures}); errors met: {met}; "
          f"exit {proc.returncode}")
    assert proc.returncode in (0, 3), describe(proc)
    assert sum(met.values()) >= 1, "no rank ever met the swapped directory: the race did not bite"


# ---------------------------------------------------------------- d. unprivileged


def _nobody():
    try:
        return pwd.getpwnam("nobody")
    except KeyError:
        return None


def _why_skip_unprivileged(herd_bin):
    if os.geteuid() != 0:
        return "needs root to run herd as another user"
    if _nobody() is None or shutil.which("runuser") is None:
        return "no user 'nobody' or no runuser here"
    p = subprocess.run(["runuser", "-u", "nobody", "--", "test", "-x", herd_bin],
                       capture_output=True)
    if p.returncode != 0:
        return f"user nobody cannot execute {herd_bin} (a parent directory is not readable)"
    return None


@contextlib.contextmanager
def nobody_dir():
    """A directory under /tmp that user nobody can reach, removed afterwards."""
    base = Path(tempfile.mkdtemp(prefix="herd-safety-"))
    try:
        os.chmod(base, 0o755)
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def nobody_runner(herd_bin, base):
    uid = _nobody().pw_uid
    out_dir = base / "out"
    out_dir.mkdir(exist_ok=True)
    os.chown(out_dir, uid, -1)

    def run(job, out):
        os.chmod(job, 0o644)
        env = mpi_env()
        env["HOME"] = str(out_dir)
        for k in ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"):
            env.pop(k, None)
        mine = out_dir / Path(out).name
        args = ["runuser", "-u", "nobody", "--"] + mpirun_args(herd_bin, 2, "run", job, "-o",
                                                                 mine)
        proc = run_cmd(args, env=env, cwd=out_dir)
        if mine.exists():
            shutil.copy(mine, out)
        return proc
    return run, uid


@pytest.mark.parametrize("case", ["data_file", "fileset_dir"])
def test_planted_links_unprivileged(herd_bin, case):
    why = _why_skip_unprivileged(herd_bin)
    if why:
        pytest.skip(why)
    with nobody_dir() as base:
        run, uid = nobody_runner(herd_bin, base)
        check = check_data_file_case if case == "data_file" else check_fileset_dir_case
        check(run, base, uid)


# ---------------------------------------------------------------- e. libnfs


def has_libnfs(herd_bin):
    keys = subprocess.run([herd_bin, "keys"], capture_output=True, text=True, timeout=30)
    return "libnfs" in keys.stdout


@contextlib.contextmanager
def libnfs_export(herd_bin, tmp_path, extra=""):
    """The embedded NFS server on an xfs export, for the libnfs cases (skipped
    where it cannot run), with a canary tree `outside` in the export (files
    canary, r000000.dat, r000001.dat, sub/keep) and then the shell script
    extra run in the export. Yields (server, sh, listing): sh(script) runs a
    script on the server's file system with $1 the export and returns its
    output; listing() lists the canary tree (links, files' digests)."""
    try:
        import test_nfs
    except Exception as e:  # noqa: BLE001 - its own skip logic lives there
        pytest.skip(f"test_nfs helpers unavailable: {e}")
    if test_nfs._WHY:
        pytest.skip(test_nfs._WHY)
    if not has_libnfs(herd_bin):
        pytest.skip(f"{herd_bin} has no libnfs backend (build with -DHERD_WITH_LIBNFS=ON)")
    s = test_nfs.Server(tmp_path / "nfs")
    try:
        s.start("--fs", "xfs", "--size", "1G")
        export = test_nfs.export_dir(s)

        def sh(script):
            p = s.cmd("exec", "--state", s.state, "--server-fs", "--", "sh", "-ec", script,
                      "sh", export)
            assert p.returncode == 0, f"{script}: {p.stderr}"
            return p.stdout

        sh('cd "$1" && mkdir -p outside/sub && '
           f'for f in canary r000000.dat r000001.dat sub/keep; do '
           f'printf "{CANARY.decode().strip()}" > outside/$f; chmod 666 outside/$f; done' +
           (f" && {extra}" if extra else ""))

        def listing():
            return sh('cd "$1" && find outside -exec sh -c \'for p; do if [ -L "$p" ]; then '
                      'echo "$p -> $(readlink "$p")"; elif [ -f "$p" ]; then '
                      'echo "$p $(sha256sum < "$p")"; else echo "$p/"; fi; done\' sh {} + | sort')

        yield s, sh, listing
    finally:
        s.stop(check=False)
    s.assert_clean()


# data: write and read phases (the open path: over NFSv4 a write's is
# herd's own OPEN in the kept parent); meta: create, stat, unlink and
# rmdir, which check the directories first (NFSv3 and NFSv4 each their own
# way).
@pytest.mark.parametrize("version,work", [(3, "data"), (4, "data"), (3, "meta"), (4, "meta")])
def test_planted_links_over_libnfs(herd_bin, tmp_path, version, work):
    # In the export: a run directory whose data file is a link to the
    # canary, another whose fileset directory is a link to it (relative
    # links: libnfs resolves them inside the export, so it could follow them).
    with libnfs_export(herd_bin, tmp_path,
                       'mkdir -p herd-nfs-a/fs herd-nfs-b && '
                       'ln -s ../../outside/r000000.dat herd-nfs-a/fs/r000000.dat && '
                       'ln -s ../outside herd-nfs-b/fs') as (s, sh, listing):
        import test_nfs  # libnfs_export skipped the test where it cannot
        before = listing()
        for run_id in ("nfs-a", "nfs-b"):
            for keep in ("yes", "no"):
                gl = {"backend": "libnfs", "target": s.url, "run_id": run_id, "keep": keep,
                      "fileset": "fs", "file_size": "64K", "block_size": "16K",
                      "op_timeout": 10, "nfs_version": version}
                phases = [("w", {"kind": "write"}), ("r", {"kind": "read", "verify": "yes"})]
                ranks = (0,) if run_id == "nfs-a" else (0, 1)
                if work == "meta":
                    gl.update({"file_size": 0, "fsync": "no", "dirs": 1, "files": 4})
                    # no rmdir: a directory made through a link would stay to be seen
                    phases = [("w", {"kind": "meta", "meta_ops": "create,stat,unlink"})]
                    ranks = () if run_id == "nfs-a" else (0, 1)  # no f* name is a link
                job = write_job(tmp_path / f"{run_id}-{keep}.ini", gl, phases)
                out = tmp_path / f"{run_id}-{keep}.h5"
                proc = test_nfs.herd_run_nfs(s, herd_bin, 2, job, out)
                assert listing() == before, f"{run_id} keep={keep}: canary changed\n" + \
                    describe(proc)
                assert proc.returncode == (3 if ranks else 0), describe(proc)
                w = errors_of(load_results(out), "w")
                for rank in ranks:
                    assert w.get((rank, "open", "ELOOP"), 0) >= 1, f"{run_id} {keep}: {w}"
                    if work == "meta":  # the rank's directories: the directory check's
                        assert w.get((rank, "mkdir", "ELOOP"), 0) >= 1, f"{run_id} {keep}: {w}"
        sh('cd "$1" && test -L herd-nfs-a/fs/r000000.dat && test -L herd-nfs-b/fs')


# A hard link planted at a data file's name in a fixed run_id's tree (the
# same user can make one to any file of theirs) is never written: herd makes
# no hard links, so a second name means the file is not only the run's. The
# open is refused (EMLINK) and the outside file keeps its bytes; the other
# rank's file is written as ever.
def test_planted_hard_link(herd_bin, tmp_path):
    target, outside = tmp_path / "target", tmp_path / "outside"
    fs = target / "herd-hl" / "fs"
    fs.mkdir(parents=True)
    before = make_canary(outside)
    os.link(outside / "r000000.dat", fs / "r000000.dat")
    gl = {"target": target, "run_id": "hl", "keep": "yes", "fileset": "fs",
          "file_size": "64K", "block_size": "16K"}
    job = write_job(tmp_path / "hl.ini", gl, [("w", {"kind": "write"})])
    out = tmp_path / "hl.h5"
    proc = herd_run(herd_bin, 2, job, out)
    assert snapshot(outside) == before, describe(proc)
    assert proc.returncode == 3, describe(proc)
    w = errors_of(load_results(out), "w")
    assert w.get((0, "open", "EMLINK"), 0) >= 1, w
    assert all(rank == 0 for (rank, _, _) in w), w
    assert (fs / "r000001.dat").stat().st_size == 64 * 1024


@pytest.mark.parametrize("version", [3, 4])
def test_planted_hard_link_over_libnfs(herd_bin, tmp_path, version):
    with libnfs_export(herd_bin, tmp_path, 'mkdir -p herd-nfs-h/fs && '
                       'ln outside/r000000.dat herd-nfs-h/fs/r000000.dat') as (s, sh, listing):
        import test_nfs  # libnfs_export skipped the test where it cannot
        before = listing()
        gl = {"backend": "libnfs", "target": s.url, "run_id": "nfs-h", "keep": "yes",
              "fileset": "fs", "file_size": "64K", "block_size": "16K", "op_timeout": 10,
              "nfs_version": version}
        job = write_job(tmp_path / "hl.ini", gl, [("w", {"kind": "write"})])
        out = tmp_path / "hl.h5"
        proc = test_nfs.herd_run_nfs(s, herd_bin, 2, job, out)
        assert listing() == before, describe(proc)
        assert proc.returncode == 3, describe(proc)
        w = errors_of(load_results(out), "w")
        assert w.get((0, "open", "EMLINK"), 0) >= 1, w
        assert all(rank == 0 for (rank, _, _) in w), w


# A FIFO planted at a data file's name in a fixed run_id's tree is never
# opened (a WRITE to it would fail and its close wait until op_timeout): the
# create finds the name, sees its type and refuses it (ENOTSUP, as the POSIX
# backend does), and the FIFO stays. keep = yes: no cleanup to refuse it too.
# A FIFO planted at rank 0's data file name: a write refuses it at open
# (ENOTSUP), as a read over NFSv4 does (the leaf's LOOKUP gives its type);
# over NFSv3 a read takes libnfs's walk alone and the server refuses the
# READ (NFS3ERR_INVAL: EINVAL, not libnfs 4.0's EFAULT). The FIFO stays.
@pytest.mark.parametrize("version,kind", [(3, "write"), (3, "read"), (4, "write"), (4, "read")])
def test_planted_fifo_over_libnfs(herd_bin, tmp_path, version, kind):
    with libnfs_export(herd_bin, tmp_path, 'mkdir -p herd-nfs-f/fs && '
                       'mkfifo herd-nfs-f/fs/r000000.dat && '
                       'head -c 65536 /dev/zero > herd-nfs-f/fs/r000001.dat') as (s, sh, listing):
        import test_nfs  # libnfs_export skipped the test where it cannot
        gl = {"backend": "libnfs", "target": s.url.replace("?version=3", f"?version={version}"),
              "run_id": "nfs-f", "keep": "yes", "fileset": "fs", "file_size": "64K",
              "block_size": "16K", "op_timeout": 10}
        job = write_job(tmp_path / "fifo.ini", gl, [("w", {"kind": kind})])
        out = tmp_path / "fifo.h5"
        proc = test_nfs.herd_run_nfs(s, herd_bin, 2, job, out)
        assert proc.returncode == 3, describe(proc)
        w = errors_of(load_results(out), "w")
        print(f"\nNFSv{version} {kind} of a FIFO: {w}")
        # ENOTSUP and EOPNOTSUPP are one number on Linux: either name
        want = {("read", "EINVAL")} if (version, kind) == (3, "read") else \
            {("open", "ENOTSUP"), ("open", "EOPNOTSUPP")}
        assert w and all(rank == 0 and (op, name) in want for (rank, op, name) in w), w
        sh('cd "$1" && test -p herd-nfs-f/fs/r000000.dat')


SWAPPER = Path(__file__).resolve().parent.parent / "tools" / "nfs_swap.c"


def build_swapper(tmp_path):
    """tests/tools/nfs_swap.c compiled into tmp_path (the test is skipped
    without cc or libnfs's pkg-config file)."""
    if shutil.which("cc") is None or shutil.which("pkg-config") is None:
        pytest.skip("needs cc and pkg-config to build tests/tools/nfs_swap.c")
    flags = run_cmd(["pkg-config", "--cflags", "--libs", "libnfs"])
    if flags.returncode != 0:
        pytest.skip("libnfs's pkg-config file is missing (apt install libnfs-dev)")
    exe = tmp_path / "nfs_swap"
    cc = run_cmd(["cc", "-std=gnu11", "-O2", "-o", str(exe), str(SWAPPER), *flags.stdout.split()])
    assert cc.returncode == 0, describe(cc)
    return exe


# herd keeps its directories by handle (libnfs_dirs.c; over NFSv4 its own
# COMPOUNDs and OPENs, libnfs_open4.c): the fileset directory swapped for a
# link to the canary tree by a second NFS client (tests/tools/nfs_swap.c:
# through the server, so that ganesha, which caches what it looked up,
# sees every swap), again and again while the ranks write, read, make and
# remove files, must lead nowhere but into the directory itself (calls on
# a kept handle) or to ELOOP (a walk that meets the link; an open by name
# whose file is not the one herd looked up: libnfs 4.0's NFSv4 open
# follows a link in the directories). The canary tree holds the ranks'
# file names. NFSv4 data: herd's own OPENs, WRITEs and READs in the kept
# directory, and libnfs's opens by name of the read phase; NFSv4 read:
# reads alone, of files an NFSv3 run wrote first.
@pytest.mark.parametrize("version,work",
                         [(3, "data"), (4, "data"), (4, "read"), (4, "meta"), (4, "lock")])
def test_fileset_dir_swapped_over_libnfs(herd_bin, tmp_path, version, work):
    with libnfs_export(herd_bin, tmp_path, 'mkdir -p herd-nfs-c/fs') as (s, sh, listing):
        import test_nfs  # libnfs_export skipped the test where it cannot
        swapper_exe = build_swapper(tmp_path)
        before = listing()
        url = s.url.replace("?version=3", f"?version={version}")  # libnfs's own calls too
        gl = {"backend": "libnfs", "target": url, "run_id": "nfs-c", "keep": "no",
              "fileset": "fs", "file_size": "4K", "block_size": "4K", "op_timeout": 10,
              "nfs_version": version}
        phases = [("w", {"kind": "write", "iterations": 1000}),
                  ("m", {"kind": "meta", "dirs": 4, "files": 400, "file_size": "4K"}),
                  ("w2", {"kind": "write", "iterations": 1000}),
                  ("r", {"kind": "read", "iterations": 1000, "verify": "yes"})]
        if work == "meta":
            phases = [(f"m{i}", {"kind": "meta", "dirs": 4, "files": 400, "file_size": "4K"})
                      for i in range(3)]
        elif work == "lock":  # the file made by herd's own OPEN, locked by libnfs's
            phases = [(f"l{i}", {"kind": "lock", "duration": 1, "lock_wait": "nonblocking"})
                      for i in range(8)]
        elif work == "read":
            first = write_job(tmp_path / "first.ini",
                              {**gl, "target": s.url, "nfs_version": 3, "keep": "yes"},
                              [("w", {"kind": "write"})])
            proc = test_nfs.herd_run_nfs(s, herd_bin, 2, first, tmp_path / "first.h5")
            assert proc.returncode == 0, describe(proc)
            phases = [(f"r{i}", {"kind": "read", "iterations": 1000, "verify": "yes"})
                      for i in range(3)]
        job = write_job(tmp_path / "swap.ini", gl, phases)
        out, stop = tmp_path / "swap.h5", tmp_path / "swap.stop"
        with Background(["bash", test_nfs.SCRIPT, "exec", "--state", s.state, "--",
                         swapper_exe, s.url, "herd-nfs-c/fs", "../outside", stop]) as swapper:
            if swapper.out.wait_for(lambda l: l.strip() == "started", 30) is None:
                pytest.fail("the swapper never started:\n" + swapper.err.rest(5))
            proc = test_nfs.herd_run_nfs(s, herd_bin, 2, job, out)
            stop.touch()
            assert swapper.proc.wait(timeout=30) == 0, swapper.err.rest(5)
            swaps, moved = map(int, swapper.out.rest(5).split()[-2:])
        assert listing() == before, "the canary tree changed\n" + describe(proc)
        assert swaps >= 20, f"only {swaps} swaps: the race was not run"
        assert proc.returncode in (0, 3), describe(proc)
        res = load_results(out)
        met, by_op = {}, {}
        for ph in res.phase_names:
            for (_, op, name), v in errors_of(res, ph).items():
                met[name] = met.get(name, 0) + v
                by_op[(op, name)] = by_op.get((op, name), 0) + v
        done = {ph: int(res.phases[ph].ranks["completed"].sum()) for ph in res.phase_names}
        print(f"\nswaps {swaps} (directories herd made moved away: {moved}); "
              f"errors met: {by_op}; rows completed {done}; exit {proc.returncode}")
        # A read through the link would have met the canary's bytes.
        for ph in res.phase_names:
            assert int(res.phases[ph].ranks["verify_failures"].sum()) == 0, ph
        # A call on a kept handle does not see the swap at all; an open by
        # name (or a directory's walk, once a kept one was dropped) meets
        # the link (ELOOP) or the empty slot (ENOENT, ENOTDIR); an rmdir
        # finds the files whose unlinks failed so (ENOTEMPTY); libnfs's
        # NFSv4 open that met the link asks for its target after the swap
        # back (a READLINK of the directory: NFS4ERR_INVAL, EINVAL; of the
        # link removed meanwhile: NFS4ERR_STALE, ESTALE). Nothing else may
        # fail.
        allowed = {("rmdir", "ENOTEMPTY")}
        if version == 4:
            allowed |= {("open", "EINVAL"), ("open", "ESTALE")}
        others = {k: v for k, v in by_op.items()
                  if k[1] not in ("ELOOP", "ENOENT", "ENOTDIR") and k not in allowed}
        assert not others, by_op
        if version == 4 and work in ("data", "read"):  # the opens that met the link, refused
            assert by_op.get(("open", "ELOOP"), 0) >= 1, by_op


def nobody_libnfs_runner(s, herd_bin, base):
    """run(job, out): herd as user nobody (AUTH_SYS uid 65534) in server s's
    namespace, 2 ranks, the job made readable to all, its results written
    in base/out (nobody's) and copied to out; returns the CompletedProcess.
    base: a directory nobody can reach (nobody_dir)."""
    import test_nfs
    out_dir = base / "out"
    out_dir.mkdir(exist_ok=True)
    os.chown(out_dir, _nobody().pw_uid, -1)
    env = test_nfs.ns_env()
    for k in ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"):
        env.pop(k, None)
    env["HOME"] = str(out_dir)

    def run(job, out):
        os.chmod(job, 0o644)
        mine = out_dir / Path(out).name
        proc = run_cmd(test_nfs.ns_args(s, "runuser", "-u", "nobody", "--",
                                        *mpirun_args(herd_bin, 2, "run", job, "-o", mine)),
                       env=env, cwd=out_dir, timeout=300)
        if mine.exists():
            shutil.copy(mine, out)
        return proc
    return run


# Another user's tree at a fixed run_id's name, over libnfs, herd run by
# user nobody (AUTH_SYS uid 65534): root's run directory (holding the
# ranks' data files and a meta phase's directories) refuses the run
# before any phase, with one line that names the directory and both
# owners; a run directory of nobody's own whose fileset directory is
# root's (0755) runs, and every write, create, rename, unlink or rmdir in
# root's part is refused by the server (EACCES), reads of root's readable
# files are allowed (a fixed run_id's second run reads what the first
# wrote), the clean-up removes nothing of root's. Neither changes
# anything of root's (content, owner, mode). NFSv4 through its own calls
# (kept handles, herd's own client and OPEN) as NFSv3; no data writes
# there (libnfs 4.0).
@pytest.mark.parametrize("version", [3, 4])
def test_other_users_tree_over_libnfs(herd_bin, tmp_path, version):
    why = _why_skip_unprivileged(herd_bin)
    if why:
        pytest.skip(why)
    tree = ('for t in u v; do mkdir -p herd-nfs-$t/fs/r000000/a/d0000 '
            'herd-nfs-$t/fs/r000001/a/d0000 && for f in fs/r000000.dat fs/r000001.dat '
            'fs/r000000/a/d0000/f000000 fs/r000001/a/d0000/f000000; do '
            'head -c 4096 /dev/zero | tr "\\0" r > herd-nfs-$t/$f; done; done && '
            'chmod -R u=rwX,go=rwX herd-nfs-u && chmod -R u=rwX,go=rX herd-nfs-v && '
            'chown 65534 herd-nfs-v')  # u: even writable by all; v: nobody's, fs root's
    with libnfs_export(herd_bin, tmp_path, tree) as (s, sh, listing):
        import test_nfs  # libnfs_export skipped the test where it cannot

        def owned():
            return sh('cd "$1" && find herd-nfs-u herd-nfs-v/fs -exec stat -c "%n %U %a %s" '
                      '{} + | sort && find herd-nfs-u herd-nfs-v -type f -exec sha256sum {} + '
                      '| sort')
        before, before_canary = owned(), listing()
        url = s.url.replace("?version=3", f"?version={version}")
        gl = {"backend": "libnfs", "target": url, "keep": "no", "fileset": "fs",
              "file_size": "4K", "block_size": "4K", "op_timeout": 10,
              "nfs_version": version, "dirs": 1, "files": 1}
        phases = [("r", {"kind": "read"}), ("m", {"kind": "meta", "file_size": 0})]
        if version == 3:
            phases.insert(0, ("w", {"kind": "write"}))
        procs = {}
        with nobody_dir() as base:  # the jobs and the results: where nobody may go
            run = nobody_libnfs_runner(s, herd_bin, base)
            for run_id in ("nfs-u", "nfs-v"):
                job = write_job(base / f"{run_id}.ini", {**gl, "run_id": run_id}, phases)
                procs[run_id] = run(job, tmp_path / f"{run_id}.h5")
        both = "\n".join(describe(p) for p in procs.values())
        assert owned() == before, "root's tree changed\n" + both
        assert listing() == before_canary, "the canary tree changed\n" + both
        proc = procs["nfs-u"]
        assert proc.returncode == 2, describe(proc)
        lines = [l for l in proc.stderr.splitlines() if l.startswith("herd:")]
        assert lines and all(l.endswith("herd-nfs-u belongs to uid 0, not to this user "
                                        "(uid 65534): refused") for l in lines), describe(proc)
        proc = procs["nfs-v"]
        assert proc.returncode == 3, describe(proc)
        res = load_results(tmp_path / "nfs-v.h5")
        met = {}
        for ph in res.phase_names:
            for (_, op, name), v in errors_of(res, ph).items():
                met[(ph, op, name)] = met.get((ph, op, name), 0) + v
        print(f"\nNFSv{version} as nobody in root's fileset directory: {met}")
        assert int(res.phases["r"].ranks["completed"].sum()) == 2, met  # root's 0644 files
        assert not [k for k in met if k[0] == "r"], met
        if version == 3:
            assert met.get(("w", "open", "EACCES"), 0) == 2, met
        assert met.get(("m", "mkdir", "EACCES"), 0) >= 1, met
        assert {k[2] for k in met} <= {"EACCES", "ENOENT"}, met


# A target directory the user may write and search but not read (root's,
# mode 0733, a drop box), herd run by user nobody over libnfs: the run
# directory is made, used and removed through handles walked by LOOKUP
# (search permission is enough; libnfs's own open of a directory asks
# for read access, which is why NFSv3 once went by name here). Every
# phase is clean, the drop box is empty again, the canary tree is as it
# was. NFSv4: metadata only (libnfs 4.0 cannot write data over NFSv4).
@pytest.mark.parametrize("version", [3, 4])
def test_search_only_target_over_libnfs(herd_bin, tmp_path, version):
    why = _why_skip_unprivileged(herd_bin)
    if why:
        pytest.skip(why)
    with libnfs_export(herd_bin, tmp_path, "mkdir drop && chmod 0733 drop") as (s, sh, listing):
        before_canary = listing()
        url = f"{s.base}/drop?version={version}"
        gl = {"backend": "libnfs", "target": url, "keep": "no", "file_size": "64K",
              "block_size": "16K", "op_timeout": 10, "nfs_version": version,
              "dirs": 3, "files": 20}
        phases = [("m", {"kind": "meta", "file_size": 0}),
                  ("mc", {"kind": "meta", "file_size": 0, "meta_ops": "create,stat"}),
                  ("md", {"kind": "meta", "file_size": 0, "meta_ops": "rename,unlink,rmdir"})]
        if version == 3:
            phases = [("w", {"kind": "write"}), ("r", {"kind": "read", "verify": "yes"}),
                      ("ws", {"kind": "write", "sharing": "shared"})] + phases
        with nobody_dir() as base:
            job = write_job(base / "drop.ini", gl, phases)
            proc = nobody_libnfs_runner(s, herd_bin, base)(job, tmp_path / "drop.h5")
        assert listing() == before_canary, "the canary tree changed\n" + describe(proc)
        assert proc.returncode == 0, describe(proc)
        res = load_results(tmp_path / "drop.h5")
        for name, _ in phases:
            ph = res.phases[name]
            assert ph.attrs["status"] == "ok", (name, ph.error_rows())
            assert int(ph.ranks["errors"].sum()) == 0, (name, ph.error_rows())
        print(f"\nNFSv{version} as nobody in a 0733 drop box: phases " +
              ", ".join(f"{n} {int(res.phases[n].ranks['ops'].sum())} ops" for n, _ in phases))
        assert sh('ls -A "$1/drop"') == "", "the run left something in the drop box"
        assert sh('stat -c "%U %a" "$1/drop"').split() == ["root", "733"]


# ---------------------------------------------------------------- connection errors


@pytest.mark.parametrize("url,want", [
    ("nfs://127.0.0.1:1/x", os.strerror(errno.ECONNREFUSED)),
    ("nfs://herd-no-such-host/x", "server name 'herd-no-such-host' does not resolve: ")])
def test_libnfs_connection_errors(herd_bin, tmp_path, url, want):
    """A refused port and a name that does not resolve, each one line that
    says which (a failed lookup is not "No route to host"). In a network
    namespace of its own (lo only): the lookup reaches no resolver."""
    if not has_libnfs(herd_bin):
        pytest.skip(f"{herd_bin} has no libnfs backend (build with -DHERD_WITH_LIBNFS=ON)")
    if os.geteuid() != 0:
        pytest.skip("needs root for a network namespace of its own (unshare --net)")
    job = write_job(tmp_path / "conn.ini", {"backend": "libnfs", "target": url,
                                            "op_timeout": 5}, [("w", {"kind": "write"})])
    args = ["unshare", "--net", "sh", "-c", 'ip link set lo up; exec "$@"', "sh",
            *mpirun_args(herd_bin, 1, "run", job, "-o", tmp_path / "conn.h5", quiet=True)]
    proc = run_cmd([str(a) for a in args])
    assert proc.returncode == 2, describe(proc)
    lines = [l for l in proc.stderr.splitlines() if l.startswith("herd:")]
    assert len(lines) == 1 and lines[0].startswith(f"herd: target '{url}': {want}"), \
        describe(proc)
    assert lines[0].endswith(" (rank 0)"), describe(proc)
