#!/usr/bin/env bash
# run.sh — the README's test command: check the C formatting, install what
# is missing, build with -Werror, and run every test (cmocka unit tests,
# mpirun integration tests) with ctest, after the unit tests and a smoke run
# under AddressSanitizer and UBSan (which stop at their first report).
# Tests that need root (tmpfs and loop mounts, the embedded NFS server)
# skip with a message otherwise. Arguments go to the last ctest.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${HERD_BUILD_DIR:-$repo/build}
t0=$SECONDS
stamp() { echo "run.sh: $* ($((SECONDS - t0)) s)" >&2; }

# The format check first: seconds, and it names the files to fix.
# (clang-format is a check tool, not a build dependency: install.sh leaves it out.)
if ! command -v clang-format >/dev/null; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends clang-format
fi
"$repo/.ci/format-check"

"$repo/cluster-configs/local/install.sh"
# install.sh builds without -Werror (a user's build); the tests' builds
# must be warning-free. Only the flag changes, so this rebuild is short.
cmake -S "$repo" -B "$build" -DHERD_WERROR=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
stamp "built $build with -Werror"

asan=$build-asan
cmake -S "$repo" -B "$asan" -DCMAKE_BUILD_TYPE=Debug -DHERD_SANITIZE=ON -DHERD_WERROR=ON \
  -DHERD_TESTS=ON -DHERD_REQUIRE_LIBNFS=ON -DHERD_REQUIRE_CURL=ON >/dev/null
cmake --build "$asan" -j"$(nproc)"
stamp "built $asan (AddressSanitizer, UBSan, -Werror)"
(cd "$asan" && ctest --output-on-failure -R '^(unit_|sanitize_)')
stamp "sanitizer tests passed"

cd "$build"
ctest --output-on-failure --timeout 900 "$@"
stamp "all tests passed"
