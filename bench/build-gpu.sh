#!/usr/bin/env bash
# Here (the build machine): compiles everything the GPU run needs into
# build/gpu/ (the device machine has no LLVM/MLIR): every example and the
# benchmark models for CUDA (sm_90a), and the runtime libraries.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RNN_BUILD_DIR:-$ROOT/build}"
OUT="$BUILD/gpu"
"$ROOT/scripts/build.sh" rnn-compile rnn_runtime rnn_runtime_cuda rnn_device_library >/dev/null
rm -rf "$OUT" && mkdir -p "$OUT/models" "$OUT/lib"
# The device library is linked at compile time (rnn-compile finds it in the
# runtime directory); it does not travel further.
cp "$BUILD"/lib/librnn_runtime.so "$BUILD"/lib/librnn_runtime_cuda.so \
  "$BUILD"/lib/rnn_device_library.bc "$OUT/lib/"
python3 "$ROOT/bench/make_models.py" "$OUT/bench-models" >/dev/null
python3 "$ROOT/bench/make_zoo_models.py" "$OUT/bench-models" >/dev/null
# The hand-written reference path (cuBLAS + one fused kernel per step, CUDA
# graph), built and run on the GPU machine by bench/gpu-run.sh.
PROBE="$ROOT/../shared/bench/step_probe.cu"
if [ -f "$PROBE" ]; then cp "$PROBE" "$OUT/"; fi
for f in "$ROOT"/examples/*.mlir "$OUT"/bench-models/*.mlir \
         "$ROOT"/test/python/models/lengths.mlir; do
  name=$(basename "$f" .mlir)
  "$BUILD/bin/rnn-compile" --target=cuda "$f" -o "$OUT/models/$name.so" \
    --runtime-dir "$OUT/lib"
done
# The zoo again with bf16 matmul operands (f32 accumulation, states and
# pointwise math), LSTM included: the bf16 zoo table's reference.
for f in "$OUT"/bench-models/zoo_*.mlir; do
  name=$(basename "$f" .mlir)
  "$BUILD/bin/rnn-compile" --target=cuda --matmul-type=bf16 "$f" \
    -o "$OUT/models/zoobf16_${name#zoo_}.so" --runtime-dir "$OUT/lib"
done
echo "build-gpu: $(ls "$OUT/models" | wc -l) models in $OUT ($(du -sh "$OUT" | cut -f1))"
