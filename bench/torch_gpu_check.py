#!/usr/bin/env python3
"""rnn.RNN (the torch.nn.Module) training on the GPU through the compiled CUDA backward.

    python3 bench/torch_gpu_check.py build DIR        # here: modules with their CUDA libraries
    python3 bench/torch_gpu_check.py check DIR JSON   # on the GPU machine

`build` makes, for every zoo cell, a 2-layer bidirectional rnn.RNN (I = 32, H = 64; the SRU,
whose highway needs I = H, one direction), compiles its CUDA libraries (float32 exact, and
the float16 and bfloat16 matmul variants that torch.autocast and .half() / .bfloat16() use),
computes a float64 reference on the CPU (outputs and the gradients of a random weighted sum
of them with respect to the input, the initial states and every parameter, with per-sequence
lengths including 0 and 1), and saves module and reference with torch.save (the module
carries its libraries). It also builds the LSTM and GRU at `medium` (T = 100, B = 64, I = H
= 1024) for a first timing of the training step (also built with save="states": less memory,
more time), and the network of examples/train_ddp.py (for its --module: `ddp-module DIR
FILE` writes it there with its weights drawn).

`check` runs each module on CUDA in float32 (TF32 off), under autocast float16 and bfloat16,
and with .half() parameters; the gradients come from the compiled CUDA backward (the library
in use is the CUDA one: checked). Errors per tensor: max |ours - ref| / max |ref| in fp32,
||ours - ref|| / ||ref|| with fp16 / bf16 matmuls, within LIMITS or within
SENSITIVITY_FACTOR times what the type's rounding of the inputs and weights alone moves the
float32 network (_sensitivity). Then the training step (forward + backward of a weighted
sum) of ours and torch.nn.LSTM / GRU in the same precision, same inputs, alternating rounds,
CUDA events, median and spread, and the peak memory of a step
(torch.cuda.max_memory_allocated)."""
import copy
import json
import lzma
import os
import statistics
import sys
import time

import torch

from cuda_events import event_times

LENGTHS = [9, 0, 1, 6, 9]
T, I, H = 9, 32, 64
# fp32: the largest elementwise error over the largest value, per tensor. fp16 / bf16
# matmul operands: the normwise error ||ours - ref|| / ||ref|| per tensor (a relu's or a
# layer norm's elements near a kink or a small variance move by more than the operands'
# rounding; the norm says whether the tensor as a whole is within it).
LIMITS = {"fp32": 1e-4, "bf16": 3e-2, "fp16": 5e-3, "half-params": 5e-3}
EPS = {"bf16": 2.0**-8, "fp16": 2.0**-11, "half-params": 2.0**-11}  # unit roundoff
SENSITIVITY_FACTOR = 4
MEDIUM = {"T": 100, "B": 64, "I": 1024, "H": 1024}


def _flat(out):
    y, h = out
    return [y] + (list(h) if isinstance(h, tuple) else [h])


def _inputs(model, gen, dtype=torch.float64):
    D = 2 if model.bidirectional else 1
    B = len(LENGTHS)
    x = torch.randn(T, B, model.input_size, generator=gen, dtype=dtype)
    hx = [torch.randn(D * model.num_layers, B, n, generator=gen, dtype=dtype)
          for n in model._spec.state_sizes]
    # The sLSTM's normaliser n is positive.
    hx = [h.abs() + 1 if s == "n" else h for s, h in zip(model._spec.state_names, hx)]
    return x, hx


def _grads(model, x, hx, lengths, weights):
    x = x.detach().requires_grad_()
    hx = [h.detach().requires_grad_() for h in hx]
    out = _flat(model(x, hx[0] if len(hx) == 1 else tuple(hx), lengths=lengths))
    loss = sum((w.to(o.dtype) * o).float().sum() for w, o in zip(weights, out))
    params = list(model.parameters())
    grads = torch.autograd.grad(loss, [x, *hx, *params])
    return [o.detach() for o in out], list(grads)


def build(directory):
    import rnn
    os.makedirs(directory, exist_ok=True)
    for name in sorted(rnn.zoo.CELLS):
        cell = rnn.zoo.CELLS[name]
        torch.manual_seed(0)
        extra = {"proj_size": H // 2} if name == "lstmp" else {}
        if name in ("headwise_lstm", "headwise_gru", "slstm"):
            extra = {"sizes": {"NH": 4}}
        # The SRU's highway adds x to h (I = H): its second layer reads H, one direction.
        i = H if name == "sru" else I
        model = rnn.RNN(cell, i, H, num_layers=2, bidirectional=name != "sru",
                        dtype=torch.float64, **extra)
        gen = torch.Generator().manual_seed(1)
        x, hx = _inputs(model, gen)
        lengths = torch.tensor(LENGTHS)
        out = _flat(model(x, hx[0] if len(hx) == 1 else tuple(hx), lengths=lengths))
        weights = [torch.randn(o.shape, generator=gen, dtype=torch.float64) for o in out]
        ref_out, ref_grads = _grads(model, x, hx, lengths, weights)
        f32 = copy.deepcopy(model).float()
        f32.build("cuda", torch.float32)
        for half in (torch.float16, torch.bfloat16):
            f32.build("cuda", torch.float32, matmul_dtype=half)
        _save({"model": f32, "x": x, "hx": hx, "lengths": lengths, "weights": weights,
               "ref_out": ref_out, "ref_grads": ref_grads}, directory, f"zoo_{name}")
        print(f"torch-gpu-build: zoo_{name}")
    for kind in ("lstm", "gru"):
        torch.manual_seed(0)
        model = rnn.RNN(getattr(rnn.zoo, kind), MEDIUM["I"], MEDIUM["H"])
        for mm in ("tf32", torch.float16, torch.bfloat16):
            model.build("cuda", torch.float32, matmul_dtype=mm)
        _save(_without_weights(model), directory, f"medium_{kind}")
        # The same network saving only the states (the backward recomputes the
        # gates): less memory for more time, in fp32 (TF32).
        states = rnn.RNN(getattr(rnn.zoo, kind), MEDIUM["I"], MEDIUM["H"], save="states")
        states.build("cuda", torch.float32, matmul_dtype="tf32")
        _save(_without_weights(states), directory, f"medium_{kind}_states")
        print(f"torch-gpu-build: medium_{kind}")
    # examples/train_ddp.py --module: its default network, for CUDA in float32 (TF32).
    torch.manual_seed(0)
    model = rnn.RNN(rnn.zoo.lstm, 256, 512, num_layers=2)
    model.build("cuda", torch.float32, matmul_dtype="tf32")
    _save(_without_weights(model), directory, "ddp_lstm")
    print("torch-gpu-build: ddp_lstm")


def _without_weights(model):
    """The module with zero parameters: what travels is its libraries, the weights (tens of
    MB of random floats at these sizes) are drawn again there (_with_weights)."""
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    return model


def _with_weights(model, seed=0):
    torch.manual_seed(seed)
    model.reset_parameters()
    return model


def _save(obj, directory, name):
    # xz: the CUDA libraries the modules carry shrink ~15x, under what travels to the GPU.
    with lzma.open(os.path.join(directory, f"{name}.pt.xz"), "wb") as f:
        torch.save(obj, f)


def _load(directory, name):
    with lzma.open(os.path.join(directory, f"{name}.pt.xz"), "rb") as f:
        return torch.load(f, weights_only=False)


def _relative_errors(got, ref):
    return [((g.double().cpu() - r).abs().max() / r.abs().max().clamp_min(1e-30)).item()
            if r.numel() else 0.0 for g, r in zip(got, ref)]


def _normwise_errors(got, ref):
    return [((g.double().cpu() - r).norm() / r.norm().clamp_min(1e-30)).item()
            if r.numel() else 0.0 for g, r in zip(got, ref)]


def _sensitivity(model, x, hx, lengths, weights, d, eps, draws=2):
    """How far the float32 network's outputs and gradients move from the float64 reference
    when its inputs, initial states and parameters are each perturbed by a relative `eps`
    (normwise, the largest of `draws` perturbations): the error that rounding to a type of
    unit roundoff `eps` causes in this network by itself, whoever computes it. Cells with
    kinks (relu) or divisions by a small spread (layer norm) are more sensitive than the
    others; a reduced-precision result is checked against this as well as LIMITS."""
    gen = torch.Generator(device="cuda").manual_seed(7)

    def jitter(t):
        return t * (1 + eps * torch.randn(t.shape, device=t.device, dtype=t.dtype,
                                          generator=gen))

    worst = 0.0
    for _ in range(draws):
        m = copy.deepcopy(model)
        with torch.no_grad():
            for p in m.parameters():
                p.copy_(jitter(p))
        out, grads = _grads(m, jitter(x.float()), [jitter(h.float()) for h in hx], lengths,
                            weights)
        worst = max([worst] + _normwise_errors(out, d["ref_out"]) +
                    _normwise_errors(grads, d["ref_grads"]))
    return worst


def check_zoo(directory, results):
    ok = True
    for f in sorted(os.listdir(directory)):
        if not (f.startswith("zoo_") and f.endswith(".pt.xz")):
            continue
        d = _load(directory, f[:-len(".pt.xz")])
        model = d["model"].cuda()
        x, hx = d["x"].cuda(), [h.cuda() for h in d["hx"]]
        lengths = d["lengths"].cuda()
        weights = [w.cuda() for w in d["weights"]]
        row = {"model": f[:-len(".pt.xz")]}
        for precision in ("fp32", "fp16", "bf16", "half-params"):
            torch.backends.cudnn.allow_tf32 = False
            m = model
            if precision == "half-params":
                m = copy.deepcopy(model).half()
            ctx = torch.autocast("cuda", dtype=torch.float16 if precision == "fp16"
                                 else torch.bfloat16) if precision in ("fp16", "bf16") \
                else torch.autocast("cuda", enabled=False)
            with ctx:
                xin = x.half() if precision == "half-params" else x.float()
                hin = [h.half() if precision == "half-params" else h.float() for h in hx]
                out, grads = _grads(m, xin, hin, lengths, weights)
            assert all(k[0] == "cuda" for k in m._libraries), m._libraries
            max_err = max(_relative_errors(out, d["ref_out"]) +
                          _relative_errors(grads, d["ref_grads"]))
            norm_err = max(_normwise_errors(out, d["ref_out"]) +
                           _normwise_errors(grads, d["ref_grads"]))
            err = max_err if precision == "fp32" else norm_err
            limit = LIMITS[precision]
            sensitivity = None
            if precision != "fp32":
                sensitivity = _sensitivity(model, x, hx, lengths, weights, d,
                                           EPS[precision])
                limit = max(limit, SENSITIVITY_FACTOR * sensitivity)
            good = err <= limit
            ok &= good
            row[precision] = {"max_rel_err": max_err, "normwise_err": norm_err,
                              "checked": "max_rel_err" if precision == "fp32" else
                              "normwise_err", "sensitivity": sensitivity, "limit": limit,
                              "ok": good}
        torch.backends.cudnn.allow_tf32 = True
        results["zoo"].append(row)
        print(f"{row['model']:22s} " + "  ".join(
            f"{p} {row[p][row[p]['checked']]:.1e}"
            + (f" (sens {row[p]['sensitivity']:.1e})" if row[p]["sensitivity"] else "")
            + ("" if row[p]["ok"] else " FAIL")
            for p in ("fp32", "fp16", "bf16", "half-params")), flush=True)
    return ok


def _time(fn, repeats=15):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    return event_times(fn, repeats)


def _peak(fn):
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    fn()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - base) / 2**20


def bench(directory, results, rounds=3):
    for kind in ("lstm", "gru"):
        ours = _with_weights(_load(directory, f"medium_{kind}"))
        ours = ours.cuda()
        states = _load(directory, f"medium_{kind}_states").cuda()
        states.load_state_dict(ours.state_dict())
        ref = getattr(torch.nn, kind.upper())(MEDIUM["I"], MEDIUM["H"]).cuda()
        ref.load_state_dict(ours.state_dict())
        gen = torch.Generator(device="cuda").manual_seed(2)
        x = torch.randn(MEDIUM["T"], MEDIUM["B"], MEDIUM["I"], device="cuda", generator=gen,
                        requires_grad=True)
        w = torch.randn(MEDIUM["T"], MEDIUM["B"], MEDIUM["H"], device="cuda", generator=gen)
        for precision in ("fp32-tf32", "bf16", "fp16"):
            dt = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)

            def step(module):
                def run():
                    with torch.autocast("cuda", dtype=dt, enabled=dt is not None):
                        y = module(x)[0]
                    (y.float() * w).sum().backward()
                return run

            fns = {"ours": step(ours), "torch": step(ref)}
            if dt is None:
                fns["ours_save_states"] = step(states)
            # Correctness first: gradients of the input within the precision's tolerance.
            grads = {}
            for k, fn in fns.items():
                x.grad = None
                fn()
                grads[k] = x.grad.clone()
            err = max(((grads[k] - grads["torch"]).abs().max() /
                       grads["torch"].abs().max()).item() for k in fns if k != "torch")
            samples = {k: [] for k in fns}
            for _ in range(rounds):
                for k, fn in fns.items():
                    samples[k] += _time(fn)
            peaks = {k: _peak(fn) for k, fn in fns.items()}
            row = {"cell": kind, "shape": MEDIUM, "precision": precision,
                   "dx_rel_err_vs_torch": err,
                   **{f"{k}_ms": statistics.median(v) for k, v in samples.items()},
                   **{f"{k}_ms_min": min(v) for k, v in samples.items()},
                   **{f"{k}_ms_max": max(v) for k, v in samples.items()},
                   **{f"{k}_peak_mib": v for k, v in peaks.items()}}
            row["speedup"] = row["torch_ms"] / row["ours_ms"]
            results["bench"].append(row)
            print(f"{kind} medium {precision:9s} ours {row['ours_ms']:.3f} ms "
                  f"[{row['ours_ms_min']:.3f}-{row['ours_ms_max']:.3f}]  torch.nn "
                  f"{row['torch_ms']:.3f} [{row['torch_ms_min']:.3f}-{row['torch_ms_max']:.3f}]"
                  f"  x{row['speedup']:.2f}  peak MiB ours {row['ours_peak_mib']:.0f} torch "
                  f"{row['torch_peak_mib']:.0f}  dx err {err:.1e}", flush=True)
            if "ours_save_states_ms" in row:
                print(f"{kind} medium {precision:9s} ours, save='states' "
                      f"{row['ours_save_states_ms']:.3f} ms "
                      f"[{row['ours_save_states_ms_min']:.3f}-"
                      f"{row['ours_save_states_ms_max']:.3f}]  peak MiB "
                      f"{row['ours_save_states_peak_mib']:.0f}", flush=True)
            for module in (ours, states, ref):
                module.zero_grad()


def check(directory, out_json):
    results = {"date": time.strftime("%Y-%m-%d"), "device": torch.cuda.get_device_name(),
               "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
               "command": "bench/torch-gpu-run.sh", "zoo": [], "bench": []}
    ok = check_zoo(directory, results)
    bench(directory, results)
    results["ok"] = ok
    with open(out_json, "w") as f:
        json.dump(results, f, indent=1)
    print("torch-gpu-check:", "all ok" if ok else "FAILURES")
    return 0 if ok else 1


def ddp_module(directory, path):
    """examples/train_ddp.py --module: the network with its weights drawn (seed 0)."""
    torch.save(_with_weights(_load(directory, "ddp_lstm")), path)


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(sys.argv[2])
    elif sys.argv[1] == "ddp-module":
        ddp_module(sys.argv[2], sys.argv[3])
    else:
        sys.exit(check(sys.argv[2], sys.argv[3]))
