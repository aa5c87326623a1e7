"""bf16 storage with f32 accumulation on the CPU target: a cell that casts
its f32 state to bf16 for the matmul, against a numpy reference that rounds
to bf16 the same way (round to nearest even)."""

import ctypes

import numpy as np
import pytest

import reference
import rnn
from rnn.runtime import RnnTensor, load_runtime
from conftest import EXAMPLES_DIR, TEST_DIR
from test_examples import ARGS, make_args, rel_err, seed_of


def to_bf16_bits(a):
    """float32 -> bf16 bit patterns (uint16), round to nearest even."""
    bits = np.ascontiguousarray(a, np.float32).view(np.uint32)
    rounding = ((bits >> 16) & 1) + 0x7FFF
    return ((bits + rounding) >> 16).astype(np.uint16)


def from_bf16_bits(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def tensor(a, dtype_code):
    t = RnnTensor()
    t.data = a.ctypes.data
    t.dtype = dtype_code
    t.rank = a.ndim
    for i, s in enumerate(a.shape):
        t.shape[i] = s
    return t


@pytest.mark.parametrize("optimize", [True, False], ids=["opt", "noopt"])
def test_bf16_state_cast(tmp_path, optimize):
    lib = rnn.compile_mlir(TEST_DIR / "models" / "bf16_state_cast.mlir",
                           tmp_path / "bf16.so", optimize=optimize)
    model = rnn.Model(lib)
    rng = np.random.default_rng(3)
    T, B = 6, 3
    xs = rng.standard_normal((T, B, 4)).astype(np.float32)
    h0 = rng.standard_normal((B, 4)).astype(np.float32)
    W = to_bf16_bits(0.5 * rng.standard_normal((4, 4)).astype(np.float32))
    ys = np.zeros((T, B, 4), np.float32)
    hT = np.zeros((B, 4), np.float32)

    runtime = load_runtime()
    args = (RnnTensor * 3)(tensor(xs, 0), tensor(h0, 0), tensor(W, 2))
    results = (RnnTensor * 2)(tensor(ys, 0), tensor(hT, 0))
    status = runtime.rnn_model_run(model.handle, b"f", args, 3, results, 2, None)
    assert status == 0, runtime.rnn_last_error()

    Wf = from_bf16_bits(W).astype(np.float64)
    h = h0.astype(np.float64)
    expected = []
    for t in range(T):
        h16 = from_bf16_bits(to_bf16_bits(h.astype(np.float32))).astype(np.float64)
        h = np.tanh(h16 @ Wf.T + xs[t])
        expected.append(h)
    expected = np.stack(expected)
    err = np.max(np.abs(ys - expected)) / np.max(np.abs(expected))
    assert err <= 1e-5, f"max rel err {err:.3g}"
    assert np.max(np.abs(hT - h)) / np.max(np.abs(h)) <= 1e-5


# --matmul-type=bf16 / rnn.NumpyRNN(matmul_dtype=...): models written in float32 whose
# matmuls read bf16 operands. The result must be within bf16's precision of the
# float64 reference, and measurably not float32 (else nothing was rounded).
BF16_MATMUL_RTOL = 3e-2


@pytest.mark.parametrize("example", sorted(ARGS))
def test_examples_with_bf16_matmuls(tmp_path, example):
    lib = rnn.compile_mlir(EXAMPLES_DIR / f"{example}.mlir", tmp_path / f"{example}.so",
                           extra_args=["--matmul-type=bf16"])
    model = rnn.Model(lib)
    func, ref_fn = reference.EXAMPLES[example]
    worst = 0.0
    for T, B in [(7, 3), (5, 1)]:
        args = make_args(example, T, B, seed_of(example, T, B))
        outs = model(func, *args)
        refs = ref_fn(*[a.astype(np.float64) for a in args])
        worst = max(worst, max(rel_err(o, r) for o, r in zip(outs, refs)))
    model.close()
    assert 1e-4 < worst <= BF16_MATMUL_RTOL, f"{example}: max rel err {worst:.3g}"


def test_dsl_matmul_dtype(tmp_path):
    x = np.random.default_rng(0).standard_normal((6, 2, 8)).astype(np.float32)
    exact = rnn.NumpyRNN(rnn.zoo.gru, 8, 16, seed=1)
    mixed = rnn.NumpyRNN(rnn.zoo.gru, 8, 16, seed=1, matmul_dtype="bfloat16")
    assert "matmul_dtype=bfloat16" in repr(mixed)
    assert "matmul_dtype" not in repr(exact)
    y, _ = exact(x)
    y16, _ = mixed(x)
    err = np.max(np.abs(y16 - y)) / np.max(np.abs(y))
    assert 1e-4 < err <= BF16_MATMUL_RTOL, f"max rel err {err:.3g}"
    loaded = rnn.load(mixed.save(tmp_path / "gru16"))
    assert "matmul_dtype=bfloat16" in repr(loaded)
    np.testing.assert_array_equal(loaded(x)[0], y16)


def test_dsl_matmul_dtype_errors():
    with pytest.raises(TypeError, match="reduced-precision matmuls are bfloat16 or float16"):
        rnn.NumpyRNN(rnn.zoo.gru, 8, 16, dtype="float64", matmul_dtype="bfloat16")
    with pytest.raises(TypeError, match="reduced-precision matmuls"):
        rnn.NumpyRNN(rnn.zoo.gru, 8, 16, matmul_dtype="float64")
    with pytest.raises(TypeError, match="unsupported dtype"):
        rnn.NumpyRNN(rnn.zoo.gru, 8, 16, matmul_dtype="int8")


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
@pytest.mark.parametrize("optimize", [True, False], ids=["opt", "noopt"])
def test_half_precision_backward_runs(tmp_path, dtype, optimize):
    """The GRU written in bf16 / f16 (storage and math), trained: unoptimised, its backward
    accumulates weight gradients into 16-bit results, which rnn_cpu_gemm refused at every
    call ("cannot accumulate into a bf16 result"); it now widens the result, adds in f32 and
    rounds once. The gradients against the float32 model's on the same (rounded) values."""
    from test_training_api import run_descriptors
    source = (EXAMPLES_DIR / "gru.mlir").read_text()
    half = rnn.Model(rnn.compile_mlir(source.replace("f32", dtype), tmp_path / "half.so",
                                      optimize=optimize, training=True))
    full = rnn.Model(rnn.compile_mlir(source, tmp_path / "full.so", optimize=optimize,
                                      training=True))
    rng = np.random.default_rng(5)
    T, B = 4, 3
    values = [rng.standard_normal((T, B, 10)), rng.standard_normal((B, 20)),
              0.3 * rng.standard_normal((60, 10)), 0.2 * rng.standard_normal((60, 20)),
              0.1 * rng.standard_normal(60), 0.1 * rng.standard_normal(60)]
    if dtype == "bf16":
        stored = [to_bf16_bits(v.astype(np.float32)) for v in values]
        widened = [from_bf16_bits(v) for v in stored]
    else:
        stored = [v.astype(np.float16) for v in values]
        widened = [v.astype(np.float32) for v in stored]
    info = half.training_info("gru_seq")
    outs = run_descriptors(half, info.train_function, [(v, dtype) for v in stored])
    n = len(outs) - info.num_saved
    one = to_bf16_bits(np.ones(1, np.float32))[0] if dtype == "bf16" else 1.0
    seeds = [(np.full_like(o, one), d) for o, d in outs[:n]]
    grads = run_descriptors(half, info.backward_function,
                            [(v, dtype) for v in stored] + outs + seeds)
    want = full.backward("gru_seq", widened, *full.train_forward("gru_seq", *widened),
                         [np.ones(o.shape, np.float32) for o, _ in outs[:n]])
    to32 = from_bf16_bits if dtype == "bf16" else (lambda g: g.astype(np.float32))
    for (g, _), w in zip(grads, want):
        err = np.linalg.norm(to32(g) - w) / np.linalg.norm(w)
        assert err <= (3e-2 if dtype == "bf16" else 5e-3), f"normwise error {err:.3g}"


@pytest.mark.parametrize("example", ["lstm", "lstm_2layer", "gru", "gru_reset_before",
                                     "lstmp", "layernorm_lstm"])
def test_backward_with_bf16_matmuls(tmp_path, example):
    """The derived backward with bf16 matmuls (its gate gradients leave the step in bf16, the
    bias gradients sum those, the GEMMs of the input and weight gradients store their products
    rounded, the previous states are rounded where they are gathered) against the f32 model's
    backward on the same arguments and result gradients: every gradient within bf16's
    tolerance, normwise. The two-layer LSTM's second layer feeds the first's input gradient
    GEMM the rounded product of another GEMM."""
    func, _ = reference.EXAMPLES[example]
    source = EXAMPLES_DIR / f"{example}.mlir"
    half = rnn.Model(rnn.compile_mlir(source, tmp_path / "half.so", training=True,
                                      extra_args=["--matmul-type=bf16"]))
    full = rnn.Model(rnn.compile_mlir(source, tmp_path / "full.so", training=True))
    args = make_args(example, 6, 3, seed_of(example, 6, 3))
    rng = np.random.default_rng(seed_of(example, 6, 3) + 1)
    results, saved = full.train_forward(func, *args)
    seeds = [rng.standard_normal(r.shape).astype(np.float32) for r in results]
    want = full.backward(func, args, results, saved, seeds)
    got = half.backward(func, args, *half.train_forward(func, *args), seeds)
    checked = 0
    for k, (g, w) in enumerate(zip(got, want)):
        if w is None:
            continue
        err = np.linalg.norm(g.astype(np.float64) - w) / np.linalg.norm(w)
        assert err <= 2e-2, f"{example}: gradient #{k} normwise error {err:.3g}"
        checked += 1
    assert checked == sum(w is not None for w in want) > 0
    half.close()
    full.close()


@pytest.mark.parametrize("example", ["lstm", "lstm_2layer", "gru"])
def test_bf16_model_backward(tmp_path, example):
    """A model written in bf16 throughout (its arguments and gradients bf16, its products
    accumulated in f32), trained: the input and weight gradients are GEMMs that store their
    products rounded to bf16 (no f32 buffer and cast after them), the two weight gradients of
    one shape each from a zero fill of their own, and in the two-layer LSTM the second layer's
    input gradient, rounded, is what the first layer's backward reads. Against the float32
    model's gradients on the same (rounded) values, normwise."""
    from test_training_api import run_descriptors
    func, _ = reference.EXAMPLES[example]
    source = (EXAMPLES_DIR / f"{example}.mlir").read_text()
    half = rnn.Model(rnn.compile_mlir(source.replace("f32", "bf16"), tmp_path / "half.so",
                                      training=True))
    full = rnn.Model(rnn.compile_mlir(source, tmp_path / "full.so", training=True))
    stored = [to_bf16_bits(a) for a in make_args(example, 5, 3, seed_of(example, 5, 3))]
    widened = [from_bf16_bits(v) for v in stored]
    info = half.training_info(func)
    outs = run_descriptors(half, info.train_function, [(v, "bf16") for v in stored])
    n = len(outs) - info.num_saved
    one = to_bf16_bits(np.ones(1, np.float32))[0]
    seeds = [(np.full_like(o, one), d) for o, d in outs[:n]]
    grads = run_descriptors(half, info.backward_function,
                            [(v, "bf16") for v in stored] + outs + seeds)
    want = full.backward(func, widened, *full.train_forward(func, *widened),
                         [np.ones(o.shape, np.float32) for o, _ in outs[:n]])
    assert len(grads) == len(want)
    for k, ((g, _), w) in enumerate(zip(grads, want)):
        err = np.linalg.norm(from_bf16_bits(g) - w) / np.linalg.norm(w)
        assert err <= 3e-2, f"{example}: gradient #{k} normwise error {err:.3g}"
    half.close()
    full.close()
