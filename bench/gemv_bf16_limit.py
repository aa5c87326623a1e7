#!/usr/bin/env python3
"""Experiment: the small-batch GEMV's rows x K limit (3072 elements) for bf16 products:
short bf16 sequences (T = 10, the step loop) at B = 4 to 8 and H = 512 to 1024, whose
products (rows x K = 4096 to 8192) the GEMV took before the limit and cuBLAS takes now.
Run once per runtime (before and after the limit); ours against RNN_CUDA_GEMV=0 in
alternation.

    python3 bench/gemv_bf16_limit.py MODEL_DIR
"""
import os
import statistics
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cuda_events import event_times  # noqa: E402
from gpu_bench import CudaModel, with_setting  # noqa: E402

SHAPES = [("lstm", 512, 8), ("lstm", 768, 8), ("lstm", 1024, 4), ("lstm", 1024, 8),
          ("gru", 1024, 4), ("gru", 1024, 8)]
T = 10


def main(model_dir):
    print(torch.cuda.get_device_name(), flush=True)
    for cell, H, B in SHAPES:
        G = 4 if cell == "lstm" else 3
        model = CudaModel(os.path.join(model_dir, f"{cell}_bf16_I{H}_H{H}.so"))
        gen = torch.Generator(device="cuda").manual_seed(1)
        args = [torch.randn(T, B, H, device="cuda", generator=gen).bfloat16()]
        args += [torch.randn(B, H, device="cuda", generator=gen)
                 for _ in range(2 if cell == "lstm" else 1)]
        args += [(torch.randn(G * H, H, device="cuda", generator=gen) / H ** 0.5).bfloat16()
                 for _ in range(2)]
        args += [torch.randn(G * H, device="cuda", generator=gen) for _ in range(2)]
        fn = f"{cell}_seq"
        outs = model.outputs(fn, args)
        calls = [lambda: model(fn, args, outs),
                 with_setting(lambda: model(fn, args, outs), "RNN_CUDA_GEMV", "0")]
        samples = [[], []]
        with torch.no_grad():
            for c in calls:
                for _ in range(3):
                    c()
            torch.cuda.synchronize()
            for _ in range(5):
                for i, c in enumerate(calls):
                    samples[i] += event_times(c, 10)
        print(f"{cell} bf16 H={H} B={B} T={T} (rows x K = {B * H}): default "
              f"{statistics.median(samples[0]):.4f} ms, RNN_CUDA_GEMV=0 "
              f"{statistics.median(samples[1]):.4f} ms", flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
