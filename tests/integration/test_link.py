"""A slow, distant link between the clients and the embedded NFS server
(nfs-server.sh start/link --link delay=T,jitter=T,rate=R; vcluster.sh up
--link): behaviour checks with bounds taken from the configured link and
from what is measured, not benchmarks.

- Round trips: NFSv3 NULL calls over one TCP connection (a raw ONC RPC
  probe run inside the server's namespace, so the time is the network's
  and ganesha's, nothing else). Each direction is delayed once: no round
  trip is shorter than 2 x delay, and the shortest of them is below
  3 x delay (halfway to a link that delays each direction twice); a busy
  machine only adds time, and the shortest of many round trips is the one
  it spared. delay=10ms, then `link --set delay=2.5ms` (now below the
  10 ms link's least: it was replaced, not stacked) and `--clear` (below
  the least the link before could give) change the running server's link.
- Jitter: delay=10ms,jitter=5ms: no round trip under 2 x (delay - jitter),
  the shortest at most 2 x delay, a spread over the jitter, and nothing
  reordered: a 4 MiB read comes back intact and the kernel's TCPOFOQueue
  (out-of-order segments queued) does not grow.
- delay=200ms (with smbd too): start, status, restart-ganesha and
  restart-smbd wait for the server to answer over the link (their probes
  take 16-17 round trips: 6.5 s, over a fixed 5 s timeout before); a NULL
  round trip takes 400..600 ms; status reads back the delayer's delay.
- Rate: rate=50mbit: reading a 16 MiB file with nfs-cat takes at least
  what tbf lets through (16 MiB less its burst at 50 Mbit/s), and at most
  twice that beyond the same read's time once the link is cleared; the
  cleared read beats the cap. rate=10gbit and 100gbit (the largest) are
  what tc applies and status reads back; above 100gbit (even a rate too
  large for 64-bit integers) is refused with one line.
- Bad specs are refused with exit != 0 and one line, before anything starts.
- After stop (and vcluster down): the delayer's PID is gone, no process
  names the state directory, the host's iptables-save is unchanged.
- vcluster up --clients 2 --link delay=5ms,rate=10gbit: status reads back
  the delayer and both tbfs (the server's eth0, the switch port towards
  it) at 10Gbit; both client hosts see each direction delayed once (the
  bounds above).

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

from conftest import proc_cmdlines
from test_nfs_server import SBIN_PATH, _why_skip
from test_smb_server import _why_skip as _why_skip_smb

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
                "libnetfilter-queue-dev; cmake -DHERD_WITH_NFQUEUE=ON; build target "
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


def pid_gone(pid):
    """The process is gone or a zombie (dead, not yet reaped by init): what
    the script's stop and link leave of a process they stopped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):  # (reaped before or during the read)
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def processes_naming(text):
    found = []
    for pid, raw in proc_cmdlines().items():
        cmd = raw.replace(b"\0", b" ").decode(errors="replace")
        if pid != os.getpid() and text in cmd and not pid_gone(pid):
            found.append(f"{pid}: {cmd}")
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


def assert_delayed_once(r, delay_ms):
    """Round trips r (ms) over a link that delays each direction once by
    delay_ms: none under 2 x delay, the shortest under 3 x delay (halfway
    to a link that delays each direction twice)."""
    assert 2 * delay_ms <= min(r) < 3 * delay_ms, \
        f"delay={delay_ms}ms: round trips {min(r):.3f}..{max(r):.3f} ms"


def status(state):
    """nfs-server.sh status as a dict."""
    out = server("status", "--state", state).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def tc_qdiscs(state):
    return server("exec", "--state", state, "--", "tc", "qdisc", "show", "dev", "lo").stdout


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
                                  "delay=-1ms", "20ms", "rate=101gbit", "rate=100.000000001gbit",
                                  "rate=99999999999999999999gbit"])
def test_bad_spec_refused(state, spec):
    proc = server("start", "--state", state, "--no-nlm", "--link", spec, check=False)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--link" in lines[0], proc.stderr
    assert not state.exists(), "a refused start made its state directory"


def test_delay_jitter_set_clear_stop(state):
    ipt_before = iptables_save()
    # No link first: the baseline, below what any link of this test adds.
    server("start", "--state", state, "--no-nlm")
    base = rtts(state)
    print(f"\nno link: median RTT {statistics.median(base):.3f} ms (min {min(base):.3f})")
    assert min(base) < 2 * 2.5
    kv = status(state)
    assert kv["link"] == "none" and kv["link_applied"] == "none", kv
    server("stop", "--state", state)

    server("start", "--state", state, "--no-nlm", "--link", "Delay=10ms")
    delayers = [recorded_pid(state, "linkdelay")]
    kv = status(state)
    assert kv["link"] == "delay=10ms" and "linkdelay" in kv, kv
    assert kv["link_applied"] == f"delay 10ms (herd-linkdelay pid {delayers[0]})", kv
    env = server("exec", "--state", state, "--", "env").stdout
    assert "HERD_LINK=delay=10ms" in env.splitlines()
    r10 = rtts(state)
    print(f"delay=10ms: median RTT {statistics.median(r10):.3f} ms "
          f"(min {min(r10):.3f}, max {max(r10):.3f})")
    assert_delayed_once(r10, 10)

    server("link", "--state", state, "--set", "delay=2.5ms")
    delayers.append(recorded_pid(state, "linkdelay"))
    assert pid_gone(delayers[0]), "the old delayer survived link --set"
    r25 = rtts(state)
    print(f"delay=2.5ms: median RTT {statistics.median(r25):.3f} ms (min {min(r25):.3f})")
    assert 2 * 2.5 <= min(r25) < 2 * 10, "not the 2.5 ms link alone"

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
    assert 2 * (10 - 5) <= min(rj) <= 2 * 10, rj
    assert max(rj) - min(rj) > 5, rj
    assert hashlib.md5(got).digest() == hashlib.md5(data).digest()
    assert ofo1 == ofo0, "jitter reordered TCP segments"

    server("link", "--state", state, "--clear")
    assert pid_gone(delayers[-1])
    kv = status(state)
    assert kv["link"] == "none" and kv["link_applied"] == "none", kv
    rc = rtts(state)
    print(f"cleared: median RTT {statistics.median(rc):.3f} ms (min {min(rc):.3f})")
    assert min(rc) < 2 * (10 - 5), "still delayed"
    rules = server("exec", "--state", state, "--", "iptables", "-S").stdout
    assert "NFQUEUE" not in rules and "HERD_LINK" not in rules, rules

    server("link", "--state", state, "--set", "delay=5ms")
    delayers.append(recorded_pid(state, "linkdelay"))
    server("stop", "--state", state, "--purge")
    assert_nothing_left(state, delayers, ipt_before)


def test_rate_cap(state):
    ipt_before = iptables_save()
    rate = 50e6
    server("start", "--state", state, "--no-nlm", "--link", "rate=50mbit")
    qdisc = tc_qdiscs(state)
    assert "tbf" in qdisc and "50Mbit" in qdisc, qdisc
    data = os.urandom(16 * MIB)
    (state / "export" / "f16").write_bytes(data)
    got, secs = nfs_read(state, "f16")
    assert got == data
    server("link", "--state", state, "--clear")
    qdisc = tc_qdiscs(state)
    assert "tbf" not in qdisc, qdisc
    _, fast = nfs_read(state, "f16")
    # tbf lets through at most its burst (nfs-server.sh: 256 KB or 10 ms
    # of the rate) plus the rate; the bytes on the wire are more than the
    # file's. So no read can be quicker than this:
    least = (len(data) - max(256 * 1024, rate / 8 / 100)) * 8 / rate
    print(f"\nrate=50mbit: 16 MiB read in {secs:.2f} s = {len(data) * 8 / secs / 1e6:.1f} "
          f"Mbit/s (tbf's least {least:.2f} s); cleared: {fast:.2f} s")
    assert secs >= least
    assert secs < 2 * len(data) * 8 / rate + fast, "the link ran at under half its rate"
    assert fast < least, "still capped after link --clear"
    server("stop", "--state", state, "--purge")
    assert_nothing_left(state, [], ipt_before)


def test_rate_10gbit_and_the_largest_applied(state):
    """Rates beyond 2^31 bit/s reach tc whole (awk's %d once made 10gbit
    2147Mbit while status said 10gbit); status reads back what tc applied;
    100gbit is the largest, anything above is refused with one line and
    leaves the link as it was."""
    server("start", "--state", state, "--no-nlm", "--link", "rate=10gbit")
    assert " rate 10Gbit " in tc_qdiscs(state)
    assert status(state)["link_applied"] == "rate 10Gbit (tbf on lo)"
    server("link", "--state", state, "--set", "rate=100gbit")
    assert " rate 100Gbit " in tc_qdiscs(state)
    assert status(state)["link_applied"] == "rate 100Gbit (tbf on lo)"
    for spec in ("rate=100.001gbit", "rate=18446744073709551617gbit"):
        proc = server("link", "--state", state, "--set", spec, check=False)
        assert proc.returncode != 0
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "outside 8kbit..100gbit" in lines[0], proc.stderr
    kv = status(state)
    assert kv["link"] == "rate=100gbit" and kv["link_applied"] == "rate 100Gbit (tbf on lo)", kv


def test_delay_200ms(state):
    """A link of 200 ms each way: every readiness probe (16-17 round trips)
    takes longer than the 5 s it once had; start, status and the restarts
    wait for it, NFS and SMB both."""
    why = _why_skip_smb()
    if why:
        pytest.skip(why)
    ipt_before = iptables_save()
    server("start", "--state", state, "--no-nlm", "--smb", "--link", "delay=200ms")
    delayer = recorded_pid(state, "linkdelay")
    kv = status(state)
    assert kv["state"] == "running" and kv["answers"] == "yes" and kv["smb_answers"] == "yes", kv
    assert kv["link_applied"] == f"delay 200ms (herd-linkdelay pid {delayer})", kv
    r = rtts(state, 5)
    print(f"\ndelay=200ms: RTT {', '.join(f'{x:.1f}' for x in r)} ms")
    assert_delayed_once(r, 200)
    for cmd in ("restart-ganesha", "restart-smbd"):
        proc = server(cmd, "--state", state, check=False)
        assert proc.returncode == 0, f"{cmd} over delay=200ms failed:\n{proc.stderr}"
    server("stop", "--state", state, "--purge")
    assert_nothing_left(state, [delayer], ipt_before)


def test_vcluster_link(tmp_path):
    if shutil.which("mpirun") is None:
        pytest.skip("vcluster.sh needs OpenMPI (mpirun)")
    st = tmp_path / "vc"
    ipt_before = iptables_save()
    try:
        sh("bash", VCLUSTER, "up", "--state", st, "--clients", 2, "--server-fs", "dir",
           "--link", "delay=5ms,rate=10gbit", timeout=300)
        delayer = recorded_pid(st / "server", "linkdelay")
        assert delayer and not pid_gone(delayer)
        out = sh("bash", VCLUSTER, "status", "--state", st).stdout
        kv = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        assert kv["link"] == "delay=5ms,rate=10gbit", out
        assert kv["link_applied"] == (f"delay 5ms (herd-linkdelay pid {delayer}); "
                                      "rate 10Gbit (tbf on eth0); rate 10Gbit (tbf on v-srv)"), out
        hosts = {line.split()[0]: line.split()[1]
                 for line in (st / "hosts").read_text().splitlines()}
        for name in ("c01", "c02"):
            out = sh("nsenter", "-t", hosts[name], "--net", "--", "/usr/bin/python3", "-c",
                     PROBE, "10.77.0.2", "2049", 20).stdout
            r = [float(x) for x in out.split()]
            print(f"\nvcluster {name} -> srv, delay=5ms,rate=10gbit: median RTT {statistics.median(r):.3f} "
                  f"ms (min {min(r):.3f})")
            assert_delayed_once(r, 5)
    finally:
        sh("bash", VCLUSTER, "down", "--state", st, timeout=300, check=False)
    assert not st.exists()
    assert_nothing_left(st, [delayer], ipt_before)
