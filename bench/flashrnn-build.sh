#!/usr/bin/env bash
# Here (the build machine): everything bench/flashrnn-run.sh needs on the GPU machine, in
# build/flashrnn/:
#   wheels/   FlashRNN (PyPI `flashrnn`, pure Python: its CUDA kernels are compiled there by
#             torch.utils.cpp_extension with nvcc), einops, packaging and ninja (manylinux
#             x86_64, Python 3.12), for an offline pip install there;
#   models/slstm_flashrnn_d<D>/   our CUDA models of FlashRNN's sLSTM (the DSL cell
#             slstm_flashrnn of bench/flashrnn_slstm.py) at FlashRNN's head-dim grid:
#             H = NH * D = 768, D in 16 32 64 128 256 768, input 768, bf16 matmul operands
#             (matmul_dtype="bfloat16"), rnn.NumpyRNN(..., device="cuda").save;
#   models/slstm_d<D>/   the zoo's sLSTM (rnn.zoo.slstm: exponential forget gate, other
#             equations, same parameters) at the same sizes, timed alongside for reference.
# Before building, it checks the cell and the weight mapping against FlashRNN's PyTorch
# backends on the CPU (bench/flashrnn_slstm.py --cpu-check, tiny sizes), when torch
# is here.
# The weights do not travel: the saved params.npz hold zeros (compressed: 9 MB of float32 per
# model otherwise), and bench/flashrnn_slstm.py draws deterministic random weights there and
# loads them into each model. The runtime libraries each saved model holds are those of
# build/gpu/lib (bench/build-gpu.sh), which travels once; bench/flashrnn-run.sh puts them
# back. Carry build/flashrnn and build/gpu/lib.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RNN_BUILD_DIR:-$ROOT/build}"
OUT="$BUILD/flashrnn"
if [ ! -x "$BUILD/bin/rnn-compile" ] || [ ! -f "$BUILD/lib/librnn_runtime_cuda.so" ]; then
  "$ROOT/scripts/build.sh" rnn-compile rnn_runtime rnn_runtime_cuda >/dev/null
fi
if [ ! -f "$BUILD/gpu/lib/librnn_runtime_cuda.so" ]; then
  echo "flashrnn-build: $BUILD/gpu/lib is missing: run bench/build-gpu.sh first" >&2
  exit 1
fi
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
rm -rf "$OUT" && mkdir -p "$OUT/wheels" "$OUT/models"

# FlashRNN (the version whose equations slstm_flashrnn follows) and what it imports beyond
# torch (packaging: imported, not declared), pure Python; ninja as the GPU machine's Python
# 3.12 manylinux x86_64 wheel (binary).
pip download -q --no-deps flashrnn==1.0.8 einops packaging -d "$OUT/wheels"
pip download -q --no-deps --python-version 3.12 --only-binary=:all: \
  --platform manylinux2014_x86_64 ninja -d "$OUT/wheels"

# The mapping, on the CPU: our cell and FlashRNN's PyTorch backends against a float64 reference.
if python3 -c "import torch" 2>/dev/null; then
  SITE="$(mktemp -d)"
  trap 'rm -rf "$SITE"' EXIT
  pip install -q --no-index --no-deps --target "$SITE" "$OUT"/wheels/flashrnn-*.whl \
    "$OUT"/wheels/einops-*.whl
  PYTHONPATH="$ROOT/python:$SITE${PYTHONPATH:+:$PYTHONPATH}" \
    python3 "$ROOT/bench/flashrnn_slstm.py" --cpu-check 2>&1 | grep -v "No CUDA runtime is found"
else
  echo "flashrnn-build: no torch here; the CPU check of the weight mapping is skipped"
fi

PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" python3 - "$ROOT/bench" "$OUT/models" <<'PY'
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import rnn
from flashrnn_slstm import HEAD_DIMS, HIDDEN, INPUT, model_name, slstm_flashrnn

out = sys.argv[2]
for D in HEAD_DIMS:
    NH = HIDDEN // D
    for cell in (slstm_flashrnn, rnn.zoo.slstm):
        m = rnn.NumpyRNN(cell, INPUT, HIDDEN, device="cuda", sizes={"NH": NH},
                         matmul_dtype="bfloat16")
        d = m.save(f"{out}/{model_name(D, cell.name)}")
        # The weights are drawn on the GPU machine: zeros here, compressed.
        np.savez_compressed(f"{d}/params.npz",
                            **{k: np.zeros_like(a) for k, a in m.named_parameters()})
        print(f"flashrnn-build: {model_name(D, cell.name)}: NH={NH} D={D} {m!r}"
              f"{' (compile cache)' if m.from_cache else ''}")
PY
# Every saved model holds a copy of the runtime libraries; they are the ones in build/gpu/lib,
# which travels once (bench/flashrnn-run.sh puts them back beside each model).
for d in "$OUT"/models/*/; do
  for lib in librnn_runtime.so librnn_runtime_cuda.so; do
    if ! cmp -s "$d/$lib" "$BUILD/gpu/lib/$lib"; then
      echo "flashrnn-build: $BUILD/lib/$lib differs from $BUILD/gpu/lib/$lib (rebuilt since):" \
        "run bench/build-gpu.sh, then this again" >&2
      exit 1
    fi
    rm "$d/$lib"
  done
done
ls -l "$OUT"/wheels "$OUT"/models/*
echo "flashrnn-build: $OUT $(du -sh "$OUT" | cut -f1), build/gpu/lib" \
  "$(du -sh "$BUILD/gpu/lib" | cut -f1) (carry both)"
