#!/usr/bin/env python3
"""Experiment (bench/experiments/README.md): the zoo's two-stage GRU (reset
gate before the matmul) against our LSTM at `medium`, in a process before
and after the slow state, with every call of ours on one stream.

pdl_state.cu found what starts the slow state: plain (not early) kernel
launches on a stream other than the one the graphs run on; on the graphs'
own stream they do not. So here every model call, the first direct ones
included, runs on one stream A; the models are timed in rounds on A; then
torch runs matmuls on the legacy default stream (as a PyTorch program
does), and the models are timed again on A. With MODE=same-stream the
matmuls run on A instead.

    python3 bench/experiments/slow_state_ratio.py MODEL_DIR [same-stream]
"""
import os
import sys

import torch

import model_timing  # noqa: F401  (puts bench/ on the path)
import gpu_bench as gb

MODELS = [("lstm_I1024_H1024", "lstm_seq"), ("zoo_gru_reset_before", "forward"),
          ("zoo_mgu", "forward"), ("zoo_gru", "forward")]


def main(model_dir, mode):
    stream = torch.cuda.Stream()
    calls = []
    with torch.no_grad(), torch.cuda.stream(stream):
        for name, function in MODELS:
            model = gb.CudaModel(os.path.join(model_dir, name + ".so"))
            args = gb.random_args(model, function, 100, 64, seed=1)
            outs = model.outputs(function, args)
            call = (lambda m=model, f=function, a=args, o=outs: m(f, a, o))
            for _ in range(3):  # The direct first call, the capture, a replay.
                call()
            calls.append((call, stream))
    torch.cuda.synchronize()

    def report(label):
        with torch.no_grad():
            times = gb.time_in_rounds(calls, rounds=4, repeats=10)
        print(f"== {label}")
        for (name, _), t in zip(MODELS, times):
            print(f"  {name:22s} {t:.3f} ms  {t / times[0]:.2f}x our LSTM", flush=True)

    report("fresh: every call on one stream")
    where = stream if mode == "same-stream" else torch.cuda.default_stream()
    model_timing.matmuls(where, 200)
    report("after 200 torch matmuls on "
           + ("that stream" if mode == "same-stream" else "the legacy default stream"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "")
