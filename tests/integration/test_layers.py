"""The layering check (.ci/layers-check) passes on src/ and fails, naming
the file, on each rule broken in a copy of src/: an include cycle between
two modules, a workload that reaches mpi.h through a header, the summary
including HDF5, a backend calling MPI.

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
    (lambda s: append(s / "jobtext.h", '\n#include "job.h"\n'),
     "include cycle between modules: job <-> jobtext"),
    (lambda s: append(s / "progress_count.h", "\n#include <mpi.h>\n"),
     "src/workload_idle.c: includes workload.h -> progress_count.h -> mpi.h"),
    (lambda s: append(s / "summary.c", '\n#include "h5util.h"\n'),
     "src/summary.c: includes h5util.h"),
    (lambda s: append(s / "backend_posix.c", "\nstatic void f(void) { MPI_Barrier(0); }\n"),
     "src/backend_posix.c: calls MPI_Barrier"),
])
def test_each_broken_rule_is_named(tmp_path, plant, said):
    src = tmp_path / "src"
    shutil.copytree(REPO_DIR / "src", src)
    plant(src)
    done = check(src)
    assert done.returncode == 1, done.stderr
    assert said in done.stderr, done.stderr
