#!/usr/bin/env bash
# On the GPU machine (after bench/block-kernels-build.sh here, carrying
# build/block-kernels): the block kernels against float64 and against the step loop
# (bench/block_kernels.py run), JSON to $OUT/block-kernels.json. BLOCK_KERNELS_DIR names
# another build's directory (a second compiler's models, for a comparison in one call) and
# BLOCK_KERNELS_JSON another file name.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${BLOCK_KERNELS_DIR:-$ROOT/build/block-kernels}"
tar -C "$DIR" -xJf "$DIR/models.tar.xz"
CUBLAS_DIR=$(python3 -c "import nvidia.cublas,os;print(os.path.join(os.path.dirname(nvidia.cublas.__file__),'lib'))" 2>/dev/null || true)
LIBS=""
for d in "$DIR"/models/*/; do
  cp "$DIR"/lib/librnn_runtime.so "$DIR"/lib/librnn_runtime_cuda.so "$d"
  LIBS="$LIBS${d%/}:"
done
export LD_LIBRARY_PATH="${LIBS}/usr/local/cuda/lib64:${CUBLAS_DIR}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset RNN_RUNTIME_LIB
export OUT="${OUT:-/tmp}"
PYTHONUNBUFFERED=1 python3 "$ROOT/bench/block_kernels.py" run "$DIR/models" "$OUT/${BLOCK_KERNELS_JSON:-block-kernels.json}"
