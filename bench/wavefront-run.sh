#!/usr/bin/env bash
# On the GPU machine (after bench/wavefront-build.sh here, carrying
# build/wavefront): bench/wavefront.py run, JSON to $OUT/wavefront.json.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GPU="${WAVEFRONT_DIR:-$ROOT/build/wavefront}"
source "$ROOT/bench/gpu-env.sh"
export OUT="${OUT:-/tmp}"
PYTHONUNBUFFERED=1 python3 "$ROOT/bench/wavefront.py" run "$GPU/models" "$OUT/wavefront.json"
