#!/usr/bin/env python3
"""Experiment: the sweep's shapes of at most 8 batch rows (the small-batch GEMV's),
bf16 and fp32, timed with the GEMV and with cuBLAS (RNN_CUDA_GEMV=0) in alternation,
with a kernel-by-kernel breakdown of one call.

    python3 bench/step_loop_ab.py SWEEP_DIR
(SWEEP_DIR as bench/sweep-run.sh unpacks it: models/ and plan.json.)
"""
import json
import os
import statistics
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cuda_events import event_times  # noqa: E402
from gpu_bench import CudaModel, with_setting  # noqa: E402
from kernel_breakdown import kernel_breakdown, print_breakdown  # noqa: E402

SETTINGS = [("default", None, None), ("GEMV=0", "RNN_CUDA_GEMV", "0")]


def main(sweep_dir):
    plan = json.load(open(os.path.join(sweep_dir, "plan.json")))
    print(torch.cuda.get_device_name(), flush=True)
    for s in plan["shapes"]:
        cell, H, B, T = s["cell"], s["H"], s["B"], s["T"]
        for precision in ("bf16", "fp32"):
            path = os.path.join(sweep_dir, "models", f"{cell}_{precision}_H{H}.so")
            if B <= 8 and cell != "rnn_tanh" and os.path.exists(path):
                measure(path, cell, precision, H, B, T)


def measure(path, cell, precision, H, B, T):
    torch.manual_seed(0)
    module = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU}[cell](H, H).cuda()
    gen = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(T, B, H, device="cuda", generator=gen)
    states = [torch.randn(B, H, device="cuda", generator=gen) * 0.5
              for _ in range(2 if cell == "lstm" else 1)]
    store = (lambda t: t.to(torch.bfloat16)) if precision == "bf16" else (lambda t: t)
    ours = CudaModel(path)
    args = [store(x)] + states + [
        store(module.weight_ih_l0.detach().contiguous()),
        store(module.weight_hh_l0.detach().contiguous()),
        module.bias_ih_l0.detach().contiguous(),
        module.bias_hh_l0.detach().contiguous()]
    fn = f"{cell}_seq"
    outs = ours.outputs(fn, args)
    calls = [with_setting(lambda: ours(fn, args, outs), name, value) if name
             else (lambda: ours(fn, args, outs)) for _, name, value in SETTINGS]
    samples = [[] for _ in calls]
    with torch.no_grad():
        for call in calls:
            for _ in range(3):
                call()
        torch.cuda.synchronize()
        for _ in range(5):
            for i, call in enumerate(calls):
                samples[i] += event_times(call, 10)
        print(f"{cell} {precision} H={H} B={B} T={T}: " + "  ".join(
            f"{label} {statistics.median(t):.4f} ms [{min(t):.4f}, {max(t):.4f}]"
            for (label, _, _), t in zip(SETTINGS, samples)), flush=True)
        p = kernel_breakdown(lambda: ours(fn, args, outs), True)
        print_breakdown("breakdown", p, 4)
    del ours
    torch.cuda.empty_cache()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
