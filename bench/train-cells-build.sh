#!/usr/bin/env bash
# Here (the build machine): the rnn.RNN modules of bench/train_cells.py with their CUDA
# libraries (train_cells.py build: every zoo cell at `medium` with TF32 and with bf16
# matmuls, and at the small check shape in exact float32; the LayerNorm LSTM and the GRU
# with the reset gate first also at small-latency and wide), pickled with their weights
# zeroed and xz-compressed into build/train-cells/models; the runtime libraries into
# build/train-cells/lib. Then train_cells.py verify: every module finds every library the
# run asks for among those it carries, with rnn-compile out of reach. Carry
# build/train-cells; bench/train-cells-run.sh runs them there. RNN_NO_BUILD=1 compiles
# with the build as it is (say, another checkout's, through RNN_BUILD_DIR) instead of
# bringing it up to date first.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RNN_BUILD_DIR:-$ROOT/build}"
# Under this checkout whatever the build directory: the run carries paths of the checkout.
OUT="$ROOT/build/train-cells"
if [[ -z "${RNN_NO_BUILD:-}" ]]; then
  "$ROOT/scripts/build.sh" rnn-compile rnn_runtime rnn_runtime_cuda rnn_device_library >/dev/null
fi
rm -rf "$OUT" && mkdir -p "$OUT/models" "$OUT/lib"
cp "$BUILD"/lib/librnn_runtime.so "$BUILD"/lib/librnn_runtime_cuda.so "$OUT/lib/"
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
export RNN_BUILD_DIR="$BUILD" RNN_QUIET=1 PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
python3 "$ROOT/bench/train_cells.py" build "$OUT/models"
python3 "$ROOT/bench/train_cells.py" verify "$OUT/models"
echo "train-cells-build: $(ls "$OUT/models" | wc -l) modules in $OUT ($(du -sh "$OUT" | cut -f1))"
