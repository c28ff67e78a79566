"""Install and run on a cluster: no root, no repository checkout (issue 16).

The build directory of the herd under test (HERD_BIN's directory, a CMake
build directory) is installed with `cmake --install BUILD --prefix P` into a
temporary prefix; configuring and building again would take too long here.

1. The layout (GNUInstallDirs): bin/herd, bin/herd-report and
   bin/herd-compare (links into libexec/herd, next to their modules),
   share/herd/jobs with the job files and batch scripts, share/doc/herd,
   share/herd/cluster-configs and the modulefile; the installed tools start
   with `#!/usr/bin/env python3` and have no sys.path set-up.
2. As user nobody (setpriv, no capabilities, a HOME of its own), with a
   PATH that has P/bin and not the repository: a 2-rank `herd run` under
   mpirun, herd-report and herd-compare from P (through the python3 that
   PATH names, which logs its calls), and herd.sbatch run the way slurmd
   runs it (a copy in a spool directory, SLURM_* set, mpirun as the
   launcher): it finds P/share/herd and P/bin/herd through PATH, writes
   ./results/<dir>/ in the submit directory, and the report in it. Exit
   codes 0, index.html, and no file of user nobody anywhere outside the
   test's directories (find / -xdev -user nobody, before and after), P
   unchanged. Needs root (to become nobody); skips otherwise.
3. The installed modulefile under environment-modules' modulecmd (skips
   when it is not installed): PATH, PYTHONPATH, HERD_JOBS, HERD_ROOT.
4. The installed tools under a python3 without numpy first on PATH: they
   start themselves again under the Python recorded at install
   (libexec/herd/herd_python.path, tried before the python3 on PATH and
   /usr/bin/python3); HERD_PYTHON picks another, as a path or a name on
   PATH, and one that is not a Python (/bin/true, /bin/sh) gets one line
   naming HERD_PYTHON, exit 2.

Run: HERD_BIN=build/herd /usr/bin/python3 -m pytest -q -rs tests/integration/test_install.py
"""

import os
import re
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import h5py
import pytest

from conftest import REPO_DIR, as_user, describe, other_user, run_cmd

TOOLS = ("herd-report", "herd-compare")
MODULES = tuple(sorted(p.name for pattern in ("herd_*.py", "herd_*.json")
                      for p in (REPO_DIR / "analysis").glob(pattern)))
USER = "nobody"


def find_user_files(uid):
    """Every path owned by uid on the root file system and the tmpfs ones."""
    found = set()
    for top in ("/", "/dev/shm", "/run"):
        if not os.path.isdir(top):
            continue
        proc = subprocess.run(["find", top, "-xdev", "-user", str(uid)],
                              capture_output=True, text=True, timeout=300)
        found.update(line for line in proc.stdout.splitlines() if line)
    return found


def snapshot(tree):
    """{relative path: (mode, size, mtime_ns)} of everything under tree."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(tree):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            out[os.path.relpath(p, tree)] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


@pytest.fixture(scope="module")
def installed(herd_bin):
    """(base, prefix): the build directory installed into base/prefix; base
    is a fresh directory in /tmp that other users may traverse."""
    build = Path(herd_bin).parent
    script = build / "cmake_install.cmake"
    if not (build / "CMakeCache.txt").is_file() or not script.is_file():
        pytest.fail(f"{build} is not a CMake build directory (HERD_BIN={herd_bin})")
    if "herd-install-stage" not in script.read_text():
        pytest.fail(f"{build} has no install rules for the analysis tools: re-run "
                    f"`cmake {build}` (it was configured before the install section)")
    base = Path(tempfile.mkdtemp(prefix="herd-install-", dir="/tmp"))
    try:
        base.chmod(0o755)
        prefix = base / "prefix"
        proc = run_cmd(["cmake", "--install", str(build), "--prefix", str(prefix)],
                       env=dict(os.environ, DESTDIR=""))
        assert proc.returncode == 0, describe(proc)
        yield base, prefix
    finally:
        shutil.rmtree(base, ignore_errors=True)


# ---------------------------------------------------------------- 1. layout


def test_layout(installed):
    _, p = installed
    assert os.access(p / "bin/herd", os.X_OK)
    for tool in TOOLS:
        link = p / "bin" / tool
        assert link.is_symlink(), f"{link} is not a link into libexec/herd"
        assert not os.path.isabs(os.readlink(link)), "the link must survive moving P"
        real = link.resolve()
        assert real == (p / "libexec/herd" / tool).resolve() and os.access(real, os.X_OK)
        text = real.read_text()
        assert text.splitlines()[0] == "#!/usr/bin/env python3", text.splitlines()[0]
        assert not re.search(r"sys\.path\.(insert|append|extend)|sys\.path\s*(=|\+=|\[)", text), f"{tool} sets up sys.path"
        # the same program as the checkout's, but for its first line
        src = (REPO_DIR / "analysis" / tool).read_text()
        assert text.split("\n", 1)[1] == src.split("\n", 1)[1]
    for mod in MODULES:
        assert (p / "libexec/herd" / mod).read_bytes() == (REPO_DIR / "analysis" / mod).read_bytes()
    share = p / "share/herd"
    for ini in (REPO_DIR / "jobs").glob("*.ini"):
        assert (share / "jobs" / ini.name).read_bytes() == ini.read_bytes()
    for script in ("herd-batch.sh", "sweep.sh", "compare-sweep.sh", "slurm/herd.sbatch",
                   "pbs/herd.pbs"):
        assert os.access(share / "jobs" / script, os.X_OK), script
    assert not list((share / "jobs").glob("demo.sh")), "checkout-only scripts installed"
    assert (share / "cluster-configs/README.md").is_file()
    assert os.access(share / "cluster-configs/local/nfs-server.sh", os.X_OK)
    assert (share / "cluster-configs/spack/herd/package.py").is_file()
    for doc in ["README.md"] + [d.name for d in (REPO_DIR / "docs").glob("*.md")]:
        assert (p / "share/doc/herd" / doc).is_file(), doc
    version = subprocess.run([str(p / "bin/herd"), "--version"], capture_output=True,
                             text=True, timeout=30).stdout.split()
    modfiles = list((share / "modulefiles/herd").iterdir())
    assert [m.name for m in modfiles] == [v for v in version if v[:1].isdigit()][:1], \
        (modfiles, version)
    mod = modfiles[0].read_text()
    assert mod.startswith("#%Module") and "@HERD_" not in mod, mod
    assert f'prepend-path PATH       "{p}/bin"' in mod, mod


def bare_venv(tmp_path):
    """A venv without site packages: a Python 3 without numpy, as a site's
    or a user's own."""
    venv = tmp_path / "bare"
    proc = run_cmd(["/usr/bin/python3", "-m", "venv", "--without-pip", str(venv)])
    if proc.returncode != 0:
        pytest.skip(f"python3 -m venv is not available: {proc.stderr.strip()[:200]}")
    return venv / "bin"


def without_herd_python(path):
    env = dict(os.environ, PATH=path)
    for name in ("HERD_PYTHON", "HERD_PYTHON_STARTED", "HERD_PYTHON_FOUND"):
        env.pop(name, None)
    return env


@pytest.mark.parametrize("tool", TOOLS)
def test_tools_with_a_python_that_lacks_numpy(installed, tool, tmp_path):
    """The installed tools through a PATH whose first python3 has no numpy
    (a venv without site packages): they start themselves again under the
    Python recorded at install and work; HERD_PYTHON still decides when
    set: /usr/bin/python3 works, a missing one is refused in one line."""
    _, p = installed
    bare = bare_venv(tmp_path)
    env = without_herd_python(f"{bare}:{p}/bin:/usr/bin:/bin")
    proc = run_cmd([tool, "--help"], env=env)
    assert proc.returncode == 0 and proc.stdout.startswith(f"usage: {tool}"), describe(proc)
    proc = run_cmd([tool, "--help"], env=dict(env, HERD_PYTHON="/usr/bin/python3"))
    assert proc.returncode == 0 and proc.stdout.startswith(f"usage: {tool}"), describe(proc)
    proc = run_cmd([tool, "--help"], env=dict(env, HERD_PYTHON=str(tmp_path / "none")))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, describe(proc)
    assert "cannot start it" in proc.stderr, describe(proc)


@pytest.mark.parametrize("tool", TOOLS)
def test_recorded_python_is_tried_first(installed, tool, tmp_path):
    """libexec/herd/herd_python.path names the Python configure found with
    the modules; a tool whose python3 lacks them tries it before the
    python3 on PATH and /usr/bin/python3: in a copy of libexec/herd whose
    file names a wrapper that logs its calls, the wrapper runs the
    module test once and then the tool."""
    _, p = installed
    recorded = (p / "libexec/herd/herd_python.path").read_text()
    assert recorded.endswith("\n") and recorded.count("\n") == 1, recorded
    proc = run_cmd([recorded.strip(), str(REPO_DIR / "analysis/herd_python.py")])
    assert proc.returncode == 0, f"the recorded {recorded.strip()} lacks a module"
    tools = tmp_path / "herd"
    shutil.copytree(p / "libexec/herd", tools)
    log = tmp_path / "calls.log"
    wrapper = tmp_path / "logged-python3"
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$1" >>{log}\nexec /usr/bin/python3 "$@"\n')
    wrapper.chmod(0o755)
    (tools / "herd_python.path").write_text(f"{wrapper}\n")
    bare = bare_venv(tmp_path)
    proc = run_cmd([tools / tool, "--help"], env=without_herd_python(f"{bare}:/usr/bin:/bin"))
    assert proc.returncode == 0 and proc.stdout.startswith(f"usage: {tool}"), describe(proc)
    assert log.read_text().splitlines() == ["-c", str(tools / tool)]


@pytest.mark.parametrize("tool", TOOLS)
def test_installed_tools_test_herd_python(installed, tool, tmp_path):
    """The installed tools check HERD_PYTHON as the checkout's do: a name
    is looked up on PATH (python3, Debian's first there, runs the tool),
    and a program that is not a Python (/bin/true, /bin/sh) is refused in
    one line naming HERD_PYTHON, exit 2, nothing written."""
    _, p = installed
    env = dict(os.environ, PATH=f"{p}/bin:/usr/bin:/bin", HERD_PYTHON="python3")
    env.pop("HERD_PYTHON_STARTED", None)
    proc = run_cmd([tool, "--help"], env=env)
    assert proc.returncode == 0 and proc.stdout.startswith(f"usage: {tool}"), describe(proc)
    for value in ("/bin/true", "/bin/sh"):
        out = tmp_path / f"out-{os.path.basename(value)}"
        proc = run_cmd([tool, str(tmp_path / "r.h5"), "-o", str(out)],
                       env=dict(env, HERD_PYTHON=value))
        assert proc.returncode == 2 and proc.stdout == "", describe(proc)
        assert proc.stderr.splitlines() == [proc.stderr.rstrip("\n")], describe(proc)
        assert proc.stderr.startswith(f"{tool}: HERD_PYTHON={value}: not a Python"), \
            describe(proc)
        assert not out.exists(), describe(proc)


# ---------------------------------------------------------------- 2. as nobody


def test_run_as_nobody(installed):
    user = other_user(USER, "to run the installed herd as user nobody")
    if not shutil.which("setpriv") or not shutil.which("mpirun"):
        pytest.skip("setpriv (util-linux) or mpirun is missing")
    base, p = installed
    uid, gid = user.pw_uid, user.pw_gid
    home = base / "home"
    pybin = base / "pybin"
    for d in (home, home / "tmp", home / "work", home / "spool"):
        d.mkdir()
        os.chown(d, uid, gid)
    home.chmod(0o700)
    # python3 on PATH: Debian's, logging each call (which script it ran).
    pybin.mkdir()
    wrapper = pybin / "python3"
    wrapper.write_text('#!/bin/sh\nprintf "%s\\n" "$*" >>"$HOME/python3.calls"\n'
                       'exec /usr/bin/python3 "$@"\n')
    wrapper.chmod(0o755)
    work = home / "work"
    path = f"{pybin}:{p}/bin:/usr/bin:/bin"
    assert str(REPO_DIR) not in path
    env = {"PATH": path, "HOME": str(home), "TMPDIR": str(home / "tmp"), "LANG": "C.UTF-8",
           "OMPI_MCA_btl_base_warn_component_unused": "0"}
    job = work / "small.ini"
    before_prefix = snapshot(p)
    before = find_user_files(uid)
    try:
        proc = as_user(uid, gid, ["sh", "-c", f"id -u; test -w {p}/bin && echo writable"],
                       env, work)
        assert proc.stdout.split() == [str(uid)], describe(proc)
        proc = as_user(uid, gid, ["sh", "-c",
                                  f"mkdir {work}/target && cat >{job} <<'EOF'\n"
                                  f"[global]\ntarget = {work}/target\nfile_size = 1M\n"
                                  "block_size = 256K\n\n[write]\nkind = write\n\n"
                                  "[read]\nkind = read\nverify = yes\nEOF\n"], env, work)
        assert proc.returncode == 0, describe(proc)

        # herd and the tools by name, from PATH
        proc = as_user(uid, gid, ["mpirun", "--oversubscribe", "-np", "2", "herd", "run",
                                  job, "-o", work / "r.h5"], env, work)
        assert proc.returncode == 0, describe(proc)
        with h5py.File(work / "r.h5", "r") as f:
            assert f.attrs["status"] in (b"complete", "complete")
            assert int(f.attrs["nranks"]) == 2
        proc = as_user(uid, gid, ["herd-report", "r.h5", "-o", "rep"], env, work)
        assert proc.returncode == 0, describe(proc)
        assert "read" in (work / "rep/index.html").read_text()

        # herd.sbatch as slurmd runs it: a copy in a spool directory
        spool = home / "spool/slurm_script"
        shutil.copy(p / "share/herd/jobs/slurm/herd.sbatch", spool)
        os.chown(spool, uid, gid)
        slurm = dict(env, SLURM_JOB_ID="4242", SLURM_SUBMIT_DIR=str(work), SLURM_NTASKS="2",
                     HERD_LAUNCHER="mpirun", HERD_MPIRUN_ARGS="--oversubscribe")
        proc = as_user(uid, gid, ["bash", spool, "small.ini"], slurm, work)
        assert proc.returncode == 0, describe(proc)
        run_dir = Path(proc.stdout.strip().splitlines()[-1])
        assert run_dir.parent == work / "results", describe(proc)
        assert (run_dir / "report/index.html").is_file(), describe(proc)
        launch = (run_dir / "launch.txt").read_text()
        assert f"herd:      {p}/bin/herd " in launch, launch
        assert f"repo:      {p}/share/herd " in launch, launch

        proc = as_user(uid, gid, ["herd-compare", "r.h5", run_dir / "results.h5",
                                  "-o", "cmp"], env, work)
        assert proc.returncode == 0, describe(proc)
        assert (work / "cmp/compare.csv").is_file()

        calls = (home / "python3.calls").read_text().splitlines()
        for tool in TOOLS:
            assert any(f"{p}/bin/{tool}" in c for c in calls), calls
        print(f"\npython3 on PATH ran: {calls}")
    finally:
        after = find_user_files(uid)
    outside = sorted(f for f in after - before if not f.startswith(f"{base}/"))
    assert not outside, f"user {USER} wrote outside the test's directories: {outside[:20]}"
    assert snapshot(p) == before_prefix, "the run changed the installed prefix"


# ---------------------------------------------------------------- 3. modulefile


def test_modulefile(installed):
    modulecmd = shutil.which("modulecmd")
    if not modulecmd:
        pytest.skip("environment-modules (modulecmd) is not installed")
    _, p = installed
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent",
           "MODULEPATH": str(p / "share/herd/modulefiles")}
    proc = subprocess.run(["bash", "-c", f'eval "$({modulecmd} bash load herd)" && '
                           'echo "PATH=$PATH"; echo "PYTHONPATH=$PYTHONPATH"; '
                           'echo "HERD_JOBS=$HERD_JOBS"; echo "HERD_ROOT=$HERD_ROOT"; '
                           'command -v herd herd-report; '
                           '/usr/bin/python3 -c "import herd_results; print(herd_results.__file__)"'],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, describe(proc)
    out = proc.stdout.splitlines()
    assert f"PATH={p}/bin:/usr/bin:/bin" in out, proc.stdout
    assert f"PYTHONPATH={p}/libexec/herd" in out and f"HERD_ROOT={p}" in out, proc.stdout
    assert f"HERD_JOBS={p}/share/herd/jobs" in out, proc.stdout
    assert f"{p}/bin/herd" in out and f"{p}/bin/herd-report" in out, proc.stdout
    assert f"{p}/libexec/herd/herd_results.py" in out, proc.stdout
    assert stat.S_ISDIR(os.stat(p / "share/herd/jobs").st_mode)
