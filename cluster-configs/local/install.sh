#!/usr/bin/env bash
# install.sh — set up this machine (Debian 12) to build and test herd:
# install the Debian packages that are missing, then configure and build
# into build/. Used by the README's two commands and by CI. Idempotent.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${HERD_BUILD_DIR:-$repo/build}

packages=(
  build-essential cmake pkg-config
  libopenmpi-dev openmpi-bin           # MPI: ranks, barriers, gathers
  libhdf5-openmpi-dev hdf5-tools       # results file (and h5dump)
  zlib1g-dev                           # HDF5 deflate filter
  libssl-dev openssl                   # MD5 (EVP); openssl speed for bench/
  libinih-dev                          # job files (INI)
  libnfs-dev                           # the libnfs backend (NFS from user space)
  libcurl4-openssl-dev                 # monitor_url: scraping a node_exporter
  prometheus-node-exporter             # the node_exporter the monitor tests scrape
  libcmocka-dev                        # unit tests
  python3-h5py python3-numpy python3-pandas python3-matplotlib python3-pytest
  chromium chromium-driver python3-selenium  # the report page opened headless in tests
  xfsprogs e2fsprogs btrfs-progs util-linux  # loop-mounted test file systems
  nfs-ganesha nfs-ganesha-vfs rpcbind  # the embedded userspace NFS server
  user-mode-linux nfs-kernel-server    # nfs-server.sh --server knfsd: kernel nfsd in a UML guest
  libnfs-utils iproute2                # nfs-cp/nfs-ls probes; network namespaces; tc (--link rate)
  samba smbclient libsmbclient-dev     # nfs-server.sh --smb: smbd on the same export; smbclient probes; SMB client library
  libnetfilter-queue-dev iptables      # herd-linkdelay: --link delay/jitter without netem
  environment-modules                  # test_install.py loads the installed modulefile
  slurmctld slurmd slurm-client munge  # a real Slurm on the virtual cluster (tests); not configured here
  fio                                  # bench/ peer
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install.sh: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The user the User-Mode Linux guests run as (nfs-server.sh --server knfsd,
# vcluster.sh --kernel-client; see umlview.py): a system account of its
# own, no login, no home.
if ! getent passwd herd-guest >/dev/null; then
  echo "install.sh: adding the system user herd-guest (User-Mode Linux guests run as it)" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo useradd --system --user-group --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin herd-guest
fi

cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHERD_TESTS=ON -DHERD_WITH_LIBNFS=ON \
  -DHERD_WITH_CURL=ON -DHERD_WITH_NFQUEUE=ON -DHERD_WITH_SMBCLIENT=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
echo "install.sh: built $build/herd" >&2
