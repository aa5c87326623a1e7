"""Every zoo cell (rnn.zoo, written in the DSL) through rnn.NumpyRNN against the float64 numpy
references of reference.py (the same equations and parameter layouts as examples/), and a
custom cell that uses every primitive of the DSL against a numpy evaluation."""

import numpy as np
import pytest

import reference
from test_dsl_common import assert_close, rand, randomize, params_of, rnn

I, H, P = 10, 20, 12
T, B = 6, 3


def rnn_relu_ref(xs, h0, W, U, b_W, b_U):
    def cell(x, states):
        (h,) = states
        h_new = reference.relu(reference.linear(x, W, b_W) + reference.linear(h, U, b_U))
        return (h_new,), (h_new,)
    return reference._seq(cell, xs, (h0,))


# cell -> (reference function, parameter names in the reference's order, extra RNN kwargs,
#          input size)
ZOO = {
    "rnn_tanh": (reference.rnn_tanh, ["W", "U", "b_W", "b_U"], {}, I),
    "rnn_relu": (rnn_relu_ref, ["W", "U", "b_W", "b_U"], {}, I),
    "lstm": (reference.lstm, ["W", "U", "b_W", "b_U"], {}, I),
    "gru": (reference.gru, ["W", "U", "b_W", "b_U"], {}, I),
    "gru_reset_before": (reference.gru_reset_before, ["W", "U", "b_W", "b_U"], {}, I),
    "peephole_lstm": (reference.peephole_lstm,
                      ["W", "U", "b_W", "b_U", "p_i", "p_f", "p_o"], {}, I),
    "cifg_lstm": (reference.cifg_lstm, ["W", "U", "b_W", "b_U"], {}, I),
    "lstmp": (reference.lstmp, ["W", "U", "b_W", "b_U", "W_hr"], {"proj_size": P}, I),
    "mgu": (reference.mgu, ["W", "U", "b"], {}, I),
    "sru": (reference.sru, ["W", "b", "v_f", "v_r"], {}, H),
    "indrnn": (reference.indrnn, ["W", "u", "b"], {}, I),
    "layernorm_lstm": (reference.layernorm_lstm,
                       ["W", "U", "gamma_x", "beta_x", "gamma_h", "beta_h", "b", "gamma_c",
                        "beta_c"], {}, I),
    # Head-wise: 4 heads of 5 units.
    "headwise_lstm": (reference.headwise_lstm, ["W", "R", "b_W", "b_U"],
                      {"sizes": {"NH": 4}}, I),
    "headwise_gru": (reference.headwise_gru, ["W", "R", "b_W", "b_U"], {"sizes": {"NH": 4}}, I),
    "slstm": (reference.slstm, ["W", "R", "b"], {"sizes": {"NH": 4}}, I),
}


def test_zoo_is_complete():
    assert set(ZOO) == set(rnn.zoo.CELLS)


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_cell(name):
    ref_fn, names, kw, in_size = ZOO[name]
    cell = rnn.zoo.CELLS[name]
    model = randomize(rnn.NumpyRNN(cell, in_size, H, **kw), seed=len(name))
    assert [n for n in model._spec.param_names] == names, "parameter order as in examples/"
    rng = np.random.default_rng(7)
    xs = rand(rng, T, B, in_size)
    init = tuple(rand(rng, 1, B, n) for n in model._spec.state_sizes)
    if name == "slstm":  # its normaliser n is positive
        init = init[:2] + (1.0 + np.abs(init[2]),) + init[3:]
    ys, final = model(xs, init if len(init) > 1 else init[0])
    final = final if isinstance(final, tuple) else (final,)
    refs = ref_fn(xs, *[s[0] for s in init], *params_of(model, names))
    assert ys.dtype == np.float32 and ys.shape == refs[0].shape
    assert_close(ys, refs[0], f"{name}: output")
    for k, (ours, ref) in enumerate(zip(final, refs[1:])):
        assert ours.shape == (1,) + ref.shape
        assert_close(ours[0], ref, f"{name}: final state #{k}")


def test_zoo_without_optimisation():
    model = randomize(rnn.NumpyRNN(rnn.zoo.gru_reset_before, I, H, optimize=False), seed=3)
    rng = np.random.default_rng(1)
    xs, h0 = rand(rng, T, B, I), rand(rng, 1, B, H)
    ys, hT = model(xs, h0)
    refs = reference.gru_reset_before(xs, h0[0], *params_of(model, ["W", "U", "b_W", "b_U"]))
    assert_close(ys, refs[0], "output")
    assert_close(hT[0], refs[1], "final state")


def test_zoo_float64():
    model = randomize(rnn.NumpyRNN(rnn.zoo.lstm, I, H, dtype="float64"), seed=5)
    rng = np.random.default_rng(2)
    xs = rand(rng, T, B, I, dtype=np.float64)
    ys, (hT, cT) = model(xs)
    zeros = np.zeros((B, H))
    refs = reference.lstm(xs, zeros, zeros, *params_of(model, ["W", "U", "b_W", "b_U"]))
    assert ys.dtype == np.float64
    for ours, ref in zip((ys, hT[0], cT[0]), refs):
        assert_close(ours, ref, "float64", rtol=1e-12)


def test_sru_needs_equal_sizes():
    with pytest.raises(rnn.CellError, match="input_size == hidden_size"):
        rnn.NumpyRNN(rnn.zoo.sru, I, H)


# A custom cell using every primitive the DSL has.
@rnn.cell(states={"h": rnn.H, "s": 2 * rnn.H})
def everything(x, h, s):
    W = rnn.param("W", (3 * rnn.H, rnn.I))
    V = rnn.param("V", (rnn.H, rnn.H))
    g = rnn.param("g", (rnn.H,), init="ones")
    a, b, c = rnn.split(rnn.linear(x, W), 3)
    d = rnn.matmul(h, V, weight_in_out=True)            # h @ V with V [in, out]
    e = rnn.exp(-rnn.relu(a)) + rnn.log(1.0 + b * b)     # constants, neg, exp, log
    f = rnn.sqrt(c * c + 0.5) - rnn.rsqrt(1 + d ** 2) / 2
    m = rnn.maximum(e, f) - rnn.minimum(e, 0.25)
    r = m - rnn.reduce_mean(m) + rnn.reduce_max(f) * 0.1 - rnn.reduce_sum(e) / rnn.size(rnn.H)
    n = rnn.layer_norm(r, eps=1e-3) * g
    n64 = rnn.cast(rnn.cast(n, "float64") * 0.5, "float32")
    s1, s2 = rnn.split(s, 2)
    h_new = rnn.tanh(n64 + rnn.sigmoid(s1) * h)
    s_new = rnn.concat([h_new, 0.9 * s2 + rnn.constant(0.01)])
    return h_new, s_new


def everything_ref(x, h, s, W, V, g):
    sig = reference.sigmoid
    a, b, c = np.split(x @ W.T, 3, axis=-1)
    d = h @ V
    e = np.exp(-np.maximum(a, 0)) + np.log(1.0 + b * b)
    f = np.sqrt(c * c + 0.5) - 1 / np.sqrt(1 + d ** 2) / 2
    m = np.maximum(e, f) - np.minimum(e, 0.25)
    r = (m - m.mean(-1, keepdims=True) + f.max(-1, keepdims=True) * 0.1
         - e.sum(-1, keepdims=True) / h.shape[-1])
    n = reference.layer_norm(r, eps=1e-3) * g
    s1, s2 = np.split(s, 2, axis=-1)
    h_new = np.tanh(n * 0.5 + sig(s1) * h)
    s_new = np.concatenate([h_new, 0.9 * s2 + 0.01], axis=-1)
    return (h_new,), (h_new, s_new)


def test_every_primitive():
    model = randomize(rnn.NumpyRNN(everything, 6, 8), seed=11)
    text = model.mlir
    for op in ("matmul", "weight_in_out", "split", "exp", "relu", "neg", "log", "sqrt",
               "rsqrt", "max", "min", "reduce_mean", "reduce_max", "reduce_sum", "layer_norm",
               "cast", "sigmoid", "tanh", "concat", "constant", "div", "mul", "sub", "add"):
        assert f"rnn.{op}" in text or op == "weight_in_out" and op in text, op
    rng = np.random.default_rng(3)
    xs = rand(rng, 5, 2, 6)
    h0, s0 = rand(rng, 1, 2, 8), rand(rng, 1, 2, 16)
    ys, (hT, sT) = model(xs, (h0, s0))
    W, V, g = (model.param(n).astype(np.float64) for n in ("W", "V", "g"))
    (ref_ys,), (ref_h, ref_s) = reference.scan(
        lambda x, st: everything_ref(x, st[0], st[1], W, V, g), xs, (h0[0], s0[0]))
    assert_close(ys, ref_ys, "output", rtol=1e-4)
    assert_close(hT[0], ref_h, "h", rtol=1e-4)
    assert_close(sT[0], ref_s, "s", rtol=1e-4)
