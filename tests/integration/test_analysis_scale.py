"""The analysis at scale, and one definition of every phase statistic.

1. herd writes a results file of 300,000 rank rows (2 ranks x 150,000
   iterations of a 4 KiB write); herd-report must finish well inside a
   generous limit (60 s; bench/analysis_scale.sh measures the real
   figures), under 1 GB of peak memory, write every rank row to ranks.csv,
   and its phases.csv must say what herd printed at the end of the run.
2. herd stores its summary (summary_* attributes and the op_summary table,
   src/results/summary.c): for every phase kind (write, read, md5, lock, storm,
   meta, idle, and a write with injected faults), the stored values equal
   what this test recomputes from the raw rows with h5py (rel 1e-9), and
   herd_results.Run.phases shows the stored values (a copy with one
   attribute changed shows the change).
3. A copy of that file with every summary attribute and op_summary table
   deleted (a file from an older herd) gives the same Run.phases, the same
   op_summary per phase and the same herd-report phases.csv.

Run: HERD_BIN=build/herd /usr/bin/python3 -m pytest -q tests/integration/test_analysis_scale.py
"""
import math
import shutil
import subprocess
import sys

import h5py
import numpy as np
import pytest

from conftest import REPO_DIR, describe, herd_run, read_csv, write_job

ANALYSIS = REPO_DIR / "analysis"
REPORT = ANALYSIS / "herd-report"
REPORT_TIMEOUT = 60  # s: generous; 300k rows take a few seconds here
RSS_LIMIT_KB = 1 << 20  # 1 GiB
ROWS_PER_RANK = 150_000

STATS = ["rows", "ranks", "t_min", "t_median", "t_max", "first_done", "last_done", "bytes",
         "ops", "mib_per_s", "ops_per_s", "errors", "verify_failures", "grants", "contended",
         "violations", "stuck"]
SERVER = ["cpu_mean", "cpu_max", "nfsd_threads"]
# Server figures that herd's summary and the loader each sum in their own
# order: the same to the last few bits only.
SERVER_SUMS = ["proc_cpu", "proc_thread_max", "nfsd_packets_per_s", "nfsd_woken_share"]
OP_COLUMNS = ["calls", "seconds", "ops_per_s", "p50_s", "p90_s", "p99_s", "max_s", "items",
              "step_s", "items_per_s"]
NAN = float("nan")


def text(v):
    return v.decode() if isinstance(v, bytes) else v


def num(v):
    return NAN if v in ("", "nan", "NaN", None) else float(v)


def same(got, want, what, rel=1e-9):
    got, want = float(got), float(want)
    if math.isnan(want):
        assert math.isnan(got), f"{what}: {got} != NaN"
    else:
        assert got == pytest.approx(want, rel=rel, abs=1e-12), f"{what}: {got} != {want}"


def loader():
    sys.path.insert(0, str(ANALYSIS))
    import herd_results
    return herd_results


# ---------------------------------------------------------------- 1. 300k rows


def parse_summary(stdout):
    """herd's end-of-run table: {phase: {rows, t_min, ..., ops_per_s, errors}}."""
    out = {}
    lines = stdout.splitlines()
    head = next(i for i, l in enumerate(lines) if l.split()[:2] == ["phase", "kind"])
    # Two lines per phase: the numbers, then the parameters; errors last
    # ("0" or "1490 ENOSPC"); '-' where no rate is shown.
    for line in lines[head + 1::2]:
        p = line.split()
        if len(p) < 16:
            break
        rate = lambda v: float("nan") if v == "-" else float(v)
        out[p[0]] = {"rows": int(p[2]), "t_min": float(p[3]), "t_median": float(p[4]),
                     "t_max": float(p[5]), "last_done": float(p[6]),
                     "mib_per_s": rate(p[7]), "ops_per_s": rate(p[8]),
                     "main_ops_per_s": rate(p[9]),
                     "errors": int(p[15]), "verify_failures": int(p[12]),
                     "violations": int(p[13]), "status": p[14]}
    return out


def report_with_rss(results, outdir):
    """herd-report under a child python that prints the report's peak RSS (kB)."""
    wrapper = ("import resource, subprocess, sys\n"
               "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
               "sys.stderr.write(p.stderr)\n"
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
               "sys.exit(p.returncode)\n")
    return subprocess.run(["/usr/bin/python3", "-c", wrapper, "/usr/bin/python3", str(REPORT),
                           str(results), "-o", str(outdir)],
                          capture_output=True, text=True, timeout=REPORT_TIMEOUT)


def test_report_300k_rows(herd_bin, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "big.ini", {"target": target, "fsync": "no"},
                    [("small", {"kind": "write", "file_size": "4K", "block_size": "4K",
                                "iterations": str(ROWS_PER_RANK)})])
    results = tmp_path / "big.h5"
    proc = herd_run(herd_bin, 2, job, results)
    assert proc.returncode == 0, describe(proc)
    printed = parse_summary(proc.stdout)
    assert printed["small"]["rows"] == 2 * ROWS_PER_RANK
    out = tmp_path / "report"
    rep = report_with_rss(results, out)
    assert rep.returncode == 0, describe(rep)
    rss_kb = int(rep.stdout.strip().splitlines()[-1])
    assert rss_kb < RSS_LIMIT_KB, f"herd-report peaked at {rss_kb} kB on 300k rows"
    row = read_csv(out / "phases.csv")[0]
    want = printed["small"]
    assert int(row["rows"]) == want["rows"] and row["status"] == want["status"]
    for key, decimals in (("t_min", 3), ("t_median", 3), ("t_max", 3), ("last_done", 3),
                          ("mib_per_s", 1), ("ops_per_s", 0)):
        assert round(num(row[key]), decimals) == pytest.approx(want[key], abs=1.01 * 10**-decimals
                                                               / 2), key
    for key in ("errors", "verify_failures", "violations"):
        assert int(row[key]) == want[key], key
    # ... and the file's own summary, to the last bit that CSV keeps.
    with h5py.File(results, "r") as f:
        attrs = dict(f["phases"]["small"].attrs)
    for key in STATS:
        same(num(row[key]), attrs[f"summary_{key}"], key)
    with open(out / "ranks.csv") as f:
        assert sum(1 for _ in f) == 2 * ROWS_PER_RANK + 1
    assert (out / "timeline.png").read_bytes().startswith(b"\x89PNG")
    assert (out / "ops.csv").exists()


# ---------------------------------------------------------------- 2. every kind

KIND_PHASES = [
    ("write", {"kind": "write", "fileset": "u", "file_size": "1M", "block_size": "64K",
               "iterations": "2"}),
    ("read", {"kind": "read", "fileset": "u", "file_size": "1M", "block_size": "64K",
              "verify": "yes"}),
    ("md5", {"kind": "md5", "fileset": "u", "file_size": "1M"}),
    ("w_shared", {"kind": "write", "fileset": "sh", "sharing": "shared", "file_size": "64K",
                  "block_size": "64K"}),
    ("storm", {"kind": "storm", "fileset": "sh", "sharing": "shared", "file_size": "64K",
               "block_size": "64K", "count": "20"}),
    ("lock", {"kind": "lock", "fileset": "lk", "sharing": "shared", "count": "30",
              "lock_wait": "nonblocking", "lock_hold": "0"}),
    ("meta", {"kind": "meta", "fileset": "mt", "files": "20", "dirs": "2",
              "file_size": "4K", "block_size": "4K"}),
    ("w_fault", {"kind": "write", "fileset": "f", "file_size": "1M", "block_size": "64K",
                 "faults": "write=EIO@0.2,close=EIO@0.3"}),
    ("idle", {"kind": "idle", "duration": "200ms", "iterations": "3"}),
]


@pytest.fixture(scope="module")
def kinds_file(herd_bin, tmp_path_factory):
    work = tmp_path_factory.mktemp("kinds")
    target = work / "target"
    target.mkdir()
    job = write_job(work / "kinds.ini", {"target": target, "backend": "fault",
                                         "monitor_rank": "last", "monitor_interval": "50ms"},
                    KIND_PHASES)
    results = work / "kinds.h5"
    proc = herd_run(herd_bin, 4, job, results)
    assert proc.returncode in (0, 3), describe(proc)  # 3: the injected faults
    return results


def hist_quantile(upper, counts, q):
    """src/lib/hist.c: upper bound of the bucket holding sample max(1, ceil(q n))."""
    n = int(counts.sum())
    if n == 0:
        return NAN
    rank = min(max(1, math.ceil(q * n)), n)
    return float(upper[np.searchsorted(np.cumsum(counts.astype(np.uint64)), rank)]) * 1e-9


def raw_stats(f, name):
    """summary_compute (src/results/summary.c) from the raw rows, with h5py and numpy."""
    g = f["phases"][name]
    rows = g["ranks"][()]
    t0 = float(g.attrs["t_start"])
    worked = rows[rows["ops"] > 0]
    secs = worked["t_end"] - worked["t_start"]
    n = len(worked)
    last = float(worked["t_end"].max() - t0) if n else NAN
    out = {"rows": len(rows), "ranks": len(np.unique(rows["rank"])),
           "t_min": secs.min() if n else NAN, "t_median": np.median(secs) if n else NAN,
           "t_max": secs.max() if n else NAN,
           "first_done": worked["t_end"].min() - t0 if n else NAN, "last_done": last,
           "bytes": int(worked["bytes"].sum()), "ops": int(worked["ops"].sum()),
           "errors": int(g["errors"][()]["count"].sum()),
           "verify_failures": int(worked["verify_failures"].sum()),
           "grants": int(rows["grants"].sum()), "contended": int(rows["contended"].sum()),
           "violations": int(worked["violations"].sum()), "stuck": len(g["stuck"])}
    rate = n and last > 0
    out["mib_per_s"] = out["bytes"] / 2**20 / last if rate else 0.0
    out["ops_per_s"] = out["ops"] / last if rate else 0.0
    samples = f["monitor"]["samples"][()]
    meet = samples[(samples["t"] - samples["dt"] <= float(g.attrs["t_end"]))
                   & (samples["t"] > t0)]
    meet = meet[np.array([text(s) == "proc" for s in meet["source"]], dtype=bool)]
    busy = meet["cpu_busy"][~np.isnan(meet["cpu_busy"])]
    threads = meet["nfsd_threads"][~np.isnan(meet["nfsd_threads"])]
    out["cpu_mean"] = busy.mean() if len(busy) else NAN
    out["cpu_max"] = busy.max() if len(busy) else NAN
    out["nfsd_threads"] = threads[-1] if len(threads) else NAN
    return out


def raw_ops(f, name, last):
    """{op: op_summary row} from the ops table and the latency histograms."""
    g = f["phases"][name]
    out = {}
    for r in g["ops"][()]:
        op = text(r["op"])
        calls, secs = out.get(op, (0, 0.0))
        out[op] = (calls + int(r["count"]), secs + float(r["seconds"]))
    lat = g["latency"]
    upper = lat["bucket_upper_ns"][()]
    rows = {}
    for op, (calls, secs) in out.items():
        if calls == 0:
            continue
        counts = lat[op][()] if op in lat else np.zeros(len(upper), dtype=np.uint64)
        rows[op] = {"calls": calls, "seconds": secs,
                    "ops_per_s": calls / last if last > 0 else NAN,
                    "p50_s": hist_quantile(upper, counts, 0.5),
                    "p90_s": hist_quantile(upper, counts, 0.9),
                    "p99_s": hist_quantile(upper, counts, 0.99),
                    "max_s": hist_quantile(upper, counts, 1.0),
                    "items": 0, "step_s": NAN, "items_per_s": NAN}
    # A meta step (docs/results-format.md): its item call's successful
    # calls of all ranks over the first rank's start to the last rank's end.
    steps = g["meta_steps"][()] if "meta_steps" in g else []
    for op in {text(m["op"]) for m in steps}:
        mine = [m for m in steps if text(m["op"]) == op]
        t = max(m["t_end"] for m in mine) - min(m["t_start"] for m in mine)
        items = sum(int(m["items"]) for m in mine)
        rows[op].update(items=items, step_s=t, items_per_s=items / t if t > 0 else NAN)
    return rows


def test_summary_attributes_match_raw_rows(kinds_file):
    with h5py.File(kinds_file, "r") as f:
        names = list(f["phases"])
        assert names == [n for n, _ in KIND_PHASES]
        kinds = {text(f["phases"][n].attrs["kind"]) for n in names}
        assert kinds == {"write", "read", "md5", "lock", "storm", "meta", "idle"}
        for name in names:
            a = f["phases"][name].attrs
            want = raw_stats(f, name)
            for key in STATS + SERVER:
                assert f"summary_{key}" in a, f"{name}: herd wrote no summary_{key}"
                same(a[f"summary_{key}"], want[key], f"{name} summary_{key}")
            got_ops = {text(r["op"]): r for r in f["phases"][name]["op_summary"][()]}
            want_ops = raw_ops(f, name, want["last_done"])
            assert set(got_ops) == set(want_ops), name
            for op, w in want_ops.items():
                for key in OP_COLUMNS:
                    same(got_ops[op][key], w[key], f"{name} {op} {key}")
        # the run did what each kind does: these make the comparisons count
        stats = {n: raw_stats(f, n) for n in names}
    assert stats["w_fault"]["errors"] > 0
    assert stats["lock"]["grants"] > 0
    assert stats["read"]["bytes"] == 3 * 1 << 20 and stats["idle"]["ops"] == 0
    with h5py.File(kinds_file, "r") as f:
        steps = f["phases"]["meta"]["meta_steps"][()]
        ran = {text(m["step"]) for m in steps}
        assert ran and all(int(m["items"]) > 0 for m in steps), steps
    assert not math.isnan(stats["write"]["cpu_mean"])


def test_loader_reads_the_stored_summary(kinds_file, tmp_path):
    """Run.phases shows herd's attributes, not a recomputation: change one."""
    herd_results = loader()
    copy = tmp_path / "changed.h5"
    shutil.copy(kinds_file, copy)
    with h5py.File(copy, "r+") as f:
        f["phases"]["write"].attrs["summary_bytes"] = np.int64(123456789)
        f["phases"]["write"].attrs["summary_cpu_max"] = 0.25
    with herd_results.load(copy) as run:
        row = run.phases.set_index("phase").loc["write"]
        assert row["bytes"] == 123456789 and row["cpu_max"] == 0.25
    with herd_results.load(kinds_file) as run:
        row = run.phases.set_index("phase").loc["write"]
        assert row["bytes"] == 3 * 2 << 20  # 3 I/O ranks x 2 iterations x 1 MiB


# ---------------------------------------------------------------- 3. older files


def strip_summary(src, dst):
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        for name in f["phases"]:
            g = f["phases"][name]
            for key in [k for k in g.attrs if k.startswith("summary_")]:
                del g.attrs[key]
            if "op_summary" in g:
                del g["op_summary"]
    with h5py.File(dst, "r") as f:
        for name in f["phases"]:
            g = f["phases"][name]
            assert not [k for k in g.attrs if k.startswith("summary_")]
            assert "op_summary" not in g


def test_file_without_summary_gives_same_tables(kinds_file, tmp_path):
    herd_results = loader()
    old = tmp_path / "old.h5"
    strip_summary(kinds_file, old)
    with herd_results.load(kinds_file) as new_run, herd_results.load(old) as old_run:
        a, b = new_run.phases, old_run.phases
        # The fixed columns, then each called op's latency quantiles.
        assert list(a.columns) == list(b.columns)
        assert list(a.columns)[:len(herd_results.PHASE_COLUMNS)] == herd_results.PHASE_COLUMNS
        assert "write_p99_s" in a.columns
        assert list(a["phase"]) == list(b["phase"])
        for col in a.columns:
            for name, x, y in zip(a["phase"], a[col], b[col]):
                if isinstance(x, (str, type(None))):
                    assert x == y, f"{name} {col}"
                else:
                    same(y, x, f"{name} {col}")
        for name in new_run.phase_names:
            x = new_run.op_summary(name).set_index("op")
            y = old_run.op_summary(name).set_index("op")
            assert list(x.index) == list(y.index), name
            for op in x.index:
                for key in OP_COLUMNS:
                    same(y.loc[op, key], x.loc[op, key], f"{name} {op} {key}")
    reports = {}
    for path in (kinds_file, old):
        out = tmp_path / f"rep-{path.stem}"
        proc = subprocess.run(["/usr/bin/python3", str(REPORT), str(path), "-o", str(out)],
                              capture_output=True, text=True, timeout=REPORT_TIMEOUT)
        assert proc.returncode == 0, describe(proc)
        reports[path] = read_csv(out / "phases.csv")
    for x, y in zip(reports[kinds_file], reports[old]):
        for key, value in x.items():
            if key in STATS + SERVER + SERVER_SUMS + ["contention", "elapsed"]:
                same(num(y[key]), num(value), f"{x['phase']} {key} (phases.csv)")
            else:
                assert y[key] == value, f"{x['phase']} {key} (phases.csv)"
