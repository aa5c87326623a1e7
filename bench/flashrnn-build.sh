#!/usr/bin/env bash
# Here (the build machine): everything bench/flashrnn-run.sh needs on the GPU machine, in
# build/flashrnn/:
#   wheels/   FlashRNN (PyPI `flashrnn`, pure Python: its CUDA kernels are compiled there by
#             torch.utils.cpp_extension with nvcc), einops, packaging and ninja (manylinux
#             x86_64, Python 3.12), for an offline pip install there;
#   models/<cell>_d<D>/   our CUDA models of FlashRNN's functions "slstm", "lstm" and "gru"
#             (the DSL cells slstm_flashrnn, lstm_flashrnn and gru_flashrnn of
#             bench/flashrnn_compare.py, FlashRNN's equations and parameter layouts) at
#             FlashRNN's head-dim grid: H = NH * D = 768, D in 16 32 64 128 256 768, input
#             768, bf16 matmul operands (matmul_dtype="bfloat16"),
#             rnn.NumpyRNN(..., device="cuda").save;
#   models/slstm_d<D>/, headwise_lstm_d<D>/, headwise_gru_d<D>/   the zoo's cells at the
#             same sizes, timed alongside (rnn.zoo.slstm: exponential forget gate, other
#             equations, for reference; rnn.zoo.headwise_lstm and headwise_gru: the same
#             functions as FlashRNN's with the weights mapped, checked too);
#   train-models/<cell>_d<D>.pt   our training step of each FlashRNN function and D: an
#             rnn.RNN of the cell (torch.save of the module, parameters on the meta device)
#             carrying its CUDA training library for torch.autocast(bfloat16), compiled here
#             (bench/flashrnn_compare.py build_train_models; needs torch here).
# Before building, it checks the cells and the weight mappings against FlashRNN's PyTorch
# backends on the CPU (bench/flashrnn_compare.py --cpu-check, tiny sizes), when torch
# is here.
# The weights do not travel: the saved params.npz hold zeros (compressed: 7 to 19 MB of
# float32 per model otherwise), and bench/flashrnn_compare.py draws deterministic random
# weights there and loads them into each model. The runtime libraries each saved model holds
# are those of build/gpu/lib (bench/build-gpu.sh), which travels once; bench/flashrnn-run.sh
# puts them back. Carry build/flashrnn and build/gpu/lib.
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
rm -rf "$OUT" && mkdir -p "$OUT/wheels" "$OUT/models" "$OUT/train-models"

# FlashRNN (the version whose equations the cells follow) and what it imports beyond
# torch (packaging: imported, not declared), pure Python; ninja as the GPU machine's Python
# 3.12 manylinux x86_64 wheel (binary).
pip download -q --no-deps flashrnn==1.0.8 einops packaging -d "$OUT/wheels"
pip download -q --no-deps --python-version 3.12 --only-binary=:all: \
  --platform manylinux2014_x86_64 ninja -d "$OUT/wheels"

# The mappings, on the CPU: our cells and FlashRNN's PyTorch backends against float64
# references.
if python3 -c "import torch" 2>/dev/null; then
  SITE="$(mktemp -d)"
  trap 'rm -rf "$SITE"' EXIT
  pip install -q --no-index --no-deps --target "$SITE" "$OUT"/wheels/flashrnn-*.whl \
    "$OUT"/wheels/einops-*.whl
  PYTHONPATH="$ROOT/python:$SITE${PYTHONPATH:+:$PYTHONPATH}" \
    python3 "$ROOT/bench/flashrnn_compare.py" --cpu-check 2>&1 \
    | grep -v "No CUDA runtime is found"
else
  echo "flashrnn-build: no torch here; the CPU check of the weight mappings is skipped"
fi

PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" python3 - "$ROOT/bench" "$OUT/models" <<'PY'
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import rnn
from flashrnn_compare import FUNCTIONS, HEAD_DIMS, HIDDEN, INPUT, model_name

out = sys.argv[2]
for fn in FUNCTIONS.values():
    for D in HEAD_DIMS:
        NH = HIDDEN // D
        for cell in (fn.cell, fn.zoo):
            m = rnn.NumpyRNN(cell, INPUT, HIDDEN, device="cuda", sizes={"NH": NH},
                             matmul_dtype="bfloat16")
            d = m.save(f"{out}/{model_name(D, cell.name)}")
            # The weights are drawn on the GPU machine: zeros here, compressed.
            np.savez_compressed(f"{d}/params.npz",
                                **{k: np.zeros_like(a) for k, a in m.named_parameters()})
            print(f"flashrnn-build: {model_name(D, cell.name)}: NH={NH} D={D} {m!r}"
                  f"{' (compile cache)' if m.from_cache else ''}")
PY
if python3 -c "import torch" 2>/dev/null; then
  PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" python3 - "$ROOT/bench" \
    "$OUT/train-models" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from flashrnn_compare import build_train_models  # the modules name their cells by this module

build_train_models(sys.argv[2])
PY
else
  echo "flashrnn-build: no torch here; our training modules are not built (ours train: not run)"
fi
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
ls -l "$OUT"/wheels "$OUT"/models/* "$OUT"/train-models
echo "flashrnn-build: $OUT $(du -sh "$OUT" | cut -f1), build/gpu/lib" \
  "$(du -sh "$BUILD/gpu/lib" | cut -f1) (carry both)"
