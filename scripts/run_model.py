#!/usr/bin/env python3
"""Compiles a model with rnn-compile and runs it on random inputs, on the CPU or a GPU.

    scripts/run_model.py MODEL.mlir [-o MODEL.so] [-T 16] [-B 4] [--runs 20] [--seed 0]
                         [--device cpu|cuda] [--training]
    scripts/run_model.py MODEL.so ...          (an already compiled model: just run it)

With --device cuda the model is compiled with --target=cuda and runs on PyTorch
CUDA tensors on a stream of its own (the runtime replays a CUDA graph from the
second call on), timed with CUDA events; a .mlir model is also compiled and run
on the CPU on the same inputs and the largest relative difference is printed.

For every function of the model: the arguments come from its signature, with
random normal data (the sequence and the states at scale 1, the parameters,
which have static shapes, at scale 0.3 so that the gates do not saturate), and
per-sequence lengths (an integer [B] argument) drawn in [1, T]. A dynamic size
is T in dim 0 of a rank-3 argument (the sequence, [T, B, I]) and B everywhere
else (the states, [B, H]). The function runs --runs times; the
script prints each result's shape and sum (a checksum) and the median wall
time per call, measured around the Python call (ctypes and the allocation of
the results included).

With --training (CPU) the model is compiled with rnn-compile --training and,
for every function, one training step runs --runs times: the training forward
and the derived backward of the loss sum(results) (every result gradient is
ones); the script prints each gradient's shape and sum and the median time of
the step against that of the forward alone.

It uses the binding in <repo>/python (rnn.compile_mlir, rnn.Model), which
finds build/bin/rnn-compile and build/lib/librnn_runtime.so ($RNN_BUILD_DIR for
another build directory; RNN_COMPILE and RNN_RUNTIME_LIB override them). A model
may live anywhere; the script's own location gives the repository.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

import numpy as np  # noqa: E402

import rnn  # noqa: E402

WEIGHT_SCALE = 0.3
FLOAT_DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16}
DTYPE_NAMES = {np.dtype(t): name for name, t in FLOAT_DTYPES.items()}


def make_args(signature_args, T, B, rng):
    args = []
    for i, (dtype, shape) in enumerate(signature_args):
        if dtype in ("i32", "i64") and len(shape) == 1 and shape[0] is None:
            # Per-sequence lengths ([B]): drawn in [1, T].
            args.append(rng.integers(1, T + 1, size=B).astype(np.dtype(dtype.replace("i", "int"))))
            continue
        if dtype not in FLOAT_DTYPES:
            raise SystemExit(f"run_model: argument #{i} is {dtype} {list(shape)}; this script "
                             "fills float arguments and [B] integer lengths only")
        dynamic = any(s is None for s in shape)
        concrete = tuple((T if len(shape) == 3 and d == 0 else B) if s is None else s
                         for d, s in enumerate(shape))
        scale = 1.0 if dynamic else WEIGHT_SCALE
        args.append((scale * rng.standard_normal(concrete)).astype(FLOAT_DTYPES[dtype]))
    return args


def fmt_shape(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def fmt_time(seconds):
    return f"{seconds * 1e3:.3f} ms" if seconds < 1 else f"{seconds:.3f} s"


def run_cuda(model_path, source, opts):
    """Runs every function of a CUDA model on torch CUDA tensors; with the
    .mlir `source`, also on the CPU, and compares."""
    try:
        import torch
    except ImportError:
        print("run_model: --device cuda needs PyTorch", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print("run_model: --device cuda: PyTorch sees no CUDA device", file=sys.stderr)
        return 1
    torch_dtypes = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16}
    rng = np.random.default_rng(opts.seed)
    cpu_model = None
    if source is not None:
        cpu_so = Path(str(model_path)[:-3] + ".cpu.so")
        rnn.compile_mlir(source, cpu_so)
        cpu_model = rnn.Model(cpu_so)
    try:
        with rnn.Model(model_path) as model:
            stream = torch.cuda.Stream()
            for name in model.functions:
                sig_args, _ = model.signature(name)
                host = make_args(sig_args, opts.T, opts.B, rng)
                args = [torch.from_numpy(a).cuda() for a in host]
                descs = [(a.data_ptr(), dt, tuple(a.shape))
                         for a, (dt, _) in zip(args, sig_args)]
                result_info = model.result_descriptors(name, descs)
                outs = [torch.empty(shape, dtype=torch_dtypes[dt], device="cuda")
                        for dt, shape in result_info]
                out_descs = [(o.data_ptr(), dt, tuple(o.shape))
                             for o, (dt, _) in zip(outs, result_info)]
                print(f"-- {name}: {len(args)} arguments, random normal inputs, "
                      f"T = {opts.T}, B = {opts.B}, on {torch.cuda.get_device_name(0)}")
                stream.wait_stream(torch.cuda.current_stream())
                times = []
                with torch.cuda.stream(stream):
                    for _ in range(opts.runs):
                        start = torch.cuda.Event(enable_timing=True)
                        end = torch.cuda.Event(enable_timing=True)
                        start.record()
                        model.run_descriptors(name, descs, out_descs, stream.cuda_stream)
                        end.record()
                        end.synchronize()
                        times.append(start.elapsed_time(end) / 1e3)
                results = [o.cpu().numpy() for o in outs]
                for k, r in enumerate(results):
                    print(f"   result #{k}: {DTYPE_NAMES.get(r.dtype, r.dtype)} {fmt_shape(r.shape)}  "
                          f"sum {float(np.sum(r, dtype=np.float64)):.6f}")
                print(f"   median GPU time per call (CUDA events): {fmt_time(statistics.median(times))}"
                      f" over {opts.runs} calls (min {fmt_time(min(times))})")
                if cpu_model is not None:
                    expected = cpu_model(name, *host)
                    worst = max(float(np.max(np.abs(r - e)) / max(np.max(np.abs(e)), 1e-30))
                                for r, e in zip(results, expected))
                    print(f"   largest relative difference from the CPU build: {worst:.1e}")
    except (rnn.RNNError, OSError) as e:
        print(f"run_model: {model_path}: {e}", file=sys.stderr)
        return 1
    finally:
        if cpu_model is not None:
            cpu_model.close()
    return 0


def run_training_step(model, name, args, forward_results, forward_times, opts):
    """One training step of `name`, --runs times: the training forward and the backward of
    sum(results). Prints the gradients' shapes and sums and the step's median time."""
    ones = [np.ones_like(r) for r in forward_results]
    times = []
    for _ in range(opts.runs):
        start = time.perf_counter()
        results, saved = model.train_forward(name, *args)
        grads = model.backward(name, args, results, saved, ones)
        times.append(time.perf_counter() - start)
    saved_bytes = sum(a.nbytes for a in saved)
    print(f"   training step (forward saving {len(saved)} tensors, {saved_bytes} bytes, then the "
          f"derived backward of sum(results)):")
    for k, g in enumerate(grads):
        if g is not None:
            print(f"   gradient of argument #{k}: {DTYPE_NAMES.get(g.dtype, g.dtype)} "
                  f"{fmt_shape(g.shape)}  sum {float(np.sum(g, dtype=np.float64)):.6f}")
    step, forward = statistics.median(times), statistics.median(forward_times)
    print(f"   median wall time per training step: {fmt_time(step)} over {opts.runs} steps "
          f"({step / forward:.1f}x the forward alone)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a .mlir file to compile, or a .so made by rnn-compile")
    parser.add_argument("-o", "--output", help="where to write the .so (default: next to the .mlir)")
    parser.add_argument("-T", type=int, default=16, help="sequence length (default 16)")
    parser.add_argument("-B", type=int, default=4, help="batch size (default 4)")
    parser.add_argument("--runs", type=int, default=20, help="timed calls (default 20)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="where to run (default cpu; cuda needs PyTorch with CUDA)")
    parser.add_argument("--training", action="store_true",
                        help="also run the derived backward (CPU; docs/training.md)")
    opts = parser.parse_args()
    if min(opts.T, opts.B, opts.runs) < 1:
        parser.error("-T, -B and --runs must be at least 1")
    if opts.training and opts.device != "cpu":
        parser.error("--training runs on the CPU (on the GPU: bench/training-gpu-run.sh)")

    model_path = Path(opts.model)
    source = None
    if model_path.suffix != ".so":
        source = model_path
        output = Path(opts.output) if opts.output else model_path.with_suffix(".so")
        output.parent.mkdir(parents=True, exist_ok=True)
        target = ("--target=cuda",) if opts.device == "cuda" else ()
        start = time.perf_counter()
        try:
            rnn.compile_mlir(model_path, output, extra_args=target, training=opts.training)
        except rnn.CompileError as e:
            print(f"run_model: {e}", file=sys.stderr)
            return 1
        command = " ".join(("rnn-compile",) + target + (("--training",) if opts.training else ()))
        print(f"-- compiled {model_path} -> {output} with {command} "
              f"in {time.perf_counter() - start:.2f} s")
        model_path = output
    if opts.device == "cuda":
        return run_cuda(model_path, source, opts)

    rng = np.random.default_rng(opts.seed)
    try:
        with rnn.Model(model_path) as model:
            derived = set()
            for name in model.functions:
                try:
                    info = model.training_info(name)
                    derived |= {info.train_function, info.backward_function}
                except rnn.RNNError:
                    pass
            for name in model.functions:
                if name in derived:
                    continue
                sig_args, _ = model.signature(name)
                args = make_args(sig_args, opts.T, opts.B, rng)
                print(f"-- {name}: {len(args)} arguments, random normal inputs, "
                      f"T = {opts.T}, B = {opts.B}")
                times = []
                for _ in range(opts.runs):
                    start = time.perf_counter()
                    results = model(name, *args)
                    times.append(time.perf_counter() - start)
                for k, r in enumerate(results):
                    print(f"   result #{k}: {DTYPE_NAMES.get(r.dtype, r.dtype)} {fmt_shape(r.shape)}  "
                          f"sum {float(np.sum(r, dtype=np.float64)):.6f}")
                print(f"   median wall time per call: {fmt_time(statistics.median(times))} "
                      f"over {opts.runs} calls (min {fmt_time(min(times))})")
                if opts.training:
                    run_training_step(model, name, args, results, times, opts)
    except (rnn.RNNError, OSError) as e:
        print(f"run_model: {model_path}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
