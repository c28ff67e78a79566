#!/usr/bin/env python3
"""agent_probe.py — what another process that reaches a User-Mode Linux
guest's agent (uml-init.c) may try, run by test_knfsd_agent.py and
test_kclient.py as an unprivileged user inside the server's network
namespace or on a virtual cluster's bridge. Standard library only; prints
one JSON object.

  agent_probe.py forge ADDR SECRET_FILE WORD...
      WORD... (a command) sent without the guest's secret in every way the
      agent might take it: the old one-line protocol, netstrings without a
      secret, with a wrong one, with a short one, and nothing at all;
      {"secret": what reading SECRET_FILE gave, "<way>": the reply, ...}
  agent_probe.py dribble ADDR CONNECTIONS STOP_FILE
      CONNECTIONS connections that send the start of a request ("64:")
      and then one more byte every 0.5 s, never a whole one, until the
      agent closes them, STOP_FILE exists or 120 s pass;
      {"replies": [what each got back], "open": how many were still open}
"""
import json
import os
import select
import socket
import sys
import time

PORT = 7070  # knfsd.AGENT_PORT


def ask(addr, data):
    """data to the agent; all it sent back before closing."""
    with socket.create_connection((addr, PORT), timeout=30) as conn:
        conn.sendall(data)
        out = b""
        while True:
            chunk = conn.recv(4096)
            if not chunk:
                return out.decode(errors="replace")
            out += chunk


def netstrings(*words):
    return b"".join(b"%d:%s," % (len(w), w) for w in words) + b"\n"


def forge(addr, secret_file, words):
    words = [w.encode() for w in words]
    got = {}
    try:
        with open(secret_file, "rb") as f:
            f.read()
        got["secret"] = "read"
    except OSError as e:
        got["secret"] = type(e).__name__
    got["one line"] = ask(addr, b" ".join(words) + b"\n")
    got["no secret"] = ask(addr, netstrings(*words))
    got["wrong secret"] = ask(addr, netstrings(b"0" * 64, *words))
    got["short secret"] = ask(addr, netstrings(b"0", *words))
    got["nothing"] = ask(addr, b"")
    return got


def dribble(addr, n, stop_file):
    conns = [socket.create_connection((addr, PORT), timeout=30) for _ in range(n)]
    replies = [b""] * n
    live = set(range(n))
    for c in conns:
        c.sendall(b"64:")
    deadline = time.monotonic() + 120
    while live and time.monotonic() < deadline and not os.path.exists(stop_file):
        readable, _, _ = select.select([conns[i] for i in live], [], [], 0.5)
        for i in list(live):
            try:
                if conns[i] in readable:
                    chunk = conns[i].recv(4096)
                    replies[i] += chunk
                    if not chunk:
                        live.discard(i)
                else:
                    conns[i].sendall(b"a")
            except OSError:
                live.discard(i)
    for c in conns:
        c.close()
    return {"replies": [r.decode(errors="replace") for r in replies], "open": len(live)}


def main(argv):
    if len(argv) >= 4 and argv[0] == "forge":
        print(json.dumps(forge(argv[1], argv[2], argv[3:])))
        return 0
    if len(argv) == 4 and argv[0] == "dribble":
        print(json.dumps(dribble(argv[1], int(argv[2]), argv[3])))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
