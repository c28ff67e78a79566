"""Seed 000, the rsize sweep: herd-compare's sweep view (--x KEY) and the
driver jobs/seed000.sh.

1. herd-compare --x nfs_rsize over two small real runs (libnfs against the
   embedded server on a tmpfs export; every phase records
   its value, which is all the view needs): one row per rsize, one column
   per run, exactly one '*' per column and on the cell whose MiB/s is the
   highest of the phases' summary_mib_per_s read here with h5py; the
   write phase (nfs_rsize 0, "the server's") is left out; sweep.png is a
   PNG, sweep.csv holds the same numbers and best flags; a combined
   --label nfs_inflight,file names the columns; without --x the phase
   table is printed as before.
2. Refusals, one line on stderr and exit 2: a job key no phase has, a key
   with one value only, a malformed key, --kind without --x; a results
   file whose nfs_rsize attribute was replaced by hostile text or NaN
   (no escape character reaches the terminal).
3. jobs/seed000.sh: bad settings give one line and exit 2 (no root needed);
   quick mode (RTTS="0 5" INFLIGHT="1 4", a 1M file, 1 iteration, 3 s
   deadline) against the embedded server: exit 0 in well under 2 minutes,
   the table with 4 columns and a best row, sweep.png, one results file
   per (RTT, in-flight) recording its link (with the MTU, 1500 by default)
   and nfs_inflight; at 5 ms RTT
   rsize 1K with one RPC in flight is cut by the deadline and still
   reports MiB/s; at 5 ms RTT and rsize 16K, 4 RPCs in flight beat 1 by
   more than 1.3x; the server is gone afterwards (no state directory left,
   no process naming it). Needs root, nfs-ganesha, tc, iptables and
   herd-linkdelay (as test_link.py); skips with its message otherwise.

Run: HERD_BIN=build/herd /usr/bin/python3 -m pytest -q -rs tests/integration/test_seed000.py
"""
import csv
import math
import os
import subprocess

import h5py
import numpy as np
import pytest

from conftest import REPO_DIR, describe, mpi_env, proc_cmdlines, run_cmd, write_job
from test_link import _linkdelay, _why_skip_link
from test_nfs_server import SBIN_PATH

COMPARE = REPO_DIR / "analysis" / "herd-compare"
DRIVER = REPO_DIR / "jobs" / "seed000.sh"
SERVER = REPO_DIR / "cluster-configs" / "local" / "nfs-server.sh"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
RSIZES = ["4K", "16K", "64K"]
KIB = 1024


def tool(*args, timeout=120):
    return subprocess.run(["/usr/bin/python3", str(COMPARE)] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=timeout)


def one_line_error(proc, *words):
    assert proc.returncode == 2, describe(proc)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, describe(proc)
    assert lines[0].startswith("herd-compare: "), describe(proc)
    assert "Traceback" not in proc.stderr and "\x1b" not in proc.stderr + proc.stdout
    for w in words:
        assert w in lines[0], describe(proc)
    return lines[0]


def phase_mibs(path):
    """{nfs_rsize: summary_mib_per_s} of the read phases, straight from HDF5."""
    with h5py.File(path, "r") as f:
        return {int(g.attrs["nfs_rsize"]): float(g.attrs["summary_mib_per_s"])
                for g in f["phases"].values()
                if (g.attrs["kind"].decode() if isinstance(g.attrs["kind"], bytes)
                    else g.attrs["kind"]) == "read"}


def fmt(nbytes):
    return f"{nbytes // KIB}K"


# ---------------------------------------------------------------- 1. the view


@pytest.fixture(scope="module")
def sweep_runs(herd_bin, tmp_path_factory):
    """Two runs of an rsize sweep over libnfs against the embedded server
    (tmpfs export), nfs_inflight 1 and 4; nfs_* keys belong to libnfs."""
    from test_nfs import _WHY
    from test_nfs_server import Server
    if _WHY:
        pytest.skip(_WHY)
    work = tmp_path_factory.mktemp("seed000")
    server = Server(work / "srv")
    try:
        server.start("--fs", "tmpfs", "--size", "256M", "--no-nlm")
        phases = [("write", {"kind": "write", "block_size": "64K"})]
        phases += [(f"read-rsize-{r}", {"kind": "read", "nfs_rsize": r, "iterations": "2"})
                   for r in RSIZES]
        job = write_job(work / "sweep.ini", {"backend": "libnfs", "target": server.url,
                                             "file_size": "2M", "block_size": "16K",
                                             "sharing": "shared"}, phases)
        out = []
        for n in (1, 4):
            path = work / f"if{n}.h5"
            args = ["bash", str(SERVER), "exec", "--state", str(server.state), "--",
                    "mpirun", "--oversubscribe", "-np", "1", herd_bin, "run", str(job), "-o",
                    str(path), "--set", f"nfs_inflight={n}"]
            env = mpi_env()
            env["PATH"] = SBIN_PATH
            proc = run_cmd(args, env=env, timeout=300)
            assert proc.returncode == 0, describe(proc)
            out.append(path)
    finally:
        server.stop(check=False)
    return work, out


def parse_sweep_table(stdout, key="nfs_rsize"):
    """{row label: [cells]} and the header of herd-compare --x's table."""
    lines = stdout.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith(key + " "))
    head = lines[i].split()
    rows = {}
    for line in lines[i + 2:]:
        if not line.strip() or line.startswith("*"):
            break
        cells = line.split()
        rows[cells[0]] = cells[1:]
    return head, rows


def test_sweep_table_and_plot(sweep_runs):
    work, (if1, if4) = sweep_runs
    outdir = work / "view"
    proc = tool(if1, if4, "--label", "nfs_inflight", "--x", "nfs_rsize", "-o", outdir)
    assert proc.returncode == 0, describe(proc)
    head, rows = parse_sweep_table(proc.stdout)
    assert head == ["nfs_rsize", "1", "4"], proc.stdout
    # The write phase (nfs_rsize 0) is no point of the sweep.
    assert list(rows) == RSIZES + ["best"], proc.stdout
    for col, path in enumerate((if1, if4)):
        mibs = phase_mibs(path)
        assert sorted(mibs) == [4 * KIB, 16 * KIB, 64 * KIB]
        best = max(mibs, key=mibs.get)
        starred = [r for r in RSIZES if rows[r][col].endswith("*")]
        assert starred == [fmt(best)], f"column {col}: {proc.stdout}\nfrom the file: {mibs}"
        assert rows["best"][col] == fmt(best)
        for r in RSIZES:
            shown = float(rows[r][col].rstrip("*d"))
            assert shown == pytest.approx(mibs[int(r[:-1]) * KIB], rel=0.06), \
                f"{r} column {col}: {rows[r][col]} vs {mibs}"
    png = outdir / "sweep.png"
    assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 10000
    with open(outdir / "sweep.csv", newline="", encoding="utf-8") as f:
        got = list(csv.DictReader(f))
    assert len(got) == 2 * len(RSIZES)
    for label, path in (("1", if1), ("4", if4)):
        mibs = phase_mibs(path)
        mine = [row for row in got if row["run"] == label]
        assert [row["nfs_rsize"] for row in mine] == RSIZES
        for row in mine:
            assert float(row["mib_per_s"]) == pytest.approx(mibs[int(row["nfs_rsize"][:-1]) * KIB],
                                                            rel=1e-5)
            assert row["status"] == "ok"
        assert [row["nfs_rsize"] for row in mine if row["best"] == "yes"] == \
            [fmt(max(mibs, key=mibs.get))]
    for name in ("sweep.md", "compare.csv", "compare.png"):
        assert (outdir / name).stat().st_size > 0, name


def test_sweep_combined_label_kind_and_old_view(sweep_runs):
    _, (if1, if4) = sweep_runs
    proc = tool(if1, if4, "--label", "nfs_inflight,file", "--x", "nfs_rsize", "--kind", "read")
    assert proc.returncode == 0, describe(proc)
    assert "nfs_inflight=1 if1" in proc.stdout and "nfs_inflight=4 if4" in proc.stdout
    # block_size varies too (64K write, 16K reads): only the reads with --kind read.
    proc = tool(if1, if4, "--x", "block_size", "--kind", "read")
    one_line_error(proc, "block_size", "one value", "nothing to sweep")
    proc = tool(if1, if4, "--x", "block_size")
    assert proc.returncode == 0, describe(proc)
    _, rows = parse_sweep_table(proc.stdout, "block_size")
    assert list(rows) == ["16K", "64K", "best"], proc.stdout
    # Without --x: the phase-by-phase table as before.
    proc = tool(if1, if4, "--label", "nfs_inflight")
    assert proc.returncode == 0, describe(proc)
    assert proc.stdout.startswith("phase ") and "read-rsize-16K" in proc.stdout
    assert "MiB/s per" not in proc.stdout


@pytest.mark.parametrize("args,words", [
    (["--x", "no_such_key"], ["no_such_key", "no phases"]),
    (["--x", "file_size"], ["file_size", "one value (2M)"]),
    (["--x", "nfs_rsize", "--kind", "md5"], ["nfs_rsize", "kind md5"]),
    (["--x", "Bad Key;rm"], ["not a job key"]),
    (["--kind", "read"], ["--kind needs --x"]),
    (["--x", "nfs_rsize", "--label", "link,"], ["empty name"]),
])
def test_sweep_refusals(sweep_runs, args, words):
    _, (if1, if4) = sweep_runs
    one_line_error(tool(if1, if4, *args), *words)


@pytest.mark.parametrize("value", ["evil\x1b[31m\nline", float("nan"), -4096.0])
def test_sweep_hostile_values(sweep_runs, tmp_path, value):
    """A phase's nfs_rsize replaced by text with escapes, NaN or a negative
    number: one line, exit 2, nothing raw on the terminal."""
    _, (if1, _) = sweep_runs
    bad = tmp_path / "bad.h5"
    bad.write_bytes(if1.read_bytes())
    with h5py.File(bad, "r+") as f:
        g = f["phases"]["read-rsize-16K"]
        del g.attrs["nfs_rsize"]
        g.attrs["nfs_rsize"] = value
    proc = tool(bad, "--x", "nfs_rsize")
    one_line_error(proc)


def with_mount_options(src, dst, *options):
    """A copy of results file src whose /hosts rows have these
    mount_options (one per row, the last repeated)."""
    dst.write_bytes(src.read_bytes())
    with h5py.File(dst, "r+") as f:
        rows = f["hosts"][()]
        for i in range(len(rows)):
            rows["mount_options"][i] = options[min(i, len(options) - 1)].encode()
        f["hosts"][...] = rows
    return dst


def test_sweep_of_a_mount_option(sweep_runs, tmp_path):
    """--x opt:rsize: each run one point at its hosts' rsize; runs with one
    label share a column, a cell's spread over its runs shown; no
    mountstats (libnfs): no kernel table."""
    _, (if1, if4) = sweep_runs
    a = with_mount_options(if1, tmp_path / "a.h5", "vers=3,rsize=4096")
    b = with_mount_options(if4, tmp_path / "b.h5", "vers=3,rsize=16384")
    c = with_mount_options(if1, tmp_path / "c.h5", "vers=3,rsize=16384")
    proc = tool(a, b, c, "--label", "fstype", "--x", "opt:rsize", "--kind", "read",
                "-o", tmp_path / "out")
    assert proc.returncode == 0, describe(proc)
    head, rows = parse_sweep_table(proc.stdout, key="opt:rsize")
    # fstype over libnfs is the export's file system, which exec named
    assert head == ["opt:rsize", "tmpfs"], proc.stdout
    assert list(rows) == ["4K", "16K", "best"], proc.stdout
    assert "(" not in rows["4K"][0] and "(" in " ".join(rows["16K"]), proc.stdout
    assert "kernel client" not in proc.stdout
    with open(tmp_path / "out" / "sweep.csv", newline="", encoding="utf-8") as f:
        csv_rows = {r["opt:rsize"]: r for r in csv.DictReader(f)}
    assert csv_rows["16K"]["runs"] == "2" and csv_rows["4K"]["runs"] == "1"
    lo, hi = float(csv_rows["16K"]["mib_per_s_min"]), float(csv_rows["16K"]["mib_per_s_max"])
    assert lo <= float(csv_rows["16K"]["mib_per_s"]) <= hi
    assert csv_rows["16K"]["rpcs"] == ""


@pytest.mark.parametrize("options,words", [
    (("vers=3,rsize=4096", "vers=3,rsize=8192"), ["different values"]),
    (("vers=3,rsize=evil\x1b[31m",), ["not a number or size"]),
    (("vers=3",), ["no phases", "mount option"]),
])
def test_sweep_of_a_mount_option_refusals(sweep_runs, tmp_path, options, words):
    """Hosts that disagree, a value that is no size, no host with the
    option: one line, exit 2."""
    _, (if1, if4) = sweep_runs
    path = tmp_path / "x.h5"
    path.write_bytes(if1.read_bytes())
    with h5py.File(path, "r+") as f:
        rows = f["hosts"][()]
        extra = np.array(rows[:1]) if len(options) > len(rows) else None
        if extra is not None:
            rows = np.concatenate([rows, extra])
            rows["host"][-1] = len(rows) - 1
            del f["hosts"]
            f.create_dataset("hosts", data=rows)
        for i in range(len(rows)):
            rows["mount_options"][i] = options[min(i, len(options) - 1)].encode()
        f["hosts"][...] = rows
    other = path if len(options) == 1 and "rsize" not in options[0] else if4
    one_line_error(tool(path, other, "--x", "opt:rsize"), *words)


# ---------------------------------------------------------------- 3. the driver


def driver(env_extra, timeout=150):
    env = dict(mpi_env(), PATH=SBIN_PATH, **env_extra)
    return run_cmd(["bash", DRIVER], env=env, timeout=timeout)


@pytest.mark.parametrize("setting", ["RTTS=abc", "RTTS=1 -2", "INFLIGHT=0", "INFLIGHT=257",
                                     "RANKS=-1", "RATE=8", "FILE_SIZE=1X", "DEADLINE=0",
                                     "ITERATIONS=x", "RTTS=30000", "MTU=100", "CLIENT=fuse",
                                     "RSIZES=4096", "MOUNT_OPTS=vers=3",
                                     "CLIENT=kernel&INFLIGHT=4", "CLIENT=kernel&RSIZES=512",
                                     "CLIENT=kernel&MTU=9000",
                                     "CLIENT=kernel&MOUNT_OPTS=vers=3;reboot",
                                     "CLIENT=kernel&MOUNT_OPTS=vers=3,rsize=4096", "READ_AHEAD_KB=512",
                                     "CLIENT=kernel&READ_AHEAD_KB=2000000"])
def test_driver_bad_settings(tmp_path, setting):
    """One line naming the setting, exit 2, nothing made. The kernel
    client's settings (RSIZES, MOUNT_OPTS) are refused for libnfs and
    libnfs's (INFLIGHT, an MTU other than the cluster's 1500) for it."""
    pairs = dict(p.partition("=")[::2] for p in setting.split("&"))
    key = list(pairs)[-1]
    proc = driver(dict(pairs, OUT=str(tmp_path / "out")), timeout=30)
    assert proc.returncode == 2, describe(proc)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("seed000.sh: "), describe(proc)
    assert key in lines[0], describe(proc)
    assert not (tmp_path / "out").exists(), "nothing may be made for bad settings"


def test_driver_help():
    proc = run_cmd(["bash", DRIVER, "--help"], timeout=10)
    assert proc.returncode == 0 and "RTTS" in proc.stdout and "INFLIGHT" in proc.stdout
    proc = run_cmd(["bash", DRIVER, "extra"], timeout=10)
    assert proc.returncode == 2, describe(proc)


def _procs_naming(text):
    return [pid for pid, cmd in proc_cmdlines().items() if text.encode() in cmd]


@pytest.mark.skipif(_why_skip_link() is not None, reason=_why_skip_link() or "")
def test_driver_quick(herd_bin, tmp_path):
    out = tmp_path / "out"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {"HERD": herd_bin, "HERD_LINKDELAY": str(_linkdelay()), "OUT": str(out),
           "TMPDIR": str(tmp), "RTTS": "0 5", "INFLIGHT": "1 4", "FILE_SIZE": "1M",
           "ITERATIONS": "1", "DEADLINE": "3s"}
    try:
        proc = driver(env, timeout=300)  # a hang guard
        assert proc.returncode == 0, describe(proc)
        head, rows = parse_sweep_table(proc.stdout)
        names = ["rtt0ms-if1", "rtt0ms-if4", "rtt5ms-if1", "rtt5ms-if4"]
        assert head == ["nfs_rsize"] + names, proc.stdout
        # Quick mode ran the small matrix and no more: these four runs, each
        # of one 1M file read once per rsize, every phase under DEADLINE.
        assert sorted(p.name for p in out.glob("*.h5")) == sorted(f"{n}.h5" for n in names)
        assert list(rows) == ["1K", "2K", "4K", "8K", "12K", "16K", "32K", "64K", "best"]
        for col in range(4):
            assert sum(rows[r][col].endswith("*") for r in rows if r != "best") == 1
        assert (out / "summary.txt").read_text() == proc.stdout
        assert (out / "sweep" / "sweep.png").read_bytes()[:8] == PNG_MAGIC

        links = {"rtt0ms": "mtu=1500", "rtt5ms": "delay=2.5ms,mtu=1500"}
        mib = {}
        for name in names:
            with h5py.File(out / f"{name}.h5", "r") as f:
                assert f.attrs["status"] in (b"complete", "complete")
                for g in f["phases"].values():
                    link = g.attrs["link"]
                    assert (link.decode() if isinstance(link, bytes) else link) == \
                        links[name[:6]]
                    assert int(g.attrs["nfs_inflight"]) == int(name[-1])
                    assert int(g.attrs["file_size"]) == 1 << 20
                    assert int(g.attrs["iterations"]) == 1
                    assert float(g.attrs["deadline"]) == 3.0
                r1k = f["phases"]["read-rsize-1K"].attrs
                mib[name] = {int(g.attrs["nfs_rsize"]): float(g.attrs["summary_mib_per_s"])
                             for g in f["phases"].values() if int(g.attrs["nfs_rsize"])}
                if name == "rtt5ms-if1":
                    # 1024 RPCs x 5 ms > 3 s: cut short (not before the
                    # deadline), still a throughput, below one RPC per RTT.
                    st = r1k["status"]
                    assert (st.decode() if isinstance(st, bytes) else st) == "deadline"
                    assert float(r1k["summary_last_done"]) >= 2.9
                    assert 0 < mib[name][KIB] < 1.0
                    assert rows["1K"][2].endswith("d")
        assert all(v > 0 and math.isfinite(v) for m in mib.values() for v in m.values())
        one, four = mib["rtt5ms-if1"][16 * KIB], mib["rtt5ms-if4"][16 * KIB]
        assert four > 1.3 * one, f"5 ms RTT, rsize 16K: in flight 4 {four:.2f} MiB/s, " \
                                 f"1 {one:.2f} MiB/s"
        # One RPC per round trip: at most rsize / RTT (16K / 5 ms = 3.1 MiB/s;
        # a busy machine only slows it).
        assert one < 4.0, f"rsize 16K, 5 ms RTT, one RPC in flight: {one:.2f} MiB/s"
    finally:
        left = [p for p in tmp.glob("herd-seed000.*")]
        for state in left:  # the driver failed to stop its server: do it here
            subprocess.run(["bash", SERVER, "stop", "--state", str(state), "--purge"],
                           capture_output=True, timeout=60, env=dict(os.environ, PATH=SBIN_PATH))
    assert not left, f"the driver left its server's state directory: {left}"
    assert _procs_naming(str(tmp)) == [], "processes of the driver's server still run"
