#!/usr/bin/env bash
# On the GPU machine (after bench/dsl-gpu-build.sh here, carrying build/gpu): loads the
# saved DSL models with rnn.load and checks them against torch (bench/dsl_gpu_check.py).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DSL="$ROOT/build/gpu/dsl"
CUBLAS_DIR=$(python3 -c "import nvidia.cublas,os;print(os.path.join(os.path.dirname(nvidia.cublas.__file__),'lib'))" 2>/dev/null || true)
LIBS=""
for d in "$DSL"/*/; do
  # The runtime libraries each saved model holds (bench/dsl-gpu-build.sh
  # sends them once, in build/gpu/lib).
  cp "$ROOT"/build/gpu/lib/librnn_runtime.so "$ROOT"/build/gpu/lib/librnn_runtime_cuda.so "$d"
  LIBS="$LIBS${d%/}:"
done
export LD_LIBRARY_PATH="${LIBS}/usr/local/cuda/lib64:${CUBLAS_DIR}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset RNN_RUNTIME_LIB  # rnn.load uses the runtime saved beside each model
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
exec python3 "$ROOT/bench/dsl_gpu_check.py" "$DSL"
