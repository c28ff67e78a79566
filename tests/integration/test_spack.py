"""The Spack recipe in a real Spack, offline (opt-in: HERD_SPACK).

cluster-configs/spack/herd/package.py is copied into a repository made by
`spack repo create`, its `git` pointed at this checkout (as docs/install.md
tells a site to point it at its copy), and Spack concretizes and installs
herd against externals for everything it needs (the Debian packages this
machine has: MPI, HDF5, zlib, OpenSSL, libinih, libnfs, curl,
libnetfilter_queue, CMake, the compiler, Python and its modules), in a
network namespace of its own: nothing is fetched from anywhere.

1. herd@0.1.0, the pinned release (tag v0.1.0, by commit), default
   variants: herd links libnfs and libcurl; the installed herd runs a job
   and the installed herd-report reads its results with the Python the
   environment of `spack load herd` gives.
2. herd@0.1.0 ~libnfs ~curl +nfqueue ~tools: the parts are really off
   (herd needs neither library, refuses backend = libnfs), herd-linkdelay
   is installed.

Needs root (the network namespace), a Spack (HERD_SPACK: its bin/spack)
whose Python imports clingo (PYTHONPATH, or Spack's own bootstrap store),
and for Spack 1.x the builtin package repository (HERD_SPACK_BUILTIN: the
spack-packages checkout's repos/spack_repo/builtin) and a source mirror
holding compiler-wrapper (HERD_SPACK_MIRROR). Skips with a message
otherwise. docs/install.md says how to set these up. Takes 5-8 minutes.

Run: HERD_SPACK=... ctest -R spack, or
HERD_SPACK=... /usr/bin/python3 -m pytest -q -rs -s tests/integration/test_spack.py
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_DIR, describe, herd_cmd

RECIPE = REPO_DIR / "cluster-configs" / "spack" / "herd" / "package.py"
SPACK = os.environ.get("HERD_SPACK", "")
BUILTIN = os.environ.get("HERD_SPACK_BUILTIN", "")
MIRROR = os.environ.get("HERD_SPACK_MIRROR", "")

pytestmark = [
    pytest.mark.skipif(not SPACK, reason="the Spack check is opt-in: HERD_SPACK=/path/to/spack/bin"
                       "/spack (docs/install.md, 'Checking the recipe')"),
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: Spack runs in a network namespace "
                       "of its own, so that nothing can be fetched"),
]

# The namespace has lo and a veth pair of its own: Open MPI 4.1's mpicc
# prints "opal_ifinit: unable to find network interfaces" with lo alone,
# and CMake's FindMPI reads that into the flags it parses.
OFFLINE = ("ip link set lo up && ip link add herd0 type veth peer name herd1 && "
           "ip link set herd0 up && ip link set herd1 up && "
           "ip addr add 10.99.0.1/30 dev herd0 && exec \"$@\"")


def out(*args):
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout.strip()


def py_version(module):
    return out("/usr/bin/python3", "-c", f"import {module}; print({module}.__version__)")


def externals():
    """packages.yaml's externals: this machine's Debian packages, by the
    version each reports."""
    pc = lambda name: out("pkg-config", "--modversion", name)  # noqa: E731
    make = out("make", "--version").split()[2]
    cmake = out("cmake", "--version").split()[2]
    python = out("/usr/bin/python3", "-c", "import platform; print(platform.python_version())")
    gcc = out("gcc", "-dumpfullversion")
    lines = ["packages:", "  all:", "    buildable: false",
             "  gcc:", "    externals:", f"    - spec: gcc@{gcc} languages:=c,c++",
             "      prefix: /usr", "      extra_attributes:", "        compilers:",
             "          c: /usr/bin/gcc", "          cxx: /usr/bin/g++"]
    for name, version, variants in [
            ("gmake", make, ""), ("cmake", cmake, ""),
            ("pkgconf", out("pkg-config", "--version"), ""),
            ("openmpi", pc("ompi"), ""), ("hdf5", pc("hdf5-openmpi"), "+mpi~cxx~fortran"),
            ("zlib", pc("zlib"), ""), ("openssl", pc("openssl"), ""), ("libinih", pc("inih"), ""),
            ("libnfs", pc("libnfs"), ""), ("curl", pc("libcurl"), ""),
            ("libnetfilter-queue", pc("libnetfilter_queue"), ""), ("python", python, ""),
            ("py-numpy", py_version("numpy"), ""), ("py-h5py", py_version("h5py"), ""),
            ("py-pandas", py_version("pandas"), ""),
            ("py-matplotlib", py_version("matplotlib"), "")]:
        version = re.sub(r"[+~].*", "", version)
        lines += [f"  {name}:", f"    externals: [{{spec: {name}@{version}{variants}, prefix: /usr}}]"]
    return "\n".join(lines) + "\n"


class Spack:
    """One Spack with its own configuration, caches and install tree in
    tmp, run offline."""

    def __init__(self, tmp):
        self.tmp = tmp
        user, system = tmp / "user", tmp / "system"
        user.mkdir()
        system.mkdir()
        self.env = {**os.environ, "SPACK_USER_CONFIG_PATH": str(user),
                    "SPACK_USER_CACHE_PATH": str(tmp / "cache"),
                    "SPACK_SYSTEM_CONFIG_PATH": str(system), "SPACK_PYTHON": sys.executable}
        (user / "config.yaml").write_text(
            f"config:\n  install_tree:\n    root: {tmp}/opt\n  build_stage: [{tmp}/stage]\n"
            f"  source_cache: {tmp}/cache/source\n  misc_cache: {tmp}/cache/misc\n"
            f"  test_stage: {tmp}/cache/test\n  build_jobs: 2\n")
        (user / "bootstrap.yaml").write_text("bootstrap:\n  enable: false\n")
        (user / "packages.yaml").write_text(externals())
        (user / "mirrors.yaml").write_text(f"mirrors::\n  local: file://{MIRROR}\n" if MIRROR
                                           else "mirrors:: {}\n")
        self.user = user

    def __call__(self, *args, timeout=900):
        proc = subprocess.run(["unshare", "--net", "sh", "-c", OFFLINE, "sh", SPACK, *args],
                              capture_output=True, text=True, timeout=timeout, env=self.env)
        assert proc.returncode == 0, describe(proc)
        return proc.stdout

    def add_repo(self):
        """spack repo create, the recipe in it with git = this checkout;
        the repositories: it and the builtin one."""
        said = self("repo", "create", str(self.tmp / "repo"), "herd")
        root = Path(re.search(r"spack repo add (\S+)", said).group(1))
        (root / "packages" / "herd").mkdir(parents=True)
        text = RECIPE.read_text()
        assert 'git = "https://example.invalid/herd.git"' in text
        text = text.replace("https://example.invalid/herd.git", f"file://{REPO_DIR}")
        (root / "packages" / "herd" / "package.py").write_text(text)
        repos = f"repos::\n  herd: {root}\n" + (f"  builtin: {BUILTIN}\n" if BUILTIN else "")
        if not BUILTIN:  # Spack 0.x: builtin is inside Spack itself
            repos = f"repos::\n  - {root}\n  - $spack/var/spack/repos/builtin\n"
        (self.user / "repos.yaml").write_text(repos)

    def prefix(self, spec):
        return Path(self("location", "-i", spec).strip())


def needed(binary):
    """The shared libraries binary names itself (not what they pull in)."""
    return set(re.findall(r"\(NEEDED\).*\[(.+?)\]", out("readelf", "-d", str(binary))))


@pytest.fixture(scope="module")
def spack(tmp_path_factory):
    s = Spack(tmp_path_factory.mktemp("spack"))
    s.add_repo()
    if "compiler-wrapper" in s("list", "compiler-wrapper"):
        # Spack 1.x builds its compiler wrapper from a tarball: offline it
        # comes from HERD_SPACK_MIRROR, whose copy may be made from the
        # wrapper's git tag rather than be the release's own file.
        if not MIRROR:
            pytest.skip("Spack 1.x needs compiler-wrapper from a source mirror: HERD_SPACK_MIRROR")
        s("install", "--no-checksum", "compiler-wrapper")
    return s


def release_tagged():
    commit = re.search(r'version\("0\.1\.0", tag="v0\.1\.0", commit="([0-9a-f]{40})"',
                       RECIPE.read_text()).group(1)
    proc = subprocess.run(["git", "-C", str(REPO_DIR), "rev-parse", "v0.1.0^{commit}"],
                          capture_output=True, text=True)
    return proc.returncode == 0 and proc.stdout.strip() == commit


def test_default_variants_build_and_run(spack, tmp_path):
    if not release_tagged():
        pytest.skip("this clone has no tag v0.1.0 at the recipe's commit (git fetch --tags)")
    spec = "herd@0.1.0+libnfs+curl+tools"
    concrete = spack("spec", "-I", spec)
    assert re.search(r"\[e\]\s+\^openmpi@", concrete) and re.search(r"\[e\]\s+\^hdf5@", concrete), \
        concrete
    spack("install", spec)
    prefix = spack.prefix(spec)
    herd = prefix / "bin" / "herd"
    assert {"libnfs.so.13", "libcurl.so.4"} <= needed(herd), needed(herd)
    assert out(str(herd), "--version").startswith("herd 0.1.0")
    env_text = spack("load", "--sh", spec)
    assert f"HERD_ROOT={prefix}" in env_text.replace("'", "").replace('"', ""), env_text
    target = tmp_path / "t"
    target.mkdir()
    result = tmp_path / "r.h5"
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    run = subprocess.run([str(herd), "run", "--phase", "write,read", "--set", f"target={target}",
                          "--set", "file_size=1M", "-o", str(result)],
                         capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, describe(run)
    report = subprocess.run([str(prefix / "bin" / "herd-report"), str(result), "-o",
                             str(tmp_path / "report")], capture_output=True, text=True,
                            timeout=300, env={**env, "PATH": f"{prefix}/bin:/usr/bin:/bin"})
    assert report.returncode == 0, describe(report)
    assert (tmp_path / "report" / "index.html").exists()


def test_variants_turn_their_part_off(spack, tmp_path):
    spec = ("herd@0.1.0" if release_tagged() else "herd@main") + "~libnfs~curl+nfqueue~tools"
    spack("install", spec)
    prefix = spack.prefix(spec)
    libs = needed(prefix / "bin" / "herd")
    assert not {"libnfs.so.13", "libcurl.so.4"} & libs, libs
    assert (prefix / "bin" / "herd-linkdelay").exists()
    job = tmp_path / "j.ini"
    job.write_text("[global]\ntarget = nfs://127.0.0.1/export\nbackend = libnfs\n[w]\n"
                   "kind = write\n")
    proc = herd_cmd(str(prefix / "bin" / "herd"), "check", job)
    assert proc.returncode == 2 and "herd was built without the libnfs backend: build it with " \
        "libnfs: HERD_WITH_LIBNFS=ON, Spack's +libnfs" in proc.stderr, describe(proc)
