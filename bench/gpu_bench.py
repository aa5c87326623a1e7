#!/usr/bin/env python3
"""On the GPU machine: checks every compiled zoo model against float64
references and the LSTM/GRU benchmark models against torch.nn.LSTM/GRU, then
times ours and cuDNN (torch.nn.LSTM/GRU, defaults) in the same process on the
same inputs: CUDA events around each call, warm-up first, median of repeats.

    python3 bench/gpu_bench.py MODEL_DIR OUT_JSON
(bench/gpu-run.sh runs it with the right library path.)
"""
import ctypes
import json
import os
import statistics
import sys

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "test", "python"))

import rnn.runtime as rt  # noqa: E402
import reference  # noqa: E402
from test_examples import ARGS, make_args  # noqa: E402

REPEATS = 15
WARMUP = 3


def to_tensor(t):
    """An rnn_tensor describing a contiguous CUDA float tensor."""
    desc = rt.RnnTensor()
    desc.data = t.data_ptr()
    desc.dtype = {torch.float32: 0, torch.float64: 1, torch.bfloat16: 2,
                  torch.float16: 3, torch.int32: 4, torch.int64: 5}[t.dtype]
    desc.rank = t.dim()
    for i, s in enumerate(t.shape):
        desc.shape[i] = s
    return desc


class CudaModel:
    def __init__(self, path):
        self.model = rt.Model(path)
        self.lib = rt.load_runtime()

    def outputs(self, name, args):
        n = len(self.model.signature(name)[1])
        arg_array = (rt.RnnTensor * len(args))(*[to_tensor(a) for a in args])
        res = (rt.RnnTensor * n)()
        status = self.lib.rnn_model_result_shapes(self.model.handle, name.encode(),
                                                  arg_array, len(args), res, n)
        if status:
            raise RuntimeError(self.lib.rnn_last_error().decode())
        outs = []
        for r in res:
            shape = [r.shape[i] for i in range(r.rank)]
            outs.append(torch.empty(shape, dtype=torch.float32, device="cuda"))
        return outs

    def __call__(self, name, args, outs):
        arg_array = (rt.RnnTensor * len(args))(*[to_tensor(a) for a in args])
        res = (rt.RnnTensor * len(outs))(*[to_tensor(o) for o in outs])
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        status = self.lib.rnn_model_run(self.model.handle, name.encode(), arg_array,
                                        len(args), res, len(outs), stream)
        if status:
            raise RuntimeError(f"{name}: {self.lib.rnn_last_error().decode()}")
        return outs


def rel_err(ours, ref):
    ours = np.asarray(ours, dtype=np.float64)
    return float(np.max(np.abs(ours - ref)) / max(np.max(np.abs(ref)), 1e-30))


def time_ms(fn):
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPEATS):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def check_zoo(model_dir, report):
    print("== correctness: every example on CUDA vs float64 numpy (T=7, B=3)")
    for example in sorted(ARGS):
        path = os.path.join(model_dir, f"{example}.so")
        model = CudaModel(path)
        name, reference_fn = reference.EXAMPLES[example]
        args = make_args(example, 7, 3, seed=11)
        gpu_args = [torch.from_numpy(a).cuda() for a in args]
        outs = model.outputs(name, gpu_args)
        model(name, gpu_args, outs)
        torch.cuda.synchronize()
        refs = reference_fn(*[a.astype(np.float64) for a in args])
        err = max(rel_err(o.cpu().numpy(), r) for o, r in zip(outs, refs))
        ok = err <= 1e-5
        print(f"  {example:18s} max rel err {err:.2e} {'ok' if ok else 'FAIL'}")
        report.append({"check": "zoo", "example": example, "rel_err": err, "ok": ok})


def bench_config(model_dir, kind, cfg, report):
    T, B, I, H = cfg["T"], cfg["B"], cfg["I"], cfg["H"]
    torch.manual_seed(0)
    bf16 = kind.endswith("_bf16")
    torch_cls = torch.nn.GRU if kind == "gru" else torch.nn.LSTM
    ref = torch_cls(I, H).cuda()
    xs = torch.randn(T, B, I, device="cuda")
    h0 = torch.randn(B, H, device="cuda")
    c0 = torch.randn(B, H, device="cuda")
    W = ref.weight_ih_l0.detach().contiguous()
    U = ref.weight_hh_l0.detach().contiguous()
    bW = ref.bias_ih_l0.detach().contiguous()
    bU = ref.bias_hh_l0.detach().contiguous()
    model = CudaModel(os.path.join(model_dir, f"{kind}_I{I}_H{H}.so"))
    name = "gru_seq" if kind == "gru" else "lstm_seq"
    if bf16:
        # bf16 storage (sequence and weights), f32 accumulation and state;
        # cuDNN runs the same module converted to bf16.
        args = [xs.bfloat16(), h0, c0, W.bfloat16(), U.bfloat16(), bW, bU]
        cudnn_module = torch_cls(I, H).cuda()
        cudnn_module.load_state_dict(ref.state_dict())
        cudnn_module = cudnn_module.bfloat16()
        # Converting leaves the weights in separate buffers; cuDNN would then
        # compact them on every call. Give it the layout it expects.
        cudnn_module.flatten_parameters()
        cudnn_inputs = (xs.bfloat16(), (h0.bfloat16()[None], c0.bfloat16()[None]))
    else:
        args = [xs, h0, c0, W, U, bW, bU] if kind == "lstm" else [xs, h0, W, U, bW, bU]
        cudnn_module = ref
        cudnn_inputs = (xs, (h0[None], c0[None])) if kind == "lstm" else (xs, h0[None])
    outs = model.outputs(name, args)
    with torch.no_grad():
        if kind == "gru":
            expected, _ = ref(xs, h0[None])
        else:
            expected, _ = ref(xs, (h0[None], c0[None]))
        model(name, args, outs)
        torch.cuda.synchronize()
        err = rel_err(outs[0].cpu().numpy(), expected.double().cpu().numpy())
        # On the legacy default stream every call launches its kernels one by
        # one; on a stream of its own the runtime replays a CUDA graph.
        direct = time_ms(lambda: model(name, args, outs))
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            ours = time_ms(lambda: model(name, args, outs))
            model(name, args, outs)
            side.synchronize()
            graph_err = rel_err(outs[0].cpu().numpy(),
                                expected.double().cpu().numpy())
        torch.cuda.current_stream().wait_stream(side)
        cudnn = time_ms(lambda: cudnn_module(*cudnn_inputs))
    row = {"kind": kind, "config": cfg["name"], "T": T, "B": B, "I": I, "H": H,
           "dtype": "bf16 storage, fp32 accumulation" if bf16 else "fp32 (tf32 allowed)", "ours_ms": ours, "cudnn_ms": cudnn,
           "ratio_cudnn_over_ours": cudnn / ours, "rel_err_vs_torch": err,
           "rel_err_graph_replay_vs_torch": graph_err,
           "ours_without_graph_ms": direct, "ours_us_per_step": 1000 * ours / T}
    report.append(row)
    print(f"  {kind:9s} {cfg['name']:14s} ours {ours:8.3f} ms (no graph {direct:7.3f})  "
          f"cuDNN {cudnn:8.3f} ms  cuDNN/ours {cudnn / ours:5.2f}x  "
          f"rel err vs torch {err:.1e} / replay {graph_err:.1e}")


def main(model_dir, out_json):
    report = []
    print("device:", torch.cuda.get_device_name(0), "torch", torch.__version__)
    check_zoo(model_dir, report)
    print("== timing, fp32 with tf32 allowed (median of", REPEATS, "CUDA-event timings)")
    configs = json.load(open(os.path.join(ROOT, "bench", "configs.json")))["configs"]
    for cfg in configs:
        if cfg["L"] != 1:
            cfg = dict(cfg, name=cfg["name"] + " (1 layer)")
        for kind in ("lstm", "gru", "lstm_bf16"):
            bench_config(model_dir, kind, cfg, report)
    with open(out_json, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(0), "results": report}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
