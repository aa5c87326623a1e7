#!/usr/bin/env bash
# Here (the build machine): the cell-speed test's cases (bench/cell_speed.py build): 120
# random cells of cellgen's extended family (default; CELL_SPEED_CELLS=N) and our LSTM, at
# I = H = 1024, compiled for CUDA with TF32 products into build/cell-speed/cases with their
# optimised IR and explain reports, compressed into build/cell-speed/cases.tar.xz; the
# runtime libraries into build/cell-speed/lib. Carry build/cell-speed/lib and
# build/cell-speed/cases.tar.xz; bench/cell-speed-run.sh runs them there.
# RNN_NO_BUILD=1 compiles with the build as it is (say, another checkout's, through
# RNN_BUILD_DIR) instead of bringing it up to date first.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RNN_BUILD_DIR:-$ROOT/build}"
# Under this checkout whatever the build directory: the run carries paths of the checkout.
OUT="$ROOT/build/cell-speed"
if [[ -z "${RNN_NO_BUILD:-}" ]]; then
  "$ROOT/scripts/build.sh" rnn-opt rnn-compile rnn_runtime rnn_runtime_cuda rnn_device_library >/dev/null
fi
rm -rf "$OUT" && mkdir -p "$OUT/lib"
cp "$BUILD"/lib/librnn_runtime.so "$BUILD"/lib/librnn_runtime_cuda.so "$OUT/lib/"
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
RNN_BUILD_DIR="$BUILD" PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" \
  python3 "$ROOT/bench/cell_speed.py" build "$OUT/cases" --cells "${CELL_SPEED_CELLS:-120}"
tar -C "$OUT" -cf - cases | xz -T0 -6 > "$OUT/cases.tar.xz"
xz -T0 -6 "$OUT"/lib/*.so*
echo "cell-speed-build: $(du -sh "$OUT/cases.tar.xz" | cut -f1) of cases, $(du -sh "$OUT/lib" | cut -f1) of libraries"
