#!/usr/bin/env python3
"""Several builds of one model (the same function and signature, e.g. the
model's IR with its fused groups edited by hand, or the compiler with and
without a change) timed in alternation in one process on the same inputs
(gpu_bench.time_in_rounds, 8 rounds of 10 calls, each build on a stream of
its own), after checking that every build's outputs match the first's.

    python3 bench/experiments/builds_ab.py FUNCTION T B MODEL.so [MODEL.so ...]
(bench/gpu-run.sh's library path; prints ms per call and the ratio to the
first build. Models of another signature, e.g. a reference model, are timed
alongside but not compared.)"""
import sys

import torch

import model_timing  # noqa: F401  (puts bench/ on the path)
import gpu_bench as gb


def main(function, T, B, paths):
    models = [gb.CudaModel(p) for p in paths]
    # The same seed for each: equal signatures get equal inputs.
    args = [gb.random_args(m, function, T, B, seed=1) for m in models]
    outs = [m.outputs(function, a) for m, a in zip(models, args)]
    calls = []
    with torch.no_grad():
        for m, a, o in zip(models, args, outs):
            m(function, a, o)
        torch.cuda.synchronize()
        for p, o in zip(paths, outs):
            if [x.shape for x in o] != [x.shape for x in outs[0]] or \
                    [x.shape for x in args[paths.index(p)]] != [x.shape for x in args[0]]:
                print(f"  {p}: another signature, not compared")
                continue
            err = max(gb.rel_err(a.double().cpu().numpy(), b.double().cpu().numpy())
                      for a, b in zip(o, outs[0]))
            print(f"  {p}: max rel diff to the first build {err:.2e}")
        for m, a, o in zip(models, args, outs):
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            calls.append((lambda m=m, a=a, o=o: m(function, a, o), stream))
        times = gb.time_in_rounds(calls, rounds=8, repeats=10)
    for p, t in zip(paths, times):
        print(f"  {p:50s} {t:.3f} ms  {t / times[0]:.3f}x")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:])
