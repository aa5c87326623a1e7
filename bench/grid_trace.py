#!/usr/bin/env python3
"""Experiment (docs/performance-notes.md): each bf16 model of MODEL_DIR's training
forward and backward at T = 1024 (the traced library prints its phases at step 1000)
and B = 8, 16, 32, timed with CUDA events (median of 10 after warm-up), ms per call and
us per step.

    python3 bench/grid_trace.py MODEL_DIR
"""
import os
import statistics
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from cuda_events import event_times  # noqa: E402
from grid_kernels import arguments, parse  # noqa: E402
from gpu_bench import CudaModel  # noqa: E402

T = 1024


def main(model_dir):
    for name in sorted(os.listdir(model_dir)):
        kind, dtype, I, H = parse(name)
        model = CudaModel(os.path.join(model_dir, name))
        info = model.model.training_info(f"{kind}_seq")
        for B in (8, 16, 32):
            gen = torch.Generator(device="cuda").manual_seed(B)
            _, args = arguments(kind, dtype, I, H, T, B, gen)
            outs = model.outputs(info.train_function, args)
            n = len(outs) - info.num_saved
            result_grads = [torch.randn(o.shape, device="cuda", generator=gen)
                            for o in outs[:n]]
            grads = model.outputs(info.backward_function, args + outs + result_grads)

            def forward():
                model(info.train_function, args, outs)

            def backward():
                model(info.backward_function, args + outs + result_grads, grads)

            print(f"-- {name} B={B}", flush=True)
            forward()
            backward()
            torch.cuda.synchronize()
            f = statistics.median(event_times(forward, 10))
            b = statistics.median(event_times(backward, 10))
            print(f"   {name} B={B}: training forward {f:.3f} ms ({1e3 * f / T:.2f} us/step)"
                  f" backward {b:.3f} ms ({1e3 * b / T:.2f} us/step)", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
