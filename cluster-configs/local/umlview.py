#!/usr/bin/env python3
"""umlview.py — starts linux.uml (a User-Mode Linux guest: the kernel nfsd
of nfs-server.sh --server knfsd, a client host of vcluster.sh
--kernel-client) confined to the part of the host it needs.

A guest's root can mount the host's files with hostfs, and UML's
`hostfs=PREFIX` does not confine that (a mount of PREFIX/../.. reaches
the host's /). So linux.uml runs chrooted into a *view*: a directory of
its own mount namespace that holds only what the guest needs, every mount
in it read-only, nosuid and nodev except where the guest must write, and
with no capability but those it needs:
  - the server (kernel nfsd) runs as the guests' user, herd-guest, with
    none: it owns its log directory and its image, nothing else;
  - a client runs as root with only CAP_DAC_READ_SEARCH and
    CAP_DAC_OVERRIDE: it reads job files and programs at their host paths,
    also below root's private directories, and writes results that herd,
    root in the guest, must find to be its own (hostfs shows a file's
    owner on the host: a file of herd-guest's would be someone else's).
Whatever a guest does through hostfs is done with that identity inside
the view.

  server view                        client view
  /usr /etc       host's, read-only  /               the host's whole tree,
  /bin /lib ...   links into usr                     read-only, without its
  /mnt            empty                              /proc /sys /dev /run
  /state          the guest's dir    GUEST_DIR/log   read-write (logs)
  /state/log      read-write (logs)  SHARE...        read-write (results)
  /disk.img       the export image,  (init, the shim, the guest's dir at
                  read-write          their host paths, read-only)
  /init           uml-init
  /uml-xstate.so  uml-xstate.c (LD_PRELOAD)
  both: /dev/null and /dev/net/tun (made here for linux.uml's user),
        /proc/cpuinfo (host's), /run (a private tmpfs: the guest's memory
        file and uml_dir)
Nothing the host side reads back (configs, records) is writable in a
view; the guests' logs are shown, never trusted.

  umlview.py run --role server|client --view DIR --guest-dir DIR --init PATH
                 --preload PATH [--image FILE] [--share DIR]... [--mem BYTES]
                 -- ARG...
      in a mount namespace of its own (unshare --mount --propagation
      private): build the view in DIR (an empty directory), then exec
      linux.uml in it with the path arguments for that layout (root,
      hostfs, init, uml_dir, ubd0, HERD_GUEST) followed by ARG...; the
      process keeps its PID throughout (unshare and this exec).

Standard library only (Debian 12's python3)."""

import argparse
import ctypes
import os
import pwd
import stat
import sys
from pathlib import Path

GUEST_USER = "herd-guest"
LINUX_UML = "/usr/bin/linux.uml"
SETPRIV = "/usr/bin/setpriv"
CLIENT_CAPS = "dac_read_search,dac_override"
MEM_MARGIN = 64 << 20  # bytes of the private /run beyond the guest's memory

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC = 1, 2, 4, 32, 4096, 16384
MNT_DETACH = 2
AT_FDCWD, AT_RECURSIVE = -100, 0x8000
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV = 0x1, 0x2, 0x4
SYS_MOUNT_SETATTR = 442  # the same number on every architecture (generic table)

_libc = ctypes.CDLL(None, use_errno=True)


class ViewError(Exception):
    pass


class MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _check(rc, what):
    if rc != 0:
        err = ctypes.get_errno()
        raise ViewError(f"{what}: {os.strerror(err)}")


def mount(source, target, fstype=None, flags=0, data=None):
    enc = lambda v: None if v is None else str(v).encode()  # noqa: E731
    _check(_libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags),
                       enc(data)), f"mount {source} on {target}")


def detach(target):
    _check(_libc.umount2(str(target).encode(), MNT_DETACH), f"umount {target}")


def set_attrs(target, attr_set, attr_clr=0, recursive=False):
    """mount_setattr(2): mount flags of target (and, recursive, of every
    mount below it)."""
    attr = MountAttr(attr_set, attr_clr, 0, 0)
    _libc.syscall.restype = ctypes.c_long
    rc = _libc.syscall(ctypes.c_long(SYS_MOUNT_SETATTR), ctypes.c_int(AT_FDCWD),
                       str(target).encode(), ctypes.c_uint(AT_RECURSIVE if recursive else 0),
                       ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)))
    _check(rc, f"mount_setattr {target}")


READ_ONLY = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV
WRITABLE = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV


def bind(source, target, attrs, recursive=False):
    """source bound on target (made first: an empty file or directory),
    with those mount attributes (READ_ONLY or WRITABLE; a device node
    keeps its dev)."""
    target = Path(target)
    if not target.exists():
        if Path(source).is_dir():
            target.mkdir(parents=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.touch()
    mount(source, target, flags=MS_BIND | (MS_REC if recursive else 0))
    set_attrs(target, attrs, 0 if attrs & MOUNT_ATTR_RDONLY else MOUNT_ATTR_RDONLY, recursive)


def tmpfs(target, size, mode=0o755):
    """A tmpfs on target (made first where it is missing), nosuid, nodev."""
    if not Path(target).is_dir():
        Path(target).mkdir()
    mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode={mode:o}")


def mounts_at_or_below(top):
    """Mount points at or below top in this namespace, deepest first
    (mountinfo writes a space in a path as \\040)."""
    top = str(top).rstrip("/")
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].encode().decode("unicode_escape")
        if point == top or point.startswith(top + "/"):
            found.append(point)
    return sorted(found, key=len, reverse=True)


def host_devices(view, uid, gid):
    """/dev of the view: a tmpfs with the two devices linux.uml opens, made
    here for the guests' user (its console's /dev/null; /dev/net/tun for
    the tap, which a host may keep root's alone), then read-only."""
    target = view / "dev"
    if not target.is_dir():
        target.mkdir()
    mount("tmpfs", target, "tmpfs", MS_NOSUID, "size=64k,mode=755")
    (target / "net").mkdir()
    for name, mode, major, minor in (("null", 0o666, 1, 3), ("net/tun", 0o600, 10, 200)):
        os.mknod(target / name, stat.S_IFCHR | mode, os.makedev(major, minor))
        os.chown(target / name, uid, gid)
    set_attrs(target, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID)


def private_run(view, uid, gid, mem):
    """/run of the view: a tmpfs of the guest's user for its memory file
    (UML wants a tmpfs that allows exec mappings) and its uml_dir."""
    tmpfs(view / "run", mem + MEM_MARGIN)
    for sub in ("mem", "uml"):
        (view / "run" / sub).mkdir(mode=0o700)
        os.chown(view / "run" / sub, uid, gid)


def host_cpuinfo(view):
    """/proc of the view: only the host's /proc/cpuinfo (UML reads the CPU's
    features there)."""
    tmpfs(view / "proc", "1m")
    bind("/proc/cpuinfo", view / "proc" / "cpuinfo", READ_ONLY)
    set_attrs(view / "proc", READ_ONLY)


def view_server(view, args, uid, gid):
    tmpfs(view, "1m")
    (view / "mnt").mkdir()
    for top in ("usr", "etc"):
        bind(f"/{top}", view / top, READ_ONLY, recursive=True)
    for top in ("bin", "sbin", "lib", "lib64"):
        host = Path("/") / top
        if host.is_symlink():
            (view / top).symlink_to(os.readlink(host))
        elif host.is_dir():
            bind(host, view / top, READ_ONLY, recursive=True)
    host_devices(view, uid, gid)
    host_cpuinfo(view)
    private_run(view, uid, gid, args.mem)
    bind(args.guest_dir, view / "state", READ_ONLY)
    bind(Path(args.guest_dir) / "log", view / "state" / "log", WRITABLE)
    bind(args.image, view / "disk.img", WRITABLE)
    bind(args.init, view / "init", READ_ONLY)
    bind(args.preload, view / "uml-xstate.so", READ_ONLY)
    set_attrs(view, READ_ONLY)
    return {"init": "/init", "guest": "/state", "preload": "/uml-xstate.so",
            "disks": ["ubd0=/disk.img"]}


def view_client(view, args, uid, gid):
    bind("/", view, READ_ONLY, recursive=True)
    for top in ("proc", "sys", "dev", "run"):
        for point in mounts_at_or_below(view / top):
            if Path(point).is_mount():  # (gone when a mount above it went)
                detach(point)
    host_devices(view, uid, gid)
    host_cpuinfo(view)
    private_run(view, uid, gid, args.mem)
    for rw in [str(Path(args.guest_dir) / "log")] + args.share:
        bind(rw, view / Path(rw).relative_to("/"), WRITABLE)
    return {"init": args.init, "guest": args.guest_dir, "preload": args.preload, "disks": []}


def own_mount_namespace():
    """This process has a mount namespace its parent has not (unshare made
    it): the view's mounts never reach the caller's."""
    return os.readlink("/proc/self/ns/mnt") != os.readlink(f"/proc/{os.getppid()}/ns/mnt")


def check_args(args):
    for name in ("view", "guest_dir", "init", "preload") + (("image",) if args.role == "server" else ()):
        value = getattr(args, name)
        if not value or not Path(value).is_absolute():
            raise ViewError(f"--{name.replace('_', '-')}: an absolute path is needed")
    for share in args.share:
        if not Path(share).is_absolute() or not Path(share).is_dir():
            raise ViewError(f"--share {share}: not an absolute directory")
    view = Path(args.view)
    if not view.is_dir() or view.is_symlink() or any(view.iterdir()):
        raise ViewError(f"--view {view}: not an empty directory")


def identity(role):
    """(uid, gid, capabilities) linux.uml runs with (see the top)."""
    if role == "client":
        return 0, 0, CLIENT_CAPS
    try:
        pw = pwd.getpwnam(GUEST_USER)
    except KeyError:
        raise ViewError(f"user {GUEST_USER} is missing: cluster-configs/local/install.sh makes it"
                        f" (useradd --system --user-group {GUEST_USER})") from None
    return pw.pw_uid, pw.pw_gid, ""


def main_run(args):
    check_args(args)
    if os.geteuid() != 0:
        raise ViewError("needs root (mounts, chroot)")
    if not own_mount_namespace():
        raise ViewError("run it in a mount namespace of its own (unshare --mount --propagation private)")
    uid, gid, caps = identity(args.role)
    view = Path(args.view)
    paths = (view_server if args.role == "server" else view_client)(view, args, uid, gid)
    plus = "".join(f",+{c}" for c in caps.split(",") if c)
    # (root keeps what is in its bounding set; another user gets nothing)
    argv = [SETPRIV, f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
            f"--inh-caps=-all{plus}", f"--bounding-set=-all{plus}", "--no-new-privs", "--"]
    argv += [LINUX_UML, "root=/dev/root", "rootfstype=hostfs", "rootflags=/", "hostfs=/",
             f"init={paths['init']}", "uml_dir=/run/uml", *paths["disks"], *args.uml_args,
             f"HERD_GUEST={paths['guest']}"]
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "TMPDIR": "/run/mem",
           "LD_PRELOAD": paths["preload"]}
    os.chroot(view)
    os.chdir("/")
    os.execve(SETPRIV, argv, env)


def main(argv):
    ap = argparse.ArgumentParser(prog="umlview.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run")
    run.add_argument("--role", choices=("server", "client"), required=True)
    run.add_argument("--view", required=True)
    run.add_argument("--guest-dir", required=True)
    run.add_argument("--init", required=True)
    run.add_argument("--preload", required=True)
    run.add_argument("--image")
    run.add_argument("--share", action="append", default=[])
    run.add_argument("--mem", type=int, default=512 << 20)
    run.add_argument("uml_args", nargs="*")
    args = ap.parse_args(argv)
    try:
        main_run(args)
    except (ViewError, OSError) as e:
        print(f"umlview.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
