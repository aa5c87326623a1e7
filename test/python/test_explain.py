"""model.explain(): what a compiled model launches per step and why (rnn-compile --explain),
on the zoo's LSTM (one GEMM and one fused kernel per step), a two-stage cell (MGU), and a
cell with the patterns of issue #28 (input-only gates, a function of the state before a
matmul), whose optimised build must also match the unoptimised one."""

import numpy as np
import pytest

from test_dsl_common import rnn
from rnn import H, I, param, sigmoid, tanh


@rnn.cell(states=("h",))
def mut1(x, h):
    """z reads the input alone; r = sigmoid(x W_r + h U_r); the candidate adds tanh(x)."""
    W_z = param("W_z", (H, I))
    b_z = param("b_z", (H,))
    W_r = param("W_r", (H, I))
    U_r = param("U_r", (H, H))
    b_r = param("b_r", (H,))
    U_h = param("U_h", (H, H))
    b_h = param("b_h", (H,))
    z = sigmoid(x @ W_z.T + b_z)
    r = sigmoid(x @ W_r.T + h @ U_r.T + b_r)
    return tanh((r * h) @ U_h.T + tanh(x) + b_h) * z + h * (1 - z)


@rnn.cell(states=("h",))
def tanh_state(x, h):
    """The recurrent matmul reads tanh(h): carried as a state of its own."""
    W = param("W", (H, I))
    U = param("U", (H, H))
    return sigmoid(x @ W.T + tanh(h) @ U.T)


def test_lstm_one_gemm_one_kernel():
    text = rnn.NumpyRNN(rnn.zoo.lstm, input_size=4, hidden_size=8, seed=0).explain()
    assert text.startswith("function @forward\n"), text
    assert "function @forward_lengths\n" in text
    assert text.count("per step: 1 GEMM, 1 kernel") == 2, text
    assert "input projection over all T*B rows, hoisted by rnn-hoist-input-projection" in text
    assert "accumulates onto a hoisted input row (rnn-accumulate-into-projection)" in text
    assert "by rnn-fuse-pointwise" in text


def test_mgu_two_stages():
    text = rnn.NumpyRNN(rnn.zoo.mgu, input_size=4, hidden_size=8, seed=0).explain()
    assert "per step: 2 GEMMs, 2 kernels" in text, text
    assert "reads the previous group's result: a dependent stage" in text


def test_unoptimised_model_explains_what_it_runs():
    model = rnn.NumpyRNN(rnn.zoo.lstm, input_size=4, hidden_size=8, seed=0, optimize=False)
    text = model.explain()
    assert "per step: 2 GEMMs" in text, text
    assert "rnn-" not in text.replace("rnn.", ""), text


def _run(model, x, lengths):
    return model(x, lengths=lengths)


@pytest.mark.parametrize("layers", [dict(num_layers=2), dict(bidirectional=True)],
                         ids=["stacked", "bidirectional"])
@pytest.mark.parametrize("cell", [mut1, tanh_state])
def test_issue_patterns_explained_and_exact(cell, layers):
    # tanh(x) needs I = H: a stack of two layers, or both directions of one.
    kw = dict(input_size=6, hidden_size=6, seed=3, **layers)
    opt = rnn.NumpyRNN(cell, **kw)
    ref = rnn.NumpyRNN(cell, optimize=False, **kw)
    for name, _ in opt.named_parameters():
        ref.params[name][...] = opt.params[name]
    text = opt.explain()
    if cell is mut1:
        assert "hoisted by rnn-hoist-input-pointwise" in text, text
        assert "per step: 2 GEMMs, 2 kernels" in text, text
    else:
        assert "added by rnn-carry-state-pointwise" in text, text
        assert "reads a state carried by rnn-carry-state-pointwise" in text, text
        assert "per step: 1 GEMM, 1 kernel" in text, text
    x = np.random.default_rng(0).standard_normal((7, 3, 6)).astype(np.float32)
    lengths = [7, 3, 5]
    y, h = _run(opt, x, lengths)
    y_ref, h_ref = _run(ref, x, lengths)
    np.testing.assert_allclose(y, y_ref, atol=2e-6)
    np.testing.assert_allclose(h, h_ref, atol=2e-6)


def test_torch_module_explains_forward_and_backward():
    torch = pytest.importorskip("torch")
    text = rnn.RNN(rnn.zoo.lstm, 4, 8).explain()
    assert "_backward\n" in text, text
    assert "per step: 1 GEMM, 1 kernel" in text, text
    del torch
