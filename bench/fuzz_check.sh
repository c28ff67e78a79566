#!/usr/bin/env bash
# fuzz_check.sh — `herd check` on N fuzzed job files (mutations of every
# jobs/*.ini: byte flips, dropped and repeated lines, hostile values and
# --set options; the generator is tests/integration/fuzzjobs.py, the same
# one test_fuzz.py runs 1500 cases of). Prints the count of cases per exit
# code and every case that broke the contract (exit other than 0 or 2, a
# signal, a hang, or exit 2 without exactly one stderr line).
#   bench/fuzz_check.sh [N [SEED]]      (default 20000 cases, seed 1)
# HERD names the program (default build/herd). Exits 0 when every case kept
# the contract, 1 otherwise, 2 on bad usage. No root needed; it writes only
# under a private temporary directory.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
HERD=${HERD:-$ROOT/build/herd}
N=${1:-20000}
SEED=${2:-1}

[[ "$N" =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [CASES [SEED]]" >&2; exit 2; }
[[ "$SEED" =~ ^[0-9]+$ ]] || { echo "usage: $0 [CASES [SEED]]" >&2; exit 2; }
[ -x "$HERD" ] || { echo "$0: herd binary $HERD not found (build it, or set HERD)" >&2; exit 2; }

exec /usr/bin/python3 "$ROOT/tests/integration/fuzzjobs.py" --herd "$HERD" --cases "$N" \
    --seed "$SEED"
