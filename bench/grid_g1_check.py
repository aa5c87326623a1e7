#!/usr/bin/env python3
"""Experiment: the grid-wide kernels for one-gate recurrences (the vanilla RNN, bf16,
H = 768 and 1000) on the GPU. Checks with bench/grid_kernels.py's check (training
forward and backward, kernel and step loop against float64 torch.nn.RNN), then times a
training step and a forward call in 3 alternating rounds of 10: the kernels (MODELS) and
the same models compiled before one-gate entry points existed (OLD: block kernels in
clusters up to B = 16, the step loop beyond).

    python3 bench/grid_g1_check.py MODELS OLD
"""
import os
import statistics
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import grid_kernels  # noqa: E402
from cuda_events import event_times  # noqa: E402
from gpu_bench import CudaModel  # noqa: E402


def main(models, old):
    print(torch.cuda.get_device_name(), flush=True)
    failed = 0
    for name in sorted(os.listdir(models)):
        rows = grid_kernels.check(os.path.join(models, name), *grid_kernels.parse(name))
        failed += sum(r["check"] != "PASS" for r in rows)
    for name in sorted(os.listdir(models)):
        if not os.path.exists(os.path.join(old, name)):
            continue
        kind, dtype, I, H = grid_kernels.parse(name)
        pair = [CudaModel(os.path.join(models, name)), CudaModel(os.path.join(old, name))]
        for T, B in ((100, 1), (100, 4), (100, 16), (100, 64), (1024, 16)):
            gen = torch.Generator(device="cuda").manual_seed(7)
            _, args = grid_kernels.arguments(kind, dtype, I, H, T, B, gen)
            calls = []
            for model in pair:
                info = model.model.training_info(f"{kind}_seq")
                outs = model.outputs(info.train_function, args)
                n = len(outs) - info.num_saved
                grads_in = [torch.randn(o.shape, device="cuda", generator=gen)
                            for o in outs[:n]]
                grads = model.outputs(info.backward_function, args + outs + grads_in)
                fwd = model.outputs(f"{kind}_seq", args)

                def train(m=model, i=info, o=outs, g=grads, gi=grads_in):
                    m(i.train_function, args, o)
                    m(i.backward_function, args + o + gi, g)

                def forward(m=model, o=fwd):
                    m(f"{kind}_seq", args, o)
                calls.append((train, forward))
            samples = [[[], []], [[], []]]
            for _ in range(3):
                for which in range(2):
                    for i in range(2):
                        fn = calls[i][which]
                        for _ in range(3):
                            fn()
                        torch.cuda.synchronize()
                        samples[which][i] += event_times(fn, 10)
            med = [[statistics.median(s) for s in w] for w in samples]
            print(f"{name:26} T={T} B={B:3} | training step: kernels {med[0][0]:.3f} "
                  f"before {med[0][1]:.3f} ({med[0][1] / med[0][0]:.2f}x) | forward: kernels "
                  f"{med[1][0]:.3f} before {med[1][1]:.3f} ({med[1][1] / med[1][0]:.2f}x)",
                  flush=True)
    print(f"failed checks: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
