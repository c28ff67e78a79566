"""herd against a kernel nfsd past its connection limit: the sunrpc server
keeps at most (threads + 3) x 20 connections (sv_maxconn's default) and
closes one of them (its oldest) as each new one comes. With --threads
1 that is 80; 2 ranks x 150 libnfs clients are almost four times as
many. The clients it closed find out at the phase's start and reconnect,
and each new connection closes another; each client holds its file open
for 4 x think_time, so some lose their connection with a file open.

1. The run completes: rank 0's first client, the oldest connection of
   its rank, was closed by the server before the run directory was made,
   and the directory is made over a fresh connection (the rank's first
   client reconnects when its look finds the connection lost) instead
   of the run ending with exit 2 and no results ("cannot make
   herd-<id>: Connection reset by peer"). Exit 3, the results file
   complete with exit code 3, the run directory removed after.
2. The clients whose connections the server dropped or refused are
   counted per client: rows of (rank, client) in the phase's errors
   table with ECONNRESET or ECONNREFUSED, each row one client of the
   run; every client without an error wrote its whole file.
3. The phase's notes say where the server stopped: "the server dropped
   connections at about N", N (the attribute connections_open: the
   clients' connections open at the phase's end) above 0 and below the
   clients, the same clients counted as in the errors table; the same
   line on stderr. N and the errors are printed (-s).

Needs root and what test_knfsd.py needs; skips otherwise. Run:
HERD_BIN=build/herd /usr/bin/python3 -m pytest -q -s tests/integration/test_knfsd_cap.py
"""
import re

import pytest

from conftest import describe, load_results, write_job
from test_knfsd import _WHY, BASE, URL3, KnfsdServer
from test_nfs import herd_run_nfs
from test_nfs_server import server_factory

pytestmark = pytest.mark.skipif(_WHY is not None, reason=_WHY or "")

THREADS = 1
CAP = (THREADS + 3) * 20  # the kernel's connection limit for that many threads
RANKS, PER_RANK = 2, 150
CLIENTS = RANKS * PER_RANK
FILE, BLOCK = 16 << 10, 4 << 10  # 4.7 MiB in all, 4 WRITEs a client
LOST = {"ECONNRESET", "ECONNREFUSED"}
# errtab_connection_lost's errnos that are not a refusal: the note's "lost theirs"
DROPPED = {"ECONNRESET", "EPIPE", "ENOTCONN", "ECONNABORTED", "ESHUTDOWN"}
NOTE = re.compile(r"the server (dropped|refused|dropped and refused) connections at about (\d+): "
                  r"(\d+) of the (\d+) clients' connections were open at the phase's end; "
                  r"(\d+) clients lost theirs \(ECONNRESET and the like\), "
                  r"(\d+) were refused \(ECONNREFUSED\)")


@pytest.fixture
def knfsd(tmp_path):
    with server_factory(tmp_path, KnfsdServer, "knfsd") as make:
        yield make


def test_knfsd_past_its_connection_limit_still_gives_results(knfsd, herd_bin, tmp_path):
    s = knfsd("--threads", THREADS)
    job = write_job(tmp_path / "cap.ini",
                    {"backend": "libnfs", "target": URL3, "clients_per_rank": PER_RANK,
                     "file_size": FILE, "block_size": BLOCK, "op_timeout": "30s"},
                    [("w", {"kind": "write", "think_time": "300ms"})])
    out = tmp_path / "cap.h5"
    proc = herd_run_nfs(s, herd_bin, RANKS, job, out)
    assert "cannot make herd-" not in proc.stderr, describe(proc)
    assert proc.returncode == 3, describe(proc)
    res = load_results(out)
    assert res.attrs["status"] == "complete" and res.attrs["exit_code"] == 3, res.attrs
    ph = res.phases["w"]
    assert ph.attrs["status"] == "errors", ph.attrs["status"]

    # 2. per client: every row names one client of the run
    rows = ph.error_rows()
    for row in rows:
        assert 0 <= int(row["rank"]) < RANKS and 0 <= int(row["client"]) < PER_RANK, row
    dropped = {(int(r["rank"]), int(r["client"])) for r in rows if r["errno_name"] in LOST}
    assert dropped, f"no client counted a dropped or refused connection: {rows}"
    ranks = ph.ranks
    assert len(ranks) == CLIENTS
    clean = ranks[ranks["errors"] == 0]
    assert (clean["bytes"] == FILE).all(), "a client without an error wrote short"

    # 3. the note and its count
    notes = ph.attrs.get("notes", "")
    m = NOTE.fullmatch(notes)
    assert m, f"phase notes {notes!r}"
    held = int(m.group(2))
    assert held == int(m.group(3)) == ph.attrs["connections_open"], (notes, ph.attrs)
    assert 0 < held < CLIENTS, notes
    assert int(m.group(4)) == CLIENTS, notes
    lost = {(int(r["rank"]), int(r["client"])) for r in rows if r["errno_name"] in DROPPED}
    refused = {(int(r["rank"]), int(r["client"]))
               for r in rows if r["errno_name"] == "ECONNREFUSED"}
    assert (int(m.group(5)), int(m.group(6))) == (len(lost), len(refused)), notes
    assert f"herd: phase w: {notes}" in proc.stderr, proc.stderr

    # 1. the run directory went with the run
    listing = s.exec("nfs-ls", f"{BASE}?version=3", timeout=60)
    assert listing.returncode == 0, listing.stderr
    assert "herd-" not in listing.stdout, listing.stdout
    kinds = sorted({(r["op"], r["errno_name"]) for r in rows})
    print(f"\n{CLIENTS} clients, knfsd --threads {THREADS} (limit {CAP}): "
          f"{held} connections open at the phase's end; {len(dropped)} clients counted "
          f"{sorted(LOST)}; errors {kinds}, {int(ph.attrs['summary_errors'])} in all")
