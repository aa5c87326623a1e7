#!/usr/bin/env bash
# On the GPU machine (after bench/grid-kernels-build.sh here, carrying
# build/grid-kernels): the grid-wide persistent kernels against the step loop and
# float64 (bench/grid_kernels.py).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GPU="$ROOT/build/grid-kernels"
source "$ROOT/bench/gpu-env.sh"
python3 "$ROOT/bench/grid_kernels.py" "$GPU/models" "${OUT:-/tmp}/grid-kernels.json"
