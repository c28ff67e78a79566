"""The agent of nfs-server.sh --server knfsd's User-Mode Linux guest
(uml-init.c; its host side knfsd.py and knfsdctl.py), and a guest whose
disk image's file system fills up (test_kclient.py has the kernel-client
guests' agent).

1. Only the host side that booted the guest is obeyed: a process in the
   server's namespace run as nobody (it cannot read STATE/guest/secret)
   sends a command in the old one-line form, as netstrings without the
   secret, with a wrong and a short one, and nothing at all: every try
   gets exactly "error: not authorized", the command (a touch of a file
   the host sees) never runs, nfsd keeps its threads. Words reach execve
   as they were given (`exec /bin/sh -c "echo A B"` says "A B"; an empty
   word and one with spaces survive). `read` opens beneath /proc or /sys:
   "..", /proc/self/root, /proc/1/cwd and /proc/self/fd/N are refused.
2. Numbers are checked before they reach the kernel: `threads` takes
   decimal digits 1..1024 only (the cap comes with the guest's config),
   `restart` refuses a bad grace, lease or thread count before it stops
   nfsd; nfsd keeps its threads throughout.
3. A long exec holds nothing up: while `exec` runs a sleep and eight
   connections dribble the start of a request as nobody, status answers
   with the thread count and the metrics file is rewritten; each dribbler
   gets "error: not authorized" and is closed. A caller that hangs up
   takes its command along (SIGTERM ignored: SIGKILL after 5 s);
   `exec --timeout=2` of a command that ignores SIGTERM ends with
   "exit 124" and leaves nothing running; a bad --timeout is refused.
4. A full disk: the state directory on a tmpfs of its own, filled while
   the guest boots (linux.uml stopped with SIGSTOP from its first moment
   until the file system is full): start fails (exit 1) with the guest's
   reason on stderr and in log/guest-console.log (space reserved for it
   before boot), and leaves nothing. The console log's reservation holds
   on tmpfs, ext4 and xfs (appends after the file system is full). A
   server whose state file system fills later (ext4 export): status says
   degraded with why (the host file system is full; after a client's
   failed create, ext4's recorded errors, also once space is back).

No time is asserted; the times are printed (-s). Needs what test_knfsd.py
needs; skips with its message otherwise. Run:
HERD_BIN=build/herd /usr/bin/python3 -m pytest -q -rs -s tests/integration/test_knfsd_agent.py
"""

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import mounted_fs
from test_knfsd import GUEST_ADDR, KnfsdServer, pytestmark, uml_processes  # noqa: F401
from test_nfs_server import CMD_TIMEOUT, SBIN_PATH, SCRIPT, running, wait_until

import supervisor  # noqa: E402  (cluster-configs/local, on the path by test_nfs_server)

PROBE = Path(__file__).resolve().parent / "agent_probe.py"
NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
REFUSED = "error: not authorized\n"
ENV = dict(os.environ, PATH=SBIN_PATH)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One knfsd server for the agent's tests (they leave it as it was)."""
    s = KnfsdServer(tmp_path_factory.mktemp("agent") / "knfsd")
    try:
        yield s.start()
    finally:
        s.stop(check=False)
    s.assert_clean()


def guest_count(s, pattern):
    """How many processes in the guest have a command line that pattern
    (an extended regular expression) matches whole (pgrep -fx)."""
    proc = s.guest("exec", "pgrep", "-c", "-f", "-x", pattern)
    assert proc.returncode == 0, f"pgrep in the guest:\n{proc.stdout}{proc.stderr}"
    return int(proc.stdout.split()[0])


# ---------------------------------------------------------------- 1. who and what


def test_agent_obeys_only_the_host_side(server):
    s = server
    marker = s.state / "guest" / "forged"  # /state/forged in the guest
    forged = s.exec(*NOBODY, "/usr/bin/python3", PROBE, "forge", GUEST_ADDR,
                    s.state / "guest" / "secret", "exec", "/usr/bin/touch", "/state/forged",
                    timeout=120)
    assert forged.returncode == 0, f"{forged.stdout}{forged.stderr}"
    got = json.loads(forged.stdout)
    print(f"\nas nobody in the namespace: {got}")
    assert got.pop("secret") == "PermissionError", "nobody could read the guest's secret"
    assert got == {way: REFUSED for way in got}, got
    assert not marker.exists(), "a forged command ran in the guest"
    assert s.threads_running() == 8
    config = (s.state / "guest" / "config").read_text().splitlines()
    assert "threads_max=1024" in config, config

    # argv end to end: no re-splitting, empty words kept
    rc, out = s.guest_exec("/bin/sh", "-c", "echo A B")
    assert (rc, out) == (0, "A B"), (rc, out)
    rc, out = s.guest_exec("printf", "[%s]\\n", "a b", "", "c")
    assert (rc, out) == (0, "[a b]\n[]\n[c]"), (rc, out)

    # read: beneath /proc or /sys, or not at all
    assert s.guest_read("/proc/fs/nfsd/threads").strip() == "8"
    assert s.guest_read("/proc/net/rpc/nfsd").startswith("rc ")  # (a link within /proc)
    for path in ("/proc/../etc/hostname", "/sys/../etc/hostname", "/proc/self/root/etc/hostname",
                 "/proc/1/cwd/etc/hostname", "/proc/self/fd/0", "/etc/hostname"):
        proc = s.guest("read", path)
        assert proc.returncode == 1 and proc.stdout == "", (path, proc.stdout, proc.stderr)
        assert "not beneath /proc or /sys" in proc.stderr, (path, proc.stderr)


# ---------------------------------------------------------------- 2. numbers


def test_agent_numbers_are_checked(server):
    s = server
    for bad in ("99999999999999999999", "1025", "0", "-1", "+5", "08", "8x", " 8", ""):
        proc = s.guest("threads", bad)
        assert proc.returncode == 1, (bad, proc.stdout, proc.stderr)
        assert "is not a count 1..1024" in proc.stderr, (bad, proc.stderr)
    for grace, lease, threads, why in (("99999", "60", "8", "grace"), ("0", "5", "8", "lease"),
                                       ("0", "60", "2000", "threads"), ("1e3", "60", "8", "grace")):
        proc = s.guest("restart", grace, lease, threads)
        assert proc.returncode == 1 and f"restart: {why} '" in proc.stderr, \
            (grace, lease, threads, proc.stderr)
    assert s.threads_running() == 8, "a refused command changed nfsd"
    proc = s.cmd("threads", "--state", s.state, "1024")
    assert proc.returncode == 0, proc.stderr
    assert s.threads_running() == 1024
    assert s.cmd("threads", "--state", s.state, "8").returncode == 0
    assert s.threads_running() == 8


# ---------------------------------------------------------------- 3. nothing waits


def test_agent_serves_others_while_a_command_runs(server, tmp_path):
    s = server
    sleeper, sleeping = "/bin/sleep 7777", "/bin/sleep.7777"
    caller = subprocess.Popen(["bash", SCRIPT, "guest", "--state", s.state, "--", "exec",
                               "--timeout=600", "/bin/sh", "-c", f"trap '' TERM; exec {sleeper}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=ENV, start_new_session=True)
    stop = tmp_path / "stop-dribbling"
    dribbler = None
    try:
        assert wait_until(lambda: guest_count(s, sleeping) == 1, 60), "exec never started"
        dribbler = subprocess.Popen(["bash", SCRIPT, "exec", "--state", s.state, "--", *NOBODY,
                                     "/usr/bin/python3", PROBE, "dribble", GUEST_ADDR, "8", stop],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env=ENV)
        t0 = time.monotonic()
        rc, kv = s.status()
        took = time.monotonic() - t0
        assert kv.get("threads_running") == "8" and kv.get("state") == "running", kv
        assert caller.poll() is None, "the exec ended before status was served"
        prom = "/run/herd-metrics/pool.prom"
        first = s.guest_exec("stat", "-c", "%y", prom)[1]
        assert wait_until(lambda: s.guest_exec("stat", "-c", "%y", prom)[1] != first, 30), \
            "pool.prom is not rewritten while an exec runs"
        stop.touch()
        out, err = dribbler.communicate(timeout=180)
        assert dribbler.returncode == 0, f"{out}{err}"
        dribbled = json.loads(out)
        assert dribbled["replies"] == [REFUSED] * 8 and dribbled["open"] == 0, dribbled
    finally:
        stop.touch()
        if dribbler is not None and dribbler.poll() is None:
            dribbler.kill()
            dribbler.wait()
        os.killpg(caller.pid, signal.SIGKILL)
        caller.wait()
    hung_up = time.monotonic()
    assert wait_until(lambda: guest_count(s, sleeping) == 0, 60), \
        "the command outlived its caller's hang-up"
    gone = time.monotonic() - hung_up
    print(f"\nstatus during an exec and 8 dribblers: {took:.1f} s; the exec's command gone "
          f"{gone:.1f} s after its caller hung up")

    proc = s.guest("exec", "--timeout=2", "/bin/sh", "-c",
                   "trap '' TERM; /bin/sleep 7778; echo not killed")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-2:] == ["exec: timed out after 2 s; its process group was killed",
                          "exit 124"], proc.stdout
    assert "not killed" not in proc.stdout
    assert wait_until(lambda: guest_count(s, "/bin/sleep.7778") == 0, 30), \
        "a timed-out command's group lives on"
    for bad in ("--timeout=0", "--timeout=3601", "--timeout=2s", "--timeout="):
        proc = s.guest("exec", bad, "/bin/true")
        assert proc.returncode == 1 and "exec [--timeout=S]" in proc.stderr, (bad, proc.stderr)


# ---------------------------------------------------------------- 4. a full disk


def shm_room():
    """UML keeps a guest's memory in /dev/shm when it has room
    (knfsd.memory_dir), else in the state directory, which these tests
    keep small."""
    st = os.statvfs("/dev/shm")
    if st.f_bavail * st.f_frsize < (512 + 64) << 20:
        pytest.skip("/dev/shm has no room for the guest's memory (it would go to the small "
                    "state file system)")


def fill(directory):
    """Fill the file system of directory: a file written until ENOSPC,
    in 1 MiB and then 4 KiB pieces."""
    fd = os.open(Path(directory) / "filler", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for piece in (1 << 20, 4096):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * piece)
    finally:
        os.close(fd)


def test_start_fails_when_the_disk_fills_while_booting(tmp_path):
    shm_room()
    with mounted_fs("tmpfs", tmp_path, size="200m") as small:
        s = KnfsdServer(small.path / "state")
        start = subprocess.Popen(["bash", SCRIPT, "start", "--state", s.state, "--server",
                                  "knfsd", "--fs", "xfs", "--size", "1G"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=ENV)
        try:
            pid_file = s.state / "pid" / "uml"
            assert wait_until(lambda: pid_file.exists() and pid_file.read_text().strip(),
                              120, 0.01), "linux.uml never started"
            uml = int(pid_file.read_text().split()[0])
            os.kill(uml, signal.SIGSTOP)  # the guest waits until the disk is full
            fill(small.path)
            free = os.statvfs(small.path).f_bavail
            os.kill(uml, signal.SIGCONT)
            out, err = start.communicate(timeout=CMD_TIMEOUT)
            console = (s.state / "log" / "guest-console.log").read_text(errors="replace")
        finally:
            if start.poll() is None:
                start.kill()
                start.communicate()
            (small.path / "filler").unlink(missing_ok=True)
            s.stop(check=False)
        print(f"\nstart on a full file system ({free} blocks free): exit {start.returncode}; "
              f"stderr:\n{err[-3000:]}")
        assert free == 0
        assert start.returncode == 1, f"start succeeded on a full disk:\n{out}{err}"
        reason = "FAILED: the export cannot be written: probe file"
        assert reason in err, err
        assert reason in console, console[-3000:]
        assert not uml_processes(s.state), "linux.uml left behind"
        assert s.status()[0] == 3


@pytest.mark.parametrize("kind", ["tmpfs", "ext4", "xfs"])
def test_console_log_reserve_holds_on_a_full_file_system(tmp_path, kind):
    size = {"tmpfs": {"size": "32m"}, "ext4": {"image_size": "64M"},
            "xfs": {"image_size": "300M"}}[kind]
    with mounted_fs(kind, tmp_path, **size) as m:
        log = m.path / "guest-console.log"
        log.write_bytes(b"an earlier boot\n")
        end = log.stat().st_size
        supervisor.console_reserve(log, end)
        assert log.stat().st_size == end, "the reservation changed the log's length"
        fill(m.path)
        line = b"uml-init: [5.000] FAILED: " + b"x" * 73 + b"\n"  # 100 bytes
        count = supervisor.CONSOLE_RESERVE // 2 // len(line)
        with open(log, "ab", buffering=0) as out:
            for _ in range(count):
                out.write(line)
            os.fsync(out.fileno())
        free = os.statvfs(m.path).f_bavail
        data = log.read_bytes()
    print(f"\n{kind}: {count} lines appended to the reserved log on a full file system "
          f"({free} blocks free)")
    assert data == b"an earlier boot\n" + line * count


def test_status_degraded_when_the_export_cannot_take_writes(tmp_path):
    shm_room()
    with mounted_fs("tmpfs", tmp_path, size="200m") as small:
        s = KnfsdServer(small.path / "state")
        try:
            s.start("--fs", "ext4")
            rc, kv = s.status()
            assert rc == 0 and kv.get("export_writable") == "yes", kv
            fill(small.path)
            rc, kv = s.status()
            print(f"\nhost file system full: {kv}")
            assert rc == 1 and kv.get("state") == "degraded", kv
            assert kv.get("export_writable") == "no", kv
            assert "KiB free" in kv.get("export_problem", ""), kv
            # a client's creates meet the full disk; ext4 aborts its journal
            src = tmp_path / "src"
            src.write_bytes(os.urandom(1 << 20))
            for name in ("a", "b", "c"):
                s.exec("nfs-cp", src, f"{s.base}/{name}?version=3")
            (small.path / "filler").unlink()
            rc, kv = s.status()
            print(f"space back: {kv}")
            assert rc == 1 and kv.get("state") == "degraded", kv
            assert "ext4 has recorded" in kv.get("export_problem", ""), kv
            assert running(*s.procs["uml"])
        finally:
            s.stop(check=False)
        s.assert_clean()
