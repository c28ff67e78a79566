"""Post-run analysis of offered load (`rate`, `rate_steps`, `stop_when`):
the loader herd_results, herd_safe's checks, herd-report and herd-compare
on a results file herd itself writes during the test.

One real run (4 ranks, fault backend): a write phase (a closed loop), then
a read ladder in rate (`rate_steps = 10,200,400` calls/s per client, fixed
arrivals) against a server of 2 workers of 5 ms each (at most 400 calls/s
in all), with `stop_when = achieved < 95%`. The step at 800 calls/s
offered can never keep up, so at least the last step is a row of the steps
table with status `not-run`, a note and no phase group.

1. The steps DataFrame: LADDER_COLUMNS (rate, offered and achieved calls/s,
   units, late, due, the response / service / lag quantiles, note), each
   value as stored; the steps that ran are a prefix, the last of them broke
   the rule (units / due < 95 %), every earlier one kept it, and the steps
   after it are not-run rows whose note names it; the table the loader
   builds from the phases (a run that never closed) is the same for the
   steps that ran.
2. Units, late and due of the ranks table sum to the phase attributes and
   the phases DataFrame; late <= units <= due in a paced phase, the paced
   calls' histograms count the units, offered = rate x clients; a phase
   without its summary_* attributes gets the same figures from its rows.
3. herd-report and herd-compare exit 0 on the file (the not-run step marked
   `not run` in the load curve, the knee over the steps that ran) and on an
   older-style copy without any of the new columns, attributes, histograms
   or not-run rows, which loads with 0 / NaN / "" for what it lacks.
4. Hostile values of the new fields (late over units, a negative or NaN
   rate, a string attribute that is a number, a steps row of an unknown
   status, a not-run row naming a phase of the file, negative latencies, a
   note that is not a string, a due that is signed): one line, exit 2; a
   note of any bytes is shown inertly.

Counts and relations only, never elapsed times.

Run: /usr/bin/python3 -m pytest -q tests/integration/test_analysis_rate.py
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
COMPARE = ANALYSIS / "herd-compare"
sys.path.insert(0, str(ANALYSIS))
import herd_knee  # noqa: E402
import herd_results  # noqa: E402

RANKS = 4
FILE_SIZE = 4 << 20
BLOCK_SIZE = 4 << 10
RATES = [10.0, 200.0, 400.0]
LADDER = "rl"
STEPS = [f"{LADDER}.{int(r)}ps" for r in RATES]
SHARE = 0.95  # stop_when = achieved < 95%
NEW_LADDER = ["rate", "offered_per_s", "achieved_per_s", "units", "late", "due",
              "response_p50_s", "response_p99_s", "service_p99_s", "lag_p99_s", "note"]
NEW_SUMMARY = ["units", "late", "due", "offered_per_s", "achieved_per_s"]
RATE_KEYS = ["rate", "arrivals", "rate_steps", "rate_curve", "stop_when"]
PACED = ("response", "service", "lag")


def text(v):
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def tool(path, *args, timeout=300):
    return subprocess.run(["/usr/bin/python3", str(path)] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=timeout)


def same(got, want, what, rel=1e-9):
    got, want = float(got), float(want)
    if math.isnan(want):
        assert math.isnan(got), f"{what}: {got} != NaN"
    else:
        assert got == pytest.approx(want, rel=rel, abs=1e-12), f"{what}: {got} != {want}"


@pytest.fixture(scope="module")
def rated(herd_bin, tmp_path_factory):
    work = tmp_path_factory.mktemp("rate")
    target = work / "target"
    target.mkdir()
    # 2 s steps: a client's 20 fixed arrivals are 20 or 21 calls due, so a
    # step the server keeps up with stays over 95 % whatever the offsets
    # (1 s steps: 10 of 11 due could break the rule at step 1).
    job = write_job(work / "rate.ini",
                    {"target": target, "backend": "fault", "fsync": "no",
                     "file_size": "4M", "block_size": "4K"},
                    [("write", {"kind": "write"}),
                     (LADDER, {"kind": "read", "faults": "read=serve:5ms/2",
                               "rate_steps": ",".join(str(int(r)) for r in RATES),
                               "step_duration": "2s", "arrivals": "fixed",
                               "stop_when": "achieved < 95%"})])
    out = work / "rate.h5"
    proc = herd_run(herd_bin, RANKS, job, out)
    assert proc.returncode == 0, describe(proc)
    return out


def drop_fields(group, name, fields):
    """Rewrite table group[name] without fields (as an older herd wrote it)."""
    old = group[name][()]
    keep = [n for n in old.dtype.names if n not in fields]
    new = np.zeros(len(old), dtype=[(n, old.dtype.fields[n][0]) for n in keep])
    for n in keep:
        new[n] = old[n]
    del group[name]
    group.create_dataset(name, data=new)


def make_older(src, dst):
    """dst: src as a herd from before the offered load wrote it: no units,
    late, due in the ranks tables, no summary_units ... summary_achieved_per_s
    nor rate keys among the phase attributes, no response / service / lag
    histograms or op_summary rows, and a steps table without the new
    columns and without the not-run rows."""
    shutil.copyfile(src, dst)
    with h5py.File(dst, "r+") as f:
        for g in f["phases"].values():
            if g.attrs.get("kind") == "ladder":
                rows = g["steps"][()]
                ran = rows[rows["status"] != b"not-run"]
                del g["steps"]
                g.create_dataset("steps", data=ran)
                g.attrs["steps"] = np.int64(len(ran))
                drop_fields(g, "steps", NEW_LADDER)
                continue
            for key in [f"summary_{k}" for k in NEW_SUMMARY] + RATE_KEYS:
                if key in g.attrs:
                    del g.attrs[key]
            drop_fields(g, "ranks", ("units", "late", "due"))
            for op in PACED:
                if op in g["latency"]:
                    del g["latency"][op]
            ops = g["op_summary"][()]
            keep = ops[~np.isin(ops["op"], [op.encode() for op in PACED])]
            del g["op_summary"]
            g.create_dataset("op_summary", data=keep)
    return dst


@pytest.fixture(scope="module")
def older(rated, tmp_path_factory):
    return make_older(rated, tmp_path_factory.mktemp("older") / "older.h5")


def raw_steps(path):
    with h5py.File(path, "r") as f:
        rows = f["phases"][LADDER]["steps"][()]
        groups = set(f["phases"])
        attrs = {n: dict(g.attrs) for n, g in f["phases"].items()}
        ops = {n: {text(r["op"]): r for r in g["op_summary"][()]}
               for n, g in f["phases"].items() if "op_summary" in g}
    return rows, groups, attrs, ops


# ---------------------------------------------------------------- 1. steps


def test_steps_have_the_new_columns_and_the_not_run_rows(rated):
    raw, groups, attrs, ops = raw_steps(rated)
    with herd_results.load(rated) as run:
        assert run.ladders() == [LADDER]
        steps = run.ladder_steps(LADDER)
        assert list(steps.columns) == herd_results.LADDER_COLUMNS
        assert set(NEW_LADDER) <= set(steps.columns)
        assert list(steps["step"]) == [1, 2, 3]
        assert list(steps["phase"]) == STEPS
        assert list(steps["rate"]) == RATES
        # Every value as stored (strings decoded, "" a None main_op / top_errno).
        for col in herd_results.LADDER_COLUMNS:
            for i, (got, want) in enumerate(zip(steps[col], raw[col])):
                if isinstance(want, bytes):
                    want = text(want)
                    assert got == (want or None if col in ("main_op", "top_errno") else want), \
                        (col, i, got, want)
                else:
                    same(got, want, f"{col}[{i}]")
        status = list(steps["status"])
        ran = [i for i, s in enumerate(status) if s != "not-run"]
        skipped = [i for i, s in enumerate(status) if s == "not-run"]
        # 800 calls/s offered to a server of 400 calls/s: never kept up with.
        assert ran and skipped and ran == list(range(len(ran))), status
        assert skipped == list(range(len(ran), 3)) and 2 in skipped, status
        assert run.phase_names == ["write"] + STEPS[:len(ran)]
        last = steps.iloc[ran[-1]]
        # The steps that ran: each kept stop_when but the last, which broke it.
        for i in ran:
            row = steps.iloc[i]
            assert row["status"] in ("ok", "deadline") and row["note"] == ""
            assert row["phase"] in groups and row["active_ranks"] == RANKS
            a = attrs[row["phase"]]
            for key in ("units", "late", "due", "offered_per_s", "achieved_per_s"):
                same(row[key], a[f"summary_{key}"], f"{row['phase']} {key}")
            assert row["offered_per_s"] == row["rate"] * RANKS
            assert 0 <= row["late"] <= row["units"] <= row["due"] and row["units"] > 0
            assert row["achieved_per_s"] > 0
            kept = row["units"] / row["due"] >= SHARE
            assert kept == (i != ran[-1]), (row["phase"], row["units"], row["due"])
            for col, op, key in herd_results.LADDER_PACED:
                same(row[col], float(ops[row["phase"]][op][key]), f"{row['phase']} {col}")
            assert row["response_p50_s"] <= row["response_p99_s"]
            assert row["service_p99_s"] <= row["response_p99_s"]
        # The steps not run: a row each, no phase group, no figures, the reason.
        for i in skipped:
            row = steps.iloc[i]
            assert row["phase"] not in groups and row["phase"] not in run.phase_names
            assert row["note"].startswith("not run: ")
            assert f"step {last['phase']} broke stop_when" in row["note"], row["note"]
            assert "achieved" in row["note"]
            for key in ("bytes", "ops", "units", "late", "due", "errors", "stuck"):
                assert row[key] == 0, (row["phase"], key)
            for key in ("p50_s", "p99_s", "max_s", "achieved_per_s", "response_p50_s",
                        "response_p99_s", "service_p99_s", "lag_p99_s"):
                assert math.isnan(row[key]), (row["phase"], key)
            assert row["main_op"] is None
        # The knee is over the steps that ran, and names those not run.
        k = herd_knee.knee(steps)
        assert k["saturation_index"] in ran and k["not_run"] == [i + 1 for i in skipped]
        line = herd_knee.describe(k, steps)
        assert f"not run: step{'s' if len(skipped) > 1 else ''} {skipped[0] + 1}" in line, line
        assert "-100%" not in line


def test_steps_built_from_the_phases_match_the_table(rated, tmp_path):
    """A run that never closed has no steps table: the loader builds the
    rows of the steps that ran, new columns included, from their phases."""
    with herd_results.load(rated) as run:
        stored = run.ladder_steps(LADDER)
        stored = stored[stored["status"] != "not-run"].reset_index(drop=True)
        built = run._computed_steps(LADDER)
    copy = tmp_path / "killed.h5"
    shutil.copyfile(rated, copy)
    with h5py.File(copy, "r+") as f:
        del f["phases"][LADDER]
    with herd_results.load(copy) as run:
        killed = run.ladder_steps(LADDER)
    for frame in (built, killed):
        assert list(frame.columns) == herd_results.LADDER_COLUMNS
        assert list(frame["phase"]) == list(stored["phase"])
        for col in herd_results.LADDER_COLUMNS:
            a, b = stored[col], frame[col]
            if a.dtype.kind in "fiu" or b.dtype.kind in "fiu":
                np.testing.assert_allclose(a.astype(float), b.astype(float), rtol=1e-12,
                                           err_msg=col)
            else:
                assert list(a) == list(b), (col, list(a), list(b))


# ---------------------------------------------------------------- 2. units


def test_units_late_due_sum_to_the_phase(rated):
    with h5py.File(rated, "r") as f:
        attrs = {n: dict(g.attrs) for n, g in f["phases"].items()
                 if g.attrs.get("kind") != "ladder"}
    with herd_results.load(rated) as run:
        phases = run.phases.set_index("phase")
        for col in ("rate", "offered_per_s", "achieved_per_s", "units", "late", "due"):
            assert col in herd_results.PHASE_COLUMNS and col in phases.columns
        for name in run.phase_names:
            a, ph, rows = attrs[name], phases.loc[name], run.ranks(name)
            assert {"units", "late", "due"} <= set(rows.columns)
            for key in ("units", "late", "due"):
                total = int(rows[key].sum())
                assert total == int(a[f"summary_{key}"]) == int(ph[key]), (name, key)
            assert (rows["late"] <= rows["units"]).all(), name
            same(ph["achieved_per_s"], a["summary_achieved_per_s"], f"{name} achieved")
            calls = run.op_summary(name).set_index("op")["calls"]
            if name == "write":  # a closed loop: a unit per block, nothing due
                assert ph["rate"] == 0 and math.isnan(ph["offered_per_s"])
                assert ph["units"] == RANKS * FILE_SIZE // BLOCK_SIZE == calls["write"]
                assert ph["late"] == 0 and ph["due"] == 0 and ph["achieved_per_s"] > 0
                assert not set(PACED) & set(calls.index)
                continue
            assert ph["rate"] == float(a["rate"]) == RATES[STEPS.index(name)]
            assert text(a["arrivals"]) == "fixed"
            assert text(a["stop_when"]) == "achieved < 95%"
            assert ph["offered_per_s"] == ph["rate"] * RANKS
            assert 0 < ph["units"] <= ph["due"] and ph["late"] <= ph["units"]
            # One paced call per unit: a read block each, and a response,
            # service and lag sample each.
            for op in ("read",) + PACED:
                assert calls[op] == ph["units"], (name, op)
            assert "response_p99_s" in phases.columns
            assert (rows["due"] >= rows["units"]).all(), name


def test_phase_without_summary_recomputes_the_same(rated, tmp_path):
    """A phase without summary_units ... summary_achieved_per_s gets them
    from its ranks table by herd's rules."""
    copy = tmp_path / "nosummary.h5"
    shutil.copyfile(rated, copy)
    with h5py.File(copy, "r+") as f:
        for g in f["phases"].values():
            for key in [f"summary_{k}" for k in NEW_SUMMARY]:
                if key in g.attrs:
                    del g.attrs[key]
    with herd_results.load(rated) as a, herd_results.load(copy) as b:
        assert list(a.phases["phase"]) == list(b.phases["phase"])
        for col in ("rate",) + tuple(NEW_SUMMARY):
            for name, x, y in zip(a.phases["phase"], a.phases[col], b.phases[col]):
                same(y, x, f"{name} {col}")


def test_verify_is_a_phase_status(rated, tmp_path):
    """`verify` (data wrong, no call failed) is one of herd's phase statuses."""
    copy = tmp_path / "verify.h5"
    shutil.copyfile(rated, copy)
    with h5py.File(copy, "r+") as f:
        f["phases"]["write"].attrs["status"] = "verify"
    with herd_results.load(copy) as run:
        assert run.phases.set_index("phase").loc["write", "status"] == "verify"


# ---------------------------------------------------------------- 3. the tools


def test_report_and_compare_run_on_a_rate_ladder(rated, older, tmp_path):
    rep = tmp_path / "rep"
    proc = tool(REPORT, rated, "-o", rep)
    assert proc.returncode == 0, describe(proc)
    rows = read_csv(rep / f"loadcurve_{LADDER}.csv")
    assert [r["phase"] for r in rows] == STEPS
    assert set(NEW_LADDER) <= set(rows[0])
    for r in rows:
        assert ("not run" in r["mark"]) == (r["status"] == "not-run"), r
        assert (r["note"] != "") == (r["status"] == "not-run"), r
    assert sum("knee" in r["mark"] for r in rows) == 1
    assert "not run" not in [r["mark"] for r in rows if "knee" in r["mark"]]
    phases = read_csv(rep / "phases.csv")
    assert [r["phase"] for r in phases] == ["write"] + [r["phase"] for r in rows
                                                         if r["status"] != "not-run"]
    for r in phases:
        assert int(r["late"]) <= int(r["units"]), r
    page = (rep / "index.html").read_text()
    assert "not run: step" in page
    cmp = tmp_path / "cmp"
    proc = tool(COMPARE, rated, older, "-o", cmp)
    assert proc.returncode == 0, describe(proc)
    assert f"ladder {LADDER}:" in proc.stdout
    ladder = read_csv(cmp / "ladder.csv")
    assert {"status", "rate", "units", "late", "due", "note"} <= set(ladder[0])
    assert sum(r["mark"] == "not run" for r in ladder) == sum(r["status"] == "not-run"
                                                               for r in rows)


def test_older_file_loads_and_reports(rated, older, tmp_path):
    with herd_results.load(older) as run, herd_results.load(rated) as new:
        assert run.phase_names == new.phase_names
        ph = run.phases
        assert (ph["rate"] == 0).all()
        assert (ph["units"] == 0).all() and (ph["late"] == 0).all() and (ph["due"] == 0).all()
        assert ph["offered_per_s"].isna().all() and ph["achieved_per_s"].isna().all()
        assert not [c for c in ph.columns if c.split("_")[0] in PACED]
        # The figures that were there before are unchanged.
        for col in ("bytes", "ops", "mib_per_s", "errors"):
            np.testing.assert_allclose(ph[col].astype(float), new.phases[col].astype(float))
        for name in run.phase_names:
            rows = run.ranks(name)
            for col in ("units", "late", "due"):
                assert (rows[col] == 0).all(), (name, col)
        steps = run.ladder_steps(LADDER)
        assert list(steps.columns) == herd_results.LADDER_COLUMNS
        assert "not-run" not in set(steps["status"])
        assert list(steps["phase"]) == run.phase_names[1:]
        assert (steps["units"] == 0).all() and (steps["rate"] == 0).all()
        assert (steps["note"] == "").all()
        for col in ("offered_per_s", "achieved_per_s", "response_p50_s", "response_p99_s",
                    "service_p99_s", "lag_p99_s"):
            assert steps[col].isna().all(), col
        built = run._computed_steps(LADDER)
        assert list(built["phase"]) == list(steps["phase"])
        assert (built["units"] == 0).all() and built["response_p99_s"].isna().all()
    proc = tool(REPORT, older, "-o", tmp_path / "rep")
    assert proc.returncode == 0, describe(proc)
    proc = tool(COMPARE, older, "-o", tmp_path / "cmp")
    assert proc.returncode == 0, describe(proc)


# ---------------------------------------------------------------- 4. hostile


def _steps(fn):
    """Edit the steps table's rows: fn(rows) on a copy, written back."""
    def edit(f):
        g = f["phases"][LADDER]
        rows = g["steps"][()]
        edited = fn(rows)
        rows = rows if edited is None else edited
        del g["steps"]
        g.create_dataset("steps", data=rows)
    return edit


def _step_field(name, value, row=0, not_run=False):
    def fn(rows):
        i = int(np.flatnonzero(rows["status"] == b"not-run")[0]) if not_run else row
        rows[name][i] = value
    return _steps(fn)


def _retype_steps(name, dtype, value):
    def edit(f):
        g = f["phases"][LADDER]
        old = g["steps"][()]
        new = np.zeros(len(old), dtype=[(n, dtype if n == name else old.dtype.fields[n][0])
                                        for n in old.dtype.names])
        for n in old.dtype.names:
            new[n] = value if n == name else old[n]
        del g["steps"]
        g.create_dataset("steps", data=new)
    return edit


def _attr(phase, key, value):
    def edit(f):
        f["phases"][phase].attrs[key] = value
    return edit


def _ranks_late(f):
    g = f["phases"][STEPS[0]]
    rows = g["ranks"][()]
    rows["late"][0] = rows["units"][0] + 1
    del g["ranks"]
    g.create_dataset("ranks", data=rows)


HOSTILE = [
    ("summary late > units", _attr(STEPS[0], "summary_late", np.int64(10**6)),
     "'summary_late'"),
    ("summary due negative", _attr(STEPS[0], "summary_due", np.int64(-1)), "negative"),
    ("summary offered inf", _attr(STEPS[0], "summary_offered_per_s", np.inf), "not a rate"),
    ("summary achieved negative", _attr(STEPS[0], "summary_achieved_per_s", -1.0),
     "not a rate"),
    ("rate negative", _attr(STEPS[0], "rate", -10.0), "'rate'"),
    ("rate NaN", _attr(STEPS[0], "rate", np.nan), "'rate'"),
    ("rate a string", _attr(STEPS[0], "rate", "fast"), "'rate'"),
    ("arrivals a number", _attr(STEPS[0], "arrivals", np.int64(3)), "not a string"),
    ("stop_when a number", _attr(STEPS[0], "stop_when", 0.95), "not a string"),
    ("ranks late > units", _ranks_late, "is more than units"),
    ("steps late > units", _step_field("late", 10**9), "is more than units"),
    ("steps status unknown", _step_field("status", b"<b>maybe</b>"), "is not one of"),
    ("not-run names a phase", _step_field("phase", STEPS[0].encode(), not_run=True),
     "which is in the file"),
    ("ran step names no phase", _step_field("phase", b"nowhere"), "not in the file"),
    ("response p99 negative", _step_field("response_p99_s", -1.0), "not >= 0"),
    ("offered inf", _step_field("offered_per_s", np.inf), "not >= 0"),
    ("rate negative in steps", _step_field("rate", -5.0), "not >= 0"),
    ("note a number", _retype_steps("note", np.float64, 1.0), "not a fixed-length string"),
    ("due signed", _retype_steps("due", np.int64, -1), "not an unsigned integer"),
]


@pytest.mark.parametrize("edit,words", [(e, w) for _, e, w in HOSTILE],
                         ids=[n for n, _, _ in HOSTILE])
def test_hostile_rate_fields(rated, tmp_path, edit, words):
    """New fields that are not herd's: one line on stderr, exit 2."""
    copy = tmp_path / "bad.h5"
    shutil.copyfile(rated, copy)
    with h5py.File(copy, "r+") as f:
        edit(f)
    with pytest.raises(herd_results.ResultsError) as e:
        with herd_results.load(copy) as run:
            run.ladder_steps(LADDER)
            run.all_ranks()
    assert words in str(e.value) and "\n" not in str(e.value), str(e.value)
    proc = tool(REPORT, copy, "-o", tmp_path / "rep")
    assert proc.returncode == 2, describe(proc)
    assert len(proc.stderr.splitlines()) == 1 and words in proc.stderr, proc.stderr


def test_hostile_note_is_shown_inertly(rated, tmp_path):
    """A not-run row's note of any bytes: loaded as a str, shown escaped."""
    evil = b"not run: <img src=x onerror=alert(1)>|a\nb`*\xff\xfe"
    copy = tmp_path / "note.h5"
    shutil.copyfile(rated, copy)
    with h5py.File(copy, "r+") as f:
        _step_field("note", evil, not_run=True)(f)
    with herd_results.load(copy) as run:
        steps = run.ladder_steps(LADDER)
        note = steps[steps["status"] == "not-run"]["note"].iloc[0]
        assert isinstance(note, str) and note.startswith("not run: <img")
    rep = tmp_path / "rep"
    proc = tool(REPORT, copy, "-o", rep)
    assert proc.returncode == 0, describe(proc)
    page = (rep / "index.html").read_text(encoding="utf-8")
    assert "<img src=x" not in page and "&lt;img src=x" in page
    md = (rep / f"loadcurve_{LADDER}.md").read_text(encoding="utf-8")
    assert md.count("\n") == 2 + 3  # no row broken by the note's newline
    rows = read_csv(rep / f"loadcurve_{LADDER}.csv")
    assert len(rows) == 3
