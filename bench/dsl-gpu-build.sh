#!/usr/bin/env bash
# Here (the build machine): builds saved CUDA models made with the Python DSL into
# build/gpu/dsl/<model>/ (rnn.NumpyRNN(..., device="cuda").save): the zoo LSTM (I=32, H=48,
# 2 layers, bidirectional), the zoo GRU (I=32, H=48, 1 layer) and the tutorial's custom
# cell of docs/python.md (leaky_gru, I=32, H=48), every zoo cell at H=300 (in
# float32, and with bf16 matmuls) and the LayerNorm LSTM at H=1024 (float32), with
# deterministic random weights.
# bench/dsl-gpu-run.sh checks them there.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RNN_BUILD_DIR:-$ROOT/build}"
OUT="$BUILD/gpu/dsl"
if [ ! -x "$BUILD/bin/rnn-compile" ] || [ ! -f "$BUILD/lib/librnn_runtime_cuda.so" ]; then
  "$ROOT/scripts/build.sh" rnn-compile rnn_runtime rnn_runtime_cuda >/dev/null
fi
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
rm -rf "$OUT" && mkdir -p "$OUT"
PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" python3 - "$OUT" <<'PY'
import sys
import numpy as np
import rnn
from rnn import H, I, param, sigmoid, split, tanh

out = sys.argv[1]

@rnn.cell(states=("h",))
def leaky_gru(x, h):                         # docs/python.md, "A custom cell in a few lines"
    W = param("W", (2 * H, I))
    U = param("U", (2 * H, H))
    b = param("b", (2 * H,), init="zeros")
    z, n = split(x @ W.T + h @ U.T + b, 2)
    z = sigmoid(z)
    return (1 - z) * h + z * tanh(n)

def randomize(model, seed):
    """Deterministic weights in [-1/sqrt(H), 1/sqrt(H)] (biases too, also the zero-init b)."""
    rng = np.random.default_rng(seed)
    k = 1.0 / np.sqrt(model.hidden_size)
    for key, a in model.named_parameters():
        model.params[key] = rng.uniform(-k, k, np.shape(a)).astype(np.float32)

models = {
    "lstm": rnn.NumpyRNN(rnn.zoo.lstm, 32, 48, num_layers=2, bidirectional=True, device="cuda",
                    seed=1),
    "gru": rnn.NumpyRNN(rnn.zoo.gru, 32, 48, num_layers=1, device="cuda", seed=2),
    "leaky_gru": rnn.NumpyRNN(leaky_gru, 32, 48, device="cuda", seed=3),
}
# Every zoo cell at a wide, odd size (H = 300: rows longer than a block of
# threads and not a multiple of it, layer norms over 1200 features), checked
# against the float64 references of test/python/reference.py.
WIDE = 300
# And each again with bf16 matmuls (bf16 operands, f32 accumulation, state
# and pointwise math: matmul_dtype="bfloat16"), checked with bf16's tolerance.
for name, cell in rnn.zoo.CELLS.items():
    extra = {"proj_size": WIDE // 2} if name == "lstmp" else {}
    if name in ("headwise_lstm", "headwise_gru", "slstm"):
        extra = {"sizes": {"NH": 4}}  # heads of 75 units
    for suffix, mm in (("", None), ("_bf16", "bfloat16")):
        models[f"zoo_{name}{suffix}"] = rnn.NumpyRNN(cell, WIDE if name == "sru" else 64, WIDE,
                                                device="cuda", seed=4, matmul_dtype=mm,
                                                **extra)
# And the LayerNorm LSTM, the zoo's cell with a row-group kernel, at the
# benchmark's width (H = 1024, rows of 1024 and 4096: whole multiples of the
# 512-thread blocks, so its kernel keeps every column in registers between
# phases), in float32. (Only this one: the weights of every cell at this size
# would not fit what travels to the GPU machine.)
models["zoo_layernorm_lstm_h1024"] = rnn.NumpyRNN(rnn.zoo.CELLS["layernorm_lstm"], 64, 1024,
                                             device="cuda", seed=5)
for i, (name, m) in enumerate(models.items()):
    randomize(m, 100 + i)
    assert "allow_tf32" not in m.mlir, name
    m.save(f"{out}/{name}")
    print(f"dsl-gpu-build: {name}: {m!r} -> {out}/{name}"
          f"{' (compile cache)' if m.from_cache else ''}")
PY
# Every saved model holds a copy of the runtime libraries; they are the ones
# in build/gpu/lib, so only those travel to the GPU machine (the copies would
# take the carried folder past its size limit) and bench/dsl-gpu-run.sh puts
# them back beside each model.
for d in "$OUT"/*/; do
  cmp -s "$d/librnn_runtime_cuda.so" "$BUILD/gpu/lib/librnn_runtime_cuda.so"
  cmp -s "$d/librnn_runtime.so" "$BUILD/gpu/lib/librnn_runtime.so"
  rm "$d"/librnn_runtime.so "$d"/librnn_runtime_cuda.so
done
ls -l "$OUT"/*
