"""Offered load (`rate`): each client offers calls on a schedule, latency
counts from each call's intended instant, late calls are counted, never
dropped.

The server is the fault backend's `read=serve:5ms/2`: every read takes one
of 2 worker slots (open file description locks on the run's lock file,
shared by every rank) and holds it 5 ms, so the ranks together get about
400 reads/s. Below that (4 ranks x 50/s) each client achieves what it
offers; above it (4 x 200/s) the server's capacity caps the achieved rate,
calls go late and their response times grow far beyond the service time.
A freeze of that server (the test takes both slots for 2 s) shows in an
open loop as a response p99 of the order of the freeze, where the calls'
own service p99 stays small (coordinated omission avoided).

Every figure is herd's own (`--json`, the results file); the assertions
are relations between counts and between figures of one run (a loaded
machine only makes timers late, which herd counts as its lag), never
elapsed times.

Run: /usr/bin/python3 -m pytest -q -rs tests/integration/test_rate.py
"""
import fcntl
import json
import os
import struct
import time

import h5py
import numpy as np
import pytest

from conftest import KIB, describe, herd_background, herd_cmd, herd_run, write_job

RANKS = 4
SERVE_S = 0.005
WORKERS = 2
BLOCK = 4 * KIB
BLOCKS = 200  # reads per rank in each rated phase
HIST_STEP = 1.0625  # a histogram bucket's upper bound is within 6.25 % of its values


def phase(summary, name):
    return next(p for p in summary["phases"] if p["name"] == name)


def op(ph, name):
    return next((o for o in ph["ops"] if o["op"] == name), None)


@pytest.fixture(scope="module")
def served(herd_bin, tmp_path_factory):
    """One run of 4 ranks: write the files, then read them from a server of
    2 workers below its capacity (fixed arrivals), above it (Poisson
    arrivals) and in a closed loop."""
    work = tmp_path_factory.mktemp("rate")
    target = work / "target"
    target.mkdir()
    serve = f"read=serve:{SERVE_S * 1000:g}ms/{WORKERS}"
    job = write_job(work / "rate.ini",
                    {"target": target, "backend": "fault", "fsync": "no",
                     "file_size": BLOCKS * BLOCK, "block_size": BLOCK},
                    [("write", {"kind": "write"}),
                     ("below", {"kind": "read", "faults": serve, "rate": 50,
                                "arrivals": "fixed", "verify": "yes"}),
                     ("above", {"kind": "read", "faults": serve, "rate": 200}),
                     ("closed", {"kind": "read", "faults": serve})])
    out = work / "rate.h5"
    js = work / "rate.json"
    proc = herd_run(herd_bin, RANKS, job, out, "--json", js)
    assert proc.returncode == 0, describe(proc)
    return out, json.loads(js.read_text()), proc


def test_below_capacity_achieves_what_is_offered(served):
    ph = phase(served[1], "below")
    pace = ph["pace"]
    assert pace["offered_per_s"] == RANKS * 50
    assert pace["calls"] == RANKS * BLOCKS
    assert abs(pace["achieved_per_s"] / pace["offered_per_s"] - 1) < 0.05, pace
    # 20 ms between a client's calls, 5 ms per read (10 when both workers
    # are busy): a call is late only where the machine stalled a client.
    assert pace["late"] <= 0.02 * pace["calls"], pace
    assert ph["errors"] == 0 and ph["verify_failures"] == 0
    # An on-time call's response is its lag plus its service, exactly.
    if pace["late"] == 0:
        resp, serv, lag = (op(ph, n)["latency_s"]["max"] for n in ("response", "service", "lag"))
        assert resp <= (serv + lag) * HIST_STEP ** 2, (resp, serv, lag)


def test_above_capacity_is_capped_and_goes_late(served):
    ph = phase(served[1], "above")
    pace = ph["pace"]
    assert pace["offered_per_s"] == RANKS * 200
    assert pace["calls"] == RANKS * BLOCKS  # late, never dropped
    # The workers cap the rate (a busy machine only lowers it).
    assert pace["achieved_per_s"] <= 1.05 * WORKERS / SERVE_S, pace
    assert pace["achieved_per_s"] < 0.6 * pace["offered_per_s"], pace
    assert pace["late"] > pace["calls"] / 2, pace
    # The backlog grows through the phase: responses far above service.
    assert pace["response_p99_s"] > 5 * pace["service_p99_s"], pace
    assert not pace["herd_limited"], pace


def test_closed_loop_has_no_schedule(served):
    ph = phase(served[1], "closed")
    assert ph["pace"] is None
    assert op(ph, "response") is None and op(ph, "lag") is None
    with h5py.File(served[0], "r") as f:
        g = f["phases/closed"]
        assert int(g["ranks"]["late"].sum()) == 0
        assert np.isnan(g.attrs["summary_offered_per_s"])


def test_results_file_holds_the_schedule(served):
    """Per client rows (units, late), the phase's attributes and one
    response, service and lag sample per paced call."""
    out, summary, _ = served
    with h5py.File(out, "r") as f:
        for name in ("below", "above"):
            g = f[f"phases/{name}"]
            rows = g["ranks"][()]
            assert list(rows["units"]) == [BLOCKS] * RANKS
            pace = phase(summary, name)["pace"]
            assert int(rows["late"].sum()) == pace["late"] == g.attrs["summary_late"]
            assert g.attrs["summary_units"] == RANKS * BLOCKS
            assert g.attrs["summary_achieved_per_s"] == pytest.approx(pace["achieved_per_s"])
            assert g.attrs["rate"] in (50.0, 200.0)
            for hist in ("response", "service", "lag"):
                assert int(g["latency"][hist][()].sum()) == RANKS * BLOCKS
            # the reads themselves are counted as ever
            assert op(phase(summary, name), "read")["calls"] == RANKS * BLOCKS


def test_summary_and_phase_line_say_it(served):
    proc = served[2]
    assert "herd: phase above: offered 800.0 calls/s, achieved" in proc.stderr
    line = next(l for l in proc.stdout.splitlines() if "offered 200.0/s" in l)
    assert "achieved" in line and "late" in line and "response p50" in line
    assert "service p50" in line and "herd lag p50" in line


def take_slots(lockfile, seconds):
    """Hold every worker slot of the fault backend's server (the bytes
    2^40 + k of the run's lock file, open file description locks) for
    seconds: the server is frozen."""
    fd = os.open(lockfile, os.O_RDWR | os.O_NOFOLLOW)
    try:
        for k in range(WORKERS):
            flock = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, (1 << 40) + k, 1, 0)
            fcntl.fcntl(fd, fcntl.F_OFD_SETLKW, flock)
        time.sleep(seconds)
    finally:
        os.close(fd)  # releases them


def test_a_frozen_server_shows_in_the_response_time(herd_bin, tmp_path):
    """A 2 s freeze during an open-loop read at 20 calls/s per client:
    the calls due during the freeze wait for it, so the response p99 is of
    its order, while only the one call per client that was in the server
    took long to serve (service p99 small). A closed loop would show that
    one slow call and nothing else."""
    freeze = 2.0
    target = tmp_path / "target"
    target.mkdir()
    job = write_job(tmp_path / "freeze.ini",
                    {"target": target, "backend": "fault", "fsync": "no",
                     "file_size": BLOCKS * BLOCK, "block_size": BLOCK, "run_id": "freeze"},
                    [("write", {"kind": "write"}),
                     ("read", {"kind": "read", "faults": f"read=serve:{SERVE_S * 1000:g}ms/2",
                               "rate": 20, "arrivals": "fixed"})])
    js = tmp_path / "freeze.json"
    with herd_background(herd_bin, RANKS, "run", job, "-o", tmp_path / "f.h5",
                         "--json", js) as run:
        run.wait_line(r"phase write: ")
        time.sleep(1.0)  # the read phase (10 s) is under way
        take_slots(target / "herd-freeze" / ".herd-run.lock", freeze)
        done, _ = run.wait()
    assert done.returncode == 0, describe(done)
    pace = phase(json.loads(js.read_text()), "read")["pace"]
    assert pace["calls"] == RANKS * BLOCKS
    assert pace["late"] >= RANKS * 10, pace  # the calls due in the freeze's first half
    assert pace["response_p99_s"] >= freeze / 2, pace
    assert pace["service_p99_s"] < freeze / 4, pace


def test_deadline_and_slow_rate(herd_bin, tmp_path):
    """A rate of one call a minute: the client waits for its instant in
    slices, so the phase's deadline ends it on time and no call is made
    after it."""
    job = write_job(tmp_path / "slow.ini", {"target": tmp_path, "file_size": "64K",
                                            "block_size": "4K"},
                    [("w", {"kind": "write", "rate": "1/m", "deadline": "1s"})])
    js = tmp_path / "slow.json"
    t0 = time.monotonic()
    proc = herd_run(herd_bin, 2, job, tmp_path / "slow.h5", "--json", js)
    assert proc.returncode in (0, 3), describe(proc)
    ph = phase(json.loads(js.read_text()), "w")
    assert ph["status"] == "deadline", ph
    assert ph["pace"]["calls"] <= 2, ph["pace"]  # at most each client's first
    assert ph["seconds"]["last_done"] < 30, ph["seconds"]  # not the minute's wait
    assert time.monotonic() - t0 < 60


SIZES = {"file_size": "64K", "block_size": "4K"}
SMALL = {"file_size": "4K", "block_size": "4K"}


@pytest.mark.parametrize("kind, keys, prep, calls", [
    ("write", SIZES, None, 16),
    ("md5", SIZES, {"kind": "write", **SIZES}, 16),
    ("storm", {"count": 30, "fileset": "s", **SMALL},
     {"kind": "write", "sharing": "shared", "fileset": "s", **SMALL}, 30),
    ("lock", {"count": 20, **SMALL}, None, 20),
    ("meta", {"files": 10, "dirs": 2}, None, 40),
])
def test_every_kind_paces_its_calls(herd_bin, tmp_path, kind, keys, prep, calls):
    """The kind's unit is paced: write and md5 blocks, storm and lock
    attempts, meta items (create, stat, rename, unlink of 10 files)."""
    phases = [("prep", prep)] if prep else []
    phases.append(("paced", {"kind": kind, "rate": 500, **keys}))
    job = write_job(tmp_path / "k.ini", {"target": tmp_path}, phases)
    js = tmp_path / "k.json"
    proc = herd_run(herd_bin, 2, job, tmp_path / "k.h5", "--json", js)
    assert proc.returncode == 0, describe(proc)
    ph = phase(json.loads(js.read_text()), "paced")
    assert ph["pace"]["calls"] == 2 * calls, ph["pace"]
    assert op(ph, "response")["calls"] == 2 * calls


def test_rate_with_think_time_is_refused(herd_bin, tmp_path):
    job = write_job(tmp_path / "bad.ini", {"target": tmp_path},
                    [("w", {"kind": "write", "rate": 10, "think_time": "1ms"})])
    proc = herd_cmd(herd_bin, "check", job)
    assert proc.returncode == 2, describe(proc)
    assert "key 'rate': rate offers calls on a schedule and think_time pauses" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1


# ---------------------------------------------------------------- ladders with a stop rule


def steps_table(path, ladder):
    with h5py.File(path, "r") as f:
        rows = f[f"phases/{ladder}/steps"][()]
        groups = set(f["phases"])
    return [{k: (v.decode() if isinstance(v, bytes) else v) for k, v in zip(rows.dtype.names, r)}
            for r in rows], groups


def check_stopped(steps, groups):
    """The first step that broke the rule is the last one run; every later
    step is recorded as not run, with the reason, and has no phase group."""
    ran = [s for s in steps if s["status"] != "not-run"]
    skipped = [s for s in steps if s["status"] == "not-run"]
    assert ran and skipped, steps
    assert [s["step"] for s in steps] == list(range(1, len(steps) + 1))
    assert ran[-1]["step"] + 1 == skipped[0]["step"], steps
    broke = ran[-1]
    share = broke["units"] / broke["due"]
    assert share < 0.95, broke
    for s in ran[:-1]:
        assert s["units"] / s["due"] >= 0.95, s
        assert s["phase"] in groups
    for s in skipped:
        assert s["note"] == f"not run: step {broke['phase']} broke stop_when " \
                            f"(achieved {share * 100:.1f}% < 95.0%)", s
        assert s["phase"] not in groups and s["units"] == 0
    return ran, skipped


def test_stop_rule_ends_a_rate_ladder(herd_bin, tmp_path):
    """10 and 200 calls/s per client against ~400 reads/s: the 800/s step
    cannot keep up and breaks `achieved < 95%`; the 400/s step after it is
    not run."""
    job = write_job(tmp_path / "ladder.ini",
                    {"target": tmp_path, "backend": "fault", "fsync": "no",
                     "file_size": "4M", "block_size": "4K"},
                    [("write", {"kind": "write"}),
                     ("rl", {"kind": "read", "faults": "read=serve:5ms/2",
                             "rate_steps": "10,200,400", "step_duration": "2s",
                             "arrivals": "fixed", "stop_when": "achieved < 95%"})])
    out = tmp_path / "l.h5"
    js = tmp_path / "l.json"
    proc = herd_run(herd_bin, RANKS, job, out, "--json", js)
    assert proc.returncode == 0, describe(proc)
    steps, groups = steps_table(out, "rl")
    assert [s["phase"] for s in steps] == ["rl.10ps", "rl.200ps", "rl.400ps"]
    assert [s["rate"] for s in steps[:2]] == [10.0, 200.0]
    ran, skipped = check_stopped(steps, groups)
    assert steps[2] in skipped  # the server cannot take 800/s: at the latest step 2 broke
    assert "its later steps are not run" in proc.stderr
    summary = json.loads(js.read_text())
    assert phase(summary, "rl.400ps")["status"] == "not-run"
    assert phase(summary, "rl.400ps")["note"] == steps[2]["note"]


def test_stop_rule_ends_a_ranks_ladder(herd_bin, tmp_path):
    """The same rule on a ladder in ranks at 150 calls/s each: 150 and
    300 offered fit the server's ~400, 600 cannot."""
    job = write_job(tmp_path / "ranks.ini",
                    {"target": tmp_path, "backend": "fault", "fsync": "no",
                     "file_size": "4M", "block_size": "4K"},
                    [("write", {"kind": "write"}),
                     ("rk", {"kind": "read", "faults": "read=serve:5ms/2", "rate": 150,
                             "arrivals": "fixed", "ranks_active": "1,4,all",
                             "step_duration": "2s", "stop_when": "achieved < 95%"})])
    out = tmp_path / "r.h5"
    proc = herd_run(herd_bin, RANKS + 1, job, out)
    assert proc.returncode == 0, describe(proc)
    steps, groups = steps_table(out, "rk")
    ran, skipped = check_stopped(steps, groups)
    assert steps[2] in skipped  # 5 ranks x 150 = 750/s: broke at step 2 at the latest
    assert steps[1]["offered_per_s"] == 4 * 150


def test_rate_curve_takes_percents_of_its_maximum(herd_bin, tmp_path):
    """rate_curve: a closed-loop step at full speed, then each step offers
    its percent of that step's units/s per client."""
    job = write_job(tmp_path / "curve.ini",
                    {"target": tmp_path, "backend": "fault", "fsync": "no",
                     "file_size": "4M", "block_size": "4K"},
                    [("write", {"kind": "write"}),
                     ("c", {"kind": "read", "faults": "read=serve:5ms/2",
                            "rate_curve": "10,50", "step_duration": "1s"})])
    out = tmp_path / "c.h5"
    proc = herd_run(herd_bin, 2, job, out)
    assert proc.returncode == 0, describe(proc)
    steps, _ = steps_table(out, "c")
    assert [s["phase"] for s in steps] == ["c.max", "c.10pct", "c.50pct"]
    top = steps[0]
    assert top["rate"] == 0 and np.isnan(top["offered_per_s"]) and top["units"] > 0
    per_client = top["achieved_per_s"] / 2
    for s, pct in zip(steps[1:], (10, 50)):
        assert s["rate"] == pytest.approx(pct / 100 * per_client, rel=1e-9), s
        assert s["offered_per_s"] == pytest.approx(2 * s["rate"], rel=1e-9)
    with h5py.File(out, "r") as f:
        assert f["phases/c.50pct"].attrs["rate"] == pytest.approx(steps[2]["rate"])


@pytest.mark.parametrize("keys, words", [
    ({"rate_steps": "10,5"}, "key 'rate_steps': '10,5' is not a list of rates"),
    ({"rate_curve": "50,150"}, "key 'rate_curve': '50,150' is not a list of percents"),
    ({"rate_steps": "10", "rate": 5}, "key 'rate': the ladder in rate sets each step's rate"),
    ({"rate_steps": "10", "ranks_active": "1,all"}, "a ladder steps in one thing"),
    ({"stop_when": "p99 > 5ms"}, "key 'stop_when': applies to a load ladder"),
    ({"ranks_active": "1,all", "stop_when": "achieved < 95%"},
     "key 'stop_when': achieved and late need an offered rate"),
    ({"ranks_active": "1,all", "stop_when": "p99 > fast"}, "p99 needs a duration"),
    ({"ranks_active": "1,all", "stop_when": "latency > 5ms"}, "does not start with p50"),
])
def test_ladder_keys_refused(herd_bin, tmp_path, keys, words):
    job = write_job(tmp_path / "bad.ini", {"target": tmp_path}, [("r", {"kind": "read", **keys})])
    proc = herd_cmd(herd_bin, "check", job)
    assert proc.returncode == 2, describe(proc)
    assert words in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr


def test_each_client_has_its_own_p99(served):
    """Every row carries its client's own p99 of response and service (its
    own histograms), service within response; NaN in a closed loop."""
    with h5py.File(served[0], "r") as f:
        for name in ("below", "above"):
            rows = f[f"phases/{name}/ranks"][()]
            assert (rows["response_p99"] > 0).all() and \
                (rows["service_p99"] <= rows["response_p99"] * HIST_STEP).all(), rows
        closed = f["phases/closed/ranks"][()]
        assert np.isnan(closed["response_p99"]).all()
    above = {int(r["rank"]): r for r in h5py.File(served[0], "r")["phases/above/ranks"][()]}
    # above capacity every client's own p99 is far above its service's
    assert all(r["response_p99"] > 5 * r["service_p99"] for r in above.values()), above
