"""rnn.where and comparisons in the DSL: one rnn.select per where, every predicate, with
broadcasting and Python numbers, compiled and run against numpy; NaN follows IEEE (a
comparison with NaN is false, != true); and the errors."""

import numpy as np
import pytest

from test_dsl_common import rnn

from rnn import H, I, param, tanh, where


@rnn.cell(states=("h",))
def choosy(x, h):
    W = param("W", (H, I))
    s = x @ W.T
    a = where(s > 0.5, s, 0.0)                 # ThresholdedRelu(0.5), strict
    b = where(s >= 0, s, 0.1 * s)              # LeakyRelu
    c = where(rnn.lt(s, h), h, s)              # max(s, h) by hand, two tensors compared
    d = where(s <= -0.5, -1.0, tanh(s))        # numbers on either side
    e = where(rnn.eq(h, 0.0), 1.0, h)          # on the state
    f = where(rnn.ne(s, h), s, 2.0)
    return 0.1 * (a + b + c + d + e + f)


def reference(x, W, h):
    for t in range(x.shape[0]):
        s = x[t] @ W.T
        a = np.where(s > 0.5, s, 0.0)
        b = np.where(s >= 0, s, 0.1 * s)
        c = np.where(s < h, h, s)
        d = np.where(s <= -0.5, -1.0, np.tanh(s))
        e = np.where(h == 0.0, 1.0, h)
        f = np.where(s != h, s, 2.0)
        h = 0.1 * (a + b + c + d + e + f)
    return h


def test_trace_emits_selects():
    text = choosy.trace(4, 3).text
    for pred in ("gt", "ge", "lt", "le", "eq", "ne"):
        assert f"rnn.select {pred} " in text, pred
    assert text.count("rnn.select") == 6


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_where_matches_numpy(dtype):
    model = rnn.NumpyRNN(choosy, input_size=4, hidden_size=3, dtype=dtype, seed=3)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 5, 4)).astype(dtype)
    x[2, 1] = 0.0  # exact zeros reach the comparisons with 0
    _, h = model(x)
    ref = reference(x.astype(np.float64), model.param("W").astype(np.float64),
                    np.zeros((5, 3)))
    np.testing.assert_allclose(h[0], ref, rtol=1e-5, atol=1e-6)


def test_nan_compares_false_except_ne():
    @rnn.cell(states=("h",))
    def nan_probe(x, h):
        W = param("W", (H, I), init="ones")
        s = x @ W.T
        return (where(s > 0, 1.0, 0.0) + 2 * where(s <= 0, 1.0, 0.0)
                + 4 * where(rnn.eq(s, s), 1.0, 0.0) + 8 * where(rnn.ne(s, s), 1.0, 0.0))

    model = rnn.NumpyRNN(nan_probe, input_size=1, hidden_size=1)
    x = np.array([[[np.nan]], [[1.0]], [[-1.0]]], np.float32)
    ys, _ = model(x)
    assert ys[:, 0, 0].tolist() == [8.0, 1.0 + 4.0, 2.0 + 4.0]


def test_where_errors():
    @rnn.cell(states=("h",))
    def tensor_condition(x, h):
        return where(h, x, h)

    with pytest.raises(rnn.CellError, match=r"where: the condition must be a comparison .*"
                                            r"not a tensor; write `where\(rnn.ne\(t, 0\)"):
        tensor_condition.trace(3, 3)

    @rnn.cell(states=("h",))
    def truth(x, h):
        if h > 0:
            return h
        return x

    with pytest.raises(rnn.CellError, match="a comparison of symbolic tensors has no truth "
                                            r"value .* use it as rnn.where\(cond, a, b\)"):
        truth.trace(3, 3)

    @rnn.cell(states=("h",))
    def no_broadcast(x, h):
        return where(x > 0, x, h)

    with pytest.raises(rnn.ShapeError, match=r"where: shapes \[B, 5\] and \[B, 3\] do not "
                                             "broadcast"):
        no_broadcast.trace(5, 3)

    with pytest.raises(rnn.CellError, match=r"can only be called inside a cell"):
        where(1 > 0, 1.0, 2.0)
