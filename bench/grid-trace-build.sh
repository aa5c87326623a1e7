#!/usr/bin/env bash
# Experiment (here, the build machine): the device library built with
# RNN_PERSISTENT_TRACE (thread 0's clock64 at the phases' edges of each forward
# step, printed at step 1000), and the f32 (TF32) LSTM at H = 1000 and vanilla
# RNN at 1280 and the bf16 LSTM at 1024 of bench/make_models.py compiled against
# it, forward only, into build/grid-trace. Carry build/grid-trace; run
# bench/grid-trace-run.sh there.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RNN_BUILD_DIR:-$ROOT/build}"
OUT="$ROOT/build/grid-trace"
"$ROOT/scripts/build.sh" rnn-compile rnn_runtime rnn_runtime_cuda >/dev/null
rm -rf "$OUT" && mkdir -p "$OUT/models" "$OUT/lib" "$OUT/src"
cp "$BUILD"/lib/librnn_runtime.so "$BUILD"/lib/librnn_runtime_cuda.so "$OUT/lib/"
/usr/lib/llvm-22/bin/clang++ -x cuda --cuda-device-only --cuda-path="${CUDA_HOME:-/usr/local/cuda}" \
  --cuda-gpu-arch=sm_90a -Wno-unknown-cuda-version -std=c++17 -O3 -emit-llvm -c \
  -DRNN_PERSISTENT_TRACE -I"$ROOT/include" "$ROOT/lib/DeviceLibrary/PersistentRecurrence.cu" \
  -o "$OUT/lib/rnn_device_library.bc"
for H in 1000 1024 1280; do
  python3 "$ROOT/bench/make_models.py" "$OUT/src" --size "$H" "$H" >/dev/null
done
cp "$OUT/src/lstm_I1000_H1000.mlir" "$OUT/src/lstm_f32_I1000_H1000.mlir"
cp "$OUT/src/rnn_I1280_H1280.mlir" "$OUT/src/rnn_f32_I1280_H1280.mlir"
for m in lstm_f32_I1000_H1000 rnn_f32_I1280_H1280 lstm_bf16_I1024_H1024; do
  "$BUILD/bin/rnn-compile" --target=cuda "$OUT/src/$m.mlir" -o "$OUT/models/$m.so" \
    --runtime-dir "$OUT/lib"
done
rm -rf "$OUT/src"
echo "grid-trace-build: $(ls "$OUT/models" | wc -l) models"
