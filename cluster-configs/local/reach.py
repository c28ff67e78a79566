"""reach.py — nfs-server.sh start --reach host: the embedded server
reachable from the host's own network namespace, over a veth pair between
the two namespaces and nothing else.

Each server takes one address block NET.0/29 (NET = A.B.N, N = 0..255;
A.B is NFS_SERVER_REACH_NET, default 10.78) that no route and no address
of the host's overlaps (`ip -4 -j route show table all`, `ip -4 -j addr`):

    host   herd-B-N  NET.5/30  <->  reach0  NET.6/30  server's namespace
    (kernel nfsd: its guest at NET.2, on NET.0/30 behind the namespace,
     which forwards; the host routes NET.0/30 via NET.6)

The host's side is named after its block: `ip link add herd-B-N` is the
claim (a second server gets "File exists" and tries the next block), and
its alias "nfs-server.sh STATE" tells whose it is. The pair is made in the
host's namespace, its inner end moved into the server's namespace once
that exists (connect); deleting the inner end deletes both, and with them
every route through them. The supervisor deletes it at its tear-down,
`stop` (and a failed start) from inside the pinned namespace, and then any
host side with this server's alias that is left (never moved, or its
namespace still being freed).

What else is set, on these two devices only (their settings go with
them): no IPv6 (no link-local addresses), strict reverse-path filtering
(a packet from another source than the pair's and the guest's is
dropped), no forwarding of what arrives on the host's side; in the
namespace of a kernel nfsd, IPv4 forwarding (the namespace's own setting,
gone with it). Nothing is added to the host's firewall, nothing listens on
the host, and no other route or address is touched.

Standard library only (Debian 12's python3)."""

import ipaddress
import json
import os
import re
import subprocess
import time

RANGE_ENV = "NFS_SERVER_REACH_NET"
DEFAULT_RANGE = "10.78"
NS_DEV = "reach0"
ALIAS = "nfs-server.sh {state}"
COMMAND_TIMEOUT = 30  # seconds one ip or sysctl may take
GONE_WAIT = 5.0       # seconds for a host side to go once deleted
_OCTET = r"(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"


class ReachError(Exception):
    """str() is the one line to log."""


def reach_range():
    """A.B of the blocks to choose from (NFS_SERVER_REACH_NET)."""
    text = os.environ.get(RANGE_ENV, DEFAULT_RANGE)
    if not re.fullmatch(rf"{_OCTET}\.{_OCTET}", text):
        raise ReachError(f"{RANGE_ENV}={text!r}: want two numbers like {DEFAULT_RANGE}")
    return text


def host_dev(net):
    """The host's side of the pair of block NET (A.B.N): herd-B-N."""
    _, b, n = net.split(".")
    return f"herd-{b}-{n}"


def addresses(net):
    """(the host's address, the namespace's, the pair's /30) of block NET."""
    return f"{net}.5", f"{net}.6", f"{net}.4/30"


def guest_subnets(settings):
    """The subnets a kernel nfsd guest exports to and routes through the
    namespace for the host: the pair's /30, or none without --reach host."""
    net = settings.get("REACH_NET", "")
    return [addresses(net)[2]] if settings.get("REACH") == "host" and net else []


def _run(argv, timeout=COMMAND_TIMEOUT):
    """(status, stderr) of argv; 124 after timeout, 127 when it cannot run."""
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, errors="replace", timeout=timeout,
                           check=False)
        return p.returncode, p.stderr.strip()
    except subprocess.TimeoutExpired:
        return 124, f"{argv[0]}: no answer within {timeout} s"
    except OSError as e:
        return 127, f"{argv[0]}: {e.strerror}"


def _json(argv):
    """ip -j's output as data ([] when it fails or is no JSON list)."""
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           errors="replace", timeout=COMMAND_TIMEOUT, check=False)
        data = json.loads(p.stdout) if p.returncode == 0 else []
    except (subprocess.TimeoutExpired, OSError, ValueError):
        return []
    return data if isinstance(data, list) else []


def _network(text, prefix=None):
    """An IPv4 network of ip's words ("10.0.0.0/8", "1.2.3.4" and a
    prefix), or None (default, another family, nonsense)."""
    if not isinstance(text, str) or text == "default":
        return None
    try:
        net = ipaddress.ip_network(f"{text}/{prefix}" if prefix is not None else text,
                                   strict=False)
    except ValueError:
        return None
    return net if net.version == 4 and net.prefixlen > 0 else None


def host_networks():
    """Every IPv4 network the host routes (any table; not the default
    route) or has an address in."""
    found = []
    for route in _json(["ip", "-4", "-j", "route", "show", "table", "all"]):
        if isinstance(route, dict):
            found.append(_network(route.get("dst")))
    for link in _json(["ip", "-4", "-j", "addr", "show"]):
        for a in link.get("addr_info", []) if isinstance(link, dict) else []:
            if isinstance(a, dict) and isinstance(a.get("prefixlen"), int):
                found.append(_network(a.get("local"), a["prefixlen"]))
    return [n for n in found if n is not None]


def overlaps(net, taken):
    """The first of taken that overlaps network net, or None."""
    return next((t for t in taken if t.overlaps(net)), None)


def link_info(dev):
    """ip -j link's record of the host's device dev, or None."""
    found = _json(["ip", "-j", "link", "show", "dev", dev])
    return found[0] if found and isinstance(found[0], dict) else None


def ours(dev, state):
    """dev is a host device of this state directory's server (its alias)."""
    info = link_info(dev)
    return info is not None and info.get("ifalias") == ALIAS.format(state=state)


def claim(state, save, guest_net=None):
    """The first free block: its host device made (both ends in the host's
    namespace, down, no address) and named by its alias. save(net) records
    the block in the settings before the device exists, so that a failed
    start's stop finds it. guest_net (A.B.C): a kernel nfsd's --guest-net,
    whose /30 the host must not route either. Returns NET (A.B.N)."""
    alias = ALIAS.format(state=state)
    if len(alias.encode()) > 255:
        raise ReachError("start: --reach host: the state directory's path is too long "
                         "(the device's alias holds it: 240 bytes at most)")
    taken = host_networks()
    if guest_net:
        guest = ipaddress.ip_network(f"{guest_net}.0/30")
        clash = overlaps(guest, taken)
        if clash:
            raise ReachError(f"start: --reach host: the guest's {guest} overlaps the host's "
                             f"{clash}: choose another --guest-net")
        taken.append(guest)
    base = reach_range()
    for n in range(256):
        net = f"{base}.{n}"
        if overlaps(ipaddress.ip_network(f"{net}.0/29"), taken):
            continue
        dev = host_dev(net)
        save(net)
        # One ip process: the alias follows the device at once.
        batch = f"link add {dev} type veth peer name {dev}p\nlink set dev {dev} alias \"{alias}\"\n"
        try:
            p = subprocess.run(["ip", "-batch", "-"], input=batch, capture_output=True, text=True,
                               errors="replace", timeout=COMMAND_TIMEOUT, check=False)
        except (subprocess.TimeoutExpired, OSError) as e:
            raise ReachError(f"start: --reach host: ip link add {dev}: {e}") from None
        if p.returncode == 0:
            return net
        if "File exists" not in p.stderr:
            raise ReachError(f"start: --reach host: ip link add {dev}: {p.stderr.strip()}")
    raise ReachError(f"start: --reach host: every block {base}.N.0/29 (N = 0..255) overlaps a "
                     f"route or address of the host, or is another server's (set {RANGE_ENV}="
                     "A.B to choose from A.B.0.0/16)")


def _must(argv, what):
    rc, err = _run(argv)
    if rc != 0:
        raise ReachError(f"--reach host: {what}: {err or f'exit {rc}'}")


def connect(net, sup_pid, guest_net=None):
    """The pair's inner end moved into the namespace of the supervisor
    sup_pid and named reach0; both ends addressed and up; for a kernel
    nfsd (guest_net A.B.C: its guest's /30) the namespace forwards and the
    host routes the guest's /30 through it. Raises ReachError."""
    dev = host_dev(net)
    host_addr, ns_addr, _ = addresses(net)
    inside = ["nsenter", f"--net=/proc/{sup_pid}/ns/net", "--"]
    _must(["ip", "link", "set", "dev", f"{dev}p", "netns", str(sup_pid)], "move into the namespace")
    _must(inside + ["ip", "link", "set", "dev", f"{dev}p", "name", NS_DEV], "name reach0")
    ns_sysctl = [f"net.ipv6.conf.{NS_DEV}.disable_ipv6=1", f"net.ipv4.conf.{NS_DEV}.rp_filter=1"]
    if guest_net:
        ns_sysctl.append("net.ipv4.ip_forward=1")
    _must(inside + ["sysctl", "-q", "-w", *ns_sysctl], "sysctl in the namespace")
    _must(inside + ["ip", "addr", "add", f"{ns_addr}/30", "dev", NS_DEV], "address reach0")
    _must(inside + ["ip", "link", "set", "dev", NS_DEV, "up"], "reach0 up")
    _must(["sysctl", "-q", "-w", f"net.ipv6.conf.{dev}.disable_ipv6=1",
           f"net.ipv4.conf.{dev}.rp_filter=1", f"net.ipv4.conf.{dev}.forwarding=0"],
          f"sysctl of {dev}")
    _must(["ip", "addr", "add", f"{host_addr}/30", "dev", dev], f"address {dev}")
    _must(["ip", "link", "set", "dev", dev, "up"], f"{dev} up")
    if guest_net:
        _must(["ip", "route", "add", f"{guest_net}.0/30", "via", ns_addr, "dev", dev],
              f"route to the guest via {dev}")


def ns_tear_down(prefix=()):
    """Delete reach0 (and so the host's side, and its routes) in the
    namespace this runs in, or the one prefix (an nsenter) enters; quiet
    when there is none."""
    if _run([*prefix, "ip", "link", "show", "dev", NS_DEV])[0] == 0:
        _run([*prefix, "ip", "link", "del", "dev", NS_DEV])


def tear_down(state, net, netns_fd, log):
    """At stop: the pair deleted from inside the server's namespace (pinned
    by netns_fd, or None when it is gone), then any host side of this
    server's that is left. False after one line if one stays."""
    if not net:
        return True
    if netns_fd is not None:
        ns_tear_down(["nsenter", f"--net=/proc/{os.getpid()}/fd/{netns_fd}", "--"])
    dev = host_dev(net)
    deadline = time.monotonic() + GONE_WAIT
    while ours(dev, state):
        if time.monotonic() > deadline:
            log(f"--reach host: {dev} is still there")
            return False
        _run(["ip", "link", "del", "dev", dev])
        time.sleep(0.05)
    return True


def status_lines(state, settings):
    """status's lines about the reach."""
    net = settings.get("REACH_NET", "")
    if settings.get("REACH") != "host" or not net:
        return ["reach=none"]
    host_addr, ns_addr, _ = addresses(net)
    dev = host_dev(net)
    info = link_info(dev) if ours(dev, state) else None
    up = info is not None and "UP" in info.get("flags", [])
    lines = ["reach=host", f"reach_dev={dev}", f"reach_host_addr={host_addr}",
             f"reach_addr={ns_addr}"]
    if settings.get("SERVER") == "knfsd":
        lines.append(f"reach_route={settings.get('GUEST_NET')}.0/30 via {ns_addr}")
    return lines + [f"reach_up={'yes' if up else 'no'}"]
