#!/usr/bin/env python3
"""On the GPU machine: the runtime's packed TF32 GEMM (lib/Runtime/Cuda/
PackedGemm.h), which runs the recurrent GEMM of fp32 models whose weights do
not fit in L2 (the LSTM at `wide`).

1. Correctness: the `wide` LSTM model against torch.nn.LSTM in float64 for
   every batch size the kernel tiles differently (1..32 rows; 33 goes to
   cuBLAS), with the packed GEMM and without it (RNN_CUDA_PACKED_GEMM=0);
   the two must differ for B <= 32 (the packed path ran) and agree exactly
   for B = 33 (cuBLAS both times); the GRU at `wide` (48 MiB of weights,
   96% of the H100's 50 MiB of L2) likewise.
2. Time: the `wide` models with and without it, in alternation in one
   process (overlap_ab.alternate; medians).

    python3 bench/packed_gemm_check.py MODEL_DIR
(bench/gpu-run.sh sets up the library path.)
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_bench import CudaModel, module_args, rel_err  # noqa: E402
from overlap_ab import alternate  # noqa: E402

TOLERANCE = 2e-3  # TF32 products (10-bit mantissas) over a few steps.


def run(model, name, args, packed):
    if not packed:
        os.environ["RNN_CUDA_PACKED_GEMM"] = "0"
    try:
        outs = model.outputs(name, args)
        model(name, args, outs)
        torch.cuda.synchronize()
        return outs
    finally:
        os.environ.pop("RNN_CUDA_PACKED_GEMM", None)


def check(model_dir, cell, batches, expect_packed):
    I = H = 2048
    gru = cell == "gru"
    model = CudaModel(os.path.join(model_dir, f"{cell}_I{I}_H{H}.so"))
    torch.manual_seed(0)
    ref = (torch.nn.GRU if gru else torch.nn.LSTM)(I, H).cuda()
    ref64 = (torch.nn.GRU if gru else torch.nn.LSTM)(I, H).cuda().double()
    ref64.load_state_dict(ref.state_dict())
    failures = 0
    for B in batches:
        T = 4
        xs = torch.randn(T, B, I, device="cuda")
        states = [torch.randn(1, B, H, device="cuda") for _ in range(1 if gru else 2)]
        args = module_args(cell, ref, xs, states, 1, False)
        with torch.no_grad():
            expected, _ = ref64(xs.double(), states[0].double() if gru
                                else tuple(s.double() for s in states))
        on, off = (run(model, f"{cell}_seq", args, p) for p in (True, False))
        err_on = rel_err(on[0].cpu().numpy(), expected.cpu().numpy())
        err_off = rel_err(off[0].cpu().numpy(), expected.cpu().numpy())
        same = all(torch.equal(a, b) for a, b in zip(on, off))
        packed = expect_packed and B <= 32
        ok = err_on <= TOLERANCE and err_off <= TOLERANCE and same != packed
        failures += not ok
        print(f"  {cell} wide B={B:2d}: packed GEMM {'expected' if packed else 'not expected'}, "
              f"rel. error vs float64 {err_on:.1e} (RNN_CUDA_PACKED_GEMM=0: {err_off:.1e}), "
              f"results {'identical' if same else 'differ'}: {'PASS' if ok else 'FAIL'}")
    return failures


def ab(model_dir, cell, T=50, B=32):
    I = H = 2048
    gru = cell == "gru"
    model = CudaModel(os.path.join(model_dir, f"{cell}_I{I}_H{H}.so"))
    torch.manual_seed(1)
    ref = (torch.nn.GRU if gru else torch.nn.LSTM)(I, H).cuda()
    xs = torch.randn(T, B, I, device="cuda")
    states = [torch.randn(1, B, H, device="cuda") for _ in range(1 if gru else 2)]
    args = module_args(cell, ref, xs, states, 1, False)
    name = f"{cell}_seq"
    outs = model.outputs(name, args)
    on, off = alternate(lambda: model(name, args, outs), "RNN_CUDA_PACKED_GEMM")
    print(f"  {cell} wide T={T} B={B}: packed GEMM {on:.3f} ms, cuBLAS {off:.3f} ms, "
          f"ratio {on / off:.3f}")


def main(model_dir):
    print("== packed TF32 GEMM: correctness (T=4) against float64")
    failures = check(model_dir, "lstm", [1, 5, 16, 17, 31, 32, 33], True)
    failures += check(model_dir, "gru", [1, 32, 33], True)
    print("== packed TF32 GEMM: time, in alternation")
    ab(model_dir, "lstm")
    ab(model_dir, "gru")
    if failures:
        sys.exit(f"packed GEMM check: {failures} FAIL")


if __name__ == "__main__":
    main(sys.argv[1])
