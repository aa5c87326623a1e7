#!/usr/bin/env bash
# On the GPU machine (after bench/flashrnn-build.sh here, carrying build/flashrnn and
# build/gpu/lib): installs FlashRNN from the carried wheels (offline), puts the runtime
# libraries back beside each saved model, and runs bench/flashrnn_compare.py: our sLSTM, LSTM
# and GRU against FlashRNN's backends ("slstm", "lstm", "gru"), forward and training step
# (our training modules: build/flashrnn/train-models), checked and timed. Writes
# flashrnn_compare.json, .txt (the tables) and .log (everything, FlashRNN's nvcc builds
# included) to $OUT (default build/flashrnn/out). Arguments go to the script, e.g.
# bench/flashrnn-run.sh --functions lstm,gru --dims 16,64 --backends cuda
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FR="$ROOT/build/flashrnn"
MODELS="$FR/models"
RESULTS="${OUT:-$FR/out}"
mkdir -p "$RESULTS"
source "$ROOT/bench/extension-env.sh"
WHEELS=("$FR"/wheels/flashrnn-*.whl "$FR"/wheels/einops-*.whl "$FR"/wheels/ninja-*.whl)
# FlashRNN imports packaging without declaring it; install the carried one only if missing.
python3 -c "import packaging" 2>/dev/null || WHEELS+=("$FR"/wheels/packaging-*.whl)
install_wheels "${WHEELS[@]}"
CUBLAS_DIR=$(python3 -c "import nvidia.cublas, os; \
  print(os.path.join(os.path.dirname(nvidia.cublas.__file__), 'lib'))" 2>/dev/null || true)
LIBS=""
for d in "$MODELS"/*/; do
  # The runtime libraries each saved model holds (bench/flashrnn-build.sh sends them once,
  # in build/gpu/lib).
  cp "$ROOT"/build/gpu/lib/librnn_runtime.so "$ROOT"/build/gpu/lib/librnn_runtime_cuda.so "$d"
  LIBS="$LIBS${d%/}:"
done
# The libraries our training modules carry are written to the compile cache when loaded and
# find the runtime libraries by name on this path.
LIBS="${LIBS}$ROOT/build/gpu/lib:/usr/local/cuda/lib64:${CUBLAS_DIR}"
export LD_LIBRARY_PATH="${LIBS}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset RNN_RUNTIME_LIB  # rnn.load uses the runtime saved beside each model
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
nvcc --version | tail -n 2 || true
# The whole output goes to the .log; the console leaves out FlashRNN's verbose nvcc builds.
NOISE='^\[[0-9]+/[0-9]+\] |ptxas|bytes stack frame|Used [0-9]+ registers|Compile time|^Emitting'
python3 -u "$ROOT/bench/flashrnn_compare.py" "$MODELS" "$RESULTS/flashrnn_compare.json" \
  --train-model-dir "$FR/train-models" "$@" \
  2>&1 | tee "$RESULTS/flashrnn_compare.log" | { grep -v -E "$NOISE" || true; }
