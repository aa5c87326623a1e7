#!/usr/bin/env bash
# Configures (once) and builds the project into build/ (or $RNN_BUILD_DIR).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RNN_BUILD_DIR:-$ROOT/build}"
LLVM=/usr/lib/llvm-22

"$ROOT/scripts/install-deps.sh"

# RNN_CMAKE_ARGS: more cache settings, space-separated (scripts/test-sanitizers.sh
# passes -DRNN_ENABLE_SANITIZERS=ON); applied to an existing build directory too.
EXTRA_CMAKE_ARGS=()
if [[ -n "${RNN_CMAKE_ARGS:-}" ]]; then read -ra EXTRA_CMAKE_ARGS <<<"$RNN_CMAKE_ARGS"; fi

if [[ ! -f "$BUILD/build.ninja" ]]; then
  cmake -G Ninja -S "$ROOT" -B "$BUILD" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=$LLVM/bin/clang -DCMAKE_CXX_COMPILER=$LLVM/bin/clang++ \
    -DLLVM_USE_LINKER=lld \
    -DMLIR_DIR=$LLVM/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=$LLVM/bin/lit \
    -DCUDAToolkit_ROOT="${CUDA_HOME:-/usr/local/cuda}" "${EXTRA_CMAKE_ARGS[@]}" >/dev/null
elif ((${#EXTRA_CMAKE_ARGS[@]})); then
  cmake -S "$ROOT" -B "$BUILD" "${EXTRA_CMAKE_ARGS[@]}" >/dev/null
fi
ninja -C "$BUILD" "$@"
