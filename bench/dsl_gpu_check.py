#!/usr/bin/env python3
"""On the GPU machine (with torch): checks the DSL models that bench/dsl-gpu-build.sh saved
into build/gpu/dsl/: each is loaded with rnn.load (no compiler), run on CUDA tensors
(T=9, B=5, random initial states) and compared with
  * lstm, gru: torch.nn.LSTM / GRU built from the model's weights (model.to_torch()),
    fp32 on the GPU with TF32 off, and the same module in float64;
  * leaky_gru: a float64 numpy re-implementation of the tutorial's equations;
  * zoo_<cell> (every zoo cell at H=300, and _h1024 at H=1024): the float64 numpy
    references of test/python/reference.py.
Each call runs on the default stream and then three times on a side stream (the runtime
captures a CUDA graph on the second and replays it on the third). Prints the max relative
error (max |ours - ref| / max |ref| over the output and final states) and PASS/FAIL per
model (limit 1e-4); exits 1 on any failure.

    python3 bench/dsl_gpu_check.py [build/gpu/dsl]     (bench/dsl-gpu-run.sh sets the paths)
"""
import os
import sys
import traceback

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import rnn  # noqa: E402

T, B = 9, 5
TOL = 1e-4
BF16_TOL = 3e-2
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def rel_err(ours, ref):
    ours = np.asarray(ours.detach().cpu().double().numpy() if torch.is_tensor(ours) else ours,
                      dtype=np.float64)
    ref = np.asarray(ref.detach().cpu().double().numpy() if torch.is_tensor(ref) else ref,
                     dtype=np.float64)
    assert ours.shape == ref.shape, (ours.shape, ref.shape)
    return float(np.max(np.abs(ours - ref)) / max(np.max(np.abs(ref)), 1e-30))


def flat(out):
    ys, st = out
    return [ys] + (list(st) if isinstance(st, tuple) else [st])


def run_all_ways(model, x, hx):
    """[(how, flat outputs)]: default stream, then 3 calls on a side stream."""
    runs = [("default stream", flat(model(x, hx)))]
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(3):
            runs.append((f"side stream #{i + 1}", flat(model(x, hx))))
    side.synchronize()
    return runs


def leaky_ref(p, x, h0):
    W, U, b = (p[k].astype(np.float64) for k in ("W_l0", "U_l0", "b_l0"))
    h = h0[0].astype(np.float64)
    ys = []
    for t in range(x.shape[0]):
        z, n = np.split(x[t] @ W.T + h @ U.T + b, 2, axis=-1)
        z = 1 / (1 + np.exp(-z))
        h = (1 - z) * h + z * np.tanh(n)
        ys.append(h)
    return [np.stack(ys), h[None]]


def zoo_ref(model, name, x, hx):
    """The float64 numpy reference of a zoo cell (test/python/reference.py, with the
    parameter order that test_dsl_zoo.py pins)."""
    sys.path.insert(0, os.path.join(ROOT, "test", "python"))
    from test_dsl_zoo import ZOO  # noqa: E402
    ref_fn, names, _, _ = ZOO[name]
    params = [torch.as_tensor(model.param(n)).cpu().double().numpy() for n in names]
    states = [h[0].cpu().double().numpy() for h in hx]
    return ref_fn(x.cpu().double().numpy(), *states, *params)


def check(model_dir, name):
    model = rnn.load(os.path.join(model_dir, name))
    assert model.device.startswith("cuda"), model.device
    g = torch.Generator().manual_seed(7)
    D = 2 if model.bidirectional else 1
    x = torch.randn(T, B, model.input_size, generator=g).cuda()
    hx = tuple(torch.randn(D * model.num_layers, B, size, generator=g).cuda()
               for size in model._spec.state_sizes)
    # The sLSTM's normaliser n is positive.
    hx = tuple(h.abs() + 1 if s == "n" else h for s, h in zip(model._spec.state_names, hx))
    hx_arg = hx if len(hx) > 1 else hx[0]
    runs = run_all_ways(model, x, hx_arg)
    refs = {}
    bf16 = name.endswith("_bf16")
    if name.startswith("zoo_"):
        cell = name[4:].removesuffix("_bf16").removesuffix("_h1024")
        refs["float64 numpy"] = [r if k == 0 else r[None] for k, r in
                                 enumerate(zoo_ref(model, cell, x, hx))]
    elif name == "leaky_gru":
        p = model.state_dict()
        refs["float64 numpy"] = leaky_ref(p, x.cpu().double().numpy(),
                                          hx[0].cpu().double().numpy())
    else:
        ref = model.to_torch()  # torch.nn.LSTM / GRU on the GPU, the model's weights
        assert next(ref.parameters()).is_cuda
        with torch.no_grad():
            refs["torch fp32 (no tf32)"] = flat(ref(x, hx_arg))
            r64 = ref.double()
            hx64 = tuple(h.double() for h in hx)
            refs["torch float64"] = flat(r64(x.double(), hx64 if len(hx64) > 1 else hx64[0]))
    torch.cuda.synchronize()
    worst = 0.0
    for rname, ref_outs in refs.items():
        errs = [max(rel_err(o, r) for o, r in zip(outs, ref_outs)) for _, outs in runs]
        print(f"  {name:22s} vs {rname:21s} max rel err {max(errs):.2e} "
              f"(per call: {', '.join(f'{e:.1e}' for e in errs)})")
        worst = max(worst, max(errs))
    if name in ("lstm", "gru"):
        # The other direction: a torch.nn.LSTM / GRU with torch's own random
        # initialisation, its state_dict loaded into the compiled model (no
        # recompilation: weights are parameters), both run on the GPU.
        cls = type(model.to_torch())
        torch.manual_seed(11)
        fresh = cls(model.input_size, model.hidden_size, num_layers=model.num_layers,
                    bidirectional=model.bidirectional).cuda()
        model.load_state_dict(fresh.state_dict())
        with torch.no_grad():
            expected = flat(fresh(x, hx_arg))
        got = flat(model(x, hx_arg))
        torch.cuda.synchronize()
        err = max(rel_err(o, r) for o, r in zip(got, expected))
        print(f"  {name:22s} loaded from torch.nn.{cls.__name__}: max rel err {err:.2e}")
        worst = max(worst, err)
    # bf16 matmuls: within bf16's precision of float64, and measurably not
    # float32 (else nothing was rounded).
    tol = BF16_TOL if bf16 else TOL
    ok = worst <= tol and (not bf16 or worst > TOL)
    print(f"{'PASS' if ok else 'FAIL'} {name}: max rel err {worst:.2e} "
          f"(limit {tol:g}{f', above {TOL:g}' if bf16 else ''})")
    return ok


def main():
    model_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "gpu", "dsl")
    print("device:", torch.cuda.get_device_name(0), "torch", torch.__version__)
    failed = []
    names = ["lstm", "gru", "leaky_gru"] + sorted(
        d for d in os.listdir(model_dir) if d.startswith("zoo_"))
    for name in names:
        try:
            if not check(model_dir, name):
                failed.append(name)
        except Exception:
            traceback.print_exc()
            print(f"FAIL {name}: raised")
            failed.append(name)
    print("dsl_gpu_check:", "all PASS" if not failed else f"FAILED: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
