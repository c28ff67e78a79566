"""Crashes: what a results file holds after SIGKILL.

docs/results-format.md promises that if herd dies (kill -9, node failure)
the file stays readable, its root status is `partial` and it holds every
phase finished before the death. These tests SIGKILL, in a job of many
short phases (idle phases with durations, and small write phases):
- one rank other than 0, in the middle of the run;
- mpirun itself (the ranks then stop as on SIGTERM: status interrupted);
- rank 0, at times spread over the whole run, so that some kills land
  while it writes the results file.
A phase counts as finished when herd printed its "herd: phase NAME:" line
(rank 0 prints it after writing and flushing the phase). Each such phase
must be in the file with its status and a complete ranks table.

Every process of a run is in its own session; the test kills that process
group in a finally block. The target is a directory in tmp_path.
"""

import contextlib
import os
import re
import signal
import subprocess
import time

import h5py
import pytest

from conftest import Background, mpirun_args, rank_pids, write_job

NRANKS = 4
PHASE_LINE = re.compile(r"^herd: phase (\S+): (\w+): ")
# Seconds the test waits for the ranks to end on their own after a kill:
# a hang guard (they end in about a second), not a time they must beat.
STOP_GUARD = 60


def crash_job(tmp_path, nphases=16, idle="150ms", file_size="256K"):
    """Alternating write and idle phases; returns (job path, phase names)."""
    target = tmp_path / "target"
    target.mkdir(exist_ok=True)
    phases = []
    for i in range(nphases):
        if i % 2 == 0:
            phases.append((f"w{i:02d}", {"kind": "write", "fileset": f"f{i:02d}",
                                         "iterations": 2}))
        else:
            phases.append((f"i{i:02d}", {"kind": "idle", "duration": idle}))
    job = write_job(tmp_path / "crash.ini",
                    {"target": target, "file_size": file_size, "block_size": "64K",
                     "fsync": "no"}, phases)
    return job, [name for name, _ in phases]


class Run(Background):
    """mpirun herd run in its own session, stderr collected line by line."""

    def __init__(self, herd_bin, job, out):
        self.t0 = time.monotonic()
        super().__init__(mpirun_args(herd_bin, NRANKS, "run", job, "-o", out))
        self.pids = {}

    def finished_phases(self):
        """Phases herd reported done so far (rank 0 prints after the flush)."""
        return [m.group(1) for m in (PHASE_LINE.match(l) for l in self.err.seen()) if m]

    def wait_ranks(self, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pids = rank_pids(self.pid)
            if len(pids) == NRANKS:
                self.pids = pids
                return pids
            time.sleep(0.02)
        pytest.fail(f"never saw {NRANKS} ranks: {rank_pids(self.pid)}")

    def finish(self, timeout=60):
        """Wait for mpirun's end, then kill whatever of the session is left
        (the ranks too, also after mpirun was killed); returns stderr."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=timeout)
        self.kill()
        self.out.rest(5)
        return self.err.rest(5)

    def ranks_alive(self):
        alive = []
        for rank, pid in self.pids.items():
            with contextlib.suppress(OSError):
                if os.getsid(pid) == self.proc.pid and \
                        open(f"/proc/{pid}/stat").read().split(") ")[1][0] != "Z":
                    alive.append(rank)
        return alive


def phase_problem(f, name, nranks):
    ph = f["phases"][name]
    if "status" not in ph.attrs:
        return f"phase {name} has no status"
    rows = ph["ranks"][()]
    iters = int(ph.attrs["iterations"])
    if sorted(zip(rows["rank"].tolist(), rows["iteration"].tolist())) != \
            [(r, i) for r in range(nranks) for i in range(iters)]:
        return f"{name}: ranks table incomplete ({len(rows)} rows, want {nranks * iters})"
    status = ph.attrs["status"]
    status = status.decode() if isinstance(status, bytes) else status
    if not (rows["completed"] == 1).all() and status != "interrupted":  # the cut one may not be
        return f"{name}: rows not completed"
    return None


def check_partial(out, finished, where, want=("partial", -1)):
    """The file opens, its status and exit code are want (a dead herd's:
    partial, -1; None: not looked at), every phase herd reported finished is in it intact (and
    so is any other phase with a status); at most one phase, the last, has
    no status (cut off while written). Returns None or a text saying what
    is wrong."""
    try:
        with h5py.File(out, "r") as f:
            status = f.attrs["status"]
            status = status.decode() if isinstance(status, bytes) else status
            if want and status != want[0]:
                return f"{where}: status {status!r}, want {want[0]!r}"
            if want and int(f.attrs["exit_code"]) != want[1]:
                return f"{where}: exit_code {f.attrs['exit_code']}, want {want[1]}"
            nranks = int(f.attrs["nranks"])
            if nranks != NRANKS or len(f["ranks"]) != NRANKS:
                return f"{where}: nranks {nranks}, /ranks {len(f['ranks'])}"
            names = list(f["phases"].keys())
            if names[:len(finished)] != finished:
                return f"{where}: finished phases {finished}, file has {names}"
            for i, name in enumerate(names):
                if "status" not in f["phases"][name].attrs and i == len(names) - 1:
                    continue
                problem = phase_problem(f, name, nranks)
                if problem:
                    return f"{where}: {problem}"
    except Exception as e:  # noqa: BLE001 - any failure to read is the finding
        return f"{where}: cannot read the file: {type(e).__name__}: {e}"
    return None


def finished_in(err):
    return [m.group(1) for m in (PHASE_LINE.match(l) for l in err.splitlines()) if m]


def kill_after_phases(herd_bin, tmp_path, nphases_done, victim):
    """SIGKILL victim (a rank or "mpirun") just after phase number
    nphases_done was reported; returns (file, finished phases, all phase
    names, mpirun's exit status, stderr, seconds the ranks outlived it,
    the ranks still alive after the hang guard)."""
    job, names = crash_job(tmp_path)
    out = tmp_path / "crash.h5"
    run = Run(herd_bin, job, out)
    try:
        pids = run.wait_ranks()
        line = run.err.wait_for(
            lambda l: (m := PHASE_LINE.match(l)) and m.group(1) == names[nphases_done - 1], 60)
        assert line, f"phase {names[nphases_done - 1]} never finished:\n{run.err.rest(5)}"
        time.sleep(0.05)  # into the next phase
        killed = time.monotonic()
        os.kill(run.proc.pid if victim == "mpirun" else pids[victim], signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            run.proc.wait(timeout=60)
        rc = run.proc.returncode
        # what the ranks do on their own (the test kills them below if not):
        # waited for with a hang guard, not a time they must beat
        while run.ranks_alive() and time.monotonic() - killed < STOP_GUARD:
            time.sleep(0.05)
        outlived = time.monotonic() - killed
        left = run.ranks_alive()
    finally:
        err = run.finish(timeout=5)
    return out, finished_in(err), names, rc, err, outlived, left


def test_sigkill_one_rank(herd_bin, tmp_path):
    out, finished, names, rc, err, outlived, left = kill_after_phases(herd_bin, tmp_path, 5,
                                                                      victim=2)
    print(f"\nrank 2 killed after {finished[-1]}; mpirun exit {rc}; ranks gone after "
          f"{outlived:.2f} s")
    assert rc not in (0, None), err
    assert 5 <= len(finished) < len(names), finished
    problem = check_partial(out, finished, "rank 2 killed")
    assert problem is None, f"{problem}\nstderr:\n{err}"
    assert not left, f"ranks {left} outlived a dead rank by {STOP_GUARD} s"


def test_sigkill_mpirun(herd_bin, tmp_path):
    out, finished, names, rc, err, outlived, left = kill_after_phases(herd_bin, tmp_path, 5,
                                                                      victim="mpirun")
    print(f"\nmpirun killed after {finished[-1]}; ranks gone after {outlived:.2f} s")
    assert rc == -signal.SIGKILL, err
    assert 5 <= len(finished) < len(names), finished
    # No crash for herd: its ranks get SIGTERM when their parent dies and
    # stop as on any signal, the cut phase recorded.
    problem = check_partial(out, finished, "mpirun killed", want=("interrupted", 143))
    assert problem is None, f"{problem}\nstderr:\n{err}"
    assert not left, f"ranks {left} outlived mpirun by {STOP_GUARD} s"


RANK0_KILLS = 10


def test_sigkill_rank0_while_writing(herd_bin, tmp_path):
    """Rank 0 SIGKILLed at RANK0_KILLS points spread evenly over a run of 40
    short phases (a phase written to the file every ~50 ms): every file must
    open, be partial and hold every phase reported finished.

    Each kill is placed by the run's own progress, not by a clock calibrated
    on another run: it waits for the line of phase j (j spread over the run)
    and then a further 0-51 ms, so that the kills meet rank 0 idle, between
    phases and in the middle of writing the file, at any machine speed."""
    job, names = crash_job(tmp_path, nphases=40, idle="50ms", file_size="64K")
    bad, report, ended = [], [], 0
    for k in range(RANK0_KILLS):
        after = names[k * (len(names) - 4) // RANK0_KILLS]
        delay = 0.017 * (k % 4)
        out = tmp_path / f"k{k}.h5"
        run = Run(herd_bin, job, out)
        try:
            pids = run.wait_ranks()
            assert run.err.wait_for(
                lambda l, after=after: (m := PHASE_LINE.match(l)) and m.group(1) == after, 60)
            time.sleep(delay)
            try:
                os.kill(pids[0], signal.SIGKILL)
            except ProcessLookupError:
                pass  # the run was over: counted below
            with contextlib.suppress(subprocess.TimeoutExpired):
                run.proc.wait(timeout=60)
        finally:
            err = run.finish(timeout=5)
        finished = finished_in(err)
        when = f"kill {k} {delay * 1000:.0f} ms after {after}"
        if len(finished) == len(names):
            report.append(f"{when}: the run had ended")
            ended += 1
            continue
        problem = check_partial(out, finished, when)
        report.append(f"{when}: {len(finished)} phases finished: {problem or 'ok'}")
        if problem:
            bad.append(problem)
    print("\n" + "\n".join(report))
    assert ended <= RANK0_KILLS // 5, "too many kills came after the end:\n" + \
        "\n".join(report)
    assert not bad, f"{len(bad)} of {RANK0_KILLS} files lost finished phases:\n" + \
        "\n".join(bad)


def test_the_file_on_disk_is_whole_at_every_instant(herd_bin, tmp_path):
    """A kill leaves what is on disk at its instant; so a reader that opens
    the file over and over while rank 0 writes 40 phases must find a whole
    file each time, holding every phase reported finished before it looked.
    (A file HDF5 updates in place fails this: a reader meets half-written
    metadata within a few phases.)"""
    job, names = crash_job(tmp_path, nphases=40, idle="50ms", file_size="64K")
    out = tmp_path / "whole.h5"
    run = Run(herd_bin, job, out)
    opens, states, bad = 0, set(), []
    try:
        while run.proc.poll() is None and len(bad) < 5:
            finished = run.finished_phases()  # before the look: all saved by then
            if not out.exists():
                time.sleep(0.005)
                continue
            problem = check_partial(out, finished, f"look {opens} ({len(finished)} finished)",
                                    want=None)
            opens += 1
            states.add(len(finished))
            if problem:
                bad.append(problem)
    finally:
        err = run.finish(timeout=60)
    assert run.proc.returncode == 0, err[-2000:]
    print(f"\n{opens} looks at {len(states)} different points of the run")
    assert not bad, "\n".join(bad)
    assert len(states) >= 10, f"the reader saw only {len(states)} points of the run"
    assert check_partial(out, names, "the end", want=("complete", 0)) is None
