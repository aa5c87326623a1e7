#!/usr/bin/env bash
# Here (the build machine, no GPU needed): bench/cudnn_rnn_bench.cpp, the
# direct cuDNN RNN benchmark, compiled against the CUDA toolkit's headers
# (cudnn.h of cuDNN 9 in $CUDA_HOME/include) and linked with libcudart and the
# libcudnn.so.9 of the nvidia-cudnn wheel that PyTorch ships, into
# build/gpu-cudnn/cudnn_rnn_bench. On the GPU machine,
# bench/cudnn-bench-run.sh runs it (carry build/gpu-cudnn).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RNN_BUILD_DIR:-$ROOT/build}"
OUT="$BUILD/gpu-cudnn"
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
CXX="${CXX:-$(command -v clang++-22 || command -v clang++ || echo g++)}"
# nvidia.cudnn may be a namespace package (no __file__): take its __path__.
CUDNN_LIB_DIR="${CUDNN_LIB_DIR:-$(python3 -c "import os, nvidia.cudnn as m; print(os.path.join(list(m.__path__)[0], 'lib'))")}"
if [[ ! -e "$CUDNN_LIB_DIR/libcudnn.so.9" ]]; then
  echo "cudnn-bench-build: no libcudnn.so.9 in $CUDNN_LIB_DIR" >&2
  exit 1
fi
mkdir -p "$OUT"
"$CXX" -std=c++17 -O2 -Wall -Wextra -Wpedantic \
  -isystem "$CUDA_HOME/include" "$ROOT/bench/cudnn_rnn_bench.cpp" \
  -o "$OUT/cudnn_rnn_bench" \
  -L"$CUDA_HOME/lib64" -lcudart -L"$CUDNN_LIB_DIR" -l:libcudnn.so.9
echo "cudnn-bench-build: $OUT/cudnn_rnn_bench ($("$CXX" --version | head -1);" \
  "cudnn.h $(grep -E '^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ' \
  "$CUDA_HOME/include/cudnn_version.h" | awk '{print $3}' | paste -sd.);" \
  "linked with $CUDNN_LIB_DIR/libcudnn.so.9)"
