#!/usr/bin/env bash
# Here (the build machine): the layer-wavefront benchmark's models
# (bench/wavefront.py) for CUDA in build/wavefront/: each stack compiled as a
# wavefront (the default) and layer by layer (--layer-wavefront=off), one
# layer of the same shape, the shape sweep's stacked extras (both ways), and
# the runtime libraries. RNN_NO_BUILD=1 skips
# building the compiler; WAVEFRONT_CHUNKS="8 16" also compiles each stack
# with chunks of 8 and of 16 steps (NAME_chunk8.so, timed beside the rest).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RNN_BUILD_DIR:-$ROOT/build}"
OUT="$BUILD/wavefront"
if [ -z "${RNN_NO_BUILD:-}" ]; then
  "$ROOT/scripts/build.sh" rnn-compile rnn_runtime rnn_runtime_cuda rnn_device_library >/dev/null
fi
rm -rf "$OUT" && mkdir -p "$OUT/mlir" "$OUT/models" "$OUT/lib"
cp "$BUILD"/lib/librnn_runtime.so "$BUILD"/lib/librnn_runtime_cuda.so \
  "$BUILD"/lib/rnn_device_library.bc "$OUT/lib/"
python3 "$ROOT/bench/wavefront.py" make "$OUT/mlir"
for f in "$OUT"/mlir/*.mlir; do
  name=$(basename "$f" .mlir)
  "$BUILD/bin/rnn-compile" --target=cuda "$f" -o "$OUT/models/$name.so" \
    --runtime-dir "$OUT/lib" &
  case "$name" in
    *_L1) ;;
    *_deep*) "$BUILD/bin/rnn-compile" --target=cuda --layer-wavefront=off "$f" \
         -o "$OUT/models/${name}_layered.so" --runtime-dir "$OUT/lib" & ;;
    *) "$BUILD/bin/rnn-compile" --target=cuda --layer-wavefront=off "$f" \
         -o "$OUT/models/${name}_layered.so" --runtime-dir "$OUT/lib" &
       for c in ${WAVEFRONT_CHUNKS:-}; do
         "$BUILD/bin/rnn-compile" --target=cuda --wavefront-chunk="$c" "$f" \
           -o "$OUT/models/${name}_chunk$c.so" --runtime-dir "$OUT/lib" &
       done ;;
  esac
  wait
done
# WAVEFRONT_TRAINING=1: the stacks bench/train_bench.py times (throughput,
# deep4) with --training, as wavefronts (train/) and layer by layer
# (train-layered/).
if [ -n "${WAVEFRONT_TRAINING:-}" ]; then
  mkdir -p "$OUT/train-src" "$OUT/train" "$OUT/train-layered"
  python3 "$ROOT/bench/make_models.py" "$OUT/train-src" >/dev/null
  for f in "$OUT"/train-src/{lstm,gru}{,_bf16}_I*_H*_L[24].mlir; do
    name=$(basename "$f" .mlir)
    "$BUILD/bin/rnn-compile" --target=cuda --training "$f" \
      -o "$OUT/train/$name.so" --runtime-dir "$OUT/lib" &
    "$BUILD/bin/rnn-compile" --target=cuda --training --layer-wavefront=off "$f" \
      -o "$OUT/train-layered/$name.so" --runtime-dir "$OUT/lib" &
    wait
  done
  rm -rf "$OUT/train-src"
fi
rm "$OUT/lib/rnn_device_library.bc"
echo "wavefront-build: $(ls "$OUT/models" | wc -l) models in $OUT ($(du -sh "$OUT" | cut -f1))"
