#!/usr/bin/env bash
# The whole test suite: builds everything, runs the lit tests (dialect,
# passes, tools, runtime, examples/) and the pytest suite (numerics of
# compiled models against numpy on the CPU), and ends with the line
# `N passed, N failed, N skipped` over both. Exits non-zero when anything
# failed or nothing ran.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RNN_BUILD_DIR:-$ROOT/build}"
LLVM=/usr/lib/llvm-22

"$ROOT/scripts/build.sh" all mlir-doc

LIT_RESULTS="$BUILD/lit-results.json"
PYTEST_RESULTS="$BUILD/pytest-results.xml"
rm -f "$LIT_RESULTS" "$PYTEST_RESULTS"
set +e
"$LLVM/bin/lit" -sv --output "$LIT_RESULTS" "$BUILD/test"
# One pytest worker per core (pytest-xdist, installed by scripts/install-deps.sh);
# work stealing balances the files of very different lengths.
RNN_BUILD_DIR="$BUILD" python3 -m pytest "$ROOT/test/python" -q -n auto \
  --dist worksteal -p no:cacheprovider --junitxml="$PYTEST_RESULTS"
set -e

python3 "$ROOT/scripts/summarize-tests.py" "$LIT_RESULTS" "$PYTEST_RESULTS"
