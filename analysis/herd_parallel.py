"""herd_parallel — the analysis tools' independent tasks (a figure, a CSV)
side by side in forked processes: herd-report's figures take most of its
time, each on one CPU.

    run_all(tasks) -> [result, ...]   each task a callable without arguments
    run_beside(tasks, beside) -> ([result, ...], beside())
                                      the same, and beside run here meanwhile

The workers are forked from this process (concurrent.futures'
ProcessPoolExecutor with the fork start method), so they share what it has
read (an open herd_results.Run, an herd_output.OutputDir whose directory
exists) and write through the same directory descriptor; each task's
result comes back pickled (True, a path); a worker dies with the process
that forked it (a report killed mid-way leaves none). Standard library only.
"""
import concurrent.futures
import ctypes
import gc
import multiprocessing
import os
import signal
import sys
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Sequence

MAX_WORKERS = 4  # processes at most, and never more than the CPUs this one may use
PR_SET_PDEATHSIG = 1  # linux/prctl.h
_TASKS: list[
    Callable[[], Any]
] = []  # the tasks of the run_all in progress, which forked workers inherit


def _die_with(parent: int) -> None:
    """A worker's start: it gets SIGTERM when the process that forked it
    dies (Linux's PR_SET_PDEATHSIG), and leaves at once if that happened
    already, so that a report killed mid-way leaves no worker behind."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM))
    except (OSError, AttributeError):  # not Linux: the pool's own shutdown only
        return
    if os.getppid() != parent:
        os._exit(1)


def _run(index: int) -> Any:
    return _TASKS[index]()


def workers_for(count: int) -> int:
    """Workers for count tasks: the CPUs this process may use, at most
    MAX_WORKERS and count."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(MAX_WORKERS, cpus or 1, count))


def run_all(tasks: Sequence[Callable[[], Any]], first: Sequence[int] = ()) -> list[Any]:
    """Each task run once; their results in task order. With one worker
    (workers_for) or without fork, here, in order. Otherwise in forked
    workers, which take the tasks at positions `first` (the longest ones,
    so that the short ones fill in beside them) before the others in
    order: when all have ended, the first exception of a task, in task
    order, is raised here; a task whose worker died is run again here."""
    return run_beside(tasks, lambda: None, first)[0]


def run_beside(
    tasks: Sequence[Callable[[], Any]], beside: Callable[[], Any], first: Sequence[int] = ()
) -> tuple[list[Any], Any]:
    """run_all(tasks, first), and beside() run here while the workers run
    them (after them when they run here): work of this process that the
    tasks do not need, such as tables, which would otherwise come before
    them or after. Returns the tasks' results and beside's; an exception
    of beside is raised once the workers have ended."""
    global _TASKS
    tasks = list(tasks)
    workers = workers_for(len(tasks))
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return [task() for task in tasks], beside()
    sys.stdout.flush()  # nothing buffered here is written twice
    sys.stderr.flush()
    # The objects made so far out of the collector's sight: a worker's
    # collections would otherwise touch (and so copy) every page of what
    # it shares with this process, a third of a figure's time.
    gc.freeze()
    _TASKS = tasks
    try:
        context = multiprocessing.get_context("fork")
        with concurrent.futures.ProcessPoolExecutor(
            workers, mp_context=context, initializer=_die_with, initargs=(os.getpid(),)
        ) as pool:
            order = list(
                dict.fromkeys([i for i in first if 0 <= i < len(tasks)] + list(range(len(tasks))))
            )
            submitted = {i: pool.submit(_run, i) for i in order}
            futures = [submitted[i] for i in range(len(tasks))]
            here = beside()
            concurrent.futures.wait(futures)
    finally:
        _TASKS = []
        gc.unfreeze()
    results = []
    for task, future in zip(tasks, futures):
        error = future.exception()
        if isinstance(error, BrokenProcessPool):
            results.append(task())
        elif error is not None:
            raise error
        else:
            results.append(future.result())
    return results, here
