#!/usr/bin/env python3
"""On the GPU machine: the grid-wide persistent kernels (convert-step-loops-to-persistent-
kernels, forward and backward) against the step loop of the same library, and against
float64 autograd through torch.nn.

For each bf16, f16 and f32 (TF32 products) LSTM / GRU / vanilla RNN of MODEL_DIR
(bench/grid-kernels-build.sh: make_models.py's models, and their f16 twins, compiled
with --training): the training forward and the backward on random data
at several (T, B), with the kernels (RNN_CUDA_PERSISTENT=1, read at every call) and with
the step loop (=0), and with the kernels' staged vectors exchanged by the step counter
only (RNN_CUDA_LOW_LATENCY=0): every result of each against a float64 reference (torch.nn's module
in float64 on the same 16-bit-rounded weights and inputs, through autograd), and the two
paths against each other. The kernels split the batch into tiles, each on its own copy
of the H / 16 blocks, as many as the SMs hold (2 at H = 1024 on an H100, 4 at 512, 1 at
2048); batches whose tiles would need more than the layout's rows (32), and sequences
under 32 steps, run the step loop on both sides (the fallback). Then one training step
and one forward call timed at FlashRNN's grid (T = 1024, B = 16) and other shapes of
that H, on the kernels with as many tiles as fit, on them without the low-latency
exchange (counter), on the kernels in one tile
(RNN_CUDA_BATCH_TILES=1) and on the step loop, in 3 alternating rounds of 10 calls
(CUDA events, medians, min-max).

    python3 bench/grid_kernels.py MODEL_DIR OUT_JSON
"""
import json
import os
import statistics
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from cuda_events import event_times  # noqa: E402
from gpu_bench import CudaModel  # noqa: E402

# (T, B): the kernels take T >= 32 and tiles of up to 32 rows: B = 40 and 64 in two
# tiles up to H = 1024, B = 100 in four at H = 512 (the fallback above); the last two
# run the fallback everywhere.
CHECK_SHAPES = [(32, 8), (40, 16), (33, 24), (64, 32), (35, 1), (36, 3), (35, 5),
                (34, 13), (33, 40), (34, 64), (32, 100), (9, 16), (33, 136)]
TIME_SHAPES = [(1024, 16), (100, 64), (100, 32), (100, 8), (300, 1), (100, 4)]
# The paths timed: the settings each reads at every call.
MODES = {"kernel": {"RNN_CUDA_PERSISTENT": "1", "RNN_CUDA_BATCH_TILES": "",
                    "RNN_CUDA_LOW_LATENCY": "1"},
         "counter": {"RNN_CUDA_PERSISTENT": "1", "RNN_CUDA_BATCH_TILES": "",
                     "RNN_CUDA_LOW_LATENCY": "0"},
         "one_tile": {"RNN_CUDA_PERSISTENT": "1", "RNN_CUDA_BATCH_TILES": "1",
                      "RNN_CUDA_LOW_LATENCY": "1"},
         "loop": {"RNN_CUDA_PERSISTENT": "0", "RNN_CUDA_BATCH_TILES": "",
                  "RNN_CUDA_LOW_LATENCY": "1"}}


def set_mode(mode):
    os.environ.update(MODES[mode])
# Relative to the largest magnitude of each result: 16-bit inputs and weights with f32
# accumulation, the product's rounding; f32 with TF32 products (10-bit mantissas, on
# both paths: cuBLAS's TF32 GEMM in the step loop), about 2^-10 a product.
LIMITS = {torch.bfloat16: 2e-2, torch.float16: 2e-2, torch.float32: 5e-3}


DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


def parse(name):
    """(kind, dtype, I, H) of a model file name such as lstm_bf16_I768_H768.so."""
    parts = name[:-3].split("_")
    return parts[0], DTYPES[parts[1]], int(parts[2][1:]), int(parts[3][1:])


def arguments(kind, dtype, I, H, T, B, gen):
    """Our arguments (16-bit x and weights, f32 states and biases) and the float64
    module."""
    torch.manual_seed(0)
    module = getattr(torch.nn, kind.upper())(I, H).cuda().double()
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.startswith("weight"):
                p.copy_(p.to(dtype).double())
    x = torch.randn(T, B, I, device="cuda", generator=gen).to(dtype)
    states = [torch.randn(B, H, device="cuda", generator=gen) * 0.5
              for _ in range(2 if kind == "lstm" else 1)]
    args = [x.contiguous()] + states + [
        module.weight_ih_l0.detach().to(dtype).contiguous(),
        module.weight_hh_l0.detach().to(dtype).contiguous(),
        module.bias_ih_l0.detach().float().contiguous(),
        module.bias_hh_l0.detach().float().contiguous()]
    return module, args


def run(model, info, args, result_grads):
    outs = model.outputs(info.train_function, args)
    model(info.train_function, args, outs)
    n = len(outs) - info.num_saved
    grads = model.outputs(info.backward_function, args + outs + result_grads)
    model(info.backward_function, args + outs + result_grads, grads)
    torch.cuda.synchronize()
    return outs[:n] + grads


def reference(kind, module, args, result_grads):
    """float64 autograd: the results (y, final states) and the gradients in our order."""
    x = args[0].double().unsqueeze(0).squeeze(0).requires_grad_()
    states = [s.double().unsqueeze(0).requires_grad_() for s in args[1:-4]]
    y, final = module(x, tuple(states) if kind == "lstm" else states[0])
    finals = list(final) if kind == "lstm" else [final]
    outs = [y] + [f.squeeze(0) for f in finals]
    grads = torch.autograd.grad(outs, [x] + states + list(module.parameters()),
                                [g.double().reshape(o.shape)
                                 for g, o in zip(result_grads, outs)])
    return [o.detach() for o in outs] + list(grads)


def rel(a, b):
    a, b = a.double().reshape(-1), b.double().reshape(-1)
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))


def check(path, kind, dtype, I, H):
    model = CudaModel(path)
    func = f"{kind}_seq"
    info = model.model.training_info(func)
    rows = []
    for T, B in CHECK_SHAPES:
        gen = torch.Generator(device="cuda").manual_seed(T * 100 + B)
        module, args = arguments(kind, dtype, I, H, T, B, gen)
        outs = model.outputs(info.train_function, args)
        n = len(outs) - info.num_saved
        result_grads = [torch.randn(o.shape, device="cuda", generator=gen) for o in outs[:n]]
        results = {}
        for mode in ("kernel", "counter", "loop"):
            set_mode(mode)
            results[mode] = run(model, info, args, result_grads)
        set_mode("kernel")
        ref = reference(kind, module, args, result_grads)
        err = {mode: max(rel(a, b) for a, b in zip(r, ref)) for mode, r in results.items()}
        between = max(rel(a, b) for a, b in zip(results["kernel"], results["loop"]))
        ok = all(e <= LIMITS[dtype] for e in err.values())
        row = {"model": os.path.basename(path), "T": T, "B": B,
               "kernel_vs_float64": err["kernel"], "counter_vs_float64": err["counter"],
               "loop_vs_float64": err["loop"], "kernel_vs_loop": between,
               "check": "PASS" if ok else "FAIL"}
        rows.append(row)
        print(f"{row['check']} {row['model']:28} T={T:4} B={B:3} | kernel vs float64 "
              f"{err['kernel']:.1e} | counter {err['counter']:.1e} | loop "
              f"{err['loop']:.1e} | kernel vs loop {between:.1e}", flush=True)
    return rows


def time_model(path, kind, dtype, I, H):
    model = CudaModel(path)
    func = f"{kind}_seq"
    info = model.model.training_info(func)
    rows = []
    for T, B in TIME_SHAPES:
        gen = torch.Generator(device="cuda").manual_seed(7)
        _, args = arguments(kind, dtype, I, H, T, B, gen)
        outs = model.outputs(info.train_function, args)
        n = len(outs) - info.num_saved
        result_grads = [torch.randn(o.shape, device="cuda", generator=gen) for o in outs[:n]]
        grads = model.outputs(info.backward_function, args + outs + result_grads)
        fwd_outs = model.outputs(func, args)

        def train():
            model(info.train_function, args, outs)
            model(info.backward_function, args + outs + result_grads, grads)

        def forward():
            model(func, args, fwd_outs)

        samples = {(what, mode): [] for what in ("train", "forward") for mode in MODES}
        for _ in range(3):
            for what, fn in (("train", train), ("forward", forward)):
                for mode in MODES:
                    set_mode(mode)
                    for _ in range(3):
                        fn()
                    torch.cuda.synchronize()
                    samples[(what, mode)] += event_times(fn, 10)
        set_mode("kernel")
        row = {"model": os.path.basename(path), "T": T, "B": B}
        for (what, mode), s in samples.items():
            row[f"{what}_{mode}_ms"] = statistics.median(s)
            row[f"{what}_{mode}_range"] = [min(s), max(s)]
        rows.append(row)
        print(f"{row['model']:28} T={T:5} B={B:3} | training step: kernel "
              f"{row['train_kernel_ms']:8.3f} counter {row['train_counter_ms']:8.3f} "
              f"one tile {row['train_one_tile_ms']:8.3f} "
              f"loop {row['train_loop_ms']:8.3f} | forward: kernel "
              f"{row['forward_kernel_ms']:8.3f} counter {row['forward_counter_ms']:8.3f} "
              f"one tile {row['forward_one_tile_ms']:8.3f} "
              f"loop {row['forward_loop_ms']:8.3f}", flush=True)
    return rows


def main(model_dir, out_path):
    print(torch.cuda.get_device_name(), flush=True)
    checks, timings, failed = [], [], 0
    for name in sorted(os.listdir(model_dir)):
        if not name.endswith(".so"):
            continue
        rows = check(os.path.join(model_dir, name), *parse(name))
        failed += sum(r["check"] != "PASS" for r in rows)
        checks += rows
    for name in sorted(os.listdir(model_dir)):
        if name.endswith(".so"):
            timings += time_model(os.path.join(model_dir, name), *parse(name))
    with open(out_path, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "checks": checks, "timings": timings}, f, indent=1)
    print(f"{len(checks) - failed} of {len(checks)} checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
