#!/usr/bin/env bash
# Here (the build machine): the LSTM and GRU (GRID_KINDS, default "lstm gru"; the
# vanilla RNN is "rnn") of bench/make_models.py in the precisions GRID_PRECISIONS
# (default "bf16 f16": the bf16 models and their f16 twins; "f32", the f32 models with
# TF32 products), at hidden sizes the grid-wide persistent kernels
# cover (GRID_SIZES, default 512 768 1024 1536 2048: each product order and
# the LSTM's shared tile both ways),
# compiled with --training into build/grid-kernels/models, the runtime libraries into
# build/grid-kernels/lib. Carry build/grid-kernels; run bench/grid-kernels-run.sh there.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RNN_BUILD_DIR:-$ROOT/build}"
OUT="$ROOT/build/grid-kernels"
"$ROOT/scripts/build.sh" rnn-compile rnn_runtime rnn_runtime_cuda rnn_device_library >/dev/null
rm -rf "$OUT" && mkdir -p "$OUT/models" "$OUT/lib"
cp "$BUILD"/lib/librnn_runtime.so "$BUILD"/lib/librnn_runtime_cuda.so \
  "$BUILD"/lib/rnn_device_library.bc "$OUT/lib/"
for H in ${GRID_SIZES:-512 768 1024 1536 2048}; do
  python3 "$ROOT/bench/make_models.py" "$OUT/src" --size "$H" "$H" >/dev/null
  for kind in ${GRID_KINDS:-lstm gru}; do
    # The f16 twin: the same model with f16 storage (what bench/sweep.py does).
    sed 's/bf16/f16/g' "$OUT/src/${kind}_bf16_I${H}_H${H}.mlir" > "$OUT/src/${kind}_f16_I${H}_H${H}.mlir"
    cp "$OUT/src/${kind}_I${H}_H${H}.mlir" "$OUT/src/${kind}_f32_I${H}_H${H}.mlir"
    for t in ${GRID_PRECISIONS:-bf16 f16}; do
      "$BUILD/bin/rnn-compile" --target=cuda --training "$OUT/src/${kind}_${t}_I${H}_H${H}.mlir" \
        -o "$OUT/models/${kind}_${t}_I${H}_H${H}.so" --runtime-dir "$OUT/lib"
    done
  done
done
rm -rf "$OUT/src"
echo "grid-kernels-build: $(ls "$OUT/models" | wc -l) models ($(du -sh "$OUT" | cut -f1))"
