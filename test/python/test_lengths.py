"""Per-sequence lengths: models/lengths.mlir (a bidirectional LSTM, forward and `reverse`
scans with lengths(%len)) against reference.lstm_bidir_lengths."""

import numpy as np
import pytest

import reference
from conftest import MODELS_DIR
from test_examples import check_close

MODEL = MODELS_DIR / "lengths.mlir"
FUNC = "lstm_bidir_lengths"
I, H = 10, 20

CASES = {
    # T, lengths: all differ, one of length 1, one full, one shorter than T - 1
    "T7_lens7315": (7, [7, 3, 1, 5]),
    # no row runs all T steps
    "T6_lens241": (6, [2, 4, 1]),
    # every row of length 1
    "T4_lens11": (4, [1, 1]),
    "T1_lens1": (1, [1]),
    # all rows full length: the same as no lengths
    "T5_lens55": (5, [5, 5]),
}


def make_args(T, lengths, seed):
    rng = np.random.default_rng(seed)
    B = len(lengths)
    f = lambda *shape, s=1.0: (s * rng.standard_normal(shape)).astype(np.float32)
    xs = f(T, B, I)
    states = [f(B, H) for _ in range(4)]
    weights = []
    for _ in range(2):  # forward, backward
        weights += [f(4 * H, I, s=0.3), f(4 * H, H, s=0.3), f(4 * H, s=0.3), f(4 * H, s=0.3)]
    return [xs, np.asarray(lengths, dtype=np.int32)] + states + weights


def reference_of(args):
    return reference.lstm_bidir_lengths(
        *[a if a.dtype == np.int32 else a.astype(np.float64) for a in args])


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("optimize", [True, False], ids=["opt", "noopt"])
def test_lengths(load, case, optimize):
    T, lengths = CASES[case]
    args = make_args(T, lengths, seed=sorted(CASES).index(case) + 100)
    model = load(MODEL, optimize)
    outs = model(FUNC, *args)
    refs = reference_of(args)
    check_close(outs, refs, f"{FUNC} ({'opt' if optimize else 'noopt'}, {case})")
    # Padding positions are exactly zero in both directions.
    ys = outs[0]
    for b, n in enumerate(lengths):
        assert np.all(ys[n:, b, :] == 0.0), f"row {b} (length {n}) has nonzero padding outputs"


def test_reference_lengths_semantics():
    """The reference itself: a row of length n behaves as that row's sequence cut to n."""
    T, lengths = CASES["T7_lens7315"]
    args = make_args(T, lengths, seed=7)
    ys, hT_f, cT_f, hT_b, cT_b = reference_of(args)
    xs = args[0].astype(np.float64)
    rest = [a.astype(np.float64) for a in args[2:]]
    for b, n in enumerate(lengths):
        sl = lambda a: a[b:b + 1]
        row = reference.lstm_bidir_lengths(
            xs[:n, b:b + 1], np.array([n], np.int32), *[sl(s) for s in rest[:4]], *rest[4:])
        np.testing.assert_allclose(ys[:n, b:b + 1], row[0], rtol=1e-12, atol=1e-12)
        for got, want in zip((hT_f, cT_f, hT_b, cT_b), row[1:]):
            np.testing.assert_allclose(got[b:b + 1], want, rtol=1e-12, atol=1e-12)


def test_lengths_mismatched_batch_is_rejected(load):
    """The lengths vector's size is the batch: a wrong one is a shape mismatch."""
    model = load(MODEL, False)
    args = make_args(5, [5, 3, 2], seed=1)
    args[1] = np.array([5, 3], dtype=np.int32)
    import rnn
    with pytest.raises(rnn.RNNError) as info:
        model(FUNC, *args)
    assert info.value.status_name == "RNN_ERROR_SHAPE_MISMATCH"
    assert "arg #1" in info.value.message and FUNC in info.value.message
