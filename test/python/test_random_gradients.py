"""Random cells, differentiated: the 200 seeded cells of cellgen.py (test_random_cells.py),
as float64 copies compiled with `rnn-compile --training`, with and without optimisation; for
each, the gradients of f_train / f_backward against finite differences (gradcheck.py) of every
element of every argument, at T = 3, B = 2.

One test per seed (test_random_gradients[SEED]); it fails on a compile error, a forward that
is not cellgen's float64 reference, an f_train whose results are not f's bit for bit, a
gradient off by more than gradcheck.TOL = 1e-6 (relative, per argument), or optimised and
unoptimised gradients that differ beyond rounding. Reproduce a cell with
`python3 test/python/cellgen.py SEED > cell.mlir` and `sed -i s/f32/f64/g cell.mlir`.
RNN_RANDOM_CELLS=N and RNN_RANDOM_CELLS_FIRST=S choose the seeds, as for test_random_cells.py;
30 cells of the extended family (`cellgen.generate(seed, family="extended")`) follow,
chosen by RNN_RANDOM_EXTENDED_CELLS and RNN_RANDOM_EXTENDED_CELLS_FIRST (test ids
extended-SEED; reproduce with `python3 test/python/cellgen.py SEED --family extended`).

Cost. A --training compile of one of these cells takes ~0.25 s at -O0 (see TRAINING), with
some fixed cost per rnn-compile run, so the cells are compiled GROUP at a time: each cell and
its func renamed by its seed (@cell_SEED, @cell_seq_SEED) and the modules' texts
concatenated. Two compiles run at once in the background (the machine has 2 cores), the next
group's while this group's cells are checked. A group that fails to compile is compiled again
one cell at a time, so that the failure is reported by the seed that causes it. The finite
differences cost ~45 us per element (four calls of the cell's f); the 200 cells have 85,000
argument elements at T = 3, B = 2, ~5 s per variant, so every element of every argument is
checked and nothing is sampled.

Kinks: cellgen's cells use relu, max, min, reduce_max and clipping; gradcheck retries an
element whose estimate misses with smaller steps (see gradcheck.py), so a kink near the
drawn point costs time, not a false failure.
"""

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import cellgen
import gradcheck
from rnn.runtime import CompileError, Model, compile_mlir

NUM_SEEDS = int(os.environ.get("RNN_RANDOM_CELLS", "200"))
FIRST_SEED = int(os.environ.get("RNN_RANDOM_CELLS_FIRST", "0"))
SEEDS = range(FIRST_SEED, FIRST_SEED + NUM_SEEDS)
# The extended family (gate feedback, second recurrent stages, functions of the states before
# a matmul, input-only chains): its seed s is case EXTENDED_BASE + s here, so that the two
# families' cells have names of their own in one module.
EXTENDED_BASE = 1_000_000
NUM_EXTENDED = int(os.environ.get("RNN_RANDOM_EXTENDED_CELLS", "30"))
FIRST_EXTENDED = int(os.environ.get("RNN_RANDOM_EXTENDED_CELLS_FIRST", "0"))
EXTENDED_SEEDS = range(EXTENDED_BASE + FIRST_EXTENDED,
                       EXTENDED_BASE + FIRST_EXTENDED + NUM_EXTENDED)
RANGES = (SEEDS, EXTENDED_SEEDS)
GROUP = 5
T, B = 3, 2
FORWARD_TOL = 1e-11   # float64 forward vs cellgen's float64 reference
SAME_TOL = 1e-10      # optimised vs unoptimised gradients (float64 rounding)
# -O0: LLVM's optimiser and code generator at -O2 take ~80% of a --training compile of these
# cells (0.8 s a cell, 1.25 s unoptimised, against 0.25 s at -O0) and have no part in the
# derivation, which rnn-compile does in MLIR before LLVM; test_gradients.py checks the
# examples at the default -O2.
TRAINING = ("--training", "-O0")

_POOL = ThreadPoolExecutor(max_workers=2)


def _range(case):
    return next(r for r in RANGES if case in r)


def float64_cell(seed):
    """(text, reference, shapes, func) of case `seed`'s cell (cellgen's seed, or
    EXTENDED_BASE + an extended seed) with f64 for f32, @cell and @cell_seq renamed by the
    case so that several cells fit in one module."""
    if seed >= EXTENDED_BASE:
        text, reference, shapes = cellgen.generate(seed - EXTENDED_BASE, family="extended")
    else:
        text, reference, shapes = cellgen.generate(seed)
    assert text.count("@cell ") == 2 and text.count("@cell_seq(") == 1, "cellgen's naming changed"
    func = f"cell_seq_{seed}"
    text = (text.replace("@cell_seq(", f"@{func}(").replace("@cell ", f"@cell_{seed} ")
            .replace("f32", "f64"))
    return text, reference, shapes, func


class Libraries:
    """Compiled groups of cells, by (first seed of the group, optimize), compiled in the
    background on first use with the next group queued behind; loaded models cached."""

    def __init__(self, out_dir):
        self.out_dir = out_dir
        self.futures = {}
        self.models = {}
        self.lock = threading.Lock()

    def _compile(self, seeds, optimize, tag):
        text = "\n".join(float64_cell(s)[0] for s in seeds)
        out = self.out_dir / f"cells_{tag}{'' if optimize else '_noopt'}.so"
        try:
            return compile_mlir(text, out, optimize=optimize, extra_args=TRAINING)
        except OSError:
            # rnn-compile did not start (seen once: exec failing with EFAULT in this pool
            # thread while the main thread ran models): not a compile error, so the group
            # is compiled again rather than its five cells reported as failures.
            return compile_mlir(text, out, optimize=optimize, extra_args=TRAINING)

    def _submit(self, key, seeds, optimize, tag):
        with self.lock:
            if key not in self.futures:
                self.futures[key] = _POOL.submit(self._compile, seeds, optimize, tag)
            return self.futures[key]

    def _group(self, first):
        return list(range(first, min(first + GROUP, _range(first).stop)))

    def _submit_group(self, first):
        if any(first in r for r in RANGES):
            for optimize in (True, False):
                self._submit(("group", first, optimize), self._group(first), optimize,
                             f"{first}-{first + GROUP - 1}")

    def model(self, seed, optimize):
        """The rnn.Model holding seed's cell; raises CompileError with seed's own error."""
        cases = _range(seed)
        first = cases.start + (seed - cases.start) // GROUP * GROUP
        self._submit_group(first)
        self._submit_group(first + GROUP)  # compiles while this group is checked
        try:
            path = self.futures[("group", first, optimize)].result()
        except CompileError:
            path = self._submit(("single", seed, optimize), [seed], optimize, str(seed)).result()
        if path not in self.models:
            self.models[path] = Model(path)
        return self.models[path]

    def close(self):
        for m in self.models.values():
            m.close()


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    libs = Libraries(tmp_path_factory.mktemp("random_gradients"))
    yield libs
    libs.close()


def _describe(shapes):
    return (f"I={shapes.I} H={shapes.H} states={shapes.num_states} "
            f"outputs={shapes.num_outputs} ops={shapes.num_ops}"
            + (" reverse" if shapes.reverse else ""))


@pytest.mark.parametrize(
    "seed", list(SEEDS) + list(EXTENDED_SEEDS),
    ids=[str(s) for s in SEEDS] + [f"extended-{s - EXTENDED_BASE}" for s in EXTENDED_SEEDS])
def test_random_gradients(seed, libraries):
    _, reference, shapes, func = float64_cell(seed)
    where = (f"seed {seed}" if seed < EXTENDED_BASE else
             f"extended seed {seed - EXTENDED_BASE}") + f" ({_describe(shapes)})"
    rng = np.random.default_rng(20_000 + seed)
    args = [a.astype(np.float64) for a in cellgen.make_args(shapes, T, B, rng)]
    ref = reference(*args)
    msgs, grads = [], {}
    for optimize in (True, False):
        variant = "optimised" if optimize else "--no-optimize"
        try:
            model = libraries.model(seed, optimize)
        except CompileError as e:
            pytest.fail(f"rnn-compile --training{'' if optimize else ' --no-optimize'} failed "
                        f"on {where}:\n{e.stderr[-4000:]}")
        got = model(func, *args)
        for k, (o, e) in enumerate(zip(got, ref)):
            d = float(np.max(np.abs(o - e))) / max(float(np.max(np.abs(e))), 1.0) if e.size else 0
            if not d <= FORWARD_TOL:
                msgs.append(f"{variant}: result #{k} differs from cellgen's float64 reference "
                            f"by {d:.3g}")
        found = gradcheck.train_forward_mismatches(model, func, args)
        more, grads[optimize] = gradcheck.check_gradients(model, func, args, seed=seed)
        msgs += [f"{variant}: {m}" for m in found + more]
    for i, d in gradcheck.gradient_differences(grads[True], grads[False]).items():
        if not d <= SAME_TOL:
            msgs.append(f"the gradient of argument #{i} differs between the optimised and "
                        f"--no-optimize compiles by {d:.3g}")
    assert not msgs, f"{where}:\n" + "\n".join(msgs)
