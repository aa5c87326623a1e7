#!/usr/bin/env bash
# On the GPU machine after bench/build-gpu.sh: gpu_bench's zoo table (every
# zoo cell at `medium` in rounds with our LSTM) in a process of its own, in
# which cuDNN never runs (see bench/experiments/README.md). Twice.
GPU=build/gpu
CUBLAS_DIR=$(python3 -c "import nvidia.cublas, os; print(os.path.join(os.path.dirname(nvidia.cublas.__file__), 'lib'))" 2>/dev/null || true)
export LD_LIBRARY_PATH="$GPU/lib:/usr/local/cuda/lib64:${CUBLAS_DIR}:${LD_LIBRARY_PATH:-}"
export RNN_RUNTIME_LIB="$GPU/lib/librnn_runtime.so"
for i in 1 2; do
python3 -c "
import sys, json, torch; sys.path.insert(0, 'bench')
import gpu_bench as gb
medium = next(c for c in json.load(open('bench/configs.json'))['configs'] if c['name'] == 'medium')
gb.bench_zoo('$GPU/models', medium, [])
"
done
