"""Compile time of a large cell: 128 gates whose matmuls share their left operands, which
rnn-concat-gate-matmuls packs into one concatenation of 128 weights per side. Lowered as a
chain of insert_slices, that concatenation made empty-tensor elimination and bufferization
take over 20 s of CPU time for this cell; as one tensor.concat the whole compile takes
about 2 s (docs/performance-notes.md). The budget is CPU time (rnn-compile's and the
link's), which other jobs on the machine do not inflate the way they inflate wall time.
The compiled model is also checked against numpy."""

import os
import resource
import sys
import time

import numpy as np

import rnn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "bench"))
from compile_time import gates_cell  # noqa: E402  (the benchmark's cell of n gates)

N = 128
I = H = 8
CPU_BUDGET_S = 10.0


def reference(xs, h, W, U):
    ys = []
    for x in xs:
        h = np.tanh(sum(np.tanh(x @ w.T + h @ u.T) for w, u in zip(W, U)))
        ys.append(h)
    return np.stack(ys), h


def test_large_cell_compiles_within_budget(tmp_path):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    path = rnn.compile_mlir(gates_cell(N, I, H), tmp_path / "gates.so")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert cpu < CPU_BUDGET_S, (f"rnn-compile took {cpu:.1f} s of CPU time ({wall:.1f} s wall) "
                                f"for a cell of {N} gates; the budget is {CPU_BUDGET_S} s")

    rng = np.random.default_rng(0)
    T, B = 3, 2
    xs = rng.standard_normal((T, B, I)).astype(np.float32)
    h0 = rng.standard_normal((B, H)).astype(np.float32)
    W = [(0.1 * rng.standard_normal((H, I))).astype(np.float32) for _ in range(N)]
    U = [(0.1 * rng.standard_normal((H, H))).astype(np.float32) for _ in range(N)]
    with rnn.Model(path) as model:
        ys, hT = model("seq", xs, h0, *W, *U)
    ref_ys, ref_h = reference(xs.astype(np.float64), h0.astype(np.float64),
                              [w.astype(np.float64) for w in W],
                              [u.astype(np.float64) for u in U])
    np.testing.assert_allclose(ys, ref_ys, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(hT, ref_h, rtol=1e-5, atol=1e-5)
