#!/usr/bin/env python3
"""Experiment: the block kernels' cluster choice (convert-step-loops-to-block-kernels'
plans across cluster sizes) against the first cluster that fits, on the shape sweep's
bf16 shapes whose plans it changes. Here: `build OLD_COMPILER NEW_COMPILER DIR` compiles
each shape's model with both; there: `run DIR` checks both against torch.nn in fp32 and
times them in 3 alternating rounds of 10 calls (CUDA events, medians, min-max).
"""
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sweep  # noqa: E402

SHAPES = [("gru", 256, 1, 50), ("gru", 384, 2, 10), ("gru", 200, 256, 50),
          ("lstm", 384, 64, 100), ("lstm", 256, 32, 300), ("lstm", 200, 24, 300),
          ("rnn_tanh", 384, 24, 300), ("rnn_tanh", 512, 32, 100),
          ("rnn_tanh", 640, 64, 100), ("rnn_tanh", 768, 96, 50)]


def build(old, new, out):
    os.makedirs(out, exist_ok=True)
    lib = os.path.join(os.path.dirname(HERE), "build", "lib")
    for cell, H, _, _ in SHAPES:
        src = os.path.join(out, f"{cell}_H{H}.mlir")
        open(src, "w").write(sweep.model_text(cell, "bf16", H))
        for tag, compiler in (("old", old), ("new", new)):
            subprocess.run([compiler, "--target=cuda", src, "-o",
                            os.path.join(out, f"{cell}_H{H}_{tag}.so"), "--runtime-dir", lib],
                           check=True)
        os.remove(src)


def run(out):
    import torch
    from cuda_events import event_times
    from gpu_bench import CudaModel
    print(torch.cuda.get_device_name(), flush=True)
    for cell, H, B, T in SHAPES:
        torch.manual_seed(0)
        module = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU,
                  "rnn_tanh": torch.nn.RNN}[cell](H, H).cuda()
        gen = torch.Generator(device="cuda").manual_seed(1)
        x = torch.randn(T, B, H, device="cuda", generator=gen)
        states = [torch.randn(B, H, device="cuda", generator=gen) * 0.5
                  for _ in range(2 if cell == "lstm" else 1)]
        with torch.no_grad():
            ref = module(x, tuple(s[None] for s in states) if cell == "lstm"
                         else states[0][None])[0]
        bf = lambda t: t.to(torch.bfloat16)  # noqa: E731
        args = [bf(x)] + states + [bf(module.weight_ih_l0.detach().contiguous()),
                                   bf(module.weight_hh_l0.detach().contiguous()),
                                   module.bias_ih_l0.detach().contiguous(),
                                   module.bias_hh_l0.detach().contiguous()]
        fn = f"{cell}_seq"
        calls, errs = [], []
        for tag in ("old", "new"):
            model = CudaModel(os.path.join(out, f"{cell}_H{H}_{tag}.so"))
            outs = model.outputs(fn, args)
            model(fn, args, outs)
            torch.cuda.synchronize()
            errs.append(float((outs[0].double() - ref.double()).abs().max()
                              / ref.double().abs().max()))
            calls.append((model, outs))
        samples = [[], []]
        for _ in range(3):
            for i, (model, outs) in enumerate(calls):
                for _ in range(3):
                    model(fn, args, outs)
                torch.cuda.synchronize()
                samples[i] += event_times(lambda: model(fn, args, outs), 10)
        med = [statistics.median(s) for s in samples]
        print(f"{cell:8} H={H:4} B={B:4} T={T:4} | first cluster {med[0]:.3f} "
              f"({min(samples[0]):.3f}-{max(samples[0]):.3f}) | by cost {med[1]:.3f} "
              f"({min(samples[1]):.3f}-{max(samples[1]):.3f}) | {med[0] / med[1]:.2f}x | "
              f"err {errs[0]:.1e} {errs[1]:.1e}", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(*sys.argv[2:5])
    else:
        run(sys.argv[2])
