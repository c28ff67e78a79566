#!/usr/bin/env bash
# run.sh — the README's test command: install what is missing, build, and
# run every test (cmocka unit tests, mpirun integration tests) with ctest.
# Tests that need root (tmpfs and loop mounts) skip with a message otherwise.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${HERD_BUILD_DIR:-$repo/build}
"$repo/cluster-configs/local/install.sh"
cd "$build"
ctest --output-on-failure --timeout 900 "$@"
