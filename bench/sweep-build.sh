#!/usr/bin/env bash
# Here (the build machine): the shape sweep's models (bench/sweep.py build: one per
# cell, precision and H of bench/sweep.json, for CUDA) with plan.json and
# cudnn-configs.json, compressed into build/sweep/models.tar.xz; the runtime libraries
# into build/sweep/lib; cudnn_rnn_bench into build/gpu-cudnn (bench/cudnn-bench-build.sh).
# SWEEP_MAX_H=H builds only the plan's shapes up to H, SWEEP_MIN_H=H those from H,
# SWEEP_CELLS=lstm,gru and SWEEP_PRECISIONS=bf16,fp16 only those (a partial sweep).
# Carry build/sweep/lib, build/sweep/models.tar.xz and build/gpu-cudnn; run
# bench/sweep-run.sh there.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RNN_BUILD_DIR:-$ROOT/build}"
OUT="$ROOT/build/sweep"
if [ -z "${RNN_NO_BUILD:-}" ]; then
  "$ROOT/scripts/build.sh" rnn-compile rnn_runtime rnn_runtime_cuda rnn_device_library >/dev/null
fi
rm -rf "$OUT" && mkdir -p "$OUT/lib"
cp "$BUILD"/lib/librnn_runtime.so "$BUILD"/lib/librnn_runtime_cuda.so \
  "$BUILD"/lib/rnn_device_library.bc "$OUT/lib/"
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
python3 "$ROOT/bench/sweep.py" build "$OUT/models" --compiler "$BUILD/bin/rnn-compile" \
  --runtime-dir "$OUT/lib" ${SWEEP_MAX_H:+--max-h "$SWEEP_MAX_H"} \
  ${SWEEP_MIN_H:+--min-h "$SWEEP_MIN_H"} ${SWEEP_CELLS:+--cells "$SWEEP_CELLS"} \
  ${SWEEP_PRECISIONS:+--precisions "$SWEEP_PRECISIONS"}
tar -C "$OUT" -cf - models | xz -T0 -6 > "$OUT/models.tar.xz" && rm -rf "$OUT/models"
xz -T0 -6 "$OUT"/lib/*.so "$OUT"/lib/*.bc
"$ROOT/bench/cudnn-bench-build.sh" >/dev/null
echo "sweep-build: $(du -sh "$OUT/models.tar.xz" | cut -f1) of models"
