"""rnn-layer-wavefront on the CPU, where its lanes run in order: the stacked example
computed chunk by chunk (chunks of 1 and 3 steps, a last chunk shorter, and the automatic
size) and the bidirectional one with its directions side by side match the float64
reference and the builds without the pass, and so do their training forward and
backward."""

import numpy as np
import pytest

import reference
import rnn
from conftest import EXAMPLES_DIR
from test_examples import check_close, make_args

SOURCE = EXAMPLES_DIR / "lstm_2layer.mlir"
SHAPES = [(10, 3), (1, 1), (7, 2)]


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """Wavefront builds by chunk size (0: automatic), and the layer-by-layer build, each
    with its training functions."""
    out = tmp_path_factory.mktemp("wavefront")
    models = {}
    for chunk in (0, 1, 3):
        path = rnn.compile_mlir(SOURCE, out / f"chunk{chunk}.so", training=True,
                                extra_args=["--layer-wavefront=on",
                                            f"--wavefront-chunk={chunk}"])
        models[chunk] = rnn.Model(path)
    models["layered"] = rnn.Model(rnn.compile_mlir(
        SOURCE, out / "layered.so", training=True, extra_args=["--layer-wavefront=off"]))
    yield models
    for model in models.values():
        model.close()


@pytest.mark.parametrize("T,B", SHAPES, ids=[f"T{T}B{B}" for T, B in SHAPES])
@pytest.mark.parametrize("chunk", [0, 1, 3], ids=["auto", "chunk1", "chunk3"])
def test_wavefront_matches_reference(builds, chunk, T, B):
    args = make_args("lstm_2layer", T, B, seed=100 * T + B)
    outs = builds[chunk]("lstm_2layer", *args)
    refs = reference.lstm_2layer(*[a.astype(np.float64) for a in args])
    check_close(outs, refs, f"lstm_2layer wavefront (chunk {chunk}, T={T}, B={B})")
    layered = builds["layered"]("lstm_2layer", *args)
    check_close(outs, [o.astype(np.float64) for o in layered],
                f"lstm_2layer wavefront vs layered (chunk {chunk}, T={T}, B={B})")


def training_results(model, name, args):
    """The training forward's results and the backward's gradients for seeds drawn the
    same way for every build."""
    rng = np.random.default_rng(8)
    results, saved = model.train_forward(name, *args)
    seeds = [rng.standard_normal(r.shape).astype(np.float32) for r in results]
    return results, model.backward(name, args, results, saved, seeds)


def check_training(model, reference_model, name, args, what):
    results, dargs = training_results(model, name, args)
    ref_results, ref_dargs = training_results(reference_model, name, args)
    check_close(results, [r.astype(np.float64) for r in ref_results], f"{what}: results")
    pairs = [(d, r) for d, r in zip(dargs, ref_dargs) if r is not None]
    assert len(pairs) == len(args)
    check_close([d for d, _ in pairs], [r.astype(np.float64) for _, r in pairs],
                f"{what}: gradients")


@pytest.fixture(scope="module")
def bidirectional(tmp_path_factory):
    """The bidirectional example with its directions side by side, and without."""
    out = tmp_path_factory.mktemp("side_by_side")
    source = EXAMPLES_DIR / "bigru.mlir"
    models = {key: rnn.Model(rnn.compile_mlir(source, out / f"{key}.so", training=True,
                                              extra_args=[f"--layer-wavefront={key}"]))
              for key in ("on", "off")}
    yield models
    for model in models.values():
        model.close()


@pytest.mark.parametrize("T,B", SHAPES, ids=[f"T{T}B{B}" for T, B in SHAPES])
def test_side_by_side_matches_reference(bidirectional, T, B):
    args = make_args("bigru", T, B, seed=10 * T + B)
    outs = bidirectional["on"]("bigru", *args)
    refs = reference.bigru(*[a.astype(np.float64) for a in args])
    check_close(outs, refs, f"bigru side by side (T={T}, B={B})")


def test_side_by_side_training_matches(bidirectional):
    check_training(bidirectional["on"], bidirectional["off"], "bigru",
                   make_args("bigru", 9, 2, seed=5), "bigru side by side vs in order")


@pytest.mark.parametrize("chunk", [0, 3], ids=["auto", "chunk3"])
def test_wavefront_training_matches_layered(builds, chunk):
    check_training(builds[chunk], builds["layered"], "lstm_2layer",
                   make_args("lstm_2layer", 10, 3, seed=7),
                   f"lstm_2layer wavefront (chunk {chunk}) vs layered")


def test_bad_wavefront_option(tmp_path):
    with pytest.raises(rnn.CompileError, match="--layer-wavefront must be auto, on or off"):
        rnn.compile_mlir(SOURCE, tmp_path / "bad.so", extra_args=["--layer-wavefront=yes"])
