#!/usr/bin/env python3
"""Experiment: the host time of each of a training step's two calls (the training forward
and the backward) and the GPU time of each, for the bf16 LSTM and GRU of
build/gpu-train/bench-models at small-latency and medium, graphs on. A call's host time is
perf_counter around rnn_model_run after a synchronize; its GPU time CUDA events around it.

    python3 bench/call_host_time.py MODEL_DIR
"""
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train_bench  # noqa: E402

CONFIGS = {c["name"]: c for c in train_bench.configs()}


def main(model_dir):
    for kind in ("lstm", "gru"):
        for name in ("small-latency", "medium"):
            config = CONFIGS[name]
            ours, _, _ = train_bench.step_functions(kind, "bf16", config, model_dir)
            model, calls = ours.__closure__[0].cell_contents, None
            # ours_step's closure: (backward_args, grads, info, ours, ours_args, train_outs)
            cells = {v: c.cell_contents for v, c in
                     zip(ours.__code__.co_freevars, ours.__closure__)}
            m, info = cells["ours"], cells["info"]
            calls = [("train", lambda: m(info.train_function, cells["ours_args"],
                                         cells["train_outs"])),
                     ("backward", lambda: m(info.backward_function, cells["backward_args"],
                                            cells["grads"]))]
            for _ in range(20):
                ours()
            torch.cuda.synchronize()
            for label, fn in calls:
                host, gpu = [], []
                for _ in range(30):
                    torch.cuda.synchronize()
                    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(
                        enable_timing=True)
                    start.record()
                    t0 = time.perf_counter()
                    fn()
                    host.append((time.perf_counter() - t0) * 1e6)
                    stop.record()
                    torch.cuda.synchronize()
                    gpu.append(start.elapsed_time(stop) * 1e3)
                print(f"{kind:4} {name:14} {label:8} host {statistics.median(host):8.1f} us "
                      f"(min {min(host):7.1f})  gpu {statistics.median(gpu):8.1f} us", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
