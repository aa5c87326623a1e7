#!/usr/bin/env bash
# Here (the build machine): rnn.RNN modules with their CUDA libraries and float64
# references into build/gpu-torch (bench/torch_gpu_check.py build), and the
# runtime libraries into build/gpu-torch/lib. On the GPU machine,
# bench/torch-gpu-run.sh checks and times them (carry build/gpu-torch).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RNN_BUILD_DIR:-$ROOT/build}"
OUT="$BUILD/gpu-torch"
"$ROOT/scripts/build.sh" rnn-compile rnn_runtime rnn_runtime_cuda rnn_device_library >/dev/null
rm -rf "$OUT" && mkdir -p "$OUT/models" "$OUT/lib"
cp "$BUILD"/lib/librnn_runtime.so "$BUILD"/lib/librnn_runtime_cuda.so "$OUT/lib/"
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" \
  python3 "$ROOT/bench/torch_gpu_check.py" build "$OUT/models"
echo "torch-gpu-build: $(ls "$OUT/models" | wc -l) modules in $OUT ($(du -sh "$OUT" | cut -f1))"
