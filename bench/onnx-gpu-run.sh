#!/usr/bin/env bash
# On the GPU machine (after bench/onnx-gpu-build.sh here, carrying build/gpu-onnx): the
# imported ONNX LSTM and GRU on CUDA against torch (bench/onnx_gpu_check.py check).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GPU="$ROOT/build/gpu-onnx"
source "$ROOT/bench/gpu-env.sh"
exec python3 "$ROOT/bench/onnx_gpu_check.py" check "$GPU/models"
