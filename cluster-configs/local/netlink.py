"""netlink.py — the link emulation of the embedded NFS server (--link SPEC
of nfs-server.sh start, its `link` verb): a slow, distant link between the
clients and the server. The caller passes a context (ctx) that names the
state directory, the server kind and the recorded processes; see "the
caller's context" below.

SPEC is any of delay=T,jitter=T,rate=R (T: a number with us, ms or s; R: a
number with kbit, mbit or gbit). Each direction is delayed once by delay
(+ uniform jitter in [-jitter, jitter], clipped at 0), so a round trip
takes about 2 x delay. How, inside the server's network namespace:
- rate: tc tbf on the link devices (lo here; eth0 on a vcluster host).
  lo's MTU is 64 KiB: a burst under 256 KB stalls the link.
- delay/jitter with netem (probed: `tc qdisc add ... netem` in a
  throwaway namespace; HERD_LINK_NETEM=0 skips it): netem on the devices,
  tbf as its child. On lo both directions pass the device once each.
- delay/jitter without netem (this kernel): iptables rules send the
  server's packets to NFQUEUE LINK_QUEUE (--queue-bypass: they pass
  undelayed if no program listens), where herd-linkdelay
  (src/tools/linkdelay.c) holds them. Packets are held where they *arrive*:
  in INPUT (on lo every packet passes it once: to the server's ports, and
  from them back to the client), or in FORWARD of another namespace
  (vcluster.sh: the switch, which every packet crosses once, bridged). Not
  in OUTPUT: a packet held there still belongs to its sending socket, and
  TCP small queues then throttle the sender to a few packets per delay
  (measured: 16 MiB over 5 ms each way 15.7 s from OUTPUT, rate-bound from
  the receiving side). The rules live in that namespace's own tables and
  go with it.
Ports: portmapper 111 (clients look up ports there), NFS 2049, MOUNT 20048,
NLM, SMB 445 (smbd, with --smb). Not statd's: only ganesha and statd, both
inside the server, talk to it. IPv4 only (the URLs are IPv4).

The link of a knfsd server (--server knfsd) lives in its User-Mode Linux
guest, whose kernel has netem, and is set through the guest's agent: what
the guest sends passes netem (delay, jitter) and tbf (rate) on eth0, what
it receives is redirected at eth0's ingress to ifb0 and passes the same
qdiscs there, so each direction is delayed once, as on ganesha's lo. Every
packet to and from the guest crosses it (the agent's commands and the
metrics scrapes too, as on a remote server).

Files in the state directory (STATE): STATE/link (the applied spec),
STATE/conf/link-devs (the devices for the qdiscs, one a line; default lo),
STATE/conf/link-where ("PID START CHAIN ADDR": where the delay rules and
the delayer go; default the server's namespace, INPUT, any address),
STATE/run/linkdelay.pid (the delayer's pidfile), STATE/log/linkdelay.log;
the delayer is recorded as "linkdelay". They are read as data.

The caller's context: ctx.state (Path), ctx.server ("ganesha" or "knfsd"),
ctx.start_timeout (seconds), ctx.log(msg), ctx.recorded(name),
ctx.alive(name), ctx.record(name, pid), ctx.terminate(name, seconds),
ctx.knfsd_agent(*argv) -> (rc, stdout, stderr), ctx.knfsd_ready().

Commands are looked up on PATH, which must hold /usr/sbin and /sbin (tc,
iptables). Standard library only (Debian 12's python3)."""

import dataclasses
import functools
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

from procinfo import proc_stat, running

# Fixed ports inside the server's namespace (see the top comment).
NLM_PORT = 32803
SMB_PORT = 445
LINK_PORTS = f"111,2049,20048,{NLM_PORT},{SMB_PORT}"
LINK_QUEUE = 0
LINK_MAX_US = 10_000_000  # delay and jitter: at most 10 s
# rate: 8kbit..100gbit. Above 100gbit tbf's queue limit (100 ms of the
# rate plus the burst, in bytes) overflows its 32 bits (at about 300gbit).
LINK_MIN_BIT = 8_000
LINK_MAX_BIT = 100_000_000_000
TBF_MIN_BURST = 262_144  # bytes (lo's 64 KiB MTU: less stalls the link)
REPO = Path(__file__).resolve().parent.parent.parent
LINKDELAY = os.environ.get("HERD_LINKDELAY") or str(REPO / "build" / "herd-linkdelay")
# A readiness probe (nfs-ls of the export; smbclient's login and ls) gets
# PROBE_TIMEOUT seconds plus PROBE_ROUND_TRIPS round trips of the link:
# each takes 16-17 round trips (measured: 1.6 s over delay=50ms).
PROBE_TIMEOUT = 5
PROBE_ROUND_TRIPS = 20

COMMAND_TIMEOUT = 30  # seconds one tc, iptables or unshare may take
DELAYER_START_TRIES, DELAYER_START_PAUSE = 250, 0.02  # herd-linkdelay: 5 s to bind
DELAYER_STOP_TIMEOUT = 2  # seconds from SIGTERM to SIGKILL
RULE_HOOKS_MAX = 100  # at most this many hooks of HERD_LINK are removed
STATE_FILE_MAX = 64 << 10  # bytes read of a file in the state directory
# A PID no process has (/proc/0 does not exist): without a recorded
# supervisor, what is aimed at its namespace fails there.
NO_PROCESS = 0


class LinkError(Exception):
    """A spec or a missing tool; str() is the one line to log."""


@dataclasses.dataclass(frozen=True)
class Link:
    spec: str  # normalized: lower case, keys in the order delay, jitter, rate
    delay_us: int
    jitter_us: int
    rate_bit: int  # 0: no rate

    def wants_delay(self) -> bool:
        return self.delay_us > 0 or self.jitter_us > 0

    def round_trip_us(self) -> int:
        """What the link adds to a round trip at most: each direction delay + jitter."""
        return 2 * (self.delay_us + self.jitter_us)


# ------------------------------------------------------------------ spec

_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_TIME = re.compile(r"([0-9]+(?:\.[0-9]+)?)(us|ms|s)")
_RATE = re.compile(r"([0-9]+(?:\.[0-9]+)?)(kbit|mbit|gbit)")
_TIME_DIGITS = {"us": 0, "ms": 3, "s": 6}
_RATE_DIGITS = {"kbit": 3, "mbit": 6, "gbit": 9}


def _scaled(number, digits):
    """number (digits with an optional fraction: 2.5) times 10**digits,
    rounded half up to an integer; None when it is no such number, or when
    the result could reach 10**18 (callers refuse that as out of range:
    the bash had 64-bit integers, and awk's 2**31 - 1 once made 10gbit
    2147 Mbit)."""
    if not _NUMBER.fullmatch(number):
        return None
    whole, _, fraction = number.partition(".")
    whole = whole.lstrip("0") or "0"
    if len(whole) + digits > 17:
        return None
    fraction = (fraction + "0" * (digits + 1))[:digits + 1]
    return (int(whole) * 10 ** (digits + 1) + int(fraction) + 5) // 10


def time_us(option, value):
    """value, a time as a spec writes it (a number with us, ms or s: 20ms,
    2.5ms), in microseconds; LinkError (naming option) when it is none or
    longer than 10 s. disklatency.py reads its times with it too."""
    m = _TIME.fullmatch(value)
    if not m:
        raise LinkError(f"{option}: '{value}' is not a time (a number with us, ms or s: 20ms)")
    us = _scaled(m[1], _TIME_DIGITS[m[2]])
    if us is None or us > LINK_MAX_US:
        raise LinkError(f"{option}: '{value}' is longer than 10 s")
    return us


def _rate_bit(option, value):
    m = _RATE.fullmatch(value)
    if not m:
        raise LinkError(f"{option}: '{value}' is not a rate"
                        " (a number with kbit, mbit or gbit: 8mbit)")
    bit = _scaled(m[1], _RATE_DIGITS[m[2]])
    if bit is None or not LINK_MIN_BIT <= bit <= LINK_MAX_BIT:
        raise LinkError(f"{option}: '{value}' is outside 8kbit..100gbit")
    return bit


def parse(spec: str) -> Link:
    """The link spec checked and normalized; LinkError (one line) if it is bad."""
    text = spec.lower()
    if not text:
        raise LinkError("--link: empty (delay=T,jitter=T,rate=R, any of them)")
    items = text.split(",")
    if items[-1] == "":
        items.pop()  # (a comma at the end is refused below, after the items)
    given, numbers = {}, {}  # key -> the value as written; -> in us or bit/s
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not value:
            raise LinkError(f"--link: '{item}' is not KEY=VALUE (delay=T,jitter=T,rate=R)")
        if key not in ("delay", "jitter", "rate"):
            raise LinkError(f"--link: unknown key '{key}' (delay, jitter, rate)")
        if key in given:
            raise LinkError(f"--link: {key} given twice")
        if key == "rate":
            numbers[key] = _rate_bit("--link rate", value)
        else:
            numbers[key] = time_us(f"--link {key}", value)
        given[key] = value
    if text.endswith(","):
        raise LinkError(f"--link: empty item in '{spec}'")
    keys = [key for key in ("delay", "jitter", "rate") if key in given]
    return Link(spec=",".join(f"{key}={given[key]}" for key in keys),
                delay_us=numbers.get("delay", 0), jitter_us=numbers.get("jitter", 0),
                rate_bit=numbers.get("rate", 0))


def us_text(us: int) -> str:
    """Microseconds the way a spec writes them: 10s, 200ms, 2500us."""
    if us and us % 1_000_000 == 0:
        return f"{us // 1_000_000}s"
    if us and us % 1000 == 0:
        return f"{us // 1000}ms"
    return f"{us}us"


def _us_seconds(us):
    """Microseconds as seconds with six decimals (0.200000)."""
    return f"{us // 1_000_000}.{us % 1_000_000:06d}"


def tbf_args(link: Link) -> list[str]:
    """The tbf qdisc's arguments for the link's rate ([] without a rate):
    a burst of 10 ms at the rate, at least TBF_MIN_BURST; at most 100 ms
    of queue."""
    if not link.rate_bit:
        return []
    burst = max(link.rate_bit // 8 // 100, TBF_MIN_BURST)
    return ["tbf", "rate", f"{link.rate_bit}bit", "burst", str(burst), "latency", "100ms"]


# ------------------------------------------------------------------ commands


def _run(argv, stdout=None, stderr=None):
    """Run argv within COMMAND_TIMEOUT seconds (its output on ours unless
    redirected); True when it exits 0."""
    try:
        return subprocess.run(argv, stdout=stdout, stderr=stderr,
                              timeout=COMMAND_TIMEOUT).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _output(argv):
    """argv's stdout (its stderr dropped), whatever its exit status; "" if
    it cannot run or takes longer than COMMAND_TIMEOUT seconds."""
    try:
        return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              timeout=COMMAND_TIMEOUT).stdout.decode(errors="replace")
    except (OSError, subprocess.TimeoutExpired):
        return ""


def _in_netns(pid):
    """The command prefix that runs a command in the network namespace of pid."""
    return ["nsenter", f"--net=/proc/{pid}/ns/net", "--"]


@functools.cache
def netem_works() -> bool:
    """tc can make a netem qdisc here (probed once, in a throwaway network
    namespace; HERD_LINK_NETEM=0 says no without probing)."""
    if (os.environ.get("HERD_LINK_NETEM") or "1") == "0":
        return False
    return _run(["unshare", "--net", "--", "tc", "qdisc", "add", "dev", "lo", "root",
                 "netem", "delay", "1ms"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def check_tools(link: Link, server: str) -> None:
    """What the link needs is there; LinkError (one line) otherwise. Run
    before anything starts."""
    if (link.rate_bit or link.wants_delay()) and not shutil.which("tc"):
        raise LinkError("--link: tc not found (package iproute2)")
    # (kernel nfsd's guest has netem)
    if not link.wants_delay() or server == "knfsd" or netem_works():
        return
    if not shutil.which("iptables"):
        raise LinkError("--link: no netem in this kernel and iptables not found (package iptables)")
    if not os.access(LINKDELAY, os.X_OK):
        raise LinkError(f"--link: no netem in this kernel and {LINKDELAY} is missing: build it"
                        " (libnetfilter-queue-dev; cmake -DHERD_WITH_NFQUEUE=ON,"
                        " target herd-linkdelay) or set HERD_LINKDELAY")


# ------------------------------------------------------------------ qdiscs


def qdisc_set(nspid: int, dev: str, link: Link) -> bool:
    """The link's qdisc on dev in the network namespace of process nspid
    (replacing whatever was there): netem (when delaying and netem works)
    with tbf below it, or tbf alone, or nothing. False if tc fails."""
    qdisc_clear(nspid, dev)
    tc = [*_in_netns(nspid), "tc", "qdisc", "add", "dev", dev]
    parent = ["root"]
    if link.wants_delay() and netem_works():
        if not _run([*tc, "root", "handle", "1:", "netem",
                     "delay", f"{link.delay_us}us", f"{link.jitter_us}us"]):
            return False
        parent = ["parent", "1:1", "handle", "10:"]
    tbf = tbf_args(link)
    return not tbf or _run([*tc, *parent, *tbf])


def qdisc_clear(nspid: int, dev: str) -> None:
    """dev back to its default qdisc."""
    _run([*_in_netns(nspid), "tc", "qdisc", "del", "dev", dev, "root"],
         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


_TBF_RATE = re.compile(r" rate ([^ ]+)")
_NETEM_DELAY = re.compile(r" delay ([^ ]+)( +([0-9.]+[mun]?s))?")


def qdisc_applied(nspid: int, dev: str) -> list[str]:
    """The link's qdiscs tc shows on dev in the network namespace of process
    nspid: "rate 10Gbit (tbf on lo)", "delay 10ms jitter 2ms (netem on lo)"."""
    parts = []
    for line in _output([*_in_netns(nspid), "tc", "qdisc", "show", "dev", dev]).splitlines():
        line = line.strip(" \t")
        if line.startswith("qdisc tbf ") and (m := _TBF_RATE.search(line)):
            parts.append(f"rate {m[1]} (tbf on {dev})")
        elif line.startswith("qdisc netem ") and (m := _NETEM_DELAY.search(line)):
            jitter = f" jitter {m[3]}" if m[3] else ""
            parts.append(f"delay {m[1]}{jitter} (netem on {dev})")
    return parts


# ------------------------------------------------------------------ state files


def _state_text(path):
    """The text of a regular file in the state directory (at most
    STATE_FILE_MAX bytes, as data), or None when it is missing, empty or
    no regular file (a FIFO there must not block us)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
            return None
        return f.read(STATE_FILE_MAX).decode(errors="replace")


def _save_spec(ctx, spec):
    tmp = ctx.state / "link.tmp"
    tmp.write_text(spec + "\n")
    os.replace(tmp, ctx.state / "link")


def current(ctx) -> str:
    """The running server's link spec (STATE/link), or "none"."""
    text = _state_text(ctx.state / "link")
    return "none" if text is None else text.rstrip("\n")


def _link_devs(ctx):
    """The devices in the server's namespace the link's qdiscs go on
    (STATE/conf/link-devs: lo, or what `link --dev` named)."""
    text = _state_text(ctx.state / "conf" / "link-devs")
    return ["lo"] if text is None else text.split()


def _start_time(pid):
    """The start time of a live process (not a zombie), or None."""
    st = proc_stat(pid)
    return None if st is None or st[0] in ("Z", "X") else st[1]


class _Where(NamedTuple):
    pid: int
    start: int
    chain: str
    addr: str  # "-": any


def _where(ctx):
    """Where the delay rules and the delayer go (STATE/conf/link-where, from
    `link --netns-pid --chain --addr`): default the server's namespace,
    INPUT, any address. A PID or start time that is not a number there is
    NO_PROCESS."""
    text = _state_text(ctx.state / "conf" / "link-where")
    if text is None:
        pid = ctx.recorded("supervisor") or NO_PROCESS
        return _Where(pid, _start_time(pid) or 0, "INPUT", "-")
    pid, start, chain, addr = (text.splitlines()[0].split(None, 3) + ["", "", "", ""])[:4]
    if not (re.fullmatch("[0-9]+", pid) and re.fullmatch("[0-9]+", start)):
        return _Where(NO_PROCESS, 0, chain, addr)
    return _Where(int(pid), int(start), chain, addr)


# ------------------------------------------------------------------ delayer


def _add_delay_rules(ctx):
    """Our chain HERD_LINK, hooked first into the chain of link-where's
    namespace: packets to the server's ports (client -> server) and from
    them (server -> client) go to the queue. False if the namespace's
    process is gone or iptables fails."""
    where = _where(ctx)
    if not running(where.pid, where.start):
        return False
    ipt = [*_in_netns(where.pid), "iptables", "-w"]
    to, frm = ([], []) if where.addr == "-" else (["-d", where.addr], ["-s", where.addr])
    if not _run([*ipt, "-N", "HERD_LINK"]):
        return False
    queue = ["-j", "NFQUEUE", "--queue-num", str(LINK_QUEUE), "--queue-bypass"]
    for proto in ("tcp", "udp"):
        if not _run([*ipt, "-A", "HERD_LINK", *to, "-p", proto, "-m", "multiport",
                     "--dports", LINK_PORTS, *queue]):
            return False
        if not _run([*ipt, "-A", "HERD_LINK", *frm, "-p", proto, "-m", "multiport",
                     "--sports", LINK_PORTS, *queue]):
            return False
    return _run([*ipt, "-I", where.chain, "1", "-j", "HERD_LINK"])


def _remove_delay_rules(ctx):
    """Unhook and remove HERD_LINK; nothing to do when it (or the namespace)
    is already gone."""
    where = _where(ctx)
    if not running(where.pid, where.start):
        return
    ipt = [*_in_netns(where.pid), "iptables", "-w"]
    for _ in range(RULE_HOOKS_MAX):
        if not _run([*ipt, "-D", where.chain, "-j", "HERD_LINK"], stderr=subprocess.DEVNULL):
            break
    _run([*ipt, "-F", "HERD_LINK"], stderr=subprocess.DEVNULL)
    _run([*ipt, "-X", "HERD_LINK"], stderr=subprocess.DEVNULL)


def _show_tail(path, lines):
    """The last lines of a log on stderr (nothing if it cannot be read)."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - STATE_FILE_MAX))
            text = f.read().decode(errors="replace")
    except OSError:
        return
    for line in text.splitlines()[-lines:]:
        print(line, file=sys.stderr)
    sys.stderr.flush()


# The delayers this process started and has not reaped: once stopped,
# they are reaped here (as bash reaped its background jobs), not left as
# zombies for as long as the caller runs.
_started_delayers = set()


def _reap_delayers():
    for pid in list(_started_delayers):
        try:
            exited = os.waitpid(pid, os.WNOHANG)[0] == pid
        except ChildProcessError:
            exited = True
        if exited:
            _started_delayers.discard(pid)


def _start_delayer(ctx, link):
    """herd-linkdelay in link-where's namespace, recorded as linkdelay;
    True once it has bound the queue (its pidfile names it)."""
    where = _where(ctx)
    pidfile = ctx.state / "run" / "linkdelay.pid"
    logfile = ctx.state / "log" / "linkdelay.log"
    pidfile.unlink(missing_ok=True)
    argv = ["setsid", *_in_netns(where.pid), LINKDELAY, "--queue", str(LINK_QUEUE),
            "--delay", _us_seconds(link.delay_us), "--jitter", _us_seconds(link.jitter_us),
            "--pidfile", str(pidfile)]
    try:
        # setsid does not fork here (the child is no process group leader)
        # and nsenter execs: the PID is the delayer's. It outlives us, as
        # bash's background job did: no subprocess.Popen to wait for. It
        # gets the default SIGPIPE and SIGXFSZ, which Python ignores.
        pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, str(logfile), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666),
            (os.POSIX_SPAWN_DUP2, 1, 2)], setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))
    except OSError as e:
        print(f"{argv[0]}: {e}", file=sys.stderr)
        pid = None
    if pid is not None:
        _started_delayers.add(pid)
        ctx.record("linkdelay", pid)
        for _ in range(DELAYER_START_TRIES):
            if (_state_text(pidfile) or "").rstrip("\n") == str(pid):
                return True
            if not ctx.alive("linkdelay"):
                break
            time.sleep(DELAYER_START_PAUSE)
    ctx.log(f"link: herd-linkdelay did not start (see {logfile}):")
    _show_tail(logfile, 5)
    if pid is not None:
        ctx.terminate("linkdelay", DELAYER_STOP_TIMEOUT)
        _reap_delayers()
    return False


def _delayer_applied(ctx):
    """The delay and jitter the running herd-linkdelay was started with (its
    command line): "delay 200ms jitter 2ms (herd-linkdelay pid N)", or None
    when none runs."""
    if not ctx.alive("linkdelay"):
        return None
    pid = ctx.recorded("linkdelay")
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return None
    delay, jitter = None, 0
    for option, value in zip(argv, argv[1:]):
        if option == "--delay":
            delay = _scaled(value, 6)
        elif option == "--jitter":
            jitter = _scaled(value, 6) or 0
    if delay is None:
        return None
    jitter_text = f" jitter {us_text(jitter)}" if jitter else ""
    return f"delay {us_text(delay)}{jitter_text} (herd-linkdelay pid {pid})"


# ------------------------------------------------------------------ the server's link


def applied(ctx, nspid: int | None = None, dev: str | None = None) -> str:
    """What is in place of the running server's link, read back from tc and
    the delayer (not from the spec), and the qdiscs on dev of nspid's
    namespace (vcluster.sh: the switch port): the parts joined by "; ", or
    "none"."""
    if ctx.server == "knfsd":
        return _knfsd_applied(ctx)
    parts = []
    delayer = _delayer_applied(ctx)
    if delayer:
        parts.append(delayer)
    if ctx.alive("supervisor"):
        supervisor = ctx.recorded("supervisor")
        for device in _link_devs(ctx):
            parts += qdisc_applied(supervisor, device)
    if nspid is not None and dev is not None:
        parts += qdisc_applied(nspid, dev)
    return "; ".join(parts) or "none"


def clear(ctx) -> bool:
    """Remove the whole link (rules, delayer, qdiscs, STATE/link); parts
    already gone are fine. False if the delayer survives."""
    if ctx.server == "knfsd":
        return _knfsd_clear(ctx)
    if shutil.which("iptables"):
        _remove_delay_rules(ctx)
    if ctx.alive("supervisor"):
        supervisor = ctx.recorded("supervisor")
        for dev in _link_devs(ctx):
            qdisc_clear(supervisor, dev)
    ctx.terminate("linkdelay", DELAYER_STOP_TIMEOUT)
    _reap_delayers()
    if ctx.alive("linkdelay"):
        return False
    for name in ("link", "run/linkdelay.pid", "pid/linkdelay"):
        (ctx.state / name).unlink(missing_ok=True)
    return True


def apply(ctx, link: Link) -> bool:
    """Replace the server's link with this one and log what is applied.
    False (after one line) if any part fails; then no link is left."""
    if ctx.server == "knfsd":
        return _knfsd_apply(ctx, link)
    supervisor = ctx.recorded("supervisor") or NO_PROCESS
    if not clear(ctx):
        return False
    for dev in _link_devs(ctx):
        if not qdisc_set(supervisor, dev, link):
            ctx.log(f"link: tc on {dev} failed")
            clear(ctx)
            return False
    if link.wants_delay() and not netem_works():
        if not _start_delayer(ctx, link):
            clear(ctx)
            return False
        if not _add_delay_rules(ctx):
            ctx.log("link: iptables in the namespace failed")
            clear(ctx)
            return False
    _save_spec(ctx, link.spec)
    ctx.log(f"link: {link.spec}; applied: {applied(ctx)}")
    return True


def probe_timeout(ctx) -> int:
    """Seconds one readiness probe may take: PROBE_TIMEOUT plus
    PROBE_ROUND_TRIPS round trips over the running server's link, rounded up."""
    spec = current(ctx)
    round_trip = 0
    if spec != "none":
        try:
            round_trip = parse(spec).round_trip_us()
        except LinkError as e:
            ctx.log(str(e))
    return PROBE_TIMEOUT + (PROBE_ROUND_TRIPS * round_trip + 999_999) // 1_000_000


# ------------------------------------------------------------------ knfsd's guest


def _show(text):
    """What the guest's agent said on stderr, passed on."""
    if text:
        sys.stderr.write(text)
        sys.stderr.flush()


def _knfsd_tc(ctx, *args, quiet=False):
    """tc in the guest; False when tc (or the agent) fails. quiet: the
    agent's complaints are dropped."""
    rc, out, err = ctx.knfsd_agent("exec", "tc", *args)
    if not quiet:
        _show(err)
    return rc == 0 and out.rstrip("\n").split("\n")[-1] == "exit 0"


def _knfsd_wait(ctx):
    """Until the guest's agent answers (start applies the link while the
    guest may still boot): at most start_timeout seconds."""
    for _ in range(ctx.start_timeout * 10):
        if ctx.knfsd_ready():
            return True
        if not ctx.alive("uml"):
            return False
        time.sleep(0.1)
    return False


def _knfsd_qdiscs(ctx, dev, link):
    """netem (with a delay) and tbf (with a rate) on dev in the guest."""
    parent = ["root"]
    if link.wants_delay():
        if not _knfsd_tc(ctx, "qdisc", "add", "dev", dev, "root", "handle", "1:", "netem",
                         "delay", f"{link.delay_us}us", f"{link.jitter_us}us", "limit", "100000"):
            return False
        parent = ["parent", "1:1", "handle", "10:"]
    tbf = tbf_args(link)
    return not tbf or _knfsd_tc(ctx, "qdisc", "add", "dev", dev, *parent, *tbf)


def _knfsd_apply(ctx, link):
    if not _knfsd_wait(ctx):
        ctx.log("link: the guest's agent does not answer")
        return False
    _knfsd_clear(ctx)
    rc, _, err = ctx.knfsd_agent("exec", "ip", "link", "set", "ifb0", "up")
    _show(err)
    if not (rc == 0 and _knfsd_qdiscs(ctx, "eth0", link)
            and _knfsd_tc(ctx, "qdisc", "add", "dev", "eth0", "handle", "ffff:", "ingress")
            and _knfsd_tc(ctx, "filter", "add", "dev", "eth0", "parent", "ffff:", "matchall",
                          "action", "mirred", "egress", "redirect", "dev", "ifb0")
            and _knfsd_qdiscs(ctx, "ifb0", link)):
        ctx.log("link: tc in the guest failed")
        _knfsd_clear(ctx)
        return False
    _save_spec(ctx, link.spec)
    ctx.log(f"link: {link.spec}; applied: {_knfsd_applied(ctx)}")
    return True


def _knfsd_clear(ctx):
    (ctx.state / "link").unlink(missing_ok=True)
    if ctx.alive("uml"):
        for dev, kind in (("eth0", "root"), ("eth0", "ingress"), ("ifb0", "root")):
            _knfsd_tc(ctx, "qdisc", "del", "dev", dev, kind, quiet=True)
    return True


def _knfsd_applied(ctx):
    """The guest's qdiscs of the link ("eth0: netem 1: root ..."), or "none"."""
    parts = []
    if ctx.alive("uml"):
        for dev in ("eth0", "ifb0"):
            _, out, _ = ctx.knfsd_agent("exec", "tc", "qdisc", "show", "dev", dev)
            for line in out.splitlines():
                line = line.strip(" \t")
                if line.startswith(("qdisc netem", "qdisc tbf")):
                    parts.append(f"{dev}: {line.removeprefix('qdisc ')}")
    return "; ".join(parts) or "none"
