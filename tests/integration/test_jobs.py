"""The batch scripts in jobs/: herd-batch.sh, the Slurm and PBS job
scripts, sweep.sh and compare-sweep.sh, and the seed 002 / 003 scripts
that drive the embedded NFS server.

1. herd-batch.sh with a small job on a tmp directory, 2 ranks: the dated
   directory holds results.h5 (complete, 2 ranks), herd.log, launch.txt
   and report/index.html, and is the last line on stdout. Under a (fake)
   Slurm environment it launches with srun -n SLURM_NTASKS, and moves the
   job's output file (its stdout and stderr) into the dated directory at
   the end (copies it from another file system), never over a file of
   the same name.
2. A job herd check refuses: exit 2, one line on stderr, no results.
3. jobs/slurm/herd.sbatch and jobs/pbs/herd.pbs run with plain bash outside
   any scheduler (mpirun, a hostfile, extra mpirun arguments) the same way;
   herd.pbs also as PBS runs it (HERD_JOB_FILE, PBS_NODEFILE for the rank
   count, HERD_SET_FILE).
4. sweep.sh --scheduler local at 1 and 2 nodes x 2 ranks: two runs (2 and 4
   ranks) and compare-<job>/ with scaling.png and compare.csv labelled by
   rank count; compare-sweep.sh lists a run without results and skips it.
   slurm/pbs submissions through fake sbatch/qsub (the commands and the
   dependency of the final job); slurm without sbatch and bad arguments:
   exit 2 with one line.
5. Root, nfs-ganesha and a herd with libnfs only: seed003-sync-async.sh
   (sync and async exports, 100 files, 2 rounds: every step's spread, stat
   marked no measured difference) and seed002-nfs-smb.sh (also samba
   and a herd with libsmbclient: workers 2 and 4 over NFS, smbd with
   sendfile on and off, one 16M file, 2 ranks and a monitor rank, in under
   2 minutes): complete results, ganesha's or smbd's rows in
   /monitor/processes, a comparison table naming every variant, the server
   CPU table with smbd's CPU on the SMB rows; the servers are gone
   afterwards. seed001-locks.sh (xfs and ext4, 4 ranks): every blocking
   lock granted, the non-blocking one contended, no errors; with --grace 5
   the first lock phase is all NLM4_DENIED_GRACE_PERIOD (ENOLCK) in the
   results and the printed table, the later ones grant again.
6. jobs/demo.sh --check runs nothing and prints the demo's job: the
   seed-001 matrix (12 phases, 16M and 32M files) with each phase's
   iterations as the demo sets them (sized in jobs/demo.sh so a phase
   lasts about 1 s or more on a 2-CPU machine: no time is asserted); a
   bad argument is one line and exit 2.

Everything goes to pytest's tmp_path (HERD_RESULTS, OUT, TMPDIR), nothing
into the repository. Run:
HERD_BIN=build/herd /usr/bin/python3 -m pytest -q -rs tests/integration/test_jobs.py
"""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import h5py
import pytest

from conftest import REPO_DIR, describe, mpi_env, proc_cmdlines, read_csv, run_cmd, write_job

JOBS = REPO_DIR / "jobs"
BATCH = JOBS / "herd-batch.sh"
SBATCH = JOBS / "slurm" / "herd.sbatch"
PBS = JOBS / "pbs" / "herd.pbs"
SWEEP = JOBS / "sweep.sh"
COMPARE_SWEEP = JOBS / "compare-sweep.sh"
SBIN = ":/usr/local/sbin:/usr/sbin:/sbin"
DIR_RE = r"^\d{8}-\d{6}-%s-%dr(-[A-Za-z0-9._+-]+)?$"


def text(v):
    return v.decode() if isinstance(v, bytes) else v


def job_env(herd_bin, **extra):
    """mpirun's environment without any scheduler or HERD_* variable of the
    caller, plus HERD and extra."""
    env = {k: v for k, v in mpi_env().items()
           if not k.startswith(("HERD_", "SLURM_", "PBS_")) and k not in ("HERD", "OUT")}
    env["HERD"] = herd_bin
    env["PATH"] = env.get("PATH", "/usr/bin:/bin") + SBIN
    env.update({k: str(v) for k, v in extra.items()})
    return env


def small_job(tmp_path, name="small"):
    target = tmp_path / "target"
    target.mkdir(exist_ok=True)
    return write_job(tmp_path / f"{name}.ini",
                     {"target": target, "file_size": "1M", "block_size": "256K"},
                     [("write", {"kind": "write"}), ("read", {"kind": "read", "verify": "yes"})])


def last_line(out):
    lines = [l for l in out.splitlines() if l.strip()]
    return lines[-1] if lines else ""


def check_run_dir(proc, results, job, nranks, herd_bin):
    """herd-batch.sh's directory for one clean run; returns its Path."""
    assert proc.returncode == 0, describe(proc)
    d = Path(last_line(proc.stdout))
    assert d.parent == Path(results).resolve(), describe(proc)
    assert re.match(DIR_RE % (job, nranks), d.name), d.name
    for f in ("results.h5", "herd.log", "launch.txt", "report/index.html"):
        assert (d / f).is_file(), f"{d / f} missing\n{describe(proc)}"
    with h5py.File(d / "results.h5", "r") as f:
        assert text(f.attrs["status"]) == "complete"
        assert int(f.attrs["nranks"]) == nranks
    log = (d / "herd.log").read_text()
    assert "status complete" in log, log
    launch = (d / "launch.txt").read_text()
    version = subprocess.run([herd_bin, "--version"], capture_output=True,
                             text=True).stdout.splitlines()[0]
    assert version and version in launch, launch
    assert re.search(r"^np: +%d$" % nranks, launch, re.M), launch
    assert re.search(r"^date: ", launch, re.M) and "herd check:" in launch, launch
    assert f"{d}/results.h5" in launch, launch
    return d


# ---------------------------------------------------------------- 1, 2: herd-batch.sh


def test_batch_local(herd_bin, tmp_path):
    job = small_job(tmp_path)
    results = tmp_path / "results"
    proc = run_cmd(["bash", BATCH, job], env=job_env(herd_bin, HERD_NP=2, HERD_RESULTS=results))
    d = check_run_dir(proc, results, "small", 2, herd_bin)
    launch = (d / "launch.txt").read_text()
    assert re.search(r"^command: +mpirun .*-np 2 .* run %s -o %s/results.h5$"
                     % (re.escape(str(job)), re.escape(str(d))), launch, re.M), launch
    if os.geteuid() == 0:
        assert "-x OMPI_ALLOW_RUN_AS_ROOT -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM" in launch
    assert "launcher:  mpirun" in launch
    # herd's own output was shown as well as logged.
    assert "status complete" in proc.stdout


def test_batch_signalled(herd_bin, tmp_path):
    """scancel or the time limit: SIGTERM to the whole job. herd closes its
    file as interrupted, the script exits with herd's code (128+15, not
    mpirun's 1) and still makes the report."""
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "long.ini", {"target": target},
                    [("w", {"kind": "write", "file_size": "1M"}),
                     ("wait", {"kind": "idle", "duration": "60s"})])
    results = tmp_path / "results"
    p = subprocess.Popen(["bash", BATCH, job], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True,
                         env=job_env(herd_bin, HERD_NP=2, HERD_RESULTS=results))
    try:
        deadline = time.monotonic() + 60
        while not list(results.glob("*/herd.log")) or \
                "phase w:" not in list(results.glob("*/herd.log"))[0].read_text():
            assert time.monotonic() < deadline and p.poll() is None, "phase w never ended"
            time.sleep(0.1)
        time.sleep(0.5)
        os.killpg(p.pid, signal.SIGTERM)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 128 + signal.SIGTERM, err
    d = Path(last_line(out))
    with h5py.File(d / "results.h5", "r") as f:
        assert text(f.attrs["status"]) == "interrupted"
        assert list(f["phases"]) == ["w", "wait"]
    assert (d / "report" / "index.html").is_file()
    assert "exit code: 143" in (d / "launch.txt").read_text()


@pytest.mark.parametrize("output,results_in", [
    ("herd-4242.out", "tmp"), ("herd-4242.out", "/dev/shm"), ("herd.log", "tmp")],
    ids=["moved", "copied-across", "name-taken"])
def test_batch_srun_under_slurm(herd_bin, tmp_path, output, results_in):
    """SLURM_JOB_ID set: srun -n SLURM_NTASKS (a fake srun that runs mpirun).
    The job's output file (its standard output and error, as slurmstepd
    opens them) is moved into the run's directory at the end on the same
    file system (all of it: the directory's name printed after lands there
    too, and the submit directory keeps nothing); from another file system
    (results on /dev/shm) it is copied, but for that last line, and stays.
    A name the directory has (herd.log) is not overwritten: a warning says
    so."""
    if results_in != "tmp":
        if os.stat(results_in).st_dev == os.stat(tmp_path).st_dev:
            pytest.skip(f"{results_in} is on the file system of {tmp_path}")
        shm = Path(tempfile.mkdtemp(prefix="herd-test-batch.", dir=results_in))
        try:
            batch_under_slurm(herd_bin, tmp_path, output, shm / "results")
        finally:
            shutil.rmtree(shm)
    else:
        batch_under_slurm(herd_bin, tmp_path, output, tmp_path / "results")


def batch_under_slurm(herd_bin, tmp_path, output, results):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "srun").write_text(
        "#!/bin/bash\n"
        "[ \"$1\" = --version ] && { echo 'slurm 0.0 (fake)'; exit 0; }\n"
        f"printf '%s\\n' \"$@\" > {tmp_path}/srun.args\n"
        "[ \"$1\" = -n ] || exit 99\n"
        "n=$2; shift 2\n"
        "exec mpirun --oversubscribe -np \"$n\" \"$@\"\n")
    (fake / "srun").chmod(0o755)
    job = small_job(tmp_path)
    env = job_env(herd_bin, HERD_RESULTS=results, SLURM_JOB_ID=4242, SLURM_NTASKS=3,
                  SLURM_JOB_NODELIST="node[001-003]")
    env["PATH"] = f"{fake}:{env['PATH']}"
    out = tmp_path / output
    proc = run_cmd(["bash", "-c", 'out=$1; shift; exec bash "$@" >"$out" 2>&1', "slurmstepd",
                    out, BATCH, job, "--set", "file_size=512K"], env=env)
    moved = output != "herd.log" and results.is_relative_to(tmp_path)
    dirs = list(results.iterdir())
    assert len(dirs) == 1, dirs
    proc.stdout = (dirs[0] / output if moved else out).read_text()
    d = check_run_dir(proc, results, "small", 3, herd_bin)
    args = (tmp_path / "srun.args").read_text().split("\n")
    assert args[:2] == ["-n", "3"] and herd_bin in args and "--set" in args, args
    launch = (d / "launch.txt").read_text()
    assert "launcher:  srun" in launch and "SLURM_JOB_NODELIST=node[001-003]" in launch, launch
    if output == "herd.log":
        assert f"warning: Slurm output {out} left where it is: {d}/herd.log exists" \
            in proc.stdout
        assert "slurm out:" not in launch and "status complete" in (d / "herd.log").read_text()
    elif moved:
        assert not out.exists()
        assert f"slurm out: moved here from {out} at the end" in launch, launch
    else:
        assert (d / output).read_text() == proc.stdout[:-len(f"{d}\n")], describe(proc)
        assert f"slurm out: {out} (copied here at the end)" in launch, launch
        assert out.is_file()
    with h5py.File(d / "results.h5", "r") as f:
        assert int(f["phases/write"].attrs["file_size"]) == 512 << 10


def test_batch_bad_job(herd_bin, tmp_path):
    job = write_job(tmp_path / "bad.ini", {"target": tmp_path, "file_size": "1M",
                                           "block_size": "4M"}, [("write", {"kind": "write"})])
    results = tmp_path / "results"
    proc = run_cmd(["bash", BATCH, job], env=job_env(herd_bin, HERD_NP=2, HERD_RESULTS=results))
    assert proc.returncode == 2, describe(proc)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("herd-batch.sh: "), describe(proc)
    assert "block_size" in lines[0], lines
    assert proc.stdout == "", describe(proc)
    assert not list(tmp_path.rglob("results.h5"))


@pytest.mark.parametrize("args, env, word", [
    ([], {}, "usage"),
    (["/nonexistent.ini"], {}, "not a readable file"),
    (["JOB", "--set", "novalue"], {}, "key=value"),
    (["JOB"], {"HERD_NP": "0"}, "positive integer"),
    (["JOB"], {"HERD_LAUNCHER": "aprun"}, "srun or mpirun"),
], ids=["no-args", "no-job", "bad-set", "bad-np", "bad-launcher"])
def test_batch_bad_usage(herd_bin, tmp_path, args, env, word):
    job = small_job(tmp_path)
    args = [str(job) if a == "JOB" else a for a in args]
    proc = run_cmd(["bash", BATCH] + args,
                   env=job_env(herd_bin, HERD_RESULTS=tmp_path / "results", **env), timeout=30)
    assert proc.returncode == 2, describe(proc)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and word in lines[0], describe(proc)
    assert not (tmp_path / "results").exists()


# ---------------------------------------------------------------- 3: Slurm and PBS scripts


@pytest.mark.parametrize("script", [SBATCH, PBS], ids=["sbatch", "pbs"])
def test_scheduler_script_outside_scheduler(herd_bin, tmp_path, script):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("localhost slots=2\n")
    job = small_job(tmp_path)
    results = tmp_path / "results"
    proc = run_cmd(["bash", script, job],
                   env=job_env(herd_bin, HERD_NP=2, HERD_RESULTS=results, HERD_HOSTFILE=hostfile,
                               HERD_MPIRUN_ARGS="--oversubscribe --bind-to none"))
    d = check_run_dir(proc, results, "small", 2, herd_bin)
    launch = (d / "launch.txt").read_text()
    assert f"--hostfile {hostfile} -np 2" in launch and "--oversubscribe --bind-to none" in launch
    assert "localhost slots=2" in launch, launch


def test_pbs_as_pbs_runs_it(herd_bin, tmp_path):
    """qsub -v HERD_JOB_FILE=...,HERD_SET_FILE=...: no arguments, the rank
    count from PBS_NODEFILE (3 lines), relative paths from PBS_O_WORKDIR."""
    small_job(tmp_path)
    (tmp_path / "nodes").write_text("localhost\nlocalhost\nlocalhost\n")
    (tmp_path / "sets.txt").write_text("# one key=value a line\nfile_size=768K\n")
    results = tmp_path / "results"
    env = job_env(herd_bin, HERD_RESULTS=results, HERD_REPO=REPO_DIR, PBS_O_WORKDIR=tmp_path,
                  PBS_NODEFILE=tmp_path / "nodes", PBS_JOBID="77.pbs", HERD_JOB_FILE="small.ini",
                  HERD_SET_FILE="sets.txt", HERD_MPIRUN_ARGS="--oversubscribe")
    proc = run_cmd(["bash", PBS], env=env, cwd="/")
    d = check_run_dir(proc, results, "small", 3, herd_bin)
    launch = (d / "launch.txt").read_text()
    assert f"--hostfile {tmp_path}/nodes -np 3" in launch and "3 localhost" in launch, launch
    with h5py.File(d / "results.h5", "r") as f:
        assert int(f["phases/write"].attrs["file_size"]) == 768 << 10


# ---------------------------------------------------------------- 4: sweeps


def test_sweep_local(herd_bin, tmp_path):
    job = small_job(tmp_path, "tiny")
    results = tmp_path / "results"
    env = job_env(herd_bin, HERD_RESULTS=results, HERD_MPIRUN_ARGS="--oversubscribe")
    proc = run_cmd(["bash", SWEEP, "--scheduler", "local", "--nodes", "1 2", "--ppn", "2", job],
                   env=env, timeout=240)
    assert proc.returncode == 0, describe(proc)
    sweep = Path(last_line(proc.stdout))
    assert sweep.parent == results.resolve() and re.match(r"^sweep-\d{8}-\d{6}$", sweep.name)
    runs = sorted(p for p in sweep.iterdir() if (p / "launch.txt").exists())
    assert [re.match(DIR_RE % ("tiny", n), p.name) is not None for p, n in zip(runs, (2, 4))] \
        == [True, True], runs
    for p, n in zip(runs, (2, 4)):
        with h5py.File(p / "results.h5", "r") as f:
            assert text(f.attrs["status"]) == "complete" and int(f.attrs["nranks"]) == n
    out = sweep / "compare-tiny"
    assert (out / "scaling.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = read_csv(out / "compare.csv")
    assert {(r["phase"], r["run"], r["ranks"]) for r in rows} == \
        {(ph, str(n), str(n)) for ph in ("write", "read") for n in (2, 4)}, rows
    # The tables were printed, smallest rank count first.
    table = proc.stdout[proc.stdout.index("=== tiny"):]
    assert re.search(r"^write +2 +ok", table, re.M) and re.search(r"^read +4 +ok", table, re.M)
    tsv = (sweep / "sweep.tsv").read_text().splitlines()
    assert tsv[0].split("\t") == ["job", "nodes", "ppn", "ranks", "scheduler", "id"]
    assert [l.split("\t")[:5] for l in tsv[1:]] == [["tiny", "1", "2", "2", "local"],
                                                     ["tiny", "2", "2", "4", "local"]]

    # A failed run (launch.txt, no results.h5) is listed and skipped.
    failed = sweep / "20990101-000000-tiny-8r"
    failed.mkdir()
    (failed / "launch.txt").write_text("np:        8\njob_name:  tiny\n")
    shutil.rmtree(out)
    proc = run_cmd(["bash", COMPARE_SWEEP, sweep], env=env, timeout=120)
    assert proc.returncode == 0, describe(proc)
    assert re.search(r"^missing: tiny at 8 ranks: no results\.h5", proc.stdout, re.M), describe(proc)
    assert {r["run"] for r in read_csv(out / "compare.csv")} == {"2", "4"}


def fake_scheduler(tmp_path):
    """A bin directory with sbatch and qsub that log their arguments (one
    line per call, NUL-separated fields) and print a job id."""
    fake = tmp_path / "bin"
    fake.mkdir()
    for name, fmt in (("sbatch", "$((100+n));cluster1"), ("qsub", "$((200+n)).pbs01")):
        (fake / name).write_text(
            "#!/bin/bash\n"
            f"log={tmp_path}/{name}.calls\n"
            "printf '%s\\0' \"$@\" >> \"$log\"; echo >> \"$log\"\n"
            "n=$(wc -l < \"$log\")\n"
            f"echo \"{fmt}\"\n")
        (fake / name).chmod(0o755)
    return fake


def calls(path):
    return [line.rstrip("\0").split("\0") for line in Path(path).read_text().splitlines()]


def test_sweep_slurm_and_pbs_submissions(herd_bin, tmp_path):
    job = small_job(tmp_path)
    fake = fake_scheduler(tmp_path)
    env = job_env(herd_bin, HERD_NP=7)   # must not leak into the Slurm jobs
    env["PATH"] = f"{fake}:{env['PATH']}"

    sweep = tmp_path / "sw-slurm"
    proc = run_cmd(["bash", SWEEP, "--scheduler", "slurm", "--nodes", "20 100", "--ppn", "2",
                    "--set", "file_size=512K", job], env=dict(env, OUT=str(sweep)), timeout=60)
    assert proc.returncode == 0, describe(proc)
    c = calls(tmp_path / "sbatch.calls")
    assert len(c) == 3, c
    for argv, n in zip(c, (20, 100)):
        assert "--parsable" in argv and f"--nodes={n}" in argv and "--ntasks-per-node=2" in argv
        export = next(a for a in argv if a.startswith("--export="))
        assert f"HERD_RESULTS={sweep}" in export and ",HERD_NP=" in export, export
        assert argv[-4:] == [str(SBATCH), str(job), "--set", "file_size=512K"], argv
    final = c[2]
    assert "--dependency=afterany:101:102" in final, final
    assert final[-2:] == [str(COMPARE_SWEEP), str(sweep)], final
    assert "submitted 101" in proc.stdout and "submitted 103" in proc.stdout
    assert last_line(proc.stdout) == str(sweep)

    sweep = tmp_path / "sw-pbs"
    proc = run_cmd(["bash", SWEEP, "--scheduler", "pbs", "--nodes", "20,300",
                    "--set", "file_size=512K", job], env=dict(env, OUT=str(sweep)), timeout=60)
    assert proc.returncode == 0, describe(proc)
    c = calls(tmp_path / "qsub.calls")
    assert len(c) == 3, c
    for argv, n in zip(c, (20, 300)):
        assert argv[argv.index("-l") + 1] == f"select={n}:ncpus=1:mpiprocs=1", argv
        v = argv[argv.index("-v") + 1]
        assert f"HERD_RESULTS={sweep}" in v and f"HERD_JOB_FILE={job}" in v, v
        assert argv[-1] == str(PBS)
    assert (sweep / "sets.txt").read_text() == "file_size=512K\n"
    assert c[2][c[2].index("-W") + 1] == "depend=afterany:201.pbs01:202.pbs01", c[2]
    assert c[2][-1] == str(COMPARE_SWEEP) and f"HERD_SWEEP_DIR={sweep}" in c[2][c[2].index("-v") + 1]


def path_without(bindir, path, names):
    """A PATH of one directory that has every command of `path` but
    `names` (sbatch, qsub), whatever this machine has installed."""
    bindir.mkdir()
    for d in path.split(":"):
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            link = bindir / name
            if name not in names and not os.path.lexists(link):
                link.symlink_to(os.path.join(d, name))
    return str(bindir)


@pytest.mark.parametrize("args, word", [
    (["--scheduler", "slurm", "--nodes", "20", "JOB"], "sbatch"),
    (["--scheduler", "pbs", "--nodes", "20", "JOB"], "qsub"),
    (["--nodes", "20", "JOB"], "--scheduler"),
    (["--scheduler", "lsf", "--nodes", "20", "JOB"], "slurm, pbs or local"),
    (["--scheduler", "local", "JOB"], "--nodes"),
    (["--scheduler", "local", "--nodes", "20 x", "JOB"], "positive integer"),
    (["--scheduler", "local", "--nodes", "2", "--ppn", "0", "JOB"], "--ppn"),
    (["--scheduler", "local", "--nodes", "2"], "no job file"),
    (["--scheduler", "local", "--nodes", "2", "BAD"], "herd check"),
], ids=["slurm-no-sbatch", "pbs-no-qsub", "no-scheduler", "bad-scheduler", "no-nodes",
        "bad-nodes", "bad-ppn", "no-job", "bad-job"])
def test_sweep_bad_usage(herd_bin, tmp_path, args, word):
    job = small_job(tmp_path)
    bad = write_job(tmp_path / "bad.ini", {"target": tmp_path, "file_size": "1M",
                                           "block_size": "4M"}, [("w", {"kind": "write"})])
    args = [str(job) if a == "JOB" else str(bad) if a == "BAD" else a for a in args]
    env = job_env(herd_bin, HERD_RESULTS=tmp_path / "results")
    env["PATH"] = path_without(tmp_path / "bin", env["PATH"], ("sbatch", "qsub"))
    proc = run_cmd(["bash", SWEEP] + args, env=env, timeout=30)
    assert proc.returncode == 2, describe(proc)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sweep.sh: ") and word in lines[0], \
        describe(proc)
    assert not (tmp_path / "results").exists()


# ---------------------------------------------------------------- 5: seed scripts


def _why_no_server():
    if os.geteuid() != 0:
        return "the embedded NFS server needs root"
    from test_nfs import _WHY
    return _WHY


def leftovers(tmp):
    """Processes, loop devices and state directories the seed scripts left."""
    left = [str(p) for p in Path(tmp).glob("herd-seed00*")]
    for pid, raw in proc_cmdlines().items():
        cmd = raw.replace(b"\0", b" ").decode(errors="replace")
        if str(tmp) in cmd and ("ganesha" in cmd or "smbd" in cmd):
            left.append(f"pid {pid}: {cmd}")
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    left += [l for l in loops.splitlines() if str(tmp) in l]
    return left


@pytest.fixture(autouse=True)
def stop_servers_left(tmp_path):
    """A seed driver stopped at its time-out cannot stop the servers it
    started (each supervisor has a session of its own, out of reach of the
    test's kill): stop any whose state is under this test's TMPDIR, with the
    script's own verb, so that a failed test leaves no server behind."""
    yield
    for state in sorted((tmp_path / "tmp").glob("herd-*")):
        if (state / "pid" / "supervisor").exists():
            subprocess.run(["bash", str(REPO_DIR / "cluster-configs" / "local" / "nfs-server.sh"),
                            "stop", "--state", str(state)], capture_output=True, timeout=120)


def seed_env(herd_bin, tmp_path, **extra):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    return tmp, job_env(herd_bin, TMPDIR=tmp, OUT=tmp_path / "out", **extra)


def test_seed003_sync_async(herd_bin, tmp_path):
    why = _why_no_server()
    if why:
        pytest.skip(why)
    tmp, env = seed_env(herd_bin, tmp_path, FILES=100, RANKS=1, ROUNDS=2)
    proc = run_cmd(["bash", JOBS / "seed003-sync-async.sh"], env=env, timeout=300)
    assert proc.returncode == 0, describe(proc)
    assert leftovers(tmp) == []
    out = tmp_path / "out"
    for name in ("sync.1", "async.1", "sync.2", "async.2"):
        with h5py.File(out / f"{name}.h5", "r") as f:
            assert text(f.attrs["status"]) == "complete"
            assert int(f.attrs["nranks"]) == 1
            assert set(f["phases"]) == {"create", "stat", "mv", "rm"}
            assert int(f["phases/create"].attrs["files"]) == 100
            assert text(f["phases/create"].attrs["backend"]) == "libnfs"
    # (the rounds of a mode are its repeats: runs "sync (sync.1)"...)
    rows = read_csv(out / "compare" / "compare.csv")
    assert {(r["phase"], r["run"]) for r in rows} == \
        {(ph, f"{m} ({m}.{k})") for ph in ("create", "stat", "mv", "rm")
         for m in ("sync", "async") for k in (1, 2)}
    assert all(r["status"] == "ok" and r["errors"] == "0" for r in rows), rows
    assert re.search(r"^create +sync \(sync\.1\) +ok", proc.stdout, re.M), describe(proc)
    assert re.search(r"^rm +async \(async\.2\) +ok", proc.stdout, re.M), describe(proc)
    assert (out / "summary.txt").is_file()
    # The per-step table (issue 18): the mechanism named, and under --sync
    # (dirsync) every rename and unlink writes the loop disk; under --async
    # only xfs's own log buffers, when full, do (0-0.6 per file measured).
    assert "mechanism: --sync mounts the export with dirsync" in proc.stdout, describe(proc)
    steps = {r["phase"]: r for r in read_csv(out / "steps.csv")}
    assert set(steps) == {"create", "stat", "mv", "rm"}
    for ph in ("mv", "rm"):
        assert float(steps[ph]["sync_wr_per_item"]) >= 0.5, steps[ph]
        assert float(steps[ph]["async_wr_per_item"]) < float(steps[ph]["sync_wr_per_item"]) / 2, \
            steps[ph]
        assert float(steps[ph]["sync_over_async"]) > 0, steps[ph]
    # Issue 63: each step carries its rounds' spread (per mode, per item)
    # and the range of the rounds' own sync/async ratios; stat commits
    # nothing under either mode, so sync added no flushes and it is marked
    # no measured difference, in steps.csv and in the printed table,
    # whatever its times came out as.
    for ph, r in steps.items():
        assert len(r["rounds"].split()) == 2, r
        assert float(r["ratio_min"]) <= float(r["sync_over_async"]) <= float(r["ratio_max"]), r
        for m in ("sync", "async"):
            assert float(r[f"{m}_ms_per_item_min"]) <= float(r[f"{m}_ms_per_item"]) \
                <= float(r[f"{m}_ms_per_item_max"]), r
    # (or, where a short stat step shared every round's samples with its
    # neighbours' flushes, because the rounds' times overlap)
    assert steps["stat"]["mark"].startswith("no measured difference ("), steps["stat"]
    assert re.search(r"^stat .* no measured difference \((sync added no flushes|rounds overlap)\)$",
                     proc.stdout, re.M), describe(proc)
    for ph in ("create", "mv", "rm"):
        assert float(steps[ph]["sync_fl_per_item"]) >= 1.0, steps[ph]
        assert "added no flushes" not in steps[ph]["mark"], steps[ph]
        assert re.search(rf"^{ph} .*\(\d+\.\d+-\d+\.\d+\) +\S", proc.stdout, re.M), \
            describe(proc)


def test_seed002_nfs_smb(herd_bin, tmp_path):
    why = _why_no_server()
    if why:
        pytest.skip(why)
    sbin = os.environ.get("PATH", "/usr/bin:/bin") + SBIN
    if not all(shutil.which(t, path=sbin) for t in ("smbd", "smbclient", "smbpasswd")):
        pytest.skip("samba and smbclient are not installed (apt-get install samba smbclient)")
    if "smb_user" not in run_cmd([herd_bin, "keys"], timeout=30).stdout:
        pytest.skip("herd was built without libsmbclient (no smb backend)")
    variants = ("nfs-w2", "nfs-w4", "smb-sendfile", "smb-nosendfile")
    tmp, env = seed_env(herd_bin, tmp_path, NFS_WORKERS="2 4", SMB_SENDFILE="yes no",
                        FILE_SIZE="16M", RANKS=2)
    proc = run_cmd(["bash", JOBS / "seed002-nfs-smb.sh"], env=env, timeout=300)  # hang guard
    assert proc.returncode == 0, describe(proc)
    assert leftovers(tmp) == []
    out = tmp_path / "out"
    # The tiny matrix and no more: one run per variant (each checked below).
    assert sorted(p.name for p in out.glob("*.h5")) == sorted(f"{v}.h5" for v in variants)
    for v in variants:
        run = (out / f"{v}.h5").resolve()
        assert re.match(DIR_RE % ("seed002", 3), run.parent.name) and run.parent.name.endswith(v)
        with h5py.File(run, "r") as f:
            assert text(f.attrs["status"]) == "complete"
            assert int(f.attrs["nranks"]) == 2
            assert set(f["phases"]) == {"write", "read"}
            read = f["phases/read"].attrs
            assert int(read["block_size"]) == 64 << 10 and int(read["file_size"]) == 8 << 20
            assert text(read["backend"]) == ("smb" if v.startswith("smb") else "libnfs")
            procs = f["monitor/processes"][()]
        serving = "smbd" if v.startswith("smb") else "ganesha.nfsd"
        mine = procs[[text(n) == serving for n in procs["name"]]]
        assert len(mine) >= 1 and mine["processes"].max() >= 1, (v, procs)
    rows = read_csv(out / "compare" / "compare.csv")
    assert {(r["phase"], r["run"]) for r in rows} == \
        {(ph, v) for ph in ("write", "read") for v in variants}
    assert all(r["status"] == "ok" and r["errors"] == "0" for r in rows), rows
    assert (out / "compare" / "compare.png").is_file()
    for v in variants:
        assert re.search(r"^read +%s +ok" % v, proc.stdout, re.M), describe(proc)
    # The server table: every variant's read row names the process that
    # served it and shows its CPU (a number, not "-").
    cpu = read_csv(out / "server-cpu.csv")
    assert {(r["variant"], r["phase"]) for r in cpu} == \
        {(v, ph) for ph in ("write", "read") for v in variants}
    for r in cpu:
        assert r["server"] == ("smbd" if r["variant"].startswith("smb") else "ganesha.nfsd"), r
        assert float(r["cpu"]) >= 0 and float(r["mib_per_s"]) > 0, r
    for v in variants:
        serving = "smbd" if v.startswith("smb") else "ganesha.nfsd"
        assert re.search(r"^%s +read +%s +[0-9.]+ +[0-9.]+ +[0-9.]+ " % (v, re.escape(serving)),
                         proc.stdout, re.M), describe(proc)


LOCK_PHASES = ("lock-exclusive-whole", "lock-shared-whole", "lock-mixed-overlap",
               "lock-nonblocking")


def run_seed001_locks(herd_bin, tmp_path, *args):
    """seed001-locks.sh with 4 ranks on xfs and ext4: exit 0, no leftovers;
    returns (stdout, {fs: {phase: attrs, phase/errors: rows}})."""
    why = _why_no_server()
    if why:
        pytest.skip(why)
    tmp, env = seed_env(herd_bin, tmp_path, RANKS=4)
    for k in ("JOB", "FSES"):
        env.pop(k, None)
    proc = run_cmd(["bash", JOBS / "seed001-locks.sh", *args], env=env, timeout=240)
    assert proc.returncode == 0, describe(proc)
    assert leftovers(tmp) == [] and list(tmp.glob("herd-*")) == []
    out = tmp_path / "out"
    runs = {}
    for fs in ("xfs", "ext4"):
        run = (out / f"{fs}.h5").resolve()
        assert re.match(DIR_RE % ("seed001-locks", 5), run.parent.name), run
        assert run.parent.name.endswith(fs)
        with h5py.File(run, "r") as f:
            assert text(f.attrs["status"]) == "complete"
            assert int(f.attrs["nranks"]) == 4
            phases = {}
            for name in f["phases"]:
                g = f["phases"][name]
                phases[name] = {k: text(v) for k, v in g.attrs.items()}
                phases[name]["errors"] = [
                    (text(r["op"]), text(r["errno_name"]), text(r["status"]), int(r["count"]))
                    for r in g["errors"][()]]
            assert text(phases["lock-nonblocking"]["backend"]) == "libnfs"
            procs = f["monitor/processes"][()]
            assert {text(n) for n in procs["name"]} == {"ganesha.nfsd"}
        runs[fs] = phases
    rows = read_csv(out / "compare" / "compare.csv")
    assert {r["run"] for r in rows} == {"xfs", "ext4"}
    assert re.search(r"^lock-exclusive-whole +xfs +", proc.stdout, re.M), describe(proc)
    assert re.search(r"^lock-nonblocking +ext4 +", proc.stdout, re.M), describe(proc)
    assert "errors by op, errno and protocol status" in proc.stdout
    assert (out / "summary.txt").read_text() in proc.stdout
    return proc.stdout, runs


def test_seed001_locks(herd_bin, tmp_path):
    """Both exports grant every blocking lock (4 ranks x 20), the
    non-blocking phase is contended and nothing is an error."""
    stdout, runs = run_seed001_locks(herd_bin, tmp_path)
    for fs, phases in runs.items():
        assert set(phases) == {"make-file", "storm-open", *LOCK_PHASES}
        for name in LOCK_PHASES:
            a = phases[name]
            assert a["status"] == "ok" and a["errors"] == [], (fs, name, a)
            assert int(a["summary_violations"]) == 0
            if name != "lock-nonblocking":
                assert int(a["summary_grants"]) == 4 * 20, (fs, name)
        nb = phases["lock-nonblocking"]
        assert int(nb["summary_grants"]) > 0 and int(nb["summary_contended"]) > 0
        assert int(nb["summary_grants"]) + int(nb["summary_contended"]) == 4 * 200
        assert re.search(rf"^{fs} +lock-shared-whole +ok +80 ", stdout, re.M), stdout
        assert re.search(rf"^{fs} +\(none\)$", stdout, re.M), stdout
    assert "GRACE" not in stdout


def test_seed001_locks_grace(herd_bin, tmp_path):
    """--grace 12: the first lock phase is refused on every rank with the
    NLM grace status (and the table says so); after the wait the others
    grant again. (With --grace 5 a busy machine's slower start reached the
    first lock phase after the grace: nothing was refused.)"""
    stdout, runs = run_seed001_locks(herd_bin, tmp_path, "--grace", "12")
    for fs, phases in runs.items():
        assert set(phases) == {"make-file", "storm-open", "wait-out-grace", *LOCK_PHASES}
        first = phases["lock-exclusive-whole"]
        assert first["status"] == "errors" and int(first["summary_grants"]) == 0
        assert {e[:3] for e in first["errors"]} == {("lock", "ENOLCK", "NLM4_DENIED_GRACE_PERIOD")}
        assert sum(e[3] for e in first["errors"]) == 4 * 20
        for name in LOCK_PHASES[1:]:
            assert phases[name]["status"] == "ok" and int(phases[name]["summary_grants"]) > 0, \
                (fs, name, phases[name])
        assert re.search(rf"^{fs} +lock-exclusive-whole +lock +ENOLCK +NLM4_DENIED_GRACE_PERIOD +80 +4$",
                         stdout, re.M), stdout


# ---------------------------------------------------------------- 6: the demo's job

DEMO = JOBS / "demo.sh"
# The demo's iterations per seed-001 phase (jobs/demo.sh, README's quick start).
DEMO_ITERATIONS = {
    "write-unique-16M": 4, "read-unique-16M": 16, "md5-unique-16M": 4,
    "write-same-16M": 8, "read-same-16M": 20, "md5-same-16M": 5,
    "write-unique-32M": 3, "read-unique-32M": 8, "md5-unique-32M": 3,
    "write-same-32M": 3, "read-same-32M": 12, "md5-same-32M": 3,
}


def test_demo_check_prints_its_job(herd_bin):
    build = Path(herd_bin).resolve().parent
    env = job_env(herd_bin, HERD_BUILD_DIR=build)
    proc = run_cmd(["bash", DEMO, "--check"], env=env, timeout=60)
    assert proc.returncode == 0, describe(proc)
    rows = [line.split() for line in proc.stdout.splitlines() if re.match(r"^\d+\s", line)]
    assert [r[1] for r in rows] == list(DEMO_ITERATIONS), describe(proc)
    for r in rows:  # phase kind sharing shared_mode fileset file block iter ...
        assert r[6] == r[1].rsplit("-", 1)[1] and r[8] == str(DEMO_ITERATIONS[r[1]]), r
    assert "total for 8 ranks" in proc.stdout, describe(proc)
    bad = run_cmd(["bash", DEMO, "--bogus"], env=env, timeout=30)
    lines = bad.stderr.strip().splitlines()
    assert bad.returncode == 2 and len(lines) == 1 and "--bogus" in lines[0], describe(bad)
