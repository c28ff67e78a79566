"""herd's promises under hostile or careless use: where results go
(-o --force), what it does with a run directory it did not make, what the
clean-up removes, what a run that lost its results says, and how a signal
to one rank ends every rank with the right exit code.

1. --force replaces only a results file: a device node, a directory, a
   symbolic link, a FIFO or a file that is not HDF5 is refused with one line,
   exit 2, and left as it was.
2. A results file system that fills up after the header: every phase's
   records go to <results>.<phase>.lost.csv, the file says "incomplete",
   the exit code is 4 and the summary names the missing phases.
3. A pre-existing run directory: refused unless the job fixes run_id, and
   then only a real directory of this user that no other run holds. A
   rank whose target is another directory (a tmpfs over it in a mount
   namespace of its own) is refused before the first phase.
4. keep = no removes what this run made and nothing an earlier run kept.
5. SIGINT/SIGTERM to one rank stops every rank's phase (each rank's loop
   is cut by the stop, not by its end), exit 128+N.
"""

import contextlib
import errno
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import time
from pathlib import Path

import h5py
import pytest

from conftest import (REPO_DIR, RUN_TIMEOUT, Background, describe, herd_background, herd_cmd,
                      herd_run, hold_ranks, load_results, rank_pids, require_root, run_cmd,
                      signal_ranks, tree, write_job)


def small_job(tmp_path, target, **extra):
    g = {"target": target, "file_size": "64K", "block_size": "16K", **extra}
    return write_job(tmp_path / "job.ini", g,
                     [("w", {"kind": "write"}), ("r", {"kind": "read", "verify": "yes"})])


def one_line_error(proc):
    lines = [l for l in proc.stderr.splitlines() if l.startswith("herd:")]
    assert len(lines) == 1, describe(proc)
    return lines[0]


# ---------------------------------------------------------------- 1. --force


def hostile_outputs(tmp_path):
    """(name, path, check-it-is-unchanged) for every kind of thing --force
    must not replace."""
    out = []
    d = tmp_path / "a-directory"
    d.mkdir()
    (d / "inside").write_text("keep me")
    out.append(("directory", d, lambda: (d / "inside").read_text() == "keep me"))
    victim = tmp_path / "victim.txt"
    victim.write_text("not results")
    link = tmp_path / "link.h5"
    link.symlink_to(victim)
    out.append(("symlink", link,
                lambda: link.is_symlink() and victim.read_text() == "not results"))
    fifo = tmp_path / "fifo.h5"
    os.mkfifo(fifo)
    out.append(("fifo", fifo, lambda: stat.S_ISFIFO(os.lstat(fifo).st_mode)))
    text = tmp_path / "notes.txt"
    text.write_text("my notes\n")
    out.append(("text file", text, lambda: text.read_text() == "my notes\n"))
    if os.geteuid() == 0:
        null = tmp_path / "null"
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        out.append(("device", null, lambda: stat.S_ISCHR(os.lstat(null).st_mode)))
    return out


def test_force_replaces_only_results_files(herd_bin, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    job = small_job(tmp_path, target)
    for name, path, unchanged in hostile_outputs(tmp_path):
        proc = herd_run(herd_bin, 2, job, path, "--force", quiet=True)
        assert proc.returncode == 2, f"{name}\n{describe(proc)}"
        line = one_line_error(proc)
        assert "--force replaces only a results file" in line, line
        assert unchanged(), f"{name} was changed by herd run -o {path} --force"
    assert tree(target) == [], "a refused run left files in the target"


def test_force_replaces_results_and_empty_files(herd_bin, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    job = small_job(tmp_path, target)
    out = tmp_path / "out.h5"
    assert herd_run(herd_bin, 2, job, out).returncode == 0
    again = herd_run(herd_bin, 2, job, out, quiet=True)
    assert again.returncode == 2 and "exists" in one_line_error(again)
    assert herd_run(herd_bin, 2, job, out, "--force").returncode == 0
    empty = tmp_path / "empty.h5"
    empty.write_bytes(b"")
    proc = herd_run(herd_bin, 2, job, empty, "--force")
    assert proc.returncode == 0, describe(proc)
    assert load_results(empty).attrs["status"] == "complete"


# ---------------------------------------------------------------- 2. lost results


def test_full_results_file_system_is_not_a_clean_run(herd_bin, tmp_path, mount_fs):
    """The header fits, no phase does: status incomplete, exit 4, the
    summary names the phases and their rows are in the fallback CSV, with
    the columns `herd tables` declares for a phase's ranks."""
    require_root()
    tables = json.loads(herd_cmd(herd_bin, "tables").stdout)["tables"]
    ranks_columns = next(t["columns"] for t in tables if t["path"] == "/phases/<name>/ranks")
    small = mount_fs("tmpfs", size="1100k")
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "job.ini",
                    {"target": target, "file_size": "64K", "block_size": "4K",
                     "iterations": 200},
                    [("w", {"kind": "write"}), ("r", {"kind": "read", "verify": "yes"}),
                     ("m", {"kind": "md5"})])
    out = small.path / "run.h5"
    proc = herd_run(herd_bin, 2, job, out)
    assert proc.returncode == 4, describe(proc)
    res = load_results(out)
    assert res.attrs["status"] == "incomplete"
    assert res.attrs["exit_code"] == 4
    missing = [p for p in ("w", "r", "m") if p not in res.phase_names]
    assert missing, "the test did not fill the file system"
    assert "not in the results file" in proc.stdout
    for name in missing:
        assert name in proc.stdout.split("not in the results file")[1]
        lost = Path(f"{out}.{name}.lost.csv")
        assert lost.exists(), describe(proc)
        text = lost.read_text().splitlines()
        assert text[0].startswith("phase,kind,status")
        assert text[2] == ",".join(c for c, _ in ranks_columns), text[2]
        names = [c for c, _ in ranks_columns]
        rows = [l for l in text if l and l[0].isdigit() and l.count(",") == len(names) - 1]
        assert len(rows) == 2 * 200, f"{name}: {len(rows)} rank rows in {lost}"
        # every write moved its 64K: the rows are the measurements, not zeros
        if name == "w":
            at = names.index("bytes")
            assert all(int(r.split(",")[at]) == 64 * 1024 for r in rows)
    assert tree(target) == []
    # the report says so too
    report = tmp_path / "report"
    rep = subprocess.run(["/usr/bin/python3", str(REPO_DIR / "analysis" / "herd-report"), str(out),
                          "-o", str(report)], capture_output=True, text=True, timeout=120)
    assert rep.returncode == 0, rep.stderr
    assert "incomplete (exit code 4)" in (report / "index.html").read_text()


# ---------------------------------------------------------------- 3. run directory


def test_planted_run_directory_link_is_refused(herd_bin, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "canary").write_text("canary")
    (target / "herd-fixed").symlink_to(outside)
    job = small_job(tmp_path, target, run_id="fixed")
    proc = herd_run(herd_bin, 2, job, tmp_path / "o.h5", quiet=True)
    assert proc.returncode == 2, describe(proc)
    assert "symbolic link" in one_line_error(proc)
    assert sorted(os.listdir(outside)) == ["canary"]
    assert (outside / "canary").read_text() == "canary"
    assert not (tmp_path / "o.h5").exists(), "a refused run left a results file"


def test_run_directory_of_another_user_is_refused(herd_bin, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to make a directory owned by another user")
    target = tmp_path / "target"
    target.mkdir()
    theirs = target / "herd-fixed"
    theirs.mkdir()
    (theirs / "their-file").write_text("theirs")
    os.chown(theirs, 65534, 65534)
    job = small_job(tmp_path, target, run_id="fixed", keep="no")
    proc = herd_run(herd_bin, 2, job, tmp_path / "o.h5", quiet=True)
    assert proc.returncode == 2, describe(proc)
    assert "belongs to uid 65534" in one_line_error(proc)
    assert tree(target) == ["herd-fixed", "herd-fixed/their-file"]


def test_without_fixed_run_id_an_existing_directory_is_never_reused(herd_bin, tmp_path):
    """Reuse needs the job's say-so: with --set run_id the same run id is
    fixed; herd's own ids are never reused (checked through a kept dir)."""
    target = tmp_path / "target"
    target.mkdir()
    job = small_job(tmp_path, target, keep="yes")
    assert herd_run(herd_bin, 2, job, tmp_path / "a.h5").returncode == 0
    run_id = load_results(tmp_path / "a.h5").attrs["run_id"]
    assert (target / f"herd-{run_id}").is_dir()
    assert not (target / f"herd-{run_id}" / ".herd-run.lock").exists(), \
        "the lock file outlived its run"


def test_a_rank_whose_target_is_another_directory_is_refused(herd_bin, tmp_path):
    """Rank 1 in a mount namespace of its own with a tmpfs over the target
    (a node where the export is not mounted and the target is a plain
    local directory): it does not find the run directory rank 0 made, so
    the run stops before its first phase, exit 2, with one line naming
    rank 1 and its host; no results file, nothing written in the tmpfs,
    and rank 0 gave the run directory back."""
    require_root()
    if not shutil.which("unshare"):
        pytest.skip("unshare (util-linux) is needed for a mount namespace of its own")
    target = tmp_path / "target"
    target.mkdir()
    job = small_job(tmp_path, target)
    out = tmp_path / "o.h5"
    seen = tmp_path / "tmpfs-after.list"
    herd = [str(herd_bin), "run", str(job), "-o", str(out)]
    # rank 1: the tmpfs over the target, herd, then what herd left in it
    elsewhere = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                 'list=$1; shift; mount -t tmpfs elsewhere "$0" || exit 99; "$@"; rc=$?; '
                 'ls -A "$0" >"$list"; exit $rc', str(target), str(seen)]
    proc = run_cmd(["mpirun", "--oversubscribe", "-q", "-np", "1", *herd, ":", "-np", "1",
                    *elsewhere, *herd], timeout=RUN_TIMEOUT)
    assert proc.returncode == 2, describe(proc)
    line = one_line_error(proc)
    assert f"rank 1 (host {socket.gethostname()}) does not see the run directory" in line, line
    assert "No such file or directory" in line, line
    assert seen.read_text() == "", "rank 1 wrote in the other directory"
    assert not out.exists(), "a refused run left a results file"
    assert tree(target) == [], "rank 0 kept its run directory"


def test_second_run_with_the_same_run_id_is_refused_while_the_first_runs(herd_bin, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    # The first run idles until the test stops it: the second one, however
    # slowly it starts, meets it running.
    job = write_job(tmp_path / "long.ini", {"target": target, "run_id": "shared-id"},
                    [("wait", {"kind": "idle", "duration": "10m"})])
    with herd_background(herd_bin, 2, "run", job, "-o", tmp_path / "1.h5") as first:
        first.wait_line("herd: run shared-id", RUN_TIMEOUT)
        second = herd_run(herd_bin, 2, job, tmp_path / "2.h5", quiet=True)
        assert second.returncode == 2, describe(second)
        line = one_line_error(second)
        assert "in use by another run" in line and "run shared-id" in line, line
        assert not (tmp_path / "2.h5").exists()
        assert first.proc.poll() is None, "the first run ended before the test stopped it"
        signal_ranks(first.pid, signal.SIGTERM)
        first.wait()
    # (mpirun itself exits 1 when its group is signalled; herd's code is recorded)
    assert load_results(tmp_path / "1.h5").attrs["exit_code"] == 143
    # the interrupted first run gave the directory back
    assert tree(target) == []


# ---------------------------------------------------------------- 4. keep


def test_keep_no_spares_what_an_earlier_run_kept(herd_bin, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    g = {"target": target, "run_id": "kept", "file_size": "64K", "block_size": "16K"}
    first = write_job(tmp_path / "first.ini", {**g, "keep": "yes"}, [
        ("w", {"kind": "write"}),
        ("ws", {"kind": "write", "sharing": "shared", "fileset": "sh"}),
        ("tree", {"kind": "meta", "files": 20, "dirs": 2, "meta_ops": "create",
                  "fileset": "md", "file_size": "1K"}),
    ])
    proc = herd_run(herd_bin, 3, first, tmp_path / "1.h5")
    assert proc.returncode == 0, describe(proc)
    kept = tree(target)
    assert len([p for p in kept if p.endswith(".dat")]) == 4  # 3 unique + shared
    assert len([p for p in kept if "/md/" in p and "/f0" in p]) == 60

    second = write_job(tmp_path / "second.ini", {**g, "keep": "no"}, [
        ("r", {"kind": "read", "verify": "yes"}),
        ("lk", {"kind": "lock", "count": 20, "fileset": "sh"}),
        ("st", {"kind": "meta", "files": 20, "dirs": 2, "meta_ops": "stat",
                "fileset": "md", "file_size": "1K"}),
        ("new", {"kind": "write", "fileset": "fresh"}),
    ])
    proc = herd_run(herd_bin, 3, second, tmp_path / "2.h5")
    assert proc.returncode == 0, describe(proc)
    res = load_results(tmp_path / "2.h5")
    assert res.phases["st"].ranks["errors"].sum() == 0
    # what run 1 kept is all there; what run 2 made (fileset fresh) is gone
    assert tree(target) == kept


# ---------------------------------------------------------------- 5. signals


def run_and_signal_one_rank(herd_bin, tmp_path, sig, nranks=4):
    target = tmp_path / "target"
    target.mkdir(exist_ok=True)
    job = write_job(tmp_path / "lock.ini",
                    {"target": target, "file_size": "64K", "block_size": "16K"},
                    [("lk", {"kind": "lock", "duration": "10m", "lock_hold": "1ms"}),
                     ("after", {"kind": "idle", "duration": "1s"})])
    out = tmp_path / f"sig{sig}.h5"
    with herd_background(herd_bin, nranks, "run", job, "-o", out, quiet=True) as run:
        run.wait_line("^herd: lk: ", RUN_TIMEOUT)  # progress: the lock phase is under way
        victim = rank_pids(run.pid, nranks)[nranks - 1]  # not rank 0
        os.kill(victim, sig)
        done, _ = run.wait()  # a hang guard: the phase alone would last 10 minutes
    return done.returncode, done.stderr, out, target


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_to_one_rank_stops_every_rank(herd_bin, tmp_path, sig):
    code, err, out, target = run_and_signal_one_rank(herd_bin, tmp_path, sig)
    assert code == 128 + sig, f"exit {code}\n{err}"
    res = load_results(out)
    assert res.attrs["status"] == "interrupted"
    assert res.attrs["exit_code"] == 128 + sig
    ph = res.phases["lk"]
    assert ph.attrs["status"] == "interrupted"
    # Every rank locked, and every rank's loop was cut by the stop (a loop
    # that ran out its 10 minutes says completed = 1): the signalled
    # rank's own, and the others' through its message.
    rows = ph.ranks
    assert (rows["grants"] > 0).all(), rows
    assert (rows["completed"] == 0).all(), rows
    assert "after" not in res.phase_names
    assert tree(target) == []


# ---------------------------------------------------------------- 6. stalled clean-up

from test_nfs import _WHY as NFS_WHY  # noqa: E402
from test_nfs import nfs, ns_background, signal_ganesha  # noqa: E402,F401
from test_nfs_server import wait_until  # noqa: E402


def unread_calls(nfs):
    """{client address: bytes a frozen ganesha has not read} for the
    connections to its NFS and MOUNT ports, seen from inside its network
    namespace. A call sent to it after it froze adds bytes to its
    connection, or comes on a new one (a client reconnects after a
    timeout; the connection it closes is gone)."""
    out = nfs.exec("ss", "-Htn", "state", "established",
                   "( sport = :2049 or sport = :20048 )").stdout
    return {f[3]: int(f[0]) for f in (line.split() for line in out.splitlines()) if f}


def sent_since(before, now):
    """A call reached the frozen server between two unread_calls()."""
    return any(n > before.get(peer, 0) for peer, n in now.items())


def cleanup_errors(path):
    """/cleanup/errors as {rank: {errno name: count}} ({} when absent)."""
    with h5py.File(path, "r") as f:
        rows = f["cleanup/errors"][()] if "cleanup" in f else []
    out = {}
    for row in rows:
        per = out.setdefault(int(row["rank"]), {})
        name = row["errno_name"].decode()
        per[name] = per.get(name, 0) + int(row["count"])
    return out


@pytest.mark.skipif(NFS_WHY is not None, reason=NFS_WHY or "")
@pytest.mark.parametrize("who", ["every rank", "rank 0"])
def test_cleanup_against_a_stalled_server_ends_on_sigterm(herd_bin, tmp_path, nfs, who):
    """The server freezes after the phases: the clean-up's calls time out
    (op_timeout) instead of hanging, and a SIGTERM during the clean-up, to
    every rank (as a scheduler sends it) or to rank 0 alone, ends herd
    after the calls in flight, with the phases in the file. Alone, rank 0
    tells the other rank, which would otherwise work through its files to
    the clean-up's 60 s cap.

    Counted in /cleanup/errors: each of the clean-up's unlinks failed,
    either after waiting op_timeout for the frozen server (ETIMEDOUT) or
    cut by the stop (EINTR), so a rank made at most one call per
    op_timeout before the signal, plus the one in flight; one that went on
    to the cap would have made 30."""
    op_timeout = 2
    job = write_job(tmp_path / "job.ini",
                    {"backend": "libnfs", "target": nfs.url, "op_timeout": f"{op_timeout}s",
                     "keep": "no"},
                    [("files", {"kind": "write", "files_per_rank": 300, "fsync": "no",
                                "file_size": "1K", "block_size": "1K"}),
                     ("pause", {"kind": "idle", "duration": "1s"})])
    out = tmp_path / "run.h5"
    bg = ns_background(nfs, herd_bin, 2, job, out)
    frozen = False
    try:
        bg.wait_line(r"phase files: ")
        signal_ganesha(nfs, signal.SIGSTOP)
        frozen = True
        bg.wait_line(r"phase pause: ")
        began = time.monotonic()  # the clean-up begins after this line
        # Into the clean-up: a call sent after that line waits on the
        # frozen server (so no stop can come before the clean-up began).
        sent = unread_calls(nfs)
        assert wait_until(lambda: sent_since(sent, unread_calls(nfs)), 30 * op_timeout, 0.1), \
            "no call of the clean-up reached the frozen server"
        assert bg.proc.poll() is None, "herd ended before the clean-up could stall"
        ranks = rank_pids(bg.proc.pid, 2)
        signalled = time.monotonic()
        for rank, pid in ranks.items():
            if who == "every rank" or rank == 0:
                os.kill(pid, signal.SIGTERM)
        proc, _ = bg.wait(timeout=120)  # a hang guard: the clean-up's cap is 60 s
    finally:
        if frozen:
            signal_ganesha(nfs, signal.SIGCONT)
        bg.kill()
    res = load_results(out)
    assert proc.returncode == 143, proc.stderr
    assert res.attrs["status"] == "interrupted", proc.stderr
    assert res.attrs["exit_code"] == 143
    assert res.phase_names == ["files", "pause"]
    assert "clean-up stopped (signal)" in proc.stderr, proc.stderr
    failed = cleanup_errors(out)
    most = int((signalled - began) // op_timeout) + 2  # + the call in flight, + 1 for the line
    print(f"\nclean-up calls failed by rank: {failed}; at most {most} each")
    for rank, per in failed.items():
        assert set(per) <= {"ETIMEDOUT", "EINTR"}, failed
        assert per.get("EINTR", 0) <= 1, failed
        assert sum(per.values()) <= most, f"rank {rank} went on after the stop: {failed}"


def catches_sigterm(pid):
    """Whether process pid has its SIGTERM handler installed (False once it has gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False


@pytest.mark.skipif(NFS_WHY is not None, reason=NFS_WHY or "")
def test_sigterm_to_rank_0_while_connecting_to_a_frozen_server(herd_bin, tmp_path, nfs):
    """The server is frozen before herd starts: every rank waits in its
    mount. SIGTERM to rank 0 alone ends every rank at once with 143, not
    the others' mounts timing out into exit 2. The mounts' op_timeout is
    10 minutes: a rank the stop did not reach would hold the run past the
    hang guard."""
    op_timeout = 600
    job = write_job(tmp_path / "job.ini",
                    {"backend": "libnfs", "target": nfs.url, "op_timeout": f"{op_timeout}s"},
                    [("w", {"kind": "write", "file_size": "64K", "block_size": "16K"})])
    out = tmp_path / "run.h5"
    signal_ganesha(nfs, signal.SIGSTOP)
    try:
        bg = ns_background(nfs, herd_bin, 2, job, out)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                pids = subprocess.run(["pgrep", "-s", str(bg.proc.pid), "-x", "herd"],
                                      capture_output=True, text=True).stdout.split()
                if len(pids) == 2 and all(catches_sigterm(p) for p in pids):
                    break
                time.sleep(0.05)
            # Into the mount: both ranks' calls wait on the frozen server.
            assert wait_until(lambda: sum(n > 0 for n in unread_calls(nfs).values()) >= 2, 60,
                              0.1), \
                "the ranks' mounts never reached the frozen server"
            os.kill(rank_pids(bg.proc.pid, 2)[0], signal.SIGTERM)
            proc, _ = bg.wait(timeout=120)  # a hang guard, far below op_timeout
        finally:
            bg.kill()
    finally:
        signal_ganesha(nfs, signal.SIGCONT)
    assert proc.returncode == 143, proc.stderr
    assert "stopped by signal 15 while connecting" in proc.stderr, proc.stderr
    assert not out.exists()


def test_ranks_do_not_outlive_a_killed_launcher(herd_bin, tmp_path):
    """mpirun SIGKILLed in a long lock phase: its ranks take it as a stop
    (SIGTERM from the kernel when their parent dies), write the results
    and clean up, instead of dying on its closed pipes or running on (the
    phase would last 10 minutes: the wait for the ranks' end is a hang
    guard)."""
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "lock.ini",
                    {"target": target, "file_size": "64K", "block_size": "16K"},
                    [("lk", {"kind": "lock", "duration": "10m", "lock_hold": "1ms"})])
    out = tmp_path / "run.h5"
    with herd_background(herd_bin, 2, "run", job, "-o", out) as run:
        run.wait_line("^herd: lk: ", RUN_TIMEOUT)  # progress: the lock phase is under way
        ranks = list(rank_pids(run.pid, 2).values())
        run.proc.kill()  # mpirun alone
        run.proc.wait(timeout=30)
        t0 = time.monotonic()
        while any(Path(f"/proc/{r}").exists() for r in ranks) and \
                time.monotonic() - t0 < RUN_TIMEOUT:
            time.sleep(0.1)
    assert not any(Path(f"/proc/{r}").exists() for r in ranks), "ranks outlived mpirun"
    res = load_results(out)
    assert res.attrs["status"] == "interrupted" and res.attrs["exit_code"] == 143
    rows = res.phases["lk"].ranks
    assert (rows["grants"] > 0).all() and (rows["completed"] == 0).all(), rows  # cut by the stop
    assert tree(target) == []


# ---------------------------------------------------------------- 7. FIFOs


def test_fifo_at_the_lock_file_is_refused_at_once(herd_bin, tmp_path):
    """A FIFO planted as the kept run directory's lock file: herd asks who
    holds the lock without waiting on it, and refuses."""
    target = tmp_path / "target"
    target.mkdir()
    job = small_job(tmp_path, target, run_id="fixed", keep="yes")
    assert herd_run(herd_bin, 2, job, tmp_path / "1.h5").returncode == 0
    os.mkfifo(target / "herd-fixed" / ".herd-run.lock")
    proc = herd_run(herd_bin, 2, job, tmp_path / "2.h5", quiet=True, timeout=60)
    assert proc.returncode == 2, describe(proc)
    assert "in use by another run" in one_line_error(proc)
    assert stat.S_ISFIFO(os.lstat(target / "herd-fixed" / ".herd-run.lock").st_mode)


def test_fifo_as_a_data_file_is_an_error_not_a_hang(herd_bin, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    g = {"target": target, "run_id": "fixed", "keep": "yes", "file_size": "64K",
         "block_size": "16K"}
    write = write_job(tmp_path / "w.ini", g, [("w", {"kind": "write"})])
    assert herd_run(herd_bin, 2, write, tmp_path / "1.h5").returncode == 0
    data = target / "herd-fixed" / "unique-64K"
    (data / "r000001.dat").unlink()
    os.mkfifo(data / "r000001.dat")
    # An open that waited on the FIFO would be cut by the deadline: the
    # phase's status would say so, and the open's errno would not be
    # ENOTSUP.
    read = write_job(tmp_path / "r.ini", {**g, "deadline": "10s"},
                     [("r", {"kind": "read", "verify": "yes"}), ("m", {"kind": "md5"})])
    proc = herd_run(herd_bin, 2, read, tmp_path / "2.h5", timeout=120)
    assert proc.returncode == 3, describe(proc)
    res = load_results(tmp_path / "2.h5")
    for name in ("r", "m"):
        assert res.phases[name].attrs["status"] == "errors", describe(proc)
        errs = res.phases[name].error_rows()
        assert [(e["rank"], e["op"], e["errno"]) for e in errs] == \
            [(1, "open", errno.ENOTSUP)], errs
        assert res.phases[name].ranks["bytes"].tolist() == [64 * 1024, 0]


def test_taking_over_a_kept_directory_is_said_with_the_cache_caveat(herd_bin, tmp_path):
    """A data file swapped on an NFS server's own disk is seen only when
    the server looks again (its attribute cache): herd cannot tell, so
    `herd check` of a job with a fixed run_id, and a run that takes over
    a kept run directory, say so in one line; a run that makes its
    directory does not."""
    target = tmp_path / "target"
    target.mkdir()
    job = small_job(tmp_path, target, run_id="fixed", keep="yes")
    check = herd_cmd(herd_bin, "check", job)
    assert check.returncode == 0, describe(check)
    notes = [line for line in check.stdout.splitlines() if line.startswith("note: run_id = fixed")]
    assert len(notes) == 1 and "Attr_Expiration_Time" in notes[0], check.stdout
    first = herd_run(herd_bin, 2, job, tmp_path / "1.h5")
    assert first.returncode == 0, describe(first)
    assert "taken over" not in first.stderr
    second = herd_run(herd_bin, 2, job, tmp_path / "2.h5")
    assert second.returncode == 0, describe(second)
    said = [line for line in second.stderr.splitlines() if "taken over" in line]
    assert len(said) == 1, second.stderr
    assert said[0].startswith("herd: note: run directory ") and "FIFO" in said[0], said


# ---------------------------------------------------------------- 8. many files


def syscall_counts(path):
    """{syscall: calls} from an `strace -c` summary."""
    counts = {}
    for line in Path(path).read_text().splitlines():
        f = line.split()
        if len(f) >= 5 and f[0][0].isdigit() and f[3].isdigit() and f[-1] != "total":
            counts[f[-1]] = int(f[3])
    return counts


def test_files_per_rank_at_its_maximum_starts_at_once_and_stops(herd_bin, tmp_path):
    """files_per_rank = 10,000,000 with a 3 s deadline: nothing is looked
    at in advance (each file is claimed as it is created), the phase ends
    at its deadline and the clean-up removes exactly what was written.
    Counted by strace on rank 1: it unlinks its files (and hardly a name
    more), and all its calls on names are a few per file it wrote, not a
    scan of 10^7."""
    if not shutil.which("strace"):
        pytest.skip("strace is needed to count the calls on names")
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "job.ini",
                    {"target": target, "file_size": "4K", "block_size": "4K",
                     "deadline": "3s"},
                    [("w", {"kind": "write", "files_per_rank": 10_000_000, "fsync": "no"})])
    out = tmp_path / "run.h5"
    summary = tmp_path / "rank1.strace"
    herd = [herd_bin, "run", str(job), "-o", str(out)]
    count = ["strace", "-f", "-c", "-o", str(summary), "-e", "trace=%file"]
    proc = run_cmd(["mpirun", "--oversubscribe", "-np", "1", *herd, ":", "-np", "1", *count,
                    *herd], timeout=170)
    assert proc.returncode == 0, describe(proc)
    res = load_results(out)
    ph = res.phases["w"]
    assert ph.attrs["status"] == "deadline"
    mine = int(ph.ranks[ph.ranks["rank"] == 1]["bytes"].sum()) // 4096
    assert mine > 0 and int(ph.ranks["bytes"].sum()) > 4096 * mine
    calls = syscall_counts(summary)
    unlinks = calls.get("unlink", 0) + calls.get("unlinkat", 0)
    print(f"\nrank 1 wrote {mine} files; its calls on names: {calls}")
    # (and a file the deadline cut short, and MPI's own few)
    assert mine <= unlinks <= mine + 20, f"rank 1 wrote {mine} files, unlinked {unlinks} names"
    assert sum(calls.values()) < 10 * mine + 100_000, calls
    assert tree(target) == [], "the clean-up left files"


def test_files_per_rank_stops_on_sigterm_and_cleans_up(herd_bin, tmp_path):
    """10^7 files a rank, no deadline: only the stop ends the phase (the
    run's wait is a hang guard); both ranks stop in the middle of their
    files, and the clean-up, in its own time, removes what was written."""
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "job.ini",
                    {"target": target, "file_size": "4K", "block_size": "4K"},
                    [("w", {"kind": "write", "files_per_rank": 10_000_000, "fsync": "no"})])
    out = tmp_path / "run.h5"
    with herd_background(herd_bin, 2, "run", job, "-o", out, quiet=True) as run:
        run.wait_line("^herd: w: ", RUN_TIMEOUT)  # progress: the phase is under way
        os.kill(rank_pids(run.pid, 2)[1], signal.SIGTERM)
        done, _ = run.wait()
    text = done.stderr
    assert done.returncode == 143, text
    res = load_results(out)
    rows = res.phases["w"].ranks
    assert res.phases["w"].attrs["status"] == "interrupted", text
    assert (rows["bytes"] > 0).all() and (rows["completed"] == 0).all(), rows
    assert "clean-up stopped" not in text, text
    assert tree(target) == []


def wait_signal_taken(pid, sig, timeout=10):
    """Wait until the process has no `sig` pending (its handler ran)."""
    bit = 1 << (sig - 1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            status = Path(f"/proc/{pid}/status").read_text()
            pending = [int(l.split()[1], 16) for l in status.splitlines()
                       if l.startswith(("SigPnd:", "ShdPnd:"))]
            if not any(p & bit for p in pending):
                return
        time.sleep(0.001)
    pytest.fail(f"signal {sig} still pending at {pid} after {timeout} s")


@pytest.mark.parametrize("copies", [1, 2])
def test_late_copy_of_the_stop_does_not_end_the_cleanup(herd_bin, tmp_path, copies):
    """A launcher signals every rank, not all at one instant: rank 1's
    SIGTERM ends the phases, and rank 0's own copy, arriving once the
    clean-up has begun, is the same stop (the clean-up goes on and removes
    everything); a second signal to rank 0 is a new stop and ends it.
    Rank 0's unlinks are slowed (strace, 5 ms each) so that its clean-up
    of 500 files lasts seconds and the signals surely come during it."""
    if not shutil.which("strace"):
        pytest.skip("strace is needed to slow the clean-up")
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "job.ini",
                    {"target": target, "file_size": "4K", "block_size": "4K"},
                    [("w", {"kind": "write", "files_per_rank": 500, "fsync": "no"}),
                     ("wait", {"kind": "idle", "duration": "60s"})])
    out = tmp_path / "run.h5"
    herd = [herd_bin, "run", str(job), "-o", str(out)]
    slow = ["strace", "-qq", "-f", "-o", "/dev/null", "-e", "trace=unlink,unlinkat",
            "-e", "inject=unlink,unlinkat:delay_exit=5000"]
    args = ["mpirun", "--oversubscribe", "-q", "-np", "1", *slow, *herd, ":", "-np", "1", *herd]
    with Background(args) as run:
        run.wait_line("^herd: phase w: ok")
        time.sleep(0.5)  # into 'wait'
        pids = rank_pids(run.pid, 2)
        os.kill(pids[1], signal.SIGTERM)
        run.wait_line("^herd: phase wait: interrupted")
        # Rank 0 is in the clean-up once one of its files is gone.
        files = next(target.glob("herd-*/unique-4K"))
        deadline = time.monotonic() + 30
        while len(list(files.glob("r000000*.dat"))) == 500 and time.monotonic() < deadline:
            time.sleep(0.005)
        for _ in range(copies):
            os.kill(pids[0], signal.SIGTERM)
            wait_signal_taken(pids[0], signal.SIGTERM)  # two pending ones would merge
        done, _ = run.wait(timeout=120)
    text = done.stderr
    assert done.returncode == 143, text
    assert load_results(out).attrs["status"] == "interrupted"
    if copies == 1:
        assert "clean-up stopped" not in text, text
        assert tree(target) == []
    else:
        assert "herd: clean-up stopped (signal)" in text, text
        assert tree(target) != []
        shutil.rmtree(target)


# ---------------------------------------------------------------- 9. leftovers


def test_cleanup_leftovers_are_errors_of_the_run(herd_bin, tmp_path, mount_fs):
    """Files the clean-up cannot remove (their directory made immutable
    during the run) fail the run (exit 3), and the message says they are
    this run's leftovers, not entries it did not make."""
    require_root()
    fs = mount_fs("ext4")
    target = fs.path / "target"
    target.mkdir()
    job = write_job(tmp_path / "job.ini",
                    {"target": target, "file_size": "4K", "block_size": "4K", "keep": "no"},
                    [("w", {"kind": "write", "files_per_rank": 25}),
                     ("pause", {"kind": "idle", "duration": "5s"})])
    out = tmp_path / "run.h5"
    data = None
    try:
        with herd_background(herd_bin, 2, "run", job, "-o", out) as run:
            run.wait_line("phase w:")
            # the ranks held in "pause" (SIGSTOP) while the test makes the
            # directory immutable: their clean-up cannot begin before
            pids = rank_pids(run.pid, 2)
            hold_ranks(pids, True)
            try:
                data = next(target.glob("herd-*/unique-4K"))
                subprocess.run(["chattr", "+i", str(data)], check=True)
            finally:
                hold_ranks(pids, False)
            done, _ = run.wait(timeout=120)
    finally:
        if data is not None:
            subprocess.run(["chattr", "-i", str(data)], check=False)
        shutil.rmtree(target, ignore_errors=True)
    text = done.stderr
    assert done.returncode == 3, text
    assert "clean-up could not remove 51 entries" in text, text  # 50 files, their dir
    assert "the clean-up did not remove all this run made" in text, text
    assert "did not make" not in text, text
    res = load_results(out)
    assert res.attrs["status"] == "complete" and res.attrs["exit_code"] == 3
