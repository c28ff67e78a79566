"""Load curves in the ladder's own units (analysis/herd_plots.py loadcurve,
loadcurves; herd_knee.ladder_kind and describe; herd-report's Clients
section), on results files herd itself writes during the test.

Three real ladders:
- in clients: 2 ranks x 50 clients (libnfs against the embedded ganesha),
  `clients_active = 10,50,all`: every step has 2 active ranks;
- in ranks: 4 ranks (fault backend), `ranks_active = 1,2,4`;
- in offered load: `rate_steps = 10,50,100` calls/s per client of 2 ranks
  (fault backend, a server of 400 calls/s: every step keeps up).

1. ladder_kind reads the kind from the steps table (clients, ranks, rate)
   and describe names the knee in its units: clients on ranks, ranks on
   hosts, offered and achieved calls/s.
2. The load-curve figure (herd-report's loadcurve, herd-compare's
   loadcurves): one distinct x per step at the step's active clients, its
   active ranks, or its achieved calls/s with the response time on the
   latency panel; each point of a rate ladder annotated with its offered
   load (no note where x shows the load already); the knee's legend names
   the knee in those units.
3. Every tick label of every axis of the load-curve and client-time
   figures is plain text (no mathtext: no '$', no 'mathdefault'); the
   latency panel has a labelled y tick, also with one step's latency or
   values within one decade or over many decades; count_axis takes client
   counts (a log x, the counts as labels).
4. herd-report's Clients section over the ladder in clients counts only
   each step's active clients: 10 in the 10-client step, a median client
   time > 0 and a slowest client named; herd-report and herd-compare exit 0.

Counts and relations only, never elapsed times. The ladder in clients needs
root and nfs-ganesha (skips otherwise).

Run: HERD_BIN=build/herd /usr/bin/python3 -m pytest -q -rs tests/integration/test_analysis_units.py
"""
import math
import re
import subprocess
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from conftest import REPO_DIR, describe, herd_run, read_csv, run_cmd, write_job

ANALYSIS = REPO_DIR / "analysis"
REPORT = ANALYSIS / "herd-report"
COMPARE = ANALYSIS / "herd-compare"
sys.path.insert(0, str(ANALYSIS))
import herd_knee  # noqa: E402
import herd_output  # noqa: E402
import herd_plots  # noqa: E402
import herd_results  # noqa: E402

CLIENTS, CLIENT_RANKS = 50, 2      # the ladder in clients: 2 ranks x 50 clients
CLIENT_STEPS = [10, 50, 100]       # clients_active = 10,50,all
RANK_STEPS = [1, 2, 4]             # ranks_active = 1,2,4 of 4 ranks
RATES = [10, 50, 100]              # rate_steps, calls/s per client of 2 ranks: 20 to 200 in all
RATE_RANKS = 2


def tool(path: Path, *args: object) -> subprocess.CompletedProcess:
    """One of the analysis tools under /usr/bin/python3."""
    return run_cmd(["/usr/bin/python3", str(path)] + [str(a) for a in args], timeout=300)


@pytest.fixture(scope="module")
def clients_ladder(herd_bin: str, tmp_path_factory) -> Path:
    """A results file of a ladder in clients (ladder w: w.10c, w.50c, w.100c)
    over 2 ranks x 50 libnfs clients against the embedded ganesha."""
    from test_nfs import herd_run_on_ganesha
    work = tmp_path_factory.mktemp("clients")
    out = work / "c.h5"
    proc = herd_run_on_ganesha(herd_bin, work, CLIENT_RANKS, lambda url: write_job(
        work / "c.ini", {"backend": "libnfs", "target": url, "clients_per_rank": CLIENTS},
        [("w", {"kind": "write", "file_size": "128K", "block_size": "64K",
                "clients_active": "10,50,all"})]), out, "--fs", "dir")
    assert proc.returncode == 0, describe(proc)
    return out


@pytest.fixture(scope="module")
def ranks_ladder(herd_bin: str, tmp_path_factory) -> Path:
    """A results file of a ladder in ranks (ladder w: w.1r, w.2r, w.4r) of 4 ranks."""
    work = tmp_path_factory.mktemp("ranks")
    (work / "target").mkdir()
    job = write_job(work / "r.ini", {"target": work / "target", "fsync": "no",
                                     "file_size": "1M", "block_size": "64K"},
                    [("w", {"kind": "write", "ranks_active": "1,2,4"})])
    out = work / "r.h5"
    proc = herd_run(herd_bin, 4, job, out)
    assert proc.returncode == 0, describe(proc)
    return out


@pytest.fixture(scope="module")
def rate_ladder(herd_bin: str, tmp_path_factory) -> Path:
    """A results file of a ladder in offered load (ladder rl: rate_steps =
    10,50,100 calls/s per client, 2 ranks) against a fault-backend server
    of 2 workers of 5 ms (400 calls/s): every step keeps up."""
    work = tmp_path_factory.mktemp("rate")
    (work / "target").mkdir()
    job = write_job(work / "rate.ini", {"target": work / "target", "backend": "fault",
                                        "fsync": "no", "file_size": "4M", "block_size": "4K"},
                    [("write", {"kind": "write"}),
                     ("rl", {"kind": "read", "faults": "read=serve:5ms/2",
                             "rate_steps": ",".join(map(str, RATES)), "step_duration": "1s",
                             "arrivals": "fixed"})])
    out = work / "rate.h5"
    proc = herd_run(herd_bin, RATE_RANKS, job, out)
    assert proc.returncode == 0, describe(proc)
    return out


def ladder(path: Path, name: str) -> tuple[pd.DataFrame, dict]:
    """(steps, knee) of the ladder NAME of a results file."""
    with herd_results.load(path) as run:
        steps = run.ladder_steps(name)
    return steps, herd_knee.knee(steps)


@pytest.fixture
def drawn(monkeypatch) -> list[tuple[str, Figure]]:
    """Every figure herd_plots saves, [(file name, figure)], drawn (the
    tick labels set) and closed."""
    figures = []
    save = herd_plots.save

    def keep(fig: Figure, outdir: herd_output.OutputDir, name: str, tight: bool = True) -> None:
        save(fig, outdir, name, tight)
        figures.append((name, fig))

    monkeypatch.setattr(herd_plots, "save", keep)
    return figures


def labels(axis: Axis, visible: bool = False) -> list[str]:
    """An axis's major and minor tick labels (visible: only the major
    ticks inside its view limits)."""
    if visible:
        low, high = sorted(axis.get_view_interval())
        return [t.get_text() for t in axis.get_majorticklabels()
                if low <= t.get_position()[axis.axis_name == "y"] <= high]
    return [t.get_text() for t in axis.get_majorticklabels() + axis.get_minorticklabels()]


def assert_plain_ticks(figures: list[tuple[str, Figure]]) -> None:
    """No tick label of any axis of the figures is mathtext."""
    for name, fig in figures:
        for ax in fig.axes:
            for axis in (ax.xaxis, ax.yaxis):
                bad = [t for t in labels(axis) if "$" in t or "mathdefault" in t]
                assert not bad, (name, axis.axis_name, bad)


def line_of(ax: Axes, label: str) -> Line2D:
    """The line of ax with this legend label."""
    return next(line for line in ax.lines if line.get_label() == label)


# ---------------------------------------------------------------- 1. kind and knee text


def test_ladder_kind_from_the_steps(clients_ladder, ranks_ladder, rate_ladder):
    assert herd_knee.ladder_kind(ladder(clients_ladder, "w")[0]) == "clients"
    assert herd_knee.ladder_kind(ladder(ranks_ladder, "w")[0]) == "ranks"
    assert herd_knee.ladder_kind(ladder(rate_ladder, "rl")[0]) == "rate"
    # Many clients per rank in a ladder in ranks: clients per rank stay.
    many = [{"active_ranks": r, "active_clients": 50 * r, "rate": 0.0} for r in (1, 2, 4)]
    assert herd_knee.ladder_kind(many) == "ranks"
    # A file of an older herd: no active_clients, no rate (NaN, 0).
    old = [{"active_ranks": r, "active_clients": math.nan, "rate": 0.0} for r in (1, 2, 4)]
    assert herd_knee.ladder_kind(old) == "ranks"
    # Clients that move the active ranks too (1 client: 1 rank; 10: 2).
    grow = [{"active_ranks": 1, "active_clients": 1}, {"active_ranks": 2, "active_clients": 10}]
    assert herd_knee.ladder_kind(grow) == "clients"


def test_knee_text_in_the_ladders_units(clients_ladder, ranks_ladder, rate_ladder):
    steps, knee = ladder(clients_ladder, "w")
    assert steps["active_clients"].tolist() == CLIENT_STEPS
    assert steps["active_ranks"].tolist() == [CLIENT_RANKS] * 3
    k = steps.iloc[knee["saturation_index"]]
    want = (f"knee: step {knee['saturation']} ({int(k['active_clients'])} clients on "
            f"{CLIENT_RANKS} ranks, {k['mib_per_s']:,.1f} MiB/s)")
    assert herd_knee.knee_text(knee, steps) == want
    assert herd_knee.describe(knee, steps).startswith(want)

    steps, knee = ladder(ranks_ladder, "w")
    k = steps.iloc[knee["saturation_index"]]
    n = int(k["active_ranks"])
    assert herd_knee.knee_text(knee, steps).startswith(
        f"knee: step {knee['saturation']} ({n} rank{'' if n == 1 else 's'} on 1 host, ")

    steps, knee = ladder(rate_ladder, "rl")
    assert steps["rate"].tolist() == RATES
    k = steps.iloc[knee["saturation_index"]]
    text = herd_knee.describe(knee, steps)
    assert text.startswith(f"knee: step {knee['saturation']} (offered "
                           f"{k['offered_per_s']:,.0f}/s, achieved "), text
    assert "rank" not in text.split(";")[0], text


# ---------------------------------------------------------------- 2. the curves' x


def draw_one(path: Path, name: str, tmp_path: Path,
             drawn: list[tuple[str, Figure]]) -> tuple[pd.DataFrame, dict, Figure]:
    """herd-report's load curve of ladder NAME: (steps, knee, its figure)."""
    steps, knee = ladder(path, name)
    assert herd_plots.loadcurve(steps, knee, herd_output.OutputDir(str(tmp_path / "out")),
                                "loadcurve.png", "t")
    return steps, knee, drawn[-1][1]


def test_clients_ladder_is_drawn_against_active_clients(clients_ladder, tmp_path, drawn):
    steps, knee, fig = draw_one(clients_ladder, "w", tmp_path, drawn)
    top, lat = fig.axes[:2]
    curve = top.lines[0]
    assert list(curve.get_xdata()) == CLIENT_STEPS  # one distinct x per step
    assert list(curve.get_ydata()) == pytest.approx(steps["mib_per_s"].tolist())
    assert all(list(line.get_xdata()) == CLIENT_STEPS for line in lat.lines
               if len(line.get_xdata()) == len(steps))
    assert top.get_xscale() == "log"  # 10 to 100 clients
    assert labels(lat.xaxis, visible=True) == [str(n) for n in CLIENT_STEPS]
    assert "clients" in lat.get_xlabel()
    star = line_of(top, herd_knee.knee_text(knee, steps))
    assert "clients on 2 ranks" in star.get_label()
    assert list(star.get_xdata()) == [CLIENT_STEPS[knee["saturation_index"]]]
    assert not top.texts  # x shows the clients already: no note by the points
    assert_plain_ticks(drawn)
    assert any(labels(lat.yaxis, visible=True))


def test_ranks_ladder_is_drawn_against_active_ranks(ranks_ladder, tmp_path, drawn):
    steps, knee, fig = draw_one(ranks_ladder, "w", tmp_path, drawn)
    top, lat = fig.axes[:2]
    assert list(top.lines[0].get_xdata()) == RANK_STEPS
    assert labels(lat.xaxis, visible=True) == [str(n) for n in RANK_STEPS]
    assert "ranks" in lat.get_xlabel()
    star = line_of(top, herd_knee.knee_text(knee, steps))
    assert " on 1 host, " in star.get_label()
    assert list(star.get_xdata()) == [RANK_STEPS[knee["saturation_index"]]]
    assert not top.texts  # one client per rank: nothing x does not show
    assert_plain_ticks(drawn)
    assert any(labels(lat.yaxis, visible=True))


def test_rate_ladder_is_response_time_against_achieved(rate_ladder, tmp_path, drawn):
    steps, knee, fig = draw_one(rate_ladder, "rl", tmp_path, drawn)
    top, lat = fig.axes[:2]
    achieved = steps["achieved_per_s"].tolist()
    assert len(set(achieved)) == len(RATES)
    assert list(top.lines[0].get_xdata()) == pytest.approx(achieved)
    response = line_of(lat, "response p99")
    assert list(response.get_xdata()) == pytest.approx(achieved)
    assert list(response.get_ydata()) == pytest.approx(steps["response_p99_s"].tolist())
    assert list(line_of(lat, "response p50").get_ydata()) == pytest.approx(
        steps["response_p50_s"].tolist())
    assert "achieved" in lat.get_xlabel()
    # Each point names its offered load (rate x clients), which x does not show.
    notes = [t.get_text() for t in top.texts]
    assert notes == [f"offered {o:,.0f}/s" if o >= 100 else f"offered {o:.3g}/s"
                     for o in steps["offered_per_s"]]
    assert steps["offered_per_s"].tolist() == [r * RATE_RANKS for r in RATES]
    star = line_of(top, herd_knee.knee_text(knee, steps))
    assert star.get_label().startswith(f"knee: step {knee['saturation']} (offered ")
    assert list(star.get_xdata()) == pytest.approx([achieved[knee["saturation_index"]]])
    assert_plain_ticks(drawn)
    assert any(labels(lat.yaxis, visible=True))
    assert any(labels(lat.xaxis, visible=True))


def test_compare_overlay_in_the_ladders_units(clients_ladder, rate_ladder, tmp_path, drawn):
    out = herd_output.OutputDir(str(tmp_path / "out"))
    for path, name, column in ((clients_ladder, "w", "active_clients"),
                               (rate_ladder, "rl", "achieved_per_s")):
        steps, knee = ladder(path, name)
        assert herd_plots.loadcurves([("a", steps, knee), ("b", steps, knee)], out,
                                     f"{name}.png", "t")
        top, lat = drawn[-1][1].axes[:2]
        want = steps[column].astype(float).tolist()
        assert [list(line_of(top, run).get_xdata()) for run in "ab"] == [want, want]
        assert len(set(want)) == len(steps)
        assert any(labels(lat.yaxis, visible=True))
    assert_plain_ticks(drawn)


# ---------------------------------------------------------------- 3. tick labels


@pytest.mark.parametrize("values", [[2e-3], [1e-3, 1.5e-3, 9e-3], [3e-4, 2e-2],
                                    [1e-6, 5e-6, 3e-1, 40.0], [math.nan, 4e-3]],
                         ids=["one-step", "one-decade", "two-decades", "many-decades",
                              "one-of-two"])
def test_latency_panel_always_has_labels(values):
    # The load curve's latency panel is about 2.5 inches high: there, 1, 2
    # and 5 x 10^k over 8 decades gave matplotlib's locator no tick at all.
    fig, ax = plt.subplots(figsize=(9, 2.5))
    ax.plot(range(len(values)), values)
    herd_plots.latency_axis(ax, values)
    fig.canvas.draw()
    shown = [t for t in labels(ax.yaxis, visible=True) if t]
    plt.close(fig)
    assert len(shown) >= 2, shown
    assert not [t for t in shown if "$" in t]


def test_count_axis_takes_client_counts():
    fig, ax = plt.subplots()
    counts = [10, 100, 500, 1000]
    ax.plot(counts, [1, 2, 3, 4])
    herd_plots.count_axis(ax, counts, "active clients")
    fig.canvas.draw()
    assert ax.get_xscale() == "log"
    assert labels(ax.xaxis, visible=True) == ["10", "100", "500", "1,000"]
    plt.close(fig)


def test_log_counts_are_plain_text():
    fig, ax = plt.subplots()
    ax.bar([1, 2, 3], [1, 300, 20000])
    herd_plots.log_scale(ax, "y", herd_plots.human_count)
    fig.canvas.draw()
    shown = labels(ax.yaxis, visible=True)
    plt.close(fig)
    assert {"1", "10", "100", "1k", "10k"} <= set(shown), shown
    assert not [t for t in shown if "$" in t or "mathdefault" in t]


# ---------------------------------------------------------------- 4. the Clients section


def test_clients_section_counts_the_active_clients(clients_ladder, tmp_path, drawn):
    out = tmp_path / "report"
    proc = tool(REPORT, clients_ladder, "-o", out)
    assert proc.returncode == 0, describe(proc)
    spread = {r["phase"]: r for r in read_csv(out / "client_spread.csv")}
    assert [int(spread[f"w.{n}c"]["clients"]) for n in CLIENT_STEPS] == CLIENT_STEPS
    for n in CLIENT_STEPS:
        row = spread[f"w.{n}c"]
        assert float(row["median_s"]) > 0 and float(row["min_s"]) > 0, row
        assert row["slowest_client_id"] != "" and row["max_over_median"] != "", row
    times = read_csv(out / "client_times.csv")
    for n in CLIENT_STEPS:
        mine = [r for r in times if r["phase"] == f"w.{n}c"]
        assert len(mine) == n
        assert all(int(r["bytes"]) == 128 << 10 for r in mine)
        # spread evenly over the ranks: n / 2 clients of each
        assert sorted({int(r["rank"]) for r in mine}) == [0, 1]
        assert sum(int(r["rank"]) == 0 for r in mine) == n // CLIENT_RANKS
    slowest = [r for r in read_csv(out / "slowest_clients.csv") if r["phase"] == "w.10c"]
    assert len(slowest) == 10 and all(float(r["seconds"]) > 0 for r in slowest)
    page = (out / "index.html").read_text()
    section = page.split("<h2>Clients</h2>")[1].split("<h2>")[0]
    assert "active clients only" in section
    assert "knee: step" in page and "clients on 2 ranks" in page
    # The histogram, drawn here through the same function: plain tick labels.
    with herd_results.load(clients_ladder) as run:
        assert herd_plots.client_times(run, herd_output.OutputDir(str(tmp_path / "plots")),
                                       "client_times.png")
    name, fig = drawn[-1]
    assert [ax.get_title().split(":")[1].strip() for ax in fig.axes if ax.axison] == \
        [f"{n} clients" for n in CLIENT_STEPS]
    assert_plain_ticks(drawn)


def test_report_and_compare_exit_0(clients_ladder, rate_ladder, tmp_path):
    for path in (clients_ladder, rate_ladder):
        proc = tool(REPORT, path, "-o", tmp_path / path.stem)
        assert proc.returncode == 0, describe(proc)
    proc = tool(COMPARE, clients_ladder, clients_ladder, "--ladder", "w", "-o", tmp_path / "cmp")
    assert proc.returncode == 0, describe(proc)
    assert "MiB/s per active clients (rows)" in proc.stdout
    table = proc.stdout.split("(rows) and run (columns)")[1].splitlines()[3:6]
    assert [int(line.split()[0]) for line in table] == CLIENT_STEPS
    rows = read_csv(tmp_path / "cmp" / "ladder.csv")
    assert [int(r["active_clients"]) for r in rows] == CLIENT_STEPS * 2
    proc = tool(COMPARE, rate_ladder, rate_ladder, "--ladder", "rl")
    assert proc.returncode == 0, describe(proc)
    assert "per offered calls/s (rows)" in proc.stdout
    assert "(offered " in proc.stdout
    # The load-curve tables: latencies in the terminal's units; a ladder in
    # offered load with its own columns, one in clients without them.
    rate_md = (tmp_path / rate_ladder.stem / "loadcurve_rl.md").read_text().splitlines()
    clients_md = (tmp_path / clients_ladder.stem / "loadcurve_w.md").read_text().splitlines()
    for head in ("offered/s", "achieved/s", "calls due", "sent", "response p99",
                 "herd lag p99"):
        assert f"| {head} |" in rate_md[0] and f"| {head} |" not in clients_md[0], head
    heads = [h.strip() for h in clients_md[0].strip("|").split("|")]
    for line in clients_md[2:]:
        cells = dict(zip(heads, (c.strip() for c in line.strip("|").split("|"))))
        for head in ("p50", "p99", "max"):
            assert re.fullmatch(r"[0-9.]+(us|ms|s)", cells[head]), (head, cells[head])


# ---------------------------------------------------------------- 5. the loader's docs


def test_loader_example_in_the_docs_runs_as_written(herd_bin: str, tmp_path: Path) -> None:
    """docs/analysis.md's loader example, run as written on a results file
    with its phase and ladder names (only the file's path is changed); its
    steps carry every column of the stored steps table, active_clients
    among them, and loadcurve_read.csv has them all."""
    (tmp_path / "target").mkdir()
    job = write_job(tmp_path / "x.ini", {"target": tmp_path / "target", "fsync": "no",
                                         "block_size": "64K", "file_size": "256K"},
                    [("write-unique-16M", {"kind": "write"}),
                     ("read", {"kind": "read", "ranks_active": "1,2"})])
    out = tmp_path / "xfs-20.h5"
    proc = herd_run(herd_bin, 2, job, out)
    assert proc.returncode == 0, describe(proc)
    doc = (REPO_DIR / "docs" / "analysis.md").read_text()
    section = doc[doc.index("## The loader, `herd_results`"):]
    code = section[section.index("```python\n") + 10:section.index("```\n", 10)]
    assert 'herd_results.load("xfs-20.h5")' in code
    code = code.replace('"xfs-20.h5"', repr(str(out)))
    proc = run_cmd(["/usr/bin/python3", "-c", code], timeout=120, cwd=REPO_DIR)
    assert proc.returncode == 0, describe(proc)
    with herd_results.load(str(out)) as run:
        steps = run.ladder_steps("read")
        assert list(steps.columns) == herd_results.LADDER_COLUMNS
        import h5py
        with h5py.File(out, "r") as f:
            stored = list(f["phases/read/steps"].dtype.names)
    assert set(stored) <= set(steps.columns), set(stored) - set(steps.columns)
    assert steps["active_clients"].tolist() == [1, 2]
    report = tmp_path / "report"
    proc = tool(REPORT, out, "-o", report)
    assert proc.returncode == 0, describe(proc)
    rows = read_csv(report / "loadcurve_read.csv")
    assert set(stored) <= set(rows[0]), set(stored) - set(rows[0])
    assert [r["active_clients"] for r in rows] == ["1", "2"]
