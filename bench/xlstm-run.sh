#!/usr/bin/env bash
# On the GPU machine (after bench/flashrnn-build.sh and bench/xlstm-build.sh here, carrying
# build/flashrnn, build/xlstm and build/gpu/lib): installs the xLSTM package from the carried
# wheel (offline, without its dependencies: the sLSTM cell needs only torch, packaging and
# ninja, which FlashRNN's carried wheels provide) and runs bench/xlstm_compare.py: our sLSTM
# against the xLSTM package's CUDA sLSTM kernels, checked and timed. Writes xlstm_compare.json
# and .log to $OUT (default build/xlstm/out). Arguments go to the script (--dims 16,64).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FR="$ROOT/build/flashrnn"
RESULTS="${OUT:-$ROOT/build/xlstm/out}"
mkdir -p "$RESULTS"
source "$ROOT/bench/extension-env.sh"
WHEELS=("$ROOT"/build/xlstm/xlstm-*.whl "$FR"/wheels/ninja-*.whl)
python3 -c "import packaging" 2>/dev/null || WHEELS+=("$FR"/wheels/packaging-*.whl)
install_wheels "${WHEELS[@]}"
LIBS=""
for d in "$FR"/models/slstm_flashrnn_d*/; do
  cp "$ROOT"/build/gpu/lib/librnn_runtime.so "$ROOT"/build/gpu/lib/librnn_runtime_cuda.so "$d"
  LIBS="$LIBS${d%/}:"
done
export LD_LIBRARY_PATH="${LIBS}$ROOT/build/gpu/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset RNN_RUNTIME_LIB
NOISE='^\[[0-9]+/[0-9]+\] |ptxas|bytes stack frame|Used [0-9]+ registers|Compile time|^Emitting|^\{'
python3 -u "$ROOT/bench/xlstm_compare.py" "$FR/models" "$FR/train-models" \
  "$RESULTS/xlstm_compare.json" "$@" 2>&1 | tee "$RESULTS/xlstm_compare.log" \
  | { grep -v -E "$NOISE" || true; }
