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


@rnn.cell(states=("h", "c"))
def cell_reading_c(x, h, c):
    """An LSTM whose gates also read c through a matrix of their own: h·Uᵀ + c·Vᵀ."""
    W = param("W", (4 * H, I))
    U = param("U", (4 * H, H))
    V = param("V", (4 * H, H))
    b = param("b", (4 * H,))
    i, f, g, o = rnn.split(x @ W.T + h @ U.T + c @ V.T + b, 4)
    c2 = sigmoid(f) * c + sigmoid(i) * tanh(g)
    return sigmoid(o) * tanh(c2), c2


@rnn.cell(states=("h",))
def gate_feedback(x, h):
    """Gates a and b of the step feed the candidate through matrices of their own."""
    W = param("W", (3 * H, I))
    U = param("U", (3 * H, H))
    R_a = param("R_a", (H, H))
    R_b = param("R_b", (H, H))
    pa, pb, pc = rnn.split(x @ W.T + h @ U.T, 3)
    a = sigmoid(pa)
    b = tanh(pb)
    cand = tanh(pc + a @ R_a.T + b @ R_b.T)
    return a * h + (1 - a) * cand


def _flat(outs):
    if isinstance(outs, (tuple, list)):
        return [leaf for o in outs for leaf in _flat(o)]
    return [np.asarray(outs)]


@pytest.mark.parametrize("cell, per_step", [(cell_reading_c, "1 GEMM, 1 kernel"),
                                            (gate_feedback, "2 GEMMs, 2 kernels")],
                         ids=["two-states", "gate-feedback"])
def test_summed_products_one_gemm(cell, per_step):
    """rnn-concat-summed-matmuls: the products of one sum are one GEMM over the operands
    concatenated along K; the result matches the unoptimised build."""
    kw = dict(input_size=5, hidden_size=6, seed=4)
    opt = rnn.NumpyRNN(cell, **kw)
    ref = rnn.NumpyRNN(cell, optimize=False, **kw)
    for name, _ in opt.named_parameters():
        ref.params[name][...] = opt.params[name]
    text = opt.explain()
    assert f"per step: {per_step}" in text, text
    assert "concatenated along K by rnn-concat-summed-matmuls" in text, text
    off = rnn.runtime.explain_mlir(
        opt.mlir, extra_args=["--optimize-options=concat-summed-matmuls=false"])
    assert f"per step: {per_step}" not in off, off
    x = np.random.default_rng(1).standard_normal((7, 3, 5)).astype(np.float32)
    for got, want in zip(_flat(_run(opt, x, [7, 2, 5])), _flat(_run(ref, x, [7, 2, 5]))):
        np.testing.assert_allclose(got, want, atol=3e-6)


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


def test_cuda_model_says_which_loops_run_as_one_kernel():
    """A CUDA model (compiled here; no GPU needed) reports each time loop's choice: the
    head-wise sLSTM's heads of 4 units as a block kernel, the variant with lengths (its
    per-row selects are a second kernel in the step) step by step."""
    model = rnn.NumpyRNN(rnn.zoo.slstm, input_size=4, hidden_size=16, sizes={"NH": 4},
                         device="cuda", matmul_dtype="bfloat16", seed=0)
    text = model.explain()
    assert "func @forward on the GPU:\n  time loop 1: 4 heads of 4 units, 4 gates, bf16: " \
        "block kernel for B up to" in text, text
    assert "4 x B blocks of 32 threads, 1 lane a unit of 4 inputs each, the weights in " \
        "registers" in text, text
    assert "func @forward_lengths on the GPU:\n  time loop 1: step loop: its step is " \
        "neither one recurrent product" in text, text


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
        # z and tanh(x) stay in the step's fused groups.
        assert "per step: 2 GEMMs, 2 kernels" in text, text
        before = [line for line in text.splitlines() if "before the loop" in line]
        assert not any("rnn.sigmoid" in line or "rnn.tanh" in line for line in before), text
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
