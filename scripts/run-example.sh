#!/usr/bin/env bash
# The main job, for one example cell (examples/<name>.mlir, default: lstm):
#   1. builds what is needed (rnn-opt, rnn-compile, librnn_runtime), installing
#      the dependencies first on a fresh machine (scripts/build.sh);
#   2. runs it through rnn-opt's rnn-optimize pipeline and prints the
#      optimised IR with the kernel count per step before and after;
#   3. compiles it with rnn-compile into build/examples/<name>.so and runs it
#      on random inputs (T = 16, B = 4) through scripts/run_model.py (the
#      Python binding in python/rnn): each result's shape and checksum, the
#      median time per call over 20 calls. On the GPU when there is one (with
#      the CUDA toolkit and PyTorch): compiled with --target=cuda, run on CUDA
#      tensors and compared with the CPU build; else on the CPU;
#   4. compiles it again with --training and runs a training step on the
#      CPU: the training forward and the derived backward (docs/training.md),
#      printing each gradient's shape and checksum;
#   5. says where it ran.
#   ./scripts/run-example.sh [name]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(realpath -m "${RNN_BUILD_DIR:-$ROOT/build}")"
NAME="${1:-lstm}"
EXAMPLE="$ROOT/examples/$NAME.mlir"
if [[ ! -f "$EXAMPLE" ]]; then
  echo "run-example: no example '$NAME'; choose one of:" >&2
  (cd "$ROOT/examples" && ls *.mlir | sed 's/\.mlir$//' | sed 's/^/  /') >&2
  exit 2
fi

# Build quietly; on failure show the log. (The first run installs packages
# and builds from scratch: a few minutes.)
BUILD_LOG="$(mktemp "${TMPDIR:-/tmp}/rnn-build.XXXXXX")"
trap 'rm -f "$BUILD_LOG"' EXIT
if [[ ! -x "$BUILD/bin/rnn-compile" ]]; then
  echo "-- building rnn-opt, rnn-compile and librnn_runtime (scripts/build.sh; the first time takes a few minutes)"
fi
if ! "$ROOT/scripts/build.sh" rnn-opt rnn-compile rnn_runtime >"$BUILD_LOG" 2>&1; then
  cat "$BUILD_LOG" >&2
  echo "run-example: the build failed (scripts/build.sh rnn-opt rnn-compile rnn_runtime)" >&2
  exit 1
fi
if ! python3 -c "import numpy" 2>/dev/null; then
  echo "run-example: python3 cannot import numpy, which scripts/run_model.py needs" \
    "(python3 -m pip install numpy, or apt-get install python3-numpy)" >&2
  exit 1
fi

# Kernels per step: the matmuls and fused pointwise groups inside the cells.
count_kernels() {
  awk '/rnn.cell @/{inCell=1} /^  func.func/{inCell=0}
       inCell && /rnn.matmul/{m++} inCell && /rnn.pointwise\(/{p++}
       inCell && /= rnn\.(add|sub|mul|div|max|min|neg|sigmoid|tanh|relu|exp|log|sqrt|rsqrt|cast|reduce_|layer_norm) /{u++}
       function n(k, what) { return (k + 0) " " what (k == 1 ? "" : "s") }
       END{printf "%s, %s, %s", n(m, "matmul"), n(p, "fused pointwise group"), n(u, "unfused pointwise op")}'
}

cd "$ROOT" # so that paths print relative to the repository
OUT="$BUILD/examples"
mkdir -p "$OUT"
OUT="${OUT#"$ROOT"/}"
OPTIMIZED="$OUT/$NAME.optimized.mlir"
"$BUILD/bin/rnn-opt" "$EXAMPLE" --rnn-optimize >"$OPTIMIZED"

echo "== examples/$NAME.mlir"
echo "-- as written: $("$BUILD/bin/rnn-opt" "$EXAMPLE" | count_kernels) in its cells"
echo "-- after rnn-optimize (concat-gate-matmuls, hoist-input-projection, fuse-pointwise; also in $OPTIMIZED):"
cat "$OPTIMIZED"
echo "-- $(count_kernels <"$OPTIMIZED") per step in its cells"

# A GPU, the CUDA toolkit and PyTorch with CUDA: run there. Otherwise on the CPU.
DEVICE=cpu
CUDA_ROOT="${CUDA_HOME:-/usr/local/cuda}"
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 &&
   [[ -x "$CUDA_ROOT/bin/ptxas" ]] &&
   python3 -c "import torch, sys; sys.exit(not torch.cuda.is_available())" 2>/dev/null; then
  if "$ROOT/scripts/build.sh" rnn_runtime_cuda >"$BUILD_LOG" 2>&1; then
    DEVICE=cuda
  else
    echo "-- a GPU is here but librnn_runtime_cuda did not build; running on the CPU" >&2
  fi
fi

# The Python binding finds the tools of build/ by default; point it at $BUILD.
RNN_COMPILE="${RNN_COMPILE:-$BUILD/bin/rnn-compile}" \
RNN_RUNTIME_LIB="${RNN_RUNTIME_LIB:-$BUILD/lib/librnn_runtime.so}" \
  python3 scripts/run_model.py "examples/$NAME.mlir" -o "$OUT/$NAME.so" -T 16 -B 4 --runs 20 \
    --device "$DEVICE"
# Training: the derived backward, on the CPU (docs/training.md).
echo "-- training on the CPU: rnn-compile --training, one step of the loss sum(results)"
RNN_COMPILE="${RNN_COMPILE:-$BUILD/bin/rnn-compile}" \
RNN_RUNTIME_LIB="${RNN_RUNTIME_LIB:-$BUILD/lib/librnn_runtime.so}" \
  python3 scripts/run_model.py "examples/$NAME.mlir" -o "$OUT/$NAME.train.so" -T 16 -B 4 \
    --runs 20 --training
# Training from PyTorch: rnn.RNN, a torch.nn.Module, against torch.nn.LSTM from
# the same weights on the same batches (docs/torch.md), shortened.
if python3 -c "import torch" 2>/dev/null; then
  echo "-- training with PyTorch: rnn.RNN(rnn.zoo.lstm) against torch.nn.LSTM, a character model"
  RNN_BUILD_DIR="$BUILD" python3 examples/train_char_lm.py --steps 20 --batch 8 --seq 32 \
    --hidden 64 --device "$DEVICE"
fi

if [[ "$DEVICE" == cuda ]]; then
  echo "-- ran on: GPU, $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
else
  CPU="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)"
  echo "-- ran on: CPU (no usable GPU here: it needs nvidia-smi, the CUDA toolkit and PyTorch with CUDA; on a GPU machine without a compiler use bench/build-gpu.sh here and bench/gpu-run.sh there); host: ${CPU:-unknown CPU}, $(nproc) cores"
fi
