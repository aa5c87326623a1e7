"""The K-split partials rewrite (convert-matmul-to-library-gemm{k-partials}), checked on the
CPU: with rnn-compile --k-partials=8 the CPU's GEMM writes the partial products of 8 (or 4)
K slices and the step's kernel adds them up, as the CUDA backend does for speed. The two
cells whose step has two dependent products, at H = 1024 where the rewrite applies (their
first product read directly and through gate windows), against the float64 numpy references
and against the same model compiled without the rewrite; and the backward's recurrent product
split across the step loop's back edge (LSTM, GRU, a layer wavefront's chunks) against the
backward compiled without it."""

import re

import numpy as np
import pytest

import rnn
from conftest import EXAMPLES_DIR
from test_dsl_zoo import ZOO

T, B, I, H = 3, 16, 8, 1024


def random_args(model, seed):
    """[T, B, I] inputs, [B, H] state, parameters scaled by 1/sqrt(their last dimension)."""
    rng = np.random.default_rng(seed)
    args = []
    for i, (_, shape) in enumerate(model.signature("forward")[0]):
        dims = [(T if i == 0 and d == 0 else B) if s is None else s for d, s in enumerate(shape)]
        args.append((rng.standard_normal(dims) / np.sqrt(dims[-1])).astype(np.float32))
    return args


def rel_err(ours, ref):
    return float(np.max(np.abs(ours.astype(np.float64) - ref)) / np.max(np.abs(ref)))


def check_backward(split, plain, name, args, rng, label):
    """Every gradient of `name`'s backward in `split` within 1e-5 of `plain`'s, for result
    gradients drawn from `rng`."""
    results, saved = plain.train_forward(name, *args)
    seeds = [rng.standard_normal(r.shape).astype(np.float32) for r in results]
    want = plain.backward(name, args, results, saved, seeds)
    got = split.backward(name, args, *split.train_forward(name, *args), seeds)
    for k, (g, w) in enumerate(zip(got, want)):
        err = rel_err(g, w.astype(np.float64))
        assert err <= 1e-5, f"{label}: gradient #{k} {err:.2e}"


@pytest.mark.parametrize("cell", ["mgu", "gru_reset_before"])
def test_k_partials_match_reference(cell, tmp_path):
    text = rnn.NumpyRNN(rnn.zoo.CELLS[cell], I, H, seed=0).mlir
    lowered = tmp_path / "split.mlir"
    rnn.compile_mlir(text, lowered, extra_args=["--k-partials=8", "--emit=mlir"])
    calls = lowered.read_text().count("@rnn_cpu_gemm_partials(")
    assert calls >= 2, f"{cell}: the rewrite did not apply ({calls} partials calls)"
    split = rnn.Model(rnn.compile_mlir(text, tmp_path / "split.so", extra_args=["--k-partials=8"]))
    plain = rnn.Model(rnn.compile_mlir(text, tmp_path / "plain.so"))
    args = random_args(split, seed=3)
    ref_fn, names, _, _ = ZOO[cell]
    assert len(args) == 2 + len(names)
    refs = ref_fn(*[a.astype(np.float64) for a in args])
    got = split("forward", *args)
    expected = plain("forward", *args)
    for k, (g, e, r) in enumerate(zip(got, expected, refs)):
        assert rel_err(g, r) <= 1e-5, f"{cell} result #{k}: {rel_err(g, r):.2e} from float64"
        assert rel_err(g, e) <= 1e-5, f"{cell} result #{k}: {rel_err(g, e):.2e} from the plain GEMM"
    # A batch under 16 rows keeps the plain GEMM (the run-time branch).
    small = [a[:, :4] if i == 0 else (a[:4] if i == 1 else a) for i, a in enumerate(args)]
    small_refs = ref_fn(*[a.astype(np.float64) for a in small])
    for g, r in zip(split("forward", *small), small_refs):
        assert rel_err(g, r) <= 1e-5


@pytest.mark.parametrize("cell,hidden", [("lstm", 256), ("gru", 384), ("layernorm_lstm", 256)])
def test_loop_carried_partials_in_backward(cell, hidden, tmp_path):
    """The backward's recurrent product dG·U split across the loop's back edge: the next
    step's adjoint kernel adds the K-slice partials, the first slice starts as the final
    state's gradient and their sum is the initial state's gradient after the loop. Every
    gradient against the same model compiled without the split, at a batch that takes the
    partials (16 rows) and one that does not (4). The LayerNorm LSTM's adjoint group, whose
    first phase reads the product, has row reductions."""
    text = rnn.NumpyRNN(rnn.zoo.CELLS[cell], 8, hidden, seed=0).mlir
    lowered = tmp_path / "split.mlir"
    rnn.compile_mlir(text, lowered, training=True,
                     extra_args=["--k-partials=8", "--emit=mlir"])
    backward = lowered.read_text().split("llvm.func @forward_backward(")[1].split("llvm.func")[0]
    assert "@rnn_cpu_gemm_partials(" in backward, f"{cell}: no loop-carried partials"
    split = rnn.Model(rnn.compile_mlir(text, tmp_path / "split.so", training=True,
                                       extra_args=["--k-partials=8"]))
    plain = rnn.Model(rnn.compile_mlir(text, tmp_path / "plain.so", training=True))
    for batch in (16, 4):
        args = random_args(split, seed=5)
        args = [a[:, :batch] if i == 0 else (a[:batch] if a.shape[0] == B else a)
                for i, a in enumerate(args)]
        check_backward(split, plain, "forward", args, np.random.default_rng(7),
                       f"{cell}, batch {batch}")
    split.close()
    plain.close()


def test_loop_carried_partials_in_wavefront_backward(tmp_path):
    """A stack's backward as a wavefront over chunks of 3 steps, each layer's recurrent
    product split across the back edge of every chunk's loop (its partials made before each
    chunk and summed after it): the 2-layer LSTM example widened to H = 256, against the
    layer-by-layer build without the split."""
    widths = {"10": "8", "20": "256", "80": "1024"}
    text = re.sub(r"tensor<[^>]*>",
                  lambda m: re.sub(r"(?<![0-9])(10|20|80)(?![0-9])",
                                     lambda d: widths[d.group(1)], m.group(0)),
                  (EXAMPLES_DIR / "lstm_2layer.mlir").read_text())
    lowered = tmp_path / "split.mlir"
    flags = ["--layer-wavefront=on", "--wavefront-chunk=3", "--k-partials=8"]
    rnn.compile_mlir(text, lowered, training=True, extra_args=flags + ["--emit=mlir"])
    backward = lowered.read_text().split("llvm.func @lstm_2layer_backward(")[1]
    backward = backward.split("llvm.func")[0]
    assert backward.count("@rnn_cpu_gemm_partials(") >= 2
    split = rnn.Model(rnn.compile_mlir(text, tmp_path / "split.so", training=True,
                                       extra_args=flags))
    plain = rnn.Model(rnn.compile_mlir(text, tmp_path / "plain.so", training=True,
                                       extra_args=["--layer-wavefront=off"]))
    rng = np.random.default_rng(11)
    args = []
    for i, (_, shape) in enumerate(plain.signature("lstm_2layer")[0]):
        dims = [(7 if i == 0 and d == 0 else B) if s is None else s for d, s in enumerate(shape)]
        args.append((rng.standard_normal(dims) / np.sqrt(dims[-1])).astype(np.float32))
    check_backward(split, plain, "lstm_2layer", args, rng, "wavefront")
    split.close()
    plain.close()
