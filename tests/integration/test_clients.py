"""Many NFS clients per rank (clients_per_rank, src/core/runner_clients.c):
each client its own TCP connection, file, RPC window, rows and errors, all
of a rank's clients on one event loop (src/lib/fiber.c), against the
embedded ganesha (cluster-configs/local/nfs-server.sh).

1. 2 ranks x 200 clients: 400 distinct established connections on the
   server's port 2049, counted in the server's namespace during a phase;
   then a write and a read with verify: 400 rows, each client's exact
   bytes, exactly 4 WRITE RPCs per client at a fixed window (nfs_inflight
   = 2), every row's window 2, verify clean, 400 files in the export.
2. Locks over NLM (NFSv3) and NFSv4, 2 ranks x 20 clients, exclusive
   whole-file blocking locks: every client granted count times, no
   violation, holds recorded per (rank, client) and never overlapping.
   2 ranks x 6 clients queueing for one lock: every wait lies inside its
   client's row, and the summary's waiting share is the waits over the
   clients' time (their rows' summed), at most 100 %.
3. ganesha frozen (SIGSTOP) for longer than op_timeout during a write of
   2 ranks x 100 clients: ETIMEDOUT counted by every client (the errors
   table names all 200), the watchdog's stuck table names all 200, the
   run ends (exit 3) within its bound.
4. SIGTERM to one rank's process while 2 x 50 clients write: every rank
   and client stops, exit 143, the results say interrupted.
7. The other kinds with 2 ranks x 20 clients, NFSv3 and NFSv4 (each
   client its own NFSv4 client and open owner for its writes): md5 of
   each client's file, a segmented shared write and its verified read
   (each client its own region), a meta tree of 4 KiB files per client,
   a storm: every client's rows, no error, no verify failure.
8. On the wire (a raw capture on lo in the server's namespace): the
   AUTH_SYS machine names of 2 ranks x 3 clients' RPCs are the six
   HOST-rR-cK, one per client.
6. A load ladder in clients (clients_active = 10,50,all) over 2 ranks x
   50 clients: phases w.10c, w.50c, w.100c, in each exactly that many
   clients moved their bytes, spread evenly over the ranks; the steps
   table's active_clients.
5. A server that refuses connections past 50 (iptables connlimit in its
   namespace, TCP resets): of 1 rank x 100 clients, 50 write their files,
   the other 50 each count ECONNREFUSED (op connect) in the errors table,
   named by client; exit 3, no hang.

Needs root and nfs-ganesha, and a herd built with libnfs; skips with a
message otherwise. Run:
/usr/bin/python3 -m pytest -q -rsx tests/integration/test_clients.py
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import h5py
import pytest

from conftest import describe, load_results, proc_cmdlines, write_job
from test_nfs import herd_run_nfs, ns_background, signal_ganesha
from test_nfs_server import Server, _why_skip, wait_until

_WHY = _why_skip()
pytestmark = pytest.mark.skipif(_WHY is not None, reason=_WHY or "")


@pytest.fixture
def ganesha(tmp_path):
    s = Server(tmp_path / "nfs")
    try:
        s.start("--fs", "dir")  # its files seen from here
        yield s
    finally:
        s.stop(check=False)
    s.assert_clean()


def server_peers(s):
    """The peers of the established TCP connections to port 2049, as the
    server's namespace sees them (its side of each)."""
    proc = s.exec("ss", "-Htn", "state", "established", "( sport = :2049 )")
    assert proc.returncode == 0, proc.stderr
    return {line.split()[-1] for line in proc.stdout.splitlines() if line.strip()}


def run_writing(s, herd_bin, job, out, clients, act):
    """herd in the background; once every client's file exists on the
    server, act() (a signal); returns (CompletedProcess, seconds from act
    to the end)."""
    run = ns_background(s, herd_bin, 2, job, out)
    try:
        run.wait_line(r"^herd: run \S+: 2 ranks")
        files = lambda: list((s.state / "export").glob("herd-*/*/*"))
        assert wait_until(lambda: len(files()) == clients, timeout=60, step=0.2), len(files())
        time.sleep(0.5)
        t0 = time.monotonic()
        act()
        proc, _ = run.wait()
        return proc, time.monotonic() - t0
    finally:
        run.kill()


def test_connections_bytes_rpcs(ganesha, herd_bin, tmp_path):
    k, nranks, fsize, bsize = 200, 2, 256 << 10, 64 << 10
    job = write_job(tmp_path / "c.ini",
                    {"backend": "libnfs", "target": ganesha.url, "clients_per_rank": k,
                     "file_size": fsize, "block_size": bsize, "nfs_inflight": 2},
                    [("hold", {"kind": "idle", "duration": "6s"}),
                     ("w", {"kind": "write"}),
                     ("r", {"kind": "read", "verify": "yes"})])
    out = tmp_path / "c.h5"
    run = ns_background(ganesha, herd_bin, nranks, job, out)
    peers = set()
    try:
        run.wait_line(r"^herd: run \S+: 2 ranks")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(peers) < k * nranks:
            peers = server_peers(ganesha)
            time.sleep(0.2)
        proc, _ = run.wait()
    finally:
        run.kill()
    assert len(peers) == k * nranks, f"{len(peers)} connections on the server, not {k * nranks}"
    assert proc.returncode == 0, describe(proc)
    res = load_results(out)
    assert res.attrs["clients_per_rank"] == k
    for name in ("w", "r"):
        rows = res.phases[name].ranks
        assert len(rows) == k * nranks, name
        pairs = set(zip(rows["rank"].tolist(), rows["client"].tolist()))
        assert pairs == {(r, c) for r in range(nranks) for c in range(k)}, name
        assert (rows["bytes"] == fsize).all(), name
        assert (rows["errors"] == 0).all() and (rows["verify_failures"] == 0).all(), name
        # the global client id names each client's own file
        gid = rows["rank"] * k + rows["client"]
        assert (rows["file_rank"] == gid).all(), name
        assert res.phases[name].attrs["active_clients"] == k * nranks
    w = res.phases["w"].ranks
    assert (w["rpc_window_write"] == 2).all()
    assert len(set(w["ops"].tolist())) == 1, "every client made the same calls"
    with h5py.File(out, "r") as f:
        ops = f["phases/w/ops"][()]
    rpc = ops[ops["op"] == b"rpc_write"]
    assert int(rpc["count"].sum()) == k * nranks * (fsize // bsize), rpc
    files = list((ganesha.state / "export").glob("herd-*/unique-256K/*"))
    assert files == [] or len(files) == k * nranks  # kept: keep = no removes them


@pytest.mark.parametrize("version", [3, 4])
def test_locks_per_client(ganesha, herd_bin, tmp_path, version):
    k, nranks, count = 20, 2, 3
    url = ganesha.url.replace("version=3", f"version={version}")
    job = write_job(tmp_path / "l.ini",
                    {"backend": "libnfs", "target": url, "clients_per_rank": k},
                    [("lk", {"kind": "lock", "lock_mode": "exclusive", "lock_range": "whole",
                             "lock_wait": "blocking", "count": count, "lock_hold": "1ms"})])
    out = tmp_path / "l.h5"
    proc = herd_run_nfs(ganesha, herd_bin, nranks, job, out)
    assert proc.returncode == 0, describe(proc)
    res = load_results(out)
    ph = res.phases["lk"]
    rows = ph.ranks
    assert len(rows) == k * nranks
    assert (rows["grants"] == count).all(), rows["grants"]
    assert (rows["violations"] == 0).all() and (rows["errors"] == 0).all()
    with h5py.File(out, "r") as f:
        holds = f["phases/lk/holds"][()]
        clash = f["phases/lk"].attrs["exclusive_overlap_seconds"]
    owners = set(zip(holds["rank"].tolist(), holds["client"].tolist()))
    assert owners == {(r, c) for r in range(nranks) for c in range(k)}
    assert len(holds) == k * nranks * count
    assert clash == 0
    spans = sorted(zip(holds["granted"], holds["released"]))
    assert all(a[1] <= b[0] + 0.002 for a, b in zip(spans, spans[1:])), "exclusive holds overlap"


def test_lock_wait_share_is_of_the_clients_time(ganesha, herd_bin, tmp_path):
    """With K clients per rank the parties that wait are the clients: the
    second line's share divides the waits by the clients' time (each row's
    t_end - t_start, rows that did work), never by the ranks'."""
    k, nranks, count = 6, 2, 4
    job = write_job(tmp_path / "q.ini",
                    {"backend": "libnfs", "target": ganesha.url, "clients_per_rank": k},
                    [("q", {"kind": "lock", "lock_mode": "exclusive", "lock_range": "whole",
                            "lock_wait": "blocking", "count": count, "lock_hold": "20ms"})])
    out = tmp_path / "q.h5"
    proc = herd_run_nfs(ganesha, herd_bin, nranks, job, out)
    assert proc.returncode == 0, describe(proc)
    with h5py.File(out, "r") as f:
        g = f["phases/q"]
        rows, holds = g["ranks"][()], g["holds"][()]
        waits = float(g.attrs["wait_seconds"])
    assert len(rows) == k * nranks and (rows["grants"] == count).all()
    assert waits > 0 and (holds["granted"] > holds["asked"]).any(), "no client waited"
    row_of = {(int(r["rank"]), int(r["client"])): r for r in rows}
    for h in holds:  # a wait lies inside its client's row
        r = row_of[(int(h["rank"]), int(h["client"]))]
        assert r["t_start"] <= h["asked"] <= h["granted"] <= r["t_end"], (h, r)
    worked = rows[rows["ops"] > 0]
    share = 100 * waits / float((worked["t_end"] - worked["t_start"]).sum())
    line = next(l for l in proc.stdout.splitlines() if "excl whole wait" in l)
    m = re.search(r"([0-9.]+) s waiting \((\d+)% of the clients' time\)", line)
    assert m, line
    assert float(m.group(1)) == pytest.approx(waits, abs=5e-4)
    assert abs(int(m.group(2)) - share) <= 0.5 + 1e-9 and int(m.group(2)) <= 100, (share, line)


def test_frozen_server_every_client_times_out(ganesha, herd_bin, tmp_path):
    k, nranks, op_timeout = 100, 2, 3
    job = write_job(tmp_path / "f.ini",
                    {"backend": "libnfs", "target": ganesha.url, "clients_per_rank": k,
                     "op_timeout": f"{op_timeout}s", "stuck_after": "2s"},
                    [("w", {"kind": "write", "file_size": "2M", "block_size": "64K",
                            "nfs_inflight": 1, "think_time": "200ms"})])
    out = tmp_path / "f.h5"

    def freeze():
        signal_ganesha(ganesha, signal.SIGSTOP)
        try:
            time.sleep(op_timeout + 3)
        finally:
            os.kill(ganesha.pid, signal.SIGCONT)

    proc, waited = run_writing(ganesha, herd_bin, job, out, k * nranks, freeze)
    assert proc.returncode == 3, describe(proc)
    res = load_results(out)
    errs = res.phases["w"].errors
    timed = errs[errs["errno_name"] == b"ETIMEDOUT"]
    named = set(zip(timed["rank"].tolist(), timed["client"].tolist()))
    assert named == {(r, c) for r in range(nranks) for c in range(k)}, len(named)
    rows = res.phases["w"].ranks
    assert (rows["errors"] > 0).all()
    assert waited < 120, waited
    with h5py.File(out, "r") as f:  # the watchdog named each stalled client
        stuck = f["phases/w/stuck"][()]
    assert set(zip(stuck["rank"].tolist(), stuck["client"].tolist())) == \
        {(r, c) for r in range(nranks) for c in range(k)}
    assert "client" in proc.stderr and "stuck for" in proc.stderr


def test_sigterm_stops_every_client(ganesha, herd_bin, tmp_path):
    k, nranks = 50, 2
    job = write_job(tmp_path / "t.ini",
                    {"backend": "libnfs", "target": ganesha.url, "clients_per_rank": k},
                    [("w", {"kind": "write", "file_size": "2M", "block_size": "64K",
                            "think_time": "200ms"})])
    out = tmp_path / "t.h5"

    def term_one_rank():
        ranks = [pid for pid, cmd in proc_cmdlines().items() if _is_herd_rank(cmd, str(out))]
        assert len(ranks) == nranks, ranks
        os.kill(ranks[0], signal.SIGTERM)

    proc, took = run_writing(ganesha, herd_bin, job, out, k * nranks, term_one_rank)
    assert proc.returncode == 143, describe(proc)
    assert took < 30, took
    res = load_results(out)
    assert res.phases["w"].attrs["status"] == "interrupted"
    assert len(res.phases["w"].ranks) == k * nranks


def _is_herd_rank(cmdline, out):
    argv = cmdline.split(b"\0")
    return len(argv) > 1 and argv[0].endswith(b"herd") and out.encode() in argv


def test_refused_clients_counted_each(ganesha, herd_bin, tmp_path):
    rule = ["INPUT", "-p", "tcp", "--syn", "--dport", "2049", "-m", "connlimit",
            "--connlimit-above", "50", "--connlimit-mask", "0", "-j", "REJECT",
            "--reject-with", "tcp-reset"]
    added = ganesha.exec("iptables", "-A", *rule)
    if added.returncode != 0:
        pytest.skip(f"no iptables connlimit in the server's namespace: {added.stderr.strip()}")
    k = 100
    job = write_job(tmp_path / "r.ini",
                    {"backend": "libnfs", "target": ganesha.url, "clients_per_rank": k,
                     "op_timeout": "20s"},
                    [("w", {"kind": "write", "file_size": "256K", "block_size": "64K"})])
    out, summary = tmp_path / "r.h5", tmp_path / "r.json"
    proc = herd_run_nfs(ganesha, herd_bin, 1, job, out, "--json", summary)
    assert proc.returncode == 3, describe(proc)
    assert "50 of 100 clients could not connect" in proc.stderr
    # the phase notes the connections the server kept, in the file, on
    # stderr and in the JSON summary
    res = load_results(out)
    attrs = res.phases["w"].attrs
    assert int(attrs["connections_open"]) == 50, dict(attrs)
    note = attrs["notes"].decode() if isinstance(attrs["notes"], bytes) else attrs["notes"]
    assert note.startswith("the server refused connections at about 50: "), note
    assert f"herd: phase w: {note}" in proc.stderr, describe(proc)
    (phase,) = json.loads(summary.read_text())["phases"]
    assert (phase["notes"], phase["connections_open"]) == (note, 50), phase
    rows = res.phases["w"].ranks
    wrote = rows[rows["bytes"] == 256 << 10]
    refused = rows[rows["errors"] > 0]
    assert len(wrote) == 50 and len(refused) == 50
    errs = res.phases["w"].errors
    assert set(errs["errno_name"].tolist()) == {b"ECONNREFUSED"}
    assert set(errs["op"].tolist()) == {b"connect"}
    assert sorted(errs["client"].tolist()) == sorted(refused["client"].tolist())


def test_ladder_in_clients(ganesha, herd_bin, tmp_path):
    k, nranks = 50, 2
    job = write_job(tmp_path / "l.ini",
                    {"backend": "libnfs", "target": ganesha.url, "clients_per_rank": k},
                    [("w", {"kind": "write", "file_size": "128K", "block_size": "64K",
                            "clients_active": "10,50,all"})])
    out = tmp_path / "l.h5"
    proc = herd_run_nfs(ganesha, herd_bin, nranks, job, out)
    assert proc.returncode == 0, describe(proc)
    res = load_results(out)
    assert res.phase_names == ["w.10c", "w.50c", "w.100c"]
    for name, n in (("w.10c", 10), ("w.50c", 50), ("w.100c", 100)):
        ph = res.phases[name]
        rows = ph.ranks
        assert len(rows) == k * nranks
        moved = rows[rows["bytes"] == 128 << 10]
        assert len(moved) == n, (name, len(moved))
        assert (rows[rows["bytes"] == 0]["ops"] == 0).all()
        per_rank = [int((moved["rank"] == r).sum()) for r in range(nranks)]
        assert per_rank == [n // nranks] * nranks, per_rank
        assert ph.attrs["active_clients"] == n
    steps = res.ladder_steps["w"]
    assert steps["active_clients"].tolist() == [10, 50, 100]


@pytest.mark.parametrize("version", [3, 4])
def test_other_kinds_per_client(ganesha, herd_bin, tmp_path, version):
    k, nranks = 20, 2
    url = ganesha.url.replace("version=3", f"version={version}")
    phases = [("w", {"kind": "write"}),
              ("m", {"kind": "md5"}),
              ("ws", {"kind": "write", "sharing": "shared", "shared_mode": "segmented"}),
              ("rs", {"kind": "read", "sharing": "shared", "shared_mode": "segmented",
                      "verify": "yes"}),
              ("st", {"kind": "storm", "count": 3, "sharing": "shared",
                      "shared_mode": "segmented"}),
              ("tree", {"kind": "meta", "files": 5, "dirs": 2, "file_size": "4K"})]
    job = write_job(tmp_path / "o.ini",
                    {"backend": "libnfs", "target": url, "clients_per_rank": k,
                     "block_size": "64K", "file_size": "128K"}, phases)
    out = tmp_path / "o.h5"
    proc = herd_run_nfs(ganesha, herd_bin, nranks, job, out)
    assert proc.returncode == 0, describe(proc)
    res = load_results(out)
    for name, _ in phases:
        ph = res.phases[name]
        rows = ph.ranks
        assert len(rows) == k * nranks, name
        assert set(zip(rows["rank"].tolist(), rows["client"].tolist())) == \
            {(r, c) for r in range(nranks) for c in range(k)}, name
        assert (rows["errors"] == 0).all() and (rows["verify_failures"] == 0).all(), name
        assert (rows["ops"] > 0).all(), name
        assert ph.attrs["status"] == "ok", name
    assert (res.phases["rs"].ranks["bytes"] == 128 << 10).all()
    with h5py.File(out, "r") as f:
        steps = f["phases/tree/meta_steps"][()]
    assert set(zip(steps["rank"].tolist(), steps["client"].tolist())) == \
        {(r, c) for r in range(nranks) for c in range(k)}


AUTH_SYS = re.compile(rb"\x00\x00\x00\x01(?s:.{4})(?s:.{4})\x00\x00\x00([\x01-\x7f])")


def auth_sys_names(data):
    """The AUTH_SYS machine names in the RPC calls of a captured frame
    (flavor 1, body length, stamp, then the name as an XDR string)."""
    names = set()
    for m in AUTH_SYS.finditer(data):
        n = m.group(1)[0]
        name = data[m.end():m.end() + n]
        if len(name) == n and re.fullmatch(rb"[A-Za-z0-9._-]+", name):
            names.add(name.decode())
    return names


def sniff(seconds):
    """Run in the server's namespace: the AUTH_SYS names on lo."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(3))
    s.bind(("lo", 0))
    s.settimeout(0.2)
    names, end = set(), time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            names |= auth_sys_names(s.recv(1 << 17))
        except socket.timeout:
            pass
    print("\n".join(sorted(names)), flush=True)


def test_auth_sys_names_on_the_wire(ganesha, herd_bin, tmp_path):
    k, nranks = 3, 2
    job = write_job(tmp_path / "a.ini",
                    {"backend": "libnfs", "target": ganesha.url, "clients_per_rank": k},
                    [("w", {"kind": "write", "file_size": "64K", "block_size": "64K"})])
    script = Path(__file__).resolve().parents[2] / "cluster-configs/local/nfs-server.sh"
    sniffer = subprocess.Popen(["bash", str(script), "exec", "--state", str(ganesha.state), "--",
                                sys.executable, str(Path(__file__).resolve()), "--sniff", "8"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.5)
        proc = herd_run_nfs(ganesha, herd_bin, nranks, job, tmp_path / "a.h5")
        out, err = sniffer.communicate(timeout=60)
    finally:
        if sniffer.poll() is None:
            sniffer.kill()
            sniffer.wait()
    assert proc.returncode == 0, describe(proc)
    host = os.uname().nodename
    want = {f"{host}-r{r}-c{c}" for r in range(nranks) for c in range(k)}
    names = set(out.split())
    assert want <= names, (sorted(names), err)


if __name__ == "__main__" and sys.argv[1:2] == ["--sniff"]:
    sniff(float(sys.argv[2]))
