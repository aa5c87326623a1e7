"""Training through rnn.Model: the training record of a compiled model, the calling
convention of train_forward / backward, both save policies, bf16 matmuls, and the errors
a caller gets. The gradients themselves are checked against finite differences in
test_gradients.py."""

import numpy as np
import pytest

import rnn
from conftest import EXAMPLES_DIR

LSTM_ARGS = [(6, 3, 10), (3, 20), (3, 20), (80, 10), (80, 20), (80,), (80,)]


def lstm_args(dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s) * (0.3 if len(s) < 3 and s[0] == 80 else 1.0)).astype(dtype)
            for s in LSTM_ARGS]


@pytest.fixture(scope="module")
def compile_lstm(tmp_path_factory):
    out = tmp_path_factory.mktemp("training")
    source = (EXAMPLES_DIR / "lstm.mlir").read_text()

    def build(name, text=source, **kwargs):
        return rnn.Model(rnn.compile_mlir(text, out / f"{name}.so", **kwargs))

    return build


def gradients(model, args, seed=1):
    results, saved = model.train_forward("lstm_seq", *args)
    rng = np.random.default_rng(seed)
    weights = [rng.standard_normal(r.shape).astype(r.dtype) for r in results]
    return results, model.backward("lstm_seq", args, results, saved, weights)


def test_training_record(compile_lstm):
    model = compile_lstm("lstm-train", training=True)
    info = model.training_info("lstm_seq")
    assert info.train_function == "lstm_seq_train"
    assert info.backward_function == "lstm_seq_backward"
    assert info.gradient_args == tuple(range(7))
    _, train_results = model.signature("lstm_seq_train")
    assert len(train_results) == 3 + info.num_saved
    backward_args, backward_results = model.signature("lstm_seq_backward")
    assert len(backward_args) == 7 + 3 + info.num_saved + 3
    assert len(backward_results) == 7


def test_results_and_gradient_shapes(compile_lstm):
    model = compile_lstm("lstm-train", training=True)
    args = lstm_args(np.float32)
    results, grads = gradients(model, args)
    for ours, plain in zip(results, model("lstm_seq", *args)):
        np.testing.assert_array_equal(ours, plain)
    assert [g.shape for g in grads] == [a.shape for a in args]
    assert all(np.all(np.isfinite(g)) and np.any(g != 0) for g in grads)


def test_save_policies_agree(compile_lstm):
    """save=states recomputes what save=gates keeps: the same gradients, less saved."""
    gates = compile_lstm("lstm-gates", training=True, save="gates", text=(
        EXAMPLES_DIR / "lstm.mlir").read_text().replace("f32", "f64"))
    states = compile_lstm("lstm-states", training=True, save="states", text=(
        EXAMPLES_DIR / "lstm.mlir").read_text().replace("f32", "f64"))
    assert states.training_info("lstm_seq").num_saved < gates.training_info("lstm_seq").num_saved
    args = lstm_args(np.float64)
    _, g_gates = gradients(gates, args)
    _, g_states = gradients(states, args)
    for a, b in zip(g_gates, g_states):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_bf16_matmuls_against_f64(compile_lstm):
    """--matmul-type=bf16: gradients within bf16 rounding of the f64 ones."""
    bf16 = compile_lstm("lstm-bf16", training=True, extra_args=("--matmul-type=bf16",))
    f64 = compile_lstm("lstm-f64", training=True, text=(
        EXAMPLES_DIR / "lstm.mlir").read_text().replace("f32", "f64"))
    args = lstm_args(np.float64)
    _, ref = gradients(f64, args)
    _, ours = gradients(bf16, [a.astype(np.float32) for a in args])
    for k, (o, r) in enumerate(zip(ours, ref)):
        err = np.max(np.abs(o - r)) / np.max(np.abs(r))
        assert err < 2e-2, f"gradient of argument #{k}: relative error {err:.3g}"


def test_gru_bf16_matmuls_against_f64(compile_lstm):
    """--matmul-type=bf16 for the GRU, whose backward's product accumulates onto the direct
    path's f32 gradient (dh = z dh' + dgates U): within bf16 rounding of the f64 gradients."""
    from test_examples import ARGS
    text = (EXAMPLES_DIR / "gru.mlir").read_text()
    bf16 = compile_lstm("gru-bf16", text=text, training=True,
                        extra_args=("--matmul-type=bf16",))
    f64 = compile_lstm("gru-f64", text=text.replace("f32", "f64"), training=True)
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(tuple({"T": 6, "B": 3}.get(d, d) for d in spec))
            * (1.0 if any(d in ("T", "B") for d in spec) else 0.3) for spec in ARGS["gru"]]

    def grads(model, arrays):
        results, saved = model.train_forward("gru_seq", *arrays)
        w = np.random.default_rng(4)
        weights = [w.standard_normal(r.shape).astype(r.dtype) for r in results]
        return model.backward("gru_seq", arrays, results, saved, weights)

    ref = grads(f64, args)
    ours = grads(bf16, [a.astype(np.float32) for a in args])
    for k, (o, r) in enumerate(zip(ours, ref)):
        err = np.max(np.abs(o - r)) / np.max(np.abs(r))
        assert err < 2e-2, f"gradient of argument #{k}: relative error {err:.3g}"


def test_without_training(compile_lstm):
    model = compile_lstm("lstm-plain")
    with pytest.raises(rnn.RNNError, match="RNN_ERROR_NOT_FOUND.*--training"):
        model.training_info("lstm_seq")


def test_backward_checks_its_arguments(compile_lstm):
    model = compile_lstm("lstm-train", training=True)
    args = lstm_args(np.float32)
    results, saved = model.train_forward("lstm_seq", *args)
    with pytest.raises(ValueError, match="saved tensors"):
        model.backward("lstm_seq", args, results, saved[1:], results)
    wrong = [np.ones((r.shape[0] + 1,) + r.shape[1:], np.float32) for r in results]
    with pytest.raises(rnn.RNNError, match="RNN_ERROR_SHAPE_MISMATCH"):
        model.backward("lstm_seq", args, results, saved, wrong)
    with pytest.raises(ValueError, match="save= only applies"):
        rnn.compile_mlir((EXAMPLES_DIR / "lstm.mlir").read_text(), "unused.so", save="gates")


def run_descriptors(model, name, arrays):
    """Runs `name` on (numpy array, rnn dtype) pairs (bf16 as uint16 bit patterns); returns
    the results the same way."""
    numpy_of = {"f32": np.float32, "f64": np.float64, "bf16": np.uint16, "f16": np.float16}
    descs = [(a.ctypes.data, dtype, a.shape) for a, dtype in arrays]
    outs = [(np.zeros(shape, numpy_of[dtype]), dtype)
            for dtype, shape in model.result_descriptors(name, descs)]
    model.run_descriptors(name, descs, [(o.ctypes.data, d, o.shape) for o, d in outs])
    return outs


def test_bf16_storage_against_f64(tmp_path):
    """A cell with bf16 weights and a state cast to bf16 for the matmul (f32 accumulation):
    its gradients, the weight's in bf16, within bf16 rounding of float64 ones."""
    from test_bf16 import from_bf16_bits, to_bf16_bits
    from conftest import TEST_DIR
    source = (TEST_DIR / "models" / "bf16_state_cast.mlir").read_text()
    bf16 = rnn.Model(rnn.compile_mlir(source, tmp_path / "bf16.so", training=True))
    f64 = rnn.Model(rnn.compile_mlir(source.replace("bf16", "f64").replace("f32", "f64"),
                                     tmp_path / "f64.so", training=True))
    rng = np.random.default_rng(5)
    T, B = 6, 3
    xs = rng.standard_normal((T, B, 4)).astype(np.float32)
    h0 = rng.standard_normal((B, 4)).astype(np.float32)
    W = to_bf16_bits(0.5 * rng.standard_normal((4, 4)).astype(np.float32))
    args = [(xs, "f32"), (h0, "f32"), (W, "bf16")]
    outs = run_descriptors(bf16, "f_train", args)
    results, saved = outs[:2], outs[2:]
    dys = [(rng.standard_normal(r.shape).astype(np.float32), d) for r, d in results]
    grads = run_descriptors(bf16, "f_backward", args + results + saved + dys)
    assert [d for _, d in grads] == ["f32", "f32", "bf16"]

    args64 = [xs.astype(np.float64), h0.astype(np.float64), from_bf16_bits(W).astype(np.float64)]
    res64, saved64 = f64.train_forward("f", *args64)
    ref = f64.backward("f", args64, res64, saved64, [d.astype(np.float64) for d, _ in dys])
    ours = [grads[0][0], grads[1][0], from_bf16_bits(grads[2][0])]
    for k, (o, r) in enumerate(zip(ours, ref)):
        err = np.max(np.abs(o - r)) / np.max(np.abs(r))
        assert err < 3e-2, f"gradient of argument #{k}: relative error {err:.3g}"


@pytest.mark.parametrize("optimize", [True, False], ids=["opt", "noopt"])
def test_steps_and_function_level_matmul(tmp_path, optimize):
    """rnn.step (no scan) and a matmul between two steps: float64 finite differences."""
    import gradcheck
    from conftest import MODELS_DIR
    model = rnn.Model(rnn.compile_mlir(MODELS_DIR / "grad_steps.mlir", tmp_path / "steps.so",
                                       optimize=optimize, training=True))
    rng = np.random.default_rng(9)
    shapes = [(2, 3), (2, 4), (2, 4), (16, 3), (16, 4), (16,), (3, 4)]
    args = [rng.standard_normal(s) * (1.0 if s[0] == 2 else 0.3) for s in shapes]
    msgs, _ = gradcheck.check_gradients(model, "two_steps", args, seed=3)
    assert not msgs, "\n".join(msgs)


def test_sum_to_shapes(tmp_path):
    """rnn.sum_to down to every kind of shape the backward reduces to (a bias, a scalar, a
    [1, N] and a [1, 1, N] parameter, a row statistic) against numpy."""
    source = """
func.func @sums(%g: tensor<?x?x6xf64>) -> (tensor<6xf64>, tensor<f64>, tensor<1x6xf64>,
                                           tensor<1x1x6xf64>, tensor<?x?x1xf64>, tensor<1xf64>) {
  %a = rnn.sum_to %g : tensor<?x?x6xf64> -> tensor<6xf64>
  %b = rnn.sum_to %g : tensor<?x?x6xf64> -> tensor<f64>
  %c = rnn.sum_to %g : tensor<?x?x6xf64> -> tensor<1x6xf64>
  %d = rnn.sum_to %g : tensor<?x?x6xf64> -> tensor<1x1x6xf64>
  %e = rnn.sum_to %g : tensor<?x?x6xf64> -> tensor<?x?x1xf64>
  %f = rnn.sum_to %g : tensor<?x?x6xf64> -> tensor<1xf64>
  return %a, %b, %c, %d, %e, %f : tensor<6xf64>, tensor<f64>, tensor<1x6xf64>,
      tensor<1x1x6xf64>, tensor<?x?x1xf64>, tensor<1xf64>
}
"""
    model = rnn.Model(rnn.compile_mlir(source, tmp_path / "sums.so", optimize=False))
    g = np.random.default_rng(4).standard_normal((5, 3, 6))
    expected = [g.sum((0, 1)), g.sum(), g.sum((0, 1))[None], g.sum((0, 1))[None, None],
                g.sum(2, keepdims=True), g.sum()[None]]
    for k, (ours, ref) in enumerate(zip(model("sums", g), expected)):
        assert ours.shape == ref.shape, f"result #{k}: shape {ours.shape}, expected {ref.shape}"
        np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-12, err_msg=f"result #{k}")
