"""analysis/herd_parallel.py: herd-report's figures side by side.

1. Every task runs once, in a process forked from the caller (it sees what
   the caller made before, e.g. a file it opened), and the results come
   back in task order, whatever the order the workers took them in.
2. A task that raises: the others still run; the first exception in task
   order is raised, with its type.
3. A worker that dies (os._exit in a task): that task runs again in the
   caller, and the rest of the results are those of the workers.
4. One task, or one usable CPU: the tasks run in the caller, in order.
5. The caller SIGKILLed while its workers run: no worker is left.
6. run_beside: the side work runs in the caller while the workers run
   the tasks (it sees them running), its result beside theirs; its
   exception is raised once the workers have ended.

Counts and processes only; no timing.
Run: /usr/bin/python3 -m pytest -q tests/integration/test_herd_parallel.py
"""
import os
import subprocess
import sys
import time

import pytest

from conftest import REPO_DIR

sys.path.insert(0, str(REPO_DIR / "analysis"))
import herd_parallel  # noqa: E402


def pid_and(value):
    return lambda: (os.getpid(), value)


def test_results_in_task_order_from_forked_workers(tmp_path, monkeypatch):
    monkeypatch.setattr(herd_parallel, "workers_for", lambda count: 2)
    opened = open(tmp_path / "shared", "w")  # made before: the workers write through it
    try:
        def write(i):
            def task():
                opened.write(f"{i}\n")
                opened.flush()
                return os.getpid(), i * i
            return task
        results = herd_parallel.run_all([write(i) for i in range(12)], first=[11, 5])
    finally:
        opened.close()
    assert [r[1] for r in results] == [i * i for i in range(12)]
    assert os.getpid() not in {r[0] for r in results}
    assert sorted((tmp_path / "shared").read_text().split()) == sorted(map(str, range(12)))


def test_first_exception_in_task_order_is_raised(monkeypatch):
    monkeypatch.setattr(herd_parallel, "workers_for", lambda count: 2)

    def fail(error):
        def task():
            raise error
        return task

    tasks = [pid_and(0), fail(KeyError("late")), pid_and(2), fail(ValueError("later"))]
    with pytest.raises(KeyError, match="late"):
        herd_parallel.run_all(tasks)


def test_a_dead_worker_s_task_runs_here(monkeypatch):
    monkeypatch.setattr(herd_parallel, "workers_for", lambda count: 2)
    parent = os.getpid()

    def dies_in_a_worker():
        if os.getpid() != parent:
            os._exit(9)
        return "here"

    results = herd_parallel.run_all([pid_and(0), dies_in_a_worker, pid_and(2)])
    assert results[1] == "here"
    assert [r[1] for r in (results[0], results[2])] == [0, 2]


def test_one_worker_runs_in_the_caller(monkeypatch):
    assert herd_parallel.workers_for(1) == 1
    results = herd_parallel.run_all([pid_and(7)])
    assert results == [(os.getpid(), 7)]
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert herd_parallel.workers_for(10) == 1
    results = herd_parallel.run_all([pid_and(1), pid_and(2)])
    assert results == [(os.getpid(), 1), (os.getpid(), 2)]


def test_beside_runs_in_the_caller_while_the_workers_run(tmp_path, monkeypatch):
    monkeypatch.setattr(herd_parallel, "workers_for", lambda count: 2)
    started = tmp_path / "started"
    release = tmp_path / "release"

    def task(i):
        def run():
            with open(started, "a") as f:
                f.write(f"{i}\n")
            deadline = time.monotonic() + 30
            while not release.exists():  # until the side work has seen it start
                assert time.monotonic() < deadline, "the side work never ran"
                time.sleep(0.01)
            return os.getpid(), i
        return run

    def beside():
        deadline = time.monotonic() + 30
        while not started.exists():
            assert time.monotonic() < deadline, "no task started beside the side work"
            time.sleep(0.01)
        release.write_text("")
        return os.getpid()

    results, here = herd_parallel.run_beside([task(0), task(1)], beside)
    assert here == os.getpid()
    assert [r[1] for r in results] == [0, 1]
    assert os.getpid() not in {r[0] for r in results}

    def fails():
        raise ValueError("beside")

    done = tmp_path / "done"

    def slow():
        time.sleep(0.5)
        done.write_text("")
        return 1

    with pytest.raises(ValueError, match="beside"):
        herd_parallel.run_beside([slow, slow], fails)
    assert done.exists()  # raised once the workers had ended
    monkeypatch.setattr(herd_parallel, "workers_for", lambda count: 1)
    assert herd_parallel.run_beside([pid_and(3)], os.getpid) == ([(os.getpid(), 3)], os.getpid())


def test_workers_die_with_the_report(tmp_path):
    """A report killed mid-way (SIGKILL: no clean-up of its own) leaves no
    worker behind: each gets SIGTERM when its parent dies."""
    pids = tmp_path / "pids"
    code = f"""
import os, sys, time
sys.path.insert(0, {str(REPO_DIR / "analysis")!r})
import herd_parallel
herd_parallel.workers_for = lambda count: 2
def task():
    with open({str(pids)!r}, "a") as f:
        f.write(f"{{os.getpid()}}\\n")
    time.sleep(60)
herd_parallel.run_all([task, task])
"""
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 30
        while len(pids.read_text().split() if pids.exists() else []) < 2:
            assert time.monotonic() < deadline and proc.poll() is None, "no workers started"
            time.sleep(0.05)
        workers = [int(p) for p in pids.read_text().split()]
        proc.kill()
        proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        while any(alive(w) for w in workers):
            assert time.monotonic() < deadline, f"workers left: {workers}"
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait()


def alive(pid):
    """A process that runs (not gone, not a zombie awaiting its reaper)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
