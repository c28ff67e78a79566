#!/usr/bin/env python3
"""vc-guest.py — the host side of vcluster.sh --kernel-client's client
hosts: User-Mode Linux guests whose PID 1 is cluster-configs/local/uml-init.c
(role=client), reached through its agent (TCP port knfsd.AGENT_PORT on the
guest's address on the cluster's bridge; knfsd.agent_send's protocol).
DIR is a guest's directory, STATE/guests/NAME: its address is the addr=
line of DIR/config, its agent's secret DIR/secret (fresh for every boot).

  vc-guest.py secret DIR          a fresh secret in DIR/secret (before the
                                  guest boots: knfsd.secret_write)
  vc-guest.py sh DIR LINE         run LINE with /bin/sh in the guest; its
                                  output on stdout, its exit status ours
                                  (255: the guest could not be reached);
                                  vc-agent runs Open MPI's orted so
  vc-guest.py send DIR COMMAND [ARG...]
                                  one agent command (read PATH, poweroff),
                                  each word as it is; its reply on stdout;
                                  exit 0 on "ok"
  vc-guest.py wait DIR SECONDS PID
                                  until the guest's agent answers; exit 1
                                  when process PID (its linux.uml) exits
                                  first or SECONDS pass

Standard library only (Debian 12's python3)."""

import ipaddress
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "local"))
import knfsd  # noqa: E402  (the agent protocol and its port)

TRAILER = b"\0exit "


def in_cluster_network(state: "str | Path") -> bool:
    """Whether this process is in the network namespace of one of the
    cluster's namespace hosts (STATE/hosts: NAME PID START ADDR ROLE), the
    only place the guests' bridge addresses lead to the guests: from any
    other, a connect to them would leave through the default route."""
    mine = os.stat("/proc/self/ns/net").st_ino
    for line in (Path(state) / "hosts").read_text().splitlines():
        fields = line.split()
        if len(fields) < 5 or fields[4] == "guest" or not fields[1].isdigit():
            continue
        try:
            # (the host's own process, not one that took its PID since:
            # its start time, field 22 of /proc/PID/stat, as vc-agent checks)
            with open(f"/proc/{fields[1]}/stat") as f:
                start = f.read().rsplit(")", 1)[1].split()[19]
            if start == fields[2] and os.stat(f"/proc/{fields[1]}/ns/net").st_ino == mine:
                return True
        except (OSError, IndexError):  # (a host gone since the list was written)
            continue
    return False


def guest_of(guest_dir: "str | Path") -> "tuple[str, Path]":
    """(address, secret file) of the guest whose directory is guest_dir
    (STATE/guests/NAME); OSError when its config cannot be read,
    ValueError when it names no IPv4 address or this process is outside
    the cluster's network."""
    addr = ""
    for line in (Path(guest_dir) / "config").read_text().splitlines():
        if line.startswith("addr="):
            addr = line.removeprefix("addr=")
    if not in_cluster_network(Path(guest_dir).resolve().parent.parent):
        raise ValueError("not inside the cluster's network: run it through vcluster.sh exec")
    return str(ipaddress.IPv4Address(addr)), Path(guest_dir) / "secret"


def shell(guest_dir, line):
    """Stream LINE's output from the guest; its exit status."""
    try:
        addr, secret = guest_of(guest_dir)
        conn = knfsd.agent_connect(secret, ["sh", line], addr=addr)
    except (OSError, ValueError) as e:
        print(f"vc-guest.py: the agent of {guest_dir}: {e}", file=sys.stderr)
        return 255
    conn.settimeout(None)
    out = sys.stdout.buffer
    with conn:
        held = b""
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            held += chunk
            # keep back what could be the start of the trailer
            cut = held.rfind(b"\0")
            keep = held[cut:] if cut >= 0 else b""
            out.write(held[: len(held) - len(keep)])
            out.flush()
            held = keep
    if held.startswith(TRAILER) and held[len(TRAILER):].strip().isdigit():
        return int(held[len(TRAILER):].strip())
    out.write(held)
    print(f"vc-guest.py: {addr}: the connection ended before the command's exit status",
          file=sys.stderr)
    return 255


def wait(guest_dir, seconds, pid):
    try:
        addr, secret = guest_of(guest_dir)
    except (OSError, ValueError) as e:
        print(f"vc-guest.py: the agent of {guest_dir}: {e}", file=sys.stderr)
        return 1
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not Path(f"/proc/{pid}").exists():
            return 1
        try:
            ok, _ = knfsd.agent_send(secret, ["read", "/proc/uptime"], 2.0, addr)
            if ok:
                return 0
        except OSError:
            pass
        time.sleep(knfsd.READY_PROBE)
    return 1


def main(argv):
    if len(argv) == 2 and argv[0] == "secret":
        try:
            knfsd.secret_write(Path(argv[1]) / "secret")
        except OSError as e:
            print(f"vc-guest.py: {argv[1]}/secret: {e}", file=sys.stderr)
            return 1
        return 0
    if len(argv) == 3 and argv[0] == "sh":
        return shell(argv[1], argv[2])
    if len(argv) >= 3 and argv[0] == "send":
        try:
            addr, secret = guest_of(argv[1])
            ok, text = knfsd.agent_send(secret, argv[2:], addr=addr)
        except (OSError, ValueError) as e:
            print(f"vc-guest.py: the agent of {argv[1]}: {e}", file=sys.stderr)
            return 1
        sys.stdout.write(text if ok else f"vc-guest.py: {text}\n")
        return 0 if ok else 1
    if len(argv) == 4 and argv[0] == "wait":
        return wait(argv[1], float(argv[2]), int(argv[3]))
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
