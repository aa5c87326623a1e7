#!/usr/bin/env python3
"""On the GPU machine, from the repository root after bench/build-gpu.sh (carry build/gpu; LD_LIBRARY_PATH=build/gpu/lib:/usr/local/cuda/lib64,
RNN_RUNTIME_LIB=build/gpu/lib/librnn_runtime.so): see bench/experiments/README.md."""
# RNN_CUDA_GEMM_CANDIDATE=K python3 bench/experiments/gemm_candidates_check.py  (K unset, -1, 0..3; then gpu_bench.check_two_stage_wide alike)
# Pinned cuBLASLt candidates: LSTM/GRU models (per-step GemmEx path) against torch, direct call and graph replay.
import os, sys, torch
sys.path.insert(0, "bench")
import gpu_bench as gb
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
for kind, I, H, L, T, B in [("lstm", 1024, 1024, 1, 20, 64), ("gru", 1024, 1024, 1, 20, 64), ("lstm", 512, 512, 2, 20, 256),
                            ("gru_bf16", 2048, 2048, 1, 10, 32), ("lstm_bf16", 2048, 2048, 1, 10, 32)]:
    torch.manual_seed(0)
    bf16 = kind.endswith("_bf16"); gru = kind.startswith("gru")
    cls = torch.nn.GRU if gru else torch.nn.LSTM
    ref = cls(I, H, num_layers=L).cuda()
    xs = torch.randn(T, B, I, device="cuda"); h0 = torch.randn(L, B, H, device="cuda"); c0 = torch.randn(L, B, H, device="cuda")
    states = [h0] if gru else [h0, c0]
    suffix = f"_L{L}" if L > 1 else ""
    model = gb.CudaModel(f"build/gpu/models/{kind}_I{I}_H{H}{suffix}.so")
    name = f"{'gru' if gru else 'lstm'}_seq{suffix}"
    args = gb.module_args(kind, ref, xs, states, L, bf16)
    with torch.no_grad():
        expected, _ = ref(xs, h0 if gru else tuple(states))
        exp = expected.double().cpu().numpy()
        outs = model.outputs(name, args)
        model(name, args, outs); torch.cuda.synchronize()
        direct = gb.rel_err(outs[0].cpu().numpy(), exp)
        side = torch.cuda.Stream(); side.wait_stream(torch.cuda.current_stream())
        errs = []
        with torch.cuda.stream(side):
            for _ in range(3):
                model(name, args, outs); side.synchronize()
                errs.append(gb.rel_err(outs[0].cpu().numpy(), exp))
    print(f"  {kind:9s} I{I} H{H} L{L} B{B}: direct {direct:.1e}, side stream (direct, capture, replay) {', '.join(f'{e:.1e}' for e in errs)}", flush=True)
