#!/usr/bin/env bash
# On the GPU machine (after bench/sweep-build.sh here, carrying build/sweep/lib,
# build/sweep/models.tar.xz and build/gpu-cudnn): our models against torch's cuDNN
# (bench/sweep.py run: $OUT/sweep.json), then every cuDNN algorithm on the same shapes in
# inference mode (bench/cudnn-bench-run.sh --inference-only: $OUT/cudnn-rnn-bench.json and
# .txt; SWEEP_CUDNN_PRECISIONS=fp16,bf16 for a 16-bit partial sweep). bench/sweep.py
# report joins the two.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GPU="$ROOT/build/sweep"
xz -d -f "$GPU"/lib/*.xz 2>/dev/null || true
tar -C "$GPU" -xJf "$GPU/models.tar.xz"
export OUT="${OUT:-/tmp}"
(
  source "$ROOT/bench/gpu-env.sh"
  PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 \
    python3 "$ROOT/bench/sweep.py" run "$GPU/models" "$OUT/sweep.json"
) || echo "sweep-run: a shape failed its check (see $OUT/sweep.json)"
"$ROOT/bench/cudnn-bench-run.sh" --configs "$GPU/models/cudnn-configs.json" \
  --cells lstm,gru,rnn_tanh --precisions "${SWEEP_CUDNN_PRECISIONS:-fp32,fp16,bf16}" \
  --inference-only --repeats 10 \
  > /dev/null
