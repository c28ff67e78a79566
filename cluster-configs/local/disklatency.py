"""disklatency.py — a disk that takes time under a kernel nfsd's export
(nfs-server.sh start --server knfsd --disk-latency SPEC, and the
`disk-latency` verb on a running server).

SPEC is `none` (the default: the export's file system sits on the guest's
disk ubda as it is) or any of read=T,write=T,flush=T, comma separated,
each key once (T as --link's times: a number with us, ms or s; whole
milliseconds, dm-delay's unit; at most 10 s; a key left out is 0ms). The
normalized spec has all three, in that order: read=5ms,write=0ms,flush=8ms.

With a SPEC the guest (uml-init.c) puts device-mapper's `delay` target
(dm-delay, a module of Debian's user-mode-linux) between the file system
and ubda, with one read, one write and one flush delay: every bio waits
its class's delay before it goes on to ubda. A flush is a bio with
REQ_PREFLUSH (fsync, a journal commit, xfs's log force); the data of a
FUA write waits the write delay. Requests in flight together wait
together, as on a disk with a queue. dm-delay counts in the guest
kernel's clock ticks (GUEST_TICK_MS: Debian's UML has HZ=100): a bio
given D ms is let through at the first tick at least ceil(D / tick)
ticks after the tick it arrived in, so it waits between that less one
tick and that. The table therefore holds T + one tick for a T > 0: every
request waits at least T, and at most T rounded up to the tick plus one
tick (flush=8ms: 10-20 ms; 10ms: 10-20 ms; 20ms: 20-30 ms), plus the
moment kdelayd needs to run. uml-init.c's agent changes the delays live
(a table reload: bios delayed then are let through at once).

Only kernel nfsd: ganesha's export is a loop device of the host, whose
kernel has no device-mapper, and a shim in ganesha cannot stand in for it
(see refusal()).

Standard library only (Debian 12's python3)."""

import sys
from typing import NamedTuple

import netlink

KEYS = ("read", "write", "flush")
GUEST_TICK_MS = 10  # the UML guest's clock tick (CONFIG_HZ=100)


class DiskLatencyError(Exception):
    """A spec that cannot be used; str() is the one line to print."""


class Latency(NamedTuple):
    read_ms: int
    write_ms: int
    flush_ms: int

    @property
    def spec(self):
        return ",".join(f"{k}={v}ms" for k, v in zip(KEYS, self))

    def guest_words(self):
        """The three delays as the guest's config and agent take them
        (dm-delay's table): milliseconds, read write flush, one tick more
        than asked where one is asked, so that each request waits at least
        its delay."""
        return [str(v + GUEST_TICK_MS if v else 0) for v in self]


def parse(option, text):
    """The Latency of text, or None for `none`; DiskLatencyError naming
    option when text is neither."""
    if text == "none":
        return None
    if not text:
        raise DiskLatencyError(f"{option}: empty (none, or read=T,write=T,flush=T, any of them)")
    ms = {}
    for item in text.lower().split(","):
        key, eq, value = item.partition("=")
        if not eq or not value:
            raise DiskLatencyError(f"{option}: '{item}' is not KEY=VALUE (read=T,write=T,flush=T)")
        if key not in KEYS:
            raise DiskLatencyError(f"{option}: unknown key '{key}' (read, write, flush)")
        if key in ms:
            raise DiskLatencyError(f"{option}: {key} given twice")
        try:
            us = netlink.time_us(f"{option} {key}", value)
        except netlink.LinkError as e:
            raise DiskLatencyError(str(e)) from None
        if us % 1000:
            raise DiskLatencyError(f"{option} {key}: '{value}' is not whole milliseconds "
                                   "(dm-delay's unit)")
        ms[key] = us // 1000
    return Latency(*(ms.get(k, 0) for k in KEYS))


def current(settings):
    """The server's disk latency as its settings hold it: the normalized
    spec, or none."""
    return settings.get("DISK_LATENCY", "none") or "none"


def applied(table):
    """The spec of the delay table the guest reports (dm-delay's table
    line: DEV OFFSET MS three times, read, write, flush; guest_words'
    tick taken off), or the line as it is when it is not that."""
    words = table.split()
    if len(words) == 9 and all(w.isdigit() for w in words[2::3]):
        return Latency(*(max(int(w) - GUEST_TICK_MS, 0) for w in words[2::3])).spec
    return table.strip() or "none"


def refusal(option):
    """Why ganesha has no --disk-latency: one line."""
    return (f"{option} is kernel nfsd's (--server knfsd): ganesha's export is a loop device "
            "of the host, whose kernel has no device-mapper (dm-delay)")


def main(argv):
    """disklatency.py check SPEC: the normalized spec (none for none) on
    stdout, exit 0; a bad one: one line on stderr, exit 2 (the seed
    drivers check their DISK_LATENCY with it before anything starts)."""
    if len(argv) != 2 or argv[0] != "check":
        print("usage: disklatency.py check SPEC", file=sys.stderr)
        return 2
    try:
        disk = parse("DISK_LATENCY", argv[1])
    except DiskLatencyError as e:
        print(e, file=sys.stderr)
        return 2
    print(disk.spec if disk else "none")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
