#!/usr/bin/env python3
"""Experiment (on the GPU machine): each traced model's forward at T = 1001 and
B = 1, 4 and 8, with the low-latency exchange and without it
(RNN_CUDA_LOW_LATENCY=1 / 0); the kernel prints, for three of its blocks, the
cycles a step spends in each phase (averaged over steps 2 .. 999), and this
prints the call's time a step (one call after a warm-up).

    python3 bench/grid_trace.py MODEL_DIR
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cuda_events import event_times  # noqa: E402
from gpu_bench import CudaModel  # noqa: E402
import grid_kernels as gk  # noqa: E402

T = 1001
print(torch.cuda.get_device_name(), flush=True)
for name in sorted(os.listdir(sys.argv[1])):
    kind, dtype, I, H = gk.parse(name)
    model = CudaModel(os.path.join(sys.argv[1], name))
    for B in (1, 4, 8):
        gen = torch.Generator(device="cuda").manual_seed(1)
        _, args = gk.arguments(kind, dtype, I, H, T, B, gen)
        outs = model.outputs(f"{kind}_seq", args)
        for setting in ("1", "0"):
            os.environ["RNN_CUDA_LOW_LATENCY"] = setting
            model(f"{kind}_seq", args, outs)
            torch.cuda.synchronize()
            ms = event_times(lambda: model(f"{kind}_seq", args, outs), 3)
            print(f"== {name} B={B} low-latency={setting}: "
                  f"{min(ms) * 1000 / T:.3f} us a step", flush=True)
            model(f"{kind}_seq", args, outs)
            torch.cuda.synchronize()
