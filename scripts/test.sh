#!/usr/bin/env bash
# The whole test suite: builds what is needed, runs every lit test (dialect,
# passes, tools, examples/), and ends with the line `N passed, N failed`.
# Exits non-zero when anything failed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RNN_BUILD_DIR:-$ROOT/build}"
LLVM=/usr/lib/llvm-22

"$ROOT/scripts/build.sh" rnn-opt mlir-doc

RESULTS="$BUILD/test-results.json"
rm -f "$RESULTS"
set +e
"$LLVM/bin/lit" -sv --output "$RESULTS" "$BUILD/test"
set -e

python3 "$ROOT/scripts/summarize-tests.py" "$RESULTS"
