"""The embedded server's supervisor, cluster-configs/local/supervisor.py: the
process nfs-server.sh start runs in the server's namespaces, which owns
rpcbind, statd, ganesha (and smbd) and takes commands as JSON lines on
STATE/run/supervisor.sock.

Its socket is root's alone (mode 0600); start-ganesha is refused while
ganesha runs and, once a test SIGKILLed it, starts a new ganesha that
serves; start-statd and start-smbd are refused on a server without NLM or
SMB (also through `supervisor.py send`, exit 1); a line that is not JSON,
an unknown command, a line over the limit each get an error reply and the
supervisor keeps serving; the stop command tears down as SIGTERM does. The
server fixture of test_nfs_server.py stops every server and checks that
nothing is left.

Needs what test_nfs_server.py needs (root, nfs-ganesha, rpcbind, libnfs-utils);
skips otherwise.
"""

import json
import os
import signal
import stat
import subprocess

import pytest

from test_nfs_server import (CMD_TIMEOUT, LOCAL_DIR, _why_skip, running, server,  # noqa: F401
                             wait_until)

import serverstate  # cluster-configs/local, on sys.path through test_nfs_server

pytestmark = pytest.mark.skipif(_why_skip() is not None, reason=_why_skip() or "")

SUPERVISOR = LOCAL_DIR / "supervisor.py"


def raw_exchange(state, payload, timeout=10):
    """Send raw bytes to the supervisor's socket; the reply lines (dicts)
    until it closes or a reply per line sent has come."""
    want = payload.count(b"\n") or 1
    with serverstate.supervisor_connect(state, timeout) as conn:
        try:
            conn.sendall(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass   # it closed on a long line: its reply is still there to read
        data = b""
        while data.count(b"\n") < want:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
    return [json.loads(line) for line in data.splitlines()]


def send_cli(state, cmd):
    return subprocess.run(["python3", SUPERVISOR, "send", "--state", state, cmd],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=60, check=False)


def recorded(state, name):
    pid, start = (state / "pid" / name).read_text().split()
    return int(pid), int(start)


def test_socket_is_root_only(server):
    s = server("--no-nlm")
    sock = s.state / "run" / "supervisor.sock"
    st = os.stat(sock)
    assert stat.S_ISSOCK(st.st_mode), oct(st.st_mode)
    assert stat.S_IMODE(st.st_mode) == 0o600, oct(st.st_mode)
    assert st.st_uid == 0


def test_start_ganesha_refused_while_running_then_restarts_after_kill(server):
    s = server("--no-nlm")
    reply = serverstate.supervisor_send(s.state, "start-ganesha")
    assert reply == {"ok": False, "error": f"ganesha {s.pid} is running"}, reply
    proc = send_cli(s.state, "start-ganesha")
    assert proc.returncode == 1 and f"ganesha {s.pid} is running" in proc.stderr, proc

    old = recorded(s.state, "ganesha")
    os.kill(s.pid, signal.SIGKILL)
    assert wait_until(lambda: not running(*old), CMD_TIMEOUT), "ganesha survived SIGKILL"
    reply = serverstate.supervisor_send(s.state, "start-ganesha")
    assert reply["ok"] is True and reply["pid"] != s.pid, reply
    new = recorded(s.state, "ganesha")
    assert new[0] == reply["pid"] and running(*new)
    assert wait_until(s.answers, CMD_TIMEOUT), "the new ganesha does not serve"
    status = serverstate.supervisor_send(s.state, "status")
    assert status["children"]["ganesha"] == {"pid": new[0], "alive": True}, status
    assert status["pid"] == s.procs["supervisor"][0], status
    s.procs["ganesha"] = new
    log = (s.state / "log" / "supervisor.log").read_text()
    assert f"supervisor: ganesha {s.pid} exited (status 137)" in log, log


def test_refusals_without_nlm_or_smb(server):
    s = server("--no-nlm")
    assert serverstate.supervisor_send(s.state, "start-statd") == {"ok": False, "error": "NLM is off"}
    reply = serverstate.supervisor_send(s.state, "start-smbd")
    assert reply == {"ok": False, "error": "the server runs without --smb"}, reply
    proc = send_cli(s.state, "start-statd")
    assert proc.returncode == 1 and "NLM is off" in proc.stderr, proc
    assert json.loads(proc.stdout) == {"ok": False, "error": "NLM is off"}


def test_malformed_lines_get_errors_and_it_keeps_serving(server):
    s = server("--no-nlm")
    sup = s.procs["supervisor"]
    replies = raw_exchange(s.state, b"not json\n" b"[1, 2]\n" b'{"cmd": "rm -rf"}\n'
                           b'{"nocmd": 1}\n' b"\xff\xfe\n" b'{"cmd": "status"}\n')
    assert len(replies) == 6, replies
    assert [r["ok"] for r in replies] == [False] * 5 + [True], replies
    assert "not a JSON line" in replies[0]["error"]
    assert "unknown command 'rm -rf'" in replies[2]["error"]
    assert replies[5]["children"]["ganesha"]["alive"] is True

    # A line over the limit: an error, and that connection is closed.
    replies = raw_exchange(s.state, b"x" * (1 << 20))
    assert replies and replies[0]["ok"] is False and "longer than" in replies[0]["error"], replies
    # A client that connects and leaves without a word.
    serverstate.supervisor_connect(s.state, 5).close()

    assert running(*sup), "the supervisor died"
    assert serverstate.supervisor_send(s.state, "status")["ok"] is True
    assert s.answers()


def test_stop_command_tears_down(server):
    s = server("--fs", "tmpfs", "--no-nlm")
    sup = s.procs["supervisor"]
    assert serverstate.supervisor_send(s.state, "stop") == {"ok": True}
    assert wait_until(lambda: not running(*sup), CMD_TIMEOUT), "the supervisor did not exit"
    for name in ("ganesha", "rpcbind"):
        assert not running(*s.procs[name]), f"{name} still runs"
    log = (s.state / "log" / "supervisor.log").read_text()
    assert log.rstrip().endswith("supervisor: stopped"), log
    assert not (s.state / "run" / "supervisor.sock").exists()
