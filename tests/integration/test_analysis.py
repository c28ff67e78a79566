"""Post-run analysis (analysis/): the loader herd_results, herd-report and
herd-compare on results files herd itself writes during the test.

1. A clean run (4 I/O ranks and a monitor rank; write, read with verify,
   md5, lock, idle) and a run with injected errors (fault backend): every
   value of herd-report's phases.csv and errors.csv equals what is
   recomputed here from the raw HDF5 records with h5py (not through the
   loader), and the server CPU columns equal the mean and max of the
   monitor samples that meet each phase, as herd's own summary prints them.
2. The plots and index.html exist, are PNGs / HTML, and the page names
   every plot and table; headless Chromium (Debian's chromium and
   chromium-driver, through python3-selenium) opens index.html, every
   image on it loads (no broken image), and a screenshot is taken.
3. herd-compare over the two runs: the ratios are the recomputed MiB/s and
   time ratios; -o writes its CSV and plots; numeric labels give
   scaling.png.
4. A missing, truncated, foreign (non-herd HDF5) or text file: exit 2 and
   one line on stderr, from both tools; an interrupted run is reported as
   interrupted, with the phases it holds.
5. Many clients per rank (clients_per_rank): the clean run rewritten as 4
   ranks x 50 clients (the layout herd writes with libnfs; test_clients.py
   makes real ones against ganesha): herd-report's Clients section, its
   client_times.csv (one row per phase and client, every value recomputed
   here from the raw rows), the spread and slowest-client tables, the
   histogram, the title; the loader's client columns, and a file of an
   older herd (no client column) read as one client per rank; the timeline
   draws a bar per client only while clients are few.
6. A run with a meta phase and a monitor recording the target's disk: the
   throughput plot's meta panel holds each step's items/s (mdtest's
   rates), and a disk's busy share over 1 in a sample is shown as 100 %.
7. Runs named when they ran (--set label=..., HERD_SERVER_FS): herd-report's
   heading and facts, herd-compare's default column names (labels when
   every run has one, else file names; a file of an older herd has none),
   and --label fstype over libnfs against the embedded server (needs
   root and nfs-ganesha: skips otherwise) naming the export's file system.

Run: /usr/bin/python3 -m pytest -q -rs tests/integration/test_analysis.py
"""
import html
import re
import shutil
import subprocess
import sys

import h5py
import numpy as np
import pytest

from conftest import (REPO_DIR, browser_open, describe, headless_chromium, herd_run,
                      herd_run_interrupted, mpi_env, mpirun_args, read_csv, run_cmd, write_job)

ANALYSIS = REPO_DIR / "analysis"
REPORT = ANALYSIS / "herd-report"
COMPARE = ANALYSIS / "herd-compare"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
RANKS = 4


def text(v):
    return v.decode() if isinstance(v, bytes) else v


def tool(path, *args, timeout=120):
    return subprocess.run(["/usr/bin/python3", str(path)] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=timeout)


def num(v):
    return float("nan") if v in ("", "nan", "NaN", None) else float(v)


def assert_same(got, want, what):
    if isinstance(want, float) and np.isnan(want):
        assert np.isnan(got), f"{what}: {got} != NaN"
    else:
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12), f"{what}: {got} != {want}"


# ---------------------------------------------------------------- the runs

CLEAN_PHASES = [
    ("write", {"kind": "write", "file_size": "16M", "iterations": "2"}),
    ("read", {"kind": "read", "file_size": "16M", "verify": "yes"}),
    ("md5", {"kind": "md5", "file_size": "16M"}),
    ("lock", {"kind": "lock", "count": "50", "lock_wait": "nonblocking"}),
    ("idle", {"kind": "idle", "duration": "500ms"}),
]


@pytest.fixture(scope="module")
def runs(herd_bin, tmp_path_factory):
    """(clean.h5, faulty.h5) made by herd, and the clean run's stdout."""
    work = tmp_path_factory.mktemp("analysis")
    target = work / "target"
    target.mkdir()
    clean = work / "clean.h5"
    job = write_job(work / "clean.ini",
                    {"target": target, "monitor_rank": "last", "monitor_interval": "100ms"},
                    CLEAN_PHASES)
    proc = herd_run(herd_bin, RANKS + 1, job, clean)
    assert proc.returncode == 0, describe(proc)
    faulty = work / "faulty.h5"
    job = write_job(work / "faulty.ini", {"target": target, "backend": "fault"},
                    [("write", {"kind": "write", "file_size": "16M", "block_size": "256K",
                                "iterations": "2",
                                "faults": "write=EIO@0.1,open=ENOSPC@0.3,close=EBADF@0.2"}),
                     ("read", {"kind": "read", "file_size": "16M", "verify": "yes",
                               "faults": "read=ETIMEDOUT@0.05"})])
    proc_f = herd_run(herd_bin, RANKS, job, faulty)
    assert proc_f.returncode == 3, describe(proc_f)
    return clean, faulty, proc.stdout


def raw_phase(path, name):
    """The summary values of one phase recomputed from the raw records."""
    with h5py.File(path, "r") as f:
        g = f["phases"][name]
        rows = g["ranks"][()]
        errors = g["errors"][()]
        t0, t1 = float(g.attrs["t_start"]), float(g.attrs["t_end"])
        samples = f["monitor/samples"][()] if "samples" in f["monitor"] else None
    worked = rows[rows["ops"] > 0]
    secs = worked["t_end"] - worked["t_start"]
    last = worked["t_end"].max() - t0 if len(worked) else float("nan")
    out = {
        "rows": len(rows), "ranks": len(set(rows["rank"])),
        "t_min": secs.min() if len(secs) else float("nan"),
        "t_median": float(np.median(secs)) if len(secs) else float("nan"),
        "t_max": secs.max() if len(secs) else float("nan"),
        "first_done": worked["t_end"].min() - t0 if len(worked) else float("nan"),
        "last_done": last,
        "bytes": int(rows["bytes"].sum()), "ops": int(rows["ops"].sum()),
        "errors": int(errors["count"].sum()),
        "verify_failures": int(rows["verify_failures"].sum()),
        "violations": int(rows["violations"].sum()),
        "grants": int(rows["grants"].sum()), "contended": int(rows["contended"].sum()),
    }
    out["mib_per_s"] = out["bytes"] / 2**20 / last if out["bytes"] else 0.0
    out["ops_per_s"] = out["ops"] / last if out["ops"] else 0.0
    tries = out["grants"] + out["contended"]
    out["contention"] = out["contended"] / tries if tries else float("nan")
    out["cpu_mean"] = out["cpu_max"] = float("nan")
    if samples is not None:
        meet = samples[(samples["t"] - samples["dt"] <= t1) & (samples["t"] > t0)]
        busy = meet["cpu_busy"][~np.isnan(meet["cpu_busy"])]
        if len(busy):
            out["cpu_mean"], out["cpu_max"] = busy.mean(), busy.max()
    return out


@pytest.fixture(scope="module")
def reports(runs, tmp_path_factory):
    """herd-report of both runs: {name: output dir}."""
    out = {}
    for path in runs[:2]:
        d = tmp_path_factory.mktemp("report") / path.stem
        proc = tool(REPORT, path, "-o", d)
        assert proc.returncode == 0, describe(proc)
        out[path.stem] = d
    return out


# ---------------------------------------------------------------- tables


def test_phase_table_matches_records(runs, reports):
    clean, faulty, _ = runs
    for path in (clean, faulty):
        rows = read_csv(reports[path.stem] / "phases.csv")
        with h5py.File(path, "r") as f:
            names = list(f["phases"])
        assert [r["phase"] for r in rows] == names
        for r in rows:
            want = raw_phase(path, r["phase"])
            for key, value in want.items():
                assert_same(num(r[key]), float(value), f"{path.stem} {r['phase']} {key}")
    clean_rows = {r["phase"]: r for r in read_csv(reports["clean"] / "phases.csv")}
    assert num(clean_rows["lock"]["grants"]) > 0
    assert not np.isnan(num(clean_rows["write"]["cpu_mean"]))
    assert (reports["clean"] / "phases.md").read_text().count("\n|") >= len(CLEAN_PHASES) + 1


def test_server_cpu_matches_herd_summary(runs, reports):
    """herd prints server CPU per phase at the end; the report says the same."""
    _, _, stdout = runs
    printed = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 8 and parts[1].endswith("%"):  # phase, cpu mean, max, 5 more
            printed[parts[0]] = (float(parts[1][:-1]), float(parts[2][:-1]))
    rows = {r["phase"]: r for r in read_csv(reports["clean"] / "phases.csv")}
    assert set(printed) == set(rows)
    for name, (mean, top) in printed.items():
        assert 100 * num(rows[name]["cpu_mean"]) == pytest.approx(mean, abs=0.051)
        assert 100 * num(rows[name]["cpu_max"]) == pytest.approx(top, abs=0.051)


def test_error_tables_match_records(runs, reports):
    _, faulty, _ = runs
    want = {}
    with h5py.File(faulty, "r") as f:
        for name in f["phases"]:
            for e in f["phases"][name]["errors"][()]:
                key = (name, text(e["op"]), int(e["errno"]))
                count, ranks = want.get(key, (0, set()))
                want[key] = (count + int(e["count"]), ranks | {int(e["rank"])})
    assert want, "the fault backend injected nothing"
    got = {(r["phase"], r["op"], int(r["errno"])): (int(r["count"]), int(r["ranks"]))
           for r in read_csv(reports["faulty"] / "errors.csv")}
    assert got == {k: (c, len(r)) for k, (c, r) in want.items()}
    by_rank = read_csv(reports["faulty"] / "errors_by_rank.csv")
    assert sum(int(r["count"]) for r in by_rank) == sum(c for c, _ in want.values())
    # write=EIO@0.1 over 512 writes: EIO is certain; the rarer faults may not fire
    assert "EIO" in {r["errno_name"] for r in by_rank}
    clean_errors = read_csv(reports["clean"] / "errors.csv")
    assert clean_errors == []


# ---------------------------------------------------------------- plots, page


def test_plots_and_page(reports):
    for name, pngs in (("clean", ["timeline", "latency", "server"]),
                       ("faulty", ["timeline", "latency", "errors"])):
        d = reports[name]
        for png in pngs:
            data = (d / f"{png}.png").read_bytes()
            assert data.startswith(PNG_MAGIC) and len(data) > 5000, (name, png, len(data))
        page = (d / "index.html").read_text()
        assert page.lstrip().lower().startswith("<!doctype html")
        for png in pngs:
            assert f'src="{png}.png"' in page, (name, png)
        for table in ("phases.csv", "errors.csv"):
            assert table in page
        assert "http://" not in page and "https://" not in page  # readable offline
    assert not (reports["clean"] / "errors.png").exists()


def test_report_units_and_throughput(runs, reports):
    """The page's calls-per-op latencies are in the terminal's units (197us,
    1.18ms), never bare seconds in scientific notation; ops.csv keeps the
    exact seconds; a per-phase throughput chart is drawn; the job file is
    shown as written, with the run's effective target beside it."""
    for path in runs[:2]:
        d = reports[path.stem]
        page = (d / "index.html").read_text()
        ops = page.split("<h2>Calls per op</h2>")[1].split("<h2>")[0]
        cells = re.findall(r"<td>([^<]*)</td>", ops)
        lat = [c for c in cells if re.fullmatch(r"[0-9.]+(us|ms|s)", c)]
        assert lat, ops[:2000]
        assert not re.search(r"\d\.\d+e-\d", ops), ops[:2000]
        # ops.csv: the results file's own seconds, not the page's units
        csv_rows = read_csv(d / "ops.csv")
        with h5py.File(path, "r") as f:
            stored = {(name, row["op"].decode()): float(row["p50_s"])
                      for name, g in f["phases"].items() if "op_summary" in g
                      for row in g["op_summary"][()]}
        got = {(r["phase"], r["op"]): float(r["p50_s"]) for r in csv_rows
               if r["p50_s"] not in ("", "nan")}
        assert got and all(v == pytest.approx(stored[k], rel=1e-9) for k, v in got.items()), \
            (got, stored)
        data = (d / "throughput.png").read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5000
        assert 'src="throughput.png"' in page
        with h5py.File(path, "r") as f:
            target = f.attrs["target"]
            target = target.decode() if isinstance(target, bytes) else str(target)
        job = page.split("<h2>Job file</h2>")[1]
        assert f"target was <code>{html.escape(target)}</code>" in job, job[:500]


def test_page_in_headless_chromium(reports, tmp_path):
    browser = headless_chromium()
    try:
        for name, d in reports.items():
            browser_open(browser, d / "index.html")
            images = browser.execute_script(
                "return Array.from(document.images).map(i => "
                "[i.getAttribute('src'), i.complete, i.naturalWidth, i.naturalHeight]);")
            assert len(images) >= 3, images
            broken = [i for i in images if not (i[1] and i[2] > 0 and i[3] > 0)]
            assert not broken, f"{name}: broken images {broken}"
            height = browser.execute_script("return document.body.scrollHeight")
            browser.set_window_size(1400, min(max(height, 800), 12000))
            shot = tmp_path / f"{name}.png"
            assert browser.save_screenshot(str(shot))
            assert shot.read_bytes().startswith(PNG_MAGIC) and shot.stat().st_size > 20000
            body = browser.find_element("tag name", "body").text
            assert "write" in body and "read" in body
    finally:
        browser.quit()


# ---------------------------------------------------------------- meta, disks

META_STEPS = ["create", "stat", "rename", "unlink", "rmdir"]


@pytest.fixture(scope="module")
def meta_run(herd_bin, tmp_path_factory):
    """A run of write, meta (every step) and lock phases, with a monitor
    rank recording the disk under the target."""
    work = tmp_path_factory.mktemp("meta")
    target = work / "target"
    target.mkdir()
    job = write_job(work / "meta.ini",
                    {"target": target, "monitor_rank": "last", "monitor_interval": "100ms",
                     "monitor_disks": target},
                    [("write", {"kind": "write", "file_size": "4M"}),
                     ("meta", {"kind": "meta", "files": "50"}),
                     ("lock", {"kind": "lock", "count": "10"})])
    out = work / "meta.h5"
    proc = herd_run(herd_bin, 3, job, out)
    assert proc.returncode == 0, describe(proc)
    return out


def test_meta_throughput_is_items_per_step(meta_run, tmp_path):
    """The throughput plot shows a meta phase as mdtest's rates: a bar per
    step, the step's items/s (op_summary's items_per_s, as herd stored
    it), not the phase's calls/s; the other kinds keep their panels."""
    sys.path.insert(0, str(ANALYSIS))
    import herd_plots
    import herd_results
    with h5py.File(meta_run, "r") as f:
        stored = {text(r["op"]): float(r["items_per_s"])
                  for r in f["phases/meta/op_summary"][()]}
    with herd_results.load(meta_run) as run:
        panels = {p.unit: p for p in herd_plots.throughput_panels(run)}
    assert set(panels) == {"MiB/s", "calls/s (lock: grants/s)", "items/s (meta: per step)"}, \
        panels
    assert panels["MiB/s"].labels == ["write"]
    assert panels["calls/s (lock: grants/s)"].labels == ["lock"]
    items = panels["items/s (meta: per step)"]
    assert items.labels == [f"meta: {step}" for step in META_STEPS]
    ops = ["open", "stat", "rename", "unlink", "rmdir"]  # each step's item call
    assert list(items.values) == pytest.approx([stored[op] for op in ops], rel=1e-12)
    assert all(v > 0 for v in items.values), items
    proc = tool(REPORT, meta_run, "-o", tmp_path / "report")
    assert proc.returncode == 0, describe(proc)
    assert (tmp_path / "report" / "throughput.png").read_bytes().startswith(PNG_MAGIC)


def test_disk_busy_max_is_capped(meta_run, tmp_path):
    """A disk's busy share can read over 1 (io_ticks in whole jiffies):
    with one sample of the meta phase set to 1.07 in a copy of the file,
    server.csv and server.md show 100 %, never more; a busy share under 1
    is shown as it is."""
    path = tmp_path / "busy.h5"
    shutil.copyfile(meta_run, path)
    with h5py.File(path, "r+") as f:
        if "disks" not in f["monitor"] or not len(f["monitor/disks"]):
            pytest.skip("the monitor found no block device under the target")
        rows = f["monitor/disks"][()]
        spans = {name: (float(g.attrs["t_start"]), float(g.attrs["t_end"]))
                 for name, g in f["phases"].items()}

        def meets(i, name):  # the report's rule: the interval (t - dt, t] meets the phase
            t0, t1 = spans[name]
            return rows["t"][i] - rows["dt"][i] <= t1 and rows["t"][i] > t0
        meeting = [i for i in range(len(rows)) if meets(i, "meta")]
        assert meeting, "no disk sample meets the meta phase"
        edited = meeting[len(meeting) // 2]
        device = text(rows["device"][edited])
        rows["busy"] = np.minimum(rows["busy"], 0.5)
        rows["busy"][edited] = 1.07
        f["monitor/disks"][...] = rows
    proc = tool(REPORT, path, "-o", tmp_path / "report")
    assert proc.returncode == 0, describe(proc)
    server = {r["phase"]: r for r in read_csv(tmp_path / "report" / "server.csv")}
    for name in spans:
        busy = num(server[name][f"{device}_busy_max"])
        assert (busy == 1.0) if meets(edited, name) else (busy <= 0.5), (name, busy)
    md = (tmp_path / "report" / "server.md").read_text()
    assert "107.0%" not in md and "100.0%" in md, md


# ---------------------------------------------------------------- labels

LABELS = {"a": ("xfs-run", "xfs"), "b": ("ext4 run <b>|", "ext4"), "plain": (None, None)}


def labelled_run(herd_bin, job, path, label, server_fs, launch=None, env=None):
    """herd run with --set label=LABEL (when given) and HERD_SERVER_FS in
    rank 0's environment (when given); launch wraps the mpirun command."""
    env = dict(env or mpi_env())
    for name in ("HERD_LABEL", "HERD_SERVER_FS"):
        env.pop(name, None)
    if server_fs:
        env["HERD_SERVER_FS"] = server_fs
    extra = ["--set", f"label={label}"] if label else []
    args = mpirun_args(herd_bin, 2, "run", job, "-o", path, *extra)
    proc = run_cmd((launch or list)(args), env=env)
    assert proc.returncode == 0, describe(proc)
    with h5py.File(path, "r") as f:
        assert (text(f.attrs["label"]), text(f.attrs["server_fs"])) == \
            (label or "", server_fs or ""), dict(f.attrs)
    return path


@pytest.fixture(scope="module")
def labelled_runs(herd_bin, tmp_path_factory):
    """{name: results file}: runs named when they ran (LABELS), one
    without, and a copy of a without the attributes (an older herd's)."""
    work = tmp_path_factory.mktemp("labels")
    target = work / "target"
    target.mkdir()
    job = write_job(work / "job.ini", {"target": target},
                    [("write", {"kind": "write", "file_size": "1M"})])
    paths = {name: labelled_run(herd_bin, job, work / f"{name}.h5", label, fs)
             for name, (label, fs) in LABELS.items()}
    paths["older"] = work / "older.h5"
    shutil.copyfile(paths["a"], paths["older"])
    with h5py.File(paths["older"], "r+") as f:
        del f.attrs["label"], f.attrs["server_fs"]
    return paths


def facts(page):
    """{label: value} of index.html's Run facts."""
    block = page.split('<table class="facts">')[1].split("</table>")[0]
    return {html.unescape(k): html.unescape(v)
            for k, v in re.findall(r"<tr><th>(.*?)</th><td>(.*?)</td></tr>", block)}


def test_report_shows_the_label(labelled_runs, tmp_path):
    """herd-report names a labelled run by its label in the heading and
    the Run facts, and its server's file system; a run without them (none
    set, or a file of an older herd) has neither."""
    for name, path in labelled_runs.items():
        label, server_fs = LABELS.get(name, (None, None))
        out = tmp_path / name
        proc = tool(REPORT, path, "-o", out)
        assert proc.returncode == 0, describe(proc)
        page = (out / "index.html").read_text()
        heading = html.unescape(page.split("<h1>")[1].split("</h1>")[0])
        with h5py.File(path, "r") as f:
            run_id = text(f.attrs["run_id"])
        got = facts(page)
        assert heading == (f"herd run {run_id}: {label}" if label else f"herd run {run_id}")
        assert got.get("label") == label, got
        assert got.get("server file system") == server_fs, got
        assert "<b>" not in page.split("</h1>")[0], "the label is not escaped"


def compare_runs(paths, out, *args):
    """herd-compare PATHS -o OUT ARGS: the run column of compare.csv, in order."""
    proc = tool(COMPARE, *paths, "-o", out, *args)
    assert proc.returncode == 0, describe(proc)
    return list(dict.fromkeys(r["run"] for r in read_csv(out / "compare.csv"))), proc.stdout


def test_compare_names_runs_by_their_labels(labelled_runs, tmp_path):
    """herd-compare's default names each run by its label when every run
    has one, else by its file name; --label file and --label label say
    which; a file of an older herd (no label) counts as one without."""
    p = labelled_runs
    runs, stdout = compare_runs([p["a"], p["b"]], tmp_path / "ab")
    assert runs == ["xfs-run", "ext4 run <b>|"]
    assert "xfs-run" in stdout and "ext4 run <b>|" in stdout
    assert "ext4 run &lt;b&gt;\\|" in (tmp_path / "ab" / "compare.md").read_text()
    assert compare_runs([p["a"], p["plain"]], tmp_path / "ap")[0] == ["a", "plain"]
    assert compare_runs([p["a"], p["older"]], tmp_path / "ao")[0] == ["a", "older"]
    assert compare_runs([p["a"], p["b"]], tmp_path / "f", "--label", "file")[0] == ["a", "b"]
    # (a run without one: "-", which a CSV cell writes "'-": no formula)
    assert compare_runs([p["a"], p["plain"]], tmp_path / "l", "--label", "label")[0] == \
        ["xfs-run", "'-"]
    # a run over a local file system keeps its fstype, whatever server_fs says
    with h5py.File(p["a"], "r") as f:
        fstype = text(f["hosts"][0]["fstype"])
    assert fstype not in ("libnfs", "smb", "xfs"), fstype
    assert compare_runs([p["a"]], tmp_path / "t", "--label", "fstype")[0] == [fstype]


def test_compare_fstype_over_libnfs_is_the_server_fs(herd_bin, labelled_runs, tmp_path):
    """Over libnfs /hosts' fstype is "libnfs": --label fstype names the run
    by the file system the embedded server exports (server_fs, xfs here),
    and a libnfs run without server_fs by "libnfs" still."""
    from test_nfs_server import SBIN_PATH, SCRIPT, Server, _why_skip
    why = _why_skip()
    if why:
        pytest.skip(why)
    server = Server(tmp_path / "nfs")
    try:
        server.start("--fs", "xfs", "--size", "1G")
        job = write_job(tmp_path / "nfs.ini", {"backend": "libnfs", "target": server.url},
                        [("write", {"kind": "write", "file_size": "1M"})])

        def in_server_namespace(args, fs):
            # exec names the export's fs (HERD_SERVER_FS): unset, herd knows none
            unset = [] if fs else ["env", "-u", "HERD_SERVER_FS"]
            return ["bash", str(SCRIPT), "exec", "--state", str(server.state), "--", *unset,
                    *args]
        env = dict(mpi_env(), PATH=SBIN_PATH)
        paths = [labelled_run(herd_bin, job, tmp_path / f"{name}.h5", None, fs,
                              lambda args, fs=fs: in_server_namespace(args, fs), env)
                 for name, fs in (("nfs-xfs", "xfs"), ("nfs-unknown", None))]
    finally:
        server.stop(check=False)
    server.assert_clean()
    for path in paths:
        with h5py.File(path, "r") as f:
            assert text(f["hosts"][0]["fstype"]) == "libnfs"
    runs, stdout = compare_runs(paths, tmp_path / "cmp", "--label", "fstype")
    assert runs == ["xfs", "libnfs"], stdout


# ---------------------------------------------------------------- compare


def test_compare_ratios(runs, tmp_path):
    clean, faulty, _ = runs
    out = tmp_path / "cmp"
    proc = tool(COMPARE, clean, faulty, "-o", out)
    assert proc.returncode == 0, describe(proc)
    rows = read_csv(out / "compare.csv")
    for phase in ("write", "read"):
        a, b = raw_phase(clean, phase), raw_phase(faulty, phase)
        ra = next(r for r in rows if r["phase"] == phase and r["run"] == "clean")
        rb = next(r for r in rows if r["phase"] == phase and r["run"] == "faulty")
        assert num(ra["ratio"]) == pytest.approx(1.0)
        assert_same(num(rb["ratio"]), b["mib_per_s"] / a["mib_per_s"], f"{phase} ratio")
        assert_same(num(rb["time_ratio"]), b["last_done"] / a["last_done"], f"{phase} t ratio")
        assert_same(num(rb["mib_per_s"]), b["mib_per_s"], f"{phase} MiB/s")
        assert int(rb["errors"]) == b["errors"]
    assert [r["run"] for r in rows if r["phase"] == "md5"] == ["clean", "faulty"]
    assert next(r for r in rows if r["phase"] == "md5" and r["run"] == "faulty")["status"] \
        == "(absent)"
    assert (out / "compare.png").read_bytes().startswith(PNG_MAGIC)
    # Numeric labels (ranks): a scaling plot.
    proc = tool(COMPARE, clean, faulty, "--label", "nranks", "-o", tmp_path / "scale")
    assert proc.returncode == 0, describe(proc)
    assert "4 (clean)" in proc.stdout  # equal labels are told apart by file name
    # the srv cpu column's legend: the clean run's monitor rank shared its host
    assert "srv cpu = the monitored server host's busy share of all its CPUs over the phase, " \
        f"shared with client ranks of the run (4 (clean): {RANKS})" in proc.stdout, proc.stdout
    proc = tool(COMPARE, clean, faulty, "--label", "file_size", "-o", tmp_path / "size")
    assert proc.returncode == 0, describe(proc)
    assert (tmp_path / "size" / "compare.png").exists()


# ---------------------------------------------------------------- bad input


def test_bad_files(runs, tmp_path):
    clean = runs[0]
    truncated = tmp_path / "truncated.h5"
    truncated.write_bytes(clean.read_bytes()[:3000])
    foreign = tmp_path / "foreign.h5"
    with h5py.File(foreign, "w") as f:
        f["data"] = np.arange(10)
        f.attrs["tool"] = "ior"
    textfile = tmp_path / "notes.txt"
    textfile.write_text("not a results file\n")
    for bad, words in ((tmp_path / "missing.h5", "no such file"),
                       (truncated, "not a readable HDF5 file"),
                       (foreign, "not a herd results file"),
                       (textfile, "not a readable HDF5 file")):
        for cmd in ([REPORT, bad, "-o", tmp_path / "r"], [COMPARE, clean, bad]):
            proc = tool(*cmd)
            assert proc.returncode == 2, describe(proc)
            lines = proc.stderr.strip().splitlines()
            assert len(lines) == 1 and words in lines[0] and str(bad) in lines[0], describe(proc)
            assert "Traceback" not in proc.stderr
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())


def test_interrupted_run_is_reported(herd_bin, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "job.ini", {"target": target},
                    [("w", {"kind": "write", "file_size": "4M"}),
                     ("long", {"kind": "idle", "duration": "60s"}),
                     ("never", {"kind": "write", "file_size": "4M"})])
    out = tmp_path / "r.h5"
    herd_run_interrupted(herd_bin, 2, job, out, "w", 0.5)
    proc = tool(REPORT, out, "-o", tmp_path / "rep")
    assert proc.returncode == 0, describe(proc)
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "interrupted" in page
    assert [r["phase"] for r in read_csv(tmp_path / "rep" / "phases.csv")] == ["w", "long"]
    proc = tool(COMPARE, out, out)
    assert proc.returncode == 0 and "interrupted" in proc.stdout, describe(proc)


# ---------------------------------------------------------------- the loader


def test_loader_dataframes(runs):
    sys.path.insert(0, str(ANALYSIS))
    import herd_results
    clean, faulty, _ = runs
    with herd_results.load(clean) as run:
        assert run.status == "complete"
        assert list(run.phases["phase"]) == [n for n, _ in CLEAN_PHASES]
        ranks = run.all_ranks()
        assert set(ranks["phase"]) == {n for n, _ in CLEAN_PHASES}
        samples = run.samples()
        assert len(samples) > 0 and set(samples["source"]) == {"proc"}
        assert isinstance(samples["host"].iloc[0], str)
        assert np.allclose(samples[[c for c in samples.columns if c.startswith("cpu_")
                                    and c != "cpu_busy"]].sum(axis=1), 1.0)
        assert list(run.marks()["phase"]) == [n for n, _ in CLEAN_PHASES]
    with herd_results.load(faulty) as run:
        errors = run.all_errors()
        assert len(errors) > 0 and {"phase", "rank", "op", "errno_name", "count"} <= set(errors)
        assert isinstance(errors["op"].iloc[0], str)
    with pytest.raises(herd_results.ResultsError):
        herd_results.load(str(clean) + ".missing")


# ---------------------------------------------------------------- many clients

CLIENTS = 50  # clients_per_rank of the rewritten run
# The summary statistics herd stores per phase: dropped from a rewritten
# file so that the loader recomputes them from its new rows.
SUMMARY_STATS = ("rows", "ranks", "t_min", "t_median", "t_max", "first_done", "last_done",
                 "bytes", "ops", "mib_per_s", "ops_per_s", "errors", "verify_failures",
                 "grants", "contended", "violations", "stuck")
# (phase, rank, client, failed calls) written into the rewritten errors tables
CLIENT_ERRORS = [("write", 1, 7, 3), ("write", 2, 0, 1), ("read", 3, 49, 2)]


def _retable(group, name, rows):
    del group[name]
    group.create_dataset(name, data=rows)


def with_clients(src, dst, k):
    """dst: src (a run herd wrote, one client per rank) as a run of k NFS
    clients per rank, laid out as herd writes one (docs/results-format.md):
    root attribute clients_per_rank, phase attribute active_clients, each
    rank row k rows ordered by rank, client, iteration, client c's
    iterations (1 + c / k) times as long as the rank's and file_rank its
    global id; CLIENT_ERRORS (of clients below k) in the errors tables.
    The phases' summary_* statistics are dropped, so the loader
    recomputes them from the rows."""
    shutil.copyfile(src, dst)
    with h5py.File(dst, "r+") as f:
        f.attrs["clients_per_rank"] = np.int32(k)
        for name, g in f["phases"].items():
            if "status" not in g.attrs:
                continue
            rows = g["ranks"][()]
            assert "client" in rows.dtype.names  # herd writes it, 0 with one client
            out = []
            for rank in np.unique(rows["rank"]):
                mine = rows[rows["rank"] == rank]
                for c in range(k):
                    r = mine.copy()
                    r["client"] = c
                    r["file_rank"] = rank * k + c
                    r["t_end"] = r["t_start"] + (r["t_end"] - r["t_start"]) * (1 + c / k)
                    out.append(r)
            _retable(g, "ranks", np.concatenate(out))
            errors = g["errors"][()]
            failed = [e for e in CLIENT_ERRORS if e[0] == name and e[2] < k]
            extra = np.zeros(len(failed), dtype=errors.dtype)
            for row, (_, rank, client, count) in zip(extra, failed):
                row["rank"], row["client"], row["count"] = rank, client, count
                row["op"], row["errno"], row["errno_name"] = name.encode(), 5, b"EIO"
                row["first_path"], row["first_time"] = b"/f", g.attrs["t_start"]
            _retable(g, "errors", np.concatenate([errors, extra]))
            g.attrs["active_clients"] = np.int64(len(np.unique(rows["rank"])) * k)
            for key in SUMMARY_STATS:
                if f"summary_{key}" in g.attrs:
                    del g.attrs[f"summary_{key}"]
    return dst


def without_clients(src, dst):
    """dst: src as an older herd wrote it: no client field in the ranks and
    errors tables, no clients_per_rank attribute."""
    shutil.copyfile(src, dst)
    with h5py.File(dst, "r+") as f:
        del f.attrs["clients_per_rank"]
        for g in f["phases"].values():
            if "status" not in g.attrs:
                continue
            for table in ("ranks", "errors"):
                rows = g[table][()]
                names = [n for n in rows.dtype.names if n != "client"]
                old = np.empty(len(rows), dtype=[(n, rows.dtype[n]) for n in names])
                for n in names:
                    old[n] = rows[n]
                _retable(g, table, old)
    return dst


def raw_clients(path):
    """{phase: {(rank, client): (seconds, bytes, ops, errors)}} from the raw
    records: seconds the sum of a client's t_end - t_start."""
    out = {}
    with h5py.File(path, "r") as f:
        for name, g in f["phases"].items():
            if "status" not in g.attrs:
                continue
            per = {}
            for r in g["ranks"][()]:
                key = (int(r["rank"]), int(r["client"]))
                s, b, o, e = per.get(key, (0.0, 0, 0, 0))
                per[key] = (s + float(r["t_end"] - r["t_start"]), b + int(r["bytes"]),
                            o + int(r["ops"]), e)
            for e in g["errors"][()]:
                key = (int(e["rank"]), int(e["client"]))
                s, b, o, n = per[key]
                per[key] = (s, b, o, n + int(e["count"]))
            out[name] = per
    return out


@pytest.fixture(scope="module")
def client_runs(runs, tmp_path_factory):
    """The clean run as 4 ranks x CLIENTS clients and as 4 x 3, and as an
    older herd wrote it; herd-report of the first: (paths, report dir)."""
    work = tmp_path_factory.mktemp("clients")
    many = with_clients(runs[0], work / "many.h5", CLIENTS)
    few = with_clients(runs[0], work / "few.h5", 3)
    old = without_clients(runs[0], work / "old.h5")
    out = work / "many-report"
    proc = tool(REPORT, many, "-o", out)
    assert proc.returncode == 0, describe(proc)
    assert str(out / "client_times.csv") in proc.stdout.splitlines()
    return {"many": many, "few": few, "old": old}, out


def test_report_clients(client_runs):
    paths, out = client_runs
    want = raw_clients(paths["many"])
    rows = read_csv(out / "client_times.csv")
    assert list(rows[0])[:8] == ["phase", "rank", "client", "client_id", "seconds", "bytes",
                                 "ops", "errors"]
    assert [n for n in dict.fromkeys(r["phase"] for r in rows)] == [n for n, _ in CLEAN_PHASES]
    for phase, per in want.items():
        mine = [r for r in rows if r["phase"] == phase]
        assert len(mine) == RANKS * CLIENTS == len(per), phase
        assert [(int(r["rank"]), int(r["client"])) for r in mine] == sorted(per)
        for r in mine:
            rank, client = int(r["rank"]), int(r["client"])
            assert int(r["client_id"]) == rank * CLIENTS + client
            secs, nbytes, ops, errors = per[(rank, client)]
            assert_same(num(r["seconds"]), secs, f"{phase} {rank}.{client} seconds")
            assert (int(r["bytes"]), int(r["ops"]), int(r["errors"])) == (nbytes, ops, errors)
    assert sum(int(r["errors"]) for r in rows) == sum(e[3] for e in CLIENT_ERRORS)
    # The spread per phase: linear quantiles over the clients' seconds.
    spread = {r["phase"]: r for r in read_csv(out / "client_spread.csv")}
    assert list(spread) == [n for n, _ in CLEAN_PHASES]
    slowest = read_csv(out / "slowest_clients.csv")
    for phase, per in want.items():
        secs = np.array([v[0] for v in per.values()])
        r = spread[phase]
        assert int(r["clients"]) == RANKS * CLIENTS
        for key, q in (("min_s", 0), ("median_s", 0.5), ("p90_s", 0.9), ("p99_s", 0.99),
                       ("max_s", 1)):
            assert_same(num(r[key]), float(np.quantile(secs, q)), f"{phase} {key}")
        worst = max(per, key=lambda k: per[k][0])
        assert int(r["slowest_client_id"]) == worst[0] * CLIENTS + worst[1]
        assert int(r["clients_with_errors"]) == sum(1 for v in per.values() if v[3])
        top = [s for s in slowest if s["phase"] == phase]
        assert len(top) == 10
        assert [num(s["seconds"]) for s in top] == pytest.approx(sorted(secs)[::-1][:10])
        for s in top:
            assert int(s["client_id"]) == int(s["rank"]) * CLIENTS + int(s["client"])
    # The page: the title, the section, the histogram.
    page = (out / "index.html").read_text()
    assert f"{RANKS} ranks x {CLIENTS} clients" in page.split("</h1>")[0]
    section = page.split("<h2>Clients</h2>")[1].split("<h2>")[0]
    assert "slowest clients" in section and 'src="client_times.png"' in section
    assert section.count('<tr class="flag">') >= 1  # a phase with a failing client
    assert page.count('src="client_times.png"') == 1  # not again under Plots
    assert 'href="client_times.csv"' in page
    for png in ("client_times", "timeline"):
        data = (out / f"{png}.png").read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5000, (png, len(data))
    ranks = read_csv(out / "ranks.csv")
    with h5py.File(paths["many"], "r") as f:
        assert len(ranks) == sum(g["ranks"].shape[0] for g in f["phases"].values())
    assert {"client", "client_id"} <= set(ranks[0])


def test_loader_clients(client_runs, tmp_path, monkeypatch):
    sys.path.insert(0, str(ANALYSIS))
    import herd_plots
    import herd_results
    paths, _ = client_runs
    with herd_results.load(paths["many"]) as run:
        assert run.clients_per_rank == CLIENTS
        rows = run.ranks("write")
        assert list(rows.columns[:3]) == ["rank", "client", "client_id"]
        assert (rows["client_id"] == rows["rank"] * CLIENTS + rows["client"]).all()
        assert len(rows) == RANKS * CLIENTS * 2
        assert list(run.phases["ranks"]) == [RANKS] * len(CLEAN_PHASES)  # MPI ranks
        assert list(run.phases["rows"])[0] == RANKS * CLIENTS * 2
        assert {"client", "client_id"} <= set(run.all_ranks().columns)
        times = run.client_times("write")
        assert list(times.columns) == herd_results.CLIENT_COLUMNS
        assert len(times) == RANKS * CLIENTS and (times["iterations"] == 2).all()
        assert int(times.loc[(times["rank"] == 1) & (times["client"] == 7), "errors"].iloc[0]) \
            == 3
    with herd_results.load(paths["old"]) as run:  # an older herd: one client per rank
        assert run.clients_per_rank == 1
        rows = run.ranks("write")
        assert (rows["client"] == 0).all() and (rows["client_id"] == rows["rank"]).all()
        assert "client" in run.errors("write").columns
    # The timeline: a bar per client row while clients are few, else a lane
    # per rank (4 ranks x 50 clients: 200 clients, over MAX_RANK_LANES).
    drawn = []
    monkeypatch.setattr(herd_plots, "timeline_rows", lambda run, o, n: drawn.append("rows"))
    monkeypatch.setattr(herd_plots, "timeline_lanes", lambda run, o, n: drawn.append("lanes"))
    for name in ("few", "many", "old"):
        with herd_results.load(paths[name]) as run:
            herd_plots.timeline(run, None, "timeline.png")
    assert drawn == ["rows", "lanes", "rows"]
    monkeypatch.undo()
    # Both drawn for real, and an older herd's file gets no Clients section.
    for name in ("few", "old"):
        out = tmp_path / name
        proc = tool(REPORT, paths[name], "-o", out)
        assert proc.returncode == 0, describe(proc)
        assert (out / "timeline.png").read_bytes().startswith(PNG_MAGIC)
        page = (out / "index.html").read_text()
        assert ("<h2>Clients</h2>" in page) == (name == "few")
        assert (out / "client_times.csv").exists() == (name == "few")
        assert (out / "client_times.png").exists() == (name == "few")
    assert len(read_csv(tmp_path / "few" / "client_times.csv")) == RANKS * 3 * len(CLEAN_PHASES)

