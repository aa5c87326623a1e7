#!/usr/bin/env bash
# Here (the build machine): the zoo at small sizes for the block kernels' check and
# timing (bench/block_kernels.py build) into build/block-kernels/models, the runtime
# libraries once into build/block-kernels/lib (each saved model's copies are removed),
# all compressed into build/block-kernels/models.tar.xz. Carry build/block-kernels; run
# bench/block-kernels-run.sh there.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RNN_BUILD_DIR:-$ROOT/build}"
OUT="$ROOT/build/block-kernels"
if [ -z "${RNN_NO_BUILD:-}" ]; then
  "$ROOT/scripts/build.sh" rnn-compile rnn_runtime rnn_runtime_cuda >/dev/null
fi
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
rm -rf "$OUT" && mkdir -p "$OUT/lib"
cp "$BUILD"/lib/librnn_runtime.so "$BUILD"/lib/librnn_runtime_cuda.so "$OUT/lib/"
PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" RNN_QUIET=1 \
  python3 "$ROOT/bench/block_kernels.py" build "$OUT/models"
for d in "$OUT"/models/*/; do
  cmp -s "$d/librnn_runtime_cuda.so" "$OUT/lib/librnn_runtime_cuda.so"
  rm "$d"/librnn_runtime.so "$d"/librnn_runtime_cuda.so
done
tar -C "$OUT" -cf - models lib | xz -T0 -6 > "$OUT/models.tar.xz"
rm -rf "$OUT/models" "$OUT/lib"
echo "block-kernels-build: $(du -sh "$OUT/models.tar.xz" | cut -f1)"
