#!/usr/bin/env bash
# On the GPU machine (after bench/training-gpu-build.sh here, carrying
# build/gpu-train): the CUDA training forward and backward of every example
# against the float64 CPU reference; then one training step of the LSTM and
# GRU timed against cuDNN's.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GPU="$ROOT/build/gpu-train"
source "$ROOT/bench/gpu-env.sh"
python3 "$ROOT/bench/training_gpu_check.py" check "$GPU/ref" "$GPU/models" \
  "${OUT:-/tmp}/training-gpu-check.json"
python3 "$ROOT/bench/train_bench.py" "$GPU/bench-models" "${OUT:-/tmp}/train-bench.json"
