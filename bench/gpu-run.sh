#!/usr/bin/env bash
# On the GPU machine (after bench/build-gpu.sh here, carrying build/gpu):
# correctness first, then timings against cuDNN; full JSON in $OUT.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GPU="$ROOT/build/gpu"
# cuBLAS: the CUDA toolkit's, else the one PyTorch ships.
CUBLAS_DIR=$(python3 -c "import nvidia.cublas, os; print(os.path.join(os.path.dirname(nvidia.cublas.__file__), 'lib'))" 2>/dev/null || true)
export LD_LIBRARY_PATH="$GPU/lib:/usr/local/cuda/lib64:${CUBLAS_DIR}:${LD_LIBRARY_PATH:-}"
export RNN_RUNTIME_LIB="$GPU/lib/librnn_runtime.so"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 "$ROOT/bench/gpu_bench.py" "$GPU/models" "${OUT:-/tmp}/gpu-bench.json"
