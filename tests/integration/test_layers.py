"""The layering check (.ci/layers-check) passes on src/ and fails, naming
the file, on each rule broken in a copy of src/: an include cycle between
two modules, a workload that reaches mpi.h through a header, the summary
including HDF5, a backend calling MPI, lib/ or parse/ reaching up a layer,
a layer including the runner, a name used twice, a folder including a
header of a folder above it (job/ a backend's), two folders that include
each other, and a function defined in a folder above the caller's
although declared in the caller's own (core's progress counter through a
header in workload/), and two files that call each other around a loop.

Run: /usr/bin/python3 -m pytest -q tests/integration/test_layers.py
"""
import shutil
import subprocess
import sys

import pytest

from conftest import REPO_DIR

CHECK = REPO_DIR / ".ci" / "layers-check"


def check(src):
    return subprocess.run([sys.executable, str(CHECK), str(src)], capture_output=True, text=True,
                          timeout=60)


def test_src_keeps_the_layers():
    done = check(REPO_DIR / "src")
    assert done.returncode == 0, done.stderr


def append(path, text):
    path.write_text(path.read_text() + text)


@pytest.mark.parametrize("plant, said", [
    (lambda s: append(s / "job/jobtext.h", '\n#include "job.h"\n'),
     "include cycle between modules: job <-> jobtext"),
    (lambda s: append(s / "workload/progress_count.h", "\n#include <mpi.h>\n"),
     "src/workload/workload_idle.c: includes workload.h -> progress_count.h -> mpi.h"),
    (lambda s: append(s / "results/summary.c", '\n#include "h5util.h"\n'),
     "src/results/summary.c: includes h5util.h"),
    (lambda s: append(s / "backend/backend_posix.c", "\nstatic void f(void) { MPI_Barrier(0); }\n"),
     "src/backend/backend_posix.c: calls MPI_Barrier"),
    (lambda s: append(s / "lib/hist.c", '\n#include "job.h"\n'),
     "src/lib/hist.c: includes job/job.h: lib/ may include only lib/"),
    (lambda s: append(s / "parse/procfs.c", '\n#include "monitor.h"\n'),
     "src/parse/procfs.c: includes monitor/monitor.h: parse/ may include only lib/, parse/"),
    (lambda s: append(s / "workload/workload_io.c", '\n#include "runner_stop.h"\n'),
     "src/workload/workload_io.c: includes core/runner_stop.h: no layer uses the runner"),
    (lambda s: shutil.copy(s / "lib/hist.h", s / "job/hist.h"),
     "names are unique"),
    (lambda s: append(s / "job/job_keys.c", '\n#include "backend.h"\n'),
     "src/job/job_keys.c: includes backend/backend.h: job/ may not use backend/"),
    (lambda s: (append(s / "job/units.h", '\n#include "pattern.h"\n'),
                append(s / "workload/pattern.h", '\n#include "job.h"\n')),
     "include cycle between folders: backend/ <-> job/ <-> workload/"),
    (lambda s: (append(s / "workload/progress_count.h",
                       "\nvoid progress_tick(struct progress_count *c);\n"),
                append(s / "workload/workload_io.c",
                       "\nstatic void tick(struct progress_count *c) { progress_tick(c); }\n"),
                append(s / "core/progress.c",
                       "\nvoid progress_tick(struct progress_count *c)\n{\n    (void)c;\n}\n")),
     "src/workload/workload_io.c: uses progress_tick, defined in src/core/progress.c: "
     "workload/ may not use core/"),
    (lambda s: append(s / "backend/libnfs/libnfs_ctx.c",
                      "\nstatic void again(struct libnfs_ctx *c) { libnfs_drop(c); }\n"),
     "call cycle between files: src/backend/libnfs/libnfs_call.c <-> "
     "src/backend/libnfs/libnfs_ctx.c <-> src/backend/libnfs/libnfs_dirs.c <-> "
     "src/backend/libnfs/libnfs_mount.c <-> src/backend/libnfs/libnfs_rpc.c"),
])
def test_each_broken_rule_is_named(tmp_path, plant, said):
    src = tmp_path / "src"
    shutil.copytree(REPO_DIR / "src", src)
    plant(src)
    done = check(src)
    assert done.returncode == 1, done.stderr
    assert said in done.stderr, done.stderr


SUBJECTS = REPO_DIR / ".ci" / "subjects-check"


def test_commit_subjects_are_checked(tmp_path):
    """.ci/subjects-check passes on this repository's history after its
    cutoff and, in a repository of its own, names each commit whose subject
    is over 72 characters or has no blank line before its body."""
    done = subprocess.run([sys.executable, str(SUBJECTS)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    repo = tmp_path / "repo"
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@localhost", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@localhost", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}

    def git(*args):
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                              env=env, check=True).stdout.strip()
    repo.mkdir()
    git("init", "-q")
    git("commit", "-q", "--allow-empty", "-m", "base")
    base = git("rev-parse", "--short", "HEAD")
    git("commit", "-q", "--allow-empty", "-m", "A subject that fits\n\nAnd the why.")
    ok = subprocess.run([sys.executable, str(SUBJECTS), str(repo), base], capture_output=True,
                        text=True, timeout=60)
    assert ok.returncode == 0 and "1 commits since" in ok.stdout, ok.stdout
    git("commit", "-q", "--allow-empty", "-m", "x" * 73)
    long_one = git("rev-parse", "--short", "HEAD")
    git("commit", "-q", "--allow-empty", "--cleanup=verbatim", "-m", "Subject\nbody at once")
    glued = git("rev-parse", "--short", "HEAD")
    bad = subprocess.run([sys.executable, str(SUBJECTS), str(repo), base], capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 1, bad.stdout
    lines = bad.stdout.splitlines()
    assert len(lines) == 2, lines
    assert any(l.startswith(long_one) and "73 characters" in l for l in lines), lines
    assert any(l.startswith(glued) and "no blank line" in l for l in lines), lines
