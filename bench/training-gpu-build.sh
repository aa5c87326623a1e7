#!/usr/bin/env bash
# Here (the build machine): every example, and the zoo's head-wise cells,
# compiled for CUDA with --training into build/gpu-train/models, the runtime
# libraries into build/gpu-train/lib,
# per example a float64 reference (arguments, loss weights, results and
# gradients from the CPU build) into build/gpu-train/ref, and the LSTM and GRU
# benchmark models with --training into build/gpu-train/bench-models. On the
# GPU machine, bench/training-gpu-run.sh checks the CUDA gradients against the
# references, then times a training step against cuDNN (bench/train_bench.py).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RNN_BUILD_DIR:-$ROOT/build}"
OUT="$BUILD/gpu-train"
"$ROOT/scripts/build.sh" rnn-compile rnn_runtime rnn_runtime_cuda rnn_device_library >/dev/null
rm -rf "$OUT" && mkdir -p "$OUT/models" "$OUT/lib" "$OUT/ref" "$OUT/bench-models"
cp "$BUILD"/lib/librnn_runtime.so "$BUILD"/lib/librnn_runtime_cuda.so \
  "$BUILD"/lib/rnn_device_library.bc "$OUT/lib/"
for f in "$ROOT"/examples/*.mlir; do
  name=$(basename "$f" .mlir)
  "$BUILD/bin/rnn-compile" --target=cuda --training "$f" \
    -o "$OUT/models/$name.so" --runtime-dir "$OUT/lib"
done
RNN_BUILD_DIR="$BUILD" python3 "$ROOT/bench/training_gpu_check.py" reference "$OUT/ref"
# The zoo's head-wise cells: the reference step wrote their float32 sources.
for f in "$OUT"/ref/*.mlir; do
  name=$(basename "$f" .mlir)
  "$BUILD/bin/rnn-compile" --target=cuda --training "$f" \
    -o "$OUT/models/$name.so" --runtime-dir "$OUT/lib"
done
# The LSTM and GRU benchmark models (bench/make_models.py: fp32 with TF32
# matmuls, and bf16 storage) of the shapes bench/train_bench.py times: those of
# bench/configs.json but deep4, and FlashRNN's grid (I = H = 768).
python3 "$ROOT/bench/make_models.py" "$OUT/bench-src" --size 768 768 >/dev/null
for f in "$OUT"/bench-src/{lstm,gru}{,_bf16}_I*_H*.mlir; do
  name=$(basename "$f" .mlir)
  [[ "$name" == *_L4 || "$name" == *_reverse ]] && continue
  "$BUILD/bin/rnn-compile" --target=cuda --training "$f" \
    -o "$OUT/bench-models/$name.so" --runtime-dir "$OUT/lib"
done
rm -rf "$OUT/bench-src"
echo "training-gpu-build: $(ls "$OUT/models" | wc -l) models in $OUT ($(du -sh "$OUT" | cut -f1))"
