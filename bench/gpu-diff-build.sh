#!/usr/bin/env bash
# Here (the build machine): the GPU differential test's cases (bench/gpu_diff.py build):
# 300 random cells (default; GPU_DIFF_CELLS=N) and the named DSL cells, each built for the
# CPU and for CUDA with and without rnn-optimize, into build/gpu-diff/cases, compressed
# into build/gpu-diff/cases.tar.xz; the runtime libraries and the OpenBLAS the CPU builds
# load (the GPU machine has none) into build/gpu-diff/lib. Carry build/gpu-diff/lib and
# build/gpu-diff/cases.tar.xz; bench/gpu-diff-run.sh runs them there.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RNN_BUILD_DIR:-$ROOT/build}"
OUT="$BUILD/gpu-diff"
"$ROOT/scripts/build.sh" rnn-compile rnn_runtime rnn_runtime_cuda rnn_device_library >/dev/null
rm -rf "$OUT" && mkdir -p "$OUT/lib"
cp "$BUILD"/lib/librnn_runtime.so "$BUILD"/lib/librnn_runtime_cuda.so "$OUT/lib/"
for lib in libopenblas.so.0 libgfortran.so.5 libquadmath.so.0; do
  cp -L "$(/sbin/ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')" "$OUT/lib/$lib"
done
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" \
  python3 "$ROOT/bench/gpu_diff.py" build "$OUT/cases" --cells "${GPU_DIFF_CELLS:-300}"
tar -C "$OUT" -cf - cases | xz -T0 -6 > "$OUT/cases.tar.xz"
xz -T0 -6 "$OUT"/lib/*.so*
echo "gpu-diff-build: $(du -sh "$OUT/cases.tar.xz" | cut -f1) of cases, $(du -sh "$OUT/lib" | cut -f1) of libraries"
