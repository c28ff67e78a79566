"""The state directories of the embedded servers (cluster-configs/local/
nfs-server.sh) and of the virtual cluster (cluster-configs/virtual/
vcluster.sh, and its vc-agent), which run as root: a directory another
user made, or one below a directory another user could swap, is refused
with one line before anything is read from it, run or signalled; settings
are data; one command at a time works on a state directory.

1. Another user (nobody) makes the state directory first, in a sticky
   world-writable directory like /tmp, with a marker, legacy KEY=VALUE
   settings holding a command, JSON settings and a PID record naming PID 1:
   every verb of nfs-server.sh and vcluster.sh refuses it (exit 1, one line
   naming the directory and its owner), vc-agent too; the command never
   runs, nothing in the directory changes.
2. A state directory of root's below a directory of another user's (who
   could rename it away and put their own in its place), a state directory
   writable by others, and a symbolic link to another user's directory:
   refused the same way, start included (nothing is made).
3. Settings are data: a settings file of root's own with a value that is
   not valid (a command substitution) is refused in one line, a legacy
   conf/settings is never read.
4. Concurrent starts on one state directory: exactly one starts the
   server, the others wait for it and say it is running; after one stop
   no process of that directory is left. Concurrent vcluster.sh up: one
   cluster, the other refused; after down nothing is left.

5. A record renamed away while the directory is checked (the supervisor
   writes pid/supervisor.tmp and renames it while a second start checks
   the directory) is skipped, not a traceback.

Needs root and the user nobody (skips otherwise); 4 needs the embedded
server's packages (nfs-ganesha, rpcbind, libnfs-utils).
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import as_user, other_user, proc_cmdlines, tree
from test_nfs_server import LOCAL_DIR, SCRIPT, Server, _why_skip, describe_pids

VCLUSTER = LOCAL_DIR.parent / "virtual" / "vcluster.sh"
VC_AGENT = LOCAL_DIR.parent / "virtual" / "vc-agent"
TIMEOUT = 180


def run(*args, env=None):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True,
                          timeout=TIMEOUT, env=env, stdin=subprocess.DEVNULL)


def one_line(proc, *words):
    """proc failed with one line on stderr holding every word."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and len(lines) == 1, (proc.returncode, proc.stderr)
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


@pytest.fixture
def nobody():
    return other_user("nobody", "and the user nobody (the other user)")


@pytest.fixture
def sticky():
    """A root-owned world-writable sticky directory, as /tmp is (pytest's
    tmp_path is private to root: the other user could not reach it)."""
    d = Path(tempfile.mkdtemp(prefix="herd-sticky-", dir="/tmp"))
    d.chmod(0o1777)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def as_nobody(nobody, script, cwd):
    proc = as_user(nobody.pw_uid, nobody.pw_gid, ["bash", "-c", script], dict(os.environ), cwd)
    assert proc.returncode == 0, proc.stderr
    return proc


def hostile_server_dir(nobody, sticky):
    """nobody's state directory with everything a root script once trusted."""
    state, canary = sticky / "nfs", sticky / "PWNED"
    as_nobody(nobody, f"""
        set -e
        mkdir -p {state}/conf {state}/pid {state}/run {state}/log
        touch {state}/.herd-nfs-server
        echo 'touch {canary}' > {state}/conf/settings
        echo '{{"FS": "dir", "SERVER": "ganesha"}}' > {state}/conf/settings.json
        echo '1 1' > {state}/pid/supervisor
        echo '1 1' > {state}/pid/ganesha
    """, sticky)
    return state, canary


SERVER_VERBS = [
    ["status"], ["stop"], ["stop", "--purge"], ["start", "--fs", "dir"],
    ["restart-ganesha"], ["exec", "--", "true"], ["link", "--clear"], ["stop-statd"],
    ["threads", "4"], ["guest", "--", "read", "/proc/uptime"], ["env"],
]


@pytest.mark.parametrize("verb", SERVER_VERBS, ids=lambda v: "-".join(v[:2]))
def test_server_refuses_another_users_state_dir(nobody, sticky, verb):
    state, canary = hostile_server_dir(nobody, sticky)
    before = tree(state)
    proc = run("bash", SCRIPT, verb[0], "--state", state, *verb[1:])
    one_line(proc, str(state), "nobody")
    assert not canary.exists(), "a setting of another user's ran as root"
    assert tree(state) == before
    assert os.stat(state).st_uid == nobody.pw_uid


def test_vcluster_refuses_another_users_state_dir(nobody, sticky):
    state, canary = sticky / "vc", sticky / "PWNED"
    as_nobody(nobody, f"mkdir {state}", sticky)
    # up into another user's (empty) directory: refused before anything starts
    one_line(run("bash", VCLUSTER, "up", "--state", state, "--clients", "1"), str(state), "nobody")
    assert list(state.iterdir()) == []
    # ... and a cluster state of another user's: its server directory holds
    # settings with a command, its hosts file names PID 1
    as_nobody(nobody, f"""
        set -e
        touch {state}/.herd-vcluster
        echo 'switch 1 1 - switch' > {state}/hosts
        echo 'c01 1 1 10.77.0.11 client' >> {state}/hosts
        mkdir -p {state}/server/conf {state}/server/pid
        touch {state}/server/.herd-nfs-server
        echo 'touch {canary}' > {state}/server/conf/settings
        echo '1 1' > {state}/server/pid/supervisor
    """, sticky)
    before = tree(state)
    for verb in (["status"], ["down"], ["exec", "--", "true"], ["mount", "--mount-opts", "vers=3"]):
        one_line(run("bash", VCLUSTER, verb[0], "--state", state, *verb[1:]), str(state), "nobody")
    env = dict(os.environ, VC_STATE=str(state))
    agent = run("bash", VC_AGENT, "c01", "touch", canary, env=env)
    assert agent.returncode == 255 and "nobody" in agent.stderr, agent
    assert not canary.exists()
    assert tree(state) == before


def test_server_refuses_a_swappable_state_dir(nobody, sticky):
    # root's directory below nobody's: nobody can rename it away
    as_nobody(nobody, f"mkdir -m 0755 {sticky}/theirs", sticky)
    (sticky / "theirs" / "nfs").mkdir()
    for verb in (["start", "--fs", "dir"], ["status"], ["stop"]):
        line = one_line(run("bash", SCRIPT, verb[0], "--state", sticky / "theirs" / "nfs", *verb[1:]),
                        str(sticky / "theirs"), "nobody")
        assert "replace" in line, line
    assert list((sticky / "theirs" / "nfs").iterdir()) == []
    # a new directory below nobody's is refused before it is made
    one_line(run("bash", SCRIPT, "start", "--state", sticky / "theirs" / "new" / "nfs"),
             str(sticky / "theirs"))
    assert not (sticky / "theirs" / "new").exists()
    # root's directory that others may write into
    open_dir = sticky / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    one_line(run("bash", SCRIPT, "start", "--state", open_dir), str(open_dir), "writable by others")
    assert list(open_dir.iterdir()) == []
    # a symbolic link of nobody's to nobody's directory
    as_nobody(nobody, f"mkdir {sticky}/target && ln -s {sticky}/target {sticky}/link", sticky)
    one_line(run("bash", SCRIPT, "start", "--state", sticky / "link"), "nobody")
    assert list((sticky / "target").iterdir()) == []


def test_settings_are_data(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root (the scripts refuse anything else)")
    state = tmp_path / "nfs"
    (state / "conf").mkdir(parents=True)
    (state / ".herd-nfs-server").touch()
    canary = tmp_path / "PWNED"
    # (a record of a supervisor that is gone: status reads the settings)
    (state / "pid").mkdir()
    (state / "pid" / "supervisor").write_text("1 1\n")
    # a legacy KEY=VALUE file is never read, let alone sourced
    (state / "conf" / "settings").write_text(f"FS=xfs\ntouch {canary}\n")
    proc = run("bash", SCRIPT, "status", "--state", state)
    assert proc.returncode == 3 and "state=stopped" in proc.stdout, proc
    assert "fs=dir" in proc.stdout, proc.stdout
    assert not canary.exists()
    for bad in (f'{{"FS": "$(touch {canary})"}}', '{"NO_SUCH": "1"}', '{"GRACE": 5}', "[1, 2]",
                "not json"):
        (state / "conf" / "settings.json").write_text(bad)
        line = one_line(run("bash", SCRIPT, "status", "--state", state), "settings")
        assert "conf/settings.json" in line or "setting" in line, line
    assert not canary.exists()


def processes_naming(path):
    """PIDs of live processes whose command line names path."""
    return [pid for pid, cmd in proc_cmdlines().items()
            if str(path).encode() in cmd and pid != os.getpid()]


@pytest.mark.skipif(_why_skip() is not None, reason=_why_skip() or "")
@pytest.mark.parametrize("round_", range(3))
def test_concurrent_starts_make_one_server(tmp_path, round_):
    state = tmp_path / "nfs"
    starts = [subprocess.Popen(["bash", str(SCRIPT), "start", "--state", str(state), "--fs", "dir"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
              for _ in range(3)]
    done = [(p.wait(TIMEOUT), *p.communicate()) for p in starts]
    s = Server(state)
    try:
        ok = [d for d in done if d[0] == 0]
        assert len(ok) == 1, done
        for rc, out, err in done:
            if rc != 0:
                assert out == "" and "already running" in err, (rc, err)
        rc, kv = s.refresh()
        assert rc == 0 and kv["state"] == "running", kv
        s.url, pid = ok[0][1].splitlines()
        s.pid = int(pid)
        assert s.procs["ganesha"][0] == s.pid
        s.pin_netns()
        assert s.answers()
    finally:
        s.stop(check=False)
    s.assert_clean()
    left = processes_naming(state)
    assert not left, f"left after stop: {describe_pids(left)}"


@pytest.mark.skipif(_why_skip() is not None, reason=_why_skip() or "")
def test_concurrent_vcluster_ups_make_one_cluster(tmp_path):
    state = tmp_path / "vc"
    args = ["bash", str(VCLUSTER), "up", "--state", str(state), "--clients", "1", "--slots", "1",
            "--server-fs", "dir"]
    ups = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
           for _ in range(2)]
    done = [(p.wait(TIMEOUT), *p.communicate()) for p in ups]
    try:
        assert sorted(d[0] for d in done) == [0, 1], done
        refused = [d for d in done if d[0] != 0][0]
        assert "a cluster already uses" in refused[2], refused
        status = run("bash", VCLUSTER, "status", "--state", state)
        assert status.returncode == 0 and "state=up" in status.stdout, status
    finally:
        down = run("bash", VCLUSTER, "down", "--state", state)
    assert down.returncode == 0, down.stderr
    assert not state.exists()
    left = processes_naming(state)
    assert not left, f"left after down: {describe_pids(left)}"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-rs"]))


def import_statedir():
    """The lab's statedir module (cluster-configs/local), imported here."""
    sys.path.insert(0, str(LOCAL_DIR))
    try:
        import statedir
    finally:
        sys.path.remove(str(LOCAL_DIR))
    return statedir


def test_record_renamed_away_during_the_check(tmp_path, monkeypatch):
    statedir = import_statedir()
    state = tmp_path / "nfs"
    (state / "pid").mkdir(parents=True)
    (state / "pid" / "ganesha").write_text("1 1\n")
    real_scandir = statedir.os.scandir

    class Gone:
        path = str(state / "pid" / "supervisor.tmp")
        name = "supervisor.tmp"

        def stat(self, follow_symlinks=True):
            raise FileNotFoundError(2, "renamed away", self.path)

    def scandir(path):
        entries = list(real_scandir(path))
        return iter(entries + [Gone()]) if Path(path).name == "pid" else iter(entries)

    monkeypatch.setattr(statedir.os, "scandir", scandir)
    statedir.check_dir(state)  # no exception: the vanished entry is skipped


def test_directory_removed_during_the_check(tmp_path, monkeypatch):
    """A stop removes the state's pid/ between the check's look at it and
    its listing: skipped, as a pid/ that is not there at all."""
    statedir = import_statedir()
    state = tmp_path / "nfs"
    (state / "pid").mkdir(parents=True)
    real_scandir = statedir.os.scandir

    def scandir(path):
        if Path(path).name == "pid":
            raise FileNotFoundError(2, "removed", str(path))
        return real_scandir(path)

    monkeypatch.setattr(statedir.os, "scandir", scandir)
    statedir.check_dir(state)  # no exception
