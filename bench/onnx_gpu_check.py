#!/usr/bin/env python3
"""ONNX models exported from torch, imported with rnn.onnx and run on CUDA against torch.

    python3 bench/onnx_gpu_check.py build DIR    # here: export, import, compile (CPU and CUDA)
    python3 bench/onnx_gpu_check.py check DIR    # on the GPU machine: no compiler, no onnx

`build` exports a torch.nn.LSTM and a torch.nn.GRU (2 layers, bidirectional, input 6, hidden
8) with torch.onnx.export and gives their graphs sequence lengths (a graph input `lengths`
that becomes every recurrent node's sequence_lens: test/python/torch_onnx_export.py), imports
each with rnn.onnx.load(path, device=("cpu", "cuda")), checks the CPU libraries against torch
here, and saves the model (graph, CPU and CUDA libraries: OnnxModel.save) and the torch
module's weights into DIR/<kind>/.

`check` loads each saved model (rnn.onnx.load(dir): no compiler, no onnx package) and the
torch module, and runs both on CUDA tensors (float32, TF32 off) for several sequence
lengths and batches, rows of length 1 and of the full length included: ours on the default
stream and then twice on a side stream; torch on the packed sequence. Also against torch in
float64 on the CPU. Prints max |ours - ref| / max |ref| per output and PASS / FAIL per model
(limit 1e-4); exits 1 on any failure.
"""
import os
import sys
import traceback

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "test", "python"))
import rnn.onnx as ronnx  # noqa: E402
import torch_onnx_export as export  # noqa: E402

KINDS = ("LSTM", "GRU")
TOL = 1e-4
CALLS = [(9, [9, 4, 1, 7, 9]), (3, [3, 1]), (16, [16] * 3 + [5, 1, 12, 8, 2])]


def _module(kind):
    return getattr(torch.nn, kind)(export.INPUT, export.HIDDEN, num_layers=export.LAYERS,
                                   bidirectional=True)


def _rel(ours, ref):
    ours = ours.detach().double().cpu()
    ref = ref.detach().double().cpu()
    return float((ours - ref).abs().max() / max(float(ref.abs().max()), 1e-30))


def build(out):
    for kind in KINDS:
        d = os.path.join(out, kind)
        os.makedirs(d, exist_ok=True)
        module, path = export.export(kind, os.path.join(d, "model.onnx"), seed=3)
        model = ronnx.load(path, device=("cpu", "cuda"))
        for T, lengths in CALLS:
            x, expected = export.torch_reference(module, T, lengths, seed=T)
            got = model(x.numpy(), np.asarray(lengths, np.int32))
            err = max(_rel(torch.from_numpy(g), e) for g, e in zip(got, expected))
            assert err < TOL, f"{kind}: the CPU library is off by {err:.3g} at T={T}"
        model.save(os.path.join(d, "saved"))
        torch.save(module.state_dict(), os.path.join(d, "module.pt"))
        print(f"built {kind}: {model} (CPU check against torch passed)")


def check(out):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    failures = 0
    for kind in KINDS:
        d = os.path.join(out, kind)
        try:
            model = ronnx.load(os.path.join(d, "saved"))
            module = _module(kind)
            module.load_state_dict(torch.load(os.path.join(d, "module.pt")))
            module64 = _module(kind).double()
            module64.load_state_dict(module.state_dict())
            module = module.to(dev)
            worst = 0.0
            side = torch.cuda.Stream()
            for T, lengths in CALLS:
                x, expected = export.torch_reference(module, T, lengths, seed=T, device=dev)
                _, expected64 = export.torch_reference(module64, T, lengths, seed=T)
                lens = torch.tensor(lengths, dtype=torch.int32, device=dev)
                runs = [model(x, lens)]
                with torch.cuda.stream(side):
                    for _ in range(2):
                        runs.append(model(x, lens))
                torch.cuda.synchronize()
                assert all(o.is_cuda for o in runs[0]), "outputs are not CUDA tensors"
                for n, got in enumerate(runs):
                    e32 = [_rel(g, e) for g, e in zip(got, expected)]
                    e64 = [_rel(g, e) for g, e in zip(got, expected64)]
                    worst = max(worst, *e32, *e64)
                    print(f"  {kind:5} T={T:2} B={len(lengths)} call {n}: vs torch fp32 "
                          f"{' '.join(f'{v:.2e}' for v in e32)}; vs torch float64 "
                          f"{' '.join(f'{v:.2e}' for v in e64)}")
            ok = worst <= TOL
            failures += not ok
            print(f"{'PASS' if ok else 'FAIL'} {kind}: max rel err {worst:.2e} (limit {TOL})")
        except Exception:
            failures += 1
            traceback.print_exc()
            print(f"FAIL {kind}: raised")
    print("onnx_gpu_check: " + ("all PASS" if not failures else f"{failures} FAILED"))
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("build", "check"):
        sys.exit(__doc__)
    if sys.argv[1] == "build":
        build(sys.argv[2])
    else:
        sys.exit(check(sys.argv[2]))
