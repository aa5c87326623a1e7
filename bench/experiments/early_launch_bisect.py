#!/usr/bin/env python3
"""On the GPU machine, from the repository root after bench/build-gpu.sh (carry build/gpu; LD_LIBRARY_PATH=build/gpu/lib:/usr/local/cuda/lib64,
RNN_RUNTIME_LIB=build/gpu/lib/librnn_runtime.so): see bench/experiments/README.md."""
# python3 bench/experiments/early_launch_bisect.py PHASE  (check_zoo check_two_stage legacy-direct cudnn breakdown bench_config; one process each)
# Which step of gpu_bench turns the MGU slow: the MGU timed fresh, one step, the MGU again.
import json, sys, torch
from model_timing import MODELS, Probe, gb
mgu = Probe("zoo_mgu", "forward", 5)
mgu.show("fresh")
phase = sys.argv[1]
medium = next(c for c in json.load(open("bench/configs.json"))["configs"] if c["name"] == "medium")
if phase == "check_zoo":
    gb.check_zoo(MODELS, [])
elif phase == "check_two_stage":
    gb.check_two_stage_wide(MODELS, [])
elif phase == "legacy-direct":
    with torch.no_grad():
        for _ in range(50): mgu.call()
elif phase == "cudnn":
    ref = torch.nn.LSTM(1024, 1024).cuda(); x = torch.randn(100, 64, 1024, device="cuda")
    with torch.no_grad():
        for _ in range(50): ref(x)
elif phase == "breakdown":
    ref = torch.nn.LSTM(1024, 1024).cuda(); xs = torch.randn(100, 64, 1024, device="cuda")
    h0 = torch.randn(1, 64, 1024, device="cuda"); c0 = torch.randn(1, 64, 1024, device="cuda")
    args = gb.module_args("lstm", ref, xs, [h0, c0], 1, False)
    gb.breakdown("lstm", args, 100, False)
elif phase == "bench_config":
    gb.bench_config(MODELS, "lstm", medium, [], gb.MemPool(), with_compile=False)
torch.cuda.synchronize()
mgu.show(f"after {phase}")
