"""knfsdctl.py — nfs-server.sh's checks and verbs for --server knfsd: the
Linux kernel's nfsd, run in a User-Mode Linux guest (Debian's
user-mode-linux) that the supervisor boots in the server's network
namespace (knfsd.py: addresses, the guest's command line and its agent;
uml-init.c: the guest's PID 1 and its agent). Standard library only."""

import os
import pwd
import re
import subprocess
import sys
from pathlib import Path

import disklatency
from serverctl import (KNFSD_HOST_FREE_MIN_KB, KNFSD_PY, KNFSD_THREADS_MAX, START_TIMEOUT,
                       UML_INIT_SRC, UML_XSTATE_SRC, Args, BadValue, Die, Server, have, log)


OCTET = r"(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"


def knfsd_modules():
    """The guest kernel's module directory (the release of the installed
    linux.uml), or None."""
    for d in sorted(Path("/usr/lib/uml/modules").glob("*/kernel/fs/nfsd")):
        if d.is_dir():
            return d.parent.parent.parent
    return None


def knfsd_check_start(fs, mode, smb, threads, workers):
    """Refuse what the kernel nfsd server cannot do, and missing tools,
    before anything starts."""
    if fs not in ("xfs", "ext4", "btrfs"):
        raise Die("start: --server knfsd exports a disk image: --fs xfs, ext4 or btrfs")
    if mode == "sync-writes":
        raise Die("start: --sync-writes is ganesha's; kernel nfsd has --sync and --async exports")
    if smb == "1":
        raise Die("start: --smb runs beside ganesha only")
    if workers:
        raise Die("start: --workers is ganesha's; kernel nfsd has --threads N")
    if threads and (not threads.isdigit() or not 1 <= int(threads) <= KNFSD_THREADS_MAX):
        raise Die(f"start: --threads must be 1..{KNFSD_THREADS_MAX}")
    for tool in ("linux.uml", "cc", "rpc.nfsd", "rpc.mountd", "exportfs", "rpcbind",
                 "prometheus-node-exporter"):
        if not have(tool):
            raise Die(f"start: --server knfsd: {tool} not found (see "
                      "cluster-configs/local/install.sh)")
    if knfsd_modules() is None:
        raise Die("start: --server knfsd: no nfsd.ko under /usr/lib/uml/modules")
    for path in (UML_INIT_SRC, UML_XSTATE_SRC):
        if not os.access(path, os.R_OK):
            raise Die(f"start: {path} is missing")
    try:
        pwd.getpwnam("herd-guest")
    except KeyError:
        raise Die("start: --server knfsd: user herd-guest is missing "
                  "(cluster-configs/local/install.sh makes it)") from None
    if not os.access(KNFSD_PY, os.R_OK):
        raise Die(f"start: {KNFSD_PY} is missing")


def knfsd_check_disk():
    """--disk-latency: the guest kernel's device-mapper modules are there."""
    modules = knfsd_modules()
    for name in ("dm-mod", "dm-delay"):
        if modules is None or not (modules / "kernel" / "drivers" / "md" / f"{name}.ko").is_file():
            raise Die(f"start: --disk-latency: no {name}.ko under /usr/lib/uml/modules "
                      "(user-mode-linux's device-mapper)")


def knfsd_check_net(server, net, to):
    """--guest-net A.B.C (the guest's /30: A.B.C.0-3) and --export-to
    NET/PREFIX (a subnet that reaches the guest through the server's
    namespace, e.g. a virtual cluster's) are kernel nfsd's, and well
    formed."""
    if not net and not to:
        return
    if server != "knfsd":
        raise Die("start: --guest-net and --export-to are kernel nfsd's (--server knfsd)")
    if net and not re.fullmatch(rf"{OCTET}\.{OCTET}\.{OCTET}", net):
        raise Die("start: --guest-net: three numbers like 10.77.0 (the guest's /30)")
    if to and not re.fullmatch(rf"{OCTET}\.{OCTET}\.{OCTET}\.{OCTET}/([1-9]|[12][0-9]|3[0-2])", to):
        raise Die("start: --export-to: a subnet like 10.77.0.0/24")


def knfsd_restart(srv):
    """nfsd stops (threads 0: every client's state goes) and starts again
    in the guest with the saved grace period (0: none), lease and thread
    count; prints the guest's PID once it serves."""
    st = srv.settings
    if srv.knfsd_agent("restart", st["GRACE"], st["LEASE"], st["THREADS"])[0] != 0:
        log("restart-server: the guest refused")
        return False
    if not srv.wait_ready(START_TIMEOUT):
        return False
    log(f"kernel nfsd restarted (grace {st['GRACE']} s)")
    print(srv.recorded("uml"))
    return True


def knfsd_export_problem(srv):
    """Why the export cannot take writes now, "" when it can, None when the
    agent does not answer. The host file system that holds the disk image
    is full (a write to a new block of the image fails in the guest), or
    the guest's /export is read-only or has shut down (the agent's
    export-check, which writes nothing)."""
    try:
        fs = os.statvfs(srv.image)
        free_kb = fs.f_bfree * fs.f_bsize // 1024  # (root-reserved too: linux.uml runs as root)
        if free_kb < KNFSD_HOST_FREE_MIN_KB:
            return (f"the file system of {srv.image} has {free_kb} KiB free: the guest cannot "
                    "write new blocks of its disk")
    except OSError:
        pass
    rc, _, err = srv.knfsd_agent("export-check")
    if rc == 0:
        return ""
    if rc == 1:
        return err.strip().removeprefix("knfsd.py: ")
    return None


def knfsd_status(srv):
    """status's lines of a knfsd server, and whether its export takes
    writes: yes, no (status is then degraded: export_problem says why) or
    unknown (the agent did not answer)."""
    lines = ["server=knfsd", f"threads={srv.settings['THREADS']}"]
    writable, problem = "unknown", ""
    if srv.alive("uml"):
        threads = srv.knfsd_agent("read", "/proc/fs/nfsd/threads")[1].replace("\n", "")
        lines += [f"threads_running={threads}",
                  f"metrics_url=http://{srv.settings['GUEST_NET']}.2:9100/metrics"]
        if disklatency.current(srv.settings) != "none":
            rc, table, _ = srv.knfsd_agent("disk-delay")
            lines.append(f"disk_latency_applied={disklatency.applied(table) if rc == 0 else '?'}")
        problem = knfsd_export_problem(srv)
        if problem is not None:
            writable = "no" if problem else "yes"
    lines.append(f"export_writable={writable}")
    if problem:
        lines.append(f"export_problem={problem}")
    return lines, writable


def knfsd_server(verb, words):
    """The running knfsd Server of a verb, and its words besides --state."""
    a = Args(verb, words, values=("--state",), rest_after_dashes=True, free=True)
    srv = Server(a.get("--state") or "", verb)
    if not srv.running():
        raise Die(f"{verb}: no server running with state {srv.state}")
    srv.load_settings()
    if srv.server != "knfsd":
        raise Die(f"{verb}: the server is ganesha (this is for --server knfsd)")
    if not srv.alive("uml"):
        raise Die(f"{verb}: the guest (linux.uml) is not running")
    return srv, a.free + a.rest


def cmd_threads(words):
    """threads --state DIR N: nfsd's thread count in the guest, live (what
    `rpc.nfsd N` does); also the count for later restarts."""
    srv, rest = knfsd_server("threads", words)
    srv.lock()
    if len(rest) != 1 or not rest[0].isdigit() or not 1 <= int(rest[0]) <= KNFSD_THREADS_MAX:
        raise Die(f"threads: give a count 1..{KNFSD_THREADS_MAX}")
    if srv.knfsd_agent("threads", rest[0])[0] != 0:
        raise Die("threads: the guest refused")
    srv.save_settings(THREADS=rest[0])
    running = srv.knfsd_agent("read", "/proc/fs/nfsd/threads")[1].replace("\n", "")
    log(f"threads: nfsd runs {running} threads")
    return 0


def cmd_export_mode(words):
    """export-mode --state DIR sync|async: re-export /export with that
    option (exportfs flushes the kernel's export cache: the next request
    sees it)."""
    srv, rest = knfsd_server("export-mode", words)
    srv.lock()
    if len(rest) != 1 or rest[0] not in ("sync", "async"):
        raise Die("export-mode: sync or async")
    if srv.knfsd_agent("export", rest[0])[0] != 0:
        raise Die("export-mode: the guest could not re-export")
    srv.save_settings(MODE=rest[0])
    log(f"export-mode: /export is exported {rest[0]}")
    return 0


def cmd_disk_latency(words):
    """disk-latency --state DIR SPEC: the delays of the export's delay
    device in the guest, live (a table reload: what was being delayed goes
    on at once); also the spec status and env report. The device is there
    only when the server started with --disk-latency."""
    a = Args("disk-latency", words, values=("--state",), rest_after_dashes=True, free=True)
    if len(a.free + a.rest) != 1:
        raise BadValue("disk-latency: give one SPEC (read=T,write=T,flush=T, any of them)")
    try:
        disk = disklatency.parse("disk-latency", (a.free + a.rest)[0])
    except disklatency.DiskLatencyError as e:
        raise BadValue(str(e)) from None
    if disk is None:
        raise BadValue("disk-latency: the delay device stays until stop; "
                       "read=0ms,write=0ms,flush=0ms lets every request through at once")
    srv, _ = knfsd_server("disk-latency", words)
    srv.lock()
    srv.load_settings()
    if disklatency.current(srv.settings) == "none":
        raise Die("disk-latency: the server started without --disk-latency, so its export has "
                  "no delay device (start it with --disk-latency read=0ms to change it live)")
    rc, _, err = srv.knfsd_agent("disk-delay", *disk.guest_words())
    if rc != 0:
        raise Die(f"disk-latency: the guest refused: {err.strip().removeprefix('knfsd.py: ')}")
    srv.save_settings(DISK_LATENCY=disk.spec)
    log(f"disk-latency: {disk.spec}")
    return 0


def cmd_guest(words):
    """guest --state DIR -- COMMAND [ARG...]: a command of the guest's agent
    (read PATH, exec [--timeout=S] PROG ARG..., threads N, export-check,
    end-grace, disk-delay, drop-caches; see uml-init.c), each word passed on as it is; its reply on
    stdout, its exit status knfsd.py agent's."""
    srv, rest = knfsd_server("guest", words)
    if not rest:
        raise Die("guest: no command given (guest --state DIR -- read /proc/fs/nfsd/threads)")
    sys.stdout.flush()
    return subprocess.run(srv.in_netns([sys.executable, str(KNFSD_PY), "agent",
                                        str(srv.state / "guest" / "secret"), *rest]),
                          stdin=subprocess.DEVNULL, check=False).returncode
