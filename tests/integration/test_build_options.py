"""The optional parts of the build really go with HERD_WITH_<PART>=OFF
(what the Spack recipe's ~variants set), even on a machine that has their
libraries: CMake does not look for them, says so, and defines no target or
source of theirs; a value other than AUTO, ON or OFF is refused. Configure
only (a few seconds); the full build with every part ON is CI's own.

Run: /usr/bin/python3 -m pytest -q tests/integration/test_build_options.py
"""
import shutil
import subprocess

import pytest

from conftest import REPO_DIR, describe

PARTS = {"LIBNFS": "libnfs", "CURL": "libcurl", "SMBCLIENT": "libsmbclient",
         "NFQUEUE": "libnetfilter_queue"}

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is missing")


def configure(build, *defs):
    return subprocess.run(["cmake", "-S", str(REPO_DIR), "-B", str(build), "-DHERD_TESTS=OFF",
                           *defs], capture_output=True, text=True, timeout=300)


def test_every_part_off(tmp_path):
    build = tmp_path / "b"
    proc = configure(build, *[f"-DHERD_WITH_{p}=OFF" for p in PARTS])
    assert proc.returncode == 0, describe(proc)
    for part, lib in PARTS.items():
        assert f"-- {lib} left out (HERD_WITH_{part}=OFF)" in proc.stdout, describe(proc)
    cache = (build / "CMakeCache.txt").read_text()
    for part in PARTS:
        assert f"HERD_WITH_{part}:STRING=OFF" in cache
    targets = subprocess.run(["cmake", "--build", str(build), "--target", "help"],
                             capture_output=True, text=True, timeout=120).stdout
    assert "herd-linkdelay" not in targets and "herd" in targets, targets
    sources = "\n".join(p.read_text(errors="replace")
                        for p in build.rglob("*.make") if "herdcore" in str(p))
    for name in ("backend_libnfs.c", "backend_smb.c", "HERD_HAVE_CURL", "curl", "libnfs.so",
                 "smbclient"):
        assert name not in sources, name


def test_bad_setting_is_refused(tmp_path):
    proc = configure(tmp_path / "b", "-DHERD_WITH_LIBNFS=maybe")
    assert proc.returncode != 0
    assert "HERD_WITH_LIBNFS=maybe: expected AUTO, ON or OFF" in proc.stderr, describe(proc)
