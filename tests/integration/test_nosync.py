"""cluster-configs/local/nosync.c on its own: the seccomp wrapper that
nfs-server.sh --async runs ganesha under. It is compiled here with cc the way
nfs-server.sh compiles it (plus -Werror), then run for real: each sync-family
call on a bad file descriptor or address fails with EBADF/EINVAL without it
and returns 0 under it (so the kernel never saw the call), other calls still
fail as before, children inherit the filter, and exit statuses pass through.

Needs a C compiler and a kernel that allows seccomp filters (no root);
skips with a message otherwise.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_DIR = Path(__file__).resolve().parent.parent.parent
SOURCE = REPO_DIR / "cluster-configs" / "local" / "nosync.c"

# Each line: a call that must fail on its bad argument unless filtered.
# ctypes.CDLL(None) functions return -1 and set errno on failure.
PROBE = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
def call(name, *args):
    r = getattr(libc, name)(*args)
    return 0 if r == 0 else ctypes.get_errno()
calls = {
    "fsync": lambda: call("fsync", 999),
    "fdatasync": lambda: call("fdatasync", 999),
    "syncfs": lambda: call("syncfs", 999),
    "sync_file_range": lambda: call("sync_file_range", 999, ctypes.c_longlong(0),
                                    ctypes.c_longlong(0), 0),
    # an address that is not page aligned: EINVAL
    "msync": lambda: call("msync", ctypes.c_void_p(1), ctypes.c_size_t(4096), 4),
    # not in the filter: must still fail
    "close": lambda: call("close", 999),
    "fchmod": lambda: call("fchmod", 999, 0o644),
}
for name in sys.argv[1:]:
    print(name, calls[name]())
"""

SYNC_CALLS = ["fsync", "fdatasync", "syncfs", "sync_file_range", "msync"]
OTHER_CALLS = ["close", "fchmod"]


def probe(prefix, names):
    """{call name: 0 or errno} from PROBE run under prefix (a list)."""
    r = subprocess.run(prefix + [sys.executable, "-c", PROBE] + names,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return {k: int(v) for k, v in (line.split() for line in r.stdout.splitlines())}


@pytest.fixture(scope="module")
def nosync(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler (cc): nosync.c cannot be built here")
    out = tmp_path_factory.mktemp("nosync") / "nosync"
    r = subprocess.run([cc, "-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(out),
                        str(SOURCE)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"nosync.c does not compile cleanly:\n{r.stderr}"
    r = subprocess.run([str(out), "true"], capture_output=True, text=True, timeout=30)
    if r.returncode == 125:
        pytest.skip(f"this kernel refuses seccomp filters: {r.stderr.strip()}")
    assert r.returncode == 0, r.stderr
    return str(out)


def test_sync_calls_fail_without_the_filter():
    """The probe itself: every call fails on its bad argument when unfiltered
    (otherwise the next test would pass by construction)."""
    got = probe([], SYNC_CALLS + OTHER_CALLS)
    for name in SYNC_CALLS + OTHER_CALLS:
        assert got[name] != 0, f"{name} on a bad argument succeeded unfiltered"


def test_sync_calls_return_zero_under_nosync(nosync):
    got = probe([nosync], SYNC_CALLS + OTHER_CALLS)
    for name in SYNC_CALLS:
        assert got[name] == 0, f"{name} reached the kernel under nosync (errno {got[name]})"
    for name in OTHER_CALLS:
        assert got[name] != 0, f"{name} is not a sync call but was filtered"


def test_children_inherit_the_filter(nosync):
    got = probe([nosync, "/bin/sh", "-c", 'exec "$0" "$@"'], ["fsync", "close"])
    assert got == {"fsync": 0, "close": got["close"]} and got["close"] != 0


def test_exit_status_passes_through(nosync):
    assert subprocess.run([nosync, "/bin/sh", "-c", "exit 7"], timeout=30).returncode == 7
    r = subprocess.run([nosync, "/nonexistent/program"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 127 and "/nonexistent/program" in r.stderr
    r = subprocess.run([nosync], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "usage" in r.stderr
