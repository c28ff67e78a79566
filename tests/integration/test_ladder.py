"""Load ladders (ranks_active, ranks_step, step_duration): one run answers
"how many clients before it stalls" with a step per load point.

1. On a local target, 4 ranks: `ranks_active = 1,2,4` turns the read phase
   into read.1r, read.2r, read.4r (ladder attributes: step, active_ranks,
   active_hosts), exact bytes in every step, the inactive ranks' rows empty
   (no I/O: 0 ops, 0 bytes), verify clean; `ranks_step = 2` gives 1, 2, 4;
   a meta ladder's barriers are among the active ranks only; step_duration
   cuts each step at its deadline; herd check and bad values.
2. On the virtual cluster (4 client hosts x 2 slots = 8 ranks, libnfs to
   the embedded server) with a monitor on the server host: a 4-step ladder
   whose active ranks are spread over hosts (step 4 = one rank per host),
   exact bytes per step, inactive ranks idle, and the server samples fall
   in the step they were taken in.

Run: /usr/bin/python3 -m pytest -q -rs -s tests/integration/test_ladder.py
"""

import os

import h5py
import numpy as np
import pytest

from conftest import describe, herd_cmd, herd_run, load_results, tree, write_job

MIB = 1 << 20


def text(v):
    return v.decode() if isinstance(v, bytes) else v


def check_step(res, name, nranks, active, fsize, iters, kind="read"):
    """A step phase: its attributes, and exactly `active` ranks doing the
    work (the first `active` of the spread order: ranks 0.. on one host)."""
    ph = res.phases[name]
    assert ph.attrs["ladder"] == name.rsplit(".", 1)[0], ph.attrs
    assert ph.attrs["active_ranks"] == len(active), (name, ph.attrs["active_ranks"])
    assert ph.attrs["status"] == "ok", (name, ph.error_rows())
    rows = ph.ranks
    assert len(rows) == nranks * iters, name
    for r in range(nranks):
        mine = rows[rows["rank"] == r]
        if r in active:
            assert (mine["bytes"] == fsize).all() and (mine["completed"] == 1).all(), (name, r)
            assert (mine["verify_failures"] == 0).all(), (name, r)
        else:  # waited at the barrier: no I/O at all
            assert (mine["ops"] == 0).all() and (mine["bytes"] == 0).all(), (name, r)
    calls = int(ph.latency[kind]["count"])
    assert calls == len(active) * iters * (fsize // MIB), (name, calls)


def test_ladder_local(herd_bin, tmp_path):
    target = tmp_path / "t"
    target.mkdir()
    job = write_job(tmp_path / "ladder.ini",
                    {"target": target, "file_size": "4M", "block_size": "1M", "fsync": "no"},
                    [("write", {"kind": "write"}),
                     ("read", {"kind": "read", "ranks_active": "1,2,4", "iterations": 2,
                               "verify": "yes"}),
                     ("geo", {"kind": "read", "ranks_step": 2}),
                     ("meta", {"kind": "meta", "files": 20, "file_size": "0",
                               "ranks_active": "1,3"})])
    out = tmp_path / "ladder.h5"
    proc = herd_run(herd_bin, 4, job, out)
    assert proc.returncode == 0, describe(proc)
    res = load_results(out)
    assert res.phase_names == ["write", "read.1r", "read.2r", "read.4r", "geo.1r", "geo.2r",
                               "geo.4r", "meta.1r", "meta.3r"], res.phase_names
    for step, n in enumerate((1, 2, 4), 1):
        check_step(res, f"read.{n}r", 4, set(range(n)), 4 * MIB, 2)
        assert res.phases[f"read.{n}r"].attrs["step"] == step
        assert res.phases[f"read.{n}r"].attrs["active_hosts"] == 1
        check_step(res, f"geo.{n}r", 4, set(range(n)), 4 * MIB, 1)
    for n in (1, 3):  # meta: the active ranks sync among themselves
        ph = res.phases[f"meta.{n}r"]
        assert ph.attrs["status"] == "ok", ph.error_rows()
        rows = ph.ranks
        assert (rows[rows["rank"] < n]["ops"] > 0).all()
        assert (rows[rows["rank"] >= n]["ops"] == 0).all()
    assert list(target.iterdir()) == [], "the ladder left files behind"
    # Each step counts and says its own ranks: summary_ranks, the table's
    # rows are still every rank's, and the closing progress line names the
    # active ranks, all done (100 %), not all 4 at 25 %.
    for name in ("read", "geo", "meta"):
        for step in [p for p in res.phase_names if p.startswith(f"{name}.")]:
            a = res.phases[step].attrs
            assert int(a["summary_ranks"]) == int(a["active_ranks"]), (step, a["summary_ranks"])
            assert int(a["summary_rows"]) == 4 * int(a["iterations"]), step
            done = [l for l in proc.stderr.splitlines() if l.startswith(f"herd: {step}: ")]
            assert len(done) == 1, proc.stderr
            n = int(a["active_ranks"])
            assert done[0].startswith(f"herd: {step}: {n} rank{'' if n == 1 else 's'} done"), done
            if name != "meta":
                assert "100%" in done[0], done


def test_ladder_4_steps_on_tmpfs(herd_bin, tmp_path, mount_fs):
    """8 ranks on a tmpfs: write, then read and md5 ladders 1,2,4,8: each
    step's bytes exact (in its rows and in the steps table), the idle ranks
    without I/O, verify and md5 clean, nothing left on the file system."""
    from conftest import require_root
    require_root()
    m = mount_fs("tmpfs", size="64m")
    job = write_job(tmp_path / "t.ini",
                    {"target": m.path, "file_size": "2M", "block_size": "1M", "fsync": "no"},
                    [("write", {"kind": "write"}),
                     ("read", {"kind": "read", "ranks_active": "1,2,4,8", "verify": "yes"}),
                     ("md5", {"kind": "md5", "ranks_active": "1,2,4,8"})])
    out = tmp_path / "t.h5"
    proc = herd_run(herd_bin, 8, job, out)
    assert proc.returncode == 0, describe(proc)
    res = load_results(out)
    for name, kind in (("read", "read"), ("md5", "read")):
        for n in (1, 2, 4, 8):
            check_step(res, f"{name}.{n}r", 8, set(range(n)), 2 * MIB, 1, kind=kind)
        t = res.ladder_steps[name]
        assert list(t["active_ranks"]) == [1, 2, 4, 8]
        assert list(t["bytes"]) == [n * 2 * MIB for n in (1, 2, 4, 8)], t["bytes"]
        assert (t["errors"] == 0).all() and (t["verify_failures"] == 0).all()
    assert tree(m.path) == [], tree(m.path)


def test_step_duration_cuts_each_step(herd_bin, tmp_path):
    target = tmp_path / "t"
    target.mkdir()
    job = write_job(tmp_path / "dur.ini",
                    {"target": target, "file_size": "64K", "block_size": "16K", "fsync": "no",
                     "think_time": "20ms"},
                    [("write", {"kind": "write", "ranks_active": "1,2", "iterations": 1000,
                                "step_duration": "1s"})])
    out = tmp_path / "dur.h5"
    proc = herd_run(herd_bin, 2, job, out)
    assert proc.returncode == 0, describe(proc)
    res = load_results(out)
    # Each step ran until its own deadline cut it (1000 iterations of four
    # 20 ms pauses would take 80 s), never shorter than that deadline.
    for n, name in ((1, "write.1r"), (2, "write.2r")):
        ph = res.phases[name]
        assert ph.attrs["status"] == "deadline", (name, ph.attrs["status"])
        assert ph.attrs["deadline"] == 1.0
        assert ph.attrs["elapsed"] >= 0.9, (name, ph.attrs["elapsed"])
        active = ph.ranks[ph.ranks["rank"] < n]
        assert active["bytes"].sum() > 0, name
        assert active["completed"].sum() < 1000 * n, (name, int(active["completed"].sum()))


@pytest.mark.parametrize("keys,key,words", [
    ({"ranks_active": "2,1"}, "ranks_active", "is not a list of rank counts"),
    ({"ranks_active": "1,all,4"}, "ranks_active", "is not a list of rank counts"),
    ({"ranks_active": "0,2"}, "ranks_active", "is not a list of rank counts"),
    ({"ranks_step": "1"}, "ranks_step", "must be 2 to 1000"),
    ({"ranks_active": "1,2", "ranks_step": "2"}, "ranks_step", "not both"),
    ({"step_duration": "5s"}, "step_duration", "applies to a load ladder"),
])
def test_ladder_refused(herd_bin, tmp_path, keys, key, words):
    job = write_job(tmp_path / "bad.ini", {"target": tmp_path},
                    [("w", {"kind": "write", **keys})])
    proc = herd_cmd(herd_bin, "check", job)
    assert proc.returncode == 2, describe(proc)
    assert f"key '{key}'" in proc.stderr and words in proc.stderr, proc.stderr


def test_ladder_more_ranks_than_the_run(herd_bin, tmp_path):
    job = write_job(tmp_path / "big.ini", {"target": tmp_path},
                    [("w", {"kind": "write", "ranks_active": "1,8"})])
    out = tmp_path / "big.h5"
    proc = herd_run(herd_bin, 2, job, out)
    assert proc.returncode == 2, describe(proc)
    assert "asks for more ranks than the run's 2 I/O ranks" in proc.stderr, proc.stderr
    assert not out.exists()


# ---------------------------------------------------------------- the steps table

STEP_SIZE = 2 * MIB
STEP_BLOCK = 64 * 1024


@pytest.fixture(scope="module")
def stepped(herd_bin, tmp_path_factory):
    """4 I/O ranks and a monitor rank on the fault backend: a clean read
    ladder 1,2,4 and one where half the reads fail with EIO, every open
    30 ms long so that each step outlasts a few monitor samples; --json.
    Returns (results path, json path, herd's stdout)."""
    work = tmp_path_factory.mktemp("steps")
    target = work / "t"
    target.mkdir()
    job = write_job(work / "steps.ini",
                    {"target": target, "file_size": "2M", "block_size": "64K", "fsync": "no",
                     "backend": "fault", "monitor_rank": "last", "monitor_interval": "20ms",
                     "monitor_processes": "herd"},
                    [("write", {"kind": "write"}),
                     ("clean", {"kind": "read", "ranks_active": "1,2,4", "iterations": 4,
                                "faults": "open=delay:30ms"}),
                     ("eio", {"kind": "read", "ranks_active": "1,2,4", "iterations": 4,
                              "faults": "open=delay:30ms,read=EIO@0.5"})])
    out, js = work / "steps.h5", work / "steps.json"
    proc = herd_run(herd_bin, 5, job, out, "--json", js)
    assert proc.returncode == 3, describe(proc)  # the EIO ladder's errors
    return out, js, proc.stdout


def _analysis():
    import sys
    from conftest import REPO_DIR
    sys.path.insert(0, str(REPO_DIR / "analysis"))
    import herd_results
    return herd_results


def test_steps_table(stepped):
    """/phases/<ladder>/steps: one row per step, the right ranks, exact
    bytes, the errors and their errno, the server's CPU per step."""
    out, js, stdout = stepped
    res = load_results(out)
    assert sorted(res.ladder_steps) == ["clean", "eio"], list(res.ladder_steps)
    with h5py.File(out, "r") as f:
        g = f["phases/clean"]
        assert text(g.attrs["kind"]) == "ladder" and text(g.attrs["ladder"]) == "clean"
        assert int(g.attrs["steps"]) == 3 and "status" not in g.attrs
    for name in ("clean", "eio"):
        t = res.ladder_steps[name]
        assert list(t["step"]) == [1, 2, 3]
        assert [text(p) for p in t["phase"]] == [f"{name}.{n}r" for n in (1, 2, 4)]
        assert list(t["active_ranks"]) == [1, 2, 4] and list(t["active_hosts"]) == [1, 1, 1]
        assert [text(m) for m in t["main_op"]] == ["read"] * 3
        assert np.isfinite(t["cpu_mean"]).all(), t["cpu_mean"]  # the monitor's samples
        # monitor_processes = herd: the ranks themselves, as named processes
        assert (t["proc_cpu"] >= 0).all() and (t["proc_thread_max"] >= 0).all(), t
        assert (t["p50_s"] <= t["p99_s"]).all() and (t["p99_s"] <= t["max_s"]).all()
        for row in t:
            ph = res.phases[text(row["phase"])]
            assert row["bytes"] == ph.attrs["summary_bytes"], text(row["phase"])
            assert row["errors"] == ph.attrs["summary_errors"]
            assert row["cpu_mean"] == ph.attrs["summary_cpu_mean"]
            assert row["proc_thread_max"] == ph.attrs["summary_proc_thread_max"]
            assert row["start_skew"] == ph.attrs["start_skew"]
            assert row["elapsed"] == ph.attrs["elapsed"]
    clean, eio = res.ladder_steps["clean"], res.ladder_steps["eio"]
    assert list(clean["bytes"]) == [n * 4 * STEP_SIZE for n in (1, 2, 4)]
    assert (clean["errors"] == 0).all() and {text(e) for e in clean["top_errno"]} == {""}
    assert (eio["errors"] > 0).all() and {text(e) for e in eio["top_errno"]} == {"EIO"}
    assert "ladder step 3: 4 ranks on 1 host, start skew " in stdout, stdout


def test_steps_table_matches_the_loader(stepped, tmp_path):
    """The stored table and the one the loader builds from the steps'
    phases (a run that never closed has only those) are the same."""
    out, _, _ = stepped
    herd_results = _analysis()
    with herd_results.load(out) as r:
        assert r.ladders() == ["clean", "eio"]
        for name in r.ladders():
            stored, built = r.ladder_steps(name), r._computed_steps(name)
            assert list(stored.columns) == herd_results.LADDER_COLUMNS
            for col in herd_results.LADDER_COLUMNS:
                a, b = stored[col], built[col]
                if a.dtype.kind == "f" or b.dtype.kind == "f":
                    np.testing.assert_allclose(a.astype(float), b.astype(float), rtol=1e-12,
                                               err_msg=f"{name}.{col}")
                else:
                    assert list(a) == list(b), (name, col, list(a), list(b))
    # Without the table (a killed run): the same from the phases.
    copy = tmp_path / "killed.h5"
    copy.write_bytes(out.read_bytes())
    with h5py.File(copy, "r+") as f:
        del f["phases/eio"]
    with herd_results.load(copy) as r, herd_results.load(out) as whole:
        a, b = r.ladder_steps("eio"), whole.ladder_steps("eio")
        assert list(a["phase"]) == list(b["phase"]) and list(a["top_errno"]) == ["EIO"] * 3
        np.testing.assert_allclose(a["mib_per_s"], b["mib_per_s"], rtol=1e-12)


def test_steps_in_the_json(stepped):
    import json
    out, js, _ = stepped
    doc = json.loads(js.read_text())
    steps = [p for p in doc["phases"] if p.get("ladder") == "eio"]
    res = load_results(out)
    assert [p["active_ranks"] for p in steps] == [1, 2, 4]
    assert [p["active_hosts"] for p in steps] == [1, 1, 1]
    for p, row in zip(steps, res.ladder_steps["eio"]):
        assert p["name"] == text(row["phase"]) and p["step"] == row["step"]
        assert p["start_skew"] == pytest.approx(row["start_skew"], rel=1e-9)
        assert p["mib_per_s"] == pytest.approx(row["mib_per_s"], rel=1e-9)


def test_steps_table_of_a_stopped_run(herd_bin, tmp_path):
    """SIGTERM in step 2: the file keeps step 1 and the cut step 2, and the
    steps table lists both (step 3 never ran)."""
    from conftest import herd_run_interrupted
    target = tmp_path / "t"
    target.mkdir()
    job = write_job(tmp_path / "stop.ini",
                    {"target": target, "file_size": "256K", "block_size": "64K",
                     "fsync": "no", "backend": "fault"},
                    [("slow", {"kind": "write", "ranks_active": "1,2,4", "iterations": 40,
                               "faults": "write=delay:50ms"})])
    out = tmp_path / "stop.h5"
    herd_run_interrupted(herd_bin, 4, job, out, "slow.1r", 1.0)
    res = load_results(out)
    assert res.attrs["status"] == "interrupted", res.attrs
    assert res.phase_names == ["slow.1r", "slow.2r"], res.phase_names
    t = res.ladder_steps["slow"]
    assert [text(p) for p in t["phase"]] == ["slow.1r", "slow.2r"]
    assert [text(s) for s in t["status"]] == ["ok", "interrupted"]
    assert t["bytes"][0] == 40 * 256 * 1024 and 0 < t["bytes"][1] < 2 * 40 * 256 * 1024


def _steps_edit(fn):
    def edit(f):
        g = f["phases/clean"]
        rows = g["steps"][()]
        del g["steps"]
        rows = fn(g, rows)
        if rows is not None:
            g.create_dataset("steps", data=rows)
    return edit


def _float_step(rows):
    dt = np.dtype([(n, "f8" if n == "step" else rows.dtype[n]) for n in rows.dtype.names])
    out = np.zeros(len(rows), dt)
    for n in rows.dtype.names:
        out[n] = rows[n]
    return out


def _field(name, value, row=1):
    def fn(g, rows):
        rows[name][row] = value
        return rows
    return _steps_edit(fn)


@pytest.mark.parametrize("edit,words", [
    (_field("phase", b"nowhere"), "not in the file"),
    (_field("step", 1), "appears twice"),
    (_field("p99_s", -1.0), "not >= 0"),
    (_field("active_ranks", -3), "negative value"),
    (_steps_edit(lambda g, rows: None), "without a 'steps' table"),
    (_steps_edit(lambda g, rows: _float_step(rows)), "not an integer"),
], ids=["unknown phase", "step twice", "negative p99", "negative ranks", "no table",
        "float step"])
def test_hostile_steps_table(stepped, tmp_path, edit, words):
    """A steps table that is not herd's: one line, exit 2, for herd-report
    and herd-compare alike."""
    import subprocess
    from conftest import REPO_DIR
    out, _, _ = stepped
    copy = tmp_path / "bad.h5"
    copy.write_bytes(out.read_bytes())
    with h5py.File(copy, "r+") as f:
        edit(f)
    for script, args in (("herd-report", ["-o", tmp_path / "r"]), ("herd-compare", [])):
        proc = subprocess.run(["/usr/bin/python3", str(REPO_DIR / "analysis" / script), copy,
                               *args], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2, describe(proc)
        assert len(proc.stderr.splitlines()) == 1 and words in proc.stderr, proc.stderr


# ---------------------------------------------------------------- virtual cluster


def test_ladder_spread_over_virtual_hosts(herd_bin, tmp_path):
    from test_nfs import _WHY
    if _WHY:
        pytest.skip(_WHY)
    from test_virtual_cluster import Cluster
    cluster = Cluster(tmp_path / "vc", slots=2)
    try:
        job = write_job(tmp_path / "vl.ini",
                        {"backend": "libnfs", "file_size": "32M", "block_size": "1M",
                         "fsync": "no", "monitor_host": "srv", "monitor_interval": "100ms",
                         "monitor_processes": "ganesha.nfsd"},
                        [("write", {"kind": "write"}),
                         ("read", {"kind": "read", "ranks_active": "1,2,4,8", "iterations": 8,
                                   "verify": "yes"})])
        results = tmp_path / "results"
        proc = cluster.batch(herd_bin, job, 4 * 2 + 1, results, timeout=600)
        assert proc.returncode == 0, describe(proc)
        path = os.path.join(proc.stdout.strip().splitlines()[-1], "results.h5")
        res = load_results(path)
        with h5py.File(path, "r") as f:
            host_of = {int(r["rank"]): int(r["host"]) for r in f["ranks"][()]}
            samples = f["monitor/samples"][()]
        assert len(set(host_of.values())) == 4 and len(host_of) == 8
        order = sorted(host_of, key=lambda r: (sorted(k for k in host_of
                                                     if host_of[k] == host_of[r]).index(r),
                                               host_of[r]))
        print(f"\nspread order of the 8 ranks over 4 hosts: {order}")
        for n in (1, 2, 4, 8):
            name = f"read.{n}r"
            active = set(order[:n])
            check_step(res, name, 8, active, 32 * MIB, 8)
            ph = res.phases[name]
            assert ph.attrs["active_hosts"] == min(n, 4), (name, ph.attrs["active_hosts"])
            # the server's samples taken during this step belong to it
            t0, t1 = ph.attrs["t_start"], ph.attrs["t_end"]
            inside = samples[(samples["t"] >= t0) & (samples["t"] <= t1)]
            print(f"{name}: ranks {sorted(active)}, {ph.attrs['summary_mib_per_s']:.0f} MiB/s, "
                  f"{len(inside)} server samples, server CPU {ph.attrs['summary_cpu_mean']:.2f}")
            assert len(inside) >= 1, f"{name}: no server sample in the step"
            assert np.isfinite(ph.attrs["summary_cpu_mean"]), name
        assert len({host_of[r] for r in order[:4]}) == 4, "step 4 is not one rank per host"
        # The ladder's steps table says the same, with the server per step.
        t = res.ladder_steps["read"]
        assert list(t["active_ranks"]) == [1, 2, 4, 8] and list(t["active_hosts"]) == [1, 2, 4, 4]
        assert list(t["bytes"]) == [n * 8 * 32 * MIB for n in (1, 2, 4, 8)], t["bytes"]
        for row in t:
            ph = res.phases[text(row["phase"])]
            assert row["cpu_mean"] == ph.attrs["summary_cpu_mean"]
            assert row["proc_thread_max"] == ph.attrs["summary_proc_thread_max"], text(row["phase"])
            assert np.isfinite(row["cpu_max"]) and row["cpu_max"] >= row["cpu_mean"]
            # ganesha.nfsd, a named process: the cores it used, its busiest thread
            assert 0 < row["proc_cpu"] and 0 < row["proc_thread_max"] <= 1.05, t
        assert np.isfinite(res.phases["read.8r"].attrs["summary_mib_per_s"])
    finally:
        cluster.down()


def test_demo_ladder(herd_bin, tmp_path):
    """jobs/demo-ladder.sh (seed001-ladder.ini) with 2 ranks: every phase of
    the seed-001 matrix a ladder, the report's load curves written."""
    import subprocess
    from conftest import REPO_DIR
    env = dict(os.environ, HERD_BUILD_DIR=os.path.dirname(herd_bin), HERD_DEMO_RANKS="2",
               OUT=str(tmp_path / "out"))
    proc = subprocess.run(["bash", str(REPO_DIR / "jobs" / "demo-ladder.sh")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, describe(proc)
    res = load_results(tmp_path / "out" / "ladder.h5")
    ladders = {res.phases[n].attrs["ladder"] for n in res.phase_names}
    assert len(ladders) == 12 and len(res.phase_names) == 24, res.phase_names
    curves = sorted(p.name for p in (tmp_path / "out" / "report").glob("loadcurve_*.png"))
    assert len(curves) == 12, curves
