"""Shared helpers of the DSL tests (test_dsl_*.py); no tests of its own.

Importing it points RNN_CACHE_DIR at a fresh temporary directory for the session (unless it
is set already), so the DSL tests compile each distinct model once and leave ~/.cache alone.
"""

import atexit
import os
import shutil
import tempfile

import numpy as np

if not os.environ.get("RNN_CACHE_DIR"):
    _CACHE = tempfile.mkdtemp(prefix="rnn-test-cache-")
    os.environ["RNN_CACHE_DIR"] = _CACHE
    atexit.register(shutil.rmtree, _CACHE, True)

import rnn  # noqa: E402  (conftest put <repo>/python on sys.path)

RTOL = 1e-5
WEIGHT_SCALE = 0.3


def randomize(model, seed, scale=WEIGHT_SCALE):
    """Sets every parameter of `model` to normal(0, scale) values (never all zeros, so that
    every term of every equation is exercised); returns the model."""
    rng = np.random.default_rng(seed)
    for key, a in model.named_parameters():
        a[...] = scale * rng.standard_normal(a.shape)
    return model


def rand(rng, *shape, dtype=np.float32, scale=1.0):
    return (scale * rng.standard_normal(shape)).astype(dtype)


def rel_err(ours, ref):
    ours = np.asarray(ours, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    assert ours.shape == ref.shape, f"shape {ours.shape}, reference {ref.shape}"
    if ref.size == 0:
        return 0.0
    return float(np.max(np.abs(ours - ref)) / max(float(np.max(np.abs(ref))), 1e-30))


def assert_close(ours, ref, what, rtol=RTOL):
    assert np.all(np.isfinite(ours)), f"{what}: not finite"
    e = rel_err(ours, ref)
    assert e <= rtol, f"{what}: max|ours - ref| / max|ref| = {e:.3g} > {rtol:g}"


def params_of(model, names, layer=0, reverse=False):
    return [model.param(n, layer, reverse) for n in names]


def line_of(path, marker):
    """The 1-based line number of the line of `path` that contains `marker`."""
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if marker in line:
                return n
    raise AssertionError(f"{marker!r} not in {path}")


@rnn.cell(states=("h",))
def scaled_cell(x, h):
    """A cell with a rank-0 parameter: h = tanh(W x + s h), s initialised to 0.5."""
    s = rnn.param("s", (), init=0.5)
    W = rnn.param("W", (rnn.H, rnn.I))
    return rnn.tanh(x @ W.T + s * h)
