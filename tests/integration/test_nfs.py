"""herd over NFS: the libnfs backend against the embedded userspace NFS
server (cluster-configs/local/nfs-server.sh: nfs-ganesha in a private
network and mount namespace, exporting a loop-mounted xfs image).

1. The core checks of test_core.py over NFSv3 at 4 and 20 ranks and over
   NFSv4 at 4 (herd's own OPENs, WRITEs and COMMITs), and the export is
   left empty.
2. ganesha SIGKILLed in the middle of a long write phase: connection errnos
   on every rank, exit code 3, a complete results file, and by the results
   (latency histograms, stuck rows, the rows' call times) no call longer
   than op_timeout and its margin, none at all waiting once every
   connection is refused. SIGTERM in the middle of a read phase: interrupted, no crash, and
   the export is still cleaned. A full export: ENOSPC, not libnfs's EFAULT.
3. ganesha SIGSTOPped for longer than op_timeout: ETIMEDOUT is counted, no
   call hangs past op_timeout, and a phase after SIGCONT is clean.
4. ganesha killed and restarted in an idle phase between write and read:
   the later phases find the files.
5. The seed-000 rsize sweep (jobs/seed000.ini) at 1 and 4 ranks; prints the
   MiB/s per rsize.
6. NFSv4: `herd check` takes the writes libnfs cannot send itself (herd
   sends them); a mixed read, direct writes and a meta phase with 4 KiB
   files; a write phase four leases long and the reads after it; ganesha
   restarted in a grace period mid-write (connection errnos, then
   NFS4ERR_GRACE, then writes again, no call past op_timeout); v4 reads
   of files written over v3; SIGTERM and a frozen server in a phase that
   opens a file for every read (each open checked by its handle).

Every test starts its own server and stops it in the fixture's teardown,
even when the test fails, then checks that nothing is left (no process of
the recorded PIDs, none in the server's namespace, no mount under the state
directory, no loop device of the image).

Needs root, nfs-ganesha + nfs-ganesha-vfs, rpcbind and libnfs-utils; skips
with a message otherwise. herd must be built with libnfs. Run:
/usr/bin/python3 -m pytest -q -rsx tests/integration/test_nfs.py (add -s for
the numbers the tests print).
"""

import errno
import os
import re
import signal
import time

import h5py
import numpy as np
import pytest

from conftest import (MIB, REPO_DIR, Background, describe, hold_ranks,
                      load_results, mpi_env, mpirun_args, parse_size, phase_attr_order,
                      rank_pids, run_cmd, signal_ranks, write_job)
from test_core import GLOBAL as CORE_GLOBAL
from test_core import check_phase
from test_core import PHASES as CORE_PHASES
from test_core import resolved
from test_nfs_server import SBIN_PATH, SCRIPT, Server, _why_skip, running, wait_until


def _why_skip_nfs():
    """Why the NFS tests cannot run here, or None: root, ganesha, rpcbind,
    libnfs-utils, FSAL VFS. herd is built with -DHERD_WITH_LIBNFS=ON
    wherever these tests run (CI, tests/run.sh): a herd without libnfs
    fails them rather than skipping."""
    return _why_skip()


_WHY = _why_skip_nfs()
pytestmark = pytest.mark.skipif(_WHY is not None, reason=_WHY or "")

# Seconds an mpirun may take before the test calls it hung.
RUN_TIMEOUT = 120
# errnos of a lost server: the call's connection dropped, the reconnect refused,
# no answer within op_timeout, or libnfs's generic failure.
CONNECTION_ERRNOS = {errno.ECONNRESET, errno.ECONNREFUSED, errno.ETIMEDOUT, errno.EIO}


def ns_env():
    env = mpi_env()
    env["PATH"] = SBIN_PATH
    return env


def ns_args(server, *args):
    return ["bash", str(SCRIPT), "exec", "--state", str(server.state), "--"] + \
        [str(a) for a in args]


def herd_run_nfs(server, herd_bin, nranks, job, out, *extra, timeout=RUN_TIMEOUT):
    """mpirun -np nranks herd run JOB -o OUT inside the server's namespace."""
    args = ns_args(server, *mpirun_args(herd_bin, nranks, "run", job, "-o", out, *extra))
    return run_cmd(args, timeout=timeout, env=ns_env())


def herd_run_on_ganesha(herd_bin, work, nranks, make_job, out, *start_args):
    """A run against a ganesha of its own: skips without root or the
    server's packages; starts one under work/nfs (nfs-server.sh start
    START_ARGS), runs herd with the job make_job(url) writes, stops the
    server and checks that nothing of it is left, also when the run
    failed. Returns the run's CompletedProcess."""
    why = _why_skip()
    if why is not None:
        pytest.skip(why)
    server = Server(work / "nfs")
    try:
        server.start(*start_args)
        proc = herd_run_nfs(server, herd_bin, nranks, make_job(server.url), out)
    finally:
        server.stop(check=False)
    server.assert_clean()
    return proc


def ns_background(server, herd_bin, nranks, job, out):
    """herd run under mpirun in the server's namespace, in the background."""
    return Background(ns_args(server, *mpirun_args(herd_bin, nranks, "run", job, "-o", out)),
                      env=ns_env())


@pytest.fixture
def nfs(tmp_path):
    """A started embedded server exporting a fresh 1G xfs image. Teardown stops
    it (also after a failed test) and checks that nothing of it is left,
    including every ganesha a test killed and restarted."""
    s = Server(tmp_path / "nfs")
    s.ganeshas = []  # (pid, start time) of every ganesha it ran as
    try:
        s.start("--fs", "xfs", "--size", "1G")
        s.ganeshas.append(s.procs["ganesha"])
        yield s
    finally:
        s.stop(check=False)
    s.assert_clean()
    for pid, start in s.ganeshas:
        assert wait_until(lambda: not running(pid, start), 5), f"ganesha {pid} still runs"


def signal_ganesha(s, sig):
    """Send sig to the ganesha `start` (or restart-ganesha) printed, after
    making sure the PID still is that process."""
    pid, start = s.procs["ganesha"]
    assert pid == s.pid and running(pid, start), f"ganesha {pid} is not running"
    os.kill(pid, sig)


def run_frozen(nfs, herd_bin, nranks, job, out, freeze, ready):
    """Run herd in the background and freeze ganesha (SIGSTOP) for `freeze`
    seconds once ready(run) has returned (the phase is under way). Returns
    (CompletedProcess, wall time of the SIGSTOP, wall time of the
    SIGCONT)."""
    run = ns_background(nfs, herd_bin, nranks, job, out)
    try:
        run.wait_line(rf"^herd: run \S+: {nranks} ranks")
        ready(run)
        stop_unix = time.time()
        signal_ganesha(nfs, signal.SIGSTOP)
        try:
            time.sleep(freeze)
        finally:
            cont_unix = time.time()
            os.kill(nfs.pid, signal.SIGCONT)
        proc, _ = run.wait()
    finally:
        run.kill()
    return proc, stop_unix, cont_unix


def ranks_writing(s, nranks, pattern):
    """A ready() for run_frozen: returns once nranks files under the export
    matching pattern hold data (every rank's write is under way)."""
    def ready(run):
        assert wait_until(lambda: sum(1 for n in server_file_sizes(s, pattern) if n > 0) == nranks,
                          timeout=60, step=0.1), \
            f"not every rank is writing: {server_file_sizes(s, pattern)}"
    return ready


def progress_seen(name, nranks):
    """A ready() for run_frozen: returns at phase name's first progress line
    (5 s into the phase)."""
    def ready(run):
        run.wait_line(rf"^herd: {re.escape(name)}: {nranks} ranks [0-9]+% ", timeout=60)
    return ready


def kill_ganesha(s):
    signal_ganesha(s, signal.SIGKILL)
    pid = s.pid
    assert wait_until(lambda: not running(pid), 5), f"ganesha {pid} survived SIGKILL"


def run_and_kill(nfs, herd_bin, nranks, job, out, ready):
    """Run herd in the background and SIGKILL ganesha once ready(run) has
    returned. Returns (CompletedProcess, seconds from the kill to the
    run's end, seconds from Popen to herd's first line, wall time of the
    kill)."""
    t_launch = time.monotonic()
    run = ns_background(nfs, herd_bin, nranks, job, out)
    try:
        run.wait_line(rf"^herd: run \S+: {nranks} ranks")
        launch = time.monotonic() - t_launch  # mpirun, MPI_Init, clock sync
        ready(run)
        kill_unix = time.time()
        killed = time.monotonic()
        kill_ganesha(nfs)
        proc, ended = run.wait()
    finally:
        run.kill()
    return proc, ended - killed, launch, kill_unix


def run_sigterm(nfs, herd_bin, nranks, job, out, after_line, delay):
    """Run herd in the background and SIGTERM every rank `delay` s after a
    line of its stderr matches after_line; the run must end interrupted
    (exit 143) with no rank crashed. Returns (CompletedProcess, results)."""
    run = ns_background(nfs, herd_bin, nranks, job, out)
    try:
        run.wait_line(after_line)
        time.sleep(delay)
        signal_ranks(run.proc.pid, signal.SIGTERM)
        proc, _ = run.wait()
    finally:
        run.kill()
    assert "Segmentation" not in proc.stderr and "signal 11" not in proc.stderr, describe(proc)
    res = load_results(out)
    assert res.attrs["status"] == "interrupted" and res.attrs["exit_code"] == 143, describe(proc)
    return proc, res


def restart_ganesha(s, *opts):
    proc = s.cmd("restart-ganesha", "--state", s.state, *opts)
    assert proc.returncode == 0, f"restart-ganesha failed:\n{proc.stderr}"
    assert re.fullmatch(r"\d+\n", proc.stdout), proc.stdout
    s.pid = int(proc.stdout)
    s.refresh()
    assert s.procs["ganesha"][0] == s.pid
    s.ganeshas.append(s.procs["ganesha"])


def export_dir(s):
    return os.path.realpath(s.state / "export")


def export_listing(s):
    """Every path under the export, as the server sees it (its mount namespace)."""
    fstype = s.cmd("exec", "--state", s.state, "--server-fs", "--",
                   "findmnt", "-n", "-o", "FSTYPE", export_dir(s))
    assert fstype.stdout.strip() == "xfs", f"the export is not the xfs image: {fstype}"
    proc = s.cmd("exec", "--state", s.state, "--server-fs", "--",
                 "find", export_dir(s), "-mindepth", "1")
    assert proc.returncode == 0, proc.stderr
    return sorted(proc.stdout.split())


def server_file_sizes(s, pattern):
    """Sizes of the files under the export matching the glob pattern, as the
    server sees them, in name order."""
    proc = s.cmd("exec", "--state", s.state, "--server-fs", "--", "sh", "-c",
                 f'cd "$1" && for f in {pattern}; do [ -f "$f" ] && stat -c "%n %s" "$f"; done',
                 "sh", export_dir(s))
    return [int(line.rsplit(" ", 1)[1]) for line in sorted(proc.stdout.splitlines())]


# herd ends a libnfs call at the latest op_timeout after it began (all its
# RPCs, its reconnect: docs/job-file.md, op_timeout); this much more is
# allowed for the rank to return and be scheduled on a busy machine.
CALL_MARGIN = 1.0
# The watchdog looks once a second: a stuck row's `returned` is up to this late.
WATCHDOG_LOOK = 1.0
# A latency bucket is at most 6.25 % wider than its lower bound.
BUCKET_WIDTH = 1.0625


def calls_at_least(path, phase, seconds):
    """{op: calls of the phase whose latency bucket lies wholly at or above
    seconds}, from its latency histograms."""
    with h5py.File(path, "r") as f:
        lat = f["phases"][phase]["latency"]
        lower = lat["bucket_lower_ns"][()] / 1e9
        return {op: int(lat[op][()][lower >= seconds].sum()) for op in lat
                if not op.startswith("bucket_")}


def check_calls_bounded(path, phase, op_timeout, where):
    """No call of the phase took longer than op_timeout + CALL_MARGIN, by
    every record of a call's time in the results: each latency histogram's
    highest bucket (its lower bound), each row of the watchdog's stuck
    table (returned - since, less its look period; a call that never
    returned fails), and each rank row's calls made once per iteration
    (t_open, t_fsync, t_close). Returns the longest time seen (s)."""
    bound = op_timeout + CALL_MARGIN
    ph = load_results(path).phases[phase]
    longest = 0.0
    for op, h in ph.latency.items():
        longest = max(longest, h["max_ns"] / BUCKET_WIDTH / 1e9)
        assert h["max_ns"] <= bound * BUCKET_WIDTH * 1e9, \
            f"{where}: a {op} call took up to {h['max_ns'] / 1e9:.2f} s (bound {bound} s)"
    for r in stuck_rows(path, phase):
        assert r["returned"] >= 0, f"{where}: a call never returned: {r}"
        took = r["returned"] - r["since"] - WATCHDOG_LOOK
        longest = max(longest, took)
        assert took <= bound, f"{where}: stuck row {r} (bound {bound} s)"
    for col in ("t_open", "t_fsync", "t_close"):
        worst = float(ph.ranks[col].max()) if len(ph.ranks) else 0.0
        longest = max(longest, worst)
        assert worst <= bound, f"{where}: a rank's {col} of {worst:.2f} s (bound {bound} s)"
    return longest


def common_time(res, unix_time):
    """A time.time() reading on herd's common clock."""
    return unix_time - res.attrs["epoch_unix"]


def errnos_by_rank(ph):
    """{rank: {(op, errno name): count}} from a phase's errors table."""
    out = {}
    for row in ph.error_rows():
        out.setdefault(int(row["rank"]), {})[(row["op"], row["errno_name"])] = int(row["count"])
    return out


def check_error_names(ph, where):
    for row in ph.error_rows():
        assert row["errno_name"] == errno.errorcode.get(int(row["errno"])), f"{where}: {row}"
        assert row["count"] >= 1, f"{where}: {row}"


def check_clean_phase(name, k, ph, nranks, url, attr_order, where=None):
    """test_core.check_phase over libnfs: every number the job asks for
    (libnfs splits a block into RPCs inside one call, so ops per block are
    the same as over POSIX), and the phase ran on this server."""
    where = where or f"phase {name}"
    check_phase(name, k, ph, nranks, attr_order, where, rpc_ops=True)
    # each write call is at least one RPC; reads read ahead (one RPC may
    # serve several calls), at least one per file read; each RPC timed once
    io_op = "write" if k["kind"] == "write" else "read"
    rpc = ph.latency.get(f"rpc_{io_op}")
    assert rpc is not None, f"{where}: no rpc_{io_op} histogram"
    least = ph.latency[io_op]["count"] if io_op == "write" else len(ph.ranks)
    assert int(rpc["count"]) >= int(least), where
    assert int(np.sum(rpc["counts"])) == int(rpc["count"]), where
    assert ph.attrs["target"] == url, where
    assert ph.attrs["backend"] == "libnfs", where


def check_data_phases(res, g, phases, nranks, file_size, order, tag):
    """A clean run (exit 0) of write, read and md5 phases (name, keys) under
    global keys g: every phase moved nranks x file_size bytes, found no
    verify failure and passes check_clean_phase. Their MiB/s, as text."""
    check_run(res, nranks, g["target"], 0, [n for n, _ in phases])
    for name, k in phases:
        ph = res.phases[name]
        where = f"{tag} phase {name}"
        got = int(ph.ranks["bytes"].sum())
        assert got == nranks * file_size, f"{where}: {got} bytes, want {nranks} x {file_size}"
        assert int(ph.ranks["verify_failures"].sum()) == 0, f"{where}: verify failures"
        check_clean_phase(name, resolved({**g, **k}), ph, nranks, g["target"], order, where)
    return ", ".join(f"{n} {res.phases[n].attrs['summary_mib_per_s']:.0f} MiB/s" for n, _ in phases)


def check_run(res, nranks, url, exit_code, phase_names):
    assert res.attrs["status"] == "complete"
    assert res.attrs["exit_code"] == exit_code
    assert res.attrs["nranks"] == nranks
    assert res.attrs["target"] == url
    assert res.attrs["end_utc"] != ""
    assert len(res.rank_table) == nranks
    assert res.phase_names == phase_names
    for name in phase_names:
        assert "status" in res.phases[name].attrs, f"phase {name} has no status"


# ---------------------------------------------------------------- 1. core


@pytest.mark.parametrize("nranks,version", [(4, 3), (20, 3), (4, 4)])
def test_core_over_nfs(nfs, herd_bin, tmp_path, nranks, version):
    url = nfs.url.replace("?version=3", f"?version={version}")
    global_keys = {"backend": "libnfs", "target": url, "op_timeout": 10, **CORE_GLOBAL}
    job = write_job(tmp_path / "core.ini", global_keys, CORE_PHASES)
    out = tmp_path / "results.h5"

    proc = herd_run_nfs(nfs, herd_bin, nranks, job, out)
    assert proc.returncode == 0, describe(proc)

    res = load_results(out)
    check_run(res, nranks, url, 0, [name for name, _ in CORE_PHASES])
    assert res.attrs["nhosts"] == 1
    assert sorted(res.rank_table["rank"].tolist()) == list(range(nranks))
    order = phase_attr_order(herd_bin)
    for name, keys in CORE_PHASES:
        k = resolved(keys)
        ph = res.phases[name]
        check_clean_phase(name, k, ph, nranks, url, order)
        assert ph.attrs["op_timeout"] == 10.0, name
        assert ph.attrs["nfs_rsize"] == 0 and ph.attrs["nfs_wsize"] == 0, name

    assert re.fullmatch(r"[A-Za-z0-9_.-]+", res.attrs["run_id"])
    left = export_listing(nfs)
    assert left == [], f"herd left files on the export: {left}"
    for line in proc.stderr.splitlines():
        assert "cannot remove" not in line, describe(proc)


# ---------------------------------------------------------------- 2. kill


def test_server_killed_during_write(nfs, herd_bin, tmp_path):
    # op_timeout bounds a whole call: a file's fsync (its WRITEs in flight,
    # then a COMMIT of 64 MiB to the loop-mounted export) took over 2 s
    # beside busy loops, so 5 s; the deadline only guards: the iterations
    # run out first (status errors), each refused at once after the kill.
    nranks, iters, fsize, deadline, op_timeout = 4, 200, 64 * MIB, 40, 5
    job = write_job(tmp_path / "kill.ini",
                    {"backend": "libnfs", "target": nfs.url, "file_size": "64M",
                     "block_size": "1M", "op_timeout": op_timeout},
                    [("write", {"kind": "write", "iterations": iters, "deadline": deadline}),
                     ("read", {"kind": "read", "verify": "yes"}),
                     ("md5", {"kind": "md5"})])
    out = tmp_path / "kill.h5"

    def mid_write(run):
        # In the middle of the write phase, once every rank has finished a
        # file: every file has its full size on the server, and herd's first
        # progress line (5 s into the phase) has come. The size alone is not
        # enough: the first iteration's fsync (a COMMIT of 64 MiB to the
        # loop-mounted export) can still be running a second later.
        assert wait_until(lambda: server_file_sizes(nfs, "herd-*/unique-64M/r*.dat") ==
                          [fsize] * nranks, timeout=60, step=0.1), \
            f"the files never reached 64M: {server_file_sizes(nfs, 'herd-*/unique-64M/r*.dat')}"
        run.wait_line(rf"^herd: write: {nranks} ranks [0-9]+% ", timeout=30)

    proc, after_kill, launch, kill_unix = run_and_kill(nfs, herd_bin, nranks, job, out, mid_write)
    print(f"\nrun ended {after_kill:.2f} s after the SIGKILL; exit code {proc.returncode}")

    assert proc.returncode == 3, describe(proc)
    res = load_results(out)
    check_run(res, nranks, nfs.url, 3, ["write", "read", "md5"])
    kill_t = common_time(res, kill_unix)
    # A dead server answers nothing: a call in flight fails by op_timeout,
    # and reconnects are refused at once. Judged by the results, not by
    # the run's wall time: no call of any phase lasted longer than
    # op_timeout and its margin, and in the read and md5 phases (every
    # connection refused) no call waited at all (no ETIMEDOUT below).
    for name in ("write", "read", "md5"):
        longest = check_calls_bounded(out, name, op_timeout, f"phase {name}")
        print(f"{name}: longest call {longest:.2f} s, "
              f"{res.phases[name].attrs['elapsed']:.2f} s in all")
        if name != "write":  # refused at once: no call waits
            waited = calls_at_least(out, name, op_timeout - CALL_MARGIN)
            assert not any(waited.values()), f"{name}: calls that waited: {waited}"
    print(f"the run ended {after_kill:.2f} s after the kill (launch {launch:.2f} s; shown only)")

    w = res.phases["write"]
    print("errors seen (phase, rank, op, errno, count):")
    for name in res.phase_names:
        for row in res.phases[name].error_rows():
            print(f"  {name} rank {row['rank']} {row['op']} {row['errno_name']} "
                  f"({row['errno']}) x{row['count']}")

    # the errors ended the phase, long before its deadline
    assert w.attrs["status"] == "errors", w.attrs["status"]
    assert w.attrs["t_start"] < kill_t < w.attrs["t_end"], (w.attrs, kill_t)
    check_error_names(w, "write")
    by_rank = errnos_by_rank(w)
    assert sorted(by_rank) == list(range(nranks)), f"ranks without errors: {by_rank}"
    for row in w.error_rows():
        assert row["errno"] in CONNECTION_ERRNOS, f"not a connection errno: {row}"
        assert row["first_time"] >= kill_t - 0.05, f"an error before the kill: {row}"
    rows = w.ranks
    assert len(rows) == nranks * iters
    for r in range(nranks):
        mine = rows[rows["rank"] == r]
        table = sum(by_rank[r].values())
        assert int(mine["errors"].sum()) == table, f"rank {r}: rows vs errors table"
    done = rows[rows["completed"] == 1]
    assert sorted(set(done["rank"].tolist())) == list(range(nranks)), \
        "some rank wrote no whole file before the kill"
    assert (done["bytes"] == fsize).all() and (done["errors"] == 0).all()
    # a file's last COMMIT needs the server: none begun after the kill ends whole
    assert (done["t_start"] < kill_t).all(), "an iteration begun after the kill completed"
    # An iteration ends at its first failed call (close on a lost connection
    # only frees the handle): exactly one error (the deadline did not cut it).
    for row in rows[rows["completed"] == 0]:
        assert row["errors"] == 1, row

    for name in ("read", "md5"):
        ph = res.phases[name]
        assert ph.attrs["status"] == "errors", name
        assert ph.attrs["t_start"] >= w.attrs["t_end"], name
        check_error_names(ph, name)
        assert sorted(errnos_by_rank(ph)) == list(range(nranks)), f"{name}: {ph.error_rows()}"
        for row in ph.error_rows():
            assert row["errno"] in CONNECTION_ERRNOS - {errno.ETIMEDOUT}, f"{name}: {row}"
        assert (ph.ranks["completed"] == 0).all() and (ph.ranks["bytes"] == 0).all(), name


def test_signal_during_read_phase(nfs, herd_bin, tmp_path):
    """SIGTERM while every rank waits for a 1 MiB READ reply: the call ends
    with EINTR and its RPC stays queued in libnfs with a reply buffer of a
    call that has returned. herd must not reuse that connection (a late
    reply would be copied over freed memory): it ends as interrupted (143),
    no rank crashes, and the cleanup still removes the run directory over a
    fresh connection."""
    nranks = 4
    job = write_job(tmp_path / "sig.ini",
                    {"backend": "libnfs", "target": nfs.url, "file_size": "64M",
                     "block_size": "1M"},
                    [("write", {"kind": "write"}),
                     ("read", {"kind": "read", "iterations": 1000})])
    _, res = run_sigterm(nfs, herd_bin, nranks, job, tmp_path / "sig.h5",
                         r"^herd: phase write: ", 0.5)
    assert res.phases["read"].attrs["status"] == "interrupted"
    left = export_listing(nfs)
    assert left == [], f"herd left files on the export: {left}"


@pytest.mark.parametrize("version", [3, 4])
def test_full_export_is_enospc(nfs, herd_bin, tmp_path, version):
    """Two ranks writing 600M each into a 1G export: the server refuses
    WRITEs with NFS3ERR_NOSPC, which libnfs 4.0 reports as EFAULT, or over
    NFSv4 with NFS4ERR_NOSPC to herd's own WRITEs, whose status is counted
    by name; herd must count ENOSPC, and the run goes on to its end (exit
    code 3)."""
    job = write_job(tmp_path / "full.ini",
                    {"backend": "libnfs", "target": nfs.url, "file_size": "600M",
                     "block_size": "1M", "nfs_version": version},
                    [("write", {"kind": "write"})])
    out = tmp_path / "full.h5"
    proc = herd_run_nfs(nfs, herd_bin, 2, job, out)
    assert proc.returncode == 3, describe(proc)
    w = load_results(out).phases["write"]
    names = {row["errno_name"] for row in w.error_rows()}
    assert names == {"ENOSPC"}, w.error_rows()
    if version == 4:
        assert {row["status"] for row in w.error_rows()} == {"NFS4ERR_NOSPC"}, w.error_rows()
    assert export_listing(nfs) == [], "the run directory was not removed"


def test_error_status_is_its_own(nfs, herd_bin, tmp_path):
    """An error row's NFS status is the one of that error's call, never one
    an earlier call left on the connection: a first phase makes small files
    and the second writes 600M into each of them, so its CREATEs find the
    files (NFS3ERR_EXIST, taken as an open) and its WRITEs fill the export.
    libnfs 4.0 loses the status of a refused WRITE (herd tells ENOSPC from
    the export's free space): the ENOSPC rows name no status, not the
    CREATE's NFS3ERR_EXIST."""
    job = write_job(tmp_path / "stale.ini",
                    {"backend": "libnfs", "target": nfs.url, "fileset": "fs",
                     "block_size": "1M"},
                    [("small", {"kind": "write", "file_size": "1M"}),
                     ("big", {"kind": "write", "file_size": "600M"})])
    out = tmp_path / "stale.h5"
    proc = herd_run_nfs(nfs, herd_bin, 2, job, out)
    assert proc.returncode == 3, describe(proc)
    rows = load_results(out).phases["big"].error_rows()
    enospc = [row for row in rows if row["errno_name"] == "ENOSPC"]
    assert enospc, rows
    assert {row["status"] for row in enospc} == {""}, rows
    assert export_listing(nfs) == [], "the run directory was not removed"


# ---------------------------------------------------------------- 3. freeze


def test_server_frozen_longer_than_op_timeout(nfs, herd_bin, tmp_path):
    nranks, op_timeout, freeze = 4, 2, 5.0
    job = write_job(tmp_path / "freeze.ini",
                    {"backend": "libnfs", "target": nfs.url, "file_size": "16M",
                     "block_size": "1M", "op_timeout": op_timeout},
                    [("write", {"kind": "write", "iterations": 1000, "deadline": 10}),
                     ("read", {"kind": "read", "verify": "yes"}),
                     ("md5", {"kind": "md5"})])
    out = tmp_path / "freeze.h5"
    proc, stop_unix, cont_unix = run_frozen(nfs, herd_bin, nranks, job, out, freeze,
                                            ranks_writing(nfs, nranks, "herd-*/unique-16M/r*.dat"))

    assert proc.returncode == 3, describe(proc)
    res = load_results(out)
    check_run(res, nranks, nfs.url, 3, ["write", "read", "md5"])
    stop_t, cont_t = common_time(res, stop_unix), common_time(res, cont_unix)
    w = res.phases["write"]
    assert w.attrs["t_start"] < stop_t and cont_t < w.attrs["t_end"], (w.attrs, stop_t, cont_t)
    assert w.attrs["status"] == "deadline", w.attrs["status"]

    rows = w.error_rows()
    print(f"\nfrozen {stop_t:.2f}..{cont_t:.2f} s (common clock); errors:")
    for row in rows:
        print(f"  rank {row['rank']} {row['op']} {row['errno_name']} x{row['count']} "
              f"first at {row['first_time']:.2f}")
    check_error_names(w, "write")
    assert rows, "no call failed while the server was frozen"
    assert {r["errno"] for r in rows} == {errno.ETIMEDOUT}, rows
    n_timeouts = sum(int(r["count"]) for r in rows)
    assert n_timeouts >= nranks, rows  # every rank had a call in flight
    assert int(w.ranks["errors"].sum()) == n_timeouts
    for row in rows:
        # a call fails only for want of an answer: after the freeze began,
        # and at the latest a call begun before SIGCONT, by its deadline
        assert stop_t <= row["first_time"] <= cont_t + op_timeout + CALL_MARGIN, row
    # No call waited longer than op_timeout (none sat out the freeze).
    longest = check_calls_bounded(out, "write", op_timeout, "frozen server")
    print(f"longest call {longest:.2f} s")
    # Work resumed after SIGCONT within the same phase: a new connection,
    # calls answered (how many blocks fit before the deadline is the
    # machine's business).
    after = w.ranks[(w.ranks["t_start"] > cont_t) & (w.ranks["errors"] == 0)]
    assert (after["bytes"] > 0).any(), "nothing written after SIGCONT"
    done = w.ranks[w.ranks["completed"] == 1]
    assert (done["bytes"] == 16 * MIB).all()

    for name, k in (("read", {"kind": "read", "verify": "yes"}), ("md5", {"kind": "md5"})):
        assert res.phases[name].attrs["t_start"] > cont_t
        check_clean_phase(name, resolved({**k, "file_size": "16M", "block_size": "1M"}),
                          res.phases[name], nranks, nfs.url, phase_attr_order(herd_bin))


def stuck_rows(path, phase):
    """/phases/<phase>/stuck as a list of dicts, text decoded."""
    with h5py.File(path, "r") as f:
        t = f["phases"][phase]["stuck"][()]
    return [{k: (v.decode() if isinstance(v, bytes) else v.item())
             for k, v in zip(t.dtype.names, row)} for row in t]


STUCK_LINE = re.compile(r"^herd: rank (\d+) on (\S+): (\w+) of (\S+) stuck for (\d+) s$")


def test_watchdog_reports_frozen_server(nfs, herd_bin, tmp_path):
    """ganesha SIGSTOPped for longer than stuck_after (and shorter than
    op_timeout, so the calls wait it out): every rank's watchdog reports its
    hanging call on stderr and in /phases/write/stuck with the rank, the op,
    the rank's own file, since when it hung and when it returned (after
    SIGCONT). The phase after SIGCONT has no stuck rows."""
    nranks, stuck_after, freeze, op_timeout = 4, 2.0, 5.0, 30
    job = write_job(tmp_path / "stuck.ini",
                    {"backend": "libnfs", "target": nfs.url, "file_size": "16M",
                     "block_size": "1M", "op_timeout": op_timeout,
                     "stuck_after": stuck_after},
                    [("write", {"kind": "write", "iterations": 1000, "deadline": 12}),
                     ("read", {"kind": "read", "verify": "yes"})])
    out = tmp_path / "stuck.h5"
    proc, stop_unix, cont_unix = run_frozen(nfs, herd_bin, nranks, job, out, freeze,
                                            ranks_writing(nfs, nranks, "herd-*/unique-16M/r*.dat"))
    res = load_results(out)
    check_run(res, nranks, nfs.url, proc.returncode, ["write", "read"])
    assert proc.returncode == 0, describe(proc)  # the calls waited, none failed
    stop_t, cont_t = common_time(res, stop_unix), common_time(res, cont_unix)
    w = res.phases["write"]
    assert w.attrs["t_start"] < stop_t and cont_t < w.attrs["t_end"], (w.attrs, stop_t, cont_t)
    assert w.attrs["stuck_after"] == stuck_after
    assert len(w.errors) == 0, w.error_rows()
    run_id = res.attrs["run_id"]

    rows = stuck_rows(out, "write")
    print(f"\nfrozen {stop_t:.2f}..{cont_t:.2f} s (common clock); stuck rows:")
    for r in rows:
        print(f"  rank {r['rank']} {r['op']} {r['path']} since {r['since']:.2f} "
              f"noticed {r['noticed']:.2f} returned {r['returned']:.2f}")
    # Every rank had a call in flight when the server stopped: one row each
    # for the freeze (it is shorter than two stuck_after periods of a fresh
    # call). A busy machine may add rows after SIGCONT for calls that were
    # slow in their own right (an fsync of 16M behind the backlog); those
    # must be true reports too, but they are not the freeze's.
    frozen = [r for r in rows if r["since"] < cont_t]
    later = [r for r in rows if r["since"] >= cont_t]
    assert sorted(r["rank"] for r in frozen) == list(range(nranks)), rows
    for r in rows:
        where = f"stuck row {r}"
        assert r["op"] in ("open", "write", "fsync", "close"), where
        assert r["path"] == f"herd-{run_id}/unique-16M/r{r['rank']:06d}.dat", where
        # noticed once it was stuck_after old, at the watchdog's next look (1 s)
        assert stuck_after <= r["noticed"] - r["since"] <= stuck_after + 1.5, where
        assert r["noticed"] <= r["returned"] <= w.attrs["t_end"] + 1.5, where
    for r in frozen:
        where = f"stuck row {r}"
        # the call hung because of the freeze: it was in flight for at least
        # stuck_after before the server came back (it may have begun after
        # the SIGSTOP: a rank on a busy machine can take a while to act on a
        # reply that was already on its way)
        assert w.attrs["t_start"] <= r["since"] <= cont_t - stuck_after, where
        # returned once the server answered again: after SIGCONT (how soon
        # is for ganesha's backlog and the machine's load to say)
        assert cont_t - 0.05 <= r["returned"], where
    if later:
        print(f"{len(later)} stuck row(s) after SIGCONT: calls slow on their own")
    # One line on stderr for every row, with the row's rank, op and file.
    lines = [m for m in (STUCK_LINE.match(l) for l in proc.stderr.splitlines()) if m]
    told = sorted((int(m.group(1)), m.group(3), m.group(4)) for m in lines)
    assert told == sorted((r["rank"], r["op"], r["path"]) for r in rows), describe(proc)
    for m in lines:
        assert int(m.group(5)) >= stuck_after, m.group(0)
    assert stuck_rows(out, "read") == []
    assert res.phases["read"].attrs["status"] == "ok"


# ---------------------------------------------------------------- 4. restart


def test_server_restarted_between_phases(nfs, herd_bin, tmp_path):
    nranks = 4
    gl = {"backend": "libnfs", "target": nfs.url, "file_size": "4M", "block_size": "1M",
          "op_timeout": 2}
    phases = [("write", {"kind": "write", "iterations": 2}),
              ("idle", {"kind": "idle", "duration": 4}),
              ("read", {"kind": "read", "verify": "yes"}),
              ("md5", {"kind": "md5"})]
    job = write_job(tmp_path / "restart.ini", gl, phases)
    out = tmp_path / "restart.h5"
    run = ns_background(nfs, herd_bin, nranks, job, out)
    pids = {}
    try:
        run.wait_line(r"^herd: phase write: ok")
        # the ranks are held while the server restarts, however long that
        # takes on a busy machine: the idle phase cannot end before it
        pids = rank_pids(run.pid, nranks)
        hold_ranks(pids, True)
        kill_unix = time.time()
        kill_ganesha(nfs)
        restart_ganesha(nfs)
        restarted_unix = time.time()
        hold_ranks(pids, False)
        proc, _ = run.wait()
    finally:
        hold_ranks(pids, False)
        run.kill()
    res = load_results(out)
    check_run(res, nranks, nfs.url, proc.returncode, [name for name, _ in phases])
    order = phase_attr_order(herd_bin)
    check_clean_phase("write", resolved({**gl, **phases[0][1]}), res.phases["write"], nranks,
                      nfs.url, order)
    idle = res.phases["idle"]
    kill_t, restarted_t = common_time(res, kill_unix), common_time(res, restarted_unix)
    print(f"\nidle {idle.attrs['t_start']:.2f}..{idle.attrs['t_end']:.2f}, "
          f"SIGKILL at {kill_t:.2f}, restarted at {restarted_t:.2f}")
    # "phase write: ok" comes after the write phase's closing barrier, just
    # before the idle phase's announced start: the server is changed after
    # the write phase and, the ranks held, before the idle phase ends.
    assert res.phases["write"].attrs["t_end"] < kill_t < restarted_t < idle.attrs["t_end"], \
        "the restart was not between the write phase and the end of the idle phase"
    assert idle.attrs["status"] == "ok" and len(idle.errors) == 0
    assert idle.attrs["duration"] >= 4.0
    assert (idle.ranks["completed"] == 1).all() and (idle.ranks["bytes"] == 0).all()
    assert (idle.ranks["ops"] == 0).all()

    for name, k in phases[2:]:
        check_clean_phase(name, resolved({**gl, **k}), res.phases[name], nranks, nfs.url,
                          order)
    assert proc.returncode == 0, describe(proc)
    assert res.attrs["exit_code"] == 0
    assert export_listing(nfs) == []


# ---------------------------------------------------------------- 5. rsize


RSIZES = ["1K", "2K", "4K", "8K", "12K", "16K", "32K", "64K"]


@pytest.mark.parametrize("nranks", [1, 4])
def test_rsize_sweep_seed000(nfs, herd_bin, tmp_path, nranks):
    job = REPO_DIR / "jobs" / "seed000.ini"
    out = tmp_path / "rsize.h5"
    proc = herd_run_nfs(nfs, herd_bin, nranks, job, out, "--set", f"target={nfs.url}",
                        "--set", "file_size=4M", "--set", "deadline=0")  # every phase whole
    assert proc.returncode == 0, describe(proc)
    res = load_results(out)
    names = ["write"] + [f"read-rsize-{r}" for r in RSIZES]
    check_run(res, nranks, nfs.url, 0, names)
    fsize = 4 * MIB
    w = res.phases["write"]
    assert w.attrs["status"] == "ok" and w.attrs["file_size"] == fsize
    assert w.attrs["nfs_rsize"] == 0

    mibs = {}
    for r in RSIZES:
        name = f"read-rsize-{r}"
        ph = res.phases[name]
        rows = ph.ranks
        assert ph.attrs["kind"] == "read", name
        assert ph.attrs["status"] == "ok", f"{name}: {ph.error_rows()}"
        assert ph.attrs["nfs_rsize"] == parse_size(r), name
        assert ph.attrs["file_size"] == fsize and ph.attrs["block_size"] == 16 * 1024, name
        assert ph.attrs["sharing"] == "shared" and ph.attrs["fileset"] == "rsize-file", name
        assert ph.attrs["iterations"] == 3, name
        assert len(rows) == nranks * 3, name
        assert len(ph.errors) == 0 and (rows["errors"] == 0).all(), name
        assert (rows["completed"] == 1).all() and (rows["bytes"] == fsize).all(), name
        assert (rows["file_rank"] == -1).all(), name
        assert int(ph.latency["read"]["count"]) == nranks * 3 * (fsize // (16 * 1024)), name
        # read-ahead inside the range: exactly one READ per rsize of the file
        assert int(ph.latency["rpc_read"]["count"]) == nranks * 3 * -(-fsize // parse_size(r)), name
        assert ph.attrs["elapsed"] > 0, name
        mibs[r] = int(rows["bytes"].sum()) / ph.attrs["elapsed"] / MIB
        assert mibs[r] > 0, name
    # The exact READ count above is the proof that nfs_rsize reached the wire;
    # the rates are shown, not asserted: a 64K phase lasts ~15 ms, so one
    # descheduling on a busy machine can make it look slower than 1K.
    print(f"\nrsize sweep, {nranks} rank(s), 4M file (aggregate MiB/s): " +
          ", ".join(f"{r} {v:.1f}" for r, v in mibs.items()))


# ---------------------------------------------------------------- 6. NFSv4


V4_GLOBAL = {"backend": "libnfs", "file_size": "1M", "block_size": "256K", "op_timeout": 10}


def _url4(nfs):
    return nfs.url.replace("?version=3", "?version=4")


def test_check_takes_nfsv4_writes(herd_bin, tmp_path):
    """libnfs 4.0 cannot write over NFSv4 (its WRITE COMPOUND fails to
    encode above ~3.9 KiB); herd sends its own, so herd check takes every
    NFSv4 phase that writes data: a write, nfs_version = 4 over a v3 URL,
    a read that mixes writes in, a meta phase whose files get data. It
    refuses such a phase whose ranks think 30 s or more between calls
    (nothing renews the lease meanwhile), naming think_time."""
    base = {"backend": "libnfs", "target": "nfs://127.0.0.1/export?version=4",
            "file_size": "1M", "block_size": "1M"}
    for gl, phase in ((base, {"kind": "write"}),
                      ({**base, "nfs_wsize": "4K", "block_size": "4K"}, {"kind": "write"}),
                      ({**base, "target": "nfs://127.0.0.1/export?version=3", "nfs_version": 4},
                       {"kind": "write"}),
                      (base, {"kind": "read", "rwmix_read": 70}),
                      (base, {"kind": "meta", "files": 10, "file_size": "4K",
                              "block_size": "4K"}),
                      (base, {"kind": "write", "think_time": "29s"})):
        j = write_job(tmp_path / "v4w.ini", gl, [("w", phase)])
        p = run_cmd([herd_bin, "check", j, "-n", "4"])
        assert p.returncode == 0, describe(p)
    j = write_job(tmp_path / "think.ini", base, [("w", {"kind": "write", "think_time": "30s"})])
    p = run_cmd([herd_bin, "check", j, "-n", "4"])
    assert p.returncode == 2, describe(p)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "think_time" in lines[0] and "lease" in lines[0], describe(p)
    # NFSv3 and NFSv4 reads keep any think time
    for gl, phase in (({**base, "target": "nfs://127.0.0.1/export?version=3"},
                       {"kind": "write", "think_time": "30s"}),
                      (base, {"kind": "read", "think_time": "30s"})):
        j = write_job(tmp_path / "think-ok.ini", gl, [("w", phase)])
        p = run_cmd([herd_bin, "check", j, "-n", "4"])
        assert p.returncode == 0, describe(p)


def test_nfsv4_too_deep_refused_before_the_run(nfs, herd_bin, tmp_path):
    """Over NFSv4 a directory's walk is one COMPOUND with a LOOKUP per
    component from the server's root, and servers cap a COMPOUND (Linux
    6.1's nfsd at 50 operations, ganesha at 100; past it NFS4ERR_RESOURCE:
    a 90-component target's meta calls failed with EIO and its clean-up
    left entries, a 120-component one failed at mount with ERANGE). A meta
    phase (its deepest directory herd-<id>/FILESET/rN/a/dN, 5 below the
    target) at the deepest target herd check takes runs clean over NFSv4;
    one component deeper, and 90 components deep, herd run refuses before
    anything starts (exit 2, one line naming the limit and NFSv3, no
    results, nothing made); over NFSv3 the 90-component target runs
    clean."""
    export = nfs.url.split("/", 3)[3].split("?")[0]
    deepest = 47 - 5 - len(export.split("/"))  # below the export, for a meta phase
    far = 90 - len(export.split("/"))
    made = nfs.cmd("exec", "--state", nfs.state, "--server-fs", "--", "mkdir", "-p",
                   f"{export_dir(nfs)}/{'/'.join(['d'] * far)}")
    assert made.returncode == 0, made.stderr
    base = nfs.url.split("?")[0]
    tree = [("m", {"kind": "meta", "files": 8, "dirs": 2})]
    for depth, version, code in ((deepest, 4, 0), (deepest + 1, 4, 2), (far, 4, 2), (far, 3, 0)):
        target = f"{base}/{'/'.join(['d'] * depth)}?version={version}"
        job = write_job(tmp_path / f"deep-{depth}-v{version}.ini",
                        {"backend": "libnfs", "target": target, "op_timeout": 10}, tree)
        out = tmp_path / f"deep-{depth}-v{version}.h5"
        proc = herd_run_nfs(nfs, herd_bin, 2, job, out)
        assert proc.returncode == code, describe(proc)
        if code == 2:
            said = [x for x in proc.stderr.splitlines() if x.startswith("herd:")]
            assert len(said) == 1 and "over NFSv4" in said[0] and "COMPOUND" in said[0] and \
                "at most 47 components" in said[0] and "use NFSv3" in said[0], describe(proc)
            assert not out.exists()
        else:
            m = load_results(out).phases["m"]
            assert m.attrs["status"] == "ok" and len(m.errors) == 0, m.error_rows()
        assert export_listing(nfs) == [f"{export_dir(nfs)}/{'/'.join(['d'] * (k + 1))}"
                                       for k in range(far)], target


def test_nfsv4_mixed_direct_and_meta(nfs, herd_bin, tmp_path):
    """NFSv4 through herd's own OPEN, WRITEs and READs: a write with
    direct (FILE_SYNC4 WRITEs), a read that writes half its blocks in
    random order into the files that exist (herd's OPEN without create,
    its READs too), a verified read and an md5 after it, writes with
    fsync = no (their COMMIT comes with the CLOSE); every byte counted,
    no verify failure. Then a meta phase of 4 KiB files, kept: every file
    on the server holds 4 KiB."""
    url = _url4(nfs)
    gl = {**V4_GLOBAL, "target": url}
    phases = [("wd", {"kind": "write", "direct": "yes"}),
              ("mix", {"kind": "read", "rwmix_read": 50, "access": "random"}),
              ("r", {"kind": "read", "verify": "yes"}),
              ("m", {"kind": "md5"}),
              ("wn", {"kind": "write", "fsync": "no", "iterations": 3}),
              ("r2", {"kind": "read", "verify": "yes"})]
    job = write_job(tmp_path / "mix.ini", gl, phases)
    out = tmp_path / "mix.h5"
    proc = herd_run_nfs(nfs, herd_bin, 4, job, out)
    assert proc.returncode == 0, describe(proc)
    res = load_results(out)
    check_run(res, 4, url, 0, [n for n, _ in phases])
    order = phase_attr_order(herd_bin)
    for name, k in phases:
        ph = res.phases[name]
        kk = resolved({**gl, **k})
        assert int(ph.ranks["bytes"].sum()) == 4 * MIB * kk["iterations"], name
        assert int(ph.ranks["verify_failures"].sum()) == 0, name
        if name != "mix":  # reads and writes: check_phase counts one kind of call
            check_clean_phase(name, kk, ph, 4, url, order)
    mix = res.phases["mix"]
    assert mix.latency["write"]["count"] > 0 and mix.latency["read"]["count"] > 0
    assert mix.latency["rpc_write"]["count"] >= mix.latency["write"]["count"]
    assert export_listing(nfs) == []

    run_id, files = "v4-meta", 10
    tree = {**gl, "run_id": run_id, "keep": "yes"}
    job = write_job(tmp_path / "meta.ini", tree,
                    [("tree", {"kind": "meta", "files": files, "dirs": 2, "file_size": "4K",
                               "block_size": "4K", "meta_ops": "create,stat"})])
    proc = herd_run_nfs(nfs, herd_bin, 4, job, tmp_path / "meta.h5")
    assert proc.returncode == 0, describe(proc)
    t = load_results(tmp_path / "meta.h5").phases["tree"]
    assert t.attrs["status"] == "ok" and int(t.ranks["bytes"].sum()) == 4 * files * 4096
    sizes = server_file_sizes(nfs, f"herd-{run_id}/unique-4K/r*/*/*/f*")
    assert sizes == [4096] * (4 * files), sizes


def test_nfsv4_write_longer_than_leases(nfs, herd_bin, tmp_path):
    """ganesha with a 5 s lease: a write phase of about 12 s (a 1.5 s think
    after each call) keeps herd's own open alive by its WRITEs alone; the
    read after it opens with libnfs's own client, whose lease ran out
    meanwhile (NFS4ERR_EXPIRED): herd reconnects once and reads. Both
    phases clean, every byte verified."""
    restart_ganesha(nfs, "--lease", "5")
    url = _url4(nfs)
    gl = {**V4_GLOBAL, "target": url, "file_size": "2M", "block_size": "256K"}
    phases = [("w", {"kind": "write", "think_time": "1.5s"}),
              ("r", {"kind": "read", "verify": "yes"})]
    job = write_job(tmp_path / "lease.ini", gl, phases)
    out = tmp_path / "lease.h5"
    proc = herd_run_nfs(nfs, herd_bin, 2, job, out)
    res = load_results(out)
    for name, _ in phases:
        print(f"\n{name}: {res.phases[name].attrs['elapsed']:.1f} s, "
              f"errors {res.phases[name].error_rows()}")
    assert proc.returncode == 0, describe(proc)
    assert res.phases["w"].attrs["elapsed"] > 2 * 5
    for name, k in phases:
        check_clean_phase(name, resolved({**gl, **k}), res.phases[name], 2, url,
                          phase_attr_order(herd_bin))


def test_server_restarted_mid_nfsv4_write(nfs, herd_bin, tmp_path):
    """ganesha restarted into a 4 s grace period while 4 ranks write over
    NFSv4 (op_timeout 5 s): the calls on the way fail with a lost
    server's errnos, the OPENs in the grace with NFS4ERR_GRACE (ENOLCK,
    the status named), every rank meets them, and every rank writes whole
    files again after the grace (herd's client set up again); no call
    waits past op_timeout, and the phase ends at its deadline."""
    nranks, op_timeout = 4, 5
    url = _url4(nfs)
    gl = {**V4_GLOBAL, "target": url, "file_size": "16M", "block_size": "1M",
          "op_timeout": op_timeout}
    job = write_job(tmp_path / "rst.ini", gl,
                    [("w", {"kind": "write", "iterations": 100000, "deadline": 25})])
    out = tmp_path / "rst.h5"
    run = ns_background(nfs, herd_bin, nranks, job, out)
    try:
        run.wait_line(rf"^herd: w: {nranks} ranks [0-9]+% ", timeout=60)
        restart_unix = time.time()
        restart_ganesha(nfs, "--grace", "4")
        restarted_unix = time.time()
        proc, _ = run.wait()
    finally:
        run.kill()
    assert proc.returncode == 3, describe(proc)
    res = load_results(out)
    w = res.phases["w"]
    restart_t, restarted_t = common_time(res, restart_unix), common_time(res, restarted_unix)
    rows = w.error_rows()
    print(f"\nrestart {restart_t:.2f}..{restarted_t:.2f} s; errors: " +
          ", ".join(f"rank {e['rank']} {e['op']} {e['errno_name']} {e['status']} x{e['count']}"
                    for e in rows))
    assert w.attrs["status"] == "deadline", w.attrs["status"]
    check_error_names(w, "w")
    grace = {int(e["rank"]) for e in rows if e["status"] == "NFS4ERR_GRACE"}
    assert grace == set(range(nranks)), rows
    for e in rows:
        assert e["errno"] in CONNECTION_ERRNOS | {errno.ENOLCK}, e
        assert (e["errno"] == errno.ENOLCK) == (e["status"] == "NFS4ERR_GRACE"), e
        assert e["first_time"] >= restart_t - 0.05, e
    check_calls_bounded(out, "w", op_timeout, "NFSv4 write, server restarted")
    after = w.ranks[(w.ranks["t_start"] > restarted_t) & (w.ranks["completed"] == 1)]
    assert set(after["rank"].tolist()) == set(range(nranks)), "a rank wrote nothing after"
    assert (after["bytes"] == 16 * MIB).all() and (after["errors"] == 0).all()


def _write_v3_keep(nfs, herd_bin, tmp_path, run_id):
    """Write unique and segmented files over NFSv3 and keep them."""
    gl = {"backend": "libnfs", "target": nfs.url, "file_size": "1M", "block_size": "256K",
          "run_id": run_id, "keep": "yes"}
    phases = [("w", {"kind": "write"}),
              ("ws", {"kind": "write", "sharing": "shared", "shared_mode": "segmented"})]
    job = write_job(tmp_path / "v3write.ini", gl, phases)
    proc = herd_run_nfs(nfs, herd_bin, 4, job, tmp_path / "v3write.h5")
    assert proc.returncode == 0, describe(proc)
    assert sorted(p for p in export_listing(nfs) if p.endswith(".dat")) == sorted(
        [f"{export_dir(nfs)}/herd-{run_id}/unique-1M/r{r:06d}.dat" for r in range(4)] +
        [f"{export_dir(nfs)}/herd-{run_id}/shared-1M/shared.dat"])
    return gl


def test_nfsv4_reads_files_written_over_v3(nfs, herd_bin, tmp_path):
    run_id = "v4-reads"
    gl = _write_v3_keep(nfs, herd_bin, tmp_path, run_id)
    # Outside herd, v4 reads of these files work (libnfs's own client).
    f0 = f"{nfs.base}/herd-{run_id}/unique-1M/r000000.dat?version=4"
    cp = nfs.exec("nfs-cp", f0, tmp_path / "r0.v4")
    if cp.returncode != 0:
        pytest.skip(f"NFSv4 reads fail outside herd (nfs-cp): {cp.stdout}{cp.stderr}")
    assert (tmp_path / "r0.v4").stat().st_size == MIB

    url4 = nfs.url.replace("?version=3", "?version=4")
    gl4 = {**gl, "target": url4, "keep": "no"}
    phases = [("r", {"kind": "read", "verify": "yes"}),
              ("rs", {"kind": "read", "verify": "yes", "sharing": "shared",
                      "shared_mode": "segmented"}),
              ("m", {"kind": "md5", "read_from": "neighbor"}),
              ("r64k", {"kind": "read", "verify": "yes", "nfs_rsize": "64K"})]
    job = write_job(tmp_path / "v4read.ini", gl4, phases)
    out = tmp_path / "v4read.h5"
    proc = herd_run_nfs(nfs, herd_bin, 4, job, out)
    res = load_results(out)
    check_run(res, 4, url4, proc.returncode, [n for n, _ in phases])
    for name, k in phases:
        kk = resolved({**gl4, **k})
        check_clean_phase(name, kk, res.phases[name], 4, url4, phase_attr_order(herd_bin))
    assert proc.returncode == 0, describe(proc)


def _v4_read_job(nfs, herd_bin, tmp_path, run_id, extra):
    """Files written over NFSv3 and kept, then a job of one long NFSv4 read
    phase over them: every iteration opens each file again (herd's LOOKUP
    for its handle, libnfs's OPEN by name, the handles compared). Returns
    the job and the export's listing: the run must leave it as it is (it
    removes only what it made, and the files are the first run's)."""
    gl = _write_v3_keep(nfs, herd_bin, tmp_path, run_id)
    url4 = nfs.url.replace("?version=3", "?version=4")
    gl4 = {**gl, "target": url4, "keep": "no", **extra}
    return write_job(tmp_path / "v4long.ini", gl4,
                     [("r", {"kind": "read", "iterations": 100000, "deadline": 20,
                             "verify": "yes"})]), export_listing(nfs)


def test_signal_during_nfsv4_opens(nfs, herd_bin, tmp_path):
    """SIGTERM to every rank in a long NFSv4 read phase of 1 MiB files, each
    read opened afresh: the signal meets opens, handle checks and READs in
    flight; the run ends interrupted (143), no rank crashes, the phase's
    rows done so far are kept, and the export's tree is as it was (the
    clean-up over NFSv4 leaves the earlier run's files)."""
    job, before = _v4_read_job(nfs, herd_bin, tmp_path, "v4-sig", {})
    # at the phase's first progress line (5 s into it): reads under way
    proc, res = run_sigterm(nfs, herd_bin, 4, job, tmp_path / "v4sig.h5",
                            r"^herd: r: 4 ranks [0-9]+% ", 0.2)
    r = res.phases["r"]
    assert r.attrs["status"] == "interrupted", r.attrs["status"]
    done = r.ranks[r.ranks["completed"] == 1]
    print(f"\nNFSv4 reads done before SIGTERM: {len(done)}; errors {r.error_rows()}")
    assert len(done) >= 1 and (done["bytes"] == MIB).all(), describe(proc)
    assert export_listing(nfs) == before, "the run changed the export's tree"


def test_server_frozen_during_nfsv4_opens(nfs, herd_bin, tmp_path):
    """ganesha frozen for 5 s (op_timeout 2 s) in a long NFSv4 read phase
    that opens every file afresh: each rank's call in flight (a LOOKUP, an
    OPEN or a READ) fails ETIMEDOUT and nothing else; no call waits much
    past op_timeout; the ranks go on after SIGCONT on a new connection
    (new client, new open state) and read whole, verified files again; the
    export's tree is as it was."""
    nranks, op_timeout = 4, 2
    job, before = _v4_read_job(nfs, herd_bin, tmp_path, "v4-freeze", {"op_timeout": op_timeout})
    out = tmp_path / "v4freeze.h5"
    # frozen from the phase's first progress line (5 s in) for 5 s; the
    # phase's deadline is 20 s
    proc, stop_unix, cont_unix = run_frozen(nfs, herd_bin, nranks, job, out, 5.0,
                                            progress_seen("r", nranks))
    assert proc.returncode == 3, describe(proc)
    res = load_results(out)
    stop_t, cont_t = common_time(res, stop_unix), common_time(res, cont_unix)
    r = res.phases["r"]
    assert r.attrs["status"] == "deadline", r.attrs["status"]
    assert r.attrs["t_start"] < stop_t, (r.attrs["t_start"], stop_t)
    rows = r.error_rows()
    print(f"\nfrozen {stop_t:.2f}..{cont_t:.2f} s; errors: " +
          ", ".join(f"rank {e['rank']} {e['op']} {e['errno_name']} x{e['count']}" for e in rows))
    assert rows and {e["errno"] for e in rows} == {errno.ETIMEDOUT}, rows
    assert sum(int(e["count"]) for e in rows) >= nranks, rows
    check_calls_bounded(out, "r", op_timeout, "NFSv4 opens, frozen server")
    done = r.ranks[r.ranks["completed"] == 1]
    assert (done["bytes"] == MIB).all()
    # every rank read again after SIGCONT, on a new connection
    after = r.ranks[(r.ranks["t_start"] > cont_t) & (r.ranks["errors"] == 0)]
    assert set(after[after["bytes"] > 0]["rank"]) == set(range(nranks)), \
        "a rank read nothing after SIGCONT"
    assert int(r.ranks["verify_failures"].sum()) == 0
    assert export_listing(nfs) == before, "the run changed the export's tree"
