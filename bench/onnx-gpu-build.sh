#!/usr/bin/env bash
# Here (the build machine): a torch.nn.LSTM and a torch.nn.GRU (2 layers, bidirectional)
# exported to ONNX, given sequence lengths, imported with rnn.onnx and compiled for the CPU
# and CUDA (bench/onnx_gpu_check.py build), saved into build/gpu-onnx with the runtime
# libraries in build/gpu-onnx/lib. On the GPU machine, bench/onnx-gpu-run.sh checks them
# against torch (carry build/gpu-onnx).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RNN_BUILD_DIR:-$ROOT/build}"
OUT="$BUILD/gpu-onnx"
"$ROOT/scripts/build.sh" rnn-compile rnn_runtime rnn_runtime_cuda rnn_device_library >/dev/null
rm -rf "$OUT" && mkdir -p "$OUT/models" "$OUT/lib"
cp "$BUILD"/lib/librnn_runtime.so "$BUILD"/lib/librnn_runtime_cuda.so "$OUT/lib/"
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
RNN_BUILD_DIR="$BUILD" python3 "$ROOT/bench/onnx_gpu_check.py" build "$OUT/models"
echo "onnx-gpu-build: $(ls "$OUT/models" | wc -l) models in $OUT ($(du -sh "$OUT" | cut -f1))"
