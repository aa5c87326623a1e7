"""Fused groups with wide results: models/wide_results.mlir, whose cells concatenate
pointwise values along the last axis (an LSTM backward step's gate gradients, a wide state
and output around row reductions). After rnn-optimize each such concatenation is a result
of several pieces of one rnn.pointwise; compiled with and without optimisation, the models
must match float64 numpy references."""

import subprocess

import numpy as np
import pytest

import reference
from conftest import MODELS_DIR, RNN_OPT
from test_examples import check_close

MODEL = MODELS_DIR / "wide_results.mlir"
H = 20

SHAPES = [(6, 3), (1, 1), (4, 2)]
IDS = [f"T{T}B{B}" for T, B in SHAPES]


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def lstm_backward_cell(U):
    U = reference.f64(U)

    def cell(inputs, states):
        acts, c, cp, dy = inputs
        dh, dc = states
        i, f, g, o = np.split(acts, 4, axis=-1)
        dht = dy + dh
        tc = np.tanh(c)
        dct = dc + dht * o * (1.0 - tc * tc)
        di = dct * g * i * (1.0 - i)
        df = dct * cp * f * (1.0 - f)
        dg = dct * i * (1.0 - g * g)
        do = dht * tc * o * (1.0 - o)
        dgates = np.concatenate([di, df, dg, do], axis=-1)
        return (dgates,), (dgates @ U, dct * f)

    return cell


def run_backward(acts, cs, cps, dys, dh0, dc0, U, lengths=None):
    """The reverse scan of @lstm_backward; with `lengths`, positions t >= lengths[b] keep
    row b's states and output zeros."""
    cell = lstm_backward_cell(U)
    T, B = acts.shape[:2]
    states = [reference.f64(dh0), reference.f64(dc0)]
    dgates = np.zeros((T, B, 4 * H))
    for t in range(T - 1, -1, -1):
        (out,), new = cell([reference.f64(a[t]) for a in (acts, cs, cps, dys)], states)
        if lengths is None:
            states, dgates[t] = list(new), out
        else:
            live = (t < np.asarray(lengths))[:, None]
            states = [np.where(live, n, s) for n, s in zip(new, states)]
            dgates[t] = np.where(live, out, 0.0)
    return dgates, states[0], states[1]


def wide_mix_cell(W, bias):
    W, bias = reference.f64(W), reference.f64(bias)

    def cell(x, states):
        (s,) = states
        a, b = s[:, :8], s[:, 8:]
        n = reference.layer_norm(a)
        t = np.tanh(n + s @ W.T)
        u = b * b.mean(axis=-1, keepdims=True)
        s_new = np.concatenate([u, t], axis=-1) + bias
        return (np.concatenate([x, t, n], axis=-1),), (s_new,)

    return cell


def backward_args(T, B, seed):
    """Activations as the forward pass saves them: i, f, o in (0, 1), g in (-1, 1)."""
    rng = np.random.default_rng(seed)
    f = lambda *shape, s=1.0: (s * rng.standard_normal(shape)).astype(np.float32)
    pre = f(T, B, 4 * H)
    acts = np.concatenate([sigmoid(pre[..., :H]), sigmoid(pre[..., H:2 * H]),
                           np.tanh(pre[..., 2 * H:3 * H]), sigmoid(pre[..., 3 * H:])],
                          axis=-1).astype(np.float32)
    return [acts, f(T, B, H), f(T, B, H), f(T, B, H), f(B, H), f(B, H), f(4 * H, H, s=0.3)]


@pytest.mark.parametrize("T,B", SHAPES, ids=IDS)
@pytest.mark.parametrize("optimize", [True, False], ids=["opt", "noopt"])
def test_lstm_backward(load, optimize, T, B):
    args = backward_args(T, B, seed=10 * T + B)
    outs = load(MODEL, optimize)("lstm_backward_seq", *args)
    refs = run_backward(*args)
    check_close(outs, refs, f"lstm_backward_seq ({'opt' if optimize else 'noopt'}, "
                            f"T={T}, B={B})")


@pytest.mark.parametrize("optimize", [True, False], ids=["opt", "noopt"])
def test_lstm_backward_lengths(load, optimize):
    T, lengths = 5, [5, 2, 1, 4]
    args = backward_args(T, len(lengths), seed=77)
    lens = np.asarray(lengths, dtype=np.int32)
    outs = load(MODEL, optimize)("lstm_backward_lengths", *args[:4], lens, *args[4:])
    refs = run_backward(*args, lengths=lengths)
    check_close(outs, refs, f"lstm_backward_lengths ({'opt' if optimize else 'noopt'})")
    for b, n in enumerate(lengths):
        assert np.all(outs[0][n:, b, :] == 0.0), f"row {b} has nonzero padding outputs"


@pytest.mark.parametrize("T,B", SHAPES, ids=IDS)
@pytest.mark.parametrize("optimize", [True, False], ids=["opt", "noopt"])
def test_wide_mix(load, optimize, T, B):
    rng = np.random.default_rng(100 + 10 * T + B)
    f = lambda *shape, s=1.0: (s * rng.standard_normal(shape)).astype(np.float32)
    xs, s0, W, bias = f(T, B, 8), f(B, 16), f(8, 16, s=0.3), f(16, s=0.3)
    outs = load(MODEL, optimize)("wide_mix_seq", xs, s0, W, bias)
    (ys,), (sT,) = reference.scan(wide_mix_cell(W, bias), reference.f64(xs), [s0])
    check_close(outs, [ys, sT], f"wide_mix_seq ({'opt' if optimize else 'noopt'}, "
                                f"T={T}, B={B})")


def test_groups_have_wide_results():
    """The optimised cells are what the numeric tests are about: one group each, with
    results of several pieces and no concatenation left."""
    out = subprocess.run([RNN_OPT, str(MODEL), "--rnn-optimize"], check=True,
                         capture_output=True, text=True).stdout
    cells = out.split("rnn.cell @")[1:]
    assert len(cells) == 2
    for cell in cells:
        body = cell.split("\n  func.func")[0]
        assert body.count("rnn.pointwise(") == 1, body
        assert "rnn.concat" not in body, body
    assert "-> tensor<?x20xf32>, tensor<?x80xf32> pieces 4 {" in cells[0]
    assert "-> tensor<?x16xf32> pieces 2, tensor<?x24xf32> pieces 3 {" in cells[1]
