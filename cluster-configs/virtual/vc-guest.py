#!/usr/bin/env python3
"""vc-guest.py — the host side of vcluster.sh --kernel-client's client
hosts: User-Mode Linux guests whose PID 1 is cluster-configs/local/uml-init.c
(role=client), reached through its agent (TCP port knfsd.AGENT_PORT on the
guest's address on the cluster's bridge).

  vc-guest.py sh ADDR LINE        run LINE with /bin/sh in the guest; its
                                  output on stdout, its exit status ours
                                  (255: the guest could not be reached);
                                  vc-agent runs Open MPI's orted so
  vc-guest.py send ADDR COMMAND   one agent command (read PATH, poweroff);
                                  its reply on stdout; exit 0 on "ok"
  vc-guest.py wait ADDR SECONDS PID
                                  until the guest's agent answers; exit 1
                                  when process PID (its linux.uml) exits
                                  first or SECONDS pass
  vc-guest.py memory-dir FALLBACK BYTES
                                  where the guests' memory files go
                                  (knfsd.memory_dir)

Standard library only (Debian 12's python3)."""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "local"))
import knfsd  # noqa: E402  (the agent protocol and its port)

TRAILER = b"\0exit "


def shell(addr, line):
    """Stream LINE's output from the guest; its exit status."""
    try:
        conn = knfsd.agent_connect("sh " + line, addr=addr)
    except OSError as e:
        print(f"vc-guest.py: the agent at {addr}: {e}", file=sys.stderr)
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


def wait(addr, seconds, pid):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not Path(f"/proc/{pid}").exists():
            return 1
        try:
            ok, _ = knfsd.agent_send("read /proc/uptime", 2.0, addr)
            if ok:
                return 0
        except OSError:
            pass
        time.sleep(knfsd.READY_PROBE)
    return 1


def main(argv):
    if len(argv) == 3 and argv[0] == "sh":
        return shell(argv[1], argv[2])
    if len(argv) >= 3 and argv[0] == "send":
        try:
            ok, text = knfsd.agent_send(" ".join(argv[2:]), addr=argv[1])
        except OSError as e:
            print(f"vc-guest.py: the agent at {argv[1]}: {e}", file=sys.stderr)
            return 1
        sys.stdout.write(text if ok else f"vc-guest.py: {text}\n")
        return 0 if ok else 1
    if len(argv) == 4 and argv[0] == "wait":
        return wait(argv[1], float(argv[2]), int(argv[3]))
    if len(argv) == 3 and argv[0] == "memory-dir":
        print(knfsd.memory_dir(argv[1], int(argv[2])))
        return 0
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
