"""herd over SMB: the smb backend (src/backend/backend_smb.c, libsmbclient) against
the embedded smbd that cluster-configs/local/nfs-server.sh --smb starts
beside ganesha, on the same loop-mounted xfs export.

1. The core checks of test_core.py over SMB at 4 and 20 ranks (write, read
   with verify, md5 of unique, same-content and segmented files): exact
   bytes, verify clean, every call in the latency histograms; the export
   is left empty. /hosts records the dialect the server agreed to
   (SMB3_11, or SMB3_02 when smb_max_protocol says so).
2. Meta and storm counts exact over SMB (test_lock_meta.py's checks).
3. One export, two protocols: a job writes over NFS (libnfs) and keeps its
   files; the same job's read and md5 over SMB find them intact; the two
   runs compared with herd-compare.
4. smbd stopped in the middle of a write phase and started again: errors
   with connection errnos on every rank, the later iterations and phases
   reconnect and run clean, exit 3.
5. A wrong password, a share that does not exist, a port nobody listens
   on: exit 2 and one line naming the target, no results file claiming
   success; the password appears nowhere (results file, stdout, stderr).
6. `herd check` refuses what libsmbclient cannot do (lock phases, fsync,
   direct) and credentials in the URL, with the reason.
7. A monitor rank records smbd's CPU (monitor_processes = smbd) and the
   report's server table shows it.
8. libsmbclient is loaded by the first smb target, never by another job
   (the loader's own account, LD_DEBUG=files); a library that cannot be
   loaded (an empty file bound over it in a mount namespace of the test's
   own) is one line at `herd check`, naming it.

Needs root, nfs-ganesha, samba and smbclient (skips with a message
otherwise) and herd built with libsmbclient. Run:
/usr/bin/python3 -m pytest -q -rs -s tests/integration/test_smb.py
"""

import errno
import os
import re
import shutil
import subprocess
from pathlib import Path

import h5py
import pytest

from conftest import (REPO_DIR, Background, describe, herd_cmd, hold_ranks, load_results,
                      mpi_env, mpirun_args, phase_attr_order, rank_pids, read_csv, run_cmd,
                      write_job)
from test_core import GLOBAL as CORE_GLOBAL
from test_core import PHASES as CORE_PHASES
from test_core import check_phase, resolved
from test_lock_meta import (FULL, META, STORM, LockResults, check_meta_phase, check_storm_ok,
                            meta_full_phases, split_phases)
from test_nfs import CONNECTION_ERRNOS, errnos_by_rank, export_listing
from test_nfs_server import SBIN_PATH, Server, _why_skip

RUN_TIMEOUT = 300
# what libsmbclient says when smbd goes away under a call
SMB_CONNECTION_ERRNOS = {errno.ECONNABORTED, errno.ENOTCONN, errno.EHOSTUNREACH,
                         errno.ENETRESET, errno.EPIPE}


def _why_skip_smb():
    why = _why_skip()
    if why:
        return why
    for tool, pkg in (("smbd", "samba"), ("smbpasswd", "samba"), ("smbclient", "smbclient")):
        if shutil.which(tool, path=SBIN_PATH) is None:
            return f"{tool} not found (apt-get install {pkg})"
    return None


_WHY = _why_skip_smb()
pytestmark = pytest.mark.skipif(_WHY is not None, reason=_WHY or "")


@pytest.fixture
def smb(tmp_path):
    """The embedded server with smbd on a fresh 1G xfs export; stopped and
    checked for leftovers in teardown."""
    s = Server(tmp_path / "srv")
    try:
        s.start("--fs", "xfs", "--size", "1G", "--smb")
        s.password_file = s.state / "smb" / "password"
        s.password = s.password_file.read_text().strip()
        assert s.smb_url == "smb://127.0.0.1/export", s.smb_url
        yield s
    finally:
        s.stop(check=False)
    s.assert_clean()


def smb_keys(s, **extra):
    keys = {"backend": "smb", "target": s.smb_url, "smb_user": "herd",
            "smb_password_file": s.password_file, "fsync": "no", "op_timeout": 10}
    keys.update(extra)
    return keys


def run_in(s, herd_bin, nranks, job, out, *extra, timeout=RUN_TIMEOUT):
    args = ["bash", str(REPO_DIR / "cluster-configs" / "local" / "nfs-server.sh"), "exec",
            "--state", str(s.state), "--", *mpirun_args(herd_bin, nranks, "run", job, "-o", out,
                                                         *extra)]
    env = mpi_env()
    env["PATH"] = SBIN_PATH
    return run_cmd(args, timeout=timeout, env=env)


def assert_no_secret(s, proc, out):
    secret = s.password.encode()
    assert len(secret) >= 8
    assert secret not in proc.stdout.encode() and secret not in proc.stderr.encode()
    if os.path.exists(out):
        assert secret not in open(out, "rb").read(), "the password is in the results file"


def host_options(out):
    with h5py.File(out, "r") as f:
        hosts = f["hosts"][()]
    return [(h["fstype"].decode(), h["mount_options"].decode()) for h in hosts]


# ---------------------------------------------------------------- 1. core


@pytest.mark.parametrize("nranks", [4, 20])
def test_core_over_smb(smb, herd_bin, tmp_path, nranks):
    glob = {**CORE_GLOBAL, "fsync": "no"}
    job = write_job(tmp_path / "core.ini", smb_keys(smb, **glob), CORE_PHASES)
    out = tmp_path / "core.h5"
    proc = run_in(smb, herd_bin, nranks, job, out)
    assert proc.returncode == 0, describe(proc)
    res = load_results(out)
    assert res.attrs["status"] == "complete" and res.attrs["nranks"] == nranks
    order = phase_attr_order(herd_bin)
    for name, keys in CORE_PHASES:
        ph = res.phases[name]
        check_phase(name, resolved({**keys, "fsync": "no"}), ph, nranks, order, f"smb {name}")
        assert ph.attrs["backend"] == "smb" and ph.attrs["target"] == smb.smb_url
    (fstype, options), = host_options(out)
    print(f"\n{nranks} ranks over SMB: /hosts {fstype} {options}")
    assert fstype == "smb" and "dialect=SMB3_11" in options, options
    assert export_listing(smb) == [], "herd left files on the export"
    assert_no_secret(smb, proc, out)


def test_max_protocol_is_what_is_negotiated(smb, herd_bin, tmp_path):
    job = write_job(tmp_path / "p.ini", smb_keys(smb, smb_max_protocol="SMB3_02",
                                                 file_size="1M"),
                    [("w", {"kind": "write"}), ("r", {"kind": "read", "verify": "yes"})])
    out = tmp_path / "p.h5"
    proc = run_in(smb, herd_bin, 2, job, out)
    assert proc.returncode == 0, describe(proc)
    (fstype, options), = host_options(out)
    assert "dialect=SMB3_02" in options and "max=SMB3_02" in options, options


# ---------------------------------------------------------------- 2. meta, storm


def test_meta_and_storm_over_smb(smb, herd_bin, tmp_path):
    nranks, n = 4, 10
    phases = meta_full_phases() + split_phases("unique") + \
        [("make", {"kind": "write", **STORM}), ("storm", {"kind": "storm", "count": n, **STORM})]
    job = write_job(tmp_path / "meta.ini", smb_keys(smb, **META), phases)
    out = tmp_path / "meta.h5"
    proc = run_in(smb, herd_bin, nranks, job, out)
    assert proc.returncode == 0, describe(proc)
    r = LockResults(out)
    for name, keys in meta_full_phases():
        check_meta_phase(r, name, {**META, **keys}, nranks, FULL, backend="smb")
    for name, keys in split_phases("unique"):
        check_meta_phase(r, name, {**META, **keys}, nranks, keys["meta_ops"].split(","),
                         backend="smb")
    check_storm_ok(r, "storm", nranks, n, 16 * 1024, backend="smb")
    assert export_listing(smb) == []


# ---------------------------------------------------------------- 3. NFS and SMB


def test_same_files_over_nfs_and_smb(smb, herd_bin, tmp_path):
    nranks = 4
    common = {"file_size": "8M", "block_size": "64K", "fsync": "no", "run_id": "both"}
    phases = [("write", {"kind": "write"}), ("read", {"kind": "read", "verify": "yes"}),
              ("md5", {"kind": "md5"})]
    nfs_job = write_job(tmp_path / "nfs.ini",
                        {"backend": "libnfs", "target": smb.url, "keep": "yes", **common},
                        phases)
    proc = run_in(smb, herd_bin, nranks, nfs_job, tmp_path / "nfs.h5")
    assert proc.returncode == 0, describe(proc)
    # SMB reads what NFS wrote (the run directory is reused: fixed run_id)
    smb_job = write_job(tmp_path / "smb.ini", smb_keys(smb, keep="no", **common), phases[1:])
    proc = run_in(smb, herd_bin, nranks, smb_job, tmp_path / "smb.h5")
    assert proc.returncode == 0, describe(proc)
    res = load_results(tmp_path / "smb.h5")
    for name in ("read", "md5"):
        ph = res.phases[name]
        assert ph.attrs["status"] == "ok", (name, ph.error_rows())
        assert (ph.ranks["bytes"] == 8 << 20).all() and (ph.ranks["verify_failures"] == 0).all()
    cmp_dir = tmp_path / "cmp"
    proc = run_cmd([str(REPO_DIR / "analysis" / "herd-compare"), tmp_path / "nfs.h5",
                    tmp_path / "smb.h5", "--label", "backend", "-o", cmp_dir])
    assert proc.returncode == 0, describe(proc)
    rows = read_csv(cmp_dir / "compare.csv")
    runs = {(r["phase"], r["run"]) for r in rows}
    assert {("read", "libnfs"), ("read", "smb"), ("md5", "libnfs"), ("md5", "smb")} <= runs
    print("\n" + proc.stdout)


# ---------------------------------------------------------------- 4. smbd stopped


def progress_bytes(line):
    """The bytes a progress line of a write phase says were written
    ("herd: w1: 4 ranks 0% (812.0 MiB, 160.2 MiB/s) after 5.05s"), 0 for
    another line."""
    m = re.match(r"^herd: \S+: .*\(([0-9.]+) (B|KiB|MiB|GiB|TiB)[,)]", line)
    units = {"B": 0, "KiB": 10, "MiB": 20, "GiB": 30, "TiB": 40}
    return float(m.group(1)) * (1 << units[m.group(2)]) if m else 0


def test_smbd_stopped_mid_phase(smb, herd_bin, tmp_path):
    """smbd stopped while every rank writes (w1): each rank's calls fail
    with connection errors, none hangs; smbd started again between the
    phases: the later phases are clean. No step races a clock: the ranks
    write at a paced rate (think_time) so that w1 cannot end on its own
    before the stop, smbd is stopped once they have written more than two
    files each (a progress line says so) while they are held (SIGSTOP),
    w1 then ends by the errors of its remaining iterations (its deadline
    only guards against a hang), and the ranks are held in the idle
    phase after it until smbd is back."""
    nranks = 4
    size = 4 << 20
    job = write_job(tmp_path / "stop.ini", smb_keys(smb, file_size="4M", block_size="64K",
                                                   op_timeout=3, think_time="100ms"),
                    [("w1", {"kind": "write", "iterations": 40, "deadline": 300}),
                     ("gap", {"kind": "idle", "duration": 5}),
                     ("w2", {"kind": "write", "fileset": "after"}),
                     ("r2", {"kind": "read", "fileset": "after", "verify": "yes"})])
    out = tmp_path / "stop.h5"
    args = ["bash", str(REPO_DIR / "cluster-configs" / "local" / "nfs-server.sh"), "exec",
            "--state", str(smb.state), "--", *mpirun_args(herd_bin, nranks, "run", job, "-o",
                                                          out)]
    env = mpi_env()
    env["PATH"] = SBIN_PATH
    pids = {}
    with Background(args, env=env) as run:
        run.wait_line("^herd: run ", RUN_TIMEOUT)
        pids = rank_pids(run.pid, nranks)
        # More than 2 x nranks files' bytes: more than nranks iterations
        # were complete (each rank has at most one under way).
        run.wait_line(r"^herd: w1: ", RUN_TIMEOUT)
        written = run.err.wait_for(lambda l: progress_bytes(l) > 2 * nranks * size, RUN_TIMEOUT)
        assert written, f"w1 never wrote {2 * nranks} files:\n{run.err.rest(5)}"
        hold_ranks(pids, True)  # mid-w1 (40 paced files each) until smbd is gone
        try:
            stop = smb.cmd("stop-smbd", "--state", smb.state)
            assert stop.returncode == 0, stop.stderr
        finally:
            hold_ranks(pids, False)
        run.wait_line("^herd: phase w1: ", RUN_TIMEOUT)
        hold_ranks(pids, True)  # in "gap" until smbd is back
        try:
            start = smb.cmd("restart-smbd", "--state", smb.state)
            assert start.returncode == 0, start.stderr
            smb.refresh()
        finally:
            hold_ranks(pids, False)
        proc, _ = run.wait(timeout=RUN_TIMEOUT)
    assert proc.returncode == 3, describe(proc)
    res = load_results(out)
    w1 = res.phases["w1"]
    assert w1.attrs["status"] == "errors", w1.attrs["status"]
    by_rank = errnos_by_rank(w1)
    print(f"\nw1 errors by rank: {by_rank}")
    assert sorted(by_rank) == list(range(nranks)), by_rank
    for row in w1.error_rows():
        assert row["errno"] in CONNECTION_ERRNOS | SMB_CONNECTION_ERRNOS, row
    done_after = w1.ranks[(w1.ranks["completed"] == 1)]
    assert len(done_after) > nranks, "no iteration completed (before or after the stop)"
    for name in ("w2", "r2"):
        ph = res.phases[name]
        assert ph.attrs["status"] == "ok", (name, ph.error_rows())
        assert (ph.ranks["verify_failures"] == 0).all()
    assert_no_secret(smb, proc, out)


# ---------------------------------------------------------------- 5. refused at start


@pytest.mark.parametrize("case", ["password", "share", "port"])
def test_refused_at_start(smb, herd_bin, tmp_path, case):
    keys = smb_keys(smb, file_size="1M")
    if case == "password":
        bad = tmp_path / "wrong"
        bad.write_text("not-the-password\n")
        bad.chmod(0o600)  # a well-kept file with the wrong password
        keys["smb_password_file"] = bad
    elif case == "share":
        keys["target"] = "smb://127.0.0.1/nosuchshare"
    else:
        keys["target"] = "smb://127.0.0.1:4455/export"
    job = write_job(tmp_path / "bad.ini", keys, [("w", {"kind": "write"})])
    out = tmp_path / "bad.h5"
    proc = run_in(smb, herd_bin, 2, job, out, timeout=120)
    print(f"\n{case}: exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}")
    assert proc.returncode == 2, describe(proc)
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("herd: target")]
    assert len(lines) == 1, describe(proc)
    assert "smb://" in lines[0]
    assert not out.exists() or load_results(out).attrs["status"] != "complete"
    assert_no_secret(smb, proc, out)


# ---------------------------------------------------------------- 6. herd check


@pytest.mark.parametrize("keys,phase,key", [
    ({}, {"kind": "lock"}, "kind"),
    ({"fsync": "yes"}, {"kind": "write"}, "fsync"),
    ({"direct": "yes", "file_size": "4M", "block_size": "64K"}, {"kind": "write"}, "direct"),
    ({"target": "smb://herd:secret@127.0.0.1/export"}, {"kind": "write"}, "target"),
    ({"smb_guest": "yes"}, {"kind": "write"}, "smb_guest"),
    ({"smb_password_file": ""}, {"kind": "write"}, "smb_password_file"),
    ({"smb_min_protocol": "SMB3_11", "smb_max_protocol": "SMB2_10"}, {"kind": "write"},
     "smb_min_protocol"),
])
def test_check_refuses(herd_bin, tmp_path, keys, phase, key):
    base = {"backend": "smb", "target": "smb://127.0.0.1/export", "smb_user": "herd",
            "smb_password_file": "/nonexistent", "fsync": "no"}
    base.update(keys)
    base = {k: v for k, v in base.items() if v != ""}
    job = write_job(tmp_path / "c.ini", base, [("p", phase)])
    proc = herd_cmd(herd_bin, "check", job)
    assert proc.returncode == 2, describe(proc)
    assert f"key '{key}'" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_check_refuses_bad_password_files(herd_bin, tmp_path):
    """The password file is read by check as by run: a missing, empty,
    shared (group/other may read it) or not-a-file password file is one
    line naming smb_password_file, not a failure blamed on the target."""
    good = tmp_path / "pw"
    good.write_text("secret\n")
    good.chmod(0o600)
    empty = tmp_path / "empty"
    empty.write_text("")
    empty.chmod(0o600)
    shared = tmp_path / "shared"
    shared.write_text("secret\n")
    shared.chmod(0o644)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    cases = {tmp_path / "missing": "No such file", empty: "empty", shared: "mode 0644",
             fifo: "not a regular file", tmp_path: "not a regular file",
             Path("/dev/zero"): "not a regular file"}
    base = {"backend": "smb", "target": "smb://127.0.0.1/export", "smb_user": "herd",
            "fsync": "no"}
    job = write_job(tmp_path / "ok.ini", {**base, "smb_password_file": good},
                    [("w", {"kind": "write"})])
    assert herd_cmd(herd_bin, "check", job).returncode == 0
    for path, why in cases.items():
        job = write_job(tmp_path / "c.ini", {**base, "smb_password_file": path},
                        [("w", {"kind": "write"})])
        proc = herd_cmd(herd_bin, "check", job, timeout=20)
        assert proc.returncode == 2, describe(proc)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "key 'smb_password_file'" in lines[0] and why in lines[0], \
            lines


def test_smb_keys_refused_with_other_backends(herd_bin, tmp_path):
    job = write_job(tmp_path / "k.ini", {"target": str(tmp_path), "smb_user": "herd"},
                    [("w", {"kind": "write"})])
    proc = herd_cmd(herd_bin, "check", job)
    assert proc.returncode == 2
    assert "key 'smb_user': applies to backend = smb only" in proc.stderr, proc.stderr


# ---------------------------------------------------------------- 7. monitor


def test_monitor_records_smbd(smb, herd_bin, tmp_path):
    nranks = 3
    job = write_job(tmp_path / "mon.ini",
                    smb_keys(smb, file_size="64M", block_size="64K", monitor_rank="last",
                             monitor_interval="100ms", monitor_processes="smbd,ganesha.nfsd"),
                    [("write", {"kind": "write", "iterations": 3}),
                     ("read", {"kind": "read", "iterations": 3})])
    out = tmp_path / "mon.h5"
    proc = run_in(smb, herd_bin, nranks + 1, job, out)
    assert proc.returncode == 0, describe(proc)
    with h5py.File(out, "r") as f:
        procs = f["monitor/processes"][()]
    names = {p.decode() for p in procs["name"]}
    smbd = procs[[p.decode() == "smbd" for p in procs["name"]]]
    print(f"\nsmbd: {len(smbd)} samples, CPU max {smbd['cpu'].max():.2f}, "
          f"processes max {smbd['processes'].max()}")
    assert "smbd" in names and len(smbd) > 0
    assert smbd["cpu"].max() > 0.05, "smbd never used CPU while 3 ranks moved data"
    assert smbd["processes"].max() >= nranks  # one smbd per connection
    rep = tmp_path / "report"
    proc = run_cmd([str(REPO_DIR / "analysis" / "herd-report"), out, "-o", rep])
    assert proc.returncode == 0, describe(proc)
    html = (rep / "index.html").read_text()
    assert re.search(r"smbd[^<]* CPU mean", html), "the server table has no smbd column"


# ---------------------------------------------------------------- 8. loaded on demand

SMB_SONAME = "libsmbclient.so.0"


def loaded_libraries(herd_bin, job):
    """The shared objects `herd check JOB` mapped, by the dynamic loader's
    own account (LD_DEBUG=files: a "file=NAME [0];  needed by" or
    "dynamically loaded by" line per object)."""
    proc = subprocess.run([str(herd_bin), "check", str(job)], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "LD_DEBUG": "files"})
    return proc, set(re.findall(r"file=(\S+) \[0\];\s+(?:needed|dynamically)", proc.stderr))


def smb_write_job(tmp_path):
    """A job that passes `herd check`: one write phase to an smb:// target,
    as user herd with a password file of mode 0600."""
    pw = tmp_path / "pw"
    pw.write_text("secret\n")
    pw.chmod(0o600)
    return write_job(tmp_path / "s.ini", {
        "backend": "smb", "target": "smb://127.0.0.1/export", "smb_user": "herd",
        "smb_password_file": pw, "fsync": "no"}, [("w", {"kind": "write"})])


def test_libsmbclient_loaded_only_for_smb_targets(herd_bin, tmp_path):
    posix = write_job(tmp_path / "p.ini", {"target": str(tmp_path)}, [("w", {"kind": "write"})])
    proc, libs = loaded_libraries(herd_bin, posix)
    assert proc.returncode == 0, describe(proc)
    assert "libhdf5" in " ".join(libs), libs  # the loader's account is there
    assert not [lib for lib in libs if "smb" in lib or "samba" in lib], sorted(libs)
    proc, libs = loaded_libraries(herd_bin, smb_write_job(tmp_path))
    assert proc.returncode == 0, describe(proc)
    assert SMB_SONAME in libs, sorted(libs)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a mount namespace of its own)")
def test_unloadable_libsmbclient_is_one_line(herd_bin, tmp_path):
    library = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout
    paths = re.findall(rf"^\s*{re.escape(SMB_SONAME)} \(libc6,x86-64\) => (\S+)$", library,
                       re.M)
    if not paths:
        pytest.skip(f"{SMB_SONAME} not in the loader's cache")
    job = smb_write_job(tmp_path)
    empty = tmp_path / "empty.so"
    empty.write_bytes(b"")
    # the bind mount lives and dies with the namespace unshare makes
    proc = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c",
         'mount --bind "$1" "$2" && exec "$3" check "$4"', "sh", str(empty),
         os.path.realpath(paths[0]), str(herd_bin), str(job)],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, describe(proc)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "key 'backend'" in lines[0] and SMB_SONAME in lines[0], lines

