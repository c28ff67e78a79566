"""A slow, distant link between the clients and the embedded NFS server
(nfs-server.sh start/link --link delay=T,jitter=T,rate=R; vcluster.sh up
--link): behaviour checks with generous bounds, not benchmarks.

- Round trips: NFSv3 NULL calls over one TCP connection (a raw ONC RPC
  probe run inside the server's namespace, so the time is the network's
  and ganesha's, nothing else). No link: median < 5 ms; delay=10ms (each
  direction): 15..60 ms; `link --set delay=2.5ms` and `--clear` change the
  running server's link.
- Jitter: delay=10ms,jitter=5ms spreads the round trips (max - min > 2 ms)
  and reorders nothing: a 4 MiB read comes back intact and the kernel's
  TCPOFOQueue (out-of-order segments queued) does not grow.
- Rate: rate=50mbit: reading a 16 MiB file with nfs-cat runs at 0.3..1.3 x
  50 Mbit/s.
- Bad specs are refused with exit != 0 and one line, before anything starts.
- After stop (and vcluster down): the delayer's PID is gone, no process
  names the state directory, the host's iptables-save is unchanged.
- vcluster up --clients 2 --link delay=5ms: both client hosts see 8..40 ms.

Needs root, nfs-ganesha, libnfs-utils, iproute2 (tc), iptables and
herd-linkdelay (CMake target, needs libnetfilter-queue-dev; found beside
$HERD_BIN, or $HERD_LINKDELAY); skips with a message otherwise.
Run: HERD_BIN=build/herd /usr/bin/python3 -m pytest -q -rs -s tests/integration/test_link.py
"""

import hashlib
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path

import pytest

from test_nfs_server import SBIN_PATH, _why_skip

REPO_DIR = Path(__file__).resolve().parent.parent.parent
SCRIPT = REPO_DIR / "cluster-configs" / "local" / "nfs-server.sh"
VCLUSTER = REPO_DIR / "cluster-configs" / "virtual" / "vcluster.sh"
MIB = 1 << 20
CMD_TIMEOUT = 120

# NFSv3 NULL round trips over one connection: HOST PORT N -> N lines of ms.
PROBE = r"""
import socket, struct, sys, time
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.create_connection((host, port), timeout=20)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
def recv(k):
    b = b""
    while len(b) < k:
        c = s.recv(k - len(b))
        if not c:
            raise SystemExit("connection closed")
        b += c
    return b
for i in range(n + 1):
    xid = 0x4c000 + i
    body = struct.pack(">10I", xid, 0, 2, 100003, 3, 0, 0, 0, 0, 0)
    t = time.monotonic()
    s.sendall(struct.pack(">I", 0x80000000 | len(body)) + body)
    reply = recv(struct.unpack(">I", recv(4))[0] & 0x7fffffff)
    dt = (time.monotonic() - t) * 1000
    if struct.unpack(">III", reply[:12]) != (xid, 1, 0):
        raise SystemExit("bad reply")
    if i:  # the first call also pays for the connection
        print("%.3f" % dt)
"""


def _linkdelay():
    if os.environ.get("HERD_LINKDELAY"):
        return Path(os.environ["HERD_LINKDELAY"])
    if os.environ.get("HERD_BIN"):
        return Path(os.environ["HERD_BIN"]).resolve().parent / "herd-linkdelay"
    return REPO_DIR / "build" / "herd-linkdelay"


def _why_skip_link():
    why = _why_skip()
    if why:
        return why
    for tool, pkg in (("tc", "iproute2"), ("iptables", "iptables"),
                      ("iptables-save", "iptables"), ("nfs-cat", "libnfs-utils")):
        if shutil.which(tool, path=SBIN_PATH) is None:
            return f"{tool} not found (apt-get install {pkg})"
    if not os.access(_linkdelay(), os.X_OK):
        return (f"herd-linkdelay not built ({_linkdelay()}): apt-get install "
                "libnetfilter-queue-dev; cmake -DHERD_REQUIRE_NFQUEUE=ON; build target "
                "herd-linkdelay (or set HERD_LINKDELAY)")
    return None


pytestmark = pytest.mark.skipif(_why_skip_link() is not None, reason=_why_skip_link() or "")


def sh(*args, timeout=CMD_TIMEOUT, check=True):
    env = dict(os.environ, PATH=SBIN_PATH, HERD_LINKDELAY=str(_linkdelay()))
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} failed ({proc.returncode}):\n"
                             f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


def server(*args, check=True):
    return sh("bash", SCRIPT, *args, check=check)


def iptables_save():
    # Counters and the generated-by comment change by themselves.
    out = sh("iptables-save").stdout
    return [line for line in out.splitlines() if not line.startswith(("#", ":"))]


def recorded_pid(state, name):
    f = state / "pid" / name
    return int(f.read_text().split()[0]) if f.exists() else None


def pid_gone(pid, seconds=5.0):
    """The process is gone or a zombie (dead, not yet reaped by init)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            return True
        if stat.rsplit(")", 1)[1].split()[0] in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def processes_naming(text):
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and d.name != str(os.getpid()):
            try:
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if text in cmd and state not in ("Z", "X"):
                found.append(f"{d.name}: {cmd}")
    return found


def rtts(state, n=20):
    out = server("exec", "--state", state, "--", "/usr/bin/python3", "-c", PROBE,
                 "127.0.0.1", "2049", n).stdout
    return [float(x) for x in out.split()]


def ofo_queued(state):
    """TcpExt TCPOFOQueue of the server's namespace (client and server)."""
    out = server("exec", "--state", state, "--", "cat", "/proc/net/netstat").stdout.splitlines()
    for names, values in zip(out[::2], out[1::2]):
        if names.startswith("TcpExt:"):
            return int(dict(zip(names.split(), values.split()))["TCPOFOQueue"])
    raise AssertionError("no TcpExt in /proc/net/netstat")


def nfs_read(state, name):
    url = f"nfs://127.0.0.1{state}/export/{name}?version=3"
    t0 = time.monotonic()
    proc = subprocess.run(["bash", str(SCRIPT), "exec", "--state", str(state), "--",
                           "nfs-cat", url], capture_output=True, timeout=CMD_TIMEOUT,
                          env=dict(os.environ, PATH=SBIN_PATH))
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return proc.stdout, time.monotonic() - t0


def assert_nothing_left(state, delayer_pids, ipt_before):
    for pid in delayer_pids:
        assert pid_gone(pid), f"herd-linkdelay {pid} still runs"
    left = processes_naming(str(state))
    assert not left, f"processes naming {state} left: {left}"
    assert iptables_save() == ipt_before, "the host's iptables changed"


@pytest.fixture
def state(tmp_path):
    s = tmp_path / "srv"
    yield s
    if s.exists():
        server("stop", "--state", s, "--purge", check=False)


# ---------------------------------------------------------------- tests


@pytest.mark.parametrize("spec", ["", "delay=20", "delay=20ms,delay=3ms", "foo=1ms",
                                  "rate=5", "rate=1kbit", "delay=11s", "delay=20ms,",
                                  "delay=-1ms", "20ms"])
def test_bad_spec_refused(state, spec):
    proc = server("start", "--state", state, "--no-nlm", "--link", spec, check=False)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--link" in lines[0], proc.stderr
    assert not state.exists(), "a refused start made its state directory"


def test_delay_jitter_set_clear_stop(state):
    ipt_before = iptables_save()
    # No link first: the baseline.
    server("start", "--state", state, "--no-nlm")
    base = statistics.median(rtts(state))
    print(f"\nno link: median RTT {base:.3f} ms")
    assert base < 5
    assert "link=none" in server("status", "--state", state).stdout
    server("stop", "--state", state)

    server("start", "--state", state, "--no-nlm", "--link", "Delay=10ms")
    delayers = [recorded_pid(state, "linkdelay")]
    st = server("status", "--state", state).stdout
    assert "link=delay=10ms" in st and "linkdelay=" in st, st
    env = server("exec", "--state", state, "--", "env").stdout
    assert "HERD_LINK=delay=10ms" in env.splitlines()
    r10 = rtts(state)
    print(f"delay=10ms: median RTT {statistics.median(r10):.3f} ms "
          f"(min {min(r10):.3f}, max {max(r10):.3f})")
    assert 15 <= statistics.median(r10) <= 60

    server("link", "--state", state, "--set", "delay=2.5ms")
    delayers.append(recorded_pid(state, "linkdelay"))
    assert pid_gone(delayers[0]), "the old delayer survived link --set"
    r25 = statistics.median(rtts(state))
    print(f"delay=2.5ms: median RTT {r25:.3f} ms")
    assert 4 <= r25 <= 20

    data = os.urandom(4 * MIB)
    (state / "export" / "f4").write_bytes(data)
    server("link", "--state", state, "--set", "delay=10ms,jitter=5ms")
    delayers.append(recorded_pid(state, "linkdelay"))
    rj = rtts(state, 30)
    ofo0 = ofo_queued(state)
    got, secs = nfs_read(state, "f4")
    ofo1 = ofo_queued(state)
    print(f"delay=10ms,jitter=5ms: RTT min {min(rj):.3f} median {statistics.median(rj):.3f} "
          f"max {max(rj):.3f} ms; 4 MiB read {secs:.2f} s, TCPOFOQueue +{ofo1 - ofo0}")
    assert max(rj) - min(rj) > 2
    assert 15 <= statistics.median(rj) <= 60
    assert hashlib.md5(got).digest() == hashlib.md5(data).digest()
    assert ofo1 == ofo0, "jitter reordered TCP segments"

    server("link", "--state", state, "--clear")
    assert pid_gone(delayers[-1])
    assert "link=none" in server("status", "--state", state).stdout
    rc = statistics.median(rtts(state))
    print(f"cleared: median RTT {rc:.3f} ms")
    assert rc < 5
    rules = server("exec", "--state", state, "--", "iptables", "-S").stdout
    assert "NFQUEUE" not in rules and "HERD_LINK" not in rules, rules

    server("link", "--state", state, "--set", "delay=5ms")
    delayers.append(recorded_pid(state, "linkdelay"))
    server("stop", "--state", state, "--purge")
    assert_nothing_left(state, delayers, ipt_before)


def test_rate_cap(state):
    ipt_before = iptables_save()
    server("start", "--state", state, "--no-nlm", "--link", "rate=50mbit")
    qdisc = server("exec", "--state", state, "--", "tc", "qdisc", "show", "dev", "lo").stdout
    assert "tbf" in qdisc and "50Mbit" in qdisc, qdisc
    data = os.urandom(16 * MIB)
    (state / "export" / "f16").write_bytes(data)
    got, secs = nfs_read(state, "f16")
    assert got == data
    mbit = len(data) * 8 / secs / 1e6
    print(f"\nrate=50mbit: 16 MiB read in {secs:.2f} s = {mbit:.1f} Mbit/s")
    assert 50 * 0.3 <= mbit <= 50 * 1.3
    server("link", "--state", state, "--clear")
    qdisc = server("exec", "--state", state, "--", "tc", "qdisc", "show", "dev", "lo").stdout
    assert "tbf" not in qdisc, qdisc
    _, fast = nfs_read(state, "f16")
    print(f"cleared: 16 MiB read in {fast:.2f} s")
    assert fast < secs / 2
    server("stop", "--state", state, "--purge")
    assert_nothing_left(state, [], ipt_before)


def test_vcluster_link(tmp_path):
    if shutil.which("mpirun") is None:
        pytest.skip("vcluster.sh needs OpenMPI (mpirun)")
    st = tmp_path / "vc"
    ipt_before = iptables_save()
    try:
        sh("bash", VCLUSTER, "up", "--state", st, "--clients", 2, "--server-fs", "dir",
           "--link", "delay=5ms", timeout=300)
        assert "link=delay=5ms" in sh("bash", VCLUSTER, "status", "--state", st).stdout
        delayer = recorded_pid(st / "server", "linkdelay")
        assert delayer and not pid_gone(delayer, 0)
        hosts = {line.split()[0]: line.split()[1]
                 for line in (st / "hosts").read_text().splitlines()}
        for name in ("c01", "c02"):
            out = sh("nsenter", "-t", hosts[name], "--net", "--", "/usr/bin/python3", "-c",
                     PROBE, "10.77.0.2", "2049", 20).stdout
            med = statistics.median(float(x) for x in out.split())
            print(f"\nvcluster {name} -> srv, delay=5ms: median RTT {med:.3f} ms")
            assert 8 <= med <= 40
    finally:
        sh("bash", VCLUSTER, "down", "--state", st, timeout=300, check=False)
    assert not st.exists()
    assert_nothing_left(st, [delayer], ipt_before)
