#!/usr/bin/env python3
"""Experiment (on the GPU machine): the TF32 grid-wide kernels with the cell's f32 math
in IEEE form (build/grid-exact) against the same models compiled with the 16-bit
kernels' approximate forms (build/grid-approx: the pass's cloneApproximated taking f32
products too, a local edit), forward only, in one process, 3 alternating rounds of 10
calls; each model's outputs against float64 torch.nn first.

    GPU=build/grid-exact; source bench/gpu-env.sh; python3 bench/tf32_math_ab.py
"""
import statistics
import sys

import torch

sys.path.insert(0, "bench")
from cuda_events import event_times  # noqa: E402
from gpu_bench import CudaModel  # noqa: E402
import grid_kernels as gk  # noqa: E402

NAMES = ["lstm_f32_I1000_H1000", "rnn_f32_I1280_H1280", "gru_f32_I1024_H1024"]

for name in NAMES:
    kind, dtype, I, H = gk.parse(name + ".so")
    models = {v: CudaModel(f"build/grid-{v}/models/{name}.so") for v in ("exact", "approx")}
    for T, B in [(1000, 1), (300, 4), (100, 16)]:
        gen = torch.Generator(device="cuda").manual_seed(1)
        module, args = gk.arguments(kind, dtype, I, H, T, B, gen)
        x = args[0].double()
        st = [s.double().unsqueeze(0) for s in args[1:-4]]
        with torch.no_grad():
            y, _ = module(x, tuple(st) if kind == "lstm" else st[0])
        samples = {v: [] for v in models}
        errs = {}
        for v, m in models.items():
            outs = m.outputs(f"{kind}_seq", args)
            m(f"{kind}_seq", args, outs)
            torch.cuda.synchronize()
            errs[v] = gk.rel(outs[0], y)
        for _ in range(3):
            for v, m in models.items():
                outs = m.outputs(f"{kind}_seq", args)
                def fn():
                    m(f"{kind}_seq", args, outs)
                for _ in range(3):
                    fn()
                samples[v] += event_times(fn, 10)
        print(name, T, B, " ".join(
            f"{v}: {statistics.median(s) * 1000 / T:.3f} us/step "
            f"[{min(s) * 1000 / T:.3f}-{max(s) * 1000 / T:.3f}] err {errs[v]:.1e}"
            for v, s in samples.items()), flush=True)
