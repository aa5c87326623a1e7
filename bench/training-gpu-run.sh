#!/usr/bin/env bash
# On the GPU machine (after bench/training-gpu-build.sh here, carrying
# build/gpu-train): the CUDA training forward and backward of every example
# against the float64 CPU reference; then one training step of the LSTM and
# GRU timed against cuDNN's.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GPU="$ROOT/build/gpu-train"
CUBLAS_DIR=$(python3 -c "import nvidia.cublas, os; print(os.path.join(os.path.dirname(nvidia.cublas.__file__), 'lib'))" 2>/dev/null || true)
export LD_LIBRARY_PATH="$GPU/lib:/usr/local/cuda/lib64:${CUBLAS_DIR}:${LD_LIBRARY_PATH:-}"
export RNN_RUNTIME_LIB="$GPU/lib/librnn_runtime.so"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 "$ROOT/bench/training_gpu_check.py" check "$GPU/ref" "$GPU/models" \
  "${OUT:-/tmp}/training-gpu-check.json"
python3 "$ROOT/bench/train_bench.py" "$GPU/bench-models" "${OUT:-/tmp}/train-bench.json"
