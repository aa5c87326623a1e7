#!/usr/bin/env python3
"""On the GPU machine, under Nsight Compute: runs one compiled model once
(warm-up) and once more inside a CUDA profiler range, directly
(RNN_CUDA_GRAPHS=0: every kernel and GEMM launched separately, no graph),
with random inputs, so that

    ncu --profile-from-start off --metrics gpu__time_duration.sum --csv \\
        python3 bench/kernel_profile.py MODEL.so FUNCTION T B

lists the duration of every kernel of one call (bench/gpu-run.sh does this
for a few models and summarises per kernel name).
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_bench import CudaModel, random_args  # noqa: E402

# The runtime reads it at every call.
os.environ["RNN_CUDA_GRAPHS"] = "0"


def main(path, name, steps, batch):
    model = CudaModel(path)
    args = random_args(model, name, int(steps), int(batch), seed=3)
    outs = model.outputs(name, args)
    model(name, args, outs)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    model(name, args, outs)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


if __name__ == "__main__":
    main(*sys.argv[1:5])
