#!/usr/bin/env bash
# On the GPU machine (after bench/cudnn-bench-build.sh here, carrying
# build/gpu-cudnn): every cuDNN RNN algorithm per shape, cell and precision,
# checked against STANDARD and timed (bench/cudnn_rnn_bench.cpp), with the
# cuDNN that the machine's PyTorch ships. Writes
# ${OUT:-/tmp}/cudnn-rnn-bench.json and the table, cudnn-rnn-bench.txt, beside
# it. Arguments go to the program, e.g. --cells lstm --precisions fp16,bf16 or
# --configs bench/configs.json.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GPU="$ROOT/build/gpu-cudnn"
source "$ROOT/bench/gpu-env.sh"
# PyTorch's cuDNN: the nvidia-cudnn wheel's lib folder (nvidia.cudnn may be a
# namespace package, without __file__), else torch/lib where older wheels
# bundled it.
CUDNN_LIB_DIR=$(python3 -c "
import os
try:
    import nvidia.cudnn as m
    print(os.path.join(list(m.__path__)[0], 'lib'))
except ImportError:
    import torch
    print(os.path.join(os.path.dirname(torch.__file__), 'lib'))
")
export LD_LIBRARY_PATH="$CUDNN_LIB_DIR:$LD_LIBRARY_PATH"
mkdir -p "${OUT:-/tmp}"
"$GPU/cudnn_rnn_bench" "${OUT:-/tmp}/cudnn-rnn-bench.json" "$@" |
  tee "${OUT:-/tmp}/cudnn-rnn-bench.txt"
