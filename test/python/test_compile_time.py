"""Compile time of a large cell: 128 gates whose matmuls share their left operands, which
rnn-concat-gate-matmuls packs into one concatenation of 128 weights per side. Lowered as a
chain of insert_slices, that concatenation made empty-tensor elimination and bufferization
take over 20 s of CPU time for this cell; as one tensor.concat the whole compile takes
about 2 s (docs/performance-notes.md). The budget is CPU time (rnn-compile's and the
link's), which other jobs on the machine do not inflate the way they inflate wall time.
The compiled model is also checked against numpy."""

import resource
import time

import numpy as np

import rnn

N = 128
I = H = 8
CPU_BUDGET_S = 10.0


def gates_cell(n):
    """A cell of n gates, each tanh(x @ W_k.T + h @ U_k.T), summed into the new h."""
    def t(*dims):
        return "tensor<" + "x".join(str(d) for d in dims) + "xf32>"
    params = [f"%W{k}: {t(H, I)}" for k in range(n)] + [f"%U{k}: {t(H, H)}" for k in range(n)]
    names = [f"%W{k}" for k in range(n)] + [f"%U{k}" for k in range(n)]
    types = [t(H, I)] * n + [t(H, H)] * n
    lines = [f"rnn.cell @gates inputs(%x: {t('?', I)}) states(%h: {t('?', H)})",
             f"    params({', '.join(params)}) -> ({t('?', H)}) {{"]
    acc = None
    for k in range(n):
        lines += [
            f"  %wx{k} = rnn.matmul %x, %W{k} : {t('?', I)}, {t(H, I)} -> {t('?', H)}",
            f"  %uh{k} = rnn.matmul %h, %U{k} : {t('?', H)}, {t(H, H)} -> {t('?', H)}",
            f"  %g{k} = rnn.add %wx{k}, %uh{k} : {t('?', H)}, {t('?', H)}",
            f"  %a{k} = rnn.tanh %g{k} : {t('?', H)}",
        ]
        if acc is not None:
            lines.append(f"  %s{k} = rnn.add {acc}, %a{k} : {t('?', H)}, {t('?', H)}")
        acc = f"%a{k}" if acc is None else f"%s{k}"
    lines += [f"  %hn = rnn.tanh {acc} : {t('?', H)}",
              f"  rnn.yield outputs(%hn : {t('?', H)}) states(%hn : {t('?', H)})", "}",
              f"func.func @seq(%xs: {t('?', '?', I)}, %h0: {t('?', H)}, {', '.join(params)})",
              f"    -> ({t('?', '?', H)}, {t('?', H)}) {{",
              f"  %ys, %hT = rnn.scan @gates inputs(%xs : {t('?', '?', I)}) "
              f"init(%h0 : {t('?', H)}) params({', '.join(names)} : {', '.join(types)}) "
              f"-> outputs({t('?', '?', H)}) states({t('?', H)})",
              f"  return %ys, %hT : {t('?', '?', H)}, {t('?', H)}",
              "}"]
    return "\n".join(lines) + "\n"


def reference(xs, h, W, U):
    ys = []
    for x in xs:
        h = np.tanh(sum(np.tanh(x @ w.T + h @ u.T) for w, u in zip(W, U)))
        ys.append(h)
    return np.stack(ys), h


def test_large_cell_compiles_within_budget(tmp_path):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    path = rnn.compile_mlir(gates_cell(N), tmp_path / "gates.so")
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
