# package.py — a Spack recipe for herd, the MPI load tester for NFS and
# shared file systems: builds it with the site's MPI and HDF5 (whatever
# provides `mpi`, and hdf5+mpi built with it) and installs the analysis
# tools with their Python dependencies. See docs/install.md, which also
# says how tests/integration/test_spack.py checks it in a real Spack.
#
# Use it from a repository of your own:
#   spack repo create ~/spack-herd herd      # prints the repository's path
#   mkdir -p ~/spack-herd/spack_repo/herd/packages/herd    # Spack 1.x layout
#   cp cluster-configs/spack/herd/package.py ~/spack-herd/spack_repo/herd/packages/herd/
#   spack repo add ~/spack-herd/spack_repo/herd
#   spack install herd ^openmpi              # or ^mpich, ^intel-oneapi-mpi...
#   spack install herd@main dev_path=$PWD    # the working tree of a checkout
# (Spack 0.x: `spack repo create` makes ~/spack-herd/packages/ instead.) Set
# `git` below to where your site keeps the herd repository.
#
# Variants: the optional parts of CMakeLists.txt, each CMake's
# HERD_WITH_<PART>: +variant adds the dependency and is ON (CMake fails
# when it is not found); ~variant is OFF (the part is not built, its
# library not even looked for, so a system copy cannot bring it in).
# Spack has no libsmbclient: +smb takes it from the system (an external
# `pkg-config smbclient`) and is off by default.

from spack.package import *

try:  # Spack 1.x: the build systems live in the builtin repository
    from spack_repo.builtin.build_systems.cmake import CMakePackage
except ImportError:  # Spack 0.x: spack.package has them
    pass


class Herd(CMakePackage):
    """herd: a multi-client (MPI) load tester for NFS and other shared file
    systems: write, read, md5, lock, open-storm and metadata phases started
    by every rank at one instant, every error counted, every result per rank
    in one HDF5 file; herd-report and herd-compare analyse it."""

    homepage = "https://example.invalid/herd"  # set to your site's copy
    git = "https://example.invalid/herd.git"  # set to your site's copy

    # Releases are the repository's tags, pinned by commit.
    version("0.1.0", tag="v0.1.0", commit="788aa3d65af9f81e3786c000868c18f816e859b7", preferred=True)
    version("main", branch="main")

    variant("libnfs", default=True, description="userspace NFS client backend (libnfs)")
    variant("curl", default=True, description="node_exporter scraping (monitor_url, libcurl)")
    variant("smb", default=False, description="SMB2/3 backend (libsmbclient from the system)")
    variant("nfqueue", default=False,
            description="herd-linkdelay, the packet delayer (libnetfilter_queue)")
    variant("tools", default=True,
            description="Python dependencies of herd-report and herd-compare")

    depends_on("c", type="build")  # compilers as dependencies (Spack 0.23+; drop before)
    depends_on("cmake@3.18:", type="build")
    depends_on("pkgconfig", type="build")

    depends_on("mpi")
    depends_on("hdf5+mpi")  # herd writes from rank 0 only; a serial HDF5 works too
    depends_on("zlib-api")
    depends_on("openssl")
    depends_on("libinih")  # Debian: libinih-dev; pkg-config name inih
    depends_on("libnfs", when="+libnfs")
    depends_on("curl", when="+curl")
    depends_on("libnetfilter-queue", when="+nfqueue")

    with when("+tools"):
        depends_on("python@3.8:", type="run")
        depends_on("py-h5py", type="run")
        depends_on("py-numpy", type="run")
        depends_on("py-pandas", type="run")
        depends_on("py-matplotlib", type="run")

    def cmake_args(self):
        # FindMPI through the provider's own wrapper (Spack's compiler
        # wrapper is not an MPI one), and no tests in an install.
        args = [self.define("HERD_TESTS", False),
                self.define("MPI_C_COMPILER", self.spec["mpi"].mpicc)]
        for part, name in (("LIBNFS", "libnfs"), ("CURL", "curl"), ("SMBCLIENT", "smb"),
                           ("NFQUEUE", "nfqueue")):
            args.append(self.define(f"HERD_WITH_{part}",
                                    "ON" if f"+{name}" in self.spec else "OFF"))
        return args

    def setup_run_environment(self, env):
        # herd_results for the user's own scripts (import herd_results)
        env.prepend_path("PYTHONPATH", self.prefix.libexec.herd)
        env.set("HERD_ROOT", self.prefix)
        env.set("HERD_JOBS", self.prefix.share.herd.jobs)
