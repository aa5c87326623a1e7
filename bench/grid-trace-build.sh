#!/usr/bin/env bash
# Experiment (docs/performance-notes.md): the grid-wide kernels' step phases.
# Here: the device library compiled with RNN_PERSISTENT_TRACE (clock64 per phase,
# printed by the kernel at step 1000) and with RNN_PERSISTENT_TRACE_NO_WAIT as well
# (no step barrier: wrong results, the barrier's share of the step), and the plain
# library; the bf16 LSTM and GRU at GRID_SIZES compiled against each into
# build/grid-trace/<variant>/models. Carry build/grid-trace; run bench/grid-trace-run.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RNN_BUILD_DIR:-$ROOT/build}"
OUT="$ROOT/build/grid-trace"
"$ROOT/scripts/build.sh" rnn-compile rnn_runtime rnn_runtime_cuda rnn_device_library >/dev/null
rm -rf "$OUT" && mkdir -p "$OUT/lib" "$OUT/src"
cp "$BUILD"/lib/librnn_runtime.so "$BUILD"/lib/librnn_runtime_cuda.so "$OUT/lib/"
for H in ${GRID_SIZES:-768 1024 2048}; do
  python3 "$ROOT/bench/make_models.py" "$OUT/src" --size "$H" "$H" >/dev/null
done
for variant in ${GRID_TRACE_VARIANTS:-plain trace nowait}; do
  case $variant in
    plain) flags=() ;;
    trace) flags=(-DRNN_PERSISTENT_TRACE) ;;
    nowait) flags=(-DRNN_PERSISTENT_TRACE -DRNN_PERSISTENT_TRACE_NO_WAIT) ;;
    rows) flags=(-DRNN_PERSISTENT_ROW_COPIES) ;;
    rowstrace) flags=(-DRNN_PERSISTENT_ROW_COPIES -DRNN_PERSISTENT_TRACE) ;;
    chunks) flags=(-DRNN_PERSISTENT_CHUNK_COPIES) ;;
    noprefetchtrace) flags=(-DRNN_PERSISTENT_NO_PREFETCH -DRNN_PERSISTENT_TRACE) ;;
    chunkstrace) flags=(-DRNN_PERSISTENT_CHUNK_COPIES -DRNN_PERSISTENT_TRACE) ;;
  esac
  dir="$OUT/$variant"
  mkdir -p "$dir/models" "$dir/runtime"
  cp "$OUT"/lib/*.so "$dir/runtime/"
  /usr/lib/llvm-22/bin/clang++ -x cuda --cuda-device-only --cuda-path=/usr/local/cuda \
    --cuda-gpu-arch=sm_90a -Wno-unknown-cuda-version -std=c++17 -O3 -emit-llvm -c \
    "${flags[@]}" -I"$ROOT/include" "$ROOT/lib/DeviceLibrary/PersistentRecurrence.cu" \
    -o "$dir/runtime/rnn_device_library.bc"
  for H in ${GRID_SIZES:-768 1024 2048}; do
    for kind in lstm gru; do
      "$BUILD/bin/rnn-compile" --target=cuda --training "$OUT/src/${kind}_bf16_I${H}_H${H}.mlir" \
        -o "$dir/models/${kind}_bf16_I${H}_H${H}.so" --runtime-dir "$dir/runtime"
    done
  done
  rm -rf "$dir/runtime"
done
rm -rf "$OUT/src"
echo "grid-trace-build: $(du -sh "$OUT" | cut -f1)"
