"""A backend added by one file: the skeleton tests/skeleton/backend_mem.c
(each rank's files in its own memory) built into a herd of its own with
`cmake -DHERD_EXTRA_BACKEND=...` (docs/extending.md), with nothing else
changed. Through the ordinary runner it writes, reads back with verify,
digests, and catches a wrong seed; herd check refuses a lock phase for it
(the skeleton has no lock op), with one line. Its own key, mem_file_max,
is listed by `herd keys`, bounded, refused on another backend and applied
per phase (a write beyond it fails with EFBIG, counted, the run goes on).

A phase kind added by one file likewise: the skeleton
tests/skeleton/workload_getattr.c (every rank stats one shared file,
`count` times) built into the same herd with `cmake -DHERD_EXTRA_KIND=...`.
herd keys lists it as a kind; the keys it names (count) apply to it and its
rule (sharing = shared) refuses a phase in one line; a run through the
ordinary runner makes exactly count x ranks stat calls, stores them as the
phase's main op, and the analysis reads the phase like any other. A missing
file is one ENOENT per call, counted, exit 3. Its own key, getattr_burst
(a row in its own file, over its own options struct), is listed by `herd
keys`, bounded, refused in a phase of another kind, written into every
phase's attributes and applied: count x burst x ranks stat calls.

Run: /usr/bin/python3 -m pytest -q tests/integration/test_skeleton.py
"""
import os
import subprocess

import pytest

from conftest import REPO_DIR, describe, load_results, mpirun_args, run_cmd, write_job

SKELETON = REPO_DIR / "tests" / "skeleton" / "backend_mem.c"
SKELETON_KIND = REPO_DIR / "tests" / "skeleton" / "workload_getattr.c"
MIB = 1 << 20


@pytest.fixture(scope="module")
def mem_herd(tmp_path_factory):
    build = tmp_path_factory.mktemp("skeleton-build")
    for args in (["cmake", "-S", str(REPO_DIR), "-B", str(build), "-DHERD_TESTS=OFF",
                  "-DHERD_WERROR=ON", f"-DHERD_EXTRA_BACKEND={SKELETON}",
                  f"-DHERD_EXTRA_KIND={SKELETON_KIND}"],
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


def test_skeleton_declares_its_own_key(mem_herd, tmp_path):
    keys = run_cmd([str(mem_herd), "keys"])
    assert keys.returncode == 0, describe(keys)
    assert any(l.split()[:2] == ["mem_file_max", "1G"] for l in keys.stdout.splitlines())
    job = write_job(tmp_path / "small.ini", GLOBAL,
                    [("fits", {"kind": "write"}),
                     ("over", {"kind": "write", "mem_file_max": "4M"})])
    out = tmp_path / "small.h5"
    done = run_cmd(mpirun_args(mem_herd, 1, "run", job, "-o", out))
    assert done.returncode == 3, describe(done)  # 3: a phase had errors
    res = load_results(out)
    assert res.phases["fits"].attrs["mem_file_max"] == 1 << 30
    assert int(res.phases["fits"].ranks["errors"].sum()) == 0
    over = res.phases["over"]
    assert over.attrs["mem_file_max"] == 4 * MIB
    assert int(over.ranks["bytes"].sum()) == 4 * MIB
    assert {r["errno_name"] for r in over.error_rows()} == {"EFBIG"}, over.error_rows()
    for text, why in (({"mem_file_max": "1K"}, "key 'mem_file_max': must be 4K to 16G"),
                      ({"backend": "posix", "target": str(tmp_path), "mem_file_max": "8M"},
                       "key 'mem_file_max': applies to backend = mem only, not to posix")):
        bad = write_job(tmp_path / "bad.ini", dict(GLOBAL, **text), [("w", {"kind": "write"})])
        done = run_cmd([str(mem_herd), "check", str(bad)])
        lines = [l for l in done.stderr.splitlines() if l.startswith("herd:")]
        assert done.returncode == 2 and len(lines) == 1 and why in lines[0], describe(done)


def one_error_line(done):
    lines = [l for l in done.stderr.splitlines() if l.startswith("herd:")]
    assert done.returncode == 2 and len(lines) == 1, describe(done)
    return lines[0]


def test_skeleton_kind_is_a_kind(mem_herd, tmp_path):
    keys = run_cmd([str(mem_herd), "keys"])
    assert keys.returncode == 0, describe(keys)
    kind = next(l for l in keys.stdout.splitlines() if l.startswith("kind "))
    assert "| getattr (stat one shared file, all ranks at once)" in kind, kind
    burst = next(l for l in keys.stdout.splitlines() if l.startswith("getattr_burst "))
    assert burst.split()[1] == "1" and "stats in a row per attempt" in burst, burst
    posix = {"target": str(tmp_path), "file_size": "64K", "block_size": "64K"}
    for phase, why in (({"kind": "getattr", "count": 5},
                        "key 'sharing': getattr asks for the fileset's shared file"),
                       ({"kind": "write", "count": 5},
                        "key 'count': applies to lock, storm, mix and getattr phases only"),
                       ({"kind": "getattr", "sharing": "shared", "verify": "yes"},
                        "key 'verify': applies to read and mix phases only, not to getattr"),
                       ({"kind": "write", "getattr_burst": 2},
                        "key 'getattr_burst': applies to getattr phases only, not to write"),
                       ({"kind": "getattr", "sharing": "shared", "getattr_burst": 0},
                        "key 'getattr_burst': must be 1 to 1000")):
        job = write_job(tmp_path / "bad.ini", posix, [("g", phase)])
        line = one_error_line(run_cmd([str(mem_herd), "check", str(job)]))
        assert why in line, line
    job = write_job(tmp_path / "nope.ini", posix, [("g", {"kind": "nope"})])
    line = one_error_line(run_cmd([str(mem_herd), "check", str(job)]))
    assert line.endswith("'nope' is not one of write | read | md5 | idle | lock | storm | meta "
                         "| mix | getattr"), line


def test_skeleton_kind_runs(mem_herd, tmp_path):
    import sys
    sys.path.insert(0, str(REPO_DIR / "analysis"))
    import herd_results
    target = tmp_path / "t"
    target.mkdir()
    job = write_job(tmp_path / "g.ini",
                    {"target": str(target), "file_size": "64K", "block_size": "64K",
                     "sharing": "shared"},
                    [("lost", {"kind": "getattr", "count": 7, "fileset": "none"}),
                     ("w", {"kind": "write"}),
                     ("g", {"kind": "getattr", "count": 50}),
                     ("b", {"kind": "getattr", "count": 20, "getattr_burst": 3})])
    out = tmp_path / "g.h5"
    done = run_cmd(mpirun_args(mem_herd, 2, "run", job, "-o", out))
    assert done.returncode == 3, describe(done)  # 3: the lost file's ENOENTs
    res = load_results(out)
    g = res.phases["g"]
    assert g.attrs["kind"] == "getattr" and g.attrs["status"] == "ok"
    assert g.attrs["summary_main_op"] == "stat" and g.attrs["count"] == 50
    assert int(g.ranks["ops"].sum()) == 2 * 50 and int(g.ranks["errors"].sum()) == 0
    assert int(g.latency["stat"]["counts"].sum()) == 2 * 50
    assert g.attrs["getattr_burst"] == 1 and res.phases["w"].attrs["getattr_burst"] == 1
    b = res.phases["b"]
    assert b.attrs["getattr_burst"] == 3 and b.attrs["count"] == 20
    assert int(b.ranks["ops"].sum()) == 2 * 20 * 3 and int(b.ranks["errors"].sum()) == 0
    assert int(b.latency["stat"]["counts"].sum()) == 2 * 20 * 3
    lost = res.phases["lost"]
    errors = lost.error_rows()  # a row per rank, op and errno
    assert {r["errno_name"] for r in errors} == {"ENOENT"}, errors
    assert sum(int(r["count"]) for r in errors) == 2 * 7 == int(lost.ranks["errors"].sum())
    run = herd_results.Run(str(out))
    row = run.phases.set_index("phase").loc["g"]
    assert row["kind"] == "getattr" and row["ops"] == 100 and row["ops_per_s"] > 0
