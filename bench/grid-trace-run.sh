#!/usr/bin/env bash
# Experiment (on the GPU machine, after bench/grid-trace-build.sh here, carrying
# build/grid-trace): the traced forward steps (bench/grid_trace.py).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export GPU="$ROOT/build/grid-trace"
source "$ROOT/bench/gpu-env.sh"
python3 "$ROOT/bench/grid_trace.py" "$GPU/models"
