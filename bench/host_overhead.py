#!/usr/bin/env python3
"""Experiment: where a short call's host time goes (the sweep's T = 1 shapes, where the
call is bound by the host). For each model: the Python wrapper's descriptors alone,
rnn_model_run with descriptors built once, the whole call (CudaModel), each on the
legacy default stream and on a stream of torch's, and the CUDA-event time of the call, through the harness's CallPlan (bench/gpu_bench.py) and
through descriptors built field by field (its call before).

    python3 bench/host_overhead.py SWEEP_DIR
"""
import ctypes
import json
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cuda_events import event_times  # noqa: E402
from gpu_bench import CudaModel, to_tensor  # noqa: E402

import rnn.runtime as rt  # noqa: E402

CALLS = 300


def per_call_us(fn):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(CALLS):
            fn()
        samples.append((time.perf_counter() - t0) / CALLS * 1e6)
        torch.cuda.synchronize()
    return statistics.median(samples)


def main(sweep_dir):
    plan = json.load(open(os.path.join(sweep_dir, "plan.json")))
    print(torch.cuda.get_device_name(), flush=True)
    for s in plan["shapes"]:
        cell, H, B, T = s["cell"], s["H"], s["B"], s["T"]
        if T > 10:
            continue
        for precision in ("bf16", "fp32"):
            path = os.path.join(sweep_dir, "models", f"{cell}_{precision}_H{H}.so")
            if not os.path.exists(path):
                continue
            dt = torch.bfloat16 if precision == "bf16" else torch.float32
            ours = CudaModel(path)
            fn = f"{cell}_seq"
            G = 4 if cell == "lstm" else 3
            gen = torch.Generator(device="cuda").manual_seed(1)
            args = [torch.randn(T, B, H, device="cuda", generator=gen).to(dt)]
            args += [torch.randn(B, H, device="cuda", generator=gen)
                     for _ in range(2 if cell == "lstm" else 1)]
            args += [(torch.randn(G * H, H, device="cuda", generator=gen) / H ** 0.5).to(dt)
                     for _ in range(2)]
            args += [torch.randn(G * H, device="cuda", generator=gen) for _ in range(2)]
            outs = ours.outputs(fn, args)

            def slow(name, args, outs):
                # The harness's call before it kept a CallPlan.
                arg_array = (rt.RnnTensor * len(args))(*[to_tensor(a) for a in args])
                res = (rt.RnnTensor * len(outs))(*[to_tensor(o) for o in outs])
                stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
                if ours.lib.rnn_model_run(ours.model.handle, name.encode(), arg_array,
                                          len(args), res, len(outs), stream):
                    raise RuntimeError(ours.lib.rnn_last_error().decode())
            row = {}
            for label, stream in (("default stream", torch.cuda.default_stream()),
                                  ("side stream", torch.cuda.Stream())):
                with torch.cuda.stream(stream), torch.no_grad():
                    arg_array = (rt.RnnTensor * len(args))(*[to_tensor(a) for a in args])
                    res = (rt.RnnTensor * len(outs))(*[to_tensor(o) for o in outs])
                    handle, name = ours.model.handle, fn.encode()
                    cstream = ctypes.c_void_p(stream.cuda_stream)
                    run = ours.lib.rnn_model_run

                    def prebuilt():
                        run(handle, name, arg_array, len(args), res, len(outs), cstream)

                    def descriptors():
                        (rt.RnnTensor * len(args))(*[to_tensor(a) for a in args])
                        (rt.RnnTensor * len(outs))(*[to_tensor(o) for o in outs])

                    row[label] = {
                        "plan call": per_call_us(lambda: ours(fn, args, outs)),
                        "plan events": statistics.median(
                            event_times(lambda: ours(fn, args, outs), 50)) * 1e3,
                        "descriptors": per_call_us(descriptors),
                        "run prebuilt": per_call_us(prebuilt),
                        "descriptor call": per_call_us(lambda: slow(fn, args, outs)),
                        "descriptor events": statistics.median(
                            event_times(lambda: slow(fn, args, outs), 50)) * 1e3,
                        "events prebuilt": statistics.median(
                            event_times(prebuilt, 50)) * 1e3}
            print(f"{cell} {precision} H={H} B={B} T={T} (host us a call; events us):",
                  flush=True)
            for label, r in row.items():
                print(f"  {label:15s} " + "  ".join(f"{k} {v:7.1f}" for k, v in r.items()),
                      flush=True)
            del ours
            torch.cuda.empty_cache()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
