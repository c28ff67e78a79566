#!/usr/bin/env python3
"""nfsserver.py — a throwaway userspace NFS server for herd's tests and
local runs (run as nfs-server.sh beside it): nfs-ganesha (FSAL VFS) plus
rpcbind and rpc.statd (for the NLM lock manager) and, with --smb, smbd
(Samba, same export), inside a private network and mount namespace,
exporting a plain directory or a loop-mounted xfs, ext4 or btrfs image;
or, with --server knfsd, the Linux kernel's nfsd in a User-Mode Linux
guest (knfsd.py). Everything it makes lives in one state directory;
`stop` removes every process, mount and loop device it made. No kernel NFS
is needed: clients reach the server with libnfs (nfs:// URLs) from inside
the namespace (`exec`) or, started with --reach host, from the host over a
veth pair of its own (reach.py). The process that holds the namespaces and owns
the servers is supervisor.py beside this file; the verbs here talk to it
over its socket (serverstate.py). See README.md beside this file.

Needs root, util-linux (unshare, nsenter, losetup), iproute2, rpcbind,
nfs-ganesha, nfs-ganesha-vfs, nfs-common (rpc.statd, rpcinfo; a dependency
of nfs-ganesha), libnfs-utils (nfs-ls, to see the server answer),
xfsprogs/e2fsprogs/btrfs-progs for those file systems, a C compiler (cc)
for --async, and for --link tc (iproute2) and, where the kernel has no
netem, iptables and herd-linkdelay (netlink.py), and for --smb samba
(smbd, smbpasswd) and smbclient (to see it answer). Standard library only
(Debian 12's python3)."""

import os
import re
import subprocess
import sys
import time

import disklatency
import netlink
import procinfo
import reach
import serverstate as ss
from knfsdctl import (cmd_disk_latency, cmd_export_mode, cmd_guest, cmd_threads,
                      knfsd_check_disk, knfsd_check_net, knfsd_check_start, knfsd_restart,
                      knfsd_status)
from serverctl import (NOSYNC_SRC, PATH_EXTRA, SMB_TEMPLATE, START_TIMEOUT, SUPERVISOR, TEMPLATE,
                       Args, BadValue, Die, Server, Usage, have, log, run_quiet)

USAGE = """\
  nfs-server.sh start --state DIR [--fs dir|tmpfs|xfs|ext4|btrfs] [--size 2G]
                      [--server ganesha|knfsd] (knfsd: the Linux kernel's
                                           nfsd in User-Mode Linux, see
                                           knfsd.py; --fs xfs, ext4
                                           or btrfs, --threads N,
                                           --guest-net A.B.C: the guest's
                                           /30, default 10.77.0;
                                           --export-to NET/PREFIX: also
                                           export to a routed subnet)
                      [--workers N] [--sync|--async|--sync-writes]
                      [--hostname NAME]   (own UTS namespace: a host of
                                           cluster-configs/virtual/)
                      [--no-nlm]          (no NLM lock manager, no statd)
                      [--grace SECONDS]   (start in a grace period; 0: none)
                      [--lease SECONDS]   (NFSv4 lease; default 60, or the
                                           grace if shorter)
                      [--link delay=20ms,jitter=2ms,rate=8mbit]  (any of them:
                                           a slow, distant link; see "link")
                      [--disk-latency read=5ms,write=2ms,flush=8ms]  (any of
                                           them, knfsd only: a slow disk
                                           under the export; default none)
                      [--smb [--smb-sendfile yes|no] [--smb-workers N]]
                                          (also smbd, Samba, on the same
                                           export: see smb.conf.in)
                      [--reach none|host] (host: also reachable from the
                                           host, over a veth pair of its
                                           own: see reach.py; default none)
      stdout: line 1 the nfs:// URL of the export (NFSv3), line 2 ganesha's PID
              (knfsd: linux.uml's), with --smb line 3 smb://127.0.0.1/export
              (--reach host: the pair's address instead of 127.0.0.1)
  nfs-server.sh exec --state DIR [--server-fs] -- COMMAND [ARG...]
      (COMMAND's environment: what `env` prints)
  nfs-server.sh env --state DIR
      (KEY=VALUE lines: HERD_SERVER=ganesha|knfsd, HERD_SERVER_FS=the
       export's file system, HERD_SERVER_URL, HERD_LINK=the link's spec or
       none, HERD_SERVER_DISK=the disk latency's spec or none; with --smb
       also HERD_SMB_URL, HERD_SMB_USER, HERD_SMB_PASSWORD_FILE)
  nfs-server.sh link --state DIR --set SPEC [--dev DEV]... | --clear
      (replaces the running server's link; --dev: the devices in its
       namespace for tbf/netem, default lo)
  nfs-server.sh restart-ganesha --state DIR [--grace SECONDS] [--lease SECONDS]
                                                 stdout: the new PID
  nfs-server.sh restart-server --state DIR [--grace SECONDS] [--lease SECONDS]
      (ganesha: restart-ganesha; knfsd: nfsd stops and starts in the guest)
  nfs-server.sh threads --state DIR N            (knfsd: nfsd threads, live)
  nfs-server.sh export-mode --state DIR sync|async  (knfsd: re-export, live)
  nfs-server.sh disk-latency --state DIR read=T,write=T,flush=T
                                  (knfsd started with --disk-latency: live)
  nfs-server.sh guest --state DIR -- COMMAND...  (knfsd: the guest's agent)
  nfs-server.sh stop-statd --state DIR           (NLM then answers NOLOCKS)
  nfs-server.sh start-statd --state DIR          stdout: statd's PID
  nfs-server.sh restart-smbd --state DIR         stdout: smbd's new PID
  nfs-server.sh stop-smbd --state DIR
  nfs-server.sh status --state DIR
  nfs-server.sh stop --state DIR [--purge]
"""

def check_seconds(option, value, low):
    """value is an integer in low..180 (ganesha's range for Grace_Period
    and Lease_Lifetime)."""
    if not value.isdigit() or not low <= int(value) <= 180:
        raise Die(f"{option} must be a number of seconds, {low}..180")


def default_lease(grace, lease):
    """The lease to use when none is given: lease, or grace when that is
    shorter. ganesha wants Grace_Period >= Lease_Lifetime (it warns
    otherwise), and its reaper, which ends the grace, runs every lease/2 s
    or so (at most every 10 s): grace 5 with lease 60 ended after 10 s,
    grace 3 with lease 3 after 3 s."""
    return grace if 0 < int(grace) < int(lease) else lease

# ------------------------------------------------------------------ start


def start_options(words):
    a = Args("start", words, values=("--state", "--fs", "--size", "--workers", "--server",
                                     "--guest-net", "--export-to", "--threads", "--hostname",
                                     "--grace", "--lease", "--link", "--smb-sendfile",
                                     "--smb-workers", "--reach", "--disk-latency"),
             flags=("--sync", "--async", "--sync-writes", "--nlm", "--no-nlm", "--smb"))
    if "--link" in a.values and a.get("--link") is None:
        raise Die("start: --link needs a SPEC")
    mode = "sync"
    for w in words:  # the last of --sync, --async, --sync-writes wins
        if w in ("--sync", "--async", "--sync-writes"):
            mode = w[2:]
    nlm = "1"
    for w in words:
        if w in ("--nlm", "--no-nlm"):
            nlm = "1" if w == "--nlm" else "0"
    return a, mode, nlm


def start_check(a, mode, nlm):
    """Every option checked, and every tool there, before anything starts;
    the settings to save, and the parsed link (or None)."""
    fs, size, host_name = a.get("--fs", "dir") or "", a.get("--size", "2G") or "", a.get("--hostname") or ""
    grace, lease = a.get("--grace", "0") or "", a.get("--lease") or ""
    server, threads, workers = a.get("--server", "ganesha") or "", a.get("--threads") or "", a.get("--workers") or ""
    smb = "1" if "--smb" in a.flags else "0"
    smb_sendfile, smb_workers = a.get("--smb-sendfile", "yes") or "", a.get("--smb-workers", "100") or ""
    guest_net, export_to = a.get("--guest-net") or "", a.get("--export-to") or ""
    reach_to = a.get("--reach", "none") or ""
    if fs not in ("dir", "tmpfs", "xfs", "ext4", "btrfs"):
        raise Die("start: --fs must be dir, tmpfs, xfs, ext4 or btrfs")
    if not re.fullmatch(r"[0-9]+[KMGT]?", size):
        raise Die("start: --size: a number with an optional K, M, G or T")
    if host_name and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9.-]{0,62}", host_name):
        raise Die("start: --hostname: letters, digits, '.' and '-', at most 63")
    check_seconds("start: --grace", grace, 0)
    lease = lease or default_lease(grace, "60")
    check_seconds("start: --lease", lease, 1)
    if server == "ganesha":
        if threads:
            raise Die("start: --threads is kernel nfsd's (--server knfsd); ganesha has --workers")
    elif server == "knfsd":
        knfsd_check_start(fs, mode, smb, threads, workers)
        threads = threads or "8"
    else:
        raise Die("start: --server must be ganesha or knfsd")
    knfsd_check_net(server, guest_net, export_to)
    if workers:
        if not workers.isdigit() or not 2 <= int(workers) <= 131072:
            raise Die("start: --workers must be 2..131072 (ganesha refuses 1)")
    else:
        workers = "200"
    if smb_sendfile not in ("yes", "no"):
        raise Die("start: --smb-sendfile must be yes or no")
    if not smb_workers.isdigit() or not 1 <= int(smb_workers) <= 10000:
        raise Die("start: --smb-workers must be 1..10000 (smbd's aio max threads)")
    reach_check(reach_to, server, "--link" in a.values)
    disk = disk_latency_check(a.get("--disk-latency", "none"), server)
    if os.geteuid() != 0:
        raise Die("start: needs root (namespaces, mounts, loop devices)")
    if smb == "1":
        for tool in ("smbd", "smbpasswd", "smbclient"):
            if not have(tool):
                raise Die(f"start: --smb: {tool} not found (apt-get install samba smbclient)")
        if not os.access(SMB_TEMPLATE, os.R_OK):
            raise Die(f"start: {SMB_TEMPLATE} is missing")
    tools = ["unshare", "nsenter", "ip", "nfs-ls", "timeout"]
    if server == "ganesha":
        tools[3:3] = ["losetup", "ganesha.nfsd", "rpcbind"]
    for tool in tools:
        if not have(tool):
            raise Die(f"start: {tool} not found (see cluster-configs/local/install.sh)")
    if nlm == "1":
        for tool in ("rpc.statd", "rpcinfo"):
            if not have(tool):
                raise Die(f"start: {tool} not found (package nfs-common; or start --no-nlm)")
    for path in (TEMPLATE, SUPERVISOR):
        if not os.access(path, os.R_OK):
            raise Die(f"start: {path} is missing")
    link = None
    if "--link" in a.values:
        try:
            link = netlink.parse(a.get("--link"))
            netlink.check_tools(link, server)
        except netlink.LinkError as e:
            log(str(e))
            raise SystemExit(1) from None
    if fs not in ("dir", "tmpfs") and not have(f"mkfs.{fs}"):
        raise Die(f"start: mkfs.{fs} not found")
    if mode == "async":
        if not os.access(NOSYNC_SRC, os.R_OK):
            raise Die(f"start: {NOSYNC_SRC} is missing")
        if not have("cc"):
            raise Die(f"start: --async needs a C compiler (cc) to build {NOSYNC_SRC}")
    settings = {"FS": fs, "SIZE": size, "WORKERS": workers, "MODE": mode, "HOST_NAME": host_name,
                "NLM": nlm, "GRACE": grace, "LEASE": lease, "SMB": smb,
                "SMB_SENDFILE": smb_sendfile, "SMB_WORKERS": smb_workers, "SERVER": server,
                "THREADS": threads or "8", "GUEST_NET": guest_net or "10.77.0",
                "EXPORT_TO": export_to, "REACH": reach_to,
                "DISK_LATENCY": disk.spec if disk else "none"}
    return settings, link


def disk_latency_check(spec, server):
    """--disk-latency SPEC parsed (None: none); a bad one, or one for
    ganesha, is one line and exit 2."""
    try:
        disk = disklatency.parse("start: --disk-latency", spec or "")
    except disklatency.DiskLatencyError as e:
        raise BadValue(str(e)) from None
    if disk is not None and server != "knfsd":
        raise BadValue(f"start: {disklatency.refusal('--disk-latency')}")
    if disk is not None:
        knfsd_check_disk()
    return disk


def reach_check(reach_to, server, link):
    """--reach none|host, and what --reach host needs."""
    if reach_to not in ("none", "host"):
        raise Die("start: --reach must be none or host")
    if reach_to == "none":
        return
    if link and server == "ganesha":
        raise Die("start: --link and --reach host: ganesha's link is on the namespace's lo, "
                  "which the host's clients do not cross (use --server knfsd)")
    if not have("sysctl"):
        raise Die("start: --reach host: sysctl not found (package procps)")
    try:
        reach.reach_range()
    except reach.ReachError as e:
        raise Die(f"start: --reach host: {e}") from None


def reach_claim(srv, guest_net_given):
    """--reach host: the first free address block and its veth pair (the
    block in the settings first: see reach.claim). A kernel nfsd's guest
    takes the block's first /30 unless --guest-net placed it."""
    auto_guest = srv.server == "knfsd" and not guest_net_given

    def save(net):
        srv.save_settings(REACH_NET=net, **({"GUEST_NET": net} if auto_guest else {}))

    guest = srv.settings["GUEST_NET"] if srv.server == "knfsd" and guest_net_given else None
    try:
        net = reach.claim(srv.state, save, guest)
    except reach.ReachError as e:
        raise Die(str(e)) from None
    srv.child_env()
    log(f"--reach host: {reach.host_dev(net)} {reach.addresses(net)[0]} <-> "
        f"{reach.NS_DEV} {reach.addresses(net)[1]}")


def reach_connect(srv):
    """--reach host: the pair's inner end into the running supervisor's
    namespace, addressed (reach.connect)."""
    if not srv.reach_net:
        return True
    if not srv.alive("supervisor"):
        return False
    guest = srv.settings["GUEST_NET"] if srv.server == "knfsd" else None
    try:
        reach.connect(srv.reach_net, srv.recorded("supervisor"), guest)
    except reach.ReachError as e:
        log(str(e))
        return False
    return True


def start_claim(srv):
    """The directory first (checked by what is above it), checked again now
    that it exists, then its lock: a second start waits here, then finds
    the first one's server running."""
    srv.state.mkdir(parents=True, exist_ok=True)
    srv.trust()
    srv.lock()
    if srv.is_ours():
        if srv.alive("supervisor") or srv.alive("ganesha") or srv.alive("uml"):
            raise Die(f"start: a server is already running with state {srv.state} (stop it first)")
        log(f"cleaning up what an earlier server left in {srv.state}")
        if not srv.do_stop(False):
            raise Die(f"start: could not clean up {srv.state}")
    elif any(srv.state.iterdir()):
        raise Die(f"start: {srv.state} exists, is not empty and is not a nfs-server.sh state "
                  "directory")


def start_prepare(srv, settings, guest_net_given):
    (srv.state / ss.MARKER).write_text("")
    for d in ("bin", "conf", "run", "lib-nfs", "recovery", "statd", "export", "log", "pid"):
        (srv.state / d).mkdir(parents=True, exist_ok=True)
    os.chmod(srv.export, 0o777)
    srv.save_settings(**settings)
    if settings["REACH"] == "host":
        reach_claim(srv, guest_net_given)
    srv.child_env()
    srv.write_conf()
    if srv.smb:
        srv.smb_setup()
    if settings["MODE"] == "async" and srv.server == "ganesha" and not srv.build_nosync():
        return False
    if srv.server == "knfsd" and not srv.knfsd_build_init():
        return False
    srv.make_image()
    return True


def start_supervisor(srv):
    """supervisor.py in new network and mount namespaces (and UTS with
    --hostname), recorded as launcher (setsid does not fork here, and
    unshare execs: the launcher is the supervisor)."""
    uts = ["--uts"] if srv.settings["HOST_NAME"] else []
    argv = ["setsid", "unshare", "--net", "--mount", *uts, "--propagation", "private", "--",
            sys.executable, str(SUPERVISOR), "run", "--state", str(srv.state), "--statd-port",
            str(ss.STATD_PORT), "--ganesha-stop-timeout", str(ss.ganesha_stop_timeout(srv.nlm))]
    with open(srv.state / "log" / "supervisor.log", "ab") as out:
        launcher = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    srv.record("launcher", launcher.pid)
    for _ in range(START_TIMEOUT * 20):
        if (srv.state / "run" / "failed").exists():
            return False
        if not srv.alive("launcher") and not srv.alive("supervisor"):
            return False
        if srv.alive("supervisor") and srv.alive(srv.server_proc()) and (
                not srv.smb or srv.alive("smbd")):
            return True
        time.sleep(0.05)
    return True  # (wait_ready says what is missing)


def started_line(srv, seconds):
    st = srv.settings
    size = f"threads {st['THREADS']}" if srv.server == "knfsd" else f"workers {st['WORKERS']}"
    if not srv.nlm:
        nlm = "off"
    elif srv.server == "knfsd":
        nlm = "on (kernel lockd and rpc.statd in the guest)"
    else:
        nlm = f"on (port {ss.NLM_PORT}, statd port {ss.STATD_PORT})"
    smb = (f", smbd pid {srv.recorded('smbd')} (sendfile {st['SMB_SENDFILE']}, aio max threads "
           f"{st['SMB_WORKERS']})") if srv.smb else ""
    where = f", reach host (from {reach.addresses(srv.reach_net)[0]} on " \
        f"{reach.host_dev(srv.reach_net)})" if srv.reach_net else ""
    return (f"started in {seconds} s: server {srv.server}, fs {st['FS']}, mode {st['MODE']}, "
            f"{size}, export {srv.export}, nlm {nlm}, grace {st['GRACE']} s, lease {st['LEASE']} s,"
            f" link {netlink.current(srv)}{smb}{where}")


def cmd_start(words):
    a, mode, nlm = start_options(words)
    state = a.get("--state") or ""
    srv = Server(state, "start")
    settings, link = start_check(a, mode, nlm)
    start_claim(srv)
    t0 = time.monotonic()
    ok = False
    try:
        # From here on a failure undoes everything.
        ok = start_prepare(srv, settings, bool(a.get("--guest-net"))) and \
            start_supervisor(srv) and reach_connect(srv)
        if ok and link is not None and srv.alive("supervisor"):
            ok = netlink.apply(srv, link)
        ok = ok and srv.alive("supervisor") and srv.alive(srv.server_proc()) and \
            srv.wait_ready(START_TIMEOUT) and (not srv.smb or srv.wait_smb_ready(START_TIMEOUT))
    except (Die, OSError, subprocess.SubprocessError) as e:
        log(str(e))
        ok = False
    if ok:
        log(started_line(srv, int(time.monotonic() - t0)))
        print(srv.url())
        print(srv.recorded(srv.server_proc()))
        if srv.smb:
            print(srv.smb_url())
        return 0
    log("start failed")
    failed = srv.state / "run" / "failed"
    if failed.exists():
        log(f"supervisor: {failed.read_text(errors='replace').strip()}")
    srv.log_tail()
    srv.do_stop(False)
    return 1


# ------------------------------------------------------------------ the other verbs


def verb_failed(srv, verb):
    """A verb that did not get its server going: one line, the logs' last
    lines, exit 1."""
    log(f"{verb} failed")
    srv.log_tail()
    return 1


def running_server(verb, a):
    """The Server of a verb that needs one running, with the state
    directory's lock and its settings loaded."""
    srv = Server(a.get("--state") or "", verb)
    if not srv.running():
        raise Die(f"{verb}: no server running with state {srv.state}")
    srv.lock()
    srv.load_settings()
    return srv


def cmd_stop(words):
    a = Args("stop", words, values=("--state",), flags=("--purge",))
    srv = Server(a.get("--state") or "", "stop")
    if not srv.state.exists():
        log(f"nothing to stop: {srv.state} does not exist")
        return 0
    if not srv.is_ours():
        raise Die(f"stop: {srv.state} is not a nfs-server.sh state directory; not touching it")
    srv.lock()
    t0 = time.monotonic()
    if srv.do_stop("--purge" in a.flags):
        log(f"stopped in {int(time.monotonic() - t0)} s")
        return 0
    raise Die("stop: something is left (see above)")


def server_env(srv):
    """What a client of the server may record (exec's environment, env's
    lines): the server, the export's file system, the URL, the link, the
    disk's latency; with
    --smb smbd's URL, user and password file. Values are the checked
    settings' (no newline, no '=' but in the URL's query)."""
    env = {"HERD_SERVER": srv.server, "HERD_SERVER_FS": srv.settings["FS"],
           "HERD_SERVER_URL": srv.url(), "HERD_LINK": netlink.current(srv),
           "HERD_SERVER_DISK": disklatency.current(srv.settings)}
    if srv.smb:
        env.update(HERD_SMB_URL=srv.smb_url(), HERD_SMB_USER=ss.SMB_USER,
                   HERD_SMB_PASSWORD_FILE=str(srv.smb_dir / "password"))
    return env


def cmd_env(words):
    """env --state DIR: server_env's KEY=VALUE lines, for a client outside
    the namespace (--reach host) or a script."""
    srv = Server(Args("env", words, values=("--state",)).get("--state") or "", "env")
    if not srv.running():
        raise Die(f"env: no server running with state {srv.state}")
    srv.load_settings()
    print("".join(f"{k}={v}\n" for k, v in server_env(srv).items()), end="")
    return 0


def cmd_exec(words):
    a = Args("exec", words, values=("--state",), flags=("--server-fs",), rest_after_dashes=True)
    srv = Server(a.get("--state") or "", "exec")
    if not a.rest:
        raise Die("exec: no command given (exec --state DIR -- COMMAND...)")
    if not srv.running():
        raise Die(f"exec: no server running with state {srv.state}")
    sup = srv.recorded("supervisor")
    srv.load_settings()
    os.environ.update(server_env(srv))
    argv = ["nsenter", f"--net=/proc/{sup}/ns/net"]
    if "--server-fs" in a.flags:
        if srv.server == "knfsd":
            raise Die("exec: --server-fs: a knfsd export lives in its guest (use: guest --state "
                      "DIR -- exec ...)")
        # Also the server's mount namespace: the export as the server sees it.
        argv += [f"--mount=/proc/{sup}/ns/mnt", f"--wd={os.getcwd()}"]
    os.execvp("nsenter", argv + ["--"] + a.rest)


def restart_args(verb, words):
    """--state DIR [--grace S] [--lease S] of a restart verb, checked (the
    lease: 1 s at least for ganesha, 10 s for kernel nfsd), against a
    running server namespace."""
    a = Args(verb, words, values=("--state", "--grace", "--lease"))
    srv = Server(a.get("--state") or "", verb)
    if not srv.running():
        raise Die(f"{verb}: no server namespace with state {srv.state} (start it)")
    srv.lock()
    srv.load_settings()
    grace, lease = a.get("--grace") or "", a.get("--lease") or ""
    if grace:
        check_seconds(f"{verb}: --grace", grace, 0)
    if lease:
        check_seconds(f"{verb}: --lease", lease, 10 if srv.server == "knfsd" else 1)
    return srv, grace, lease


def restart_ganesha(srv, grace, lease):
    """--grace / --lease change the grace period (0: none) and the lease of
    this and later starts; a grace shorter than the lease lowers the lease
    to it unless --lease is given. Without them ganesha starts again as
    configured."""
    if srv.server == "knfsd":
        raise Die("restart-ganesha: the server is kernel nfsd (use restart-server)")
    if grace or lease:
        grace = grace or srv.settings["GRACE"]
        srv.save_settings(GRACE=grace, LEASE=lease or default_lease(grace, srv.settings["LEASE"]))
        srv.write_conf()
    old = srv.record_text("ganesha")
    srv.terminate("ganesha", ss.ganesha_stop_timeout(srv.nlm))
    if srv.sup_send("restart-ganesha", "start-ganesha") and \
            srv.wait_new_record("ganesha", old) and srv.wait_ready(START_TIMEOUT):
        log("ganesha restarted")
        print(srv.recorded("ganesha"))
        return 0
    return verb_failed(srv, "restart-ganesha")


def cmd_restart_ganesha(words):
    return restart_ganesha(*restart_args("restart-ganesha", words))


def cmd_restart_server(words):
    """The NFS server restarts, whichever it is: ganesha as restart-ganesha
    does, kernel nfsd inside its guest (the guest and its disk stay)."""
    srv, grace, lease = restart_args("restart-server", words)
    if srv.server != "knfsd":
        return restart_ganesha(srv, grace, lease)
    srv.save_settings(GRACE=grace or srv.settings["GRACE"], LEASE=lease or srv.settings["LEASE"])
    if knfsd_restart(srv):
        return 0
    return verb_failed(srv, "restart-server")


def statd_server(verb, words):
    srv = running_server(verb, Args(verb, words, values=("--state",)))
    if not srv.nlm:
        raise Die(f"{verb}: the server runs without NLM (started with --no-nlm)")
    if srv.server == "knfsd":
        raise Die(f"{verb}: not for --server knfsd (its statd runs in the guest)")
    return srv


def cmd_stop_statd(words):
    """rpc.statd only (SIGTERM: it unregisters from rpcbind). ganesha keeps
    serving NLM, and answers every new lock NLM4_DENIED_NOLOCKS because it
    cannot monitor the client."""
    srv = statd_server("stop-statd", words)
    srv.terminate("statd", ss.STATD_STOP)
    if srv.alive("statd"):
        raise Die(f"stop-statd: rpc.statd (pid {srv.recorded('statd')}) is still running")
    log("rpc.statd stopped")
    return 0


def cmd_start_statd(words):
    """The supervisor starts rpc.statd again (same state directory and
    port); its PID once it is registered with rpcbind."""
    srv = statd_server("start-statd", words)
    old = srv.record_text("statd")
    if srv.alive("statd"):
        print(srv.recorded("statd"))
        return 0
    registered = lambda: run_quiet(srv.in_netns(["rpcinfo", "-T", "tcp", "127.0.0.1", "100024",
                                                 "1"])) == 0  # noqa: E731
    if srv.sup_send("start-statd", "start-statd") and srv.wait_new_record("statd", old, registered):
        log("rpc.statd started")
        print(srv.recorded("statd"))
        return 0
    return verb_failed(srv, "start-statd")


def smb_server(verb, words):
    srv = running_server(verb, Args(verb, words, values=("--state",)))
    if not srv.smb:
        raise Die(f"{verb}: the server runs without smbd (start it with --smb)")
    return srv


def smbd_left_line(verb, srv):
    left = " ".join(map(str, ss.smbd_leftovers(srv.netns_record())))
    return f"{verb}: smbd processes left: {left}"


def cmd_stop_smbd(words):
    """smbd and every smbd process in the namespace (its per-connection
    children); ganesha keeps serving."""
    srv = smb_server("stop-smbd", words)
    if not srv.smbd_stop_all():
        raise Die(smbd_left_line("stop-smbd", srv))
    log("smbd stopped")
    return 0


def cmd_restart_smbd(words):
    """smbd stops (if it runs) and the supervisor starts it again (same
    config, same password); its PID once smbclient can log in."""
    srv = smb_server("restart-smbd", words)
    if not srv.smbd_stop_all():
        raise Die(smbd_left_line("restart-smbd", srv))
    old = srv.record_text("smbd")
    if srv.sup_send("restart-smbd", "start-smbd") and srv.wait_new_record("smbd", old) and \
            srv.wait_smb_ready(START_TIMEOUT):
        log("smbd restarted")
        print(srv.recorded("smbd"))
        return 0
    return verb_failed(srv, "restart-smbd")


def grace_now(srv):
    """yes while ganesha's log says its latest start is in grace, no
    otherwise (ganesha logs "NFS Server Now IN GRACE, duration N" and "NFS
    Server Now NOT IN GRACE" at EVENT level; a start as "nfs-ganesha
    Starting:", "ganesha.nfsd Starting:" before 4.x)."""
    grace = "no"
    try:
        text = (srv.state / "log" / "ganesha.log").read_text(errors="replace")
    except OSError:
        return grace
    for line in text.splitlines():
        if re.search(r"(nfs-ganesha|ganesha\.nfsd) Starting:", line):
            grace = "no"
        if "NFS Server Now IN GRACE" in line:
            grace = "yes"
        if "NFS Server Now NOT IN GRACE" in line:
            grace = "no"
    return grace


def cmd_status(words):
    a = Args("status", words, values=("--state",))
    srv = Server(a.get("--state") or "", "status")
    if not srv.state.exists() or not srv.is_ours() or not (srv.state / "pid" / "supervisor").exists():
        print("state=stopped")
        return 3
    srv.load_settings()
    st = srv.settings
    knfsd = srv.server == "knfsd"
    probe = netlink.probe_timeout(srv)
    out = [f"url={srv.url()}", f"export={srv.export}", f"fs={st['FS']}", f"mode={st['MODE']}",
           f"workers={st['WORKERS']}", f"disk_latency={disklatency.current(st)}"]
    writable = "yes"
    if knfsd:
        lines, writable = knfsd_status(srv)
        out += lines
    try:
        out.append(f"loopdev={(srv.state / 'run' / 'loopdev').read_text().strip()}")
    except OSError:
        pass
    if srv.nlm and knfsd:
        out.append("nlm=on")  # lockd and statd in the guest, on ports of rpcbind's choosing
    elif srv.nlm:
        out += ["nlm=on", f"nlm_port={ss.NLM_PORT}", f"statd_port={ss.STATD_PORT}",
                f"statd_dir={srv.statd_dir}"]
    else:
        out.append("nlm=off")
    out += [f"grace={st['GRACE']}", f"lease={st['LEASE']}"]
    if not knfsd:
        out.append(f"in_grace={grace_now(srv)}")
    out += [f"link={netlink.current(srv)}", f"link_applied={netlink.applied(srv)}"]
    out += reach.status_lines(srv.state, st)
    if srv.smb:
        out += ["smb=on", f"smb_url={srv.smb_url()}", f"smb_user={ss.SMB_USER}",
                f"smb_password_file={srv.smb_dir / 'password'}",
                f"smb_conf={srv.state / 'conf' / 'smb.conf'}",
                f"smb_sendfile={st['SMB_SENDFILE']}", f"smb_workers={st['SMB_WORKERS']}"]
    else:
        out.append("smb=off")
    names = ["supervisor", "uml"] if knfsd else ["supervisor", "rpcbind"] + \
        (["statd"] if srv.nlm else []) + ["ganesha"]
    names += ["smbd"] if srv.smb else []
    names += ["linkdelay"] if (srv.state / "pid" / "linkdelay").exists() else []
    for name in names:
        pid = srv.recorded(name)
        out.append(f"{name}={'' if pid is None else pid} {'running' if srv.alive(name) else 'dead'}")
    answers = srv.alive("supervisor") and srv.alive(srv.server_proc()) and srv.nfs_answers(probe)
    out.append(f"answers={'yes' if answers else 'no'}")
    smb_ok = True
    if srv.smb:
        smb_ok = srv.alive("supervisor") and srv.alive("smbd") and srv.smb_answers(probe)
        out.append(f"smb_answers={'yes' if smb_ok else 'no'}")
    # running: NFS answers and, with NLM, statd is there (without it every
    # NLM lock is refused); with --smb smbd answers too; kernel nfsd's
    # export takes writes.
    if answers and (not srv.nlm or knfsd or srv.alive("statd")) and smb_ok and writable != "no":
        state, rc = "running", 0
    elif any(srv.alive(n) for n in ("supervisor", "ganesha", "uml", "rpcbind", "statd", "smbd")):
        state, rc = "degraded", 1
    else:
        state, rc = "stopped", 3
    print("\n".join(out + [f"state={state}"]))
    return rc


# ------------------------------------------------------------------ link verbs


def link_or_exit(spec, server):
    """The parsed link, its tools there; exit 1 after one line if not."""
    try:
        link = netlink.parse(spec)
        netlink.check_tools(link, server)
        return link
    except netlink.LinkError as e:
        log(str(e))
        raise SystemExit(1) from None


def cmd_link(words):
    """link --state DIR --set SPEC [--dev DEV]... | --clear: change the
    running server's link; each change replaces the previous link
    completely. (--netns-pid, --chain, --addr: for vcluster.sh, the delay
    rules and delayer in another namespace's chain, for packets of the
    server's address.)"""
    a = Args("link", words, values=("--state", "--set", "--dev", "--netns-pid", "--chain",
                                     "--addr"), flags=("--clear",))
    if "--set" in a.values and a.get("--set") is None:
        raise Die("link: --set needs a SPEC")
    for dev in a.all("--dev"):
        if not re.fullmatch(r"[A-Za-z0-9._-]{1,15}", dev or ""):
            raise Die("link: --dev needs a device name")
    nspid, chain, addr = a.get("--netns-pid", None), a.get("--chain", "INPUT"), a.get("--addr", "-")
    if "--netns-pid" in a.values and not re.fullmatch(r"[0-9]+", nspid or ""):
        raise Die("link: --netns-pid needs a PID")
    if not re.fullmatch(r"INPUT|FORWARD|PREROUTING", chain or ""):
        raise Die("link: --chain: INPUT or FORWARD")
    if not re.fullmatch(r"[0-9.]+", addr or "") and addr != "-":
        raise Die("link: --addr needs an IPv4 address")
    srv = Server(a.get("--state") or "", "link")
    if ("--set" in a.values) + ("--clear" in a.flags) != 1:
        raise Die("link: give one of --set SPEC or --clear")
    if not srv.running():
        raise Die(f"link: no server running with state {srv.state}")
    link = None
    if "--set" in a.values:
        srv.load_settings()
        link = link_or_exit(a.get("--set"), srv.server)
        if srv.server == "ganesha" and srv.reach_net and nspid is None:
            raise Die("link: the server was started with --reach host: ganesha's link is on the "
                      "namespace's lo, which the host's clients do not cross")
    srv.lock()
    srv.load_settings()
    stuck = "link: herd-linkdelay (pid {}) is still running"
    if link is None:
        if not netlink.clear(srv):
            raise Die(stuck.format(srv.recorded("linkdelay")))
        log("link: cleared")
        return 0
    if a.all("--dev") or nspid is not None:
        if not netlink.clear(srv):
            raise Die(stuck.format(srv.recorded("linkdelay")))
    if a.all("--dev"):
        ss.write_atomically(srv.state / "conf" / "link-devs", "".join(f"{d}\n" for d in a.all("--dev")))
    if nspid is not None:
        start = procinfo.proc_start(int(nspid))
        if start is None:
            raise Die(f"link: --netns-pid {nspid}: no such process")
        ss.write_atomically(srv.state / "conf" / "link-where", f"{nspid} {start} {chain} {addr}\n")
    return 0 if netlink.apply(srv, link) else 1


def cmd_qdisc(words):
    """_qdisc --netns-pid PID --dev DEV --set SPEC | --clear: the link's
    qdisc part (tbf, and netem where the kernel has it) on a device of
    another namespace (vcluster.sh: the switch port towards the server
    host)."""
    a = Args("_qdisc", words, values=("--netns-pid", "--dev", "--set"), flags=("--clear",))
    pid, dev = a.get("--netns-pid") or "", a.get("--dev") or ""
    if not pid.isdigit() or not os.path.exists(f"/proc/{pid}/ns/net"):
        raise Die("_qdisc: --netns-pid: no such process")
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,15}", dev):
        raise Die("_qdisc: --dev needs a device name")
    if "--clear" in a.flags:
        netlink.qdisc_clear(int(pid), dev)
        return 0
    link = link_or_exit(a.get("--set") or "", "ganesha")
    if not netlink.qdisc_set(int(pid), dev, link):
        raise Die(f"_qdisc: tc on {dev} failed")
    return 0


def cmd_link_applied(words):
    """_link_applied --state DIR [--netns-pid PID --dev DEV]: what is in
    place of the server's link (vcluster.sh status: with the switch port
    towards it)."""
    a = Args("_link_applied", words, values=("--state", "--netns-pid", "--dev"))
    srv = Server(a.get("--state") or "", "_link_applied")
    srv.load_settings()
    pid, dev = a.get("--netns-pid") or "", a.get("--dev") or ""
    if pid.isdigit() and dev:
        print(netlink.applied(srv, int(pid), dev))
    else:
        print(netlink.applied(srv))
    return 0


def cmd_link_check(words):
    """_link_check SPEC (vcluster.sh up): check SPEC and what it needs
    before anything starts; stdout the normalized spec, then what it adds
    to a round trip (microseconds)."""
    link = link_or_exit(words[0] if words else "", "ganesha")
    print(f"{link.spec}\n{link.round_trip_us()}")
    return 0


# ------------------------------------------------------------------ main

VERBS = {
    "start": cmd_start, "stop": cmd_stop, "exec": cmd_exec, "env": cmd_env,
    "restart-ganesha": cmd_restart_ganesha, "start-ganesha": cmd_restart_ganesha,
    "restart-server": cmd_restart_server, "threads": cmd_threads,
    "export-mode": cmd_export_mode, "disk-latency": cmd_disk_latency, "guest": cmd_guest,
    "stop-statd": cmd_stop_statd,
    "start-statd": cmd_start_statd, "restart-smbd": cmd_restart_smbd,
    "start-smbd": cmd_restart_smbd, "stop-smbd": cmd_stop_smbd, "status": cmd_status,
    "link": cmd_link, "_qdisc": cmd_qdisc, "_link_applied": cmd_link_applied,
    "_link_check": cmd_link_check,
}


def main(argv):
    os.environ["PATH"] = f"{os.environ.get('PATH', '')}:{PATH_EXTRA}"
    try:
        if not argv or argv[0] in ("-h", "--help", "help"):
            raise Usage("")
        verb = VERBS.get(argv[0])
        if verb is None:
            raise Usage(f"unknown command {argv[0]}")
        return verb(argv[1:])
    except Usage as e:
        if str(e):
            log(str(e))
        sys.stderr.write(USAGE)
        return 2
    except BadValue as e:
        log(str(e))
        return 2
    except Die as e:
        log(str(e))
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
