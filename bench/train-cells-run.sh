#!/usr/bin/env bash
# On the GPU machine (after bench/train-cells-build.sh here, carrying build/train-cells):
# bench/train_cells.py run: every zoo cell's training step at `medium` against our LSTM's,
# and the LayerNorm LSTM's and the reset-gate-first GRU's against torch.compile's, each
# checked against float64 first; the JSON in ${OUT:-/tmp}/train-cells.json, exit status 1
# if a check failed. Extra arguments go to the run (e.g. --only lstm gru, --no-compile).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GPU="$ROOT/build/train-cells"
source "$ROOT/bench/gpu-env.sh"
# The carried libraries are written here (the GPU machine has no rnn-compile).
export RNN_CACHE_DIR="${RNN_CACHE_DIR:-/tmp/rnn-cache}"
PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 \
  python3 "$ROOT/bench/train_cells.py" run "$GPU/models" "${OUT:-/tmp}/train-cells.json" "$@"
