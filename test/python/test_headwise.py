"""Head-wise recurrence (rnn.headwise_matmul, rnn.headwise in the DSL) and the cells built on
it: rnn.zoo.headwise_lstm, headwise_gru and slstm, against float64 numpy references written
from the equations, forward and (through rnn-compile --training) gradients against float64
finite differences (gradcheck.py).

The head-wise LSTM and GRU are checked against reference.py's dense LSTM and GRU with the
block-diagonal matrix that R stands for (reference.block_diagonal, element by element), so the test pins the
op's layout (gate-major result, each head's [out, in] matrix) independently of the op's own
formula. The sLSTM reference runs the unstabilised recurrence in float64 (i = exp(i~),
f = exp(f~)); with pre-activations near 100 an unstabilised float32 exp overflows (exp(89) is
past float32's largest value) while the compiled cell, which keeps the stabiliser m, stays
finite and matches."""

import re

import numpy as np
import pytest

import gradcheck
import reference
from test_dsl_common import assert_close, params_of, rand, randomize, rnn

I, H, NH = 6, 8, 2
D = H // NH
T, B = 5, 3
SIZES = {"NH": NH}


def _model(cell, dtype="float32", seed=0, scale=0.3):
    return randomize(rnn.NumpyRNN(cell, I, H, sizes=SIZES, dtype=dtype), seed=seed,
                     scale=scale)


@pytest.mark.parametrize("name,gates,ref", [("headwise_lstm", 4, reference.lstm),
                                            ("headwise_gru", 3, reference.gru)])
def test_headwise_cells_against_dense(name, gates, ref):
    model = _model(rnn.zoo.CELLS[name], seed=len(name))
    W, R, b_W, b_U = params_of(model, ["W", "R", "b_W", "b_U"])
    assert R.shape == (NH, gates * D, D)
    rng = np.random.default_rng(3)
    xs = rand(rng, T, B, I)
    init = tuple(rand(rng, 1, B, H) for _ in model._spec.state_sizes)
    ys, final = model(xs, init if len(init) > 1 else init[0])
    final = final if isinstance(final, tuple) else (final,)
    refs = ref(xs, *[s[0] for s in init], W, reference.block_diagonal(R, gates), b_W, b_U)
    assert_close(ys, refs[0], f"{name}: output")
    for k, (ours, want) in enumerate(zip(final, refs[1:])):
        assert_close(ours[0], want, f"{name}: final state #{k}")


@pytest.mark.parametrize("dtype,rtol", [("float32", 1e-5), ("float64", 1e-12)])
def test_slstm(dtype, rtol):
    """From random states (a positive normaliser n, a random stabiliser m)."""
    model = _model(rnn.zoo.slstm, dtype=dtype, seed=11)
    W, R, b = params_of(model, ["W", "R", "b"])
    rng = np.random.default_rng(5)
    xs = rand(rng, T, B, I, dtype=dtype)
    h0, c0, m0 = (rand(rng, 1, B, H, dtype=dtype) for _ in range(3))
    n0 = (1.0 + np.abs(rand(rng, 1, B, H))).astype(dtype)
    ys, (h, c, n, m) = model(xs, (h0, c0, n0, m0))
    refs = reference.slstm(xs, h0[0], c0[0], n0[0], m0[0], W, R, b)
    for what, ours, ref in zip(("output", "h", "c", "n", "stabiliser m"),
                               (ys, h[0], c[0], n[0], m[0]), refs):
        assert_close(ours, ref, what, rtol)


def test_slstm_large_preactivations():
    """Input and forget pre-activations near 100: exp overflows float32, and the true c and
    n grow like exp(100 t); the stabilised cell stays finite and matches the float64
    reference."""
    model = _model(rnn.zoo.slstm, seed=12)
    model.param("b")[:2 * H] += 100.0  # rows i and f
    W, R, b = params_of(model, ["W", "R", "b"])
    rng = np.random.default_rng(6)
    xs = rand(rng, T, B, I, scale=3.0)
    h0 = rand(rng, 1, B, H)
    zeros = np.zeros((1, B, H), np.float32)
    with np.errstate(over="ignore"):
        assert np.isinf(np.exp(np.float32(100.0)))
    ys, (h, c, n, m) = model(xs, (h0, zeros, zeros, zeros))
    refs = reference.slstm(xs, h0[0], zeros[0], zeros[0], zeros[0], W, R, b)
    assert np.min(refs[4]) > 300, "the true c and n grow past exp(300)"
    for what, ours, ref in zip(("output", "h", "c", "n", "stabiliser m"),
                               (ys, h[0], c[0], n[0], m[0]), refs):
        assert_close(ours, ref, what, 1e-4)


# ------------------------------------------------------------------------------------------
# Gradients
# ------------------------------------------------------------------------------------------

HEADWISE_FUNCTION = """
func.func @f(%x: tensor<?x8xf64>, %R: tensor<2x12x4xf64>, %b: tensor<24xf64>)
    -> (tensor<?x24xf64>, tensor<?x8xf64>) {
  %y = rnn.headwise_matmul %x, %R gates 3 : tensor<?x8xf64>, tensor<2x12x4xf64> -> tensor<?x24xf64>
  %yb = rnn.add %y, %b : tensor<?x24xf64>, tensor<24xf64>
  %z = rnn.tanh %yb : tensor<?x24xf64>
  %w = rnn.headwise_matmul %z, %R gates 3 transposed : tensor<?x24xf64>, tensor<2x12x4xf64> -> tensor<?x8xf64>
  return %z, %w : tensor<?x24xf64>, tensor<?x8xf64>
}
"""


def test_headwise_function_forward_and_gradients(tmp_path):
    """The op outside a cell, both directions: forward against numpy, gradients (the
    transposed product and rnn.headwise_outer_sum) against finite differences."""
    path = rnn.compile_mlir(HEADWISE_FUNCTION, tmp_path / "f.so", training=True)
    model = rnn.Model(path)
    rng = np.random.default_rng(8)
    x = rng.standard_normal((5, 8))
    R = 0.5 * rng.standard_normal((2, 12, 4))
    b = 0.5 * rng.standard_normal(24)
    z, w = model("f", x, R, b)
    U = reference.block_diagonal(R, 3)
    z_ref = np.tanh(x @ U.T + b)
    assert_close(z, z_ref, "z", 1e-12)
    assert_close(w, z_ref @ U, "transposed product", 1e-12)
    msgs, _ = gradcheck.check_gradients(model, "f", [x, R, b])
    assert not msgs, "\n".join(msgs)


@pytest.mark.parametrize("name", ["headwise_lstm", "headwise_gru", "slstm"])
def test_cell_gradients(name, tmp_path):
    """The derived backward of each head-wise cell (the head-wise weight's gradient summed
    over all T*B rows after the loop) against float64 finite differences, from random states
    (slstm: a positive normaliser)."""
    model = _model(rnn.zoo.CELLS[name], dtype="float64", seed=21)
    text = model.mlir
    func = re.search(r"func\.func @(\w+)", text).group(1)
    path = rnn.compile_mlir(text, tmp_path / f"{name}.so", training=True)
    lib = rnn.Model(path)
    rng = np.random.default_rng(9)
    args = [rng.standard_normal((3, 2, I))]
    for s in model._spec.state_names:
        a = rng.standard_normal((2, H))
        args.append(1.0 + np.abs(a) if s == "n" else a)
    args += [np.array(p, np.float64) for _, p in model.named_parameters()]
    msgs, _ = gradcheck.check_gradients(lib, func, args)
    assert not msgs, f"{name}:\n" + "\n".join(msgs)


ONE_HEAD_FUNCTION = HEADWISE_FUNCTION.replace("2x12x4", "1x24x8")


def test_one_head_is_the_dense_product(tmp_path):
    """One head lowers to the dense product (one GEMM): forward and gradients as above,
    with a single [G*N, K] matrix."""
    path = rnn.compile_mlir(ONE_HEAD_FUNCTION, tmp_path / "f1.so", training=True)
    model = rnn.Model(path)
    rng = np.random.default_rng(12)
    x = rng.standard_normal((5, 8))
    R = 0.5 * rng.standard_normal((1, 24, 8))
    b = 0.5 * rng.standard_normal(24)
    z, w = model("f", x, R, b)
    z_ref = np.tanh(x @ R[0].T + b)
    assert_close(z, z_ref, "z", 1e-12)
    assert_close(w, z_ref @ R[0], "transposed product", 1e-12)
    msgs, _ = gradcheck.check_gradients(model, "f", [x, R, b])
    assert not msgs, "\n".join(msgs)


@pytest.mark.parametrize("name", ["headwise_gru", "slstm"])
def test_bf16_products(name, tmp_path):
    """--matmul-type=bf16 rounds the head-wise product's operands too (f32 accumulation,
    state and gate math): the training forward and backward of the float32 model so
    compiled stay within bf16's rounding of the float64 ones (normwise; ~2e-3 seen)."""
    model = _model(rnn.zoo.CELLS[name], seed=31)
    text = model.mlir
    func = re.search(r"func\.func @(\w+)", text).group(1)
    rng = np.random.default_rng(10)
    args = [rng.standard_normal((4, 3, I))]
    for s in model._spec.state_names:
        a = rng.standard_normal((3, H))
        args.append(1.0 + np.abs(a) if s == "n" else a)
    args += [np.array(p, np.float64) for _, p in model.named_parameters()]
    args = [a.astype(np.float32) for a in args]
    bf16 = rnn.Model(rnn.compile_mlir(text, tmp_path / "bf16.so", training=True,
                                      extra_args=["--matmul-type=bf16"]))
    f64 = rnn.Model(rnn.compile_mlir(text.replace("f32", "f64"), tmp_path / "f64.so",
                                     training=True))
    got, want = [], []
    for lib, dtype in ((bf16, np.float32), (f64, np.float64)):
        xs = [a.astype(dtype) for a in args]
        results, saved = lib.train_forward(func, *xs)
        weights = [np.ones_like(r) for r in results]
        grads = lib.backward(func, xs, results, saved, weights)
        (got if lib is bf16 else want).append(list(results) + [g for g in grads if g is not None])
    for k, (ours, ref) in enumerate(zip(got[0], want[0])):
        err = np.linalg.norm(ours - ref) / np.linalg.norm(ref)
        assert err <= 1e-2, f"{name}: result/gradient #{k}: normwise error {err:.3g}"


# ------------------------------------------------------------------------------------------
# The DSL
# ------------------------------------------------------------------------------------------

def _trace_error(body):
    @rnn.cell(states=("h",))
    def bad(x, h):
        return body(x, h)
    with pytest.raises((rnn.ShapeError, rnn.CellError)) as info:
        rnn.NumpyRNN(bad, I, H)
    return str(info.value)


def test_dsl_errors_name_shapes():
    msg = _trace_error(lambda x, h: rnn.headwise(h, rnn.param("R", (3, 4, 4)), gates=1))
    assert "[B, 8]" in msg and "[3, 4, 4]" in msg and "NH*K = 3*4 = 12" in msg
    msg = _trace_error(lambda x, h: rnn.headwise(h, rnn.param("R", (2, 6, 4)), gates=4))
    assert "not a multiple of gates=4" in msg
    msg = _trace_error(lambda x, h: rnn.headwise(h, rnn.param("R", (8, 8)), gates=1))
    assert "3-D weight" in msg and "[8, 8]" in msg


def test_heads_must_divide_hidden_size():
    with pytest.raises(rnn.CellError, match="not a multiple of the heads NH = 3"):
        rnn.NumpyRNN(rnn.zoo.slstm, I, H, sizes={"NH": 3})
