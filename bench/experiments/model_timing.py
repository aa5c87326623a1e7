"""Shared by the early-launch experiments (bench/experiments/README.md): a
compiled model with random inputs at `medium` (T = 100, B = 64), a stream of
its own, and its CUDA graph timed as gpu_bench times ours."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gpu_bench as gb  # noqa: E402

MODELS = "build/gpu/models"


class Probe:
    def __init__(self, name, fn, seed):
        self.model = gb.CudaModel(f"{MODELS}/{name}.so")
        self.fn = fn
        self.args = gb.random_args(self.model, fn, 100, 64, seed=seed)
        self.outs = self.model.outputs(fn, self.args)
        self.stream = torch.cuda.Stream()
        self.stream.wait_stream(torch.cuda.current_stream())

    def call(self):
        self.model(self.fn, self.args, self.outs)

    def time(self, stream=None, overlap=True):
        """ms per call on `stream` (its own by default): three calls (the
        graph's capture and tuning), then gpu_bench.time_ms; kernels not
        launched early when `overlap` is false."""
        if not overlap:
            os.environ["RNN_CUDA_OVERLAP_LAUNCHES"] = "0"
        try:
            with torch.no_grad(), torch.cuda.stream(stream or self.stream):
                for _ in range(3):
                    self.call()
                ms = gb.time_ms(self.call)
            torch.cuda.synchronize()
        finally:
            os.environ.pop("RNN_CUDA_OVERLAP_LAUNCHES", None)
        return ms

    def show(self, label, stream=None, overlap=True, suffix=""):
        """Times it and prints "  label: N ms"."""
        ms = self.time(stream, overlap)
        print(f"  {label}: {ms:.3f} ms{suffix}", flush=True)
        return ms


def matmuls(stream, n):
    """n torch matmuls [64 x 1024] x [1024 x 4096] on `stream` (None: the
    current one), waited for."""
    with torch.cuda.stream(stream or torch.cuda.current_stream()):
        x = torch.randn(64, 1024, device="cuda")
        w = torch.randn(1024, 4096, device="cuda")
        for _ in range(n):
            x @ w
    torch.cuda.synchronize()
