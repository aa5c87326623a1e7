"""bench/sweep.py: the sampled plan covers every H, B and T of each cell, and the sweep's
models (LSTM, GRU, RNN-tanh in fp32 and with bf16 / fp16 storage) compute what torch.nn's
modules compute, on the CPU at a small size."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from test_dsl_common import rnn  # noqa: F401  (puts python/ on the path)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import sweep  # noqa: E402

BUILD = os.environ.get("RNN_BUILD_DIR", os.path.join(ROOT, "build"))


def test_plan_covers_every_size():
    s = json.load(open(os.path.join(ROOT, "bench", "sweep.json")))
    shapes = sweep.plan(s)
    for cell in s["cells"]:
        mine = [x for x in shapes if x["cell"] == cell]
        for key in ("H", "B", "T"):
            assert {x[key] for x in mine} == set(s[key]), (cell, key)
        assert all(x["T"] * x["B"] * x["H"] <= sweep.MAX_ELEMENTS for x in mine)


def test_bf16_model_is_the_fp16_one_in_bf16():
    # numpy has no bfloat16 to call it with: the fp16 model, checked below, is the same
    # text with the other 16-bit type.
    for cell in sweep.CELLS:
        assert sweep.model_text(cell, "bf16", 16).replace("bf16", "f16") == \
            sweep.model_text(cell, "fp16", 16)
        assert "bf16" in sweep.model_text(cell, "bf16", 16)


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
@pytest.mark.parametrize("cell", sweep.CELLS)
def test_models_match_torch(cell, precision, tmp_path):
    torch = pytest.importorskip("torch")
    H, T, B = 16, 5, 3
    src = tmp_path / "m.mlir"
    src.write_text(sweep.model_text(cell, precision, H))
    so = tmp_path / "m.so"
    subprocess.run([os.path.join(BUILD, "bin", "rnn-compile"), str(src), "-o", str(so)],
                   check=True)
    torch.manual_seed(0)
    module = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn_tanh": torch.nn.RNN}[cell](H, H)
    x = torch.randn(T, B, H)
    states = [torch.randn(B, H) for _ in range(2 if cell == "lstm" else 1)]
    with torch.no_grad():
        want = module(x, tuple(s[None] for s in states) if cell == "lstm" else states[0][None])[0]
    model = rnn.runtime.Model(str(so))
    store = (lambda t: t.numpy()) if precision == "fp32" else \
        (lambda t: t.to(torch.float16).numpy())
    args = [store(x)] + [s.numpy() for s in states] + [
        store(module.weight_ih_l0.detach()), store(module.weight_hh_l0.detach()),
        module.bias_ih_l0.detach().numpy(), module.bias_hh_l0.detach().numpy()]
    got = model(f"{cell}_seq", *args)[0]
    tol = 1e-5 if precision == "fp32" else 2e-2
    np.testing.assert_allclose(got, want.numpy(), atol=tol, rtol=tol)
