#!/usr/bin/env bash
# On the GPU machine (after bench/wavefront-build.sh here, carrying
# build/wavefront): bench/wavefront.py run, JSON to $OUT/wavefront.json.
# WAVEFRONT_TRAINING=1 times the training step of throughput and deep4
# (bench/train_bench.py, the layer-by-layer build with --compare) instead;
# WAVEFRONT_EXTRAS=1 runs the shape sweep's stacked extras instead
# (wavefront-extras.json), then cudnn_rnn_bench's algorithms on the same
# shapes (after bench/cudnn-bench-build.sh here, carrying build/gpu-cudnn).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GPU="${WAVEFRONT_DIR:-$ROOT/build/wavefront}"
source "$ROOT/bench/gpu-env.sh"
export OUT="${OUT:-/tmp}"
if [ -n "${WAVEFRONT_TRAINING:-}" ]; then
  PYTHONUNBUFFERED=1 python3 "$ROOT/bench/train_bench.py" "$GPU/train" \
    "$OUT/train-wavefront.json" --configs throughput,deep4 --compare "$GPU/train-layered"
elif [ -n "${WAVEFRONT_EXTRAS:-}" ]; then
  PYTHONUNBUFFERED=1 python3 "$ROOT/bench/wavefront.py" extras "$GPU/models" \
    "$OUT/wavefront-extras.json"
  python3 "$ROOT/bench/wavefront.py" cudnn-configs "$OUT/extras-configs.json"
  "$ROOT/bench/cudnn-bench-run.sh" --configs "$OUT/extras-configs.json" \
    --precisions fp32,fp16,bf16 --inference-only
else
  PYTHONUNBUFFERED=1 python3 "$ROOT/bench/wavefront.py" run "$GPU/models" "$OUT/wavefront.json"
fi
