#!/usr/bin/env bash
# The whole test suite, as scripts/test.sh runs it (lit, then pytest, then the
# line `N passed, N failed, N skipped`), over a build of the project with
# AddressSanitizer and UndefinedBehaviorSanitizer: -DRNN_ENABLE_SANITIZERS=ON
# (CMakeLists.txt says which flags) in build-sanitize/, or $RNN_BUILD_DIR.
# Installs clang-22's sanitizer runtimes (libclang-rt-22-dev) when missing.
# Exits non-zero when anything failed or nothing ran. docs/testing.md says
# what it covers and how long it takes.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RNN_BUILD_DIR:-$ROOT/build-sanitize}"
LLVM=/usr/lib/llvm-22

"$ROOT/scripts/install-deps.sh" libclang-rt-22-dev
RNN_BUILD_DIR="$BUILD" RNN_CMAKE_ARGS="-DRNN_ENABLE_SANITIZERS=ON" \
  "$ROOT/scripts/build.sh" all mlir-doc

ASAN_RUNTIME="$("$LLVM/bin/clang" -print-file-name=libclang_rt.asan-x86_64.so)"
# The interpreter itself: python3 may be a launcher script (pyenv's shim is a
# bash script), and the ASan runtime is preloaded into the process that runs
# the tests.
PYTHON="$(python3 -c 'import sys; print(sys.executable)')"

# Reports name functions and lines.
export ASAN_SYMBOLIZER_PATH="$LLVM/bin/llvm-symbolizer"
# Every process that finds an error fails: ASan stops at its first report
# (its default), and UBSan's checks abort in our code (-fno-sanitize-recover);
# print_stacktrace gives UBSan reports a stack.
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# The lit half runs our own programs (rnn-opt, rnn-compile, rnn-runtime-test,
# the C example, the embedding consumer): LeakSanitizer checks each of them at
# exit, and they need no suppressions (LLVM and MLIR, not instrumented but
# with their allocations seen, leave nothing unreachable either).
export ASAN_OPTIONS="detect_leaks=1"

LIT_RESULTS="$BUILD/lit-results.json"
PYTEST_RESULTS="$BUILD/pytest-results.xml"
rm -f "$LIT_RESULTS" "$PYTEST_RESULTS"
set +e
"$LLVM/bin/lit" -sv --output "$LIT_RESULTS" "$BUILD/test"

# The pytest half loads librnn_runtime (instrumented) into python3 (not
# instrumented), so the ASan runtime is preloaded: it has to be the first
# library of the process. Child processes inherit it: the python scripts that
# tests start, rnn-compile and rnn-opt (which link it anyway), and the clang
# that rnn-compile links models with (where it only intercepts malloc).
#  - detect_leaks=0: LSan would report what the interpreter, numpy and torch
#    leave at exit, and a suppression cannot tell those leaks from ours, since
#    it matches any frame of a stack and the interpreter is on all of them.
#    Leaks of our libraries are checked in the lit half.
#  - allocator_may_return_null=1: test_out_of_memory_is_a_status has a model
#    ask malloc for 1 TiB and checks that the call returns
#    RNN_ERROR_OUT_OF_MEMORY; by default ASan ends the process on such a
#    request instead of returning NULL as malloc does.
LD_PRELOAD="$ASAN_RUNTIME" \
  ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1" \
  RNN_BUILD_DIR="$BUILD" "$PYTHON" -m pytest "$ROOT/test/python" -q \
  -p no:cacheprovider --junitxml="$PYTEST_RESULTS"
set -e

python3 "$ROOT/scripts/summarize-tests.py" "$LIT_RESULTS" "$PYTEST_RESULTS"
