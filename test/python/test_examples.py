"""Every example in examples/, compiled with and without optimisation, against the float64
numpy references of reference.py, for several (T, B) shapes."""

import numpy as np
import pytest

import reference
from conftest import EXAMPLES_DIR

# Each example's arguments, in order: shapes with "T" (sequence length) and "B" (batch) for
# the dynamic sizes. I = 10, H = 20 (LSTMP: P = 12; SRU: I = H = 20).
LSTM4 = [(80, 10), (80, 20), (80,), (80,)]
GRU3 = [(60, 10), (60, 20), (60,), (60,)]
ARGS = {
    "rnn_tanh": [("T", "B", 10), ("B", 20), (20, 10), (20, 20), (20,), (20,)],
    "lstm": [("T", "B", 10), ("B", 20), ("B", 20)] + LSTM4,
    "gru": [("T", "B", 10), ("B", 20)] + GRU3,
    "gru_reset_before": [("T", "B", 10), ("B", 20)] + GRU3,
    "peephole_lstm": [("T", "B", 10), ("B", 20), ("B", 20)] + LSTM4 + [(20,), (20,), (20,)],
    "cifg_lstm": [("T", "B", 10), ("B", 20), ("B", 20), (60, 10), (60, 20), (60,), (60,)],
    "lstmp": [("T", "B", 10), ("B", 12), ("B", 20), (80, 10), (80, 12), (80,), (80,), (12, 20)],
    "mgu": [("T", "B", 10), ("B", 20), (40, 10), (40, 20), (40,)],
    "sru": [("T", "B", 20), ("B", 20), (60, 20), (60,), (20,), (20,)],
    "indrnn": [("T", "B", 10), ("B", 20), (20, 10), (20,), (20,)],
    "layernorm_lstm": [("T", "B", 10), ("B", 20), ("B", 20), (80, 10), (80, 20),
                       (80,), (80,), (80,), (80,), (80,), (20,), (20,)],
    "lstm_2layer": [("T", "B", 10), ("B", 20), ("B", 20), ("B", 20), ("B", 20)]
                   + LSTM4 + [(80, 20), (80, 20), (80,), (80,)],
    "bigru": [("T", "B", 10), ("B", 20), ("B", 20)] + GRU3 + GRU3,
}
assert set(ARGS) == set(reference.EXAMPLES)
assert sorted(p.stem for p in EXAMPLES_DIR.glob("*.mlir")) == sorted(ARGS), \
    "an example was added or removed: update ARGS and reference.EXAMPLES"

SHAPES = [(7, 3), (1, 1), (5, 1), (1, 4)]
RTOL = 1e-5
WEIGHT_SCALE = 0.3


def make_args(example, T, B, seed):
    """Random normal arguments (never zeros): the sequence and states at scale 1, the
    parameters (static shapes) at WEIGHT_SCALE so that activations are not saturated."""
    rng = np.random.default_rng(seed)
    args = []
    for spec in ARGS[example]:
        shape = tuple({"T": T, "B": B}.get(d, d) for d in spec)
        scale = 1.0 if any(d in ("T", "B") for d in spec) else WEIGHT_SCALE
        args.append((scale * rng.standard_normal(shape)).astype(np.float32))
    return args


def rel_err(ours, ref):
    return float(np.max(np.abs(ours.astype(np.float64) - ref)) / max(np.max(np.abs(ref)), 1e-30))


def check_close(outs, refs, what):
    assert len(outs) == len(refs), f"{what}: {len(outs)} results, reference has {len(refs)}"
    errors = []
    for k, (o, r) in enumerate(zip(outs, refs)):
        assert o.dtype == np.float32, f"{what}: result #{k} has dtype {o.dtype}"
        assert o.shape == r.shape, f"{what}: result #{k} has shape {o.shape}, reference {r.shape}"
        assert np.all(np.isfinite(o)), f"{what}: result #{k} is not finite"
        e = rel_err(o, r)
        if not e <= RTOL:
            errors.append(f"result #{k}: max|ours - ref| / max|ref| = {e:.3g} > {RTOL:g}")
    assert not errors, f"{what}: " + "; ".join(errors)


def seed_of(example, T, B):
    return (sorted(ARGS).index(example) * 1000 + T * 10 + B)


def run(load, example, optimize, T, B):
    func, _ = reference.EXAMPLES[example]
    model = load(EXAMPLES_DIR / f"{example}.mlir", optimize)
    args = make_args(example, T, B, seed_of(example, T, B))
    return model(func, *args), args


@pytest.mark.parametrize("example", sorted(ARGS))
@pytest.mark.parametrize("optimize", [True, False], ids=["opt", "noopt"])
def test_signature(load, example, optimize):
    """The manifest's signature is the example func's (T, B dynamic, all f32)."""
    func, _ = reference.EXAMPLES[example]
    model = load(EXAMPLES_DIR / f"{example}.mlir", optimize)
    assert func in model.functions
    args, _ = model.signature(func)
    expected = [("f32", tuple(None if d in ("T", "B") else d for d in spec))
                for spec in ARGS[example]]
    assert args == expected


@pytest.mark.parametrize("T,B", SHAPES, ids=[f"T{T}B{B}" for T, B in SHAPES])
@pytest.mark.parametrize("optimize", [True, False], ids=["opt", "noopt"])
@pytest.mark.parametrize("example", sorted(ARGS))
def test_example_matches_reference(load, example, optimize, T, B):
    outs, args = run(load, example, optimize, T, B)
    _, ref_fn = reference.EXAMPLES[example]
    refs = ref_fn(*[a.astype(np.float64) for a in args])
    check_close(outs, refs, f"{example} ({'opt' if optimize else 'noopt'}, T={T}, B={B})")


@pytest.mark.parametrize("T,B", SHAPES, ids=[f"T{T}B{B}" for T, B in SHAPES])
@pytest.mark.parametrize("example", sorted(ARGS))
def test_optimized_matches_unoptimized(load, example, T, B):
    opt, _ = run(load, example, True, T, B)
    noopt, _ = run(load, example, False, T, B)
    check_close(opt, [o.astype(np.float64) for o in noopt],
                f"{example} (opt vs noopt, T={T}, B={B})")
