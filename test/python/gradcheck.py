"""Gradient checks for models compiled with `rnn-compile --training`, against finite differences.

With `--training`, every public function `f(args...) -> (results...)` of a module comes with

  * `f_train(args...) -> (results..., saved...)`: f's results, then the arrays its backward
    needs (any number, passed through untouched);
  * `f_backward(args..., results..., saved..., dresults...) -> (dargs...)`: f's arguments,
    its results, the saved arrays in f_train's order, one gradient per result of f (its shape
    and dtype); one gradient per
    floating-point argument of f, in argument order (integer arguments, such as per-sequence
    lengths, get none).

The check takes the scalar loss L = sum_k <W_k, result_k> with fixed random weights W_k (no
element near zero, so that every element of every result matters, padding included), gets
dL/dargs from f_train and f_backward with dresults = W_k, and compares them with finite
differences of L through f itself, one element at a time. The error of an argument is

    max_j |g_j - fd_j| / max(max_j |fd_j|, floor)

over its checked elements j, and must be at most TOL = 1e-6 (float64 models).

Why the finite differences reach 1e-6: L is evaluated in float64 with a rounding error delta
of a few ulps of sum_k <|W_k|, |result_k|> (~1e-14 for the small shapes the tests use). A
central difference D(h) = (L(x+h) - L(x-h)) / 2h has a rounding error ~delta / h and a
truncation error ~h^2 |L'''| / 6, so its best step (~1e-5) leaves ~1e-9 of both: enough, but
with a margin of only ~100 for an argument whose gradient is small next to the loss.
Richardson extrapolation of two central differences cancels the h^2 term,

    R(h) = (4 D(h/2) - D(h)) / 3   (the five-point stencil: 4 calls of f per element),

leaving a truncation error ~h^4 |L^(5)| / 30, which allows a step of h = 2^-10 ~ 1e-3 (times
|x| for |x| > 1) where the rounding error is ~delta / h ~ 1e-11. Measured against complex-step
derivatives (exact to rounding) of the 13 examples and of 100 random cells (cellgen.py) at
T = 3, B = 2, float64: R(2^-10) is off by at most 2e-11 (examples) and 2e-10 (cells) of each
argument's largest gradient; D(1e-5) by up to 8e-9, D(1e-6) by up to 9e-8. Steps are powers
of two, so x +- h and x +- h/2 are exact up to an ulp of x (~1e-13 of h).

Cells with kinks (relu, max, min, reduce_max, clipping) are smooth almost everywhere, but a kink
within h of an element's value spoils that element's estimate. An element whose estimate
misses the analytic gradient is therefore tried again with steps h/16 and h/256 (which a kink
at distance d stops spoiling once the step is below d), and the estimate closest to the
analytic gradient counts. That hides nothing a smooth function would show: every step's
estimate of a smooth function agrees with the derivative to far below TOL, so a wrong
gradient misses at every step. Past MAX_RETRIES elements of one argument the retries stop:
that many misses is a wrong gradient, not kinks.

`floor` is the finite differences' resolution: an argument whose gradient is too small for
them to measure to TOL of itself is held to their rounding error instead. That error is
~delta / h, with delta <= eps * S (S = sum_k <|W_k|, |result_k|>, eps the float64 epsilon);
seen up to ~eps * S / (3 h) on the 200 random cells, where it matters for arguments whose
gradients are ~1e-6 of the loss. So floor = NOISE * eps * S / (h * TOL) with NOISE = 16, and
|g - fd| <= NOISE * eps * S / h passes for such an argument (~1e-9 for the examples, whose
arguments' gradients are all well above their floor of ~1e-4).
"""

import numpy as np

from rnn.runtime import DTYPE_CODES, RnnTensor, load_runtime

TOL = 1e-6
STEP = 2.0 ** -10          # Richardson base step, times 2^ceil(log2 |x|) for |x| > 1
RETRY_STEPS = (2.0 ** -14, 2.0 ** -18)
MAX_RETRIES = 32           # per argument
NOISE = 16               # the floor's safety factor over the rounding error, see above
SAME_FLOOR_REL = 1e-4    # gradient_differences' floor, relative to the largest gradient
FLOAT_DTYPES = ("f32", "f64", "f16", "bf16")


# ------------------------------------------------------------------------------------------
# Calling a function many times
# ------------------------------------------------------------------------------------------

_DTYPE_NAMES = {np.dtype(np.float64): "f64", np.dtype(np.float32): "f32",
                np.dtype(np.int32): "i32", np.dtype(np.int64): "i64"}
_NUMPY_DTYPES = {name: dtype for dtype, name in _DTYPE_NAMES.items()}


def _tensors(arrays):
    tensors = (RnnTensor * max(1, len(arrays)))()
    for t, a in zip(tensors, arrays):
        t.data = a.ctypes.data if a.size else None
        t.dtype = DTYPE_CODES[_DTYPE_NAMES[a.dtype]]
        t.rank = a.ndim
        for d, s in enumerate(a.shape):
            t.shape[d] = s
    return tensors


class CompiledFunction:
    """One function of a loaded rnn.Model, called again and again on the same argument buffers.

    The finite differences change one element of `args` at a time in place and call this;
    `rnn.Model.__call__` would ask the runtime for the result shapes and allocate the results on
    every call, which costs as much as running a small model. Here the descriptors of the
    arguments and of preallocated results are built once (as test_bf16.py does), so a call is
    one rnn_model_run. Returns the result buffers themselves (overwritten by the next call).
    """

    def __init__(self, model, name, args):
        self.model = model
        self.name = name
        self.args = [np.array(a, order="C", copy=True) for a in args]
        shapes = model.result_shapes(name, *self.args)
        self.results = tuple(np.zeros(s, _NUMPY_DTYPES[d]) for d, s in shapes)
        self._lib = load_runtime()
        self._name = name.encode()
        self._arg_tensors = _tensors(self.args)
        self._result_tensors = _tensors(list(self.results))

    def __call__(self):
        status = self._lib.rnn_model_run(self.model.handle, self._name, self._arg_tensors,
                                         len(self.args), self._result_tensors,
                                         len(self.results), None)
        if status != 0:
            self.model(self.name, *self.args)  # raises the runtime's RNNError
            raise AssertionError(f"{self.name}: rnn_model_run returned status {status}")
        return self.results


class NumpyFunction:
    """The same interface for a numpy function `fn(*args) -> results` (the engine's own tests)."""

    def __init__(self, fn, args):
        self.fn = fn
        self.args = [np.array(a, order="C", copy=True) for a in args]

    def __call__(self):
        return tuple(np.asarray(r) for r in self.fn(*self.args))


# ------------------------------------------------------------------------------------------
# The loss and its finite differences
# ------------------------------------------------------------------------------------------

def loss_weights(results, seed):
    """One float64 weight array per result (its shape): magnitudes in [0.5, 1.5], random signs.

    Bounded away from zero so that no element of any result is left out of the loss."""
    rng = np.random.default_rng(seed)
    weights = []
    for r in results:
        shape = np.shape(r)
        w = rng.uniform(0.5, 1.5, size=shape) * rng.choice([-1.0, 1.0], size=shape)
        weights.append(np.asarray(w, dtype=np.float64))
    return weights


def loss(results, weights):
    """L = sum_k <W_k, result_k>, in float64."""
    total = 0.0
    for r, w in zip(results, weights):
        total += float(np.dot(w.reshape(-1), np.asarray(r, dtype=np.float64).reshape(-1)))
    return total


def _step(x, base):
    """base times 2^ceil(log2 |x|) for |x| > 1, else base: a power of two when base is one."""
    mag = abs(float(x))
    if mag <= 1.0:
        return base
    return base * 2.0 ** int(np.ceil(np.log2(mag)))


def richardson(function, weights, arg, flat_index, base=STEP):
    """The five-point (Richardson-extrapolated central) difference of L with respect to element
    `flat_index` of argument `arg` of `function`, which is changed in place and restored."""
    flat = function.args[arg].reshape(-1)
    x0 = flat[flat_index]
    h = _step(x0, base)

    def at(value):
        flat[flat_index] = value
        return loss(function(), weights)

    try:
        lp, lm = at(x0 + h), at(x0 - h)
        lp2, lm2 = at(x0 + h / 2), at(x0 - h / 2)
    finally:
        flat[flat_index] = x0
    return (8.0 * (lp2 - lm2) - (lp - lm)) / (6.0 * h)


def numeric_gradient(function, weights, arg, elements=None):
    """Finite-difference dL/d(argument `arg`) at the given flat element indices (all if None).

    Returns (indices, estimates): float64 arrays."""
    size = function.args[arg].size
    idx = np.arange(size) if elements is None else np.asarray(elements, dtype=np.int64)
    fd = np.array([richardson(function, weights, arg, int(j)) for j in idx], dtype=np.float64)
    return idx, fd


# ------------------------------------------------------------------------------------------
# The analytic gradients
# ------------------------------------------------------------------------------------------

def float_args(model, name):
    """Indices of the floating-point arguments of `name` (those that get a gradient)."""
    args, _ = model.signature(name)
    return [i for i, (dtype, _) in enumerate(args) if dtype in FLOAT_DTYPES]


def _require(model, name):
    missing = [n for n in (name, name + "_train", name + "_backward") if n not in model.functions]
    assert not missing, (f"{model.path}: no {', '.join(missing)} (functions: "
                         f"{', '.join(model.functions)}); was it compiled with --training?")


def _compatible(a, b):
    """Two manifest entries (dtype, shape) that one array can satisfy: the same dtype and rank,
    the same sizes where both are static (None is dynamic)."""
    (da, sa), (db, sb) = a, b
    return da == db and len(sa) == len(sb) and all(
        x is None or y is None or x == y for x, y in zip(sa, sb))


def _check_signature(what, got, expected):
    assert len(got) == len(expected) and all(map(_compatible, got, expected)), (
        f"{what}: {got}; expected {expected}")


def analytic_gradients(model, name, args, weights):
    """(results, saved, grads) from `name`_train and `name`_backward, dresults = weights.

    `grads` maps each floating-point argument index to its gradient. Checks the contract's
    signatures, and the gradients' shapes and dtypes, with messages that name the function.
    The backward is called twice: it must not write to its inputs (the saved arrays included)
    and must give the same gradients again."""
    _require(model, name)
    f_args, f_results = model.signature(name)
    t_args, t_results = model.signature(name + "_train")
    b_args, b_results = model.signature(name + "_backward")
    n_res = len(f_results)
    n_saved = len(t_results) - n_res
    floats = float_args(model, name)
    _check_signature(f"{name}_train takes", t_args, f_args)
    assert n_saved >= 0, f"{name}_train has {len(t_results)} results, {name} {n_res}"
    _check_signature(f"{name}_train's first {n_res} results are", t_results[:n_res], f_results)
    _check_signature(f"{name}_backward takes (arguments of {name}, its results, {n_saved} "
                     f"saved arrays, one gradient per result)", b_args,
                     f_args + f_results + t_results[n_res:] + f_results)
    _check_signature(f"{name}_backward returns (one gradient per floating-point argument, "
                     f"arguments {floats})", b_results, [f_args[i] for i in floats])

    outs = model(name + "_train", *args)
    results, saved = outs[:n_res], outs[n_res:]
    dresults = [np.asarray(w, dtype=r.dtype).reshape(r.shape) for w, r in zip(weights, results)]
    inputs = list(args) + list(results) + list(saved) + dresults
    before = [np.array(a, copy=True) for a in inputs]
    grads = model(name + "_backward", *inputs)
    for k, (a, b) in enumerate(zip(inputs, before)):
        assert np.array_equal(a, b, equal_nan=True), (
            f"{name}_backward changed its argument #{k} (it must not write to its inputs)")
    again = model(name + "_backward", *inputs)
    for k, (g, g2) in enumerate(zip(grads, again)):
        assert np.array_equal(g, g2, equal_nan=True), (
            f"{name}_backward gives another gradient #{k} when called again on the same inputs")
    out = {}
    for k, (i, g) in enumerate(zip(floats, grads)):
        a = np.asarray(args[i])
        assert g.shape == a.shape and g.dtype == a.dtype, (
            f"{name}_backward gradient #{k} (argument #{i}) is {g.dtype} {g.shape}, the "
            f"argument {a.dtype} {a.shape}")
        assert np.all(np.isfinite(g)), f"{name}: the gradient of argument #{i} is not finite"
        out[i] = g
    return results, saved, out


def train_forward_mismatches(model, name, args):
    """Messages for every result of `name`_train that is not bitwise f's (none when equal)."""
    _require(model, name)
    plain = model(name, *args)
    train = model(name + "_train", *args)[:len(plain)]
    msgs = []
    for k, (a, b) in enumerate(zip(plain, train)):
        if a.shape != b.shape or a.dtype != b.dtype:
            msgs.append(f"{name}_train result #{k} is {b.dtype} {b.shape}, {name}'s "
                        f"{a.dtype} {a.shape}")
        elif not np.array_equal(a, b):
            msgs.append(f"{name}_train result #{k} differs from {name}'s by up to "
                        f"{float(np.max(np.abs(a.astype(np.float64) - b))):.3g} "
                        f"(they must be the same computation)")
    return msgs


# ------------------------------------------------------------------------------------------
# The check
# ------------------------------------------------------------------------------------------

class ArgError:
    """The comparison for one argument: `error` as in the module docstring, the worst element."""

    def __init__(self, index, error, worst, analytic, numeric, checked, size, denom=0.0,
                 floor=0.0):
        self.index = index
        self.error = error
        self.worst = worst          # multi-index of the worst element
        self.analytic = analytic
        self.numeric = numeric
        self.checked = checked
        self.size = size
        self.denom = denom          # max(max |fd|, floor)
        self.floor = floor

    def describe(self, name, shape):
        return (f"{name}: gradient of argument #{self.index} {tuple(shape)}: relative error "
                f"{self.error:.3g} > {TOL:g} (worst element {self.worst}: analytic "
                f"{self.analytic:.10g}, finite difference {self.numeric:.10g}; relative to "
                f"{self.denom:.3g}{' (the floor)' if self.denom == self.floor else ''}; "
                f"{self.checked} of {self.size} elements checked)")


def compare(function, weights, grads, elements=None, tol=TOL):
    """Compares analytic gradients `grads` ({arg index: array}) with finite differences of L
    through `function`. `elements` maps an argument index to the flat indices to check (every
    element of an argument not in it). Returns {arg index: ArgError}."""
    elements = elements or {}
    S = sum(float(np.sum(np.abs(w) * np.abs(np.asarray(r, np.float64))))
            for w, r in zip(weights, function()))
    report = {}
    for i, g in grads.items():
        idx, fd = numeric_gradient(function, weights, i, elements.get(i))
        ga = np.asarray(g, dtype=np.float64).reshape(-1)[idx]
        x = function.args[i].reshape(-1)[idx]
        h = _step(float(np.min(np.abs(x))) if x.size else 0.0, STEP)  # the noisiest step
        floor = max(NOISE * np.finfo(np.float64).eps * S / (h * tol), np.finfo(np.float64).tiny)
        denom = max(float(np.max(np.abs(fd))) if fd.size else 0.0, floor)
        # Retry the misses with smaller steps (kinks; see the module docstring).
        miss = np.flatnonzero(np.abs(ga - fd) > tol * denom)
        for n, j in enumerate(miss):
            if n >= MAX_RETRIES:
                break
            for base in RETRY_STEPS:
                est = richardson(function, weights, i, int(idx[j]), base)
                if abs(ga[j] - est) < abs(ga[j] - fd[j]):
                    fd[j] = est
                if abs(ga[j] - fd[j]) <= tol * denom:
                    break
        diff = np.abs(ga - fd)
        k = int(np.argmax(diff)) if diff.size else 0
        err = float(diff[k] / denom) if diff.size else 0.0
        shape = np.shape(g)
        worst = tuple(int(v) for v in np.unravel_index(int(idx[k]), shape)) if diff.size else ()
        report[i] = ArgError(i, err, worst, float(ga[k]) if diff.size else 0.0,
                             float(fd[k]) if diff.size else 0.0, int(idx.size),
                             int(np.prod(shape)), denom, floor)
    return report


def sample_elements(args, indices, max_elements, seed):
    """For each argument index in `indices`: all its flat indices if it has at most
    `max_elements` elements, else `max_elements` of them drawn without replacement."""
    rng = np.random.default_rng(seed)
    out = {}
    for i in indices:
        n = int(np.size(args[i]))
        if n > max_elements:
            out[i] = np.sort(rng.choice(n, size=max_elements, replace=False))
    return out


def padding_violations(name, args, grads, results, lengths_arg):
    """Messages for nonzero values where a row's sequence has ended (t >= lengths[b]).

    The forward's sequence results are zero there, and the gradient with respect to a sequence
    argument must be exactly zero there: those inputs are never read. Sequences are the
    arguments and results of rank >= 3 whose first two dimensions are (T, B) of argument #0."""
    lengths = np.asarray(args[lengths_arg]).astype(np.int64)
    T, B = np.shape(args[0])[:2]
    assert lengths.shape == (B,), f"lengths {lengths.shape}, batch {B}"
    msgs = []

    def scan(what, a):
        for b, n in enumerate(lengths):
            start = min(max(int(n), 0), T)
            pad = a[start:, b]
            if np.any(pad != 0):
                t, j = (int(v) for v in np.argwhere(pad.reshape(T - start, -1) != 0)[0])
                msgs.append(f"{name}: {what} is {float(pad.reshape(T - start, -1)[t, j]):.3g} at "
                            f"t = {start + t}, row {b}, feature {j}, past the row's length {int(n)}"
                            f" (must be exactly zero)")

    for k, r in enumerate(results):
        if r.ndim >= 3 and r.shape[:2] == (T, B):
            scan(f"result #{k}", r)
    for i, g in grads.items():
        if g.ndim >= 3 and g.shape[:2] == (T, B):
            scan(f"the gradient of argument #{i}", g)
    return msgs


def check_gradients(model, name, args, seed=0, max_elements=None, lengths_arg=None):
    """Runs the whole check on one call of `name`: returns (messages, grads), where `messages`
    lists the failures (empty: passed) and `grads` is analytic_gradients' dict.

    `args`: f's arguments (float64 arrays, int32 lengths). `seed`: for the loss weights and the
    sampling. `max_elements`: check at most that many elements of each argument, drawn at
    random (None: all). `lengths_arg`: the index of the per-sequence lengths, for the padding
    check. Contract violations (signatures, missing functions) raise AssertionError."""
    function = CompiledFunction(model, name, args)
    plain = tuple(np.array(r, copy=True) for r in function())
    weights = loss_weights(plain, seed)
    results, _, grads = analytic_gradients(model, name, args, weights)
    msgs = []
    if lengths_arg is not None:
        msgs += padding_violations(name, args, grads, results, lengths_arg)
    elements = (None if max_elements is None
                else sample_elements(args, list(grads), max_elements, seed + 1))
    report = compare(function, weights, grads, elements)
    for i, e in report.items():
        if not e.error <= TOL:
            msgs.append(e.describe(name, np.shape(args[i])))
    return msgs, grads


def gradient_differences(a, b):
    """{arg index: relative difference} between two sets of gradients of one function (say, of
    two compiles): max|a - b| / max(max|a|, floor), floor = SAME_FLOOR_REL times the
    largest gradient over all arguments)."""
    assert sorted(a) == sorted(b), (sorted(a), sorted(b))
    scale = max([float(np.max(np.abs(g))) for g in a.values() if np.size(g)] + [0.0])
    floor = max(SAME_FLOOR_REL * scale, np.finfo(np.float64).tiny)
    out = {}
    for i in a:
        x, y = np.asarray(a[i], np.float64), np.asarray(b[i], np.float64)
        out[i] = (float(np.max(np.abs(x - y))) / max(float(np.max(np.abs(x))), floor)
                  if x.size else 0.0)
    return out
