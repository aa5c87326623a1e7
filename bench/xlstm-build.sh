#!/usr/bin/env bash
# Here: the xLSTM package's wheel (PyPI `xlstm`, pure Python; its CUDA sLSTM kernels are
# compiled on the GPU machine) in build/xlstm/, for bench/xlstm-run.sh's offline install.
# Our models come from bench/flashrnn-build.sh (build/flashrnn). Carry build/xlstm,
# build/flashrnn and build/gpu/lib.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${RNN_BUILD_DIR:-$ROOT/build}/xlstm"
mkdir -p "$OUT"
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
python3 -m pip download -q --no-deps "xlstm==2.0.6" -d "$OUT"
echo "xlstm-build: $(ls "$OUT"/xlstm-*.whl)"
