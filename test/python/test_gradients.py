"""Derived backwards (`rnn-compile --training`) against finite differences, in float64.

Every example in examples/ and the models below are compiled, as float64 copies (every `f32`
of the source replaced by `f64`: the CPU backend runs float64 end to end, and float64 finite
differences resolve a gradient to ~1e-11, far below the 1e-6 the check asks), with and
without `rnn-optimize`. For each function f, gradcheck.py compares the gradients that f_train
and f_backward give for L = sum_k <W_k, result_k> with finite differences of L through f, for
every element of every floating-point argument (see gradcheck.py for the scheme and the
tolerance). Also: f_train's results are f's, bit for bit; the optimised and unoptimised
compiles give the same gradients; with per-sequence lengths, outputs and input gradients past
a row's length are exactly zero, and a row of length 0 passes its final states' gradients to
its initial states unchanged.

The models (test/python/models/grad_*.mlir, and lengths.mlir of test_lengths.py) add what the
examples lack: forward and reverse scans with lengths (lengths of 1 and of 0 included; the
dialect's rule, at t >= lengths[b] the state is unchanged and the outputs are zero, makes a
row of length 0 leave its states as they are and output zeros, which the forward test here
checks against reference.scan), a reverse scan without lengths, and two stacked layers with
lengths. A module with two functions (grad_lstm_lengths.mlir) checks that every public
function is differentiated.

The first tests check the finite-difference engine itself, on numpy functions with known
gradients and on the compiled float64 LSTM's forward against complex-step derivatives; they do
not need --training.
"""

import os
import re
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import gradcheck
import reference
import rnn
from conftest import EXAMPLES_DIR, MODELS_DIR
from test_examples import ARGS, LSTM4, GRU3, WEIGHT_SCALE, make_args, seed_of

TRAINING = ("--training",)
SHAPES = [(3, 2), (1, 1)]
OPT_IDS = ["opt", "noopt"]


def float64_source(path):
    """The module at `path` with every f32 made f64."""
    return path.read_text().replace("f32", "f64")


@pytest.fixture(scope="session")
def training_model(tmp_path_factory):
    """training_model(source_path, optimize) -> rnn.Model of the float64 copy of the source
    compiled with --training, compiled and loaded once per session. A compile failure is
    cached and raised again by every test that asks for that model, as conftest.compiled does.

    Compiles run in the background, two at a time (the machine has 2 cores): asking for a
    source queues both its variants and those of the source the tests use next (SOURCES), so
    that they compile while this one's finite differences run."""
    out_dir = tmp_path_factory.mktemp("training")
    pool = ThreadPoolExecutor(max_workers=2)
    futures, models = {}, {}

    def submit(source, optimize):
        key = (os.fspath(source), bool(optimize))
        if key not in futures:
            out = out_dir / f"{source.stem}{'' if optimize else '-noopt'}.so"
            futures[key] = pool.submit(rnn.compile_mlir, float64_source(source), out,
                                       optimize=optimize, extra_args=TRAINING)
        return futures[key]

    def get(source, optimize=True):
        future = submit(source, optimize)
        submit(source, not optimize)
        if source in SOURCES and SOURCES.index(source) + 1 < len(SOURCES):
            for opt in (True, False):
                submit(SOURCES[SOURCES.index(source) + 1], opt)
        path = future.result()  # raises the CompileError again for every test that asks
        if path not in models:
            models[path] = rnn.Model(path)
        return models[path]

    yield get
    pool.shutdown(wait=True, cancel_futures=True)
    for m in models.values():
        m.close()


def as_float64(args):
    return [a if a.dtype.kind == "i" else a.astype(np.float64) for a in args]


# --------------------------------------------------------------------------------------------
# The finite-difference engine (no compiler needed)
# --------------------------------------------------------------------------------------------

def tanh_rnn(xs, h0, W, U, b):
    """h_t = tanh(W x_t + U h_{t-1} + b) over xs [T, B, I]; returns (ys, hT)."""
    h, ys = h0, []
    for x in xs:
        h = np.tanh(x @ W.T + h @ U.T + b)
        ys.append(h)
    return np.stack(ys), h


def tanh_rnn_backward(xs, h0, W, U, b, dys, dhT):
    """Backpropagation through time for tanh_rnn, written out by hand."""
    ys, _ = tanh_rnn(xs, h0, W, U, b)
    dxs, dW, dU, db = np.zeros_like(xs), np.zeros_like(W), np.zeros_like(U), np.zeros_like(b)
    dh = dhT.copy()
    for t in range(len(xs) - 1, -1, -1):
        dh = dh + dys[t]
        da = dh * (1.0 - ys[t] ** 2)
        h_prev = ys[t - 1] if t > 0 else h0
        dW += da.T @ xs[t]
        dU += da.T @ h_prev
        db += da.sum(axis=0)
        dxs[t] = da @ W
        dh = da @ U
    return [dxs, dh, dW, dU, db]


def tanh_rnn_args(seed, T=4, B=3, I=5, H=6):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((T, B, I)), rng.standard_normal((B, H)),
            0.4 * rng.standard_normal((H, I)), 0.4 * rng.standard_normal((H, H)),
            0.1 * rng.standard_normal(H)]


def test_fd_engine_numpy_rnn():
    """The engine's finite differences of a numpy tanh RNN match its hand-written backward far
    below TOL, for every element of every argument."""
    args = tanh_rnn_args(0)
    fn = gradcheck.NumpyFunction(tanh_rnn, args)
    weights = gradcheck.loss_weights(fn(), seed=1)
    assert all(np.all(np.abs(w) >= 0.5) for w in weights), "loss weights are never near zero"
    grads = dict(enumerate(tanh_rnn_backward(*args, *weights)))
    report = gradcheck.compare(fn, weights, grads)
    assert set(report) == set(range(5))
    for i, e in report.items():
        assert e.checked == e.size == args[i].size
        assert e.error <= 1e-9, e.describe("tanh_rnn", args[i].shape)
    # The arguments were restored exactly.
    for a, b in zip(fn.args, args):
        assert np.array_equal(a, b)


def test_fd_engine_catches_wrong_gradients():
    """A gradient off by 1e-5 (relative) in one element, or with one term missing, fails, and
    the message names the argument and the element."""
    args = tanh_rnn_args(1)
    fn = gradcheck.NumpyFunction(tanh_rnn, args)
    weights = gradcheck.loss_weights(fn(), seed=2)
    good = tanh_rnn_backward(*args, *weights)

    off = [g.copy() for g in good]
    off[3].reshape(-1)[7] *= 1.0 + 1e-5
    report = gradcheck.compare(fn, weights, dict(enumerate(off)))
    assert all(report[i].error <= gradcheck.TOL for i in (0, 1, 2, 4))
    assert report[3].error > gradcheck.TOL
    assert report[3].worst == np.unravel_index(7, args[3].shape)
    msg = report[3].describe("tanh_rnn", args[3].shape)
    assert "argument #3" in msg and f"worst element {report[3].worst}" in msg

    # Without the output sequence's own term (dL/dys ignored at the last step).
    dys = weights[0].copy()
    dys[-1] = 0.0
    missing = tanh_rnn_backward(*args, dys, weights[1])
    report = gradcheck.compare(fn, weights, dict(enumerate(missing)))
    assert all(e.error > gradcheck.TOL for e in report.values())


def test_fd_engine_sampling_and_zero_gradients():
    """Sampled elements are the only ones checked; an argument that does not matter (gradient
    exactly zero) has error 0, not 0 / 0."""
    args = tanh_rnn_args(2) + [np.ones(3)]
    fn = gradcheck.NumpyFunction(lambda xs, h0, W, U, b, unused: tanh_rnn(xs, h0, W, U, b),
                                 args)
    weights = gradcheck.loss_weights(fn(), seed=3)
    grads = dict(enumerate(tanh_rnn_backward(*args[:5], *weights) + [np.zeros(3)]))
    elements = gradcheck.sample_elements(args, range(6), 10, seed=4)
    assert sorted(elements) == [0, 1, 2, 3]  # those with more than 10 elements
    report = gradcheck.compare(fn, weights, grads, elements)
    for i, e in report.items():
        assert e.checked == min(10, args[i].size) and e.error <= 1e-9, e.describe("f", ())
    assert report[5].error == 0.0


def test_fd_engine_kinks():
    """relu(x - c) with a kink inside the first stencil (0.3 and 0.7 steps away from x) and on
    either side: the base estimate is wrong there, the retries with smaller steps are right."""
    x0 = np.array([0.25, 0.25, -0.5, 0.75])
    c = np.array([0.25 + 0.3 * gradcheck.STEP, 0.25 - 0.7 * gradcheck.STEP, 0.0, 0.0])
    fn = gradcheck.NumpyFunction(lambda x: (np.maximum(x - c, 0.0),), [x0])
    weights = [np.array([1.0, -1.0, 1.0, 1.0])]
    base = [gradcheck.richardson(fn, weights, 0, j) for j in range(4)]
    assert abs(base[0] - 0.0) > 1e-3 and abs(base[1] + 1.0) > 1e-3, base
    grads = {0: np.where(x0 > c, weights[0], 0.0)}
    report = gradcheck.compare(fn, weights, grads)
    assert report[0].error <= 1e-9, report[0].describe("relu", x0.shape)


def test_fd_engine_padding_check():
    """padding_violations flags a nonzero output or input gradient past a row's length."""
    T, B = 3, 2
    xs = np.zeros((T, B, 4))
    lengths = np.array([3, 1], np.int32)
    ys = np.zeros((T, B, 5))
    grads = {0: np.zeros_like(xs)}
    assert gradcheck.padding_violations("f", [xs, lengths], grads, [ys], 1) == []
    grads[0][2, 1, 3] = 1e-300
    ys[1, 1, 0] = -2.0
    msgs = gradcheck.padding_violations("f", [xs, lengths], grads, [ys], 1)
    assert len(msgs) == 2
    assert "result #0" in msgs[0] and "t = 1, row 1" in msgs[0]
    assert "argument #0" in msgs[1] and "t = 2, row 1, feature 3" in msgs[1]


def complex_lstm(xs, h0, c0, W, U, b_W, b_U, lengths=None, reverse=False):
    """reference.lstm (with reference.scan's lengths and reverse) without its float64 casts, so
    that it runs on complex arguments."""
    sig = lambda v: 1.0 / (1.0 + np.exp(-v))
    T, B = xs.shape[:2]
    h, c = h0, c0
    ys = np.zeros((T, B, U.shape[1]), dtype=np.result_type(xs, h0, W))
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        i, f, g, o = np.split(xs[t] @ W.T + b_W + h @ U.T + b_U, 4, axis=-1)
        c_new = sig(f) * c + sig(i) * np.tanh(g)
        h_new = sig(o) * np.tanh(c_new)
        live = np.ones((B, 1), bool) if lengths is None else (t < np.asarray(lengths))[:, None]
        h, c = np.where(live, h_new, h), np.where(live, c_new, c)
        ys[t] = np.where(live, h_new, 0.0)
    return ys, h, c


def complex_step_gradients(fn, args, weights):
    """dL/d(every float argument) of L = sum_k <W_k, fn(*args)[k]> by the complex step
    (Im L(x + i 1e-30) / 1e-30: no subtraction, so exact to rounding for analytic fn)."""
    grads = {}
    for i, a in enumerate(args):
        if a.dtype.kind == "i":
            continue
        g = np.zeros(a.size)
        for j in range(a.size):
            z = [x if x.dtype.kind == "i" else x.astype(np.complex128) for x in args]
            z[i].reshape(-1)[j] += 1e-30j
            g[j] = sum(float(np.sum(w * r.imag)) for w, r in zip(weights, fn(*z))) / 1e-30
        grads[i] = g.reshape(a.shape)
    return grads


def test_fd_engine_on_compiled_lstm(tmp_path):
    """The engine on a real compiled float64 model (the LSTM's forward, no --training): its
    finite differences match complex-step derivatives (exact to rounding) of the same LSTM in
    numpy to 1e-9, so a 1e-6 tolerance has a margin of more than 1000 for the examples."""
    lib = rnn.compile_mlir(float64_source(EXAMPLES_DIR / "lstm.mlir"), tmp_path / "lstm64.so")
    args = as_float64(make_args("lstm", 3, 2, seed=5))
    with rnn.Model(lib) as model:
        fn = gradcheck.CompiledFunction(model, "lstm_seq", args)
        weights = gradcheck.loss_weights(fn(), seed=6)
        for r, ref in zip(fn(), complex_lstm(*args)):
            np.testing.assert_allclose(r, ref, rtol=1e-13, atol=1e-14)
        exact = complex_step_gradients(complex_lstm, args, weights)
        report = gradcheck.compare(fn, weights, exact)
    for i, e in report.items():
        assert e.error <= 1e-9, e.describe("lstm_seq", args[i].shape)


class NumpyBackward:
    """A loaded model whose f_train and f_backward are numpy: f_train returns f's results and
    one saved array (a copy of xs), f_backward complex-step gradients of `numpy_f`, optionally
    spoiled by `spoil(grads)`. Stands in for a --training compile to check the harness end to
    end (signatures, calls, padding, the comparison) on a real compiled f."""

    def __init__(self, model, name, numpy_f, spoil=None):
        self.model, self.name, self.numpy_f, self.spoil = model, name, numpy_f, spoil
        self.cache = {}
        self.path, self.functions = model.path, model.functions + [
            name + "_train", name + "_backward"]

    @property
    def handle(self):
        return self.model.handle

    def result_shapes(self, name, *args):
        return self.model.result_shapes(name, *args)

    def signature(self, name):
        args, results = self.model.signature(self.name)
        if name == self.name + "_train":
            return args, results + [args[0]]
        if name == self.name + "_backward":
            return args + results + [args[0]] + results, [a for a in args if a[0] == "f64"]
        return self.model.signature(name)

    def __call__(self, name, *args):
        n = len(self.model.signature(self.name)[0])
        if name == self.name + "_train":
            return self.model(self.name, *args) + (np.array(args[0], copy=True),)
        if name == self.name + "_backward":
            n_res = len(self.model.signature(self.name)[1])
            f_args, saved, dresults = args[:n], args[n + n_res], args[n + n_res + 1:]
            assert np.array_equal(saved, f_args[0])
            key = b"".join(np.ascontiguousarray(a).tobytes() for a in args)
            if key not in self.cache:  # the harness calls the backward twice
                self.cache[key] = complex_step_gradients(self.numpy_f, list(f_args), dresults)
            grads = {i: g.copy() for i, g in self.cache[key].items()}
            if self.spoil:
                self.spoil(grads)
            return tuple(grads[i] for i in sorted(grads))
        return self.model(name, *args)


def test_harness_end_to_end(load, tmp_path):
    """check_gradients on the compiled float64 lstm_lengths (forward only) with a numpy
    backward: an exact backward passes; a gradient off by 1e-5 in one element and a nonzero
    input gradient past a row's length are both reported."""
    lib = rnn.compile_mlir(float64_source(MODELS_DIR / "grad_lstm_lengths.mlir"),
                           tmp_path / "lengths64.so")
    args, _ = model_args("lstm_lengths", "T4_lens4102")
    numpy_f = lambda xs, lengths, *rest: complex_lstm(xs, *rest, lengths=lengths)
    with rnn.Model(lib) as model:
        good = NumpyBackward(model, "lstm_lengths", numpy_f)
        msgs, grads = gradcheck.check_gradients(good, "lstm_lengths", args, lengths_arg=1)
        assert msgs == [] and sorted(grads) == [0, 2, 3, 4, 5, 6, 7]
        assert gradcheck.train_forward_mismatches(good, "lstm_lengths", args) == []

        worst = tuple(int(v) for v in np.unravel_index(int(np.argmax(np.abs(grads[4]))),
                                                      grads[4].shape))

        def spoil(g):
            g[4][worst] *= 1.0 + 1e-5   # W's largest element
            g[0][3, 2, 7] = 1e-12       # xs at t = 3 in the row of length 0
        bad = NumpyBackward(model, "lstm_lengths", numpy_f, spoil)
        msgs, _ = gradcheck.check_gradients(bad, "lstm_lengths", args, lengths_arg=1)
    assert len(msgs) == 2, msgs
    assert "argument #0" in msgs[0] and "t = 3, row 2, feature 7" in msgs[0]
    assert "argument #4 (80, 10)" in msgs[1] and f"worst element {worst}" in msgs[1]


# --------------------------------------------------------------------------------------------
# The examples
# --------------------------------------------------------------------------------------------

def example_case(example, T, B):
    func, _ = reference.EXAMPLES[example]
    return func, as_float64(make_args(example, T, B, seed_of(example, T, B)))


@pytest.mark.parametrize("T,B", SHAPES, ids=[f"T{T}B{B}" for T, B in SHAPES])
@pytest.mark.parametrize("optimize", [True, False], ids=OPT_IDS)
@pytest.mark.parametrize("example", sorted(ARGS))
def test_example_gradients(training_model, example, optimize, T, B):
    model = training_model(EXAMPLES_DIR / f"{example}.mlir", optimize)
    func, args = example_case(example, T, B)
    msgs, _ = gradcheck.check_gradients(model, func, args, seed=seed_of(example, T, B))
    assert not msgs, f"{example} ({OPT_IDS[not optimize]}, T={T}, B={B}):\n" + "\n".join(msgs)


# Every example again with per-sequence lengths (a full row, an empty one, a row of one
# step), its scans in their own direction and reversed: the module text gets a lengths
# argument after the others, given to every scan, and every scan's `reverse` toggled.
LENGTHS = np.array([3, 0, 1], np.int32)


def with_lengths(text, toggle_reverse):
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("//")]
    text = "\n".join(lines)
    text, n = re.subn(r"(func\.func @\w+\((?:.|\n)*?)\)(\s*->\s*\()",
                      r"\1, %seq_lengths: tensor<?xi32>)\2", text, count=1)
    assert n == 1, "no function signature found"
    text, n = re.subn(r"(rnn\.scan @\w+(?: reverse)? inputs(?:.|\n)*?)(\s*-> outputs\()",
                      r"\1 lengths(%seq_lengths : tensor<?xi32>)\2", text)
    assert n >= 1, "no scan found"
    if toggle_reverse:
        text = re.sub(r"rnn\.scan @(\w+)( reverse)? inputs",
                      lambda m: f"rnn.scan @{m.group(1)}{'' if m.group(2) else ' reverse'} inputs",
                      text)
    return text


@pytest.mark.parametrize("optimize", [True, False], ids=OPT_IDS)
@pytest.mark.parametrize("reverse", [False, True], ids=["lengths", "lengths-reversed"])
@pytest.mark.parametrize("example", sorted(ARGS))
def test_example_gradients_with_lengths(training_model, tmp_path_factory, example, reverse,
                                       optimize):
    source = tmp_path_factory.getbasetemp() / (
        f"{example}-{'reversed' if reverse else 'lengths'}.mlir")
    if not source.exists():
        source.write_text(with_lengths((EXAMPLES_DIR / f"{example}.mlir").read_text(), reverse))
    model = training_model(source, optimize)
    func, args = example_case(example, 3, 3)
    args = args + [LENGTHS]
    msgs, _ = gradcheck.check_gradients(model, func, args, seed=seed_of(example, 3, 3),
                                        lengths_arg=len(args) - 1)
    assert not msgs, (f"{example} with lengths{' reversed' if reverse else ''} "
                      f"({OPT_IDS[not optimize]}):\n" + "\n".join(msgs))


@pytest.mark.parametrize("optimize", [True, False], ids=OPT_IDS)
@pytest.mark.parametrize("example", sorted(ARGS))
def test_example_train_forward_is_f(training_model, example, optimize):
    """f_train computes f's results the way f does: bit for bit the same."""
    model = training_model(EXAMPLES_DIR / f"{example}.mlir", optimize)
    func, args = example_case(example, 3, 2)
    msgs = gradcheck.train_forward_mismatches(model, func, args)
    assert not msgs, f"{example} ({OPT_IDS[not optimize]}):\n" + "\n".join(msgs)


def assert_same_gradients(a, b, what):
    """Gradients of two compiles of one function: equal up to float64 rounding."""
    for i, d in gradcheck.gradient_differences(a, b).items():
        assert d <= 1e-10, f"{what}: gradient of argument #{i} differs by {d:.3g}"


@pytest.mark.parametrize("example", sorted(ARGS))
def test_example_optimized_matches_unoptimized(training_model, example):
    func, args = example_case(example, 3, 2)
    grads = []
    for optimize in (True, False):
        model = training_model(EXAMPLES_DIR / f"{example}.mlir", optimize)
        weights = gradcheck.loss_weights(model(func, *args), seed=7)
        grads.append(gradcheck.analytic_gradients(model, func, args, weights)[2])
    assert_same_gradients(*grads, f"{example} (opt vs noopt)")


# --------------------------------------------------------------------------------------------
# Lengths, reverse, stacked layers
# --------------------------------------------------------------------------------------------

def lengths_reference(reverse):
    def ref(xs, lengths, h0, c0, W, U, b_W, b_U):
        (ys,), (hT, cT) = reference.scan(reference.lstm_cell(W, U, b_W, b_U), xs, (h0, c0),
                                         reverse=reverse, lengths=lengths)
        return ys, hT, cT
    return ref


def gru_reverse_reference(xs, h0, W, U, b_W, b_U):
    (ys,), (hT,) = reference.scan(reference.gru_cell(W, U, b_W, b_U), xs, (h0,), reverse=True)
    return ys, hT


def lstm_2layer_lengths_reference(xs, lengths, h0_0, c0_0, h0_1, c0_1,
                                  W_0, U_0, b_W_0, b_U_0, W_1, U_1, b_W_1, b_U_1):
    (ys_0,), (hT_0, cT_0) = reference.scan(reference.lstm_cell(W_0, U_0, b_W_0, b_U_0), xs,
                                           (h0_0, c0_0), lengths=lengths)
    (ys_1,), (hT_1, cT_1) = reference.scan(reference.lstm_cell(W_1, U_1, b_W_1, b_U_1), ys_0,
                                           (h0_1, c0_1), lengths=lengths)
    return ys_1, hT_0, cT_0, hT_1, cT_1


def select_batch_first_reference(x, h0, W, U, b):
    """grad_select_layout.mlir in float64: the select cell over a batch-first sequence."""
    h = h0[:, 0, :]
    ys = []
    for t in range(x.shape[1]):
        s = x[:, t] @ W.T + h @ U.T + b
        elu = np.where(s >= 0, s, np.exp(s) - 1)
        leaky = np.where(s < 0, 0.25 * s, s)
        a = np.tanh(elu)
        m = np.where(a > h, a, h)
        h = (m + np.tanh(leaky)) * 0.25
        ys.append(h)
    y = np.stack(ys, axis=1)[:, :, None, :]
    return y, h[None]


LSTM4_1 = [(80, 20), (80, 20), (80,), (80,)]  # a second LSTM layer's W, U, b_W, b_U
LENGTHS_ARGS = [("T", "B", 10), "lengths", ("B", 20), ("B", 20)] + LSTM4
# function -> (model file, argument specs ("lengths": the [B] i32 lengths), reference,
#              {initial-state argument: final-state result})
MODELS = {
    "lstm_lengths": ("grad_lstm_lengths.mlir", LENGTHS_ARGS, lengths_reference(False),
                     {2: 1, 3: 2}),
    "lstm_reverse_lengths": ("grad_lstm_lengths.mlir", LENGTHS_ARGS, lengths_reference(True),
                             {2: 1, 3: 2}),
    "gru_reverse": ("grad_gru_reverse.mlir", [("T", "B", 10), ("B", 20)] + GRU3,
                    gru_reverse_reference, {1: 1}),
    "lstm_2layer_lengths": ("grad_lstm_2layer_lengths.mlir",
                            [("T", "B", 10), "lengths"] + [("B", 20)] * 4 + LSTM4 + LSTM4_1,
                            lstm_2layer_lengths_reference, {2: 1, 3: 2, 4: 3, 5: 4}),
    "select_batch_first": ("grad_select_layout.mlir",
                           [("B", "T", 10), ("B", 1, 20), (20, 10), (20, 20), (20,)],
                           select_batch_first_reference, {1: 1}),
    "lstm_bidir_lengths": ("lengths.mlir",
                           [("T", "B", 10), "lengths"] + [("B", 20)] * 4 + LSTM4 + LSTM4,
                           reference.lstm_bidir_lengths, {2: 1, 3: 2, 4: 3, 5: 4}),
}
# (T, lengths): rows of length 0 and 1, a full row, rows in between; None: no lengths (B = 2,
# 1), for the functions without them.
LENGTH_CASES = {
    "T4_lens4102": (4, [4, 1, 0, 2]),
    "T3_lens03": (3, [0, 3]),
    "T1_lens10": (1, [1, 0]),
}
PLAIN_CASES = {"T3B2": (3, 2), "T1B1": (1, 1)}
ALL_CASES = sorted(LENGTH_CASES) + sorted(PLAIN_CASES)
# Every source the gradient tests compile, in the order they first ask for it.
SOURCES = ([EXAMPLES_DIR / f"{e}.mlir" for e in sorted(ARGS)]
           + list(dict.fromkeys(MODELS_DIR / MODELS[f][0] for f in sorted(MODELS))))


def model_cases():
    for func in sorted(MODELS):
        has_lengths = "lengths" in MODELS[func][1]
        for case in sorted(LENGTH_CASES if has_lengths else PLAIN_CASES):
            yield func, case


def model_args(func, case):
    _, specs, _, _ = MODELS[func]
    if "lengths" in specs:
        T, lengths = LENGTH_CASES[case]
        B = len(lengths)
    else:
        (T, B), lengths = PLAIN_CASES[case], None
    rng = np.random.default_rng([sorted(MODELS).index(func), ALL_CASES.index(case)])
    args = []
    for spec in specs:
        if spec == "lengths":
            args.append(np.asarray(lengths, dtype=np.int32))
            continue
        shape = tuple({"T": T, "B": B}.get(d, d) for d in spec)
        scale = 1.0 if any(d in ("T", "B") for d in spec) else WEIGHT_SCALE
        args.append(scale * rng.standard_normal(shape))
    return args, lengths


CASES = list(model_cases())
CASE_IDS = [f"{f}-{c}" for f, c in CASES]


@pytest.mark.parametrize("optimize", [True, False], ids=OPT_IDS)
@pytest.mark.parametrize("func,case", CASES, ids=CASE_IDS)
def test_model_forward_matches_reference(load, func, case, optimize):
    """The models themselves (float32, no --training) against reference.scan: they say what
    the gradient tests differentiate, and a length of 0 is a valid length."""
    path, _, ref, _ = MODELS[func]
    model = load(MODELS_DIR / path, optimize)
    args, _ = model_args(func, case)
    args32 = [a if a.dtype.kind == "i" else a.astype(np.float32) for a in args]
    outs = model(func, *args32)
    refs = ref(*[a if a.dtype.kind == "i" else a.astype(np.float64) for a in args32])
    assert len(outs) == len(refs)
    for k, (o, r) in enumerate(zip(outs, refs)):
        d = float(np.max(np.abs(o - r))) / max(float(np.max(np.abs(r))), 1e-30)
        assert d <= 1e-5, f"{func} ({case}): result #{k} differs from the reference by {d:.3g}"


@pytest.mark.parametrize("optimize", [True, False], ids=OPT_IDS)
@pytest.mark.parametrize("func,case", CASES, ids=CASE_IDS)
def test_model_gradients(training_model, func, case, optimize):
    path, specs, _, state_map = MODELS[func]
    model = training_model(MODELS_DIR / path, optimize)
    args, lengths = model_args(func, case)
    lengths_arg = specs.index("lengths") if lengths is not None else None
    what = f"{func} ({case}, {OPT_IDS[not optimize]})"
    msgs = gradcheck.train_forward_mismatches(model, func, args)
    more, _ = gradcheck.check_gradients(model, func, args, seed=11, lengths_arg=lengths_arg)
    msgs += more
    assert not msgs, f"{what}:\n" + "\n".join(msgs)

    if lengths is None or 0 not in lengths:
        return
    # A row of length 0 keeps its initial states as its final states and outputs zeros, so
    # dL/d(initial state) in that row is exactly dL/d(final state), the loss weight.
    weights = gradcheck.loss_weights(model(func, *args), seed=12)
    _, _, grads = gradcheck.analytic_gradients(model, func, args, weights)
    for b in (b for b, n in enumerate(lengths) if n == 0):
        for arg, res in state_map.items():
            assert np.array_equal(grads[arg][b], weights[res][b]), (
                f"{what}: row {b} has length 0, but the gradient of initial state argument "
                f"#{arg} there is not result #{res}'s gradient (max difference "
                f"{float(np.max(np.abs(grads[arg][b] - weights[res][b]))):.3g})")


@pytest.mark.parametrize("func", sorted(MODELS))
def test_model_optimized_matches_unoptimized(training_model, func):
    path = MODELS[func][0]
    case = next(c for f, c in CASES if f == func)
    args, _ = model_args(func, case)
    grads = []
    for optimize in (True, False):
        model = training_model(MODELS_DIR / path, optimize)
        weights = gradcheck.loss_weights(model(func, *args), seed=13)
        grads.append(gradcheck.analytic_gradients(model, func, args, weights)[2])
    assert_same_gradients(*grads, f"{func} ({case}, opt vs noopt)")


def test_every_public_function_is_differentiated(training_model):
    """A module with two public functions gets f, f_train and f_backward for each."""
    model = training_model(MODELS_DIR / "grad_lstm_lengths.mlir", True)
    expected = {f"{f}{s}" for f in ("lstm_lengths", "lstm_reverse_lengths")
                for s in ("", "_train", "_backward")}
    assert expected <= set(model.functions), model.functions
