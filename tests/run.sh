#!/usr/bin/env bash
# run.sh — the README's test command: check the C formatting, the layering
# rules, function complexity, the analysis tools' Python (types, lint,
# formatting) and commit subjects (.ci/), install what is missing, build with
# -Werror, and run every test (cmocka unit tests,
# mpirun integration tests) with ctest, after the unit tests and a smoke run
# under AddressSanitizer and UBSan (which stop at their first report).
# The tests run in three slots at a time (HERD_TEST_JOBS, default 3; 1:
# one by one; tests/CMakeLists.txt gives the guests' tests two slots).
# Tests that need root (tmpfs and loop mounts, the embedded NFS server)
# skip with a message otherwise. Arguments go to the last ctest.
#
# Every stage runs even when one before it failed (a stage that needs a
# failed build is skipped and said so), and the end lists every failure:
# one run shows all that is wrong, not only the first thing. The last line
# counts the tests: "tests: N passed, M failed".
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
# The scripts' `python3` is Debian's, the one install.sh equips: a version
# manager's shim first on PATH (pyenv's) costs a shell and a lookup on each
# of the suite's thousands of calls, seconds each on a busy machine.
export PATH="/usr/bin:$PATH"
build=${HERD_BUILD_DIR:-$repo/build}
asan=$build-asan
t0=$SECONDS
failures=()
passed=0
failed=0
stamp() { echo "run.sh: $* ($((SECONDS - t0)) s)" >&2; }

# stage NAME COMMAND...: run it; on failure remember NAME. Returns its status.
stage() {
    local name=$1
    shift
    stamp "stage $name"
    if "$@"; then
        return 0
    fi
    failures+=("$name")
    stamp "stage $name FAILED"
    return 1
}

# ctest_counted DIR ARGS...: ctest in DIR, adding its pass/fail counts.
ctest_counted() {
    local dir=$1 log rc
    shift
    log=$(mktemp)
    (cd "$dir" && ctest --output-on-failure "$@") 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    # "95% tests passed, 2 tests failed out of 45"
    read -r p f < <(awk '/tests passed, .* tests failed out of/ {
        total = $NF; bad = $4; print total - bad, bad }' "$log")
    passed=$((passed + ${p:-0}))
    failed=$((failed + ${f:-0}))
    rm -f "$log"
    return "$rc"
}

# install_missing PACKAGE PROBE...: unless the command PROBE succeeds,
# apt-get install PACKAGE (as root, else with sudo). The check tools are not
# build dependencies: install.sh leaves them out.
install_missing() {
    local package=$1 sudo=""
    shift
    "$@" >/dev/null 2>&1 && return 0
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -q &&
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends \
            "$package"
}

check_format() {
    install_missing clang-format command -v clang-format && "$repo/.ci/format-check"
}

# pmccabe: .ci/complexity-check's tool.
check_complexity() {
    install_missing pmccabe command -v pmccabe && "$repo/.ci/complexity-check"
}

# mypy, pyflakes and black for Debian's python3: .ci/python-check's tools.
check_python() {
    install_missing python3-mypy /usr/bin/python3 -c "import mypy" &&
        install_missing python3-pyflakes /usr/bin/python3 -c "import pyflakes" &&
        install_missing black /usr/bin/python3 -c "import black" &&
        "$repo/.ci/python-check"
}

build_werror() {
    cmake -S "$repo" -B "$build" -DHERD_WERROR=ON >/dev/null && cmake --build "$build" -j"$(nproc)"
}

build_asan() {
    cmake -S "$repo" -B "$asan" -DCMAKE_BUILD_TYPE=Debug -DHERD_SANITIZE=ON -DHERD_WERROR=ON \
        -DHERD_TESTS=ON -DHERD_WITH_LIBNFS=ON -DHERD_WITH_CURL=ON >/dev/null &&
        cmake --build "$asan" -j"$(nproc)"
}

# The format, layering and complexity checks first: seconds, and they name
# the files to fix (.ci/layers-check: no include cycle, HDF5 and MPI only
# where docs/architecture.md allows them; .ci/complexity-check: no function
# past the McCabe and length cutoffs; .ci/docs-check: the skeletons' line
# counts docs/extending.md quotes; .ci/ternary-check: no conditional
# expression nested in another; .ci/python-check: analysis/ typed,
# clean and formatted by mypy, pyflakes and black; .ci/subjects-check: commit
# subjects of at most 72 characters, a blank line before the body).
stage format check_format
stage layers /usr/bin/python3 "$repo/.ci/layers-check"
stage docs /usr/bin/python3 "$repo/.ci/docs-check"
stage ternary /usr/bin/python3 "$repo/.ci/ternary-check"
stage complexity check_complexity
stage python check_python
stage subjects /usr/bin/python3 "$repo/.ci/subjects-check"
# install.sh builds without -Werror (a user's build); the tests' builds
# must be warning-free. Only the flag changes, so this rebuild is short.
if stage install "$repo/cluster-configs/local/install.sh" && stage build build_werror; then
    built=1
else
    built=0
fi
if stage build-asan build_asan; then
    stage sanitizers ctest_counted "$asan" -R '^(unit_|sanitize_)'
else
    stamp "stage sanitizers skipped: no sanitizer build"
    failures+=("sanitizers (not run)")
fi
if ((built)); then
    stage tests ctest_counted "$build" --timeout 900 -j"${HERD_TEST_JOBS:-3}" "$@"
else
    stamp "stage tests skipped: no build"
    failures+=("tests (not run)")
fi

if ((${#failures[@]})); then
    stamp "failed stages: ${failures[*]}"
else
    stamp "every stage passed"
fi
echo "tests: $passed passed, $failed failed"
((${#failures[@]} == 0))
