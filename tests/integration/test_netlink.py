"""cluster-configs/local/netlink.py: the --link emulation of the embedded
NFS server (a slow, distant link: delay, jitter, rate).

- parse: every message for a bad spec, normalization (lower case, keys in
  the order delay, jitter, rate), the limits (10 s; 8kbit..100gbit, with
  rounding at the edges; no overflow: 10gbit is 10^10 bit/s, not 2147
  Mbit, and a rate too large for 64 bits is refused); us_text; tbf_args
  (a burst of 10 ms at the rate, at least 256 KB); probe_timeout and
  current from STATE/link; check_tools' messages; the HERD_LINKDELAY and
  HERD_LINK_NETEM settings.
- knfsd (the guest's agent faked): the tc commands apply sends to the
  guest, in order; clear; applied; an agent that does not answer, a tc
  that fails in the guest.
- As root where tc exists (skipped otherwise): qdisc_set / qdisc_applied /
  qdisc_clear on lo of a network namespace the test makes (an `unshare
  --net sleep` child, killed by its PID afterwards), and apply / clear /
  applied of a ganesha server (a fake ctx whose supervisor is that
  namespace's process): rate only; a device that is missing (nothing is
  left); clear with parts already gone. Where iptables' NFQUEUE works in a
  namespace, also the delay without netem: herd-linkdelay (a fake that
  records its arguments), the iptables rules, in the server's namespace
  or another one (link-where), and a delayer that does not start.
Nothing touches the host's network: every tc and iptables command runs in
a namespace the test made.

Run: /usr/bin/python3 -m pytest -q -rs tests/integration/test_netlink.py
"""

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO_DIR = Path(__file__).resolve().parent.parent.parent
LOCAL_DIR = REPO_DIR / "cluster-configs" / "local"
sys.path.insert(0, str(LOCAL_DIR))
import netlink  # noqa: E402 (after its path)
from procinfo import proc_stat, running, wait_until  # noqa: E402
SBIN_PATH = os.environ.get("PATH", "") + ":/usr/local/sbin:/usr/sbin:/sbin"
CMD_TIMEOUT = 30


# ---------------------------------------------------------------- parse


@pytest.mark.parametrize("spec, message", [
    ("", "--link: empty (delay=T,jitter=T,rate=R, any of them)"),
    ("delay", "--link: 'delay' is not KEY=VALUE (delay=T,jitter=T,rate=R)"),
    ("delay=", "--link: 'delay=' is not KEY=VALUE (delay=T,jitter=T,rate=R)"),
    (",", "--link: '' is not KEY=VALUE (delay=T,jitter=T,rate=R)"),
    (",delay=1ms", "--link: '' is not KEY=VALUE (delay=T,jitter=T,rate=R)"),
    ("delay=1ms,,rate=8mbit", "--link: '' is not KEY=VALUE (delay=T,jitter=T,rate=R)"),
    ("delay=1ms,", "--link: empty item in 'delay=1ms,'"),
    ("Delay=1MS,", "--link: empty item in 'Delay=1MS,'"),
    ("loss=1%", "--link: unknown key 'loss' (delay, jitter, rate)"),
    ("=1ms", "--link: unknown key '' (delay, jitter, rate)"),
    (" delay=1ms", "--link: unknown key ' delay' (delay, jitter, rate)"),
    ("delay=1ms,delay=2ms", "--link: delay given twice"),
    ("jitter=1ms,JITTER=1ms", "--link: jitter given twice"),
    ("rate=1mbit,rate=2mbit", "--link: rate given twice"),
    ("delay=20", "--link delay: '20' is not a time (a number with us, ms or s: 20ms)"),
    ("delay=.5ms", "--link delay: '.5ms' is not a time (a number with us, ms or s: 20ms)"),
    ("delay=-1ms", "--link delay: '-1ms' is not a time (a number with us, ms or s: 20ms)"),
    ("delay=1ms=2", "--link delay: '1ms=2' is not a time (a number with us, ms or s: 20ms)"),
    ("jitter=1min", "--link jitter: '1min' is not a time (a number with us, ms or s: 20ms)"),
    ("delay=1ms\nrate=1mbit", "--link delay: '1ms\nrate=1mbit' is not a time"
     " (a number with us, ms or s: 20ms)"),
    ("delay=10.000001s", "--link delay: '10.000001s' is longer than 10 s"),
    ("delay=10000001us", "--link delay: '10000001us' is longer than 10 s"),
    ("jitter=99999999999999999999s", "--link jitter: '99999999999999999999s' is longer than 10 s"),
    ("rate=8mbps", "--link rate: '8mbps' is not a rate (a number with kbit, mbit or gbit: 8mbit)"),
    ("rate=1e6kbit",
     "--link rate: '1e6kbit' is not a rate (a number with kbit, mbit or gbit: 8mbit)"),
    ("rate=7kbit", "--link rate: '7kbit' is outside 8kbit..100gbit"),
    ("rate=7.9994kbit", "--link rate: '7.9994kbit' is outside 8kbit..100gbit"),
    ("rate=0gbit", "--link rate: '0gbit' is outside 8kbit..100gbit"),
    ("rate=101gbit", "--link rate: '101gbit' is outside 8kbit..100gbit"),
    ("rate=100.0000000005gbit", "--link rate: '100.0000000005gbit' is outside 8kbit..100gbit"),
    # (beyond 64-bit integers: refused, not wrapped round)
    ("rate=18446744073709551617gbit",
     "--link rate: '18446744073709551617gbit' is outside 8kbit..100gbit"),
    # (the first bad item is reported)
    ("delay=bad,loss=1", "--link delay: 'bad' is not a time (a number with us, ms or s: 20ms)"),
])
def test_parse_refuses_with_one_line(spec, message):
    with pytest.raises(netlink.LinkError) as e:
        netlink.parse(spec)
    assert str(e.value) == message


@pytest.mark.parametrize("spec, normalized, delay, jitter, rate", [
    ("delay=20ms", "delay=20ms", 20_000, 0, 0),
    ("RATE=8Mbit,Jitter=2MS,delay=20ms", "delay=20ms,jitter=2ms,rate=8mbit",
     20_000, 2_000, 8_000_000),
    ("rate=10gbit", "rate=10gbit", 0, 0, 10_000_000_000),
    ("rate=100gbit", "rate=100gbit", 0, 0, 100_000_000_000),
    ("rate=8kbit", "rate=8kbit", 0, 0, 8_000),
    ("rate=7.9995kbit", "rate=7.9995kbit", 0, 0, 8_000),     # (rounded half up)
    ("rate=100.0000000004gbit", "rate=100.0000000004gbit", 0, 0, 100_000_000_000),
    ("rate=1.5mbit", "rate=1.5mbit", 0, 0, 1_500_000),
    ("delay=10s", "delay=10s", 10_000_000, 0, 0),
    ("delay=10000000us", "delay=10000000us", 10_000_000, 0, 0),
    ("delay=10.0000004s", "delay=10.0000004s", 10_000_000, 0, 0),
    ("delay=2.5ms,jitter=0.5us", "delay=2.5ms,jitter=0.5us", 2_500, 1, 0),
    ("delay=020ms", "delay=020ms", 20_000, 0, 0),            # (as written)
    ("delay=0ms", "delay=0ms", 0, 0, 0),
    ("jitter=3ms", "jitter=3ms", 0, 3_000, 0),
])
def test_parse_normalizes(spec, normalized, delay, jitter, rate):
    link = netlink.parse(spec)
    assert link == netlink.Link(normalized, delay, jitter, rate)
    assert link.round_trip_us() == 2 * (delay + jitter)
    assert link.wants_delay() == bool(delay or jitter)


@pytest.mark.parametrize("us, text", [
    (0, "0us"), (1, "1us"), (2500, "2500us"), (1000, "1ms"), (200_000, "200ms"),
    (1_500_000, "1500ms"), (1_000_000, "1s"), (10_000_000, "10s")])
def test_us_text(us, text):
    assert netlink.us_text(us) == text


def test_tbf_args_burst_is_10ms_of_the_rate_at_least_256kb():
    assert netlink.tbf_args(netlink.parse("delay=5ms")) == []
    tbf = ["tbf", "rate", "8000000bit", "burst", "262144", "latency", "100ms"]
    assert netlink.tbf_args(netlink.parse("rate=8mbit")) == tbf
    # 10 ms at 209.7152 mbit is exactly 256 KiB; above, the burst grows.
    assert netlink.tbf_args(netlink.parse("rate=209mbit"))[4] == "262144"
    assert netlink.tbf_args(netlink.parse("rate=1gbit"))[4] == "1250000"
    assert netlink.tbf_args(netlink.parse("rate=100gbit")) == [
        "tbf", "rate", "100000000000bit", "burst", "125000000", "latency", "100ms"]


# ---------------------------------------------------------------- a fake ctx


class FakeServer:
    """The ctx netlink.py works with: records in STATE/pid ("PID START"),
    processes stopped by PID and start time."""

    def __init__(self, state, server="ganesha"):
        self.state = state
        self.server = server
        self.start_timeout = 1
        self.logged = []
        for d in ("conf", "pid", "run", "log"):
            (state / d).mkdir(parents=True, exist_ok=True)

    def log(self, msg):
        self.logged.append(msg)

    def _record(self, name):
        try:
            pid, start = (self.state / "pid" / name).read_text().split()
            return int(pid), int(start)
        except (OSError, ValueError):
            return None

    def recorded(self, name):
        rec = self._record(name)
        return rec[0] if rec else None

    def alive(self, name):
        rec = self._record(name)
        return rec is not None and running(*rec)

    def record(self, name, pid):
        st = proc_stat(pid)
        (self.state / "pid" / name).write_text(f"{pid} {st[1] if st else 0}\n")

    def terminate(self, name, seconds):
        rec = self._record(name)
        if rec is None or not running(*rec):
            return
        for sig in (signal.SIGTERM, signal.SIGCONT):
            os.kill(rec[0], sig)
        if not wait_until(lambda: not running(*rec), seconds, 0.02):
            os.kill(rec[0], signal.SIGKILL)
            wait_until(lambda: not running(*rec), 5, 0.02)


class FakeGuest(FakeServer):
    """A knfsd server whose guest's agent is faked: it notes every command
    and answers `exec` with "exit 0" (or "exit 2" for the commands in
    fail), `tc qdisc show` with the lines in qdiscs."""

    def __init__(self, state):
        super().__init__(state, "knfsd")
        self.uml = True
        self.ready = True
        self.calls = []
        self.fail = set()
        self.qdiscs = {"eth0": "", "ifb0": ""}

    def alive(self, name):
        return self.uml if name == "uml" else super().alive(name)

    def knfsd_ready(self):
        return self.ready

    def knfsd_agent(self, *argv):
        self.calls.append(" ".join(argv))
        if argv[:4] == ("exec", "tc", "qdisc", "show"):
            return 0, self.qdiscs[argv[-1]] + "exit 0\n", ""
        if " ".join(argv) in self.fail:
            return 0, "Error: no such qdisc\nexit 2\n", "agent: tc failed\n"
        return 0, "exit 0\n", ""


# ---------------------------------------------------------------- not root


def test_current_and_probe_timeout(tmp_path):
    srv = FakeServer(tmp_path)
    assert netlink.current(srv) == "none"
    assert netlink.probe_timeout(srv) == netlink.PROBE_TIMEOUT
    (tmp_path / "link").write_text("delay=200ms\n")
    assert netlink.current(srv) == "delay=200ms"
    # 20 round trips of 400 ms
    assert netlink.probe_timeout(srv) == 5 + 8
    (tmp_path / "link").write_text("delay=10ms,jitter=0.1ms\n")
    assert netlink.probe_timeout(srv) == 5 + 1        # (0.404 s, rounded up)
    (tmp_path / "link").write_text("")
    assert netlink.current(srv) == "none"
    # A spec that is not one: its line is logged, no round trips.
    (tmp_path / "link").write_text("delay=fast\n")
    assert netlink.probe_timeout(srv) == 5
    assert srv.logged == ["--link delay: 'fast' is not a time (a number with us, ms or s: 20ms)"]
    assert netlink.applied(srv) == "none"   # (nothing runs)


@pytest.fixture
def netem_probe():
    """netem_works probes again in the test, and after it."""
    netlink.netem_works.cache_clear()
    yield
    netlink.netem_works.cache_clear()


def test_herd_link_netem_0_means_no_netem(monkeypatch, netem_probe):
    monkeypatch.setenv("HERD_LINK_NETEM", "0")
    assert netlink.netem_works() is False


def _tool(directory, name):
    path = directory / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_check_tools_messages(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(netlink, "netem_works", lambda: False)
    monkeypatch.setattr(netlink, "LINKDELAY", str(tmp_path / "missing" / "herd-linkdelay"))
    rate, delay = netlink.parse("rate=8mbit"), netlink.parse("jitter=1ms")
    with pytest.raises(netlink.LinkError, match=r"^--link: tc not found \(package iproute2\)$"):
        netlink.check_tools(rate, "ganesha")
    with pytest.raises(netlink.LinkError, match=r"^--link: tc not found \(package iproute2\)$"):
        netlink.check_tools(delay, "knfsd")
    _tool(tmp_path, "tc")
    netlink.check_tools(rate, "ganesha")
    netlink.check_tools(delay, "knfsd")        # (the guest has netem)
    with pytest.raises(netlink.LinkError) as e:
        netlink.check_tools(delay, "ganesha")
    assert str(e.value) == ("--link: no netem in this kernel and iptables not found"
                            " (package iptables)")
    _tool(tmp_path, "iptables")
    with pytest.raises(netlink.LinkError) as e:
        netlink.check_tools(delay, "ganesha")
    assert str(e.value) == (
        f"--link: no netem in this kernel and {tmp_path}/missing/herd-linkdelay is missing: "
        "build it (libnetfilter-queue-dev; cmake -DHERD_WITH_NFQUEUE=ON, target herd-linkdelay) "
        "or set HERD_LINKDELAY")
    monkeypatch.setattr(netlink, "LINKDELAY", str(_tool(tmp_path, "herd-linkdelay")))
    netlink.check_tools(delay, "ganesha")
    monkeypatch.setattr(netlink, "LINKDELAY", str(tmp_path / "missing" / "herd-linkdelay"))
    monkeypatch.setattr(netlink, "netem_works", lambda: True)
    netlink.check_tools(delay, "ganesha")


@pytest.mark.parametrize("value, expected", [
    (None, str(REPO_DIR / "build" / "herd-linkdelay")),
    ("", str(REPO_DIR / "build" / "herd-linkdelay")),
    ("./tools/herd-linkdelay", "./tools/herd-linkdelay")])
def test_linkdelay_path(value, expected):
    env = {k: v for k, v in os.environ.items() if k != "HERD_LINKDELAY"}
    if value is not None:
        env["HERD_LINKDELAY"] = value
    out = subprocess.run([sys.executable, "-c", "import netlink; print(netlink.LINKDELAY)"],
                         cwd=LOCAL_DIR, env=env, capture_output=True, text=True,
                         timeout=CMD_TIMEOUT, check=True).stdout
    assert out == expected + "\n"


# ---------------------------------------------------------------- knfsd's guest


def test_knfsd_apply_sends_the_guest_its_qdiscs(tmp_path):
    guest = FakeGuest(tmp_path)
    guest.qdiscs = {
        "eth0": "qdisc netem 1: root refcnt 2 limit 100000 delay 10ms  2ms\n"
                "qdisc tbf 10: parent 1:1 rate 8Mbit burst 256Kb lat 100ms \n"
                "qdisc ingress ffff: parent ffff:fff1 ---------------- \n",
        "ifb0": "qdisc netem 1: root refcnt 2 limit 100000 delay 10ms  2ms\n"
                "qdisc tbf 10: parent 1:1 rate 8Mbit burst 256Kb lat 100ms \n"}
    assert netlink.apply(guest, netlink.parse("rate=8mbit,delay=10ms,jitter=2ms"))
    tbf = "tbf rate 8000000bit burst 262144 latency 100ms"
    assert guest.calls == [
        "exec tc qdisc del dev eth0 root",
        "exec tc qdisc del dev eth0 ingress",
        "exec tc qdisc del dev ifb0 root",
        "exec ip link set ifb0 up",
        "exec tc qdisc add dev eth0 root handle 1: netem delay 10000us 2000us limit 100000",
        f"exec tc qdisc add dev eth0 parent 1:1 handle 10: {tbf}",
        "exec tc qdisc add dev eth0 handle ffff: ingress",
        "exec tc filter add dev eth0 parent ffff: matchall action mirred egress redirect dev ifb0",
        "exec tc qdisc add dev ifb0 root handle 1: netem delay 10000us 2000us limit 100000",
        f"exec tc qdisc add dev ifb0 parent 1:1 handle 10: {tbf}",
        "exec tc qdisc show dev eth0",
        "exec tc qdisc show dev ifb0"]
    applied = ("eth0: netem 1: root refcnt 2 limit 100000 delay 10ms  2ms; "
               "eth0: tbf 10: parent 1:1 rate 8Mbit burst 256Kb lat 100ms; "
               "ifb0: netem 1: root refcnt 2 limit 100000 delay 10ms  2ms; "
               "ifb0: tbf 10: parent 1:1 rate 8Mbit burst 256Kb lat 100ms")
    assert guest.logged == [f"link: delay=10ms,jitter=2ms,rate=8mbit; applied: {applied}"]
    assert (tmp_path / "link").read_text() == "delay=10ms,jitter=2ms,rate=8mbit\n"
    assert netlink.current(guest) == "delay=10ms,jitter=2ms,rate=8mbit"
    assert netlink.applied(guest) == applied
    assert netlink.probe_timeout(guest) == 5 + 1

    guest.calls.clear()
    assert netlink.apply(guest, netlink.parse("rate=1gbit"))
    assert guest.calls[3:7] == [
        "exec ip link set ifb0 up",
        "exec tc qdisc add dev eth0 root tbf rate 1000000000bit burst 1250000 latency 100ms",
        "exec tc qdisc add dev eth0 handle ffff: ingress",
        "exec tc filter add dev eth0 parent ffff: matchall action mirred egress redirect dev ifb0"]
    assert guest.calls[7] == ("exec tc qdisc add dev ifb0 root"
                              " tbf rate 1000000000bit burst 1250000 latency 100ms")

    guest.calls.clear()
    assert netlink.clear(guest) is True
    assert not (tmp_path / "link").exists()
    assert guest.calls == ["exec tc qdisc del dev eth0 root", "exec tc qdisc del dev eth0 ingress",
                           "exec tc qdisc del dev ifb0 root"]


def test_knfsd_tc_failing_in_the_guest_leaves_no_link(tmp_path, capsys):
    guest = FakeGuest(tmp_path)
    guest.fail = {"exec tc filter add dev eth0 parent ffff: matchall action mirred egress "
                  "redirect dev ifb0", "exec tc qdisc del dev eth0 ingress"}
    (tmp_path / "link").write_text("delay=1ms\n")
    assert netlink.apply(guest, netlink.parse("delay=5ms")) is False
    assert guest.logged == ["link: tc in the guest failed"]
    assert not (tmp_path / "link").exists()
    assert guest.calls[-3:] == ["exec tc qdisc del dev eth0 root",
                                "exec tc qdisc del dev eth0 ingress",
                                "exec tc qdisc del dev ifb0 root"]
    # The agent's complaint about the failing command is passed on; those
    # of clear's deletions (nothing to delete) are not.
    assert capsys.readouterr().err == "agent: tc failed\n"


def test_knfsd_agent_that_does_not_answer(tmp_path):
    guest = FakeGuest(tmp_path)
    guest.ready = False
    assert netlink.apply(guest, netlink.parse("delay=5ms")) is False   # (start_timeout 1 s)
    assert guest.logged == ["link: the guest's agent does not answer"]
    assert guest.calls == []
    guest.uml = False                       # (a guest that is gone: no wait)
    assert netlink.apply(guest, netlink.parse("delay=5ms")) is False
    (tmp_path / "link").write_text("delay=5ms\n")
    assert netlink.clear(guest) is True
    assert not (tmp_path / "link").exists()
    assert netlink.applied(guest) == "none"
    assert guest.calls == []


# ---------------------------------------------------------------- as root, in namespaces


def _why_skip_root():
    if os.geteuid() != 0:
        return "needs root (network namespaces, tc)"
    for tool, pkg in (("tc", "iproute2"), ("unshare", "util-linux"), ("nsenter", "util-linux")):
        if shutil.which(tool, path=SBIN_PATH) is None:
            return f"{tool} not found (apt-get install {pkg})"
    return None


needs_root = pytest.mark.skipif(_why_skip_root() is not None, reason=_why_skip_root() or "")


@pytest.fixture(autouse=True)
def sbin_path(monkeypatch):
    monkeypatch.setenv("PATH", SBIN_PATH)


def _netns_of(pid):
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


@contextlib.contextmanager
def throwaway_netns():
    """The PID of a process alone in a new network namespace (its lo
    only); it and the namespace are gone afterwards."""
    proc = subprocess.Popen(["unshare", "--net", "--", "sleep", "120"])
    try:
        ours = _netns_of("self")
        if not wait_until(lambda: _netns_of(proc.pid) not in (None, ours), 10, 0.01):
            pytest.fail("unshare --net did not make a network namespace")
        yield proc.pid
    finally:
        proc.kill()
        proc.wait(timeout=CMD_TIMEOUT)


@pytest.fixture
def netns():
    with throwaway_netns() as pid:
        yield pid


@pytest.fixture
def other_netns():
    with throwaway_netns() as pid:
        yield pid


def in_netns(pid, *argv):
    return subprocess.run(["nsenter", f"--net=/proc/{pid}/ns/net", "--", *argv],
                          capture_output=True, text=True, timeout=CMD_TIMEOUT)


def tc_show(pid, dev="lo"):
    return in_netns(pid, "tc", "qdisc", "show", "dev", dev).stdout


@pytest.fixture
def server(tmp_path, netns):
    """A ganesha server's ctx whose namespace is netns; its delayer (if
    one was left running) is stopped afterwards."""
    srv = FakeServer(tmp_path / "state")
    srv.record("supervisor", netns)
    yield srv
    srv.terminate("linkdelay", 2)


@needs_root
def test_qdiscs_on_lo_of_a_namespace(netns, monkeypatch):
    assert netlink.qdisc_applied(netns, "lo") == []
    assert netlink.qdisc_set(netns, "lo", netlink.parse("rate=10gbit"))
    assert netlink.qdisc_applied(netns, "lo") == ["rate 10Gbit (tbf on lo)"]
    # Replaced, not stacked; the largest rate is what tc applies.
    assert netlink.qdisc_set(netns, "lo", netlink.parse("rate=100gbit"))
    assert netlink.qdisc_applied(netns, "lo") == ["rate 100Gbit (tbf on lo)"]
    assert netlink.qdisc_set(netns, "lo", netlink.parse("rate=8mbit"))
    assert re.search(r"qdisc tbf \S+ root .*rate 8Mbit burst 256Kb lat 100ms", tc_show(netns))
    netlink.qdisc_clear(netns, "lo")
    assert netlink.qdisc_applied(netns, "lo") == []
    netlink.qdisc_clear(netns, "lo")        # (nothing there: fine)
    assert not netlink.qdisc_set(netns, "nosuch0", netlink.parse("rate=8mbit"))
    # A delay without netem is not tc's: tbf alone, or nothing.
    monkeypatch.setattr(netlink, "netem_works", lambda: False)
    assert netlink.qdisc_set(netns, "lo", netlink.parse("delay=10ms"))
    assert netlink.qdisc_applied(netns, "lo") == []
    assert netlink.qdisc_set(netns, "lo", netlink.parse("delay=10ms,rate=8mbit"))
    assert netlink.qdisc_applied(netns, "lo") == ["rate 8Mbit (tbf on lo)"]
    assert "netem" not in tc_show(netns)


@needs_root
def test_netem_with_tbf_below_it(netns, netem_probe):
    if not netlink.netem_works():
        pytest.skip("this kernel has no netem (sch_netem)")
    assert netlink.qdisc_set(netns, "lo", netlink.parse("delay=10ms,jitter=2ms,rate=8mbit"))
    assert netlink.qdisc_applied(netns, "lo") == ["delay 10ms jitter 2ms (netem on lo)",
                                                  "rate 8Mbit (tbf on lo)"]
    assert netlink.qdisc_set(netns, "lo", netlink.parse("delay=5ms"))
    assert netlink.qdisc_applied(netns, "lo") == ["delay 5ms (netem on lo)"]
    netlink.qdisc_clear(netns, "lo")
    assert netlink.qdisc_applied(netns, "lo") == []


@needs_root
def test_apply_clear_applied_rate(server, netns, other_netns):
    state = server.state
    assert netlink.applied(server) == "none"
    assert netlink.apply(server, netlink.parse("Rate=10Gbit"))
    assert server.logged == ["link: rate=10gbit; applied: rate 10Gbit (tbf on lo)"]
    assert (state / "link").read_text() == "rate=10gbit\n"
    assert not (state / "link.tmp").exists()
    assert netlink.current(server) == "rate=10gbit"
    assert netlink.applied(server) == "rate 10Gbit (tbf on lo)"
    assert netlink.probe_timeout(server) == 5
    # The qdiscs of another namespace's device too (vcluster.sh: the switch port).
    assert netlink.qdisc_set(other_netns, "lo", netlink.parse("rate=50mbit"))
    assert (netlink.applied(server, other_netns, "lo")
            == "rate 10Gbit (tbf on lo); rate 50Mbit (tbf on lo)")
    # Each apply replaces the link.
    assert netlink.apply(server, netlink.parse("rate=8mbit"))
    assert netlink.applied(server) == "rate 8Mbit (tbf on lo)"
    assert tc_show(netns).count("qdisc tbf") == 1
    assert netlink.clear(server) is True
    assert netlink.applied(server) == "none"
    assert netlink.current(server) == "none"
    assert "tbf" not in tc_show(netns)


@needs_root
def test_apply_failing_on_a_device_leaves_no_link(server, netns):
    (server.state / "conf" / "link-devs").write_text("lo\nnosuch0\n")
    (server.state / "link").write_text("rate=1mbit\n")
    assert netlink.apply(server, netlink.parse("rate=8mbit")) is False
    assert server.logged == ["link: tc on nosuch0 failed"]
    assert "tbf" not in tc_show(netns)       # (lo's went again)
    assert netlink.current(server) == "none"
    (server.state / "conf" / "link-devs").write_text("lo\n")
    assert netlink.apply(server, netlink.parse("rate=8mbit"))


@needs_root
def test_clear_tolerates_parts_already_gone(server, netns, tmp_path):
    assert netlink.apply(server, netlink.parse("rate=8mbit"))
    netlink.qdisc_clear(netns, "lo")
    (server.state / "link").unlink()
    # A delayer recorded that is long gone (a PID of an exited process).
    gone = subprocess.Popen(["true"])
    gone.wait(timeout=CMD_TIMEOUT)
    (server.state / "pid" / "linkdelay").write_text(f"{gone.pid} 1\n")
    (server.state / "run" / "linkdelay.pid").write_text(f"{gone.pid}\n")
    assert netlink.clear(server) is True
    assert not (server.state / "pid" / "linkdelay").exists()
    assert not (server.state / "run" / "linkdelay.pid").exists()
    assert netlink.clear(server) is True     # (nothing at all)
    # The server's namespace gone (its supervisor dead), and link-where
    # naming a process that is not there: nothing to clear, no error.
    dead = FakeServer(tmp_path / "dead")
    (dead.state / "pid" / "supervisor").write_text(f"{gone.pid} 1\n")
    (dead.state / "link").write_text("delay=5ms\n")
    (dead.state / "conf" / "link-where").write_text(f"{gone.pid} 1 FORWARD 10.77.0.2\n")
    assert netlink.clear(dead) is True
    assert netlink.current(dead) == "none"
    assert netlink.applied(dead) == "none"
    # (a link-where that is not data of ours: no namespace to go into)
    (dead.state / "conf" / "link-where").write_text("none 1 INPUT -\n")
    assert netlink.clear(dead) is True


# -- the delay without netem: herd-linkdelay and the iptables rules

FAKE_DELAYER = """#!/usr/bin/python3
# herd-linkdelay's stand-in: names itself in --pidfile, then waits.
import os, sys, time
args = sys.argv[1:]
print("fake herd-linkdelay", *args, flush=True)
pidfile = args[args.index("--pidfile") + 1]
with open(pidfile + ".new", "w") as f:
    f.write(f"{os.getpid()}\\n")
os.rename(pidfile + ".new", pidfile)
time.sleep(120)
"""

BROKEN_DELAYER = """#!/bin/sh
echo "herd-linkdelay: cannot bind queue 0"
exit 1
"""


def _why_skip_nfqueue():
    why = _why_skip_root()
    if why:
        return why
    if shutil.which("iptables", path=SBIN_PATH) is None:
        return "iptables not found (apt-get install iptables)"
    # NFQUEUE and multiport in a namespace of its own (gone with it).
    probe = subprocess.run(
        ["unshare", "--net", "--", "iptables", "-w", "-A", "INPUT", "-p", "tcp", "-m", "multiport",
         "--dports", "111,2049", "-j", "NFQUEUE", "--queue-num", "0", "--queue-bypass"],
        capture_output=True, text=True, timeout=CMD_TIMEOUT,
        env=dict(os.environ, PATH=SBIN_PATH))
    if probe.returncode != 0:
        return ("iptables' NFQUEUE does not work in a network namespace here: "
                + probe.stderr.strip())
    return None


needs_nfqueue = pytest.mark.skipif(_why_skip_nfqueue() is not None,
                                   reason=_why_skip_nfqueue() or "")


@pytest.fixture
def delayer(tmp_path, monkeypatch):
    """netlink uses a fake herd-linkdelay, and no netem."""
    path = tmp_path / "herd-linkdelay"
    path.write_text(FAKE_DELAYER)
    path.chmod(0o755)
    monkeypatch.setattr(netlink, "LINKDELAY", str(path))
    monkeypatch.setattr(netlink, "netem_works", lambda: False)
    return path


def iptables_rules(pid):
    return [line for line in in_netns(pid, "iptables", "-w", "-S").stdout.splitlines()
            if not line.startswith("-P ")]


def _rules(chain, to, frm):
    ports = "111,2049,20048,32803,445"
    queue = "-j NFQUEUE --queue-num 0 --queue-bypass"
    return [
        "-N HERD_LINK", f"-A {chain} -j HERD_LINK",
        f"-A HERD_LINK{to} -p tcp -m multiport --dports {ports} {queue}",
        f"-A HERD_LINK{frm} -p tcp -m multiport --sports {ports} {queue}",
        f"-A HERD_LINK{to} -p udp -m multiport --dports {ports} {queue}",
        f"-A HERD_LINK{frm} -p udp -m multiport --sports {ports} {queue}"]


ICMP = "-A INPUT -p icmp -j ACCEPT"


def _cmdline(pid):
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]


@needs_nfqueue
def test_delay_without_netem(server, netns, delayer):
    state = server.state
    # (a rule already there: the delay rules are hooked in before it)
    added = in_netns(netns, "iptables", "-w", "-A", "INPUT", "-p", "icmp", "-j", "ACCEPT")
    assert added.returncode == 0, added.stderr
    assert netlink.apply(server, netlink.parse("delay=10ms,jitter=2ms,rate=8mbit"))
    pid = server.recorded("linkdelay")
    assert server.alive("linkdelay")
    expected = f"delay 10ms jitter 2ms (herd-linkdelay pid {pid}); rate 8Mbit (tbf on lo)"
    assert server.logged == [f"link: delay=10ms,jitter=2ms,rate=8mbit; applied: {expected}"]
    assert netlink.applied(server) == expected
    assert _cmdline(pid)[1:] == [
        str(delayer), "--queue", "0", "--delay", "0.010000", "--jitter", "0.002000",
        "--pidfile", f"{state}/run/linkdelay.pid"]
    assert _netns_of(pid) == _netns_of(netns)
    assert os.getsid(pid) == pid             # (setsid: a session of its own)
    assert (state / "run" / "linkdelay.pid").read_text() == f"{pid}\n"
    assert "fake herd-linkdelay --queue 0" in (state / "log" / "linkdelay.log").read_text()
    assert sorted(iptables_rules(netns)) == sorted(_rules("INPUT", "", "") + [ICMP])
    assert iptables_rules(netns)[1:3] == ["-A INPUT -j HERD_LINK", ICMP]

    # Replaced: one delayer, one hook.
    assert netlink.apply(server, netlink.parse("delay=200ms"))
    assert proc_stat(pid) is None            # (stopped and reaped: no zombie)
    pid2 = server.recorded("linkdelay")
    assert netlink.applied(server) == f"delay 200ms (herd-linkdelay pid {pid2})"
    assert sorted(iptables_rules(netns)) == sorted(_rules("INPUT", "", "") + [ICMP])
    assert netlink.probe_timeout(server) == 5 + 8
    assert iptables_rules(netns)[1:3] == ["-A INPUT -j HERD_LINK", ICMP]

    assert netlink.clear(server) is True
    assert proc_stat(pid2) is None
    assert iptables_rules(netns) == [ICMP]
    assert "tbf" not in tc_show(netns)
    for name in ("link", "run/linkdelay.pid", "pid/linkdelay"):
        assert not (state / name).exists(), name
    assert netlink.applied(server) == "none"


@needs_nfqueue
def test_delay_rules_in_another_namespace(server, netns, other_netns, delayer):
    """link-where (vcluster.sh: the switch's FORWARD chain, for packets of
    the server's address): the rules and the delayer go there."""
    start = proc_stat(other_netns)[1]
    (server.state / "conf" / "link-where").write_text(f"{other_netns} {start} FORWARD 10.77.0.2\n")
    assert netlink.apply(server, netlink.parse("delay=5ms"))
    pid = server.recorded("linkdelay")
    assert _netns_of(pid) == _netns_of(other_netns)
    assert sorted(iptables_rules(other_netns)) == sorted(
        _rules("FORWARD", " -d 10.77.0.2/32", " -s 10.77.0.2/32"))
    assert iptables_rules(netns) == []
    assert netlink.applied(server) == f"delay 5ms (herd-linkdelay pid {pid})"
    assert netlink.clear(server) is True
    assert proc_stat(pid) is None
    assert iptables_rules(other_netns) == []


@needs_nfqueue
def test_delayer_that_does_not_start(server, netns, delayer, capsys):
    delayer.write_text(BROKEN_DELAYER)
    (server.state / "link").write_text("rate=1mbit\n")
    assert netlink.apply(server, netlink.parse("delay=5ms,rate=8mbit")) is False
    log = server.state / "log" / "linkdelay.log"
    assert server.logged == [f"link: herd-linkdelay did not start (see {log}):"]
    assert capsys.readouterr().err == "herd-linkdelay: cannot bind queue 0\n"
    assert netlink.current(server) == "none"
    assert netlink.applied(server) == "none"
    assert iptables_rules(netns) == []
    assert not (server.state / "pid" / "linkdelay").exists()
