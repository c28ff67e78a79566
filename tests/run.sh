#!/usr/bin/env bash
# run.sh — the README's test command: install what is missing, build, and
# run every test (cmocka unit tests, mpirun integration tests) with ctest,
# then the unit tests again under AddressSanitizer and UBSan.
# Tests that need root (tmpfs and loop mounts, the embedded NFS server)
# skip with a message otherwise.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${HERD_BUILD_DIR:-$repo/build}
"$repo/cluster-configs/local/install.sh"

asan=$build-asan
cmake -S "$repo" -B "$asan" -DCMAKE_BUILD_TYPE=Debug -DHERD_SANITIZE=ON -DHERD_TESTS=ON \
  -DHERD_REQUIRE_LIBNFS=ON -DHERD_REQUIRE_CURL=ON >/dev/null
cmake --build "$asan" -j"$(nproc)" >/dev/null
echo "run.sh: unit tests and a smoke run under AddressSanitizer/UBSan" >&2
(cd "$asan" && ctest --output-on-failure -R '^(unit_|sanitize_)')

cd "$build"
ctest --output-on-failure --timeout 900 "$@"
