"""Shared helpers and fixtures of herd's integration tests.

The tests run the real program: `herd check` directly and `herd run` under
mpirun, against directories in pytest's tmp_path or against file systems
mounted for the test (tmpfs, and xfs/ext4 on loop devices). Everything a
test makes is removed in finally blocks, even when the test fails.

HERD_BIN names the program (ctest sets it); without it the tests use
../../build/herd relative to this directory.
"""

import contextlib
import csv
import os
import pwd
import queue
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

TESTS_DIR = Path(__file__).resolve().parent
REPO_DIR = TESTS_DIR.parent.parent

MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    # No network interfaces are needed: every rank is on this host.
    "OMPI_MCA_btl_base_warn_component_unused": "0",
}

# Seconds mpirun waits, after it passes a signal on, before it SIGKILLs the
# ranks (Open MPI's odls_base_sigkill_timeout, 1 s by default: too short for
# a busy machine to write a big phase). Open MPI 4 waits it out in full, and
# twice after any rank's non-zero exit, so only tests that signal mpirun
# itself ask for it (mpi_env(stop_grace=True)).
STOP_GRACE = 15

# Seconds a whole mpirun may take before the test calls it hung.
RUN_TIMEOUT = 180

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30


# ---------------------------------------------------------------- program


def herd_path():
    env = os.environ.get("HERD_BIN")
    path = Path(env) if env else TESTS_DIR / ".." / ".." / "build" / "herd"
    return path.resolve()


@pytest.fixture(scope="session")
def herd_bin():
    path = herd_path()
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"herd program not found at {path} (build it, or set HERD_BIN)")
    return str(path)


def mpi_env(stop_grace=False):
    env = dict(os.environ)
    env.update(MPI_ENV)
    if stop_grace:
        env["OMPI_MCA_odls_base_sigkill_timeout"] = str(STOP_GRACE)
    return env


def rank_pids(mpirun_pid, nranks=None):
    """{MPI rank: pid} of the herd processes of one mpirun started with
    start_new_session=True (from each process's OMPI_COMM_WORLD_RANK)."""
    pids = subprocess.run(["pgrep", "-s", str(mpirun_pid), "-x", "herd"],
                          capture_output=True, text=True).stdout.split()
    ranks = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            for var in env:
                if var.startswith(b"OMPI_COMM_WORLD_RANK="):
                    ranks[int(var.split(b"=", 1)[1])] = int(pid)
    if nranks is not None:
        assert len(ranks) == nranks, f"ranks {ranks} of mpirun {mpirun_pid}"
    return ranks


def proc_cmdlines():
    """{pid: command line (bytes, its arguments NUL-separated)} of every
    process on this machine. A process that exits between the listing of
    /proc and the read of its cmdline (ENOENT, ESRCH) is left out: gone."""
    found = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError):
                found[int(name)] = Path(f"/proc/{name}/cmdline").read_bytes()
    return found


def signal_ranks(mpirun_pid, sig):
    """sig to every herd rank of one mpirun (as a scheduler signals a job's
    processes), not to mpirun: what is tested is how herd stops, not how
    long mpirun lets it."""
    for pid in rank_pids(mpirun_pid).values():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def hold_ranks(pids, held):
    """SIGSTOP (held) or SIGCONT each of pids ({rank: pid}): a held rank
    makes no call and begins no phase, however long the test takes
    meanwhile (its phase clock runs on: a phase it was in may be over
    when it goes on)."""
    for pid in pids.values():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGSTOP if held else signal.SIGCONT)


def _kill_group(proc):
    """SIGKILL a process started with start_new_session=True, and its group."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        proc.wait(timeout=30)


def run_cmd(args, timeout=RUN_TIMEOUT, env=None, cwd=None, on_timeout=None):
    """Run args; returns CompletedProcess (text). A hung command and all its
    children are killed and the test fails; on_timeout(), called before the
    kill, says what the hung processes were doing."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env if env is not None else mpi_env(), cwd=cwd,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        seen = on_timeout() if on_timeout else ""
        _kill_group(proc)
        out, err = proc.communicate()
        pytest.fail(f"timed out after {timeout}s: {' '.join(map(str, args))}\n"
                    f"stdout:\n{out}\nstderr:\n{err}\n{seen}")
    finally:
        if proc.poll() is None:
            _kill_group(proc)
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def other_user(name, purpose):
    """The pwd entry of user NAME, for a test that acts as root and as NAME;
    skips (saying it needs root PURPOSE) when not root or NAME is missing."""
    if os.geteuid() != 0:
        pytest.skip(f"needs root {purpose}")
    try:
        return pwd.getpwnam(name)
    except KeyError:
        pytest.skip(f"no user {name} on this machine")


def as_user(uid, gid, args, env, cwd, timeout=180):
    """args as uid:gid, no supplementary groups, no capabilities (setpriv)."""
    return run_cmd(["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"]
                   + [str(a) for a in args], env=env, cwd=cwd, timeout=timeout)


def mpirun_args(herd_bin, nranks, *herd_args, quiet=False):
    args = ["mpirun", "--oversubscribe", "-np", str(nranks)]
    if quiet:
        # -q: no "Primary job terminated normally, but..." banners, so that
        # stderr holds only what herd itself printed.
        args.append("-q")
    return args + [herd_bin] + [str(a) for a in herd_args]


def herd_run(herd_bin, nranks, job, output, *extra, quiet=False, timeout=RUN_TIMEOUT,
             cwd=None):
    """mpirun -np nranks herd run JOB -o OUTPUT [extra...]"""
    args = mpirun_args(herd_bin, nranks, "run", job, "-o", output, *extra, quiet=quiet)
    return run_cmd(args, timeout=timeout, cwd=cwd)


def herd_cmd(herd_bin, *args, timeout=60):
    """herd ARGS... without MPI (check, keys, --help, ...)."""
    return run_cmd([herd_bin] + [str(a) for a in args], timeout=timeout)


def describe(proc):
    """Text for assertion messages."""
    return (f"command: {' '.join(map(str, proc.args))}\nexit code: {proc.returncode}\n"
            f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")


class LineReader:
    """Collect a pipe's lines in a thread so a test can wait for one."""

    def __init__(self, pipe):
        self.lines = []
        self._queue = queue.Queue()
        self._thread = threading.Thread(target=self._pump, args=(pipe,), daemon=True)
        self._thread.start()

    def _pump(self, pipe):
        for line in pipe:
            self._queue.put(line)
        self._queue.put(None)

    def wait_for(self, predicate, timeout):
        """Return the first line (new or already seen) satisfying predicate,
        or None after timeout or at end of stream."""
        for line in self.lines:
            if predicate(line):
                return line
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                line = self._queue.get(timeout=left)
            except queue.Empty:
                return None
            if line is None:
                self._queue.put(None)
                return None
            self.lines.append(line)
            if predicate(line):
                return line

    def seen(self):
        """The lines that came so far, without waiting for more."""
        while True:
            try:
                line = self._queue.get_nowait()
            except queue.Empty:
                break
            if line is None:
                self._queue.put(None)
                break
            self.lines.append(line)
        return list(self.lines)

    def rest(self, timeout=30):
        """Everything, once the stream ends."""
        self._thread.join(timeout)
        while True:
            try:
                line = self._queue.get_nowait()
            except queue.Empty:
                break
            if line is not None:
                self.lines.append(line)
        return "".join(self.lines)


class Background:
    """A command (mpirun herd, as a rule) in its own session, in the
    background, with its stdout and stderr lines collected so that a test
    can act on them. As a context manager it SIGKILLs whatever of the
    session is left at the end, also when the test fails."""

    def __init__(self, args, env=None, cwd=None):
        self.args = [str(a) for a in args]
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env if env is not None else mpi_env(),
                                     cwd=cwd, start_new_session=True)
        self.err = LineReader(self.proc.stderr)
        self.out = LineReader(self.proc.stdout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()

    @property
    def pid(self):
        return self.proc.pid

    def wait_line(self, pattern, timeout=60):
        """The first stderr line matching the regular expression pattern;
        the test fails (and the run is killed) if none comes in time."""
        line = self.err.wait_for(lambda s: re.search(pattern, s) is not None, timeout)
        if line is None:
            self.kill()
            pytest.fail(f"never printed /{pattern}/ on stderr:\n{self.err.rest(5)}")
        return line

    def wait(self, timeout=RUN_TIMEOUT):
        """Wait for the end; returns (CompletedProcess, monotonic end time)."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"timed out after {timeout}s: {' '.join(self.args)}\n"
                        f"stderr:\n{self.err.rest(5)}")
        ended = time.monotonic()
        return subprocess.CompletedProcess(self.args, self.proc.returncode, self.out.rest(),
                                           self.err.rest()), ended

    def kill(self):
        """SIGKILL the session's process group and every herd rank of it
        (mpirun puts each rank in a process group of its own)."""
        ranks = rank_pids(self.proc.pid)
        if self.proc.poll() is None:
            _kill_group(self.proc)
        for pid in ranks.values():
            with contextlib.suppress(OSError):
                if os.getsid(pid) == self.proc.pid:
                    os.kill(pid, signal.SIGKILL)


def herd_background(herd_bin, nranks, *herd_args, quiet=False, env=None):
    """mpirun herd HERD_ARGS in the background (see Background)."""
    return Background(mpirun_args(herd_bin, nranks, *herd_args, quiet=quiet), env=env)


def herd_run_interrupted(herd_bin, nranks, job, output, after_phase, delay):
    """mpirun herd run in the background; SIGTERM to its ranks `delay`
    seconds after herd reports phase `after_phase` done. Returns herd's
    stderr."""
    with herd_background(herd_bin, nranks, "run", job, "-o", output) as run:
        run.wait_line(f"phase {after_phase}:")
        time.sleep(delay)
        signal_ranks(run.pid, signal.SIGTERM)
        done, _ = run.wait(timeout=60)
    return done.stderr


# ---------------------------------------------------------------- job files


def read_csv(path):
    """A CSV file with a header line, as a list of dicts."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def write_job(path, global_keys, phases):
    """Write a job file: global_keys a dict, phases a list of (name, dict).
    Returns the path."""
    lines = ["[global]"]
    lines += [f"{k} = {v}" for k, v in global_keys.items()]
    for name, keys in phases:
        lines += ["", f"[{name}]"]
        lines += [f"{k} = {v}" for k, v in keys.items()]
    Path(path).write_text("\n".join(lines) + "\n")
    return Path(path)


def parse_size(text):
    """A job-file size ('4M', '256K', '4096') in bytes."""
    text = str(text)
    shifts = {"K": 10, "M": 20, "G": 30, "T": 40}
    if text[-1].upper() in shifts:
        return int(text[:-1]) << shifts[text[-1].upper()]
    return int(text)


def format_size(nbytes):
    """herd's canonical size text (units_format_size): '4M', '256K', '1000'."""
    for shift, suffix in ((40, "T"), (30, "G"), (20, "M"), (10, "K")):
        if nbytes and nbytes % (1 << shift) == 0:
            return f"{nbytes >> shift}{suffix}"
    return str(nbytes)


# ---------------------------------------------------------------- results


def _text(v):
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.ndarray) and v.shape == () and v.dtype.kind in "SO":
        return _text(v[()])
    return v


class Phase:
    def __init__(self, group):
        self.attrs = {k: _text(v) for k, v in group.attrs.items()}
        self.attr_order = list(group.attrs.keys())
        self.ranks = group["ranks"][()]
        self.errors = group["errors"][()]
        self.latency = {}
        for name, obj in group["latency"].items():
            if name.startswith("bucket_"):
                continue
            self.latency[name] = {k: v for k, v in obj.attrs.items()}
            self.latency[name]["counts"] = obj[()]

    def error_rows(self):
        """The errors table as a list of dicts with text decoded."""
        return [{name: _text(row[name]) for name in self.errors.dtype.names}
                for row in self.errors]


class Results:
    def __init__(self, path):
        with h5py.File(path, "r") as f:
            self.attrs = {k: _text(v) for k, v in f.attrs.items()}
            # /phases/<ladder> groups hold a load ladder's steps table
            # (kind "ladder"), not a phase.
            self.ladder_steps = {name: g["steps"][()] for name, g in f["phases"].items()
                                 if _text(g.attrs.get("kind")) == "ladder"}
            self.phase_names = [n for n in f["phases"] if n not in self.ladder_steps]
            self.phases = {name: Phase(f["phases"][name]) for name in self.phase_names}
            self.rank_table = f["ranks"][()]
            self.hosts = f["hosts"][()]


def load_results(path):
    return Results(path)


# ---------------------------------------------------------------- mounts


def require_root():
    if os.geteuid() != 0:
        pytest.skip("needs root for tmpfs/loop mounts")


def _sh(*args, check=True):
    proc = subprocess.run([str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, args))} failed ({proc.returncode}): "
                           f"{proc.stderr.strip()}")
    return proc


def is_mountpoint(path):
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4].encode().decode("unicode_escape")
            if mp == path:
                return True
    return False


def loop_devices_of(image):
    """Loop devices backed by image (losetup -j), as a list of /dev/loopN."""
    proc = _sh("losetup", "-j", image, check=False)
    return [line.split(":", 1)[0] for line in proc.stdout.splitlines() if line.strip()]


def _umount(path):
    if not is_mountpoint(path):
        return
    for attempt in range(20):
        if _sh("umount", path, check=False).returncode == 0:
            return
        time.sleep(0.25)
    _sh("umount", "-l", path, check=False)


class Mount:
    """A mounted file system: path (the mount point), kind, and for loop
    mounts the image file and its loop device."""

    def __init__(self, kind, path, image=None, loopdev=None):
        self.kind, self.path, self.image, self.loopdev = kind, Path(path), image, loopdev

    def __repr__(self):
        return f"Mount({self.kind} at {self.path}, image={self.image}, loop={self.loopdev})"


FS_KINDS = ("tmpfs", "xfs", "ext4")
MKFS = {"xfs": ["mkfs.xfs", "-q", "-f"], "ext4": ["mkfs.ext4", "-q", "-F"]}


@contextlib.contextmanager
def mounted_fs(kind, workdir, *, size="512m", image_size="1G", read_only=False):
    """Mount a fresh file system of kind (tmpfs, xfs, ext4) at workdir/mnt-<kind>
    and yield a Mount; unmount, detach the loop device and delete the image
    afterwards, whatever happens. xfs/ext4 live on a sparse image file in
    workdir."""
    require_root()
    if kind not in FS_KINDS:
        raise ValueError(f"unknown file system kind {kind!r}")
    workdir = Path(workdir)
    mnt = workdir / f"mnt-{kind}"
    n = 0
    while mnt.exists():
        n += 1
        mnt = workdir / f"mnt-{kind}-{n}"
    mnt.mkdir(parents=True)
    image = loopdev = None
    try:
        if kind == "tmpfs":
            opts = f"{'ro,' if read_only else ''}size={size}"
            _sh("mount", "-t", "tmpfs", "-o", opts, "tmpfs", mnt)
        else:
            image = workdir / f"{mnt.name}.img"
            _sh("truncate", "-s", image_size, image)
            _sh(*MKFS[kind], image)
            loopdev = _sh("losetup", "--find", "--show", image).stdout.strip()
            args = ["mount", "-t", kind]
            if read_only:
                args += ["-o", "ro"]
            _sh(*args, loopdev, mnt)
        yield Mount(kind, mnt, image, loopdev)
    finally:
        try:
            _umount(mnt)
        finally:
            try:
                if image is not None:
                    for dev in loop_devices_of(image):
                        _sh("losetup", "-d", dev, check=False)
            finally:
                if image is not None:
                    with contextlib.suppress(FileNotFoundError):
                        image.unlink()
                with contextlib.suppress(OSError):
                    mnt.rmdir()


def assert_mount_gone(m):
    """What mounted_fs made is gone: no mount, no loop device of its image."""
    assert not is_mountpoint(m.path), f"{m.path} is still mounted"
    if m.image is not None:
        # losetup -d may detach asynchronously (autoclear); give it a moment.
        for _ in range(20):
            left = loop_devices_of(m.image)
            if not left:
                break
            time.sleep(0.25)
        assert not left, f"loop device(s) {left} of {m.image} remain"
        assert not Path(m.image).exists(), f"image {m.image} remains"


@pytest.fixture
def mount_fs(tmp_path):
    """Factory: mount_fs(kind, **opts) -> Mount, mounted until the test ends.
    Teardown unmounts everything and checks nothing remains."""
    mounts = []
    with contextlib.ExitStack() as stack:

        def make(kind, **opts):
            m = stack.enter_context(mounted_fs(kind, tmp_path, **opts))
            mounts.append(m)
            return m

        yield make
    for m in mounts:
        assert_mount_gone(m)


@pytest.fixture(params=FS_KINDS)
def fs_mount(request, mount_fs):
    """One mounted file system per kind (tmpfs, xfs, ext4)."""
    return mount_fs(request.param)


def tree(path):
    """Every path under path, relative, sorted (for 'nothing left' checks)."""
    path = Path(path)
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def job_keys_in_order(herd_bin):
    """Job key names in the key table's order, from `herd keys`."""
    out = subprocess.run([herd_bin, "keys"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines()[1:] if line.strip()]


# The phase summary herd stores before status (docs/results-format.md).
SUMMARY_ATTRS = ["summary_t_min", "summary_t_median", "summary_t_max", "summary_first_done",
                 "summary_last_done", "summary_mib_per_s", "summary_ops_per_s",
                 "summary_offered_per_s", "summary_achieved_per_s", "summary_rows",
                 "summary_ranks", "summary_bytes", "summary_ops", "summary_errors",
                 "summary_verify_failures", "summary_grants", "summary_contended",
                 "summary_violations", "summary_stuck", "summary_units", "summary_late",
                 "summary_due",
                 "summary_main_op"]


def phase_attr_order(herd_bin):
    """docs/results-format.md: kind, index, times, active_clients, every job key (in `herd keys`
    order, except kind, written first), the phase summary, status, then
    herd's own cost (and, with a monitor, the server's CPU at close)."""
    fixed = ["kind", "index", "t_start", "t_end", "elapsed", "start_skew", "active_clients"]
    return fixed + [k for k in job_keys_in_order(herd_bin) if k not in fixed] + \
        SUMMARY_ATTRS + ["status", "gather_seconds", "write_seconds"]


def headless_chromium():
    """Debian's chromium through chromium-driver and python3-selenium, in
    a 1400 x 1000 window; skips the test when one of them is missing."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("python3-selenium is not installed")
    import shutil
    chromium = shutil.which("chromium")
    driver = shutil.which("chromedriver")
    if not chromium or not driver:
        pytest.skip("chromium and chromium-driver are not installed")
    opts = Options()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000",
                "--disable-dev-shm-usage"):
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service(driver), options=opts)


def browser_open(browser, path):
    """Load a local page and wait (20 s at most) until it has loaded."""
    browser.get(Path(path).resolve().as_uri())
    deadline = time.monotonic() + 20
    while browser.execute_script("return document.readyState") != "complete":
        assert time.monotonic() < deadline, f"{path}: the page never finished loading"
        time.sleep(0.1)
