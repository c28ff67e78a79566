"""A backend added by one file: the skeleton tests/skeleton/backend_mem.c
(each rank's files in its own memory) built into a herd of its own with
`cmake -DHERD_EXTRA_BACKEND=...` (docs/extending.md), with nothing else
changed. Through the ordinary runner it writes, reads back with verify,
digests, and catches a wrong seed; herd check refuses a lock phase for it
(the skeleton has no lock op), with one line.

Run: /usr/bin/python3 -m pytest -q tests/integration/test_skeleton.py
"""
import os
import subprocess

import pytest

from conftest import REPO_DIR, describe, load_results, mpirun_args, run_cmd, write_job

SKELETON = REPO_DIR / "tests" / "skeleton" / "backend_mem.c"
MIB = 1 << 20


@pytest.fixture(scope="module")
def mem_herd(tmp_path_factory):
    build = tmp_path_factory.mktemp("skeleton-build")
    for args in (["cmake", "-S", str(REPO_DIR), "-B", str(build), "-DHERD_TESTS=OFF",
                  "-DHERD_WERROR=ON", f"-DHERD_EXTRA_BACKEND={SKELETON}"],
                 ["cmake", "--build", str(build), "-j", str(os.cpu_count() or 2),
                  "--target", "herd"]):
        done = subprocess.run(args, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return build / "herd"


GLOBAL = {"target": "mem:", "backend": "mem", "file_size": "8M", "block_size": "1M"}


def test_skeleton_backend_runs_a_job(mem_herd, tmp_path):
    job = write_job(tmp_path / "mem.ini", GLOBAL,
                    [("write", {"kind": "write"}),
                     ("read", {"kind": "read", "verify": "yes"}),
                     ("md5", {"kind": "md5"}),
                     ("wrong", {"kind": "read", "verify": "yes", "seed": 2})])
    out = tmp_path / "mem.h5"
    done = run_cmd(mpirun_args(mem_herd, 2, "run", job, "-o", out))
    # the wrong seed's verify failures make the run exit 3, as on any backend
    assert done.returncode == 3, describe(done)
    res = load_results(out)
    assert res.attrs["status"] == "complete"
    for name in ("write", "read", "md5"):
        ph = res.phases[name]
        assert ph.attrs["status"] == "ok", name
        assert int(ph.ranks["bytes"].sum()) == 2 * 8 * MIB, name
        assert int(ph.ranks["errors"].sum()) == 0, name
        assert int(ph.ranks["verify_failures"].sum()) == 0, name
    wrong = res.phases["wrong"]
    assert int(wrong.ranks["verify_failures"].sum()) > 0, "the data was never really stored"


def test_skeleton_without_locks_is_refused_at_check(mem_herd, tmp_path):
    job = write_job(tmp_path / "lock.ini", GLOBAL, [("lk", {"kind": "lock", "count": 10})])
    done = run_cmd([str(mem_herd), "check", str(job), "-n", "2"])
    assert done.returncode == 2, describe(done)
    lines = [l for l in done.stderr.splitlines() if l.startswith("herd:")]
    assert len(lines) == 1 and "lock is not supported by the mem backend" in lines[0], done.stderr
